"""The batched insertion/deletion curve engine (conventions: *Curves*).

For an ordering pi and S_k = {pi(1), ..., pi(k)}:

* insertion ``y_k = f(hybrid(x, r, S_k))``, from f(r) to f(x);
* deletion ``z_k = f(hybrid(x, r, complement(S_k)))``, from f(x) to f(r).

How the work is laid out (all pairs, all orderings, both modes at once):

1. Every point of every curve is a set of features taken from x. Features with ``x_j == r_j`` do not
   change the point, so each set is reduced to its *canonical* form ``S ∩ D`` with
   ``D = {j : x_j != r_j}``. Two curve points of one pair with the same canonical set are the same
   point and are evaluated once; the end points f(r) (set ∅) and f(x) (set D) are shared by all
   orderings and both modes of a pair.
0. One pass over the pairs (:func:`_prepare`) finds D and |D| per pair and checks that every value
   is finite and every ordering a permutation (the messages come from the checkers, only on
   failure). The row kernels read X and R directly and write the model's dtype.
2. One ordering per pair (K = 1, the *chain* path) needs no hashing: a pair's distinct rows are r,
   x and, per mode, one row per recorded point that moves a unit of D, so their number is known
   (closed form for the paper's one-unit-per-step curves) and so is where each pair's rows go.
   Parallel numba blocks of pairs write them (the current point kept in a local row, updated unit
   by unit and copied out at each new row) into a buffer of :data:`ROW_BUFFER_BYTES`, with each
   curve point's row id; the adapter then evaluates the buffer batch by batch.
3. Several orderings per pair (the *hashed* path), per run of pairs whose rows fit
   :data:`ROW_BUFFER_BYTES`: parallel numba blocks of pairs (one per thread) walk every ordering
   keeping each point's canonical set, give each point the local id of its distinct row and write
   each new row right after the block's previous one. Up to 16 units the set indexes a table of
   2**m entries directly, up to 64 it is one uint64 word and its own exact hash key
   (:func:`_set_block`, one walk per ordering for both modes); beyond, packed words with a Zobrist
   hash, collisions resolved by comparing the words (:func:`_hash_block`): deduplication is exact
   every way. Each block's rows are one region of the buffer, evaluated by one adapter call.
4. The curves are gathered from the distinct values (parallel numba blocks from
   :data:`PARALLEL_MIN_POINTS` points on); every value is read there, so that is where the
   model's values are checked for NaN and inf (the adapter is called with ``check_finite=False``).

Pairs are processed in chunks so that at most ``chunk_size`` curve points are indexed at once, and
at most ``ROW_BUFFER_BYTES`` of rows (and at least a batch) exist at once; the chunk's arrays live
in a per-thread workspace kept between calls (:func:`clear_workspace`).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import NamedTuple

import numba as nb
import numpy as np
from numpy.typing import ArrayLike

from ._progress import progress_bar
from ._threads import numba_threads
from ._validation import (
    _first,
    align_attributions,
    as_float_array,
    check_finite,
    check_mode,
    check_orders,
    check_pairs,
)
from .adapter import ModelLike, as_model
from .groups import (
    Groups,
    check_groups,
    check_positions,
    full_positions,
    group_attributions,
)
from .groups import positions as make_positions
from .hybrid import n_words

__all__ = ["curves", "orderings", "unit_orderings", "trace", "TraceResult", "DEFAULT_CHUNK_SIZE",
           "clear_workspace"]

DEFAULT_CHUNK_SIZE = 1 << 21  # curve points indexed per chunk of pairs
MODES = ("insertion", "deletion")

_ZOBRIST_SEED = 0x1D5E1
_zobrist_cache: dict[int, np.ndarray] = {}


def _zobrist(n: int) -> np.ndarray:
    z = _zobrist_cache.get(n)
    if z is None:
        rng = np.random.default_rng(_ZOBRIST_SEED)
        z = rng.integers(1, np.iinfo(np.uint64).max, size=n, dtype=np.uint64, endpoint=True)
        _zobrist_cache[n] = z
    return z


#: How an ordering is derived from attributions (``order=``): the paper's decreasing signed value,
#: decreasing absolute value (MoRF, what Quantus and ROAR use) and increasing signed value (LeRF).
ORDERS = ("signed", "absolute", "ascending")


def check_order(order: str) -> str:
    """Validate an ``order=`` option (one of :data:`ORDERS`)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}; got {order!r}.")
    return order


def orderings(A: ArrayLike, *, order: str = "signed") -> np.ndarray:
    """Feature orderings of attributions, ties broken by feature index (stable sort).

    Parameters
    ----------
    A : array_like, shape (..., n)
    order : {"signed", "absolute", "ascending"}, default "signed"
        ``"signed"``: decreasing a_j, the paper's ordering (the convention of insdel's tables);
        ``"absolute"``: decreasing |a_j| (MoRF, "most relevant first", as in Quantus and ROAR);
        ``"ascending"``: increasing a_j (LeRF, "least relevant first").

    Returns
    -------
    ndarray of int64, shape (..., n)
        ``order[..., k]`` is the feature moved at step k + 1.
    """
    check_order(order)
    A = as_float_array("A", A, ndim=tuple(range(1, 8)))
    key = {"signed": -A, "absolute": -np.abs(A), "ascending": A}[order]
    return np.argsort(key, axis=-1, kind="stable").astype(np.int64)


@nb.njit(cache=True, nogil=True)
def _find(stamp, tid, th, lw, base, b, cur, h):  # pragma: no cover - numba
    """Open-addressing lookup of the canonical set ``cur`` (hash h) among pair b's distinct rows
    (``lw[base + u]`` holds row u's set; entries of other pairs count as empty, so the table is
    never cleared). Returns (slot, local id), id -1 when absent (``slot`` is then free for it)."""
    mask = stamp.shape[0] - 1
    W = cur.shape[0]
    slot = np.int64(h & np.uint64(mask))
    while True:
        if stamp[slot] != b:
            return slot, -1
        if th[slot] == h:
            u = tid[slot]
            same = True
            for w in range(W):
                if lw[base + u, w] != cur[w]:
                    same = False
                    break
            if same:
                return slot, u
        slot = (slot + 1) & mask


