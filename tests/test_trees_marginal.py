"""Marginal removal of a tree ensemble with K shared references (insdel.trees.marginal):
values, Shapley values, curves and E[AUC] against the mean of the K brute-force
single-reference games; Shapley values against shap's interventional TreeExplainer and
woodelf-explainer.

shap's interventional kernel (cext/tree_shap.h, ``tree_shap_indep``) and woodelf's pattern
matrices (``path_to_s_vectors``) accumulate in float32: they are compared to 1e-9 where their
float32 arithmetic is exact (depth-2 trees, dyadic leaf values, 2^k trees and references), and
to 1e-6 of the values' scale on ordinary forests."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _trees import all_masks, brute_shapley, from_sklearn, random_ensemble, random_rows

from insdel.trees.marginal import MarginalGame, marginal_game


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_the_mean_of_the_single_reference_games(seed):
    """Random trees (ties, NaNs, categorical splits, repeated features): every value, curve
    point, Shapley value and E[AUC] equals the mean of the K brute-force baseline games."""
    rng = np.random.default_rng(seed)
    n, B, K = 6, 3, 7
    ens = random_ensemble(rng, n, depth=5, rule=("lt", "le")[seed % 2])
    X, bg = random_rows(rng, B, n), random_rows(rng, K, n)
    game = marginal_game(ens, X, bg)
    masks = all_masks(n)
    pairs = np.repeat(np.arange(B), len(masks))
    keep = np.tile(masks, (B, 1))
    vals = game.values(pairs, keep)
    want = np.array([ens.predict(np.where(k, X[p], bg)).mean()
                     for p, k in zip(pairs, keep, strict=True)])
    assert np.abs(vals - want).max() < 1e-12
    vals = vals.reshape(B, -1)
    phi, idx = brute_shapley(vals, masks)
    assert np.abs(game.shapley() - phi).max() < 1e-12
    rows = rng.permuted(np.tile(np.arange(n), (B, 40, 1)), axis=2)
    cv = game.curves(rows)
    for b in range(B):
        for k in range(rows.shape[1]):
            u = np.zeros(n, bool)
            for t in range(n + 1):
                u[:] = False
                u[rows[b, k, :t]] = True
                assert abs(cv["insertion"][b, k, t] - vals[b, idx[tuple(u)]]) < 1e-12
                assert abs(cv["deletion"][b, k, t] - vals[b, idx[tuple(~u)]]) < 1e-12
    perms = np.array(list(itertools.permutations(range(n))))
    auc = np.zeros(B)
    for pm in perms:
        u = np.zeros(n, bool)
        auc += vals[:, idx[tuple(u)]]
        for j in pm:
            u[j] = True
            auc += vals[:, idx[tuple(u)]]
    assert np.abs(game.expected_auc() - auc / len(perms)).max() < 1e-10
    e = (auc / len(perms) - (n + 1) / 2 * (vals[:, 0] + vals[:, -1])) / n
    assert np.abs(game.expected_abc() - e).max() < 1e-11
    assert np.abs(game.expected_abc(mode="deletion") + e).max() < 1e-11


def test_groups_and_chunks():
    """Groups are the units of the game; a chunk (subset) keeps the values."""
    rng = np.random.default_rng(4)
    n = 6
    ens = random_ensemble(rng, n, depth=4, n_cat=0)
    X, bg = random_rows(rng, 4, n, n_cat=0), random_rows(rng, 5, n, n_cat=0)
    game = marginal_game(ens, X, bg, groups=[[0, 3], [1, 5], [2, 4]])
    masks = all_masks(3)
    vals = np.array([[ens.predict(np.where(game.groups.expand(k[None])[0], x, bg)).mean()
                      for k in masks] for x in X])
    phi, _ = brute_shapley(vals, masks)
    assert np.abs(game.shapley() - phi).max() < 1e-12
    sub = game.subset(1, 3)
    assert isinstance(sub, MarginalGame) and sub.offset == 1
    assert np.abs(sub.shapley() - phi[1:3]).max() < 1e-12


def _dyadic_forest(depth, n_estimators=4, seed=0):
    """A forest whose leaf values are multiples of 1/16 (float32-exact arithmetic)."""
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(seed)
    n = 6
    Xt = rng.normal(size=(300, n))
    y = Xt[:, 0] * Xt[:, 1] + Xt[:, 3] ** 2 + Xt[:, 4]
    rf = RandomForestRegressor(n_estimators=n_estimators, max_depth=depth,
                               random_state=0).fit(Xt, y)
    if depth <= 2:
        for e in rf.estimators_:
            v = e.tree_.value  # a view of the fitted tree's leaf values
            v[:] = np.round(v * 16) / 16
    return rf, from_sklearn(rf, n), rng.normal(size=(20, n)), Xt


@pytest.mark.parametrize("depth, tol", [(2, 1e-9), (6, 1e-6)])
def test_shapley_equals_shap_interventional(depth, tol):
    shap = pytest.importorskip("shap")
    rf, ens, X, Xt = _dyadic_forest(depth)
    bg = Xt[:8] if depth <= 2 else Xt[:100]
    game = marginal_game(ens, X, bg)
    ex = shap.TreeExplainer(rf, bg, feature_perturbation="interventional")
    sv = ex.shap_values(X)
    scale = max(1.0, np.abs(sv).max())
    assert np.abs(game.shapley() - sv).max() < tol * scale
    assert np.abs(game.v_empty() - ex.expected_value).max() < tol * scale


@pytest.mark.parametrize("depth, tol", [(2, 1e-9), (5, 1e-6)])
def test_shapley_equals_woodelf(depth, tol):
    woodelf = pytest.importorskip("woodelf")
    import pandas as pd

    rf, ens, X, Xt = _dyadic_forest(depth)
    bg = Xt[:8] if depth <= 2 else Xt[:100]
    cols = [f"f{i}" for i in range(ens.n_features)]
    we = woodelf.WoodelfExplainer(rf, pd.DataFrame(bg, columns=cols),
                                  feature_perturbation="interventional")
    wv = np.asarray(we.shap_values(pd.DataFrame(X, columns=cols), verbose=False))
    phi = marginal_game(ens, X, bg).shapley()
    assert np.abs(phi - wv).max() < tol * max(1.0, np.abs(wv).max())


def test_differing_and_errors():
    rng = np.random.default_rng(6)
    n = 4
    ens = random_ensemble(rng, n, depth=3, n_cat=0)
    bg = random_rows(rng, 3, n, n_cat=0, nan=0.0)
    bg[:, 0] = 1.0  # a constant reference column: D skips a target equal to it
    X = random_rows(rng, 2, n, n_cat=0, nan=0.0)
    X[0, 0] = 1.0
    game = marginal_game(ens, X, bg)
    used = game.used_units()
    assert not game.differing()[0, 0]
    assert (game.differing()[1] <= used).all()
    with pytest.raises(ValueError, match="background must have"):
        marginal_game(ens, X, bg[:, :2])
    with pytest.raises(TypeError, match="tree ensembles"):
        marginal_game(lambda Z: Z, X, bg)
    assert game.params()["background_rows"] == 3
