"""What a removed feature becomes: the value function ``v(u)`` of a pair (conventions: *Removal*).

Every test insdel runs reads one set function per pair, ``v(u)`` for the subsets u of the units
kept from the target x. A *removal* says how ``v`` is computed from the model f:

* :class:`ReferenceRemoval` (``baseline``, ``marginal``): K references ``b_1..b_K`` per target,
  fixed for every coalition; ``v(u) = (1/K) sum_k f(hybrid(x, b_k, u))``. v is linear in the K
  single-reference games, so the engines trace the K pairs (x, b_k) with their exact
  deduplication and average (curves, Möbius terms, Shapley values: all linear in v).
* :class:`GameRemoval`: ``v(u)`` read off the data directly (the observational cohort game),
  no model row per coalition.
* :class:`SampledRemoval` (``conditional_gaussian``, ``conditional_mean``, ``conditional_knn``,
  your own): the removed features are drawn given the kept ones; ``v(u)`` is the mean of f over
  the M rows :meth:`SampledRemoval.sample` returns for ``(x, u)``. The draws of one target are
  the same for every coalition and ordering (common random numbers), seeded by the removal's
  seed and the target's index, so one seed gives the same bytes whatever the chunking.

Writing your own: subclass :class:`SampledRemoval`, set ``name`` and ``n_draws`` and implement
``sample(X, keep, targets)``; nothing else is needed (docs/removal.md shows a scikit-learn imputer
with ``sample_posterior=True`` in a few lines).
"""

from __future__ import annotations

import zlib
from typing import Any, ClassVar

import numpy as np

from .._validation import as_float_array, check_positive_int, check_seed

__all__ = ["Removal", "ReferenceRemoval", "SampledRemoval", "GameRemoval", "MissingDataError",
           "target_rng", "differing_from"]


