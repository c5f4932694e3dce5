"""Interaction indices (insdel.interactions): every index and order against brute force from
its definition (not from the Möbius transform), efficiency, Shapley values, the result's
accessors and the errors."""

from __future__ import annotations

import itertools
from math import comb, factorial

import numpy as np
import pytest
from scipy.special import bernoulli

import insdel
from insdel.interactions import INDICES, InteractionResult, check_index, from_effects

TOL = 1e-12


def table_model(table: np.ndarray):
    """f(Z) = table[bitmask of Z's binary columns]: with X = 1 and R = 0 the game is the table."""
    n = int(table.size).bit_length() - 1

    def f(Z):
        return table[(np.asarray(Z) > 0.5).astype(np.int64) @ (1 << np.arange(n))]

    return f


def derivative(v, n, S, T):
    """Δ_S v(T) = sum_{L ⊆ S} (-1)^{|S| - |L|} v(T ∪ L) (T ∩ S = ∅), vectorised over T."""
    s = len(S)
    out = np.zeros(np.shape(T))
    for r in range(s + 1):
        for L in itertools.combinations(S, r):
            out += (-1) ** (s - r) * v[T | sum(1 << j for j in L)]
    return out


def subsets_outside(n, S):
    rest = [j for j in range(n) if j not in S]
    masks = np.array([sum(1 << j for j in c) for r in range(len(rest) + 1)
                      for c in itertools.combinations(rest, r)], dtype=np.int64)
    return masks, np.array([bin(t).count("1") for t in masks])


def sii(v, n, S):  # Grabisch & Roubens (1999)
    s = len(S)
    T, t = subsets_outside(n, S)
    w = np.array([factorial(n - x - s) * factorial(x) / factorial(n - s + 1) for x in t])
    return float(w @ derivative(v, n, S, T))


def bii(v, n, S):
    T, _ = subsets_outside(n, S)
    return float(derivative(v, n, S, T).sum() / 2 ** (n - len(S)))


def stii(v, n, S, k):  # Sundararajan et al. (2020), eq. (6)
    if len(S) < k:
        return float(derivative(v, n, S, np.array([0]))[0])
    T, t = subsets_outside(n, S)
    return float(k / n * (derivative(v, n, S, T) / np.array([comb(n - 1, x) for x in t])).sum())


def ksii(v, n, S, k):  # Bordt & von Luxburg (2023): Bernoulli aggregation of SII
    if not S:
        return float(v[0])
    B = bernoulli(k)
    rest = [j for j in range(n) if j not in S]
    return float(sum(B[ell] * sum(sii(v, n, tuple(sorted(S + W)))
                                  for W in itertools.combinations(rest, ell))
                     for ell in range(k - len(S) + 1)))


def design(n, k):
    subs = [S for r in range(k + 1) for S in itertools.combinations(range(n), r)]
    A = np.array([[float(all(T >> j & 1 for j in S)) for S in subs] for T in range(2 ** n)])
    return subs, A


def fsii(v, n, k):  # Tsai et al. (2023): Shapley-kernel weighted least squares, v(∅), v(N) kept
    subs, A = design(n, k)
    sizes = np.array([bin(T).count("1") for T in range(2 ** n)])
    inner = (sizes > 0) & (sizes < n)
    w = np.zeros(2 ** n)
    w[inner] = (n - 1) / np.array([comb(n, x) * x * (n - x) for x in sizes[inner]])
    C = A[[0, 2 ** n - 1]]
    p = len(subs)
    M = np.block([[2 * A.T @ (w[:, None] * A), C.T], [C, np.zeros((2, 2))]])
    rhs = np.concatenate([2 * A.T @ (w * v), v[[0, 2 ** n - 1]]])
    return dict(zip(subs, np.linalg.solve(M, rhs)[:p], strict=True))


def fbii(v, n, k):  # Tsai et al. (2023): unweighted least squares over every coalition
    subs, A = design(n, k)
    return dict(zip(subs, np.linalg.lstsq(A, v, rcond=None)[0], strict=True))


