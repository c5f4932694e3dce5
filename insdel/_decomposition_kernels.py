"""numba kernels of the anchored decomposition (paper §3.3, Appendix B; conventions: *Anchored
decomposition*).

Every pair lives in its own differing subspace D_b = {j : x_j != r_j}: its values g(u) and dividends
Delta_u are stored for the 2^|D_b| subsets u of D_b only (Delta_u = 0 for every other u), in one flat
float64 array with per-pair offsets (ragged, never padded to the largest |D|). Each kernel handles
every pair in one call and loops over pairs in parallel (``prange``), with O(2^|D_b|) scratch per
pair. ``mobius_inplace`` / ``zeta_inplace`` are the plain (B, 2^n) transforms behind
:func:`insdel.decomposition.mobius` and :func:`~insdel.decomposition.zeta`.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = [
    "mobius_inplace", "zeta_inplace", "popcounts", "ceil_floor", "order_scratch",
    "ceil_floor_of_order", "mobius_ragged", "zeta_ragged", "shapley_ragged",
    "theorem1_ragged", "size_weighted_sums", "best_paths_ragged", "subspace_rows", "scatter_full",
]


@nb.njit(cache=True, nogil=True, inline="always")
def _butterflies(a, o, n, subtract):  # pragma: no cover - numba
    """The n butterfly passes over the block ``a[o : o + 2^n]``: ``a[u] -= a[u minus bit]``
    (``subtract``: Möbius) or ``+=`` (zeta), for each bit of u in turn."""
    N = np.int64(1) << n
    for i in range(n):
        bit = np.int64(1) << i
        for u in range(N):
            if u & bit:
                if subtract:
                    a[o + u] -= a[o + (u ^ bit)]
                else:
                    a[o + u] += a[o + (u ^ bit)]


@nb.njit(parallel=True, cache=True, nogil=True)
def mobius_inplace(a, n):  # pragma: no cover - numba
    """Fast Möbius transform in place, per row: ``a[u] <- sum_{v ⊆ u} (-1)^{|u|-|v|} a[v]``.

    O(n 2^n) per row (one butterfly pass per feature).
    """
    for b in nb.prange(a.shape[0]):
        _butterflies(a[b], 0, n, True)


@nb.njit(parallel=True, cache=True, nogil=True)
def zeta_inplace(a, n):  # pragma: no cover - numba
    """Inverse of :func:`mobius_inplace`: ``a[u] <- sum_{v ⊆ u} a[v]`` per row."""
    for b in nb.prange(a.shape[0]):
        _butterflies(a[b], 0, n, False)


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


# -- ragged kernels: every pair in its own differing subspace D_b (issue 13) --------------------------
# A batch stores, for pair b, the 2^{d_b} values of the subsets of D_b (d_b = |D_b|) in a flat float64
# array at ``off[b] .. off[b + 1] - 1``; local bit t of a subset index is feature ``Dflat[doff[b] + t]``
# (features of D_b in increasing order). One call handles every pair (``prange`` over pairs), whatever
# the mix of |D_b|: nothing is padded to the largest.


@nb.njit(cache=True, nogil=True)
def _popcount(u):  # pragma: no cover - numba
    c = 0
    while u:
        u &= u - 1
        c += 1
    return c


@nb.njit(cache=True, nogil=True)
def ceil_floor(pos, Dflat, d0, d, n, ceil, flo):  # pragma: no cover - numba
    """``ceil[u]`` / ``flo[u]``: the last / first 1-based position (``pos``) of the members of each
    subset u of D (local bit t = feature ``Dflat[d0 + t]``); 0 / n + 1 for the empty set.

    Built in increasing u (each u from u minus its highest bit), as Theorem 1 reads them.
    """
    ceil[0] = 0
    flo[0] = n + 1
    for i in range(d):
        lo = np.int64(1) << i
        p = pos[Dflat[d0 + i]]
        for u in range(lo, 2 * lo):
            c = ceil[u - lo]
            if p > c:
                c = p
            f = flo[u - lo]
            if p < f:
                f = p
            ceil[u] = c
            flo[u] = f


@nb.njit(cache=True, nogil=True)
def order_scratch(d, n):  # pragma: no cover - numba
    """Scratch of :func:`ceil_floor_of_order` for a pair with |D| = d of n features:
    ``ceil``, ``flo`` (2^d each) and ``pos`` (n), int32."""
    N = np.int64(1) << d
    return np.empty(N, dtype=np.int32), np.empty(N, dtype=np.int32), np.empty(n, dtype=np.int32)


@nb.njit(cache=True, nogil=True)
def ceil_floor_of_order(orders, b, k, Dflat, d0, d, n, pos, ceil, flo):  # pragma: no cover
    """:func:`ceil_floor` of pair b's ordering ``orders[b, k]`` (n features): ``pos`` is first
    filled with each feature's 1-based position in that ordering."""
    for s in range(n):
        pos[orders[b, k, s]] = s + 1
    ceil_floor(pos, Dflat, d0, d, n, ceil, flo)