def target_rng(seed: int, target: int, salt: str) -> np.random.Generator:
    """The random stream of one target (common random numbers: every coalition and ordering of
    the target reads the same draws), from the removal's seed, the target's index and a salt
    naming the removal (two removals with one seed do not share draws)."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), int(target),
                                                         zlib.crc32(salt.encode())]))


class Removal:
    """Base class: what a removed feature becomes.

    Attributes
    ----------
    name : str
        The registry name (``baseline``, ``marginal``, ...).
    uses_reference : bool
        Whether the pairs' references R are read (baseline: R is the reference; marginal without a
        background: R of shape (B, K, n) holds the K references). A removal that does not read R
        accepts ``R=None``.
    revision : int
        Raised when the removal's numbers change: part of every cached result's key.
    """

    name: ClassVar[str] = "removal"
    uses_reference: ClassVar[bool] = False
    revision: ClassVar[int] = 1

    def params(self) -> dict[str, Any]:
        """The options that determine the removal's values, as plain JSON (the cache key and the
        manifest's record). Subclasses add theirs; large arrays enter as their SHA-256."""
        return {"name": self.name, "revision": self.revision}

    def differing(self, X: np.ndarray, R: np.ndarray | None) -> np.ndarray:
        """(B, n) bool: the features whose removal can change v for each target (D)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.params().items()
                         if k not in ("name", "revision"))
        return f"{type(self).__name__}({opts})"


def differing_from(X: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """(B, n) bool: the features where each target differs from at least one of its references
    ``refs`` (B, K, n): D under a :class:`ReferenceRemoval`, for callers that hold the references
    already."""
    return np.any(np.asarray(X)[:, None, :] != refs, axis=1)


class ReferenceRemoval(Removal):
    """K references per target, the same for every coalition:
    ``v(u) = (1/K) sum_k f(hybrid(x, b_k, u))``.

    Subclasses implement :meth:`references`."""

    def references(self, X: np.ndarray, R: np.ndarray | None, *, offset: int = 0
                   ) -> np.ndarray:
        """(B, K, n) float64: the references of every target.

        ``offset`` is the index of X's first row among the run's targets (a chunk of them):
        references drawn per target are seeded by the target's run index ``offset + b``
        (:func:`target_rng`), so a chunk gets the references the whole run gives its targets.
        """
        raise NotImplementedError

    def differing(self, X: np.ndarray, R: np.ndarray | None, *, offset: int = 0) -> np.ndarray:
        """A feature is in D when it differs from at least one reference (``offset``: as in
        :meth:`references`)."""
        return differing_from(X, self.references(X, R, offset=offset))


class SampledRemoval(Removal):
    """The removed features are drawn given the kept ones; ``v(u)`` is the mean of f over
    :attr:`n_draws` rows per coalition.

    Every feature is removable (D = all n features): the exact decomposition needs n <= max_d.

    Subclasses implement :meth:`sample`; a deterministic removal (``conditional_mean``) has
    ``n_draws = 1``.
    """

    n_draws: int = 1
    seed: int = 0
    #: Model rows one request may cost (``coalitions x n_draws``); None: ``values.MAX_ROWS``.
    #: Not a part of ``params()``: it does not change a value, only refuses a costly request.
    max_rows: int | None = None

    def differing(self, X: np.ndarray, R: np.ndarray | None) -> np.ndarray:
        return np.ones(np.shape(X), dtype=bool)

    def sample(self, X: np.ndarray, keep: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """Rows whose mean model value is ``v(u)``.

        Parameters
        ----------
        X : ndarray (N, n)
            The target of each requested coalition.
        keep : ndarray of bool (N, n)
            The coalition u: ``keep[i, j]`` means feature j keeps x's value.
        targets : ndarray of int (N,)
            The target's index among all the run's targets: the draws of one target are the same
            for every coalition (:func:`target_rng`).

        Returns
        -------
        ndarray (N, M, n)
            M = :attr:`n_draws` rows per coalition, each equal to x on the kept features.
        """
        raise NotImplementedError

    def params(self) -> dict[str, Any]:
        return {**super().params(), "n_draws": self.n_draws, "seed": self.seed}


class GameRemoval(Removal):
    """A value function read off the data, not off the model at new points: ``v(u)`` for a
    target is computed directly (the observational cohort game: the mean outcome over the data
    points similar to x on u). No model row is evaluated for a coalition; the model enters only
    through the outcome the game was built with, if at all.

    Subclasses implement :meth:`values`. Every feature is removable (D = all n features), as for
    a sampled removal.
    """

    n_draws: int = 0  # model rows per coalition

    def differing(self, X: np.ndarray, R: np.ndarray | None) -> np.ndarray:
        return np.ones(np.shape(X), dtype=bool)

    def values(self, X: np.ndarray, keep: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """``v(u)`` (N,) of each requested coalition (target ``X[i]``, kept features
        ``keep[i]``; ``targets[i]`` its index among the run's targets)."""
        raise NotImplementedError


def check_draws(n_draws, seed) -> tuple[int, int]:
    """``n_draws`` (M >= 1) and ``seed`` (>= 0) of a sampled removal."""
    return check_positive_int(n_draws, "n_draws"), check_seed(seed)


def check_max_rows(max_rows) -> int | None:
    """``max_rows`` of a sampled removal: None (the default budget) or an int >= 1."""
    return None if max_rows is None else check_positive_int(max_rows, "max_rows")


class MissingDataError(ValueError):
    """A removal fitted on data was built without it (``data=None``)."""


def check_background(name: str, data, n: int | None = None) -> np.ndarray:
    """Training rows (N, n) a removal is fitted on: 2-D, finite, at least one row, n columns when
    the targets' width is known."""
    if data is None:
        raise MissingDataError(f"{name} needs training data: give data= (the training rows, shape "
                         "(N, n)), e.g. dataset.X_train.")
    arr = as_float_array("data", data, ndim=(2,))
    if arr.shape[0] < 1:
        raise ValueError(f"{name}: data= has no rows.")
    if n is not None and arr.shape[1] != n:
        raise ValueError(f"{name}: data= has {arr.shape[1]} columns but the targets have n = {n} "
                         "features (a background with the wrong columns).")
    return np.ascontiguousarray(arr)
