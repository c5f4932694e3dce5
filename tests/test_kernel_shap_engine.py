"""Kernel SHAP's engines (issue 13): insdel's vectorised engine evaluates each distinct hybrid once
and agrees with captum's per-point KernelShap in distribution; both approach exact Shapley."""

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
                                          engine=e, exact="never") for s in range(K)])
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
    assert info["engine"] == "insdel"  # the default
    assert info["sampled_distinct_rows"] == 8 + 1 + 32
    assert info["model_evaluations"] == 8 + 1 + 32
    exact = insdel.attribute(f, X, R, "exact_shapley")
    np.testing.assert_allclose(A[1], 0.0, atol=1e-9)  # x == r: nothing to attribute
    outside = (X == R)
    assert np.abs(A[outside]).max() < 0.05 * np.abs(exact).max()  # noise only, mean zero
    np.testing.assert_allclose(A.sum(1), exact.sum(1), atol=1e-4)  # efficiency (weight 1e6 ends)


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
                                          engine=e, exact="never", groups=G) for s in range(K)])
            for e in ("captum", "insdel")}
    assert runs["captum"].shape == (K, 2, 4)
    m = {e: a.mean(0) for e, a in runs.items()}
    se = np.sqrt(sum(a.var(0, ddof=1) / K for a in runs.values()))
    z = np.abs(m["captum"] - m["insdel"]) / np.maximum(se, 1e-12)
    assert z.max() < 4.0, z
    for e in runs:  # both estimate the exact group Shapley values
        np.testing.assert_allclose(m[e], exact, atol=0.15 * np.abs(exact).max())
