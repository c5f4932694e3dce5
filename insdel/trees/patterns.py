"""Leaf patterns of a tree ensemble under the baseline removal (docs/tree_game.md).

For one pair (x, r) and a coalition u of units, the hybrid ``z = x_u : r_{-u}`` reaches, in
each tree, the leaf whose path it satisfies. At a node on feature j the hybrid goes where x goes
when j's unit is in u and where r goes otherwise; when x_j and r_j go the same way
(:func:`insdel.trees.ensemble.goes_left` equal) the node imposes nothing. So every leaf l that
some hybrid reaches has a **pattern**: the units ``E_l`` that must come from x, the units
``R_l`` that must come from r (disjoint; a path that needs a unit from both is reached by no
hybrid and is dropped), and the hybrid reaches l iff ``E_l ⊆ u`` and ``R_l ∩ u = ∅``. The
value of the pair's game is then

    v(u) = base + sum_l val_l [E_l ⊆ u] [R_l ∩ u = ∅].

:func:`leaf_patterns` walks every tree of the ensemble for every pair (numba, parallel over the
pairs), and merges the patterns of a pair with the same (E, R) by summing their values (many
trees share a pattern: ``(∅, ∅)`` for each tree where x and r agree along the whole path).
The result is ragged (:class:`Patterns`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from .ensemble import TreeEnsemble, goes_left_packed

__all__ = ["Patterns", "leaf_patterns", "pattern_counts", "check_pattern_count",
           "merge_ragged", "DEFAULT_MAX_PATTERNS"]

#: leaf patterns (before merging) held at once by default: about 24 bytes each plus 4 bytes per
#: unit on their paths
DEFAULT_MAX_PATTERNS = 1 << 24


@dataclass(frozen=True, eq=False)
class Patterns:
    """The merged leaf patterns of B pairs, ragged.

    Attributes
    ----------
    pat_off : (B + 1,) int64
        The patterns of pair b are ``pat_off[b] .. pat_off[b + 1] - 1``.
    u_off : (P + 1,) int64
        Pattern p's units are ``units[u_off[p]:u_off[p + 1]]``: first its E (``n_e[p]`` units,
        increasing), then its R (increasing).
    n_e : (P,) int64
        |E| of each pattern.
    units : (U,) int64
        The units (columns, or groups) of the patterns.
    val : (P,) float64
        The summed leaf values of the pattern (never 0: a pattern whose values cancel exactly
        is dropped).
    base : float
        The ensemble's constant.
    m : int
        The number of units.
    """

    pat_off: np.ndarray
    u_off: np.ndarray
    n_e: np.ndarray
    units: np.ndarray
    val: np.ndarray
    base: float
    m: int

    @property
    def B(self) -> int:
        return int(self.pat_off.shape[0] - 1)

    def counts(self) -> np.ndarray:
        """The number of patterns of each pair (B,)."""
        return np.diff(self.pat_off)

    def of(self, b: int) -> list[tuple[tuple[int, ...], tuple[int, ...], float]]:
        """The patterns of pair b as ``(E, R, val)`` tuples (for inspection and tests)."""
        out = []
        for p in range(int(self.pat_off[b]), int(self.pat_off[b + 1])):
            s, e, k = int(self.u_off[p]), int(self.u_off[p + 1]), int(self.n_e[p])
            out.append((tuple(self.units[s:s + k].tolist()), tuple(self.units[s + k:e].tolist()),
                        float(self.val[p])))
        return out

    def subset(self, lo: int, hi: int) -> Patterns:
        """The patterns of pairs ``lo .. hi - 1`` (offsets rebased)."""
        p0, p1 = int(self.pat_off[lo]), int(self.pat_off[hi])
        u0, u1 = int(self.u_off[p0]), int(self.u_off[p1])
        return Patterns(self.pat_off[lo:hi + 1] - p0, self.u_off[p0:p1 + 1] - u0,
                        self.n_e[p0:p1], self.units[u0:u1], self.val[p0:p1], self.base, self.m)


def pattern_counts(ensemble: TreeEnsemble, X: np.ndarray, R: np.ndarray, *,
                   unit_of: np.ndarray | None = None, m: int | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The leaf patterns (before merging) and their units that each pair reaches, (B,) each:
    what :func:`leaf_patterns` will hold for the pairs (a walk of the trees, nothing stored)."""
    X, R, unit_of, m = _inputs(X, R, unit_of, m)
    B = X.shape[0]
    cnt_p = np.zeros(B, dtype=np.int64)
    cnt_u = np.zeros(B, dtype=np.int64)
    z = np.zeros(1, np.int64)
    _walk_all(X, R, unit_of, m, 2 * ensemble.max_depth() + 4, *ensemble.walk_arrays(), False, cnt_p,
              cnt_u, z, z, z, z, z, np.zeros(1))
    return cnt_p, cnt_u


