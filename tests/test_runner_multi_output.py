"""``insdel run`` with ``model.outputs = H``: a model file with H outputs, curves and ABCs per
output and aggregated (insdel.runner.multi)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

import insdel
from insdel import runner
from insdel.config import ConfigError
from insdel.decomposition import batch_decomposition
from tests._runs import small_cfg, small_csv


class _TwoOut(torch.nn.Module):
    def __init__(self, k: int = 2):
        super().__init__()
        self.lin = torch.nn.Linear(3, k)

    def forward(self, x):
        return torch.tanh(self.lin(x)) + x[:, :1] * x[:, 2:3]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("multi")
    csv = small_csv(d / "small.csv")
    torch.manual_seed(0)
    net = _TwoOut()
    torch.jit.save(torch.jit.script(net), str(d / "two.pt"))
    return csv, d / "two.pt", net


def _cfg(csv, path, **model):
    return small_cfg(csv, "multi", model={"path": str(path), **model},
                     methods={"names": ["vanilla_grad", "integrated_gradients"]})


def test_run_with_outputs_gives_curves_and_abcs_per_output(files, tmp_path):
    """Each output's ABCs equal a single-output evaluation of that column on the run's pairs
    (1e-12); summary.csv, summary.md and abc_by_output.csv hold every output and the weighted
    aggregate; output_<h>/ holds output h's saved evaluation."""
    csv, path, net = files
    w = [1.0, 0.5]
    cfg = _cfg(csv, path, outputs=2, output_weights=w)
    cfg["decomposition"] = {"n_pairs": 2}
    res = runner.run_experiment(cfg, tmp_path)
    ev = res.evaluations["median"]
    assert ev.n_outputs == 2
    pairing = res.pairings["median"]
    A = np.load(tmp_path / "median" / "attributions.npz")
    assert A["vanilla_grad"].shape == (len(pairing), 2, 3)
    for h in range(2):
        single = insdel.evaluate(insdel.as_model(net, output=h), pairing.X, pairing.R,
                                 {m: A[m][:, h] for m in A.files}, n_random=1, seed=0)
        for m in A.files:
            for mode in ("insertion", "deletion"):
                np.testing.assert_allclose(ev[h].abc_array(m, mode), single.abc_array(m, mode),
                                           rtol=0, atol=1e-12)
        dec = pd.read_parquet(tmp_path / "median" / f"output_{h}" / "decomposition.parquet")
        want = batch_decomposition(insdel.as_model(net, output=h), pairing.X[:2], pairing.R[:2])
        np.testing.assert_allclose(dec["expected_abc_insertion"], want.expected_abc(), atol=1e-12)
        np.testing.assert_allclose(dec[["shapley_0", "shapley_1", "shapley_2"]], want.shapley(),
                                   atol=1e-12)
        np.testing.assert_allclose(dec["abc_insertion_vanilla_grad"],
                                   ev[h].abc_array("vanilla_grad")[:2], atol=1e-12)
        saved = insdel.Evaluation.load(tmp_path / "median" / f"output_{h}")
        np.testing.assert_allclose(saved.abc_array("vanilla_grad"),
                                   ev[h].abc_array("vanilla_grad"), atol=1e-12)
    table = pd.read_csv(tmp_path / "summary.csv")
    assert set(table["output"].astype(str)) == {"0", "1", "weighted"}
    agg = table[(table["output"] == "weighted") & (table["method"] == "vanilla_grad")
                & (table["mode"] == "insertion")]["mean"].item()
    want = (ev.abc_array("vanilla_grad") @ (np.array(w) / 1.5)).mean()
    assert agg == pytest.approx(want, abs=1e-12)
    md = (tmp_path / "summary.md").read_text()
    assert "median: insertion ABC by output" in md and "| weighted |" in md
    assert res.to_markdown() + "\n" == md  # what `insdel run` prints
    assert "Exact decomposition" in md
    assert set(pd.read_csv(tmp_path / "decomposition_by_output.csv")["output"]) == {0, 1}
    assert (tmp_path / "median" / "abc_by_output.csv").is_file()
    assert res.manifest["outputs"] == 2
    loaded = runner.load_results(tmp_path)["median"]
    np.testing.assert_allclose(loaded.aggregate("vanilla_grad"), ev.aggregate("vanilla_grad"),
                               atol=1e-12)


