"""numba kernels of the interaction indices: weighted superset sums of the Möbius effects in
each pair's differing subspace D_b (the ragged layout of :mod:`insdel._decomposition_kernels`).

Every index :mod:`insdel.interactions.indices` computes exactly is
``I(S) = sum_{T ⊇ S} W[|S|, |T|] Delta_T`` for the subsets S of D_b with |S| <= k. For one size
s the sums over supersets are a superset-sum (upward zeta) transform of
``c(T) = W[s, |T|] Delta_T``, read at the subsets of size s; the transform is pruned to the
entries whose size can still end at most s (bits processed from the highest, an entry whose
processed bits already hold more than s units is never read again), so one size costs
O(poly(s) 2^|D|) instead of O(|D| 2^|D|).
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["superset_sums_ragged", "entry_counts"]


@nb.njit(cache=True, nogil=True)
def _binom(n, k):  # pragma: no cover - numba
    if k < 0 or k > n:
        return 0
    r = 1
    for i in range(k):
        r = r * (n - i) // (i + 1)
    return r


@nb.njit(cache=True, nogil=True)
def entry_counts(dsz, k):  # pragma: no cover - numba
    """``sum_{s <= min(k, |D_b|)} C(|D_b|, s)``: the subsets of D_b of size at most k, per pair."""
    out = np.empty(dsz.shape[0], dtype=np.int64)
    for b in range(dsz.shape[0]):
        c = 0
        for s in range(min(k, dsz[b]) + 1):
            c += _binom(dsz[b], s)
        out[b] = c
    return out


@nb.njit(parallel=True, cache=True, nogil=True)
def superset_sums_ragged(delta, off, dsz, W, k, pc, eoff, emask, evals):  # pragma: no cover - numba
    """``evals[e] = sum_{T ⊇ S_e} W[|S_e|, |T|] delta[T]`` for every subset S_e of D_b, |S_e| <= k.

    Pair b's entries ``eoff[b] .. eoff[b + 1] - 1`` are its subsets by size (0, 1, ..., k), each
    size in increasing local bitmask (bit t = the t-th unit of D_b); ``emask`` gets the local
    bitmask of each entry. ``pc[u]`` is |u| for every u < 2^max|D_b| (``popcounts``).
    """
    B = dsz.shape[0]
    for b in nb.prange(B):
        d = dsz[b]
        o = off[b]
        N = np.int64(1) << d
        e = eoff[b]
        # size 0: a plain weighted sum
        tot = 0.0
        for T in range(N):
            tot += W[0, pc[T]] * delta[o + T]
        emask[e] = 0
        evals[e] = tot
        e += 1
        a = np.empty(N)
        for s in range(1, min(k, d) + 1):
            for T in range(N):
                a[T] = W[s, pc[T]] * delta[o + T]
            for i in range(d - 1, -1, -1):  # upward zeta, highest bit first, pruned
                bit = np.int64(1) << i
                H = np.int64(1) << (d - 1 - i)
                for h in range(H):
                    if pc[h] > s:
                        continue
                    base = h << (i + 1)
                    for lo in range(bit):
                        u = base | lo
                        a[u] += a[u | bit]
            for u in range(N):
                if pc[u] == s:
                    emask[e] = u
                    evals[e] = a[u]
                    e += 1