def brute(name, v, n, k):
    """subset -> value for every subset of size <= k, from the index's definition."""
    subs = [S for r in range(k + 1) for S in itertools.combinations(range(n), r)]
    if name == "FSII":
        return fsii(v, n, k)
    if name == "FBII":
        return fbii(v, n, k)
    one = {"Moebius": lambda S: float(derivative(v, n, S, np.array([0]))[0]),
           "SII": lambda S: sii(v, n, S), "SV": lambda S: sii(v, n, S) if S else float(v[0]),
           "BII": lambda S: bii(v, n, S), "BV": lambda S: bii(v, n, S),
           "STII": lambda S: stii(v, n, S, k), "k-SII": lambda S: ksii(v, n, S, k)}[name]
    return {S: one(S) for S in subs}


def game_table(n, seed):
    return np.random.default_rng(seed).normal(size=2 ** n)


CASES = [(n, k) for n in (1, 2, 3, 5) for k in range(1, n + 1)] + [(8, 1), (8, 2), (8, 3)]


@pytest.mark.parametrize(("name", "n", "k"), [
    (name, n, k) for name in INDICES for n, k in CASES
    if INDICES[name].fixed_order is None or k == 1])
def test_every_index_equals_its_definition(name, n, k):
    v = game_table(n, 10 * n + k)
    res = insdel.interactions(table_model(v), np.ones((1, n)), np.zeros((1, n)), index=name,
                              order=k)
    want = brute(name, v, n, k)
    got = res.to_dict(0)
    assert set(got) == set(want)
    scale = max(1.0, np.abs(v).max())
    for S, val in want.items():
        assert abs(got[S] - val) <= TOL * scale * 10, (S, got[S], val)


@pytest.mark.parametrize("name", ["SII", "k-SII", "STII", "FSII", "FBII", "BII"])
def test_null_units_outside_D_are_zero_and_the_rest_is_the_full_games(name):
    """A pair whose D is a strict subset: the indices of the full n-unit game (brute force over
    all n units) equal the ones read in D, and subsets touching a unit outside D are 0."""
    n, k = 6, 3
    v6 = game_table(n, 3)
    x = np.ones(n)
    r = np.array([0, 1, 0, 1, 0, 0.0])  # units 1 and 3 do not differ: null players
    f = table_model(v6)
    full = np.array([f(np.where([(T >> j) & 1 for j in range(n)], x, r)[None, :])[0]
                     for T in range(2 ** n)])
    res = insdel.interactions(f, x[None, :], r[None, :], index=name, order=k)
    assert res.d.tolist() == [4]
    want = brute(name, full, n, k)
    for S, val in want.items():
        assert abs(res.get(0, S) - val) <= 1e-11, (S, res.get(0, S), val)
        if 1 in S or 3 in S:
            assert S not in res.to_dict(0)


@pytest.mark.parametrize("name", ["k-SII", "STII", "FSII", "SV"])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_efficient_indices_sum_to_v_all_minus_v_empty(name, k):
    rng = np.random.default_rng(k)
    f = lambda Z: Z[:, 0] * Z[:, 1] * Z[:, 2] + np.sin(Z[:, 3]) * Z[:, 4] + Z[:, 5] ** 2  # noqa: E731
    X, R = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    res = insdel.interactions(f, X, R, index=name, order=None if name == "SV" else k)
    np.testing.assert_allclose(res.sums(), res.v_all - res.v_empty, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.v_all - res.v_empty, f(X) - f(R), atol=1e-12)


@pytest.mark.parametrize("removal", [None, "marginal"])
def test_shapley_order_one_equals_shapley_values(removal):
    rng = np.random.default_rng(7)
    f = lambda Z: Z[:, 0] * Z[:, 1] + np.cos(Z[:, 2]) * Z[:, 3] + Z[:, 4]  # noqa: E731
    X = rng.normal(size=(5, 5))
    R = rng.normal(size=(5, 5)) if removal is None else rng.normal(size=(5, 3, 5))
    want = insdel.shapley_values(f, X, R, removal=removal)
    for name, order in (("SV", None), ("SII", 1), ("k-SII", 1), ("STII", 1), ("FSII", 1)):
        res = insdel.interactions(f, X, R, index=name, order=order, removal=removal)
        np.testing.assert_allclose(res.values(1), want, atol=1e-12, err_msg=name)