@nb.njit(cache=True, nogil=True)
def _hash_block(b_lo, b_hi, orders, X, R, diff, zob, pos, starts, members, grouped, ins_at,
                del_at, T, lw, cap, counts, idx, first, rows):  # pragma: no cover - numba
    """K orderings per pair, pairs ``b_lo .. b_hi - 1``, any number of units: walk every ordering
    keeping the canonical set of each curve point as packed words with a Zobrist hash, and the
    current point itself, updated unit by unit; each new set becomes pair b's next distinct row u
    (``lw[b * cap + u]`` = its set; row 0 is r, row 1 is x when x != r) and every curve point gets
    its row's local id in ``idx`` (hash collisions are resolved by comparing the words:
    deduplication is exact). ``counts[b]`` receives the number of distinct rows.

    The block's rows are written one pair after the other from ``rows[b_lo * cap]`` on (its pairs'
    upper bound: the blocks of a parallel call never overlap); ``first[b]`` receives the row of
    pair b's r, so its row u is ``rows[first[b] + u]``."""
    K = orders.shape[1]
    n = X.shape[1]
    W = lw.shape[1]
    S = pos.shape[0]
    stamp = np.full(T, -1, dtype=np.int64)  # the pair an entry belongs to
    tid = np.empty(T, dtype=np.int64)
    th = np.empty(T, dtype=np.uint64)
    cur = np.zeros(W, dtype=np.uint64)
    dw = np.zeros(W, dtype=np.uint64)
    work = np.empty(n, dtype=rows.dtype)
    nxt = b_lo * cap  # the block's next free row
    for b in range(b_lo, b_hi):
        base = b * cap
        row0 = nxt
        first[b] = row0
        for j in range(n):
            rows[row0, j] = R[b, j]
        hD = np.uint64(0)
        for w in range(W):
            dw[w] = 0
            cur[w] = 0
            lw[base, w] = 0
        nd = 0
        for g in range(diff.shape[1]):
            if diff[b, g]:
                dw[g >> 6] |= np.uint64(1) << np.uint64(g & 63)
                hD ^= zob[g]
                nd += 1
        # the end points: the empty set -> r (local id 0), the difference set D -> x (id 1)
        slot, u = _find(stamp, tid, th, lw, base, b, cur, np.uint64(0))
        stamp[slot] = b
        tid[slot] = 0
        th[slot] = 0
        cnt = 1
        id_x = 0
        if nd > 0:
            slot, u = _find(stamp, tid, th, lw, base, b, dw, hD)
            stamp[slot] = b
            tid[slot] = 1
            th[slot] = hD
            for w in range(W):
                lw[base + 1, w] = dw[w]
            for j in range(n):
                rows[row0 + 1, j] = X[b, j]
            cnt = 2
            id_x = 1
        mi = 0
        for mode in range(2):
            if (mode == 0 and ins_at is None) or (mode == 1 and del_at is None):
                continue
            ins = mode == 0
            src = R if ins else X
            dst = X if ins else R
            for k in range(K):
                if ins:
                    for w in range(W):
                        cur[w] = 0
                    h = np.uint64(0)
                    prev = 0
                else:
                    for w in range(W):
                        cur[w] = dw[w]
                    h = hD
                    prev = id_x
                for j in range(n):
                    work[j] = src[b, j]
                changed = False
                t = 0
                for s in range(S):
                    while t < pos[s]:
                        g = orders[b, k, t]
                        t += 1
                        if diff[b, g]:
                            bit = np.uint64(1) << np.uint64(g & 63)
                            if ins:
                                cur[g >> 6] |= bit
                            else:
                                cur[g >> 6] &= ~bit
                            h ^= zob[g]
                            if grouped:
                                for c in range(starts[g], starts[g + 1]):
                                    col = members[c]
                                    work[col] = dst[b, col]
                            else:
                                work[g] = dst[b, g]
                            changed = True
                    if changed:
                        slot, u = _find(stamp, tid, th, lw, base, b, cur, h)
                        if u < 0:
                            u = cnt
                            stamp[slot] = b
                            tid[slot] = u
                            th[slot] = h
                            for w in range(W):
                                lw[base + u, w] = cur[w]
                            for j in range(n):
                                rows[row0 + u, j] = work[j]
                            cnt += 1
                        prev = u
                        changed = False
                    idx[b, k, mi, s] = prev
            mi += 1
        counts[b] = cnt
        nxt = row0 + cnt


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: slot = (key * golden) >> (64 - lg T)


#: Up to this many units the hashed walk indexes a canonical set directly (a table of 2**m
#: entries, 256 KB at m = 16: in a core's L2) instead of hashing it.
DIRECT_MAX_UNITS = 16


@nb.njit(cache=True, nogil=True)
def _set_block(b_lo, b_hi, orders, X, R, diff, pos, starts, members, ins_at, del_at, lgT, cap,
               counts, idx, first, rows):  # pragma: no cover - numba
    """:func:`_hash_block` for at most 64 units, where a canonical set is one integer, and each
    ordering is walked once for both modes (the deletion set after a step is D minus the
    insertion set). The same rows, counts and layout; local ids are numbered in this walk's order.

    ``lgT=None`` (at most :data:`DIRECT_MAX_UNITS` units): the set indexes a table of ``2**m``
    entries directly, no hashing or probing. An entry is ``tag | local id``, the tag being the
    pair's sequence number shifted past the id's bits: an entry with another pair's tag counts as
    empty, so the table is cleared only when the sequence numbers run out.

    ``lgT`` an int: the set is its own exact key in an open-addressing table of ``2**lgT`` slots
    (linear probing), whose entries the pair clears when it is done.

    ``members=None``: each unit is one column. ``pos=None``: every step is recorded (positions
    0, 1, ..., m). The ``None`` cases are compiled on their own (numba prunes the other branches):
    one source, eight kernels. Measured, 2,000 pairs of 27 orderings: the direct table 5-6 ns per
    curve point at n = 16 against 10 for the earlier one-word kernel (a walk per mode, stamped
    entries); the hashed table 49 against 59 ms serially at n = 38; ``members=None`` 18 % faster
    than walking one-column units' members; ``pos=None`` 4-7 % less bookkeeping in ``trace`` at
    n = 16 (no next-position test per step). The two modes' lookups are written out: a shared
    helper measured 2.5x slower (numba did not inline it)."""
    K = orders.shape[1]
    n = X.shape[1]
    m = diff.shape[1]
    if pos is None:  # every step recorded
        S = m + 1
        last = m
    else:
        S = pos.shape[0]
        last = pos[S - 1]
    idbits = 1
    while (1 << idbits) <= cap:
        idbits += 1
    idmask = np.int32((1 << idbits) - 1)
    seq_max = (1 << (31 - idbits)) - 1
    if lgT is None:
        tab = np.zeros(1 << m, np.int32)
    else:
        T = 1 << lgT
        mask = T - 1
        shift = np.uint64(64 - lgT)
        keys = np.zeros(T, np.uint64)  # 0: empty (the empty set is r, never entered)
        ids = np.empty(T, np.int32)
        used = np.empty(cap, np.int64)
    wi = np.empty(n, rows.dtype)  # the current insertion point
    wd = np.empty(n, rows.dtype)  # the current deletion point
    one = np.uint64(1)
    # the modes' rows of idx (a mode not traced is None: compiled on its own, without its branches)
    if ins_at is None:
        i_ins = 0
    else:
        i_ins = ins_at
    if del_at is None:
        i_del = 0
    else:
        i_del = del_at
    nxt = b_lo * cap
    seq = 0
    for b in range(b_lo, b_hi):
        row0 = nxt
        first[b] = row0
        dm = np.uint64(0)
        for g in range(m):
            if diff[b, g]:
                dm |= one << np.uint64(g)
        # the end points: r (set 0, local id 0) and x (set D, id 1; absent when x == r)
        for j in range(n):
            rows[row0, j] = R[b, j]
        cnt = 1
        nu = 0
        id_x = 0
        if lgT is None:
            seq += 1
            if seq > seq_max:
                tab[:] = 0
                seq = 1
            tag = np.int32(seq << idbits)
            tab[0] = tag
        if dm != 0:
            if lgT is None:
                tab[np.int64(dm)] = tag | 1
            else:
                slot = np.int64((dm * _GOLDEN) >> shift)
                keys[slot] = dm
                ids[slot] = 1
                used[0] = slot
                nu = 1
            for j in range(n):
                rows[row0 + 1, j] = X[b, j]
            cnt = 2
            id_x = 1
        xb = X[b]
        rb = R[b]
        for k in range(K):
            ob = orders[b, k]
            ik = idx[b, k, i_ins]
            idl = idx[b, k, i_del]
            cur = np.uint64(0)  # the insertion set; the deletion set is dm ^ cur
            for j in range(n):
                wi[j] = rb[j]
                wd[j] = xb[j]
            pi = 0
            pd = id_x
            s = 0
            if pos is None:
                rec = True
            else:
                rec = pos[0] == 0
            if rec:
                if ins_at is not None:
                    ik[0] = 0
                if del_at is not None:
                    idl[0] = id_x
                s = 1
            nextp = 1
            if pos is not None:
                nextp = pos[s] if s < S else -1
            changed = False
            for t in range(last):
                g = ob[t]
                bit = one << np.uint64(g)
                if dm & bit:
                    cur |= bit
                    if members is None:
                        wi[g] = xb[g]
                        wd[g] = rb[g]
                    else:
                        for c in range(starts[g], starts[g + 1]):
                            col = members[c]
                            wi[col] = xb[col]
                            wd[col] = rb[col]
                    changed = True
                if pos is None:
                    rec = True
                else:
                    rec = t + 1 == nextp
                if rec:
                    if changed:
                        changed = False
                        if ins_at is not None:  # cur != 0 here
                            if lgT is None:
                                v = tab[np.int64(cur)]
                                if (v ^ tag) >> idbits != 0:  # another pair's entry: new row
                                    v = tag | cnt
                                    tab[np.int64(cur)] = v
                                    for j in range(n):
                                        rows[row0 + cnt, j] = wi[j]
                                    cnt += 1
                                pi = v & idmask
                            else:
                                slot = np.int64((cur * _GOLDEN) >> shift)
                                while True:
                                    key = keys[slot]
                                    if key == cur:
                                        pi = ids[slot]
                                        break
                                    if key == 0:  # a new row
                                        keys[slot] = cur
                                        ids[slot] = cnt
                                        used[nu] = slot
                                        nu += 1
                                        for j in range(n):
                                            rows[row0 + cnt, j] = wi[j]
                                        pi = cnt
                                        cnt += 1
                                        break
                                    slot = (slot + 1) & mask
                        if del_at is not None:
                            dk = dm ^ cur
                            if lgT is None:
                                v = tab[np.int64(dk)]
                                if (v ^ tag) >> idbits != 0:
                                    v = tag | cnt
                                    tab[np.int64(dk)] = v
                                    for j in range(n):
                                        rows[row0 + cnt, j] = wd[j]
                                    cnt += 1
                                pd = v & idmask
                            elif dk == 0:
                                pd = 0
                            else:
                                slot = np.int64((dk * _GOLDEN) >> shift)
                                while True:
                                    key = keys[slot]
                                    if key == dk:
                                        pd = ids[slot]
                                        break
                                    if key == 0:
                                        keys[slot] = dk
                                        ids[slot] = cnt
                                        used[nu] = slot
                                        nu += 1
                                        for j in range(n):
                                            rows[row0 + cnt, j] = wd[j]
                                        pd = cnt
                                        cnt += 1
                                        break
                                    slot = (slot + 1) & mask
                    if ins_at is not None:
                        ik[s] = pi
                    if del_at is not None:
                        idl[s] = pd
                    s += 1
                    if pos is not None:
                        nextp = pos[s] if s < S else -1
        if lgT is not None:
            for i in range(nu):  # leave the table empty for the next pair
                keys[used[i]] = 0
        counts[b] = cnt
        nxt = row0 + cnt


