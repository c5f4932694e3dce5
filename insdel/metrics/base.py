"""The shared base of every metric: one context per (model, pairs), one hybrid cache, one class.

Every metric in :mod:`insdel.metrics` scores attributions ``A`` of B pairs (x, r) on a model f,
``(f, X, R, A, *, groups=None, ...)`` like the rest of insdel. Most of the field's faithfulness
metrics only ever evaluate f at **hybrid points** (some units from x, the rest from r): a deletion
or insertion curve, the top-k features removed or kept, a random subset removed, one feature
removed at a time. Where a peer package replaces features by a constant ("black", zero, the mean),
insdel replaces them by the pair's reference r, so the policy chooses the baseline (Hama, Mase &
Owen, §4); with ``R = 0`` the two coincide, which is how the metrics are checked against the peers'
own code.

:class:`MetricContext` holds the game (:func:`insdel.game.as_game`: the pairs, the removal and the
groups, checked once) and a :class:`HybridCache` on it: a metric asks for the values of
boolean masks (B, K, m) (True: the unit comes from x) and each distinct hybrid of a pair is
evaluated once, for every metric and every method sharing the context (the same dedup rule as the
curve engine: a set is first reduced to its canonical form ``S ∩ D`` with ``D`` the units where x
and r differ). Points that are not hybrids (Gaussian perturbations, imputations) go through
:meth:`MetricContext.predict`.
"""

from __future__ import annotations

import zlib
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import rankdata

from .._registry import check_options
from .._validation import (
    align_attributions,
    as_float_array,
    check_seed,
    feature_names_of,
)
from ..adapter import ModelLike, as_model
from ..game import Game, as_game, one_output
from ..groups import group_attributions
from ..hybrids import masks_to_words, n_words
from ..ordering import check_ordering, sort_orderings
from ..tracing import orderings

__all__ = ["HybridCache", "MetricContext", "Metric", "top_units", "unit_positions", "rank_of",
           "pearson_rows", "spearman_rows"]


