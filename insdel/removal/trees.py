"""Removals read off a tree ensemble's structure: ``path_dependent`` (the trees' own
cover-weighted removal, what ``shap.TreeExplainer(model)`` explains without a background).

Such a removal does not write model rows: its game is computed exactly from the trees
(:mod:`insdel.trees.path_dependent`), and :func:`insdel.game.as_game` asks the removal for it
(:meth:`PathDependent.tree_game`). Used with a model that is not a tree ensemble, it says so.
"""

from __future__ import annotations

import numpy as np

from .base import GameRemoval

__all__ = ["PathDependent", "as_ensemble"]


def as_ensemble(f, what: str):
    """``f`` as an :class:`insdel.trees.TreeEnsemble`: itself, or what the library parsers
    (``insdel.trees.read``, where present) read from a fitted model; a clear error otherwise."""
    from ..trees import TreeEnsemble

    if isinstance(f, TreeEnsemble):
        return f
    import insdel.trees as trees

    read = getattr(trees, "read", None)
    if callable(read) and f is not None:
        try:
            return read(f)
        except (TypeError, ValueError) as err:
            raise TypeError(f"{what} applies only to tree ensembles; the model "
                            f"{type(f).__name__} is not one insdel reads: {err}") from err
    raise TypeError(f"{what} applies only to tree ensembles (an insdel.trees.TreeEnsemble); got "
                    f"{type(f).__name__}. Use a removal that works with any model (baseline, "
                    "marginal, ...).")


class PathDependent(GameRemoval):
    """The trees' path-dependent removal: a removed feature's splits send the row both ways,
    each child weighted by its training cover (``cover[child] / cover[node]``).

    Only for tree ensembles; ``v(u)``, the curves, the Shapley values and E[ABC] are exact at
    any n (:class:`insdel.trees.path_dependent.PathDependentGame`). Every feature a split reads
    is removable; no reference is read (R is ignored).
    """

    name = "path_dependent"

    def values(self, X: np.ndarray, keep: np.ndarray, targets: np.ndarray) -> np.ndarray:
        raise TypeError("removal 'path_dependent' is read off a tree ensemble: build its game "
                        "with insdel.game.as_game(ensemble, X, removal='path_dependent')")

    def tree_game(self, f, X, *, groups=None, feature_names=None, offset: int = 0,
                  rows_only: bool = False):
        """The exact game of the tree ensemble ``f`` on the targets X (checked)."""
        from ..trees.path_dependent import path_dependent_game

        if rows_only:
            raise ValueError("removal 'path_dependent' writes no rows (its values are read off "
                             "the trees); it has nothing to impute for ROAD or ROAR")
        ens = as_ensemble(f, "removal 'path_dependent'")
        game = path_dependent_game(ens, X, groups=groups, feature_names=feature_names)
        game.offset = int(offset)
        return game
