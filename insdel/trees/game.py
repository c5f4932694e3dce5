"""The game of a tree ensemble under the baseline removal, exact in closed form at any n
(docs/tree_game.md).

:func:`tree_game` checks the ensemble, the targets, the references and the groups once and
returns a :class:`TreeGame`: a :class:`insdel.game.Game` whose values, curves, Shapley values
and anchored-decomposition effects are read off the pairs' leaf patterns
(:mod:`insdel.trees.patterns`) instead of model rows. Every engine that takes a game
(``insdel.trace``, ``evaluate``, ``batch_decomposition``, ``shapley_values``) takes it in place
of ``(f, X, R)`` and gives the numbers of the black-box route on ``ensemble.predict``, with no
limit on |D| except where a result has 2^|D| entries (:meth:`TreeGame.effects`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import _decomposition_kernels as DK
from .._validation import (
    as_float_array,
    check_bool,
    check_mode,
    check_orders,
    check_positive_int,
    check_scalar,
    feature_names_of,
)
from ..game import HOOKS, Game
from ..groups import Groups, check_groups
from . import _game_kernels as K
from .ensemble import TreeEnsemble, check_category_codes
from .patterns import (
    DEFAULT_MAX_PATTERNS,
    Patterns,
    check_pattern_count,
    leaf_patterns,
    merge_ragged,
    pattern_counts,
)

__all__ = ["TreeGame", "tree_game", "BestOrder", "SparseEffects", "DEFAULT_MAX_D"]

#: largest |D_b| for which :meth:`TreeGame.effects` (2^|D_b| entries) and the exact best order
#: run; the same default as the decomposition's (``insdel.decomposition.DEFAULT_MAX_D``)
DEFAULT_MAX_D = 20

#: pairs counted (strided over the game's pairs) to decide whether its patterns are held or
#: streamed without a walk of every pair (:meth:`TreeGame._counts_within`)
COUNT_SAMPLE = 64


@dataclass(frozen=True)
class BestOrder:
    """The best ordering per pair found by :meth:`TreeGame.best_order`.

    Attributes
    ----------
    order : ndarray of int64 (B, m)
        The ordering (exactly optimal where ``exact``; the local search's otherwise).
    abc : ndarray (B,)
        Its ABC (insertion) or ABC' (deletion).
    bound : ndarray (B,)
        A certified upper bound on the best ABC / ABC' over all m! orderings (equal to ``abc``
        where ``exact``).
    exact : ndarray of bool (B,)
        Whether the pair's search was exact (|D_b| <= max_d).
    mode : str
    normalize : bool
    """

    order: np.ndarray
    abc: np.ndarray
    bound: np.ndarray
    exact: np.ndarray
    mode: str
    normalize: bool

    def gap(self) -> np.ndarray:
        """``bound - abc`` (B,): 0 where exact, how far the heuristic may be from optimal."""
        return self.bound - self.abc


@dataclass(frozen=True)
class SparseEffects:
    """The nonzero effects (Möbius dividends) Delta_b(w) of each pair, largest |Delta| first.

    Pair b's effects are ``off[b] .. off[b + 1] - 1``; effect i is over the units
    ``units[w_off[i]:w_off[i + 1]]`` (increasing) with value ``delta[i]``.
    """

    off: np.ndarray
    w_off: np.ndarray
    units: np.ndarray
    delta: np.ndarray

    def of(self, b: int) -> list[tuple[tuple[int, ...], float]]:
        """Pair b's effects as ``(w, Delta(w))``, largest |Delta| first."""
        return [(tuple(self.units[self.w_off[i]:self.w_off[i + 1]].tolist()),
                 float(self.delta[i])) for i in range(int(self.off[b]), int(self.off[b + 1]))]

    def orders(self) -> np.ndarray:
        """|w| of every effect (flat)."""
        return np.diff(self.w_off)


