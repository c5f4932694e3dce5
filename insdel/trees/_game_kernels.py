"""numba kernels of the tree game's closed forms, read off the leaf patterns
(:class:`insdel.trees.patterns.Patterns`; proofs in docs/tree_game.md).

Every kernel runs over the ragged patterns ``pat_off, u_off, n_e, units, val``: pattern p of
pair b has ``E = units[u_off[p]:u_off[p] + n_e[p]]`` and ``R = units[u_off[p] + n_e[p]:
u_off[p + 1]]``. With ranks (1-based positions in an ordering of the m units), the pattern is
on at insertion step k (the first k units from x) iff ``max rank(E) <= k < min rank(R)`` and at
deletion step k (the first k units back to r) iff ``max rank(R) <= k < min rank(E)``, with
``max rank(∅) = 0`` and ``min rank(∅) = m + 1``.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .patterns import PAIR_BLOCK, _walk_buffers, _walk_pair


@nb.njit(cache=True, nogil=True)
def _ab_weight(a, b):  # pragma: no cover - numba
    """a! b! / (a + b)!, as a product of b ratios (no factorial overflow)."""
    w = 1.0
    for i in range(1, b + 1):
        w *= i / (a + i)
    return w


@nb.njit(parallel=True, cache=True, nogil=True)
def values(pat_off, u_off, n_e, units, val, pairs, keep, out):  # pragma: no cover - numba
    """v_b(u) - base of each request (pair ``pairs[i]``, coalition ``keep[i]`` over the units)."""
    for i in nb.prange(pairs.shape[0]):
        b = pairs[i]
        s = 0.0
        for p in range(pat_off[b], pat_off[b + 1]):
            ok = True
            k = u_off[p] + n_e[p]
            for t in range(u_off[p], k):
                if not keep[i, units[t]]:
                    ok = False
                    break
            if ok:
                for t in range(k, u_off[p + 1]):
                    if keep[i, units[t]]:
                        ok = False
                        break
            if ok:
                s += val[p]
        out[i] = s


@nb.njit(cache=True, nogil=True)
def _span(u_off, n_e, units, rank, p, m):  # pragma: no cover - numba
    """max rank(E), min rank(E), max rank(R), min rank(R) of pattern p (empty: 0 / m + 1)."""
    k = u_off[p] + n_e[p]
    maxe, mine, maxr, minr = 0, m + 1, 0, m + 1
    for t in range(u_off[p], k):
        q = rank[units[t]]
        maxe = max(maxe, q)
        mine = min(mine, q)
    for t in range(k, u_off[p + 1]):
        q = rank[units[t]]
        maxr = max(maxr, q)
        minr = min(minr, q)
    return maxe, mine, maxr, minr


@nb.njit(cache=True, nogil=True)
def _ranks(orders, b, k, m):  # pragma: no cover - numba
    """rank[unit] = its 1-based position in ordering ``orders[b, k]``."""
    rank = np.empty(m, dtype=np.int64)
    for s in range(m):
        rank[orders[b, k, s]] = s + 1
    return rank


@nb.njit(parallel=True, cache=True, nogil=True)
def curves(pat_off, u_off, n_e, units, val, base, orders, pos, do_ins, do_del, out_ins,
           out_del):  # pragma: no cover - numba
    """Insertion / deletion curves at ``pos`` of every ordering (B, K, m) of every pair: each
    pattern adds its value over its on-steps (a difference array, then a running sum)."""
    B, K, m = orders.shape
    S = pos.shape[0]
    for job in nb.prange(B * K):
        b = job // K
        k = job % K
        rank = _ranks(orders, b, k, m)
        di = np.zeros(m + 2)
        dd = np.zeros(m + 2)
        for p in range(pat_off[b], pat_off[b + 1]):
            maxe, mine, maxr, minr = _span(u_off, n_e, units, rank, p, m)
            if maxe < minr:
                di[maxe] += val[p]
                di[minr] -= val[p]
            if maxr < mine:
                dd[maxr] += val[p]
                dd[mine] -= val[p]
        ci = base
        cd = base
        s = 0
        for t in range(m + 1):
            ci += di[t]
            cd += dd[t]
            while s < S and pos[s] == t:
                if do_ins:
                    out_ins[b, k, s] = ci
                if do_del:
                    out_del[b, k, s] = cd
                s += 1


@nb.njit(parallel=True, cache=True, nogil=True)
def aucs(pat_off, u_off, n_e, units, val, orders, out_ins, out_del):  # pragma: no cover - numba
    """Sum over the m + 1 curve points, less (m + 1) base: sum_p val_p * (on-steps of p)."""
    B, K, m = orders.shape
    for job in nb.prange(B * K):
        b = job // K
        k = job % K
        rank = _ranks(orders, b, k, m)
        si = 0.0
        sd = 0.0
        for p in range(pat_off[b], pat_off[b + 1]):
            maxe, mine, maxr, minr = _span(u_off, n_e, units, rank, p, m)
            if maxe < minr:
                si += val[p] * (minr - maxe)
            if maxr < mine:
                sd += val[p] * (mine - maxr)
        out_ins[b, k] = si
        out_del[b, k] = sd


@nb.njit(parallel=True, cache=True, nogil=True)
def ends_and_expectation(pat_off, u_off, n_e, val, m, v_empty, v_all, e_auc
                         ):  # pragma: no cover - numba
    """v(∅) - base, v(all) - base, and E[AUC] - (m + 1) base over uniform orderings:
    ``sum_p val_p (m + 1) a! b! / (a + b + 1)!`` (a = |E|, b = |R|)."""
    B = pat_off.shape[0] - 1
    for b_ in nb.prange(B):
        s0 = 0.0
        s1 = 0.0
        se = 0.0
        for p in range(pat_off[b_], pat_off[b_ + 1]):
            a = n_e[p]
            b = u_off[p + 1] - u_off[p] - a
            if a == 0:
                s0 += val[p]
            if b == 0:
                s1 += val[p]
            se += val[p] * _ab_weight(a, b) / (a + b + 1)
        v_empty[b_] = s0
        v_all[b_] = s1
        e_auc[b_] = se * (m + 1)


@nb.njit(parallel=True, cache=True, nogil=True)
def shares(pat_off, u_off, n_e, units, val, banzhaf, out):  # pragma: no cover - numba
    """Shapley values (``banzhaf`` False) or Banzhaf values of each unit, (B, m): a pattern
    gives each unit of E ``val (a-1)! b! / (a+b)!`` and takes ``val a! (b-1)! / (a+b)!`` from each
    unit of R (Banzhaf: ``± val / 2^(a+b-1)``)."""
    B = pat_off.shape[0] - 1
    for b_ in nb.prange(B):
        for j in range(out.shape[1]):
            out[b_, j] = 0.0
        for p in range(pat_off[b_], pat_off[b_ + 1]):
            a = n_e[p]
            b = u_off[p + 1] - u_off[p] - a
            if a + b == 0:
                continue
            if banzhaf:
                ge = val[p] * 0.5 ** (a + b - 1)
                gr = ge
            else:
                w = _ab_weight(a, b)
                ge = val[p] * w / a if a > 0 else 0.0
                gr = val[p] * w / b if b > 0 else 0.0
            k = u_off[p] + a
            for t in range(u_off[p], k):
                out[b_, units[t]] += ge
            for t in range(k, u_off[p + 1]):
                out[b_, units[t]] -= gr


@nb.njit(parallel=True, cache=True, nogil=True)
def effects(pat_off, u_off, n_e, units, val, base, bit, off, delta):  # pragma: no cover - numba
    """The Möbius dividends over the subsets of each D_b (ragged, ``off``): a pattern adds
    ``val (-1)^|w - E|`` at every w with E ⊆ w ⊆ E ∪ R (``bit[b, unit]``: the unit's bit in D_b)."""
    B = pat_off.shape[0] - 1
    for b_ in nb.prange(B):
        o = off[b_]
        for t in range(o, off[b_ + 1]):
            delta[t] = 0.0
        delta[o] += base
        for p in range(pat_off[b_], pat_off[b_ + 1]):
            k = u_off[p] + n_e[p]
            e = 0
            for t in range(u_off[p], k):
                e |= np.int64(1) << bit[b_, units[t]]
            nr = u_off[p + 1] - k
            for sub in range(1 << nr):
                w = e
                sign = 1.0
                for t in range(nr):
                    if (sub >> t) & 1:
                        w |= np.int64(1) << bit[b_, units[k + t]]
                        sign = -sign
                delta[o + w] += sign * val[p]


@nb.njit(parallel=True, cache=True, nogil=True)
def effect_counts(pat_off, u_off, n_e, max_order, cnt_p, cnt_u):  # pragma: no cover - numba
    """How many (w, ±val) terms and units the patterns of each pair expand to (|w| <= max_order)."""
    B = pat_off.shape[0] - 1
    for b_ in nb.prange(B):
        cp = 0
        cu = 0
        for p in range(pat_off[b_], pat_off[b_ + 1]):
            a = n_e[p]
            nr = u_off[p + 1] - u_off[p] - a
            for sub in range(1 << nr):
                c = a
                for t in range(nr):
                    c += (sub >> t) & 1
                if c <= max_order:
                    cp += 1
                    cu += c
        cnt_p[b_] = cp
        cnt_u[b_] = cu


@nb.njit(parallel=True, cache=True, nogil=True)
def effect_terms(pat_off, u_off, n_e, units, val, max_order, pair_p, pair_u, t_uoff, t_n,
                 t_units, t_val):  # pragma: no cover - numba
    """Write each pattern's terms: w = E ∪ (a subset s of R), value ``val (-1)^|s|``."""
    B = pat_off.shape[0] - 1
    for b_ in nb.prange(B):
        q = pair_p[b_]
        c = pair_u[b_]
        for p in range(pat_off[b_], pat_off[b_ + 1]):
            a = n_e[p]
            k = u_off[p] + a
            nr = u_off[p + 1] - k
            for sub in range(1 << nr):
                size = a
                for t in range(nr):
                    size += (sub >> t) & 1
                if size > max_order:
                    continue
                t_uoff[q] = c
                t_n[q] = size
                sign = 1.0
                for t in range(u_off[p], k):
                    t_units[c] = units[t]
                    c += 1
                for t in range(nr):
                    if (sub >> t) & 1:
                        t_units[c] = units[k + t]
                        c += 1
                        sign = -sign
                t_val[q] = sign * val[p]
                q += 1


@nb.njit(parallel=True, cache=True, nogil=True)
def auc_bounds(pat_off, u_off, n_e, val, m, insertion, out):  # pragma: no cover - numba
    """A bound on the best AUC (insertion: an upper bound; deletion: a lower bound on AUC'),
    less (m + 1) base: each pattern at its own best number of on-steps. A pattern can be on for
    at most ``m + 1 - a - b`` steps (E first, R last; deletion: R first, E last) and for at
    least 0 steps when a, b >= 1, 1 step otherwise (a + b >= 1), m + 1 steps when a = b = 0."""
    B = pat_off.shape[0] - 1
    for b_ in nb.prange(B):
        s = 0.0
        for p in range(pat_off[b_], pat_off[b_ + 1]):
            a = n_e[p]
            b = u_off[p + 1] - u_off[p] - a
            hi = m + 1 - a - b
            lo = m + 1 if a + b == 0 else (0 if (a > 0 and b > 0) else 1)
            good = val[p] > 0 if insertion else val[p] < 0
            s += val[p] * (hi if good else lo)
        out[b_] = s


@nb.njit(cache=True, nogil=True)
def _auc_one(p0, p1, u_off, n_e, units, val, rank, m, insertion):  # pragma: no cover - numba
    s = 0.0
    for p in range(p0, p1):
        maxe, mine, maxr, minr = _span(u_off, n_e, units, rank, p, m)
        if insertion:
            if maxe < minr:
                s += val[p] * (minr - maxe)
        elif maxr < mine:
            s += val[p] * (mine - maxr)
    return s


@nb.njit(parallel=True, cache=True, nogil=True)
def local_search(pat_off, u_off, n_e, units, val, orders, insertion, max_passes, todo, best
                 ):  # pragma: no cover - numba
    """Improve each pair's ordering (in place) by adjacent swaps, first improvement, until a
    pass improves nothing or after ``max_passes`` passes; ``best``: the AUC reached (less
    (m + 1) base), larger for insertion, smaller for deletion. Only the pairs with ``todo``."""
    B, m = orders.shape
    for b in nb.prange(B):
        if not todo[b]:
            continue
        rank = np.empty(m, dtype=np.int64)
        for s in range(m):
            rank[orders[b, s]] = s + 1
        p0, p1 = pat_off[b], pat_off[b + 1]
        cur = _auc_one(p0, p1, u_off, n_e, units, val, rank, m, insertion)
        for _ in range(max_passes):
            improved = False
            for s in range(m - 1):
                i, j = orders[b, s], orders[b, s + 1]
                rank[i] = s + 2
                rank[j] = s + 1
                new = _auc_one(p0, p1, u_off, n_e, units, val, rank, m, insertion)
                if (new > cur + 1e-12 * (abs(cur) + 1.0)) if insertion else \
                        (new < cur - 1e-12 * (abs(cur) + 1.0)):
                    orders[b, s] = j
                    orders[b, s + 1] = i
                    cur = new
                    improved = True
                else:
                    rank[i] = s + 1
                    rank[j] = s + 2
            if not improved:
                break
        best[b] = cur


@nb.njit(cache=True, nogil=True)
def _leaf_sums(n, lv, ln, lo, lu, do_phi, phi, do_bz, bz, W):  # pragma: no cover - numba
    """v(∅), v(all), E[AUC] / (m + 1) (less the base's shares) and the Shapley / Banzhaf
    shares (added to ``phi``, ``bz``) of one pair's first ``n`` buffered leaves."""
    s0 = 0.0
    s1 = 0.0
    se = 0.0
    for p in range(n):
        v = lv[p]
        a = np.int64(ln[p])
        nb_ = np.int64(lo[p + 1] - lo[p]) - a
        if a == 0:
            s0 += v
        if nb_ == 0:
            s1 += v
        w = W[a, nb_]
        se += v * w / (a + nb_ + 1)
        if a + nb_ > 0 and (do_phi or do_bz):
            ge = v * w / a if a > 0 else 0.0
            gr = v * w / nb_ if nb_ > 0 else 0.0
            gb = v * 0.5 ** (a + nb_ - 1)
            q0 = lo[p]
            for t in range(q0, q0 + a):
                j = lu[t]
                if do_phi:
                    phi[j] += ge
                if do_bz:
                    bz[j] += gb
            for t in range(q0 + a, lo[p + 1]):
                j = lu[t]
                if do_phi:
                    phi[j] -= gr
                if do_bz:
                    bz[j] -= gb
    return s0, s1, se


@nb.njit(cache=True, nogil=True)
def _leaf_curves(n, lv, ln, lo, lu, rank, m, di, dd, mxe, mne, mxr, mnr
                 ):  # pragma: no cover - numba
    """Every ordering's difference arrays (``di[k]`` insertion, ``dd[k]`` deletion) of one
    pair's first ``n`` buffered leaves; ``rank[u, k]``: the 1-based position of unit u in
    ordering k. A leaf's max / min ranks of E and R are taken for all the orderings at once (a
    short inner loop over k); a leaf adds to a mode's array only where it is on at some step
    (entry before exit), as most leaves with both E and R are off in one of the modes."""
    K = rank.shape[1]
    for p in range(n):
        q0 = lo[p]
        q1 = q0 + ln[p]
        for k in range(K):
            mxe[k] = 0
            mne[k] = m + 1
            mxr[k] = 0
            mnr[k] = m + 1
        for t in range(q0, q1):
            u = lu[t]
            for k in range(K):
                g = rank[u, k]
                mxe[k] = max(mxe[k], g)
                mne[k] = min(mne[k], g)
        for t in range(q1, lo[p + 1]):
            u = lu[t]
            for k in range(K):
                g = rank[u, k]
                mxr[k] = max(mxr[k], g)
                mnr[k] = min(mnr[k], g)
        v = lv[p]
        for k in range(K):
            if mxe[k] < mnr[k]:
                di[k, mxe[k]] += v
                di[k, mnr[k]] -= v
            if mxr[k] < mne[k]:
                dd[k, mxr[k]] += v
                dd[k, mne[k]] -= v


#: leaves (and 4 x as many units) a pair's leaf buffer in :func:`fused` starts with (a pair of
#: 500 trees of depth 8 on 200 features reaches ~4,100 leaves of ~4 units)
LEAF_BUFFER = 8192


@nb.njit(parallel=True, cache=True, nogil=True)
def fused(X, R, unit_of, m, stack, nodes, thr, threshold, missing_left, is_categorical,
          cat_ptr, categories, value, roots, strict, base, orders, pos, do_curves,
          ins, dele, do_phi, phi, do_bz, bz, ends, cap0):  # pragma: no cover - numba
    """Curves, Shapley and Banzhaf values, v(∅), v(all) and E[AUC] of each pair straight from
    the walk (nothing stored across pairs, nothing merged): the streamed game's route. Two
    phases per block of ``PAIR_BLOCK`` pairs: the walk of
    :func:`insdel.trees.patterns._walk_pair` (the block's pairs tree by tree, a tree's nodes
    staying in cache) appends each pair's reached leaves, in tree order, to the pair's leaf
    buffer (value, E and R units; ``cap0`` leaves and 4 x as many units to start with
    (:data:`LEAF_BUFFER`), doubled when full and the tree walked again); then tight loops
    over each pair's buffer give the ends, E[AUC] and values in one pass, and the curves one
    ordering at a time (its ranks and difference arrays stay in cache), each leaf adding its
    value over its on-steps. ``ends[b]`` = (v(∅), v(all), E[AUC]) less the base's share."""
    B = X.shape[0]
    K = orders.shape[1]
    S = pos.shape[0]
    Kc = K if do_curves else 0
    PB = PAIR_BLOCK
    for blk in nb.prange((B + PB - 1) // PB):
        b0 = blk * PB
        nbk = min(PB, B - b0)
        cu, cs, s_node, s_lvl, s_unit, s_side = _walk_buffers(stack)
        cap_p = max(cap0, 2)
        cap_u = 4 * cap_p
        lv = np.empty((nbk, cap_p))
        ln = np.empty((nbk, cap_p), dtype=np.int32)
        lo = np.empty((nbk, cap_p), dtype=np.int64)
        lu = np.empty((nbk, cap_u), dtype=np.int32)
        at_p = np.zeros(nbk, dtype=np.int64)
        at_u = np.zeros(nbk, dtype=np.int64)
        for i in range(nbk):
            lo[i, 0] = 0
        for t in range(roots.shape[0]):
            for i in range(nbk):
                b = b0 + i
                while True:
                    a, c = _walk_pair(X[b], R[b], unit_of, cu, cs, s_node, s_lvl, s_unit,
                                      s_side, nodes, thr, threshold, missing_left,
                                      is_categorical, cat_ptr, categories, value,
                                      roots[t:t + 1], strict, True, at_p[i], at_u[i], lo[i],
                                      ln[i], lu[i], lv[i])
                    if a >= 0:
                        at_p[i] += a
                        at_u[i] += c
                        lo[i, at_p[i]] = at_u[i]  # the end of the pair's last leaf
                        break
                    # full: double both buffers (the filled part kept) and walk the tree again
                    cap_p *= 2
                    cap_u *= 2
                    lv2 = np.empty((nbk, cap_p))
                    ln2 = np.empty((nbk, cap_p), dtype=np.int32)
                    lo2 = np.empty((nbk, cap_p), dtype=np.int64)
                    lu2 = np.empty((nbk, cap_u), dtype=np.int32)
                    for j in range(nbk):
                        for c in range(at_p[j]):
                            lv2[j, c] = lv[j, c]
                            ln2[j, c] = ln[j, c]
                        for c in range(at_p[j] + 1):
                            lo2[j, c] = lo[j, c]
                        for c in range(at_u[j]):
                            lu2[j, c] = lu[j, c]
                    lv, ln, lo, lu = lv2, ln2, lo2, lu2
        # W[a, c] = _ab_weight(a, c), its product built up one ratio at a time (the same floats)
        W = np.empty((stack + 1, stack + 1))
        for a in range(stack + 1):
            W[a, 0] = 1.0
            for c in range(1, stack + 1):
                W[a, c] = W[a, c - 1] * (c / (a + c))
        rank = np.empty((m, Kc), dtype=np.int32)
        di = np.empty((Kc, m + 2))
        dd = np.empty((Kc, m + 2))
        mxe = np.empty(Kc, dtype=np.int32)
        mne = np.empty(Kc, dtype=np.int32)
        mxr = np.empty(Kc, dtype=np.int32)
        mnr = np.empty(Kc, dtype=np.int32)
        for i in range(nbk):
            b = b0 + i
            n = at_p[i]
            bp = b if do_phi else 0
            bb = b if do_bz else 0
            if do_phi:
                phi[b, :] = 0.0
            if do_bz:
                bz[b, :] = 0.0
            s0, s1, se = _leaf_sums(n, lv[i], ln[i], lo[i], lu[i], do_phi, phi[bp], do_bz,
                                    bz[bb], W)
            ends[b, 0] = s0
            ends[b, 1] = s1
            ends[b, 2] = se * (m + 1)
            if Kc == 0:
                continue
            for k in range(Kc):
                for s in range(m):
                    rank[orders[b, k, s], k] = s + 1
            di[:] = 0.0
            dd[:] = 0.0
            _leaf_curves(n, lv[i], ln[i], lo[i], lu[i], rank, m, di, dd, mxe, mne, mxr, mnr)
            for k in range(Kc):
                ci = base
                cd = base
                s = 0
                for t in range(m + 1):
                    ci += di[k, t]
                    cd += dd[k, t]
                    while s < S and pos[s] == t:
                        ins[b, k, s] = ci
                        dele[b, k, s] = cd
                        s += 1
