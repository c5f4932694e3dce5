"""What the exact tree games of the removals (path-dependent, marginal) share: the ensemble,
the targets, the units and the leaf paths grouped by unit (:mod:`insdel.trees._paths`)."""

from __future__ import annotations

from math import lgamma

import numpy as np

from .._checkpoint import sha256_arrays
from .._validation import as_float_array, check_mode, check_orders
from ..game import Game
from ..groups import Groups
from ._paths import MAX_SLOTS, LeafPaths, leaf_paths
from .ensemble import TreeEnsemble, check_category_codes

__all__ = ["TreeRemovalGame", "shapley_weights", "prefix_weights", "check_ensemble_rows",
           "ensemble_sha256"]


def shapley_weights(size: int = MAX_SLOTS + 1) -> np.ndarray:
    """``W[d, s] = s! (d - 1 - s)! / d!``: the Shapley weight of a coalition of s of the other
    d - 1 players (0 where s > d - 1)."""
    W = np.zeros((size + 1, size + 1))
    for d in range(1, size + 1):
        for s in range(d):
            W[d, s] = np.exp(lgamma(s + 1) + lgamma(d - s) - lgamma(d + 1))
    return W


def prefix_weights(size: int = MAX_SLOTS + 1) -> np.ndarray:
    """``V[d, s] = s! (d - s)! / (d + 1)!``: the chance that a uniformly random prefix (random
    length 0..m, then a random ordering) holds s given units of d and none of the other d - s
    (the prefix ends where a cut element falls in a random ordering of the d units and the
    cut)."""
    V = np.zeros((size + 1, size + 1))
    for d in range(0, size + 1):
        for s in range(d + 1):
            V[d, s] = np.exp(lgamma(s + 1) + lgamma(d - s + 1) - lgamma(d + 2))
    return V


def ensemble_sha256(ens: TreeEnsemble) -> str:
    """A fingerprint of the ensemble's numbers (what a cached result is keyed by)."""
    return sha256_arrays(ens.feature, ens.threshold, ens.left, ens.right, ens.missing_left,
                         ens.is_categorical, ens.cat_ptr, ens.categories, ens.value, ens.cover,
                         ens.roots, np.array([ens.base, float(ens.strict)]))


def check_ensemble_rows(ens, X, what: str) -> np.ndarray:
    """``X`` (B, n) float64 with the ensemble's width (NaN allowed: the trees' default
    directions read it), category codes in the categorical splits' columns
    (:func:`insdel.trees.ensemble.check_category_codes`)."""
    if not isinstance(ens, TreeEnsemble):
        raise TypeError(f"{what} applies to tree ensembles (insdel.trees.TreeEnsemble); got "
                        f"{type(ens).__name__}")
    X = as_float_array("X", X, ndim=(1, 2), finite=False)
    if X.ndim == 1:
        X = X[None, :]
    if X.shape[1] != ens.n_features or X.shape[0] == 0:
        raise ValueError(f"X must have at least one row and the ensemble's {ens.n_features} "
                         f"columns; got shape {X.shape}")
    if np.isinf(X).any():
        raise ValueError("X has infinite values")
    check_category_codes(ens, "X", X)
    return np.ascontiguousarray(X)


class TreeRemovalGame(Game):
    """An exact game of a tree ensemble under a removal that decides each unit independently
    (trusted: built by the removal's game constructors).

    Subclasses implement the kernels' calls: :meth:`_values`, :meth:`shapley`, :meth:`curves`,
    :meth:`expected_auc`.
    """

    n_draws = 0  # no model row per coalition: the values are read off the trees
    closed_form = frozenset({"curves", "shapley"})
    engine = "tree"  # the closed forms of the trees (insdel.game.Game.engine)

    def __init__(self, ens: TreeEnsemble, X: np.ndarray, groups: Groups | None = None, *,
                 unit_names: list | None = None, offset: int = 0,
                 paths: LeafPaths | None = None):
        self.ensemble = ens
        self.X = X
        self.groups = groups
        self.unit_names = unit_names
        self.offset = offset
        self.unit_of = (np.arange(ens.n_features, dtype=np.int64) if groups is None
                        else np.ascontiguousarray(groups.labels, dtype=np.int64))
        self.paths = leaf_paths(ens, self.unit_of) if paths is None else paths

    # -- what the engines read -----------------------------------------------------------------

    def used_units(self) -> np.ndarray:
        """(m,) bool: the units some split of the ensemble reads."""
        used = np.zeros(self.m, dtype=bool)
        used[self.paths.slot_unit] = True
        return used

    def differing(self) -> np.ndarray:
        return np.broadcast_to(self.used_units(), (self.B, self.m)).copy()

    def _subset_kwargs(self, lo: int, hi: int) -> dict:
        return {"groups": self.groups, "unit_names": self.unit_names,
                "offset": self.offset + lo, "paths": self.paths}

    def expected_abc(self, *, mode: str = "insertion", normalize: bool = True) -> np.ndarray:
        """E[ABC] (B,) of each pair under a uniformly random ordering of its m units.

        ``E[AUC]`` is the same for both modes (the deletion curve of an ordering is the
        insertion curve of its reverse, read backwards), so insertion's
        ``E[ABC] = E[AUC] - (m + 1)/2 (v(∅) + v(all))`` and deletion's is its negative;
        ``normalize`` divides by m (conventions: *Areas*)."""
        mode = check_mode(mode)
        m = self.m
        if getattr(self, "_eauc", None) is None:  # both modes read it
            self._eauc = self.expected_auc() - (m + 1) / 2.0 * (self.v_empty() + self.v_all())
        e = self._eauc
        e = e if mode == "insertion" else -e
        return e / m if normalize else e

    def expected_auc(self) -> np.ndarray:
        """E[AUC] (B,) of the insertion curve (sum of its m + 1 points) under a uniformly random
        ordering."""
        raise NotImplementedError

    def check_orders(self, orders) -> np.ndarray:
        """(B, K, m) int64 permutations of the units."""
        orders = check_orders(orders, self.m, name="orders", B=self.B, check_perm=True)
        return np.ascontiguousarray(orders, dtype=np.int64)

    def ensemble_arrays(self) -> tuple:
        e = self.ensemble
        return (e.feature, e.threshold, e.missing_left, e.is_categorical, e.cat_ptr,
                e.categories, e.strict)

    def path_arrays(self) -> tuple:
        p = self.paths
        return (p.value, p.node_ptr, p.node, p.went_left, p.slot_of, p.slot_ptr, p.slot_unit)
