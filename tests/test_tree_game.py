"""insdel.trees.patterns and insdel.trees.game: the tree game under the baseline removal, every
closed form against brute force over all coalitions and orderings, and against the black-box
engines on the ensemble's predict."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import insdel
from insdel.decomposition import batch_decomposition, sampled_shapley, shapley_values
from insdel.game import HOOKS, from_parts
from insdel.trees import TreeEnsemble
from insdel.trees.game import DEFAULT_MAX_D, TreeGame, tree_game
from insdel.trees.patterns import leaf_patterns, pattern_counts

GRID = (0.0, 1.0, 2.0, 3.0)  # data and thresholds share values: ties at every split


def build(nodes, roots, n, *, rule="le", base=0.0):
    """A TreeEnsemble from a list of node dicts (keys f, t, l, r, ml, cats, v)."""
    cp = np.zeros(len(nodes) + 1, np.int64)
    cp[1:] = np.cumsum([len(d.get("cats") or ()) for d in nodes])
    return TreeEnsemble(
        feature=np.array([d["f"] for d in nodes], np.int64),
        threshold=np.array([d.get("t", 0.0) for d in nodes], float),
        left=np.array([d.get("l", -1) for d in nodes], np.int64),
        right=np.array([d.get("r", -1) for d in nodes], np.int64),
        missing_left=np.array([d.get("ml", False) for d in nodes], bool),
        is_categorical=np.array([d.get("cats") is not None for d in nodes], bool), cat_ptr=cp,
        categories=np.array([c for d in nodes for c in (d.get("cats") or ())], float),
        value=np.array([d.get("v", 0.0) for d in nodes], float),
        cover=np.full(len(nodes), np.nan), roots=np.array(roots, np.int64), base=base, rule=rule,
        n_features=n)


@st.composite
def ensembles(draw, n):
    """Small random ensembles over n features: thresholds on the data's grid (ties), random NaN
    directions, categorical splits, a feature split twice on one path."""
    nodes = []

    def node(depth):
        i = len(nodes)
        nodes.append({"f": -1})
        if depth >= 3 or (depth > 0 and draw(st.booleans()) and draw(st.booleans())):
            nodes[i]["v"] = draw(st.floats(-3, 3, allow_nan=False).map(lambda v: round(v, 3)))
            return i
        d = nodes[i]
        d["f"] = draw(st.integers(0, n - 1))
        d["ml"] = draw(st.booleans())
        if draw(st.integers(0, 3)) == 0:
            d["cats"] = sorted(draw(st.sets(st.sampled_from(GRID), min_size=1, max_size=2)))
        else:
            d["t"] = draw(st.sampled_from(GRID))
        d["l"] = node(depth + 1)
        d["r"] = node(depth + 1)
        return i

    roots = [node(0) for _ in range(draw(st.integers(1, 4)))]
    return build(nodes, roots, n, rule=draw(st.sampled_from(["le", "lt"])),
                 base=draw(st.sampled_from([0.0, 0.5])))


def pairs(rng, B, n, nan=True):
    X = rng.choice(GRID, size=(B, n))
    R = rng.choice(GRID, size=(B, n))
    if nan:
        X[rng.random((B, n)) < 0.15] = np.nan
        R[rng.random((B, n)) < 0.15] = np.nan
    return X, R


def brute_values(ens, x, r, labels, m):
    """v(u) for every bitmask u over the m units, by the ensemble's predict."""
    keep = (np.arange(1 << m)[:, None] >> np.arange(m)) & 1
    Z = np.where(keep[:, labels].astype(bool), x, r)
    return ens.predict(Z)


def mobius(v, m):
    d = v.copy()
    for j in range(m):
        for u in range(1 << m):
            if u >> j & 1:
                d[u] -= d[u ^ (1 << j)]
    return d