def test_outputs_the_model_does_not_return_is_an_error_naming_the_key(files, tmp_path):
    csv, path, _ = files
    with pytest.raises(ValueError, match=r"model\.outputs = 3: the model file does not return"):
        runner.run_experiment(_cfg(csv, path, outputs=3), tmp_path)


@pytest.mark.parametrize("model, over, match", [
    ({"params": {"hidden": [4], "dropout": 0.0, "lr": 3e-3}, "outputs": 2}, {}, r"model\.outputs = 2: .*model file"),
    ({"outputs": 2, "output_weights": [1, 2, 3]}, {}, r"model\.output_weights has 3 weights"),
    ({"output_weights": [1, 2]}, {}, r"model\.output_weights .*give model\.outputs"),
    ({"outputs": 2}, {"interactions": {"n_pairs": 2}}, r"interactions\.n_pairs: .*explains one"),
])
def test_multi_output_config_errors_name_the_key(files, model, over, match):
    csv, path, _ = files
    cfg = small_cfg(csv, "multi", model={"path": str(path), **model}, **over)
    if "params" in model:
        cfg["model"].pop("path")
    with pytest.raises(ConfigError, match=match):
        insdel.config.load(cfg)


def test_another_command_refuses_model_outputs(files):
    csv, path, _ = files
    from insdel.config.commands import check_sections

    cfg = insdel.config.load(_cfg(csv, path, outputs=2))
    with pytest.raises(ConfigError, match=r"model\.outputs: .*`insdel roar`"):
        check_sections(cfg, "roar")


def test_a_table_with_h_target_columns_runs_with_the_others_dropped(files, tmp_path):
    """The table recipe reads one target: the other target columns go to data.options.drop and
    the model's 3 features are the rest."""
    csv, path, _ = files
    df = pd.read_csv(csv)
    df["y2"] = df["y"] * 0.5
    two = tmp_path / "two_targets.csv"
    df.to_csv(two, index=False)
    cfg = _cfg(two, path, outputs=2)
    cfg["data"]["options"]["drop"] = ["y2"]
    res = runner.run_experiment(cfg, tmp_path / "out")
    assert res.manifest["data"]["features"] == 3
    assert res.evaluations["median"].n_outputs == 2


def _stages(out):
    return json.loads((out / "manifest.json").read_text())["compute"]["stages"]


def _files(out):
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.suffix in (".csv", ".parquet", ".npz")
            and "checkpoints" not in p.parts}


def test_an_interrupted_multi_output_run_resumes_with_identical_files(files, tmp_path):
    """Interrupted after its first saved chunk, the run started again loads that chunk (its
    attributions are not computed again) and writes the files of an uninterrupted run."""
    csv, path, _ = files
    cfg = _cfg(csv, path, outputs=2)
    cfg["decomposition"] = {"n_pairs": 2}
    full = runner.run_experiment(cfg, tmp_path / "full")

    def interrupt():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.run_experiment(cfg, tmp_path / "cut", _interrupt=interrupt)
    assert not (tmp_path / "cut" / "manifest.json").exists()
    runner.run_experiment(cfg, tmp_path / "cut")
    st = _stages(tmp_path / "cut")
    assert st["median/attributions/vanilla_grad"]["chunks_resumed"] == 1
    assert st["median/attributions/integrated_gradients"]["chunks_resumed"] == 0
    a, b = _files(full.out), _files(tmp_path / "cut")
    assert a.keys() == b.keys() and "median/output_1/decomposition.parquet" in a
    assert [k for k in a if a[k] != b[k]] == []


