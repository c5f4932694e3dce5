"""numba kernels of the curve engine (:mod:`insdel.tracing`; conventions: *Curves*).

A curve point of pair b is a set of units taken from x: insertion's point after k steps is
``hybrid(x, r, S_k)``, deletion's ``hybrid(x, r, complement(S_k))``. Units with ``x == r`` do not
change a point, so each set is reduced to its canonical form ``S ∩ D`` (``D`` = the units with a
differing column) and points with the same canonical set are one row of the model.

Two row kernels walk the orderings and write every distinct row once:

* :func:`_chain_block`, one ordering per pair: the distinct rows are known without an index (r, x,
  and per mode one row per recorded point that moves a unit of D, the end points excepted), so
  every pair's rows have a known place in one contiguous buffer;
* :func:`_set_block`, several orderings per pair: each point's canonical set is looked up in a
  per-pair index, a **direct table** of ``2**m`` entries up to 16 units (the set, one integer,
  is the entry's address) or a **hash table** of the set's 64-bit words (any m; exact: the words
  are compared), and each new set becomes the pair's next row.

Both keep the units moved so far as a column mask (``inx[j]``: column j is in the insertion set)
and write every row, end points included, through :func:`_write_row`: the one place where a row's
values are chosen (from the pair's x and r, cast once per pair by :func:`_load_pair`). A walk
never stores a point of its own; it marks units (:func:`_move`) and asks the writer for the row.
The helpers are inlined into the kernels by numba (``inline="always"``: as calls they ran the set
kernel about 1.5x slower) and so have no compiled versions of their own.

Every ``*_block`` kernel handles pairs ``b_lo .. b_hi - 1``; its ``*_par`` twin runs ``nblk``
blocks of pairs in parallel, and the plain-named function calls one or the other (1 block:
serially). The kernels take one set of argument types whatever the call (positions and unit
members always arrays, a mode not traced as index -1, the index kind as a number), so numba
compiles each once per row dtype.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["write_chain_rows", "write_set_rows", "index_size", "gather",
           "prepare", "row_counts", "DIRECT_MAX_UNITS"]

#: Up to this many units the set walk indexes a canonical set directly (a table of 2**m int32
#: entries, 256 KB at m = 16: in a core's L2) instead of hashing it.
DIRECT_MAX_UNITS = 16

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # multiplicative hashing: slot = (key * golden) >> shift


# ------------------------------------------------------------------- the row writer and the walk


@nb.njit(cache=True, nogil=True, inline="always")
def _write_row(rows, at, xb, rb, inx, ins):  # pragma: no cover - numba
    """Write one curve point into ``rows[at]``: column j from x where ``inx[j] == ins``, else from
    r. ``inx`` marks the insertion set's columns, so ``ins=True`` writes ``hybrid(x, r, S)``
    (insertion) and ``ins=False`` writes ``hybrid(x, r, complement(S))`` (deletion); with no
    column marked they are r and x. ``xb`` and ``rb`` are the pair's x and r in the rows' dtype."""
    out = rows[at]
    for j in range(out.shape[0]):
        x = xb[j]  # both read first: a select, not a branch, per column
        r = rb[j]
        out[j] = x if inx[j] == ins else r


@nb.njit(cache=True, nogil=True, inline="always")
def _load_pair(xb, rb, X, R, b):  # pragma: no cover - numba
    """Pair b's x and r into ``xb`` and ``rb``, cast to their dtype (the model's) once per pair,
    so that the writer copies and selects values of one width."""
    for j in range(X.shape[1]):
        xb[j] = X[b, j]
        rb[j] = R[b, j]


@nb.njit(cache=True, nogil=True, inline="always")
def _move(inx, g, starts, members):  # pragma: no cover - numba
    """Mark unit g's columns (``members[starts[g]:starts[g + 1]]``) as inserted."""
    for c in range(starts[g], starts[g + 1]):
        inx[members[c]] = True


# ------------------------------------------------------------------------ one ordering per pair


