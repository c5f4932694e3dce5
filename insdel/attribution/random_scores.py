"""Seeded random scores: a uniformly random ordering per pair (the paper's "Random" row)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_positive_int
from .base import Attribution


class RandomAttribution(Attribution):
    """Seeded random scores, independent of the model (no evaluations).

    Parameters
    ----------
    f : model
        Any model :func:`insdel.as_model` accepts (not evaluated).
    """

    name = "random"
    reads_rows = "no model value (seeded random scores)"

    def attribute(self, X: ArrayLike, R: ArrayLike, *, seed: int = 0, groups=None,
                  removal=None, engine: str = "auto") -> np.ndarray:
        """Uniform(0, 1) scores (B, n): their ordering is uniformly random.

        Parameters
        ----------
        X, R : array_like (B, n)
            Targets and references (only their shape is used).
        seed : int, default 0
            Seed of numpy's generator.
        groups : optional
            One score per group (:mod:`insdel.groups`), shape (B, m): a uniformly random order of
            the m groups (summing per-column scores would favour large groups).
        removal : str or insdel.removal.Removal, optional
            Accepted under every removal (:mod:`insdel.removal`) and recorded in ``info_``: the
            scores read neither the model nor a reference, so they are the same whatever the
            removal (the completeness gap in ``info_`` is taken against ``v(all) - v(∅)``).
        engine : {"auto", "tree", "black_box"}, default "auto"
            The game's engine (:func:`insdel.game.as_game`). random reads no model value (seeded
            random scores), not coalition values, so a tree game has nothing to give it:
            ``auto`` and ``black_box`` are the same, ``tree`` is an error naming the method.

        Returns
        -------
        ndarray of float64, shape (B, n) (or (B, m) with groups)
        """
        from .shapley import _groups_of

        check_positive_int(seed, "seed", minimum=0)
        grp = _groups_of(groups, X)
        m = None if grp is None else grp.m

        def compute(game):
            X = game.X
            shape = X.shape if m is None else (X.shape[0], m)
            return np.random.default_rng(seed).random(shape), {}

        return self._run(X, R, compute, m=m, removal=removal,
                         engine=self._engine(engine))
