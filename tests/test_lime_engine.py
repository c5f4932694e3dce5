"""LIME's engines (issue 13): the vectorised engine's weighted Lasso equals scikit-learn's, each
distinct hybrid is evaluated once, and the engine agrees with captum's Lime in distribution."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.linear_model import Lasso

import insdel
from insdel.attribution._sampling import weighted_lasso


def _mlp(n: int, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(n, 16), torch.nn.Tanh(),
                               torch.nn.Linear(16, 1)).double().eval()


@pytest.mark.parametrize("alpha", [1e-4, 0.01, 0.1, 100.0])
def test_weighted_lasso_equals_scikit_learn(alpha):
    rng = np.random.default_rng(0)
    P, S, n = 4, 300, 8
    Z = (rng.random((P, S, n)) < 0.5).astype(float)
    y = Z @ rng.normal(size=n) + 0.3 * rng.normal(size=(P, S))
    w = rng.random((P, S))
    coef, icpt = weighted_lasso(Z, y, w, alpha)
    for p in range(P):
        m = Lasso(alpha=alpha, tol=1e-12, max_iter=100_000).fit(Z[p], y[p], sample_weight=w[p])
        np.testing.assert_allclose(coef[p], m.coef_, atol=1e-7)
        assert icpt[p] == pytest.approx(m.intercept_, abs=1e-7)
    if alpha == 100.0:
        assert not coef.any()  # everything penalised to zero


def test_insdel_engine_agrees_with_captum_in_distribution():
    """Over 12 seeds per engine, mean attributions differ by less than 4 standard errors of the
    difference wherever either varies (and are equal where both are always 0, the Lasso's zeros)."""
    n, K = 6, 12
    f = _mlp(n)
    rng = np.random.default_rng(1)
    X, R = rng.normal(size=(3, n)), rng.normal(size=(3, n))
    runs = {e: np.stack([insdel.attribute(f, X, R, "lime", n_samples=200, seed=s, backend=e)
                         for s in range(K)]) for e in ("captum", "insdel")}
    m = {e: a.mean(0) for e, a in runs.items()}
    se = np.sqrt(sum(a.var(0, ddof=1) / K for a in runs.values()))
    diff = np.abs(m["captum"] - m["insdel"])
    varies = se > 1e-9
    assert (diff[varies] / se[varies]).max() < 4.0
    assert diff[~varies].max(initial=0.0) < 1e-6  # captum fits in float32


def test_linear_model_coefficients_recovered():
    """For f linear, LIME's regression on z recovers w_j (x_j - r_j) up to the small penalty."""
    w = np.array([2.0, -1.0, 0.5, 3.0, -2.5])
    f = lambda A: A @ w  # noqa: E731
    rng = np.random.default_rng(2)
    X, R = rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    A = insdel.attribute(f, X, R, "lime", n_samples=2000, alpha=1e-6)
    np.testing.assert_allclose(A, w * (X - R), atol=1e-4)


def test_each_distinct_hybrid_is_evaluated_once_and_seeded():
    n = 20
    f = _mlp(n, 3)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3, n))
    R = X.copy()
    R[0, :3] += 1.0
    R[2, :4] += 1.0  # |D| = 3, 0, 4
    A, info = insdel.attribute(f, X, R, "lime", n_samples=500, return_info=True)
    assert info["backend"] == "insdel" and info["distinct_rows"] == 8 + 1 + 16
    assert info["model_evaluations"] == 8 + 1 + 16
    np.testing.assert_array_equal(A[1], 0.0)  # x == r: the Lasso keeps nothing
    np.testing.assert_array_equal(A, insdel.attribute(f, X, R, "lime", n_samples=500))


def test_options_are_validated():
    f = _mlp(3)
    X, R = np.zeros((1, 3)), np.ones((1, 3))
    with pytest.raises(ValueError, match="engine"):
        insdel.attribute(f, X, R, "lime", engine="sklearn")
    with pytest.raises(ValueError, match="interpretable_model"):
        insdel.attribute(f, X, R, "lime", interpretable_model=object())
    with pytest.raises(ValueError, match="alpha"):
        insdel.attribute(f, X, R, "lime", alpha=-1.0)


def test_alpha_reaches_the_captum_engine():
    """``alpha`` is the Lasso penalty of both engines: the captum engine fits
    ``SkLearnLasso(alpha=alpha)`` (the default equals captum's default model); a large penalty
    zeroes every coefficient; ``alpha`` beside an ``interpretable_model`` is an error."""
    from captum._utils.models.linear_model import SkLearnLasso

    f = _mlp(4)
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(2, 4)), np.zeros(4)
    kw = {"backend": "captum", "n_samples": 200, "seed": 1}
    default = insdel.attribute(f, X, R, "lime", **kw)
    explicit = insdel.attribute(f, X, R, "lime", interpretable_model=SkLearnLasso(alpha=0.01),
                                **kw)
    np.testing.assert_array_equal(default, explicit)
    assert np.abs(default).max() > 0
    np.testing.assert_array_equal(insdel.attribute(f, X, R, "lime", alpha=100.0, **kw), 0.0)
    with pytest.raises(ValueError, match="alpha=1.0 and interpretable_model"):
        insdel.attribute(f, X, R, "lime", alpha=1.0, interpretable_model=SkLearnLasso(alpha=1.0),
                         **kw)


def test_kernel_width_weights_the_perturbations_in_both_engines():
    """``kernel_width`` is the width w of ``exp(-d^2 / (2 w^2))``: 1.0 is captum's default (the
    same numbers as leaving it out); the insdel engine agrees with captum's ``Lime`` given
    ``get_exp_kernel_similarity_function("cosine", w)`` in distribution, and another width gives
    other attributions; a width <= 0 is refused naming the option."""
    f = _mlp(5)
    rng = np.random.default_rng(2)
    X, R = rng.normal(size=(3, 5)), rng.normal(size=(3, 5))
    base = insdel.attribute(f, X, R, "lime", n_samples=200, seed=3)
    np.testing.assert_array_equal(
        insdel.attribute(f, X, R, "lime", n_samples=200, seed=3, kernel_width=1.0), base)
    narrow = insdel.attribute(f, X, R, "lime", n_samples=200, seed=3, kernel_width=0.05)
    assert np.abs(narrow - base).max() > 1e-6
    K = 10
    runs = {e: np.stack([insdel.attribute(f, X, R, "lime", n_samples=200, seed=s, backend=e,
                                          kernel_width=0.3) for s in range(K)])
            for e in ("captum", "insdel")}
    se = np.sqrt(sum(a.var(0, ddof=1) / K for a in runs.values()))
    diff = np.abs(runs["captum"].mean(0) - runs["insdel"].mean(0))
    varies = se > 1e-9
    assert (diff[varies] / se[varies]).max() < 4.0
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match="kernel_width"):
            insdel.attribute(f, X, R, "lime", kernel_width=bad)