def check_against_brute_force(ens, X, R, groups=None):
    g = tree_game(ens, X, R, groups=groups)
    m = g.m
    labels = np.arange(g.n) if g.groups is None else g.groups.labels
    perms = np.array(list(itertools.permutations(range(m))), np.int64)
    orders = np.broadcast_to(perms, (g.B,) + perms.shape).copy()
    cur = g.curves(orders, modes=("insertion", "deletion"), positions=np.arange(m + 1))
    aucs = {mo: g.auc(orders, mode=mo) for mo in ("insertion", "deletion")}
    abcs = {mo: g.abc(orders, mode=mo) for mo in ("insertion", "deletion")}
    phi, bz = g.shapley(), g.banzhaf()
    dsz, Dflat, doff, delta = g.effects()
    sparse = g.nonzero_effects()
    bests = {mo: (g.best_order(mode=mo), g.best_order(mode=mo, max_d=1))
             for mo in ("insertion", "deletion")}
    full = (1 << m) - 1
    steps = np.cumsum(np.left_shift(1, perms), axis=1)
    ins_sets = np.concatenate([np.zeros((len(perms), 1), int), steps], axis=1)
    for b in range(g.B):
        v = brute_values(ens, X[b], R[b], labels, m)
        # the patterns: v(u) = base + sum over patterns on at u
        keep = ((np.arange(1 << m)[:, None] >> np.arange(m)) & 1).astype(bool)
        np.testing.assert_allclose(g.values(np.full(1 << m, b), keep), v, rtol=0, atol=1e-12)
        pats = g.patterns.of(b)
        assert len({(E, Rr) for E, Rr, _ in pats}) == len(pats)
        assert all(not set(E) & set(Rr) for E, Rr, _ in pats)
        ci, cd = v[ins_sets], v[full ^ ins_sets]
        np.testing.assert_allclose(cur["insertion"][b], ci, rtol=0, atol=1e-12)
        np.testing.assert_allclose(cur["deletion"][b], cd, rtol=0, atol=1e-12)
        for mo, c in (("insertion", ci), ("deletion", cd)):
            np.testing.assert_allclose(aucs[mo][b], c.sum(1), rtol=0, atol=1e-12)
            np.testing.assert_allclose(abcs[mo][b], insdel.areas.abc(c, mode=mo), rtol=0,
                                       atol=1e-12)
            assert abs(g.expected_auc(mode=mo)[b] - c.sum(1).mean()) < 1e-12
            assert abs(g.expected_abc(mode=mo)[b]
                       - insdel.areas.abc(c, mode=mo).mean()) < 1e-12
            best, heur = bests[mo]
            best_abc = insdel.areas.abc(c, mode=mo).max()
            assert best.exact[b] and abs(best.abc[b] - best_abc) < 1e-12
            k = np.flatnonzero((perms == best.order[b]).all(1))[0]
            assert abs(insdel.areas.abc(c[k], mode=mo) - best_abc) < 1e-12
            heur = heur if dsz[b] > 1 else best
            assert heur.bound[b] >= best_abc - 1e-12 >= heur.abc[b] - 2e-12
        assert abs(g.v_all()[b] - v[full]) < 1e-12 and abs(g.v_empty()[b] - v[0]) < 1e-12
        for j in range(m):
            s = sh = 0.0
            for u in range(1 << m):
                if not u >> j & 1:
                    c = bin(u).count("1")
                    gain = v[u | 1 << j] - v[u]
                    s += math.factorial(c) * math.factorial(m - c - 1) / math.factorial(m) * gain
                    sh += gain / 2 ** (m - 1)
            assert abs(phi[b, j] - s) < 1e-12 and abs(bz[b, j] - sh) < 1e-12
        # the effects: the Möbius transform of v, in D_b's local bits, and the sparse ones
        dl = mobius(v, m)
        D = Dflat[doff[b]:doff[b + 1]]
        off = int(np.sum(np.left_shift(1, dsz[:b])))
        loc = delta[off:off + (1 << dsz[b])]
        glob = [sum(1 << int(D[t]) for t in range(len(D)) if w >> t & 1) for w in range(len(loc))]
        np.testing.assert_allclose(loc, dl[glob], rtol=0, atol=1e-12)
        outside = np.setdiff1d(np.arange(1 << m), glob)
        assert np.abs(dl[outside]).max(initial=0) < 1e-12
        got = {sum(1 << u for u in w): d for w, d in sparse.of(b)}
        want = {u: dl[u] for u in range(1 << m) if abs(dl[u]) > 1e-12}
        assert set(want) <= set(got)
        assert all(abs(got[u] - dl[u]) < 1e-12 for u in got)
        mags = [abs(d) for _, d in sparse.of(b)]
        assert mags == sorted(mags, reverse=True)
    return g


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), n=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_every_closed_form_equals_brute_force(data, n, seed):
    ens = data.draw(ensembles(n))
    X, R = pairs(np.random.default_rng(seed), 3, n)
    check_against_brute_force(ens, X, R)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_the_group_game_equals_brute_force(data, seed):
    ens = data.draw(ensembles(6))
    X, R = pairs(np.random.default_rng(seed), 3, 6)
    g = check_against_brute_force(ens, X, R, groups=[[0, 3], [1], [2, 4, 5]])
    assert g.m == 3


def test_seven_features_brute_force():
    rng = np.random.default_rng(7)
    ens = ensemble_of(rng, 7, n_trees=6, depth=4)
    X, R = pairs(rng, 2, 7)
    check_against_brute_force(ens, X, R)


def ensemble_of(rng, n, *, n_trees, depth, rule="le", cat=0.2):
    """A random ensemble of full trees (numpy draws), NaN directions and categories included."""
    nodes, roots = [], []

    def node(d):
        i = len(nodes)
        nodes.append({"f": -1})
        if d == depth:
            nodes[i]["v"] = float(rng.normal())
            return i
        nodes[i].update(f=int(rng.integers(n)), ml=bool(rng.random() < 0.5))
        if rng.random() < cat:
            nodes[i]["cats"] = sorted(set(rng.choice(GRID, size=2).tolist()))
        else:
            nodes[i]["t"] = float(rng.choice(GRID)) + (0.5 if rng.random() < 0.5 else 0.0)
        nodes[i]["l"] = node(d + 1)
        nodes[i]["r"] = node(d + 1)
        return i

    for _ in range(n_trees):
        roots.append(node(0))
    return build(nodes, roots, n, rule=rule, base=0.25)


def test_plain_numeric_ensembles_take_the_packed_walk():
    """Ensembles without categorical splits, missing intervals or infinite thresholds walk the
    packed nodes alone (the ``le`` rule folded into the threshold): held and streamed, equal to
    brute force with data on the thresholds and NaN."""
    from insdel.trees.ensemble import GENERAL, MISSING_LEFT, packed_nodes

    rng = np.random.default_rng(3)
    for rule in ("le", "lt"):
        ens = ensemble_of(rng, 6, n_trees=8, depth=4, rule=rule, cat=0)
        assert ens.walk_arrays()[6] is None  # no node needs goes_left
        X, R = pairs(rng, 4, 6)
        g = check_against_brute_force(ens, X, R)
        s = tree_game(ens, X, R, max_patterns=1)
        assert s.patterns is None
        orders = np.stack([np.argsort(rng.random((3, 6)), axis=1) for _ in range(4)])
        for mo in ("insertion", "deletion"):
            np.testing.assert_allclose(s.curves(orders)[mo], g.curves(orders)[mo], rtol=0,
                                       atol=1e-12)
        np.testing.assert_allclose(s.shapley(), g.shapley(), rtol=0, atol=1e-12)
    stump = [{"f": 0, "t": 1.0, "l": 1, "r": 2, "ml": True}, {"f": -1, "v": 1.0},
             {"f": -1, "v": 2.0}]
    nodes, thr = packed_nodes(build(stump, [0], 1, rule="le"))
    assert nodes[0].tolist() == [0, 1, 2, MISSING_LEFT] and thr[0] == np.nextafter(1.0, 2.0)
    inf = build([dict(stump[0], t=np.inf)] + stump[1:], [0], 1, rule="le")
    assert packed_nodes(inf)[0][0, 3] & GENERAL and inf.walk_arrays()[6] is not None
    cats = build([dict(stump[0], cats=[1.0])] + stump[1:], [0], 1)
    assert packed_nodes(cats)[0][0, 3] & GENERAL
    np.testing.assert_array_equal(
        tree_game(cats, [[1.0], [0.0]], [[0.0], [1.0]]).v_all(), cats.predict([[1.0], [0.0]]))