def test_k_sii_of_full_order_is_the_moebius_transform():
    rng = np.random.default_rng(2)
    delta = rng.normal(size=(3, 2 ** 5))
    dsz = np.full(3, 5)
    Dflat = np.tile(np.arange(5), 3)
    doff = np.arange(4) * 5
    a = from_effects(dsz, Dflat, doff, delta.ravel(), index="k-SII", order=5)
    b = from_effects(dsz, Dflat, doff, delta.ravel(), index="Moebius", order=5)
    np.testing.assert_allclose(a._values, b._values, atol=1e-13)


def test_from_decomposition_reads_the_same_numbers_without_evaluating():
    rng = np.random.default_rng(3)
    f = lambda Z: Z[:, 0] * Z[:, 1] * Z[:, 2] + Z[:, 3]  # noqa: E731
    X, R = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    dec = insdel.batch_decomposition(f, X, R)
    a = insdel.interactions.from_decomposition(dec, index="FSII", order=2)
    b = insdel.interactions(f, X, R, index="FSII", order=2)
    np.testing.assert_allclose(a.values(2), b.values(2), atol=1e-14)
    one = insdel.interactions.from_decomposition(dec[1], index="FSII", order=2)
    np.testing.assert_allclose(one.values(2)[0], b.values(2)[1], atol=1e-14)


def test_result_accessors():
    rng = np.random.default_rng(4)
    f = lambda Z: Z[:, 0] * Z[:, 1] + Z[:, 2]  # noqa: E731
    X = rng.normal(size=(2, 3))
    R = X.copy()
    R[0] = rng.normal(size=3)
    R[1, 0] = 0.0  # pair 1: only unit 0 differs
    res = insdel.interactions(f, X, R, index="SII", order=2, feature_names=["a", "b", "c"])
    assert isinstance(res, InteractionResult) and res.units == ["a", "b", "c"]
    assert res.d.tolist() == [3, 1]
    M = res.matrix(0)
    assert M.shape == (3, 3) and np.allclose(M, M.T)
    assert M[0, 1] == pytest.approx(res.get(0, ("a", "b")))
    assert M[0, 0] == pytest.approx(res.get(0, [0]))
    assert res.get(1, (0, 1)) == 0.0 and (0, 1) not in res.to_dict(1)
    df = res.to_frame()
    assert list(df.columns) == ["pair", "subset", "size", "value"]
    assert len(df) == 7 + 2 and df.attrs["index"] == "SII"
    assert res.values(0).shape == (2,) and res.values(2).shape == (2, 3, 3)
    assert res.standard_errors(1).shape == (2, 3) and not res.standard_errors(1).any()
    assert res.standard_error(0, ("a", "b")) == 0.0  # an exact result has no error
    with pytest.raises(ValueError, match="above this result's order"):
        res.get(0, (0, 1, 2))
    with pytest.raises(ValueError, match="unknown unit"):
        res.get(0, ("z",))
    with pytest.raises(ValueError, match="order must be 0, 1 or 2"):
        res.values(3)


def test_order_above_a_pairs_D_is_exact_zeros_and_above_m_is_an_error():
    f = lambda Z: Z[:, 0] * Z[:, 1] + Z[:, 2] * Z[:, 3]  # noqa: E731
    X, R = np.ones((1, 4)), np.array([[0.0, 0.0, 1.0, 1.0]])  # |D| = 2
    res = insdel.interactions(f, X, R, index="k-SII", order=4)
    assert res.order == 4 and max(len(S) for S in res.to_dict(0)) == 2
    assert res.get(0, (0, 1, 2)) == 0.0
    with pytest.raises(ValueError, match="above the number of units m = 4"):
        insdel.interactions(f, X, R, order=5)
    with pytest.raises(ValueError, match="has order 1"):
        insdel.interactions(f, X, R, index="SV", order=2)


