"""A block of per-pair scores made into independent units: the input check every verdict shares.

A block is a (P, K) matrix of per-pair scores of K methods (higher is better) on the same P
pairs. Pairs of one unit (``clusters``: a pair and its mirror, or the pairs of one cluster, as
:func:`insdel._stats.unit_ids` numbers them) are not independent; every verdict works on the unit
means, (G, K), so its tests and intervals are over the G independent units.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._stats import unit_ids
from .._validation import as_float_array, repeated

__all__ = ["Block", "as_block", "unit_means"]


def unit_means(scores: ArrayLike, clusters: ArrayLike | None = None) -> np.ndarray:
    """Each unit's mean score, (G, K), units in order of first appearance (``unit_ids``).

    Parameters
    ----------
    scores : array_like (P,) or (P, K)
        Per-pair scores.
    clusters : array_like (P,), optional
        Unit id of each pair; None: every pair is a unit (the scores are returned as they are).
    """
    v = np.asarray(scores, dtype=np.float64)
    if clusters is None:
        return v.copy()
    u = unit_ids(clusters, v.shape[0])
    G = int(u.max()) + 1 if v.shape[0] else 0
    sums = np.zeros((G, *v.shape[1:]))
    np.add.at(sums, u, v)
    size = np.bincount(u, minlength=G).astype(np.float64)
    return sums / size.reshape(-1, *([1] * (v.ndim - 1)))


@dataclass(frozen=True)
class Block:
    """Checked unit means of a block: ``Y`` (G, K), the ``methods``' names, ``n_pairs`` (P)."""

    Y: np.ndarray
    methods: list
    n_pairs: int

    @property
    def n_units(self) -> int:
        return int(self.Y.shape[0])

    def index(self, name: str, arg: str = "method") -> int:
        """Column of method ``name``; the error names the argument and the known methods."""
        if name not in self.methods:
            raise ValueError(f"{arg}: unknown method {name!r}; the block holds {self.methods}.")
        return self.methods.index(name)


def as_block(scores, methods: Sequence[str] | None = None, *, clusters=None,
             higher_is_better: bool = True, min_methods: int = 2) -> Block:
    """Check a block of per-pair scores and average it over units.

    ``scores`` is a (P, K) array or a pandas DataFrame (its columns are the methods unless
    ``methods`` is given). Raises ``ValueError`` naming the problem: not 2-D, NaN or infinite
    scores (the row and method named), repeated or missing method names, fewer than
    ``min_methods`` methods, ``clusters`` of the wrong length, fewer than 2 units.
    """
    if methods is None:
        cols = getattr(scores, "columns", None)
        methods = [str(c) for c in cols] if cols is not None else None
    V = as_float_array("scores", scores, ndim=(2,))
    P, K = V.shape
    if methods is None:
        methods = [f"m{j}" for j in range(K)]
    methods = [str(m) for m in methods]
    if len(methods) != K:
        raise ValueError(f"methods: {len(methods)} names for the {K} columns of scores.")
    if repeated(methods):
        raise ValueError(f"methods: repeated names {repeated(methods)}.")
    if K < min_methods:
        raise ValueError(f"scores: {K} method(s); a comparison needs at least {min_methods}.")
    if clusters is not None:
        c = np.asarray(clusters)
        if c.ndim != 1 or c.shape[0] != P:
            raise ValueError(f"clusters must hold one unit id per pair, shape ({P},); got shape "
                             f"{c.shape}.")
    Y = unit_means(V, clusters)
    if Y.shape[0] < 2:
        raise ValueError(f"scores: {Y.shape[0]} independent unit(s) ({P} pairs); a comparison "
                         "needs at least 2 units (a pair and its mirror are one unit).")
    return Block(Y=Y if higher_is_better else -Y, methods=methods, n_pairs=P)
