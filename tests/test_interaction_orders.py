"""Orderings that know interactions (insdel.decomposition.interaction_orders)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import insdel
from insdel.decomposition import (
    BatchDecomposition,
    bound_groups,
    gap_closed,
    greedy_orders,
    group_orders,
    interaction_orderings,
    order_scores,
    orderings_of_decomposition,
)


def _counterexample(A):
    """Paper §3.4: Delta_1 = 3, Delta_2 = 2, Delta_3 = 1, Delta_12 = A (features 0, 1, 2 here)."""
    d = np.zeros(8)
    d[0b001], d[0b010], d[0b100], d[0b011] = 3.0, 2.0, 1.0, A
    return BatchDecomposition.from_delta(d[None, :])


@pytest.mark.parametrize("A", [-1.9, -1.5, -1.1])
def test_counterexample_greedy_closes_the_whole_gap(A):
    dec = _counterexample(A)
    np.testing.assert_allclose(dec.shapley()[0], [3 + A / 2, 2 + A / 2, 1])
    res = orderings_of_decomposition(dec, k=2)
    np.testing.assert_array_equal(res.orders["shapley"][0], [0, 1, 2])
    np.testing.assert_array_equal(res.orders["best_insertion"][0], [0, 2, 1])
    np.testing.assert_array_equal(res.orders["greedy_insertion"][0], [0, 2, 1])
    assert dec.auc(res.orders["shapley"])[0] == pytest.approx(14 + 2 * A)
    assert dec.auc(res.orders["greedy_insertion"])[0] == pytest.approx(13 + A)
    g = res.gap_closed("insertion")
    assert g["greedy_insertion"][0] == pytest.approx(1.0)
    assert g["shapley"][0] == 0.0 and g["best_insertion"][0] == pytest.approx(1.0)
    # |A| < (3 + 2) / 2: the pair is not bound, so the group ordering is the Shapley ordering
    assert g["group"][0] == 0.0
    # binding 1 and 2 keeps them adjacent: still the Shapley ordering, no gap closed
    np.testing.assert_array_equal(group_orders(dec, bind=0.1)[0], [0, 1, 2])
    # deletion: the Shapley ordering is already best, so every gap is 0/0 (NaN by definition)
    gd = res.gap_closed("deletion")
    assert np.isnan(gd["greedy_deletion"][0])
    assert np.isnan(res.gap_closed("deletion", pooled=True)["group"])


def test_outside_the_window_shapley_is_best():
    dec = _counterexample(-0.5)
    res = orderings_of_decomposition(dec)
    assert np.isnan(res.gap_closed("insertion")["greedy_insertion"][0])
    np.testing.assert_array_equal(res.orders["greedy_insertion"][0], [0, 1, 2])


def _brute_greedy(g, n, insertion):
    N = (1 << n) - 1
    m, out, left = (0 if insertion else N), [], list(range(n))
    for _ in range(n):
        gains = [(g[m | (1 << j)] - g[m]) if insertion else (g[m] - g[m ^ (1 << j)]) for j in left]
        j = left[int(np.argmax(gains))]
        out.append(j)
        left.remove(j)
        m ^= 1 << j
    return out


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 6), seed=st.integers(0, 10_000))
def test_greedy_from_exact_values_matches_brute_force(n, seed):
    rng = np.random.default_rng(seed)
    dec = BatchDecomposition.from_delta(rng.normal(size=(2, 1 << n)))
    g = dec.full_values()
    for mode in ("insertion", "deletion"):
        o = greedy_orders(dec, k=None, mode=mode)
        for b in range(2):
            assert o[b].tolist() == _brute_greedy(g[b], n, mode == "insertion")
        # k >= n is the exact game
        np.testing.assert_array_equal(greedy_orders(dec, k=max(n, 1), mode=mode), o)
    # the best order is at least as good as every ordering (brute force over n!)
    best = dec.best_abc()
    perms = np.array(list(itertools.permutations(range(n))))
    allabc = dec.abc(np.broadcast_to(perms, (2, *perms.shape)))
    np.testing.assert_allclose(best, allabc.max(axis=1), atol=1e-12)


def test_greedy_with_units_outside_D():
    # unit 1 does not differ: its gain is 0, so it goes before the units that would lower f
    def f(Z):
        return Z[:, 0] - Z[:, 2]

    X = np.array([[1.0, 5.0, 1.0]])
    R = np.array([[0.0, 5.0, 0.0]])
    res = interaction_orderings(f, X, R)
    np.testing.assert_array_equal(res.orders["greedy_insertion"][0], [0, 1, 2])
    np.testing.assert_array_equal(res.orders["greedy_deletion"][0], [0, 1, 2])


def test_planted_products_are_bound_and_grouped():
    # f = x0 x3 + 0.2 x1 + 0.1 x2: units 0 and 3 only matter together
    def f(Z):
        return Z[:, 0] * Z[:, 3] + 0.2 * Z[:, 1] + 0.1 * Z[:, 2]

    dec = insdel.batch_decomposition(f, np.ones((1, 4)), np.zeros((1, 4)))
    lab = bound_groups(dec)
    assert lab[0].tolist() == [0, 1, 2, 0]
    np.testing.assert_array_equal(group_orders(dec)[0], [0, 3, 1, 2])
    # a pure product has no main effects: it binds at any strength
    assert bound_groups(dec, bind=1e9)[0].tolist() == [0, 1, 2, 0]
    assert bound_groups(_counterexample(-1.5), bind=1e9)[0].tolist() == [0, 1, 2]


def test_order_scores_reproduce_the_orderings_in_evaluate():
    rng = np.random.default_rng(0)

    def f(Z):
        return Z[:, 0] * Z[:, 1] - 0.5 * Z[:, 2] + Z[:, 1] * Z[:, 3] * Z[:, 4]

    X, R = rng.normal(size=(5, 5)), rng.normal(size=(5, 5))
    res = interaction_orderings(f, X, R, k=2)
    ev = insdel.evaluate(f, X, R, res.scores(), add_random=False, n_random=0)
    for mode in ("insertion", "deletion"):
        a = res.abc(mode)
        for name in res.names(mode):
            np.testing.assert_allclose(ev.abc_array(name, mode), a[name], atol=1e-10)
        best = res.decomposition.best_abc(mode=mode)
        for name in res.names(mode):
            assert (a[name] <= best + 1e-12).all()
    rows = res.summary()
    assert {r["ordering"] for r in rows} == set(res.orders)
    np.testing.assert_array_equal(np.sort(order_scores(res.orders["group"]), axis=1),
                                  np.tile(np.arange(1, 6.0), (5, 1)))


def test_gap_closed_definition():
    np.testing.assert_allclose(gap_closed([2.0, 1.0, 0.5], [1.0, 1.0, 1.0], [3.0, 1.0, 2.0]),
                               [0.5, np.nan, -0.5])
    assert gap_closed([2.0, 1.0], [1.0, 1.0], [3.0, 1.0], pooled=True) == pytest.approx(0.5)
    assert np.isnan(gap_closed([1.0], [1.0], [1.0], pooled=True))
    with pytest.raises(ValueError, match="one shape"):
        gap_closed([1.0], [1.0, 2.0], [1.0])


def test_bad_input_is_named():
    dec = _counterexample(-1.5)
    with pytest.raises(ValueError, match="k must"):
        greedy_orders(dec, k=0)
    with pytest.raises(TypeError, match="k must"):
        greedy_orders(dec, k=1.5)
    with pytest.raises(ValueError, match="bind must"):
        bound_groups(dec, bind=-1.0)
    with pytest.raises(ValueError, match="mode"):
        greedy_orders(dec, mode="up")
    with pytest.raises(ValueError, match="permutation"):
        order_scores(np.array([[0, 0, 1]]))
    with pytest.raises(ValueError, match="max_d"):
        interaction_orderings(lambda Z: Z.sum(1), np.ones((1, 5)), np.zeros((1, 5)), max_d=3)


def test_groups_and_removal_reach_the_decomposition():
    def f(Z):
        return Z[:, 0] * Z[:, 1] + Z[:, 2] - Z[:, 3] * Z[:, 4]

    rng = np.random.default_rng(2)
    X = rng.normal(size=(3, 5))
    res = interaction_orderings(f, X, np.zeros((3, 5)), groups=[[0, 1], [2], [3, 4]])
    assert res.decomposition.n == 3 and res.orders["greedy_insertion"].shape == (3, 3)
    # the group game: {0, 1} and {3, 4} are single players, so orders <= 1 are exact
    np.testing.assert_array_equal(res.orders["greedy_insertion"],
                                  res.orders["greedy_exact_insertion"])
    refs = rng.normal(size=(3, 2, 5))
    res = interaction_orderings(f, X, refs, removal="marginal")
    dec = insdel.batch_decomposition(f, X, refs, removal="marginal")
    np.testing.assert_allclose(res.decomposition.shapley(), dec.shapley())
    for name, o in res.orders.items():
        assert (np.sort(o, axis=1) == np.arange(5)).all(), name


def test_top_fraction_binds_the_strongest_pairs():
    # pairwise effects 3 (units 0, 1), 2 (units 2, 3) and 1 (units 1, 2), strong main effects
    n = 4
    d = np.zeros(1 << n)
    d[[1, 2, 4, 8]] = 10.0
    d[0b0011], d[0b1100], d[0b0110] = 3.0, -2.0, 1.0
    dec = BatchDecomposition.from_delta(d[None])
    assert bound_groups(dec)[0].tolist() == [0, 1, 2, 3]  # relative: nothing is strong enough
    assert bound_groups(dec, bind=1 / 3, bind_rule="top")[0].tolist() == [0, 0, 2, 3]
    assert bound_groups(dec, bind=0.5, bind_rule="top")[0].tolist() == [0, 0, 2, 2]
    assert bound_groups(dec, bind=1.0, bind_rule="top")[0].tolist() == [0, 0, 0, 0]
    assert bound_groups(dec, bind=0.0, bind_rule="top")[0].tolist() == [0, 1, 2, 3]
    res = orderings_of_decomposition(dec, bind=0.5, bind_rule="top")
    assert res.bind_rule == "top" and res.groups[0].tolist() == [0, 0, 2, 2]
    one = BatchDecomposition.from_delta(np.array([[0.0, 1.0]]))
    assert bound_groups(one, bind=1.0, bind_rule="top")[0].tolist() == [0]
    with pytest.raises(ValueError, match="bind_rule"):
        bound_groups(dec, bind_rule="strongest")
    with pytest.raises(ValueError, match="bind must"):
        bound_groups(dec, bind=1.5, bind_rule="top")
