"""insdel.interactions.trees: every interaction index of a tree game exactly at any n from its
leaf patterns, against the dense route (the same game's 2^|D| effects), against shapiq's
TreeExplainer on the reference's trees, and efficient at n = 200."""

import numpy as np
import pytest
from _trees import random_ensemble, random_rows

import insdel
from insdel.interactions import INDICES, from_effects
from insdel.interactions.trees import from_tree_game, pattern_coefficients
from insdel.trees.game import tree_game


def _max_diff(a, b) -> float:
    err = 0.0
    for p in range(a.B):
        da, db = a.to_dict(p), b.to_dict(p)
        err = max([err] + [abs(da.get(s, 0.0) - db.get(s, 0.0)) for s in set(da) | set(db)])
    return err


def _xgb(n: int, *, depth: int = 4, trees: int = 25, seed: int = 0):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(seed)
    Xt = rng.normal(size=(400, n))
    y = Xt[:, 0] * Xt[:, 1] + np.sin(Xt[:, 2]) + Xt[:, 3] * Xt[:, 4] * Xt[:, 5] \
        + Xt[:, 6:].sum(axis=1)
    model = xgb.XGBRegressor(n_estimators=trees, max_depth=depth, n_jobs=1).fit(Xt, y)
    return insdel.trees.read(model), rng


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tree_route_equals_dense_route_every_index_and_order(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 9))
    ens = random_ensemble(rng, n, n_trees=5, depth=4)
    X, R = random_rows(rng, 4, n), random_rows(rng, 4, n)
    game = tree_game(ens, X, R)
    dense = game.effects()
    for name, spec in INDICES.items():
        for k in ([spec.fixed_order] if spec.fixed_order else [1, 2, 3]):
            a = from_tree_game(game, index=name, order=k)
            b = from_effects(*dense, index=name, order=k, m=n, v_empty=game.v_empty(),
                             v_all=game.v_all())
            assert _max_diff(a, b) <= 1e-12, (name, k)
            if k <= 2:
                np.testing.assert_allclose(a.values(k), b.values(k), rtol=0, atol=1e-12)


def test_front_door_takes_the_tree_route_beyond_max_d():
    ens, rng = _xgb(24, trees=10)
    X, R = rng.normal(size=(2, 24)), rng.normal(size=(2, 24))
    game = tree_game(ens, X, R)
    res = insdel.interactions(game, index="k-SII", order=2, max_d=3)  # |D| = 24 > max_d
    assert res.exact and res.n_evals == 0 and (res.d == 24).all()
    assert _max_diff(res, from_tree_game(game, index="k-SII", order=2)) == 0.0
    np.testing.assert_allclose(res.sums(), res.v_all - res.v_empty, atol=1e-9)
    np.testing.assert_allclose(res.v_all, ens.predict(X), atol=1e-9)


def test_groups_tree_route_equals_dense_route():
    rng = np.random.default_rng(5)
    ens = random_ensemble(rng, 6, n_trees=4, depth=4)
    X, R = random_rows(rng, 3, 6), random_rows(rng, 3, 6)
    game = tree_game(ens, X, R, groups=[[0, 1], [2], [3, 4], [5]])
    for name in ("SII", "FSII", "STII"):
        a = from_tree_game(game, index=name, order=2)
        b = from_effects(*game.effects(), index=name, order=2, m=game.m)
        assert _max_diff(a, b) <= 1e-12


def test_pattern_coefficients_sum_over_sizes():
    """c(s, a; e, r) is the sum over w between E and E ∪ R, enumerated here set by set."""
    from itertools import combinations

    from insdel.interactions.indices import check_index, weights

    spec = check_index("k-SII")
    c = pattern_coefficients(spec, 3, np.array([[2, 3], [0, 4]]))
    W = weights(spec, 3, 7)
    for e, r in ((2, 3), (0, 4)):
        E, Rr = set(range(e)), list(range(e, e + r))
        for s in range(4):
            for a in range(0, min(s, r) + 1):
                if s - a > e:
                    continue
                S = set(range(s - a)) | set(Rr[:a])
                tot = sum((-1) ** len(U) * W[s, len(E | set(U))]
                          for j in range(r + 1) for U in combinations(Rr, j) if S <= E | set(U))
                assert abs(c[s, a, e, r] - tot) <= 1e-12


@pytest.mark.parametrize("index", ["k-SII", "SII"])
def test_n30_equals_shapiq_tree_explainer(index):
    """shapiq's path-dependent TreeExplainer on the trees whose covers follow r (the reference's
    path at weight 1 - 1e-12) computes the baseline game's indices."""
    shapiq = pytest.importorskip("shapiq")
    from insdel.interactions.shapiq_io import shapiq_trees

    ens, rng = _xgb(30, depth=4)
    x, r = rng.normal(size=30), rng.normal(size=30)
    res = from_tree_game(tree_game(ens, x[None], r[None]), index=index, order=2)
    iv = shapiq.TreeExplainer(shapiq_trees(ens, r), max_order=2, min_order=1,
                              index=index).explain(x)
    ours = res.to_dict(0)
    scale = max(abs(v) for s, v in ours.items() if s)
    err = max(abs(v - ours.get(s, 0.0)) for s, v in iv.dict_values.items() if s)
    assert err <= 1e-6 * scale


def test_n30_stii_equals_dense_route_on_a_smaller_D():
    """STII at n = 30 against the dense route where |D| = 12 (x equal to r elsewhere)."""
    ens, rng = _xgb(30, depth=4)
    x, r = rng.normal(size=(2, 30)), rng.normal(size=(2, 30))
    x[:, 12:] = r[:, 12:]
    game = tree_game(ens, x, r)
    for name in ("STII", "k-SII", "FSII", "FBII"):
        a = from_tree_game(game, index=name, order=2)
        b = from_effects(*game.effects(), index=name, order=2, m=30)
        assert _max_diff(a, b) <= 1e-12


def test_n200_runs_and_k_sii_is_efficient():
    ens, rng = _xgb(200, depth=5, trees=40)
    X, R = rng.normal(size=(3, 200)), rng.normal(size=(3, 200))
    res = insdel.interactions(tree_game(ens, X, R), index="k-SII", order=2)
    assert res.m == 200 and (res.d == 200).all()
    np.testing.assert_allclose(res.sums(), res.v_all - res.v_empty, rtol=0, atol=1e-9)
    sv = insdel.interactions(tree_game(ens, X, R), index="SV")
    np.testing.assert_allclose(sv.values(1), tree_game(ens, X, R).shapley(), atol=1e-10)


@pytest.mark.parametrize("index", ["k-SII", "SII", "STII", "FSII", "BII"])
def test_tree_route_equals_shapiq_exact_computer(index):
    """shapiq's ExactComputer on the same tree game (n = 8, every coalition evaluated)."""
    shapiq = pytest.importorskip("shapiq")
    from insdel.interactions.shapiq_io import shapiq_game

    ens, rng = _xgb(8, depth=3, trees=10)
    game = tree_game(ens, rng.normal(size=(1, 8)), rng.normal(size=(1, 8)))
    ex = shapiq.ExactComputer(game=shapiq_game(game, None), n_players=8)(index, order=2)
    ours = insdel.interactions(game, index=index, order=2).to_dict(0)
    tol = 1e-8 if index == "FSII" else 1e-10  # shapiq's FSII: a penalised least squares
    assert max(abs(ex[s] - ours.get(tuple(s), 0.0)) for s in ex.dict_values if s) <= tol
