"""The trees' path-dependent removal (insdel.trees.path_dependent, removal 'path_dependent'):
values against the definition, Shapley values against brute force and against
shap.TreeExplainer's path-dependent values, curves and E[AUC] against brute force over
coalitions and orderings, the engines through as_game, and the errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _trees import (
    all_masks,
    brute_shapley,
    from_sklearn,
    path_dependent_value,
    random_ensemble,
    random_rows,
)

import insdel
from insdel import removal as RM
from insdel.game import as_game
from insdel.trees.path_dependent import PathDependentGame, path_dependent_game


@pytest.fixture(scope="module")
def forest():
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(0)
    n = 6
    Xt = rng.normal(size=(300, n))
    y = Xt[:, 0] * Xt[:, 1] + np.sin(Xt[:, 2]) + Xt[:, 3] ** 2 + (Xt[:, 4] > 0)
    rf = RandomForestRegressor(n_estimators=6, max_depth=7, random_state=0).fit(Xt, y)
    return rf, from_sklearn(rf, n), rng.normal(size=(5, n))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_values_shapley_curves_expected_match_brute_force(seed):
    """Random trees with ties, NaNs, categorical splits and repeated features on a path:
    v(u) equals its definition for every coalition; the Shapley values, every curve point and
    E[AUC] equal brute force over all coalitions and all orderings."""
    rng = np.random.default_rng(seed)
    n = 5
    ens = random_ensemble(rng, n, depth=5, rule=("lt", "le")[seed % 2])
    X = random_rows(rng, 4, n)
    game = path_dependent_game(ens, X)
    masks = all_masks(n)
    pairs = np.repeat(np.arange(4), len(masks))
    keep = np.tile(masks, (4, 1))
    vals = game.values(pairs, keep)
    want = np.array([path_dependent_value(ens, X[p], k) for p, k in zip(pairs, keep, strict=True)])
    assert np.abs(vals - want).max() < 1e-12
    vals = vals.reshape(4, -1)
    phi, idx = brute_shapley(vals, masks)
    assert np.abs(game.shapley() - phi).max() < 1e-12
    assert np.allclose(game.shapley().sum(1), game.v_all() - game.v_empty(), atol=1e-12)
    assert np.allclose(game.v_all(), ens.predict(X), atol=1e-12)
    perms = np.array(list(itertools.permutations(range(n))))
    orders = np.broadcast_to(perms, (4,) + perms.shape)
    cv = game.curves(orders)
    ins = np.empty(cv["insertion"].shape)
    dele = np.empty_like(ins)
    for b in range(4):
        for k, pm in enumerate(perms):
            u = np.zeros(n, bool)
            for t in range(n + 1):
                u[:] = False
                u[pm[:t]] = True
                ins[b, k, t] = vals[b, idx[tuple(u)]]
                dele[b, k, t] = vals[b, idx[tuple(~u)]]
    assert np.abs(cv["insertion"] - ins).max() < 1e-12
    assert np.abs(cv["deletion"] - dele).max() < 1e-12
    assert np.abs(game.expected_auc() - ins.sum(2).mean(1)).max() < 1e-11
    m = n
    abc = (ins.sum(2) - (m + 1) / 2 * (ins[:, :, 0] + ins[:, :, -1])).mean(1) / m
    assert np.abs(game.expected_abc() - abc).max() < 1e-11
    dabc = ((m + 1) / 2 * (dele[:, :, 0] + dele[:, :, -1]) - dele.sum(2)).mean(1) / m
    assert np.abs(game.expected_abc(mode="deletion") - dabc).max() < 1e-11


def test_groups_are_units():
    """With groups, a removed group's splits are all averaged: values equal the definition
    with the group's features removed together, Shapley values the group game's."""
    rng = np.random.default_rng(3)
    n = 6
    ens = random_ensemble(rng, n, depth=4, n_cat=0)
    X = random_rows(rng, 3, n, n_cat=0)
    groups = [[0, 3], [1], [2, 4, 5]]
    game = path_dependent_game(ens, X, groups=groups)
    assert game.m == 3
    masks = all_masks(3)
    pairs = np.repeat(np.arange(3), len(masks))
    keep = np.tile(masks, (3, 1))
    cols = game.groups.expand(keep)
    want = np.array([path_dependent_value(ens, X[p], k) for p, k in zip(pairs, cols, strict=True)])
    vals = game.values(pairs, keep)
    assert np.abs(vals - want).max() < 1e-12
    phi, _ = brute_shapley(vals.reshape(3, -1), masks)
    assert np.abs(game.shapley() - phi).max() < 1e-12


def test_shapley_equals_shap_tree_explainer_without_background(forest):
    """shap.TreeExplainer(model) (tree_path_dependent) explains the same removal."""
    shap = pytest.importorskip("shap")
    rf, ens, X = forest
    game = path_dependent_game(ens, X)
    ex = shap.TreeExplainer(rf)
    assert np.abs(game.shapley() - ex.shap_values(X)).max() < 1e-9
    assert np.abs(game.v_empty() - ex.expected_value).max() < 1e-9


def test_shapley_at_large_n_equals_shap():
    """Exact at any n: 40 features, a forest that reads most of them."""
    shap = pytest.importorskip("shap")
    from sklearn.ensemble import ExtraTreesRegressor

    rng = np.random.default_rng(5)
    n = 40
    Xt = rng.normal(size=(400, n))
    y = Xt @ rng.normal(size=n) + Xt[:, 0] * Xt[:, 1]
    et = ExtraTreesRegressor(n_estimators=5, max_depth=8, random_state=0).fit(Xt, y)
    X = rng.normal(size=(6, n))
    game = path_dependent_game(from_sklearn(et, n), X)
    assert np.abs(game.shapley() - shap.TreeExplainer(et).shap_values(X)).max() < 1e-9


def test_registered_and_read_by_the_engines(forest):
    """'path_dependent' is a registered removal; as_game builds the exact game and the
    engines take its closed forms (curves, Shapley values) and its values."""
    rf, ens, X = forest
    assert "path_dependent" in RM.available()
    assert isinstance(RM.build("path_dependent"), RM.PathDependent)
    game = as_game(ens, X, removal="path_dependent")
    assert isinstance(game, PathDependentGame) and game.name == "path_dependent"
    assert game.knows("curves") and game.knows("shapley")
    direct = path_dependent_game(ens, X)
    phi = insdel.shapley_values(ens, X, None, removal="path_dependent")
    assert np.abs(phi - direct.shapley()).max() < 1e-12
    # a fitted scikit-learn forest is read into its ensemble (insdel.trees.read)
    assert np.abs(insdel.shapley_values(rf, X, None, removal="path_dependent")
                  - direct.shapley()).max() < 1e-12
    A = np.random.default_rng(1).normal(size=X.shape)
    orders = insdel.orderings(A)
    res = insdel.trace(ens, X, None, orders, removal="path_dependent")
    want = direct.curves(orders[:, None, :] if orders.ndim == 2 else orders)
    assert np.abs(res.curves["insertion"] - want["insertion"]).max() < 1e-12
    assert np.allclose(res.fx, ens.predict(X))
    # the decomposition reads the values: its Shapley values equal the closed form
    from insdel.decomposition.batch import _decompose

    assert np.abs(_decompose(game, max_d=8, progress=False).shapley() - phi).max() < 1e-12
    assert game.params()["name"] == "path_dependent"


def test_errors_name_the_problem(forest):
    rf, ens, X = forest
    with pytest.raises(TypeError, match="only to tree ensembles"):
        as_game(lambda Z: Z.sum(1), X, removal="path_dependent")
    with pytest.raises(TypeError, match="only to tree ensembles"):
        insdel.shapley_values(lambda Z: Z.sum(1), X, None, removal="path_dependent")
    bad = ens.cover.copy()
    bad[3] = np.nan
    import dataclasses

    nocover = dataclasses.replace(ens, cover=bad)
    with pytest.raises(ValueError, match="cover"):
        path_dependent_game(nocover, X)
    with pytest.raises(ValueError, match="columns"):
        path_dependent_game(ens, X[:, :3])
    with pytest.raises(ValueError, match="writes no rows"):
        as_game(None, X, removal="path_dependent", rows_only=True)
    with pytest.raises(TypeError, match="tree ensemble"):
        RM.build("path_dependent").values(X, np.ones_like(X, bool), np.arange(len(X)))


def test_check_covers_names_the_first_node_without_a_cover():
    import dataclasses

    from insdel.trees.path_dependent import check_covers

    ens = random_ensemble(np.random.default_rng(0), 3, n_trees=2, depth=2)
    check_covers(ens)  # positive covers pass
    cover = ens.cover.copy()
    cover[[2, 4]] = [0.0, np.nan]
    bad = dataclasses.replace(ens, cover=cover, source="my trees")
    with pytest.raises(ValueError, match=r"my trees has cover 0.0 at node 2 \(2 nodes without a "
                                         r"positive cover\); use a removal with references"):
        check_covers(bad)
    with pytest.raises(ValueError, match="at node 2"):
        path_dependent_game(bad, random_rows(np.random.default_rng(1), 2, 3))


def test_path_dependent_removal_builds_its_game_and_checks_orders():
    from sklearn.tree import DecisionTreeRegressor

    from insdel.removal.trees import tree_game_of

    rng = np.random.default_rng(0)
    Xt = rng.normal(size=(50, 3))
    est = DecisionTreeRegressor(max_depth=3, random_state=0).fit(Xt, Xt[:, 0] * Xt[:, 1])
    rem = RM.build("path_dependent")
    game = rem.tree_game(est, Xt[:3], offset=2)
    assert isinstance(game, PathDependentGame) and game.offset == 2 and game.B == 3
    np.testing.assert_allclose(game.v_all(), est.predict(Xt[:3]), atol=1e-12)
    again = tree_game_of(est, rem, Xt[:3], None)
    np.testing.assert_array_equal(again.v_empty(), game.v_empty())
    with pytest.raises(ValueError, match="writes no rows"):
        rem.tree_game(est, Xt[:3], rows_only=True)
    with pytest.raises(TypeError, match="applies only to tree ensembles"):
        rem.tree_game(lambda Z: Z.sum(1), Xt[:3])
    good = np.tile(np.array([2, 0, 1]), (3, 1, 1))
    np.testing.assert_array_equal(game.check_orders(good), good)
    with pytest.raises(ValueError, match="orders"):
        game.check_orders(np.tile(np.array([2, 2, 1]), (3, 1, 1)))
    e, p = game.ensemble_arrays(), game.path_arrays()
    assert e[0] is game.ensemble.feature and p[0] is game.paths.value
