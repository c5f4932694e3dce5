"""Kernel SHAP's engines (issue 13): insdel's vectorised engine evaluates each distinct hybrid once
and agrees with captum's per-point KernelShap in distribution; both approach exact Shapley.
insdel's engine holds efficiency exactly (its least squares fit is shap KernelExplainer's)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import insdel


def _mlp(n: int, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(n, 16), torch.nn.Tanh(),
                               torch.nn.Linear(16, 1)).double().eval()


def _pairs(B: int, n: int, d: list[int], seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(B, n))
    R = X.copy()
    for b in range(B):
        D = rng.choice(n, d[b], replace=False)
        R[b, D] = rng.normal(size=d[b])
    return X, R


def test_insdel_engine_agrees_with_captum_in_distribution():
    """Over 12 seeds per engine, the two engines' mean attributions differ by less than 4 standard
    errors of the difference (every pair and feature), and their mean absolute errors against exact
    Shapley are within a factor 2 of each other."""
    n, K, ns = 6, 12, 120
    f = _mlp(n)
    X, R = _pairs(2, n, [6, 5], seed=1)
    exact = insdel.attribute(f, X, R, "exact_shapley")
    runs = {e: np.stack([insdel.attribute(f, X, R, "kernel_shap", n_samples=ns, seed=s,
                                          backend=e, exact="never") for s in range(K)])
            for e in ("captum", "insdel")}
    m = {e: a.mean(0) for e, a in runs.items()}
    se = np.sqrt(sum(a.var(0, ddof=1) / K for a in runs.values()))
    z = np.abs(m["captum"] - m["insdel"]) / np.maximum(se, 1e-12)
    assert z.max() < 4.0, z
    err = {e: np.abs(a - exact).mean() for e, a in runs.items()}
    assert 0.5 < err["insdel"] / err["captum"] < 2.0, err
    # and both are estimating exact Shapley: the seed-mean is closer than one run
    for e in runs:
        assert np.abs(m[e] - exact).mean() < err[e], e


def test_each_distinct_hybrid_is_evaluated_once():
    """A coalition's hybrid depends only on its intersection with D: 5,000 samples of pairs with
    |D| = 3, 0 and 5 need at most 8 + 1 + 32 model rows, and with so many samples all of them."""
    n = 30
    f = _mlp(n, 2)
    X, R = _pairs(3, n, [3, 0, 5], seed=3)
    ks = insdel.attribute(f, X, R, "kernel_shap", n_samples=5000, exact="never",
                          return_info=True)
    A, info = ks
    assert info["backend"] == "insdel"  # the default
    assert info["sampled_distinct_rows"] == 8 + 1 + 32
    assert info["model_evaluations"] == 8 + 1 + 32
    exact = insdel.attribute(f, X, R, "exact_shapley")
    np.testing.assert_allclose(A[1], 0.0, atol=1e-9)  # x == r: nothing to attribute
    outside = (X == R)
    assert np.abs(A[outside]).max() < 0.05 * np.abs(exact).max()  # noise only, mean zero
    np.testing.assert_allclose(A.sum(1), exact.sum(1), rtol=1e-12, atol=1e-14)  # efficiency


def test_paper_sized_sampling_touches_at_most_2_to_the_d_rows():
    n = 38
    f = _mlp(n, 4)
    X, R = _pairs(2, n, [12, 14], seed=5)
    A, info = insdel.attribute(f, X, R, "kernel_shap", n_samples=20_000, exact="never",
                               return_info=True)
    assert info["exact_pairs"] == 0
    assert info["sampled_distinct_rows"] <= 2 ** 12 + 2 ** 14
    exact = insdel.attribute(f, X, R, "exact_shapley")
    rel = np.linalg.norm(A - exact, axis=1) / np.linalg.norm(exact, axis=1)
    assert rel.max() < 0.1, rel
    B, _ = insdel.attribute(f, X, R, "kernel_shap", n_samples=20_000, exact="never",
                            return_info=True)
    np.testing.assert_array_equal(A, B)  # seeded


def test_engine_is_validated():
    f = _mlp(3)
    X, R = _pairs(1, 3, [2])
    with pytest.raises(ValueError, match="engine"):
        insdel.attribute(f, X, R, "kernel_shap", engine="numpy")


def test_group_game_engines_agree_in_distribution():
    """With groups, captum's engine (feature_mask) and insdel's sample the same group game: their
    seed-means differ by less than 4 standard errors, one value per group."""
    n, K, ns = 7, 10, 100
    f = _mlp(n, 4)
    X, R = _pairs(2, n, [7, 6], seed=5)
    G = [[0, 4], [1], [2, 3, 6], [5]]
    exact = insdel.attribute(f, X, R, "exact_shapley", groups=G)
    runs = {e: np.stack([insdel.attribute(f, X, R, "kernel_shap", n_samples=ns, seed=s,
                                          backend=e, exact="never", groups=G) for s in range(K)])
            for e in ("captum", "insdel")}
    assert runs["captum"].shape == (K, 2, 4)
    m = {e: a.mean(0) for e, a in runs.items()}
    se = np.sqrt(sum(a.var(0, ddof=1) / K for a in runs.values()))
    z = np.abs(m["captum"] - m["insdel"]) / np.maximum(se, 1e-12)
    assert z.max() < 4.0, z
    for e in runs:  # both estimate the exact group Shapley values
        np.testing.assert_allclose(m[e], exact, atol=0.15 * np.abs(exact).max())


# -- efficiency as a constraint, and the fit against shap's KernelExplainer ------------------------
def _nonlinear(n: int, seed: int = 0):
    """A float64 numpy model with interactions of every order: sin(a.x) exp(0.3 b.x) + x_0 x_1."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n), rng.normal(size=n)
    return lambda A: np.sin(A @ a) * np.exp(0.3 * (A @ b)) + A[:, 0] * A[:, 1]


