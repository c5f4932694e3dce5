"""Figures of many pairs (paper Figures 4, 7, 9, 10, 12): ABC histograms and scatters, deletion
against insertion ABC, mean ABC bars, the decomposition's bounds, and their composites."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .._stats import mean_se, unit_ids
from .._validation import as_float_array, check_mode
from ._common import (
    _GREEN,
    _MODE_COLOURS,
    _PURPLE,
    _label,
    _listing,
    _new_axes,
    _new_figure,
    _no_se_text,
    _unit,
    _why_no_se,
    compare_pair,
)


def _values(src, method: str | None, mode: str) -> np.ndarray:
    if hasattr(src, "abc_array"):
        if method is None:
            raise ValueError("method is required when passing an Evaluation.")
        return np.asarray(src.abc_array(method, mode))
    return as_float_array("values", src, ndim=(1,))


def abc_histogram(ev, method: str | None = None, mode: str = "insertion", *, ax=None,
                  bins: int = 40, color: str | None = None):
    """Histogram of one method's ABCs over pairs (paper Figure 4, left).

    Parameters
    ----------
    ev : insdel.Evaluation or array (B,)
        An evaluation (then ``method`` names the method) or the ABC values themselves.
    method : str
    mode : {"insertion", "deletion"}

    Returns
    -------
    matplotlib.axes.Axes
    """
    mode = check_mode(mode)
    v = _values(ev, method, mode)
    ax = _new_axes(ax)
    ax.hist(v, bins=bins, color=color or _MODE_COLOURS[mode], alpha=0.85)
    ax.axvline(0.0, color="k", lw=0.8, ls=":")
    ax.axvline(float(np.mean(v)), color="k", lw=1.2, label=f"mean {np.mean(v):.3g}")
    name = _label(method) if method else "ABC"
    ax.set_xlabel(f"{mode} ABC{_unit(getattr(ev, 'normalize', None))}")
    ax.set_ylabel("number of pairs")
    ax.set_title(f"{name}: {mode}")
    ax.legend(fontsize="small")
    return ax


def _shared_units(ev) -> np.ndarray | None:
    """The evaluation's unit of each pair when some unit holds several pairs (a pair and its
    mirror), else None."""
    cl = getattr(ev, "clusters", None)
    if cl is None:
        return None
    u = unit_ids(cl, len(cl))
    return u if int(u.max()) + 1 < len(u) else None


def _unit_means(v: np.ndarray, units: np.ndarray) -> np.ndarray:
    """Mean of ``v`` over the pairs of each unit, in unit order."""
    return np.bincount(units, weights=v) / np.bincount(units)


def abc_scatter(ev, method_x: str | None = None, method_y: str | None = None,
                mode: str = "insertion", *, ax=None, s: float = 8.0):
    """ABC of one method against another, pair by pair, with the 45-degree line (Figures 4, 7).

    Points below the line are pairs where ``method_x`` got the larger ABC. By default the two
    methods are Kernel SHAP (or exact Shapley) and IG when present, else the first two evaluated.
    An evaluation whose clusters join pairs (a ``one_to_one`` couple's two directions, whose ABCs
    are equal for sign-changing attributions) gets one point per unit, at the mean of its pairs,
    and the legend says so: a couple is not drawn twice.

    Returns
    -------
    matplotlib.axes.Axes
    """
    mode = check_mode(mode)
    if method_x is None or method_y is None:
        two = compare_pair(("kernel_shap", "integrated_gradients"), ev.methods)
        method_x = method_x or two[0]
        method_y = method_y or two[-1]
    a, b = _values(ev, method_x, mode), _values(ev, method_y, mode)
    units = _shared_units(ev)
    label = None
    if units is not None:
        a, b = _unit_means(a, units), _unit_means(b, units)
        label = f"{a.size} units of {units.size} pairs (a pair and its mirror drawn once)"
    ax = _new_axes(ax)
    ax.scatter(a, b, s=s, alpha=0.6, color=_MODE_COLOURS[mode], edgecolor="none", label=label)
    lo = float(min(a.min(), b.min()))
    hi = float(max(a.max(), b.max()))
    pad = 0.03 * (hi - lo or 1.0)
    ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], color="k", lw=1.0, ls="--",
            label="45° line")
    ax.set_xlabel(f"{_label(method_x)} {mode} ABC")
    ax.set_ylabel(f"{_label(method_y)} {mode} ABC")
    ax.set_title(f"{mode.capitalize()}: {_label(method_y)} vs {_label(method_x)}")
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(fontsize="small", loc="upper left")
    return ax


def random_abc_histogram(ev, modes: Sequence[str] | None = None, *, ax=None, bins: int = 40,
                         all_orderings: bool = True):
    """Histograms of ABCs under random orderings, insertion and deletion overlaid (Figure 4, right).

    Parameters
    ----------
    ev : insdel.Evaluation
    modes : list of str, optional
        Default: every evaluated mode.
    all_orderings : bool
        Pool the ``random`` method and all further random orderings of every pair (default); False
        uses only the ``random`` method (one ordering per pair, the tables' Random row).

    Returns
    -------
    matplotlib.axes.Axes
    """
    modes = [check_mode(m) for m in (ev.modes if modes is None else modes)]
    ax = _new_axes(ax)
    for mode in modes:
        parts = []
        if "random" in ev.methods:
            parts.append(ev.abc_array("random", mode))
        if all_orderings and mode in ev.random_abc:
            parts.append(np.asarray(ev.random_abc[mode]).reshape(-1))
        if not parts:
            raise ValueError("the evaluation has no random orderings (no 'random' method and "
                             "n_random = 0).")
        v = np.concatenate(parts)
        ax.hist(v, bins=bins, alpha=0.55, color=_MODE_COLOURS[mode],
                label=f"{mode} (mean {v.mean():.3g}, {v.size} orderings)")
    ax.axvline(0.0, color="k", lw=0.8, ls=":")
    ax.set_xlabel(f"ABC of random orderings{_unit(ev.normalize)}")
    ax.set_ylabel("count")
    ax.set_title("Random orderings")
    ax.legend(fontsize="small")
    return ax


def insertion_deletion_scatter(ev, method: str | None = None, *, ax=None, s: float = 8.0):
    """Deletion ABC against insertion ABC, coloured by the sign of f(r) - f(x) (Figures 9, 10, 12).

    Purple: f(r) > f(x); green: f(r) < f(x) (paper Figure 9's colours; r is the paper's x′);
    pairs with f(r) = f(x) are green too, and the legend then says f(r) ≤ f(x). When the
    evaluation's clusters join pairs (a ``one_to_one`` couple's two directions: the paper's
    Figure 10, "each dot corresponds to two data that configure a pair"), each such unit is one
    grey point at the mean of its pairs, since its two directions have both signs of
    f(r) - f(x); single pairs keep their colour. The title's correlation is over the pairs, as in
    the Table 4 diagnostics.

    Returns
    -------
    matplotlib.axes.Axes
    """
    for mode in ("insertion", "deletion"):
        if mode not in ev.modes:
            raise KeyError(f"the evaluation has no {mode} curves; evaluate both modes.")
    if method is None:
        method = compare_pair(("kernel_shap", "integrated_gradients"), ev.methods)[0]
    ins, dele = ev.abc_array(method, "insertion"), ev.abc_array(method, "deletion")
    up = ev.fr > ev.fx
    units = _shared_units(ev)
    alone = np.ones(ins.size, bool)
    ax = _new_axes(ax)
    if units is not None:
        size = np.bincount(units)
        alone = size[units] == 1
        joined = size > 1
        ax.scatter(_unit_means(ins, units)[joined], _unit_means(dele, units)[joined], s=s,
                   alpha=0.6, color="0.45", edgecolor="none",
                   label=f"a pair and its mirror, drawn once ({int(joined.sum())})")
    tie = "≤" if np.any(ev.fr[alone] == ev.fx[alone]) else "<"
    for pick, colour, what in ((up & alone, _PURPLE, "f(r) > f(x)"),
                               (~up & alone, _GREEN, f"f(r) {tie} f(x)")):
        if units is None or pick.any():  # with joined units, no empty legend entry
            ax.scatter(ins[pick], dele[pick], s=s, alpha=0.6, color=colour, edgecolor="none",
                       label=f"{what} ({int(pick.sum())})")
    lo = float(min(ins.min(), dele.min()))
    hi = float(max(ins.max(), dele.max()))
    ax.plot([lo, hi], [lo, hi], color="k", lw=0.8, ls="--")
    corr = float(np.corrcoef(ins, dele)[0, 1]) if len(ins) > 1 and ins.std() > 0 and dele.std() > 0 \
        else float("nan")
    ax.set_xlabel(f"insertion ABC{_unit(ev.normalize)}")
    ax.set_ylabel(f"deletion ABC{_unit(ev.normalize)}")
    ax.set_title(f"{_label(method)} (corr {corr:.3f})")
    ax.legend(fontsize="small")
    return ax


def abc_bars(src, *, ax=None, methods: Sequence[str] | None = None, differences: bool = False):
    """Bar chart of mean ABC ± one standard error per method, one bar group per mode.

    Parameters
    ----------
    src : insdel.Evaluation or pandas.DataFrame
        An evaluation, or a summary table (columns mode, method, mean, std_error[, kind]) such as
        ``Evaluation.summary()`` or a run's ``summary.csv``.
    methods : list of str, optional
        Methods and their order (default: the summary's).
    differences : bool
        Also draw the paired-difference rows (e.g. Kernel SHAP − IG).

    A bar whose standard error is NaN (one pair: ``Evaluation.summary()`` gives no standard
    error then) gets no error bar, not a zero-length one, which would read as "no uncertainty";
    a note under the x label says so ("1 pair: no standard error bars") and, when only some bars
    lack one, names them ("... for Kernel SHAP (insertion)").

    Returns
    -------
    matplotlib.axes.Axes
    """
    summary = src.summary() if hasattr(src, "summary") else src
    if not isinstance(summary, pd.DataFrame):
        raise TypeError("src must be an Evaluation or a summary DataFrame.")
    need = {"mode", "method", "mean", "std_error"}
    if not need <= set(summary.columns):
        raise ValueError(f"the summary needs columns {sorted(need)}; got {list(summary.columns)}.")
    if not differences and "kind" in summary.columns:
        summary = summary[summary["kind"] != "difference"]
    have = list(dict.fromkeys(summary["method"]))
    if methods is None:
        methods = have
    unknown = [m for m in methods if m not in have]
    if unknown:  # a bar that is silently missing is no answer
        raise KeyError(f"methods {unknown} are not in the summary; it has {have}.")
    modes = list(dict.fromkeys(summary["mode"]))
    absent = [(m, mo) for mo in modes for m in methods
              if not (summary["method"].eq(m) & summary["mode"].eq(mo)).any()]
    if absent:  # an empty slot would read as a bar of height 0
        raise KeyError(f"the summary has no row for (method, mode) {absent}; give each method "
                       "every mode, or pass methods= for those that have them.")
    ax = _new_axes(ax, figsize=(max(5.0, 0.9 * len(methods) + 2), 3.8))
    width = 0.8 / max(len(modes), 1)
    x = np.arange(len(methods))
    missing, n_missing, drawn = [], [], 0  # bars without a standard error (NaN: one pair)
    for i, mode in enumerate(modes):
        sub = summary[summary["mode"] == mode].set_index("method").reindex(methods)
        xi = x + (i - (len(modes) - 1) / 2) * width
        mean = pd.to_numeric(sub["mean"], errors="coerce").to_numpy(dtype=float)
        se = pd.to_numeric(sub["std_error"], errors="coerce").to_numpy(dtype=float)
        has = np.isfinite(se)
        bar = np.isfinite(mean)  # a bar is drawn (a method without this mode has none)
        drawn += int(bar.sum())
        style = dict(label=mode, color=_MODE_COLOURS.get(mode, f"C{i}"), alpha=0.85)
        if has.all():
            ax.bar(xi, mean, width, yerr=se, capsize=3, **style)
            continue
        # no error bar where there is no standard error (not a zero-length one, nor a NaN that
        # matplotlib silently skips); the note below names those bars
        ax.bar(xi, mean, width, **style)
        if has.any():
            ax.errorbar(xi[has], mean[has], yerr=se[has], fmt="none", capsize=3, ecolor="k")
        gone = bar & ~has
        missing += [f"{_label(m)} ({mode})" for m in np.asarray(methods, dtype=object)[gone]]
        if "n" in sub.columns:
            n_missing += list(sub["n"].to_numpy()[gone])
    all_missing = drawn > 0 and len(missing) == drawn
    note = ""
    if missing:
        why = _why_no_se(n_missing if "n" in summary.columns else None, "pair")
        note = "\n(" + _no_se_text(why, "" if all_missing else f" for {_listing(missing)}") + ")"
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xticks(x)
    ax.set_xticklabels([_label(m) for m in methods], rotation=30, ha="right")
    ax.set_xlabel("attribution method" + note)
    ax.set_ylabel("mean ABC" if all_missing else "mean ABC ± s.e.")
    ax.set_title("Mean ABC per method")
    ax.legend(fontsize="small")
    return ax


def decomposition_figure(dec: pd.DataFrame, methods: Sequence[str] | None = None, *,
                         title: str | None = None):
    """Each method's mean ABC against the exact bounds, one panel per mode: horizontal bars (mean
    ABC ± one standard error over the decomposed pairs), a line at the best achievable mean ABC
    (the best ordering of each pair, exact) and one at E[ABC] under random orderings (Theorem 1).

    With a single pair the standard error is undefined: no error bar is drawn (not a zero-length
    one, which would read as "no uncertainty") and a note under each panel's x label says "1 pair:
    no standard error bars". A table without rows is an error.

    Parameters
    ----------
    dec : pandas.DataFrame
        A run's decomposition table (``decomposition.parquet``): columns ``best_abc_<mode>``,
        ``expected_abc_<mode>`` and ``abc_<mode>_<method>``; with a ``cluster`` column (the
        pairs' independent units) the standard errors are over units.
    methods : list of str, optional
        Methods and their order (default: every ``abc_<mode>_*`` column).

    Returns
    -------
    matplotlib.figure.Figure
    """
    modes = [m for m in ("insertion", "deletion") if f"best_abc_{m}" in dec]
    if not modes:
        raise ValueError("dec has no best_abc_<mode> column: not a decomposition table.")
    if methods is None:
        pre = f"abc_{modes[0]}_"
        methods = [c[len(pre):] for c in dec.columns if c.startswith(pre)]
    n = len(dec)
    if n == 0:
        raise ValueError("dec has no rows: a decomposition table of no pair has no mean ABC.")
    fig, axes = _new_figure(1, len(modes), (4.6 * len(modes), 0.45 * len(methods) + 2.0))
    for ax, mode in zip(axes[0], modes, strict=True):
        y = np.arange(len(methods))
        vals = [dec[f"abc_{mode}_{m}"].to_numpy(dtype=float) for m in methods]
        mean = np.array([v.mean() for v in vals])
        # one pair (one unit): the standard error is undefined (NaN), not 0; no bar is drawn;
        # a table's cluster column makes it over the pairs' independent units
        cl = dec["cluster"].to_numpy() if "cluster" in dec else None
        se = np.array([mean_se(v, cl)[1] for v in vals])
        has = np.isfinite(se)
        colour = _MODE_COLOURS.get(mode, "C0")
        note = ""
        if has.all():
            ax.barh(y, mean, xerr=se, capsize=3, color=colour, alpha=0.8)
        else:
            ax.barh(y, mean, color=colour, alpha=0.8)
            if has.any():
                ax.errorbar(mean[has], y[has], xerr=se[has], fmt="none", capsize=3, ecolor="k")
            gone = [_label(m) for m, h in zip(methods, has, strict=True) if not h]
            note = "\n(" + _no_se_text(_why_no_se(np.full(len(gone), n), "pair"),
                                       "" if not has.any() else f" for {_listing(gone)}") + ")"
        best = float(dec[f"best_abc_{mode}"].mean())
        rand = float(dec[f"expected_abc_{mode}"].mean())
        ax.axvline(best, color="k", lw=1.2, ls="-", label=f"best achievable {best:.3g}")
        ax.axvline(rand, color="0.4", lw=1.2, ls="--", label=f"E[random order] {rand:.3g}")
        ax.axvline(0.0, color="0.7", lw=0.6)
        ax.set_yticks(y)
        ax.set_yticklabels([_label(m) for m in methods])
        ax.invert_yaxis()
        ax.set_xlabel(("mean ABC ± s.e." if has.any() else "mean ABC") + note)
        ax.set_title(f"{mode} ({n} pair{'s' if n != 1 else ''})")
        ax.legend(fontsize="small", loc="lower right")
    if title:
        fig.suptitle(title)
    return fig




def figure4(ev, method: str | None = None, other: str | None = None, *,
            modes: Sequence[str] | None = None, figsize=None):
    """Paper Figure 4 / 7: per mode, a histogram of ``method``'s ABCs, ``other`` against
    ``method`` with the 45-degree line, and the ABCs of random orderings.

    Returns
    -------
    matplotlib.figure.Figure
    """
    modes = [check_mode(m) for m in (ev.modes if modes is None else modes)]
    two = compare_pair(("kernel_shap", "integrated_gradients"), ev.methods)
    method, other = method or two[0], other or two[-1]
    fig, axes = _new_figure(len(modes), 3, figsize or (14.0, 4.0 * len(modes)))
    for i, mode in enumerate(modes):
        abc_histogram(ev, method, mode, ax=axes[i, 0])
        abc_scatter(ev, method, other, mode, ax=axes[i, 1])
        random_abc_histogram(ev, [mode], ax=axes[i, 2])
    return fig


def insertion_deletion_figure(ev, methods: Sequence[str] | None = None,
                              *, figsize=None, suptitle: str | None = None):
    """Paper Figures 9, 10, 12: deletion against insertion ABC, one panel per method.

    Returns
    -------
    matplotlib.figure.Figure
    """
    methods = (compare_pair(("kernel_shap", "integrated_gradients"), ev.methods)
               if methods is None else list(methods))
    fig, axes = _new_figure(1, len(methods), figsize or (5.0 * len(methods), 4.4))
    for ax, m in zip(axes[0], methods, strict=True):
        insertion_deletion_scatter(ev, m, ax=ax)
    if suptitle:
        fig.suptitle(suptitle)
    return fig