def test_a_path_that_needs_a_unit_from_both_points_is_dropped():
    # root on feature 0 (x goes left, r right); the left child splits feature 0 again: a hybrid
    # on the x side always takes x_0, so the leaf that needs r_0 there is unreachable
    nodes = [{"f": 0, "t": 1.5, "l": 1, "r": 4},
             {"f": 0, "t": 0.5, "l": 2, "r": 3}, {"f": -1, "v": 1.0}, {"f": -1, "v": 2.0},
             {"f": -1, "v": 3.0}]
    ens = build(nodes, [0], 2)
    P = leaf_patterns(ens, np.array([[0.0, 0.0]]), np.array([[2.0, 0.0]]))
    assert sorted(P.of(0)) == [((), (0,), 3.0), ((0,), (), 1.0)]


def test_equal_patterns_of_a_pair_are_merged():
    stump = [{"f": 1, "t": 0.5, "l": 1, "r": 2}, {"f": -1, "v": 1.0}, {"f": -1, "v": 2.0}]
    nodes = stump + [dict(d, l=d.get("l", -1) + 3 * (d["f"] >= 0),
                          r=d.get("r", -1) + 3 * (d["f"] >= 0)) for d in stump]
    ens = build(nodes, [0, 3], 2)
    P = leaf_patterns(ens, np.array([[0.0, 0.0], [0.0, 1.0]]),
                      np.array([[5.0, 1.0], [5.0, 1.0]]))
    assert sorted(P.of(0)) == [((), (1,), 4.0), ((1,), (), 2.0)]
    assert P.of(1) == [((), (), 4.0)]  # x and r agree on feature 1: one constant pattern


# -- the engines read the tree game as they read the model ------------------------------------
@pytest.fixture(scope="module")
def finite_case():
    rng = np.random.default_rng(11)
    n = 6
    ens = ensemble_of(rng, n, n_trees=8, depth=4)
    X, R = pairs(rng, 7, n, nan=False)
    R[0, 2] = X[0, 2]  # a unit outside D
    return ens, X, R


def test_the_engines_give_the_black_box_numbers(finite_case):
    ens, X, R = finite_case
    g = tree_game(ens, X, R)
    assert g.closed_form == frozenset(HOOKS)
    orders = np.stack([np.argsort(np.random.default_rng(b).random((3, 6)), axis=1)
                       for b in range(len(X))])
    a = insdel.trace(g, None, None, orders)
    c = insdel.trace(ens.predict, X, R, orders)
    assert a.n_unique == 0
    for mo in ("insertion", "deletion"):
        np.testing.assert_allclose(a.curves[mo], c.curves[mo], rtol=0, atol=1e-9)
    np.testing.assert_allclose(a.fx, c.fx, atol=1e-9)
    np.testing.assert_allclose(a.fr, c.fr, atol=1e-9)
    pos = np.array([0, 2, 5, 6])
    a = insdel.trace(g, None, None, orders, positions=pos, modes=("deletion",))
    c = insdel.trace(ens.predict, X, R, orders, positions=pos, modes=("deletion",))
    np.testing.assert_allclose(a.curves["deletion"], c.curves["deletion"], atol=1e-9)
    A = {"d": X - R, "neg": R - X}
    eg = insdel.evaluate(g, None, None, A, n_random=3)
    em = insdel.evaluate(ens.predict, X, R, A, n_random=3)
    for mo in ("insertion", "deletion"):
        for meth in ("d", "neg", "random"):
            np.testing.assert_allclose(eg.abc_array(meth, mo), em.abc_array(meth, mo), rtol=0,
                                       atol=1e-9)
    np.testing.assert_allclose(shapley_values(g, None, None), shapley_values(ens.predict, X, R),
                               atol=1e-9)
    dg, dm = batch_decomposition(g, None, None), batch_decomposition(ens.predict, X, R)
    assert dg.n_evals == 0 and dm.n_evals > 0
    np.testing.assert_array_equal(dg.d, dm.d)
    for i in range(len(X)):
        np.testing.assert_allclose(dg.subspace_delta(i), dm.subspace_delta(i), atol=1e-9)
        np.testing.assert_allclose(dg.subspace_values(i), dm.subspace_values(i), atol=1e-9)
    for mo in ("insertion", "deletion"):
        np.testing.assert_allclose(dg.expected_abc(mode=mo), dm.expected_abc(mode=mo), atol=1e-9)
        np.testing.assert_allclose(g.expected_abc(mode=mo), dm.expected_abc(mode=mo), atol=1e-9)
        np.testing.assert_allclose(g.abc(orders, mode=mo), dm.abc(orders, mode=mo), atol=1e-9)
        np.testing.assert_allclose(g.auc(orders, mode=mo), dm.auc(orders, mode=mo), atol=1e-9)
        best = g.best_order(mode=mo)
        np.testing.assert_array_equal(best.order, dm.best_order(mode=mo))
        np.testing.assert_allclose(best.abc, dm.best_abc(mode=mo), atol=1e-9)
    np.testing.assert_allclose(dg.shapley(), g.shapley(), atol=1e-12)
    # ABC + ABC' and the interactions, as the decomposition reports them
    np.testing.assert_allclose(dg.abc_total(orders), dm.abc_total(orders), atol=1e-9)
    np.testing.assert_allclose(g.abc_total(orders), dm.abc_total(orders), atol=1e-9)
    # sampled Shapley values read the closed-form curves: the same orderings, the same numbers
    for a_, b_ in zip(sampled_shapley(g, None, None, n_orderings=6),
                      sampled_shapley(ens.predict, X, R, n_orderings=6), strict=True):
        np.testing.assert_allclose(a_, b_, atol=1e-9)
    # the metrics read the game's values
    names = ["deletion_abc", "insertion_abc", "pixel_flipping", "faithfulness_correlation",
             "monotonicity_arya", "selectivity"]
    mg = insdel.metrics.evaluate_metrics(g, None, None, A, metrics=names).wide()
    mm = insdel.metrics.evaluate_metrics(ens.predict, X, R, A, metrics=names).wide()
    assert list(mg.columns) == list(mm.columns)
    np.testing.assert_allclose(mg.to_numpy(float), mm.to_numpy(float), atol=1e-9)
    eff = g.nonzero_effects()
    for i in range(len(X)):
        want = [(t.features, t.delta) for t in dm.interactions(i, top=5) if abs(t.delta) > 1e-9]
        got = [(w, d) for w, d in eff.of(i) if len(w) >= 2][:len(want)]
        np.testing.assert_allclose([abs(d) for _, d in got], [abs(d) for _, d in want],
                                   atol=1e-9)
        assert {w: d for w, d in got}.keys() <= {w for w, _ in eff.of(i)}


