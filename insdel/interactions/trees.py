"""Exact interaction indices of a tree ensemble's game at any n, from its leaf patterns
(docs/interactions.md, *On tree ensembles, at any n*).

A pair's tree game (:class:`insdel.trees.TreeGame`) is ``v(u) = base + sum_p val_p [E_p ⊆ u]
[R_p ∩ u = ∅]`` over its leaf patterns (E_p, R_p, val_p) (:mod:`insdel.trees.patterns`). A
pattern's Möbius transform is ``val (-1)^{|w - E|}`` on every w with E ⊆ w ⊆ E ∪ R, so for an
index ``I(S) = sum_{T ⊇ S} W_k(|S|, |T|) m(T)`` (:mod:`insdel.interactions.indices`) a pattern
with |E| = e, |R| = r adds to every S ⊆ E ∪ R with |S| = s and a = |S ∩ R| units of R

    val * c(s, a; e, r),   c = sum_{j=0}^{r-a} C(r-a, j) (-1)^{a+j} W_k(s, e + a + j)

(w = E ∪ S ∪ U for the U ⊆ R ∖ S, |w| = e + a + j), and nothing to any S ⊄ E ∪ R. The sum runs
over sizes only; a pattern costs ``sum_{s <= k} C(e + r, s)`` terms, e + r at most the distinct
units on its leaf's path, whatever n is. The base adds ``W_k(0, 0) base`` to ∅. The terms of a
pair with the same S are summed; the result holds ∅ and every S some pattern reaches (every
other S has value exactly 0: it holds a unit no pattern of the pair depends on).
"""

from __future__ import annotations

import time
from fractions import Fraction
from math import comb

import numba as nb
import numpy as np

from ._kernels import _binom
from .exact import check_order
from .indices import IndexSpec, _bernoulli, _weight, check_index
from .result import InteractionResult

__all__ = ["from_tree_game", "pattern_coefficients"]


def pattern_coefficients(spec: IndexSpec, order: int, er: np.ndarray) -> np.ndarray:
    """``c[s, a, e, r]`` (s, a = 0..order; e, r up to the largest in ``er``) for the (e, r)
    pairs of ``er`` (rows), in exact rational arithmetic; 0 where S cannot lie in E ∪ R."""
    k = int(order)
    L = int(er.max(initial=0)) if er.size else 0
    c = np.zeros((k + 1, k + 1, L + 1, L + 1))
    bern = _bernoulli(k + 1) if spec.name == "k-SII" else None
    cache: dict[tuple[int, int], Fraction] = {}

    def W(s: int, t: int) -> Fraction:
        if t < s:
            return Fraction(0)
        key = (s, t)
        if key not in cache:
            cache[key] = _weight(spec.name, s, t, k, bern)
        return cache[key]

    for e, r in {(int(a), int(b)) for a, b in er}:
        for s in range(min(k, e + r) + 1):
            for a in range(max(0, s - e), min(s, r) + 1):
                tot = sum((comb(r - a, j) * (-1) ** (a + j) * W(s, e + a + j)
                           for j in range(r - a + 1)), Fraction(0))
                c[s, a, e, r] = float(tot)
    return c


@nb.njit(parallel=True, cache=True)
def _term_counts(pat_off, u_off, k, out):  # pragma: no cover - numba
    """Per pair: 1 (the base on ∅) + sum over its patterns of sum_{s <= k} C(e + r, s)."""
    for b in nb.prange(pat_off.shape[0] - 1):
        c = 1
        for p in range(pat_off[b], pat_off[b + 1]):
            L = u_off[p + 1] - u_off[p]
            for s in range(min(k, L) + 1):
                c += _binom(L, s)
        out[b] = c


@nb.njit(parallel=True, cache=True)
def _terms(pat_off, u_off, n_e, units, val, base, w00, coef, k, toff, members, sizes,
           values):  # pragma: no cover - numba
    """Every (S, val c(s, a; e, r)) term of each pair's patterns, S's units increasing in
    ``members`` (padded with -1); pair b's terms from ``toff[b]``, its first the base on ∅."""
    for b in nb.prange(pat_off.shape[0] - 1):
        t = toff[b]
        for j in range(k):
            members[t, j] = -1
        sizes[t] = 0
        values[t] = w00 * base
        t += 1
        idx = np.empty(max(k, 1), dtype=np.int64)
        buf = np.empty(max(k, 1), dtype=np.int64)
        for p in range(pat_off[b], pat_off[b + 1]):
            u0 = u_off[p]
            L = u_off[p + 1] - u0
            e = n_e[p]
            r = L - e
            for s in range(min(k, L) + 1):
                for j in range(s):
                    idx[j] = j
                while True:
                    a = 0
                    for j in range(s):
                        if idx[j] >= e:
                            a += 1
                        buf[j] = units[u0 + idx[j]]
                    # E and R are each increasing: insertion sort of the s <= k members
                    for j in range(1, s):
                        x = buf[j]
                        i = j - 1
                        while i >= 0 and buf[i] > x:
                            buf[i + 1] = buf[i]
                            i -= 1
                        buf[i + 1] = x
                    for j in range(k):
                        members[t, j] = buf[j] if j < s else -1
                    sizes[t] = s
                    values[t] = val[p] * coef[s, a, e, r]
                    t += 1
                    # next combination of s indices out of L
                    i = s - 1
                    while i >= 0 and idx[i] == L - s + i:
                        i -= 1
                    if i < 0:
                        break
                    idx[i] += 1
                    for j in range(i + 1, s):
                        idx[j] = idx[j - 1] + 1


