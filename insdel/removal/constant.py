"""Removals to fixed values: ``constant`` (values given) and ``training_mean`` (the training mean
of a continuous feature, the training mode of a binary one: the paper's ROAR removal value, §6).

Both are :class:`~insdel.removal.SampledRemoval` with one row per coalition (M = 1, nothing
drawn): the removed features of every target take the same values, so ROAD (which imputes rows)
and ROAR (which overwrites them) read them as they read a conditional removal, through the game.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._checkpoint import sha256_arrays
from .._validation import as_float_array
from .base import SampledRemoval, check_background

__all__ = ["Constant", "TrainingMean", "training_mean_values"]


class Constant(SampledRemoval):
    """Removed features set to fixed values (one row per coalition, M = 1): a reference shared by
    every target, as a removal that writes rows (ROAD and its leakage diagnostic compare it with
    a conditional imputation).

    Parameters
    ----------
    values : float or array_like (n,)
        The value of each removed feature (e.g. the training mean).
    """

    name = "constant"
    n_draws = 1

    def __init__(self, values):
        self.values = as_float_array("values", values, ndim=(0, 1))

    def params(self) -> dict[str, Any]:
        return {**super().params(), "values": np.atleast_1d(self.values).tolist()}

    def sample(self, X: np.ndarray, keep: np.ndarray, targets: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        v = np.broadcast_to(self.values, X.shape[1:]) if self.values.ndim == 0 else self.values
        if v.shape != X.shape[1:]:
            raise ValueError(f"{self.name} removal: values has {v.shape[0]} entries but the rows "
                             f"have n = {X.shape[1]} features.")
        return np.where(np.asarray(keep, bool), X, v)[:, None, :]


def training_mean_values(data, binary=None) -> np.ndarray:
    """The paper's removal value of every feature (§6): the mean of ``data`` (N, n) on a
    continuous feature, the mode on a binary one (``binary``: a bool mask (n,); ties go to the
    lower level)."""
    X = np.asarray(data, dtype=np.float64)
    v = X.mean(axis=0)
    if binary is not None:
        for j in np.flatnonzero(np.asarray(binary, bool)):
            levels, counts = np.unique(X[:, j], return_counts=True)
            v[j] = levels[np.argmax(counts)]
    return v


class TrainingMean(Constant):
    """Removed features set to their training mean (the mode on binary features): the paper's
    ROAR removal value (§6), fitted on training rows.

    Parameters
    ----------
    data : array_like (N, n)
        Training rows.
    binary : array_like of bool (n,), optional
        The binary features, which take the training mode instead of the mean (None: none).
    """

    name = "training_mean"

    def __init__(self, data=None, *, binary=None):
        X = check_background("training_mean", data)
        if binary is not None:
            binary = np.asarray(binary, dtype=bool)
            if binary.shape != (X.shape[1],):
                raise ValueError(f"training_mean: binary must be a bool mask of shape "
                                 f"({X.shape[1]},), one entry per feature; got {binary.shape}.")
        self.binary = binary
        self._data_sha256 = sha256_arrays(X)
        self._rows = int(X.shape[0])
        super().__init__(training_mean_values(X, binary))

    def params(self) -> dict[str, Any]:
        return {**super().params(), "data_sha256": self._data_sha256, "data_rows": self._rows,
                "binary": None if self.binary is None else np.flatnonzero(self.binary).tolist()}
