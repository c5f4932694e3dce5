"""Root-to-leaf paths of a :class:`~insdel.trees.ensemble.TreeEnsemble`, grouped by unit.

A leaf l is reached by a row z iff z takes, at every internal node on l's path, the branch the
path takes. Grouping the path's nodes by the unit (feature, or group of features) they split
on gives the leaf's *slots*: one per distinct unit on the path. Under any removal that decides
each unit's value independently (kept: the target's; removed: a reference's, or the trees'
cover-weighted average), the leaf's weight in ``v(u)`` is a product over its slots, each slot
reading only whether its unit is in u. The removals of :mod:`insdel.trees` (path-dependent,
marginal) are written on these slots.

:func:`leaf_paths` flattens them once per ensemble; :func:`node_directions` evaluates every split
of the ensemble on a batch of rows once, and :func:`leaf_mask` reads off them, for a row, which
slots of a leaf it passes (every node of the slot sends the row along the path): a node shared
by many leaves' paths is evaluated once per row.
"""

from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from .ensemble import TreeEnsemble, goes_left

__all__ = ["LeafPaths", "leaf_paths", "node_directions", "leaf_mask", "ranks_of", "curve_job",
           "slots_by_rank", "read_curve",
           "direction_chunks", "MAX_SLOTS", "DIRECTION_BYTES", "TooManySlots"]

#: Bytes of node directions (rows x nodes booleans) held at once.
DIRECTION_BYTES = 32 * 2**20

#: Distinct units on one root-to-leaf path the kernels accept (bit masks of a leaf's slots).
MAX_SLOTS = 62


class TooManySlots(ValueError):
    """A root-to-leaf path of the ensemble splits on more distinct units than a kernel takes:
    ``slots`` (the most on one path) over ``limit``. The baseline tree game and the marginal
    game over (target, reference) pairs (:mod:`insdel.trees.marginal_pairs`) walk the trees
    instead and take any depth."""

    def __init__(self, slots: int, limit: int, what: str):
        self.slots, self.limit = int(slots), int(limit)
        super().__init__(f"a root-to-leaf path of the ensemble splits on {self.slots} distinct "
                         f"units; {what} take at most {self.limit}")


class LeafPaths(NamedTuple):
    """The leaves of an ensemble with their paths grouped by unit (L leaves, P path nodes,
    S slots over all leaves).

    ``value[l]`` the leaf's value; its path nodes are ``node[node_ptr[l]:node_ptr[l + 1]]``,
    each going left iff ``went_left``, in slot ``slot_of`` (an index into the leaf's slots);
    its slots are ``slot_ptr[l]:slot_ptr[l + 1]`` of ``slot_unit`` (the unit) and ``slot_cover``
    (the product over the slot's nodes of the cover fraction of the child the path takes,
    cover[child] / cover[node]; NaN where the ensemble records no cover).
    """

    value: np.ndarray
    node_ptr: np.ndarray
    node: np.ndarray
    went_left: np.ndarray
    slot_of: np.ndarray
    slot_ptr: np.ndarray
    slot_unit: np.ndarray
    slot_cover: np.ndarray
    n_units: int

    @property
    def n_leaves(self) -> int:
        return int(self.value.shape[0])

    def max_slots(self) -> int:
        return int(np.diff(self.slot_ptr).max()) if self.n_leaves else 0


def leaf_paths(ens: TreeEnsemble, unit_of: np.ndarray | None = None) -> LeafPaths:
    """The leaves of ``ens`` and their paths grouped into slots by unit.

    Parameters
    ----------
    ens : TreeEnsemble
    unit_of : ndarray of int (n_features,), optional
        The unit of each feature (a group label); default: one unit per feature.
    """
    n = ens.n_features
    if unit_of is None:
        unit_of = np.arange(n, dtype=np.int64)
    else:
        unit_of = np.ascontiguousarray(unit_of, dtype=np.int64)
        if unit_of.shape != (n,) or unit_of.min(initial=0) < 0:
            raise ValueError(f"unit_of must be ({n},) non-negative unit labels, one per feature "
                             "of the ensemble")
    n_units = int(unit_of.max()) + 1 if n else 0
    is_leaf = ens.feature < 0
    L = int(is_leaf.sum())
    depth = ens.max_depth()
    out = _flatten(ens.feature, ens.left, ens.right, ens.value, ens.cover, ens.roots, unit_of,
                   L, max(depth, 1))
    value, node_ptr, node, went_left, slot_of, slot_ptr, slot_unit, slot_cover = out
    P, S = int(node_ptr[-1]), int(slot_ptr[-1])
    paths = LeafPaths(value, node_ptr, node[:P], went_left[:P], slot_of[:P], slot_ptr,
                      slot_unit[:S], slot_cover[:S], n_units)
    if paths.max_slots() > MAX_SLOTS:
        raise TooManySlots(paths.max_slots(), MAX_SLOTS, "the tree kernels")
    return paths


