"""Hybrid points: features in a set u from the target x, the rest from the reference r.

``hybrid(x, r, u)[j] = x[j] if j in u else r[j]`` (conventions: *Points*). Sets are boolean masks
(..., n) or integer bitmasks (bit j, ``1 << j``, means feature j comes from x).

Internally, sets of any size are stored as packed little-endian ``uint64`` words (``W = ceil(n/64)``
words per set) and hybrid rows are written by a numba kernel straight into the model's input dtype.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ._validation import as_float_array, check_bool

__all__ = ["hybrid", "masks_to_words", "n_words", "build_rows"]


def n_words(n: int) -> int:
    """Number of uint64 words that hold a set of ``n`` features."""
    return (n + 63) // 64


def masks_to_words(masks: np.ndarray) -> np.ndarray:
    """Pack boolean masks (..., n) into uint64 words (..., W), bit j of word j // 64 = feature j."""
    masks = np.asarray(masks, dtype=bool)
    n = masks.shape[-1]
    W = n_words(n)
    pad = W * 64 - n
    if pad:
        masks = np.concatenate([masks, np.zeros(masks.shape[:-1] + (pad,), bool)], axis=-1)
    packed = np.packbits(masks, axis=-1, bitorder="little")  # (..., W*8) bytes
    return np.ascontiguousarray(packed).view("<u8").reshape(masks.shape[:-1] + (W,))


@nb.njit(parallel=True, cache=True, nogil=True)
def _build_rows_kernel(X, R, pair_idx, words, out):  # pragma: no cover - numba
    N = words.shape[0]
    n = X.shape[1]
    W = words.shape[1]
    for i in nb.prange(N):
        b = pair_idx[i]
        for w in range(W):
            word = words[i, w]
            j0 = w * 64
            j1 = min(n, j0 + 64)
            for j in range(j0, j1):
                if word & np.uint64(1):
                    out[i, j] = X[b, j]
                else:
                    out[i, j] = R[b, j]
                word >>= np.uint64(1)


@nb.njit(parallel=True, cache=True, nogil=True)
def _build_rows_units_kernel(X, R, pair_idx, words, unit_of, out):  # pragma: no cover - numba
    N = words.shape[0]
    n = X.shape[1]
    for i in nb.prange(N):
        b = pair_idx[i]
        for j in range(n):
            g = unit_of[j]
            if (words[i, g >> 6] >> np.uint64(g & 63)) & np.uint64(1):
                out[i, j] = X[b, j]
            else:
                out[i, j] = R[b, j]


def build_rows(X: np.ndarray, R: np.ndarray, pair_idx: np.ndarray, words: np.ndarray,
               out: np.ndarray | None = None, dtype=None, unit_of: np.ndarray | None = None
               ) -> np.ndarray:
    """Build hybrid rows ``out[i] = hybrid(X[pair_idx[i]], R[pair_idx[i]], words[i])`` (numba).

    ``X`` and ``R`` should already be in the output dtype (the model's input dtype). With
    ``unit_of`` (n,) the words are sets of units (groups): column j comes from x when its unit
    ``unit_of[j]`` is in the set.
    """
    if dtype is None:
        dtype = X.dtype
    N = words.shape[0]
    if out is None:
        out = np.empty((N, X.shape[1]), dtype=dtype)
    if N and unit_of is not None:
        _build_rows_units_kernel(X, R, np.ascontiguousarray(pair_idx, dtype=np.int64),
                                 np.ascontiguousarray(words, dtype=np.uint64),
                                 np.ascontiguousarray(unit_of, dtype=np.int64), out)
    elif N:
        _build_rows_kernel(X, R, np.ascontiguousarray(pair_idx, dtype=np.int64),
                           np.ascontiguousarray(words, dtype=np.uint64), out)
    return out


def _int_masks_to_bool(mask: np.ndarray, n: int) -> np.ndarray:
    if n > 63:
        raise ValueError(
            f"integer bitmasks hold at most 63 features; n = {n}. Pass boolean masks (..., n) instead."
        )
    mask = mask.astype(np.int64)
    if (mask < 0).any() or (mask >> n).any():
        bad = np.flatnonzero(((mask < 0) | ((mask >> n) != 0)).reshape(-1))
        raise ValueError(
            f"integer bitmask(s) out of range for n = {n} features (valid: 0 .. 2**{n} - 1); "
            f"first bad flat position {int(bad[0])}."
        )
    return ((mask[..., None] >> np.arange(n, dtype=np.int64)) & 1).astype(bool)


def hybrid(x, r, mask, *, outer: bool | None = None) -> np.ndarray:
    """Hybrid points: ``x[j]`` where feature j is in the set, else ``r[j]``.

    Parameters
    ----------
    x, r : array_like, shape (n,) or (B, n)
        Target(s) and reference(s). A 1-D ``r`` is used for every row of a 2-D ``x``.
    mask : array_like
        Boolean masks of shape (..., n) or integer bitmasks of shape (...) with bit j meaning
        "feature j from x" (integer masks need n <= 63).
    outer : bool, optional
        With 2-D ``x`` (B pairs): if False the mask's first axis is the pair axis (it must have
        length B, or the mask is a single set); if True every mask is applied to every pair and the
        result has shape (B, *mask_shape, n). The default is False when the mask's leading length is
        B, else True.

    Returns
    -------
    ndarray
        float64 hybrid points, shape ``mask_shape + (n,)`` (1-D ``x``) or as described above.
    """
    x = as_float_array("x", x)
    r = as_float_array("r", r)
    n = x.shape[-1]
    if r.shape[-1] != n:
        raise ValueError(f"x and r must have the same number of features; got {n} and {r.shape[-1]}.")
    if x.ndim == 1 and r.ndim == 2:
        x = np.broadcast_to(x, r.shape)
    if x.ndim == 2 and r.ndim == 1:
        r = np.broadcast_to(r, x.shape)
    if x.shape != r.shape:
        raise ValueError(f"x and r must have matching shapes; got {x.shape} and {r.shape}.")
    m = np.asarray(mask)
    if m.dtype == bool:
        if m.shape[-1:] != (n,):
            raise ValueError(f"boolean mask must have last dimension n = {n}; got shape {m.shape}.")
    elif np.issubdtype(m.dtype, np.integer):
        m = _int_masks_to_bool(m, n)
    else:
        raise TypeError(f"mask must be boolean (..., n) or integer bitmasks; got dtype {m.dtype}.")
    S = m.shape[:-1]
    if x.ndim == 1:
        return np.where(m, x, r)
    B = x.shape[0]
    if S == ():
        return np.where(m, x, r)
    if outer is None:
        outer = S[0] != B
    else:
        outer = check_bool(outer, "outer")
    if not outer:
        if S[0] != B:
            raise ValueError(f"mask's first axis ({S[0]}) must equal the number of pairs B = {B}.")
        shape = (B,) + (1,) * (len(S) - 1) + (n,)
        return np.where(m, x.reshape(shape), r.reshape(shape))
    shape = (B,) + (1,) * len(S) + (n,)
    return np.where(m[None], x.reshape(shape), r.reshape(shape))
