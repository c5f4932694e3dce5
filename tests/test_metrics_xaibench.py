"""XAI-Bench's faithfulness (eq. 2) against a loop written from its definition and its code."""

from __future__ import annotations

import numpy as np
import pytest

from insdel import metrics as M
from insdel import removal as RM


def f(Z):
    return 2 * Z[:, 0] - Z[:, 1] + Z[:, 2] * Z[:, 3] + 0.1 * np.sin(Z[:, 4])


class GaussianDraws(RM.SampledRemoval):
    """Removed features drawn from N(0, I) (independent features: the conditional is the
    marginal), M draws per target, the same for every coalition."""

    name = "iid_gaussian_test"

    def __init__(self, n_draws=50, seed=0):
        self.n_draws, self.seed = n_draws, seed

    def sample(self, X, keep, targets):
        out = np.empty((len(X), self.n_draws, X.shape[1]))
        for i, t in enumerate(targets):
            z = RM.target_rng(self.seed, int(t), self.name).normal(size=(self.n_draws, X.shape[1]))
            out[i] = np.where(keep[i], X[i], z)
        return out


def xaibench_loop(X, W, value, absolute=True):
    """XAI-Bench's custom_metrics/faithfulness.py, per datapoint: remove feature j alone, its
    prediction's change, Pearson with the weights, an undefined correlation counted as 0."""
    out = []
    for i in range(len(X)):
        y = f(X[i:i + 1])[0]
        new = np.array([value(i, j) for j in range(X.shape[1])])
        w, d = (np.abs(W[i]), np.abs(y - new)) if absolute else (W[i], y - new)
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.corrcoef(w, d)[0, 1]
        out.append(0.0 if not np.isfinite(r) else r)
    return np.array(out)


@pytest.fixture
def pairs():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 5))
    W = rng.normal(size=(6, 5))
    W[0] = 1.0  # constant weights: XAI-Bench scores 0
    return X, W


def test_interventional_form_is_the_baseline_with_the_data_mean(pairs):
    X, W = pairs
    mu = X.mean(0)

    def value(i, j):
        z = X[i].copy()
        z[j] = mu[j]
        return f(z[None])[0]

    metric = M.build("faithfulness_xaibench")
    got = metric(f, X, np.broadcast_to(mu, X.shape), W)
    np.testing.assert_allclose(got, xaibench_loop(X, W, value), atol=1e-12)
    assert got[0] == 0.0
    signed = M.build("faithfulness_xaibench", absolute=False, nan_as_zero=False)(
        f, X, np.broadcast_to(mu, X.shape), W)
    want = xaibench_loop(X, W, value, absolute=False)
    np.testing.assert_allclose(signed[1:], want[1:], atol=1e-12)
    assert np.isnan(signed[0])


def test_observational_form_under_a_sampled_removal(pairs):
    X, W = pairs
    rem = GaussianDraws(n_draws=40, seed=3)

    def value(i, j):
        keep = np.ones(5, bool)
        keep[j] = False
        return f(rem.sample(X[i:i + 1], keep[None], np.array([i]))[0]).mean()

    for absolute in (True, False):
        got = M.build("faithfulness_xaibench", absolute=absolute)(f, X, None, W, removal=rem)
        np.testing.assert_allclose(got, xaibench_loop(X, W, value, absolute), atol=1e-12)


def test_options_are_checked():
    with pytest.raises(TypeError, match="absolute must be True or False"):
        M.build("faithfulness_xaibench", absolute="yes")
    assert "faithfulness_xaibench" in M.available("xaibench")
