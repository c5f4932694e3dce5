"""Bangalore's Location as one one-hot feature group (issue #16): the recipes' ``location`` option,
groups carried by the data set, and a runner that moves the group as one unit everywhere."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import insdel  # noqa: E402
from insdel import config as C  # noqa: E402
from insdel import datasets, runner  # noqa: E402
from insdel.decomposition import shapley_values  # noqa: E402
from insdel.groups import Groups  # noqa: E402
from insdel.shipped.data_recipes import bangalore as bang_recipe  # noqa: E402


@pytest.fixture(scope="module")
def head60(samples):
    return samples / "bangalore_head60.csv"


# ---------------------------------------------------------------- the recipes


def test_bangalore_default_is_the_papers_38_features(head60):
    ds = datasets.load("bangalore", path=head60)
    assert ds.n_features == 38 and ds.feature_names == bang_recipe.FEATURES
    assert ds.groups is None and ds.n_units == 38 and ds.unit_groups.singleton
    assert "Location dropped" in ds.description


def test_bangalore_onehot_location_is_one_group(head60):
    import pandas as pd

    raw = pd.read_csv(head60)
    levels = sorted(raw["Location"].str.strip().unique())
    ds = datasets.load("bangalore", path=head60, location="onehot", seed=1)
    loc = [f"Location={lev}" for lev in levels]
    assert ds.feature_names == bang_recipe.FEATURES + loc  # levels sorted, after the 38
    assert ds.n_features == 38 + len(levels)
    g = ds.groups
    assert isinstance(g, Groups) and g.m == 39 and ds.n_units == 39
    assert g.names == bang_recipe.FEATURES + ["Location"]
    assert g.columns(38).tolist() == list(range(38, 38 + len(levels)))
    assert (g.sizes[:38] == 1).all()
    # declared binary 0/1, not scaled, exactly one 1 per row, matching the file
    assert ds.binary_mask[38:].all()
    np.testing.assert_array_equal(ds.raw_binary_levels[38:], [[0.0, 1.0]] * len(levels))
    block = np.concatenate([ds.X_train, ds.X_test])[:, 38:]
    assert set(np.unique(block)) == {0.0, 1.0} and (block.sum(1) == 1).all()
    rows = np.concatenate([ds.train_index, ds.test_index])
    got = np.array(levels)[block.argmax(1)]
    np.testing.assert_array_equal(got, raw["Location"].str.strip().to_numpy()[rows])
    # the 38 paper features are the default's
    d0 = datasets.load("bangalore", path=head60, seed=1)
    np.testing.assert_array_equal(ds.X_test[:, :38], d0.X_test)
    assert ds.info["location_levels"] == len(levels)
    assert "one feature group" in ds.description


def test_bangalore_min_count_pools_rare_levels(head60):
    import pandas as pd

    counts = pd.read_csv(head60)["Location"].str.strip().value_counts()
    ds = datasets.load("bangalore", path=head60, location="onehot", min_count=3)
    kept = sorted(counts.index[counts >= 3])
    assert ds.feature_names[38:] == [f"Location={lev}" for lev in kept] + ["Location=other"]
    other = np.concatenate([ds.X_train, ds.X_test])[:, -1]
    assert other.sum() == counts[counts < 3].sum()
    assert ds.info["location_pooled_levels"] == int((counts < 3).sum())
    assert ds.groups.m == 39 and ds.groups.sizes[-1] == len(kept) + 1


def test_a_level_seen_only_in_the_test_split_is_a_column(head60):
    ds = datasets.load("bangalore", path=head60, location="onehot", seed=0)
    in_test_only = [j for j in range(38, ds.n_features)
                    if ds.X_test[:, j].any() and not ds.X_train[:, j].any()]
    assert in_test_only  # such a level exists with this seed, and is still one of the columns
    # a model input: never scaled (binary), finite, and the group covers it
    assert np.isfinite(ds.X_test).all() and (ds.scaler.scale_[38:] == 1).all()
    assert set(in_test_only) <= set(ds.groups.columns(38).tolist())


@pytest.mark.parametrize("options, match", [
    ({"location": "one-hot"}, r"option location must be one of 'drop', 'onehot'; got 'one-hot'"),
    ({"location": True}, r"option location must be one of"),
    ({"location": "onehot", "min_count": 0}, r"option min_count must be an integer >= 1"),
    ({"location": "onehot", "min_count": 2.5}, r"option min_count must be an integer >= 1"),
    ({"min_count": 3}, r"option min_count applies to location='onehot' only"),
])
def test_bad_location_options_are_clear_errors(head60, options, match):
    with pytest.raises(ValueError, match=match):
        datasets.load("bangalore", path=head60, **options)
    with pytest.raises(ValueError, match=match.replace("bangalore", "housing_sim")):
        datasets.load("housing_sim", n_samples=50, **options)


def test_unknown_option_names_are_config_errors():
    assert {"location", "min_count"} <= set(datasets.options_of("bangalore"))
    assert {"location", "n_locations", "min_count"} <= set(datasets.options_of("housing_sim"))
    with pytest.raises(C.ConfigError, match=r"data.options.locaton.*location"):
        C.load({"data": {"recipe": "housing_sim", "options": {"locaton": "onehot"}},
                "model": {"preset": "quick_housing"}})
    with pytest.raises(ValueError, match=r"option n_locations must be an integer >= 2"):
        datasets.load("housing_sim", n_samples=50, location="onehot", n_locations=1)
    with pytest.raises(ValueError, match=r"n_locations applies to location='onehot' only"):
        datasets.load("housing_sim", n_samples=50, n_locations=5)


def test_housing_sim_onehot_location():
    d0 = datasets.load("housing_sim", n_samples=400, seed=2)
    ds = datasets.load("housing_sim", n_samples=400, seed=2, location="onehot")
    assert d0.n_features == 38 and d0.groups is None
    assert ds.n_features == 68 and ds.feature_names[38] == "Location=Locality 01"
    assert ds.groups.m == 39 and ds.groups.names[-1] == "Location"
    assert ds.groups.sizes[-1] == 30 and ds.binary_mask[38:].all()
    np.testing.assert_array_equal(ds.X_train[:, :38], d0.X_train)  # same houses ...
    assert not np.array_equal(ds.y_train, d0.y_train)              # ... priced by location too
    block = np.concatenate([ds.X_train, ds.X_test])[:, 38:]
    assert (block.sum(1) == 1).all()
    small = datasets.load("housing_sim", n_samples=400, location="onehot", n_locations=5,
                         min_count=1)
    assert small.groups.sizes[-1] == 5


def test_prepared_data_keep_the_groups(tmp_path):
    out = datasets.prepare("housing_sim", tmp_path, n_samples=120, location="onehot",
                           n_locations=4)
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["groups"]["names"][-1] == "Location"
    back = datasets.load_prepared(out)
    ref = datasets.load("housing_sim", n_samples=120, location="onehot", n_locations=4)
    assert back.groups == ref.groups and back.groups.m == 39
    plain = datasets.load_prepared(datasets.prepare("housing_sim", tmp_path / "p", n_samples=60))
    assert plain.groups is None


# ---------------------------------------------------------------- the engine pieces the runner uses


def test_kernel_shap_samples_over_groups_and_random_scores_per_group():
    rng = np.random.default_rng(0)
    W = rng.normal(size=9)

    def f(Z):
        return np.tanh(Z @ W) + Z[:, 0] * Z[:, 3]

    X, R = rng.normal(size=(4, 9)), rng.normal(size=(4, 9))
    G = {"a": [0, 1, 2], "b": [3], "c": [4, 5], "d": [6], "e": [7, 8]}
    phi = shapley_values(f, X, R, groups=G)
    ks = insdel.attribute(f, X, R, "kernel_shap", groups=G, exact="never", n_samples=20000)
    assert ks.shape == (4, 5)
    np.testing.assert_allclose(ks, phi, atol=0.05 * np.abs(phi).max())
    r = insdel.attribute(f, X, R, "random", groups=G, seed=1)
    assert r.shape == (4, 5)
    # captum's engine plays the same group game (its feature_mask): near the exact group values
    kc = insdel.attribute(f, X[:2], R[:2], "kernel_shap", groups=G, exact="never",
                          n_samples=3000, backend="captum")
    assert kc.shape == (2, 5)
    np.testing.assert_allclose(kc, phi[:2], atol=0.1 * np.abs(phi).max())


# ---------------------------------------------------------------- the runner


def _tiny_cfg(**over):
    base = {
        "name": "tinyloc", "seed": 1,
        "data": {"recipe": "housing_sim",
                 "options": {"n_samples": 200, "location": "onehot", "n_locations": 6}},
        "model": {"params": {"preset": "quick_housing", "hidden": [8]}, "max_epochs": 2},
        "targets": {"n": 10},
        "policies": [{"spec": "bangalore_counterfactual", "label": "cf",
                      "params": {"min_diff": 1, "k_nearest": 1}}],
        "methods": {"names": ["kernel_shap", "exact_shapley", "integrated_gradients", "lime"],
                    "options": {"kernel_shap": {"n_samples": 64, "exact": "never"},
                                "lime": {"n_samples": 64},
                                "integrated_gradients": {"n_steps": 8}}},
        "evaluation": {"n_random": 3, "targets_per_chunk": 5},
        "decomposition": {"n_pairs": 10, "pairs_per_chunk": 5, "max_d": 20},
        "metrics": {"names": ["insertion_abc", "deletion_abc"]},
        "figures": {"enabled": False},
    }
    base.update(over)
    return C.load(base)


@pytest.fixture(scope="module")
def grouped_run(tmp_path_factory):
    keys = []
    real = runner.ck.config_hash

    def spy(obj):
        keys.append(obj)
        return real(obj)

    runner.ck.config_hash = spy
    try:
        res = runner.run_experiment(_tiny_cfg(), tmp_path_factory.mktemp("loc"), progress=False)
    finally:
        runner.ck.config_hash = real
    return res, keys


def test_runner_curves_move_location_as_one_unit(grouped_run):
    res, _ = grouped_run
    ds = res.dataset
    grp = ds.groups
    m = grp.m
    ev = res.evaluations["cf"]
    assert ev.groups == grp and ev.m == m == 39
    B = len(res.pairings["cf"])
    for mode in ("insertion", "deletion"):
        assert ev.curves[mode].shape == (B, len(ev.methods), m + 1)
        assert ev.random_curves[mode].shape == (B, 3, m + 1)
    assert sorted(ev.methods) == sorted(["kernel_shap", "exact_shapley", "integrated_gradients",
                                         "lime", "random"])
    # every ordering, the random ones included, is a permutation of the m groups
    assert (np.sort(ev.orders, axis=-1) == np.arange(m)).all()
    # brute force: the curve points are f at hybrids taking whole groups from x (Location's
    # columns always together), in the recorded group order
    X, R = res.pairings["cf"].X, res.pairings["cf"].R
    f = insdel.as_model(res.model)
    loc = grp.columns(m - 1)
    for b in range(B):
        for k, meth in enumerate(ev.methods):
            order = ev.orders[b, k]
            rows = []
            for t in range(m + 1):
                take = np.zeros(X.shape[1], bool)
                for g in order[:t]:
                    take[grp.columns(g)] = True
                assert take[loc].all() or not take[loc].any()
                rows.append(np.where(take, X[b], R[b]))
            np.testing.assert_allclose(ev.curves["insertion"][b, k], f(np.array(rows)),
                                       rtol=1e-5, atol=1e-6, err_msg=f"{meth}, pair {b}")


def test_runner_table4_counts_differing_groups(grouped_run):
    """Table 4 of a grouped run: the mean number of differing features and of differing groups
    (Location's one-hot columns count once), the units the curves move."""
    import pandas as pd

    res, _ = grouped_run
    grp = res.dataset.groups
    p = res.pairings["cf"]
    diag = pd.read_csv(res.out / "diagnostics.csv", index_col=0)
    assert diag.loc["cf", "units"] == grp.m == 39
    want = grp.reduce_any(p.X != p.R).sum(1).mean()
    assert diag.loc["cf", "mean_n_diff_units"] == pytest.approx(want)
    assert diag.loc["cf", "mean_n_diff"] == pytest.approx((p.X != p.R).sum(1).mean())
    assert (res.diagnostics.loc["cf", ["units", "mean_n_diff_units"]] == [39, want]).all()


def test_runner_attributions_and_decomposition_are_per_group(grouped_run, tmp_path):
    res, _ = grouped_run
    grp = res.dataset.groups
    X, R = res.pairings["cf"].X, res.pairings["cf"].R
    atts = np.load(res.out / "cf" / "attributions.npz")
    phi = shapley_values(res.model, X, R, groups=grp)
    assert atts["exact_shapley"].shape == (len(X), grp.m)
    np.testing.assert_allclose(atts["exact_shapley"], phi, rtol=1e-6, atol=1e-6)
    assert atts["kernel_shap"].shape == (len(X), grp.m)           # sampled over groups
    assert atts["integrated_gradients"].shape == X.shape          # per column, summed per group
    dec = res.decompositions["cf"]
    assert [c for c in dec.columns if c.startswith("shapley_")] == [
        f"shapley_{g}" for g in range(grp.m)]


def test_runner_metrics_stage_uses_the_groups(grouped_run):
    import pandas as pd

    res, _ = grouped_run
    ev = res.evaluations["cf"]
    scores = pd.read_parquet(res.out / "cf" / "metrics.parquet")
    for meth in ("exact_shapley", "kernel_shap", "integrated_gradients", "lime"):
        for mode in ("insertion", "deletion"):
            got = scores[(scores["method"] == meth) & (scores["metric"] == f"{mode}_abc")]
            got = got.sort_values("pair")["value"].to_numpy()
            np.testing.assert_allclose(got, ev.abc_array(meth, mode), rtol=1e-6, atol=1e-9,
                                       err_msg=f"{meth} {mode}")


def test_runner_reports_and_keys_the_groups(grouped_run):
    res, keys = grouped_run
    text = (res.out / "summary.md").read_text()
    assert "- groups: 39 units: Location (one group of 6 columns), 38 single columns" in text
    data = json.loads((res.out / "manifest.json").read_text())["data"]
    assert data["units"] == 39 and data["groups"] == {"Location": list(range(38, 44))}
    assert "Location (one group of 6 columns)" in res.to_markdown()
    # every checkpointed stage's key holds the groups
    chunk_keys = [k for k in keys if isinstance(k, dict) and "stage" in k]
    assert {k["stage"] for k in chunk_keys} >= {"attributions", "decomposition"}
    assert all(k.get("groups") == res.dataset.groups.to_json() for k in chunk_keys)


def test_methods_options_groups_and_roar_are_refused(tmp_path):
    cfg = _tiny_cfg(methods={"names": ["exact_shapley"],
                             "options": {"exact_shapley": {"groups": [[0]]}}},
                    decomposition={"n_pairs": 0})
    with pytest.raises(ValueError, match=r"methods.options.exact_shapley.groups"):
        runner.run_experiment(cfg, tmp_path / "a", progress=False)
    roar = C.load({"data": {"recipe": "housing_sim",
                            "options": {"n_samples": 60, "location": "onehot"}},
                   "model": {"preset": "quick_housing"}, "methods": {"names": ["vanilla_grad"]},
                   "roar": {"fractions": [0.5, 1.0], "replicates": 1}})
    with pytest.raises(ValueError, match=r"ROAR .* does not support groups") as err:
        runner.run_roar(roar, tmp_path / "r", progress=False)
    # the advice names the option of the configuration's own recipe (here housing's location)
    assert "set data.options.location = 'drop'" in str(err.value)
    table = C.load({"data": {"recipe": "table", "options": {
        "path": "x.csv", "target": "y", "categorical": ["region"]}},
        "model": {"preset": "quick_housing"}, "methods": {"names": ["vanilla_grad"]}})
    from insdel.runner.stages.data import ungroup_advice

    advice = ungroup_advice(table, None)
    assert "location" not in advice and "data.options.drop" in advice  # the table recipe's own


def test_the_shipped_variant():
    cfg = C.load("paper-bangalore-location", quick=True)
    assert cfg["name"] == "paper_bangalore_location"
    assert cfg["data"]["options"] == {"location": "onehot"}
    assert cfg["data"]["real_options"] == {"location": "onehot"}
    assert cfg["targets"]["n"] == 120
    assert "paper-bangalore-location" in C.PAPER_CONFIGS
    base = C.load("paper-bangalore")
    assert base["data"]["options"] == {}  # the paper's default drops Location
