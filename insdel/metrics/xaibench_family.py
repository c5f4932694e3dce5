"""XAI-Bench's faithfulness (Liu et al., *Synthetic Benchmarks for Scientific Research in Explainable
Machine Learning*, NeurIPS 2021 Datasets and Benchmarks, §3 eq. 2).

For each unit i, remove it alone (keep every other unit) and take the change of the value,
``f(x) - v(F minus i)``; the score is the Pearson correlation of those changes with the
attributions. XAI-Bench removes by the data's conditional distribution (its "observational"
setting; in insdel ``removal="conditional_gaussian"`` or another conditional removal) or by the
mean of the data ("interventional"; in insdel a constant reference, the baseline removal with R the
mean). Its code correlates ``|a|`` with ``|f(x) - v|`` and counts an undefined correlation as 0;
both are options here (``absolute``, ``nan_as_zero``), so the signed variant
``corr(a, f(x) - v)`` is one option away.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_bool
from .base import Metric, MetricContext, pearson_rows

__all__ = ["FaithfulnessXAIBench"]


class FaithfulnessXAIBench(Metric):
    """Faithfulness of XAI-Bench (eq. 2): Pearson between the attributions and the value change
    when each unit alone is removed.

    Parameters
    ----------
    absolute : bool, default True
        XAI-Bench's form: ``corr(|a_i|, |f(x) - v(F minus i)|)``. False: the signed form
        ``corr(a_i, f(x) - v(F minus i))`` (a unit that raises f should have a positive
        attribution).
    nan_as_zero : bool, default True
        A pair whose correlation is undefined (constant attributions or changes) scores 0, as in
        XAI-Bench's code; False leaves NaN (insdel's rule elsewhere).
    """

    name = "faithfulness_xaibench"
    family = "xaibench"
    source = "Liu et al. (2021) XAI-Bench §3 eq. (2); Bhatt et al. (2020)"

    def __init__(self, *, absolute: bool = True, nan_as_zero: bool = True):
        self.absolute = check_bool(absolute, "absolute")
        self.nan_as_zero = check_bool(nan_as_zero, "nan_as_zero")

    def compute(self, ctx: MetricContext, A: np.ndarray, **kwargs) -> np.ndarray:
        masks = np.broadcast_to(~np.eye(ctx.m, dtype=bool), (ctx.B, ctx.m, ctx.m))
        change = ctx.fx[:, None] - ctx.values(masks)  # (B, m): unit i removed alone
        a = np.asarray(A, dtype=np.float64)
        r = (pearson_rows(np.abs(a), np.abs(change)) if self.absolute
             else pearson_rows(a, change))
        return np.where(np.isnan(r), 0.0, r) if self.nan_as_zero else r
