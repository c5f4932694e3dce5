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

    def attribute(self, X: ArrayLike, R: ArrayLike, *, seed: int = 0) -> np.ndarray:
        """Uniform(0, 1) scores (B, n): their ordering is uniformly random.

        Parameters
        ----------
        X, R : array_like (B, n)
            Targets and references (only their shape is used).
        seed : int, default 0
            Seed of numpy's generator.

        Returns
        -------
        ndarray of float64, shape (B, n)
        """
        check_positive_int("seed", seed, minimum=0)
        return self._run(X, R, lambda model, X, R: (np.random.default_rng(seed).random(X.shape),
                                                    {}))
