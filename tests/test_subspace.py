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
    ks, info = insdel.attribute(f, X, R, "kernel_shap", n_samples=2000, engine="insdel",
                                return_info=True)
    assert info["exact"].tolist() == [True, True, False, True] and info["exact_pairs"] == 3
    np.testing.assert_allclose(ks[[0, 1, 3]], exact[[0, 1, 3]], atol=1e-12)
    assert np.abs(ks[2] - exact[2]).max() > 1e-9  # sampled: close, not exact
    assert np.abs(ks[2] - exact[2]).mean() < 0.1 * np.abs(exact[2]).mean() + 1e-3
    never = insdel.attribute(f, X, R, "kernel_shap", n_samples=2000, engine="insdel",
                             exact="never")
    assert np.abs(never[0] - exact[0]).max() > 1e-9
