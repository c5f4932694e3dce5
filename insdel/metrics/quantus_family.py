"""Quantus' faithfulness metrics on insdel's engine, for regression (issue #17).

One :class:`~insdel.metrics.base.Metric` per faithfulness metric of Quantus 0.6 (Hedström et al.,
*Quantus: an explainable AI toolkit*, JMLR 24 (2023)). Each mirrors the formulas and defaults of
the Quantus class it names, with three systematic changes, stated once here and repeated where
they matter:

* **The baseline is the pair's reference.** Where Quantus replaces features by a constant
  (``perturb_baseline="black"``, i.e. the sample's minimum, ``"mean"``, 0.0, ...), insdel puts the
  reference r of the pair there (units in a removed set take r, the rest x), so the policy chooses
  the baseline. With ``R = 0`` and Quantus' ``perturb_baseline=0.0`` the two coincide; the tests
  check every metric against Quantus' own code that way.
* **Regression.** No class index and no softmax: "the prediction" is the model's scalar output
  f. Where Quantus compares predicted classes (ROAD's accuracy, Sufficiency's same-class test),
  the docstring says what replaces the comparison.
* **Units.** Pixels, patches and superpixel segments are insdel's units: the n columns, or the
  groups when ``groups=`` is given. Attributions per unit are summed over a group's columns
  (IROF averages them, as Quantus does over a segment).

Quantus' ``normalise=True`` divides the whole attribution batch by its largest absolute value; every
score below is invariant to that positive scaling, so there is no ``normalise`` option. ``abs``
keeps Quantus' default per metric; with groups it takes |sum| over a group, not the sum of |a|.
Every hybrid point goes through the context's cache (:meth:`MetricContext.values` /
:meth:`MetricContext.removed`); only the optional Gaussian perturbation of
:class:`MonotonicityNguyen` and ROAD's noisy linear imputation evaluate other points
(:meth:`MetricContext.predict`). Scores are one
float per pair, NaN where a correlation meets constant values.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.spatial.distance import cdist

from .._validation import check_bool, check_choice, check_positive_int, check_scalar
from ..ordering import check_ordering, random_permutations
from ..removal.noisy_linear import NoisyLinear, noisy_linear_imputation
from .base import (
    Metric,
    MetricContext,
    pearson_rows,
    rank_of,
    spearman_rows,
    top_units,
    unit_positions,
)

__all__ = ["PixelFlipping", "RegionPerturbation", "Selectivity", "MonotonicityArya",
           "MonotonicityNguyen", "FaithfulnessCorrelation", "FaithfulnessEstimate", "ROAD",
           "IROF", "SufficiencyDasgupta",
           "noisy_linear_imputation"]


# --------------------------------------------------------------------------------------- helpers
def _steps(m: int, features_in_step: int) -> np.ndarray:
    """Units moved after each of Quantus' ``ceil(m / features_in_step)`` steps: k, 2k, ..., m."""
    S = math.ceil(m / features_in_step)
    return np.minimum(np.arange(1, S + 1) * features_in_step, m)


def _chunks(orders: np.ndarray, features_in_step: int) -> np.ndarray:
    """Masks (B, S, m) of the disjoint chunks of ``features_in_step`` units along each ordering
    (Quantus' ``a_indices[:, s * k:(s + 1) * k]``)."""
    S = math.ceil(orders.shape[1] / features_in_step)
    chunk = unit_positions(orders) // features_in_step
    return chunk[:, None, :] == np.arange(S)[None, :, None]


def _trapezoid(y: np.ndarray) -> np.ndarray:
    """Quantus' ``utils.calculate_auc``: the trapezoid rule with dx = 1 along the last axis."""
    return np.trapezoid(y, dx=1.0, axis=-1)


class _QuantusMetric(Metric):
    """Shared parts: the family, the ``abs`` option, the ``features_in_step`` option."""

    family = "quantus"

    def _attr(self, A: np.ndarray) -> np.ndarray:
        return np.abs(A) if self.abs else np.asarray(A, np.float64)

    def _check_step(self, features_in_step) -> int:
        return check_positive_int(features_in_step, "features_in_step")


