"""Every pairwise comparison of a block's methods, with multiplicity control.

For K methods scored on the same G independent units (:mod:`insdel.verdicts._block`: pairs
averaged per unit), each of the K (K - 1) / 2 comparisons a - b is the paired t test of the unit
differences d_g = y_ga - y_gb: mean, standard error s_d / sqrt(G), t with G - 1 degrees of
freedom, the two-sided p-value, Holm's step-down adjustment (Holm, 1979), the effect size
d_z = mean / s_d (Cohen's paired d) and the unadjusted t interval.

The resampling max-T (Westfall & Young, 1993) uses the dependence between the comparisons (they
share methods and units): the centred differences e_g = d_g - mean are resampled jointly for all
comparisons, by sign flips of whole units (``resampling="sign-flip"``, valid when each unit's
vector of differences is symmetric about its mean) or by the bootstrap of units
(``"bootstrap"``, asymptotic), and each replicate gives the largest studentised |t*| over the
comparisons. Its 1 - alpha quantile c is the critical value of the simultaneous intervals
mean ± c se (all of them cover their true differences together with probability 1 - alpha), and
the step-down adjusted p-values (Westfall & Young's algorithm 2.8) control the family-wise error.
With 2^G <= ``n_resamples`` the sign flips are enumerated exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .._validation import check_bool, check_choice, check_positive_int, check_scalar, check_seed
from ._block import Block, as_block

__all__ = ["Comparisons", "compare", "holm", "RESAMPLING", "ADJUSTMENTS"]

#: How the max-T distribution is drawn.
RESAMPLING = ("sign-flip", "bootstrap")
#: The p-values a verdict may read: unadjusted, Holm's, the resampling max-T's.
ADJUSTMENTS = ("none", "holm", "maxt")
_CHUNK = 512  # resamples per matrix product: bounds the memory to _CHUNK x G


def holm(p: ArrayLike) -> np.ndarray:
    """Holm's step-down adjusted p-values (monotone, capped at 1), in the order given."""
    p = np.asarray(p, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    adj = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return out


def _t_stats(mean: np.ndarray, sd: np.ndarray, G: int) -> np.ndarray:
    """mean / (sd / sqrt(G)); 0 where both are 0 (identical columns), +-inf where only sd is."""
    se = sd / np.sqrt(G)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / se
        return np.where(se > 0, t, np.where(mean == 0, 0.0, np.sign(mean) * np.inf))


def _max_t(e: np.ndarray, resampling: str, n: int, seed: int) -> tuple[np.ndarray, bool]:
    """(R, C) resampled |t*| of the centred differences ``e`` (G, C), and whether exact."""
    G = e.shape[0]
    rng = np.random.default_rng(seed)
    ss = (e ** 2).sum(axis=0)
    exact = resampling == "sign-flip" and G < 63 and 2 ** G <= n
    if exact:  # every sign vector once: bits of 0 .. 2^G - 1
        codes = np.arange(2 ** G, dtype=np.int64)
        n = codes.size
    out = np.empty((n, e.shape[1]))
    for lo in range(0, n, _CHUNK):
        hi = min(n, lo + _CHUNK)
        if resampling == "sign-flip":
            if exact:
                S = 1.0 - 2.0 * ((codes[lo:hi, None] >> np.arange(G)) & 1)
            else:
                S = 2.0 * rng.integers(0, 2, size=(hi - lo, G)) - 1.0
            m = S @ e / G
            var = np.maximum(ss - G * m ** 2, 0.0) / (G - 1)  # (s e)^2 = e^2: sums are fixed
        else:
            W = rng.multinomial(G, np.full(G, 1.0 / G), size=hi - lo).astype(np.float64)
            m = W @ e / G
            var = np.maximum(W @ e ** 2 / G - m ** 2, 0.0) * G / (G - 1)
        out[lo:hi] = np.abs(_t_stats(m, np.sqrt(var), G))
    return out, exact


def _step_down(t_abs: np.ndarray, reps: np.ndarray, exact: bool) -> np.ndarray:
    """Westfall & Young's step-down max-T adjusted p-values: the r-th largest |t| against the
    maximum of the replicates over the comparisons not larger than it, made monotone. Drawn
    replicates count the observed statistic once, (1 + #exceeding) / (1 + n); enumerated ones
    are the whole distribution, #exceeding / n."""
    order = np.argsort(-t_abs, kind="stable")
    # running maxima from the smallest |t| upwards: q[:, r] = max over order[r:]
    q = np.maximum.accumulate(reps[:, order[::-1]], axis=1)[:, ::-1]
    n = reps.shape[0]
    exceed = (q >= t_abs[order][None, :] * (1 - 1e-12)).sum(axis=0)
    p = np.maximum.accumulate(exceed / n if exact else (1 + exceed) / (1 + n))
    out = np.empty_like(p)
    out[order] = np.minimum(p, 1.0)
    return out


@dataclass
class Comparisons:
    """Every pairwise comparison of one block (:func:`compare`).

    Attributes
    ----------
    methods : list of str
        The block's methods, in the order given.
    means : ndarray (K,)
        Each method's mean over the units (negated when ``higher_is_better`` is False).
    pairs : list of (str, str)
        The comparisons a - b, a before b in ``methods``.
    mean, se, t, p, p_holm, p_maxt, d_z, ci_low, ci_high, sci_low, sci_high : ndarray (C,)
        Per comparison: mean unit difference a - b (oriented so that positive = a better),
        its standard error, t (df = ``n_units - 1``), the two-sided paired-t p-value, Holm's and
        the max-T step-down adjusted p-values, d_z = mean / s.d., the unadjusted ``level`` t
        interval, the simultaneous ``level`` max-T interval (mean ± ``crit`` se).
    crit : float
        The max-T critical value (the ``level`` quantile of max |t*|).
    n_units, n_pairs : int
    level : float
    resampling : str
    n_resamples : int
        Replicates drawn (2^G when ``exact``).
    exact : bool
        The sign flips were enumerated.
    higher_is_better : bool
        False: the scores were negated before comparing (lower raw score = better); ``mean``
        and the intervals are of the negated scores.
    """

    methods: list
    means: np.ndarray
    pairs: list
    mean: np.ndarray
    se: np.ndarray
    t: np.ndarray
    p: np.ndarray
    p_holm: np.ndarray
    p_maxt: np.ndarray
    d_z: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    sci_low: np.ndarray
    sci_high: np.ndarray
    crit: float
    n_units: int
    n_pairs: int
    level: float
    resampling: str
    n_resamples: int
    exact: bool
    higher_is_better: bool = True

    @property
    def alpha(self) -> float:
        return 1.0 - self.level

    def adjusted(self, adjust: str = "holm") -> np.ndarray:
        """The p-values of ``adjust`` ("none", "holm" or "maxt")."""
        check_choice("adjust", adjust, ADJUSTMENTS)
        return {"none": self.p, "holm": self.p_holm, "maxt": self.p_maxt}[adjust]

    def table(self) -> pd.DataFrame:
        """One row per comparison: ``a, b, mean, se, t, df, p, p_holm, p_maxt, d_z, ci_low,
        ci_high, sci_low, sci_high, n_units, n_pairs``."""
        a, b = zip(*self.pairs, strict=True) if self.pairs else ((), ())
        return pd.DataFrame({
            "a": list(a), "b": list(b), "mean": self.mean, "se": self.se, "t": self.t,
            "df": self.n_units - 1, "p": self.p, "p_holm": self.p_holm, "p_maxt": self.p_maxt,
            "d_z": self.d_z, "ci_low": self.ci_low, "ci_high": self.ci_high,
            "sci_low": self.sci_low, "sci_high": self.sci_high, "n_units": self.n_units,
            "n_pairs": self.n_pairs})

    def better(self, adjust: str = "holm") -> np.ndarray:
        """(K, K) bool: ``[i, j]`` when method i is better than j at ``1 - level``, by the
        ``adjust`` p-values (with "maxt", equivalently: its simultaneous interval excludes 0)."""
        p = self.adjusted(adjust)
        K = len(self.methods)
        out = np.zeros((K, K), dtype=bool)
        for c, (a, b) in enumerate(self.pairs):
            if p[c] < self.alpha:
                i, j = self.methods.index(a), self.methods.index(b)
                out[(i, j) if self.mean[c] > 0 else (j, i)] = True
        return out

    def verdicts(self, adjust: str = "holm", *, digits: int = 3) -> list[str]:
        """One plain sentence per comparison, the clearest first: ``"A > B (p_holm = 0.003)"``
        (A better), ``"A and B cannot be told apart (p_holm = 0.41)"``."""
        p = self.adjusted(adjust)
        name = {"none": "p", "holm": "p_holm", "maxt": "p_maxt"}[adjust]
        out = []
        for c in np.argsort(p, kind="stable"):
            a, b = self.pairs[c]
            ps = _p_text(p[c], digits)
            if p[c] < self.alpha:
                hi, lo = (a, b) if self.mean[c] > 0 else (b, a)
                out.append(f"{hi} > {lo} ({name} {ps})")
            else:
                out.append(f"{a} and {b} cannot be told apart ({name} {ps})")
        return out

    def summary_text(self, adjust: str = "holm") -> str:
        """The verdicts as one Markdown paragraph with what they rest on."""
        what = {"none": "unadjusted paired t tests", "holm": "paired t tests, Holm-adjusted",
                "maxt": f"max-T ({self.resampling}, {self.n_resamples} resamples)"}[adjust]
        return (f"Verdicts at α = {self.alpha:g} ({what}; {len(self.pairs)} comparisons over "
                f"{self.n_units} independent units): " + "; ".join(self.verdicts(adjust)) + ".")


def _p_text(p: float, digits: int) -> str:
    small = 10.0 ** -digits
    return f"< {small:g}" if p < small else f"= {p:.{digits}f}"


def compare(scores, methods: Sequence[str] | None = None, *, clusters: ArrayLike | None = None,
            level: float = 0.95, resampling: str = "sign-flip", n_resamples: int = 10_000,
            seed: int = 0, higher_is_better: bool = True) -> Comparisons:
    """All pairwise paired comparisons of a block's methods, Holm- and max-T-adjusted.

    Parameters
    ----------
    scores : array_like (P, K) or pandas.DataFrame
        Per-pair scores of K methods on the same P pairs (a DataFrame's columns name them).
    methods : sequence of str, optional
        The K names (default: the DataFrame's columns, else ``m0 .. m{K-1}``).
    clusters : array_like (P,), optional
        Unit id of each pair (:func:`insdel._stats.unit_ids`; a pair and its mirror are one
        unit): pairs are averaged per unit and every test is over the G units. None: every pair
        is a unit.
    level : float, default 0.95
        1 - alpha of the tests and the intervals.
    resampling : {"sign-flip", "bootstrap"}
        How the max-T distribution is drawn (module docstring).
    n_resamples : int, default 10000
        Max-T replicates; the sign flips are enumerated when 2^G is not larger.
    seed : int, default 0
    higher_is_better : bool, default True
        False: lower scores are better (the scores are negated first).

    Returns
    -------
    Comparisons

    Raises
    ------
    ValueError
        Fewer than 2 methods or 2 units, NaN scores, names that do not fit (:func:`as_block`).
    """
    level = check_scalar(level, "level", float, min_val=0.0, max_val=1.0,
                         include_boundaries="neither", finite=True)
    check_choice("resampling", resampling, RESAMPLING)
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    seed = check_seed(seed)
    higher_is_better = check_bool(higher_is_better, "higher_is_better")
    blk = as_block(scores, methods, clusters=clusters, higher_is_better=higher_is_better)
    return _compare(blk, level, resampling, n_resamples, seed, higher_is_better)


def _compare(blk: Block, level: float, resampling: str, n_resamples: int, seed: int,
             higher_is_better: bool) -> Comparisons:
    from scipy import stats

    Y, G = blk.Y, blk.n_units
    K = Y.shape[1]
    ia, ib = np.triu_indices(K, k=1)
    D = Y[:, ia] - Y[:, ib]  # (G, C)
    mean = D.mean(axis=0)
    sd = D.std(axis=0, ddof=1)
    se = sd / np.sqrt(G)
    t = _t_stats(mean, sd, G)
    p = 2.0 * stats.t.sf(np.abs(t), G - 1)
    q = stats.t.ppf(0.5 + level / 2.0, G - 1)
    reps, exact = _max_t(D - mean, resampling, n_resamples, seed)
    mx = reps.max(axis=1)
    crit = float(np.quantile(mx, level, method="higher"))
    with np.errstate(invalid="ignore", divide="ignore"):
        d_z = np.where(sd > 0, mean / np.where(sd > 0, sd, 1.0), np.nan)
    return Comparisons(
        methods=list(blk.methods), means=Y.mean(axis=0), pairs=[(blk.methods[i], blk.methods[j])
                                          for i, j in zip(ia, ib, strict=True)],
        mean=mean, se=se, t=t, p=p, p_holm=holm(p), p_maxt=_step_down(np.abs(t), reps, exact),
        d_z=d_z, ci_low=mean - q * se, ci_high=mean + q * se, sci_low=mean - crit * se,
        sci_high=mean + crit * se, crit=crit, n_units=G, n_pairs=blk.n_pairs, level=level,
        resampling=resampling, n_resamples=int(reps.shape[0]), exact=exact,
        higher_is_better=higher_is_better)
