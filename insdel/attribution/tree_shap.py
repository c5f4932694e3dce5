"""Exact Shapley values of a tree ensemble read off its trees (:mod:`insdel.trees`): the
baseline game's with the policy's reference r, the marginal game's with a background, or the
trees' path-dependent game (what ``shap.TreeExplainer`` explains without a background)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_bool
from .base import Attribution


class TreeShap(Attribution):
    """Exact Shapley values of a tree ensemble at any n, from its trees' closed forms.

    Three games, each named in ``info_["game"]``:

    * default: the baseline game ``v(u) = f(x_u : r_{-u})`` with the pair's reference r (the
      same numbers as ``exact_shapley`` and as ``shap.TreeExplainer(model, r[None],
      feature_perturbation="interventional")``, at any |D|);
    * ``background=`` (K, n): the marginal game ``(1/K) sum_k f(x_u : b^k_{-u})``
      (``shap.TreeExplainer(model, background, feature_perturbation="interventional")``), R
      unused;
    * ``path_dependent=True``: the trees' cover-weighted removal
      (``shap.TreeExplainer(model, feature_perturbation="tree_path_dependent")``), R unused.

    Under ``removal=`` (``baseline``, ``marginal``, ``path_dependent``) the Shapley values of
    that removal's tree game (:func:`insdel.removal.trees.tree_game_of`).

    Parameters
    ----------
    f : a tree ensemble
        One :func:`insdel.trees.read` reads (scikit-learn, XGBoost, LightGBM, CatBoost, a model
        file's booster) or an :class:`insdel.trees.TreeEnsemble`; another model is refused
        (:func:`insdel.attribution.check_supported`).
    """

    name = "tree_shap"
    requires = "trees"
    reads_rows = None  # the tree game's closed-form Shapley values

    def attribute(self, X: ArrayLike, R: ArrayLike | None, *,
                  background: ArrayLike | None = None, path_dependent: bool = False,
                  groups=None, removal=None, engine: str = "auto") -> np.ndarray:
        """Exact Shapley values (B, n) (or (B, m) with groups).

        Parameters
        ----------
        X : array_like (B, n)
            Targets (NaN allowed: the trees' default directions).
        R : array_like (B, n) or (n,), optional
            References of the baseline game; None with ``background`` or ``path_dependent``.
        background : array_like (K, n), optional
            Rows every target's removed features are averaged over (the marginal game).
        path_dependent : bool, default False
            The trees' own path-dependent removal (no reference).
        groups : optional
            Shapley values of the group game (:mod:`insdel.groups`).
        removal : str or insdel.removal.Removal, optional
            A removal with a tree game, instead of ``background`` / ``path_dependent``.
        engine : {"auto", "tree", "black_box"}, default "auto"
            ``auto`` and ``tree``: the trees' closed forms, the only engine of this method;
            ``black_box`` is an error (``exact_shapley`` with ``engine="black_box"`` computes
            the same values from model rows, at |D| <= ``max_d``).

        Returns
        -------
        ndarray of float64 (B, n) or (B, m)
        """
        from ..removal import Marginal
        from .base import check_engine

        if check_engine(engine, self.name) == "black_box":
            raise ValueError("tree_shap: engine='black_box', but the method reads the trees' "
                             "closed forms only; use engine='auto', or exact_shapley with "
                             "engine='black_box' for the same values from model rows.")
        path_dependent = check_bool(path_dependent, "path_dependent")
        if self._game is None and self.requires not in self.model.capabilities:
            from . import check_supported

            check_supported(self.model, [self.name])  # not a tree ensemble: named
        given = [k for k, v in (("background", background is not None),
                                ("path_dependent", path_dependent),
                                ("removal", removal is not None)) if v]
        if len(given) > 1:
            raise ValueError(f"tree_shap: give one of background=, path_dependent=True and "
                             f"removal=; got {', '.join(given)}.")
        if background is not None:
            removal, R = Marginal(background, how="all"), None
        elif path_dependent:
            removal, R = "path_dependent", None
        grp_m = None
        if groups is not None:
            from .shapley import _groups_of

            grp = _groups_of(groups, X)
            grp_m = None if grp is None else grp.m

        def compute(game):
            from ..game import engine_text

            # the ends from the trees too: v(all) - v(∅) is f(x) - f(r) under the baseline
            return game.shapley(), {"game": game.name, "engine": engine_text(game),
                                    "fx_minus_fr": game.v_all() - game.v_empty()}

        return self._run(X, R, compute, m=grp_m, removal=removal, groups=groups,
                         engine="tree")
