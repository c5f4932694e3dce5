"""The fitted sampled removals (conditional_gaussian, conditional_mean, conditional_knn) against
direct NumPy computations, their common random numbers, and the docs' own-removal example."""

from __future__ import annotations

import json
import pickle
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from insdel import removal
from insdel.removal import gaussian as gaussian_module
from insdel.removal import knn as knn_module
from insdel.removal import target_rng
from insdel.removal.gaussian import (
    ConditionalGaussian,
    ConditionalMean,
    conditional_rows,
    precision,
    solved_conditional_rows,
)
from insdel.removal.knn import ConditionalKNN

ROOT = Path(__file__).resolve().parents[1]
n = 6


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(n, n))
    return rng.normal(size=(400, n)) @ A + rng.normal(size=n)


def _moments(data):
    return data.mean(axis=0), np.cov(data, rowvar=False)


def _direct(mu, S, x, keep):
    """The Gaussian conditional of the removed block: mean and covariance, by np.linalg."""
    K, R = np.flatnonzero(keep), np.flatnonzero(~keep)
    if K.size == 0:
        return mu[R], S[np.ix_(R, R)]
    SKK_inv = np.linalg.inv(S[np.ix_(K, K)])
    SRK = S[np.ix_(R, K)]
    return mu[R] + SRK @ SKK_inv @ (x[K] - mu[K]), S[np.ix_(R, R)] - SRK @ SKK_inv @ SRK.T


def _coalitions(rng, count, width=n):
    size = rng.integers(0, width + 1, size=count)
    return np.argsort(rng.random((count, width)), axis=1) < size[:, None]


# ---------------------------------------------------------------------- Gaussian, exact algebra


def test_conditional_mean_equals_the_direct_computation(data):
    rng = np.random.default_rng(1)
    mu, S = _moments(data)
    keep = _coalitions(rng, 40)
    keep[0], keep[1] = False, True
    X = data[rng.integers(0, len(data), 40)] + rng.normal(size=(40, n))
    rows = ConditionalMean(data).sample(X, keep, np.arange(40))
    assert rows.shape == (40, 1, n)
    for i in range(40):
        R = ~keep[i]
        mean, _ = _direct(mu, S, X[i], keep[i])
        np.testing.assert_allclose(rows[i, 0, R], mean, rtol=1e-10, atol=1e-10)
        assert np.array_equal(rows[i, 0, keep[i]], X[i, keep[i]])