def test_a_multi_output_chunk_is_reused_only_by_its_own_configuration(files, tmp_path):
    """Started again in the same folder: everything resumes under the same configuration; other
    output weights reuse the per-output curves (the aggregate alone changes); other method
    options recompute that method and the curves."""
    csv, path, _ = files
    cfg = _cfg(csv, path, outputs=2)
    cfg["decomposition"] = {"n_pairs": 2}
    first = runner.run_experiment(cfg, tmp_path)
    runner.run_experiment(cfg, tmp_path)
    st = _stages(tmp_path)
    assert st["median/attributions/integrated_gradients"]["chunks_resumed"] == 2
    assert st["median/curves"]["chunks_resumed"] == 1
    assert st["median/decomposition"]["chunks_resumed"] == 1

    weighted = _cfg(csv, path, outputs=2, output_weights=[3.0, 1.0])
    weighted["decomposition"] = {"n_pairs": 2}
    again = runner.run_experiment(weighted, tmp_path)
    assert _stages(tmp_path)["median/curves"]["chunks_resumed"] == 1
    s0, s1 = first.summary, again.summary
    pd.testing.assert_frame_equal(s0[s0["output"] != "weighted"], s1[s1["output"] != "weighted"])
    ig = s0[(s0["output"] == "weighted") & (s0["method"] == "integrated_gradients")]["mean"]
    ig1 = s1[(s1["output"] == "weighted") & (s1["method"] == "integrated_gradients")]["mean"]
    assert not np.allclose(ig.to_numpy(), ig1.to_numpy())
    want = (again.evaluations["median"].abc_array("integrated_gradients") @ [0.75, 0.25]).mean()
    assert ig1.iloc[0] == pytest.approx(want, abs=1e-12)

    steps = _cfg(csv, path, outputs=2)
    steps["methods"]["options"] = {"integrated_gradients": {"n_steps": 7}}
    runner.run_experiment(steps, tmp_path)
    st = _stages(tmp_path)
    assert st["median/attributions/integrated_gradients"]["chunks_resumed"] == 0
    assert st["median/attributions/vanilla_grad"]["chunks_resumed"] == 2
    assert st["median/curves"]["chunks_resumed"] == 0



def test_multi_output_run_draws_its_figures_and_lists_them(files, tmp_path):
    """figures.enabled: the ABC by output (standard-error bars) and the curves per output of
    each policy, under figures/ and in the manifest's files."""
    csv, path, _ = files
    cfg = _cfg(csv, path, outputs=2)
    cfg["figures"] = {"enabled": True}
    res = runner.run_experiment(cfg, tmp_path)
    names = {"median_abc_by_output.png", "median_insertion_curves_by_output.png",
             "median_deletion_curves_by_output.png"}
    assert {p.name for p in res.figures} == names
    listed = json.loads((tmp_path / "manifest.json").read_text())["files"]
    assert {f"figures/{n}" for n in names} <= set(listed)


