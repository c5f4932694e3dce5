"""Exact Shapley in each pair's differing subspace D (issue 13): equal to the full-space result,
exact at n = 38 against brute force over D, and Kernel SHAP's exact road."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import insdel
from insdel.decomposition import shapley_values, subspace_shapley


def _model(n, seed=0):
    rng = np.random.default_rng(seed)
    w, v = rng.normal(size=n), rng.normal(size=n)

    def f(Z):
        return np.tanh(Z @ w) + 0.3 * (Z @ v) ** 2 / n + Z[:, 0] * Z[:, -1]

    return f


def _pairs_with_D(B, n, sizes, rng):
    X = rng.normal(size=(B, n))
    R = X.copy()
    for b, k in enumerate(sizes):
        D = rng.choice(n, size=k, replace=False)
        R[b, D] = rng.normal(size=k)
    return X, R


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_subspace_equals_full_space(n, seed):
    rng = np.random.default_rng(seed)
    sizes = [0, 1, n] + list(rng.integers(0, n + 1, size=3))  # D empty, |D| = 1, D = all, random
    X, R = _pairs_with_D(len(sizes), n, sizes, rng)
    f = _model(n, seed)
    phi, d = subspace_shapley(f, X, R)
    np.testing.assert_array_equal(d, (X != R).sum(1))
    np.testing.assert_allclose(phi, shapley_values(f, X, R), atol=1e-10)
    np.testing.assert_allclose(phi.sum(1), f(X) - f(R), atol=1e-10)
    assert np.all(phi[X == R] == 0)  # features outside D get 0


def _brute_over_D(f, x, r):
    D = np.flatnonzero(x != r)
    k = D.size
    phi = np.zeros(x.shape[0])
    subsets = np.array(list(itertools.product([0, 1], repeat=k)), bool)
    Z = np.tile(r, (len(subsets), 1))
    for i, j in enumerate(D):
        Z[subsets[:, i], j] = x[j]
    v = dict(zip(map(tuple, subsets), f(Z), strict=True))
    for s, val in v.items():
        m = sum(s)
        for i in range(k):
            if not s[i]:
                w = math.factorial(m) * math.factorial(k - m - 1) / math.factorial(k)
                t = list(s)
                t[i] = True
                phi[D[i]] += w * (v[tuple(t)] - val)
    return phi


def test_n38_with_14_differing_features_against_brute_force():
    rng = np.random.default_rng(7)
    n = 38
    X, R = _pairs_with_D(2, n, [14, 9], rng)
    f = _model(n, 1)
    phi, d = subspace_shapley(f, X, R, max_d=14)
    assert d.tolist() == [14, 9]
    for b in range(2):
        np.testing.assert_allclose(phi[b], _brute_over_D(f, X[b], R[b]), atol=1e-10)


def test_max_d_error_names_pair_and_cost():
    rng = np.random.default_rng(0)
    X, R = _pairs_with_D(3, 30, [5, 25, 6], rng)
    with pytest.raises(ValueError, match=r"pair 1 differs in \|D\| = 25 features \(> max_d = 20\)"
                                         r": .*2\*\*25 = 33,554,432 model evaluations"):
        subspace_shapley(_model(30), X, R, max_d=20)


def test_kernel_shap_takes_the_exact_road_when_cheaper():
    rng = np.random.default_rng(3)
    n = 38
    X, R = _pairs_with_D(4, n, [6, 10, 12, 3], rng)
    f = _model(n, 2)
    exact = insdel.attribute(f, X, R, "exact_shapley")
    ks, info = insdel.attribute(f, X, R, "kernel_shap", n_samples=2000, backend="insdel",
                                return_info=True)
    assert info["exact"].tolist() == [True, True, False, True] and info["exact_pairs"] == 3
    np.testing.assert_allclose(ks[[0, 1, 3]], exact[[0, 1, 3]], atol=1e-12)
    assert np.abs(ks[2] - exact[2]).max() > 1e-9  # sampled: close, not exact
    assert np.abs(ks[2] - exact[2]).mean() < 0.1 * np.abs(exact[2]).mean() + 1e-3
    never = insdel.attribute(f, X, R, "kernel_shap", n_samples=2000, backend="insdel",
                             exact="never")
    assert np.abs(never[0] - exact[0]).max() > 1e-9


# -- every exact computation of the decomposition in D (issue 13, "Work in D") ---------------------
def _full_space(f, x, r):
    """The old 2^n route for one pair: g over all 2^n bitmasks, Delta by the Möbius transform."""
    n = x.shape[0]
    g = f(insdel.hybrid(x, r, np.arange(1 << n)))
    return g, insdel.decomposition.mobius(g)


def _popcounts(n):
    return np.array([bin(u).count("1") for u in range(1 << n)])


def _full_space_best(g, n, mode):
    """Best chain sum over all 2^n subsets (the full-space DP, layer by layer in NumPy)."""
    N = 1 << n
    h = g if mode == "insertion" else -g[(N - 1) ^ np.arange(N)]  # deletion: moved set C -> D \ C
    sizes = _popcounts(n)
    V = np.full(N, -np.inf)
    V[0] = h[0]
    u_all = np.arange(N)
    for k in range(1, n + 1):
        U = u_all[sizes == k]
        cand = np.full(U.size, -np.inf)
        for j in range(n):
            has = (U >> j) & 1 == 1
            cand[has] = np.maximum(cand[has], V[U[has] ^ (1 << j)])
        V[U] = h[U] + cand
    return V[N - 1] if mode == "insertion" else -V[N - 1]


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_every_exact_quantity_in_D_equals_the_full_space_route(n, seed):
    rng = np.random.default_rng(seed)
    sizes = [0, 1, n] + list(rng.integers(0, n + 1, size=2))  # D empty, |D| = 1, D = all, random
    B = len(sizes)
    X, R = _pairs_with_D(B, n, sizes, rng)
    f = _model(n, seed)
    dec = insdel.batch_decomposition(f, X, R, batch_size=37)
    d = (X != R).sum(1)
    np.testing.assert_array_equal(dec.d, d)
    assert dec.n_evals == int(np.sum(2 ** d))  # 2^|D| per pair, nothing padded
    full = [_full_space(f, X[b], R[b]) for b in range(B)]
    G = np.array([g for g, _ in full])
    Dl = np.array([dl for _, dl in full])
    tol = dict(rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(dec.full_values(), G, **tol)
    np.testing.assert_allclose(dec.full_delta(), Dl, **tol)
    # Shapley from the full-space dividends
    sz = _popcounts(n)
    member = (np.arange(1 << n)[:, None] >> np.arange(n)) & 1
    phi_full = (Dl[:, 1:] / sz[1:]) @ member[1:]
    np.testing.assert_allclose(dec.shapley(), phi_full, **tol)
    assert np.all(dec.shapley()[X == R] == 0)
    # Theorem 1 / Appendix B.1 with full orderings (features outside D keep their positions)
    orders = np.array([[rng.permutation(n) for _ in range(3)] for _ in range(B)])
    tr = insdel.trace(f, X, R, orders)
    ins, dele = tr.curves["insertion"], tr.curves["deletion"]
    np.testing.assert_allclose(dec.auc(orders), insdel.auc(ins), **tol)
    np.testing.assert_allclose(dec.auc(orders, mode="deletion"), insdel.auc(dele), **tol)
    np.testing.assert_allclose(dec.abc(orders), insdel.abc(ins), **tol)
    np.testing.assert_allclose(dec.abc(orders, mode="deletion"),
                               insdel.abc(dele, mode="deletion"), **tol)
    np.testing.assert_allclose(dec.abc_total(orders),
                               insdel.abc(ins) + insdel.abc(dele, mode="deletion"), **tol)
    # E[ABC] by the closed form on the full-space dividends (Proposition 1 with the full n)
    w = (n + 1) / 2 * (1 - sz) / (sz + 1.0)
    w[0] = 0
    np.testing.assert_allclose(dec.expected_abc(normalize=False), Dl @ w, **tol)
    np.testing.assert_allclose(dec.expected_abc(mode="deletion"), -dec.expected_abc(), **tol)
    # best ordering: the subspace DP reaches the full-space optimum, and its ordering attains it
    for mode in ("insertion", "deletion"):
        ref = np.array([_full_space_best(G[b], n, mode) for b in range(B)])
        np.testing.assert_allclose(dec.best_auc(mode=mode), ref, **tol)
        bo = dec.best_order(mode=mode)
        assert np.all(np.sort(bo, axis=1) == np.arange(n))
        np.testing.assert_allclose(dec.auc(bo, mode=mode), ref, **tol)
        traced = insdel.trace(f, X, R, bo, modes=(mode,)).curves[mode][:, 0]
        np.testing.assert_allclose(insdel.abc(traced, mode=mode), dec.best_abc(mode=mode), **tol)
    # interactions: only u ⊆ D, the same terms as the full-space ranking
    for b in range(B):
        top = dec[b].interactions(top=5)
        big = np.sort(np.abs(Dl[b][sz >= 2]))[::-1][:len(top)]
        np.testing.assert_allclose([abs(t.delta) for t in top], big, **tol)
        Dset = set(np.flatnonzero(X[b] != R[b]).tolist())
        assert all(set(t.features) <= Dset and t.mask == sum(1 << j for j in t.features)
                   for t in top)
        assert len(top) == min(5, 2 ** d[b] - d[b] - 1)
    # dedup=False (D = all features) is the full-space route and gives the same numbers
    if n <= 8:
        alld = insdel.batch_decomposition(f, X, R, dedup=False)
        assert alld.n_evals == B << n and np.all(alld.d == n)
        np.testing.assert_allclose(alld.shapley(), dec.shapley(), **tol)
        np.testing.assert_allclose(alld.abc(orders), dec.abc(orders), **tol)
        np.testing.assert_allclose(alld.best_abc(), dec.best_abc(), **tol)


def test_n38_decomposition_with_14_differing_features_against_brute_force():
    rng = np.random.default_rng(11)
    n = 38
    X, R = _pairs_with_D(3, n, [14, 9, 0], rng)
    f = _model(n, 4)
    dec = insdel.batch_decomposition(f, X, R)
    assert dec.d.tolist() == [14, 9, 0] and dec.n_evals == 2**14 + 2**9 + 1
    phi = dec.shapley()
    for b in range(3):
        np.testing.assert_allclose(phi[b], _brute_over_D(f, X[b], R[b]), atol=1e-10)
    # areas of full orderings by Theorem 1 against traced curves
    orders = np.array([[rng.permutation(n) for _ in range(4)] for _ in range(3)])
    tr = insdel.trace(f, X, R, orders)
    for mode in ("insertion", "deletion"):
        c = tr.curves[mode]
        np.testing.assert_allclose(dec.auc(orders, mode=mode), insdel.auc(c), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(dec.abc(orders, mode=mode), insdel.abc(c, mode=mode),
                                   rtol=1e-9, atol=1e-9)
    # E[ABC] against the mean over random orderings (Monte Carlo, 4 standard errors)
    rand = np.array([rng.permutation(n) for _ in range(1500)])
    tr = insdel.trace(f, X[:1], R[:1], rand[None])
    for mode in ("insertion", "deletion"):
        a = insdel.abc(tr.curves[mode][0], mode=mode)
        assert abs(a.mean() - dec.expected_abc(mode=mode)[0]) < 4 * a.std(ddof=1) / np.sqrt(a.size)
    # best order: traced, it attains best_abc; no random or Shapley ordering beats it
    for mode in ("insertion", "deletion"):
        bo = dec.best_order(mode=mode)
        c = insdel.trace(f, X, R, bo, modes=(mode,)).curves[mode][:, 0]
        np.testing.assert_allclose(insdel.abc(c, mode=mode), dec.best_abc(mode=mode), atol=1e-10)
        others = np.concatenate([insdel.orderings(phi)[:, None], orders], axis=1)
        assert np.all(dec.abc(others, mode=mode) <= dec.best_abc(mode=mode)[:, None] + 1e-12)
    # the full 2^38 layout is refused, the subspace accessors work
    with pytest.raises(ValueError, match=r"2\*\*38 = 274,877,906,944 entries per pair.*subspace"):
        dec.full_delta()
    with pytest.raises(ValueError, match="n = 38 > 22"):
        _ = dec.values
    assert dec.subspace_delta(1).shape == (2**9,) and dec.D(2).size == 0
    np.testing.assert_array_equal(dec[0].D, np.flatnonzero(X[0] != R[0]))
    assert dec[0].subspace_values[-1] == pytest.approx(f(X[:1])[0])
    assert dec[2].best_abc() == pytest.approx(0, abs=1e-12) and dec[2].expected_abc() == 0
    np.testing.assert_array_equal(dec[2].best_order(), np.arange(n))
    assert len(dec[0].interactions(top=4)) == 4
    np.testing.assert_allclose(insdel.shapley_values(f, X, R), phi, atol=1e-12)


@pytest.mark.parametrize("mode", ["insertion", "deletion"])
def test_best_order_places_features_outside_D_after_those_inside(mode):
    # f increasing in every feature (an increasing function of an additive model): the curve is
    # monotone along every chain, so the documented tie rule puts D first, then the rest by index.
    n = 9
    rng = np.random.default_rng(5)
    beta = rng.uniform(0.5, 2, size=n)

    def f(Z):
        return np.tanh(Z @ beta / 4)

    X, R = _pairs_with_D(4, n, [4, 1, 7, 0], rng)
    R = np.where(X != R, X - rng.uniform(0.5, 1.5, size=X.shape), R)  # x above r on D
    dec = insdel.batch_decomposition(f, X, R)
    bo = dec.best_order(mode=mode)
    for b in range(4):
        D = np.flatnonzero(X[b] != R[b])
        assert set(bo[b, :D.size].tolist()) == set(D.tolist())
        np.testing.assert_array_equal(bo[b, D.size:], np.setdiff1d(np.arange(n), D))
        g, _ = _full_space(f, X[b], R[b])
        assert dec.best_auc(mode=mode)[b] == pytest.approx(_full_space_best(g, n, mode), abs=1e-12)


def test_best_order_moves_outside_features_to_the_overshoot_when_that_is_better():
    # g(∅) = 0, g({0}) = 10, g({1}) = 0, g({0, 1}) = 1; feature 2 is outside D. The insertion
    # curve peaks inside the chain, so feature 2 is placed at the peak: (0, 2, 1), not (0, 1, 2).
    def f(Z):
        return 10 * Z[:, 0] - 9 * Z[:, 0] * Z[:, 1] + 0 * Z[:, 2]

    x, r = np.array([1.0, 1.0, 5.0]), np.array([0.0, 0.0, 5.0])
    d = insdel.anchored_decomposition(f, x, r)
    perms = np.array(list(itertools.permutations(range(3))))
    tr = insdel.trace(f, x[None], r[None], perms[None])
    for mode in ("insertion", "deletion"):
        every = insdel.abc(tr.curves[mode][0], mode=mode)
        assert d.best_abc(mode=mode) == pytest.approx(every.max(), abs=1e-12)
        assert d.abc(d.best_order(mode=mode), mode=mode) == pytest.approx(every.max(), abs=1e-12)
    np.testing.assert_array_equal(d.best_order(), [0, 2, 1])
    assert d.best_auc() == pytest.approx(0 + 10 + 10 + 1)
    # deletion: the smallest value is reached at the end (g(∅) = 0), so the rule puts it last
    np.testing.assert_array_equal(d.best_order(mode="deletion"), [0, 1, 2])


def test_max_d_is_on_D_not_n_and_its_error_names_pair_D_time_and_memory():
    rng = np.random.default_rng(2)
    n = 30
    X, R = _pairs_with_D(4, n, [3, 25, 22, 2], rng)
    f = _model(n)
    with pytest.raises(ValueError) as e:
        insdel.batch_decomposition(f, X, R)
    msg = str(e.value)
    assert msg.startswith("pair 1 differs in |D| = 25 features (> max_d = 20): of its n = 30 ")
    assert "2**25 = 33,554,432 model evaluations, about " in msg
    assert " of model time on this machine" in msg  # measured on one 4,096-row call
    assert "512.0 MiB for the values g(u) and Delta_u" in msg  # memory
    assert "2 pairs exceed max_d; the largest is pair 1 with |D| = 25" in msg
    assert "pass max_d=25" in msg
    with pytest.raises(ValueError, match=r"pair 1 differs in \|D\| = 22 features \(> max_d = 21\)"):
        insdel.shapley_values(f, X[[0, 2]], R[[0, 2]], max_d=21)
    with pytest.raises(ValueError, match=r"pair 1 differs in \|D\| = 3 features \(> max_d = 2\)"):
        insdel.batch_decomposition(f, X[[3, 0]], R[[3, 0]], max_d=2)
    with pytest.raises(ValueError, match=r"pair 0 differs in \|D\| = 3 features \(> max_d = 2\)"):
        insdel.anchored_decomposition(f, X[0], R[0], max_d=2)
    with pytest.raises(ValueError, match=r"pair 2 differs in \|D\| = 22 .*exact Shapley"):
        subspace_shapley(f, X, R, pairs=np.array([0, 2]), max_d=21)
    with pytest.raises(ValueError, match="max_d must be an integer >= 0"):
        insdel.batch_decomposition(f, X[:1], R[:1], max_d=-1)
    with pytest.raises(TypeError):
        insdel.batch_decomposition(f, X[:1], R[:1], max_n=30)  # the old keyword is gone
    # n = 30 > 22 is fine when |D| is small
    dec = insdel.batch_decomposition(f, X[[0, 3]], R[[0, 3]])
    assert dec.n_evals == 2**3 + 2**2
    np.testing.assert_allclose(dec.shapley().sum(1), f(X[[0, 3]]) - f(R[[0, 3]]), atol=1e-12)