def test_the_group_game_gives_the_black_box_numbers(finite_case):
    ens, X, R = finite_case
    groups = [[0, 1], [2], [3, 4, 5]]
    g = tree_game(ens, X, R, groups=groups)
    orders = np.stack([np.argsort(np.random.default_rng(b).random((2, 3)), axis=1)
                       for b in range(len(X))])
    a = insdel.trace(g, None, None, orders)
    c = insdel.trace(ens.predict, X, R, orders, groups=groups)
    np.testing.assert_allclose(a.curves["insertion"], c.curves["insertion"], atol=1e-9)
    np.testing.assert_allclose(shapley_values(g, None, None),
                               shapley_values(ens.predict, X, R, groups=groups), atol=1e-9)


def test_a_chunk_of_the_game_is_the_same_game(finite_case):
    ens, X, R = finite_case
    g = tree_game(ens, X, R)
    sub = g.subset(2, 5)
    assert sub.offset == 2 and sub.B == 3
    full = tree_game(ens, X[2:5], R[2:5])
    np.testing.assert_array_equal(sub.shapley(), full.shapley())
    np.testing.assert_array_equal(sub.v_all(), full.v_all())
    assert from_parts(**g.parts()) is g
    import pickle

    back = pickle.loads(pickle.dumps(g))  # what a Dask worker receives
    np.testing.assert_array_equal(back.subset(2, 5).shapley(), sub.shapley())
    np.testing.assert_allclose(g.shapley()[2:5], sub.shapley(), atol=0)


def test_nonzero_effects_at_any_n_and_their_orders():
    rng = np.random.default_rng(3)
    n = 40
    ens = ensemble_of(rng, n, n_trees=20, depth=5)
    X, R = pairs(rng, 3, n, nan=False)
    g = tree_game(ens, X, R)
    assert g.differing().sum(1).max() > DEFAULT_MAX_D
    with pytest.raises(ValueError, match=r"pair \d+ has \|D\| = \d+ .*nonzero_effects"):
        g.effects()
    eff = g.nonzero_effects()
    assert eff.orders().max() <= 5  # at most the depth: the distinct features on a path
    # the effects sum to f(x) (every Delta), and their Shapley shares give the Shapley values
    phi = g.shapley()
    for b in range(3):
        terms = eff.of(b)
        assert abs(sum(d for _, d in terms) - g.v_all()[b]) < 1e-9
        share = np.zeros(n)
        for w, d in terms:
            for j in w:
                share[j] += d / len(w)
        np.testing.assert_allclose(share, phi[b], atol=1e-9)
    top = g.nonzero_effects(top_k=3)
    for b in range(3):
        assert [abs(d) for _, d in top.of(b)] == [abs(d) for _, d in eff.of(b)][:3]
    low = g.nonzero_effects(max_order=1, top_k=4)
    assert all(len(w) <= 1 for b in range(3) for w, _ in low.of(b))
    assert all(len(low.of(b)) <= 4 for b in range(3))