@pytest.mark.parametrize("n", [6, 24])
def test_sampled_kernel_shap_adds_up_to_f_x_minus_f_r_exactly(n):
    """Sampled Kernel SHAP (insdel engine) adds up to f(x) - f(r) to 1e-12 relative at 2,000,
    20,000 and 200,000 samples, for features and for groups, in one call and chunk by chunk.
    (With the end coalitions as rows of weight 10^6 the shortfall was 5e-5 of f(x) - f(r) at
    2,000 samples on n = 6 and grew tenfold with every tenfold of samples.)"""
    f = _nonlinear(n, seed=n)
    rng = np.random.default_rng(n)
    X, R = rng.normal(size=(3, n)), rng.normal(size=(3, n))
    total = f(X) - f(R)
    G = [list(range(0, n, 3)), list(range(1, n, 3)), list(range(2, n, 3))]
    for ns in (2000, 20_000, 200_000):
        A, info = insdel.attribute(f, X, R, "kernel_shap", n_samples=ns, exact="never",
                                   return_info=True)
        assert info["exact_pairs"] == 0 and not info["underdetermined"].any()
        np.testing.assert_allclose(A.sum(1), total, rtol=1e-12, atol=0, err_msg=str(ns))
        Ag = insdel.attribute(f, X, R, "kernel_shap", n_samples=ns, exact="never", groups=G)
        assert Ag.shape == (3, 3)
        np.testing.assert_allclose(Ag.sum(1), total, rtol=1e-12, atol=0, err_msg=str(ns))
    Ac = insdel.attribute(f, X, R, "kernel_shap", n_samples=2000, exact="never",
                          pairs_per_chunk=2)  # the chunked (and Dask) road: the same fit
    np.testing.assert_allclose(Ac.sum(1), total, rtol=1e-12, atol=0)