@nb.njit(parallel=True, cache=True, nogil=True)
def _hash_par(nblk, orders, X, R, diff, zob, pos, starts, members, grouped, ins_at, del_at, T,
              lw, cap, counts, idx, first, rows):  # pragma: no cover - numba
    B = orders.shape[0]
    for i in nb.prange(nblk):
        _hash_block(i * B // nblk, (i + 1) * B // nblk, orders, X, R, diff, zob, pos, starts,
                    members, grouped, ins_at, del_at, T, lw, cap, counts, idx, first, rows)


@nb.njit(parallel=True, cache=True, nogil=True)
def _set_par(nblk, orders, X, R, diff, pos, starts, members, ins_at, del_at, lgT, cap, counts, idx,
             first, rows):  # pragma: no cover - numba
    B = orders.shape[0]
    for i in nb.prange(nblk):
        _set_block(i * B // nblk, (i + 1) * B // nblk, orders, X, R, diff, pos, starts, members,
                   ins_at, del_at, lgT, cap, counts, idx, first, rows)


def _hash_rows(nblk, kind, *args):
    """The hashed walk over all pairs of ``args``, in ``nblk`` parallel blocks (1: serially), by
    the kernel of ``kind``: ``"direct"`` or ``"word"`` (:func:`_set_block`, with ``lgT=None`` for
    the direct table) or ``"zobrist"`` (:func:`_hash_block`)."""
    block, par = _HASH_KERNELS[kind]
    if nblk == 1:
        block(0, args[0].shape[0], *args)
    else:
        par(nblk, *args)


_HASH_KERNELS = {"direct": (_set_block, _set_par), "word": (_set_block, _set_par),
                 "zobrist": (_hash_block, _hash_par)}


def _set_kernel(m: int, cap: int) -> str:
    """The hashed walk's kernel for m units and at most ``cap`` rows per pair: a direct table up to
    :data:`DIRECT_MAX_UNITS` units (its entries hold a local id and a pair tag in 31 bits), one
    word per set up to 64 units, Zobrist hashing beyond."""
    if m <= DIRECT_MAX_UNITS and cap < 1 << 20:
        return "direct"
    return "word" if m <= 64 else "zobrist"


@nb.njit(cache=True, nogil=True)
def _chain_block(b_lo, b_hi, orders, X, R, diff, n_d, pos, starts, members, grouped, ins_at,
                 del_at, write, base, offsets, rows, idx):  # pragma: no cover - numba
    """One ordering per pair (K = 1), pairs ``b_lo .. b_hi - 1``: the distinct rows are known
    without hashing (r, x and, per mode, one row per recorded point that differs from the previous
    one and from both ends).

    ``write`` False (count): ``offsets[b]`` receives pair b's number of distinct rows. ``write``
    True: pair b's rows are written from ``rows[offsets[b] - base]`` on (row r first, then x when x != r)
    and every curve point's local row id (0 for r) goes to ``idx``. The
    current point is kept in a local row, each moved unit's columns changed there, and copied out
    at every recorded point that is a new row. Unit g is
    the columns ``members[starts[g]:starts[g + 1]]`` (``grouped``; else column g)."""
    n = X.shape[1]
    S = pos.shape[0]
    cur = np.empty(n, rows.dtype)  # the current point (a local copy: no aliasing with ``rows``)
    for b in range(b_lo, b_hi):
        r = offsets[b] - base if write else 0
        row_r = r
        if write:
            for j in range(n):
                rows[r, j] = R[b, j]
        r += 1
        row_x = row_r
        if n_d[b] > 0:
            row_x = r
            if write:
                for j in range(n):
                    rows[r, j] = X[b, j]
            r += 1
        mi = 0
        for mode in range(2):
            if (mode == 0 and ins_at is None) or (mode == 1 and del_at is None):
                continue
            ins = mode == 0
            inside = 0 if ins else n_d[b]
            last = row_r if ins else row_x  # the row of the current state
            src = R if ins else X
            dst = X if ins else R
            if write:
                for j in range(n):
                    cur[j] = src[b, j]
            t = 0
            for s in range(S):
                moved = False
                while t < pos[s]:
                    g = orders[b, 0, t]
                    if diff[b, g]:
                        inside += 1 if ins else -1
                        moved = True
                        if write:
                            if grouped:
                                for c in range(starts[g], starts[g + 1]):
                                    col = members[c]
                                    cur[col] = dst[b, col]
                            else:
                                cur[g] = dst[b, g]
                    t += 1
                if moved:
                    if inside == n_d[b]:
                        last = row_x
                    elif inside == 0:
                        last = row_r
                    else:
                        if write:
                            for j in range(n):
                                rows[r, j] = cur[j]
                        last = r
                        r += 1
                if write:
                    idx[b, 0, mi, s] = last - row_r
            mi += 1
        if not write:
            offsets[b] = r


@nb.njit(cache=True, nogil=True)
def _chain_fast_block(b_lo, b_hi, orders, X, R, diff, n_d, ins_at, del_at, offsets, base,
                      rows):  # pragma: no cover - numba
    """:func:`_chain_block` (write mode) for the commonest case: one feature per unit and every
    step recorded. The same points (as hybrids: rows r, x first, then the rows of each inner step,
    the insertion one before the deletion one, where the general kernel writes all insertion rows
    first), and no ids: a point's row follows from the ordering (:func:`_gather_chain_block`
    reads the values from it; measured on 2,000 pairs, n = 16: 5-10 us less here and 7 us less
    gathering than writing and reading the ids). Both modes come from one walk over the
    ordering, each keeping its current point in a local row (measured: 278 against 435 us serial
    than a walk per mode; the general kernel's unit and position loops are slower still)."""
    n = X.shape[1]
    ci = np.empty(n, rows.dtype)  # the insertion and deletion curves' current points
    cd = np.empty(n, rows.dtype)
    for b in range(b_lo, b_hi):
        r0 = offsets[b] - base
        for j in range(n):
            v = R[b, j]
            rows[r0, j] = v
            ci[j] = v
        nd = n_d[b]
        if nd == 0:  # x == r: every point is row 0
            continue
        for j in range(n):
            v = X[b, j]
            rows[r0 + 1, j] = v
            cd[j] = v
        r = r0 + 2
        inside = 0
        for t in range(n):
            g = orders[b, 0, t]
            if diff[b, g]:
                inside += 1
                if inside < nd:  # the row: the current point, then its feature g (the current
                    # point is updated after the copy: a copy that reads a just-stored element
                    # waits for the store, measured 450 against 240 us serial)
                    if ins_at is not None:
                        for j in range(n):
                            rows[r, j] = ci[j]
                        v = X[b, g]
                        rows[r, g] = v
                        ci[g] = v
                        r += 1
                    if del_at is not None:
                        for j in range(n):
                            rows[r, j] = cd[j]
                        v = R[b, g]
                        rows[r, g] = v
                        cd[g] = v
                        r += 1


