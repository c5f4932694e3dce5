"""Helpers for the figure tests: what matplotlib drew."""

from __future__ import annotations

import matplotlib
import matplotlib.text
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


def overlaps_of_texts(fig) -> list[str]:
    """Where two texts of ``fig`` (titles, axis and tick labels, annotations, legend entries and
    the figure's own texts) are drawn over each other, as drawn: one line per clash, empty when
    there is none."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    texts = [(f"figure text {t.get_text()!r}", t) for t in fig.texts]
    for ax in fig.axes:
        where = f"'{ax.get_title()}'"
        texts += [(f"title of {where}", ax.title), (f"x label of {where}", ax.xaxis.label),
                  (f"y label of {where}", ax.yaxis.label)]
        texts += [(f"x tick {t.get_text()!r} of {where}", t) for t in ax.get_xticklabels()]
        texts += [(f"y tick {t.get_text()!r} of {where}", t) for t in ax.get_yticklabels()]
        texts += [(f"text {t.get_text()!r} of {where}", t) for t in ax.texts]
        leg = ax.get_legend()
        if leg is not None:
            texts += [(f"legend entry {t.get_text()!r} of {where}", t) for t in leg.get_texts()]
    # an annotation's text alone (Text's extent), not the leader line drawn to its point
    boxes = [(what, matplotlib.text.Text.get_window_extent(t, r)) for what, t in texts
             if t.get_visible() and t.get_text().strip()]
    return [f"{a} over {b}" for i, (a, ba) in enumerate(boxes) for b, bb in boxes[i + 1:]
            if ba.overlaps(bb)]
