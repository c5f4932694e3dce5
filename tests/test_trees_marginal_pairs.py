"""The marginal tree game over (target, reference) pairs (insdel.trees.marginal_pairs): each
target with its own K references, and shared references on paths deeper than the linear-time
tables take. Through ``as_game(..., removal=...)``, the tree engine equals the black-box engine
on a scikit-learn model (float64) to 1e-9: values, curves of both modes, ABC, E[ABC], Shapley
values, the decomposition's best order; Banzhaf values against brute force."""

from __future__ import annotations

import numpy as np
import pytest
from _trees import all_masks

from insdel import evaluate, interactions, trace
from insdel.attribution import attribute
from insdel.decomposition import batch_decomposition, shapley_values
from insdel.game import as_game, engine_text, model_engine
from insdel.removal import Marginal
from insdel.removal.trees import tree_game_of
from insdel.trees import read
from insdel.trees._paths import leaf_paths
from insdel.trees.marginal import MAX_MARGINAL_SLOTS, MarginalGame, TooManySlots, marginal_game
from insdel.trees.marginal_pairs import MarginalPairsGame, marginal_pairs_game

TOL = 1e-9


def _forest(n=6, seed=0):
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(seed)
    Xt = rng.normal(size=(400, n))
    y = Xt[:, 0] * Xt[:, 1] + np.sin(Xt[:, 2]) + Xt[:, 3] - Xt[:, 4] * (Xt[:, 5] > 0)
    return RandomForestRegressor(n_estimators=5, max_depth=5, random_state=0).fit(Xt, y), Xt


def _deep_tree():
    """A fully grown tree on n = 30 features whose paths split on more than 20 distinct
    features (4,000 rows of noise: every split is on a feature of its own)."""
    from sklearn.tree import DecisionTreeRegressor

    rng = np.random.default_rng(0)
    Xt = rng.normal(size=(4000, 30))
    tree = DecisionTreeRegressor(random_state=0).fit(Xt, rng.normal(size=4000))
    return tree, Xt


def _orders(rng, B, Ko, m):
    return rng.permuted(np.tile(np.arange(m), (B, Ko, 1)), axis=2)


def _agree(auto, box, rng, *, exact_shapley=True):
    """The tree game ``auto`` equals the black-box game ``box`` (same pairs) to TOL."""
    B, m = auto.B, auto.m
    scale = 1.0 + np.abs(box.v_all()).max()
    tol = TOL * scale
    keep = rng.random((5 * B, m)) < 0.5
    pairs = np.repeat(np.arange(B), 5)
    np.testing.assert_allclose(auto.values(pairs, keep), box.values(pairs, keep), atol=tol)
    np.testing.assert_allclose(auto.v_all(), box.v_all(), atol=tol)
    np.testing.assert_allclose(auto.v_empty(), box.v_empty(), atol=tol)
    orders = _orders(rng, B, 3, m)
    ta, tb = trace(auto, None, None, orders), trace(box, None, None, orders)
    for mode in ("insertion", "deletion"):
        np.testing.assert_allclose(ta.curves[mode], tb.curves[mode], atol=tol)
        curve = tb.curves[mode]
        aul = (m + 1) / 2.0 * (curve[..., 0] + curve[..., -1])
        abc = curve.sum(-1) - aul if mode == "insertion" else aul - curve.sum(-1)
        np.testing.assert_allclose(auto.abc(orders, mode=mode), abc / m, atol=tol)
        np.testing.assert_allclose(auto.auc(orders, mode=mode), curve.sum(-1), atol=tol)
    A = {"a": rng.normal(size=(B, m))}
    ea = evaluate(auto, None, None, A, add_random=False)
    eb = evaluate(box, None, None, A, add_random=False)
    np.testing.assert_allclose(ea.abc.select_dtypes("number").to_numpy(float),
                               eb.abc.select_dtypes("number").to_numpy(float), atol=tol)
    if exact_shapley:
        np.testing.assert_allclose(shapley_values(auto, None, None),
                                   shapley_values(box, None, None), atol=tol)
        db = batch_decomposition(box, None, None)
        for mode in ("insertion", "deletion"):
            np.testing.assert_allclose(auto.expected_abc(mode=mode), db.expected_abc(mode=mode),
                                       atol=tol)