def test_a_game_over_max_patterns_streams_its_pairs_in_chunks(finite_case):
    ens, X, R = finite_case
    whole = tree_game(ens, X, R)
    counts = pattern_counts(ens, X, R)[0]  # before merging
    g = tree_game(ens, X, R, max_patterns=int(counts.max()) + 1)  # one or two pairs per chunk
    assert g.patterns is None and len(g._bounds) > 2 and "streamed" in repr(g)
    orders = np.stack([np.argsort(np.random.default_rng(b).random((2, 6)), axis=1)
                       for b in range(len(X))])
    for name, args in (("shapley", ()), ("banzhaf", ()), ("v_all", ()), ("v_empty", ()),
                       ("expected_abc", ()), ("abc", (orders,)), ("abc_total", (orders,))):
        # the streamed game sums the leaves tree by tree, the held one its merged patterns
        np.testing.assert_allclose(getattr(g, name)(*args), getattr(whole, name)(*args),
                                   rtol=0, atol=1e-12)
    for mo in ("insertion", "deletion"):
        np.testing.assert_allclose(g.curves(orders)[mo], whole.curves(orders)[mo], rtol=0,
                                   atol=1e-12)
    for a_, b_ in zip(g.effects(), whole.effects(), strict=True):
        np.testing.assert_array_equal(a_, b_)
    keep = np.random.default_rng(0).random((20, 6)) < 0.5
    pairs_ = np.arange(20) % len(X)
    np.testing.assert_array_equal(g.values(pairs_, keep), whole.values(pairs_, keep))
    a_, b_ = g.nonzero_effects(top_k=5), whole.nonzero_effects(top_k=5)
    for f_ in ("off", "w_off", "units", "delta"):
        np.testing.assert_array_equal(getattr(a_, f_), getattr(b_, f_))
    for mo in ("insertion", "deletion"):
        bo, bw = g.best_order(mode=mo, max_d=4), whole.best_order(mode=mo, max_d=4)
        np.testing.assert_array_equal(bo.order, bw.order)
        np.testing.assert_allclose(bo.bound, bw.bound, rtol=0, atol=1e-12)
    np.testing.assert_allclose(g.subset(1, 4).shapley(), whole.shapley()[1:4], atol=1e-12)
    # a pair over the bound alone: the walk's questions stream it (nothing stored); only the
    # questions that need held patterns refuse it, naming it
    big = tree_game(ens, X, R, max_patterns=int(counts.max()) - 1)
    assert big.patterns is None
    np.testing.assert_allclose(big.curves(orders)["deletion"], whole.curves(orders)["deletion"],
                               rtol=0, atol=1e-12)
    for name in ("shapley", "expected_abc", "v_all"):
        np.testing.assert_allclose(getattr(big, name)(), getattr(whole, name)(), rtol=0,
                                   atol=1e-12)
    with pytest.raises(ValueError, match=r"pair \d+ alone"):
        big.effects()


def test_the_streamed_walk_grows_a_full_leaf_buffer(finite_case, monkeypatch):
    """The streamed route's leaf buffer, started at 2 leaves, doubles whenever a tree's leaves
    do not fit (the tree walked again): the same numbers, byte for byte, as a buffer that never
    fills."""
    from insdel.trees import _game_kernels

    ens, X, R = finite_case
    orders = np.stack([np.argsort(np.random.default_rng(b).random((3, 6)), axis=1)
                       for b in range(len(X))])

    def streamed():
        g = tree_game(ens, X, R, max_patterns=1)
        assert g.patterns is None
        return (g.curves(orders), g.shapley(), g.banzhaf(), g.expected_abc(), g.v_all(),
                g.v_empty())

    whole = streamed()
    assert int(pattern_counts(ens, X, R)[0].max()) > 2
    monkeypatch.setattr(_game_kernels, "LEAF_BUFFER", 2)
    small = streamed()
    for mo in ("insertion", "deletion"):
        np.testing.assert_array_equal(small[0][mo], whole[0][mo])
    for a_, b_ in zip(small[1:], whole[1:], strict=True):
        np.testing.assert_array_equal(a_, b_)


def test_a_streamed_game_counts_until_the_bound_and_walks_once(finite_case, monkeypatch):
    """A strided sample of the pairs decides whether they are held or streamed (the count stops
    there when it projects more than half the bound; otherwise at the first block of pairs over
    it), the chunks are planned on demand, and one walk gives the curves, E[ABC] and the
    Shapley values."""
    import insdel.trees.game as G

    ens, X, R = finite_case
    X, R = np.tile(X, (400, 1)), np.tile(R, (400, 1))  # 2,800 pairs: three blocks of 1,024
    cnt = pattern_counts(ens, X, R)
    mp = max(int((ens.feature < 0).sum()), int(cnt[0][:1024].sum()) - 1)
    assert cnt[0].sum() > mp
    counted = []
    real = G.pattern_counts
    monkeypatch.setattr(G, "pattern_counts", lambda e, X_, *a, **k: counted.append(len(X_))
                        or real(e, X_, *a, **k))
    walks = []
    real_fused = G.K.fused
    monkeypatch.setattr(G.K, "fused", lambda *a: walks.append(1) or real_fused(*a))
    g = tree_game(ens, X, R, max_patterns=mp)
    assert g.patterns is None and counted == [G.COUNT_SAMPLE] and g._chunk_plan is None
    # a sample that projects within half the bound: the pairs are counted block by block, up
    # to the first block over the bound (here the sampled pairs have x = r: one pattern a tree)
    sel = np.linspace(0, len(X) - 1, G.COUNT_SAMPLE).round().astype(np.int64)
    R2 = R.copy()
    R2[sel] = X[sel]
    cnt2 = pattern_counts(ens, X, R2)
    assert (cnt2[0][sel] == ens.n_trees).all()
    mp2 = 2 * ens.n_trees * len(X)  # the sample projects half of it
    assert cnt2[0][:2048].sum() <= mp2 < cnt2[0].sum()
    counted.clear()
    assert tree_game(ens, X, R2, max_patterns=mp2).patterns is None
    assert counted == [G.COUNT_SAMPLE, 1024, 1024, 752]
    counted.clear()
    held = tree_game(ens, X, R, max_patterns=3 * int(cnt[0].sum()))
    assert held.patterns is not None and counted == [G.COUNT_SAMPLE, 1024, 1024, 752]
    counted.clear()
    whole = tree_game(ens, X[:7], R[:7])
    orders = np.stack([np.argsort(np.random.default_rng(b).random((2, 6)), axis=1)
                       for b in range(len(X))])
    c = g.curves(orders)
    e, phi = g.expected_abc(), g.shapley()
    assert len(walks) == 1
    np.testing.assert_allclose(c["insertion"][:7], whole.curves(orders[:7])["insertion"],
                               atol=1e-12)
    np.testing.assert_allclose(e[:7], whole.expected_abc(), atol=1e-12)
    np.testing.assert_allclose(phi[7:14], whole.shapley(), atol=1e-12)
    assert g._bounds == G._plan(*cnt, mp) and counted[-1] == len(X)


