"""Windows as structure (insdel.timeseries) and the time-series reference policies."""

import numpy as np
import pytest

import insdel
from insdel import policies
from insdel.timeseries import (
    as_windows,
    block_groups,
    channel_groups,
    lag_groups,
    sliding_windows,
    window_groups,
)

L, C = 6, 2


def _windows(B=4, seed=0):
    return np.random.default_rng(seed).normal(size=(B, L, C))


def test_layout_is_step_major():
    W = _windows()
    X = as_windows(W, L, C)
    assert X[1, 3 * C + 1] == W[1, 3, 1]
    np.testing.assert_array_equal(X, W.reshape(4, L * C))
    with pytest.raises(ValueError, match="length=6 steps x channels=2 flattens to 12"):
        as_windows(np.zeros((3, 11)), L, C)
    with pytest.raises(ValueError, match=r"shape \(5, 2\).*expected \(6, 2\)"):
        as_windows(np.zeros((3, 5, 2)), L, C)


def test_groups_by_lag_channel_and_block():
    g = lag_groups(L, C, block=2)
    assert g.m == 3 and g.names == ["lag4-5", "lag2-3", "lag0-1"]
    np.testing.assert_array_equal(g.labels, np.repeat([0, 1, 2], 2 * C))
    g = channel_groups(L, C, channel_names=["y", "u"])
    assert g.names == ["y", "u"] and list(g.columns(1)) == list(range(1, L * C, C))
    g = block_groups(L, C, lag_block=3)
    assert g.m == 4 and g.names[1] == "lag3-5:ch1"
    assert list(g.columns(3)) == [3 * C + 1, 4 * C + 1, 5 * C + 1]
    with pytest.raises(ValueError, match="lag_block=4 does not partition the window's 6 steps"):
        block_groups(L, C, lag_block=4)
    with pytest.raises(ValueError, match="block=5"):
        lag_groups(L, C, block=5)


def test_window_groups_must_partition():
    cells = {"recent": [(0, 0), (0, 1)], "rest": [(k, c) for k in range(1, L) for c in range(C)]}
    g = window_groups(cells, L, C)
    assert list(g.columns(0)) == [(L - 1) * C, (L - 1) * C + 1]
    with pytest.raises(ValueError, match="do not partition the window: 2 cell"):
        window_groups({"rest": cells["rest"]}, L, C)
    with pytest.raises(ValueError, match=r"\(lag=0, channel=1\) is in two groups"):
        window_groups({**cells, "again": [(0, 1)]}, L, C)
    with pytest.raises(ValueError, match="outside the window"):
        window_groups({"x": [(L, 0)]}, L, C)


def test_curves_over_lag_channel_groups():
    W = _windows(5)
    X = as_windows(W, L, C)
    R = np.zeros_like(X)
    def f(Z):
        return Z[:, -1] + 0.5 * Z[:, 0]
    A = X * np.where(np.arange(L * C) % C == 1, 1.0, 0.5)
    c = insdel.curves(f, X, R, A, groups=block_groups(L, C, lag_block=2))
    assert c.shape == (5, L // 2 * C + 1)
    np.testing.assert_allclose(c[:, -1], f(X))


def _pair(name, W, **kw):
    return policies.build(name, length=L, channels=C, **kw).pair(None, W.reshape(len(W), -1))


def test_policies_against_hand_built_references():
    W = _windows(3)
    R = _pair("locf", W).R.reshape(3, L, C)
    for t in range(L):
        np.testing.assert_array_equal(R[:, t], W[:, max(t - 1, 0)])
    R = _pair("seasonal_naive", W, period=2).R.reshape(3, L, C)
    for t in range(L):
        np.testing.assert_array_equal(R[:, t], W[:, t - 2] if t >= 2 else W[:, t])
    R = _pair("series_mean", W).R.reshape(3, L, C)
    for t in range(L):
        np.testing.assert_allclose(R[:, t], W.mean(axis=1))
    R = _pair("interpolate", W).R.reshape(3, L, C)
    for t in range(L):
        np.testing.assert_allclose(R[:, t], W[:, 0] + (W[:, -1] - W[:, 0]) * t / (L - 1))
    p = _pair("nearest_window", W)
    flat = W.reshape(3, -1)
    for b in range(3):
        d = [np.inf if k == b else np.sum((flat[b] - flat[k]) ** 2) for k in range(3)]
        assert p.reference_index[b] == int(np.argmin(d))
        np.testing.assert_array_equal(p.R[b], flat[np.argmin(d)])
    nw = policies.build("nearest_window", length=L, channels=C)
    np.testing.assert_array_equal(nw.reference(W, flat), p.R.reshape(W.shape))


def test_policies_refuse_wrong_windows():
    with pytest.raises(ValueError, match="length=6 steps x channels=2 flattens to 12"):
        policies.build("locf", length=L, channels=C).pair(None, np.zeros((3, 10)))
    with pytest.raises(ValueError, match="period=6 must be below"):
        policies.build("seasonal_naive", length=L, channels=C, period=6)


def test_sliding_windows():
    S = np.arange(20.0).reshape(10, 2)
    X, Y = sliding_windows(S, 3, horizon=2, target=1)
    assert X.shape == (6, 6) and Y.shape == (6, 2)
    np.testing.assert_array_equal(X[1], S[1:4].reshape(-1))
    np.testing.assert_array_equal(Y[1], S[4:6, 1])
    with pytest.raises(ValueError, match="too short"):
        sliding_windows(S, 9, horizon=2)


def test_check_window_and_flat_index():
    from insdel.timeseries import check_window, flat_index

    assert check_window(np.int64(5), 2) == (5, 2)
    with pytest.raises((TypeError, ValueError), match="length"):
        check_window(0, 2)
    with pytest.raises((TypeError, ValueError), match="channels"):
        check_window(5, 1.5)
    W = np.arange(2 * 5 * 3).reshape(2, 5, 3)  # step-major: column t C + c
    flat = W.reshape(2, -1)
    for t in range(5):
        for c in range(3):
            assert flat[1, flat_index(t, c, 3)] == W[1, t, c]