@nb.njit(cache=True, nogil=True)
def _chain_block(b_lo, b_hi, orders, X, R, diff, n_d, pos, starts, members, ins_at, del_at,
                 interleave, write, base, offsets, rows, idx):  # pragma: no cover - numba
    """One ordering per pair (``orders[:, 0]``), pairs ``b_lo .. b_hi - 1``.

    ``write`` False (counting): ``offsets[b]`` receives pair b's number of distinct rows: r, x
    (when x != r) and, per traced mode, c_b inner rows (the recorded points that move a unit of D
    and are neither end; the same number for both modes).

    ``write`` True: ``offsets`` holds each pair's first global row and, after the last pair, the
    end of its rows; pair b's rows are written from ``rows[offsets[b] - base]`` on: r, x, then the
    inner rows, insertion's and deletion's alternating (``interleave``) or all of insertion's
    before deletion's. Each curve point's local row id (0 for r) goes to
    ``idx[b, 0, mode index, point]``. A mode not traced has index -1.
    """
    n = X.shape[1]
    S = pos.shape[0]
    ins = ins_at >= 0
    dele = del_at >= 0
    M = np.int64(ins) + np.int64(dele)
    inx = np.zeros(n, np.bool_)
    xb = np.empty(n, rows.dtype)  # the pair's x and r in the model's dtype
    rb = np.empty(n, rows.dtype)
    for b in range(b_lo, b_hi):
        nd = n_d[b]
        if write:
            _load_pair(xb, rb, X, R, b)
        r0 = 0
        stride = M
        doff = np.int64(ins)  # the deletion row's place after the insertion one
        if write:
            r0 = offsets[b] - base
            inx[:] = False
            _write_row(rows, r0, xb, rb, inx, True)  # r
            if nd > 0:
                _write_row(rows, r0 + 1, xb, rb, inx, False)  # x
            if not interleave:
                stride = 1
                if ins:  # c_b insertion rows first
                    doff = (offsets[b + 1] - offsets[b] - 1 - (nd > 0)) // M
        id_x = 1 if nd > 0 else 0
        li = 0  # the current points' local rows
        ld = id_x
        inner = 0
        inside = 0
        t = 0
        for s in range(S):
            moved = False
            while t < pos[s]:
                g = orders[b, 0, t]
                t += 1
                if diff[b, g]:
                    inside += 1
                    moved = True
                    if write:
                        _move(inx, g, starts, members)
            if moved:
                if inside == nd:  # insertion reaches x, deletion r
                    li = id_x
                    ld = 0
                else:
                    ri = 2 + inner * stride
                    if write:
                        if ins:
                            _write_row(rows, r0 + ri, xb, rb, inx, True)
                        if dele:
                            _write_row(rows, r0 + ri + doff, xb, rb, inx, False)
                    li = ri
                    ld = ri + doff
                    inner += 1
            if write:
                if ins:
                    idx[b, 0, ins_at, s] = li
                if dele:
                    idx[b, 0, del_at, s] = ld
        if not write:
            offsets[b] = 1 + (nd > 0) + M * inner


@nb.njit(parallel=True, cache=True, nogil=True)
def _chain_par(nblk, orders, X, R, diff, n_d, pos, starts, members, ins_at, del_at, interleave,
               write, base, offsets, rows, idx):  # pragma: no cover - numba
    B = X.shape[0]
    for i in nb.prange(nblk):
        _chain_block(i * B // nblk, (i + 1) * B // nblk, orders, X, R, diff, n_d, pos, starts,
                     members, ins_at, del_at, interleave, write, base, offsets, rows, idx)


def write_chain_rows(nblk, *args):
    """:func:`_chain_block` over all pairs of ``args`` in ``nblk`` parallel blocks (1: serially)."""
    if nblk == 1:
        _chain_block(0, args[1].shape[0], *args)
    else:
        _chain_par(nblk, *args)


# ----------------------------------------------------------------- several orderings per pair


