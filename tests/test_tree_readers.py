"""Each library's ensemble read into a TreeEnsemble (insdel.trees.read and the read_* parsers),
checked against the library's own predict on rows with NaNs, categories and values on, just
below and just above every split's threshold; and every model the readers refuse, refused with
the reason.

Bounds: scikit-learn, LightGBM and CatBoost sum in float64 (to 1e-12 relative). XGBoost sums its
leaves in float32: the bound is (T + 2) * 2**-24 * (|base| + sum of |leaf| on the row's path),
the rounding of T + 1 float32 additions, and each tree's leaf equals XGBoost's own (pred_leaf),
which checks the routing exactly."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from insdel.trees import UnsupportedModelError, check_feature_names, read, recognise
from insdel.trees._build import float32_le, float32_lt
from insdel.trees.read_catboost import read_catboost
from insdel.trees.read_lightgbm import read_lightgbm
from insdel.trees.read_xgboost import read_xgboost

N = 5  # features; the last is categorical (integer codes 0..5) where a library supports it
RNG = np.random.default_rng(0)


def _data(n=400, seed=0, nan=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N))
    X[:, 4] = rng.integers(0, 6, n)
    y = 2 * X[:, 0] + np.sin(3 * X[:, 1]) + 2.0 * (X[:, 4] == 3) + (X[:, 4] == 1) \
        + 0.1 * rng.normal(size=n)
    if nan:
        X[rng.random(X.shape) < nan] = np.nan
    return X, y


def _test_rows(ens, seed=1, cats=(-1, 0, 1, 2, 3, 4, 5, 7)):
    """Rows with NaNs and unknown categories, and rows whose value at a split is its threshold,
    its float64 neighbours and the float32 values around it (ties with every threshold)."""
    rng = np.random.default_rng(seed)
    X, _ = _data(200, seed)
    X[:, 4] = rng.choice(np.asarray(cats, dtype=float), 200)
    X[rng.random(200) < 0.1, 4] = np.nan
    inner = np.flatnonzero((ens.feature >= 0) & ~ens.is_categorical
                           & (np.abs(ens.threshold) < 1e30))  # scikit-learn's inf: NaN splits
    pick = rng.choice(inner, min(150, inner.size), replace=False) if inner.size else []
    rows = []
    for i in pick:
        b = ens.threshold[i]
        b32 = np.float32(b)
        for v in (b, np.nextafter(b, -np.inf), np.nextafter(b, np.inf), float(b32),
                  float(np.nextafter(b32, np.float32(np.inf))),
                  float(np.nextafter(b32, np.float32(-np.inf)))):
            r = X[rng.integers(200)].copy()
            r[ens.feature[i]] = v
            rows.append(r)
    # LightGBM reads |x| <= 1e-35 as 0; XGBoost and CatBoost round tiny values in float32
    tiny = np.array([0.0, -0.0, 1e-35, -1e-35, 1.0000000180025095e-35, -1.0000000180025095e-35,
                     1e-36, -1e-36, 1e-45, 1e-300])
    T = X[rng.integers(200, size=40)].copy()
    T[:, :4] = rng.choice(tiny, (40, 4))
    return np.vstack([X, T, *rows])


def _abs_path_sum(ens, X):
    """|base| + the sum of |leaf| over each row's path (the scale of float32 rounding)."""
    return dataclasses.replace(ens, value=np.abs(ens.value), base=abs(ens.base)).predict(X)


def _leaves(ens, X):
    """(B, T): each tree's leaf (node index within the tree) for each row, by the ensemble's
    own rule (one-tree ensembles valued by node index)."""
    out = np.empty((X.shape[0], ens.n_trees), dtype=np.int64)
    ends = [*ens.roots[1:], ens.n_nodes]
    for t, (r, e) in enumerate(zip(ens.roots, ends, strict=True)):
        idx = np.arange(ens.n_nodes, dtype=np.float64) - r
        one = dataclasses.replace(ens, roots=np.array([r]), value=np.where(
            ens.feature < 0, idx, 0.0), base=0.0)
        out[:, t] = np.rint(one.predict(X)).astype(np.int64)
        assert ((out[:, t] >= 0) & (out[:, t] < e - r)).all()
    return out


# -- the float32 thresholds -------------------------------------------------------------------


