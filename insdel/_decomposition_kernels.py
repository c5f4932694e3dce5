"""numba kernels of the anchored decomposition (paper §3.3, Appendix B; conventions: *Anchored
decomposition*).

Every kernel works on float64 arrays of shape (B, 2^n) indexed by bitmask (bit j = feature j taken
from the target x) and loops over pairs in parallel (``prange``). They work in place where the issue
asks for it (Möbius / zeta transforms) and never allocate more than O(2^n) scratch per pair.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = [
    "mobius_inplace", "zeta_inplace", "shapley_from_delta", "theorem1_areas", "best_paths",
    "scatter_canonical", "canonical_words", "popcounts",
]


@nb.njit(parallel=True, cache=True, nogil=True)
def mobius_inplace(a, n):  # pragma: no cover - numba
    """Fast Möbius transform in place, per row: ``a[u] <- sum_{v ⊆ u} (-1)^{|u|-|v|} a[v]``.

    O(n 2^n) per row (one butterfly pass per feature).
    """
    B = a.shape[0]
    N = np.int64(1) << n
    for b in nb.prange(B):
        for i in range(n):
            bit = np.int64(1) << i
            for u in range(N):
                if u & bit:
                    a[b, u] -= a[b, u ^ bit]


@nb.njit(parallel=True, cache=True, nogil=True)
def zeta_inplace(a, n):  # pragma: no cover - numba
    """Inverse of :func:`mobius_inplace`: ``a[u] <- sum_{v ⊆ u} a[v]`` per row."""
    B = a.shape[0]
    N = np.int64(1) << n
    for b in nb.prange(B):
        for i in range(n):
            bit = np.int64(1) << i
            for u in range(N):
                if u & bit:
                    a[b, u] += a[b, u ^ bit]


@nb.njit(parallel=True, cache=True, nogil=True)
def shapley_from_delta(delta, n, out):  # pragma: no cover - numba
    """Exact Shapley values from Harsanyi dividends: ``out[b, j] = sum_{u ∋ j} delta[b, u] / |u|``."""
    B = delta.shape[0]
    N = np.int64(1) << n
    for b in nb.prange(B):
        phi = np.zeros(n)
        for u in range(1, N):
            c = 0
            v = u
            while v:
                v &= v - 1
                c += 1
            w = delta[b, u] / c
            v = u
            j = 0
            while v:
                if v & 1:
                    phi[j] += w
                v >>= 1
                j += 1
        for j in range(n):
            out[b, j] = phi[j]


@nb.njit(parallel=True, cache=True, nogil=True)
def theorem1_areas(delta, orders, n, auc_ins, auc_del, abc_ins, abc_del):  # pragma: no cover
    """Areas of the curves of every ordering from the decomposition alone (Theorem 1, App. B.1).

    For pair b and ordering k with positions ``pos`` (1-based), ``ceil(u) = max pos`` (0 for ∅)
    and ``floor(u) = min pos`` (n + 1 for ∅) are built for all u in O(2^n) by adding the highest
    feature of u last. Then (raw, not normalised)

    * ``AUC  = sum_u (n - ceil(u) + 1) Delta_u``          (Theorem 1)
    * ``AUC' = sum_u floor(u) Delta_u``                   (Appendix B.1)
    * ``ABC  = sum_{u≠∅} ((n + 1)/2 - ceil(u)) Delta_u``   (= AUC - AUL)
    * ``ABC' = sum_{u≠∅} ((n + 1)/2 - floor(u)) Delta_u``  (= AUL - AUC')
    """
    B, K, _ = orders.shape
    N = np.int64(1) << n
    half = (n + 1) / 2.0
    for b in nb.prange(B):
        ceil = np.empty(N, dtype=np.int32)
        flo = np.empty(N, dtype=np.int32)
        pos = np.empty(n, dtype=np.int32)
        for k in range(K):
            for s in range(n):
                pos[orders[b, k, s]] = s + 1
            ceil[0] = 0
            flo[0] = n + 1
            d0 = delta[b, 0]
            a_ins = (n + 1) * d0
            a_del = (n + 1) * d0
            c_ins = 0.0
            c_del = 0.0
            for i in range(n):
                lo = np.int64(1) << i
                p = pos[i]
                for u in range(lo, 2 * lo):
                    c = ceil[u - lo]
                    if p > c:
                        c = p
                    f = flo[u - lo]
                    if p < f:
                        f = p
                    ceil[u] = c
                    flo[u] = f
                    d = delta[b, u]
                    a_ins += (n - c + 1) * d
                    a_del += f * d
                    c_ins += (half - c) * d
                    c_del += (half - f) * d
            auc_ins[b, k] = a_ins
            auc_del[b, k] = a_del
            abc_ins[b, k] = c_ins
            abc_del[b, k] = c_del


@nb.njit(parallel=True, cache=True, nogil=True)
def best_paths(values, n, sign, best, orders):  # pragma: no cover - numba
    """Best chain through the subset lattice, per pair (dynamic programming, O(n 2^n)).

    With ``h = sign * g``: ``V(∅) = h(∅)``, ``V(S) = h(S) + max_{j∈S} V(S \\ {j})``; ``best[b]`` is
    ``sign * V(full)``, the largest (sign = +1) or smallest (sign = -1) sum of g along a chain
    ∅ = S_0 ⊂ S_1 ⊂ ... ⊂ S_n = full. ``orders[b]`` is the chain read from the full set downwards:
    ``orders[b, 0]`` is the feature whose removal from the full set continues the best chain, and
    so on. Ties go to the smallest feature index.
    """
    B = values.shape[0]
    N = np.int64(1) << n
    for b in nb.prange(B):
        V = np.empty(N)
        arg = np.empty(N, dtype=np.int8)
        V[0] = sign * values[b, 0]
        arg[0] = -1
        for u in range(1, N):
            m = -np.inf
            am = -1
            v = u
            j = 0
            while v:
                if v & 1:
                    c = V[u ^ (np.int64(1) << j)]
                    if c > m:
                        m = c
                        am = j
                v >>= 1
                j += 1
            V[u] = sign * values[b, u] + m
            arg[u] = am
        best[b] = sign * V[N - 1]
        u = N - 1
        for s in range(n):
            j = arg[u]
            orders[b, s] = j
            u ^= np.int64(1) << j


@nb.njit(cache=True, nogil=True)
def _pdep(k, mask):  # pragma: no cover - numba
    """Deposit the low bits of ``k`` into the set bits of ``mask`` (software PDEP)."""
    out = np.int64(0)
    m = mask
    while m:
        low = m & -m
        if k & 1:
            out |= low
        k >>= 1
        m ^= low
    return out


@nb.njit(parallel=True, cache=True, nogil=True)
def canonical_words(dmasks, offsets, pair_lo, s0, s1, pair_out, words_out):  # pragma: no cover
    """Rows ``s0 .. s1 - 1`` of the stream of canonical sets of a chunk of pairs.

    Pair ``b`` (local index, first row ``offsets[b]``) owns ``2^{|D_b|}`` consecutive rows, the
    subsets of its difference set ``D_b`` (bitmask ``dmasks[b]``), enumerated in the order of
    ``pdep(k, D_b)``. Writes the global pair index ``pair_lo + b`` and the set word of each row.
    """
    M = s1 - s0
    B = offsets.shape[0] - 1
    for i in nb.prange(M):
        g = s0 + i
        lo = 0
        hi = B
        while hi - lo > 1:  # last b with offsets[b] <= g
            mid = (lo + hi) // 2
            if offsets[mid] <= g:
                lo = mid
            else:
                hi = mid
        k = g - offsets[lo]
        D = dmasks[lo]
        pair_out[i] = pair_lo + lo
        words_out[i, 0] = np.uint64(_pdep(k, D))


@nb.njit(parallel=True, cache=True, nogil=True)
def scatter_canonical(cvals, offsets, dmasks, n, out):  # pragma: no cover - numba
    """``out[b, u] = g_b(u ∩ D_b)`` from the values of the canonical sets (see canonical_words).

    The canonical index of ``u ∩ D`` is ``pext(u, D)``, built for all u in O(2^n) by adding the
    highest feature of u last.
    """
    B = out.shape[0]
    N = np.int64(1) << n
    for b in nb.prange(B):
        D = dmasks[b]
        off = offsets[b]
        if D == N - 1:
            for u in range(N):
                out[b, u] = cvals[off + u]
            continue
        idx = np.empty(N, dtype=np.int64)
        idx[0] = 0
        rank = 0  # number of features of D below feature i
        for i in range(n):
            lo = np.int64(1) << i
            inD = (D >> i) & 1
            for u in range(lo, 2 * lo):
                if inD:
                    idx[u] = idx[u - lo] | (np.int64(1) << rank)
                else:
                    idx[u] = idx[u - lo]
            if inD:
                rank += 1
        for u in range(N):
            out[b, u] = cvals[off + idx[u]]


@nb.njit(cache=True, nogil=True)
def popcounts(n):  # pragma: no cover - numba
    """|u| for every bitmask u < 2^n (int8)."""
    N = np.int64(1) << n
    c = np.zeros(N, dtype=np.int8)
    for i in range(n):
        lo = np.int64(1) << i
        for u in range(lo, 2 * lo):
            c[u] = c[u - lo] + 1
    return c
