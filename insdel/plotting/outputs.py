"""Figures of a model with H outputs (:class:`insdel.multi_output.MultiEvaluation`): each
method's mean ABC by output with standard-error bars, and the curves of each output."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._common import _label, _new_axes, _new_figure, _no_se_note, _unit

__all__ = ["abc_by_output", "curves_by_output"]


def abc_by_output(mev, mode: str = "insertion", *, ax=None,
                  methods: Sequence[str] | None = None, xlabel: str = "output"):
    """Each method's mean ABC over the pairs for each output (horizon), with error bars of one
    standard error (:meth:`insdel.multi_output.MultiEvaluation.summary`: over the pairs' units).

    Parameters
    ----------
    mev : insdel.multi_output.MultiEvaluation
    mode : {"insertion", "deletion"}
    ax : matplotlib Axes, optional
    methods : sequence of str, optional
        The methods drawn (default: all, the random orderings included).
    xlabel : str
        The x axis' label (``"horizon"`` for a forecaster).

    Returns
    -------
    matplotlib Axes
    """
    if mode not in mev.modes:
        raise ValueError(f"mode {mode!r} was not evaluated; the evaluation has {list(mev.modes)}.")
    methods = list(mev.methods if methods is None else methods)
    unknown = [m for m in methods if m not in mev.methods]
    if unknown:
        raise ValueError(f"methods: {unknown} are not in the evaluation ({mev.methods}).")
    t = mev.summary(differences=None)
    t = t[(t["kind"] == "method") & (t["mode"] == mode) & (t["output"] != "weighted")]
    ax = _new_axes(ax, figsize=(6.0, 3.8))
    H = mev.n_outputs
    missing = 0
    for m in methods:
        part = t[t["method"] == m].set_index(t[t["method"] == m]["output"].astype(int))
        mean = part["mean"].reindex(range(H)).to_numpy(float)
        se = part["std_error"].reindex(range(H)).to_numpy(float)
        missing += int(np.isnan(se).sum())
        # a NaN standard error (one pair or one unit) draws no bar, never a zero-length one
        ax.errorbar(np.arange(H), mean, yerr=np.where(np.isnan(se), np.nan, se), marker="o",
                    capsize=3, label=_label(m))
    if missing:
        _no_se_note(ax, "one pair or one unit: no standard error bars")
    ax.set_xticks(np.arange(H))
    ax.set(xlabel=xlabel, ylabel=f"mean {mode} ABC{_unit(mev[0].normalize)}",
           title=f"{mode} ABC by {xlabel} (± 1 s.e.)")
    ax.axhline(0.0, color="0.6", lw=0.8)
    ax.legend(fontsize=7)
    return ax


def curves_by_output(mev, mode: str = "insertion", *, pair: int | None = None,
                     outputs: Sequence[int] | None = None,
                     methods: Sequence[str] | None = None, max_panels: int = 4):
    """One panel per output: each method's curve of one pair (``pair``) or the mean curve over
    the pairs (``pair=None``), against the fraction of units inserted or deleted.

    Parameters
    ----------
    mev : insdel.multi_output.MultiEvaluation
    mode : {"insertion", "deletion"}
    pair : int, optional
        The pair drawn; None: the mean over the pairs.
    outputs : sequence of int, optional
        The outputs drawn (default: up to ``max_panels`` spread evenly over the H outputs).
    methods : sequence of str, optional
        The methods drawn (default: all).

    Returns
    -------
    matplotlib Figure
    """
    if mode not in mev.modes:
        raise ValueError(f"mode {mode!r} was not evaluated; the evaluation has {list(mev.modes)}.")
    H, B = mev.n_outputs, mev[0].n_pairs
    if pair is not None and not (isinstance(pair, (int, np.integer)) and 0 <= pair < B):
        raise ValueError(f"pair must be an integer in [0, {B}); got {pair!r}.")
    if outputs is None:
        outputs = np.unique(np.linspace(0, H - 1, min(H, max_panels)).round().astype(int))
    bad = [h for h in outputs if not (isinstance(h, (int, np.integer)) and 0 <= h < H)]
    if bad:
        raise ValueError(f"outputs: {bad} are not outputs of the model (0..{H - 1}).")
    methods = list(mev.methods if methods is None else methods)
    unknown = [m for m in methods if m not in mev.methods]
    if unknown:
        raise ValueError(f"methods: {unknown} are not in the evaluation ({mev.methods}).")
    fig, axes = _new_figure(1, len(outputs), (3.2 * len(outputs), 3.2))
    for ax, h in zip(axes[0], outputs, strict=True):
        e = mev[int(h)]
        for m in methods:
            c = e.curves[mode][:, e.methods.index(m)]
            y = c.mean(axis=0) if pair is None else c[pair]
            ax.plot(np.linspace(0.0, 1.0, y.shape[0]), y, label=_label(m))
        ax.set(title=f"output {int(h)}", xlabel=f"fraction of units ({mode})")
    axes[0][0].set_ylabel("f (mean over pairs)" if pair is None else f"f (pair {pair})")
    axes[0][0].legend(fontsize=6)
    return fig
