"""Orderings that know interactions, scored against the Shapley ordering and the exact best order.

The Shapley ordering (decreasing exact Shapley value, the paper's ordering) can miss the ordering
with the best insertion / deletion area when units interact (paper §3.4). Two orderings here use
the decomposition's effects:

* **interaction-greedy** (``greedy_insertion`` / ``greedy_deletion``): insertion moves next the unit
  with the largest gain ``v_k(S ∪ {j}) - v_k(S)`` given the inserted set S; deletion removes next
  the unit with the largest drop ``v_k(T) - v_k(T \\ {j})`` from the kept set T. ``v_k`` is the
  game of order <= k, ``v_k(u) = sum_{w ⊆ u, |w| <= k} Delta_w``
  (:func:`~insdel.decomposition.surrogate.truncated_values`); ``k=None`` uses the exact values g
  (which the decomposition already holds, so exact greed costs nothing more; both are built, as
  ``greedy_<mode>`` and ``greedy_exact_<mode>``). Units outside D gain
  exactly 0; ties go to the smallest unit index. Cost O(n^2) per pair after the O(|D| 2^|D|) zeta
  transform.
* **group** (``group``): units i and j are bound when their pairwise effect is strong beside their
  main effects, ``|Delta_ij| >= bind * (|Delta_i| + |Delta_j|)`` (and ``Delta_ij`` is not 0 up to
  rounding), or, with ``bind_rule="top"``, when it is among the largest fraction ``bind`` of the
  pair's nonzero pairwise effects; bound units form groups (connected components) that move together. Groups go by
  decreasing sum of their members' Shapley values (ties: the group's smallest unit), members by
  decreasing Shapley value (ties: index). One ordering serves insertion and deletion, as the
  Shapley ordering does.

Their ABC is read off Theorem 1 (:meth:`BatchDecomposition.abc`) beside the Shapley ordering's and
the best order's (:meth:`BatchDecomposition.best_order`), with :func:`gap_closed`, the fraction of
the Shapley-to-best gap an ordering closes. To score them with :func:`insdel.evaluate` or the
runner, pass :func:`order_scores` of an ordering as an attribution: its signed ordering is the
ordering itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_choice, check_mode, check_scalar
from ..adapter import ModelLike
from ..ordering import sort_orderings
from ._subspace import DEFAULT_MAX_D
from .batch import BatchDecomposition, batch_decomposition
from .surrogate import pairwise_effects, truncated_values

__all__ = ["InteractionOrderings", "interaction_orderings", "orderings_of_decomposition",
           "greedy_orders", "group_orders", "bound_groups", "gap_closed", "order_scores",
           "ORDERING_NAMES", "BIND_RULES"]

#: The orderings of :class:`InteractionOrderings`, and which mode each one is built for (None: both).
ORDERING_NAMES: dict[str, str | None] = {
    "shapley": None, "group": None, "greedy_insertion": "insertion",
    "greedy_deletion": "deletion", "greedy_exact_insertion": "insertion",
    "greedy_exact_deletion": "deletion", "best_insertion": "insertion",
    "best_deletion": "deletion",
}


@nb.njit(parallel=True, cache=True, nogil=True)
def _greedy_kernel(vals, off, dsz, Dflat, doff, n, insertion, orders):  # pragma: no cover - numba
    B = dsz.shape[0]
    for b in nb.prange(B):
        d = dsz[b]
        o = off[b]
        local = np.full(n, -1, dtype=np.int64)
        for t in range(d):
            local[Dflat[doff[b] + t]] = t
        used = np.zeros(n, dtype=np.bool_)
        m = np.int64(0) if insertion else (np.int64(1) << d) - 1
        for s in range(n):
            best = -np.inf
            arg = -1
            for j in range(n):
                if used[j]:
                    continue
                t = local[j]
                gain = 0.0
                if t >= 0:
                    bit = np.int64(1) << t
                    if insertion:
                        gain = vals[o + (m | bit)] - vals[o + m]
                    else:
                        gain = vals[o + m] - vals[o + (m ^ bit)]
                if gain > best:
                    best = gain
                    arg = j
            used[arg] = True
            orders[b, s] = arg
            t = local[arg]
            if t >= 0:
                m ^= np.int64(1) << t


@nb.njit(parallel=True, cache=True, nogil=True)
def _components_kernel(bound, label):  # pragma: no cover - numba
    """``label[b, j]``: the smallest unit of j's connected component in the graph ``bound[b]``."""
    B, n, _ = bound.shape
    for b in nb.prange(B):
        for j in range(n):
            label[b, j] = j
        changed = True
        while changed:  # min-label propagation: at most n rounds
            changed = False
            for i in range(n):
                for j in range(n):
                    if bound[b, i, j] and label[b, j] < label[b, i]:
                        label[b, i] = label[b, j]
                        changed = True


