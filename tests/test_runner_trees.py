"""``insdel reproduce paper-bangalore-trees``: the shipped experiment (a gradient-boosted
ensemble on the tree engine under the three tree removals), run at smaller sizes than its
``--quick``: every file, the engine named, tree_shap equal to exact_shapley, the Kendall table."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from insdel import config as C
from insdel.runner import run_experiment


def test_paper_bangalore_trees_runs_on_the_tree_engine(tmp_path, monkeypatch):
    """... and reads the ensemble once (the model stage), whatever the stages, chunks and
    removals that build its tree games."""
    import insdel.trees as T

    reads, real_read = [], T.read
    monkeypatch.setattr(T, "read", lambda m: reads.append(type(m).__name__) or real_read(m))
    assert C.PAPER_CONFIGS["paper-bangalore-trees"] == "paper_bangalore_trees"
    cfg = C.load("paper_bangalore_trees", quick=True, overrides={
        "targets": {"n": 12}, "decomposition": {"n_pairs": 12, "pairs_per_chunk": 4},
        "evaluation": {"targets_per_chunk": 4},  # three chunks of each stage
        "model": {"params": {"max_iter": 15}},
        "methods": {"options": {"kernel_shap": {"n_samples": 200},
                                "lime": {"n_samples": 100}}}})
    out = tmp_path / "trees"
    res = run_experiment(cfg, out, verbose=False, progress=False)
    assert reads == ["HistGradientBoostingRegressor"]
    man = json.loads((out / "manifest.json").read_text())
    assert man["model"]["engine"] == "tree (scikit-learn, 15 trees, depth 6)"
    assert man["model"]["kind"] == "gradient_boosting" and man["model"]["sha256_of"] == "trees"
    for f in ("summary.md", "summary.csv", "removal_kendall.csv", "removal_robustness.md",
              "counterfactual/removal-marginal", "counterfactual/removal-path_dependent",
              "counterfactual/decomposition.parquet"):
        assert (out / f).exists(), f
    assert "- engine: tree (scikit-learn, 15 trees, depth 6)" in (out / "summary.md").read_text()
    # [model] engine reaches the attributions: each method's engine recorded
    stages = man["compute"]["stages"]
    for method in ("kernel_shap", "tree_shap", "lime"):
        assert stages[f"counterfactual/attributions/{method}"]["engine"] == \
            "tree (scikit-learn, 15 trees, depth 6)", method
        assert stages[f"counterfactual/attributions/{method}"]["model_evaluations"] == 0, method
    abc = pd.read_parquet(out / "counterfactual" / "abc.parquet")
    a = abc[abc["method"] == "tree_shap"].sort_values(["mode", "pair"])
    b = abc[abc["method"] == "exact_shapley"].sort_values(["mode", "pair"])
    np.testing.assert_allclose(a["abc"].to_numpy(), b["abc"].to_numpy(), atol=1e-9)
    tau = pd.read_csv(out / "removal_kendall.csv")
    assert len(tau) == 6 and set(tau["n_methods"]) == {5}  # 4 methods and random
    assert res is not None


def test_gradient_boosting_params_are_checked(tmp_path):
    with pytest.raises(C.ConfigError, match="max_depht"):
        C.load("paper_bangalore_trees", overrides={"model": {"params": {"max_depht": 3}}})
    with pytest.raises(C.ConfigError, match="model.params.*max_iter"):
        C.load("paper_bangalore_trees", overrides={"model": {"params": {"max_iter": 0}}})
    with pytest.raises(C.ConfigError, match="model.kind.*'forest'"):
        C.load("paper_bangalore_trees", overrides={"model": {"kind": "forest"}})
    with pytest.raises(C.ConfigError, match="model.engine: 'trees'"):
        C.load("paper_bangalore_trees", overrides={"model": {"engine": "trees"}})


@pytest.fixture(scope="module")
def boosted(tmp_path_factory):
    """The small CSV and a scikit-learn GradientBoostingRegressor fitted to it (a joblib file)."""
    import joblib
    from _runs import small_csv
    from sklearn.ensemble import GradientBoostingRegressor

    from insdel import datasets

    d = tmp_path_factory.mktemp("boosted")
    csv = small_csv(d / "s.csv")
    ds = datasets.load("table", path=str(csv), target="y", scale="none")
    est = GradientBoostingRegressor(n_estimators=5, max_depth=2, random_state=0)
    joblib.dump(est.fit(ds.X_train, ds.y_train), d / "gbr.joblib")
    return csv, d / "gbr.joblib"


@pytest.mark.parametrize("command", ["road", "tune", "sanity"])
def test_a_command_reads_a_tree_ensemble_once(boosted, tmp_path, monkeypatch, command):
    """``insdel road``, ``tune`` and ``sanity`` read the user's tree ensemble once (the model
    stage), however many methods, trials and checks build its tree games; sanity's data
    randomisation reads its refitted clone once more (another ensemble)."""
    import insdel.trees as T
    from insdel.runner.road import run_road
    from insdel.runner.sanity import run_sanity
    from insdel.runner.tune import run_tune

    csv, model = boosted
    reads, real_read = [], T.read
    monkeypatch.setattr(T, "read", lambda m: reads.append(type(m).__name__) or real_read(m))
    cfg = {"name": "t", "seed": 0,
           "data": {"recipe": "table", "options": {"path": str(csv), "target": "y",
                                                   "scale": "none"}},
           "model": {"path": str(model), "trust": True},
           "methods": {"names": ["kernel_shap", "tree_shap"],
                       "options": {"kernel_shap": {"n_samples": 32}}}}
    if command == "road":
        run_road({**cfg, "road": {"n_rows": 6, "fractions": [0.5, 1.0], "leakage": False,
                                  "removal": "conditional_mean"}}, tmp_path, progress=False)
    elif command == "tune":
        run_tune({**cfg, "methods": {"names": ["kernel_shap"], "options": {}},
                  "tune": {"n_trials": 2, "n_targets": 6}}, tmp_path, progress=False)
    else:
        run_sanity({**cfg, "sanity": {"n_targets": 6, "data_randomisation": True},
                    "meta": {"metrics": ["insertion_abc"], "n_perturbations": 2}}, tmp_path,
                   progress=False)
    est = [r for r in reads if r != "ModelWithTrees"]  # a held ensemble's trees: no reading
    assert est == ["GradientBoostingRegressor"] * (2 if command == "sanity" else 1)
