"""Removals for windows of L steps x C channels that fill the removed steps from the kept steps
of the target itself: ``locf`` (:class:`LOCF`) and ``interpolate`` (:class:`Interpolate`)
(docs/multi_output.md).

A window is laid out as :mod:`insdel.timeseries` lays it out (step-major, column
``t * C + c``, step 0 the oldest). For a coalition u (``keep``), each channel is filled on its
own: a removed cell (t, c) takes its value from the cells (t', c) that u keeps. Unlike the
time-series *policies* of the same names (one reference window per target, the same for every
coalition), v(u) here depends on which steps u keeps: the curves and the Shapley values of a
step see the values its neighbours in u carry across it. One deterministic row per coalition
(``n_draws = 1``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import as_float_array
from ..timeseries import check_window
from ._sampling import check_request
from .base import SampledRemoval, check_max_rows

__all__ = ["LOCF", "Interpolate", "nearest_kept", "check_window_width"]


def nearest_kept(keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ``keep`` (N, L, C): the last kept step at or before each step of its channel (-1 when
    none) and the first kept step at or after it (L when none), both (N, L, C) int64."""
    N, L, C = keep.shape
    t = np.arange(L, dtype=np.int64)[None, :, None]
    prev = np.maximum.accumulate(np.where(keep, t, -1), axis=1)
    nxt = np.minimum.accumulate(np.where(keep, t, L)[:, ::-1], axis=1)[:, ::-1]
    return prev, np.ascontiguousarray(nxt)


def check_window_width(name: str, X, length: int, channels: int) -> None:
    """Targets ``X`` (N, n) of a window removal have n = length x channels; else an error naming
    both (before the generic width check, which knows no window)."""
    width = np.shape(X)[-1] if np.ndim(X) == 2 else None
    if width is not None and width != length * channels:
        raise ValueError(f"removal {name!r}: the targets have {width} features but a window of "
                         f"length={length} x channels={channels} flattens to "
                         f"{length * channels} (docs/multi_output.md).")


class _WindowFill(SampledRemoval):
    """A removal that fills the removed cells of each channel from its kept cells; subclasses
    implement :meth:`fill` on (N, L, C) windows."""

    n_draws = 1

    def __init__(self, *, length: int, channels: int, fill: float | list = 0.0,
                 max_rows: int | None = None):
        self.length, self.channels = check_window(length, channels)
        f = as_float_array("fill", fill, ndim=(0, 1))
        if f.ndim == 1 and f.shape[0] != self.channels:
            raise ValueError(f"fill has {f.shape[0]} values; give one number, or one per channel "
                             f"(channels = {self.channels}).")
        if not np.all(np.isfinite(f)):
            raise ValueError(f"fill must be finite; got {f.tolist()}.")
        self.fill_value = np.broadcast_to(f, (self.channels,)).astype(np.float64)
        self.max_rows = check_max_rows(max_rows)

    def params(self) -> dict[str, Any]:
        return {**super().params(), "length": self.length, "channels": self.channels,
                "fill": self.fill_value.tolist()}

    def sample(self, X: np.ndarray, keep: np.ndarray, targets: np.ndarray) -> np.ndarray:
        L, C = self.length, self.channels
        check_window_width(self.name, X, L, C)
        X, keep, _ = check_request(self.name, X, keep, targets, L * C)
        N = X.shape[0]
        W, K = X.reshape(N, L, C), keep.reshape(N, L, C)
        prev, nxt = nearest_kept(K)
        out = self.fill(W, prev, nxt)
        none = (prev < 0) & (nxt >= L)  # a channel with no kept step: fill
        out = np.where(none, self.fill_value[None, None, :], out)
        out = np.where(K, W, out)  # kept cells keep x's values exactly
        return out.reshape(N, 1, L * C)

    def fill(self, W: np.ndarray, prev: np.ndarray, nxt: np.ndarray) -> np.ndarray:
        raise NotImplementedError


def _take(W: np.ndarray, step: np.ndarray) -> np.ndarray:
    """``W[i, step[i, t, c], c]`` with out-of-range steps clipped (their cells are replaced)."""
    return np.take_along_axis(W, np.clip(step, 0, W.shape[1] - 1), axis=1)


class LOCF(_WindowFill):
    """Last observation carried forward: a removed cell (t, c) takes the value of the last step
    before t that the coalition keeps in channel c; removed steps before the first kept one
    take the first kept value (the next observation carried backward); a channel with no kept
    step takes ``fill``.

    Parameters
    ----------
    length, channels : int
        L steps x C channels (n = L C, the layout of :mod:`insdel.timeseries`).
    fill : float or sequence of C floats, default 0.0
        The value of every cell of a channel none of whose steps is kept (the empty coalition:
        e.g. 0 for standardised series, or the channels' training means).
    max_rows : int, optional
        Model rows one request may cost before it is refused (not part of ``params()``).
    """

    name = "locf"

    def fill(self, W, prev, nxt):
        return np.where(prev >= 0, _take(W, prev), _take(W, nxt))


class Interpolate(_WindowFill):
    """Linear interpolation across the removed steps: a removed cell (t, c) between the nearest
    kept steps a < t < b of channel c is ``x[a] + (t - a) / (b - a) (x[b] - x[a])``; before the
    first or after the last kept step it takes that step's value; a channel with no kept step
    takes ``fill``. Options as :class:`LOCF`'s."""

    name = "interpolate"

    def fill(self, W, prev, nxt):
        L = W.shape[1]
        a, b = _take(W, prev), _take(W, nxt)
        t = np.arange(L, dtype=np.float64)[None, :, None]
        both = (prev >= 0) & (nxt < L)
        span = np.where(both, nxt - prev, 1)
        inner = a + (t - prev) / np.where(span == 0, 1, span) * (b - a)
        return np.where(both, inner, np.where(prev >= 0, a, b))
