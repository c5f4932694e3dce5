"""The trees' own path-dependent removal, exactly (docs/tree_removals.md).

A removed feature is integrated out by the trees' training covers: walking a tree with the
coalition u kept from the target x, a split on a kept unit sends x its own way; a split on a
removed unit sends it both ways, each child weighted by its cover fraction
``cover[child] / cover[node]``. ``v_x(u)`` is the ensemble's base plus the sum over trees of
these weighted leaf values. This is what ``shap.TreeExplainer(model)`` explains when given no
background (``feature_perturbation="tree_path_dependent"``).

Grouped by unit along a leaf l's path (its slots, :mod:`insdel.trees._paths`), the weight of l
is a product over its slots j: ``p_j`` (1 if x passes every node of the slot, else 0) when j is
kept, ``q_j`` (the product of the slot's cover fractions) when j is removed:

    v_x(u) = base + sum_l val_l prod_{j in slots(l)} (p_j [j in u] + q_j [j not in u]).

Every quantity follows from the polynomial ``C_l(z) = prod_j (q_j + p_j z)`` (coefficient
``c_s``: the weight of the coalitions holding s of the leaf's d slots):

* Shapley: ``phi_j = sum_l val_l (p_j - q_j) sum_s [C_l / (q_j + p_j z)]_s s! (d-1-s)! / d!``
  (Lundberg et al. 2020, Algorithm 2's extend / unwind, one leaf at a time);
* E[AUC] over uniform orderings: ``(m + 1) (base + sum_l val_l sum_s c_s s! (d-s)! / (d+1)!)``;
* a curve: the leaf's weight changes only when one of its d units moves, so each leaf adds a
  step function with d + 1 pieces (O(d log d) per leaf and ordering).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ._paths import (
    MAX_SLOTS,
    curve_job,
    direction_chunks,
    leaf_mask,
    read_curve,
    slots_by_rank,
)
from ._tree_game import (
    TreeRemovalGame,
    check_ensemble_rows,
    ensemble_sha256,
    prefix_weights,
    shapley_weights,
)
from .ensemble import TreeEnsemble

__all__ = ["PathDependentGame", "path_dependent_game"]

_W = shapley_weights()
_V = prefix_weights()


def path_dependent_game(ens: TreeEnsemble, X, *, groups=None, feature_names=None
                        ) -> PathDependentGame:
    """The exact game of ``ens`` on the targets X under the path-dependent removal.

    Parameters
    ----------
    ens : TreeEnsemble
        The ensemble; its ``cover`` must be recorded (positive, finite) on every node.
    X : array_like (B, n)
        The targets (NaN allowed: the trees' default directions).
    groups : optional
        Units that move together (:mod:`insdel.groups`): a removed group's splits are all
        averaged by their covers.
    feature_names : sequence of str, optional
        Column names, for groups given by name.

    Returns
    -------
    PathDependentGame
    """
    from ..groups import check_groups

    X = check_ensemble_rows(ens, X, "the path-dependent removal")
    check_covers(ens)
    grp = check_groups(groups, X.shape[1], feature_names=feature_names)
    names = None if grp is None else list(grp.names)
    if grp is not None and grp.singleton:
        grp = None
    return PathDependentGame(ens, X, grp, unit_names=names)


def check_covers(ens: TreeEnsemble) -> None:
    """The path-dependent removal weighs children by their covers: every node's must be
    finite and positive (named otherwise)."""
    cov = ens.cover
    bad = ~np.isfinite(cov) | (cov <= 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"the path-dependent removal needs each node's cover (training rows "
                         f"or hessian sum) and {ens.source or 'this ensemble'} has cover "
                         f"{float(cov[i])!r} at node {i} ({int(bad.sum())} nodes without a positive "
                         "cover); use a removal with references (baseline, marginal)")


class PathDependentGame(TreeRemovalGame):
    """The game ``v_x(u)`` of a tree ensemble under its path-dependent removal, exact at any n.

    Built by :func:`path_dependent_game` (or ``as_game(ens, X, removal="path_dependent")``).
    Answers, besides the values, the curves of any orderings and the Shapley values in closed
    form (:attr:`closed_form`), and :meth:`expected_auc` / :meth:`expected_abc`.
    """

    name = "path_dependent"

    def params(self) -> dict:
        return {"name": "path_dependent", "revision": 1,
                "ensemble_sha256": ensemble_sha256(self.ensemble)}

    def subset(self, lo: int, hi: int) -> PathDependentGame:
        return PathDependentGame(self.ensemble, self.X[lo:hi], **self._subset_kwargs(lo, hi))

    def __repr__(self) -> str:
        return (f"PathDependentGame(B={self.B}, n={self.n}, m={self.m}, "
                f"trees={self.ensemble.n_trees}, leaves={self.paths.n_leaves})")

    def _values(self, pairs, keep, clock):
        keep = np.ascontiguousarray(keep, dtype=np.bool_)
        rows = self.X[np.asarray(pairs, dtype=np.int64)]
        out = np.empty(len(rows))
        for lo, hi, D in direction_chunks(self.ensemble, rows):
            out[lo:hi] = _pd_values(D, keep[lo:hi], *self.path_arrays(), self.paths.slot_cover)
        return out + self.ensemble.base

    def shapley(self) -> np.ndarray:
        """Exact Shapley values (B, m) of each target's path-dependent game (rows sum to
        ``v(all) - v(∅)``)."""
        return np.concatenate([
            _pd_shapley(D, self.m, *self.path_arrays(), self.paths.slot_cover, _W)
            for _, _, D in direction_chunks(self.ensemble, self.X)])

    def expected_auc(self) -> np.ndarray:
        e = np.concatenate([_pd_expected(D, *self.path_arrays(), self.paths.slot_cover, _V)
                            for _, _, D in direction_chunks(self.ensemble, self.X)])
        return (self.m + 1) * (e + self.ensemble.base)

    def curves(self, orders, *, modes=("insertion", "deletion"), positions=None
               ) -> dict[str, np.ndarray]:
        """v at the recorded points of each ordering: mode -> (B, K, S) (``positions``: the
        units moved at each point, default 0..m)."""
        orders = self.check_orders(orders)
        pos = (np.arange(self.m + 1, dtype=np.int64) if positions is None
               else np.ascontiguousarray(positions, dtype=np.int64))
        out = {mo: np.empty(orders.shape[:2] + pos.shape) for mo in modes}
        for lo, hi, D in direction_chunks(self.ensemble, self.X):
            for mo in modes:
                out[mo][lo:hi] = _pd_curves(D, orders[lo:hi], pos, mo == "deletion",
                                            *self.path_arrays(), self.paths.slot_cover
                                            ) + self.ensemble.base
        return out


# -- kernels ------------------------------------------------------------------------------------


@nb.njit(parallel=True, cache=True)
def _pd_values(D, keep, value, node_ptr, node, went_left, slot_of, slot_ptr, slot_unit,
               slot_cover):  # pragma: no cover - numba
    N = D.shape[0]
    L = value.shape[0]
    out = np.empty(N)
    for i in nb.prange(N):
        p = np.empty(MAX_SLOTS + 1)
        s = 0.0
        for ell in range(L):
            _pass(leaf_mask(D, i, ell, node_ptr, node, went_left, slot_of), ell, slot_ptr, p)
            w = value[ell]
            s0 = slot_ptr[ell]
            for k in range(slot_ptr[ell + 1] - s0):
                if keep[i, slot_unit[s0 + k]]:
                    w *= p[k]
                else:
                    w *= slot_cover[s0 + k]
                if w == 0.0:
                    break
            s += w
        out[i] = s
    return out


@nb.njit(inline="always")
def _pass(mask, ell, slot_ptr, p):  # pragma: no cover - numba
    """``p[k]`` = 1.0 where the leaf's slot k is passed (bit k of ``mask``), else 0.0."""
    for k in range(slot_ptr[ell + 1] - slot_ptr[ell]):
        p[k] = 1.0 if (mask >> k) & 1 else 0.0