def test_fit_equals_shap_kernel_explainer_on_its_own_coalitions():
    """Given the coalitions, weights and model values shap's KernelExplainer sampled (n = 10,
    500 of the 1,022 proper coalitions, single background point r), insdel's fit returns shap's
    values to rounding: both hold phi_0 = f(r) and efficiency exactly."""
    shap = pytest.importorskip("shap")
    from insdel.attribution.shapley import _kernel_shap_fit

    n = 10
    f = _nonlinear(n, seed=3)
    rng = np.random.default_rng(3)
    x, r = rng.normal(size=n), rng.normal(size=n)
    explainer = shap.KernelExplainer(f, r[None])
    phi = np.asarray(explainer.shap_values(x[None], nsamples=500, l1_reg=False, silent=True))
    k = explainer.nsamplesAdded
    assert k == 500 and explainer.M == n  # sampled (not enumerated), every feature varies
    mine, rank = _kernel_shap_fit(np.asarray(explainer.maskMatrix)[None, :k],
                                  np.asarray(explainer.ey)[None, :k, 0],
                                  np.asarray(explainer.kernelWeights)[:k],
                                  np.array([f(x[None])[0]]), np.array([f(r[None])[0]]))
    assert rank.tolist() == [n - 1]
    np.testing.assert_allclose(mine, phi.reshape(1, n), rtol=1e-10, atol=1e-12)
    assert mine.sum() == pytest.approx(f(x[None])[0] - f(r[None])[0], rel=1e-13)


def test_fit_over_every_coalition_is_exact_shapley():
    """With every proper coalition once and the Shapley kernel as weights, the fit is the exact
    Shapley values (n = 7) to 1e-10; so is the engine's exact road, and shap's KernelExplainer
    enumerating all coalitions agrees."""
    from math import comb

    from insdel.attribution.shapley import _kernel_shap_fit

    n = 7
    f = _nonlinear(n, seed=7)
    rng = np.random.default_rng(7)
    X, R = rng.normal(size=(2, n)), rng.normal(size=(2, n))
    exact = insdel.attribute(f, X, R, "exact_shapley")
    u = np.arange(1, (1 << n) - 1)
    Z = (u[:, None] >> np.arange(n)) & 1 == 1
    k = Z.sum(1)
    w = (n - 1) / (np.array([comb(n, i) for i in k]) * k * (n - k))
    y = np.stack([f(insdel.hybrid(X[b], R[b], Z)) for b in range(2)])
    phi, rank = _kernel_shap_fit(np.broadcast_to(Z, (2,) + Z.shape), y, w, f(X), f(R))
    assert rank.tolist() == [n - 1, n - 1]
    np.testing.assert_allclose(phi, exact, rtol=0, atol=1e-10)
    road = insdel.attribute(f, X, R, "kernel_shap", n_samples=1 << n)  # 2^7 <= n_samples
    np.testing.assert_allclose(road, exact, rtol=0, atol=1e-10)
    shap = pytest.importorskip("shap")
    for b in range(2):
        sv = shap.KernelExplainer(f, R[b:b + 1]).shap_values(X[b:b + 1], nsamples=1 << n,
                                                             l1_reg=False, silent=True)
        np.testing.assert_allclose(np.asarray(sv).reshape(n), exact[b], rtol=0, atol=1e-10)


def test_too_few_samples_warn_and_stay_efficient():
    """n_samples = 5 on n = 8 players (3 sampled coalitions for 7 free coefficients): a warning
    naming n_samples, the pairs marked in info, and the minimum-norm fit still adds up."""
    n = 8
    f = _nonlinear(n, seed=1)
    rng = np.random.default_rng(1)
    X, R = rng.normal(size=(2, n)), rng.normal(size=(2, n))
    with pytest.warns(UserWarning, match=r"for 2 of 2 pairs the n_samples=5 coalitions"):
        A, info = insdel.attribute(f, X, R, "kernel_shap", n_samples=5, exact="never",
                                   return_info=True)
    assert info["underdetermined"].tolist() == [True, True]
    np.testing.assert_allclose(A.sum(1), f(X) - f(R), rtol=1e-12, atol=0)