def test_further_removals_give_each_outputs_curves_under_them(files, tmp_path):
    """removal.kinds = [baseline, marginal]: <policy>/removal-marginal/output_<h>/ holds output
    h's evaluation under the run's marginal removal, equal to a single-output evaluation of that
    column under it (1e-12); its chunk's key holds the removal's options."""
    from insdel.runner.removals import build_removals

    csv, path, net = files
    cfg = _cfg(csv, path, outputs=2)
    cfg["removal"] = {"kinds": ["baseline", {"name": "marginal",
                                             "options": {"n_references": 3}}]}
    res = runner.run_experiment(cfg, tmp_path)
    pairing = res.pairings["median"]
    A = np.load(tmp_path / "median" / "attributions.npz")
    rem = build_removals(res.config, res.dataset)[1]
    under = res.removal_evaluations["median"]["marginal"]
    assert (tmp_path / "median" / "removal-marginal" / "abc_by_output.csv").is_file()
    for h in range(2):
        single = insdel.evaluate(insdel.as_model(net, output=h), pairing.X, pairing.R,
                                 {m: A[m][:, h] for m in A.files}, n_random=1,
                                 removal=rem.removal)
        saved = insdel.Evaluation.load(tmp_path / "median" / "removal-marginal" / f"output_{h}")
        for m in A.files:
            np.testing.assert_allclose(saved.abc_array(m), single.abc_array(m), atol=1e-12)
            np.testing.assert_allclose(under[h].abc_array(m, "deletion"),
                                       single.abc_array(m, "deletion"), atol=1e-12)
    assert not np.allclose(under.abc_array("vanilla_grad"),
                           res.evaluations["median"].abc_array("vanilla_grad"))
    cfg["removal"]["kinds"][1]["options"] = {"n_references": 4}
    runner.run_experiment(cfg, tmp_path)
    st = _stages(tmp_path)
    assert st["median/curves"]["chunks_resumed"] == 1
    assert st["median/curves/removal-marginal"]["chunks_resumed"] == 0
    m = json.loads((tmp_path / "manifest.json").read_text())
    assert [r["name"] for r in m["removals"]] == ["baseline", "marginal"]
    assert m["removals"][1]["params"]["n_references"] == 4


def test_multi_output_pairing_indices_are_rows_of_the_test_split(files, tmp_path):
    """The saved and returned pairing names each target and reference by its row of the data
    set's test split (the pool is a sample of it)."""
    csv, path, _ = files
    cfg = _cfg(csv, path, outputs=2)
    cfg["targets"] = {"n": 4}
    res = runner.run_experiment(cfg, tmp_path)
    pairing = res.pairings["median"]
    Xt = np.asarray(res.dataset.X_test)
    assert len(Xt) > 4
    np.testing.assert_array_equal(Xt[pairing.target_index], pairing.X)


class _Column(torch.nn.Module):
    """Output h of a multi-output module alone: the model file of a single-output run."""

    def __init__(self, net: torch.nn.Module, h: int):
        super().__init__()
        self.net, self.h = net, h

    def forward(self, x):
        return self.net(x)[:, self.h]


#: metrics through the game (insertion_abc, faithfulness_correlation), through the model's own
#: points (infidelity) and re-explaining perturbed inputs (sensitivity)
_METRICS = {"names": ["insertion_abc", "faithfulness_correlation", "infidelity", "sensitivity"]}


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    """A float64 module with 3 outputs and, per output, a file of that output alone."""
    d = tmp_path_factory.mktemp("three")
    csv = small_csv(d / "small.csv")
    torch.manual_seed(0)
    net = _TwoOut(3).double()
    torch.jit.save(torch.jit.script(net), str(d / "three.pt"))
    cols = []
    for h in range(3):
        cols.append(d / f"column_{h}.pt")
        torch.jit.save(torch.jit.script(_Column(net, h)), str(cols[-1]))
    return csv, d / "three.pt", cols


def _metrics_cfg(csv, path, **model):
    cfg = _cfg(csv, path, **model)
    cfg["methods"]["names"].append("random")  # the metrics' control: the random method
    cfg["metrics"] = dict(_METRICS)
    return cfg


