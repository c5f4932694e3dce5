"""Test-local: a fitted scikit-learn tree or forest regressor as an
:class:`insdel.trees.TreeEnsemble` (the tree removals' tests need ensembles whose library
explains them too), a hand-built random ensemble with NaN and categorical splits, and the
ensembles' value functions computed from their definitions by recursion, and Shapley values
by brute force over all coalitions."""

from __future__ import annotations

import itertools
from math import factorial

import numpy as np

from insdel.trees import TreeEnsemble, goes_left


def from_sklearn(model, n: int) -> TreeEnsemble:
    """A DecisionTree / RandomForest / ExtraTrees regressor (single output) as a TreeEnsemble:
    the forest's mean folded into the leaves, ``weighted_n_node_samples`` as the covers."""
    ests = getattr(model, "estimators_", None)
    trees = [model.tree_] if ests is None else [e.tree_ for e in np.ravel(ests)]
    scale = 1.0 / len(trees)
    cols = {k: [] for k in ("feature", "threshold", "left", "right", "missing", "value",
                            "cover")}
    roots, off = [], 0
    for t in trees:
        leaf = t.children_left < 0
        roots.append(off)
        cols["feature"].append(np.where(leaf, -1, t.feature).astype(np.int64))
        cols["threshold"].append(t.threshold.astype(np.float64))
        cols["left"].append(np.where(leaf, -1, t.children_left + off).astype(np.int64))
        cols["right"].append(np.where(leaf, -1, t.children_right + off).astype(np.int64))
        miss = getattr(t, "missing_go_to_left", np.zeros(t.node_count, np.uint8))
        cols["missing"].append(np.asarray(miss, dtype=bool))
        cols["value"].append(np.where(leaf, t.value[:, 0, 0] * scale, 0.0))
        cols["cover"].append(t.weighted_n_node_samples.astype(np.float64))
        off += t.node_count
    a = {k: np.concatenate(v) for k, v in cols.items()}
    N = a["feature"].shape[0]
    return TreeEnsemble(feature=a["feature"], threshold=a["threshold"], left=a["left"],
                        right=a["right"], missing_left=a["missing"],
                        is_categorical=np.zeros(N, bool), cat_ptr=np.zeros(N + 1, np.int64),
                        categories=np.zeros(0), value=a["value"], cover=a["cover"],
                        roots=np.array(roots, np.int64), base=0.0, rule="le", n_features=n,
                        source=type(model).__name__)


def random_ensemble(rng, n: int, *, n_trees: int = 4, depth: int = 4, n_cat: int = 2,
                    rule: str = "lt") -> TreeEnsemble:
    """Random trees on n features: repeated features on a path, ties at thresholds (values on
    a grid of 0.5), NaN default directions and categorical splits on the last ``n_cat``
    features (codes 0..3), positive random covers that add up from the leaves."""
    feature, threshold, left, right, missing, is_cat, cats, cat_ptr, value, cover = (
        [], [], [], [], [], [], [], [0], [], [])
    roots = []

    def grow(d):
        i = len(feature)
        for lst in (feature, threshold, left, right, missing, is_cat, value, cover):
            lst.append(None)
        if d == depth or (d > 0 and rng.random() < 0.2):
            feature[i], threshold[i], left[i], right[i] = -1, 0.0, -1, -1
            missing[i], is_cat[i], value[i] = False, False, float(rng.normal())
            cover[i] = float(rng.integers(1, 20))
            cat_ptr.append(cat_ptr[-1])
            return i
        j = int(rng.integers(n))
        feature[i], missing[i], value[i] = j, bool(rng.random() < 0.5), 0.0
        if j >= n - n_cat:
            is_cat[i], threshold[i] = True, 0.0
            chosen = np.flatnonzero(rng.random(4) < 0.5).astype(float)
            cats.extend(chosen)
            cat_ptr.append(cat_ptr[-1] + len(chosen))
        else:
            is_cat[i], threshold[i] = False, float(rng.integers(-3, 4)) * 0.5
            cat_ptr.append(cat_ptr[-1])
        left[i] = grow(d + 1)
        right[i] = grow(d + 1)
        cover[i] = cover[left[i]] + cover[right[i]]
        return i

    for _ in range(n_trees):
        roots.append(grow(0))
    return TreeEnsemble(feature=np.array(feature, np.int64), threshold=np.array(threshold),
                        left=np.array(left, np.int64), right=np.array(right, np.int64),
                        missing_left=np.array(missing, bool), is_categorical=np.array(is_cat,
                                                                                      bool),
                        cat_ptr=np.array(cat_ptr, np.int64), categories=np.array(cats, float),
                        value=np.array(value), cover=np.array(cover, float),
                        roots=np.array(roots, np.int64), base=float(rng.normal()), rule=rule,
                        n_features=n, source="random")


def random_rows(rng, B: int, n: int, *, n_cat: int = 2, nan: float = 0.15) -> np.ndarray:
    """Rows on the thresholds' grid (ties), category codes on the last ``n_cat`` columns and
    a share ``nan`` of NaNs."""
    Z = rng.integers(-4, 5, size=(B, n)) * 0.5
    Z[:, n - n_cat:] = rng.integers(0, 4, size=(B, n_cat))
    Z[rng.random((B, n)) < nan] = np.nan
    return Z


def _left(ens, i, z):
    return goes_left(i, z, ens.threshold, ens.missing_left, ens.is_categorical, ens.cat_ptr,
                     ens.categories, ens.strict)


def path_dependent_value(ens: TreeEnsemble, x, keep) -> float:
    """v_x(u) by its definition: a kept feature's split sends x its way, a removed one's
    averages the children by their covers."""
    def rec(i):
        if ens.feature[i] < 0:
            return ens.value[i]
        j, lc, rc = ens.feature[i], ens.left[i], ens.right[i]
        if keep[j]:
            return rec(lc if _left(ens, i, x[j]) else rc)
        c = ens.cover
        return (c[lc] * rec(lc) + c[rc] * rec(rc)) / c[i]

    return ens.base + sum(rec(r) for r in ens.roots)


def hybrid_value(ens: TreeEnsemble, x, r, keep) -> float:
    """f(x_u : r_{-u}) by walking the trees."""
    return float(ens.predict(np.where(keep, x, r)[None, :])[0])


def all_masks(m):
    return np.array(list(itertools.product([False, True], repeat=m)), dtype=bool)


def brute_shapley(vals, masks):
    """Shapley values from v over all coalitions (rows: pairs; columns: masks)."""
    m = masks.shape[1]
    idx = {tuple(k): i for i, k in enumerate(masks)}
    phi = np.zeros((vals.shape[0], m))
    for j in range(m):
        for i, k in enumerate(masks):
            if k[j]:
                continue
            k2 = k.copy()
            k2[j] = True
            s = int(k.sum())
            w = factorial(s) * factorial(m - s - 1) / factorial(m)
            phi[:, j] += w * (vals[:, idx[tuple(k2)]] - vals[:, i])
    return phi, idx
