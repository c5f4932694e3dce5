"""Removals read off a tree ensemble's structure: ``path_dependent`` (the trees' own
cover-weighted removal, what ``shap.TreeExplainer(model)`` explains without a background).

Such a removal does not write model rows: its game is computed exactly from the trees
(:mod:`insdel.trees.path_dependent`), and :func:`insdel.game.as_game` asks the removal for it
(:meth:`PathDependent.tree_game`). Used with a model that is not a tree ensemble, it says so.
"""

from __future__ import annotations

import numpy as np

from .base import GameRemoval

__all__ = ["PathDependent", "as_ensemble", "NoTreeGame", "tree_game_of", "is_ensemble",
           "ENGINES"]

#: the engines a game may be built with: the trees' closed forms where they apply (``auto``),
#: only those (``tree``), or the model's values on hybrid rows (``black_box``)
ENGINES = ("auto", "tree", "black_box")


class NoTreeGame(ValueError):
    """The model or the removal has no exact tree game (the message says which and why)."""


def is_ensemble(f) -> bool:
    """Whether ``f`` is a tree ensemble insdel reads (:func:`insdel.trees.recognise`, or an
    :class:`insdel.trees.TreeEnsemble`): cheap, imports no boosting library."""
    from ..adapter import _is_tree_ensemble

    return _is_tree_ensemble(_unwrap(f))


def _unwrap(f):
    """The estimator an :class:`insdel.adapter.Model` calls (``as_model(estimator)``), else f."""
    from ..adapter import Model

    return f.estimator if isinstance(f, Model) and f.estimator is not None else f


def _model_name(f) -> str:
    return f"{type(f).__module__.split('.')[0]}.{type(f).__name__}"


def tree_game_of(f, removal, X, R, *, groups=None, feature_names=None, offset: int = 0):
    """The exact tree game of the model ``f`` under ``removal`` on the pairs (X, R).

    ``baseline`` gives :class:`insdel.trees.TreeGame`; ``marginal`` with references shared by
    every target (``background=`` with ``how="all"``, or R (B, K, n) the same for every target)
    the marginal tree game; ``path_dependent`` its own game.

    Raises
    ------
    NoTreeGame
        ``f`` is not a tree ensemble insdel reads (or the reader refuses it: the reason), or the
        removal has no tree game (another removal, per-target marginal references, paths with
        more distinct features than the marginal tables take); the message names the model and
        the removal.
    """
    from .reference import Baseline, Marginal

    where = f"removal {removal.name!r} on a {_model_name(f)}"
    if not is_ensemble(f):
        raise NoTreeGame(f"{where}: the model is not a tree ensemble insdel reads "
                         "(insdel.trees.recognise: scikit-learn trees, forests and boosting, "
                         "XGBoost, LightGBM, CatBoost)")
    kind = type(removal)
    if kind not in (Baseline, Marginal, PathDependent):
        raise NoTreeGame(f"{where}: removal {removal.name!r} has no tree game (the trees' "
                         "closed forms are those of baseline, marginal and path_dependent)")
    import numpy as np

    from ..trees import TreeEnsemble, UnsupportedModelError, read

    f = _unwrap(f)
    try:
        ens = f if isinstance(f, TreeEnsemble) else read(f)
    except UnsupportedModelError as err:
        raise NoTreeGame(f"{where}: {err}") from err
    if kind is PathDependent:
        return removal.tree_game(ens, X, groups=groups, feature_names=feature_names,
                                 offset=offset)
    if kind is Baseline:
        from ..trees.game import tree_game

        game = tree_game(ens, X, R, groups=groups, feature_names=feature_names)
        game.offset = int(offset)
        return game
    if removal.background is not None:
        if removal.how != "all":
            raise NoTreeGame(f"{where}: the marginal tree game takes references shared by every "
                             f"target (how='all'); how={removal.how!r} draws them per target")
        bg = removal.background
    else:
        Ra = None if R is None else np.asarray(R, dtype=np.float64)
        if Ra is None or Ra.ndim != 3:
            raise NoTreeGame(f"{where}: marginal without background= reads R of shape (B, K, n); "
                             f"got {None if Ra is None else Ra.shape}")
        if not np.array_equal(Ra, np.broadcast_to(Ra[:1], Ra.shape), equal_nan=True):
            raise NoTreeGame(f"{where}: the marginal tree game takes references shared by every "
                             "target; these targets have different references")
        bg = Ra[0]
    from ..trees.marginal import marginal_game

    try:
        game = marginal_game(ens, X, bg, groups=groups, feature_names=feature_names)
    except ValueError as err:
        if "distinct units" not in str(err):
            raise
        raise NoTreeGame(f"{where}: {err}") from err
    game.offset = int(offset)
    return game


def as_ensemble(f, what: str):
    """``f`` as an :class:`insdel.trees.TreeEnsemble`: itself, or what the library parsers
    (:func:`insdel.trees.read`) read from a fitted model (an :class:`insdel.adapter.Model`'s
    estimator); a clear error otherwise."""
    from ..trees import TreeEnsemble, read

    f = _unwrap(f)
    if isinstance(f, TreeEnsemble):
        return f
    if f is not None:
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
        if f is not None and not is_ensemble(f):
            raise TypeError(f"removal 'path_dependent' applies only to tree ensembles; the model "
                            f"{_model_name(f)} is not one insdel reads (insdel.trees.recognise)."
                            " Use a removal that works with any model (baseline, marginal, ...).")
        ens = as_ensemble(f, "removal 'path_dependent'")
        game = path_dependent_game(ens, X, groups=groups, feature_names=feature_names)
        game.offset = int(offset)
        return game
