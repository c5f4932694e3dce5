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


def overlaps_of_texts(fig, *, layout: bool = True) -> list[str]:
    """Where two visible texts of ``fig`` (the suptitle and the figure's own texts, each axes'
    title, axis labels, drawn tick labels, annotations and legend entries) are drawn over each
    other, and, with ``layout=True``, where a text is drawn over another axes or reaches outside
    the figure (as drawn, after the figure's layout): one line per clash, empty when there is
    none."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    page = fig.bbox
    texts = []
    if fig._suptitle is not None:
        texts.append(("suptitle", None, fig._suptitle))
    texts += [(f"figure text {t.get_text()!r}", None, t) for t in fig.texts
              if t is not fig._suptitle]
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        name = ax.get_title() or f"axes {fig.axes.index(ax)}"
        texts += [(f"title of '{name}'", ax, ax.title),
                  (f"x label of '{name}'", ax, ax.xaxis.label),
                  (f"y label of '{name}'", ax, ax.yaxis.label)]
        (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        texts += [(f"x tick label {t.get_text()!r} of '{name}'", ax, t)
                  for t in ax.get_xticklabels() if x0 <= t.get_position()[0] <= x1]  # drawn
        texts += [(f"y tick label {t.get_text()!r} of '{name}'", ax, t)
                  for t in ax.get_yticklabels() if y0 <= t.get_position()[1] <= y1]
        texts += [(f"text {t.get_text()!r} of '{name}'", ax, t) for t in ax.texts]
        leg = ax.get_legend()
        if leg is not None:
            texts += [(f"legend entry {t.get_text()!r} of '{name}'", ax, t)
                      for t in leg.get_texts()]
    # an annotation's text alone (Text's extent), not the leader line drawn to its point
    boxes = [(what, ax, matplotlib.text.Text.get_window_extent(t, r)) for what, ax, t in texts
             if t.get_visible() and t.get_text().strip()]
    clashes = []
    for i, (what, ax, box) in enumerate(boxes):
        clashes += [f"{what} over {what2}" for what2, _, box2 in boxes[i + 1:]
                    if box.overlaps(box2)]
        if not layout:
            continue
        if not (page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1 and page.y0 - 1 <= box.y0
                and box.y1 <= page.y1 + 1):
            clashes.append(f"{what} reaches outside the figure: {box}")
        clashes += [f"{what} over the axes '{other.get_title()}'" for other in fig.axes
                    if ax is not None and other is not ax and other.get_visible()
                    and box.overlaps(other.get_window_extent(r))]
    return clashes
