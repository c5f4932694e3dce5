"""The verdicts' figure (:mod:`insdel.verdicts`): a critical-difference style diagram, from a
block's ``Comparisons`` or from its saved table (a run's ``<policy>/comparisons.csv``, the
leaderboard's ``leaderboard_comparisons.csv``), and a stack of them, one panel per block."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._common import _label, _new_axes

__all__ = ["critical_difference", "cannot_tell_apart", "comparisons_from_table",
           "critical_difference_figure", "TableComparisons"]

#: The columns a saved comparisons table needs (``insdel.verdicts.Comparisons.table()``).
TABLE_COLUMNS = ("a", "b", "mean", "se", "df", "p", "p_holm", "p_maxt", "ci_high", "n_units")


@dataclass
class TableComparisons:
    """What :func:`critical_difference` reads of a block's comparisons, rebuilt from its saved
    table (:func:`comparisons_from_table`): the methods, their means up to a common constant,
    the per-comparison p-values and directions, the level and the number of units."""

    methods: list
    means: np.ndarray
    pairs: list
    mean: np.ndarray
    p: np.ndarray
    p_holm: np.ndarray
    p_maxt: np.ndarray
    level: float
    n_units: int

    def better(self, adjust: str = "holm") -> np.ndarray:
        """(K, K) bool, ``[i, j]``: method i better than j at ``1 - level`` by ``adjust``
        ("none", "holm" or "maxt"), as ``Comparisons.better``."""
        if adjust not in ("none", "holm", "maxt"):
            raise ValueError(f"adjust must be 'none', 'holm' or 'maxt'; got {adjust!r}.")
        p = {"none": self.p, "holm": self.p_holm, "maxt": self.p_maxt}[adjust]
        K = len(self.methods)
        out = np.zeros((K, K), dtype=bool)
        for c, (a, b) in enumerate(self.pairs):
            if p[c] < 1.0 - self.level:
                i, j = self.methods.index(a), self.methods.index(b)
                out[(i, j) if self.mean[c] > 0 else (j, i)] = True
        return out


def comparisons_from_table(table: pd.DataFrame) -> TableComparisons:
    """One block's comparisons from its saved table (the rows of one mode of a run's
    ``comparisons.csv``, or of one ``group, policy, metric`` of the leaderboard's).

    Every pair of the block's methods must have its row (each a - b, oriented so that positive
    means a is better); the methods' means are recovered up to a common constant (method i's
    mean minus the average of all, (1 / K) Σ_j (m_i − m_j)), which fixes their ranks; the level
    is read off the unadjusted interval (``ci_high = mean + t_{df} se``).

    Raises
    ------
    ValueError
        A missing column, a repeated or missing pair, or rows of several blocks.
    """
    from scipy.stats import t as t_dist

    missing = [c for c in TABLE_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"the comparisons table lacks columns {missing} (it is the table() of "
                         "insdel.verdicts.compare, e.g. a run's comparisons.csv).")
    if table.empty:
        raise ValueError("the comparisons table has no row.")
    methods = list(dict.fromkeys([*table["a"], *table["b"]]))
    K = len(methods)
    pairs = list(zip(table["a"], table["b"], strict=True))
    keys = {frozenset(p) for p in pairs}
    if len(keys) != len(pairs) or len(pairs) != K * (K - 1) // 2 or any(
            len(k) != 2 for k in keys):
        raise ValueError(f"the comparisons table must hold each of the {K * (K - 1) // 2} pairs "
                         f"of its {K} methods once (one block: filter by mode, or by group, "
                         f"policy and metric); it has {len(pairs)} rows.")
    if table["n_units"].nunique() != 1:
        raise ValueError("the comparisons table mixes blocks (several n_units); give one block.")
    mean = table["mean"].to_numpy(float)
    D = np.zeros((K, K))
    for (a, b), d in zip(pairs, mean, strict=True):
        i, j = methods.index(a), methods.index(b)
        D[i, j], D[j, i] = d, -d
    se = table["se"].to_numpy(float)
    ok = np.isfinite(se) & (se > 0)
    if not ok.any():
        raise ValueError("no comparison in the table has a positive standard error: its level "
                         "cannot be read.")
    q = (table["ci_high"].to_numpy(float)[ok] - mean[ok]) / se[ok]
    level = float(np.round(np.median(2.0 * t_dist.cdf(q, table["df"].to_numpy(float)[ok]) - 1.0),
                           6))
    return TableComparisons(methods=methods, means=D.mean(axis=1), pairs=pairs, mean=mean,
                            p=table["p"].to_numpy(float), p_holm=table["p_holm"].to_numpy(float),
                            p_maxt=table["p_maxt"].to_numpy(float), level=level,
                            n_units=int(table["n_units"].iloc[0]))


def cannot_tell_apart(order: list, better: np.ndarray, methods: list) -> list[tuple[int, int]]:
    """The bars of the diagram: maximal runs ``(i, j)`` of consecutive methods in ``order``
    (positions i .. j) among which no method is better than another by ``better`` ((K, K) bool
    over ``methods``); single methods are left out."""
    idx = [methods.index(m) for m in order]
    bars: list[tuple[int, int]] = []
    for i in range(len(idx)):
        j = i
        while j + 1 < len(idx) and not any(better[idx[a], idx[j + 1]] or better[idx[j + 1], idx[a]]
                                           for a in range(i, j + 1)):
            j += 1
        if j > i and not any(a <= i and j <= b for a, b in bars):
            bars.append((i, j))
    return bars


def critical_difference(comparisons, *, adjust: str = "holm", ax=None, title: str | None = None):
    """Methods on a rank axis (1 = best, by their mean over the units), a bar joining every
    group that cannot be told apart (no pairwise difference significant at the comparisons'
    level by ``adjust``: "holm", "maxt" or "none"), as in Demšar's (2006) critical-difference
    diagram, here with the paired tests of :func:`insdel.verdicts.compare`.

    Parameters
    ----------
    comparisons : insdel.verdicts.Comparisons or pandas.DataFrame
        A block's comparisons, or their saved table (:func:`comparisons_from_table`).
    adjust : str, default "holm"
    ax : matplotlib Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    from scipy.stats import rankdata

    if isinstance(comparisons, pd.DataFrame):
        comparisons = comparisons_from_table(comparisons)
    methods = list(comparisons.methods)
    K = len(methods)
    rank = rankdata(-np.asarray(comparisons.means, dtype=float), method="average")
    order = [methods[i] for i in np.argsort(rank, kind="stable")]
    better = comparisons.better(adjust)
    bars = cannot_tell_apart(order, better, methods)
    half = (K + 1) // 2  # the better half labelled on the right, the rest on the left
    ax = _new_axes(ax, figsize=(7.0, 1.2 + 0.3 * half + 0.18 * len(bars)))
    r = {m: rank[methods.index(m)] for m in order}
    pad = 1.6
    ax.set_xlim(K + 0.5 + pad, 0.5 - pad)  # rank 1 on the right, as in Demšar's diagram
    ax.set_ylim(-(len(bars) + 1) * 0.3 - 0.1, 0.5 + 0.35 * half + 0.2)
    ax.hlines(0, 1, K, color="0.2", lw=1)
    for k in range(1, K + 1):
        ax.vlines(k, 0, 0.1, color="0.2", lw=1)
        ax.text(k, 0.14, str(k), ha="center", va="bottom", fontsize=8)
    right, left = order[:half], order[half:][::-1]  # each side: the outermost lowest
    for side, names, edge in (("right", right, 0.5 - pad), ("left", left, K + 0.5 + pad)):
        for n, m in enumerate(names):
            y = 0.5 + 0.35 * n
            x = r[m]
            ax.plot([x, x, edge], [0, y, y], color="0.3", lw=0.8)
            ax.text(edge, y + 0.04, f"{_label(m)} ({x:g})", ha=side, va="bottom", fontsize=8)
    for b, (i, j) in enumerate(bars):
        y = -0.3 * (b + 1)
        ax.hlines(y, r[order[i]] - 0.05, r[order[j]] + 0.05, color="k", lw=3)
    ax.set_yticks([])
    ax.set_xticks([])
    for side in ("left", "right", "top", "bottom"):
        ax.spines[side].set_visible(False)
    name = {"holm": "Holm", "maxt": "max-T", "none": "unadjusted"}.get(adjust, adjust)
    ax.set_title(title or f"Ranks of the mean (1 = best); bars: cannot be told apart "
                          f"({name}, α = {1 - comparisons.level:g}, {comparisons.n_units} units)",
                 fontsize=9)
    return ax


def critical_difference_figure(blocks: Mapping[str, object], *, adjust: str = "holm",
                               max_panels: int = 24):
    """One critical-difference panel per block, stacked: ``blocks`` maps a panel's title to the
    block's comparisons (``Comparisons`` or a saved table). At most ``max_panels`` (the first,
    in order); the figure's last line says how many were left out.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    items = [(t, comparisons_from_table(c) if isinstance(c, pd.DataFrame) else c)
             for t, c in blocks.items()]
    if not items:
        raise ValueError("no block to draw: blocks is empty.")
    shown, left = items[:max_panels], len(items) - max_panels
    heights = [1.6 + 0.3 * ((len(c.methods) + 1) // 2) + 0.18 * len(c.methods)
               for _, c in shown]
    fig, axes = plt.subplots(len(shown), 1, figsize=(7.5, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, (title, comp) in zip(axes[:, 0], shown, strict=True):
        critical_difference(comp, adjust=adjust, ax=ax)
        ax.set_title(f"{title}\n{ax.get_title()}", fontsize=9)
    if left > 0:
        fig.text(0.5, 0.0, f"{left} more block(s) not drawn (max_panels = {max_panels}).",
                 ha="center", va="bottom", fontsize=8)
    fig.tight_layout()
    return fig