@nb.njit(cache=True, nogil=True)
def _gather_chain_block(b_lo, b_hi, values, first, orders, diff, out, nd_, ins_at, del_at, fr,
                        fx):  # pragma: no cover - numba
    """:func:`_gather_block` for the rows of :func:`_chain_fast_block`, without ids: pair b's
    inner step c (its c-th differing feature, 1 <= c < |D_b|) is row ``2 + M (c - 1)`` after its
    row r for insertion, the next row for deletion; the curves are ``f(r)`` (insertion) and
    ``f(x)`` (deletion) up to the first differing feature and swap ends at the last. Returns the
    number of pairs with a non-finite value, as :func:`_gather_block`."""
    m = orders.shape[2]
    M = (ins_at is not None) + (del_at is not None)
    if del_at is None:
        di = 0
        dd = 0
    else:
        di = del_at
        dd = 1 if ins_at is not None else 0  # the deletion row's offset after the insertion one
    bad = 0
    for b in range(b_lo, b_hi):
        f = first[b]
        nd = nd_[b]
        vr = values[f]
        vx = values[f + 1] if nd > 0 else vr
        fr[b] = vr
        fx[b] = vx
        nf = (vr - vr != 0.0) | (vx - vx != 0.0)
        ci = vr
        cd = vx
        if ins_at is not None:
            out[0, b, 0, 0] = ci
        if del_at is not None:
            out[di, b, 0, 0] = cd
        inside = 0
        for t in range(m):
            if diff[b, orders[b, 0, t]]:
                inside += 1
                if inside == nd:  # insertion reaches x, deletion reaches r
                    ci = vx
                    cd = vr
                else:
                    row = f + 2 + M * (inside - 1)
                    if ins_at is not None:
                        ci = values[row]
                        nf |= ci - ci != 0.0
                    if del_at is not None:
                        cd = values[row + dd]
                        nf |= cd - cd != 0.0
            if ins_at is not None:
                out[0, b, 0, t + 1] = ci
            if del_at is not None:
                out[di, b, 0, t + 1] = cd
        bad += nf
    return bad


@nb.njit(parallel=True, cache=True, nogil=True)
def _gather_chain_par(nblk, values, first, orders, diff, out, nd, ins_at, del_at, fr,
                      fx):  # pragma: no cover - numba
    B = orders.shape[0]
    bad = 0
    for i in nb.prange(nblk):
        bad += _gather_chain_block(i * B // nblk, (i + 1) * B // nblk, values, first, orders, diff,
                                   out, nd, ins_at, del_at, fr, fx)
    return bad


def _gather_chain(nblk, values, first, orders, diff, out, nd, ins_at, del_at, fr, fx) -> int:
    """:func:`_gather_chain_block` over all pairs, in ``nblk`` parallel blocks (1: serially)."""
    if nblk == 1:
        return _gather_chain_block(0, orders.shape[0], values, first, orders, diff, out, nd,
                                   ins_at, del_at, fr, fx)
    return _gather_chain_par(nblk, values, first, orders, diff, out, nd, ins_at, del_at, fr, fx)


@nb.njit(parallel=True, cache=True, nogil=True)
def _chain_fast_par(nblk, orders, X, R, diff, n_d, ins_at, del_at, offsets, base,
                    rows):  # pragma: no cover - numba
    B = X.shape[0]
    for i in nb.prange(nblk):
        _chain_fast_block(i * B // nblk, (i + 1) * B // nblk, orders, X, R, diff, n_d, ins_at,
                          del_at, offsets, base, rows)


@nb.njit(parallel=True, cache=True, nogil=True)
def _chain_par(nblk, orders, X, R, diff, n_d, pos, starts, members, grouped, ins_at, del_at,
               write, base, offsets, rows, idx):  # pragma: no cover - numba
    B = X.shape[0]
    for i in nb.prange(nblk):
        _chain_block(i * B // nblk, (i + 1) * B // nblk, orders, X, R, diff, n_d, pos, starts,
                     members, grouped, ins_at, del_at, write, base, offsets, rows, idx)


def _chain(nblk, *args):
    """:func:`_chain_block` over all pairs of ``args``, in ``nblk`` parallel blocks (1: serially)."""
    if nblk == 1:
        _chain_block(0, args[1].shape[0], *args)
    else:
        _chain_par(nblk, *args)


def _chain_fast(nblk, *args):
    """:func:`_chain_fast_block` over all pairs of ``args``, in ``nblk`` parallel blocks."""
    if nblk == 1:
        _chain_fast_block(0, args[1].shape[0], *args)
    else:
        _chain_fast_par(nblk, *args)