def _inputs(X, R, unit_of, m):
    X = np.ascontiguousarray(X, dtype=np.float64)
    R = np.ascontiguousarray(R, dtype=np.float64)
    if unit_of is None:
        unit_of, m = np.arange(X.shape[1], dtype=np.int64), X.shape[1]
    return X, R, np.ascontiguousarray(unit_of, dtype=np.int64), int(m)


def check_pattern_count(cnt_p: np.ndarray, cnt_u: np.ndarray, max_patterns: int, *,
                        first: int = 0) -> None:
    """Refuse pairs that reach more leaf patterns than ``max_patterns`` together, naming the pair
    that reaches the most (its index plus ``first``) and the memory they would take."""
    total = int(cnt_p.sum())
    if total > max_patterns:
        worst = int(np.argmax(cnt_p))
        raise ValueError(
            f"the {cnt_p.shape[0]} pairs reach {total:,} leaf patterns (pair {worst + first} "
            f"alone {int(cnt_p[worst]):,}), more than max_patterns = {max_patterns:,} (about "
            f"{(24 * total + 8 * int(cnt_u.sum())) / 2**30:.1f} GiB): give fewer pairs at once "
            "(the pairs are independent) or raise max_patterns.")


def leaf_patterns(ensemble: TreeEnsemble, X: np.ndarray, R: np.ndarray, *,
                  unit_of: np.ndarray | None = None, m: int | None = None,
                  max_patterns: int = DEFAULT_MAX_PATTERNS,
                  counts: tuple[np.ndarray, np.ndarray] | None = None) -> Patterns:
    """The merged leaf patterns of the pairs (X[b], R[b]) (trusted inputs: the caller checked
    the shapes; NaN is routed by each node's default direction).

    Parameters
    ----------
    ensemble : TreeEnsemble
    X, R : ndarray (B, n) float64
        Targets and references.
    unit_of : ndarray (n,) int64, optional
        The unit of each column (groups' labels); None: each column its own unit.
    m : int, optional
        The number of units (required with ``unit_of``).
    max_patterns : int
        Refuse a call whose pairs reach more leaf patterns (before merging) than this; the error
        names the pair that reaches the most.
    counts : tuple of ndarray, optional
        :func:`pattern_counts` of these pairs, when the caller has them.

    Returns
    -------
    Patterns
    """
    X, R, unit_of, m = _inputs(X, R, unit_of, m)
    B = X.shape[0]
    arrs = ensemble.walk_arrays()
    stack = 2 * ensemble.max_depth() + 4
    cnt_p, cnt_u = (pattern_counts(ensemble, X, R, unit_of=unit_of, m=m) if counts is None
                    else counts)
    check_pattern_count(cnt_p, cnt_u, max_patterns)
    total = int(cnt_p.sum())
    pair_p = np.zeros(B + 1, dtype=np.int64)
    pair_p[1:] = np.cumsum(cnt_p)
    pair_u = np.zeros(B + 1, dtype=np.int64)
    pair_u[1:] = np.cumsum(cnt_u)
    u_off = np.empty(total + 1, dtype=np.int64)
    u_off[total] = pair_u[B]
    n_e = np.empty(total, dtype=np.int64)
    units = np.empty(int(pair_u[B]), dtype=np.int64)
    val = np.empty(total)
    _walk_all(X, R, unit_of, m, stack, *arrs, True, cnt_p, cnt_u, pair_p, pair_u, u_off,
              n_e, units, val)
    out_p, o_uoff, o_ne, o_units, o_val = merge_ragged(pair_p, u_off, n_e, units, val)
    return Patterns(out_p, o_uoff, o_ne, o_units, o_val, float(ensemble.base), int(m))