def test_float32_bounds_decide_as_the_float32_comparison():
    t = np.concatenate([RNG.normal(size=3000) * 10.0 ** RNG.integers(-30, 30, 3000),
                        [0.0, -0.0, 1.0, 1e-45, -1e-45, 3.4028234663852886e38,
                         -3.4028234663852886e38]])
    t32 = t.astype(np.float32)
    le, lt = float32_le(t), float32_lt(t32)
    for b in (le, lt):
        with np.errstate(over="ignore"):
            up = np.nextafter(t32, np.float32(np.inf)).astype(np.float64)
        for z in (b, np.nextafter(b, -np.inf), np.nextafter(b, np.inf), t,
                  t32.astype(np.float64),
                  (t32.astype(np.float64) + up) / 2):
            z = np.where(np.isfinite(z), z, 0.0)
            with np.errstate(over="ignore"):
                np.testing.assert_array_equal(z.astype(np.float32) <= t, z <= le)
                np.testing.assert_array_equal(z.astype(np.float32) < t32, z < lt)


# -- scikit-learn -------------------------------------------------------------------------------

SK = {
    "tree": lambda: __import__("sklearn.tree").tree.DecisionTreeRegressor(max_depth=6,
                                                                          random_state=0),
    "forest": lambda: __import__("sklearn.ensemble").ensemble.RandomForestRegressor(
        10, max_depth=5, random_state=0),
    "extra": lambda: __import__("sklearn.ensemble").ensemble.ExtraTreesRegressor(
        10, max_depth=5, random_state=0),
    "gb": lambda: __import__("sklearn.ensemble").ensemble.GradientBoostingRegressor(
        n_estimators=20, max_depth=3, learning_rate=0.3, random_state=0),
    "gb_zero_huber": lambda: __import__("sklearn.ensemble").ensemble.GradientBoostingRegressor(
        n_estimators=20, max_depth=3, init="zero", loss="huber", random_state=0),
    "hist": lambda: __import__("sklearn.ensemble").ensemble.HistGradientBoostingRegressor(
        max_iter=20, random_state=0),
    "hist_cat": lambda: __import__("sklearn.ensemble").ensemble.HistGradientBoostingRegressor(
        max_iter=20, categorical_features=[4], random_state=0),
    "hist_cat_l1": lambda: __import__("sklearn.ensemble").ensemble.HistGradientBoostingRegressor(
        max_iter=20, categorical_features=[4], loss="absolute_error", random_state=0),
}


@pytest.mark.parametrize("kind", list(SK))
def test_sklearn_reader_equals_sklearn_predict(kind):
    est = SK[kind]()
    nan = 0.0 if kind.startswith("gb") else 0.1  # GradientBoostingRegressor refuses NaN
    X, y = _data(nan=nan)
    est.fit(X, y)
    ens = read(est)
    assert ens.rule == "le" and ens.source.startswith("scikit-learn")
    Z = _test_rows(ens)
    if nan == 0.0:
        Z = np.nan_to_num(Z)
        assert not ens.extra["allow_nan"]
    if "cat" in kind:
        assert ens.is_categorical.any()
    np.testing.assert_allclose(ens.predict(Z), est.predict(Z), rtol=1e-12, atol=1e-12)
    if kind in ("tree", "forest", "extra"):
        leaves = est.apply(Z) if kind != "tree" else est.apply(Z)[:, None]
        np.testing.assert_array_equal(_leaves(ens, Z), leaves)