# ------------------------------------------------------------------------------ curve metrics
class PixelFlipping(_QuantusMetric):
    """Pixel flipping: area under the deletion curve in decreasing-attribution order.

    Source: Bach et al., *On pixel-wise explanations for non-linear classifier decisions by
    layer-wise relevance propagation*, PLoS ONE 10(7) (2015). Mirrors ``quantus.PixelFlipping``
    with ``return_auc_per_sample=True``: units are removed (set to r) ``features_in_step`` at a
    time in decreasing *signed* attribution (``np.argsort(-a)``), cumulatively; after each step the
    prediction is recorded (the unperturbed f(x) is not part of the curve); the score is the
    trapezoid area of that curve with dx = 1 (``utils.calculate_auc``). Lower is better (the
    prediction falls early).

    Regression: the curve is of f itself, not of a class probability.

    Parameters
    ----------
    features_in_step : int, default 1
        Units removed per step (Quantus requires it to divide the input size; here a smaller
        last step is allowed).
    abs : bool, default False
        Order by |a| instead of a (Quantus' default ``abs=False``).
    """

    name = "pixel_flipping"
    source = "Bach et al. (2015); quantus.PixelFlipping (return_auc_per_sample)"
    higher_is_better = False

    def __init__(self, *, features_in_step: int = 1, abs: bool = False):
        self.features_in_step = self._check_step(features_in_step)
        self.abs = check_bool(abs, "abs")

    def curve(self, ctx: MetricContext, A: np.ndarray) -> np.ndarray:
        """The pixel-flipping curve (B, ceil(m / features_in_step))."""
        orders = rank_of(self._attr(A), order="signed")
        return ctx.removed(top_units(orders, _steps(ctx.m, self.features_in_step)))

    def compute(self, ctx: MetricContext, A: np.ndarray, **kwargs) -> np.ndarray:
        return _trapezoid(self.curve(ctx, A))


class RegionPerturbation(_QuantusMetric):
    """Region perturbation: prediction drop as the most (or least) relevant regions are removed.

    Source: Samek et al., *Evaluating the visualization of what a deep neural network has
    learned*, IEEE TNNLS 28(11) (2017). Mirrors ``quantus.RegionPerturbation``: regions (Quantus'
    ``patch_size`` x ``patch_size`` patches; here the units) are ranked by their summed attribution
    (``order="morf"``: decreasing, ``"lerf"``: increasing, ``"random"``: a random permutation per
    pair, drawn from the metric's own stream), removed cumulatively one per step for the first
    ``regions_evaluation`` regions, and the curve records ``f(x) - f(x_k)``. Quantus returns that
    curve and summarises it with ``get_auc_score`` (the trapezoid, dx = 1): that is the score here
    (``score="auc"``, default). ``score="aopc"`` gives Samek's AOPC, eq. (12),
    ``1/(L+1) sum_{k=0..L} (f(x) - f(x_k))`` (the k = 0 term is 0).

    Regression: f is the scalar output. Higher is better for MoRF and random, lower for LeRF.

    Parameters
    ----------
    order : {"morf", "lerf", "random"}, default "morf"
    regions_evaluation : int, default 100
        Regions removed (at most m).
    score : {"auc", "aopc"}, default "auc"
    abs : bool, default False
    """

    name = "region_perturbation"
    source = "Samek et al. (2017); quantus.RegionPerturbation (get_auc_score per sample)"

    def __init__(self, *, order: str = "morf", regions_evaluation: int = 100, score: str = "auc",
                 abs: bool = False):
        self.order = order
        check_ordering(order, allowed=("morf", "lerf", "random"))
        self.regions_evaluation = check_positive_int(regions_evaluation, "regions_evaluation")
        self.score = check_choice("score", score, ("auc", "aopc"))
        self.abs = check_bool(abs, "abs")

    @property
    def higher_is_better(self) -> bool:  # type: ignore[override]
        return self.order != "lerf"

    def curve(self, ctx: MetricContext, A: np.ndarray, *, method=None) -> np.ndarray:
        """The drops ``f(x) - f(x_k)``, k = 1..min(regions_evaluation, m), (B, L)."""
        a = self._attr(A)
        if self.order == "random":
            orders = random_permutations(ctx.rng(self.name, method), a.shape, scheme="permuted")
        else:  # a is the relevance (|A| under abs=True): morf / lerf sort it signed
            orders = rank_of(a, order=check_ordering(self.order, ranking="signed"))
        L = min(self.regions_evaluation, ctx.m)
        return ctx.fx[:, None] - ctx.removed(top_units(orders, np.arange(1, L + 1)))

    def compute(self, ctx: MetricContext, A: np.ndarray, *, method=None, **kwargs) -> np.ndarray:
        c = self.curve(ctx, A, method=method)
        if self.score == "auc":
            return _trapezoid(c)
        return c.sum(axis=1) / (c.shape[1] + 1)