def _check_dec(dec) -> BatchDecomposition:
    if not isinstance(dec, BatchDecomposition):
        raise TypeError(f"dec must be a BatchDecomposition (insdel.batch_decomposition); got "
                        f"{type(dec).__name__}.")
    return dec


def greedy_orders(dec: BatchDecomposition, *, k: int | None = 2,
                  mode: str = "insertion") -> np.ndarray:
    """The interaction-greedy ordering of every pair (module docstring), (B, n) int64.

    Parameters
    ----------
    dec : BatchDecomposition
    k : int or None, default 2
        Order of the effects the gains are computed from (>= 1); None: the exact values.
    mode : {"insertion", "deletion"}
    """
    check_mode(mode)
    dec = _check_dec(dec)
    if k is not None:
        k = check_scalar(k, "k", int, min_val=1)
    vals = truncated_values(dec, k)
    out = np.empty((dec.B, dec.n), dtype=np.int64)
    _greedy_kernel(vals, dec._off, dec._dsz, dec._Dflat, dec._doff, dec.n, mode == "insertion",
                   out)
    return out


BIND_RULES = ("relative", "top")


def _check_bind(bind, bind_rule: str) -> float:
    check_choice("bind_rule", bind_rule, BIND_RULES)
    if bind_rule == "top":
        return check_scalar(bind, "bind", float, min_val=0.0, max_val=1.0, finite=True)
    return check_scalar(bind, "bind", float, min_val=0.0, finite=True)


def bound_groups(dec: BatchDecomposition, *, bind: float = 0.5,
                 bind_rule: str = "relative") -> np.ndarray:
    """Which units a strong pairwise interaction binds together, per pair: (B, n) labels.

    ``label[b, j]`` is the smallest unit of j's group; groups are the connected components of the
    bound pairs. Only effects above rounding (``1e-12`` times the pair's largest |effect|) bind.

    Parameters
    ----------
    dec : BatchDecomposition
    bind : float, default 0.5
        ``bind_rule="relative"``: units i != j are bound when
        ``|Delta_ij| >= bind * (|Delta_i| + |Delta_j|)`` (>= 0). ``bind_rule="top"``: the fraction
        (0..1) of the pair's nonzero pairwise effects that bind, largest |Delta_ij| first (at
        least one when ``bind > 0``; ties at the cut all bind).
    bind_rule : {"relative", "top"}
    """
    dec = _check_dec(dec)
    bind = _check_bind(bind, bind_rule)
    P = pairwise_effects(dec)
    A = np.abs(P)
    idx = np.arange(dec.n)
    main = A[:, idx, idx].copy()
    A[:, idx, idx] = 0.0
    scale = np.maximum(A.reshape(dec.B, -1).max(axis=1, initial=0.0),
                       main.max(axis=1, initial=0.0))[:, None, None]
    real = A > 1e-12 * scale
    if bind_rule == "relative":
        bound = (A >= bind * (main[:, :, None] + main[:, None, :])) & real
    elif dec.n < 2:
        bound = real
    else:
        iu = np.triu_indices(dec.n, 1)
        upper = np.where(real[:, iu[0], iu[1]], A[:, iu[0], iu[1]], 0.0)
        count = real[:, iu[0], iu[1]].sum(axis=1)
        take = np.ceil(bind * count).astype(np.int64)
        srt = -np.sort(-upper, axis=1)
        cut = np.where(take > 0, srt[np.arange(dec.B), np.maximum(take - 1, 0)], np.inf)
        bound = real & (A >= cut[:, None, None]) & (take > 0)[:, None, None]
    label = np.empty((dec.B, dec.n), dtype=np.int64)
    _components_kernel(np.ascontiguousarray(bound), label)
    return label


def group_orders(dec: BatchDecomposition, *, bind: float = 0.5, bind_rule: str = "relative",
                 shapley: np.ndarray | None = None) -> np.ndarray:
    """The group ordering of every pair (module docstring), (B, n) int64.

    Parameters
    ----------
    dec : BatchDecomposition
    bind : float, default 0.5
        Strength, relative to the two main effects, above which a pairwise effect binds two
        units (:func:`bound_groups`); a large ``bind`` binds only units without main effects (a
        pure product), and where nothing is bound the group ordering is the Shapley ordering.
    bind_rule : {"relative", "top"}, default "relative"
        ``"top"``: ``bind`` is the fraction of each pair's pairwise effects that bind.
    shapley : ndarray (B, n), optional
        The pairs' Shapley values when already computed (``dec.shapley()``).
    """
    dec = _check_dec(dec)
    label = bound_groups(dec, bind=bind, bind_rule=bind_rule)
    phi = dec.shapley() if shapley is None else np.asarray(shapley, dtype=np.float64)
    rows = np.arange(dec.B)[:, None]
    score = np.zeros_like(phi)
    np.add.at(score, (np.broadcast_to(rows, label.shape), label), phi)
    gscore = score[rows, label]
    idx = np.broadcast_to(np.arange(dec.n), label.shape)
    # lexsort: the last key is the primary one
    return np.lexsort((idx, -phi, label, -gscore), axis=-1).astype(np.int64)