def test_metrics_per_output_equal_single_output_runs_on_each_column(three, tmp_path):
    """[metrics] with model.outputs = 3: output h's scores and summary rows equal a single-output
    run on a model file of output h alone (1e-12); the weighted rows are each pair's weighted
    score's mean and standard error; the outputs share the model's rows."""
    from insdel._stats import mean_se

    csv, path, cols = three
    w = np.array([1.0, 2.0, 1.0]) / 4
    res = runner.run_experiment(_metrics_cfg(csv, path, outputs=3, output_weights=w.tolist()),
                                tmp_path / "multi")
    pol = tmp_path / "multi" / "median"
    scores = pd.read_parquet(pol / "metrics.parquet")
    summ = pd.read_csv(pol / "metrics_summary.csv")
    assert list(scores.columns) == ["output", "pair", "method", "metric", "value",
                                    "higher_is_better"]
    assert list(summ["output"].astype(str).unique()) == ["0", "1", "2", "weighted"]
    for h in range(3):
        runner.run_experiment(_metrics_cfg(csv, cols[h]), tmp_path / f"single_{h}")
        one = pd.read_parquet(tmp_path / f"single_{h}" / "median" / "metrics.parquet")
        mine = scores[scores["output"] == h].drop(columns="output").reset_index(drop=True)
        pd.testing.assert_frame_equal(mine.drop(columns="value"), one.drop(columns="value"))
        np.testing.assert_allclose(mine["value"], one["value"], rtol=0, atol=1e-12)
        one_s = pd.read_csv(tmp_path / f"single_{h}" / "median" / "metrics_summary.csv")
        mine_s = summ[summ["output"].astype(str) == str(h)].drop(columns="output")
        for c in ("mean", "std_error"):
            np.testing.assert_allclose(mine_s[c], one_s[c], rtol=0, atol=1e-12)
        assert (mine_s[["metric", "method", "n", "n_units"]].to_numpy()
                == one_s[["metric", "method", "n", "n_units"]].to_numpy()).all()
    wide = scores.pivot_table(index=["metric", "method", "pair"], columns="output",
                              values="value", sort=False)
    agg = wide.to_numpy() @ w
    weighted = summ[summ["output"] == "weighted"].set_index(["metric", "method"])
    clusters = res.pairings["median"].cluster
    for (metric, method), v in pd.Series(agg, index=wide.index).groupby(
            level=["metric", "method"], sort=False):
        pairs = v.index.get_level_values("pair")
        mu, se, _ = mean_se(v.to_numpy(), None if clusters is None else clusters[pairs])
        assert weighted.loc[(metric, method), "mean"] == pytest.approx(mu, abs=1e-12)
        assert weighted.loc[(metric, method), "std_error"] == pytest.approx(se, abs=1e-12)
        want = summ[(summ["metric"] == metric) & (summ["method"] == method)
                    & (summ["output"] != "weighted")]["mean"].to_numpy() @ w
        assert weighted.loc[(metric, method), "mean"] == pytest.approx(want, abs=1e-12)
    st = [_stages(tmp_path / "multi")[f"median/output_{h}/metrics"] for h in range(3)]
    # forward rows: the later outputs' rows are mostly the first's, evaluated once
    forward = [s["model_evaluations"] - s["gradient_evaluations"] for s in st]
    assert forward[0] > 0 and forward[1] + forward[2] < forward[0]
    assert all(s["gradient_evaluations"] > 0 for s in st)  # sensitivity re-explains per output
    run_summary = pd.read_csv(tmp_path / "multi" / "metrics_summary.csv")
    assert set(run_summary["policy"]) == {"median"} and len(run_summary) == len(summ)
    assert res.metrics is not None and len(res.metrics) == len(summ)
    md = (tmp_path / "multi" / "summary.md").read_text()
    assert "## Metrics, policy median: sensitivity ↓ by output" in md
    agree = pd.read_csv(pol / "metric_agreement.csv")
    assert list(agree["output"].astype(str).unique()) == ["0", "1", "2", "weighted"]