class Selectivity(_QuantusMetric):
    """Selectivity: area under the prediction as units are removed in decreasing attribution.

    Source: Montavon, Samek & Müller, *Methods for interpreting and understanding deep neural
    networks*, Digital Signal Processing 73 (2018). Mirrors ``quantus.Selectivity``: patches (here
    units) sorted by decreasing summed attribution are removed cumulatively, all of them; the curve
    records f after each removal (f(x) not included) and ``get_auc_score`` takes its trapezoid
    (dx = 1), the score here. Lower is better (the prediction drops fast).

    Regression: f is the scalar output (Quantus: the class logit or probability).

    Parameters
    ----------
    abs : bool, default False
    """

    name = "selectivity"
    source = "Montavon et al. (2018); quantus.Selectivity (get_auc_score per sample)"
    higher_is_better = False

    def __init__(self, *, abs: bool = False):
        self.abs = check_bool(abs, "abs")

    def compute(self, ctx: MetricContext, A: np.ndarray, **kwargs) -> np.ndarray:
        orders = rank_of(self._attr(A), order="signed")
        return _trapezoid(ctx.removed(top_units(orders, np.arange(1, ctx.m + 1))))


class MonotonicityArya(_QuantusMetric):
    """Monotonicity (Arya et al.): does f rise at every step as units are added in increasing
    importance?

    Source: Arya et al., *One explanation does not fit all: a toolkit and taxonomy of AI
    explainability techniques*, arXiv:1909.03012 (2019). Mirrors ``quantus.Monotonicity``: start
    from the baseline (here r), add units of x ``features_in_step`` at a time in *increasing*
    attribution (``np.argsort(a)``; with the default ``abs=True`` increasing |a|), record f after
    each step (f(r) itself not included), and score 1.0 when the recorded values never decrease
    (``np.all(np.diff(preds) >= 0)``), else 0.0.

    Deviation: Quantus 0.6 builds the next point with ``perturb_func(arr=x_baseline, ...)``, which
    writes the *baseline* again at the chosen indices, so its curve stays at f(baseline) and every
    sample scores True. insdel implements the intended insertion of x's values (the tests replay
    Quantus' loop with a perturbation function that inserts x, and also show the 0.6 behaviour).

    Regression: f is the scalar output. Higher is better.

    Parameters
    ----------
    features_in_step : int, default 1
    abs : bool, default True
    """

    name = "monotonicity_arya"
    source = "Arya et al. (2019); quantus.Monotonicity"

    def __init__(self, *, features_in_step: int = 1, abs: bool = True):
        self.features_in_step = self._check_step(features_in_step)
        self.abs = check_bool(abs, "abs")

    def compute(self, ctx: MetricContext, A: np.ndarray, **kwargs) -> np.ndarray:
        orders = rank_of(self._attr(A), order="ascending")
        preds = ctx.values(top_units(orders, _steps(ctx.m, self.features_in_step)))
        return np.all(np.diff(preds, axis=1) >= 0, axis=1).astype(np.float64)