@nb.njit(cache=True, nogil=True)
def _set_block(b_lo, b_hi, orders, X, R, diff, pos, starts, members, ins_at, del_at, lgT, cap,
               counts, idx, first, rows):  # pragma: no cover - numba
    """K orderings per pair, pairs ``b_lo .. b_hi - 1``: walk each ordering once for both modes,
    keeping the insertion set ``cur`` (uint64 words; deletion's is ``D ^ cur``), and give every
    recorded point the local id of its canonical set's row. A set not seen yet gets the next id
    and its row is written right after the pair's previous one (insertion's before deletion's at
    a point); the pair's first point, no unit moved, makes r local row 0 and x row 1 (r alone
    when x == r), whatever modes are traced.

    The index of a pair's sets (:func:`index_size` picks it): ``lgT == 0``, a direct table of
    ``2**m`` entries addressed by the set (its one word), each entry ``tag | id`` with the pair's
    tag, so that another pair's entries count as empty and the table is cleared only when the
    tags run out; else a hash table of ``2**lgT`` slots holding ids (multiplicative hashing of the
    set's words, linear probing; the sets kept per id and compared word by word: exact), whose
    slots the pair clears when it is done. The lookup is written out in the walk, once for both
    modes: as a helper function, even inlined, it ran several times slower.

    The block's rows start at ``rows[b_lo * cap]`` (its pairs' upper bound: the blocks of a
    parallel call never overlap) and follow one another: ``first[b]`` receives pair b's row r,
    ``counts[b]`` its number of rows, ``idx[b, k, mode index, point]`` each point's local id
    (a mode not traced has index -1)."""
    K = orders.shape[1]
    m = orders.shape[2]
    n = X.shape[1]
    S = pos.shape[0]
    W = (m + 63) >> 6
    ins = ins_at >= 0
    dele = del_at >= 0
    direct = lgT == 0
    idbits = 1
    while (1 << idbits) <= cap:
        idbits += 1
    idmask = (1 << idbits) - 1
    seq_max = (1 << (31 - idbits)) - 1 if direct else 0  # pair tags the ids leave room for
    tab = np.zeros((1 << m) if direct else 0, np.int32)
    T = 0 if direct else 1 << lgT
    shift = np.uint64(64 - max(lgT, 1))
    slot_id = np.full(T, -1, np.int32)
    sets = np.empty((0 if direct else cap, W), np.uint64)
    used = np.empty(0 if direct else cap, np.int64)
    dm = np.empty(W, np.uint64)  # D
    cur = np.empty(W, np.uint64)  # the insertion set
    dk = np.empty(W, np.uint64)  # the deletion set
    inx = np.empty(n, np.bool_)  # the insertion set's columns
    xb = np.empty(n, rows.dtype)  # the pair's x and r in the model's dtype
    rb = np.empty(n, rows.dtype)
    one = np.uint64(1)
    seq = 0
    tag = 0
    nxt = b_lo * cap
    for b in range(b_lo, b_hi):
        row0 = nxt
        first[b] = row0
        _load_pair(xb, rb, X, R, b)
        dm[:] = 0
        for g in range(m):
            if diff[b, g]:
                dm[g >> 6] |= one << np.uint64(g & 63)
        if direct:
            seq += 1
            if seq > seq_max:  # the tags ran out: clear the table
                tab[:] = 0
                seq = 1
            tag = seq << idbits
        cnt = 0
        nu = 0
        id_x = 0
        for k in range(K):
            ob = orders[b, k]
            cur[:] = 0
            inx[:] = False
            s = 0
            t = 0
            pi = 0
            pd = id_x
            changed = k == 0  # the pair's first point enters r and x
            while s < S:
                if changed and (t == pos[s] or t == 0):  # a new canonical set to look up
                    changed = False
                    for side in range(2):  # insertion's set, then deletion's
                        if side == 0:
                            if not (ins or t == 0):
                                continue
                            key = cur
                        else:
                            if not (dele or t == 0):
                                continue
                            for w in range(W):
                                dk[w] = dm[w] ^ cur[w]
                            key = dk
                        u = cnt
                        if direct:
                            a = np.int64(key[0])
                            v = tab[a]
                            if (v ^ tag) >> idbits != 0:  # another pair's entry: a new set
                                tab[a] = tag | cnt
                            else:
                                u = v & idmask
                        else:
                            h = np.uint64(0)
                            for w in range(W):
                                h = (h ^ key[w]) * _GOLDEN
                            slot = np.int64(h >> shift)
                            while True:
                                v = slot_id[slot]
                                if v < 0:  # a new set
                                    slot_id[slot] = cnt
                                    for w in range(W):
                                        sets[cnt, w] = key[w]
                                    used[nu] = slot
                                    nu += 1
                                    break
                                same = True
                                for w in range(W):
                                    if sets[v, w] != key[w]:
                                        same = False
                                        break
                                if same:
                                    u = v
                                    break
                                slot = (slot + 1) & (T - 1)
                        if u == cnt:
                            _write_row(rows, row0 + cnt, xb, rb, inx, side == 0)
                            cnt += 1
                        if side == 0:
                            pi = u
                        else:
                            pd = u
                    if t == 0:
                        id_x = pd
                if t < pos[s]:  # move the next unit
                    g = ob[t]
                    t += 1
                    if diff[b, g]:
                        cur[g >> 6] |= one << np.uint64(g & 63)
                        _move(inx, g, starts, members)
                        changed = True
                    continue
                if ins:
                    idx[b, k, ins_at, s] = pi
                if dele:
                    idx[b, k, del_at, s] = pd
                s += 1
        for i in range(nu):  # leave the hash table empty for the next pair
            slot_id[used[i]] = -1
        counts[b] = cnt
        nxt = row0 + cnt


