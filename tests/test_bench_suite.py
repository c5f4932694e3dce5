"""The benchmark suite: its helpers are right, and its scripts run on tiny sizes so they never rot.

No timing is asserted anywhere: only that the scripts run, check their own correctness and print
their tables, and that the baselines they time compute the same curves as insdel.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import insdel

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
#: Optional peers are installed by the [bench] extra only; their tests skip with this reason.
PEER_MISSING = '{} is a peer the tests compare with, installed by pip install -e ".[test]"'


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    try:
        yield {name: importlib.import_module(name)
               for name in ("_common", "curves", "peers", "run_all")}
    finally:
        sys.path.remove(str(BENCH))


def test_paper_mlps_have_the_paper_shapes(bench):
    c = bench["_common"]
    import torch

    cern, bang = c.cern_mlp(), c.bangalore_mlp()
    lin = [m for m in cern if isinstance(m, torch.nn.Linear)]
    assert [m.out_features for m in lin] == [509, 421, 65, 368, 122, 477, 1]
    assert lin[0].in_features == 16 and not cern.training
    lin = [m for m in bang if isinstance(m, torch.nn.Linear)]
    assert [m.out_features for m in lin] == [333, 465, 86, 234, 1] and lin[0].in_features == 38
    assert sum(isinstance(m, torch.nn.PReLU) for m in bang) == 4
    assert next(cern.parameters()).dtype == torch.float32


def test_method_orderings_are_permutations(bench):
    o = bench["_common"].method_orderings(5, 9, 7, 3, seed=1)
    assert o.shape == (5, 10, 9) and o.dtype == np.int64
    assert (np.sort(o, axis=-1) == np.arange(9)).all()


def test_baselines_match_insdel_and_distinct_rows_match_n_unique(bench):
    c, cv = bench["_common"], bench["curves"]
    net = c.model_by_name("tiny", 7)
    X, R = c.pairs(6, 7, seed=3, all_differ=False)  # some x_j == r_j: canonical sets matter
    orders = c.method_orderings(6, 7, 7, 2, seed=4)
    res = insdel.trace(net, X, R, orders)
    loop = cv.per_pair_loop(net, X, R, orders)
    pts = cv.per_point_loop(net, X[:2], R[:2], orders[:2])
    for m in ("insertion", "deletion"):
        np.testing.assert_allclose(loop[m], res.curves[m], atol=1e-5)
        np.testing.assert_allclose(pts[m], res.curves[m][:2], atol=1e-5)
    assert len(cv.distinct_rows(X, R, orders)) == res.n_unique
    res_d = insdel.trace(net, X, R, orders, modes=("deletion",))
    assert len(cv.distinct_rows(X, R, orders, modes=("deletion",))) == res_d.n_unique


def test_quantus_driven_with_per_pair_references_gives_insdel_deletion_curves(bench):
    pytest.importorskip("quantus", reason=PEER_MISSING.format("quantus"))
    c, pe = bench["_common"], bench["peers"]
    net = c.model_by_name("tiny", 6)
    B, n = 10, 6
    X, R = c.pairs(B, n, seed=5)
    orders = np.argsort(np.random.default_rng(6).random((B, 1, n)), axis=-1)
    A = pe.attributions_for(orders)
    np.testing.assert_array_equal(insdel.orderings(A.astype(float)), orders)
    ref = insdel.trace(net, X, R, orders, modes=("deletion",)).curves["deletion"][:, 0]
    # batch of 4 does not divide 10: the reference offset must follow Quantus's batches
    z = pe.quantus_pixel_flipping(net, X, R, A[:, 0], batch_size=4)
    np.testing.assert_allclose(z, ref[:, 1:], atol=1e-5)
    d = pe.quantus_region_perturbation(net, X, R, A[:, 0], batch_size=3)
    np.testing.assert_allclose(d, ref[:, :1] - ref[:, 1:], atol=1e-5)


def test_markdown_helpers(bench):
    c, ra = bench["_common"], bench["run_all"]
    t = c.markdown_table(["a", "b"], [[1, 2]])
    assert t.splitlines() == ["| a | b |", "| --- | ---: |", "| 1 | 2 |"]
    doc = ra.normalise_markdown("## Title\n# machine\ntext\n" + t + "\nafter")
    lines = doc.splitlines()
    assert lines[0] == "### Title" and lines[1] == "" and lines[2] == "> machine"
    assert lines[lines.index("| a | b |") - 1] == "" and lines[-2] == "" and lines[-1] == "after"
    info = c.machine_info()
    for key in ("cpu", "logical cores", "torch", "numpy", "date"):
        assert info[key]


def _run_all_tiny(tmp_path, scripts: list[str], needles: list[str]) -> None:
    out = tmp_path / "RESULTS.md"
    p = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--tiny", "--only", *scripts,
                        "--output", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    doc = out.read_text()
    for needle in needles:
        assert needle in doc, needle
    assert "FAILED" not in doc


def test_run_all_tiny_writes_results(tmp_path):
    """scaling runs once on tiny sizes through run_all (curves has its own test in
    test_bench_curves.py); the peer comparisons run in the test below."""
    _run_all_tiny(tmp_path, ["scaling"], ["## Machine", "## bench/scaling.py",
                                          "bookkeeping share", "smoke-test sizes"])


def test_run_all_tiny_peer_comparisons(tmp_path):
    """peers (Quantus) and shapley_budget (shap) through run_all, where [bench] installed them."""
    pytest.importorskip("quantus", reason=PEER_MISSING.format("quantus"))
    pytest.importorskip("shap", reason=PEER_MISSING.format("shap"))
    _run_all_tiny(tmp_path, ["peers", "shapley_budget"],
                  ["## Machine", "## bench/peers.py", "(q64)/(a)",
                   "## bench/shapley_budget.py", "(k)/(a)"])


@pytest.mark.slow
def test_run_all_tiny_every_script(tmp_path):
    out = tmp_path / "RESULTS.md"
    p = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--tiny", "--output", str(out)],
                       capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "FAILED" not in out.read_text()


def test_interactions_bench_tiny(tmp_path):
    """bench/interactions.py runs on tiny sizes (it checks efficiency and prints its differences
    to shapiq's ExactComputer)."""
    _run_all_tiny(tmp_path, ["interactions"], ["## bench/interactions.py", "shapiq / insdel",
                                               "/ decomposition"])


def test_images_bench_tiny_agrees_with_quantus(tmp_path):
    """The grouped-image bench (issue #16) runs on tiny sizes; it exits non-zero if insdel's
    curves and Quantus' PixelFlipping disagree."""
    pytest.importorskip("quantus", reason=PEER_MISSING.format("quantus"))
    _run_all_tiny(tmp_path, ["images"], ["## bench/images.py", "(q)/(a)"])


def test_metrics_suite_bench_tiny_agrees_with_quantus(tmp_path):
    """The metric-suite bench (issue #17) runs on tiny sizes; it exits non-zero if any metric's
    scores differ from Quantus' own."""
    import quantus  # noqa: F401  (in the [test] extra: this test never skips)

    _run_all_tiny(tmp_path, ["metrics_suite"], ["## bench/metrics_suite.py", "(q)/(a)"])


def test_outputs_identity_ignores_run_records_and_nothing_else(tmp_path):
    """bench/outputs_identity.py compares two runs' files: wall times in a manifest and the random
    serialization id of a torch file do not count as differences; a changed value does."""
    import json

    import torch

    sys.path.insert(0, str(BENCH))
    try:
        oi = importlib.import_module("outputs_identity")
    finally:
        sys.path.remove(str(BENCH))
    runs = {}
    for side, seconds in (("a", 1.5), ("b", 9.25)):
        root = tmp_path / side
        root.mkdir()
        (root / "manifest.json").write_text(json.dumps(
            {"compute": {"seconds_total": seconds, "stages": {"x": {"seconds": seconds}}},
             "model": {"epochs": 3}}))
        meta = json.dumps({"epochs": 3, "seconds": seconds})
        torch.save({"state": {"w": torch.arange(4.0)}, "metadata": meta}, root / "model.pt")
        (root / "abc.csv").write_text("m,1.0\n")
        runs[side] = oi._files(root)
    assert runs["a"] == runs["b"]
    (tmp_path / "b" / "abc.csv").write_text("m,1.5\n")
    torch.save({"state": {"w": torch.arange(4.0) + 1}, "metadata": "{}"}, tmp_path / "b" / "model.pt")
    changed = oi._files(tmp_path / "b")
    assert {k for k in runs["a"] if runs["a"][k] != changed[k]} == {"abc.csv", "model.pt"}
    with pytest.raises(SystemExit):
        oi.main(["--old", str(tmp_path), "--new", str(tmp_path)])  # not a checkout


def test_outputs_identity_ignores_where_the_configuration_was_read_from():
    """A manifest's top-level ``source`` (the configuration's file: a shipped one's path inside the
    package) is a run record; a ``source`` deeper in (how the model was obtained) still counts."""
    sys.path.insert(0, str(BENCH))
    try:
        oi = importlib.import_module("outputs_identity")
    finally:
        sys.path.remove(str(BENCH))
    old = {"source": "insdel/configs/demo.toml", "model": {"source": "trained"}}
    new = {"source": "insdel/shipped/configs/demo.toml", "model": {"source": "trained"}}
    assert oi._strip(old) == oi._strip(new) == {"model": {"source": "trained"}}
    assert oi._strip(old) != oi._strip({**new, "model": {"source": "cache"}})


def test_tree_marginal_bench_tiny_checks_its_values(tmp_path):
    """The tree marginal bench runs on tiny sizes (XGBoost, woodelf, shap) and prints its
    value checks before any timing."""
    pytest.importorskip("woodelf", reason=PEER_MISSING.format("woodelf-explainer"))
    pytest.importorskip("xgboost", reason=PEER_MISSING.format("xgboost"))
    env = {**os.environ, "PYTHONPATH": str(BENCH.parent)}
    p = subprocess.run([sys.executable, str(BENCH / "tree_marginal.py"), "--tiny"],
                       capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    for needle in ("## Equal values", "insdel vs woodelf", "us per (B + K)"):
        assert needle in p.stdout, needle