def test_an_interrupted_multi_output_metrics_stage_resumes_with_identical_files(three,
                                                                             tmp_path):
    """Interrupted after output 0's metrics checkpoint, the run started again loads it and
    writes the files of an uninterrupted run; other output weights reuse every output's scores
    (the weighted rows alone change); other metric options score every output again."""
    csv, path, _ = three
    cfg = _metrics_cfg(csv, path, outputs=3)
    full = runner.run_experiment(cfg, tmp_path / "full")
    cut = tmp_path / "cut"

    def interrupt():
        if (cut / "checkpoints" / "median" / "output_0" / "metrics" / "KEY").is_file():
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.run_experiment(cfg, cut, _interrupt=interrupt)
    assert not (cut / "median" / "metrics.parquet").exists()
    runner.run_experiment(cfg, cut)
    st = _stages(cut)
    assert [st[f"median/output_{h}/metrics"]["chunks_resumed"] for h in range(3)] == [1, 0, 0]
    assert st["median/output_0/metrics"]["model_evaluations"] == 0
    a, b = _files(full.out), _files(cut)
    assert {"median/metrics.parquet", "median/metrics_summary.csv",
            "median/metric_agreement.csv", "metrics_summary.csv"} <= a.keys()
    assert a.keys() == b.keys() and [k for k in a if a[k] != b[k]] == []

    weighted = _metrics_cfg(csv, path, outputs=3, output_weights=[3.0, 1.0, 0.0])
    runner.run_experiment(weighted, cut)
    st = _stages(cut)
    assert [st[f"median/output_{h}/metrics"]["chunks_resumed"] for h in range(3)] == [1, 1, 1]
    s0 = pd.read_csv(full.out / "median" / "metrics_summary.csv")
    s1 = pd.read_csv(cut / "median" / "metrics_summary.csv")
    pd.testing.assert_frame_equal(s0[s0["output"] != "weighted"], s1[s1["output"] != "weighted"])
    assert not np.allclose(s0[s0["output"] == "weighted"]["mean"],
                           s1[s1["output"] == "weighted"]["mean"])

    other = _metrics_cfg(csv, path, outputs=3)
    other["metrics"]["options"] = {"infidelity": {"n_samples": 3}}
    runner.run_experiment(other, cut)
    st = _stages(cut)
    assert [st[f"median/output_{h}/metrics"]["chunks_resumed"] for h in range(3)] == [0, 0, 0]


_MARGINAL = {"name": "marginal", "options": {"n_references": 3}}


def _per_removal(cfg, kind=None):
    cfg["removal"] = {"kinds": ["baseline", kind or _MARGINAL], "attributions": "per_removal"}
    return cfg


@pytest.mark.parametrize("kind", [_MARGINAL, {"name": "conditional_gaussian",
                                              "options": {"n_draws": 2}}],
                         ids=["marginal", "conditional_gaussian"])
def test_per_removal_attributions_equal_each_outputs_own_run(files, tmp_path, kind):
    """removal.attributions = "per_removal": each output's attributions under a further
    removal (references drawn from the training rows; rows drawn from the kept features, traced
    per output view), and its curves under it scored with them, equal a single-output run of
    that output's column with per_removal (1e-12; a float64 module, where the column's
    integrated gradients are the output view's to the last bits); they differ from the pairs'
    references'."""
    csv = files[0]
    torch.manual_seed(0)
    net = _TwoOut().double()
    path = tmp_path / "two64.pt"
    torch.jit.save(torch.jit.script(net), str(path))
    name = kind["name"]
    res = runner.run_experiment(_per_removal(_cfg(csv, path, outputs=2), kind),
                                tmp_path / "multi")
    folder = tmp_path / "multi" / "median"
    A = np.load(folder / "attributions.npz")
    own = np.load(folder / f"removal-{name}" / "attributions.npz")
    assert own["vanilla_grad"].shape == A["vanilla_grad"].shape == (6, 2, 3)
    assert not np.allclose(own["integrated_gradients"], A["integrated_gradients"])
    assert res.manifest["removal_attributions"] == "per_removal"
    md = (tmp_path / "multi" / "summary.md").read_text()
    assert f"removal {name} (<policy>/removal-{name}/)" in md
    assert "attributions: each removal's own" in md
    under = res.removal_evaluations["median"][name]
    for h in range(2):
        col = tmp_path / f"col{h}.pt"
        torch.jit.save(torch.jit.script(_Column(net, h)), str(col))
        single = runner.run_experiment(_per_removal(_cfg(csv, col), kind),
                                       tmp_path / f"single{h}")
        one = tmp_path / f"single{h}" / "median"
        for file, got in (("attributions.npz", A), (f"removal-{name}/attributions.npz", own)):
            want = np.load(one / file)
            for m in want.files:
                np.testing.assert_allclose(got[m][:, h], want[m], rtol=0, atol=1e-12)
        want_ev = single.removal_evaluations["median"][name]
        saved = insdel.Evaluation.load(folder / f"removal-{name}" / f"output_{h}")
        for m in A.files:
            for mode in ("insertion", "deletion"):
                np.testing.assert_allclose(under[h].abc_array(m, mode),
                                           want_ev.abc_array(m, mode), rtol=0, atol=1e-12)
                np.testing.assert_allclose(saved.abc_array(m, mode),
                                           want_ev.abc_array(m, mode), rtol=0, atol=1e-12)
                np.testing.assert_allclose(res.evaluations["median"][h].abc_array(m, mode),
                                           single.evaluations["median"].abc_array(m, mode),
                                           rtol=0, atol=1e-12)


