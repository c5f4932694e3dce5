"""The window removal ``stationary_gaussian`` (insdel.removal.stationary): the Gaussian conditional
of a stationary process over a window, its block-Toeplitz covariance from lag autocovariances,
against textbook AR(1) / VAR(1) conditionals, the ``conditional_mean`` removal and hand-built rows."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import insdel
from insdel import removal
from insdel.game import as_game
from insdel.removal.gaussian import conditional_rows, joint_draws
from insdel.removal.stationary import block_toeplitz
from insdel.timeseries import block_groups, lag_groups, sliding_windows


def _ar1(T, phi, seed=0, mu=0.0):
    rng = np.random.default_rng(seed)
    e = rng.normal(size=T)
    y = np.empty(T)
    y[0] = e[0] / np.sqrt(1 - phi ** 2)
    for t in range(1, T):
        y[t] = phi * y[t - 1] + e[t]
    return y + mu


def _ar1_gamma(phi, L):
    """The AR(1) autocovariances with unit innovations, lags 0 .. L - 1."""
    return phi ** np.arange(L) / (1 - phi ** 2)


def _middle(rem, X, t):
    """The rows of targets X with step t of a one-channel window removed, the rest kept."""
    keep = np.ones(X.shape, bool)
    keep[:, t] = False
    return rem.sample(X, keep, np.arange(len(X)))[:, 0]


@pytest.mark.parametrize("phi", [0.8, -0.5])
def test_a_removed_middle_step_of_an_ar1_is_the_textbook_conditional_mean(phi):
    """True covariance: z[t] | the rest = mu + phi / (1 + phi^2) (z[t-1] + z[t+1] - 2 mu) (the
    process is Markov, so the other steps add nothing); the last step alone: mu + phi (z[L-2] -
    mu)."""
    L, mu = 7, 1.5
    rem = removal.build("stationary_gaussian", length=L, channels=1,
                        autocovariance=_ar1_gamma(phi, L), mean=mu)
    X, _ = sliding_windows(_ar1(200, phi, mu=mu), L, stride=10)
    got = _middle(rem, X, 3)
    want = mu + phi / (1 + phi ** 2) * (X[:, 2] + X[:, 4] - 2 * mu)
    np.testing.assert_allclose(got[:, 3], want, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(np.delete(got, 3, axis=1), np.delete(X, 3, axis=1))
    last = _middle(rem, X, L - 1)
    np.testing.assert_allclose(last[:, L - 1], mu + phi * (X[:, L - 2] - mu), rtol=0, atol=1e-12)


def test_the_estimated_covariance_gives_the_textbook_mean_on_a_long_series():
    """Estimated from one long series (biased estimator) and from its sliding windows (the
    default lag-averaged estimator), the conditional mean is the textbook one within 0.03; the
    biased estimator on windows shrinks lag h by 1 - h / L (what ``auto`` avoids)."""
    phi, L = 0.7, 6
    y = _ar1(60_000, phi, seed=1)
    Xw, _ = sliding_windows(y, L)
    X = Xw[:50]
    want = phi / (1 + phi ** 2) * (X[:, 1] + X[:, 3])
    for rem in (removal.build("stationary_gaussian", length=L, channels=1, series=y),
                removal.build("stationary_gaussian", data=Xw, length=L, channels=1)):
        np.testing.assert_allclose(rem.gamma_[:, 0, 0], _ar1_gamma(phi, L), atol=0.06)
        np.testing.assert_allclose(_middle(rem, X, 2)[:, 2], want, atol=0.03)
    assert rem.params()["estimator"] == "unbiased"
    biased = removal.build("stationary_gaussian", data=Xw, length=L, channels=1,
                           estimator="biased")
    np.testing.assert_allclose(biased.gamma_[:, 0, 0],
                               rem.gamma_[:, 0, 0] * (1 - np.arange(L) / L), rtol=1e-3)


def test_a_var1_window_the_last_step_given_the_rest_is_a_times_the_step_before():
    """Two channels, z[t] = A z[t-1] + e: Gamma(h) = A^h Gamma(0) with Gamma(0) = A Gamma(0) A^T +
    I; the covariance is block-Toeplitz (block (t, t') = Gamma(t - t')), and the last step's
    conditional mean given every other cell is A z[L-2] (cross-channel lag structure)."""
    A = np.array([[0.5, 0.3], [-0.2, 0.4]])
    G0 = np.eye(2)
    for _ in range(200):
        G0 = A @ G0 @ A.T + np.eye(2)
    L, C = 4, 2
    gamma = np.stack([np.linalg.matrix_power(A, h) @ G0 for h in range(L)])
    rem = removal.build("stationary_gaussian", length=L, channels=C, autocovariance=gamma)
    for t in range(L):
        for s in range(L):
            block = rem.cov_[t * C:(t + 1) * C, s * C:(s + 1) * C]
            want = gamma[t - s] if t >= s else gamma[s - t].T
            np.testing.assert_allclose(block, want, rtol=0, atol=1e-15)
    X = np.random.default_rng(2).normal(size=(5, L * C))
    keep = np.ones_like(X, bool)
    keep[:, (L - 1) * C:] = False
    rows = rem.sample(X, keep, np.arange(5))[:, 0]
    np.testing.assert_allclose(rows[:, (L - 1) * C:], X[:, (L - 2) * C:(L - 1) * C] @ A.T,
                               rtol=0, atol=1e-12)


def test_block_toeplitz_against_a_loop():
    rng = np.random.default_rng(3)
    L, C = 5, 3
    g = rng.normal(size=(L, C, C))
    S = block_toeplitz(g)
    for t in range(L):
        for s in range(L):
            for c in range(C):
                for d in range(C):
                    want = g[t - s, c, d] if t >= s else g[s - t, d, c]
                    assert S[t * C + c, s * C + d] == want


def test_equal_to_conditional_mean_with_the_same_covariance():
    """The conditioning is gaussian's: conditional_mean given the same mean and covariance gives
    the same rows to 1e-12 on random coalitions, and both equal the closed form."""
    rng = np.random.default_rng(4)
    L, C = 6, 2
    series = rng.normal(size=(3000, C)).cumsum(axis=0) * 0.05 + rng.normal(size=(3000, C))
    rem = removal.build("stationary_gaussian", length=L, channels=C, series=series)
    ref = removal.build("conditional_mean", data=rng.normal(size=(50, L * C)))
    ref.cov_, ref._Z = rem.cov_, rem.mean_[None, None, :].copy()
    X = rng.normal(size=(40, L * C))
    keep = rng.random((40, L * C)) < 0.5
    got = rem.sample(X, keep, np.arange(40))
    np.testing.assert_allclose(got, ref.sample(X, keep, np.arange(40)), rtol=0, atol=1e-12)
    S, mu = rem.cov_, rem.mean_
    for i in range(5):
        K, R = np.flatnonzero(keep[i]), np.flatnonzero(~keep[i])
        want = mu[R] + S[np.ix_(R, K)] @ np.linalg.solve(S[np.ix_(K, K)], X[i, K] - mu[K])
        np.testing.assert_allclose(got[i, 0, R], want, rtol=0, atol=1e-10)
        np.testing.assert_array_equal(got[i, 0, K], X[i, K])


def test_draws_are_matheron_conditional_draws_with_common_random_numbers():
    """n_draws = M: each row is z_R + S_RK S_KK^-1 (x_K - z_K) with the target's joint draws z
    (seeded by seed and the target's index), the same z for every coalition of a target."""
    L, phi = 5, 0.6
    rem = removal.build("stationary_gaussian", length=L, channels=1,
                        autocovariance=_ar1_gamma(phi, L), n_draws=3, seed=7)
    X = np.random.default_rng(5).normal(size=(2, L))
    keep = np.array([[1, 0, 1, 0, 1], [0, 0, 1, 1, 0]], bool)
    rows = rem.sample(X, keep, np.array([4, 4]))
    S = rem.cov_
    z = joint_draws(rem.mean_, np.linalg.cholesky(S), 3, 7, 4, "stationary_gaussian")
    for i in range(2):
        K, R = np.flatnonzero(keep[i]), np.flatnonzero(~keep[i])
        B = S[np.ix_(R, K)] @ np.linalg.inv(S[np.ix_(K, K)])
        want = z[:, R] + (X[i, K] - z[:, K]) @ B.T
        np.testing.assert_allclose(rows[i][:, R], want, rtol=0, atol=1e-10)
    again = rem.sample(X[:1], keep[:1], np.array([4]))
    np.testing.assert_array_equal(again, rows[:1])
    p = rem.params()
    assert p["draws"] and p["n_draws"] == 3 and p["seed"] == 7 and removal.draws_rows(rem)
    mean = removal.build("stationary_gaussian", length=L, channels=1,
                         autocovariance=_ar1_gamma(phi, L))
    assert mean.n_draws == 1 and not mean.params()["draws"]


def test_the_game_and_curves_over_lag_groups():
    """as_game with R=None and groups by lag: v(all) = f(x), v(empty) = f(mu) for a linear f;
    each insertion curve point is f of the removal's row of the coalition inserted so far."""
    L, C = 6, 2
    rng = np.random.default_rng(6)
    series = np.c_[_ar1(5000, 0.8, seed=6), rng.normal(size=5000)]
    Xw, _ = sliding_windows(series, L)
    rem = removal.build("stationary_gaussian", data=Xw, length=L, channels=C)
    w = rng.normal(size=L * C)
    f = insdel.as_model(lambda Z: Z @ w)
    g = lag_groups(L, C, block=2)
    game = as_game(f, Xw[:4], None, removal=rem, groups=g)
    np.testing.assert_allclose(game.v_all(), Xw[:4] @ w, atol=1e-12)
    np.testing.assert_allclose(game.v_empty(), np.full(4, rem.mean_ @ w), atol=1e-12)
    A = rng.normal(size=(4, L * C))
    curve = insdel.curves(f, Xw[:4], None, A, removal=rem, groups=g, mode="insertion")
    assert curve.shape == (4, g.m + 1)
    scores = np.stack([[A[i, g.columns(u)].sum() for u in range(g.m)] for i in range(4)])
    for i in range(4):
        order = np.argsort(-scores[i], kind="stable")
        for k in range(g.m + 1):
            keep = np.zeros(L * C, bool)
            for u in order[:k]:
                keep[g.columns(u)] = True
            row = rem.sample(Xw[i:i + 1], keep[None], np.array([i]))[0, 0]
            assert curve[i, k] == pytest.approx(row @ w, abs=1e-10)


def test_bad_input_is_named():
    y = _ar1(500, 0.5)
    with pytest.raises(ValueError, match=r"data has rows of 7 values; a window of length=4 "
                                         r"steps x channels=2 flattens to 8"):
        removal.build("stationary_gaussian", data=np.zeros((10, 7)), length=4, channels=2)
    with pytest.raises(ValueError, match=r"max_lag=4 is not a lag of the window: a window of "
                                         r"length=4 has lags 0 \.\. 3"):
        removal.build("stationary_gaussian", length=4, channels=1, series=y, max_lag=4)
    with pytest.raises(ValueError, match=r"max_lag must be an integer >= 0"):
        removal.build("stationary_gaussian", length=4, channels=1, series=y, max_lag=-1)
    with pytest.raises(TypeError, match=r"max_lag"):
        removal.build("stationary_gaussian", length=4, channels=1, series=y, max_lag=1.5)
    with pytest.raises(ValueError, match=r"series= has 3 steps; a window of length=4"):
        removal.build("stationary_gaussian", length=4, channels=1, series=y[:3])
    with pytest.raises(ValueError, match=r"series\[1\] has 2 steps"):
        removal.build("stationary_gaussian", length=4, channels=1,
                      series=[y[:, None], y[:2, None]])
    with pytest.raises(ValueError, match=r"series= has 1 channels .* channels=2"):
        removal.build("stationary_gaussian", length=4, channels=2, series=y[:, None])
    with pytest.raises(ValueError, match=r"one of data=, series=, autocovariance="):
        removal.build("stationary_gaussian", data=np.zeros((5, 4)), length=4, channels=1,
                      series=y)
    with pytest.raises(ValueError, match=r"mean= goes with autocovariance="):
        removal.build("stationary_gaussian", length=4, channels=1, series=y, mean=0.0)
    with pytest.raises(removal.MissingDataError, match="stationary_gaussian needs training"):
        removal.build("stationary_gaussian", length=4, channels=1)
    with pytest.raises(ValueError, match="taper must be one of"):
        removal.build("stationary_gaussian", length=4, channels=1, series=y, taper="hann")
    with pytest.raises(ValueError, match="estimator must be one of"):
        removal.build("stationary_gaussian", length=4, channels=1, series=y, estimator="mle")
    with pytest.raises(ValueError, match="n_draws"):
        removal.build("stationary_gaussian", length=4, channels=1, series=y, n_draws=0)
    with pytest.raises(ValueError, match=r"autocovariance= must have shape \(K, 1, 1\) with "
                                         r"1 <= K <= length=4"):
        removal.build("stationary_gaussian", length=4, channels=1, autocovariance=np.ones(5))
    rem = removal.build("stationary_gaussian", length=4, channels=2, series=np.c_[y, y[::-1]])
    with pytest.raises(ValueError, match=r"6 features but a window of length=4 x channels=2 "
                                         r"flattens to 8"):
        rem.sample(np.zeros((1, 6)), np.ones((1, 6), bool), np.array([0]))


def test_an_indefinite_estimate_is_refused_and_bartlett_keeps_it_definite():
    """A flat cut of a smooth AR(1) at lag 1 (tridiagonal 1, 0.95) is indefinite: an error naming
    the estimator and the taper; Bartlett's taper at the same max_lag is positive definite."""
    y = _ar1(20_000, 0.95, seed=8)
    with pytest.raises(ValueError, match=r"max_lag=1, taper='flat'\) is not positive "
                                         r"semi-definite.*estimator='biased'"):
        removal.build("stationary_gaussian", length=8, channels=1, series=y, max_lag=1,
                      taper="flat")
    rem = removal.build("stationary_gaussian", length=8, channels=1, series=y, max_lag=1)
    assert rem.gamma_[2:].max() == 0.0 and rem.params()["jitter"] == 0.0
    np.testing.assert_allclose(rem.gamma_[1, 0, 0], 0.5 * rem.gamma_[0, 0, 0] * 0.95, rtol=0.05)
    assert rem.params()["taper"] == "bartlett" and rem.params()["max_lag"] == 1


def test_a_constant_channel_is_regularised_with_the_jitter_recorded():
    y = _ar1(2000, 0.5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rem = removal.build("stationary_gaussian", length=3, channels=2,
                            series=np.c_[y, np.full(2000, 2.0)])
    assert any("constant channel(s) [1]" in str(w.message) for w in caught)
    p = rem.params()
    assert p["jitter"] > 0.0
    with pytest.warns(UserWarning, match=r"constant channel\(s\) \[0\]"):
        flat = removal.build("stationary_gaussian", length=3, channels=1, series=np.ones(50))
    assert flat.params()["jitter"] == 1e-6
    np.testing.assert_allclose(flat.sample(np.array([[1.0, 5.0, 1.0]]),
                                           np.array([[True, False, True]]), np.array([0])),
                               1.0, atol=0.0)
    X = np.c_[y[:3], np.full(3, 2.0)].reshape(1, 6)
    keep = np.array([[True, False, True, False, True, False]])
    np.testing.assert_allclose(rem.sample(X, keep, np.array([0]))[0, 0, 1::2], 2.0, atol=1e-9)


def test_params_record_what_determines_the_rows():
    y = _ar1(1000, 0.5)
    a = removal.build("stationary_gaussian", length=4, channels=1, series=y)
    p = a.params()
    json.dumps(p)
    assert p["source"] == "series" and p["steps"] == 1000 and p["estimator"] == "biased"
    assert len(p["series_sha256"]) == 64 and p["max_lag"] is None and p["taper"] is None
    others = [removal.build("stationary_gaussian", length=4, channels=1, series=y[1:]),
              removal.build("stationary_gaussian", length=4, channels=1, series=y, max_lag=2),
              removal.build("stationary_gaussian", length=4, channels=1, series=y,
                            estimator="unbiased"),
              removal.build("stationary_gaussian", length=4, channels=1, series=y, n_draws=1)]
    assert all(o.params() != p for o in others)
    g = removal.build("stationary_gaussian", length=4, channels=1,
                      autocovariance=[2.0, 1.0], mean=3.0).params()
    assert g["source"] == "autocovariance" and g["mean"] == [3.0] and g["estimator"] is None


def test_a_run_configuration_builds_it_and_checks_its_options():
    cfg = insdel.config.load({"data": {"recipe": "dielectron_sim"},
                              "model": {"preset": "quick_cern"},
                              "removal": {"kinds": ["baseline", {
                                  "name": "stationary_gaussian",
                                  "options": {"length": 4, "channels": 4, "max_lag": 2}}]}})
    assert cfg["removal"]["stationary_gaussian"] == {"length": 4, "channels": 4, "max_lag": 2}
    with pytest.raises(insdel.config.ConfigError, match=r"removal.stationary_gaussian: max_lag=4 is not a lag"):
        insdel.config.load({"data": {"recipe": "dielectron_sim"},
                            "model": {"preset": "quick_cern"},
                            "removal": {"kinds": [{"name": "stationary_gaussian",
                                                   "options": {"length": 4, "channels": 4,
                                                               "max_lag": 4}}]}})


@pytest.mark.parametrize("n_draws", [None, 3])
def test_curve_coalitions_equal_the_regression_matrix_rows_with_the_same_draws(n_draws):
    """The coalitions of insertion and deletion curves over lag x channel blocks (kept sets
    repeated across pairs that share an ordering): sample() equals conditional_rows (the
    regression matrix S_RK S_KK^-1 per coalition) to 1e-12 with the joint draws joint_draws
    gives for the seed and the target (the draws of a seed stay the same); asked pair by pair, a
    pair's rows are the same bytes."""
    L, C, B = 12, 3, 6
    rng = np.random.default_rng(14)
    series = np.c_[_ar1(4000, 0.8, seed=12), _ar1(4000, -0.4, seed=13), rng.normal(size=4000)]
    rem = removal.build("stationary_gaussian", length=L, channels=C, series=series,
                        n_draws=n_draws, seed=5)
    g = block_groups(L, C, lag_block=3)
    X = sliding_windows(series, L, stride=50)[0][:B]
    orders = np.stack([rng.permutation(g.m) for _ in range(B)])
    orders[1:3] = orders[0]
    rank = np.argsort(orders, axis=1)
    ins = rank[:, None, :] < np.arange(g.m + 1)[None, :, None]  # (B, m + 1, m): kept units
    ins = g.expand(ins.reshape(-1, g.m)).reshape(B, g.m + 1, L * C)
    keep = np.concatenate([ins, ~ins], axis=1).reshape(-1, L * C)
    targets = np.repeat(np.arange(B) + 100, 2 * (g.m + 1))
    Xr = np.repeat(X, 2 * (g.m + 1), axis=0)
    got = rem.sample(Xr, keep, targets)
    M = rem.n_draws
    if n_draws is None:
        Z, tix = rem.mean_[None, None, :], np.zeros(len(Xr), np.int64)
    else:
        chol = np.linalg.cholesky(rem.cov_)
        Z = np.stack([joint_draws(rem.mean_, chol, M, 5, t, "stationary_gaussian")
                      for t in range(100, 100 + B)])
        tix = targets - 100
    np.testing.assert_allclose(got, conditional_rows(Xr, keep, tix, Z, rem.cov_), rtol=0,
                               atol=1e-12)
    assert got.shape == (len(Xr), M, L * C)
    per = 2 * (g.m + 1)
    for b in (0, 4):
        np.testing.assert_array_equal(
            rem.sample(Xr[b * per:(b + 1) * per], keep[b * per:(b + 1) * per],
                       targets[b * per:(b + 1) * per]), got[b * per:(b + 1) * per])


def test_bench_tiny_runs():
    bench = Path(__file__).resolve().parents[1] / "bench" / "removal_stationary.py"
    p = subprocess.run([sys.executable, str(bench), "--tiny"], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "(s) / (b)" in p.stdout and "(d) direct path" in p.stdout