def test_best_order_above_max_d_is_a_bound_and_a_local_search():
    rng = np.random.default_rng(5)
    n = 30
    ens = ensemble_of(rng, n, n_trees=15, depth=4)
    X, R = pairs(rng, 4, n, nan=False)
    g = tree_game(ens, X, R)
    for mo in ("insertion", "deletion"):
        best = g.best_order(mode=mo, max_d=5)
        assert not best.exact.any()
        np.testing.assert_allclose(best.abc, g.abc(best.order, mode=mo), atol=1e-9)
        assert (best.gap() >= -1e-12).all()
        shap_order = np.argsort(-g.shapley(), axis=1, kind="stable")
        assert (best.abc >= g.abc(shap_order, mode=mo) - 1e-12).all()
        rand = np.stack([np.argsort(rng.random((50, n)), axis=1) for _ in range(4)])
        assert (best.bound[:, None] >= g.abc(rand, mode=mo) - 1e-12).all()


# -- at n = 60: the black box cannot do exact Shapley values ----------------------------------
def from_sklearn(model, n):
    """A scikit-learn DecisionTree / RandomForest regressor as a TreeEnsemble (test helper)."""
    ests = getattr(model, "estimators_", None)
    trees = [model] if ests is None else list(ests)
    scale = 1.0 / len(trees)
    parts, roots, start = [], [], 0
    for est in trees:
        t = est.tree_
        leaf = t.children_left < 0
        shift = np.where(leaf, -1, start)
        miss = getattr(t, "missing_go_to_left", np.zeros(t.node_count, np.uint8))
        parts.append((np.where(leaf, -1, t.feature), t.threshold, t.children_left + shift + leaf,
                      t.children_right + shift + leaf, miss.astype(bool),
                      np.where(leaf, t.value[:, 0, 0] * scale, 0.0)))
        roots.append(start)
        start += t.node_count
    cat = [np.concatenate(c) for c in zip(*parts, strict=True)]
    N = start
    return TreeEnsemble(
        feature=cat[0].astype(np.int64), threshold=cat[1].astype(float),
        left=cat[2].astype(np.int64), right=cat[3].astype(np.int64), missing_left=cat[4],
        is_categorical=np.zeros(N, bool), cat_ptr=np.zeros(N + 1, np.int64),
        categories=np.zeros(0), value=cat[5].astype(float), cover=np.full(N, np.nan),
        roots=np.array(roots, np.int64), base=0.0, rule="le", n_features=n,
        source="sklearn (test helper)")


@pytest.fixture(scope="module")
def forest60():
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(0)
    n = 60
    Z = rng.normal(size=(400, n)).astype(np.float32).astype(float)
    y = Z[:, 0] * Z[:, 1] + np.sin(Z[:, 2]) + Z[:, :10].sum(1) + 0.1 * rng.normal(size=400)
    model = RandomForestRegressor(n_estimators=10, max_depth=6, random_state=0).fit(Z, y)
    return model, from_sklearn(model, n), Z


def test_the_sklearn_forest_converted_predicts_as_sklearn(forest60):
    model, ens, Z = forest60
    np.testing.assert_allclose(ens.predict(Z[:50]), model.predict(Z[:50]), rtol=0, atol=1e-9)


def test_shapley_at_n60_equals_shap_and_the_sampled_estimate(forest60):
    shap = pytest.importorskip("shap")
    model, ens, Z = forest60
    X, R = Z[:3], Z[3:6]
    g = tree_game(ens, X, R)
    assert (g.differing().sum(1) > DEFAULT_MAX_D).all()
    phi = g.shapley()
    np.testing.assert_allclose(phi.sum(1), model.predict(X) - model.predict(R), atol=1e-9)
    with pytest.raises(ValueError, match="max_d"):
        shapley_values(ens.predict, X, R)
    for b in range(3):
        ex = shap.TreeExplainer(model, R[b][None], feature_perturbation="interventional")
        sv = ex.shap_values(X[b][None], check_additivity=False)[0]
        np.testing.assert_allclose(phi[b], sv, rtol=1e-6, atol=1e-6)
    est, se = sampled_shapley(ens.predict, X, R, n_orderings=100, seed=1)
    z = np.abs(est - phi) / np.maximum(se, 1e-12)
    assert (z[se > 0] < 5).all() and np.abs(est - phi)[se == 0].max(initial=0) < 1e-9
    # the curves of the closed form and of the black box agree at n = 60
    orders = np.argsort(-phi, axis=1)
    a = insdel.trace(g, None, None, orders)
    c = insdel.trace(ens.predict, X, R, orders)
    np.testing.assert_allclose(a.curves["insertion"], c.curves["insertion"], atol=1e-9)