def test_sklearn_hist_categorical_sends_unknown_categories_and_nan_the_missing_way():
    from sklearn.ensemble import HistGradientBoostingRegressor

    X, y = _data(nan=0.0)
    X[:, 4][X[:, 4] == 3] = np.nan  # NaN is the category that matters: missing way learnt
    est = HistGradientBoostingRegressor(max_iter=10, categorical_features=[4]).fit(X, y)
    ens = read(est)
    Z = _test_rows(ens, cats=(-3, 0, 1, 2, 4, 5, 6, 9, 2.5))
    np.testing.assert_allclose(ens.predict(Z), est.predict(Z), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("make,why", [
    (lambda: __import__("sklearn.ensemble").ensemble.RandomForestClassifier(3), "Classifier"),
    (lambda: __import__("sklearn.ensemble").ensemble.IsolationForest(n_estimators=3),
     "IsolationForest"),
    (lambda: __import__("sklearn.ensemble").ensemble.HistGradientBoostingRegressor(
        max_iter=3, loss="poisson"), "non-identity link"),
    (lambda: __import__("sklearn.ensemble").ensemble.GradientBoostingRegressor(
        n_estimators=3, init=__import__("sklearn.linear_model").linear_model.Ridge()),
     "init estimator is a Ridge"),
])
def test_sklearn_reader_refuses_what_it_cannot_read(make, why):
    X, y = _data(nan=0.0)
    est = make()
    y = (y > 0).astype(int) if "Classifier" in why else np.abs(y)
    est.fit(X, y) if why != "IsolationForest" else est.fit(X)
    with pytest.raises(UnsupportedModelError, match=why):
        read(est)


def test_sklearn_multi_output_is_refused():
    from sklearn.ensemble import RandomForestRegressor

    X, y = _data(nan=0.0)
    est = RandomForestRegressor(3).fit(X, np.c_[y, -y])
    with pytest.raises(UnsupportedModelError, match="multi-output"):
        read(est)


# -- XGBoost -------------------------------------------------------------------------------------


def _xgb_close(ens, model, Z, booster=None):
    import xgboost as xgb

    p = np.asarray(model.predict(Z), dtype=np.float64)
    bound = (ens.n_trees + 2) * 2.0 ** -24 * _abs_path_sum(ens, Z)
    assert (np.abs(ens.predict(Z) - p) <= bound).all()
    booster = booster or model.get_booster()
    d = xgb.DMatrix(Z, feature_names=booster.feature_names, feature_types=booster.feature_types,
                    enable_categorical=booster.feature_types is not None)
    stop = ens.n_trees // max(1, int(getattr(model, "num_parallel_tree", None) or 1))
    leaf = booster.predict(d, pred_leaf=True, iteration_range=(0, stop)).reshape(Z.shape[0], -1)
    np.testing.assert_array_equal(_leaves(ens, Z), leaf.astype(np.int64))


XGB = {
    "default": {}, "l1": {"objective": "reg:absoluteerror"},
    "huber": {"objective": "reg:pseudohubererror"}, "dart": {"booster": "dart", "rate_drop": 0.3},
    "parallel": {"num_parallel_tree": 3},
}


@pytest.mark.parametrize("kind", list(XGB))
def test_xgboost_reader_equals_xgboost_predict(kind):
    import xgboost as xgb

    X, y = _data()
    m = xgb.XGBRegressor(n_estimators=10, max_depth=4, **XGB[kind]).fit(X, y)
    ens = read(m)
    assert ens.rule == "lt" and ens.extra["objective"] == XGB[kind].get("objective",
                                                                       "reg:squarederror")
    _xgb_close(ens, m, _test_rows(ens))


def test_xgboost_random_forest_and_early_stopping():
    import xgboost as xgb

    X, y = _data()
    rf = xgb.XGBRFRegressor(n_estimators=8, max_depth=4).fit(X, y)
    ens = read(rf)
    Z = _test_rows(ens)
    assert (np.abs(ens.predict(Z) - rf.predict(Z))
            <= (ens.n_trees + 2) * 2.0 ** -24 * _abs_path_sum(ens, Z)).all()
    es = xgb.XGBRegressor(n_estimators=200, max_depth=3, early_stopping_rounds=2).fit(
        X[:300], y[:300], eval_set=[(X[300:], y[300:])], verbose=False)
    ens = read(es)
    assert ens.n_trees == es.best_iteration + 1 < 200  # the trees predict uses
    _xgb_close(ens, es, _test_rows(ens))


def test_xgboost_categorical_splits_send_their_categories_right():
    import xgboost as xgb

    X, y = _data()
    codes = np.nan_to_num(X[:, 4], nan=-1).astype(int)
    df = pd.DataFrame(X[:, :4], columns=list("abcd"))
    df["e"] = pd.Categorical.from_codes(codes, categories=[10, 11, 12, 13, 14, 15])
    m = xgb.XGBRegressor(n_estimators=10, max_depth=4, enable_categorical=True,
                         max_cat_to_onehot=1).fit(df, y)
    ens = read(m)
    assert ens.is_categorical.any() and ens.feature_names == tuple("abcde")
    Z = _test_rows(ens)  # codes -1 and 7 are unknown: XGBoost sends them left
    bst = m.get_booster()
    p = bst.inplace_predict(Z)
    assert (np.abs(ens.predict(Z) - p) <= (ens.n_trees + 2) * 2.0 ** -24
            * _abs_path_sum(ens, Z)).all()
    _xgb_close(ens, type("M", (), {"predict": staticmethod(bst.inplace_predict)})(), Z, bst)


def test_xgboost_reads_booster_files_and_bytes(tmp_path):
    import xgboost as xgb

    X, y = _data()
    m = xgb.XGBRegressor(n_estimators=5, max_depth=3).fit(X, y)
    want = read(m)
    Z = _test_rows(want)
    for src in (m.get_booster(), bytes(m.get_booster().save_raw("json"))):
        np.testing.assert_array_equal(read_xgboost(src).predict(Z),
                                      want.predict(Z))
    for suffix in (".json", ".ubj"):
        m.save_model(tmp_path / f"m{suffix}")
        got = read_xgboost(tmp_path / f"m{suffix}")
        np.testing.assert_array_equal(got.predict(Z), want.predict(Z))


@pytest.mark.parametrize("kw,y_kind,why", [
    ({"objective": "reg:logistic"}, "unit", "non-identity link"),
    ({"objective": "count:poisson"}, "count", "non-identity link"),
    ({"booster": "gblinear"}, "real", "gblinear"),
    ({"multi_strategy": "multi_output_tree", "tree_method": "hist"}, "two", "multi-output"),
    ({}, "two", "multi-output"),
])
def test_xgboost_reader_refuses_what_it_cannot_read(kw, y_kind, why):
    import xgboost as xgb

    X, y = _data()
    y = {"unit": 1 / (1 + np.exp(-y)), "count": np.round(np.abs(y)), "real": y,
         "two": np.c_[y, -y]}[y_kind]
    m = xgb.XGBRegressor(n_estimators=3, max_depth=2, **kw).fit(X, y)
    with pytest.raises(UnsupportedModelError, match=why):
        read(m)


def test_xgboost_classifier_is_refused():
    import xgboost as xgb

    X, y = _data()
    m = xgb.XGBClassifier(n_estimators=2, max_depth=2).fit(X, (y > 0).astype(int))
    assert not recognise(m)
    with pytest.raises(UnsupportedModelError, match="not a tree ensemble insdel reads"):
        read(m)
    with pytest.raises(UnsupportedModelError, match="classifier"):
        read_xgboost(m)


# -- LightGBM ------------------------------------------------------------------------------------

LGB = {
    "default": {}, "l1": {"objective": "regression_l1"}, "huber": {"objective": "huber"},
    "quantile": {"objective": "quantile", "alpha": 0.3},
    "rf": {"boosting_type": "rf", "subsample": 0.7, "subsample_freq": 1},
    "no_missing": {"use_missing": False}, "zero_as_missing": {"zero_as_missing": True},
}


@pytest.mark.parametrize("kind", list(LGB))
def test_lightgbm_reader_equals_lightgbm_predict(kind):
    import lightgbm as lgb

    X, y = _data()
    m = lgb.LGBMRegressor(n_estimators=15, num_leaves=8, min_child_samples=5, verbose=-1,
                          **LGB[kind]).fit(X, y, categorical_feature=[4])
    ens = read(m)
    assert ens.rule == "le" and (ens.is_categorical.any() or kind != "default")
    Z = _test_rows(ens)
    np.testing.assert_allclose(ens.predict(Z), m.predict(Z), rtol=1e-12, atol=1e-12)


def test_lightgbm_nan_goes_where_zero_goes_for_a_model_trained_without_nan(tmp_path):
    import lightgbm as lgb

    X, y = _data(nan=0.0)
    X[::3, 1] = 0.0
    m = lgb.LGBMRegressor(n_estimators=10, num_leaves=8, verbose=-1).fit(X, y)
    ens = read(m)
    Z = _test_rows(ens)
    np.testing.assert_allclose(ens.predict(Z), m.predict(Z), rtol=1e-12, atol=1e-12)
    m.booster_.save_model(tmp_path / "m.txt")  # the model file, and early stopping's trees
    got = read_lightgbm(tmp_path / "m.txt")
    np.testing.assert_array_equal(got.predict(Z), ens.predict(Z))
    es = lgb.LGBMRegressor(n_estimators=300, num_leaves=8, verbose=-1).fit(
        X[:300], y[:300], eval_set=[(X[300:], y[300:])],
        callbacks=[lgb.early_stopping(2, verbose=False)])
    e2 = read(es)
    assert e2.n_trees == es.best_iteration_ < 300
    np.testing.assert_allclose(e2.predict(Z), es.predict(Z), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kw,why", [
    ({"objective": "poisson"}, "non-identity link"),
    ({"linear_tree": True}, "linear trees"),
])
def test_lightgbm_reader_refuses_what_it_cannot_read(kw, why):
    import lightgbm as lgb

    X, y = _data()
    y = np.abs(y) if kw.get("objective") == "poisson" else y
    X = np.nan_to_num(X) if "linear_tree" in kw else X
    m = lgb.LGBMRegressor(n_estimators=5, num_leaves=8, verbose=-1, **kw).fit(X, y)
    with pytest.raises(UnsupportedModelError, match=why):
        read(m)