@pytest.mark.parametrize("K", [1, 4])
def test_per_target_references_equal_the_black_box(K):
    rf, Xt = _forest()
    rng = np.random.default_rng(K)
    X = Xt[:4]
    R = Xt[rng.integers(0, Xt.shape[0], size=(4, K))]
    auto = as_game(rf, X, R, removal="marginal")
    box = as_game(rf, X, R, removal="marginal", engine="black_box")
    assert isinstance(auto, MarginalPairsGame) and auto.engine == "tree"
    assert box.engine == "black_box"
    assert engine_text(auto).endswith(f"marginal over 4 x {K} (target, reference) pairs")
    assert auto.params()["route"] == "pairs" and auto.params()["references_per_target"] == K
    _agree(auto, box, rng)
    # the decomposition reads the averaged effects; its best order is the black box's
    da, db = batch_decomposition(auto, None, None), batch_decomposition(box, None, None)
    for mode in ("insertion", "deletion"):
        np.testing.assert_allclose(da.expected_abc(mode=mode), db.expected_abc(mode=mode),
                                   atol=TOL)
        best = auto.best_order(mode=mode)
        np.testing.assert_allclose(best.abc, db.best_abc(mode=mode), atol=TOL)
        np.testing.assert_allclose(db.abc(best.order, mode=mode), best.abc, atol=TOL)
        assert best.exact.all() and np.array_equal(best.bound, best.abc)
    # the interaction indices read the averaged effects
    ia, ib = interactions(auto, index="SII", order=2), interactions(box, index="SII", order=2)
    np.testing.assert_allclose(ia.matrix(), ib.matrix(), atol=TOL)


def test_banzhaf_and_expected_auc_by_brute_force():
    rf, Xt = _forest(seed=1)
    rng = np.random.default_rng(7)
    X, R = Xt[:3], Xt[rng.integers(0, 400, size=(3, 3))]
    game = as_game(rf, X, R, removal="marginal")
    m = game.m
    masks = all_masks(m)
    vals = game.values(np.repeat(np.arange(3), len(masks)), np.tile(masks, (3, 1)))
    vals = vals.reshape(3, -1)
    idx = {tuple(k): i for i, k in enumerate(masks)}
    bz = np.zeros((3, m))
    for k in masks:
        for j in np.flatnonzero(~k):
            w = k.copy()
            w[j] = True
            bz[:, j] += vals[:, idx[tuple(w)]] - vals[:, idx[tuple(k)]]
    np.testing.assert_allclose(game.banzhaf(), bz / 2 ** (m - 1), atol=TOL)
    box = as_game(rf, X, R, removal="marginal", engine="black_box")
    e = batch_decomposition(box, None, None).expected_abc(normalize=False)
    aul = (m + 1) / 2.0 * (box.v_empty() + box.v_all())
    np.testing.assert_allclose(game.expected_auc(), e + aul, atol=TOL)


@pytest.mark.parametrize("how", ["random", "nearest"])
def test_references_drawn_per_target_take_the_tree_game(how):
    rf, Xt = _forest(seed=2)
    rem = Marginal(Xt[100:160], n_references=3, how=how, seed=5)
    X = Xt[:3]
    auto = as_game(rf, X, removal=rem)
    box = as_game(rf, X, removal=rem, engine="black_box")
    assert isinstance(auto, MarginalPairsGame)
    np.testing.assert_array_equal(auto.R, box.references)  # the same draws
    _agree(auto, box, np.random.default_rng(3))
    assert as_game(rf, X, removal=rem, engine="tree").engine == "tree"
    np.testing.assert_allclose(attribute(rf, X, None, "tree_shap", removal=rem),
                               shapley_values(box, None, None), atol=TOL)


def test_references_drawn_per_target_keep_the_run_index_in_a_chunk():
    """``as_game(..., offset=k)`` on the pairs k.. draws target b's references as target
    k + b of the whole run, on the tree engine as on the black box."""
    rf, Xt = _forest(seed=2)
    rem = Marginal(Xt[100:160], n_references=3, how="random", seed=5)
    X, k = Xt[:5], 2
    orders = _orders(np.random.default_rng(1), 5, 2, X.shape[1])
    for engine in ("tree", "black_box"):
        whole = as_game(rf, X, removal=rem, engine=engine)
        part = as_game(rf, X[k:], removal=rem, engine=engine, offset=k)
        np.testing.assert_allclose(part.v_empty(), whole.v_empty()[k:], atol=1e-12)
        cw = trace(whole, None, None, orders).curves
        cp = trace(part, None, None, orders[k:]).curves
        for mode in ("insertion", "deletion"):
            np.testing.assert_allclose(cp[mode], cw[mode][k:], atol=1e-12)
    np.testing.assert_array_equal(as_game(rf, X[k:], removal=rem, offset=k).R,
                                  as_game(rf, X, removal=rem).R[k:])


