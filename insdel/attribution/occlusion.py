"""Occlusion (feature ablation): each unit's score is the drop of the pair's value when that unit
alone is removed, ``a_g = v(all) - v(all \\ {g})`` (captum's ``FeatureAblation`` with the pair's
reference as baseline and the groups as ``feature_mask``; over lag x channel blocks of windows,
:func:`insdel.timeseries.block_groups`, the occlusion of time-series explainers)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .base import Attribution


class Occlusion(Attribution):
    """Leave-one-unit-out scores read from the game: ``v(all) - v(all \\ {g})`` for every unit g.

    Parameters
    ----------
    f : model
        Any model :func:`insdel.as_model` accepts (its values only); per output of a model with
        H outputs through :func:`insdel.multi_output.per_output` (captum's ``target``).
    """

    name = "occlusion"
    reads_rows = None  # the game's coalition values

    def attribute(self, X: ArrayLike, R: ArrayLike, *, groups=None, removal=None,
                  batch_size: int | None = None, engine: str = "auto") -> np.ndarray:
        """One score per unit (B, n), or per group (B, m) with ``groups``.

        Parameters
        ----------
        X, R : array_like (B, n)
            Targets and references.
        groups : optional
            Units that are removed together (:mod:`insdel.groups`), e.g. the lag x channel blocks
            of :func:`insdel.timeseries.block_groups`: one score per group.
        removal : str or insdel.removal.Removal, optional
            What a removed unit becomes (:mod:`insdel.removal`; default: the pair's reference).
        batch_size : int, optional
            Rows per model call.
        engine : {"auto", "tree", "black_box"}, default "auto"
            Where the coalitions' values come from (:func:`insdel.game.as_game`): a tree
            ensemble's closed forms (``auto`` on a tree ensemble insdel reads, under a removal
            with a tree game; ``tree``: those or an error) or the model's values on rows
            (``black_box``). ``info_["engine"]`` says which ran.

        Returns
        -------
        ndarray of float64, shape (B, n) (or (B, m) with groups)

        Notes
        -----
        Costs B (m + 1) coalitions (each distinct one evaluated once). The scores need not sum
        to ``v(all) - v(∅)`` (the completeness gap in ``info_``): they ignore interactions.
        """

        def compute(game):
            B, m = game.B, game.m
            keep = np.ones((B, m + 1, m), dtype=bool)
            keep[:, 1:][:, np.arange(m), np.arange(m)] = False  # row 1 + g: all but unit g
            pairs = np.repeat(np.arange(B), m + 1)
            v = game.values(pairs, keep.reshape(B * (m + 1), m))
            v = v.reshape(B, m + 1, *v.shape[1:])
            return v[:, :1] - v[:, 1:], {"coalitions": B * (m + 1)}

        engine = self._engine(engine)
        return self._run(X, R, compute, removal=removal, groups=groups, batch_size=batch_size,
                         engine=engine)