def test_matheron_rows_are_the_conditional_map_of_the_targets_joint_draws(data):
    """The empty coalition's rows are the target's joint draws z; every other coalition of the
    target (asked in another call) maps the same z to z_R + S_RK S_KK^-1 (x_K - z_K)."""
    rng = np.random.default_rng(2)
    _, S = _moments(data)
    g = ConditionalGaussian(data, n_draws=16, seed=3)
    x = data[5]
    z = g.sample(x[None], np.zeros((1, n), bool), [7])[0]
    keep = _coalitions(rng, 30)
    rows = g.sample(np.tile(x, (30, 1)), keep, np.full(30, 7))
    for i in range(30):
        K, R = np.flatnonzero(keep[i]), np.flatnonzero(~keep[i])
        assert np.array_equal(rows[i][:, K], np.tile(x[K], (16, 1)))
        if K.size:
            want = z[:, R] + (np.linalg.solve(S[np.ix_(K, K)], (x[K] - z[:, K]).T).T
                              @ S[np.ix_(R, K)].T)
        else:
            want = z[:, R]
        np.testing.assert_allclose(rows[i][:, R], want, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("n_kept", [0, 2, 4])
def test_sampled_moments_are_the_direct_conditional_moments(data, n_kept):
    M = 20_000
    mu, S = _moments(data)
    keep = np.zeros(n, bool)
    keep[np.random.default_rng(n_kept).permutation(n)[:n_kept]] = True
    x = data[11] + 0.5
    mean, C = _direct(mu, S, x, keep)
    rows = ConditionalGaussian(data, n_draws=M, seed=5).sample(x[None], keep[None], [0])[0]
    Zr = rows[:, ~keep]
    se_mean = np.sqrt(np.diag(C) / M)
    assert np.all(np.abs(Zr.mean(axis=0) - mean) < 4 * se_mean)
    emp = np.cov(Zr, rowvar=False).reshape(C.shape)
    se_cov = np.sqrt((np.outer(np.diag(C), np.diag(C)) + C ** 2) / M)
    assert np.all(np.abs(emp - C) < 4 * se_cov)


@pytest.mark.parametrize("with_precision", [False, True])
@pytest.mark.parametrize("width", [7, 40])
def test_solved_rows_equal_the_regression_matrix_rows(width, with_precision, monkeypatch):
    """solved_conditional_rows (a Cholesky factor per distinct kept set, a solve per row; with
    the precision, of P_RR where fewer cells are removed than kept) gives conditional_rows'
    numbers to 1e-12: M = 3 draws, kept sets repeated across rows and targets, every cell kept,
    none kept; a row's bytes do not depend on the rows asked with it; the parallel path (many
    sets) equals the serial one."""
    rng = np.random.default_rng(11)
    A = rng.normal(size=(width, width))
    S = A @ A.T / width + 0.2 * np.eye(width)
    N = 300 if width == 40 else 60
    X = rng.normal(size=(N, width))
    keep = rng.random((N, width)) < rng.random((N, 1))
    keep[0], keep[1] = True, False
    keep[10:20] = keep[9]
    Z = rng.normal(size=(4, 3, width))
    tix = rng.integers(0, 4, N)
    P = precision(S) if with_precision else None
    got = solved_conditional_rows(X, keep, tix, Z, S, P)
    np.testing.assert_allclose(got, conditional_rows(X, keep, tix, Z, S), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(got[0], np.broadcast_to(X[0], (3, width)))
    np.testing.assert_array_equal(got[1], Z[tix[1]])
    np.testing.assert_array_equal(got[:, :, :][keep[:, None, :].repeat(3, 1)],
                                  np.broadcast_to(X[:, None, :], got.shape)[
                                      keep[:, None, :].repeat(3, 1)])
    for part in (np.arange(5, 25), np.array([12])):
        np.testing.assert_array_equal(
            solved_conditional_rows(X[part], keep[part], tix[part], Z, S, P), got[part])
    monkeypatch.setattr(gaussian_module, "_SERIAL_WORK", 0)  # the parallel path on these sets
    np.testing.assert_array_equal(solved_conditional_rows(X, keep, tix, Z, S, P), got)


def test_linear_model_value(data):
    rng = np.random.default_rng(6)
    w, c = rng.normal(size=n), 0.7
    mu, S = _moments(data)
    x = data[3] - 0.3
    M = 5000
    g = ConditionalGaussian(data, n_draws=M, seed=1)
    for keep in (np.array([1, 0, 1, 0, 0, 1], bool), np.zeros(n, bool), np.ones(n, bool)):
        mean, C = _direct(mu, S, x, keep)
        z = x.copy()
        z[~keep] = mean
        v_direct = w @ z + c
        v_mean = ConditionalMean(data).sample(x[None], keep[None], [0])[0] @ w + c
        np.testing.assert_allclose(v_mean, [v_direct], rtol=1e-12, atol=1e-12)
        v_draws = g.sample(x[None], keep[None], [2])[0] @ w + c
        wr = w[~keep]
        se = np.sqrt(wr @ C @ wr / M) if wr.size else 0.0
        assert abs(v_draws.mean() - v_direct) <= 4 * se + 1e-12


# ------------------------------------------------------------------ common random numbers, seeds


@pytest.mark.parametrize("make", [
    lambda d: ConditionalGaussian(d, n_draws=8, seed=4),
    lambda d: ConditionalMean(d),
    lambda d: ConditionalKNN(d, n_neighbors=5, seed=4),
], ids=["gaussian", "mean", "knn"])
def test_common_random_numbers_and_seeds(data, make):
    rng = np.random.default_rng(7)
    T, per = 40, 12  # 480 coalitions: the parallel kernels run
    X = np.repeat(data[:T] + 0.1, per, axis=0)
    keep = _coalitions(rng, T * per)
    tix = np.repeat(np.arange(T) * 3 + 1, per)
    rem = make(data)
    full = rem.sample(X, keep, tix)
    assert full.shape == (T * per, rem.n_draws, n)
    assert np.array_equal(full[np.broadcast_to(keep[:, None, :], full.shape)],
                          np.broadcast_to(X[:, None, :], full.shape)[
                              np.broadcast_to(keep[:, None, :], full.shape)])
    # the same bytes from a fresh instance, and from shuffled, chunked, partial requests
    assert make(data).sample(X, keep, tix).tobytes() == full.tobytes()
    perm = rng.permutation(T * per)
    again = np.empty_like(full)
    fresh = make(data)
    for chunk in np.array_split(perm, 7):
        again[chunk] = fresh.sample(X[chunk], keep[chunk], tix[chunk])
    assert again.tobytes() == full.tobytes()
    one = make(data).sample(X[[100]], keep[[100]], tix[[100]])
    assert one.tobytes() == full[[100]].tobytes()
    restored = pickle.loads(pickle.dumps(rem))
    assert restored.sample(X[:50], keep[:50], tix[:50]).tobytes() == full[:50].tobytes()
    if rem.name != "conditional_mean":  # a different seed, different draws
        other = type(rem)(data, **{k: v for k, v in _options(rem).items()}, seed=9)
        assert not np.array_equal(other.sample(X, keep, tix), full)
        # different targets read different draws
        assert not np.array_equal(rem.sample(X[:1], np.zeros((1, n), bool), [0]),
                                  rem.sample(X[:1], np.zeros((1, n), bool), [1]))


def _options(rem):
    return ({"n_draws": rem.n_draws} if rem.name == "conditional_gaussian"
            else {"n_neighbors": rem.n_neighbors})


# ------------------------------------------------------------ degenerate, binary and one-hot data


def test_singular_covariance_warns_naming_the_columns(data):
    d = data.copy()
    d[:, 1] = 2.5  # constant
    d[:, 4] = d[:, 0] - 2 * d[:, 3]  # collinear
    with pytest.warns(UserWarning) as rec:
        g = ConditionalGaussian(d, n_draws=4)
    msg = str(rec[0].message)
    assert "constant column(s) 1" in msg and "linearly dependent column(s) 0, 3, 4" in msg
    ridge = 1e-6 * np.mean(np.diag(np.cov(d, rowvar=False)))
    assert f"ridge = {ridge:.3g}" in msg
    p = g.params()
    assert p["ridge_added"] == pytest.approx(ridge) and p["regularised_columns"] == [0, 1, 3, 4]
    json.dumps(p)
    keep = np.zeros((3, n), bool)
    keep[1, [0, 3]] = True
    rows = g.sample(d[:3] + 0.2, keep, [0, 1, 2])
    assert np.isfinite(rows).all()
    assert (rows[:, :, 1] == 2.5).all()  # a constant column keeps its value
    # the collinear column follows its parents when they are kept (up to the ridge)
    np.testing.assert_allclose(rows[1, :, 4], rows[1, :, 0] - 2 * rows[1, :, 3], atol=1e-2)
    with pytest.warns(UserWarning, match="ridge = 0.5"):
        assert ConditionalMean(d, ridge=0.5).params()["ridge_added"] == 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a regular covariance: no warning, no ridge
        assert ConditionalGaussian(data).params()["ridge_added"] == 0.0


def test_binary_and_one_hot_columns_end_at_their_levels():
    rng = np.random.default_rng(8)
    N = 600
    d = rng.normal(size=(N, 7))
    d[:, 1] = (d[:, 0] + rng.normal(size=N) > 0).astype(float)  # 0/1
    d[:, 2] = np.where(rng.random(N) < 0.3, -1.0, 1.0)  # charges
    cat = rng.integers(0, 3, N)
    d[:, 4:7] = np.eye(3)[cat]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a complete group sums to 1: expected, no warning
        g = ConditionalGaussian(d, n_draws=16, one_hot=[[4, 5, 6]])
    assert g.params()["binary_columns"] == [1, 2] and g.params()["one_hot"] == [[4, 5, 6]]
    assert g.params()["ridge_added"] > 0 and g.params()["regularised_columns"] == [4, 5, 6]
    keep = _coalitions(rng, 200, 7)
    X = d[:200] + np.r_[0.3, 0, 0, 0.1, 0, 0, 0]
    rows = g.sample(X, keep, np.arange(200))
    assert np.isin(rows[:, :, 1], [0.0, 1.0]).all() and np.isin(rows[:, :, 2], [-1, 1]).all()
    grp = rows[:, :, 4:7]
    assert np.isin(grp, [0.0, 1.0]).all() and (grp.sum(axis=2) == 1).all()
    # a kept hot member: the removed members are cold
    k = np.zeros((1, 7), bool)
    k[0, 5] = True
    x = d[cat == 1][:1]
    assert (g.sample(x, k, [0])[0, :, [4, 6]] == 0).all()
    # the kept continuous column is x's, the removed binary column not rounded without binary
    with pytest.warns(UserWarning):
        plain = ConditionalGaussian(d, n_draws=16, binary=False)
        mean = ConditionalMean(d)
    assert not np.isin(plain.sample(X, keep, np.arange(200))[~keep[:, 1]][:, :, 1],
                       [0.0, 1.0]).all()
    assert mean.sample(X[:1], np.zeros((1, 7), bool), [0])[0, 0, 1] == \
        pytest.approx(d[:, 1].mean())  # conditional_mean does not round


# -------------------------------------------------------------------------------------- knn


def _knn_brute(data, X, keep, targets, K, seed):
    sd = data.std(axis=0)
    sd[sd == 0] = 1.0
    out = np.empty((len(X), K, data.shape[1]))
    for i in range(len(X)):
        perm = target_rng(seed, int(targets[i]), "conditional_knn").permutation(len(data))
        rank = np.empty(len(data), int)
        rank[perm] = np.arange(len(data))
        kc = keep[i]
        dist = (((X[i, kc] - data[:, kc]) / sd[kc]) ** 2).sum(axis=1)
        nearest = np.lexsort((rank, dist))[:K]
        out[i] = np.where(kc, X[i], data[nearest])
    return out


@pytest.mark.parametrize("budget", [None, 24])
def test_knn_equals_a_brute_force_loop(monkeypatch, budget):
    if budget is not None:  # several groups of targets per call
        monkeypatch.setattr(knn_module, "_RANK_BUDGET", budget)
    rng = np.random.default_rng(9)
    d = rng.integers(0, 3, size=(12, 3)).astype(float)  # many ties
    d[:4] = d[4:8]
    d[:, 2] *= 10.0
    masks = np.array([[(c >> j) & 1 for j in range(3)] for c in range(8)], bool)
    X = np.vstack([np.repeat(d[[0, 5]], 8, axis=0), rng.normal(size=(40, 3))])
    keep = np.vstack([np.tile(masks, (2, 1)), _coalitions(rng, 40, 3)])
    targets = np.r_[np.repeat([0, 1], 8), rng.integers(0, 30, 40)]
    rem = ConditionalKNN(d, n_neighbors=4, seed=2)
    got = rem.sample(X, keep, targets)
    assert np.array_equal(got, _knn_brute(d, X, keep, targets, 4, 2))
    # the empty coalition: K random rows of the target's order, the same for every request
    perm = target_rng(2, 0, "conditional_knn").permutation(12)
    assert np.array_equal(got[0], d[perm[:4]])
    big = np.repeat(X, 3, axis=0)  # the parallel kernel
    assert np.array_equal(rem.sample(big, np.repeat(keep, 3, axis=0),
                                     np.repeat(targets, 3)), np.repeat(got, 3, axis=0))


# ------------------------------------------------------------------------------ bad inputs


def test_bad_inputs(data):
    with pytest.raises(ValueError, match="needs training data"):
        ConditionalGaussian()
    with pytest.raises(ValueError, match="needs training data"):
        removal.build("conditional_knn")
    with pytest.raises(ValueError, match="needs training data"):
        ConditionalMean(None)
    with pytest.raises(ValueError, match="n_draws must be an integer >= 1"):
        ConditionalGaussian(data, n_draws=0)
    for bad in (1.5, True, "3"):
        with pytest.raises(TypeError, match="n_draws"):
            ConditionalGaussian(data, n_draws=bad)
        with pytest.raises(TypeError, match="n_neighbors"):
            ConditionalKNN(data, n_neighbors=bad)
    with pytest.raises(ValueError, match="n_neighbors must be an integer >= 1"):
        ConditionalKNN(data, n_neighbors=0)
    with pytest.raises(ValueError, match="n_neighbors = 401 is more than data's 400 rows"):
        ConditionalKNN(data, n_neighbors=401)
    with pytest.raises(ValueError, match="seed"):
        ConditionalKNN(data, seed=-1)
    with pytest.raises(ValueError, match="ridge"):
        ConditionalGaussian(data, ridge=0.0)
    with pytest.raises(ValueError, match="binary"):
        ConditionalGaussian(data, binary="yes")
    with pytest.raises(ValueError, match="one_hot column 0 has 400 distinct values"):
        ConditionalGaussian(data, one_hot=[[0, 1]])
    with pytest.raises(ValueError, match="out of range"):
        ConditionalGaussian(data, binary=[6])
    for rem in (ConditionalGaussian(data), ConditionalMean(data), ConditionalKNN(data)):
        with pytest.raises(ValueError, match=r"X have 5 features .* data with 6 columns"):
            rem.sample(data[:2, :5], np.ones((2, 5), bool), [0, 1])
        with pytest.raises(ValueError, match=r"keep must have the shape of X, \(2, 6\)"):
            rem.sample(data[:2], np.ones((2, 5), bool), [0, 1])
        with pytest.raises(ValueError, match="keep must be bool"):
            rem.sample(data[:2], np.full((2, 6), 0.5), [0, 1])
        with pytest.raises(ValueError, match="targets must have shape"):
            rem.sample(data[:2], np.ones((2, 6), bool), [0])
        with pytest.raises(ValueError, match="targets must be integer"):
            rem.sample(data[:2], np.ones((2, 6), bool), [0, -1])
        assert rem.sample(data[:0], np.ones((0, 6), bool), []).shape == (0, rem.n_draws, 6)


def test_registry_and_params(data):
    assert {"conditional_gaussian", "conditional_mean", "conditional_knn"} <= set(
        removal.available())
    g = removal.build("conditional_gaussian", data=data, n_draws=3, seed=2)
    p = g.params()
    assert p["n_draws"] == 3 and p["seed"] == 2 and p["data_rows"] == 400
    assert len(p["data_sha256"]) == 64 and p["ridge"] is None
    json.dumps(p)
    json.dumps(removal.build("conditional_knn", data=data).params())
    json.dumps(removal.build("conditional_mean", data=data).params())
    assert removal.options_of("conditional_knn") == {"data": None, "n_neighbors": 10, "seed": 0,
                                                     "one_hot": None, "max_rows": None}


# -------------------------------------------------------------------- the docs' example, bench


def test_docs_iterative_imputer_example(data):
    text = (ROOT / "docs" / "removal.md").read_text(encoding="utf-8")
    section = text[text.index("## Your own removal"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    ns: dict = {}
    exec(compile(code, "docs/removal.md", "exec"), ns)
    rem = ns["ImputerRemoval"](data[:200], n_draws=6, seed=1)
    rng = np.random.default_rng(10)
    keep = _coalitions(rng, 6)
    keep[0] = False
    X = data[200:206]
    tix = np.array([0, 0, 1, 1, 2, 2])
    rows = rem.sample(X, keep, tix)
    assert rows.shape == (6, 6, n)
    for i in range(6):
        assert (rows[i][:, keep[i]] == X[i, keep[i]]).all()
    assert np.ptp(rows[0], axis=0).min() > 0  # the empty coalition is drawn, not the mean
    again = rem.sample(X[::-1], keep[::-1], tix[::-1])[::-1]
    assert np.array_equal(again, rows)  # common random numbers: order does not matter


def test_bench_tiny_runs():
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "removal_sampling.py"), "--tiny"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "(s)/(m)" in p.stdout and "conditional_knn" in p.stdout
