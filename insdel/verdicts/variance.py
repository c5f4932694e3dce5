"""Where the variance of a mean score comes from: pairs, reference draws, removal draws, seeds.

A long table holds one score per combination of the levels of F crossed factors, e.g. ``pair``
(the targets and references), ``reference_draw`` (which K references a pair's baseline averages),
``removal_draw`` (the seeds of a sampled removal's draws) and ``seed`` (the training seed of the
model: ROAR's retrainings). The additive crossed random-effects model

    y = mu + a_pair + b_reference_draw + c_removal_draw + d_seed + e

is fitted by the ANOVA method of moments on a balanced complete design (one score per cell):
with N cells and n_f levels of factor f, MS_f = (N / n_f) sum_levels (mean_level - mean)^2 /
(n_f - 1) has expectation sigma_e^2 + (N / n_f) sigma_f^2, so sigma_f^2 = (MS_f - MS_e) / (N / n_f)
(truncated at 0), and MS_e is the residual mean square of the additive fit (interactions are
pooled into it). The variance of the grand mean is then sum_f sigma_f^2 / n_f + sigma_e^2 / N:
the factor with the largest share sigma_f^2 / n_f is the one to increase (its levels divide it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import repeated

__all__ = ["VarianceComponents", "variance_components", "FACTORS"]

#: The factors insdel's runs vary, outermost last.
FACTORS = ("pair", "reference_draw", "removal_draw", "seed")


@dataclass
class VarianceComponents:
    """Result of :func:`variance_components`.

    ``components``: one row per factor and ``residual``: ``factor, levels, variance`` (sigma^2,
    method of moments, >= 0), ``df``, ``mean_square``, ``of_mean`` (its part of the variance of
    the grand mean: sigma^2 / levels, the residual's sigma_e^2 / N), ``share`` (of that variance).
    ``mean``: the grand mean; ``n``: the cells.
    """

    components: pd.DataFrame
    mean: float
    n: int

    @property
    def se(self) -> float:
        """Standard error of the grand mean under the fitted model."""
        return float(np.sqrt(self.components["of_mean"].sum()))

    def advice(self) -> str:
        """Which factor to increase: the one with the largest part of the mean's variance."""
        c = self.components[self.components["factor"] != "residual"]
        top = c.sort_values("of_mean", ascending=False, kind="stable").iloc[0]
        parts = ", ".join(f"{r.factor} {100 * r.share:.0f} %" for r in
                          self.components.itertuples(index=False))
        return (f"The variance of the mean score (s.e. {self.se:.3g}) comes from: {parts}. "
                f"Increase {top.factor} (now {int(top.levels)} levels) first: its share "
                "shrinks in proportion to its levels; the residual (interactions) shrinks "
                "with every factor.")


def variance_components(table: pd.DataFrame, *, value: str = "score",
                        factors: Sequence[str] | None = None) -> VarianceComponents:
    """Variance components of ``value`` over crossed ``factors`` (module docstring).

    Parameters
    ----------
    table : pandas.DataFrame
        One row per cell: the factors' columns and ``value``.
    value : str, default "score"
    factors : sequence of str, optional
        Default: the columns of :data:`FACTORS` that ``table`` has.

    Raises
    ------
    ValueError
        A missing column, fewer than 2 factors, a factor with one level, NaN values, a cell
        repeated or missing (the design must be balanced and complete; the first named).
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame; got {type(table).__name__}.")
    if factors is None:
        factors = [f for f in FACTORS if f in table.columns]
    factors = list(factors)
    if repeated(factors):
        raise ValueError(f"factors: repeated names {repeated(factors)}.")
    for c in [*factors, value]:
        if c not in table.columns:
            raise ValueError(f"table has no column {c!r}; columns: {list(table.columns)}.")
    if len(factors) < 2:
        raise ValueError(f"factors: {factors}; variance components need at least 2 crossed "
                         "factors (one factor's variance is the residual's).")
    y = pd.to_numeric(table[value], errors="coerce").to_numpy(np.float64)
    if not np.isfinite(y).all():
        bad = int(np.flatnonzero(~np.isfinite(y))[0])
        raise ValueError(f"table[{value!r}] is not a finite number at row {bad}.")
    codes, levels = [], []
    for f in factors:
        c, u = pd.factorize(table[f], sort=True)
        if len(u) < 2:
            raise ValueError(f"factor {f!r} has {len(u)} level; each needs at least 2.")
        codes.append(c)
        levels.append(len(u))
    N = int(np.prod(levels))
    cell = np.ravel_multi_index(codes, levels)
    count = np.bincount(cell, minlength=N)
    if (count > 1).any():
        k = int(np.flatnonzero(count > 1)[0])
        where = dict(zip(factors, np.unravel_index(k, levels), strict=True))
        raise ValueError(f"the cell {where} (level indices) holds {int(count[k])} scores; the "
                         "design needs one score per cell (average replicates, or name the "
                         "factor that tells them apart).")
    if (count == 0).any():
        k = int(np.flatnonzero(count == 0)[0])
        where = dict(zip(factors, np.unravel_index(k, levels), strict=True))
        raise ValueError(f"the cell {where} (level indices) has no score: the design must be "
                         f"balanced and complete ({len(y)} of {N} cells filled).")
    Y = np.empty(N)
    Y[cell] = y
    Y = Y.reshape(levels)
    mu = float(Y.mean())
    rows, ss_main, df_main = [], 0.0, 0
    for ax, (f, n_f) in enumerate(zip(factors, levels, strict=True)):
        others = tuple(a for a in range(len(factors)) if a != ax)
        m = Y.mean(axis=others)
        ss = N / n_f * float(((m - mu) ** 2).sum())
        rows.append((f, n_f, ss, n_f - 1))
        ss_main += ss
        df_main += n_f - 1
    ss_e = float(((Y - mu) ** 2).sum()) - ss_main
    df_e = N - 1 - df_main
    ms_e = max(ss_e, 0.0) / df_e
    out = []
    for f, n_f, ss, df in rows:
        ms = ss / df
        var = max(0.0, (ms - ms_e) / (N / n_f))
        out.append({"factor": f, "levels": n_f, "variance": var, "df": df, "mean_square": ms,
                    "of_mean": var / n_f})
    out.append({"factor": "residual", "levels": N, "variance": ms_e, "df": df_e,
                "mean_square": ms_e, "of_mean": ms_e / N})
    comp = pd.DataFrame(out)
    tot = comp["of_mean"].sum()
    comp["share"] = comp["of_mean"] / tot if tot > 0 else np.nan
    return VarianceComponents(components=comp, mean=mu, n=N)
