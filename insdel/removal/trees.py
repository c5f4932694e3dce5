"""Removals read off a tree ensemble's structure: ``path_dependent`` (the trees' own
cover-weighted removal, what ``shap.TreeExplainer(model)`` explains without a background).

Such a removal does not write model rows: its game is computed exactly from the trees
(:mod:`insdel.trees.path_dependent`), and :func:`insdel.game.as_game` asks the removal for it
(:meth:`PathDependent.tree_game`). Used with a model that is not a tree ensemble, it says so.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_finite
from .base import GameRemoval

__all__ = ["PathDependent", "as_ensemble", "trees_of", "NoTreeGame", "tree_game_of",
           "is_ensemble", "ENGINES"]

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
    from ..adapter import _is_model_with_trees

    f = f.model if _is_model_with_trees(f) else f
    return f"{type(f).__module__.split('.')[0]}.{type(f).__name__}"


def tree_game_of(f, removal, X, R, *, groups=None, feature_names=None, offset: int = 0):
    """The exact tree game of the model ``f`` under ``removal`` on the pairs (X, R).

    ``baseline`` gives :class:`insdel.trees.TreeGame`; ``marginal`` with references shared by
    every target (``background=`` with ``how="all"``, or R (B, K, n) the same for every target)
    the marginal tree game linear in targets + references
    (:class:`insdel.trees.marginal.MarginalGame`), and with references of each target's own
    (R (B, K, n), or ``how="random"`` / ``"nearest"``) or paths of more distinct units than its
    tables take, the mean of the B K baseline games of the (target, reference) pairs
    (:class:`insdel.trees.marginal_pairs.MarginalPairsGame`: B K walks; ``engine_text`` says
    so); ``path_dependent`` its own game.

    Raises
    ------
    NoTreeGame
        ``f`` is not a tree ensemble insdel reads (or the reader refuses it: the reason), or the
        removal has no tree game (another removal; marginal without references); the message
        names the model and the removal.
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
    from ..trees import UnsupportedModelError

    try:
        ens = trees_of(_unwrap(f))
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
    return _marginal_game(ens, removal, X, R, groups=groups, feature_names=feature_names,
                          offset=offset, where=where)


def _marginal_game(ens, removal, X, R, *, groups, feature_names, offset: int, where: str):
    """The marginal tree game: linear in targets + references when they are shared by every
    target and the paths fit the tables; else over the B x K (target, reference) pairs."""
    from ..trees._tree_game import check_ensemble_rows
    from ..trees.marginal import TooManySlots, marginal_game
    from ..trees.marginal_pairs import marginal_pairs_game

    if removal.background is not None:  # the rows every reference is taken from
        from ..trees.ensemble import check_category_codes

        check_category_codes(ens, "background", removal.background)
    if removal.background is not None and removal.how == "all":
        shared = removal.background
    elif removal.background is not None:  # drawn per target (seeded by its run index) or nearest
        Xa = check_ensemble_rows(ens, X, "the marginal tree game")
        if removal.how == "nearest":  # a distance to a missing value is undefined
            check_finite("X", Xa)
        shared, R = None, removal.references(Xa, None, offset=offset)
    else:
        Ra = None if R is None else np.asarray(R, dtype=np.float64)
        if Ra is None or Ra.ndim != 3:
            raise NoTreeGame(f"{where}: marginal without background= reads R of shape (B, K, n); "
                             f"got {None if Ra is None else Ra.shape}")
        R = Ra
        same = np.array_equal(Ra, np.broadcast_to(Ra[:1], Ra.shape), equal_nan=True)
        shared = Ra[0] if same else None
    why = None
    if shared is not None:
        try:
            game = marginal_game(ens, X, shared, groups=groups, feature_names=feature_names)
        except TooManySlots as err:
            why = (f"shared references, but a path splits on {err.slots} distinct units, more "
                   f"than the {err.limit} the linear-time marginal game takes")
            B = check_ensemble_rows(ens, X, "the marginal tree game").shape[0]
            R = np.broadcast_to(np.asarray(shared, dtype=np.float64), (B,) + np.shape(shared))
        else:
            game.offset = int(offset)
            return game
    game = marginal_pairs_game(ens, X, R, groups=groups, feature_names=feature_names, why=why)
    game.offset = int(offset)
    return game


def trees_of(f):
    """The trees of ``f``: ``f`` itself (an :class:`insdel.trees.TreeEnsemble`), the trees an
    :class:`insdel.trees.ModelWithTrees` holds (read once by its maker), or what the library
    parsers (:func:`insdel.trees.read`) read from a fitted model (their errors)."""
    from ..trees import ModelWithTrees, TreeEnsemble, read

    if isinstance(f, TreeEnsemble):
        return f
    return f.trees if isinstance(f, ModelWithTrees) else read(f)


def as_ensemble(f, what: str):
    """``f`` as an :class:`insdel.trees.TreeEnsemble` (:func:`trees_of`, of an
    :class:`insdel.adapter.Model`'s estimator too); a clear error otherwise."""
    from ..trees import TreeEnsemble

    f = _unwrap(f)
    if isinstance(f, TreeEnsemble):
        return f
    if f is not None:
        try:
            return trees_of(f)
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
