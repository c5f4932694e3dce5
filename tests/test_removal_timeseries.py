"""The window removals ``locf`` and ``interpolate`` (insdel.removal.timeseries): removed steps
filled from the target's own kept steps, per channel, against hand-built rows."""

from __future__ import annotations

import numpy as np
import pytest

import insdel
from insdel import removal
from insdel.timeseries import block_groups

# a window of L = 5 steps x C = 2 channels: x[t, c] = 10 c + t^2 (rows: step-major, t * C + c)
L, C = 5, 2
W = np.array([[10 * c + t * t for c in range(C)] for t in range(L)], dtype=float)
X = W.reshape(1, L * C)


def _keep(cells):
    k = np.zeros((L, C), bool)
    for t, c in cells:
        k[t, c] = True
    return k.reshape(1, L * C)


def _rows(name, cells, **opts):
    r = removal.build(name, length=L, channels=C, **opts)
    out = r.sample(X, _keep(cells), np.array([0]))
    assert out.shape == (1, 1, L * C)
    return out[0, 0].reshape(L, C)


def test_locf_carries_the_last_kept_step_forward_per_channel():
    # channel 0 keeps steps 1 and 3; channel 1 keeps step 4 only
    got = _rows("locf", [(1, 0), (3, 0), (4, 1)], fill=[-1.0, -2.0])
    want = np.array([[1, 26], [1, 26], [1, 26], [9, 26], [9, 26]], dtype=float)
    np.testing.assert_array_equal(got, want)


def test_interpolate_draws_the_line_between_the_nearest_kept_steps():
    got = _rows("interpolate", [(0, 0), (3, 0), (2, 1)])
    # channel 0: 0 at t=0, 9 at t=3 -> 3, 6 between, 9 after; channel 1: 14 everywhere
    want = np.array([[0, 14], [3, 14], [6, 14], [9, 14], [9, 14]], dtype=float)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["locf", "interpolate"])
def test_a_channel_with_no_kept_step_takes_fill_and_kept_cells_keep_x(name):
    got = _rows(name, [(2, 1)], fill=[7.0, 0.0])
    np.testing.assert_array_equal(got[:, 0], 7.0)
    np.testing.assert_array_equal(got[:, 1], 14.0)
    every = _rows(name, [(t, c) for t in range(L) for c in range(C)])
    np.testing.assert_array_equal(every, W)
    empty = _rows(name, [], fill=3.0)
    np.testing.assert_array_equal(empty, 3.0)


def test_curves_under_locf_are_the_model_on_the_hand_built_rows():
    """Insertion over lag x channel blocks: each curve point is f of the locf row of the
    coalition the ordering has inserted so far (a linear f, so v is f of that row)."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=L * C)
    f = insdel.as_model(lambda Z: Z @ w)
    g = block_groups(L, C, lag_block=1)  # one unit per cell
    A = rng.normal(size=(1, L * C))
    rem = removal.build("locf", length=L, channels=C)
    curve = insdel.curves(f, X, None, A, removal=rem, groups=g, mode="insertion")[0]
    order = np.argsort(-A[0], kind="stable")
    cols = [g.columns(u) for u in order]
    for k in range(L * C + 1):
        keep = np.zeros(L * C, bool)
        for cc in cols[:k]:
            keep[cc] = True
        row = rem.sample(X, keep[None], np.array([0]))[0, 0]
        assert curve[k] == pytest.approx(row @ w, abs=1e-12)


def test_bad_options_and_widths_are_named():
    with pytest.raises(ValueError, match="length"):
        removal.build("locf", length=0, channels=2)
    with pytest.raises(ValueError, match="fill has 3 values"):
        removal.build("interpolate", length=4, channels=2, fill=[1, 2, 3])
    with pytest.raises(ValueError, match="unknown|period"):
        removal.build("locf", length=4, channels=2, period=2)
    r = removal.build("locf", length=4, channels=2)
    with pytest.raises(ValueError, match=r"6 features but a window of length=4 x channels=2 "
                                         r"flattens to 8"):
        r.sample(np.zeros((1, 6)), np.ones((1, 6), bool), np.array([0]))
    assert r.params()["length"] == 4 and removal.draws_rows(r)


def test_a_run_configuration_builds_the_window_removals():
    cfg = insdel.config.load({"data": {"recipe": "dielectron_sim"},
                              "model": {"preset": "quick_cern"},
                              "removal": {"kinds": ["baseline", {
                                  "name": "locf", "options": {"length": 4, "channels": 4}}]}})
    assert cfg["removal"]["locf"] == {"length": 4, "channels": 4}
    with pytest.raises(insdel.config.ConfigError, match=r"removal.kinds\[0\].options.lenght"):
        insdel.config.load({"data": {"recipe": "dielectron_sim"},
                            "model": {"preset": "quick_cern"},
                            "removal": {"kinds": [{"name": "interpolate",
                                                   "options": {"lenght": 4}}]}})


def test_conditional_removals_fitted_on_windows_use_the_lag_structure():
    """conditional_mean / conditional_gaussian fitted on flattened windows of an AR(1) series
    (phi = 0.8): the most recent step removed, the rest kept, is filled with about phi times
    the step before it (the Markov structure the fitted covariance holds); curves over lag x
    channel blocks run under it."""
    from insdel.timeseries import sliding_windows

    rng = np.random.default_rng(0)
    T, phi, Lw = 40_000, 0.8, 6
    e = rng.normal(size=T)
    y = np.empty(T)
    y[0] = e[0]
    for t in range(1, T):
        y[t] = phi * y[t - 1] + e[t]
    series = np.c_[y, rng.normal(size=T)]  # a second, independent channel
    Xw, _ = sliding_windows(series, Lw, horizon=1, target=0)
    rem = removal.build("conditional_mean", data=Xw)
    keep = np.ones((5, Lw * 2), bool)
    keep[:, (Lw - 1) * 2] = False  # the most recent step of channel 0
    rows = rem.sample(Xw[:5], keep, np.arange(5))[:, 0]
    np.testing.assert_allclose(rows[:, (Lw - 1) * 2], phi * Xw[:5, (Lw - 2) * 2], atol=0.05)
    gauss = removal.build("conditional_gaussian", data=Xw, n_draws=4)
    g = block_groups(Lw, 2, lag_block=2)
    f = insdel.as_model(lambda Z: Z[:, -2] + 0.5 * Z[:, -4])
    c = insdel.curves(f, Xw[:3], None, rng.normal(size=(3, Lw * 2)), removal=gauss, groups=g)
    assert c.shape == (3, g.m + 1) and np.isfinite(c).all()
