"""Marginal (interventional) removal of a tree ensemble with K shared references, exactly, in
time linear in targets + references (docs/tree_removals.md has the derivation).

``v_x(u) = (1/K) sum_k f(x_u : r^k_{-u})``: the mean of the K single-reference games. For one
pair (x, r) and a leaf l with d slots (its path's nodes grouped by unit,
:mod:`insdel.trees._paths`), let ``a`` be the slots x passes and ``b`` those r passes (bit
masks). The hybrid reaches l iff every kept slot is in a and every removed slot is in b. With
``c = ~a`` (the slots x fails, which must be removed, so r must pass them: b ⊇ c), the pair's
leaf is dead unless b ⊇ c; then ``E = a \\ b`` (must be kept, ``e = |E| = d - |b|``) and
``R = c`` (must be removed, ``s = |c|``), and (issue 44's single-pair forms, proved in the docs)

    phi_j = val ( [j in E] (e-1)! s! / (e+s)!  -  [j in R] e! (s-1)! / (e+s)! ),
    E[AUC] = val (m + 1) e! s! / (e+s+1)!.

Both depend on the reference only through ``|b|`` once ``b ⊇ c``. So per leaf, with ``N[b]`` the
number of references of pattern b, superset sums over ``b ⊇ c`` weighted by functions of
``(|b|, |c|)`` answer every target at once:

    Z[c]  = sum_{b ⊇ c} N[b]                             (curves, values)
    A[c]  = sum_{b ⊇ c} N[b] (e-1)! |c|! / (e+|c|)!        (e = d - |b|; 0 where e = 0)
    A1[c] = sum_{b ⊇ c} N[b] (e-1)! (|c|-1)! / (e+|c|-1)!  (A's weight at s = |c| - 1)
    G[c]  = sum_{b ⊇ c} N[b] e! (|c|-1)! / (e+|c|)!
    P[c]  = sum_{b ⊇ c} N[b] e! |c|! / (e+|c|+1)!

and a target of pattern a (``c = ~a``, ``s = |c|``) reads, per leaf,
``phi_j += val/K (A[c] - A1[c | j])`` for j in a (the references that fail j: those b ⊇ c less
those b ⊇ c ∪ {j}), ``phi_j -= val/K G[c]`` for j in c, ``E[AUC] += (m+1) val/K P[c]``.
The tables cost ``O(2^d d^2)`` per leaf (a superset zeta transform that tracks |b|), the
references ``O(K · path)`` and the targets ``O(B · (path + d))``: linear in B + K.

Paths with more than :data:`MAX_MARGINAL_SLOTS` distinct units raise
:class:`insdel.trees._paths.TooManySlots`; :mod:`insdel.trees.marginal_pairs` (B K walks, any
references, any depth) takes them, and so do per-target references.

A curve point after the first i slots (in the ordering's rank order) have moved, P the set of
them: insertion reaches l iff ``P ⊆ a``, with ``Z[~P]`` references; deletion iff ``~P ⊆ a``,
with ``Z[P]``.
"""

from __future__ import annotations

from math import lgamma

import numba as nb
import numpy as np

from .._checkpoint import sha256_arrays
from .._decomposition_kernels import _popcount
from .._validation import as_float_array
from ._paths import (
    TooManySlots,
    curve_job,
    direction_chunks,
    leaf_mask,
    read_curve,
    slots_by_rank,
)
from ._tree_game import TreeRemovalGame, check_ensemble_rows, ensemble_sha256
from .ensemble import TreeEnsemble, check_category_codes

__all__ = ["MarginalGame", "marginal_game", "MAX_MARGINAL_SLOTS", "TooManySlots"]

#: Distinct units on one root-to-leaf path the marginal tables take (2^d entries per leaf).
MAX_MARGINAL_SLOTS = 20


def _fact_table(size: int = 2 * MAX_MARGINAL_SLOTS + 3) -> np.ndarray:
    """``LF[k] = log k!``."""
    return np.array([lgamma(k + 1) for k in range(size)])


_LF = _fact_table()
#: Targets a kernel takes together inside each leaf (the leaf's tables stay in cache).
_BLOCK = 32


