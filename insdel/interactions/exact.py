"""Exact interaction indices read from the anchored decomposition's effects (the Möbius
transform of each pair's game in its differing subspace D_b): :func:`from_effects`,
:func:`from_decomposition`."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from .._decomposition_kernels import popcounts, zeta_ragged
from .._validation import check_scalar
from ._kernels import entry_counts, superset_sums_ragged
from .indices import IndexSpec, check_index, weights
from .result import InteractionResult

__all__ = ["from_effects", "from_decomposition", "check_order", "members_of"]


def check_order(spec: IndexSpec, order, m: int, name: str = "order") -> int:
    """The order k of ``spec`` on m units: default 2 (1 for SV and BV, whose order is 1), an int
    in 1..m; above m an error (an order above one pair's |D_b| is exact: that pair's subsets of
    more than |D_b| units hold null players, their values are 0)."""
    if spec.fixed_order is not None:
        if order is not None and check_scalar(order, name, int) != spec.fixed_order:
            raise ValueError(f"{name}: index {spec.name!r} ({spec.title}) has order "
                             f"{spec.fixed_order}; got {order}. Use 'SII' or 'BII' for higher "
                             "orders.")
        return spec.fixed_order
    k = 2 if order is None else check_scalar(order, name, int, min_val=1)
    if k > m:
        raise ValueError(f"{name} = {k} is above the number of units m = {m}: interactions have "
                         f"at most m units; use {name} <= {m}.")
    return k


def members_of(emask: np.ndarray, pair: np.ndarray, Dflat: np.ndarray, doff: np.ndarray,
               order: int, dmax: int) -> np.ndarray:
    """(N, order) unit indices of each entry's local bitmask (bit t = the t-th unit of its
    pair's D), increasing, padded with -1."""
    if dmax == 0 or emask.size == 0:
        return np.full((emask.size, order), -1, dtype=np.int64)
    t = np.arange(dmax, dtype=np.int64)
    bits = ((emask[:, None] >> t[None, :]) & 1).astype(bool)
    local = np.sort(np.where(bits, t[None, :], dmax), axis=1)[:, :order]
    if local.shape[1] < order:
        local = np.pad(local, ((0, 0), (0, order - local.shape[1])), constant_values=dmax)
    ok = local < dmax
    glob = Dflat[np.minimum(doff[pair][:, None] + np.where(ok, local, 0), max(Dflat.size - 1, 0))
                 ] if Dflat.size else np.zeros_like(local)
    return np.where(ok, glob, -1)


def from_effects(dsz, Dflat, doff, delta, *, index: str = "k-SII", order: int | None = None,
                 units: Sequence[str] | None = None, m: int | None = None, v_empty=None,
                 v_all=None, removal: str = "baseline", n_evals: int = 0,
                 timings: dict | None = None) -> InteractionResult:
    """An index of every pair, exactly, from the effects in the ragged layout of
    :meth:`insdel.game.Game.effects` (|D_b|, the units of D_b flat with offsets, Delta_b(w) for
    the 2^|D_b| subsets w of D_b, bit t = the t-th unit of D_b).

    ``I(S) = sum_{T ⊇ S} W[|S|, |T|] Delta_T`` for |S| <= order
    (:mod:`insdel.interactions.indices`), one pruned superset-sum transform per size
    (:func:`insdel.interactions._kernels.superset_sums_ragged`). ``v_empty`` / ``v_all``
    default to the effects' ``Delta_∅`` and ``sum_T Delta_T``.
    """
    t0 = time.perf_counter()
    spec = check_index(index)
    dsz = np.ascontiguousarray(dsz, dtype=np.int64)
    Dflat = np.ascontiguousarray(Dflat, dtype=np.int64)
    doff = np.ascontiguousarray(doff, dtype=np.int64)
    delta = np.ascontiguousarray(delta, dtype=np.float64)
    B = dsz.shape[0]
    if m is None:
        m = len(units) if units is not None else int(Dflat.max(initial=-1)) + 1
    units = [f"x{j}" for j in range(m)] if units is None else list(units)
    if len(units) != m:
        raise ValueError(f"units has {len(units)} names for m = {m} units.")
    k = check_order(spec, order, m)
    off = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(np.left_shift(np.int64(1), dsz), out=off[1:])
    if off[-1] != delta.size:
        raise ValueError(f"delta has {delta.size} entries; the subspaces hold {int(off[-1])}.")
    dmax = int(dsz.max(initial=0))
    W = np.ascontiguousarray(weights(spec, k, dmax))
    counts = entry_counts(dsz, k)
    eoff = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(counts, out=eoff[1:])
    emask = np.empty(int(eoff[-1]), dtype=np.int64)
    evals = np.empty(int(eoff[-1]))
    superset_sums_ragged(delta, off, dsz, W, k, popcounts(dmax), eoff, emask, evals)
    if v_empty is None:
        v_empty = delta[off[:-1]]
    if v_all is None:
        g = delta.copy()
        zeta_ragged(g, off, dsz)
        v_all = g[off[1:] - 1]
    v_empty = np.asarray(v_empty, dtype=np.float64)
    if spec.empty_is_baseline:
        evals[eoff[:-1]] = v_empty
    pair = np.repeat(np.arange(B), counts)
    sizes = np.zeros(emask.size, dtype=np.int64)
    for t in range(dmax):
        sizes += (emask >> t) & 1
    members = members_of(emask, pair, Dflat, doff, k, dmax)
    tm = dict(timings or {})
    tm["indices_s"] = time.perf_counter() - t0
    tm["total_s"] = tm.get("decomposition_s", 0.0) + tm["indices_s"]
    return InteractionResult(index=spec.name, order=k, units=units, dsz=dsz, Dflat=Dflat,
                             doff=doff, eoff=eoff, members=members, sizes=sizes, values=evals,
                             v_empty=v_empty, v_all=v_all, removal=removal, n_evals=n_evals,
                             timings=tm)


def from_decomposition(dec, *, index: str = "k-SII", order: int | None = None,
                       removal: str = "baseline") -> InteractionResult:
    """An index of every pair of a :class:`insdel.decomposition.BatchDecomposition` (or one
    pair's :class:`~insdel.decomposition.AnchoredDecomposition`), exactly, from its effects; no
    model evaluation."""
    batch = getattr(dec, "_batch", dec)
    units = batch.feature_names or [f"x{j}" for j in range(batch.n)]
    return from_effects(batch._dsz, batch._Dflat, batch._doff, batch._delta, index=index,
                        order=order, units=units, m=batch.n, v_empty=batch.fr, v_all=batch.fx,
                        removal=removal, n_evals=batch.n_evals,
                        timings={"decomposition_s": batch.timings.get("total_s", 0.0)})