class MonotonicityNguyen(_QuantusMetric):
    """Monotonicity correlation (Nguyen & Martínez): Spearman between attributions and the effect
    of removing each unit.

    Source: Nguyen & Martínez, *On quantitative aspects of model interpretability*,
    arXiv:2007.07584 (2020). Mirrors ``quantus.MonotonicityCorrelation``: units in increasing
    attribution (default ``abs=True``: increasing |a|) are taken ``features_in_step`` at a time;
    each chunk alone is perturbed (not cumulatively) and
    ``v_s = mean_draws (f(x~) - f(x))^2 / f(x)^2`` (the factor ``1 / f(x)^2`` only where
    ``|f(x)| >= eps``, else 1); the score is Spearman's correlation between the chunks'
    attribution sums and ``v`` (NaN when either is constant). Higher is better.

    The perturbation. Quantus' default puts a uniform random value on the chunk and averages
    ``nr_samples = 100`` draws. Here the chunk takes the reference r (``noise=0``, default): the
    draws would all be the same point, so a single one is evaluated through the hybrid cache and
    ``nr_samples`` is not used. With ``noise > 0`` the chunk takes ``r + noise * N(0, 1)`` (one
    normal per column and draw, from the metric's own stream) and ``nr_samples`` draws are
    averaged, as in Quantus; these points are not hybrids and go through ``ctx.predict``.

    Parameters
    ----------
    features_in_step : int, default 1
    eps : float, default 1e-5
    nr_samples : int, default 100
        Draws per chunk when ``noise > 0``.
    noise : float, default 0.0
        Standard deviation of the Gaussian noise around r (0: the reference itself).
    abs : bool, default True
    """

    name = "monotonicity_nguyen"
    source = "Nguyen & Martínez (2020); quantus.MonotonicityCorrelation"

    def __init__(self, *, features_in_step: int = 1, eps: float = 1e-5, nr_samples: int = 100,
                 noise: float = 0.0, abs: bool = True):
        self.features_in_step = self._check_step(features_in_step)
        self.eps = check_scalar(eps, "eps", float, min_val=0.0)
        self.nr_samples = check_positive_int(nr_samples, "nr_samples")
        self.noise = check_scalar(noise, "noise", float, min_val=0.0)
        self.abs = check_bool(abs, "abs")

    def compute(self, ctx: MetricContext, A: np.ndarray, *, method=None, **kwargs) -> np.ndarray:
        a = self._attr(A)
        chunks = _chunks(rank_of(a, order="ascending"), self.features_in_step)  # (B, S, m)
        fx = ctx.fx
        inv = np.ones_like(fx)
        big = np.abs(fx) >= self.eps
        inv[big] = 1.0 / np.abs(fx[big])
        inv = inv ** 2
        if self.noise == 0.0:
            v = (ctx.removed(chunks) - fx[:, None]) ** 2
        else:
            rng = ctx.rng(self.name, method)
            cols = ctx.expand(chunks)  # (B, S, n)
            B, S, n = cols.shape
            eps_ = rng.standard_normal((self.nr_samples, B, S, n))
            base = np.where(cols, ctx.reference(self.name)[:, None, :], ctx.X[:, None, :])
            rows = np.where(cols, base + self.noise * eps_, base)
            v = ((ctx.predict(rows) - fx[None, :, None]) ** 2).mean(axis=0)
        atts = (a[:, None, :] * chunks).sum(-1)
        return spearman_rows(atts, v * inv[:, None])