@nb.njit(cache=True)
def _poly(p, q, d, c):  # pragma: no cover - numba
    """Coefficients ``c[0..d]`` of ``prod_{k<d} (q_k + p_k z)``."""
    c[0] = 1.0
    for k in range(d):
        c[k + 1] = c[k] * p[k]
        for s in range(k, 0, -1):
            c[s] = c[s] * q[k] + c[s - 1] * p[k]
        c[0] *= q[k]


@nb.njit(parallel=True, cache=True)
def _pd_shapley(D, m, value, node_ptr, node, went_left, slot_of, slot_ptr, slot_unit,
                slot_cover, W):  # pragma: no cover - numba
    B = D.shape[0]
    L = value.shape[0]
    phi = np.zeros((B, m))
    for b in nb.prange(B):
        p = np.empty(MAX_SLOTS + 1)
        c = np.empty(MAX_SLOTS + 2)
        Q = np.empty(MAX_SLOTS + 1)
        for ell in range(L):
            _pass(leaf_mask(D, b, ell, node_ptr, node, went_left, slot_of), ell, slot_ptr, p)
            s0 = slot_ptr[ell]
            d = slot_ptr[ell + 1] - s0
            q = slot_cover[s0:s0 + d]
            dead = False
            for k in range(d):
                if p[k] == 0.0 and q[k] == 0.0:
                    dead = True  # the leaf is never reached, whatever u
            if dead or d == 0:
                continue
            _poly(p, q, d, c)
            for j in range(d):
                if p[j] == q[j]:
                    continue
                if p[j] == 0.0:  # C = q_j Q
                    for s in range(d):
                        Q[s] = c[s] / q[j]
                else:  # C = (q_j + z) Q, divided from the top (stable: 0 <= q_j <= 1)
                    Q[d - 1] = c[d]
                    for s in range(d - 1, 0, -1):
                        Q[s - 1] = c[s] - q[j] * Q[s]
                acc = 0.0
                for s in range(d):
                    acc += Q[s] * W[d, s]
                phi[b, slot_unit[s0 + j]] += value[ell] * (p[j] - q[j]) * acc
    return phi


