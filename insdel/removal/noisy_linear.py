"""Rong et al.'s noisy linear imputation as a removal: ``noisy_linear`` (the imputation of
ROAD, Rong et al. 2022, and of Quantus' ``ROAD``).

Each removed feature of a row, seen as a pixel of a one-channel ``image_shape`` (H, W) grid, is
the weighted mean of its valid 8-neighbours (weights 1/6 edge, 1/12 corner), solved jointly for
every removed pixel of every row (one sparse solve), plus ``noise`` times a standard normal.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.sparse import coo_matrix, diags
from scipy.sparse.linalg import spsolve

from .._validation import check_positive_int, check_scalar
from .base import SampledRemoval, check_draws, target_rng

__all__ = ["NoisyLinear", "noisy_linear_imputation"]


#: Quantus' (and Rong et al.'s) neighbour weights of the noisy linear imputation.
_NLI_OFFSETS = (((1, 1), 1 / 12), ((0, 1), 1 / 6), ((-1, 1), 1 / 12), ((1, -1), 1 / 12),
                ((0, -1), 1 / 6), ((-1, -1), 1 / 12), ((1, 0), 1 / 6), ((-1, 0), 1 / 6))


def noisy_linear_imputation(rows: np.ndarray, removed: np.ndarray, shape: tuple[int, int], *,
                            noise: float = 0.01,
                            rng: np.random.Generator | None = None) -> np.ndarray:
    """Rong et al.'s noisy linear imputation of many rows at once (one sparse solve).

    Each row (n = H * W columns, a one-channel image flattened row by row) has its ``removed``
    pixels replaced by the solution of "every removed pixel is the weighted mean of its valid
    8-neighbours" (weights 1/6 edge, 1/12 corner; Quantus' ``noisy_linear_imputation``), plus
    ``noise * N(0, 1)``. The systems of all rows are stacked block-diagonally and solved once.
    Every connected group of removed pixels needs a kept neighbour (else the system is singular).
    """
    H, W = shape
    X = np.asarray(rows, np.float64)
    N, n = X.shape
    rem = np.asarray(removed, bool).reshape(-1)
    flat = X.reshape(-1)
    ridx = np.flatnonzero(rem)
    V = ridx.size
    out = flat.copy()
    if V == 0:
        return out.reshape(N, n)
    var_of = np.full(N * n, -1, np.int64)
    var_of[ridx] = np.arange(V)
    row, pix = np.divmod(ridx, n)
    h, w = np.divmod(pix, W)
    total = np.ones(V)
    rhs = np.zeros(V)
    ii, jj, vals = [], [], []
    for (dh, dw), wt in _NLI_OFFSETS:
        hh, ww = h + dh, w + dw
        valid = (hh >= 0) & (ww >= 0) & (hh < H) & (ww < W)
        total[~valid] -= wt
        vi = np.flatnonzero(valid)
        g = row[vi] * n + hh[vi] * W + ww[vi]
        inside = rem[g]
        np.subtract.at(rhs, vi[~inside], wt * flat[g[~inside]])
        ii.append(vi[inside])
        jj.append(var_of[g[inside]])
        vals.append(np.full(int(inside.sum()), wt))
    Msys = coo_matrix((np.concatenate(vals), (np.concatenate(ii), np.concatenate(jj))),
                      shape=(V, V)).tocsc() - diags(total, format="csc")
    sol = np.atleast_1d(spsolve(Msys, rhs))
    if noise:
        sol = sol + noise * (rng if rng is not None else np.random.default_rng()).standard_normal(V)
    out[ridx] = sol
    return out.reshape(N, n)


class NoisyLinear(SampledRemoval):
    """Rong et al.'s noisy linear imputation (:func:`noisy_linear_imputation`), one row per
    coalition (M = 1): the noise of target t is drawn from its own stream (seeded by ``seed``
    and t, common random numbers).

    A coalition must keep at least one feature in every connected block of removed pixels (the
    imputation interpolates from kept neighbours): ``v(∅)`` has none, so curves that reach
    every unit removed are refused with a message.

    Parameters
    ----------
    noise : float, default 0.01
        Standard deviation of the added noise (Quantus' default).
    image_shape : (int, int), optional
        (H, W) with H * W = n; default (1, n): the row as a one-row image.
    seed : int, default 0
    """

    name = "noisy_linear"
    n_draws = 1

    def __init__(self, *, noise: float = 0.01, image_shape: tuple[int, int] | None = None,
                 seed: int = 0):
        self.noise = check_scalar(noise, "noise", float, min_val=0.0)
        if image_shape is not None:
            if not isinstance(image_shape, (tuple, list)) or len(image_shape) != 2:
                raise ValueError(f"image_shape must be (H, W), two positive ints; got "
                                 f"{image_shape!r}.")
            image_shape = tuple(check_positive_int(v, f"image_shape[{i}]")
                                for i, v in enumerate(image_shape))
        self.image_shape = image_shape
        _, self.seed = check_draws(1, seed)

    def params(self) -> dict[str, Any]:
        return {**super().params(), "noise": self.noise,
                "image_shape": None if self.image_shape is None else list(self.image_shape)}

    def shape_of(self, n: int) -> tuple[int, int]:
        """The (H, W) grid of rows of n features."""
        shape = (1, n) if self.image_shape is None else self.image_shape
        if shape[0] * shape[1] != n:
            raise ValueError(f"image_shape {shape} does not hold n = {n} columns.")
        return shape

    def sample(self, X: np.ndarray, keep: np.ndarray, targets: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        keep = np.asarray(keep, dtype=bool)
        N, n = X.shape
        if np.any(~keep.any(axis=1)):
            raise ValueError("removal 'noisy_linear' interpolates removed features from kept "
                             "ones: a coalition that keeps none (every feature removed) has no "
                             "value under it.")
        out = noisy_linear_imputation(X, ~keep, self.shape_of(n), noise=0.0)
        if self.noise:
            eps = np.empty((N, n))
            for i, t in enumerate(np.asarray(targets, dtype=np.int64)):  # one stream per target
                eps[i] = target_rng(self.seed, int(t), self.name).standard_normal(n)
            out = np.where(keep, out, out + self.noise * eps)
        return out[:, None, :]