def test_lightgbm_multiclass_booster_is_refused():
    import lightgbm as lgb

    X, y = _data()
    b = lgb.train({"objective": "multiclass", "num_class": 3, "verbose": -1},
                  lgb.Dataset(X, np.digitize(y, [-1, 1])), num_boost_round=2)
    with pytest.raises(UnsupportedModelError, match="multi-output"):
        read(b)


def test_a_categorical_column_holds_integer_codes_or_is_refused():
    """LightGBM reads 2.5 in a categorical column as category 2, which the trees' codes do not
    match: rows, references and backgrounds with such a value are refused, naming the
    argument, the row (and reference) and the feature; NaN and the codes -1.. are taken."""
    import lightgbm as lgb

    from insdel.game import as_game
    from insdel.removal import Marginal

    X, _ = _data(200, nan=0)
    y = 3.0 * (X[:, 4] == 3) + X[:, 0]
    m = lgb.LGBMRegressor(n_estimators=5, num_leaves=4, min_child_samples=5,
                          min_data_per_group=5, verbose=-1).fit(X, y, categorical_feature=[4])
    ens = read(m)
    assert ens.is_categorical.any() and set(ens.feature[ens.is_categorical]) == {4}
    ok = X[:4].copy()
    ok[:, 4] = [np.nan, -1, 0, 5]
    np.testing.assert_allclose(ens.predict(ok), m.predict(ok), rtol=1e-12, atol=1e-12)
    bad = ok.copy()
    bad[2, 4] = 3.5  # LightGBM reads it as 3
    assert m.predict(bad)[2] == m.predict(np.where(bad == 3.5, 3.0, bad))[2]
    for v in (3.5, -2.0, 2.0**31):
        bad[2, 4] = v
        with pytest.raises(ValueError, match=r"Z: row 2, feature 4 \('Column_4'\) is "
                                             + re.escape(repr(v)) + ".*categorical"):
            ens.predict(bad)
    with pytest.raises(ValueError, match=r"^X: row 2, feature 4 .*integer category codes "
                                         r"-1\.\.2147483646"):
        as_game(m, bad, ok, engine="tree")
    with pytest.raises(ValueError, match=r"^R: row 2, feature 4"):
        as_game(m, ok, bad, engine="tree")
    refs = np.repeat(ok[:, None, :], 2, axis=1)
    refs[1, 1, 4] = 0.5
    with pytest.raises(ValueError, match=r"^R: row 1, reference 1, feature 4"):
        as_game(m, ok, refs, removal="marginal", engine="tree")
    bg = np.where(np.isnan(bad), 1.0, bad)  # a background is finite
    for how in ("all", "random"):
        rem = Marginal(bg, how=how, n_references=None if how == "all" else 2)
        with pytest.raises(ValueError, match=r"^background: row 2, feature 4"):
            as_game(m, ok, removal=rem, engine="tree")
    with pytest.raises(ValueError, match=r"^X: row 2, feature 4"):
        as_game(m, bad, removal="path_dependent")


