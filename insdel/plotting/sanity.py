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
    if steps is not None:
        ax.set_xticks(steps["step"], [str(s) for s in steps["layer"]], rotation=45 if len(
            steps) > 4 else 0, ha="right" if len(steps) > 4 else "center", fontsize="small")
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
    metric sits at the top right; a metric at the bottom right does not react to destroyed
    explanations or models, one at the top left reacts to noise as much as to disruption.

    Returns
    -------
    matplotlib.axes.Axes
    """
    ax = _new_axes(ax, figsize=(4.6, 4.2))
    t = result.table
    ax.scatter(t["resilience"], t["reactivity"], s=28, color="#2c7fb8", zorder=3)
    for r in t.itertuples(index=False):
        ax.annotate(r.metric, (r.resilience, r.reactivity), xytext=(4, 3),
                    textcoords="offset points", fontsize="x-small")
    ax.plot([1], [1], marker="*", ms=10, color="0.6", ls="none", label="ideal")
    ax.set_xlim(-0.03, 1.08)
    ax.set_ylim(-0.03, 1.08)
    ax.set_xlabel("noise resilience (IAC_NR, IEC_NR)")
    ax.set_ylabel("adversarial reactivity (IAC_AR, IEC_AR)")
    ax.set_title("Metric reliability (MetaQuantus)")
    ax.legend(fontsize="small", frameon=False, loc="lower left")
    return ax
