"""The removals of a run (insdel.runner.removals): the data set's one-hot groups reach every
removal that draws, by themselves or by group name, and a run on one-hot data prints no raw
warning."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _runs import categorical_csv, small_cfg

from insdel import config as C
from insdel import removal
from insdel.removal import gaussian, knn
from insdel.runner import run_experiment
from insdel.runner.removals import build_removals, one_hot_of
from insdel.runner.stages.data import load_dataset


@pytest.fixture
def cat_csv(tmp_path):
    return categorical_csv(tmp_path / "cat.csv")


def _cfg(csv, kinds, name="r", **over):
    cfg = small_cfg(csv, name, removal={"kinds": list(kinds)}, **over)
    cfg["data"]["options"]["categorical"] = ["region"]
    return cfg


REGION = [2, 3, 4]  # the one-hot columns region=north, region=south, region=west


def test_a_run_gives_the_conditional_removals_the_one_hot_groups(cat_csv, tmp_path, monkeypatch,
                                                                 capsys):
    drawn = []
    for cls in (gaussian.ConditionalGaussian, knn.ConditionalKNN):
        def recording(self, X, keep, targets, _orig=cls.sample):
            rows = _orig(self, X, keep, targets)
            drawn.append(rows)
            return rows

        monkeypatch.setattr(cls, "sample", recording)
    cfg = _cfg(cat_csv, ["baseline", "conditional_gaussian", "conditional_knn"],
               methods={"names": ["vanilla_grad"]})
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = run_experiment(cfg, tmp_path / "run", verbose=True)
    err = capsys.readouterr().err
    assert "Warning" not in err and "site-packages" not in err
    # without a terminal (INSDEL_PROGRESS=0) each stage names itself in a plain line
    assert "attributions [median]: started (2 chunks)" in err
    assert "curves [median, removal conditional_gaussian]: started (6 pairs)" in err
    assert res.dataset.feature_names[2:] == ["region=north", "region=south", "region=west"]
    params = {r["name"]: r["params"] for r in res.manifest["removals"]}
    assert params["conditional_gaussian"]["one_hot"] == [REGION]
    assert params["conditional_knn"]["one_hot"] == [REGION]
    rows = np.concatenate([d.reshape(-1, 5) for d in drawn])
    assert len(rows) > 1000
    block = rows[:, REGION]
    assert np.isin(block, [0.0, 1.0]).all() and (block.sum(axis=1) == 1).all()
    # the one-hot group's collinear columns are expected: the ridge is in the record, and no
    # raw warning (a site-packages path and a source line) is printed
    assert params["conditional_gaussian"]["ridge_added"] > 0
    assert [str(w.message) for w in rec if issubclass(w.category, UserWarning)] == []


def test_the_groups_by_name_and_none(cat_csv):
    cfg = C.load(_cfg(cat_csv, ["conditional_gaussian", "conditional_knn", "conditional_mean"]))
    data = load_dataset(cfg)
    assert one_hot_of(data) == {"region": REGION}
    cfg["removal"]["conditional_gaussian"] = {"one_hot": []}
    cfg["removal"]["conditional_knn"] = {"one_hot": ["region"]}
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        built = {r.name: r.removal for r in build_removals(cfg, data)}
    assert built["conditional_gaussian"].one_hot == []
    assert any("singular" in str(w.message) for w in rec)  # without the group: unexpected
    assert built["conditional_knn"].one_hot == [REGION]
    assert built["conditional_mean"].one_hot == [REGION]
    cfg["removal"]["conditional_knn"] = {"one_hot": ["regoin"]}
    cfg["removal"]["conditional_gaussian"] = {}
    with pytest.raises(C.ConfigError, match=r"removal.conditional_knn: one_hot: 'regoin' is not "
                                            r"a feature group of the data set \(its groups: "
                                            r"region\)"):
        build_removals(cfg, data)


def test_one_hot_by_group_name_groups_or_mapping_in_the_api():
    import pandas as pd

    from insdel.groups import check_groups

    rng = np.random.default_rng(0)
    d = rng.normal(size=(200, 5))
    d[:, 2:] = np.eye(3)[rng.integers(0, 3, 200)]
    df = pd.DataFrame(d, columns=["a", "b", "region=x", "region=y", "region=z"])
    for spec, data in ((["region"], df), (check_groups({"region": REGION}, 5), d),
                       ({"region": REGION}, d), ([REGION], d),
                       ([["region=x", "region=y", "region=z"]], df)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a complete one-hot group: no warning
            for name in ("conditional_gaussian", "conditional_knn", "conditional_mean"):
                assert removal.build(name, data=data, one_hot=spec).one_hot == [REGION], spec
    with pytest.raises(ValueError, match="group name 'region' needs data= as a DataFrame"):
        removal.build("conditional_gaussian", data=d, one_hot=["region"])
    with pytest.raises(ValueError, match=r"one_hot group 'town' names no column of data .*"
                                         r"\['region'\]"):
        removal.build("conditional_knn", data=df, one_hot=["town"])


def test_knn_keeps_a_group_removed_in_part_one_hot():
    # ten continuous columns outweigh the kept group members in the distance: without the groups
    # the neighbours' levels clash with x's kept ones
    rng = np.random.default_rng(3)
    d = rng.normal(size=(60, 13))
    d[:, 10:] = np.eye(3)[rng.integers(0, 3, 60)]
    group = [10, 11, 12]
    keep = rng.random((400, 13)) < 0.7
    X = d[rng.integers(0, 60, 400)]
    rem = removal.build("conditional_knn", data=d, n_neighbors=10, one_hot=[group])
    block = rem.sample(X, keep, np.arange(400))[:, :, group]
    assert np.isin(block, [0.0, 1.0]).all() and (block.sum(axis=2) == 1).all()
    plain = removal.build("conditional_knn", data=d, n_neighbors=10)
    assert (plain.sample(X, keep, np.arange(400))[:, :, group].sum(axis=2) != 1).any()
    # a group removed whole takes a training row's levels: the same rows with or without groups
    whole = keep.copy()
    whole[:, group] = whole[:, [10]]
    np.testing.assert_array_equal(rem.sample(X, whole, np.arange(400)),
                                  plain.sample(X, whole, np.arange(400)))


# -- removal.attributions: which attributions each removal's curves score ----------------------
def test_removal_attributions_is_checked_with_did_you_mean(csv):
    with pytest.raises(C.ConfigError, match=r"removal.attributions: unknown value 'per_remval'; "
                                            r"did you mean 'per_removal'\?"):
        C.load(small_cfg(csv, "a", removal={"kinds": ["baseline"], "attributions": "per_remval"}))
    assert C.load(small_cfg(csv, "a"))["removal"]["attributions"] == "baseline"


def test_attributions_per_removal_against_baseline_attributions(csv, tmp_path):
    import insdel

    kinds = {"kinds": ["baseline", "marginal"], "marginal": {"n_references": 3}}
    methods = {"names": ["kernel_shap", "vanilla_grad"]}
    out = tmp_path / "run"
    base = run_experiment(small_cfg(csv, "a", removal=kinds, methods=methods), out)
    folder = out / "median" / "removal-marginal"
    assert not (folder / "attributions.npz").exists()
    assert base.manifest["removal_attributions"] == "baseline"
    for f in ("removal_robustness.md", "summary.md"):
        assert "attributions: one set per policy, computed for the pairs' reference r" in \
            (out / f).read_text(), f
    A0 = dict(np.load(out / "median" / "attributions.npz"))

    per = run_experiment(small_cfg(csv, "a", methods=methods,
                                   removal={**kinds, "attributions": "per_removal"}), out)
    assert per.manifest["removal_attributions"] == "per_removal"
    for f in ("removal_robustness.md", "summary.md"):
        assert "attributions: each removal's own, computed under that removal's game" in \
            (out / f).read_text(), f
    st = per.manifest["compute"]["stages"]
    # the baseline's attributions and curves are the same chunks as before; marginal's are its own
    assert st["median/attributions/kernel_shap"]["chunks_resumed"] == 2
    assert st["median/curves"]["chunks_resumed"] == 1
    assert st["median/attributions/removal-marginal/kernel_shap"]["chunks_resumed"] == 0
    assert st["median/curves/removal-marginal"]["chunks_resumed"] == 0
    np.testing.assert_array_equal(np.load(out / "median" / "attributions.npz")["kernel_shap"],
                                  A0["kernel_shap"])
    A1 = dict(np.load(folder / "attributions.npz"))
    rem = insdel.removal.Marginal(per.dataset.X_train, n_references=3, seed=0)
    X = per.pairings["median"].X
    want = insdel.attribute(per.model, X, None, "kernel_shap", removal=rem)
    np.testing.assert_allclose(A1["kernel_shap"], want, atol=1e-10)
    assert not np.allclose(A1["kernel_shap"], A0["kernel_shap"])
    np.testing.assert_array_equal(A1["vanilla_grad"], A0["vanilla_grad"])  # reads no reference
    ev0 = base.removal_evaluations["median"]["marginal"].summary()
    ev1 = per.removal_evaluations["median"]["marginal"].summary()
    ks = (ev0["method"] == "kernel_shap") & (ev0["mode"] == "insertion")
    assert float(ev0[ks]["mean"].iloc[0]) != float(ev1[ks]["mean"].iloc[0])

    # a resumed run reads every chunk back
    again = run_experiment(small_cfg(csv, "a", methods=methods,
                                     removal={**kinds, "attributions": "per_removal"}), out)
    st = again.manifest["compute"]["stages"]
    assert st["median/attributions/removal-marginal/kernel_shap"]["chunks_resumed"] == 2
    assert st["median/curves/removal-marginal"]["chunks_resumed"] == 1
