"""The order-k surrogate curves of Theorem 1 (insdel.decomposition.surrogate)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import insdel
from insdel.decomposition import (
    BatchDecomposition,
    pairwise_effects,
    surrogate_curves,
    truncated_values,
)


def _brute_surrogate(delta_full, order, k, mode):
    """Sum of Delta_w over w inside the prefix (insertion) or its complement, |w| <= k."""
    n = len(order)
    N = 1 << n
    out = []
    m = 0
    for t in range(n + 1):
        if t:
            m |= 1 << int(order[t - 1])
        keep = m if mode == "insertion" else (N - 1) ^ m
        out.append(sum(delta_full[w] for w in range(N)
                       if (w & ~keep) == 0 and bin(w).count("1") <= k))
    return np.array(out)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 6), seed=st.integers(0, 10_000), mode=st.sampled_from(
    ["insertion", "deletion"]))
def test_full_order_surrogate_is_the_real_curve(n, seed, mode):
    rng = np.random.default_rng(seed)
    delta = rng.normal(size=(3, 1 << n))
    dec = BatchDecomposition.from_delta(delta)
    orders = np.stack([np.stack([rng.permutation(n) for _ in range(2)]) for _ in range(3)])
    s = surrogate_curves(dec, orders, k=None, mode=mode)
    g = dec.full_values()
    for b in range(3):
        for q in range(2):
            np.testing.assert_allclose(s.curves[b, q, -1], s.real[b, q], rtol=0, atol=1e-12)
            m, real = 0, [g[b, 0] if mode == "insertion" else g[b, -1]]
            for j in orders[b, q]:
                m |= 1 << int(j)
                real.append(g[b, m] if mode == "insertion" else g[b, ((1 << n) - 1) ^ m])
            np.testing.assert_allclose(s.real[b, q], real, rtol=0, atol=1e-12)
            for L in range(s.k + 1):
                np.testing.assert_allclose(s.curves[b, q, L],
                                           _brute_surrogate(delta[b], orders[b, q], L, mode),
                                           rtol=0, atol=1e-12)
    # Theorem 1: the real curve's ABC is the decomposition's
    np.testing.assert_allclose(s.abc_real, dec.abc(orders, mode=mode), rtol=0, atol=1e-12)
    # the truncated Theorem 1 sum is the surrogate's own ABC
    full = s.abc[..., -1]
    np.testing.assert_allclose(full, s.abc_real, rtol=0, atol=1e-12)
    assert np.allclose(s.gap[..., -1], 0, atol=1e-12)


def test_surrogate_of_a_torch_mlp_matches_trace():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4, 6))
    R = rng.normal(size=(4, 6))
    R[0, 2] = X[0, 2]  # a pair with a unit outside D
    dec = insdel.batch_decomposition(net, X, R)
    orders = np.stack([np.stack([rng.permutation(6) for _ in range(3)]) for _ in range(4)])
    tr = insdel.trace(net, X, R, orders)
    for mode in ("insertion", "deletion"):
        s = surrogate_curves(dec, orders, k=None, mode=mode)
        np.testing.assert_allclose(s.curves[:, :, -1], s.real, rtol=0, atol=1e-12)
        np.testing.assert_allclose(s.real, tr.curves[mode], rtol=0, atol=1e-5)  # float32 model
        assert s.k == int(dec.d.max()) == 6
        assert np.all(s.explained_curve[..., -1][np.isfinite(s.explained_curve[..., -1])]
                      == pytest.approx(1.0, abs=1e-9))


def test_orders_explain_the_curve_and_abc():
    # f = x0 + x1 * x2: additive part and one pairwise effect; order 2 explains everything
    def f(Z):
        return Z[:, 0] + Z[:, 1] * Z[:, 2]

    dec = insdel.batch_decomposition(f, np.ones((1, 3)), np.zeros((1, 3)))
    s = surrogate_curves(dec, np.array([1, 0, 2]), k=2)
    np.testing.assert_allclose(s.real[0, 0], [0, 0, 1, 2])
    np.testing.assert_allclose(s.curves[0, 0, 1], [0, 0, 1, 1])  # additive: only x0 counts
    np.testing.assert_allclose(s.curves[0, 0, 2], s.real[0, 0])
    assert s.abc[0, 0, 0] == 0.0
    np.testing.assert_allclose(s.explained_abc[0, 0], [0.0, s.abc[0, 0, 1] / s.abc_real[0, 0], 1])
    np.testing.assert_allclose(s.gap[0, 0], [np.sqrt(5 / 4), np.sqrt(1 / 4), 0])
    np.testing.assert_allclose(s.explained_curve[0, 0], [0.0, 1 - 1 / 5, 1.0])
    rows = s.table(0, 0)
    assert [r["order"] for r in rows] == [0, 1, 2]


def test_zero_abc_and_flat_curve_give_nan_not_a_fraction():
    # additive game: every ordering of the units' single effects, one with zero ABC
    dec = BatchDecomposition.from_delta(np.array([[0.0, 1.0, 0.0, 0.0]]))
    s = surrogate_curves(dec, np.array([0, 1]), k=2)
    assert s.abc_real[0, 0] != 0
    flat = BatchDecomposition.from_delta(np.zeros((1, 4)))
    s = surrogate_curves(flat, np.array([0, 1]), k=1)
    assert np.isnan(s.explained_abc).all() and np.isnan(s.explained_curve).all()


def test_pairwise_effects_and_truncated_values():
    rng = np.random.default_rng(3)
    delta = rng.normal(size=(2, 16))
    dec = BatchDecomposition.from_delta(delta)
    P = pairwise_effects(dec)
    assert P.shape == (2, 4, 4)
    np.testing.assert_allclose(P, np.transpose(P, (0, 2, 1)))
    np.testing.assert_allclose(P[:, 1, 3], delta[:, 0b1010])
    np.testing.assert_allclose(P[:, 2, 2], delta[:, 0b0100])
    v1 = truncated_values(dec, 1).reshape(2, 16)
    np.testing.assert_allclose(v1[:, 0b0110], delta[:, 0] + delta[:, 2] + delta[:, 4])
    np.testing.assert_allclose(truncated_values(dec, None), dec.full_values().ravel())


def test_bad_input_is_named():
    dec = BatchDecomposition.from_delta(np.zeros((1, 4)))
    with pytest.raises(ValueError, match="mode"):
        surrogate_curves(dec, np.array([0, 1]), mode="sideways")
    with pytest.raises(ValueError, match="k must"):
        surrogate_curves(dec, np.array([0, 1]), k=-1)
    with pytest.raises(TypeError, match="dec must be a BatchDecomposition"):
        surrogate_curves(np.zeros(4), np.array([0, 1]))
    with pytest.raises(ValueError, match="orders"):
        surrogate_curves(dec, np.array([0, 0]))
