"""cohort_shapley and igcs in experiment configurations: the run gives them the data set's rows and
y (as it gives the cohort removal), their game options default to [removal.cohort]'s, their
chunks resume and recompute when the game changes; the shipped observational-bangalore run."""

from __future__ import annotations

import re

import numpy as np
import pytest
from _runs import small_cfg

import insdel
from insdel import cli
from insdel import config as C
from insdel.runner import run_experiment
from insdel.runner.removals import observed_rows
from insdel.runner.stages.attribution import observed_options

COHORT_METHODS = {"names": ["vanilla_grad", "cohort_shapley", "igcs"],
                  "options": {"igcs": {"n_steps": 16}}}


def _cfg(csv, name="c", *, cohort=None, options=None, kinds=("baseline", "cohort")):
    methods = {**COHORT_METHODS, "options": {**COHORT_METHODS["options"], **(options or {})}}
    removal = {"kinds": list(kinds)}
    if cohort is not None:
        removal["cohort"] = cohort
    return small_cfg(csv, name, methods=methods, removal=removal)


# -- configuration -----------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["data", "outcome", "y"])
def test_data_and_outcome_in_a_config_are_refused(csv, key):
    cfg = _cfg(csv, options={"cohort_shapley": {key: [1.0, 2.0]}})
    with pytest.raises(C.ConfigError, match=rf"methods\.options\.cohort_shapley\.{key}: the run "
                                            r"gives cohort_shapley every row of the data set"):
        C.load(cfg)
    with pytest.raises(ValueError, match=rf"methods\.options\.igcs\.{key}: the run gives"):
        observed_options("igcs", {key: 1}, {})


def test_an_unknown_option_of_a_cohort_method_is_named(csv):
    cfg = _cfg(csv, options={"cohort_shapley": {"tolerence": 0.2}})
    with pytest.raises(C.ConfigError) as err:
        C.load(cfg)
    msg = str(err.value)
    assert "unknown key 'methods.options.cohort_shapley.tolerence'; did you mean 'tolerance'" in msg
    # the options a configuration may give: not the run-given data and outcome
    listed = msg.split("(valid keys: ")[1]
    assert "tolerance" in listed and "categorical" in listed and "n_orderings" in listed
    assert not re.search(r"\b(data|outcome|y)\b", listed), listed
    assert C.observational_method("igcs") and C.observational_method("cohort_shapley")
    assert not C.observational_method("kernel_shap")


def test_the_game_options_default_to_the_cohort_removal():
    cfg = {"removal": {"kinds": ["baseline"], "cohort": {"tolerance": 0.3, "empty": "nearest",
                                                          "categorical": [1]}}}
    assert observed_options("cohort_shapley", {"n_orderings": 8}, cfg) == {
        "n_orderings": 8, "tolerance": 0.3, "empty": "nearest", "categorical": [1]}
    # igcs takes no empty=; the method's own option wins
    assert observed_options("igcs", {"tolerance": 0.05}, cfg) == {"tolerance": 0.05,
                                                                  "categorical": [1]}
    assert observed_options("igcs", {}, {"removal": {"kinds": ["baseline"]}}) == {}
    assert observed_options("vanilla_grad", {"x": 1}, cfg) == {"x": 1}  # others untouched


# -- a run -------------------------------------------------------------------------------------
def _bytes(out):
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != "manifest.json" and "checkpoints" not in p.parts}