def test_misspelt_index_says_did_you_mean():
    with pytest.raises(insdel.UnknownNameError, match="Did you mean 'k-SII'"):
        insdel.interactions(lambda Z: Z.sum(1), np.ones((1, 3)), np.zeros((1, 3)),
                            index="k-SIII")
    assert check_index("n-sv").name == "k-SII" and check_index("faith-shap").name == "FSII"


def test_above_max_d_without_sampling_names_max_d_and_the_option():
    f = lambda Z: Z.prod(1)  # noqa: E731
    X, R = np.ones((2, 6)), np.zeros((2, 6))
    with pytest.raises(ValueError, match=r"max_d = 4.*max_d=6.*n_samples=N"):
        insdel.interactions(f, X, R, max_d=4)
    with pytest.raises(ValueError, match="'FSII' has no sampled estimator"):
        insdel.interactions(f, X, R, index="FSII", max_d=4)


def test_the_package_is_its_front_door():
    import insdel.interactions as module

    assert callable(module) and module.interactions is not None
    assert insdel.interactions is module


@pytest.mark.parametrize("name", ["SV", "SII", "k-SII", "STII", "BII", "BV"])
def test_sampled_estimates_agree_with_the_exact_values_within_their_standard_errors(name):
    rng = np.random.default_rng(0)
    f = lambda Z: Z[:, 0] * Z[:, 1] + np.sin(Z[:, 2]) * Z[:, 3] + Z[:, 4] ** 2 * Z[:, 5]  # noqa: E731
    X, R = rng.normal(size=(2, 7)), rng.normal(size=(2, 7))
    exact = insdel.interactions(f, X, R, index=name)
    est = insdel.interactions(f, X, R, index=name, max_d=3, n_samples=600, seed=1)
    assert not est.exact and exact.exact and est.n_samples == 600
    assert est.method == INDICES[name].estimator
    assert est.standard_errors(est.order).any()
    se1 = est.standard_errors(1)
    assert [est.standard_error(1, [j]) for j in range(7)] == pytest.approx(se1[1], abs=0)
    for order in range(exact.order + 1):
        err = np.abs(est.values(order) - exact.values(order))
        assert (err <= 5 * est.standard_errors(order) + 1e-9).all(), (order, err.max())
    again = insdel.interactions(f, X, R, index=name, max_d=3, n_samples=600, seed=1)
    np.testing.assert_array_equal(again.values(1), est.values(1))
    if name == "STII":  # the orders below k are exact Möbius coefficients
        np.testing.assert_allclose(est.values(1), exact.values(1), atol=1e-12)
        assert not est.standard_errors(1).any()


class EffectsGame(insdel.game.Game):
    """A game that knows its effects in closed form and refuses to be evaluated."""

    closed_form = frozenset({"effects"})

    def __init__(self, delta, n):
        self.X = np.zeros((1, n))
        self.delta = np.asarray(delta, float)

    def _values(self, pairs, keep, clock):
        raise AssertionError("a game with effects is never evaluated")

    def effects(self):
        n = self.n
        return (np.array([n]), np.arange(n), np.array([0, n]), self.delta)


def test_a_game_with_closed_form_effects_is_read_exactly_at_any_size_without_evaluation():
    n = 7
    delta = np.random.default_rng(9).normal(size=2 ** n)
    res = insdel.interactions(EffectsGame(delta, n), index="FSII", order=3, max_d=2)
    assert res.exact and res.n_evals == 0
    v = insdel.decomposition.zeta(delta)
    want = brute("FSII", v, n, 3)
    for S, val in want.items():
        assert abs(res.get(0, S) - val) <= 1e-11
    assert res.v_all[0] == pytest.approx(v[-1]) and res.v_empty[0] == pytest.approx(v[0])


def test_index_names_are_the_canonical_indices():
    from insdel.interactions.indices import index_names

    names = index_names()
    assert names == list(INDICES) and {"SV", "SII", "k-SII", "STII", "FSII", "BII", "BV"} <= set(names)
    assert all(check_index(n).name == n for n in names)
    names.append("mine")  # a copy: the registry is unchanged
    assert "mine" not in index_names()
