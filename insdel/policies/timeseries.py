"""Reference windows for time series (docs/multi_output.md): each target window (L steps x C
channels, flattened step-major as in :mod:`insdel.timeseries`) gets a reference window built from
itself or from the training windows.

The reference is fixed per target (insdel's baseline game: a removed cell takes the reference's
value). Cells where the reference equals the target never move.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float_array, check_positive_int
from ..timeseries import as_windows, check_window
from .base import Pairing, Policy
from .registry import _builtin


class _WindowPolicy(Policy):
    """A policy over windows of ``length`` steps x ``channels`` channels (its pool's and
    targets' rows must have length x channels values: an error names both otherwise)."""

    accepts_rows = True

    def __init__(self, length: int, channels: int = 1):
        L, C = check_window(length, channels)
        self.params = {"length": L, "channels": C}

    def _windows(self, pool, T):
        L, C = self.params["length"], self.params["channels"]
        as_windows(pool, L, C, name=f"{self.name}: X_pool")
        return as_windows(T, L, C, name=f"{self.name}: targets").reshape(-1, L, C)

    def _pair(self, pool, f, tidx, T, labels, seed, progress):
        W = self._windows(pool, T)
        R = self.reference(W, pool).reshape(W.shape[0], -1)
        return Pairing(X=T.copy(), R=R, target_index=tidx.copy(),
                       reference_index=np.full(T.shape[0], -1, np.int64), name=self.name,
                       params={})

    def reference(self, W: np.ndarray, pool: np.ndarray) -> np.ndarray:
        """The reference windows (B, L, C) of the target windows ``W`` (B, L, C)."""
        raise NotImplementedError


@_builtin("locf")
class LastObservation(_WindowPolicy):
    """Last observation carried forward: each step's reference is the previous step's value,
    ``r[t] = x[t - 1]`` (the oldest step keeps its own value), so a removed step shows the
    observation before it (exactly LOCF wherever the step before a removed one is kept)."""

    def reference(self, W, pool):
        R = W.copy()
        R[:, 1:] = W[:, :-1]
        return R


@_builtin("seasonal_naive")
class SeasonalNaive(_WindowPolicy):
    """Seasonal naive: each step's reference is the value one period earlier, ``r[t] = x[t - s]``
    (the first ``period`` steps, which have no earlier value in the window, keep their own)."""

    def __init__(self, length: int, channels: int = 1, period: int = 1):
        super().__init__(length, channels)
        period = check_positive_int(period, "period")
        if period >= self.params["length"]:
            raise ValueError(f"seasonal_naive: period={period} must be below the window's "
                             f"length={self.params['length']}.")
        self.params["period"] = period

    def reference(self, W, pool):
        s = self.params["period"]
        R = W.copy()
        R[:, s:] = W[:, :-s]
        return R


@_builtin("series_mean")
class SeriesMean(_WindowPolicy):
    """The window's own mean: every step of channel c is the mean of channel c over the window."""

    def reference(self, W, pool):
        return np.broadcast_to(W.mean(axis=1, keepdims=True), W.shape).copy()


@_builtin("interpolate")
class Interpolate(_WindowPolicy):
    """Linear interpolation across the removed steps: the straight line from the window's oldest
    to its most recent step, per channel (the two end steps keep their values)."""

    def reference(self, W, pool):
        L = W.shape[1]
        w = (np.arange(L) / max(L - 1, 1))[None, :, None]
        return W[:, :1] + (W[:, -1:] - W[:, :1]) * w


@_builtin("nearest_window")
class NearestWindow(_WindowPolicy):
    """Counterfactual-style: the nearest training window (Euclidean over the whole window) that
    is not the target itself; ``background`` (M, L C) holds the training windows (default: the
    pool). ``reference_index`` is its row in the background."""

    def __init__(self, length: int, channels: int = 1, background=None):
        super().__init__(length, channels)
        if background is not None:
            background = as_windows(background, self.params["length"], self.params["channels"],
                                    name="nearest_window: background")
        self.params["background"] = background

    def _pair(self, pool, f, tidx, T, labels, seed, progress):
        self._windows(pool, T)
        bg, j = self._nearest(T, pool)
        return Pairing(X=T.copy(), R=bg[j].copy(), target_index=tidx.copy(),
                       reference_index=j, name=self.name, params={})

    def reference(self, W, pool):
        """The nearest background window (B, L, C) of each target window ``W`` (B, L, C)."""
        bg, j = self._nearest(W.reshape(W.shape[0], -1), pool)
        return bg[j].reshape(W.shape)

    def _nearest(self, T, pool):
        """The background (M, L C) and the row of each target's nearest other window in it."""
        bg = self.params["background"]
        bg = pool if bg is None else as_float_array("background", bg, ndim=(2,))
        d2 = ((T ** 2).sum(1)[:, None] - 2.0 * T @ bg.T + (bg ** 2).sum(1)[None, :])
        same = np.all(T[:, None, :] == bg[None, :, :], axis=2)
        d2[same] = np.inf  # never the window itself
        if not np.isfinite(d2).any(axis=1).all():
            raise ValueError("nearest_window: a target has no other window in the background.")
        return bg, np.argmin(d2, axis=1).astype(np.int64)
