"""Simultaneous confidence intervals for the ranks of a block's methods.

Neuhof & Benjamini (2023, "Confident feature ranking", arXiv:2307.15361): from pairwise decisions
that are all right together with probability >= 1 - alpha (simultaneous intervals of every
difference, or a family-wise controlled directional test), method i's rank interval is
[1 + #{j surely better than i}, K - #{j surely worse than i}]. When every decision is right, every
true rank lies in its interval, so the K intervals cover together with probability >= 1 - alpha.
The top-k set variant follows: the methods whose interval starts at or below k may be among the
true top k (the true top-k set lies within them), those whose interval ends at or below k surely
are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import check_choice, check_positive_int
from .paired import ADJUSTMENTS, Comparisons

__all__ = ["RankIntervals", "rank_intervals", "surely_better"]


def surely_better(comparisons: Comparisons, adjust: str = "maxt") -> np.ndarray:
    """(K, K) bool, ``[i, j]``: method i surely better than j. ``"maxt"``: the simultaneous
    max-T interval of i - j lies above 0 (single step, Neuhof & Benjamini's construction);
    ``"holm"``: Holm rejects with i ahead; ``"none"``: the unadjusted test (no simultaneous
    guarantee)."""
    check_choice("adjust", adjust, ADJUSTMENTS)
    c = comparisons
    if adjust != "maxt":
        return c.better(adjust)
    K = len(c.methods)
    out = np.zeros((K, K), dtype=bool)
    for k, (a, b) in enumerate(c.pairs):
        i, j = c.methods.index(a), c.methods.index(b)
        if c.sci_low[k] > 0:
            out[i, j] = True
        elif c.sci_high[k] < 0:
            out[j, i] = True
    return out


@dataclass
class RankIntervals:
    """Rank intervals of one block (:func:`rank_intervals`); rank 1 = best.

    Attributes
    ----------
    methods : list of str
    rank : ndarray (K,)
        The observed rank of each method's mean (ties averaged).
    low, high : ndarray (K,) of int
        The simultaneous ``level`` rank interval of each method.
    level : float
    adjust : str
        The pairwise decisions the intervals rest on ("maxt", "holm" or "none").
    """

    methods: list
    rank: np.ndarray
    low: np.ndarray
    high: np.ndarray
    level: float
    adjust: str

    def table(self) -> pd.DataFrame:
        """``method, rank, rank_low, rank_high``, best observed rank first."""
        df = pd.DataFrame({"method": self.methods, "rank": self.rank, "rank_low": self.low,
                           "rank_high": self.high})
        return df.sort_values("rank", kind="stable").reset_index(drop=True)

    def top_set(self, k: int) -> tuple[list, list]:
        """(surely, possibly): the methods surely among the true top ``k`` (interval ends at or
        below k) and those that may be (it starts at or below k); the true top-k set lies between
        them with the intervals' confidence."""
        k = check_positive_int(k, "k")
        order = np.argsort(self.rank, kind="stable")
        sure = [self.methods[i] for i in order if self.high[i] <= k]
        maybe = [self.methods[i] for i in order if self.low[i] <= k]
        return sure, maybe

    def verdicts(self) -> list[str]:
        """Plain sentences: who is first (or which methods cannot be told apart for first
        place), then every group of methods whose intervals are the same places."""
        pct = f"{100 * self.level:g} %"
        order = list(np.argsort(self.rank, kind="stable"))
        first = [self.methods[i] for i in order if self.low[i] == 1]
        out = []
        if len(first) == 1 and self.high[self.methods.index(first[0])] == 1:
            out.append(f"{first[0]} is first with {pct} confidence")
        elif len(first) == len(self.methods):
            out.append(f"{_names(first)} cannot be told apart ({pct} simultaneous rank "
                       "intervals all span every place)")
        else:
            out.append(f"{_names(first)} cannot be told apart for first place ({pct} "
                       "confidence)")
        for i in order:
            if self.high[i] == 1:  # said above
                continue
            if self.low[i] == self.high[i]:
                out.append(f"{self.methods[i]} is place {int(self.low[i])}")
            else:
                out.append(f"{self.methods[i]} is somewhere in places {int(self.low[i])}–"
                           f"{int(self.high[i])}")
        return out


def _names(names: list) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def rank_intervals(comparisons: Comparisons, *, adjust: str = "maxt") -> RankIntervals:
    """Simultaneous rank intervals from a block's pairwise comparisons (:func:`compare`).

    Parameters
    ----------
    comparisons : Comparisons
    adjust : {"maxt", "holm", "none"}, default "maxt"
        Which pairwise decisions (:func:`surely_better`); "maxt" and "holm" give intervals that
        cover every true rank together with probability >= ``comparisons.level``.

    Returns
    -------
    RankIntervals
    """
    from scipy.stats import rankdata

    if not isinstance(comparisons, Comparisons):
        raise TypeError("comparisons must be the Comparisons of insdel.verdicts.compare; got "
                        f"{type(comparisons).__name__}.")
    better = surely_better(comparisons, adjust)
    K = len(comparisons.methods)
    return RankIntervals(methods=list(comparisons.methods),
                         rank=rankdata(-comparisons.means, method="average"),
                         low=1 + better.sum(axis=0), high=K - better.sum(axis=1),
                         level=comparisons.level, adjust=adjust)