def order_scores(orders: ArrayLike) -> np.ndarray:
    """Attribution-like scores whose signed ordering is ``orders`` (..., n): ``n - position``.

    Pass them to :func:`insdel.evaluate` (or save them as a method's attributions for the runner)
    to score an ordering of this module with the curve engine.
    """
    o = np.asarray(orders)
    if o.ndim < 1 or not np.issubdtype(o.dtype, np.integer):
        raise TypeError(f"orders must be an integer array (..., n); got dtype {o.dtype}.")
    n = o.shape[-1]
    srt = np.sort(o, axis=-1)
    if not (srt == np.arange(n)).all():
        raise ValueError("orders: every row must be a permutation of 0 .. n - 1.")
    out = np.empty(o.shape, dtype=np.float64)
    np.put_along_axis(out, o, np.broadcast_to(np.arange(n, 0, -1, dtype=np.float64), o.shape),
                      axis=-1)
    return out


def gap_closed(abc_order: ArrayLike, abc_shapley: ArrayLike, abc_best: ArrayLike, *,
               pooled: bool = False, rtol: float = 1e-9):
    """The fraction of the Shapley-to-best gap an ordering closes.

    ``(ABC_order - ABC_shapley) / (ABC_best - ABC_shapley)`` per pair: 1 when the ordering attains
    the best area, 0 when it does no better than the Shapley ordering, negative when worse. Where
    the Shapley ordering already attains the best area (gap <= ``rtol * max(1, |ABC_best|)``: the
    0/0 case, nothing to close) the pair's fraction is NaN. ``pooled=True`` gives one number for
    the batch, ``sum(ABC_order - ABC_shapley) / sum(ABC_best - ABC_shapley)`` over all pairs
    (NaN when the summed gap is 0 up to ``rtol``).

    Parameters
    ----------
    abc_order, abc_shapley, abc_best : array_like (B,)
        Per-unit (or raw, consistently) ABC of the ordering, of the Shapley ordering and the best.
    pooled : bool, default False
    rtol : float, default 1e-9

    Returns
    -------
    ndarray (B,) or float
    """
    a, s, b = (np.asarray(v, dtype=np.float64) for v in (abc_order, abc_shapley, abc_best))
    if not (a.shape == s.shape == b.shape):
        raise ValueError(f"abc_order, abc_shapley and abc_best must have one shape; got {a.shape}, "
                         f"{s.shape}, {b.shape}.")
    rtol = check_scalar(rtol, "rtol", float, min_val=0.0, finite=True)
    if pooled:
        gap = float((b - s).sum())
        if gap <= rtol * max(1.0, float(np.abs(b).sum())):
            return float("nan")
        return float((a - s).sum()) / gap
    gap = b - s
    none = gap <= rtol * np.maximum(1.0, np.abs(b))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(none, np.nan, (a - s) / np.where(none, 1.0, gap))