# -- checks ----------------------------------------------------------------------------------
def test_tree_game_names_bad_input(finite_case):
    ens, X, R = finite_case
    with pytest.raises(TypeError, match="TreeEnsemble"):
        tree_game(lambda Z: Z.sum(1), X, R)
    with pytest.raises(ValueError, match="n_features = 6"):
        tree_game(ens, X[:, :5], R[:, :5])
    with pytest.raises(ValueError, match="one reference per target"):
        tree_game(ens, X, R[:3])
    Xi = X.copy()
    Xi[2, 4] = np.inf
    with pytest.raises(ValueError, match="row 2, feature 4"):
        tree_game(ens, Xi, R)
    with pytest.raises(ValueError, match="max_patterns"):
        tree_game(ens, X, R, max_patterns=3).effects()
    named = TreeEnsemble(**{k: getattr(ens, k) for k in (
        "feature", "threshold", "left", "right", "missing_left", "is_categorical", "cat_ptr",
        "categories", "value", "cover", "roots", "base", "rule", "n_features")},
        feature_names=tuple("abcdef"))
    with pytest.raises(ValueError, match="do not match"):
        tree_game(named, X, R, feature_names=list("abcdeg"))
    gg = tree_game(named, X, R, groups={"ab": [0, 1]})
    assert gg.m == 5 and gg.unit_names == ["ab", "c", "d", "e", "f"]
    # NaN is a missing value, routed by the nodes; a 1-D reference serves every target
    Xn = X.copy()
    Xn[0, 0] = np.nan
    g = tree_game(ens, Xn, R[0])
    np.testing.assert_allclose(g.v_all(), ens.predict(Xn), atol=1e-12)
    np.testing.assert_allclose(g.v_empty(), ens.predict(np.repeat(R[:1], 7, 0)), atol=1e-12)


def test_default_max_d_is_the_decompositions():
    from insdel.decomposition import DEFAULT_MAX_D as DEC

    assert DEFAULT_MAX_D == DEC
    assert TreeGame.closed_form == frozenset(HOOKS)


def test_tree_game_of_a_fitted_model_and_its_refusals():
    from sklearn.ensemble import RandomForestRegressor

    from insdel.adapter import as_model
    from insdel.removal import build as build_removal
    from insdel.removal.trees import NoTreeGame, as_ensemble, is_ensemble, tree_game_of

    rng = np.random.default_rng(0)
    Xt = rng.normal(size=(60, 3))
    rf = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0)
    rf.fit(Xt, Xt[:, 0] + Xt[:, 1] * Xt[:, 2])
    X, R = Xt[:4], Xt[4:8]
    assert is_ensemble(rf) and is_ensemble(as_model(rf)) and not is_ensemble(None)
    assert not is_ensemble(lambda Z: Z.sum(1))
    ens = as_ensemble(rf, "tree_shap")
    assert isinstance(ens, TreeEnsemble) and as_ensemble(ens, "tree_shap") is ens
    with pytest.raises(TypeError, match="tree_shap applies only to tree ensembles"):
        as_ensemble(lambda Z: Z.sum(1), "tree_shap")
    base = build_removal("baseline")
    game = tree_game_of(rf, base, X, R, offset=3)
    assert isinstance(game, TreeGame) and game.offset == 3
    np.testing.assert_allclose(game.shapley(), shapley_values(rf.predict, X, R), atol=1e-10)
    with pytest.raises(NoTreeGame, match=r"not a tree ensemble insdel reads"):
        tree_game_of(lambda Z: Z.sum(1), base, X, R)
    with pytest.raises(NoTreeGame, match=r"removal 'training_mean' has no tree game"):
        tree_game_of(rf, build_removal("training_mean", data=Xt), X, R)
    marg = build_removal("marginal")
    with pytest.raises(NoTreeGame, match=r"reads R of shape \(B, K, n\)"):
        tree_game_of(rf, marg, X, R)
    # each target its own references: the mean of the baseline games of its pairs
    own = tree_game_of(rf, marg, X, np.stack([R, R[::-1]], axis=1), offset=2)
    assert type(own).__name__ == "MarginalPairsGame" and own.offset == 2
    np.testing.assert_allclose(own.shapley(), (tree_game_of(rf, base, X, R).shapley()
                                               + tree_game_of(rf, base, X, R[::-1]).shapley())
                               / 2, atol=1e-12)
    shared = np.broadcast_to(R[None], (4, 4, 3))
    mg = tree_game_of(rf, marg, X, shared)
    assert mg.B == 4 and mg.m == 3
    np.testing.assert_allclose(mg.v_empty(), np.full(4, rf.predict(R).mean()), atol=1e-10)
    np.testing.assert_allclose(mg.v_all(), rf.predict(X), atol=1e-10)


STUMP = [{"f": 0, "t": 0.5, "l": 1, "r": 2}, {"f": -1, "v": 1.0}, {"f": -1, "v": 2.0}]


def test_a_tree_ensemble_is_checked_when_built():
    import dataclasses

    from insdel.trees.ensemble import check_ensemble

    ens = build(STUMP, [0], 2)
    check_ensemble(ens)  # a valid ensemble passes
    bad = {"a split feature is >= n_features": [{**STUMP[0], "f": 2}, *STUMP[1:]],
           "TreeEnsemble.left: an internal node has no valid child": [{**STUMP[0], "l": 7},
                                                                       *STUMP[1:]],
           "a leaf is marked as a categorical split": [STUMP[0], {**STUMP[1], "cats": [1.0]},
                                                       STUMP[2]]}
    for why, nodes in bad.items():
        with pytest.raises(ValueError, match=why):
            build(nodes, [0], 2)
    with pytest.raises(ValueError, match="rule must be one of"):
        build(STUMP, [0], 2, rule="ge")
    with pytest.raises(ValueError, match="roots must be a non-empty"):
        build(STUMP, [], 2)
    with pytest.raises(ValueError, match=r"TreeEnsemble.value must be a \(3,\) float64 array"):
        dataclasses.replace(ens, value=np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="feature_names must have n_features names"):
        dataclasses.replace(ens, feature_names=["a"])


