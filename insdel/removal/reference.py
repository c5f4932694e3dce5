"""Removals by references fixed per target: ``baseline`` (the paper) and ``marginal``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._checkpoint import sha256_arrays
from .._validation import check_choice, check_positive_int, check_scalar, check_seed
from .base import ReferenceRemoval, check_background, target_rng

__all__ = ["Baseline", "Marginal"]


class Baseline(ReferenceRemoval):
    """The paper's removal: one reference r per target, ``v(u) = f(hybrid(x, r, u))``.

    The references are the pairs' R (from a policy). This is the default everywhere and runs the
    engines' one-reference path unchanged.
    """

    name = "baseline"
    uses_reference = True

    def references(self, X: np.ndarray, R: np.ndarray | None, *, offset: int = 0
                   ) -> np.ndarray:
        if R is None:
            raise ValueError("removal 'baseline' reads the references R; got R=None.")
        R = np.asarray(R, dtype=np.float64)
        if R.ndim != 2:
            raise ValueError(f"removal 'baseline' takes one reference per target, R of shape "
                             f"(B, n); got {R.shape} (K references per target: "
                             "removal='marginal').")
        return np.broadcast_to(R, X.shape)[:, None, :]

    def differing(self, X: np.ndarray, R: np.ndarray | None, *, offset: int = 0) -> np.ndarray:
        return X != np.broadcast_to(np.asarray(R, dtype=np.float64), X.shape)


class Marginal(ReferenceRemoval):
    """Marginal (interventional) removal: K references per target,
    ``v(u) = (1/K) sum_k f(hybrid(x, b_k, u))`` (shap's ``Independent`` masker).

    Parameters
    ----------
    background : array_like (N, n), optional
        Rows the references are taken from (e.g. training rows). Without it, the references are
        the pairs' R given with shape (B, K, n) (a policy's K references per target).
    n_references : int, optional
        K: references per target taken from ``background`` (``how="random"`` or ``"nearest"``).
        Required for those; ignored with ``how="all"``.
    how : {"random", "nearest", "all"}, default "random"
        ``random``: K background rows per target drawn without replacement (seeded per target);
        ``nearest``: the K background rows closest to x (Euclidean distance on the features
        standardised by the background's standard deviation; ties by row index);
        ``all``: every background row for every target (K = N).
    seed : int, default 0
        Seeds ``how="random"``.
    """

    name = "marginal"

    def __init__(self, background=None, *, n_references: int | None = None,
                 how: str = "random", seed: int = 0):
        self.how = check_choice("how", how, ("random", "nearest", "all"))
        self.seed = check_seed(seed)
        self.background = None if background is None else check_background("marginal",
                                                                             background)
        if n_references is not None:
            n_references = check_positive_int(n_references, "n_references")
        if self.background is not None and self.how != "all":
            if n_references is None:
                raise ValueError(f"marginal with how={self.how!r} needs n_references= (K, the "
                                 "references per target); how='all' takes every background row.")
            if n_references > self.background.shape[0]:
                raise ValueError(f"n_references = {n_references} is more than the background's "
                                 f"{self.background.shape[0]} rows.")
        self.n_references = n_references

    @property
    def uses_reference(self) -> bool:  # type: ignore[override]
        return self.background is None

    def params(self) -> dict[str, Any]:
        p = {**super().params(), "how": self.how, "n_references": self.n_references,
             "seed": self.seed}
        if self.background is not None:
            p["background_sha256"] = sha256_arrays(self.background)
            p["background_rows"] = int(self.background.shape[0])
        return p

    def references(self, X: np.ndarray, R: np.ndarray | None, *, offset: int = 0
                   ) -> np.ndarray:
        """(B, K, n): R (B, K, n) as given, or K background rows per target; ``how="random"``
        draws target b's rows with the seed and its run index ``offset + b``
        (:func:`~insdel.removal.target_rng`), so a chunk of the targets (``offset``: the index of
        its first) draws what the whole run draws for them."""
        X = np.asarray(X, dtype=np.float64)
        offset = check_scalar(offset, "offset", int, min_val=0)
        B, n = X.shape
        if self.background is None:
            if R is None or np.ndim(R) != 3:
                raise ValueError("removal 'marginal' without background= reads K references per "
                                 "target: R of shape (B, K, n); got "
                                 f"{None if R is None else np.shape(R)}.")
            R = np.asarray(R, dtype=np.float64)
            if R.shape[0] != B or R.shape[2] != n:
                raise ValueError(f"R must have shape (B, K, n) = ({B}, K, {n}); got {R.shape}.")
            return R
        bg = self.background
        if bg.shape[1] != n:
            raise ValueError(f"marginal: background has {bg.shape[1]} columns but the targets "
                             f"have n = {n} features (a background with the wrong columns).")
        if self.how == "all":
            return np.broadcast_to(bg, (B,) + bg.shape)
        K = self.n_references
        if self.how == "random":
            idx = np.empty((B, K), dtype=np.int64)
            for b in range(B):  # one short draw per target, seeded by its run index
                idx[b] = target_rng(self.seed, offset + b, "marginal").choice(
                    bg.shape[0], K, replace=False)
            return bg[idx]
        sd = bg.std(axis=0)
        sd[sd == 0] = 1.0
        Z, Zb = X / sd, bg / sd
        d2 = (np.sum(Z * Z, 1)[:, None] + np.sum(Zb * Zb, 1)[None, :] - 2.0 * Z @ Zb.T)
        idx = np.argsort(d2, axis=1, kind="stable")[:, :K]
        return bg[idx]
