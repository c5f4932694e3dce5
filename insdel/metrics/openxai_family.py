"""OpenXAI's predictive faithfulness: PGI and PGU (Agarwal et al., *OpenXAI: Towards a Transparent
Evaluation of Model Explanations*, NeurIPS 2022 Datasets and Benchmarks, Appendix A, eq. 1 and 2).

PGI (prediction gap on important features) perturbs the top-k units of an explanation and
measures ``E |f(x) - f(x')|``; PGU perturbs the other units. OpenXAI perturbs by Gaussian noise
(``sigma = 0.1``, 100 samples; binary features flipped with probability ``sigma sqrt(2 / pi)``).
insdel's default perturbation moves the units to the pair's reference r instead (one hybrid point,
on the shared cache), so the policy chooses what "perturbed" means; OpenXAI's noise is the option
``perturbation="gaussian"``. Units are ranked by ``|a|`` (OpenXAI's top-k); ``k`` is parsed as
OpenXAI does (an integer, or a fraction of the units rounded up), and ``k="auc"`` averages over
k = 1..m (OpenXAI reports the area under the curve over all k).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .._validation import check_scalar
from ..tracing import check_order
from .base import Metric, MetricContext, rank_of, top_units

__all__ = ["PGI", "PGU", "resolve_k", "check_k"]


def check_k(k) -> int | float | str:
    """Validate a top-k option: an int >= 1, a fraction in (0, 1), or ``"auc"``."""
    if isinstance(k, str):
        if k != "auc":
            raise ValueError(f"k must be an int >= 1, a fraction in (0, 1) or 'auc'; got {k!r}.")
        return k
    if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
        return check_scalar(k, "k", int, min_val=1)
    return check_scalar(k, "k", float, min_val=0.0, max_val=1.0, include_boundaries="neither")


def resolve_k(k, m: int) -> np.ndarray:
    """The top-k sizes a ``k`` option means for m units (OpenXAI's parsing; ``"auc"``: 1..m).

    An int is capped at m; a fraction q gives ``ceil(q m)``.
    """
    if k == "auc":
        return np.arange(1, m + 1)
    if isinstance(k, float):
        return np.array([max(1, math.ceil(k * m))])
    return np.array([min(int(k), m)])


class _PredictionGap(Metric):
    family = "openxai"
    important = True

    def __init__(self, *, k: int | float | str = 0.25, perturbation: str = "reference",
                 sigma: float = 0.1, n_samples: int = 100,
                 binary: Sequence[int] | None = None, flip: float | None = None,
                 order: str = "absolute"):
        self.k = check_k(k)
        if perturbation not in ("reference", "gaussian"):
            raise ValueError(f"perturbation must be 'reference' or 'gaussian'; got "
                             f"{perturbation!r}.")
        self.perturbation = perturbation
        self.sigma = check_scalar(sigma, "sigma", float, min_val=0.0,
                                  include_boundaries="neither")
        self.n_samples = check_scalar(n_samples, "n_samples", int, min_val=1)
        if binary is None:
            self.binary = None
        else:
            if isinstance(binary, (str, bytes)) or not isinstance(binary, Sequence | np.ndarray):
                raise TypeError(f"binary must be a sequence of column indices; got {binary!r}.")
            self.binary = tuple(check_scalar(j, f"binary[{i}]", int, min_val=0)
                                for i, j in enumerate(binary))
        self.flip = (self.sigma * math.sqrt(2 / math.pi) if flip is None
                     else check_scalar(flip, "flip", float, min_val=0.0, max_val=1.0))
        self.order = check_order(order)

    def _binary_columns(self, ctx: MetricContext) -> np.ndarray:
        col = np.zeros(ctx.n, bool)
        if self.binary:
            idx = np.asarray(self.binary)
            if idx.max() >= ctx.n:
                raise ValueError(f"binary: column {idx.max()} out of range (n = {ctx.n}).")
            col[idx] = True
            vals = ctx.X[:, col]
            if not np.isin(vals, (0.0, 1.0)).all():
                raise ValueError("binary: the targets' values in the binary columns must be 0 or 1.")
        return col

    def draws(self, ctx: MetricContext, method=None) -> tuple[np.ndarray, np.ndarray]:
        """The Gaussian perturbation's draws of a call: noise (S, B, n) N(0, sigma^2) and flips
        (S, B, n) Bernoulli(flip) (used on binary columns only)."""
        rng = ctx.rng(self.name, method)
        shape = (self.n_samples, ctx.B, ctx.n)
        noise = rng.normal(0.0, self.sigma, shape)
        flips = rng.random(shape) < self.flip
        return noise, flips

    def compute(self, ctx: MetricContext, A: np.ndarray, *, method=None, **kwargs) -> np.ndarray:
        ks = resolve_k(self.k, ctx.m)
        top = top_units(rank_of(A, order=self.order), ks)  # (B, K, m)
        moved = top if self.important else ~top  # the units perturbed
        if self.perturbation == "reference":
            return np.abs(ctx.fx[:, None] - ctx.removed(moved)).mean(axis=1)
        binary = self._binary_columns(ctx)
        noise, flips = self.draws(ctx, method)
        noisy = np.where(binary, np.abs(ctx.X[None] - flips), ctx.X[None] + noise)  # (S, B, n)
        gaps = np.empty((ctx.B, len(ks)))
        for i in range(len(ks)):  # one batch of S x B points per top-k size
            cols = ctx.expand(moved[:, i, :])  # (B, n)
            rows = np.where(cols[None], noisy, ctx.X[None])
            gaps[:, i] = np.abs(ctx.predict(rows) - ctx.fx[None]).mean(axis=0)
        return gaps.mean(axis=1)


class PGI(_PredictionGap):
    """Prediction gap on important features (higher is better).

    Source: OpenXAI (Agarwal et al. 2022) Appendix A eq. (1): ``E_{x'} |f(x) - f(x')|`` with x'
    perturbed on the explanation's top-k units (by ``|a|``).

    Parameters
    ----------
    k : int, float or "auc", default 0.25
        Top-k size: an int (capped at m), a fraction q of the units (``ceil(q m)``, OpenXAI's
        parsing), or ``"auc"``: the mean over k = 1..m (OpenXAI's reported area, per unit).
    perturbation : {"reference", "gaussian"}, default "reference"
        ``"reference"``: the top-k units take r's values (one hybrid point; deterministic).
        ``"gaussian"``: OpenXAI's ``NormalPerturbation``: N(0, sigma^2) added to their columns,
        binary columns flipped (``|x - b|``, b ~ Bernoulli(flip)); evaluated through
        ``ctx.predict``, seeded by ``ctx.rng(name, method)`` (the same draws for every k).
    sigma : float, default 0.1
        Noise standard deviation (OpenXAI's predictive-faithfulness setting).
    n_samples : int, default 100
        Perturbations per pair (OpenXAI's setting).
    binary : sequence of int, optional
        Binary (0/1) columns, flipped instead of noised.
    flip : float, optional
        Flip probability; default ``sigma * sqrt(2 / pi)`` (OpenXAI: the same expected change as
        the Gaussian noise).
    order : {"absolute", "signed", "ascending"}, default "absolute"
    """

    name = "pgi"
    source = "OpenXAI (Agarwal et al. 2022) App. A eq. (1); Petsiuk et al. (2018)"
    higher_is_better = True
    important = True


class PGU(_PredictionGap):
    """Prediction gap on unimportant features (lower is better).

    Source: OpenXAI (Agarwal et al. 2022) Appendix A eq. (2): ``E_{x'} |f(x) - f(x')|`` with x'
    perturbed on every unit outside the explanation's top k. Options as :class:`PGI`; with the
    reference perturbation PGU at k = m is 0.
    """

    name = "pgu"
    source = "OpenXAI (Agarwal et al. 2022) App. A eq. (2); Petsiuk et al. (2018)"
    higher_is_better = False
    important = False
