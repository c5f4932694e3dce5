"""Marginal removal of a tree ensemble with references of its own per target, exactly, as the
mean of the baseline tree games of the B x K (target, reference) pairs (docs/tree_removals.md).

``v_b(u) = (1/K) sum_k f(x_b,u : r_bk,-u)``: the mean of the K baseline games of target b.
Every question linear in v (values, the ends, curves, AUC / ABC, E[AUC] / E[ABC], Shapley and
Banzhaf values, the anchored decomposition's effects) is the mean over k of the answers of the
baseline :class:`insdel.trees.game.TreeGame` on the pairs (x_b, r_bk), built once on all B K
pairs (streamed in chunks when their leaf patterns are many). The best ordering is not linear
in v: it is searched exactly on the averaged game's effects (|D_b| <= max_d), and refused above.

The cost is B K tree walks (and B K n floats for the expanded pairs): the product of targets and
references. :mod:`insdel.trees.marginal` is linear in B + K, but takes references shared by every
target and paths of at most :data:`insdel.trees.marginal.MAX_MARGINAL_SLOTS` distinct units; this
route takes any references and any depth.
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np
from numpy.typing import ArrayLike

from .. import _decomposition_kernels as DK
from .._checkpoint import sha256_arrays
from .._validation import (
    as_float_array,
    check_bool,
    check_mode,
    check_positive_int,
    feature_names_of,
)
from ..game import Game
from ._tree_game import check_ensemble_rows, ensemble_sha256
from .ensemble import check_category_codes
from .game import DEFAULT_MAX_D, BestOrder, TreeGame, orders_3d, tree_game

__all__ = ["MarginalPairsGame", "marginal_pairs_game"]

#: curve points (pairs x orderings x recorded steps) one call of the pairs' curves holds at once
_MAX_CURVE_POINTS = 1 << 24


def marginal_pairs_game(ens, X, R, *, groups=None, feature_names=None,
                        max_d: int = DEFAULT_MAX_D, why: str | None = None
                        ) -> MarginalPairsGame:
    """The exact marginal game of ``ens`` on the targets X, target b with its own K references
    ``R[b]``: the mean of the B K baseline tree games (cost: B K walks).

    Parameters
    ----------
    ens : TreeEnsemble
    X : array_like (B, n)
        The targets (NaN allowed: the trees' default directions; ±inf refused).
    R : array_like (B, K, n)
        Each target's K references (NaN allowed; ±inf refused, naming target, reference and
        feature).
    groups, feature_names : optional
        Units that move together (:mod:`insdel.groups`); the data's names are checked against
        the ensemble's (:func:`insdel.trees.game.tree_game`).
    max_d : int, default 20
        The largest |D_b| of :meth:`MarginalPairsGame.effects` and the exact best order.
    why : str, optional
        Why this route ran (recorded in :attr:`MarginalPairsGame.route`, which
        :func:`insdel.game.engine_text` prints).

    Returns
    -------
    MarginalPairsGame
    """
    names = feature_names_of(X, feature_names)
    Xa = check_ensemble_rows(ens, X, "the marginal tree game")
    Ra = as_float_array("R", R, ndim=(3,), finite=False)
    B, n = Xa.shape
    if Ra.shape[0] != B or Ra.shape[2] != n or Ra.shape[1] < 1:
        raise ValueError(f"R must have shape (B, K, n) = ({B}, K, {n}) with K >= 1 (each "
                         f"target's references); got {Ra.shape}.")
    bad = np.isinf(Ra)
    if bad.any():
        b, k, j = (int(v[0]) for v in np.nonzero(bad))
        raise ValueError(f"R is ±inf at target {b}, reference {k}, feature {j}: a tree game "
                         "takes finite values or NaN (a missing value).")
    check_category_codes(ens, "R", Ra)
    K = Ra.shape[1]
    inner = tree_game(ens, np.repeat(Xa, K, axis=0), Ra.reshape(B * K, n), groups=groups,
                      feature_names=names, max_d=max_d)
    return MarginalPairsGame(inner, Xa, Ra, why=why)


class MarginalPairsGame(Game):
    """``v_b(u) = (1/K) sum_k f(x_b,u : r_bk,-u)`` of a tree ensemble, exact: the mean of the
    baseline :class:`insdel.trees.game.TreeGame` of the B K (target, reference) pairs.

    Closed forms (:attr:`closed_form`): ``curves``, ``shapley``, ``effects``; also :meth:`auc`,
    :meth:`abc`, :meth:`abc_total`, :meth:`expected_auc`, :meth:`expected_abc`,
    :meth:`banzhaf` (means over the references) and :meth:`best_order` (on the averaged game's
    effects, |D_b| <= max_d). Built by :func:`marginal_pairs_game`.
    """

    name = "marginal"
    engine = "tree"  # the closed forms of the trees (insdel.game.Game.engine)
    closed_form = frozenset({"curves", "shapley", "effects"})
    n_draws = 0  # no model row is evaluated

    def __init__(self, inner: TreeGame, X: np.ndarray, R: np.ndarray, *, offset: int = 0,
                 why: str | None = None):
        self.inner = inner
        self.ensemble = inner.ensemble
        self.X = X
        self.R = R  # (B, K, n): each target's references
        self.groups = inner.groups
        self.unit_names = inner.unit_names
        self.offset = offset
        self.why = why
        self._diff: np.ndarray | None = None

    @property
    def K(self) -> int:
        return int(self.R.shape[1])

    @property
    def max_d(self) -> int:
        return self.inner.max_d

    @property
    def route(self) -> str:
        """The route in words (what :func:`insdel.game.engine_text` appends)."""
        r = f"marginal over {self.B} x {self.K} (target, reference) pairs"
        return r if self.why is None else f"{r}: {self.why}"

    def _mean(self, a: np.ndarray) -> np.ndarray:
        """The mean over each target's K references of a per-pair answer (B K, ...)."""
        a = np.asarray(a)
        return a.reshape((self.B, self.K) + a.shape[1:]).mean(axis=1)

    # -- the game ------------------------------------------------------------------------------
    def differing(self) -> np.ndarray:
        """(B, m) bool: a unit is in D_b when x_b differs from one of its references there."""
        if self._diff is None:
            self._diff = self.inner.differing().reshape(self.B, self.K, self.m).any(axis=1)
        return self._diff.copy()

    def _values(self, pairs, keep, clock):
        pairs = np.asarray(pairs, dtype=np.int64)
        K = self.K
        rows = (pairs[:, None] * K + np.arange(K)).ravel()
        vals = self.inner._values(rows, np.repeat(np.asarray(keep, dtype=np.bool_), K, axis=0),
                                  clock)
        return vals.reshape(len(pairs), K).mean(axis=1)

    def v_all(self) -> np.ndarray:
        return self._mean(self.inner.v_all())

    def v_empty(self) -> np.ndarray:
        return self._mean(self.inner.v_empty())

    def subset(self, lo: int, hi: int) -> MarginalPairsGame:
        K = self.K
        return MarginalPairsGame(self.inner.subset(lo * K, hi * K), self.X[lo:hi],
                                 self.R[lo:hi], offset=self.offset + lo, why=self.why)

    def params(self) -> dict[str, Any]:
        return {"name": "marginal", "revision": 1, "engine": "trees", "route": "pairs",
                "ensemble_sha256": ensemble_sha256(self.ensemble),
                "references_sha256": sha256_arrays(np.ascontiguousarray(self.R)),
                "references_per_target": self.K}

    def __repr__(self) -> str:
        return (f"MarginalPairsGame(B={self.B}, n={self.n}, m={self.m}, K={self.K}, "
                f"trees={self.ensemble.n_trees}"
                + ("" if self.offset == 0 else f", offset={self.offset}") + ")")

    # -- closed forms: means over the references --------------------------------------------------
    def _orders3(self, orders) -> tuple[np.ndarray, bool]:
        return orders_3d(orders, self.B, self.m)

    def _per_pair(self, orders: np.ndarray) -> np.ndarray:
        """Each target's orderings repeated for its K pairs."""
        return np.repeat(orders, self.K, axis=0)

    def curves(self, orders: np.ndarray, *, modes: tuple = ("insertion", "deletion"),
               positions: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Insertion / deletion curves (B, Ko, S) of orderings ``orders`` (B, Ko, m) (checked
        permutations) at ``positions`` (default every step 0..m): the mean over the references
        of the pairs' curves, targets taken in blocks that hold at most 2^24 pair points."""
        orders = np.ascontiguousarray(orders, dtype=np.int64)
        pos = (np.arange(self.m + 1, dtype=np.int64) if positions is None
               else np.ascontiguousarray(positions, dtype=np.int64))
        B, Ko = orders.shape[:2]
        per = self.K * Ko * pos.shape[0]
        step = max(1, _MAX_CURVE_POINTS // max(per, 1))
        if step >= B:
            c = self.inner.curves(self._per_pair(orders), modes=modes, positions=pos)
            return {mo: self._mean(c[mo]) for mo in modes}
        out = {mo: np.empty((B, Ko, pos.shape[0])) for mo in modes}
        for lo in range(0, B, step):
            hi = min(B, lo + step)
            sub = self.subset(lo, hi)
            c = sub.inner.curves(sub._per_pair(orders[lo:hi]), modes=modes, positions=pos)
            for mo in modes:
                out[mo][lo:hi] = sub._mean(c[mo])
        return out

    def shapley(self) -> np.ndarray:
        """Exact Shapley values (B, m) of each target's marginal game: the mean of its pairs'
        baseline Shapley values (interventional TreeSHAP with the target's references)."""
        return self._mean(self.inner.shapley())

    def banzhaf(self) -> np.ndarray:
        """Exact Banzhaf values (B, m): the mean of the pairs'."""
        return self._mean(self.inner.banzhaf())

    def auc(self, orders: ArrayLike, *, mode: str = "insertion", normalize: bool = False
            ) -> np.ndarray:
        """AUC (insertion) or AUC' (deletion) of each ordering ((m,), (B, m) or (B, Ko, m));
        (B,) or (B, Ko): as :meth:`insdel.trees.game.TreeGame.auc`."""
        o, squeeze = self._orders3(orders)
        a = self._mean(self.inner.auc(self._per_pair(o), mode=mode, normalize=normalize))
        return a[:, 0] if squeeze else a

    def abc(self, orders: ArrayLike, *, mode: str = "insertion", normalize: bool = True
            ) -> np.ndarray:
        """ABC (insertion) or ABC' (deletion) of each ordering, as
        :meth:`insdel.trees.game.TreeGame.abc`."""
        o, squeeze = self._orders3(orders)
        a = self._mean(self.inner.abc(self._per_pair(o), mode=mode, normalize=normalize))
        return a[:, 0] if squeeze else a

    def abc_total(self, orders: ArrayLike, *, normalize: bool = True) -> np.ndarray:
        """ABC + ABC' of each ordering (``AUC - AUC'``)."""
        o, squeeze = self._orders3(orders)
        a = self._mean(self.inner.abc_total(self._per_pair(o), normalize=normalize))
        return a[:, 0] if squeeze else a

    def expected_auc(self, *, mode: str = "insertion", normalize: bool = False) -> np.ndarray:
        """E[AUC] (= E[AUC']) over uniformly random orderings of the m units (B,)."""
        return self._mean(self.inner.expected_auc(mode=mode, normalize=normalize))

    def expected_abc(self, *, mode: str = "insertion", normalize: bool = True) -> np.ndarray:
        """E[ABC] (insertion) or E[ABC'] (deletion) over uniformly random orderings (B,)."""
        return self._mean(self.inner.expected_abc(mode=mode, normalize=normalize))

    def effects(self, *, max_d: int | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The anchored decomposition's effects of each target's marginal game over the subsets
        of D_b (the union of its pairs' D): the mean of the pairs' effects, each placed at its
        subset of D_b (ragged as :meth:`insdel.game.Game.effects`).

        Raises
        ------
        ValueError
            A target with |D_b| > ``max_d`` (default the game's): its 2^|D_b| entries are
            refused, naming the target.
        """
        max_d = self.max_d if max_d is None else check_positive_int(max_d, "max_d")
        diff = self.differing()
        dsz = diff.sum(axis=1).astype(np.int64)
        if dsz.size and int(dsz.max()) > max_d:
            b = int(np.argmax(dsz))
            raise ValueError(f"effects: target {b} has |D| = {int(dsz[b])} units where it "
                             f"differs from one of its references, more than max_d = {max_d} "
                             f"(2^{int(dsz[b])} effects); raise max_d.")
        Dflat = np.nonzero(diff)[1].astype(np.int64)
        doff = np.zeros(self.B + 1, dtype=np.int64)
        np.cumsum(dsz, out=doff[1:])
        pd, pD, po, pdelta = self.inner.effects(max_d=max_d)
        poff = np.zeros(pd.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.left_shift(np.int64(1), pd), out=poff[1:])
        off = np.zeros(self.B + 1, dtype=np.int64)
        np.cumsum(np.left_shift(np.int64(1), dsz), out=off[1:])
        delta = np.zeros(int(off[-1]))
        _embed(self.K, pd, pD, po, poff, np.asarray(pdelta, dtype=np.float64), dsz, Dflat, doff,
               off, delta)
        return dsz, Dflat, doff, delta / self.K

    def best_order(self, *, mode: str = "insertion", normalize: bool = True,
                   max_d: int | None = None) -> BestOrder:
        """The ordering with the largest ABC (insertion) or ABC' (deletion) of each target's
        marginal game, exactly (the decomposition's dynamic programming on :meth:`effects`).

        Not a mean over the references (the best order of a mean is not the mean of the best
        orders): every target needs |D_b| <= ``max_d``; above it the error names the target.
        """
        check_mode(mode)
        normalize = check_bool(normalize, "normalize")
        ins = mode == "insertion"
        try:
            dsz, Dflat, doff, delta = self.effects(max_d=max_d)
        except ValueError as err:
            raise ValueError(f"best_order of the marginal tree game over (target, reference) "
                             f"pairs is exact only: {err}") from None
        m, B = self.m, self.B
        vals = np.array(delta)
        off = np.zeros(B + 1, dtype=np.int64)
        np.cumsum(np.left_shift(np.int64(1), dsz), out=off[1:])
        DK.zeta_ragged(vals, off, dsz)
        best = np.empty(B)
        order = np.empty((B, m), dtype=np.int64)
        DK.best_paths_ragged(vals, off, dsz, Dflat, doff, m, ins, best, order)
        aul = (m + 1) / 2.0 * (self.v_empty() + self.v_all())
        abc = best - aul if ins else aul - best
        if normalize:
            abc = abc / m
        return BestOrder(order, abc, abc.copy(), np.ones(B, dtype=bool), mode, normalize)


@nb.njit(parallel=True, cache=True)
def _embed(K, pd, pD, po, poff, pdelta, dsz, Dflat, doff, off, out):  # pragma: no cover
    """``out[off[b] + w] += pdelta[poff[p] + s]`` for every pair p = b K + k and subset s of
    D_p, w the same units as bits of D_b (D_p ⊆ D_b, both increasing)."""
    B = dsz.shape[0]
    for b in nb.prange(B):
        for k in range(K):
            p = b * K + k
            d = pd[p]
            pos = np.empty(d, dtype=np.int64)
            t = 0
            for i in range(d):
                u = pD[po[p] + i]
                while Dflat[doff[b] + t] != u:
                    t += 1
                pos[i] = t
            for s in range(np.int64(1) << d):
                w = np.int64(0)
                for i in range(d):
                    if (s >> i) & 1:
                        w |= np.int64(1) << pos[i]
                out[off[b] + w] += pdelta[poff[p] + s]