@nb.njit(parallel=True, cache=True, nogil=True)
def mobius_ragged(a, off, dsz):  # pragma: no cover - numba
    """Fast Möbius transform in place of every pair's block ``a[off[b] : off[b] + 2^dsz[b]]``."""
    for b in nb.prange(dsz.shape[0]):
        _butterflies(a, off[b], dsz[b], True)


@nb.njit(parallel=True, cache=True, nogil=True)
def zeta_ragged(a, off, dsz):  # pragma: no cover - numba
    """Inverse of :func:`mobius_ragged`: ``a[u] <- sum_{v ⊆ u} a[v]`` per block."""
    for b in nb.prange(dsz.shape[0]):
        _butterflies(a, off[b], dsz[b], False)


@nb.njit(parallel=True, cache=True, nogil=True)
def shapley_ragged(delta, off, dsz, Dflat, doff, out):  # pragma: no cover - numba
    """``out[b, D_b[t]] = sum_{u ∋ t} Delta_u / |u|`` over the subsets u of D_b; 0 outside D_b."""
    B = dsz.shape[0]
    n = out.shape[1]
    for b in nb.prange(B):
        d = dsz[b]
        o = off[b]
        N = np.int64(1) << d
        phi = np.zeros(d)
        for u in range(1, N):
            w = delta[o + u] / _popcount(u)
            v = u
            t = 0
            while v:
                if v & 1:
                    phi[t] += w
                v >>= 1
                t += 1
        for j in range(n):
            out[b, j] = 0.0
        for t in range(d):
            out[b, Dflat[doff[b] + t]] = phi[t]


@nb.njit(parallel=True, cache=True, nogil=True)
def theorem1_ragged(delta, off, dsz, Dflat, doff, orders, n, auc_ins, auc_del, abc_ins,
                    abc_del):  # pragma: no cover - numba
    """Theorem 1 / Appendix B.1 areas of full orderings (B, K, n) from the subspace dividends.

    ``pos`` is the 1-based position of a feature in the full ordering (features outside D_b keep
    their positions); ``ceil(u)``, ``floor(u)`` are built for the subsets u of D_b only, since
    Delta_u = 0 for every other u. The four sums are those of :func:`theorem1_areas` with n the
    full number of features.
    """
    B, K, _ = orders.shape
    half = (n + 1) / 2.0
    for b in nb.prange(B):
        d = dsz[b]
        o = off[b]
        N = np.int64(1) << d
        ceil, flo, pos = order_scratch(d, n)
        for k in range(K):
            ceil_floor_of_order(orders, b, k, Dflat, doff[b], d, n, pos, ceil, flo)
            d0 = delta[o]
            a_ins = (n + 1) * d0
            a_del = (n + 1) * d0
            c_ins = 0.0
            c_del = 0.0
            for u in range(1, N):
                c = ceil[u]
                f = flo[u]
                dl = delta[o + u]
                a_ins += (n - c + 1) * dl
                a_del += f * dl
                c_ins += (half - c) * dl
                c_del += (half - f) * dl
            auc_ins[b, k] = a_ins
            auc_del[b, k] = a_del
            abc_ins[b, k] = c_ins
            abc_del[b, k] = c_del


@nb.njit(parallel=True, cache=True, nogil=True)
def size_weighted_sums(delta, off, dsz, w, out):  # pragma: no cover - numba
    """``out[b] = sum_{u ⊆ D_b} w[|u|] Delta_u`` (the closed-form expectations of §3.3)."""
    B = dsz.shape[0]
    for b in nb.prange(B):
        o = off[b]
        N = np.int64(1) << dsz[b]
        s = 0.0
        for u in range(N):
            s += w[_popcount(u)] * delta[o + u]
        out[b] = s


