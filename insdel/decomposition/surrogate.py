"""The order-k surrogate curves of Theorem 1: insertion and deletion curves predicted from the
effects Delta_u of order |u| <= k, beside the real curve, and how much of the curve and of ABC the
orders 1, 2, ..., k explain.

For a pair with dividends Delta_u (u ⊆ D) and an ordering with prefixes S_t (t = 0..n units
moved), the real curves are

    insertion  y_t = g(S_t) = sum_{u ⊆ S_t} Delta_u,
    deletion   z_t = g(complement of S_t) = sum_{u ∩ S_t = ∅} Delta_u,

and the **order-k surrogate** keeps the terms with |u| <= k only:

    y_t^(k) = sum_{u ⊆ S_t, |u| <= k} Delta_u,     z_t^(k) = sum_{u ∩ S_t = ∅, |u| <= k} Delta_u.

Order 0 is the flat line at ``f(r) = Delta_∅``, order 1 the additive part, and order |D| the real
curve exactly (Theorem 1's identity; tested to 1e-12). The surrogate's ABC against its own end
points is the truncated Theorem 1 sum ``ABC^(k) = sum_{1 <= |u| <= k} ((n + 1)/2 - ceil(u)) Delta_u``
(deletion: ``floor(u)`` for ``ceil(u)``, sign flipped), so ``ABC^(k) - ABC^(k-1)`` is what the
effects of order exactly k add to the area.

"Explained" is defined exactly (:class:`SurrogateCurves`):

* ``explained_abc[k] = ABC^(k) / ABC`` (NaN where the real ABC is 0 up to rounding:
  ``|ABC| <= 1e-12 * (sum_u |Delta_u|)``, the 0/0 case has no fraction);
* ``gap[k] = sqrt(mean_t (c_t^(k) - c_t)^2)``, the root mean square distance between the order-k
  surrogate and the real curve over the n + 1 points (same units as f);
* ``explained_curve[k] = 1 - sum_t (c_t^(k) - c_t)^2 / sum_t (c_t - f(r))^2``: the share of the
  curve's squared departure from the order-0 line (f(r)) that orders <= k reproduce (1 at full order;
  NaN where the real curve is flat at f(r)).

All pairs and orderings are computed in one numba pass over the ragged dividends of a
:class:`~insdel.decomposition.BatchDecomposition`: O(2^|D_b|) per pair and ordering.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from .. import _decomposition_kernels as K
from .._validation import check_mode, check_scalar
from .batch import BatchDecomposition

__all__ = ["SurrogateCurves", "surrogate_curves", "pairwise_effects", "truncated_values"]


@nb.njit(parallel=True, cache=True, nogil=True)
def _surrogate_kernel(delta, values, off, dsz, Dflat, doff, orders, n, kmax, insertion,
                      sur, real):  # pragma: no cover - numba
    """``sur[b, q, L, t]``: order-<=L surrogate at t units moved; ``real[b, q, t]``: the curve.

    Each Delta_u is added at the step where u enters the prefix (insertion: ceil(u)) or leaves the
    complement (deletion: floor(u)), in the row of its order |u|; cumulative sums over steps and
    orders then give every surrogate curve at once.
    """
    B, Q, _ = orders.shape
    for b in nb.prange(B):
        d = dsz[b]
        o = off[b]
        N = np.int64(1) << d
        ceil, flo, pos = K.order_scratch(d, n)
        size = np.empty(N, dtype=np.int32)
        local = np.full(n, -1, dtype=np.int64)
        for t in range(d):
            local[Dflat[doff[b] + t]] = t
        inc = np.empty((kmax + 1, n + 2))
        size[0] = 0
        for u in range(1, N):
            size[u] = size[u & (u - 1)] + 1
        for q in range(Q):
            K.ceil_floor_of_order(orders, b, q, Dflat, doff[b], d, n, pos, ceil, flo)
            inc[:, :] = 0.0
            for u in range(N):
                s = size[u]
                if s <= kmax:
                    if insertion:
                        inc[s, ceil[u]] += delta[o + u]
                    else:
                        inc[s, flo[u]] += delta[o + u]
            for L in range(kmax + 1):
                if insertion:
                    acc = 0.0
                    for t in range(n + 1):
                        acc += inc[L, t]
                        sur[b, q, L, t] = acc
                else:  # z_t = sum of the terms with floor(u) > t
                    acc = inc[L, n + 1]
                    for t in range(n, -1, -1):
                        sur[b, q, L, t] = acc
                        acc += inc[L, t]
                if L > 0:
                    for t in range(n + 1):
                        sur[b, q, L, t] += sur[b, q, L - 1, t]
            # the real curve from the values: the prefix's (or its complement's) local bitmask
            full = N - 1
            m = np.int64(0)
            real[b, q, 0] = values[o] if insertion else values[o + full]
            for s in range(n):
                t = local[orders[b, q, s]]
                if t >= 0:
                    m |= np.int64(1) << t
                real[b, q, s + 1] = values[o + m] if insertion else values[o + (full ^ m)]


@nb.njit(parallel=True, cache=True, nogil=True)
def _pairwise_kernel(delta, off, dsz, Dflat, doff, out):  # pragma: no cover - numba
    """``out[b, i, j] = Delta_{ij}`` (i != j) and ``out[b, i, i] = Delta_i`` from the ragged blocks."""
    B = dsz.shape[0]
    for b in nb.prange(B):
        d = dsz[b]
        o = off[b]
        for s in range(d):
            i = Dflat[doff[b] + s]
            out[b, i, i] = delta[o + (np.int64(1) << s)]
            for t in range(s + 1, d):
                j = Dflat[doff[b] + t]
                w = delta[o + ((np.int64(1) << s) | (np.int64(1) << t))]
                out[b, i, j] = w
                out[b, j, i] = w


def pairwise_effects(dec: BatchDecomposition) -> np.ndarray:
    """The pairwise interaction strengths of every pair: its order-2 Möbius effects.

    insdel reads pairwise interaction straight off the anchored decomposition: the effect of
    order 2, ``Delta_{ij} = g({i, j}) - g({i}) - g({j}) + g(∅)``, is what units i and j add
    together beyond their main effects ``Delta_i = g({i}) - g(∅)`` (anchored at the reference; the
    Shapley interaction indices of ``insdel.interactions`` average higher orders in as well).
    Units outside a pair's D have no effects (0).

    Parameters
    ----------
    dec : BatchDecomposition

    Returns
    -------
    ndarray (B, n, n)
        Symmetric; off the diagonal ``Delta_{ij}``, on the diagonal the main effect ``Delta_i``.
    """
    out = np.zeros((dec.B, dec.n, dec.n))
    _pairwise_kernel(dec._delta, dec._off, dec._dsz, dec._Dflat, dec._doff, out)
    return out


def truncated_values(dec: BatchDecomposition, k: int | None) -> np.ndarray:
    """The game of order <= k of every pair, ragged like ``dec``'s values.

    ``v_k(u) = sum_{w ⊆ u, |w| <= k} Delta_w`` for the subsets u of each D_b (the zeta transform of
    the dividends with the orders above k dropped); ``k=None`` gives the real values ``g(u)``.
    """
    if k is None:
        return dec._values.copy()
    k = check_scalar(k, "k", int, min_val=0)
    t = dec._delta.copy()
    for b in range(dec.B):
        lo, hi = int(dec._off[b]), int(dec._off[b + 1])
        d = int(dec._dsz[b])
        if k < d:
            blk = t[lo:hi]
            blk[K.popcounts(d) > k] = 0.0
    K.zeta_ragged(t, dec._off, dec._dsz)
    return t


@dataclass(frozen=True)
class SurrogateCurves:
    """Order-0..k surrogate curves beside the real curve, for B pairs and Q orderings each.

    Attributes
    ----------
    mode : {"insertion", "deletion"}
    k : int
        Highest order kept (orders 0..k are given).
    curves : ndarray (B, Q, k + 1, n + 1)
        ``curves[b, q, L]``: the order-<=L surrogate (L = 0: flat at f(r)).
    real : ndarray (B, Q, n + 1)
        The real curve (from the pair's values).
    abc : ndarray (B, Q, k + 1)
        ABC (deletion: ABC') of each surrogate against its own end points, per unit (/ n).
    abc_real : ndarray (B, Q)
        The real curve's ABC per unit.
    explained_abc : ndarray (B, Q, k + 1)
        ``abc / abc_real`` (NaN where the real ABC is 0 up to rounding).
    gap : ndarray (B, Q, k + 1)
        Root mean square distance to the real curve over the n + 1 points.
    explained_curve : ndarray (B, Q, k + 1)
        ``1 - sum (surrogate - real)^2 / sum (real - f(r))^2`` (NaN where the real curve is flat).
    """

    mode: str
    k: int
    curves: np.ndarray
    real: np.ndarray
    abc: np.ndarray
    abc_real: np.ndarray
    explained_abc: np.ndarray
    gap: np.ndarray
    explained_curve: np.ndarray

    def table(self, i: int = 0, q: int = 0) -> list[dict]:
        """One row per order 0..k of pair i, ordering q: ABC, explained ABC, gap, explained curve."""
        return [{"order": L, "abc": float(self.abc[i, q, L]), "abc_real": float(self.abc_real[i, q]),
                 "explained_abc": float(self.explained_abc[i, q, L]),
                 "gap": float(self.gap[i, q, L]),
                 "explained_curve": float(self.explained_curve[i, q, L])}
                for L in range(self.k + 1)]


def _abc_rows(c: np.ndarray, insertion: bool) -> np.ndarray:
    """Per-unit ABC (ABC') of curves c (..., n + 1) against their own end points (eq. 2 / n)."""
    n = c.shape[-1] - 1
    area = c.sum(axis=-1) - (n + 1) / 2.0 * (c[..., 0] + c[..., -1])
    return (area if insertion else -area) / n


def surrogate_curves(dec: BatchDecomposition, orders, *, k: int | None = 2,
                     mode: str = "insertion") -> SurrogateCurves:
    """The order-0..k surrogate curves (Theorem 1 truncated) of every pair and ordering.

    Parameters
    ----------
    dec : BatchDecomposition
        The pairs' decomposition (:func:`insdel.batch_decomposition`).
    orders : array_like of int, (n,), (B, n) or (B, Q, n)
        Orderings of the n units (``orders[..., s]`` moves at step s + 1), as
        :meth:`BatchDecomposition.abc` takes them; a 1-D or 2-D ``orders`` gives Q = 1.
    k : int or None, default 2
        Highest order kept, >= 0; None (or any k >= max |D_b|) is the full order, whose surrogate
        is the real curve.
    mode : {"insertion", "deletion"}

    Returns
    -------
    SurrogateCurves
    """
    check_mode(mode)
    if not isinstance(dec, BatchDecomposition):
        raise TypeError(f"dec must be a BatchDecomposition (insdel.batch_decomposition); got "
                        f"{type(dec).__name__}.")
    dmax = int(dec._dsz.max()) if dec.B else 0
    k = dmax if k is None else check_scalar(k, "k", int, min_val=0)
    o, _ = dec._orders3(orders)
    o = np.ascontiguousarray(o, dtype=np.int64)
    B, Q, n = o.shape
    ins = mode == "insertion"
    sur = np.empty((B, Q, k + 1, n + 1))
    real = np.empty((B, Q, n + 1))
    _surrogate_kernel(dec._delta, dec._values, dec._off, dec._dsz, dec._Dflat, dec._doff, o, n, k,
                      ins, sur, real)
    abc = _abc_rows(sur, ins)
    abc[..., 0] = 0.0  # the order-0 surrogate is the flat line at f(r): no area, exactly
    abc_real = _abc_rows(real, ins)
    scale = np.add.reduceat(np.abs(dec._delta), dec._off[:-1]) if B else np.zeros(0)
    tiny = (np.abs(abc_real) * n <= 1e-12 * scale[:, None])[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        explained_abc = np.where(tiny, np.nan, abc / abc_real[..., None])
        sq = ((sur - real[:, :, None, :]) ** 2).sum(axis=-1)
        tot = ((real - dec.fr[:, None, None]) ** 2).sum(axis=-1)[..., None]
        flat = tot <= 1e-24 * np.maximum(scale, 1.0)[:, None, None] ** 2
        explained_curve = np.where(flat, np.nan, 1.0 - sq / tot)
    gap = np.sqrt(sq / (n + 1))
    return SurrogateCurves(mode, int(k), sur, real, abc, abc_real, explained_abc, gap,
                           explained_curve)