class HybridCache:
    """Values of hybrid points of B pairs, each distinct canonical set evaluated once.

    Parameters
    ----------
    game : insdel.game.Game
        The pairs' value functions (:func:`insdel.game.as_game`): a distinct canonical set of a
        pair is one request to :meth:`insdel.game.Game.values` (a reference game writes the
        hybrid rows, a sampled removal's game averages its M rows); D is
        :meth:`insdel.game.Game.differing`, over the game's units (its groups, or the columns).

    The spelling ``HybridCache(model, X, R, groups, removal=None)`` is deprecated: it builds the
    game with :func:`insdel.game.as_game`.
    """

    def __init__(self, game, *args, **kwargs):
        from ..game import Game, as_game

        if not isinstance(game, Game):
            import warnings

            warnings.warn("HybridCache(model, X, R, groups, removal=None) is deprecated: give "
                          "the game, HybridCache(insdel.game.as_game(model, X, R, "
                          "removal=removal, groups=groups)).", DeprecationWarning, stacklevel=2)
            names = ("X", "R", "groups", "removal")
            opts = dict(zip(names, args, strict=False)) | kwargs
            game = as_game(game, opts.get("X"), opts.get("R"), removal=opts.get("removal"),
                           groups=opts.get("groups"))
        elif args or kwargs:
            raise TypeError("HybridCache(game) takes the game only: it holds the pairs, the "
                            "removal and the groups.")
        self.game = game
        self.model = game.model
        self.groups = game.groups
        self.diff = game.differing()
        self.m = game.m
        self.W = n_words(self.m)
        self._keys = np.empty((0, self.W + 1), dtype=np.uint64)
        self._vals = np.empty(0)
        self.n_requested = 0
        self.n_removing = 0

    @property
    def n_unique(self) -> int:
        """Distinct hybrid points evaluated so far."""
        return int(self._vals.shape[0])

    def _void(self, keys: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(keys).view(f"V{8 * (self.W + 1)}").ravel()

    def values(self, masks: ArrayLike, *, pairs: np.ndarray | None = None) -> np.ndarray:
        """f at the hybrids of ``masks`` (B, K, m) or (B, m): unit u from x where True.

        ``pairs`` (B,) selects which pairs the first axis refers to (default all, in order).
        Returns float64 (B, K) or (B,).
        """
        M = np.asarray(masks, dtype=bool)
        squeeze = M.ndim == 2
        if squeeze:
            M = M[:, None, :]
        if M.ndim != 3 or M.shape[2] != self.m:
            raise ValueError(f"masks must have shape (B, K, m) with m = {self.m}; got {M.shape}.")
        pairs = np.arange(self.game.B) if pairs is None else np.asarray(pairs, np.int64)
        if M.shape[0] != pairs.shape[0]:
            raise ValueError(f"masks cover {M.shape[0]} pairs; expected {pairs.shape[0]}.")
        Bq, K, _ = M.shape
        canon = M & self.diff[pairs][:, None, :]
        # coalitions that remove a unit of D: the ones whose value the removal decides
        self.n_removing += int(np.count_nonzero(canon.sum(-1) < self.diff[pairs].sum(-1)[:, None]))
        keys = np.empty((Bq * K, self.W + 1), dtype=np.uint64)
        keys[:, 0] = np.repeat(pairs.astype(np.uint64), K)
        keys[:, 1:] = masks_to_words(canon).reshape(Bq * K, self.W)
        self.n_requested += Bq * K
        v = self._void(keys)
        uv, first, inv = np.unique(v, return_index=True, return_inverse=True)
        ukeys = keys[first]
        known = self._void(self._keys)
        pos = np.searchsorted(known, uv)
        found = pos < known.shape[0]
        found[found] = known[pos[found]] == uv[found]
        uvals = np.empty(uv.shape[0])
        uvals[found] = self._vals[pos[found]]
        new = ~found
        if new.any():
            nk = ukeys[new]
            nv = self._evaluate(nk)
            uvals[new] = nv
            # both sides are sorted (np.unique): insert in place, O(N), keeps the order
            at = np.searchsorted(known, uv[new])
            self._keys = np.insert(self._keys, at, nk, axis=0)
            self._vals = np.insert(self._vals, at, nv)
        out = uvals[inv.reshape(-1)].reshape(Bq, K)
        return out[:, 0] if squeeze else out

    def _evaluate(self, keys: np.ndarray) -> np.ndarray:
        """The game's values of distinct keys (pair, set words), in the keys' order."""
        pair = keys[:, 0].astype(np.int64)
        words = np.ascontiguousarray(keys[:, 1:])
        bits = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")
        return self.game.values(pair, bits[:, :self.m].astype(bool), unique=True)


class MetricContext:
    """The pairs a set of metrics is computed on, with their shared hybrid cache.

    Parameters
    ----------
    f : model or insdel.game.Game
        Anything :func:`insdel.as_model` accepts (a scalar output: regression, or a class's
        probability selected by the adapter), or a game (:func:`insdel.game.as_game`) that holds
        the pairs, the removal and the groups (then X and R are None).
    X, R : array_like (B, n)
        Targets and references (a 1-D R is one reference for all targets), checked once by
        :func:`insdel.game.as_game`.
    groups : optional
        Units that move together (:mod:`insdel.groups`); metrics rank and perturb units.
    seed : int, default 0
        Seed of the metrics' random draws; each metric draws from its own stream
        (:meth:`rng`), so results do not depend on which other metrics run.
    batch_size : int, optional
        Rows per model call.
    removal : str or insdel.removal.Removal, optional
        What a removed unit becomes (:mod:`insdel.removal`): every metric that reads hybrids
        (:meth:`values`, :meth:`removed`) reads the removal's value function instead. Metrics
        that perturb points themselves (:meth:`predict`: Gaussian noise, ROAD's imputation, the
        explainer's re-runs) read R (:meth:`reference`), so under a removal without one
        reference per target they refuse.
    engine : {"auto", "tree", "black_box"}, default "auto"
        Which engine answers the hybrids' values (:func:`insdel.game.as_game`): a recognised
        tree ensemble's exact closed forms (``auto``, ``tree``) or the model's values on rows.
    """

    def __init__(self, f: ModelLike | Game, X: ArrayLike | None, R: ArrayLike | None, *,
                 groups=None, seed: int = 0, batch_size: int | None = None, removal=None,
                 engine: str = "auto"):
        self.labels = feature_names_of(X)  # a DataFrame's columns: attributions match them by name
        self.game = game = one_output(as_game(f, X, R, removal=removal, groups=groups,
                                              batch_size=batch_size, engine=engine),
                                      "the metrics' cache")
        # a tree game reads no model row; the metrics that perturb points predict with f
        self.model = game.model if game.model is not None or isinstance(f, Game) \
            else as_model(f, batch_size=batch_size)
        self.X = game.X
        self.B, self.n = self.X.shape
        self.groups = game.groups
        self.m = game.m
        self.seed = check_seed(seed)
        self.cache = HybridCache(game)
        self._fx = self._fr = None

    @property
    def removal(self):
        """The game's removal; None for the paper's baseline (R)."""
        return None if self.game.name == "baseline" else getattr(self.game, "removal", None)

    @property
    def R(self) -> np.ndarray | None:
        """(B, n): the one reference of each target, where the game has one (else None)."""
        refs = self.game.references
        return None if refs is None or refs.shape[1] != 1 else refs[:, 0, :]

    @property
    def diff(self) -> np.ndarray:
        """(B, m) bool: the units where x and r differ (the pair's subspace D)."""
        return self.cache.diff

    @property
    def fx(self) -> np.ndarray:
        """f(x), (B,)."""
        if self._fx is None:
            self._fx = self.cache.values(np.ones((self.B, self.m), bool))
        return self._fx

    @property
    def fr(self) -> np.ndarray:
        """f(r), (B,)."""
        if self._fr is None:
            self._fr = self.cache.values(np.zeros((self.B, self.m), bool))
        return self._fr

    def values(self, masks: ArrayLike) -> np.ndarray:
        """f at hybrids (True: unit from x), (B, K, m) -> (B, K); each distinct one evaluated once."""
        return self.cache.values(masks)

    def removed(self, masks: ArrayLike) -> np.ndarray:
        """f with the units in ``masks`` replaced by the reference (the rest from x)."""
        return self.cache.values(~np.asarray(masks, dtype=bool))

    def reference(self, metric: str) -> np.ndarray:
        """R (B, n) for a metric that builds its own points from the references; refused under
        a removal that has no single reference per target."""
        R = self.R
        if R is None:
            raise ValueError(f"metric {metric!r} builds its own points from the reference R; "
                             f"under removal {self.game.name!r} there is no single reference "
                             "per target. Use it with the baseline removal.")
        return R

    def predict(self, rows: ArrayLike) -> np.ndarray:
        """f at arbitrary points (..., n) (not hybrids: no deduplication)."""
        rows = np.asarray(rows, dtype=np.float64)
        flat = rows.reshape(-1, self.n)
        return np.asarray(self.model(np.ascontiguousarray(flat, dtype=self.model.dtype)),
                          dtype=np.float64).reshape(rows.shape[:-1])

    def expand(self, unit_values: np.ndarray) -> np.ndarray:
        """Column-level array (..., n) from a unit-level one (..., m)."""
        return unit_values if self.groups is None else self.groups.expand(unit_values)

    def unit_attributions(self, A: ArrayLike, *, name: str = "A") -> np.ndarray:
        """Attributions per unit (B, m) (summed over a group's columns); labelled attributions (a
        DataFrame) are matched to the features, or the groups, by name."""
        A = align_attributions(name, A, self.labels, None if self.groups is None
                               or self.labels is None else list(self.groups.names))
        A = as_float_array(name, A, ndim=(2,))
        if A.shape[0] != self.B:
            raise ValueError(f"{name} must have one row per pair (B = {self.B}); got shape "
                             f"{A.shape}.")
        if self.groups is None and A.shape[1] != self.n:
            raise ValueError(f"{name} must have shape (B, n) = {(self.B, self.n)}; got {A.shape}.")
        return group_attributions(A, self.groups, name=name)

    def rng(self, *keys: Any) -> np.random.Generator:
        """A random stream for ``keys`` (e.g. the metric's name and the method's), from the seed."""
        words = [self.seed] + [zlib.crc32(str(k).encode()) for k in keys]
        return np.random.default_rng(words)

    @property
    def stats(self) -> dict:
        """Coalitions requested and distinct ones evaluated."""
        return {"requested": self.cache.n_requested, "evaluated": self.cache.n_unique}


def rank_of(A: np.ndarray, *, order: str = "absolute") -> np.ndarray:
    """Unit orderings (B, m), most important first, ties by index (stable).

    ``"absolute"``: decreasing |a| (MoRF); ``"signed"``: decreasing a (the paper's order);
    ``"ascending"``: increasing a (LeRF); ``"least"``: increasing |a|; their aliases
    (:mod:`insdel.ordering`).
    """
    order = check_ordering(order, allowed=("absolute", "signed", "ascending", "least"),
                           ranking=None)
    if order == "least":  # LeRF by magnitude: only the metrics use it, the curves do not
        return sort_orderings(A, order)
    return orderings(A, order=order)  # the checked attributions' orderings


def unit_positions(orders: np.ndarray) -> np.ndarray:
    """Position (0-based) of each unit in its ordering, (B, m): the inverse permutations."""
    orders = np.asarray(orders)
    B, m = orders.shape
    pos = np.empty_like(orders)
    np.put_along_axis(pos, orders, np.broadcast_to(np.arange(m), (B, m)), axis=1)
    return pos


def top_units(orders: np.ndarray, k: ArrayLike) -> np.ndarray:
    """Masks (B, K, m): True for the first ``k[i]`` units of each ordering (one K per k)."""
    k = np.atleast_1d(np.asarray(k, dtype=np.int64))
    return unit_positions(orders)[:, None, :] < k[None, :, None]


def pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson correlation of each row of ``a`` with the same row of ``b``; NaN where either row is
    constant (or has fewer than two values)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    ac = a - a.mean(axis=-1, keepdims=True)
    bc = b - b.mean(axis=-1, keepdims=True)
    den = np.sqrt((ac * ac).sum(-1) * (bc * bc).sum(-1))
    const = (np.ptp(a, axis=-1) == 0) | (np.ptp(b, axis=-1) == 0) | (a.shape[-1] < 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (ac * bc).sum(-1) / den
    r = np.clip(r, -1.0, 1.0)
    return np.where(const | ~np.isfinite(den) | (den == 0), np.nan, r)


def spearman_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman correlation row by row (Pearson of average ranks); NaN where a row is constant."""
    return pearson_rows(rankdata(a, axis=-1), rankdata(b, axis=-1))


class Metric(ABC):
    """Base class of every metric (one subclass per metric, options in ``__init__``).

    A metric is configured once (keyword-only options with documented defaults, checked when
    set) and called on pairs: ``metric(f, X, R, A, groups=None)`` returns one score per pair
    (B,). :meth:`compute` does the work on a shared :class:`MetricContext`, so that
    :func:`insdel.metrics.evaluate_metrics` can run many metrics and methods on one cache.

    Class attributes
    ----------------
    name : str
        Registry name.
    family : str
        Where it comes from: ``"insdel"``, ``"quantus"``, ``"beexai"`` or ``"openxai"``.
    source : str
        Paper and equation it implements.
    higher_is_better : bool
        The direction of a good score (for rankings).
    needs_ground_truth : bool
        Ground-truth agreement metrics take ``ground_truth=`` instead of a model.
    """

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""
    source: ClassVar[str] = ""
    higher_is_better: ClassVar[bool] = True
    needs_ground_truth: ClassVar[bool] = False
    needs_explainer: ClassVar[bool] = False

    @abstractmethod
    def compute(self, ctx: MetricContext, A: np.ndarray, **kwargs) -> np.ndarray:
        """Scores (B,) of unit attributions ``A`` (B, m) on the context's pairs."""

    def __call__(self, f: ModelLike, X: ArrayLike, R: ArrayLike, A: ArrayLike, *, groups=None,
                 seed: int = 0, batch_size: int | None = None, removal=None,
                 **kwargs) -> np.ndarray:
        """Score attributions ``A`` (B, n) (or per group (B, m)) of the pairs (X, R) on f.

        Returns
        -------
        ndarray of float64 (B,)
            One score per pair (NaN where the metric is undefined for the pair, e.g. a
            correlation over constant values).
        """
        check_options(f"metric {self.name!r} call", sorted(kwargs),
                      sorted(self.call_arguments()), noun="argument",
                      note="An unused argument is refused; the metric's options are set when it "
                           f"is built (insdel.metrics.build({self.name!r}, ...)).")
        ctx = MetricContext(f, X, R, groups=groups, seed=seed, batch_size=batch_size,
                            removal=removal)
        return self.compute(ctx, ctx.unit_attributions(A), **kwargs)

    def call_arguments(self) -> set[str]:
        """Keyword arguments :meth:`compute` reads (beyond ``ctx`` and ``A``): its named
        keyword-only parameters, and ``method`` (the stream of a method's random draws)."""
        import inspect

        params = inspect.signature(self.compute).parameters.values()
        return {p.name for p in params if p.kind is p.KEYWORD_ONLY} | {"method"}

    def options(self) -> dict:
        """The metric's options as set (for manifests and tables)."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options().items())
        return f"{type(self).__name__}({opts})"


def describe(metric: Metric) -> Mapping[str, Any]:
    """Name, family, source, direction and options of a metric (one row of the catalogue)."""
    return {"metric": metric.name, "family": metric.family, "source": metric.source,
            "higher_is_better": metric.higher_is_better, "options": metric.options()}