@nb.njit(parallel=True, cache=True, nogil=True)
def _set_par(nblk, orders, X, R, diff, pos, starts, members, ins_at, del_at, lgT, cap, counts,
             idx, first, rows):  # pragma: no cover - numba
    B = orders.shape[0]
    for i in nb.prange(nblk):
        _set_block(i * B // nblk, (i + 1) * B // nblk, orders, X, R, diff, pos, starts, members,
                   ins_at, del_at, lgT, cap, counts, idx, first, rows)


def write_set_rows(nblk, *args):
    """:func:`_set_block` over all pairs of ``args`` in ``nblk`` parallel blocks (1: serially)."""
    if nblk == 1:
        _set_block(0, args[0].shape[0], *args)
    else:
        _set_par(nblk, *args)


def index_size(m: int, cap: int) -> int:
    """``lgT`` for :func:`_set_block` with m units and at most ``cap`` rows per pair: 0 (the direct
    table) up to :data:`DIRECT_MAX_UNITS` units (its entries hold a local id and a pair tag in 31
    bits), else the hash table's log2 size (load factor at most 1/2)."""
    if m <= DIRECT_MAX_UNITS and cap < 1 << 20:
        return 0
    lgT = 1
    while (1 << lgT) < 2 * cap:
        lgT += 1
    return lgT


# -------------------------------------------------------------- the pass over pairs, gathering


@nb.njit(cache=True, nogil=True)
def _prepare_block(lo, hi, X, R, orders, check_perm, diff, n_d):  # pragma: no cover - numba
    """One pass over pairs ``lo .. hi - 1``: ``diff = X != R`` and ``n_d`` its row counts; returns
    the number of pairs with a non-finite entry and, when ``check_perm``, of orderings that are not
    permutations of ``0 .. m - 1``.

    Branch-free where it can be: a value v is finite iff ``v - v == 0``; for m <= 64 an ordering is
    a permutation iff every entry is in range and the entries' bits cover ``2**m - 1``."""
    n = X.shape[1]
    K = orders.shape[1]
    m = orders.shape[2]
    bad_vals = 0
    bad_perm = 0
    small = m <= 64
    um = np.uint64(m)
    full = (np.uint64(1) << um) - np.uint64(1) if m < 64 else ~np.uint64(0)
    seen = np.zeros(0 if small else m, np.int64)  # seen[v] == stamp: v already met
    for b in range(lo, hi):
        c = 0
        nf = False
        for j in range(n):
            x = X[b, j]
            r = R[b, j]
            d = x != r
            diff[b, j] = d
            c += d
            nf |= (x - x != 0.0) | (r - r != 0.0)
        n_d[b] = c
        bad_vals += nf
        if not check_perm:
            continue
        for k in range(K):
            if small:
                acc = np.uint64(0)
                oob = False
                for s in range(m):
                    v = np.uint64(orders[b, k, s])  # a negative entry wraps to >= m
                    oob |= v >= um
                    acc |= np.uint64(1) << (v & np.uint64(63))
                bad_perm += oob | (acc != full)
            else:
                stamp = b * K + k + 1
                for s in range(m):
                    v = orders[b, k, s]
                    if v < 0 or v >= m or seen[v] == stamp:
                        bad_perm += 1
                        break
                    seen[v] = stamp
    return bad_vals, bad_perm


@nb.njit(parallel=True, cache=True, nogil=True)
def _prepare_par(nblk, X, R, orders, check_perm, diff, n_d):  # pragma: no cover - numba
    B = X.shape[0]
    bad_vals = 0
    bad_perm = 0
    for i in nb.prange(nblk):
        v, p = _prepare_block(i * B // nblk, (i + 1) * B // nblk, X, R, orders, check_perm, diff,
                              n_d)
        bad_vals += v
        bad_perm += p
    return bad_vals, bad_perm


def prepare(nblk, X, R, orders, check_perm, diff, n_d):
    """:func:`_prepare_block` over all pairs, in ``nblk`` parallel blocks (1: serially); returns
    (all values finite, all orderings permutations)."""
    if nblk == 1:
        v, p = _prepare_block(0, X.shape[0], X, R, orders, check_perm, diff, n_d)
    else:
        v, p = _prepare_par(nblk, X, R, orders, check_perm, diff, n_d)
    return v == 0, p == 0


