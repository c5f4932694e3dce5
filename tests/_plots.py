"""Helpers for the figure tests: what matplotlib drew."""

from __future__ import annotations

import matplotlib
import numpy as np


def error_segments(ax) -> list[np.ndarray]:
    """Every error-bar segment ((2, 2) array of end points) drawn on ax."""
    segs = []
    for c in ax.containers:
        if isinstance(c, matplotlib.container.ErrorbarContainer):
            for coll in c.lines[2]:
                segs.extend(np.asarray(s, dtype=float) for s in coll.get_segments())
    return segs


def overlaps_of_legends(fig) -> list[str]:
    """Where a legend of ``fig`` is drawn over text or another axes, or reaches outside the figure
    (as drawn, after the figure's layout): one line per clash, empty when there is none."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    page = fig.bbox
    clashes = []
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None:
            continue
        box = leg.get_window_extent(r)
        if not (page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1 and page.y0 - 1 <= box.y0
                and box.y1 <= page.y1 + 1):
            clashes.append(f"legend of '{ax.get_title()}' reaches outside the figure: {box}")
        for other in fig.axes:
            texts = [("x label", other.xaxis.label), ("y label", other.yaxis.label),
                     ("title", other.title)]
            texts += [(f"x tick label {t.get_text()!r}", t) for t in other.get_xticklabels()]
            texts += [(f"y tick label {t.get_text()!r}", t) for t in other.get_yticklabels()]
            for what, t in texts:
                if t.get_visible() and t.get_text() and box.overlaps(t.get_window_extent(r)):
                    clashes.append(f"legend of '{ax.get_title()}' over the {what} of "
                                   f"'{other.get_title()}'")
            if other is not ax and box.overlaps(other.get_window_extent(r)):
                clashes.append(f"legend of '{ax.get_title()}' over the axes '{other.get_title()}'")
    return clashes
