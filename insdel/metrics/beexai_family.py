"""BEExAI's faithfulness table (Sithakoul et al., *BEExAI: Benchmark to Evaluate Explainable AI*,
2024, Appendix B; code ``beexai.evaluate.metrics``, version 0.0.6), on insdel's pairs.

Where BEExAI replaces features by a baseline (``baseline="zero"``, the mean, ...), insdel replaces
units by the pair's reference r, so a hybrid point is evaluated once on the shared cache; with
``R`` equal to BEExAI's baseline rows the two coincide (the tests check this against BEExAI's own
classes). BEExAI's regression form (its §4.2) is the default: features are ranked by ``|a|`` and
prediction changes are taken in absolute value, ``|f(x) - f(x')|``.

BEExAI returns one number per data set (a mean over samples, or a statistic of pooled values);
insdel returns one score per pair, and the data-set mean of the per-pair scores is BEExAI's number
for comprehensiveness, sufficiency, infidelity, complexity and sparseness. For monotonicity,
faithfulness correlation and AUC-TP BEExAI pools the pairs before the last step; there insdel
computes BEExAI's statistic on each pair alone (what BEExAI returns for a one-sample data set), and
:class:`AucTp` also offers BEExAI's pooled value (``level="dataset"``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._validation import check_choice, check_scalar
from ..groups import group_attributions
from ..ordering import random_permutations
from ..tracing import check_order
from .base import Metric, MetricContext, pearson_rows, rank_of, top_units

__all__ = ["Comprehensiveness", "Sufficiency", "AucTp", "MonotonicityBEExAI",
           "FaithfulnessCorrelationBEExAI", "Infidelity", "Sensitivity", "Sparseness",
           "Complexity"]


def _check_ratios(name: str, value) -> tuple[float, ...]:
    """A ratio in [0, 1] or a non-empty sequence of them (BEExAI averages over a list)."""
    vals = [value] if not isinstance(value, (list, tuple, np.ndarray)) else list(value)
    if not vals:
        raise ValueError(f"{name} must be a ratio in [0, 1] or a non-empty list of them.")
    return tuple(check_scalar(v, f"{name}", float, min_val=0.0, max_val=1.0) for v in vals)


class _RatioMetric(Metric):
    family = "beexai"
    higher_is_better = True

    def __init__(self, *, ratio: float | Sequence[float] = 0.3, order: str = "absolute"):
        self.ratio = _check_ratios("ratio", ratio)
        self.order = check_order(order)

    def _gaps(self, ctx: MetricContext, A: np.ndarray, *, keep: bool) -> np.ndarray:
        ks = [int(ctx.m * q) for q in self.ratio]  # BEExAI: int(n_features * ratio)
        masks = top_units(rank_of(A, order=self.order), ks)  # (B, Q, m): the top k units
        v = ctx.values(masks) if keep else ctx.removed(masks)
        return np.abs(ctx.fx[:, None] - v).mean(axis=1)


class Comprehensiveness(_RatioMetric):
    """Comprehensiveness: ``|f(x) - f(x with its top q units taken from r)|`` (higher is better).

    Source: BEExAI Appendix B eq. (4) (DeYoung et al., ERASER), BEExAI's regression form (§4.2):
    the absolute change, units ranked by ``|a|``; ``k = int(m q)`` units removed. With a list of
    ratios the score is the mean over them (as ``Comprehensiveness.get_comp``). Removed units take
    the reference's values (BEExAI: the baseline's).

    Parameters
    ----------
    ratio : float or sequence of float, default 0.3
        Fraction q of units removed (BEExAI's default 30 %).
    order : {"absolute", "signed", "ascending"}, default "absolute"
        How units are ranked (BEExAI's regression: decreasing ``|a|``).
    """

    name = "comprehensiveness"
    source = "BEExAI (Sithakoul et al. 2024) App. B eq. (4); DeYoung et al. (ERASER)"

    def compute(self, ctx: MetricContext, A: np.ndarray, **kwargs) -> np.ndarray:
        return self._gaps(ctx, A, keep=False)


class Sufficiency(_RatioMetric):
    """Sufficiency: ``|f(x) - f(r with the top q units of x put back)|`` (lower is better).

    Source: BEExAI Appendix B eq. (5) (DeYoung et al., ERASER), BEExAI's regression form: the
    absolute change; ``k = int(m q)`` units kept from x, the rest from r. Keeping every unit gives 0.

    Parameters
    ----------
    ratio : float or sequence of float, default 0.3
        Fraction r of units kept (BEExAI's default 30 %); a list is averaged over.
    order : {"absolute", "signed", "ascending"}, default "absolute"
    """

    name = "sufficiency"
    source = "BEExAI (Sithakoul et al. 2024) App. B eq. (5); DeYoung et al. (ERASER)"
    higher_is_better = False

    def compute(self, ctx: MetricContext, A: np.ndarray, **kwargs) -> np.ndarray:
        return self._gaps(ctx, A, keep=True)


def auctp_transform(curve: np.ndarray, n_units: int) -> np.ndarray:
    """BEExAI's regression AUC-TP of removal curves ``curve`` (..., m) of squared errors.

    A transcription of ``AucTp.get_auctp``'s regression branch: ``e + 0.01 mean(e)``, kept where
    its central-difference slope against ``1 - 1/i`` is positive, inverted (``1 / e``), min-max
    scaled (``+ 1e-8``) and integrated by the trapezoid rule (unit spacing), divided by the
    number of units. NaN where a curve is identically 0 (f does not move) or m < 3.
    """
    e = np.asarray(curve, dtype=np.float64)
    m = e.shape[-1]
    if m < 3:
        return np.full(e.shape[:-1], np.nan)
    a = e + 0.01 * e.mean(axis=-1, keepdims=True)
    xr = np.arange(1, m + 1, dtype=np.float64)
    dratio = 1 - 1 / (xr + 1e-8)
    dmse = np.zeros_like(a)
    dmse[..., 1:-1] = (a[..., 2:] - a[..., :-2]) / (dratio[2:] - dratio[:-2])
    with np.errstate(divide="ignore", invalid="ignore"):
        ind = dmse / dratio > 0
        inv = (1 / a) * ind  # as BEExAI: inf * 0 = NaN where the curve is 0
    lo, hi = inv.min(axis=-1, keepdims=True), inv.max(axis=-1, keepdims=True)
    s = (inv - lo) / (hi - lo + 1e-8)
    return (s[..., 1:] + s[..., :-1]).sum(axis=-1) / 2 / n_units


class AucTp(Metric):
    """AUC-TP, area under the threshold-performance curve, BEExAI's regression form (lower is better).

    Source: BEExAI Appendix B (Atanasova et al. 2020) and ``beexai/evaluate/metrics/auc_tp.py``.
    The curve is the squared error ``e_i = (f(x) - f(x with its top i units from r))^2`` for
    i = 0..m-1 (BEExAI: the MSE over the test set); the regression branch keeps the points where
    the error grows, inverts them, scales them to [0, 1] and integrates (see
    :func:`auctp_transform`).

    Parameters
    ----------
    level : {"pair", "dataset"}, default "pair"
        ``"pair"``: the transform applied to each pair's own curve (BEExAI's value for a one-pair
        data set). ``"dataset"``: BEExAI's value on all the pairs (the curve is the mean of the
        pairs' squared errors, i.e. the test-set MSE) repeated for every pair, so its standard
        error across pairs is meaningless.
    order : {"absolute", "signed", "ascending"}, default "absolute"
    """

    name = "auc_tp"
    family = "beexai"
    source = "BEExAI (Sithakoul et al. 2024) App. B, auc_tp.py regression branch; Atanasova et al."
    higher_is_better = False

    def __init__(self, *, level: str = "pair", order: str = "absolute"):
        self.level = check_choice("level", level, ("pair", "dataset"))
        self.order = check_order(order)

    def compute(self, ctx: MetricContext, A: np.ndarray, **kwargs) -> np.ndarray:
        masks = top_units(rank_of(A, order=self.order), np.arange(ctx.m))  # i = 0..m-1 removed
        e = (ctx.fx[:, None] - ctx.removed(masks)) ** 2
        if self.level == "dataset":
            return np.full(ctx.B, auctp_transform(e.mean(axis=0), ctx.m))
        return auctp_transform(e, ctx.m)


class MonotonicityBEExAI(Metric):
    """Monotonicity, BEExAI's form (higher is better): the share of steps whose gain is no larger
    than the step before.

    Source: BEExAI Appendix B eq. (6) (Luss et al.) and ``monotonicity.py``. Units are put back
    from r to x in decreasing importance; with ``c_k = |f(x) - f(r with the top k units of x)|``
    (k = 0..m, regression form) and ``d_k = c_{k+1} - c_k``, the score is
    ``mean_{k=0..m-2} 1[d_k <= d_{k+1}]`` (the curve falls fastest first). NaN for m < 2.

    Parameters
    ----------
    first_point : {"gap", "beexai"}, default "gap"
        ``c_0``: ``"gap"`` is ``|f(x) - f(r)|``, the curve's own k = 0 point; ``"beexai"`` is
        ``f(r)`` as BEExAI 0.0.6's code has it (``pred_t[0] = pred_0``, not shift invariant).
    order : {"absolute", "signed", "ascending"}, default "absolute"

    Notes
    -----
    BEExAI averages the curves over the data set before counting; insdel counts per pair (BEExAI's
    value for a one-pair data set).
    """

    name = "monotonicity_beexai"
    family = "beexai"
    source = "BEExAI (Sithakoul et al. 2024) App. B eq. (6); Luss et al."
    higher_is_better = True

    def __init__(self, *, first_point: str = "gap", order: str = "absolute"):
        self.first_point = check_choice("first_point", first_point, ("gap", "beexai"))
        self.order = check_order(order)

    def compute(self, ctx: MetricContext, A: np.ndarray, **kwargs) -> np.ndarray:
        if ctx.m < 2:
            return np.full(ctx.B, np.nan)
        masks = top_units(rank_of(A, order=self.order), np.arange(ctx.m + 1))
        c = np.abs(ctx.values(masks) - ctx.fx[:, None])  # (B, m + 1)
        if self.first_point == "beexai":
            c[:, 0] = ctx.fr
        d = np.diff(c, axis=1)
        return (d[:, :-1] <= d[:, 1:]).mean(axis=1)


class FaithfulnessCorrelationBEExAI(Metric):
    """Faithfulness correlation, BEExAI's form (higher is better).

    Source: BEExAI Appendix B eq. (3) (Bhatt et al. 2020) and ``faithfulnesscorr.py``: the Pearson
    correlation, over ``n_repeats`` random subsets S of ``max(int(m * subset_fraction), 1)`` units,
    between the attributions summed over S and ``f(x) - f(x with S from r)``; regression form
    (``absolute=True``): both in absolute value. NaN where either is constant.

    Parameters
    ----------
    subset_fraction : float, default 0.2
        |S| / m (BEExAI's default 20 %).
    n_repeats : int, default 20
        Subsets per pair (BEExAI's default).
    absolute : bool, default True
        BEExAI's regression form: ``|a|`` and ``|f(x) - f(x_S)|``; False: signed (Bhatt et al.).

    Notes
    -----
    Deviations from BEExAI 0.0.6, whose code draws one list of subsets for all samples, with
    replacement (so a subset may repeat a feature), averages (rather than sums) the attributions and
    pools all samples into one correlation: insdel draws subsets without replacement per pair,
    seeded by ``ctx.rng(name, method)``, and correlates per pair. With one pair and subsets without
    repeats the two agree (the mean is the sum over |S|, a constant).
    """

    name = "faithfulness_correlation_beexai"
    family = "beexai"
    source = "BEExAI (Sithakoul et al. 2024) App. B eq. (3); Bhatt et al. (2020)"
    higher_is_better = True

    def __init__(self, *, subset_fraction: float = 0.2, n_repeats: int = 20,
                 absolute: bool = True):
        self.subset_fraction = check_scalar(subset_fraction, "subset_fraction", float,
                                            min_val=0.0, max_val=1.0, include_boundaries="right")
        self.n_repeats = check_scalar(n_repeats, "n_repeats", int, min_val=2)
        self.absolute = check_scalar(absolute, "absolute", bool)

    def subsets(self, ctx: MetricContext, method=None) -> np.ndarray:
        """The random subsets (B, n_repeats, m) of a call, True = unit taken from r."""
        s = max(int(ctx.m * self.subset_fraction), 1)
        order = random_permutations(ctx.rng(self.name, method), (ctx.B, self.n_repeats, ctx.m))
        pos = np.argsort(order, axis=-1, kind="stable")  # each unit's place in the ordering
        return pos < s

    def compute(self, ctx: MetricContext, A: np.ndarray, *, method=None, **kwargs) -> np.ndarray:
        S = self.subsets(ctx, method)
        delta = ctx.fx[:, None] - ctx.removed(S)
        attr = np.abs(A) if self.absolute else A
        sums = (S * attr[:, None, :]).sum(axis=-1)
        if self.absolute:
            delta = np.abs(delta)
        return pearson_rows(sums, delta)


class Infidelity(Metric):
    """Infidelity (Yeh et al. 2019), BEExAI's metric (lower is better).

    Source: BEExAI Appendix B eq. (7): ``E_I[(I^T a - (f(x) - f(x - I)))^2]`` over ``n_samples``
    draws of the perturbation I.

    - ``perturbation="reference"`` (default): I moves a random subset S of units (each with
      probability ``p``) from x to r, ``x - I = hybrid`` (evaluated on the shared cache). As
      insdel's attributions explain ``f(x) - f(r)`` (they already carry the factor x - r), I is
      read per unit as the indicator of S, so ``I^T a = sum_{j in S} a_j``: captum's
      ``infidelity`` with ``infidelity_perturb_func_decorator(multiply_by_inputs=True)`` and
      ``baselines=R`` computes the same numbers (checked in the tests).
    - ``perturbation="gaussian"``: BEExAI's I ~ N(0, sigma^2) per column, ``x - I`` through
      ``ctx.predict`` (no groups: ``I^T a`` needs column attributions).

    Parameters
    ----------
    perturbation : {"reference", "gaussian"}, default "reference"
    n_samples : int, default 5
        Draws of I per pair (BEExAI draws 5 per standard deviation).
    p : float, default 0.5
        Probability that a unit is in S (reference perturbation).
    sigma : float or "auto", default "auto"
        Standard deviation of the Gaussian perturbation; ``"auto"``: each column's standard
        deviation over the pairs' targets (BEExAI's benchmark, ``inf_std = std(x_test)``; its
        class default is 0.003).
    absolute : bool, default False
        BEExAI's regression form: ``|a|`` and ``|f(x) - f(x - I)|``.

    Notes
    -----
    BEExAI 0.0.6's noise generator returns ``x - eps`` and its caller subtracts that again, so its
    perturbed points are ``eps`` itself, not ``x - eps``; insdel follows eq. (7) (the tests feed
    both the same I). The score is computed in numpy rather than through captum so that hybrids
    go through the cache and the absolute form is available.
    """

    name = "infidelity"
    family = "beexai"
    source = "BEExAI (Sithakoul et al. 2024) App. B eq. (7); Yeh et al. (2019)"
    higher_is_better = False

    def __init__(self, *, perturbation: str = "reference", n_samples: int = 5, p: float = 0.5,
                 sigma: float | str = "auto", absolute: bool = False):
        self.perturbation = check_choice("perturbation", perturbation, ("reference", "gaussian"))
        self.n_samples = check_scalar(n_samples, "n_samples", int, min_val=1)
        self.p = check_scalar(p, "p", float, min_val=0.0, max_val=1.0)
        if isinstance(sigma, str):
            self.sigma = check_choice("sigma", sigma, ("auto",))
        else:
            self.sigma = check_scalar(sigma, "sigma", float, min_val=0.0,
                                      include_boundaries="neither")
        self.absolute = check_scalar(absolute, "absolute", bool)

    def perturbations(self, ctx: MetricContext, method=None) -> np.ndarray:
        """The draws of a call: (B, K, m) bool subsets S (reference) or (K, B, n) noise I."""
        rng = ctx.rng(self.name, method)
        if self.perturbation == "reference":
            return rng.random((ctx.B, self.n_samples, ctx.m)) < self.p
        sd = ctx.X.std(axis=0) if self.sigma == "auto" else self.sigma
        if np.all(sd == 0):
            raise ValueError("infidelity: sigma='auto' takes each column's standard deviation "
                             "over the targets, and they do not vary; give sigma=<float>.")
        return rng.normal(0.0, 1.0, (self.n_samples, ctx.B, ctx.n)) * sd

    def compute(self, ctx: MetricContext, A: np.ndarray, *, method=None, **kwargs) -> np.ndarray:
        attr = np.abs(A) if self.absolute else A
        if self.perturbation == "reference":
            S = self.perturbations(ctx, method)
            explained = (S * attr[:, None, :]).sum(axis=-1)  # (B, K)
            delta = ctx.fx[:, None] - ctx.removed(S)
        else:
            if ctx.groups is not None:
                raise ValueError("infidelity: perturbation='gaussian' needs column attributions; "
                                 "use perturbation='reference' with groups.")
            eps = self.perturbations(ctx, method)  # (K, B, n)
            explained = np.einsum("kbn,bn->bk", eps, attr)
            delta = ctx.fx[:, None] - ctx.predict(ctx.X[None] - eps).T
        if self.absolute:
            delta = np.abs(delta)
        return ((explained - delta) ** 2).mean(axis=1)


class Sensitivity(Metric):
    """Max-sensitivity (Yeh et al. 2019), BEExAI's form (lower is better); re-explains perturbed
    targets.

    Source: BEExAI Appendix B eq. (8) and ``sensitivity.py``: ``max_k ||a(x) - a(x - d_k)|| /
    rho_k`` over ``n_samples`` draws d_k uniform in ``[-radius, radius]`` per column. The
    explainer is called as ``explainer(X - d, R)`` (the reference stays r); ``a(x)`` is the
    attributions being scored.

    Parameters
    ----------
    n_samples : int, default 5
        Perturbations per pair (BEExAI's default).
    radius : float or "auto", default 0.5
        Half-width of the uniform noise (BEExAI's class default); ``"auto"``: per column, the mean
        ``|x_i - x_j|`` over pairs of targets (BEExAI's benchmark default). ``"auto"`` needs at
        least two targets that differ somewhere: with one target (no pair) or identical targets
        the radius would be 0, no perturbation, and every score NaN, so that is an error (give
        ``radius=`` a number).
    normalize : {"noise", "explanation", "none"}, default "noise"
        rho_k: ``||d_k||`` (BEExAI), ``||a(x)||`` (captum's ``sensitivity_max``), or 1 (eq. 8).

    Notes
    -----
    BEExAI 0.0.6 divides by the norm of the whole batch's noise matrix and multiplies by 100 for
    display; insdel uses each pair's own ``||d_k||`` and no factor (a one-pair BEExAI run equals
    100 times insdel's score).
    """

    name = "sensitivity"
    family = "beexai"
    source = "BEExAI (Sithakoul et al. 2024) App. B eq. (8); Yeh et al. (2019)"
    higher_is_better = False
    needs_explainer = True

    def __init__(self, *, n_samples: int = 5, radius: float | str = 0.5,
                 normalize: str = "noise"):
        self.n_samples = check_scalar(n_samples, "n_samples", int, min_val=1)
        if isinstance(radius, str):
            self.radius = check_choice("radius", radius, ("auto",))
        else:
            self.radius = check_scalar(radius, "radius", float, min_val=0.0,
                                       include_boundaries="neither")
        self.normalize = check_choice("normalize", normalize, ("noise", "explanation", "none"))

    def noise(self, ctx: MetricContext, method=None) -> np.ndarray:
        """The draws d of a call, (K, B, n)."""
        if self.radius == "auto":
            B = ctx.B
            if B < 2:
                raise ValueError("sensitivity: radius='auto' is the mean |x_i - x_j| over pairs of "
                                 f"targets and needs at least 2 targets; got {B}. Give radius= a "
                                 "number (e.g. radius=0.5, BEExAI's default).")
            Xs = np.sort(ctx.X, axis=0)
            w = 2 * np.arange(B) - B + 1
            rad = (w[:, None] * Xs).sum(axis=0) / (B * (B - 1) / 2)
            if not np.any(rad > 0):
                raise ValueError(f"sensitivity: radius='auto' is 0 in every column (the {B} "
                                 "targets are identical), so nothing would be perturbed. Give "
                                 "radius= a number (e.g. radius=0.5, BEExAI's default).")
        else:
            rad = self.radius
        u = ctx.rng(self.name, method).random((self.n_samples, ctx.B, ctx.n))
        return 2 * rad * u - rad

    def compute(self, ctx: MetricContext, A: np.ndarray, *, explainer=None, method=None,
                **kwargs) -> np.ndarray:
        if explainer is None or not callable(explainer):
            raise ValueError("sensitivity needs explainer=callable(X, R) -> attributions.")
        d = self.noise(ctx, method)
        K = self.n_samples
        Xp = (ctx.X[None] - d).reshape(K * ctx.B, ctx.n)
        Rp = np.tile(ctx.reference(self.name), (K, 1))
        Ap = np.asarray(explainer(Xp, Rp), dtype=np.float64)
        if Ap.shape[0] != K * ctx.B:
            raise ValueError(f"sensitivity: the explainer returned {Ap.shape[0]} rows for "
                             f"{K * ctx.B} inputs.")
        Ap = group_attributions(Ap, ctx.groups, name="explainer output").reshape(K, ctx.B, ctx.m)
        num = np.linalg.norm(A[None] - Ap, axis=-1)  # (K, B)
        if self.normalize == "noise":
            den = np.linalg.norm(d, axis=-1)
        elif self.normalize == "explanation":
            den = np.broadcast_to(np.linalg.norm(A, axis=-1)[None], num.shape)
        else:
            den = np.ones_like(num)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(den > 0, num / den, np.nan)
        return ratio.max(axis=0)


class Sparseness(Metric):
    """Sparseness: the Gini index of ``|a|`` (higher is better); no model calls.

    Source: BEExAI Appendix B eq. (2) (Chalasani et al.): with ``v`` the sorted ``|a|``
    (non-decreasing), ``G = 1 - 2 sum_k v_k / ||v||_1 (m - k + 0.5) / m``. NaN when a = 0 (BEExAI
    adds 1e-8 to the denominator and reports 1).
    """

    name = "sparseness"
    family = "beexai"
    source = "BEExAI (Sithakoul et al. 2024) App. B eq. (2); Chalasani et al. (2020)"
    higher_is_better = True

    def compute(self, ctx: MetricContext, A: np.ndarray, **kwargs) -> np.ndarray:
        v = np.sort(np.abs(A), axis=-1)
        m = v.shape[-1]
        w = (m - np.arange(1, m + 1) + 0.5) / m
        tot = v.sum(axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            g = 1 - 2 * (v * w).sum(axis=-1) / tot
        return np.where(tot > 0, g, np.nan)


class Complexity(Metric):
    """Complexity: the entropy of the fractional contributions ``|a_j| / sum |a|`` (lower is
    better); no model calls.

    Source: BEExAI Appendix B eq. (1) (Bhatt et al. 2020), ``0 ln 0 = 0``. NaN when a = 0.

    Parameters
    ----------
    normalize : {"n", "log", "none"}, default "n"
        Divide the entropy by the number of units m (BEExAI's code), by ``ln m`` (so that it lies
        in [0, 1]) or not at all.
    """

    name = "complexity"
    family = "beexai"
    source = "BEExAI (Sithakoul et al. 2024) App. B eq. (1); Bhatt et al. (2020)"
    higher_is_better = False

    def __init__(self, *, normalize: str = "n"):
        self.normalize = check_choice("normalize", normalize, ("n", "log", "none"))

    def compute(self, ctx: MetricContext, A: np.ndarray, **kwargs) -> np.ndarray:
        a = np.abs(A)
        tot = a.sum(axis=-1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = a / tot
            h = -np.where(p > 0, p * np.log(p), 0.0).sum(axis=-1)
        m = a.shape[-1]
        div = {"n": m, "log": np.log(m) if m > 1 else np.nan, "none": 1.0}[self.normalize]
        return np.where(tot[:, 0] > 0, h / div, np.nan)