# -- CatBoost ------------------------------------------------------------------------------------


def _frame(Z):
    d = pd.DataFrame(Z[:, :4], columns=list("abcd"))
    d["e"] = ["nan" if np.isnan(v) else str(int(v)) for v in Z[:, 4]]
    return d


@pytest.mark.parametrize("kw", [{}, {"nan_mode": "Max"}, {"loss_function": "MAE"},
                                {"loss_function": "Quantile:alpha=0.3"}])
def test_catboost_reader_equals_catboost_predict_float_features(kw):
    import catboost as cb

    X, y = _data()
    m = cb.CatBoostRegressor(iterations=15, allow_writing_files=False, depth=4, verbose=0, **kw).fit(X[:, :4], y)
    ens = read(m)
    Z = _test_rows(ens)[:, :4]
    np.testing.assert_allclose(ens.predict(Z), m.predict(Z), rtol=1e-12, atol=1e-12)


def test_catboost_one_hot_categories_and_cbm_file(tmp_path):
    import catboost as cb

    X, y = _data()
    X[:, 4] = np.nan_to_num(X[:, 4], nan=0.0)
    m = cb.CatBoostRegressor(iterations=15, allow_writing_files=False, depth=4, verbose=0, one_hot_max_size=10).fit(
        _frame(X), y, cat_features=["e"])
    ens = read(m)
    assert ens.is_categorical.any() and ens.extra["categorical_features"] == [4]
    Z = _test_rows(ens)
    np.testing.assert_allclose(ens.predict(Z), m.predict(_frame(Z)), rtol=1e-12, atol=1e-12)
    m.save_model(tmp_path / "m.cbm")
    got = read_catboost(tmp_path / "m.cbm")
    np.testing.assert_array_equal(got.predict(Z), ens.predict(Z))


