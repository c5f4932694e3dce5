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


def _drawn_texts(fig, r) -> list[tuple[str, object]]:
    """(name, window extent) of every text drawn on ``fig``: the figure's own texts (suptitle),
    each axes' titles, axis labels, tick labels inside its view, the texts placed on it
    (``ax.text``, annotations), and each legend as one box (the texts in it are its own)."""
    out = []
    for t in fig.texts:
        if t.get_visible() and t.get_text().strip():
            out.append((f"figure text {t.get_text()!r}", t.get_window_extent(r)))
    for i, ax in enumerate(fig.axes):
        name = f"axes {i} '{ax.get_title()}'"
        texts = [("title", ax.title), ("left title", ax._left_title),
                 ("right title", ax._right_title), ("x label", ax.xaxis.label),
                 ("y label", ax.yaxis.label)]
        for axis, which in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks():
                at = tick.get_loc()
                if lo - 1e-9 * max(1.0, abs(hi - lo)) <= at <= hi + 1e-9 * max(1.0, abs(hi - lo)):
                    for lab in (tick.label1, tick.label2):
                        texts.append((f"{which} tick label {lab.get_text()!r}", lab))
        texts += [(f"text {t.get_text()!r}", t) for t in ax.texts]
        for what, t in texts:
            if t.get_visible() and t.get_text().strip():
                out.append((f"the {what} of {name}", t.get_window_extent(r)))
        leg = ax.get_legend()
        if leg is not None and leg.get_visible():
            out.append((f"the legend of {name}", leg.get_window_extent(r)))
    return out


def overlaps_of_texts(fig) -> list[str]:
    """Where two texts drawn on ``fig`` overlap (titles, suptitle, axis and tick labels, texts on
    the axes, legends as boxes), or a text reaches outside the figure (as drawn, after the
    figure's layout): one line per clash, empty when there is none."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    page = fig.bbox
    items = _drawn_texts(fig, r)
    clashes = []
    for k, (what, box) in enumerate(items):
        if not (page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1 and page.y0 - 1 <= box.y0
                and box.y1 <= page.y1 + 1):
            clashes.append(f"{what} reaches outside the figure: {box}")
        for other, obox in items[k + 1:]:
            if box.overlaps(obox):
                clashes.append(f"{what} overlaps {other}")
    return clashes