def merge_ragged(pair_p: np.ndarray, u_off: np.ndarray, n_e: np.ndarray, units: np.ndarray,
                 val: np.ndarray) -> tuple[np.ndarray, ...]:
    """Merge each pair's equal (E, R) lists (summing their values, dropping sums of 0) and
    compact them: ``pat_off, u_off, n_e, units, val`` of the result, ragged as the input
    (``units`` is sorted within each E and R in place)."""
    B = pair_p.shape[0] - 1
    keep = np.zeros(val.shape[0], dtype=np.bool_)
    new_p = np.zeros(B, dtype=np.int64)
    new_u = np.zeros(B, dtype=np.int64)
    _merge_all(pair_p, u_off, n_e, units, val, keep, new_p, new_u)
    out_p = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(new_p, out=out_p[1:])
    base_u = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(new_u, out=base_u[1:])
    P = int(out_p[B])
    o_uoff = np.empty(P + 1, dtype=np.int64)
    o_uoff[P] = base_u[B]
    o_ne = np.empty(P, dtype=np.int64)
    o_units = np.empty(int(base_u[B]), dtype=np.int64)
    o_val = np.empty(P)
    _compact(pair_p, u_off, n_e, units, val, keep, out_p, base_u, o_uoff, o_ne, o_units, o_val)
    return out_p, o_uoff, o_ne, o_units, o_val


@nb.njit(cache=True, nogil=True, inline="always")
def _split(node, x, r, unit_of, cu, cs, L, nodes, thr, threshold, missing_left, is_categorical,
           cat_ptr, categories, strict):  # pragma: no cover - numba
    """Follow the path from ``node`` while every hybrid goes one way: x and r go the same way,
    or the node's unit is already one of the path's ``L`` constraints ``cu[:L]`` (sides
    ``cs``: 1 from x, 2 from r). Returns ``(node, unit, x child, r child)``: at a leaf the unit
    is -1; otherwise the node sends the hybrids with ``unit`` from x to the x child and the
    others to the r child. The nodes are the packed rows of
    :func:`insdel.trees.ensemble.packed_nodes`."""
    while True:
        j = nodes[node, 0]
        if j < 0:
            return node, -1, -1, -1
        xj = x[j]
        rj = r[j]
        gx = goes_left_packed(node, xj, nodes, thr, threshold, missing_left, is_categorical,
                              cat_ptr, categories, strict)
        cx = nodes[node, 2 - np.int64(gx)]
        if xj == rj or (np.isnan(xj) and np.isnan(rj)):
            node = cx
            continue
        gr = goes_left_packed(node, rj, nodes, thr, threshold, missing_left, is_categorical,
                              cat_ptr, categories, strict)
        if gx == gr:
            node = cx
            continue
        cr = nodes[node, 2 - np.int64(gr)]
        u = unit_of[j]
        side = 0
        for i in range(L):
            if cu[i] == u:
                side = cs[i]
                break
        if side == 0:
            return node, u, cx, cr
        node = cx if side == 1 else cr