# ------------------------------------------------------------------------ correlation metrics
class FaithfulnessCorrelation(_QuantusMetric):
    """Faithfulness correlation (Bhatt et al.): Pearson between the attribution of random subsets
    and the prediction drop when they are removed.

    Source: Bhatt, Weller & Moura, *Evaluating and aggregating feature-based model explanations*,
    IJCAI (2020). Mirrors ``quantus.FaithfulnessCorrelation``: ``nr_runs`` times, a random subset
    of ``subset_size`` units (without replacement) is set to the baseline (here r);
    the score is Pearson's correlation over the runs between ``sum_{j in S} a_j`` and
    ``f(x) - f(x_S)`` (NaN when either is constant). Higher is better.

    Subsets are drawn from ``ctx.rng(name, method)`` (each method its own stream), or given with
    ``subsets=`` to :meth:`compute` / the call: integer indices (B, nr_runs, k) or boolean masks
    (B, nr_runs, m). Quantus draws ``np.random.choice(n, subset_size, replace=False)`` per run
    (outer loop) and sample (inner loop) from numpy's global RNG; passing those same indices
    reproduces its scores exactly.

    Deviation: Quantus' default ``subset_size = 224`` (pixels of a 224 x 224 image) must be
    smaller than the input; the default here is ``None``: ``min(224, m // 2)`` units (at least
    1), which is Quantus' value whenever m >= 448. An int is used as given (and must be < m).
    ``return_aggregate`` (Quantus' default True) is not applied: one score per pair.

    Parameters
    ----------
    nr_runs : int, default 100
    subset_size : int, optional
    abs : bool, default False
    """

    name = "faithfulness_correlation"
    source = "Bhatt et al. (2020); quantus.FaithfulnessCorrelation"

    def __init__(self, *, nr_runs: int = 100, subset_size: int | None = None, abs: bool = False):
        self.nr_runs = check_positive_int(nr_runs, "nr_runs")
        self.subset_size = (None if subset_size is None
                            else check_positive_int(subset_size, "subset_size"))
        self.abs = check_bool(abs, "abs")

    def _size(self, m: int) -> int:
        if self.subset_size is None:
            return max(1, min(224, m // 2))
        if self.subset_size >= m:
            raise ValueError(f"subset_size must be smaller than the number of units m = {m}; got "
                             f"{self.subset_size}.")
        return self.subset_size

    def masks(self, ctx: MetricContext, *, method=None, subsets=None) -> np.ndarray:
        """The removed subsets as masks (B, nr_runs, m)."""
        B, m = ctx.B, ctx.m
        if subsets is None:
            k = self._size(m)
            idx = random_permutations(ctx.rng(self.name, method), (B, self.nr_runs, m))[..., :k]
            M = np.zeros((B, self.nr_runs, m), bool)
            np.put_along_axis(M, idx, True, axis=-1)
            return M
        S = np.asarray(subsets)
        if S.ndim != 3 or S.shape[0] != B:
            raise ValueError(f"subsets must have shape (B, runs, k) of unit indices or (B, runs, "
                             f"m) booleans with B = {B}; got {S.shape}.")
        if S.dtype == bool:
            if S.shape[2] != m:
                raise ValueError(f"boolean subsets must have m = {m} columns; got {S.shape}.")
            return S
        if not np.issubdtype(S.dtype, np.integer) or S.size and (S.min() < 0 or S.max() >= m):
            raise ValueError(f"subsets must hold unit indices in [0, {m}); got dtype {S.dtype}.")
        M = np.zeros((B, S.shape[1], m), bool)
        np.put_along_axis(M, S.astype(np.int64), True, axis=-1)
        return M

    def compute(self, ctx: MetricContext, A: np.ndarray, *, method=None, subsets=None,
                **kwargs) -> np.ndarray:
        a = self._attr(A)
        M = self.masks(ctx, method=method, subsets=subsets)
        drops = ctx.fx[:, None] - ctx.removed(M)
        sums = (a[:, None, :] * M).sum(-1)
        return pearson_rows(sums, drops)


class FaithfulnessEstimate(_QuantusMetric):
    """Faithfulness estimate (Alvarez-Melis & Jaakkola): Pearson between each unit's attribution
    and the prediction drop when that unit alone is removed.

    Source: Alvarez-Melis & Jaakkola, *Towards robust interpretability with self-explaining neural
    networks*, NeurIPS (2018). Mirrors ``quantus.FaithfulnessEstimate``: units in decreasing
    attribution are taken ``features_in_step`` at a time; each chunk alone (not cumulatively) is
    set to the baseline (here r); the score is Pearson's correlation between the chunks'
    attribution sums and ``f(x) - f(x_chunk)`` (NaN when either is constant). Higher is better.

    Parameters
    ----------
    features_in_step : int, default 1
    abs : bool, default False
    """

    name = "faithfulness_estimate"
    source = "Alvarez-Melis & Jaakkola (2018); quantus.FaithfulnessEstimate"

    def __init__(self, *, features_in_step: int = 1, abs: bool = False):
        self.features_in_step = self._check_step(features_in_step)
        self.abs = check_bool(abs, "abs")

    def compute(self, ctx: MetricContext, A: np.ndarray, **kwargs) -> np.ndarray:
        a = self._attr(A)
        chunks = _chunks(rank_of(a, order="signed"), self.features_in_step)
        drops = ctx.fx[:, None] - ctx.removed(chunks)
        return pearson_rows((a[:, None, :] * chunks).sum(-1), drops)


# ------------------------------------------------------------------------------ ROAD, IROF
class ROAD(_QuantusMetric):
    """ROAD (Rong et al.): mean prediction drop as the top percentages of units are removed.

    Source: Rong, Leemann et al., *A consistent and efficient evaluation strategy for attribution
    methods*, ICML (2022). Mirrors ``quantus.ROAD``: for each percentage p the first
    ``int(m * p / 100)`` units in decreasing attribution (MoRF) are removed (not cumulatively
    across p: each point starts from x).

    Regression mapping. Quantus records, per p, whether the perturbed input is still classified as
    y (``argmax == y``) and averages that accuracy over the batch (lower is better). Here the
    continuous analogue is the prediction drop ``f(x) - f(x_p)``; the score of a pair is its mean
    over the percentages (higher is better: removing what the attribution calls important lowers
    the prediction). The same points Quantus evaluates are used (the tests replay them).

    Imputation. ``imputation="reference"`` (default): removed units take what the removal gives
    them (r, the policy's point, under the default ``baseline``; Rong et al.'s noisy linear
    imputation, Quantus' default, under ``removal="noisy_linear"``), through the cache.
    ``imputation="noisy_linear"`` (deprecated: give ``removal=`` instead): Quantus' default, Rong et al.'s noisy linear imputation
    (:mod:`insdel.removal.noisy_linear`): each removed column is the weighted mean of its 8
    neighbours on a one-channel ``image_shape`` (H, W) grid (default (1, n): the row as a one-row
    image, which is what Quantus does with a (1, 1, n) input), plus ``noise`` times a standard
    normal from the metric's own stream, all rows and percentages in one draw (Quantus'
    numbers). These points are not hybrids (``ctx.predict``); r is not used; units must be the
    columns (no groups) and every percentage must keep at least one unit. The same imputation as
    the removal of every metric and curve is ``removal="noisy_linear"``
    (:class:`insdel.removal.NoisyLinear`, the noise drawn per target) with the default
    ``imputation="reference"``: removed units then take the removal's values.

    Parameters
    ----------
    percentages : sequence of float, default range(1, 100, 2)
        In [0, 100].
    imputation : {"reference", "noisy_linear"}, default "reference"
        ``"noisy_linear"`` is deprecated (the removal ``noisy_linear``).
    noise : float, default 0.01
        Noise of the noisy linear imputation (Quantus' default).
    image_shape : (int, int), optional
        (H, W) with H * W = n for the noisy linear imputation; default (1, n).
    abs : bool, default False
    """

    name = "road"
    source = "Rong et al. (2022); quantus.ROAD (drop of f instead of accuracy)"

    def __init__(self, *, percentages=None, imputation: str = "reference", noise: float = 0.01,
                 image_shape: tuple[int, int] | None = None, abs: bool = False):
        p = list(range(1, 100, 2)) if percentages is None else percentages
        try:
            arr = np.asarray(p, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"percentages must be a sequence of numbers in [0, 100]; got "
                             f"{percentages!r}.") from None
        if arr.ndim != 1 or arr.size == 0 or not np.all((arr >= 0) & (arr <= 100)):
            raise ValueError(f"percentages must be a non-empty sequence of numbers in [0, 100]; "
                             f"got {percentages!r}.")
        self.percentages = [float(v) for v in arr]
        self.imputation = check_choice("imputation", imputation, ("reference", "noisy_linear"))
        if self.imputation == "noisy_linear":
            warnings.warn("road: imputation='noisy_linear' is deprecated: give the removal "
                          "instead, removal=insdel.removal.NoisyLinear(noise=..., image_shape=...) "
                          "(the registered removal 'noisy_linear'; its noise is drawn per target)",
                          DeprecationWarning, stacklevel=2)
        imputer = NoisyLinear(noise=noise, image_shape=image_shape)  # checks both
        self.noise, self.image_shape = imputer.noise, imputer.image_shape
        self.abs = check_bool(abs, "abs")

    def compute(self, ctx: MetricContext, A: np.ndarray, *, method=None, **kwargs) -> np.ndarray:
        orders = rank_of(self._attr(A), order="signed")
        k = np.array([int(ctx.m * p / 100) for p in self.percentages], dtype=np.int64)
        masks = top_units(orders, k)  # (B, P, m): removed
        if self.imputation == "reference":
            return (ctx.fx[:, None] - ctx.removed(masks)).mean(axis=1)
        if ctx.groups is not None:
            raise ValueError("imputation='noisy_linear' imputes columns on a pixel grid; it "
                             "does not take groups.")
        shape = NoisyLinear(image_shape=self.image_shape).shape_of(ctx.n)
        if np.any(k >= ctx.m):
            raise ValueError("imputation='noisy_linear' needs every percentage to keep at least "
                             f"one unit; got percentages removing all {ctx.m}.")
        P = k.size
        rows = np.repeat(ctx.X, P, axis=0)
        imputed = noisy_linear_imputation(rows, masks.reshape(ctx.B * P, ctx.n), shape,
                                          noise=self.noise, rng=ctx.rng(self.name, method))
        preds = ctx.predict(imputed).reshape(ctx.B, P)
        return (ctx.fx[:, None] - preds).mean(axis=1)


class IROF(_QuantusMetric):
    """IROF (Rieger & Hansen): area over the curve of f(x_k) / f(x) as segments are removed in
    decreasing mean attribution.

    Source: Rieger & Hansen, *IROF: a low resource evaluation metric for explanation methods*,
    arXiv:2003.08747 (2020). Mirrors ``quantus.IROF``: Quantus cuts images into SLIC superpixels;
    here the units (columns, or groups) are the segments. Segments are ranked by the *mean*
    attribution of their columns (decreasing), removed cumulatively (here set to r; Quantus'
    default fills with the mean of the image), and after each removal ``f(x_k) / f(x)`` is
    recorded; the score is ``L - trapezoid(curve)`` with L the number of segments, the area over
    the curve (higher is better).

    Regression: the ratio to f(x) assumes a positive output, as a class probability is; the score
    is NaN where f(x) = 0.

    Parameters
    ----------
    abs : bool, default False
    """

    name = "irof"
    source = "Rieger & Hansen (2020); quantus.IROF"

    def __init__(self, *, abs: bool = False):
        self.abs = check_bool(abs, "abs")

    def compute(self, ctx: MetricContext, A: np.ndarray, **kwargs) -> np.ndarray:
        a = np.asarray(A, np.float64)
        if ctx.groups is not None:
            a = a / ctx.groups.sizes[None, :]
        orders = rank_of(self._attr(a), order="signed")
        preds = ctx.removed(top_units(orders, np.arange(1, ctx.m + 1)))
        fx = ctx.fx
        ok = fx != 0
        out = np.full(ctx.B, np.nan)
        out[ok] = ctx.m - _trapezoid(preds[ok] / fx[ok, None])
        return out


# ------------------------------------------------------------------------------- sufficiency
class SufficiencyDasgupta(_QuantusMetric):
    """Sufficiency (Dasgupta et al.): among pairs whose explanations are close, the share that
    also get the same prediction.

    Source: Dasgupta, Frost & Moshkovitz, *Framework for evaluating faithfulness of local
    explanations*, ICML (2022). Mirrors ``quantus.Sufficiency``: distances between the
    attribution vectors of the batch (``cdist(..., distance_func)``, default ``"seuclidean"``
    with variances from the batch) are divided by their largest value; j is a neighbour of i
    when that normalised distance is ``<= threshold`` (j != i). The score of i is the share of
    its neighbours that share i's prediction. Higher is better.

    Regression: "same predicted class" becomes ``|f(x_i) - f(x_j)| <= tol``; ``tol=None`` takes
    a tenth of the standard deviation of f(X) over the pairs. The batch is all the pairs scored
    together (Quantus uses each ``batch_size`` chunk, 64 by default). The reference is not used.
    Deviation: a pair with no neighbour scores NaN (Quantus: 0). With ``"seuclidean"``, a unit
    whose attribution is the same on every pair (variance 0) is left out of the distance (its
    term is 0 / 0; scipy and Quantus then get NaN distances, so no pair has a neighbour).

    Parameters
    ----------
    threshold : float, default 0.6
    distance_func : str, default "seuclidean"
        Any metric name :func:`scipy.spatial.distance.cdist` accepts.
    tol : float, optional
        Largest |f(x_i) - f(x_j)| counted as the same prediction.
    abs : bool, default True
    """

    name = "sufficiency_dasgupta"
    source = "Dasgupta et al. (2022); quantus.Sufficiency (|f_i - f_j| <= tol for same class)"

    def __init__(self, *, threshold: float = 0.6, distance_func: str = "seuclidean",
                 tol: float | None = None, abs: bool = True):
        self.threshold = check_scalar(threshold, "threshold", float, min_val=0.0)
        if not isinstance(distance_func, str):
            raise ValueError(f"distance_func must be a metric name of scipy's cdist; got "
                             f"{distance_func!r}.")
        try:
            cdist(np.zeros((1, 2)), np.ones((1, 2)), distance_func)
        except ValueError:
            raise ValueError(f"distance_func {distance_func!r} is not a metric of scipy's "
                             f"cdist.") from None
        self.distance_func = distance_func
        self.tol = None if tol is None else check_scalar(tol, "tol", float, min_val=0.0)
        self.abs = check_bool(abs, "abs")

    def compute(self, ctx: MetricContext, A: np.ndarray, **kwargs) -> np.ndarray:
        a = self._attr(A)
        with np.errstate(invalid="ignore", divide="ignore"):
            if self.distance_func == "seuclidean":
                # scipy's default variances (of the stacked pair of inputs); a unit whose
                # attribution is the same on every pair adds (0 - 0)^2 / 0: left out (it adds
                # nothing), instead of turning every distance into NaN
                var = np.var(np.vstack([a, a]), axis=0, ddof=1)
                keep = var > 0
                d = (cdist(a[:, keep], a[:, keep], "seuclidean", V=var[keep]) if keep.any()
                     else np.zeros((ctx.B, ctx.B)))
            else:
                d = cdist(a, a, self.distance_func)
            mx = np.max(np.abs(d))
            if mx != 0:
                d = d / mx
        sim = (d <= self.threshold) & ~np.eye(ctx.B, dtype=bool)
        fx = ctx.fx
        tol = 0.1 * float(np.std(fx)) if self.tol is None else self.tol
        same = np.abs(fx[:, None] - fx[None, :]) <= tol
        n_nb = sim.sum(1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = (sim & same).sum(1) / n_nb
        return np.where(n_nb == 0, np.nan, out)
