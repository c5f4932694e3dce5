"""Equivalence of two methods: two one-sided tests (TOST, Schuirmann 1987) on paired units.

"A is nearly as good as B" is the claim that the true mean difference a - b lies within
(-delta, +delta). TOST rejects both "a - b <= -delta" and "a - b >= +delta" with one-sided paired
t tests at alpha on the G independent units (pairs averaged per unit); its p-value is the larger
of the two, and equivalence at alpha holds exactly when the 1 - 2 alpha t interval of a - b lies
inside (-delta, +delta).

The margin is given in ABC units (``relative=False``) or, with ``relative=True``, as a fraction of
the spread of ABC: delta = margin x sqrt((s_a^2 + s_b^2) / 2), with s_a and s_b the standard
deviations of the two methods' unit-mean scores over the units (a standardised margin, as
Cohen's d is standardised by the pooled standard deviation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_bool, check_scalar
from ._block import as_block

__all__ = ["Equivalence", "equivalence"]


@dataclass
class Equivalence:
    """Result of :func:`equivalence` for methods ``a`` and ``b``.

    Attributes
    ----------
    a, b : str
    mean, se : float
        Mean unit difference a - b and its standard error.
    delta : float
        The margin in score units (after ``relative``).
    margin : float
        As given; ``relative``: whether it was a fraction of the spread.
    spread : float
        sqrt((s_a^2 + s_b^2) / 2) of the unit means (what a relative margin multiplies).
    p_lower, p_upper, p : float
        The one-sided p-values of "a - b <= -delta" and "a - b >= delta", and TOST's (their max).
    ci_low, ci_high : float
        The 1 - 2 alpha t interval of a - b.
    alpha : float
    n_units, n_pairs : int
    """

    a: str
    b: str
    mean: float
    se: float
    delta: float
    margin: float
    relative: bool
    spread: float
    p_lower: float
    p_upper: float
    p: float
    ci_low: float
    ci_high: float
    alpha: float
    n_units: int
    n_pairs: int

    @property
    def equivalent(self) -> bool:
        return bool(self.p < self.alpha)

    def verdict(self, digits: int = 3) -> str:
        """``"IG is equivalent to KS within ±0.05 (p = 0.002)"`` or why it is not shown."""
        ps = f"{self.p:.{digits}f}" if self.p >= 10.0 ** -digits else f"< {10.0 ** -digits:g}"
        ps = ps if ps.startswith("<") else f"= {ps}"
        d = f"±{self.delta:.{digits}g}" + (f" ({self.margin:g} of the spread of ABC)"
                                           if self.relative else "")
        ci = (f"{100 * (1 - 2 * self.alpha):g} % interval of {self.a} − {self.b}: "
              f"[{self.ci_low:.{digits}g}, {self.ci_high:.{digits}g}]")
        if self.equivalent:
            return f"{self.a} is equivalent to {self.b} within {d} (p {ps}; {ci})"
        return (f"{self.a} is not shown equivalent to {self.b} within {d} (p {ps}; {ci})")

    def as_dict(self) -> dict:
        """The fields and the verdict as one plain dict (a table row)."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["equivalent"] = self.equivalent
        out["verdict"] = self.verdict()
        return out


def equivalence(scores, a: str, b: str, *, margin: float, methods=None,
                clusters: ArrayLike | None = None, relative: bool = False,
                alpha: float = 0.05) -> Equivalence:
    """TOST of methods ``a`` and ``b`` of a block within ±delta.

    Parameters
    ----------
    scores : array_like (P, K) or pandas.DataFrame
        Per-pair scores (:func:`insdel.verdicts.compare`'s block).
    a, b : str
        The two methods.
    margin : float
        delta > 0, in score units, or a fraction of the spread with ``relative=True``.
    methods : sequence of str, optional
        Column names (default: the DataFrame's).
    clusters : array_like (P,), optional
        Unit id of each pair; pairs of a unit are averaged.
    relative : bool, default False
        delta = margin x sqrt((s_a^2 + s_b^2) / 2) (module docstring).
    alpha : float, default 0.05

    Raises
    ------
    ValueError
        margin <= 0 or not finite (a margin is a half-width: give +delta), ``a == b``, an
        unknown method, fewer than 2 units, a zero spread with ``relative=True``.
    """
    from scipy import stats

    margin = check_scalar(margin, "margin", float, finite=True)
    if margin <= 0:
        raise ValueError(f"margin must be > 0 (the half-width delta of the equivalence interval "
                         f"(-delta, +delta)); got {margin!r}.")
    relative = check_bool(relative, "relative")
    alpha = check_scalar(alpha, "alpha", float, min_val=0.0, max_val=0.5,
                         include_boundaries="neither", finite=True)
    blk = as_block(scores, methods, clusters=clusters)
    i, j = blk.index(a, "a"), blk.index(b, "b")
    if i == j:
        raise ValueError(f"a and b are the same method {a!r}.")
    ya, yb = blk.Y[:, i], blk.Y[:, j]
    G = blk.n_units
    spread = float(np.sqrt((ya.var(ddof=1) + yb.var(ddof=1)) / 2.0))
    if relative and not spread > 0:
        raise ValueError(f"relative=True: the spread of {a!r} and {b!r} over the units is 0; "
                         "give the margin in score units.")
    delta = margin * spread if relative else margin
    d = ya - yb
    mean = float(d.mean())
    se = float(d.std(ddof=1) / np.sqrt(G))
    df = G - 1
    if se > 0:
        p_lower = float(stats.t.sf((mean + delta) / se, df))
        p_upper = float(stats.t.cdf((mean - delta) / se, df))
    else:  # every unit has the same difference: decided by where it lies
        p_lower = 0.0 if mean > -delta else 1.0
        p_upper = 0.0 if mean < delta else 1.0
    q = float(stats.t.ppf(1.0 - alpha, df))
    return Equivalence(a=a, b=b, mean=mean, se=se, delta=float(delta), margin=margin,
                       relative=relative, spread=spread, p_lower=p_lower, p_upper=p_upper,
                       p=max(p_lower, p_upper), ci_low=mean - q * se, ci_high=mean + q * se,
                       alpha=alpha, n_units=G, n_pairs=blk.n_pairs)