def test_tree_game_weights_fingerprint_and_rows():
    from insdel.trees._tree_game import (
        check_ensemble_rows,
        ensemble_sha256,
        prefix_weights,
        shapley_weights,
    )
    from insdel.trees.patterns import check_pattern_count

    W, V = shapley_weights(6), prefix_weights(6)
    f = math.factorial
    for d in range(1, 7):
        for s in range(d):
            assert W[d, s] == pytest.approx(f(s) * f(d - 1 - s) / f(d), rel=1e-12)
        assert W[d, d:].sum() == 0.0
        # the Shapley weights of the other d - 1 players' coalitions sum to 1 over them
        assert sum(math.comb(d - 1, s) * W[d, s] for s in range(d)) == pytest.approx(1.0)
    for d in range(7):
        for s in range(d + 1):
            assert V[d, s] == pytest.approx(f(s) * f(d - s) / f(d + 1), rel=1e-12)
    ens = build(STUMP, [0], 2)
    assert ensemble_sha256(ens) == ensemble_sha256(build(STUMP, [0], 2))
    assert ensemble_sha256(ens) != ensemble_sha256(build(STUMP, [0], 2, base=1.0))
    np.testing.assert_array_equal(check_ensemble_rows(ens, [1.0, np.nan], "game"),
                                  [[1.0, np.nan]])
    with pytest.raises(TypeError, match="game applies to tree ensembles"):
        check_ensemble_rows(lambda Z: Z, [[1.0, 2.0]], "game")
    with pytest.raises(ValueError, match=r"ensemble's 2 columns; got shape \(1, 3\)"):
        check_ensemble_rows(ens, [[1.0, 2.0, 3.0]], "game")
    with pytest.raises(ValueError, match="infinite"):
        check_ensemble_rows(ens, [[np.inf, 2.0]], "game")
    check_pattern_count(np.array([3, 4]), np.array([6, 8]), 7)  # within the limit: no error
    with pytest.raises(ValueError, match=r"the 2 pairs reach 8 leaf patterns \(pair 11 alone 5\)"
                                         r", more than max_patterns = 7"):
        check_pattern_count(np.array([3, 5]), np.array([6, 8]), 7, first=10)


def test_leaf_paths_and_direction_chunks_reproduce_the_prediction(monkeypatch):
    from insdel.trees import _paths

    nodes = [{"f": 0, "t": 0.5, "l": 1, "r": 2}, {"f": 1, "t": 0.5, "l": 3, "r": 4},
             {"f": -1, "v": 1.0}, {"f": -1, "v": 2.0}, {"f": -1, "v": 3.0},
             {"f": 1, "t": 0.0, "l": 6, "r": 7}, {"f": -1, "v": -1.0}, {"f": -1, "v": 5.0}]
    ens = build(nodes, [0, 5], 2, base=0.5)
    P = _paths.leaf_paths(ens)
    assert P.n_leaves == 5 and P.n_units == 2
    assert sorted(P.value.tolist()) == [-1.0, 1.0, 2.0, 3.0, 5.0]
    assert P.max_slots() == 2  # the paths through node 1 split on both features
    assert _paths.leaf_paths(ens, np.array([0, 0])).max_slots() == 1  # one unit: one slot
    with pytest.raises(ValueError, match=r"unit_of must be \(2,\) non-negative unit labels"):
        _paths.leaf_paths(ens, np.array([0]))
    Z = np.random.default_rng(0).normal(size=(7, 2))
    monkeypatch.setattr(_paths, "DIRECTION_BYTES", 3 * ens.n_nodes)  # chunks of 3 rows
    chunks = list(_paths.direction_chunks(ens, Z))
    assert [(lo, hi) for lo, hi, _ in chunks] == [(0, 3), (3, 6), (6, 7)]
    D = np.concatenate([d for _, _, d in chunks])
    pred = np.full(len(Z), ens.base)
    for ell in range(P.n_leaves):
        k = slice(P.node_ptr[ell], P.node_ptr[ell + 1])
        reached = (D[:, P.node[k]] == P.went_left[k]).all(axis=1)
        pred += np.where(reached, P.value[ell], 0.0)
    np.testing.assert_allclose(pred, ens.predict(Z), atol=0)


def test_merge_ragged_sums_equal_patterns_and_drops_zeros():
    from insdel.trees.patterns import merge_ragged

    # pair 0: E={0,1} twice (units in another order), E={2} R={0} with values that cancel;
    # pair 1: R={3}
    units = np.array([1, 0, 0, 1, 2, 0, 2, 0, 3], np.int64)
    u_off = np.array([0, 2, 4, 6, 8, 9], np.int64)
    n_e = np.array([2, 2, 1, 1, 0], np.int64)
    val = np.array([1.0, 2.0, 1.0, -1.0, 0.5])
    pat_off, o_uoff, o_ne, o_units, o_val = merge_ragged(np.array([0, 4, 5], np.int64), u_off,
                                                          n_e, units, val)
    assert pat_off.tolist() == [0, 1, 2]
    assert o_ne.tolist() == [2, 0] and o_val.tolist() == [3.0, 0.5]
    assert o_units[o_uoff[0]:o_uoff[1]].tolist() == [0, 1]  # sorted within E
    assert o_units[o_uoff[1]:o_uoff[2]].tolist() == [3]


def test_max_depth_and_pattern_counts():
    nodes = [{"f": 0, "t": 0.5, "l": 1, "r": 2}, {"f": 1, "t": 0.5, "l": 3, "r": 4},
             {"f": -1, "v": 1.0}, {"f": -1, "v": 2.0}, {"f": -1, "v": 3.0}, {"f": -1, "v": 7.0}]
    ens = build(nodes, [0, 5], 2)  # a depth-2 tree and a lone leaf
    assert ens.max_depth() == 2 and build(nodes[5:], [0], 2).max_depth() == 0
    X, R = np.array([[0.0, 0.0], [1.0, 1.0]]), np.array([[1.0, 1.0], [1.0, 1.0]])
    P = leaf_patterns(ens, X, R)
    np.testing.assert_array_equal(P.counts(), [len(P.of(0)), len(P.of(1))])
    assert P.of(1) == [((), (), 8.0)]  # x = r: one constant pattern, the sum of the leaves reached
