"""Time as structure: windows of L steps x C channels as n = L C units (docs/multi_output.md).

**Layout.** A window is an array (L, C) in time order: step ``t = 0`` is the oldest, ``t = L - 1``
the most recent, as forecasters (torch, tint) take them. It is flattened row-major, step then
channel: column ``j = t * C + c`` (``windows.reshape(B, L * C)``). The *lag* of step t is
``L - 1 - t`` (lag 0: the most recent step); group names use lags (``lag3``, ``lag0-5:ch2``).

Groups for ``groups=`` (each an :class:`insdel.groups.Groups`, a partition of the n columns):
:func:`lag_groups` (all channels of a block of steps), :func:`channel_groups` (all steps of one
channel), :func:`block_groups` (lag block x channel) and :func:`window_groups` (named cells,
checked to partition the window). :func:`as_windows` checks windows; :func:`sliding_windows`
cuts a series (T, C) into windows and their next H values of a target channel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from ._validation import as_float_array, check_positive_int
from .groups import Groups

__all__ = ["flat_index", "as_windows", "lag_groups", "channel_groups", "block_groups",
           "window_groups", "sliding_windows", "check_window"]


def check_window(length: int, channels: int) -> tuple[int, int]:
    """``(L, C)`` checked positive integers (errors name ``length`` / ``channels``)."""
    return check_positive_int(length, "length"), check_positive_int(channels, "channels")


def flat_index(t: int, c: int, channels: int) -> int:
    """The column of step t (0 = oldest), channel c in a flattened window."""
    return int(t) * int(channels) + int(c)


def as_windows(X: ArrayLike, length: int, channels: int, *, name: str = "X") -> np.ndarray:
    """Windows as flattened rows (B, L C): a (B, L, C) array is flattened; a (B, n) array must
    have n = L C. Any other width is an error naming ``name``, L, C and the width found."""
    L, C = check_window(length, channels)
    A = np.asarray(X)
    if A.ndim == 3:
        if A.shape[1:] != (L, C):
            raise ValueError(f"{name} holds windows of shape {A.shape[1:]} (steps, channels); "
                             f"expected ({L}, {C}) for length={L}, channels={C}.")
        A = A.reshape(A.shape[0], L * C)
    A = as_float_array(name, A, ndim=(2,))
    if A.shape[1] != L * C:
        raise ValueError(f"{name} has rows of {A.shape[1]} values; a window of length={L} steps "
                         f"x channels={C} flattens to {L * C} (layout: step-major, "
                         "docs/multi_output.md).")
    return A


def _channel_names(C: int, names: Sequence[str] | None) -> list:
    if names is None:
        return [f"ch{c}" for c in range(C)]
    names = [str(s) for s in names]
    if len(names) != C:
        raise ValueError(f"channel_names has {len(names)} names for channels={C}.")
    return names


def _lag_label(t0: int, t1: int, L: int) -> str:
    """The name of steps t0 .. t1 - 1 by their lags (most recent lag first)."""
    lo, hi = L - t1, L - 1 - t0
    return f"lag{lo}" if lo == hi else f"lag{lo}-{hi}"


def _check_block(block: int, total: int, name: str, what: str) -> int:
    block = check_positive_int(block, name)
    if total % block:
        raise ValueError(f"{name}={block} does not partition the window's {total} {what} "
                         f"({total} is not a multiple of {block}).")
    return block


def lag_groups(length: int, channels: int, *, block: int = 1) -> Groups:
    """One group per block of ``block`` consecutive steps (all their channels): L / block groups,
    named by their lags. ``block`` must divide L."""
    L, C = check_window(length, channels)
    block = _check_block(block, L, "block", "steps")
    labels = np.repeat(np.arange(L) // block, C)
    return Groups.from_labels(labels, [_lag_label(t, t + block, L) for t in range(0, L, block)])


def channel_groups(length: int, channels: int, *,
                   channel_names: Sequence[str] | None = None) -> Groups:
    """One group per channel (all its steps): C groups."""
    L, C = check_window(length, channels)
    return Groups.from_labels(np.tile(np.arange(C), L), _channel_names(C, channel_names))


def block_groups(length: int, channels: int, *, lag_block: int = 1,
                 channel_names: Sequence[str] | None = None) -> Groups:
    """One group per (block of ``lag_block`` steps, channel): (L / lag_block) C groups, the lag x
    channel cells of a heat map; group ``k C + c`` is step block k (oldest first), channel c."""
    L, C = check_window(length, channels)
    lag_block = _check_block(lag_block, L, "lag_block", "steps")
    ch = _channel_names(C, channel_names)
    t = np.repeat(np.arange(L), C)
    c = np.tile(np.arange(C), L)
    labels = (t // lag_block) * C + c
    names = [f"{_lag_label(t0, t0 + lag_block, L)}:{ch[k]}" for t0 in range(0, L, lag_block)
             for k in range(C)]
    return Groups.from_labels(labels, names)


def window_groups(cells: Mapping[str, Sequence[tuple[int, int]]], length: int,
                  channels: int) -> Groups:
    """Groups named by the user, each a list of (lag, channel) cells (lag 0 = most recent).

    Every cell of the window must be in exactly one group: a cell out of range, a cell in two
    groups or a cell in none is an error naming it."""
    L, C = check_window(length, channels)
    if not isinstance(cells, Mapping) or not cells:
        raise TypeError("cells must be a non-empty mapping group name -> list of (lag, channel).")
    labels = np.full(L * C, -1, dtype=np.int64)
    for g, (name, members) in enumerate(cells.items()):
        for cell in members:
            lag, c = (int(v) for v in cell)
            if not (0 <= lag < L and 0 <= c < C):
                raise ValueError(f"group {name!r}: cell (lag={lag}, channel={c}) is outside the "
                                 f"window (length={L}, channels={C}).")
            j = flat_index(L - 1 - lag, c, C)
            if labels[j] >= 0:
                raise ValueError(f"cell (lag={lag}, channel={c}) is in two groups "
                                 f"({list(cells)[labels[j]]!r} and {name!r}): the groups must "
                                 "partition the window.")
            labels[j] = g
    missing = np.flatnonzero(labels < 0)
    if missing.size:
        t, c = np.divmod(missing[:5], C)
        shown = ", ".join(f"(lag={L - 1 - a}, channel={b})" for a, b in zip(t, c, strict=True))
        raise ValueError(f"the groups do not partition the window: {missing.size} cell(s) in no "
                         f"group ({shown}{', ...' if missing.size > 5 else ''}).")
    return Groups.from_labels(labels, [str(k) for k in cells])


def sliding_windows(series: ArrayLike, length: int, *, horizon: int = 1, target: int = 0,
                    stride: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Windows of a series (T, C) and their next ``horizon`` values of channel ``target``.

    Returns ``X`` (N, L C), flattened in the documented layout, and ``Y`` (N, horizon): window i
    covers steps ``i s .. i s + L - 1`` and ``Y[i, h]`` is the target at step ``i s + L + h``."""
    S = as_float_array("series", series, ndim=(1, 2))
    if S.ndim == 1:
        S = S[:, None]
    T, C = S.shape
    L = check_positive_int(length, "length")
    Hh = check_positive_int(horizon, "horizon")
    stride = check_positive_int(stride, "stride")
    if not 0 <= int(target) < C:
        raise ValueError(f"target={target} is not a channel of the series' {C} channels.")
    starts = np.arange(0, T - L - Hh + 1, stride)
    if starts.size == 0:
        raise ValueError(f"the series has {T} steps: too short for length={L} plus "
                         f"horizon={Hh}.")
    idx = starts[:, None] + np.arange(L)[None, :]
    X = S[idx].reshape(starts.size, L * C)
    Y = S[starts[:, None] + L + np.arange(Hh)[None, :], int(target)]
    return X, Y