def _count_to(n: int):
    """An interrupt that stops the run at the n-th saved chunk."""
    count = [0]

    def interrupt():
        count[0] += 1
        if count[0] == n:
            raise KeyboardInterrupt

    return interrupt


def test_an_interrupted_per_removal_run_resumes_with_identical_files(files, tmp_path):
    """Stopped in its attributions under the marginal removal (after the baseline's four
    chunks and one of the removal's), the run started again loads every saved chunk and writes
    the files of an uninterrupted run; the removal's chunks are keyed apart from the
    baseline's."""
    csv, path, _ = files
    cfg = _per_removal(_cfg(csv, path, outputs=2))
    full = runner.run_experiment(cfg, tmp_path / "full")
    with pytest.raises(KeyboardInterrupt):
        runner.run_experiment(cfg, tmp_path / "cut", _interrupt=_count_to(5))
    runner.run_experiment(cfg, tmp_path / "cut")
    st = _stages(tmp_path / "cut")
    assert st["median/attributions/integrated_gradients"]["chunks_resumed"] == 2
    assert st["median/attributions/removal-marginal/vanilla_grad"]["chunks_resumed"] == 1
    assert st["median/attributions/removal-marginal/integrated_gradients"][
        "chunks_resumed"] == 0
    a, b = _files(full.out), _files(tmp_path / "cut")
    assert "median/removal-marginal/attributions.npz" in a
    assert a.keys() == b.keys() and [k for k in a if a[k] != b[k]] == []


@pytest.fixture
def client():
    """An in-process Dask client of one single-threaded worker; the serial runs beside it use
    torch's thread count of the workers (1), as a Dask run's driver does: a float32 model's
    rounding can depend on it (docs/experiments.md)."""
    dd = pytest.importorskip("dask.distributed")
    from insdel._threads import start_numba_threads

    start_numba_threads()  # first, as insdel starts it: its start can set torch's count
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with dd.Client(processes=False, n_workers=1, threads_per_worker=1,
                       dashboard_address=None) as cl:
            yield cl
    finally:
        torch.set_num_threads(before)


def _chunks(out):
    return {str(p.relative_to(out)) for p in (out / "checkpoints").rglob("chunk_*.npy")}


def _pickled(net, tmp_path):
    """``net`` saved whole (torch.save, loaded on trust): a module that pickles reaches the
    workers itself (a TorchScript file reaches them by its path)."""
    path = tmp_path / "two_full.pt"
    torch.save(net, str(path))
    return path