@nb.njit(parallel=True, cache=True)
def _pd_expected(D, value, node_ptr, node, went_left, slot_of, slot_ptr, slot_unit,
                 slot_cover, V):  # pragma: no cover - numba
    """``sum_l val_l sum_s c_s V[d, s]`` per target (E[AUC] / (m + 1) less the base)."""
    B = D.shape[0]
    L = value.shape[0]
    out = np.zeros(B)
    for b in nb.prange(B):
        p = np.empty(MAX_SLOTS + 1)
        c = np.empty(MAX_SLOTS + 2)
        acc = 0.0
        for ell in range(L):
            _pass(leaf_mask(D, b, ell, node_ptr, node, went_left, slot_of), ell, slot_ptr, p)
            s0 = slot_ptr[ell]
            d = slot_ptr[ell + 1] - s0
            _poly(p, slot_cover[s0:s0 + d], d, c)
            e = 0.0
            for s in range(d + 1):
                e += c[s] * V[d, s]
            acc += value[ell] * e
        out[b] = acc
    return out


@nb.njit(parallel=True, cache=True)
def _pd_curves(D, orders, pos, deletion, value, node_ptr, node, went_left, slot_of, slot_ptr,
               slot_unit, slot_cover):  # pragma: no cover - numba
    """v (less the base) at ``pos`` units moved, for every target and ordering: each leaf's
    weight is a step function of the step t, changing at its slots' ranks; the steps are
    summed in a difference array over t = 0..m."""
    B, K, m = orders.shape
    L = value.shape[0]
    out = np.empty((B, K, pos.shape[0]))
    for job in nb.prange(B * K):
        b, k, rank, diff = curve_job(orders, job)  # rank: the step a unit enters / leaves at
        p = np.empty(MAX_SLOTS + 1)
        idx = np.empty(MAX_SLOTS + 1, dtype=np.int64)
        first = np.empty(MAX_SLOTS + 2)  # factor of a slot once its unit has moved
        before = np.empty(MAX_SLOTS + 2)  # ... and before
        suf = np.empty(MAX_SLOTS + 2)
        for ell in range(L):
            _pass(leaf_mask(D, b, ell, node_ptr, node, went_left, slot_of), ell, slot_ptr, p)
            s0 = slot_ptr[ell]
            d = slot_ptr[ell + 1] - s0
            slots_by_rank(rank, slot_unit, s0, d, idx)
            for a in range(d):
                j = idx[a]
                if deletion:  # kept (p) until the unit leaves, then averaged (q)
                    first[a] = slot_cover[s0 + j]
                    before[a] = p[j]
                else:
                    first[a] = p[j]
                    before[a] = slot_cover[s0 + j]
            suf[d] = 1.0
            for a in range(d - 1, -1, -1):
                suf[a] = suf[a + 1] * before[a]
            pre = value[ell]
            start = 0
            for a in range(d + 1):  # after the first a slots have moved
                end = m + 1 if a == d else rank[slot_unit[s0 + idx[a]]]
                w = pre * suf[a]
                if w != 0.0:
                    diff[start] += w
                    diff[end] -= w
                if a < d:
                    pre *= first[a]
                    if pre == 0.0:
                        break
                start = end
        read_curve(diff, pos, out, b, k)
    return out