def _chunk(P, spec: IndexSpec, k: int, w00: float):
    """(pair, members, sizes, values) of the summed terms of the pairs of ``P``, by pair, then
    size, then members."""
    L = np.diff(P.u_off)
    er = np.unique(np.stack([P.n_e, L - P.n_e], axis=1), axis=0) if L.size else \
        np.zeros((0, 2), dtype=np.int64)
    coef = pattern_coefficients(spec, k, er)
    cnt = np.empty(P.B, dtype=np.int64)
    _term_counts(P.pat_off, P.u_off, k, cnt)
    toff = np.zeros(P.B + 1, dtype=np.int64)
    np.cumsum(cnt, out=toff[1:])
    N = int(toff[-1])
    members = np.empty((N, k), dtype=np.int64)
    sizes = np.empty(N, dtype=np.int64)
    values = np.empty(N)
    _terms(P.pat_off, P.u_off, P.n_e, P.units, P.val, float(P.base), w00, coef, k, toff,
           members, sizes, values)
    pair = np.repeat(np.arange(P.B, dtype=np.int64), cnt)
    order = np.lexsort((*[members[:, j] for j in range(k - 1, -1, -1)], sizes, pair))
    pair, members, sizes, values = pair[order], members[order], sizes[order], values[order]
    new = np.ones(N, dtype=bool)
    if N > 1:
        new[1:] = (pair[1:] != pair[:-1]) | (sizes[1:] != sizes[:-1]) \
            | (members[1:] != members[:-1]).any(axis=1)
    starts = np.flatnonzero(new)
    return pair[starts], members[starts], sizes[starts], np.add.reduceat(values, starts)


def from_tree_game(game, *, index: str = "k-SII", order: int | None = None,
                   units=None) -> InteractionResult:
    """An index of every pair of a :class:`insdel.trees.TreeGame`, exactly, at any n, from its
    leaf patterns (the module's closed form); no model evaluation, no 2^|D| work.

    Parameters
    ----------
    game : insdel.trees.TreeGame
    index, order
        As in :func:`insdel.interactions` (order 1..m, default 2).
    units : sequence of str, optional
        The m unit names (default the game's, else ``x0``, ``x1``, ...).

    Returns
    -------
    InteractionResult
        Per pair ∅ and every subset some pattern of the pair reaches, |S| <= order (the others
        are exactly 0; :meth:`InteractionResult.get` and the dense accessors give 0 for them).
    """
    t0 = time.perf_counter()
    spec = check_index(index)
    k = check_order(spec, order, game.m)
    names = list(units or game.unit_names or [f"x{j}" for j in range(game.m)])
    if len(names) != game.m:
        raise ValueError(f"units has {len(names)} names for m = {game.m} units.")
    w00 = float(_weight(spec.name, 0, 0, k, _bernoulli(k + 1) if spec.name == "k-SII" else None))
    parts = []
    for lo, _, P in game._chunks():
        pair, mem, siz, val = _chunk(P, spec, k, w00)
        parts.append((pair + lo, mem, siz, val))
    pair = np.concatenate([q[0] for q in parts])
    members = np.concatenate([q[1] for q in parts])
    sizes = np.concatenate([q[2] for q in parts])
    values = np.concatenate([q[3] for q in parts])
    v_empty, v_all = game.v_empty(), game.v_all()
    eoff = np.zeros(game.B + 1, dtype=np.int64)
    np.cumsum(np.bincount(pair, minlength=game.B), out=eoff[1:])
    if spec.empty_is_baseline:
        values[eoff[:-1]] = v_empty
    dsz, Dflat, doff = game._ragged_d()
    tm = {"decomposition_s": 0.0, "indices_s": time.perf_counter() - t0}
    tm["total_s"] = tm["indices_s"]
    return InteractionResult(index=spec.name, order=k, units=names, dsz=dsz, Dflat=Dflat,
                             doff=doff, eoff=eoff, members=members, sizes=sizes, values=values,
                             v_empty=v_empty, v_all=v_all, removal=game.name, n_evals=0,
                             timings=tm)