def marginal_game(ens: TreeEnsemble, X, background, *, groups=None, feature_names=None
                  ) -> MarginalGame:
    """The exact game of ``ens`` on the targets X under marginal removal with the K rows of
    ``background`` as every target's references.

    Parameters
    ----------
    ens : TreeEnsemble
    X : array_like (B, n)
        The targets (NaN allowed: the trees' default directions).
    background : array_like (K, n)
        The references, shared by every target (NaN allowed).
    groups, feature_names : optional
        Units that move together (:mod:`insdel.groups`).

    Returns
    -------
    MarginalGame

    Raises
    ------
    TooManySlots
        A leaf path splits on more than :data:`MAX_MARGINAL_SLOTS` distinct units (a
        ``ValueError``): :func:`insdel.trees.marginal_pairs.marginal_pairs_game` (B K walks)
        takes it.
    """
    from ..groups import check_groups

    X = check_ensemble_rows(ens, X, "the marginal tree game")
    bg = as_float_array("background", background, ndim=(2,), finite=False)
    if bg.shape[0] < 1 or bg.shape[1] != ens.n_features:
        raise ValueError(f"background must have at least one row and the ensemble's "
                         f"{ens.n_features} columns; got shape {bg.shape}")
    if np.isinf(bg).any():
        raise ValueError("background has infinite values")
    check_category_codes(ens, "background", bg)
    grp = check_groups(groups, X.shape[1], feature_names=feature_names)
    names = None if grp is None else list(grp.names)
    if grp is not None and grp.singleton:
        grp = None
    return MarginalGame(ens, X, np.ascontiguousarray(bg), grp, unit_names=names)


class MarginalGame(TreeRemovalGame):
    """``v_x(u) = (1/K) sum_k f(x_u : r^k_{-u})`` of a tree ensemble with K shared references,
    exact: values, curves of any orderings, Shapley values (shap's interventional
    TreeExplainer with this background) and E[AUC] / E[ABC], in time linear in targets +
    references. Built by :func:`marginal_game`."""

    name = "marginal"

    def __init__(self, ens, X, background, groups=None, *, unit_names=None, offset=0,
                 paths=None, tables=None):
        super().__init__(ens, X, groups, unit_names=unit_names, offset=offset, paths=paths)
        self.background = background
        d = self.paths.max_slots()
        if d > MAX_MARGINAL_SLOTS:
            raise TooManySlots(d, MAX_MARGINAL_SLOTS,
                               "the marginal tables (2^d entries per leaf)")
        self._tables = tables

    @property
    def K(self) -> int:
        return int(self.background.shape[0])

    def tables(self) -> tuple[np.ndarray, np.ndarray]:
        """Per leaf, the references' superset sums ``Z, A, A1, G, P`` (sum_l 2^d_l, 5) and each
        leaf's offset into them (L + 1,): built once, shared by the game's chunks."""
        if self._tables is None:
            d = np.diff(self.paths.slot_ptr)
            ptr = np.zeros(d.shape[0] + 1, dtype=np.int64)
            np.cumsum(np.left_shift(1, d), out=ptr[1:])
            counts = np.zeros(ptr[-1])
            p = self.paths
            for _, _, D in direction_chunks(self.ensemble, self.background):
                _count(D, counts, ptr, p.node_ptr, p.node, p.went_left, p.slot_of, p.slot_ptr)
            self._tables = (_tables(counts, ptr, p.slot_ptr, _LF), ptr)
        return self._tables

    def differing(self) -> np.ndarray:
        """A unit is in D when a split reads it and x differs from some reference on it."""
        bg = self.background
        first = bg[0]
        same_col = np.all((bg == first) | (np.isnan(bg) & np.isnan(first)), axis=0)
        equal = same_col & ((self.X == first) | (np.isnan(self.X) & np.isnan(first)))
        diff = ~equal
        if self.groups is not None:
            diff = self.groups.reduce_any(diff)
        return diff & self.used_units()

    def params(self) -> dict:
        return {"name": "marginal", "revision": 1, "engine": "trees",
                "ensemble_sha256": ensemble_sha256(self.ensemble),
                "background_sha256": sha256_arrays(self.background),
                "background_rows": self.K}

    def subset(self, lo: int, hi: int) -> MarginalGame:
        return MarginalGame(self.ensemble, self.X[lo:hi], self.background,
                            tables=self.tables(), **self._subset_kwargs(lo, hi))

    def __repr__(self) -> str:
        return (f"MarginalGame(B={self.B}, n={self.n}, m={self.m}, K={self.K}, "
                f"trees={self.ensemble.n_trees}, leaves={self.paths.n_leaves})")

    def v_all(self) -> np.ndarray:
        """f(x) of each target: every unit kept."""
        return self.ensemble.predict(self.X)

    def v_empty(self) -> np.ndarray:
        """The mean prediction over the references, for every target: every unit removed."""
        return np.full(self.B, self.ensemble.predict(self.background).mean())

    def _values(self, pairs, keep, clock):
        T, ptr = self.tables()
        keep = np.ascontiguousarray(keep, dtype=np.bool_)
        rows = self.X[np.asarray(pairs, dtype=np.int64)]
        out = np.empty(len(rows))
        for lo, hi, D in direction_chunks(self.ensemble, rows):
            out[lo:hi] = _mg_values(D, keep[lo:hi], T, ptr, *self.path_arrays())
        return out / self.K + self.ensemble.base

    def shapley(self) -> np.ndarray:
        """Exact Shapley values (B, m) of each target's marginal game (the same pass keeps
        E[AUC] for :meth:`expected_auc`)."""
        T, ptr = self.tables()
        parts = [_mg_shapley(D, self.m, T, ptr, *self.path_arrays())
                 for _, _, D in direction_chunks(self.ensemble, self.X)]
        self._e_sum = np.concatenate([e for _, e in parts])
        return np.concatenate([phi for phi, _ in parts]) / self.K

    def expected_auc(self) -> np.ndarray:
        T, ptr = self.tables()
        e = getattr(self, "_e_sum", None)
        if e is None:
            e = np.concatenate([_mg_expected(D, T, ptr, *self.path_arrays())
                                for _, _, D in direction_chunks(self.ensemble, self.X)])
        return (self.m + 1) * (e / self.K + self.ensemble.base)

    def curves(self, orders, *, modes=("insertion", "deletion"), positions=None
               ) -> dict[str, np.ndarray]:
        """v at the recorded points of each ordering: mode -> (B, K_orders, S)."""
        orders = self.check_orders(orders)
        pos = (np.arange(self.m + 1, dtype=np.int64) if positions is None
               else np.ascontiguousarray(positions, dtype=np.int64))
        T, ptr = self.tables()
        out = {mo: np.empty(orders.shape[:2] + pos.shape) for mo in modes}
        for lo, hi, D in direction_chunks(self.ensemble, self.X):
            for mo in modes:
                out[mo][lo:hi] = _mg_curves(D, orders[lo:hi], pos, mo == "deletion", T, ptr,
                                            *self.path_arrays()) / self.K + self.ensemble.base
        return out