@pytest.mark.parametrize("kind,why", [("ctr", "CTR"), ("poisson", "non-identity link"),
                                      ("multi", "MultiRMSE"), ("depthwise", "non-symmetric")])
def test_catboost_reader_refuses_what_it_cannot_read(kind, why):
    import catboost as cb

    X, y = _data()
    X[:, 4] = np.nan_to_num(X[:, 4], nan=0.0)
    if kind == "ctr":
        m = cb.CatBoostRegressor(iterations=10, allow_writing_files=False, depth=3, verbose=0, one_hot_max_size=2).fit(
            _frame(X), y, cat_features=["e"])
    elif kind == "poisson":
        m = cb.CatBoostRegressor(iterations=3, allow_writing_files=False, depth=2, verbose=0, loss_function="Poisson")
        m.fit(X, np.round(np.abs(y)))
    elif kind == "multi":
        m = cb.CatBoostRegressor(iterations=3, allow_writing_files=False, depth=2, verbose=0, loss_function="MultiRMSE")
        m.fit(X, np.c_[y, -y])
    else:
        m = cb.CatBoostRegressor(iterations=3, allow_writing_files=False, depth=2, verbose=0, grow_policy="Depthwise")
        m.fit(X, y)
    with pytest.raises(UnsupportedModelError, match=why):
        read(m)


# -- the front door ------------------------------------------------------------------------------