class TreeGame(Game):
    """The baseline game ``v_b(u) = f(x_b,u : r_b,-u)`` of a tree ensemble f, in closed form.

    Built by :func:`tree_game` (which checks its inputs); trusted here. Closed forms
    (:attr:`closed_form`): ``curves``, ``shapley``, ``effects``; also :meth:`auc`, :meth:`abc`,
    :meth:`expected_auc`, :meth:`expected_abc`, :meth:`banzhaf`, :meth:`nonzero_effects`,
    :meth:`best_order`.
    """

    name = "baseline"
    closed_form = frozenset(HOOKS)
    engine = "tree"  # the closed forms of the trees (insdel.game.Game.engine)
    n_draws = 0  # no model row is evaluated

    def __init__(self, ensemble: TreeEnsemble, X: np.ndarray, R: np.ndarray,
                 groups: Groups | None = None, *, unit_names: list | None = None,
                 patterns: Patterns | None = None, offset: int = 0,
                 max_d: int = DEFAULT_MAX_D, max_patterns: int = DEFAULT_MAX_PATTERNS):
        self.ensemble = ensemble
        self.X = X
        self.R = R
        self.groups = groups
        self.unit_names = unit_names
        self.offset = offset
        self.max_d = max_d
        self.max_patterns = max_patterns
        self._unit_of = None if groups is None else groups.labels
        self._chunk_plan: list[tuple[int, int]] | None = None
        if patterns is None:
            cnt = self._counts_within(max_patterns)
            if cnt is not None:
                patterns = leaf_patterns(ensemble, X, R, unit_of=self._unit_of, m=self.m,
                                         max_patterns=max_patterns, counts=cnt)
        #: the merged leaf patterns of all pairs (None when they are streamed in chunks of at
        #: most ``max_patterns``: each question then walks the trees again chunk by chunk)
        self.patterns = patterns
        self._ends: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._phi: np.ndarray | None = None  # streamed: kept from the first walk

    def _counts_within(self, max_patterns: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The pairs' pattern counts when they fit in ``max_patterns`` together; None when
        they do not (the game streams). A strided sample of :data:`COUNT_SAMPLE` pairs is
        counted first: when it projects more than half the bound over all pairs, the game
        streams without counting the rest (the curves, E[ABC] and the Shapley values come from
        one walk that stores nothing; the chunks for the questions that need held patterns are
        planned, by a count of all pairs, only when such a question is asked). Otherwise the
        pairs are counted block by block and the count stops at the first block over the
        bound. No pair is refused here: only a chunked question refuses a pair that reaches
        more than ``max_patterns`` alone."""
        ens, X, R = self.ensemble, self.X, self.R
        count = (lambda sel: pattern_counts(ens, X[sel], R[sel],  # noqa: E731
                                            unit_of=self._unit_of, m=self.m))
        B = self.B
        if B > 2 * COUNT_SAMPLE:
            sel = np.linspace(0, B - 1, COUNT_SAMPLE).round().astype(np.int64)
            if float(count(sel)[0].mean()) * B > max_patterns / 2:
                return None
        parts, total, step = [], 0, 1024
        for lo in range(0, B, step):
            parts.append(count(slice(lo, min(lo + step, B))))
            total += int(parts[-1][0].sum())
            if total > max_patterns:
                return None
        return (np.concatenate([c[0] for c in parts]) if parts else np.zeros(0, np.int64),
                np.concatenate([c[1] for c in parts]) if parts else np.zeros(0, np.int64))

    @property
    def _bounds(self) -> list[tuple[int, int]] | None:
        """The streamed game's chunks of pairs (None when the patterns are held)."""
        if self._chunk_plan is None and self.patterns is None:
            self._chunk_plan = _plan(*pattern_counts(self.ensemble, self.X, self.R,
                                               unit_of=self._unit_of, m=self.m),
                               self.max_patterns)
        return self._chunk_plan

    # -- the game ------------------------------------------------------------------------------
    def _chunks(self):
        """(lo, hi, patterns of pairs lo .. hi - 1) covering all pairs."""
        if self.patterns is not None:
            yield 0, self.B, self.patterns
            return
        for lo, hi in self._bounds:
            yield lo, hi, leaf_patterns(self.ensemble, self.X[lo:hi], self.R[lo:hi],
                                        unit_of=self._unit_of, m=self.m,
                                        max_patterns=self.max_patterns)

    @property
    def base(self) -> float:
        return float(self.ensemble.base)

    def differing(self) -> np.ndarray:
        """(B, m) bool: the units with a column where x and r differ (NaN equals NaN)."""
        diff = (self.X != self.R) & ~(np.isnan(self.X) & np.isnan(self.R))
        return diff if self.groups is None else self.groups.reduce_any(diff)

    def _values(self, pairs, keep, clock):
        pairs = np.asarray(pairs, dtype=np.int64)
        keep = np.asarray(keep, dtype=np.bool_)
        out = np.empty(len(pairs))
        for lo, hi, P in self._chunks():
            sel = (pairs >= lo) & (pairs < hi)
            if sel.all():
                K.values(*_arrays(P), np.ascontiguousarray(pairs - lo),
                         np.ascontiguousarray(keep), out)
            elif sel.any():
                part = np.empty(int(sel.sum()))
                K.values(*_arrays(P), np.ascontiguousarray(pairs[sel] - lo),
                         np.ascontiguousarray(keep[sel]), part)
                out[sel] = part
        return out + self.base

    def _end_values(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._ends is None and self.patterns is None:
            self._fused()
        if self._ends is None:
            v0, v1, ea = (np.empty(self.B) for _ in range(3))
            for lo, hi, P in self._chunks():
                K.ends_and_expectation(P.pat_off, P.u_off, P.n_e, P.val, self.m, v0[lo:hi],
                                       v1[lo:hi], ea[lo:hi])
            self._ends = (v0 + self.base, v1 + self.base, ea + (self.m + 1) * self.base)
        return self._ends

    def _fused(self, orders: np.ndarray | None = None, pos: np.ndarray | None = None,
               phi: bool = False, banzhaf: bool = False) -> dict[str, np.ndarray]:
        """The streamed game's questions straight from one walk of the trees per pair (no
        pattern stored): curves of ``orders`` at ``pos``, Shapley / Banzhaf values; the ends,
        E[AUC] and the Shapley values (B x m, computed along with the first walk: less than the
        curves it returns, and a second walk saved) are kept."""
        B, m = self.B, self.m
        phi = phi or self._phi is None
        do_c = orders is not None
        o = orders if do_c else np.zeros((B, 1, m), dtype=np.int64)
        pos = np.zeros(1, dtype=np.int64) if pos is None else pos
        S = pos.shape[0] if do_c else 1
        ins = np.empty((B, o.shape[1], S) if do_c else (1, 1, 1))
        dele = np.empty_like(ins)
        ph = np.empty((B, m) if phi else (1, m))
        bz = np.empty((B, m) if banzhaf else (1, m))
        ends = np.empty((B, 3))
        unit_of = (np.arange(self.n, dtype=np.int64) if self._unit_of is None
                   else np.ascontiguousarray(self._unit_of, dtype=np.int64))
        K.fused(np.ascontiguousarray(self.X), np.ascontiguousarray(self.R), unit_of, m,
                2 * self.ensemble.max_depth() + 4, *self.ensemble.walk_arrays(), self.base, o,
                pos, do_c, ins, dele, phi, ph, banzhaf, bz, ends, K.LEAF_BUFFER)
        if self._ends is None:
            self._ends = (ends[:, 0] + self.base, ends[:, 1] + self.base,
                          ends[:, 2] + (m + 1) * self.base)
        if phi and self._phi is None:
            self._phi = ph
        return {"insertion": ins, "deletion": dele, "shapley": ph, "banzhaf": bz}

    def v_all(self) -> np.ndarray:
        return self._end_values()[1].copy()

    def v_empty(self) -> np.ndarray:
        return self._end_values()[0].copy()

    def subset(self, lo: int, hi: int) -> TreeGame:
        return TreeGame(self.ensemble, self.X[lo:hi], self.R[lo:hi], self.groups,
                        unit_names=self.unit_names,
                        patterns=None if self.patterns is None else self.patterns.subset(lo, hi),
                        offset=self.offset + lo, max_d=self.max_d,
                        max_patterns=self.max_patterns)

    def _pick(self, sub: np.ndarray) -> TreeGame:
        """The game of the pairs ``sub`` (any of them, in that order)."""
        pats = None if self.patterns is None else _pick(self.patterns, sub)
        return TreeGame(self.ensemble, self.X[sub], self.R[sub], self.groups,
                        unit_names=self.unit_names, patterns=pats, max_d=self.max_d,
                        max_patterns=self.max_patterns)

    def parts(self) -> dict[str, Any]:
        """The game itself (its patterns travel with it; :func:`insdel.game.from_parts`)."""
        return {"game": self}

    def params(self) -> dict[str, Any] | None:
        return {"engine": "tree", "source": self.ensemble.source,
                "n_trees": self.ensemble.n_trees}

    def __repr__(self) -> str:
        held = ("streamed" if self.patterns is None
                else str(int(self.patterns.pat_off[-1])))
        return (f"TreeGame(B={self.B}, n={self.n}, m={self.m}, trees={self.ensemble.n_trees}, "
                f"patterns={held}" + ("" if self.offset == 0 else f", offset={self.offset}")
                + ")")

    # -- closed forms --------------------------------------------------------------------------
    def curves(self, orders: np.ndarray, *, modes: tuple = ("insertion", "deletion"),
               positions: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Insertion / deletion curves (B, K, S) of orderings ``orders`` (B, K, m) (checked
        permutations) at ``positions`` (default every step 0..m)."""
        orders = np.ascontiguousarray(orders, dtype=np.int64)
        pos = (np.arange(self.m + 1, dtype=np.int64) if positions is None
               else np.ascontiguousarray(positions, dtype=np.int64))
        if self.patterns is None:  # streamed: straight from the walk
            out = self._fused(orders, pos)
            return {mo: out[mo] for mo in modes}
        B, Ko = orders.shape[:2]
        ins = np.empty((B, Ko, pos.shape[0]))
        dele = np.empty((B, Ko, pos.shape[0]))
        for lo, hi, P in self._chunks():
            K.curves(*_arrays(P), self.base, orders[lo:hi], pos, "insertion" in modes,
                     "deletion" in modes, ins[lo:hi], dele[lo:hi])
        return {mo: ins if mo == "insertion" else dele for mo in modes}

    def _shares(self, banzhaf: bool) -> np.ndarray:
        if self.patterns is None:  # streamed: straight from the walk
            if banzhaf:
                return self._fused(banzhaf=True)["banzhaf"]
            if self._phi is None:
                self._fused(phi=True)
            return self._phi.copy()
        out = np.empty((self.B, self.m))
        for lo, hi, P in self._chunks():
            K.shares(*_arrays(P), banzhaf, out[lo:hi])
        return out

    def shapley(self) -> np.ndarray:
        """Exact baseline Shapley values (B, m): each pattern shares its value among E (gain)
        and R (loss) with the weights of docs/tree_game.md."""
        return self._shares(False)

    def banzhaf(self) -> np.ndarray:
        """Exact Banzhaf values (B, m): ``(1/2^(m-1)) sum_{u ∌ j} v(u + j) - v(u)``."""
        return self._shares(True)

    def _ragged_d(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        diff = self.differing()
        dsz = diff.sum(axis=1).astype(np.int64)
        Dflat = np.nonzero(diff)[1].astype(np.int64)
        doff = np.zeros(self.B + 1, dtype=np.int64)
        np.cumsum(dsz, out=doff[1:])
        return dsz, Dflat, doff

    def effects(self, *, max_d: int | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The anchored decomposition's effects over the subsets of each D_b, ragged as in
        :mod:`insdel._decomposition_kernels` (the hook :func:`insdel.batch_decomposition` reads).

        Raises
        ------
        ValueError
            A pair with |D_b| > ``max_d`` (default the game's ``max_d``): its 2^|D_b| entries are
            refused; :meth:`nonzero_effects` gives the nonzero ones at any |D|.
        """
        dsz, Dflat, doff = self._ragged_d()
        self._check_d(dsz, self.max_d if max_d is None else max_d, "effects")
        delta = self._effects_of(dsz, Dflat, doff)
        return dsz, Dflat, doff, delta

    def _effects_of(self, dsz, Dflat, doff) -> np.ndarray:
        bit = np.full((self.B, self.m), -1, dtype=np.int64)
        rows = np.repeat(np.arange(self.B), dsz)
        bit[rows, Dflat] = np.arange(Dflat.shape[0]) - doff[rows]
        off = np.zeros(self.B + 1, dtype=np.int64)
        np.cumsum(np.left_shift(np.int64(1), dsz), out=off[1:])
        delta = np.empty(int(off[-1]))
        for lo, hi, P in self._chunks():
            K.effects(*_arrays(P), self.base, bit[lo:hi], off[lo:hi + 1] - off[lo],
                      delta[off[lo]:off[hi]])
        return delta

    @staticmethod
    def _check_d(dsz: np.ndarray, max_d: int, what: str) -> None:
        if dsz.size and int(dsz.max()) > max_d:
            b = int(np.argmax(dsz))
            raise ValueError(
                f"{what}: pair {b} has |D| = {int(dsz[b])} differing units, more than max_d = "
                f"{max_d} (2^{int(dsz[b])} effects); raise max_d, or use "
                "TreeGame.nonzero_effects() (only the nonzero effects, at any |D|).")

    def nonzero_effects(self, *, top_k: int | None = None, max_order: int | None = None,
                        max_terms: int = DEFAULT_MAX_PATTERNS) -> SparseEffects:
        """The nonzero effects Delta_b(w) of each pair at any n, largest |Delta| first.

        A pattern contributes ``val (-1)^|w - E|`` to every w with E ⊆ w ⊆ E ∪ R; the terms of a
        pair with the same w are summed and those summing to 0 dropped (Delta(∅) = f(r) is kept
        unless it is 0).

        Parameters
        ----------
        top_k : int, optional
            Keep the ``top_k`` largest |Delta| of each pair (ties: smaller |w| first).
        max_order : int, optional
            Only the effects of order |w| <= max_order (all orders when None).
        max_terms : int
            Refuse when the patterns of the pairs held at once expand to more terms than this
            (before summing).
        """
        if top_k is not None:
            top_k = check_positive_int(top_k, "top_k")
        mo = self.m if max_order is None else check_scalar(max_order, "max_order", int,
                                                            min_val=0)
        parts = [_sparse(P, self.base, top_k, mo, max_terms, lo) for lo, _, P in self._chunks()]
        if len(parts) == 1:
            return parts[0]
        off = np.zeros(self.B + 1, dtype=np.int64)
        np.cumsum(np.concatenate([np.diff(q.off) for q in parts]), out=off[1:])
        w_n = np.concatenate([np.diff(q.w_off) for q in parts])
        w_off = np.zeros(w_n.shape[0] + 1, dtype=np.int64)
        np.cumsum(w_n, out=w_off[1:])
        return SparseEffects(off, w_off, np.concatenate([q.units for q in parts]),
                             np.concatenate([q.delta for q in parts]))

    # -- areas (Theorem 1 read off the patterns) -------------------------------------------------
    def _orders3(self, orders) -> tuple[np.ndarray, bool]:
        return orders_3d(orders, self.B, self.m)

    def _aucs(self, orders) -> tuple[np.ndarray, np.ndarray, bool]:
        """Insertion and deletion AUC less (m + 1) base of each ordering, (B, K) each."""
        o, squeeze = self._orders3(orders)
        if self.patterns is None:  # streamed: the sums of the curves from the walk
            c = self._fused(o, np.arange(self.m + 1, dtype=np.int64))
            shift = (self.m + 1) * self.base
            return c["insertion"].sum(-1) - shift, c["deletion"].sum(-1) - shift, squeeze
        ai, ad = np.empty(o.shape[:2]), np.empty(o.shape[:2])
        for lo, hi, P in self._chunks():
            K.aucs(*_arrays(P), o[lo:hi], ai[lo:hi], ad[lo:hi])
        return ai, ad, squeeze

    def auc(self, orders: ArrayLike, *, mode: str = "insertion", normalize: bool = False
            ) -> np.ndarray:
        """AUC (insertion; deletion: AUC') of each ordering, the sum of the m + 1 curve points:
        ``(m + 1) base + sum_p val_p * (number of steps p is on)``; divided by m when
        ``normalize``. ``orders`` (m,), (B, m) or (B, K, m); returns (B,) or (B, K)."""
        check_mode(mode)
        normalize = check_bool(normalize, "normalize")
        ai, ad, squeeze = self._aucs(orders)
        a = (ai if mode == "insertion" else ad) + (self.m + 1) * self.base
        a = a / self.m if normalize else a
        return a[:, 0] if squeeze else a

    def _aul(self) -> np.ndarray:
        v0, v1, _ = self._end_values()
        return (self.m + 1) / 2.0 * (v0 + v1)

    def abc(self, orders: ArrayLike, *, mode: str = "insertion", normalize: bool = True
            ) -> np.ndarray:
        """ABC (insertion, ``AUC - AUL``) or ABC' (deletion, ``AUL - AUC'``) of each ordering,
        divided by m when ``normalize`` (:func:`insdel.areas.abc` on the whole curve)."""
        normalize = check_bool(normalize, "normalize")
        a = self.auc(orders, mode=mode)
        aul = self._aul()
        aul = aul[:, None] if a.ndim == 2 else aul
        out = a - aul if mode == "insertion" else aul - a
        return out / self.m if normalize else out

    def abc_total(self, orders: ArrayLike, *, normalize: bool = True) -> np.ndarray:
        """ABC + ABC' of each ordering (Appendix B.1), ``AUC - AUC'``, divided by m when
        ``normalize``."""
        normalize = check_bool(normalize, "normalize")
        ai, ad, squeeze = self._aucs(orders)
        a = (ai - ad) / self.m if normalize else ai - ad
        return a[:, 0] if squeeze else a

    def expected_auc(self, *, mode: str = "insertion", normalize: bool = False) -> np.ndarray:
        """E[AUC] (equal to E[AUC']) over uniformly random orderings of the m units (B,):
        ``(m + 1) (base + sum_p val_p a! b! / (a + b + 1)!)``, a = |E|, b = |R|."""
        check_mode(mode)
        normalize = check_bool(normalize, "normalize")
        e = self._end_values()[2]
        return e / self.m if normalize else e.copy()

    def expected_abc(self, *, mode: str = "insertion", normalize: bool = True) -> np.ndarray:
        """E[ABC] (insertion) or E[ABC'] (deletion; its negative) over uniformly random
        orderings (B,), as :meth:`insdel.BatchDecomposition.expected_abc`."""
        check_mode(mode)
        normalize = check_bool(normalize, "normalize")
        e = self._end_values()[2] - self._aul()
        e = e if mode == "insertion" else -e
        return e / self.m if normalize else e

    # -- the best ordering ------------------------------------------------------------------------
    def best_order(self, *, mode: str = "insertion", normalize: bool = True,
                   max_d: int | None = None, max_passes: int = 100) -> BestOrder:
        """The ordering with the largest ABC (insertion) or ABC' (deletion), per pair.

        Pairs with |D_b| <= ``max_d``: exact (the decomposition's dynamic programming over the
        subsets of D_b, on the closed-form effects: the ordering
        :meth:`insdel.BatchDecomposition.best_order` gives). Other pairs: a local search
        (adjacent swaps, first improvement, from the Shapley ordering, at most ``max_passes``
        passes) on the closed-form AUC, and a certified upper bound on the best ABC: every
        pattern at its own best number of on-steps (docs/tree_game.md).
        """
        check_mode(mode)
        normalize = check_bool(normalize, "normalize")
        max_d = self.max_d if max_d is None else check_positive_int(max_d, "max_d")
        max_passes = check_positive_int(max_passes, "max_passes")
        ins = mode == "insertion"
        m, B = self.m, self.B
        base = (m + 1) * self.base
        dsz, Dflat, doff = self._ragged_d()
        exact = dsz <= max_d
        order = np.argsort(-self.shapley(), axis=1, kind="stable").astype(np.int64)
        best = np.empty(B)
        if exact.any():
            sub = np.flatnonzero(exact)
            g = self if exact.all() else self._pick(sub)
            sd, sD, so = g._ragged_d()
            vals = g._effects_of(sd, sD, so)
            off = np.zeros(sd.shape[0] + 1, dtype=np.int64)
            np.cumsum(np.left_shift(np.int64(1), sd), out=off[1:])
            DK.zeta_ragged(vals, off, sd)
            eb = np.empty(sd.shape[0])
            eo = np.empty((sd.shape[0], m), dtype=np.int64)
            DK.best_paths_ragged(vals, off, sd, sD, so, m, ins, eb, eo)
            order[sub] = eo
            best[sub] = eb - base
        bound = np.empty(B)
        for lo, hi, P in self._chunks():
            K.auc_bounds(P.pat_off, P.u_off, P.n_e, P.val, m, ins, bound[lo:hi])
            K.local_search(*_arrays(P), order[lo:hi], ins, max_passes, ~exact[lo:hi],
                           best[lo:hi])
        best += base
        bound += base
        aul = self._aul()
        abc = best - aul if ins else aul - best
        ub = bound - aul if ins else aul - bound
        ub = np.where(exact, abc, np.maximum(ub, abc))
        if normalize:
            abc, ub = abc / m, ub / m
        return BestOrder(order, abc, ub, exact, mode, normalize)


def orders_3d(orders: ArrayLike, B: int, m: int) -> tuple[np.ndarray, bool]:
    """Orderings given as (m,), (B, m) or (B, K, m) as (B, K, m) int64 (checked permutations
    of the m units), and whether the caller's answer drops K (a 1-D or 2-D ``orders``)."""
    o = check_orders(orders, m, name="orders")
    squeeze = o.ndim < 3
    if o.ndim == 1:
        o = np.broadcast_to(o, (B, 1, m))
    elif o.ndim == 2:
        o = o[:, None, :]
    if o.shape[0] != B:
        raise ValueError(f"orders must have shape (m,), (B, m) or (B, K, m) with B = {B}, "
                         f"m = {m}; got {np.shape(orders)}.")
    return np.ascontiguousarray(o, dtype=np.int64), squeeze


def _arrays(P: Patterns) -> tuple[np.ndarray, ...]:
    return P.pat_off, P.u_off, P.n_e, P.units, P.val


def _plan(cnt_p: np.ndarray, cnt_u: np.ndarray, max_patterns: int) -> list[tuple[int, int]]:
    """Consecutive chunks of pairs whose leaf patterns (before merging) are at most
    ``max_patterns`` each; a pair over it alone is refused (the error names it)."""
    big = np.flatnonzero(cnt_p > max_patterns)
    if big.size:
        b = int(big[0])
        check_pattern_count(cnt_p[b:b + 1], cnt_u[b:b + 1], max_patterns, first=b)
    bounds, lo, acc = [], 0, 0
    for b, c in enumerate(cnt_p.tolist()):
        if acc + c > max_patterns:
            bounds.append((lo, b))
            lo, acc = b, 0
        acc += c
    bounds.append((lo, cnt_p.shape[0]))
    return bounds


def _sparse(P: Patterns, base: float, top_k, mo: int, max_terms: int, first: int
            ) -> SparseEffects:
    """The nonzero effects of the pairs of ``P`` (their first is pair ``first`` of the game)."""
    pat_off, u_off, n_e, units, val = _arrays(P)
    B = P.B
    cnt_p = np.empty(B, dtype=np.int64)
    cnt_u = np.empty(B, dtype=np.int64)
    K.effect_counts(pat_off, u_off, n_e, mo, cnt_p, cnt_u)
    cnt_p += 1  # the base's term on ∅
    total = int(cnt_p.sum())
    if total > max_terms:
        b = int(np.argmax(cnt_p))
        raise ValueError(f"nonzero_effects: the patterns expand to {total:,} terms (pair "
                         f"{b + first}: {int(cnt_p[b]):,}), more than max_terms = "
                         f"{max_terms:,}; give max_order=, fewer pairs (subset) or raise "
                         "max_terms.")
    pair_p = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(cnt_p, out=pair_p[1:])
    pair_u = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(cnt_u, out=pair_u[1:])
    t_uoff = np.empty(total + 1, dtype=np.int64)
    t_uoff[total] = pair_u[B]
    t_n = np.empty(total, dtype=np.int64)
    t_units = np.empty(int(pair_u[B]), dtype=np.int64)
    t_val = np.empty(total)
    # the first term of each pair is (∅, base); the patterns' terms follow
    t_uoff[pair_p[:-1]] = pair_u[:-1]
    t_n[pair_p[:-1]] = 0
    t_val[pair_p[:-1]] = base
    K.effect_terms(pat_off, u_off, n_e, units, val, mo, pair_p[:-1] + 1, pair_u[:-1], t_uoff,
                   t_n, t_units, t_val)
    off, w_off, w_n, w_units, delta = merge_ragged(pair_p, t_uoff, t_n, t_units, t_val)
    Pn = int(off[B])
    # sort each pair's effects by |Delta| (largest first; ties: smaller |w| first) and cut
    pair = np.repeat(np.arange(B), np.diff(off))
    order = np.lexsort((w_n, -np.abs(delta), pair))
    rank = np.arange(Pn) - off[pair]
    sel = order if top_k is None else order[rank < top_k]  # blocks of pairs keep their place
    sizes = w_n[sel]
    new_off = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(np.bincount(pair[sel], minlength=B), out=new_off[1:])
    new_w = np.zeros(sel.shape[0] + 1, dtype=np.int64)
    np.cumsum(sizes, out=new_w[1:])
    starts = np.repeat(w_off[sel] - new_w[:-1], sizes) + np.arange(int(new_w[-1]))
    return SparseEffects(new_off, new_w, w_units[starts], delta[sel])


def _pick(p: Patterns, sub: np.ndarray) -> Patterns:
    """The patterns of the pairs ``sub`` (any of them, in that order)."""
    parts = [p.subset(int(b), int(b) + 1) for b in sub]
    pat_off = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([q.val.shape[0] for q in parts], out=pat_off[1:])
    ulen = np.cumsum([0] + [q.units.shape[0] for q in parts])
    u_off = np.concatenate([q.u_off[:-1] + ulen[i] for i, q in enumerate(parts)]
                           + [np.array([ulen[-1]], dtype=np.int64)])
    cat = (lambda name: np.concatenate([getattr(q, name) for q in parts]))  # noqa: E731
    return Patterns(pat_off, u_off.astype(np.int64), cat("n_e"), cat("units"), cat("val"),
                    p.base, p.m)


def tree_game(ensemble: TreeEnsemble, X: ArrayLike, R: ArrayLike, *, groups=None,
              feature_names=None, max_d: int = DEFAULT_MAX_D,
              max_patterns: int = DEFAULT_MAX_PATTERNS) -> TreeGame:
    """The baseline game of a tree ensemble on the pairs (X, R), checked once.

    Parameters
    ----------
    ensemble : insdel.trees.TreeEnsemble
    X : array_like (B, n)
        Targets; n = ``ensemble.n_features``. NaN is allowed (a missing value: each node sends
        it its default direction, as the library does); ±inf is refused.
    R : array_like (B, n) or (n,)
        References (one per target; a 1-D reference is used for every target); NaN as in X.
    groups : optional
        Units that move together (:mod:`insdel.groups`): the game of the groups.
    feature_names : sequence of str, optional
        The columns' names, for groups given by name; checked against the ensemble's names
        (and a DataFrame X's columns) when both are known.
    max_d : int, default 20
        The largest |D_b| of :meth:`TreeGame.effects` and the exact best order.
    max_patterns : int
        The largest number of leaf patterns held (:func:`insdel.trees.patterns.leaf_patterns`).

    Returns
    -------
    TreeGame
    """
    if not isinstance(ensemble, TreeEnsemble):
        raise TypeError(f"ensemble must be an insdel.trees.TreeEnsemble; got "
                        f"{type(ensemble).__name__}.")
    n = ensemble.n_features
    names = feature_names_of(X, feature_names)
    if names is not None and ensemble.feature_names is not None \
            and list(names) != list(ensemble.feature_names):
        raise ValueError(f"the data's feature names {list(names)[:5]}... do not match the "
                         f"ensemble's {list(ensemble.feature_names)[:5]}... "
                         f"({ensemble.source or 'ensemble'}).")
    Xa = as_float_array("X", X, ndim=(2,), finite=False)
    Ra = as_float_array("R", R, ndim=(1, 2), finite=False)
    if Xa.shape[1] != n:
        raise ValueError(f"X has {Xa.shape[1]} columns; the ensemble takes n_features = {n}.")
    if Ra.ndim == 1:
        Ra = np.broadcast_to(Ra, Xa.shape)
    if Ra.shape != Xa.shape:
        raise ValueError(f"R must have shape {Xa.shape} (one reference per target) or ({n},); "
                         f"got {Ra.shape}.")
    for nm, a in (("X", Xa), ("R", Ra)):
        bad = np.isinf(a)
        if bad.any():
            b, j = (int(v[0]) for v in np.nonzero(bad))
            raise ValueError(f"{nm} is ±inf at row {b}, feature {j}: a tree game takes finite "
                             "values or NaN (a missing value, routed by each node's default "
                             "direction).")
        check_category_codes(ensemble, nm, a)
    grp = check_groups(groups, n, feature_names=names if names is not None
                       else ensemble.feature_names)
    unit_names = None if grp is None else list(grp.names)
    if grp is not None and grp.singleton:
        grp = None
    return TreeGame(ensemble, np.ascontiguousarray(Xa), np.ascontiguousarray(Ra), grp,
                    unit_names=unit_names,
                    max_d=check_positive_int(max_d, "max_d"),
                    max_patterns=check_positive_int(max_patterns, "max_patterns"))