@nb.njit(cache=True, nogil=True)
def row_counts(mask):  # pragma: no cover - numba
    """Number of True entries per row of a 2-D boolean array (int64)."""
    out = np.zeros(mask.shape[0], dtype=np.int64)
    for b in range(mask.shape[0]):
        c = 0
        for j in range(mask.shape[1]):
            c += mask[b, j]
        out[b] = c
    return out


@nb.njit(cache=True, nogil=True)
def _gather_block(b_lo, b_hi, values, first, idx, take, out, b_out, nd, fr,
                  fx):  # pragma: no cover - numba
    """The curves from the distinct values, every output at once: ``values`` (rows, H), and
    ``out[mi, b_out + b, t, s, h] = values[first[b] + idx[b, take[h, t], mi, s], h]`` (``first[b]``
    is the id of pair b's row r, ``idx`` holds local row ids, ``take[h]`` picks output h's
    orderings on idx's K axis; a ``take`` of one row serves every output), and f(r), f(x) per pair
    (local rows 0 and 1; 0 again when x == r) into ``fr[b_out + b, h]``, ``fx[b_out + b, h]``.
    The outputs are the last, contiguous axis, so a curve point's H values are one row of
    ``values`` copied to one run of ``out``. Every distinct value is read here at least once, so
    this is where the model's values are checked: returns the number of pairs with a NaN or inf
    among their values."""
    H = values.shape[1]
    Kt = take.shape[1]
    shared = take.shape[0] == 1
    M = idx.shape[2]
    S = idx.shape[3]
    bad = 0
    for b in range(b_lo, b_hi):
        f = first[b]
        fxr = f + 1 if nd[b] > 0 else f
        nf = False
        for h in range(H):
            vr = values[f, h]
            vx = values[fxr, h]
            fr[b_out + b, h] = vr
            fx[b_out + b, h] = vx
            nf |= (vr - vr != 0.0) | (vx - vx != 0.0)
        for mi in range(M):
            for t in range(Kt):
                if H == 1:  # one output (a single-output model): a scalar per point
                    k = take[0, t]
                    for s in range(S):
                        v = values[f + idx[b, k, mi, s], 0]
                        out[mi, b_out + b, t, s, 0] = v
                        nf |= v - v != 0.0
                elif shared:  # a point's H values: one row of values to one run of out
                    k = take[0, t]
                    for s in range(S):
                        row = f + idx[b, k, mi, s]
                        for h in range(H):
                            v = values[row, h]
                            out[mi, b_out + b, t, s, h] = v
                            nf |= v - v != 0.0
                else:  # output h on its own ordering: its column, point by point
                    for h in range(H):
                        k = take[h, t]
                        for s in range(S):
                            v = values[f + idx[b, k, mi, s], h]
                            out[mi, b_out + b, t, s, h] = v
                            nf |= v - v != 0.0
        bad += nf
    return bad


@nb.njit(parallel=True, cache=True, nogil=True)
def _gather_par(nblk, values, first, idx, take, out, b_out, nd, fr,
                fx):  # pragma: no cover - numba
    B = idx.shape[0]
    bad = 0
    for i in nb.prange(nblk):
        bad += _gather_block(i * B // nblk, (i + 1) * B // nblk, values, first, idx, take, out,
                             b_out, nd, fr, fx)
    return bad


_identity_take: dict[int, np.ndarray] = {}


def gather(nblk, values, first, idx, out, b_out, nd, fr, fx, take=None) -> int:
    """:func:`_gather_block` over all pairs of ``idx``, in ``nblk`` parallel blocks (1: serially);
    returns the number of pairs with a non-finite value.

    A single-output model's ``values`` (rows,), ``out`` (M, B, K, S) and ``fr``, ``fx`` (B,) are
    passed as views with one output (the same compiled kernel); ``take`` None reads every
    ordering of idx for every output."""
    if values.ndim == 1:
        values, out = values.reshape(-1, 1), out.reshape(out.shape + (1,))
        fr, fx = fr.reshape(-1, 1), fx.reshape(-1, 1)
    if take is None:
        K = idx.shape[1]
        take = _identity_take.get(K)
        if take is None:
            take = _identity_take[K] = np.arange(K, dtype=np.int64).reshape(1, K)
    if nblk == 1:
        return _gather_block(0, idx.shape[0], values, first, idx, take, out, b_out, nd, fr, fx)
    return _gather_par(nblk, values, first, idx, take, out, b_out, nd, fr, fx)