def test_a_dask_multi_output_run_equals_the_serial_run_byte_for_byte(files, client, tmp_path):
    """A Dask client (compute.backend = "dask"): the attributions (per removal) and each
    output's decomposition run as chunks on its workers; the data files and the checkpoint
    chunks are those of the serial run, byte for byte, and the manifest names the backend."""
    csv, _, net = files
    cfg = _per_removal(_cfg(csv, _pickled(net, tmp_path), outputs=2, trust=True))
    cfg["decomposition"] = {"n_pairs": 3, "pairs_per_chunk": 2}
    serial = runner.run_experiment(cfg, tmp_path / "serial")
    res = runner.run_experiment(cfg, tmp_path / "dask", client=client)
    a, b = _files(serial.out), _files(tmp_path / "dask")
    assert "median/output_1/decomposition.parquet" in a
    assert "median/removal-marginal/attributions.npz" in a
    assert a.keys() == b.keys() and [k for k in a if a[k] != b[k]] == []
    assert _chunks(serial.out) == _chunks(tmp_path / "dask")
    assert res.manifest["compute"]["backend"] == "dask"
    assert serial.manifest["compute"]["backend"] == "serial"
    assert res.manifest["compute"]["stages"]["median/decomposition"]["pairs"] == 3


def test_a_run_stopped_on_dask_resumes_serially_with_identical_files(files, client,
                                                                     tmp_path):
    """Interrupted on the client, started again without one: the saved chunks are loaded (the
    keys do not name the backend) and the files are the uninterrupted serial run's."""
    csv, _, net = files
    cfg = _cfg(csv, _pickled(net, tmp_path), outputs=2, trust=True)
    cfg["decomposition"] = {"n_pairs": 2, "pairs_per_chunk": 1}
    full = runner.run_experiment(cfg, tmp_path / "full")
    with pytest.raises(KeyboardInterrupt):
        runner.run_experiment(cfg, tmp_path / "cut", client=client, _interrupt=_count_to(3))
    runner.run_experiment(cfg, tmp_path / "cut")
    st = _stages(tmp_path / "cut")
    assert sum(s.get("chunks_resumed", 0) for s in st.values()) == 3  # saved, then stopped
    a, b = _files(full.out), _files(tmp_path / "cut")
    assert a.keys() == b.keys() and [k for k in a if a[k] != b[k]] == []


def test_a_torchscript_file_reaches_the_workers_by_its_path(files, client, tmp_path):
    """A model file that does not pickle (TorchScript) is loaded by each worker from its path
    and keeps its H outputs there: a float32 module's data files and checkpoint chunks are the
    serial run's, byte for byte (the workers' modules are fresh, the driver's has run: insdel
    runs TorchScript unoptimised, so the call history does not move the rounding)."""
    csv = files[0]
    torch.manual_seed(0)
    path = tmp_path / "two32.pt"
    torch.jit.save(torch.jit.script(_TwoOut()), str(path))
    cfg = _cfg(csv, path, outputs=2)
    cfg["decomposition"] = {"n_pairs": 2}
    serial = runner.run_experiment(cfg, tmp_path / "serial")
    res = runner.run_experiment(cfg, tmp_path / "dask", client=client)
    assert res.manifest["compute"]["backend"] == "dask"
    a, b = _files(serial.out), _files(tmp_path / "dask")
    assert "median/attributions.npz" in a and "median/output_1/decomposition.parquet" in a
    assert a.keys() == b.keys() and [k for k in a if a[k] != b[k]] == []
    assert _chunks(serial.out) == _chunks(tmp_path / "dask")


def test_compute_backend_dask_runs_a_multi_output_run_on_its_scheduler(files, client,
                                                                        tmp_path):
    """[compute] backend = "dask" with the scheduler's address: the run's chunks go there and
    the manifest names it."""
    csv, _, net = files
    cfg = _cfg(csv, _pickled(net, tmp_path), outputs=2, trust=True)
    cfg["compute"] = {"backend": "dask", "address": client.scheduler.address}
    res = runner.run_experiment(cfg, tmp_path / "out")
    assert res.manifest["compute"]["backend"] == "dask"
    assert res.manifest["compute"]["scheduler"] == client.scheduler.address
    assert res.evaluations["median"].n_outputs == 2