def test_recognise_is_by_type_and_imports_no_booster_library():
    code = ("import sys, insdel, insdel.trees as t; import torch; "
            "assert not t.recognise(torch.nn.Linear(2, 1)); assert not t.recognise(object()); "
            "bad = [m for m in ('xgboost', 'lightgbm', 'catboost') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
    from sklearn.ensemble import IsolationForest, RandomForestRegressor
    from sklearn.pipeline import make_pipeline

    assert recognise(RandomForestRegressor()) and not recognise(IsolationForest())
    assert not recognise(make_pipeline(RandomForestRegressor()))
    with pytest.raises(UnsupportedModelError, match="IsolationForest is not a tree ensemble"):
        read(IsolationForest())


def test_check_feature_names_names_the_columns():
    from sklearn.tree import DecisionTreeRegressor

    X, y = _data(nan=0.0)
    cols = list("abcde")
    est = DecisionTreeRegressor(max_depth=3).fit(pd.DataFrame(X, columns=cols), y)
    ens = read(est)
    check_feature_names(ens, cols)
    check_feature_names(ens, None)
    check_feature_names(ens, [str(j) for j in range(N)])  # unnamed data: nothing to compare
    with pytest.raises(ValueError, match=r"lack \['e'\].*have \['z'\]"):
        check_feature_names(ens, list("abcdz"))
    with pytest.raises(ValueError, match=r"another order.*\['b', 'a'\]"):
        check_feature_names(ens, list("bacde"))
    with pytest.raises(ValueError, match="4 features but the model"):
        check_feature_names(ens, list("abcd"))


def test_sklearn_trees_fitted_without_nan_send_nan_as_sklearn_does():
    from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor
    from sklearn.tree import DecisionTreeRegressor

    X, y = _data(nan=0.0)
    for est in (DecisionTreeRegressor(max_depth=6), RandomForestRegressor(5, max_depth=5),
                ExtraTreesRegressor(5, max_depth=5)):
        ens = read(est.fit(X, y))
        Z = _test_rows(ens)  # NaNs in every column
        np.testing.assert_allclose(ens.predict(Z), est.predict(Z), rtol=1e-12, atol=1e-12)


def test_a_missing_boosting_library_names_the_trees_extra(monkeypatch):
    from insdel.trees._build import require

    monkeypatch.setitem(sys.modules, "xgboost", None)  # import xgboost raises ImportError
    with pytest.raises(ImportError, match=r'pip install "\.\[trees\]"'):
        require("xgboost", "XGBoost")


def test_lightgbm_reads_its_dump_dict():
    import lightgbm as lgb

    X, y = _data()
    m = lgb.LGBMRegressor(n_estimators=5, num_leaves=8, verbose=-1).fit(X, y)
    ens = read_lightgbm(m.booster_.dump_model())
    Z = _data(100, seed=3)[0]  # off the thresholds: the dump prints them with fewer digits
    np.testing.assert_allclose(ens.predict(Z), m.predict(Z), rtol=1e-12, atol=1e-12)


def test_a_numeric_split_s_missing_interval_goes_the_missing_way_and_is_checked():
    from insdel.trees._build import Tree, assemble

    t = Tree()
    root = t.add(feature=0, threshold=0.5, missing_left=False, missing_interval=(-1.0, 1.0))
    t.set_children(root, t.add(value=1.0), t.add(value=2.0))
    ens = assemble([t], base=0.0, rule="le", n_features=1, source="hand-built")
    z = np.array([[-2.0], [-1.0], [0.0], [0.5], [1.0], [1.5], [np.nan]])
    np.testing.assert_array_equal(ens.predict(z), [1, 2, 2, 2, 2, 2, 2])
    bad = ens.categories.copy()
    bad[:] = [1.0, -1.0]
    with pytest.raises(ValueError, match="missing interval must be two entries lo <= hi"):
        dataclasses.replace(ens, categories=bad)


def test_load_booster_reads_its_library_and_names_another(tmp_path):
    import lightgbm as lgb
    import xgboost as xgb

    from insdel.trees import read_lightgbm as RL
    from insdel.trees import read_xgboost as RX
    from insdel.trees._build import file_library, wrong_library

    X, y = _data()
    xm = xgb.XGBRegressor(n_estimators=3, max_depth=2).fit(X, y)
    lm = lgb.LGBMRegressor(n_estimators=3, num_leaves=4, min_child_samples=5,
                           verbose=-1).fit(X, y)
    xm.save_model(tmp_path / "x.json")
    lm.booster_.save_model(str(tmp_path / "l.txt"))
    (tmp_path / "other.json").write_text('{"hello": 1}')
    assert file_library(tmp_path / "x.json") == "xgboost"
    assert file_library(tmp_path / "l.txt") == "lightgbm"
    assert file_library(tmp_path / "other.json") is None
    assert wrong_library(tmp_path / "x.json", "xgboost") == ""
    assert wrong_library(tmp_path / "nowhere.txt", "xgboost") == ""  # unreadable: no claim
    assert "read it with insdel.trees.read_lightgbm" in wrong_library(tmp_path / "l.txt",
                                                                       "xgboost")
    Z = _test_rows(read(xm))
    bx = RX.load_booster(tmp_path / "x.json")
    assert isinstance(bx, xgb.Booster)
    np.testing.assert_array_equal(read_xgboost(bx).predict(Z), read(xm).predict(Z))
    bl = RL.load_booster(tmp_path / "l.txt")
    assert isinstance(bl, lgb.Booster)
    np.testing.assert_allclose(read_lightgbm(bl).predict(Z), lm.predict(Z), atol=1e-12)
    with pytest.raises(UnsupportedModelError, match=r"l.txt: not an XGBoost model file; the "
                                                     r"file holds a model of lightgbm"):
        RX.load_booster(tmp_path / "l.txt")
    with pytest.raises(UnsupportedModelError, match=r"x.json: not a LightGBM model file.*"
                                                     r"model of xgboost"):
        RL.load_booster(tmp_path / "x.json")
    with pytest.raises(UnsupportedModelError, match="other.json: not an XGBoost model file "
                                                    "XGBoost can read"):
        RX.load_booster(tmp_path / "other.json")


def test_booster_wrappers_predict_as_their_library_and_read_as_trees():
    import lightgbm as lgb
    import xgboost as xgb

    from insdel.trees.boosters import LightGBMModel, XGBoostModel

    X, y = _data()
    X = X[:, :4]  # numeric columns only
    xm = xgb.XGBRegressor(n_estimators=3, max_depth=2).fit(X, y)
    lm = lgb.LGBMRegressor(n_estimators=3, num_leaves=4, min_child_samples=5,
                           verbose=-1).fit(X, y)
    Z = X[:7].copy()
    Z[0, 1] = np.nan
    for wrap, model, lib in ((XGBoostModel(xm.get_booster()), xm, "xgboost"),
                             (LightGBMModel(lm.booster_), lm, "lightgbm")):
        assert wrap.tree_library == lib and wrap.n_features_in_ == 4
        assert repr(wrap) == f"{type(wrap).__name__}(4 features)"
        p = wrap.predict(Z)
        assert p.dtype == np.float64 and p.shape == (7,)
        np.testing.assert_allclose(p, model.predict(Z), rtol=1e-6)
        np.testing.assert_allclose(read(wrap).predict(Z), p, rtol=1e-5, atol=1e-6)
        with pytest.raises(ValueError, match=f"X has 3 features but the {lib} model takes 4"):
            wrap.predict(Z[:, :3])
        with pytest.raises(ValueError, match="2-D array"):
            wrap.predict(Z[0])


def test_model_with_trees_predicts_as_its_model_and_games_take_its_trees(monkeypatch):
    """A ModelWithTrees predicts with the model's own predict (the same Model name and values)
    and every tree route (as_game's engines, path_dependent, tree_shap, model_engine) takes its
    trees without reading the model again; a refitted model is read afresh (no cache)."""
    from sklearn.ensemble import GradientBoostingRegressor

    import insdel
    import insdel.trees as T
    from insdel.game import as_game, engine_text, model_engine
    from insdel.trees import ModelWithTrees

    X, y = _data(n=200, nan=0)
    gbr = GradientBoostingRegressor(n_estimators=5, max_depth=2, random_state=0).fit(X, y)
    held = ModelWithTrees(gbr)
    assert held.model is gbr and held.tree_library == "sklearn" and recognise(held)
    assert read(held) is held.trees and "5 trees" in repr(held)
    reads = []
    real_read = T.read
    monkeypatch.setattr(T, "read", lambda m: reads.append(m) or real_read(m))
    Xp, Rp = X[:6], X[6:12]
    a, b = insdel.as_model(held), insdel.as_model(gbr)
    assert a.name == b.name == "GradientBoostingRegressor" and a.estimator is held
    assert a(X[:20]).tobytes() == b(X[:20]).tobytes()
    for removal in (None, "path_dependent"):
        mine = as_game(held, Xp, Rp, removal=removal)
        assert reads == []
        theirs = as_game(gbr, Xp, Rp, removal=removal)
        assert len(reads) == 1
        reads.clear()
        assert engine_text(mine) == engine_text(theirs)
        assert mine.shapley().tobytes() == theirs.shapley().tobytes()
    assert model_engine(held) == model_engine(gbr) == "tree (scikit-learn, 5 trees, depth 2)"
    reads.clear()
    A = insdel.attribute(held, Xp, Rp, method="tree_shap")
    assert reads == []
    assert A.tobytes() == insdel.attribute(gbr, Xp, Rp, method="tree_shap").tobytes()
    bb = as_game(held, Xp, Rp, engine="black_box")  # the model's values on rows
    assert bb.engine == "black_box"
    gbr.set_params(n_estimators=7).fit(X, y)  # refitted: the model itself is read again
    reads.clear()
    assert model_engine(gbr) == "tree (scikit-learn, 7 trees, depth 2)" and len(reads) == 1
    with pytest.raises(TypeError, match="trees must be the TreeEnsemble"):
        ModelWithTrees(gbr, trees="no")
    with pytest.raises(TypeError, match="holds its trees already"):
        ModelWithTrees(held)
    with pytest.raises(UnsupportedModelError):
        ModelWithTrees(object())
