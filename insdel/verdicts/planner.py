"""How many pairs a study needs: the paired t test's power from a pilot block.

To tell methods a and b apart when their true mean difference is ``margin`` (delta), at
two-sided level alpha / ``n_comparisons`` (Bonferroni: Holm's first step, its worst case, with
the K (K - 1) / 2 comparisons of a block), with power 1 - beta: the smallest number of
independent units G with P(|T| > t_{1 - alpha', G - 1}) >= 1 - beta, T a noncentral t with
G - 1 degrees of freedom and noncentrality delta sqrt(G) / sigma, sigma the pilot's standard
deviation of the unit differences (the same formula as statsmodels' ``TTestPower``). Pairs =
units x the pilot's pairs per unit (2 when every pair has its mirror).

:func:`simulated_power` checks the figure without the normal assumption: it draws G units with
replacement from the pilot's differences, shifted to mean delta, and counts the paired t tests
that reject.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_positive_int, check_scalar, check_seed
from ._block import as_block

__all__ = ["Plan", "plan", "units_needed", "power_of", "simulated_power", "simulated_units"]


def _checked(margin, sd, alpha, n_comparisons):
    margin = check_scalar(margin, "margin", float, finite=True)
    if margin <= 0:
        raise ValueError(f"margin must be > 0 (the true difference to detect); got {margin!r}.")
    sd = check_scalar(sd, "sd", float, min_val=0.0, include_boundaries="neither", finite=True)
    alpha = check_scalar(alpha, "alpha", float, min_val=0.0, max_val=1.0,
                         include_boundaries="neither", finite=True)
    n_comparisons = check_positive_int(n_comparisons, "n_comparisons")
    return margin, sd, alpha / n_comparisons


def power_of(n_units: int, *, margin: float, sd: float, alpha: float = 0.05,
             n_comparisons: int = 1) -> float:
    """Power of the two-sided paired t test on ``n_units`` units (noncentral t)."""
    from scipy import stats

    n_units = check_positive_int(n_units, "n_units", minimum=2)
    margin, sd, a = _checked(margin, sd, alpha, n_comparisons)
    df = n_units - 1
    q = stats.t.ppf(1 - a / 2, df)
    nc = margin / sd * math.sqrt(n_units)
    return float(stats.nct.sf(q, df, nc) + stats.nct.cdf(-q, df, nc))


def units_needed(*, margin: float, sd: float, power: float = 0.8, alpha: float = 0.05,
                 n_comparisons: int = 1, max_units: int = 10_000_000) -> int:
    """The smallest number of independent units with :func:`power_of` >= ``power``."""
    power = check_scalar(power, "power", float, min_val=0.0, max_val=1.0,
                         include_boundaries="neither", finite=True)
    _checked(margin, sd, alpha, n_comparisons)

    def ok(n):
        return power_of(n, margin=margin, sd=sd, alpha=alpha, n_comparisons=n_comparisons) >= power

    hi = 2
    while not ok(hi):
        hi *= 2
        if hi > max_units:
            raise ValueError(f"more than max_units = {max_units} units would be needed "
                             f"(margin {margin:g} against a standard deviation {sd:g}).")
    return _bisect(ok, max(2, hi // 2), hi)


def _bisect(ok, lo: int, hi: int) -> int:
    """The smallest n in [lo, hi] with ``ok(n)``, given ``ok(hi)`` and ``ok`` monotone in n."""
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


@dataclass
class Plan:
    """Result of :func:`plan`: ``n_units`` (and ``n_pairs``) needed to separate ``a`` and ``b``
    at ``margin`` with ``power`` at ``alpha`` / ``n_comparisons``; ``sd`` of the pilot's unit
    differences, ``pilot_units``, ``pairs_per_unit``, ``pilot_difference`` (its mean a - b)."""

    a: str
    b: str
    margin: float
    power: float
    alpha: float
    n_comparisons: int
    sd: float
    pilot_units: int
    pairs_per_unit: float
    pilot_difference: float
    n_units: int
    n_pairs: int

    def text(self) -> str:
        adj = (f" / {self.n_comparisons} comparisons (Bonferroni, Holm's worst case)"
               if self.n_comparisons > 1 else "")
        return (f"To tell {self.a} and {self.b} apart at a true difference of {self.margin:g} "
                f"with power {self.power:g} at α = {self.alpha:g}{adj}: {self.n_units} "
                f"independent units, about {self.n_pairs} pairs (pilot: {self.pilot_units} "
                f"units, s.d. of the differences {self.sd:.3g}, observed difference "
                f"{self.pilot_difference:.3g}).")


def plan(scores, a: str, b: str, *, margin: float, methods=None,
         clusters: ArrayLike | None = None, power: float = 0.8, alpha: float = 0.05,
         n_comparisons: int = 1) -> Plan:
    """The units and pairs a study needs to tell ``a`` and ``b`` apart, from a pilot block.

    Parameters
    ----------
    scores : array_like (P, K) or pandas.DataFrame
        The pilot's per-pair scores.
    a, b : str
    margin : float
        The true difference to detect (score units, > 0).
    methods, clusters
        As :func:`insdel.verdicts.compare`.
    power : float, default 0.8
    alpha : float, default 0.05
    n_comparisons : int, default 1
        Tests run at alpha / n_comparisons (K (K - 1) / 2 for all of a block's comparisons).
    """
    blk = as_block(scores, methods, clusters=clusters)
    i, j = blk.index(a, "a"), blk.index(b, "b")
    if i == j:
        raise ValueError(f"a and b are the same method {a!r}.")
    d = blk.Y[:, i] - blk.Y[:, j]
    sd = float(d.std(ddof=1))
    if not sd > 0:
        raise ValueError(f"the pilot's differences {a!r} - {b!r} have standard deviation 0: "
                         "no power calculation (identical or shifted scores).")
    n = units_needed(margin=margin, sd=sd, power=power, alpha=alpha, n_comparisons=n_comparisons)
    per = blk.n_pairs / blk.n_units
    return Plan(a=a, b=b, margin=float(margin), power=float(power), alpha=float(alpha),
                n_comparisons=int(n_comparisons), sd=sd, pilot_units=blk.n_units,
                pairs_per_unit=per, pilot_difference=float(d.mean()), n_units=n,
                n_pairs=int(math.ceil(n * per)))


def simulated_power(differences: ArrayLike, n_units: int, *, margin: float, alpha: float = 0.05,
                    n_comparisons: int = 1, n_sim: int = 2000, seed: int = 0) -> float:
    """The fraction of ``n_sim`` simulated studies whose two-sided paired t test rejects: each
    draws ``n_units`` of the pilot's unit ``differences`` with replacement, centred and shifted
    to mean ``margin``."""
    from scipy import stats

    d = np.asarray(differences, dtype=np.float64).reshape(-1)
    if d.size < 2:
        raise ValueError(f"differences: {d.size} unit(s); need at least 2.")
    n_units = check_positive_int(n_units, "n_units", minimum=2)
    n_sim = check_positive_int(n_sim, "n_sim")
    rng = np.random.default_rng(check_seed(seed))
    margin, _, a = _checked(margin, 1.0, alpha, n_comparisons)
    e = d - d.mean() + margin
    hits = 0
    for lo in range(0, n_sim, 256):
        k = min(256, n_sim - lo)
        s = e[rng.integers(0, d.size, size=(k, n_units))]
        t = s.mean(axis=1) / (s.std(axis=1, ddof=1) / np.sqrt(n_units))
        hits += int((2 * stats.t.sf(np.abs(t), n_units - 1) < a).sum())
    return hits / n_sim


def simulated_units(differences: ArrayLike, *, margin: float, power: float = 0.8,
                    alpha: float = 0.05, n_comparisons: int = 1, n_sim: int = 2000,
                    seed: int = 0, start: int | None = None) -> int:
    """The smallest number of units whose :func:`simulated_power` reaches ``power`` (bisection
    on n with the same seed at every n, so the simulated power is smooth in n); ``start``: a
    first guess (e.g. :func:`units_needed`)."""
    power = check_scalar(power, "power", float, min_val=0.0, max_val=1.0,
                         include_boundaries="neither", finite=True)

    def ok(n):
        return simulated_power(differences, n, margin=margin, alpha=alpha,
                               n_comparisons=n_comparisons, n_sim=n_sim, seed=seed) >= power

    hi = max(2, int(start or 2))
    if ok(hi):  # halve while the half still reaches the power: the answer is in (hi / 2, hi]
        while hi > 2 and ok(max(2, hi // 2)):
            hi = max(2, hi // 2)
        lo = hi // 2 + 1 if hi > 2 else 2
    else:  # double until it reaches: the answer is in (hi / 2, hi]
        lo, hi = hi + 1, hi * 2
        while not ok(hi):
            lo, hi = hi + 1, hi * 2
    return _bisect(ok, lo, hi)