@nb.njit(cache=True, nogil=True)
def _prepare_block(lo, hi, X, R, orders, check_perm, diff, n_d):  # pragma: no cover - numba
    """One pass over pairs ``lo .. hi - 1``: ``diff = X != R`` and ``n_d`` its row counts; returns the number of non-finite entries seen (0 or more) and, when
    ``check_perm``, of orderings that are not permutations of ``0 .. m - 1``.

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


def _prepare(nblk, X, R, orders, check_perm, diff, n_d):
    """:func:`_prepare_block` over all pairs, in ``nblk`` parallel blocks (1: serially); returns
    (all values finite, all orderings permutations)."""
    if nblk == 1:
        v, p = _prepare_block(0, X.shape[0], X, R, orders, check_perm, diff, n_d)
    else:
        v, p = _prepare_par(nblk, X, R, orders, check_perm, diff, n_d)
    return v == 0, p == 0


@nb.njit(cache=True, nogil=True)
def _row_counts(mask):  # pragma: no cover - numba
    """Number of True entries per row of a 2-D boolean array (int64)."""
    out = np.zeros(mask.shape[0], dtype=np.int64)
    for b in range(mask.shape[0]):
        c = 0
        for j in range(mask.shape[1]):
            c += mask[b, j]
        out[b] = c
    return out


@nb.njit(cache=True, nogil=True)
def _gather_block(b_lo, b_hi, values, first, idx, out, nd, fr, fx):  # pragma: no cover - numba
    """``out[mi, b, k, s] = values[first[b] + idx[b, k, mi, s]]`` (the curves from the distinct
    values; ``first[b]`` is the id of pair b's row r, ``idx`` holds local row ids), and f(r), f(x)
    per pair (local rows 0 and 1; 0 again when x == r). Every distinct value is read here at
    least once, so this is where the model's values are checked: returns the number of pairs with
    a NaN or inf among their values (the model is called with ``check_finite=False``)."""
    K = idx.shape[1]
    M = idx.shape[2]
    S = idx.shape[3]
    bad = 0
    for b in range(b_lo, b_hi):
        f = first[b]
        vr = values[f]
        vx = values[f + 1] if nd[b] > 0 else vr
        fr[b] = vr
        fx[b] = vx
        nf = (vr - vr != 0.0) | (vx - vx != 0.0)
        for mi in range(M):
            for k in range(K):
                for s in range(S):
                    v = values[f + idx[b, k, mi, s]]
                    out[mi, b, k, s] = v
                    nf |= v - v != 0.0
        bad += nf
    return bad


@nb.njit(parallel=True, cache=True, nogil=True)
def _gather_par(nblk, values, first, idx, out, nd, fr, fx):  # pragma: no cover - numba
    B = idx.shape[0]
    bad = 0
    for i in nb.prange(nblk):
        bad += _gather_block(i * B // nblk, (i + 1) * B // nblk, values, first, idx, out, nd, fr,
                             fx)
    return bad


def _gather(nblk, values, first, idx, out, nd, fr, fx) -> int:
    """:func:`_gather_block` over all pairs, in ``nblk`` parallel blocks (1: serially); returns
    the number of pairs with a non-finite value."""
    if nblk == 1:
        return _gather_block(0, idx.shape[0], values, first, idx, out, nd, fr, fx)
    return _gather_par(nblk, values, first, idx, out, nd, fr, fx)


def _raise_non_finite(model, curves_out, fr, fx, b0: int, modes) -> None:
    """The error for non-finite model values found while gathering a chunk from pair ``b0`` on:
    names the model, the pairs and, for the first, the mode and curve points."""
    bad_pt = ~np.isfinite(curves_out).reshape(curves_out.shape[0], curves_out.shape[1], -1)
    bad = bad_pt.any(axis=(0, 2)) | ~np.isfinite(fr) | ~np.isfinite(fx)
    pairs = np.flatnonzero(bad)
    b = pairs[0]
    where = [f"{mo} points {_first(np.flatnonzero(bad_pt[mi, b]))}"
             for mi, mo in enumerate(modes) if bad_pt[mi, b].any()]
    ends = [name for name, v in (("f(r)", fr[b]), ("f(x)", fx[b])) if not np.isfinite(v)]
    raise ValueError(
        f"{model.name} returned non-finite values on the curves of {len(pairs)} pair(s) (pairs "
        f"{_first(pairs + b0)}); pair {b0 + b}: {', '.join(ends + where)}.")


@dataclass
class TraceResult:
    """Curves of B pairs under K orderings, with the bookkeeping an experiment reports.

    Attributes
    ----------
    curves : dict
        mode -> array (B, K, S): S = n + 1 points for the paper's curves, or one per position.
    fx, fr : ndarray (B,)
        f(x) and f(r) per pair (each evaluated once).
    n_points : int
        Curve points requested (B * K * modes * S).
    n_unique : int
        Distinct points evaluated by the model (the physical minimum for these curves).
    positions : ndarray of int64 (S,)
        Units moved at each point (``0 .. m`` for the paper's curves).
    m : int
        Number of units (groups; n without groups).
    groups : Groups or None
    """

    curves: dict
    fx: np.ndarray
    fr: np.ndarray
    n_points: int = 0
    n_unique: int = 0
    timings: dict = field(default_factory=dict)
    positions: np.ndarray | None = None
    m: int = 0
    groups: Groups | None = None


class _Workspace(threading.local):
    """Per-thread scratch arrays (the rows, ids and values of a chunk), kept between calls.

    Fresh multi-megabyte arrays cost a page fault per page on first touch (measured: the K = 27
    bench's bookkeeping ran 2.5x slower with fresh buffers on a 2-core VM), so the engine reuses
    them, as torch's allocator does. Nothing kept here is returned to the caller; a nested call
    (a model that itself traces curves) gets fresh arrays; :func:`clear_workspace` frees them.
    """

    def __init__(self):
        self.arrays: dict = {}
        self.busy = False

    def get(self, name: str, shape: tuple, dtype) -> np.ndarray:
        size = math.prod(shape)
        a = self.arrays.get(name)
        if a is None or a.dtype != np.dtype(dtype) or a.size < size:
            a = np.empty(size, dtype=dtype)
            if a.nbytes <= WORKSPACE_MAX_BYTES:
                self.arrays[name] = a
        return a[:size].reshape(shape)


#: Arrays larger than this are not kept between calls.
WORKSPACE_MAX_BYTES = 1 << 28

_workspace = _Workspace()


def clear_workspace() -> None:
    """Free the calling thread's scratch arrays kept between calls of :func:`trace`."""
    _workspace.arrays.clear()


class _Fresh:
    """A workspace that keeps nothing (for a nested call while the thread's own is in use)."""

    @staticmethod
    def get(name: str, shape: tuple, dtype) -> np.ndarray:
        return np.empty(shape, dtype=dtype)


class _scratch:
    """``with _scratch() as ws``: the thread's workspace, or a fresh one while it is in use
    (re-entrant calls). A class, not a generator: it is entered on every call."""

    __slots__ = ("ws",)

    def __enter__(self):
        if _workspace.busy:
            self.ws = _Fresh()
        else:
            _workspace.busy = True
            self.ws = _workspace
        return self.ws

    def __exit__(self, *exc) -> None:
        if self.ws is _workspace:
            _workspace.busy = False


#: The row walks write the rows of as many pairs as fit in this many bytes (and at least one
#: batch), then evaluate them. Large on purpose: every switch between numba's parallel kernels and
#: the model's own threads costs (each OpenMP pool's workers spin for a while after their region,
#: on the cores the other pool needs), so fewer, longer runs win although their rows leave the
#: cache. Measured on the bench's cheap model (n = 16 -> 32 -> 1, 2,000 pairs, 27 orderings, five
#: fresh processes, ``trace`` over the bare pass): 8 MiB 1.32-1.45, 32 MiB 1.20-1.33, 64 MiB
#: 1.13-1.28, 128 MiB 1.12-1.29. The buffer is kept in the thread's workspace between calls
#: (:func:`clear_workspace` frees it).
ROW_BUFFER_BYTES = 1 << 26

#: Kernels over fewer rows (or curve points) than this run serially: below it a parallel region's
#: start-up costs more than the work.
PARALLEL_MIN_POINTS = 1 << 12

#: The pass over the pairs (:func:`_prepare`) is a read of X and R with little arithmetic: it runs
#: serially below this many entries of X and the orderings (measured right after a torch model
#: call, n = 16, K = 1: serial 6.7 against parallel 9.2 us for 200 pairs, equal at 500 pairs,
#: 26.6 against 18.1 us for 2,000).
PREPARE_PARALLEL_MIN = 1 << 14


class _Clock:
    """Seconds spent indexing and writing rows (bookkeeping) and in the model, for TraceResult
    (the walks add ``time.perf_counter`` differences to them directly)."""

    __slots__ = ("index_s", "model_s")

    def __init__(self):
        self.index_s = self.model_s = 0.0


class _Plan(NamedTuple):
    """What the row kernels need besides the pairs: recorded positions, unit -> columns, modes,
    and the threads the parallel kernels share out (read once per call: numba's
    ``get_num_threads`` costs microseconds)."""

    pos: np.ndarray
    starts: np.ndarray
    members: np.ndarray
    grouped: bool
    ins_at: int | None  # the mode's index on the ids' mode axis, None when it is not traced
    del_at: int | None
    threads: int

    @property
    def args(self) -> tuple:
        return self[:6]

    @property
    def fast(self) -> bool:
        """One feature per unit and every step recorded (:func:`_chain_fast_block`)."""
        return not self.grouped and self.pos.shape[0] == len(self.starts)


class _ChainWalk:
    """One ordering per pair: count each pair's distinct rows, then, per run of pairs whose rows fit
    :data:`ROW_BUFFER_BYTES`, write them (parallel blocks of pairs at known offsets) and evaluate
    them with one adapter call (batched by the model's ``batch_size``). The commonest case (one
    feature per unit, every step recorded) writes no ids: its gathering reads the ordering."""

    def __init__(self, model, n: int, plan: _Plan, S: int, ws):
        self.model, self.plan, self.ws = model, plan, ws
        self.M = (plan.ins_at is not None) + (plan.del_at is not None)
        self.cap = 2 + self.M * S  # most rows of one pair
        self.full = S == len(plan.starts)  # positions 0, 1, ..., m
        self.fast = plan.fast
        self.budget = _row_budget(model, n, self.cap)
        self.n = n
        self.stage = np.empty((0, n), dtype=model.dtype)

    def _rows(self, rows: int) -> np.ndarray:
        if self.stage.shape[0] < rows:
            self.stage = self.ws.get("rows", (rows, self.n), self.model.dtype)
        return self.stage

    def __call__(self, ob, Xc, Rc, dc, nd, idx, values, clock) -> tuple[np.ndarray, int]:
        """Rows and values of the pairs given; returns each pair's first row id and the number
        of distinct rows."""
        Bc = Xc.shape[0]
        plan = self.plan
        t = time.perf_counter()
        if self.full:  # every step recorded: r, x and, per mode, one row per inner step
            starts = _full_chain_starts(nd, self.M)
        else:
            counts = np.empty(Bc, dtype=np.int64)
            _chain(_blocks(Bc, Bc * self.cap, plan.threads), ob, Xc, Rc, dc, nd, *plan.args,
                   False, 0, counts, self.stage[:0], idx)
            starts = np.zeros(Bc + 1, dtype=np.int64)
            np.cumsum(counts, out=starts[1:])
        clock.index_s += time.perf_counter() - t
        b = 0
        while b < Bc:
            t = time.perf_counter()
            base = int(starts[b])
            # the pairs from b whose rows fit the budget (at least one pair)
            e = Bc if starts[Bc] - base <= self.budget else max(
                b + 1, int(np.searchsorted(starts, base + self.budget, side="right")) - 1)
            rows = int(starts[e]) - base
            stage = self._rows(rows)
            run = (ob, Xc, Rc, dc, nd) if e - b == Bc else (ob[b:e], Xc[b:e], Rc[b:e], dc[b:e],
                                                             nd[b:e])
            nblk = _blocks(e - b, rows, plan.threads)
            if self.fast:
                _chain_fast(nblk, *run, plan.ins_at, plan.del_at, starts[b:e], base, stage)
            else:
                _chain(nblk, *run, *plan.args, True, base, starts[b:e], stage, idx[b:e])
            t1 = time.perf_counter()
            clock.index_s += t1 - t
            self.model(stage[:rows], out=values[base:base + rows], check_finite=False)
            clock.model_s += time.perf_counter() - t1
            b = e
        return starts[:Bc], int(starts[Bc])

    def gather(self, nblk, values, first, ob, dc, idx, out, nd, fr, fx) -> int:
        """The curves from the values (:func:`_gather_chain` or :func:`_gather`); returns the
        number of pairs with a non-finite value."""
        if self.fast:
            return _gather_chain(nblk, values, first, ob, dc, out, nd, self.plan.ins_at,
                                 self.plan.del_at, fr, fx)
        return _gather(nblk, values, first, idx, out, nd, fr, fx)


@nb.njit(cache=True, nogil=True)
def _full_chain_starts(n_d, M):  # pragma: no cover - numba
    """Each pair's first global row (and the total last) for one-unit-per-step curves: pair b has
    rows r, x (when x != r) and, per mode, one per inner step (``n_d[b] - 1``)."""
    B = n_d.shape[0]
    starts = np.empty(B + 1, np.int64)
    starts[0] = 0
    for b in range(B):
        d = n_d[b]
        starts[b + 1] = starts[b] + 1 + (d > 0) + M * max(d - 1, 0)
    return starts


def _row_budget(model, n: int, cap: int) -> int:
    """Rows written before the model evaluates them: as many as fit :data:`ROW_BUFFER_BYTES`,
    and at least one batch and one pair's ``cap`` rows."""
    return max(model.batch_size, cap, ROW_BUFFER_BYTES // max(n * model.dtype.itemsize, 1))


def _blocks(B: int, work: int, threads: int, parallel_min: int | None = None) -> int:
    """Parallel blocks for a kernel over B pairs and ``work`` rows or points on ``threads``
    threads (1: serially, below ``parallel_min``, default :data:`PARALLEL_MIN_POINTS`)."""
    if work < (PARALLEL_MIN_POINTS if parallel_min is None else parallel_min) or B < 2:
        return 1
    return min(B, 4 * max(1, threads))


class _HashWalk:
    """K > 1 orderings per pair, per run of pairs whose rows fit :data:`ROW_BUFFER_BYTES`: parallel
    blocks of pairs (one per thread) index every curve point's canonical set and write each new
    row right after their previous pair's rows (the kernel :func:`_set_kernel` names: a direct
    table, one hashed word or Zobrist hashing); each block's rows are one region of the buffer,
    evaluated by one adapter call (no compaction pass: the values keep the buffer's layout)."""

    def __init__(self, model, n: int, m: int, plan: _Plan, points_per_pair: int, ws):
        self.model, self.plan, self.n, self.ws = model, plan, n, ws
        self.fast = False  # every point has an id (the ids say which of its pair's rows)
        self.cap = cap = 2 + points_per_pair  # most distinct rows one pair can have
        self.run_pairs = max(1, _row_budget(model, n, cap) // cap)
        self.kind = _set_kernel(m, cap)
        lgT = 1
        while (1 << lgT) < 2 * cap:  # load factor <= 1/2
            lgT += 1
        self.lgT = None if self.kind == "direct" else lgT  # _set_block: None, the direct table
        # the plan as the kernels take it (_set_block: members None when a unit is one column,
        # positions None when every step is recorded: 0, 1, ..., m)
        full = plan.pos.shape[0] == m + 1
        self.units = (None if full else plan.pos, plan.starts,
                      plan.members if plan.grouped else None, plan.ins_at, plan.del_at)
        if self.kind == "zobrist":
            self.zob = _zobrist(m)
            self.W = n_words(m)
        self.lw = self.stage = None

    def __call__(self, ob, Xc, Rc, dc, nd, idx, values, clock) -> tuple[np.ndarray, int]:
        """Rows and values of the pairs given; returns each pair's first row id and the number
        of distinct rows."""
        Bc, cap = Xc.shape[0], self.cap
        first = np.empty(Bc, dtype=np.int64)  # global id of each pair's row r
        n_rows = 0
        for p0 in range(0, Bc, self.run_pairs):
            p1 = min(Bc, p0 + self.run_pairs)
            t = time.perf_counter()
            P = p1 - p0
            if self.stage is None or self.stage.shape[0] < P * cap:
                self.stage = self.ws.get("rows", (P * cap, self.n), self.model.dtype)
            counts = np.empty(P, dtype=np.int64)
            nblk = min(_blocks(P, P * (cap - 2), self.plan.threads),
                       max(1, self.plan.threads))  # one region per thread
            ids, heads = idx[p0:p1], first[p0:p1]
            run = (ob[p0:p1], Xc[p0:p1], Rc[p0:p1], dc[p0:p1])
            if self.kind == "zobrist":
                if self.lw is None or self.lw.shape[0] < P * cap:
                    self.lw = self.ws.get("sets", (P * cap, self.W), np.uint64)
                _hash_rows(nblk, "zobrist", *run, self.zob, *self.plan.args, 1 << self.lgT,
                           self.lw, cap, counts, ids, heads, self.stage)
            else:
                _hash_rows(nblk, self.kind, *run, *self.units, self.lgT, cap, counts, ids, heads,
                           self.stage)
            base = p0 * cap  # the run's rows and values keep the buffer's layout from here
            t1 = time.perf_counter()
            clock.index_s += t1 - t
            for i in range(nblk):  # block i's rows: one region from its first pair's r on
                b_lo, b_hi = i * P // nblk, (i + 1) * P // nblk
                if b_hi > b_lo:
                    lo, hi = int(heads[b_lo]), int(heads[b_hi - 1] + counts[b_hi - 1])
                    self.model(self.stage[lo:hi], out=values[base + lo:base + hi],
                               check_finite=False)
            t2 = time.perf_counter()
            clock.model_s += t2 - t1
            heads += base
            n_rows += int(counts.sum())
            clock.index_s += time.perf_counter() - t2
        return first, n_rows

    def gather(self, nblk, values, first, ob, dc, idx, out, nd, fr, fx) -> int:
        """The curves from the values (:func:`_gather`)."""
        return _gather(nblk, values, first, idx, out, nd, fr, fx)


def trace(f: ModelLike, X: ArrayLike, R: ArrayLike, orders: ArrayLike, *, modes=MODES,
          groups=None, positions: ArrayLike | None = None, batch_size: int | None = None,
          chunk_size: int = DEFAULT_CHUNK_SIZE, progress: bool | None = None,
          validate: bool = True, client=None) -> TraceResult:
    """Trace insertion and/or deletion curves of every pair under every given ordering.

    Parameters
    ----------
    f : model
        Anything :func:`insdel.as_model` accepts.
    X, R : array_like (B, n)
        Targets and references (a 1-D R is one reference for all targets).
    orders : array_like of int, (B, m) or (B, K, m)
        Orderings of the m units (``orders[b, k, s]`` is the unit moved at step s + 1); the units
        are the n features, or the m groups of ``groups``.
    modes : sequence of {"insertion", "deletion"}
    groups : optional
        A partition of the columns into m groups that move as one unit (:mod:`insdel.groups`).
    positions : array_like of int (S,), optional
        Units moved at each recorded point, strictly increasing in [0, m] (:func:`insdel.groups.positions`
        builds them from ``step=``, ``fractions=``, ``max_fraction=``). Default ``0, 1, ..., m``.
    batch_size : int, optional
        Rows per model call.
    chunk_size : int
        Maximum number of curve points indexed at once (bounds memory).
    progress : bool, optional
        Show a progress bar (default: only on long runs in a terminal).
    client : dask.distributed.Client, optional
        Trace each chunk of pairs (the ``chunk_size`` chunks above) on the client's workers; the
        curves are identical to ``client=None`` (the same chunks, the same model calls). A smaller
        ``chunk_size`` gives more, smaller tasks.

    Returns
    -------
    TraceResult
    """
    model = as_model(f, batch_size=batch_size)
    if validate:
        X, R = check_pairs(X, R, finite=False)  # finiteness: checked in the pass below
    B, n = X.shape
    grp = check_groups(groups, n)
    if grp is not None and grp.singleton:
        grp = None
    m = n if grp is None else grp.m
    pos = _full_positions(m) if positions is None else check_positions(positions, m)
    S = pos.shape[0]
    asked = modes
    if modes is not MODES:
        asked = tuple(check_mode(mo) for mo in modes)
        if not asked:
            raise ValueError("modes must name at least one of 'insertion', 'deletion'.")
        if len(set(asked)) != len(asked):
            raise ValueError(f"modes must name each mode at most once; got {asked}.")
        # the engine's order (insertion first); the result's dict follows the order asked
        modes = tuple(mo for mo in MODES if mo in asked)
    # shape and integer values here; the permutation check is part of the pass below
    orders = check_orders(orders, m, name="orders", B=B, check_perm=False)
    K = orders.shape[1]
    do_ins, do_del = "insertion" in modes, "deletion" in modes
    M = int(do_ins) + int(do_del)
    # each traced mode's index on the curves' mode axis (None: not traced; the row kernels are
    # compiled for each case, without the branches of a mode that is not traced)
    ins_at = 0 if do_ins else None
    del_at = (1 if do_ins else 0) if do_del else None
    per_pair = K * M * S
    chunk_pairs = max(1, int(chunk_size) // max(per_pair, 1))
    # the row kernels read the pairs directly (C-contiguous float64: a broadcast R is copied)
    X = np.ascontiguousarray(X, dtype=np.float64)
    R = np.ascontiguousarray(R, dtype=np.float64)
    with _scratch() as ws:
        # one pass: the differing columns and their count, finiteness, and whether every
        # ordering is a permutation (the error messages come from the checkers)
        diff = ws.get("diff", (B, n), np.bool_)
        n_d = ws.get("n_d", (B,), np.int64)
        threads = numba_threads()
        nblk = _blocks(B, B * (n + K * m), threads, PREPARE_PARALLEL_MIN)
        finite, perms = _prepare(nblk, X, R, orders, validate, diff, n_d)
        if validate and not finite:
            check_finite("X", X)
            check_finite("R", R)
        if validate and not perms:
            check_orders(orders, m, name="orders", B=B)
        if client is not None:
            res = _trace_on(client, f, X, R, orders, modes, batch_size, chunk_size, chunk_pairs,
                            progress, grp, pos)
            return _in_order(res, asked)
        if grp is None:
            starts, members = _identity_units(n)
        else:  # units are groups: D = the groups with a differing column
            diff = np.ascontiguousarray(grp.reduce_any(diff))
            n_d = _row_counts(diff)
            starts, members = grp.starts, grp.members
        plan = _Plan(pos, starts, members, grp is not None, ins_at, del_at, threads)
        res = None
        if K == 1 and plan.fast and B <= chunk_pairs:
            res = _trace_one_run(model, X, R, diff, n_d, orders, plan, modes, progress, ws)
        if res is None:
            res = _trace_chunks(model, X, R, diff, n_d, orders, plan, modes, chunk_pairs,
                                progress, grp, ws)
        return _in_order(res, asked)


def _in_order(res: TraceResult, asked: tuple) -> TraceResult:
    """``res`` with its curves' dict in the order of the modes asked (the engine traces insertion
    first whatever the order asked; each curve is the same array)."""
    if tuple(res.curves) != tuple(asked):
        res.curves = {mo: res.curves[mo] for mo in asked}
    return res


_identity_cache: dict[int, tuple] = {}
_positions_cache: dict[int, np.ndarray] = {}


def _full_positions(m: int) -> np.ndarray:
    """:func:`insdel.groups.full_positions`, cached read-only (TraceResult.positions shares it)."""
    p = _positions_cache.get(m)
    if p is None:
        p = _positions_cache[m] = full_positions(m)
        p.flags.writeable = False
    return p


def _identity_units(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``starts, members`` of n one-column units (cached: read-only arrays)."""
    u = _identity_cache.get(n)
    if u is None:
        starts, members = np.arange(n + 1, dtype=np.int64), np.arange(n, dtype=np.int64)
        starts.flags.writeable = members.flags.writeable = False
        u = _identity_cache[n] = (starts, members)
    return u


def _trace_one_run(model, X, R, diff, n_d, orders, plan, modes, progress,
                   ws) -> TraceResult | None:
    """:func:`_trace_chunks` for the commonest call, in one pass of few statements: one ordering
    per pair, one feature per unit, every step recorded, all rows in one buffer (None when they
    do not fit: the caller takes the general path). The same kernels, rows, model calls and
    curves as the chain walk; what it saves is the walk's set-up and per-run bookkeeping, which
    a cheap model's pass makes several times slower (measured on the bench's n = 16 -> 32 -> 1
    MLP, 2,000 pairs: about 0.04 of the bare forward pass)."""
    B, n = X.shape
    M = len(modes)
    S = n + 1
    t0 = time.perf_counter()
    starts = _full_chain_starts(n_d, M)
    T = int(starts[B])
    if T > _row_budget(model, n, 2 + M * S):
        return None
    stage = ws.get("rows", (T, n), model.dtype)
    values = ws.get("values", (T,), np.float64)
    curves_out = np.empty((M, B, 1, S))  # one array; each mode's curves are a view of it
    fx = np.empty(B)
    fr = np.empty(B)
    with progress_bar(total=B, desc="curves", unit="pair", enable=progress, auto=False) as bar:
        _chain_fast(_blocks(B, T, plan.threads), orders, X, R, diff, n_d, plan.ins_at,
                    plan.del_at, starts, 0, stage)
        t1 = time.perf_counter()
        model(stage, out=values, check_finite=False)
        t2 = time.perf_counter()
        if _gather_chain(_blocks(B, B * M * S, plan.threads), values, starts, orders, diff,
                         curves_out, n_d, plan.ins_at, plan.del_at, fr, fx):
            _raise_non_finite(model, curves_out, fr, fx, 0, modes)
        bar.update(B)
    t3 = time.perf_counter()
    return TraceResult(curves={mo: curves_out[mi] for mi, mo in enumerate(modes)}, fx=fx, fr=fr,
                       n_points=B * M * S, n_unique=T,
                       timings={"bookkeeping_s": (t1 - t0) + (t3 - t2), "model_s": t2 - t1},
                       positions=plan.pos, m=n, groups=None)


def _trace_chunks(model, X, R, diff, n_d, orders, plan, modes, chunk_pairs, progress, grp,
                  ws) -> TraceResult:
    """:func:`trace` after validation: the pairs chunk by chunk (rows, model, gathering)."""
    B, n = X.shape
    K = orders.shape[1]
    S = plan.pos.shape[0]
    m = len(plan.starts) - 1  # units
    M = len(modes)
    per_pair = K * M * S
    curves_out = np.empty((M, B, K, S))  # one array; each mode's curves are a view of it
    fx = np.empty(B)
    fr = np.empty(B)
    n_unique = 0
    clock = _Clock()
    total_points = B * per_pair
    with progress_bar(total=B, desc="curves", unit="pair", enable=progress,
                      auto=total_points > 5_000_000) as bar:
        walk = (_ChainWalk(model, n, plan, S, ws) if K == 1
                else _HashWalk(model, n, m, plan, K * M * S, ws))
        id_type = np.int32 if walk.cap < 2**31 else np.int64
        for b0 in range(0, B, chunk_pairs):
            t = time.perf_counter()
            b1 = min(b0 + chunk_pairs, B)
            Bc = b1 - b0
            nd = n_d[b0:b1]
            # ids of each point's row (none in the chain walk's fast case, which reads orders)
            idx = None if walk.fast else ws.get("ids", (Bc, K, M, S), id_type)
            values = ws.get("values", (Bc * walk.cap,), np.float64)
            ob, dc = orders[b0:b1], diff[b0:b1]
            clock.index_s += time.perf_counter() - t
            first, U = walk(ob, X[b0:b1], R[b0:b1], dc, nd, idx, values, clock)
            t = time.perf_counter()
            if walk.gather(_blocks(Bc, Bc * per_pair, plan.threads), values, first, ob, dc, idx,
                           curves_out[:, b0:b1], nd, fr[b0:b1], fx[b0:b1]):
                _raise_non_finite(model, curves_out[:, b0:b1], fr[b0:b1], fx[b0:b1], b0, modes)
            clock.index_s += time.perf_counter() - t
            n_unique += U
            bar.update(Bc)
    out = {mo: curves_out[mi] for mi, mo in enumerate(modes)}
    return TraceResult(curves=out, fx=fx, fr=fr, n_points=total_points, n_unique=n_unique,
                       timings={"bookkeeping_s": clock.index_s, "model_s": clock.model_s},
                       positions=plan.pos, m=m, groups=grp)


def unit_orderings(A: np.ndarray, groups: Groups | None, *, order: str = "signed",
                   name: str = "A") -> np.ndarray:
    """Orderings of the units (features, or groups with attributions summed per group)."""
    return orderings(group_attributions(A, groups, name=name), order=order)


def _trace_chunk(b0: int, b1: int, modes: tuple, batch_size: int | None, chunk_size: int, *,
                 f, X, R, orders, groups=None, positions=None) -> TraceResult:
    """One chunk of pairs of :func:`trace` (on a Dask worker): exactly one chunk of the serial
    loop, so the same rows reach the model in the same batches."""
    return trace(f, X[b0:b1], R[b0:b1], orders[b0:b1], modes=modes, groups=groups,
                 positions=positions, batch_size=batch_size, chunk_size=chunk_size,
                 progress=False, validate=False)


def _trace_on(client, f, X, R, orders, modes, batch_size, chunk_size, chunk_pairs,
              progress, groups=None, positions=None) -> TraceResult:
    """:func:`trace` with its chunks of pairs on Dask workers, gathered in order."""
    from .distributed import gather_chunks

    B = X.shape[0]
    bounds = [(b0, min(B, b0 + chunk_pairs), modes, batch_size, chunk_size)
              for b0 in range(0, B, chunk_pairs)]
    parts = gather_chunks(client, _trace_chunk, bounds,
                          shared={"f": f, "X": X, "R": R, "orders": orders, "groups": groups,
                                  "positions": positions},
                          describe=lambda k: f"curves of pairs {bounds[k][0]}..{bounds[k][1] - 1}",
                          progress=progress, desc="curves", name="insdel-curves")
    timings: dict = {}
    for p in parts:
        for k, v in p.timings.items():
            timings[k] = timings.get(k, 0.0) + v
    return TraceResult(curves={m: np.concatenate([p.curves[m] for p in parts]) for m in modes},
                       fx=np.concatenate([p.fx for p in parts]),
                       fr=np.concatenate([p.fr for p in parts]),
                       n_points=sum(p.n_points for p in parts),
                       n_unique=sum(p.n_unique for p in parts), timings=timings,
                       positions=parts[0].positions, m=parts[0].m, groups=parts[0].groups)


def curves(f: ModelLike, X: ArrayLike, R: ArrayLike, A: ArrayLike, *, mode: str = "insertion",
           order: str = "signed", groups=None, step: int | None = None,
           fractions: ArrayLike | None = None, max_fraction: float | None = None,
           batch_size: int | None = None, chunk_size: int = DEFAULT_CHUNK_SIZE,
           progress: bool | None = None) -> np.ndarray:
    """Insertion or deletion curves for B pairs ordered by their attributions.

    Parameters
    ----------
    f : torch.nn.Module, estimator with ``predict``, or callable
        The model (see :func:`insdel.as_model`).
    X : array_like, shape (B, n)
        Targets x (the points being explained).
    R : array_like, shape (B, n) or (n,)
        References r.
    A : array_like, shape (B, n) or (B, K, n); with groups also (B, m) or (B, K, m)
        Attributions explaining f(x) - f(r); units are moved in decreasing signed order (ties by
        index). K orderings per pair give K curves per pair. With groups, a group's attribution is
        the sum of its columns' (or given per group).
    mode : {"insertion", "deletion"}
        Insertion starts at f(r) and ends at f(x); deletion starts at f(x) and ends at f(r).
    order : {"signed", "absolute", "ascending"}, default "signed"
        How the ordering is derived from ``A`` (:func:`orderings`).
    groups : optional
        Columns that move together (:mod:`insdel.groups`): m groups, m + 1 points.
    step : int, optional
        Groups (or features) moved per step; the curve is the subsequence of the one-per-step curve
        at ``0, k, 2k, ..., m``.
    fractions : array_like of float, optional
        Points at these fractions of the units (instead of ``step``).
    max_fraction : float, optional
        A partial curve that stops after this fraction of the units.
    batch_size : int, optional
        Rows per model call.
    chunk_size : int
        Curve points indexed at once (memory bound).
    progress : bool, optional
        Progress bar on long runs.

    Returns
    -------
    ndarray of float64, shape (B, S) or (B, K, S)
        S = n + 1 (or m + 1) for the whole one-per-step curve, else one point per position
        (:func:`insdel.groups.positions`).
    """
    check_mode(mode)
    names = list(X.columns) if hasattr(X, "columns") else None
    X, R = check_pairs(X, R)
    grp = check_groups(groups, X.shape[1])
    # a labelled A (DataFrame) is matched to X's columns (or the groups) by name, as in evaluate
    A = align_attributions("A", A, names, None if grp is None else list(grp.names))
    A = as_float_array("A", A, ndim=(2, 3))
    units = (X.shape[1],) if grp is None else (grp.n, grp.m)
    if A.shape[0] != X.shape[0] or A.shape[-1] not in units:
        raise ValueError(
            f"A must have shape (B, n) or (B, K, n) with (B, n) = {X.shape}"
            + ("" if grp is None else f" (or m = {grp.m} per group)") + f"; got {A.shape}."
        )
    m = X.shape[1] if grp is None else grp.m
    pos = None
    if step is not None or fractions is not None or max_fraction is not None:
        pos = make_positions(m, step=step, fractions=fractions, max_fraction=max_fraction)
    res = trace(f, X, R, unit_orderings(A, grp, order=order), modes=(mode,), groups=grp,
                positions=pos, batch_size=batch_size, chunk_size=chunk_size, progress=progress,
                validate=False)
    c = res.curves[mode]
    return c[:, 0, :] if A.ndim == 2 else c