@nb.njit(cache=True, nogil=True)
def _walk_pair(x, r, unit_of, cu, cs, s_node, s_lvl, s_unit, s_side, nodes, thr, threshold,
               missing_left, is_categorical, cat_ptr, categories, value, roots, strict, fill, p,
               q, u_off, n_e, units, val):  # pragma: no cover - numba
    """Walk every tree for one pair; count (``fill`` False) or write the patterns from pattern
    index p and unit index q on. Returns the pattern and unit counts; (-1, -1) when a pattern
    to write does not fit (its slot and the offset after it in ``u_off``, its units in
    ``units``: a growing buffer's caller grows it and walks the trees again).

    A depth-first walk with an explicit stack: a stack entry is a node, the number L of
    constraints on its path (``cu[:L]``, ``cs[:L]``, in path order) and the constraint of the
    edge into it (unit -1: none); nodes where every hybrid goes one way are followed in place
    (:func:`_split`). The leaves come in the order of the pattern layout (x side pushed first,
    so the r side is walked first)."""
    np_ = 0
    nu = 0
    for t in range(roots.shape[0]):
        top = 0
        s_node[0] = roots[t]
        s_lvl[0] = 0
        s_unit[0] = -1
        while top >= 0:
            node = s_node[top]
            L = s_lvl[top]
            if s_unit[top] >= 0:
                cu[L] = s_unit[top]
                cs[L] = s_side[top]
                L += 1
            top -= 1
            node, u, cx, cr = _split(node, x, r, unit_of, cu, cs, L, nodes, thr, threshold,
                                     missing_left, is_categorical, cat_ptr, categories, strict)
            if u < 0:  # a leaf: E = the constraints from x, R = those from r
                if fill:
                    if p + np_ + 1 >= u_off.shape[0] or q + nu + L > units.shape[0]:
                        return -1, -1
                    u_off[p + np_] = q + nu
                    ne = 0
                    for i in range(L):
                        if cs[i] == 1:
                            units[q + nu + ne] = cu[i]
                            ne += 1
                    k = ne
                    for i in range(L):
                        if cs[i] == 2:
                            units[q + nu + k] = cu[i]
                            k += 1
                    n_e[p + np_] = ne
                    val[p + np_] = value[node]
                np_ += 1
                nu += L
                continue
            for side in (1, 2):  # the x side (u from x), then the r side (u from r)
                top += 1
                s_node[top] = cx if side == 1 else cr
                s_lvl[top] = L
                s_unit[top] = u
                s_side[top] = side
    return np_, nu


@nb.njit(cache=True, nogil=True)
def _walk_buffers(stack):  # pragma: no cover - numba
    """The walk's path constraints (units, sides) and stack (node, level, edge unit, side)."""
    return (np.empty(stack, dtype=np.int64), np.empty(stack, dtype=np.int8),
            np.empty(stack, dtype=np.int64), np.empty(stack, dtype=np.int64),
            np.empty(stack, dtype=np.int64), np.empty(stack, dtype=np.int8))


#: pairs walked together tree by tree (a tree's nodes stay in cache across the block's pairs)
PAIR_BLOCK = 8