@nb.njit(parallel=True, cache=True, nogil=True)
def best_paths_ragged(values, off, dsz, Dflat, doff, n, insertion, best, orders):  # pragma: no cover
    """Best full ordering per pair from the 2^|D| values of its subspace (dynamic programming).

    Let ``C_k = S_k ∩ D`` be the features of D moved after k steps of a full ordering. The curve
    is ``g(C_k)`` (insertion) or ``g(D \\ C_k)`` (deletion); write it ``sign * phi(C_k)`` with
    ``phi(C) = g(C)`` (insertion, maximise) or ``phi(C) = -g(D \\ C)`` (deletion, minimise g). A
    full ordering is a chain ∅ = C_0 ⊂ ... ⊂ C_d = D of D's features with the n - d features
    outside D inserted somewhere: each repeats the current value. So the best full sum is

        max_T  F(T) + G(T) - phi(T) + (n - d) phi(T),

    with ``F(T)`` the best chain sum from ∅ up to T and ``G(T)`` from T up to D (two O(d 2^d)
    DPs). The ordering: the best chain to T*, then the features outside D in increasing index,
    then the best chain from T* to D. Ties: T* is the largest bitmask attaining the maximum (so
    T* = D, i.e. the outside features last, whenever that is optimal); inside a chain, the smallest
    feature index. ``best[b]`` is the largest AUC (insertion) or the smallest AUC' (deletion).
    """
    B = dsz.shape[0]
    for b in nb.prange(B):
        d = dsz[b]
        o = off[b]
        N = np.int64(1) << d
        full = N - 1
        D = Dflat[doff[b]:doff[b] + d]
        phi = np.empty(N)
        for u in range(N):
            if insertion:
                phi[u] = values[o + u]
            else:
                phi[u] = -values[o + (full ^ u)]
        F = np.empty(N)
        argF = np.empty(N, dtype=np.int8)
        F[0] = phi[0]
        argF[0] = -1
        for u in range(1, N):
            m = -np.inf
            am = -1
            v = u
            j = 0
            while v:
                if v & 1:
                    c = F[u ^ (np.int64(1) << j)]
                    if c > m:
                        m = c
                        am = j
                v >>= 1
                j += 1
            F[u] = phi[u] + m
            argF[u] = am
        rest = n - d
        T = full
        tot = F[full]
        G = np.empty(0)
        argG = np.empty(0, dtype=np.int8)
        if rest > 0:
            G = np.empty(N)
            argG = np.empty(N, dtype=np.int8)
            G[full] = phi[full]
            argG[full] = -1
            for u in range(full - 1, -1, -1):
                m = -np.inf
                am = -1
                for j in range(d):
                    bit = np.int64(1) << j
                    if not (u & bit):
                        c = G[u | bit]
                        if c > m:
                            m = c
                            am = j
                G[u] = phi[u] + m
                argG[u] = am
            tot = -np.inf
            for u in range(full, -1, -1):
                c = F[u] + G[u] + (rest - 1) * phi[u]
                if c > tot:
                    tot = c
                    T = u
        best[b] = tot if insertion else -tot
        # the chain up to T, read backwards from T
        kT = _popcount(T)
        u = T
        for s in range(kT - 1, -1, -1):
            j = argF[u]
            orders[b, s] = D[j]
            u ^= np.int64(1) << j
        s = kT
        if rest > 0:
            inD = np.zeros(n, dtype=np.bool_)
            for t in range(d):
                inD[D[t]] = True
            for j in range(n):
                if not inD[j]:
                    orders[b, s] = j
                    s += 1
            u = T
            while u != full:
                j = argG[u]
                orders[b, s] = D[j]
                s += 1
                u |= np.int64(1) << j


@nb.njit(parallel=True, cache=True, nogil=True)
def subspace_rows(X, R, pairs, off, Dflat, doff, starts, members, s0, out):  # pragma: no cover
    """Rows ``s0 .. s0 + len(out) - 1`` of the stream of subspace hybrids of a plan of pairs.

    Plan entry p (pair ``pairs[p]``) owns rows ``off[p] .. off[p + 1] - 1``, one per subset k of
    its D (local bit t = unit ``Dflat[doff[p] + t]``): the row is r with the units of k taken
    from x. Unit g is the columns ``members[starts[g]:starts[g + 1]]`` (a feature, or a group).
    Written straight into ``out`` (the model's dtype).
    """
    M = out.shape[0]
    n = out.shape[1]
    P = off.shape[0] - 1
    for i in nb.prange(M):
        g = s0 + i
        lo = 0
        hi = P
        while hi - lo > 1:  # last p with off[p] <= g
            mid = (lo + hi) // 2
            if off[mid] <= g:
                lo = mid
            else:
                hi = mid
        b = pairs[lo]
        k = g - off[lo]
        for j in range(n):
            out[i, j] = R[b, j]
        t = 0
        for q in range(doff[lo], doff[lo + 1]):
            if (k >> t) & 1:
                u = Dflat[q]
                for c in range(starts[u], starts[u + 1]):
                    col = members[c]
                    out[i, col] = X[b, col]
            t += 1


@nb.njit(parallel=True, cache=True, nogil=True)
def scatter_full(vals, off, dmasks, n, dividends, out):  # pragma: no cover - numba
    """The full 2^n layout of subspace blocks (n <= 22 only).

    Values: ``out[b, u] = vals[off[b] + pext(u, D_b)]`` (g depends on u ∩ D_b only); dividends
    (``dividends=True``): the same for u ⊆ D_b and 0 for every other u.
    """
    B = out.shape[0]
    N = np.int64(1) << n
    for b in nb.prange(B):
        D = dmasks[b]
        o = off[b]
        idx = np.empty(N, dtype=np.int64)
        idx[0] = 0
        rank = 0
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
            if dividends and (u & ~D):
                out[b, u] = 0.0
            else:
                out[b, u] = vals[o + idx[u]]