def test_shared_references_keep_the_linear_route():
    rf, Xt = _forest()
    X, bg = Xt[:3], Xt[200:206]
    for game in (as_game(rf, X, removal=Marginal(bg, how="all")),
                 as_game(rf, X, np.broadcast_to(bg, (3,) + bg.shape), removal="marginal")):
        assert isinstance(game, MarginalGame)
        assert engine_text(game) == model_engine(rf)  # no route to name


def test_deep_paths_fall_back_to_the_pairs():
    """Paths over 20 distinct features: the tables refuse (TooManySlots), auto and tree take
    the pairs' route and say so; the numbers equal the black box's."""
    tree, Xt = _deep_tree()
    ens = read(tree)
    d = leaf_paths(ens, np.arange(30)).max_slots()
    assert d > MAX_MARGINAL_SLOTS
    rng = np.random.default_rng(11)
    B, K = 3, 2
    X = Xt[:B]
    bg = np.repeat(X[:1], K, axis=0)  # references that differ from the targets on few features
    for k in range(K):
        cols = rng.choice(30, size=4, replace=False)
        bg[k, cols] = Xt[50 + k, cols]
    X = X.copy()
    X[:, 6:] = X[0, 6:]  # every target equals the first on the last 24 features
    with pytest.raises(TooManySlots, match=f"splits on {d}") as err:
        marginal_game(ens, X, bg)
    assert isinstance(err.value, ValueError) and err.value.slots == d
    for engine in ("auto", "tree"):
        game = as_game(tree, X, removal=Marginal(bg, how="all"), engine=engine)
        assert isinstance(game, MarginalPairsGame)
        text = engine_text(game)
        assert f"marginal over {B} x {K} (target, reference) pairs" in text
        assert f"a path splits on {d} distinct units" in text
    shared3 = as_game(tree, X, np.broadcast_to(bg, (B, K, 30)), removal="marginal")
    assert isinstance(shared3, MarginalPairsGame) and shared3.why is not None
    box = as_game(tree, X, removal=Marginal(bg, how="all"), engine="black_box")
    assert game.differing().sum(axis=1).max() <= 14
    _agree(game, box, rng)


def test_chunks_and_subsets(monkeypatch):
    from insdel.trees import marginal_pairs

    rf, Xt = _forest(seed=3)
    rng = np.random.default_rng(2)
    X, R = Xt[:5], Xt[rng.integers(0, 400, size=(5, 3))]
    game = as_game(rf, X, R, removal="marginal", offset=7)
    orders = _orders(rng, 5, 2, game.m)
    whole = game.curves(orders)
    monkeypatch.setattr(marginal_pairs, "_MAX_CURVE_POINTS", 3 * 2 * 7 * 2)  # two targets
    chunked = game.curves(orders)
    for mode in whole:
        np.testing.assert_allclose(chunked[mode], whole[mode], atol=1e-12)
    sub = game.subset(1, 4)
    assert isinstance(sub, MarginalPairsGame) and sub.offset == 8 and sub.K == 3
    np.testing.assert_allclose(sub.shapley(), game.shapley()[1:4], atol=1e-12)


def test_bad_input_is_named():
    rf, Xt = _forest()
    ens = read(rf)
    X = Xt[:2]
    with pytest.raises(ValueError, match=r"R must have shape \(B, K, n\) = \(2, K, 6\)"):
        marginal_pairs_game(ens, X, Xt[:6].reshape(3, 2, 6))
    R = np.repeat(Xt[None, 2:4], 2, axis=0)
    R[1, 0, 3] = np.inf
    with pytest.raises(ValueError, match="R is ±inf at target 1, reference 0, feature 3"):
        as_game(rf, X, R, removal="marginal")
    Xn = X.copy()
    Xn[0, 2] = np.nan
    with pytest.raises(ValueError, match="X"):
        as_game(rf, Xn, removal=Marginal(Xt[10:20], n_references=2, how="nearest"))
    with pytest.raises(ValueError, match="max_d = 2"):
        as_game(rf, X, np.stack([Xt[2:4], Xt[4:6]]), removal="marginal").effects(max_d=2)
    with pytest.raises(ValueError, match="best_order.*exact only.*max_d = 2"):
        as_game(rf, X, np.stack([Xt[2:4], Xt[4:6]]), removal="marginal").best_order(max_d=2)
    with pytest.raises(ValueError, match="orders"):
        as_game(rf, X, np.stack([Xt[2:4], Xt[4:6]]), removal="marginal").abc(np.zeros(6))
    with pytest.raises(Exception, match="marginal without background"):
        tree_game_of(rf, Marginal(), X, Xt[2:4])


