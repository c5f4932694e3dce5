"""The verdicts' figure (:mod:`insdel.verdicts`): a critical-difference style diagram."""

from __future__ import annotations

import numpy as np

from ._common import _label, _new_axes

__all__ = ["critical_difference", "cannot_tell_apart"]


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
    comparisons : insdel.verdicts.Comparisons
    adjust : str, default "holm"
    ax : matplotlib Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    from scipy.stats import rankdata

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