def test_a_run_with_the_cohort_methods_writes_the_robustness_report(csv, tmp_path):
    cfg = _cfg(csv, cohort={"tolerance": 0.2})
    out = tmp_path / "run"
    res = run_experiment(cfg, out, progress=False)
    rob = res.robustness
    assert set(rob["removal"]) == {"baseline", "cohort"}
    assert {"cohort_shapley", "igcs", "vanilla_grad", "random"} == set(rob["method"])
    assert set(res.robustness_kendall[["removal_a", "removal_b"]].itertuples(index=False)) == {
        ("baseline", "cohort")}
    for f in ("removal_robustness.md", "removal_robustness.csv", "removal_kendall.csv"):
        assert (out / f).is_file()
    text = (out / "removal_robustness.md").read_text()
    assert "cohort_shapley" in text and "igcs" in text
    # the attributions are the cohort game's on every row of the data set and its y, at the
    # tolerance of [removal.cohort]
    data, y = observed_rows(res.dataset)
    assert data.shape[0] == len(res.dataset.X_train) + len(res.dataset.X_test)
    p = res.pairings["median"]
    A = dict(np.load(out / "median" / "attributions.npz"))
    # n = 3 <= max_d: exact Shapley values, no seed enters
    want = insdel.attribute(None, p.X, None, "cohort_shapley", data=data, outcome=y,
                            tolerance=0.2)
    np.testing.assert_allclose(A["cohort_shapley"], want, atol=1e-12)
    want = insdel.attribute(None, p.X, None, "igcs", data=data, outcome=y, tolerance=0.2,
                            n_steps=16)
    np.testing.assert_allclose(A["igcs"], want, atol=1e-12)
    stages = res.manifest["compute"]["stages"]
    assert stages["median/attributions/cohort_shapley"]["model_evaluations"] == 0
    assert stages["median/curves/removal-cohort"]["model_evaluations"] == 0

    # a re-run resumes every attribution chunk and writes the same bytes
    before = _bytes(out)
    again = run_experiment(cfg, out, progress=False)
    st = again.manifest["compute"]["stages"]
    for m in COHORT_METHODS["names"]:
        rec = st[f"median/attributions/{m}"]
        assert rec["chunks_resumed"] == rec["chunks"] == 2, m
    assert _bytes(out) == before

    # another tolerance (of the removal: the methods' default) recomputes the cohort methods only
    third = run_experiment(_cfg(csv, cohort={"tolerance": 0.3}), out, progress=False)
    st = third.manifest["compute"]["stages"]
    assert st["median/attributions/vanilla_grad"]["chunks_resumed"] == 2
    for m in ("cohort_shapley", "igcs"):
        assert st[f"median/attributions/{m}"]["chunks_resumed"] == 0, m
    assert not np.allclose(np.load(out / "median" / "attributions.npz")["igcs"], A["igcs"])
    # the method's own tolerance wins over the removal's, and keys its chunks
    fourth = run_experiment(_cfg(csv, cohort={"tolerance": 0.3},
                                 options={"igcs": {"n_steps": 16, "tolerance": 0.2}}),
                            out, progress=False)
    st = fourth.manifest["compute"]["stages"]
    assert st["median/attributions/cohort_shapley"]["chunks_resumed"] == 2
    assert st["median/attributions/igcs"]["chunks_resumed"] == 0
    np.testing.assert_allclose(np.load(out / "median" / "attributions.npz")["igcs"], A["igcs"],
                               atol=1e-12)


def test_the_cohort_methods_need_no_cohort_removal(csv, tmp_path):
    res = run_experiment(_cfg(csv, kinds=("baseline",)), tmp_path / "run", progress=False)
    assert res.robustness is None
    assert {"cohort_shapley", "igcs"} <= set(res.summary["method"])


# -- the shipped experiment --------------------------------------------------------------------
def test_the_shipped_observational_config():
    assert C.PAPER_CONFIGS["observational-bangalore"] == "observational_bangalore"
    assert "observational-bangalore" in cli.REPRODUCES
    assert "insdel reproduce observational-bangalore)" in C.format_list()
    cfg, quick = C.load("observational_bangalore"), C.load("observational-bangalore", quick=True)
    plain = C.load("paper_bangalore")
    for c in (cfg, quick):
        assert c["removal"]["kinds"] == ["baseline", "cohort"]
        assert c["removal"]["cohort"] == {"tolerance": 0.1}
        assert c["data"] == plain["data"]  # housing_sim, or --data with the real recipe
        assert {"cohort_shapley", "igcs"} <= set(c["methods"]["names"])
    assert cfg["methods"]["names"] == [*plain["methods"]["names"], "cohort_shapley", "igcs"]
    for k in ("model", "targets", "policies", "evaluation", "decomposition"):
        assert cfg[k] == plain[k], k
    # --quick: no exact decomposition (and so no exact_shapley), the rest of the methods
    assert quick["decomposition"]["n_pairs"] == 0
    assert quick["methods"]["names"] == [m for m in cfg["methods"]["names"]
                                         if m != "exact_shapley"]


@pytest.fixture
def one_torch_thread():
    """torch on one thread for the test: the paper's Bangalore MLP trains in ~3 s on one thread and
    can take minutes on two threads of a busy 2-core machine."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def test_reproduce_observational_bangalore_quick(tmp_path, capsys, one_torch_thread):
    out = tmp_path / "obs"
    assert cli.main(["reproduce", "observational-bangalore", "--quick", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| insertion | baseline / cohort |" in text and "| deletion | baseline / cohort |" in text
    assert (out / "figures" / "removal_robustness.png").is_file()
    assert (out / "counterfactual" / "removal-cohort").is_dir()
    import pandas as pd

    tau = pd.read_csv(out / "removal_kendall.csv")
    assert list(tau["n_methods"]) == [9, 9]  # 8 methods and random