@dataclass(frozen=True)
class InteractionOrderings:
    """The interaction-aware orderings of B pairs beside the Shapley ordering and the best orders.

    Attributes
    ----------
    decomposition : BatchDecomposition
    orders : dict
        :data:`ORDERING_NAMES` -> (B, n) int64 orderings of the units: ``greedy_<mode>`` from the
        effects of order <= k, ``greedy_exact_<mode>`` from the exact values.
    k : int or None
        Order of the effects of the ``greedy_<mode>`` gains (None: exact values).
    bind : float
        The group ordering's binding strength.
    bind_rule : str
        ``"relative"`` or ``"top"`` (:func:`bound_groups`).
    groups : ndarray (B, n)
        The bound groups' labels (:func:`bound_groups`).
    """

    decomposition: BatchDecomposition
    orders: dict
    k: int | None
    bind: float
    bind_rule: str
    groups: np.ndarray

    def names(self, mode: str) -> list[str]:
        """The orderings scored under ``mode``: Shapley, group, greedy and best of that mode."""
        check_mode(mode)
        return [n for n, m in ORDERING_NAMES.items() if m in (None, mode)]

    def abc(self, mode: str = "insertion", *, normalize: bool = True) -> dict[str, np.ndarray]:
        """ABC (deletion: ABC') per pair of each ordering scored under ``mode`` (Theorem 1)."""
        dec = self.decomposition
        return {name: dec.abc(self.orders[name], mode=mode, normalize=normalize)
                for name in self.names(mode)}

    def gap_closed(self, mode: str = "insertion", *, pooled: bool = False) -> dict:
        """:func:`gap_closed` of every ordering scored under ``mode``, per pair or pooled (the
        Shapley ordering closes 0 and the best order 1 of every gap, by definition)."""
        a = self.abc(mode)
        best = self.decomposition.best_abc(mode=mode)
        return {name: gap_closed(a[name], a["shapley"], best, pooled=pooled)
                for name in self.names(mode)}

    def scores(self) -> dict[str, np.ndarray]:
        """:func:`order_scores` of every ordering: attributions for :func:`insdel.evaluate`."""
        return {name: order_scores(o) for name, o in self.orders.items()}

    def summary(self) -> list[dict]:
        """One row per mode and ordering: mean per-unit ABC, mean per-pair gap closed (over the
        pairs with a gap), pooled gap closed, and how many pairs have a gap."""
        rows = []
        for mode in ("insertion", "deletion"):
            a = self.abc(mode)
            per = self.gap_closed(mode)
            pool = self.gap_closed(mode, pooled=True)
            for name in self.names(mode):
                g = per[name]
                has = np.isfinite(g)
                rows.append({
                    "mode": mode, "ordering": name, "abc": float(np.mean(a[name])),
                    "gap_closed": float(np.mean(g[has])) if has.any() else float("nan"),
                    "gap_closed_pooled": pool[name], "pairs_with_gap": int(has.sum()),
                })
        return rows


def orderings_of_decomposition(dec: BatchDecomposition, *, k: int | None = 2,
                               bind: float = 0.5,
                               bind_rule: str = "relative") -> InteractionOrderings:
    """:class:`InteractionOrderings` of pairs already decomposed (no model evaluation)."""
    dec = _check_dec(dec)
    phi = dec.shapley()
    bind = _check_bind(bind, bind_rule)
    labels = bound_groups(dec, bind=bind, bind_rule=bind_rule)
    orders = {
        "shapley": sort_orderings(phi, "signed"),
        "group": group_orders(dec, bind=bind, bind_rule=bind_rule, shapley=phi),
        "greedy_insertion": greedy_orders(dec, k=k, mode="insertion"),
        "greedy_deletion": greedy_orders(dec, k=k, mode="deletion"),
        "greedy_exact_insertion": greedy_orders(dec, k=None, mode="insertion"),
        "greedy_exact_deletion": greedy_orders(dec, k=None, mode="deletion"),
        "best_insertion": dec.best_order(mode="insertion"),
        "best_deletion": dec.best_order(mode="deletion"),
    }
    return InteractionOrderings(dec, orders, k, float(bind), bind_rule, labels)


def interaction_orderings(f: ModelLike, X: ArrayLike, R: ArrayLike, *, k: int | None = 2,
                          removal=None, groups=None, max_d: int = DEFAULT_MAX_D,
                          bind: float = 0.5, bind_rule: str = "relative",
                          batch_size: int | None = None,
                          progress: bool | None = None) -> InteractionOrderings:
    """Interaction-greedy and group orderings of every pair, with the Shapley and best orderings.

    Decomposes the pairs exactly (:func:`insdel.batch_decomposition`: 2^|D_b| evaluations per
    pair) and builds the orderings of the module docstring from the effects.

    Parameters
    ----------
    f : model
        Anything :func:`insdel.as_model` accepts.
    X : array_like (B, n)
        Targets.
    R : array_like (B, n) or (n,)
        References.
    k : int or None, default 2
        Order of the effects behind the greedy gains (>= 1); None uses the exact values.
    removal : str or insdel.removal.Removal, optional
        The pairs' value function (:mod:`insdel.removal`); None is the paper's baseline.
    groups : optional
        Feature groups moved as units (:mod:`insdel.groups`); orderings are then of the groups.
    max_d : int, default 20
        Refuse a pair with more than ``max_d`` differing units.
    bind : float, default 0.5
        The group ordering's binding strength (:func:`bound_groups`).
    bind_rule : {"relative", "top"}, default "relative"
        ``"top"``: ``bind`` is the fraction of each pair's pairwise effects that bind.
    batch_size : int, optional
        Rows per model call.
    progress : bool, optional

    Returns
    -------
    InteractionOrderings
        ``orders`` per pair; ``abc(mode)``, ``gap_closed(mode)``, ``summary()``, ``scores()``.
    """
    if k is not None:
        k = check_scalar(k, "k", int, min_val=1)
    bind = _check_bind(bind, bind_rule)
    dec = batch_decomposition(f, X, R, removal=removal, groups=groups, max_d=max_d,
                              batch_size=batch_size, progress=progress)
    return orderings_of_decomposition(dec, k=k, bind=bind, bind_rule=bind_rule)