@nb.njit(cache=True)
def _flatten(feature, left, right, value, cover, roots, unit_of, L, depth
             ):  # pragma: no cover - numba
    cap = L * depth
    lval = np.empty(L)
    node_ptr = np.zeros(L + 1, dtype=np.int64)
    node = np.empty(cap, dtype=np.int64)
    went_left = np.empty(cap, dtype=np.bool_)
    slot_of = np.empty(cap, dtype=np.int64)
    slot_ptr = np.zeros(L + 1, dtype=np.int64)
    slot_unit = np.empty(cap, dtype=np.int64)
    slot_cover = np.empty(cap)
    stack_node = np.empty(depth + 2, dtype=np.int64)
    stack_state = np.empty(depth + 2, dtype=np.int64)  # 0: go left next, 1: right, 2: done
    path_nodes = np.empty(depth + 1, dtype=np.int64)
    path_left = np.empty(depth + 1, dtype=np.bool_)
    ell = 0
    P = 0
    S = 0
    for t in range(roots.shape[0]):
        top = 0
        stack_node[0] = roots[t]
        stack_state[0] = 0
        while top >= 0:
            i = stack_node[top]
            if feature[i] < 0:  # a leaf: write its path (nodes 0..top-1)
                lval[ell] = value[i]
                s0 = S
                for k in range(top):
                    nd = path_nodes[k]
                    u = unit_of[feature[nd]]
                    child = left[nd] if path_left[k] else right[nd]
                    frac = cover[child] / cover[nd]
                    slot = -1
                    for s in range(s0, S):
                        if slot_unit[s] == u:
                            slot = s
                            break
                    if slot < 0:
                        slot = S
                        slot_unit[S] = u
                        slot_cover[S] = 1.0
                        S += 1
                    slot_cover[slot] *= frac
                    node[P] = nd
                    went_left[P] = path_left[k]
                    slot_of[P] = slot - s0
                    P += 1
                ell += 1
                node_ptr[ell] = P
                slot_ptr[ell] = S
                top -= 1
                continue
            st = stack_state[top]
            if st == 2:
                top -= 1
                continue
            stack_state[top] = st + 1
            path_nodes[top] = i
            path_left[top] = st == 0
            top += 1
            stack_node[top] = left[i] if st == 0 else right[i]
            stack_state[top] = 0
    return lval, node_ptr, node, went_left, slot_of, slot_ptr, slot_unit, slot_cover


@nb.njit(parallel=True, cache=True)
def node_directions(Z, feature, threshold, missing_left, is_categorical, cat_ptr, categories,
                    strict):  # pragma: no cover - numba
    """(B, N) bool: whether row b goes left at node i (:func:`goes_left`; False at leaves)."""
    B = Z.shape[0]
    N = feature.shape[0]
    out = np.zeros((B, N), dtype=np.bool_)
    for b in nb.prange(B):
        for i in range(N):
            f = feature[i]
            if f >= 0:
                out[b, i] = goes_left(i, Z[b, f], threshold, missing_left, is_categorical,
                                      cat_ptr, categories, strict)
    return out


@nb.njit(inline="always")
def leaf_mask(D, b, ell, node_ptr, node, went_left, slot_of):  # pragma: no cover - numba
    """Bit mask of the slots of leaf ``ell`` that row b of the directions D passes (bits past
    the leaf's slots set)."""
    mask = np.int64(-1)
    for k in range(node_ptr[ell], node_ptr[ell + 1]):
        if D[b, node[k]] != went_left[k]:
            mask &= ~(np.int64(1) << slot_of[k])
    return mask


def direction_chunks(ens: TreeEnsemble, Z: np.ndarray):
    """``(lo, hi, D)`` over row chunks of Z: D the chunk's :func:`node_directions`, at most
    :data:`DIRECTION_BYTES` at once."""
    step = max(1, DIRECTION_BYTES // max(1, ens.n_nodes))
    arrs = (ens.feature, ens.threshold, ens.missing_left, ens.is_categorical, ens.cat_ptr,
            ens.categories, ens.strict)
    for lo in range(0, Z.shape[0], step):
        hi = min(Z.shape[0], lo + step)
        yield lo, hi, node_directions(np.ascontiguousarray(Z[lo:hi]), *arrs)


@nb.njit(inline="always")
def ranks_of(orders, b, k, rank):  # pragma: no cover - numba
    """``rank[u]`` = the step (1-based) at which ordering ``orders[b, k]`` moves unit u."""
    for t in range(orders.shape[2]):
        rank[orders[b, k, t]] = t + 1


@nb.njit(inline="always")
def curve_job(orders, job):  # pragma: no cover - numba
    """Job ``job`` of a curve kernel's loop over the B K (pair, ordering) jobs: the pair b, the
    ordering k, each unit's rank (:func:`ranks_of`) and a zeroed difference array over the
    steps 0..m + 1."""
    K = orders.shape[1]
    m = orders.shape[2]
    b = job // K
    k = job % K
    rank = np.empty(m, dtype=np.int64)
    ranks_of(orders, b, k, rank)
    return b, k, rank, np.zeros(m + 2)


@nb.njit(inline="always")
def slots_by_rank(rank, slot_unit, s0, d, idx):  # pragma: no cover - numba
    """``idx[:d]``: the leaf's slots (from ``s0``) sorted by their units' ranks (insertion
    sort: d is small)."""
    for a in range(d):
        r = rank[slot_unit[s0 + a]]
        h = a
        while h > 0 and rank[slot_unit[s0 + idx[h - 1]]] > r:
            idx[h] = idx[h - 1]
            h -= 1
        idx[h] = a


@nb.njit(inline="always")
def read_curve(diff, pos, out, b, k):  # pragma: no cover - numba
    """``out[b, k, s]`` = the running sum of the difference array ``diff`` at step
    ``pos[s]`` (pos increasing)."""
    run = 0.0
    si = 0
    for t in range(diff.shape[0] - 1):
        run += diff[t]
        while si < pos.shape[0] and pos[si] == t:
            out[b, k, si] = run
            si += 1