# -- kernels ------------------------------------------------------------------------------------


@nb.njit(parallel=True, cache=True)
def _count(D, counts, ptr, node_ptr, node, went_left, slot_of, slot_ptr
           ):  # pragma: no cover - numba
    """``counts[ptr[l] + b] +=`` the rows of D whose pattern on leaf l's slots is b."""
    L = ptr.shape[0] - 1
    for ell in nb.prange(L):
        full = (np.int64(1) << (slot_ptr[ell + 1] - slot_ptr[ell])) - 1
        o = ptr[ell]
        for r in range(D.shape[0]):
            counts[o + (leaf_mask(D, r, ell, node_ptr, node, went_left, slot_of) & full)] += 1.0


@nb.njit(parallel=True, cache=True)
def _tables(counts, ptr, slot_ptr, LF):  # pragma: no cover - numba
    L = ptr.shape[0] - 1
    T = np.zeros((ptr[L], 5))  # a pattern's five sums side by side
    for ell in nb.prange(L):
        d = slot_ptr[ell + 1] - slot_ptr[ell]
        size = 1 << d
        H = np.zeros((size, d + 1))  # H[c, k]: references b ⊇ c with |b| = k
        for b in range(size):
            H[b, _popcount(b)] = counts[ptr[ell] + b]
        for i in range(d):  # superset sums, bit by bit
            bit = 1 << i
            for c in range(size):
                if c & bit == 0:
                    for k in range(d + 1):
                        H[c, k] += H[c | bit, k]
        o = ptr[ell]
        for c in range(size):
            s = _popcount(c)
            z = a = a1 = g = p = 0.0
            for k in range(s, d + 1):
                h = H[c, k]
                if h == 0.0:
                    continue
                e = d - k
                z += h
                if e >= 1:
                    a += h * np.exp(LF[e - 1] + LF[s] - LF[e + s])
                    if s >= 1:
                        a1 += h * np.exp(LF[e - 1] + LF[s - 1] - LF[e + s - 1])
                if s >= 1:
                    g += h * np.exp(LF[e] + LF[s - 1] - LF[e + s])
                p += h * np.exp(LF[e] + LF[s] - LF[e + s + 1])
            T[o + c, 0] = z
            T[o + c, 1] = a
            T[o + c, 2] = a1
            T[o + c, 3] = g
            T[o + c, 4] = p
    return T