@nb.njit(parallel=True, cache=True, nogil=True)
def _walk_all(X, R, unit_of, m, stack, nodes, thr, threshold, missing_left, is_categorical,
              cat_ptr, categories, value, roots, strict, fill, cnt_p, cnt_u, pair_p, pair_u,
              u_off, n_e, units, val):  # pragma: no cover - numba
    """:func:`_walk_pair` for every pair, blocks of ``PAIR_BLOCK`` pairs tree by tree (each
    pair's leaves in tree order, as one walk of all the trees gives them)."""
    B = X.shape[0]
    PB = PAIR_BLOCK
    for blk in nb.prange((B + PB - 1) // PB):
        b0 = blk * PB
        nbk = min(PB, B - b0)
        cu, cs, s_node, s_lvl, s_unit, s_side = _walk_buffers(stack)
        at_p = np.zeros(nbk, dtype=np.int64)
        at_u = np.zeros(nbk, dtype=np.int64)
        for i in range(nbk):
            if fill:
                at_p[i] = pair_p[b0 + i]
                at_u[i] = pair_u[b0 + i]
        for t in range(roots.shape[0]):
            for i in range(nbk):
                b = b0 + i
                a, c = _walk_pair(X[b], R[b], unit_of, cu, cs, s_node, s_lvl, s_unit, s_side,
                                  nodes, thr, threshold, missing_left, is_categorical, cat_ptr,
                                  categories, value, roots[t:t + 1], strict, fill, at_p[i],
                                  at_u[i], u_off, n_e, units, val)
                at_p[i] += a
                at_u[i] += c
        if not fill:
            for i in range(nbk):
                cnt_p[b0 + i] = at_p[i]
                cnt_u[b0 + i] = at_u[i]


@nb.njit(cache=True, nogil=True)
def _sort_small(a, lo, hi):  # pragma: no cover - numba
    """Insertion sort of a[lo:hi] in place (a pattern's few units)."""
    for i in range(lo + 1, hi):
        v = a[i]
        k = i - 1
        while k >= lo and a[k] > v:
            a[k + 1] = a[k]
            k -= 1
        a[k + 1] = v


@nb.njit(cache=True, nogil=True)
def _same(u_off, n_e, units, p, q):  # pragma: no cover - numba
    if n_e[p] != n_e[q] or u_off[p + 1] - u_off[p] != u_off[q + 1] - u_off[q]:
        return False
    for i in range(u_off[p + 1] - u_off[p]):
        if units[u_off[p] + i] != units[u_off[q] + i]:
            return False
    return True


@nb.njit(parallel=True, cache=True, nogil=True)
def _merge_all(pair_p, u_off, n_e, units, val, keep, new_p, new_u):  # pragma: no cover - numba
    """Per pair: sort each pattern's E and R, and sum the values of equal patterns into the
    first of them (an open-addressing table on a hash of the pattern, exact comparison on a
    hash match); a pattern whose summed value is 0 is not kept."""
    B = pair_p.shape[0] - 1
    for b in nb.prange(B):
        p0, p1 = pair_p[b], pair_p[b + 1]
        size = 4
        while size < 2 * (p1 - p0):
            size *= 2
        mask = np.uint64(size - 1)
        table = np.full(size, -1, dtype=np.int64)
        hashes = np.empty(size, dtype=np.uint64)
        for p in range(p0, p1):
            s, e, k = u_off[p], u_off[p + 1], n_e[p]
            _sort_small(units, s, s + k)
            _sort_small(units, s + k, e)
            hv = np.uint64(14695981039346656037)
            for i in range(s, e):
                if i == s + k:
                    hv = (hv ^ np.uint64(0x9E3779B97F4A7C15)) * np.uint64(1099511628211)
                hv = (hv ^ np.uint64(units[i] + 1)) * np.uint64(1099511628211)
            hv = (hv ^ np.uint64(k)) * np.uint64(1099511628211)
            hv ^= hv >> np.uint64(29)
            slot = hv & mask
            while True:
                q = table[slot]
                if q < 0:
                    table[slot] = p
                    hashes[slot] = hv
                    keep[p] = True
                    break
                if hashes[slot] == hv and _same(u_off, n_e, units, q, p):
                    val[q] += val[p]
                    break
                slot = (slot + np.uint64(1)) & mask
        cp = 0
        cu = 0
        for p in range(p0, p1):
            if keep[p] and val[p] == 0.0:
                keep[p] = False
            if keep[p]:
                cp += 1
                cu += u_off[p + 1] - u_off[p]
        new_p[b] = cp
        new_u[b] = cu


@nb.njit(parallel=True, cache=True, nogil=True)
def _compact(pair_p, u_off, n_e, units, val, keep, out_p, base_u, o_uoff, o_ne, o_units,
             o_val):  # pragma: no cover - numba
    B = pair_p.shape[0] - 1
    for b in nb.prange(B):
        k = out_p[b]
        q = base_u[b]
        for p in range(pair_p[b], pair_p[b + 1]):
            if not keep[p]:
                continue
            o_uoff[k] = q
            o_ne[k] = n_e[p]
            o_val[k] = val[p]
            for i in range(u_off[p], u_off[p + 1]):
                o_units[q] = units[i]
                q += 1
            k += 1
