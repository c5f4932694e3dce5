"""scikit-learn's regression trees read into a :class:`~insdel.trees.ensemble.TreeEnsemble`.

=================================  =========================================================
model                              prediction read
=================================  =========================================================
``DecisionTreeRegressor``          the tree's leaf values
``RandomForestRegressor``,         the mean of the trees (each leaf divided by the number of
``ExtraTreesRegressor``            trees)
``GradientBoostingRegressor``      the init estimator's constant (``DummyRegressor``, or 0 for
                                   ``init="zero"``) + learning rate x the trees' leaves
``HistGradientBoostingRegressor``  the baseline + the predictors' leaves (the learning rate is
                                   already in them); NaN directions and categorical bitsets
=================================  =========================================================

The trees and forests round a row to float32 before comparing ``x <= threshold``; their
thresholds are written as the float64 bounds that give the same decision for every float64
value (:func:`insdel.trees._build.float32_le`), so :meth:`TreeEnsemble.predict` equals
scikit-learn's ``predict`` on every row, ties with a threshold included. The histogram
boosting compares in float64 and is read as is. A NaN takes the node's ``missing_go_to_left``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._build import Tree, UnsupportedModelError, assemble, float32_le, from_arrays
from .ensemble import TreeEnsemble

__all__ = ["read_sklearn", "SUPPORTED"]

SUPPORTED = ("DecisionTreeRegressor", "ExtraTreeRegressor", "RandomForestRegressor",
             "ExtraTreesRegressor", "GradientBoostingRegressor",
             "HistGradientBoostingRegressor")


def _names(est) -> tuple[str, ...] | None:
    names = getattr(est, "feature_names_in_", None)
    return None if names is None else tuple(str(c) for c in names)


def _tree(t, scale: float, source: str) -> Tree:
    """One fitted ``sklearn.tree._tree.Tree``, leaves multiplied by ``scale``."""
    if t.n_outputs != 1:
        raise UnsupportedModelError(f"{source}: a multi-output tree ({t.n_outputs} outputs); "
                                    "insdel reads single-output regression models.")
    feature = np.asarray(t.feature, dtype=np.int64)
    inner = feature >= 0
    threshold = np.where(inner, float32_le(np.where(inner, t.threshold, 0.0)), np.nan)
    missing = getattr(t, "missing_go_to_left", None)
    missing = np.zeros(t.node_count, bool) if missing is None else np.asarray(missing, bool)
    return from_arrays(feature, threshold, t.children_left, t.children_right, missing,
                       t.value[:, 0, 0] * scale, t.weighted_n_node_samples)


def _check_fitted(est, attr: str) -> None:
    if not hasattr(est, attr):
        raise UnsupportedModelError(f"{type(est).__name__} is not fitted (no {attr}); fit it "
                                    "before reading its trees.")


def read_sklearn(est: Any) -> TreeEnsemble:
    """Read a fitted scikit-learn regression tree, forest or gradient boosting.

    Raises
    ------
    UnsupportedModelError
        Another estimator (a classifier, ``IsolationForest``...), a multi-output regressor, a
        gradient boosting with a non-constant init estimator, or a histogram boosting whose
        loss has a non-identity link (``poisson``, ``gamma``: its trees sum in log space).
    """
    kind = type(est).__name__
    source = f"scikit-learn {kind}"
    if kind not in SUPPORTED:
        raise UnsupportedModelError(
            f"{source}: insdel reads the regression trees of scikit-learn ({', '.join(SUPPORTED)}); "
            f"a {kind} is not one (classifiers and outlier detectors have no single regression "
            "output to read).")
    if kind in ("DecisionTreeRegressor", "ExtraTreeRegressor"):
        _check_fitted(est, "tree_")
        trees, base = [_tree(est.tree_, 1.0, source)], 0.0
    elif kind in ("RandomForestRegressor", "ExtraTreesRegressor"):
        _check_fitted(est, "estimators_")
        k = len(est.estimators_)
        trees, base = [_tree(e.tree_, 1.0 / k, source) for e in est.estimators_], 0.0
    elif kind == "GradientBoostingRegressor":
        _check_fitted(est, "estimators_")
        base = _gb_init(est, source)
        lr = float(est.learning_rate)
        trees = [_tree(e.tree_, lr, source) for e in est.estimators_[:, 0]]
    else:
        return _read_hist(est, source)
    return assemble(trees, base=base, rule="le", n_features=int(est.n_features_in_),
                    feature_names=_names(est), source=source, extra=_extra(est))


def _extra(est) -> dict:
    """``allow_nan``: whether scikit-learn predicts rows holding NaN (a model that refuses them
    has no missing-value directions to read: the ensemble's NaN way is not the model's)."""
    try:
        allow = bool(est.__sklearn_tags__().input_tags.allow_nan)
    except AttributeError:  # scikit-learn < 1.6
        allow = bool(getattr(est, "_get_tags", dict)().get("allow_nan", False))
    return {"allow_nan": allow}


def _gb_init(est, source: str) -> float:
    init = est.init_
    if isinstance(init, str) and init == "zero":
        return 0.0
    if type(init).__name__ == "DummyRegressor":
        const = np.asarray(init.constant_, dtype=np.float64).reshape(-1)
        if const.size != 1:
            raise UnsupportedModelError(f"{source}: a multi-output init estimator.")
        return float(const[0])
    raise UnsupportedModelError(
        f"{source}: its init estimator is a {type(init).__name__}, whose prediction is not a "
        "constant; insdel reads gradient boosting with the default init (a DummyRegressor) "
        "or init='zero'.")


def _read_hist(est, source: str) -> TreeEnsemble:
    _check_fitted(est, "_predictors")
    link = type(getattr(est._loss, "link", None)).__name__
    if link != "IdentityLink":
        raise UnsupportedModelError(
            f"{source}: loss={est.loss!r} predicts through a non-identity link ({link}): its "
            "trees sum in the link's space, not the prediction's, so the ensemble's sum is not "
            "the model's prediction. insdel reads losses with the identity link "
            "(squared_error, absolute_error, quantile).")
    baseline = np.asarray(est._baseline_prediction, dtype=np.float64).reshape(-1)
    if baseline.size != 1 or any(len(p) != 1 for p in est._predictors):
        raise UnsupportedModelError(f"{source}: a multi-output histogram boosting.")
    n = int(est.n_features_in_)
    pre = getattr(est, "_preprocessor", None)
    col = np.arange(n)  # the input column of each of the predictors' features
    codes: dict[int, np.ndarray] = {}  # input column -> its categories, by code
    if pre is not None:
        is_cat = np.asarray(est.is_categorical_, dtype=bool)
        col = np.concatenate([np.flatnonzero(is_cat), np.flatnonzero(~is_cat)])
        encoder = pre.named_transformers_["encoder"]
        for c, cats in zip(np.flatnonzero(is_cat), encoder.categories_, strict=True):
            cats = np.asarray(cats)
            if cats.dtype.kind not in "iuf":
                raise UnsupportedModelError(
                    f"{source}: categorical feature {c} was fitted on {cats.dtype} categories "
                    f"({cats[:3].tolist()}...); insdel passes numeric rows, so the categories "
                    "must be numbers (integer codes).")
            codes[int(c)] = cats[~np.isnan(cats.astype(np.float64))].astype(np.float64)
    trees = [_hist_tree(p[0], col, codes, source) for p in est._predictors]
    return assemble(trees, base=float(baseline[0]), rule="le", n_features=n,
                    feature_names=_names(est), source=source, extra=_extra(est))


def _bitset_members(bitset: np.ndarray) -> np.ndarray:
    """The integers a scikit-learn bitset (uint32 words) holds."""
    bits = np.unpackbits(np.asarray(bitset, dtype="<u4").view(np.uint8), bitorder="little")
    return np.flatnonzero(bits).astype(np.float64)


def _hist_tree(pred, col: np.ndarray, codes: dict, source: str) -> Tree:
    """One ``TreePredictor``. A categorical node sends its bitset's categories left, the other
    known categories right, and NaN and unknown categories the missing way; it is written with
    the categories that do not go the missing way as the set, so that an unknown value, which
    :func:`~insdel.trees.ensemble.goes_left` sends to the set's complement, goes the missing way
    (children swapped when the missing way is left)."""
    nodes = pred.nodes
    leaf = nodes["is_leaf"].astype(bool)
    feature = np.where(leaf, -1, col[nodes["feature_idx"]]).astype(np.int64)
    left = nodes["left"].astype(np.int64)
    right = nodes["right"].astype(np.int64)
    missing = nodes["missing_go_to_left"].astype(bool)
    cat_sets = {}
    for i in np.flatnonzero(nodes["is_categorical"].astype(bool) & ~leaf):
        c = int(feature[i])
        if c not in codes:
            raise UnsupportedModelError(f"{source}: a categorical split on feature {c} without "
                                        "its categories.")
        known = codes[c]
        goes = np.zeros(known.size, bool)
        members = _bitset_members(pred.raw_left_cat_bitsets[nodes["bitset_idx"][i]])
        members = members[members < known.size].astype(np.int64)
        goes[members] = True  # category codes that go left
        if missing[i]:  # the set: the known categories that go right; children swapped
            cat_sets[int(i)] = known[~goes]
            left[i], right[i] = right[i], left[i]
            missing[i] = False
        else:
            cat_sets[int(i)] = known[goes]
    return from_arrays(feature, nodes["num_threshold"], left, right, missing, nodes["value"],
                       nodes["count"].astype(np.float64), cat_sets)
