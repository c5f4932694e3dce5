"""insdel's own metrics: insertion and deletion ABC and AUC (Hama, Mase & Owen, eq. 1 and 2).

Units move from r to x (insertion) or from x to r (deletion) in the attribution's order; the score
is the area between the curve and the straight line joining its ends (ABC, eq. 2 per unit), or the
area under the curve (AUC, eq. 1 per unit; the deletion AUC is negated so that higher is better).
These are the numbers :func:`insdel.evaluate` reports, computed here on the metrics' shared cache.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_mode, check_scalar
from ..areas import abc, auc, petsiuk_auc
from ..groups import positions as make_positions
from ..tracing import check_order
from .base import Metric, MetricContext, rank_of, top_units

__all__ = ["curve_values", "InsertionABC", "DeletionABC", "InsertionAUC", "DeletionAUC"]


def curve_values(ctx: MetricContext, A: np.ndarray, *, mode: str, order: str = "signed",
                 step: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Insertion or deletion curves (B, S) of unit attributions ``A`` on the context's cache and
    the positions (S,) they were recorded at (units moved)."""
    check_mode(mode)
    pos = make_positions(ctx.m, step=step)
    masks = top_units(rank_of(A, order=order), pos)  # (B, S, m): the first t units
    return ctx.values(masks if mode == "insertion" else ~masks), pos


class _CurveMetric(Metric):
    family = "insdel"
    mode = "insertion"
    area = "abc"

    def __init__(self, *, order: str = "signed", step: int | None = None):
        self.order = check_order(order)
        self.step = None if step is None else check_scalar(step, "step", int, min_val=1)

    def compute(self, ctx: MetricContext, A: np.ndarray, **kwargs) -> np.ndarray:
        c, pos = curve_values(ctx, A, mode=self.mode, order=self.order, step=self.step)
        if self.area == "abc":
            return abc(c, mode=self.mode, positions=pos, m=ctx.m)
        a = petsiuk_auc(c, positions=pos, m=ctx.m) if self.step else auc(c, normalize=True)
        return a if self.mode == "insertion" else -a


class InsertionABC(_CurveMetric):
    """Insertion ABC: area between the insertion curve (r -> x) and its straight line, per unit.

    Source: Hama, Mase & Owen, eq. (2) divided by n (the paper's tables).

    Parameters
    ----------
    order : {"signed", "absolute", "ascending"}, default "signed"
        How units are ordered from the attributions (the paper: decreasing signed value).
    step : int, optional
        Units per step (the trapezoid on the recorded positions).
    """

    name = "insertion_abc"
    source = "Hama, Mase & Owen, eq. (2) / n"
    mode, area = "insertion", "abc"


class DeletionABC(_CurveMetric):
    """Deletion ABC': area between the straight line and the deletion curve (x -> r), per unit.

    Source: Hama, Mase & Owen, deletion form of eq. (2) divided by n. Options as
    :class:`InsertionABC`.
    """

    name = "deletion_abc"
    source = "Hama, Mase & Owen, eq. (2)' / n"
    mode, area = "deletion", "abc"


class InsertionAUC(_CurveMetric):
    """Insertion AUC per unit (eq. 1 / n): high when f climbs early. Options as
    :class:`InsertionABC`."""

    name = "insertion_auc"
    source = "Hama, Mase & Owen, eq. (1) / n; Petsiuk et al. (RISE)"
    mode, area = "insertion", "auc"


class DeletionAUC(_CurveMetric):
    """Minus the deletion AUC per unit (eq. 1 / n): high when f falls early. Options as
    :class:`InsertionABC`."""

    name = "deletion_auc"
    source = "Hama, Mase & Owen, eq. (1)' / n, negated; Petsiuk et al. (RISE)"
    mode, area = "deletion", "auc"
