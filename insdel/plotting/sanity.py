"""Figures of the sanity checks (:mod:`insdel.sanity`): similarity against the randomised layer,
and metrics placed by their resilience and reactivity."""

from __future__ import annotations

import numpy as np

from ._common import _label, _new_axes, _no_se_note

__all__ = ["plot_sanity", "plot_reliability"]


def plot_sanity(result, measure: str | None = None, *, ax=None, threshold: bool = True):
    """One line per method: the mean of ``measure`` (default the first similarity measure) at
    each step of a :class:`insdel.sanity.SanityResult`, with standard-error bars.

    The x axis runs from the trained model (step 0) through the randomised layers in the order
    they were randomised (output side first); with cascading randomisation the last step is the
    fully randomised model. A model-sensitive method falls towards 0; a method whose line stays
    near 1 ignores the model (flagged methods are marked in the legend). ``threshold`` draws the
    flag threshold for the Spearman measures.

    Returns
    -------
    matplotlib.axes.Axes
    """
    if measure is None:
        measure = result.default_measure
    ax = _new_axes(ax, figsize=(6.0, 3.8))
    flagged = set(result.flagged)
    missing = False
    steps = None
    for method in result.methods:
        d = result.curve(method, measure)
        steps = d
        se = d["std_error"].to_numpy(dtype=float)
        missing |= bool(np.isnan(se).any() and len(d) > 1)
        label = _label(method) + (" (flagged)" if method in flagged else "")
        ax.errorbar(d["step"], d["mean"], yerr=np.where(np.isfinite(se), se, 0.0), marker="o",
                    ms=3.5, capsize=2, lw=1.3, label=label,
                    ls="--" if method in flagged else "-")
    if threshold and measure.startswith("spearman"):
        ax.axhline(result.threshold, color="0.5", lw=0.8, ls=":")
        ax.text(0.99, result.threshold, f" flag threshold {result.threshold:g}",
                transform=ax.get_yaxis_transform(), ha="right", va="bottom", fontsize="x-small",
                color="0.4")
    if steps is not None:  # many layers: upright names (slanted ones run into the y ticks)
        ax.set_xticks(steps["step"], [str(s) for s in steps["layer"]], rotation=90 if len(
            steps) > 4 else 0, ha="center", fontsize="small")
    what = {"cascading": "randomised down to layer", "independent": "layer randomised alone",
            "labels": "model"}.get(result.order, "step")
    ax.set_xlabel(what)
    ax.set_ylabel(f"{measure} with the trained model's")
    kind = {"parameters": "Parameter", "data": "Data"}.get(result.kind, result.kind)
    ax.set_title(f"{kind} randomisation ({result.order})")
    if missing:
        _no_se_note(ax, "NaN standard error")
    ax.legend(fontsize="small", frameon=False)
    return ax


def plot_reliability(result, *, ax=None):
    """Each metric of a :class:`insdel.sanity.ReliabilityResult` at (resilience, reactivity):
    MetaQuantus' noise resilience on x, adversarial reactivity on y, both in [0, 1]. The ideal
    metric sits at the top right (the grey star, labelled "ideal (1, 1)"); a metric at the bottom
    right does not react to destroyed explanations or models, one at the top left reacts to
    noise as much as to disruption.

    Each metric's name is placed beside its point where it overlaps no other name, point or the
    axes' edge (metrics at nearly the same place get names around the point, with a leader line
    when the name moves away from it).

    Returns
    -------
    matplotlib.axes.Axes
    """
    ax = _new_axes(ax, figsize=(4.6, 4.2))
    t = result.table
    ax.plot([1], [1], marker="*", ms=12, color="0.6", ls="none", zorder=2)
    ax.scatter(t["resilience"], t["reactivity"], s=28, color="#2c7fb8", zorder=3)
    ax.set_xlim(-0.03, 1.08)
    ax.set_ylim(-0.03, 1.08)
    ax.set_xlabel("noise resilience (IAC_NR, IEC_NR)")
    ax.set_ylabel("adversarial reactivity (IAC_AR, IEC_AR)")
    ax.set_title("Metric reliability (MetaQuantus)")
    points = [(float(r.resilience), float(r.reactivity), str(r.metric))
              for r in t.itertuples(index=False)]
    _place_labels(ax, [(1.0, 1.0, "ideal (1, 1)")] + points, colors={"ideal (1, 1)": "0.45"})
    return ax


#: Offsets (points) tried for a point's label, nearest first: beside, above, below, then further
#: out around the point.
_OFFSETS = [(5, 3), (5, -9), (-5, 3), (-5, -9), (0, 7), (0, -13)] + [
    (r * np.cos(a), r * np.sin(a)) for r in (16, 26, 38, 52)
    for a in np.linspace(0, 2 * np.pi, 12, endpoint=False)]


def _place_labels(ax, points, *, colors=None, fontsize="x-small") -> None:
    """Annotate each ``(x, y, text)`` of ``points`` at the first offset of :data:`_OFFSETS`
    whose text box lies inside the axes and overlaps no label placed before it and no point;
    a label moved beyond the nearest offsets gets a leader line to its point, which crosses no
    label either. Where no offset is free the first one inside the axes is kept."""
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    fig = ax.figure
    fig.canvas.draw()  # the layout fixes where the points are drawn
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    px = ax.transData.transform([(x, y) for x, y, _ in points])
    pad = 4.0
    marks = [Bbox.from_extents(u - pad, v - pad, u + pad, v + pad) for u, v in px]
    boxes: list = []  # the names placed so far
    lines: list = []  # their leader lines, as points along them (display coordinates)
    colors = colors or {}
    for i, (x, y, text) in enumerate(points):
        others = [b for j, b in enumerate(marks) if j != i] + boxes
        best = None
        for k, (dx, dy) in enumerate(_OFFSETS):
            ann = ax.annotate(
                text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize,
                ha="left" if dx > 0.5 else "right" if dx < -0.5 else "center",
                va="bottom" if dy >= 0 else "top", color=colors.get(text, "black"),
                arrowprops=dict(arrowstyle="-", color="0.6", lw=0.6, shrinkA=0, shrinkB=3)
                if k >= 6 else None)
            ann.update_positions(renderer)
            box = Text.get_window_extent(ann, renderer)  # the text alone
            line = (np.linspace(0, 1, 25)[:, None] * (np.array([box.x0 + box.x1, box.y0 + box.y1])
                                                     / 2 - px[i]) + px[i]) if k >= 6 else None
            inside = (frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0
                      and box.y1 <= frame.y1)
            free = (not any(box.overlaps(b) for b in others)
                    and not any(_crosses(seg, box) for seg in lines)
                    and (line is None or not any(_crosses(line, b) for b in boxes)))
            if inside and free:
                if best is not None:
                    best[0].remove()
                best = (ann, box, line)
                break
            if inside and best is None:
                best = (ann, box, line)  # kept if nothing is free
            else:
                ann.remove()
        if best is not None:
            boxes.append(best[1])
            if best[2] is not None:
                lines.append(best[2])


def _crosses(line: np.ndarray, box) -> bool:
    """Whether any of the points along a leader line lies inside ``box``."""
    return bool(np.any((line[:, 0] > box.x0) & (line[:, 0] < box.x1) & (line[:, 1] > box.y0)
                       & (line[:, 1] < box.y1)))