@nb.njit(parallel=True, cache=True)
def _mg_values(D, keep, T, ptr, value, node_ptr, node, went_left, slot_of, slot_ptr,
               slot_unit):  # pragma: no cover - numba
    N = D.shape[0]
    L = value.shape[0]
    out = np.empty(N)
    for i in nb.prange(N):
        acc = 0.0
        for ell in range(L):
            a = leaf_mask(D, i, ell, node_ptr, node, went_left, slot_of)
            s0 = slot_ptr[ell]
            d = slot_ptr[ell + 1] - s0
            ok = True
            c = 0
            for j in range(d):
                if keep[i, slot_unit[s0 + j]]:
                    if (a >> j) & 1 == 0:
                        ok = False
                        break
                else:
                    c |= 1 << j
            if ok:
                acc += value[ell] * T[ptr[ell] + c, 0]
        out[i] = acc
    return out


@nb.njit(parallel=True, cache=True)
def _mg_shapley(D, m, T, ptr, value, node_ptr, node, went_left, slot_of, slot_ptr, slot_unit
                ):  # pragma: no cover - numba
    """Shapley values (times K) and E[AUC] / (m + 1) less the base (times K) in one pass.
    Targets go in blocks of :data:`_BLOCK` inside each leaf, so a leaf's tables are read from
    cache by the whole block."""
    B = D.shape[0]
    L = value.shape[0]
    phi = np.zeros((B, m))
    e = np.zeros(B)
    for blk in nb.prange((B + _BLOCK - 1) // _BLOCK):
        b0 = blk * _BLOCK
        b1 = min(B, b0 + _BLOCK)
        for ell in range(L):
            s0 = slot_ptr[ell]
            d = slot_ptr[ell + 1] - s0
            full = (np.int64(1) << d) - 1
            o = ptr[ell]
            v = value[ell]
            for b in range(b0, b1):
                a = leaf_mask(D, b, ell, node_ptr, node, went_left, slot_of) & full
                c = full & ~a
                g = T[o + c, 3]
                a_c = T[o + c, 1]
                e[b] += v * T[o + c, 4]
                for j in range(d):
                    if (a >> j) & 1:
                        phi[b, slot_unit[s0 + j]] += v * (a_c - T[o + (c | (1 << j)), 2])
                    else:
                        phi[b, slot_unit[s0 + j]] -= v * g
    return phi, e


@nb.njit(parallel=True, cache=True)
def _mg_expected(D, T, ptr, value, node_ptr, node, went_left, slot_of, slot_ptr, slot_unit
                 ):  # pragma: no cover - numba
    B = D.shape[0]
    L = value.shape[0]
    out = np.zeros(B)
    for blk in nb.prange((B + _BLOCK - 1) // _BLOCK):
        b0 = blk * _BLOCK
        b1 = min(B, b0 + _BLOCK)
        for ell in range(L):
            full = (np.int64(1) << (slot_ptr[ell + 1] - slot_ptr[ell])) - 1
            o = ptr[ell]
            for b in range(b0, b1):
                a = leaf_mask(D, b, ell, node_ptr, node, went_left, slot_of)
                out[b] += value[ell] * T[o + (full & ~a), 4]
    return out


@nb.njit(parallel=True, cache=True)
def _mg_curves(D, orders, pos, deletion, T, ptr, value, node_ptr, node, went_left, slot_of,
               slot_ptr, slot_unit):  # pragma: no cover - numba
    B, K, m = orders.shape
    L = value.shape[0]
    out = np.empty((B, K, pos.shape[0]))
    for job in nb.prange(B * K):
        b, k, rank, diff = curve_job(orders, job)
        idx = np.empty(64, dtype=np.int64)
        for ell in range(L):
            a = leaf_mask(D, b, ell, node_ptr, node, went_left, slot_of)
            s0 = slot_ptr[ell]
            d = slot_ptr[ell + 1] - s0
            full = (1 << d) - 1
            slots_by_rank(rank, slot_unit, s0, d, idx)
            o = ptr[ell]
            moved = 0
            start = 0
            for i in range(d + 1):  # after the first i slots have moved
                end = m + 1 if i == d else rank[slot_unit[s0 + idx[i]]]
                if deletion:
                    live = (full & ~moved) & ~a == 0
                    cnt = T[o + moved, 0]
                else:
                    live = moved & ~a == 0
                    cnt = T[o + (full & ~moved), 0]
                if live and cnt != 0.0:
                    diff[start] += value[ell] * cnt
                    diff[end] -= value[ell] * cnt
                if i < d:
                    moved |= 1 << idx[i]
                start = end
        read_curve(diff, pos, out, b, k)
    return out