def _chain(n):
    """One tree that splits on features 0, 1, ..., n - 1 down one path (x_j <= 0 leaves with
    value j + 1; the last node's right child is worth -1): a path of n distinct features."""
    from insdel.trees import TreeEnsemble

    N = 2 * n + 1
    feature = np.full(N, -1, np.int64)
    left, right = np.full(N, -1, np.int64), np.full(N, -1, np.int64)
    value = np.zeros(N)
    for j in range(n):  # node 2j splits on feature j; its left child 2j + 1 is a leaf
        feature[2 * j], left[2 * j], right[2 * j] = j, 2 * j + 1, 2 * j + 2
        value[2 * j + 1] = j + 1.0
    value[2 * n] = -1.0
    return TreeEnsemble(feature=feature, threshold=np.zeros(N), left=left, right=right,
                        missing_left=np.zeros(N, bool), is_categorical=np.zeros(N, bool),
                        cat_ptr=np.zeros(N + 1, np.int64), categories=np.zeros(0),
                        value=value, cover=np.ones(N), roots=np.array([0], np.int64), base=0.5,
                        rule="le", n_features=n, source="chain")


def test_paths_past_the_kernels_limit_take_the_pairs():
    """A path of 70 distinct features, past every path kernel's 62: the shared references'
    game walks the pairs and equals the black box."""
    from insdel.trees._paths import MAX_SLOTS

    n = 70
    ens = _chain(n)
    rng = np.random.default_rng(4)
    X = np.ones((2, n))
    X[:, :5] = rng.normal(size=(2, 5))
    bg = np.ones((3, n))
    bg[:, :6] = rng.normal(size=(3, 6))
    with pytest.raises(TooManySlots, match=f"splits on {n} distinct units.*{MAX_SLOTS}"):
        marginal_game(ens, X, bg)
    game = as_game(ens, X, removal=Marginal(bg, how="all"), engine="tree")
    assert isinstance(game, MarginalPairsGame)
    assert f"splits on {n} distinct units, more than the {MAX_SLOTS}" in engine_text(game)
    box = as_game(ens, X, removal=Marginal(bg, how="all"), engine="black_box")
    _agree(game, box, rng)


def test_the_pairs_equal_the_tables_on_shared_references():
    """On shared references both exact routes give the same game (to rounding)."""
    rf, Xt = _forest(seed=4)
    ens = read(rf)
    X, bg = Xt[:6], Xt[200:215]
    tables = marginal_game(ens, X, bg)
    pairs = marginal_pairs_game(ens, X, np.broadcast_to(bg, (6,) + bg.shape))
    np.testing.assert_allclose(pairs.shapley(), tables.shapley(), atol=1e-12)
    for mode in ("insertion", "deletion"):
        np.testing.assert_allclose(pairs.expected_abc(mode=mode),
                                   tables.expected_abc(mode=mode), atol=1e-12)
    orders = _orders(np.random.default_rng(0), 6, 2, 6)
    cp, ct = pairs.curves(orders), tables.curves(orders)
    for mode in cp:
        np.testing.assert_allclose(cp[mode], ct[mode], atol=1e-12)
    np.testing.assert_array_equal(pairs.differing(), tables.differing() | pairs.differing())


def test_groups_are_the_units():
    rf, Xt = _forest(seed=5)
    rng = np.random.default_rng(9)
    X, R = Xt[:3], Xt[rng.integers(0, 400, size=(3, 2))]
    groups = [[0, 3], [1, 5], [2, 4]]
    auto = as_game(rf, X, R, removal="marginal", groups=groups)
    box = as_game(rf, X, R, removal="marginal", groups=groups, engine="black_box")
    assert isinstance(auto, MarginalPairsGame) and auto.m == 3
    _agree(auto, box, rng)
