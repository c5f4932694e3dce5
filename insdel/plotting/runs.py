"""A run's figures: the model's predictions (Figure 14), ROAR (Figure 13), ROAD's MoRF / LeRF
loss curves (:func:`plot_road`), one policy's set of §5 figures (:func:`policy_figures`), and
:func:`save_figure` (PNG without timestamps)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ._common import (
    _label,
    _new_axes,
    _new_figure,
    _no_se_note,
    _why_no_se,
    compare_pair,
)
from .distributions import abc_bars, figure4, insertion_deletion_figure
from .pairs import plot_pair
from .verdicts import critical_difference_figure


def plot_predictions(model, dataset, ax=None, *, split: str = "test", max_points: int = 20000,
                     seed: int = 0):
    """Predicted against true target on a split (paper Figure 14), in the target's raw units.

    Parameters
    ----------
    model : torch module, estimator or callable
        Evaluated through :func:`insdel.as_model`.
    dataset : Dataset
    ax : matplotlib Axes, optional
    split : {"test", "train"}
    max_points : int
        Subsample for the scatter (R² uses every point).

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt

    from ..adapter import as_model
    from ..models import regression_metrics

    X, y = dataset._split(split) if hasattr(dataset, "_split") else (dataset.X_test,
                                                                      dataset.y_test)
    pred = as_model(model)(X)
    m = regression_metrics(y, pred)
    scale = getattr(dataset, "target_scale", None) or 1.0
    yt, yp = np.asarray(y) * scale, pred * scale
    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 4.5))
    idx = np.arange(len(yt))
    if len(idx) > max_points:
        idx = np.sort(np.random.default_rng(seed).choice(len(yt), max_points, replace=False))
    ax.scatter(yt[idx], yp[idx], s=3, alpha=0.4, linewidths=0)
    lo, hi = float(min(yt.min(), yp.min())), float(max(yt.max(), yp.max()))
    ax.plot([lo, hi], [lo, hi], color="k", lw=0.8, ls="--", label="y = x")
    name = getattr(dataset, "target_name", "target")
    unit = "" if scale == 1.0 else f" (x {scale:g})"
    ax.set_xlabel(f"true {name}{unit}")
    ax.set_ylabel(f"predicted {name}{unit}")
    label = getattr(dataset, "label", None) or getattr(dataset, "name", "")
    ax.set_title(f"{label} {split}: R² = {m['r2']:.3f}, "
                 f"RMSE = {m['rmse'] * scale:.3g}")
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(loc="upper left", frameon=False)
    return ax




def roar_figure(summary: pd.DataFrame, *, title: str | None = None, ax=None):
    """Paper Figure 13: ROAR test loss against the fraction q of features removed, one line per
    method × ordering with ± one standard error bars, and the straight line joining q = 0 and
    q = 1 (the same for every curve); each legend entry gives the curve's area against it.

    A point whose standard error is NaN (a single replicate: :func:`insdel.roar.summarize` gives
    no standard error then) gets no error bar, not a zero-length one, which would read as "no
    uncertainty"; a note on the axes says so ("1 replicate: no standard error"), and when only
    some curves lack it their legend entries say "no s.e.".

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`insdel.roar.summarize` output (``roar_summary.csv``).

    Returns
    -------
    matplotlib.figure.Figure
    """
    need = {"method", "ordering", "q", "mean", "std_error"}
    if not need <= set(summary.columns):
        raise ValueError(f"summary needs columns {sorted(need)}; got {list(summary.columns)}.")
    ax = _new_axes(ax, figsize=(6.4, 4.4))
    styles = {"absolute": "-", "signed": "--", "random": ":", "kar_absolute": "-.",
              "kar_signed": (0, (1, 1))}
    methods = [m for m in dict.fromkeys(summary["method"]) if m != "random"]
    colours = {m: f"C{i}" for i, m in enumerate(methods)}
    colours["random"] = "0.45"
    pts_all = summary.dropna(subset=["q"])
    se_all = pd.to_numeric(pts_all["std_error"], errors="coerce").to_numpy(dtype=float)
    some_missing = not np.isfinite(se_all).all()
    all_missing = not np.isfinite(se_all).any()
    line = None
    for (m, o), g in summary.groupby(["method", "ordering"], sort=False):
        pts = g.dropna(subset=["q"]).sort_values("q")
        area = g[g["q"].isna()]["mean"]
        lab = f"{_label(m)}, {o}" if m != "random" else "random ordering"
        if len(area):
            lab += f" (area {area.iloc[0]:+.3g})"
        q, mean = pts["q"].to_numpy(dtype=float), pts["mean"].to_numpy(dtype=float)
        se = pd.to_numeric(pts["std_error"], errors="coerce").to_numpy(dtype=float)
        has = np.isfinite(se)
        style = dict(color=colours.get(m, "k"))
        if has.all():
            ax.errorbar(q, mean, yerr=se, capsize=3, marker="o", ms=3.5, ls=styles.get(o, "-"),
                        label=lab, **style)
        else:  # no error bar where there is no standard error (not a zero-length one)
            if some_missing and not all_missing:
                lab += ", no s.e. at some q" if has.any() else ", no s.e."
            ax.plot(q, mean, marker="o", ms=3.5, ls=styles.get(o, "-"), label=lab, **style)
            if has.any():
                ax.errorbar(q[has], mean[has], yerr=se[has], capsize=3, fmt="none",
                            ecolor=style["color"])
        if line is None and len(mean):
            line = (mean[0], mean[-1])
    if line is not None:
        ax.plot([0, 1], list(line), color="k", lw=0.8, ls="--", alpha=0.6,
                label="straight line q = 0 to 1")
    if some_missing:
        n = pts_all["n"].to_numpy()[~np.isfinite(se_all)] if "n" in pts_all.columns else None
        where = "" if all_missing else " for some curves (legend: no s.e.)"
        _no_se_note(ax, _why_no_se(n, "replicate"), where)
    ax.set_xlabel("fraction q of features removed")
    ax.set_ylabel("test Huber loss after retraining" + ("" if all_missing else " (± s.e.)"))
    ax.set_title(title or "ROAR (paper Figure 13)")
    ax.legend(fontsize="x-small")
    return ax.figure




def plot_road(result, *, title: str | None = None, ax=None):
    """ROAD (:func:`insdel.road.evaluate`): the loss under imputation against the fraction q of
    features removed, one colour per method, MoRF (most relevant removed first) solid, LeRF
    (least relevant first) dashed, the random baseline grey; each legend entry of a method gives
    its SRG = area(MoRF) − area(LeRF) (higher is better).

    Parameters
    ----------
    result : insdel.road.RoadResult or pandas.DataFrame
        The result, or its ``curves`` table (columns ``method, order, q, loss``).
    title : str, optional
        The panel's title.
    ax : matplotlib.axes.Axes, optional
        Draw into this panel (default: a new figure), as every single-panel figure.

    Returns
    -------
    matplotlib.axes.Axes
        The panel (``.figure`` is its figure).
    """
    if isinstance(result, pd.DataFrame):
        curves, summary, loss = result, None, "loss"
    else:
        curves = getattr(result, "curves", None)
        summary, loss = getattr(result, "summary", None), str(getattr(result, "loss", "loss"))
    need = {"method", "order", "q", "loss"}
    if not isinstance(curves, pd.DataFrame) or not need <= set(curves.columns):
        raise ValueError(f"plot_road takes a RoadResult or its curves table with columns "
                         f"{sorted(need)}; got {type(result).__name__}.")
    ax = _new_axes(ax, figsize=(6.4, 4.4))
    styles = {"morf": "-", "lerf": "--"}
    methods = [m for m in dict.fromkeys(curves["method"]) if m != "random"]
    colours = {m: f"C{i}" for i, m in enumerate(methods)}
    colours["random"] = "0.45"
    srg = ({} if summary is None else
           dict(zip(summary["method"], summary["srg"], strict=True)))
    for (m, o), g in curves.groupby(["method", "order"], sort=False):
        g = g.sort_values("q")
        lab = f"{_label(m)}, {'MoRF' if o == 'morf' else 'LeRF' if o == 'lerf' else o}"
        if o == "morf" and m in srg and np.isfinite(srg[m]):
            lab += f" (SRG {srg[m]:+.3g})"
        ax.plot(g["q"].to_numpy(float), g["loss"].to_numpy(float), marker="o", ms=3.5,
                ls=styles.get(o, ":"), color=colours.get(m, "k"), label=lab)
    ax.set_xlabel("fraction q of features removed and imputed")
    ax.set_ylabel(f"{loss.upper() if loss != 'loss' else 'loss'} under imputation (no retraining)")
    ax.set_title(title or "ROAD: MoRF (solid) and LeRF (dashed)")
    ax.legend(fontsize="x-small")
    return ax


def save_figure(fig, path, dpi: int = 110) -> Path:
    """Write ``fig`` as PNG to ``path`` atomically (no timestamp metadata) and close it."""
    import matplotlib.pyplot as plt

    from .. import _checkpoint as ck

    path = Path(path)
    with ck.atomic_write(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=dpi, format="png", metadata={"Software": None})
    plt.close(fig)
    return path


def policy_figures(ev, label: str, folder, *, compare: Sequence[str] = ("kernel_shap",
                   "integrated_gradients"), n_random: int = 20, dpi: int = 110,
                   seed: int = 0, target: str | None = None,
                   comparisons: pd.DataFrame | None = None) -> list[Path]:
    """The paper's §5 figures for one policy's evaluation, written as PNG files into ``folder``.

    A random pair's curves, the pairs where the two compared methods differ most (Figures 6, 8),
    the ABC distributions (Figures 4, 7), deletion against insertion ABC (Figures 9, 10, 12), the
    most asymmetric pair (Figure 11) and the mean ABC per method; with ``comparisons`` (the
    policy's ``comparisons.csv``: every pairwise comparison per mode, ``insdel.verdicts``) the
    critical-difference diagram of each mode beside the bar chart
    (``<label>_critical_difference.png``: which differences are significant, Holm). Returns the
    paths written.
    """
    folder = Path(folder)
    dpi = int(dpi)
    K = int(n_random)
    two = compare_pair(compare, ev.methods)
    a, b = two[0], two[-1]
    out = []
    rng = np.random.default_rng([seed, 5])
    p = int(rng.integers(ev.n_pairs))
    out.append(save_figure(plot_pair(ev, p, two, n_random=K, target=target, suptitle=(
        f"{label}: a random pair (f(x) = {ev.fx[p]:.4g}, f(r) = {ev.fr[p]:.4g})")),
        folder / f"{label}_curves_random_pair.png", dpi))
    modes = list(ev.modes)
    if a != b:
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(len(modes), len(modes), figsize=(7.0 * len(modes),
                                                                  4.0 * len(modes)),
                                 layout="constrained", squeeze=False)
        for i, mode in enumerate(modes):
            d = ev.abc_array(a, mode) - ev.abc_array(b, mode)
            q = int(np.argmax(d))
            plot_pair(ev, q, two, n_random=K, target=target, axes=axes[i], suptitle="")
            first = axes[i, 0].get_title()  # "<Mode>, pair q": keep the panel's mode
            axes[i, 0].set_title(f"{first}: largest {mode} ABC gap "
                                 f"{_label(a)} − {_label(b)} = {d[q]:.3g}",
                                 fontsize="small")
        fig.suptitle(f"{label}: pairs where {_label(a)} and {_label(b)} differ "
                     "most (paper Figures 6, 8)")
        out.append(save_figure(fig, folder / f"{label}_curves_largest_difference.png", dpi))
    fig = figure4(ev, a, b)
    fig.suptitle(f"{label}: ABC distributions (paper Figures 4, 7)")
    out.append(save_figure(fig, folder / f"{label}_abc_panels.png", dpi))
    if {"insertion", "deletion"} <= set(modes):
        out.append(save_figure(insertion_deletion_figure(
            ev, two, suptitle=f"{label}: deletion vs insertion ABC (paper Figures 9, 10, 12)"),
            folder / f"{label}_insertion_vs_deletion.png", dpi))
        asym = ev.abc_array(a, "insertion") - ev.abc_array(a, "deletion")
        q = int(np.argmax(np.abs(asym)))
        out.append(save_figure(plot_pair(ev, q, two, n_random=K, target=target, suptitle=(
            f"{label}: most asymmetric pair {q} (insertion − deletion ABC of "
            f"{_label(a)} = {asym[q]:.3g}; paper Figure 11)")),
            folder / f"{label}_most_asymmetric_pair.png", dpi))
    ax = abc_bars(ev)
    ax.set_title(f"{label}: {ax.get_ylabel()}")  # "mean ABC ± s.e.", or "mean ABC" (one pair)
    out.append(save_figure(ax.figure, folder / f"{label}_mean_abc.png", dpi))
    if comparisons is not None and len(comparisons):
        blocks = {f"{label}, {mode}": comparisons[comparisons["mode"] == mode]
                  for mode in dict.fromkeys(comparisons["mode"])}
        out.append(save_figure(critical_difference_figure(blocks),
                               folder / f"{label}_critical_difference.png", dpi))
    return out


def _pack(items: list[str], width: int) -> list[str]:
    """``items`` joined by "; " into lines of at most ``width`` characters (an item longer than
    that on a line of its own), in order."""
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + 2 + len(item) <= width:
            lines[-1] += "; " + item
        else:
            lines.append(item)
    return lines


def removal_robustness(table: pd.DataFrame, kendall: pd.DataFrame | None = None, *,
                       title: str | None = None):
    """Robustness of the method ranking to the removal: a heat map of each method's mean ABC
    (rows) under each removal (columns), annotated with the mean and the method's rank under that
    removal, one panel per mode (and per policy when the table has a ``policy`` column); each
    panel's title gives the Kendall τ-b between every two removals' rankings.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`insdel.robustness.robustness_table` (optionally with a ``policy`` column).
    kendall : pandas.DataFrame, optional
        :func:`insdel.robustness.kendall_between` of the table (computed when None).
    title : str, optional
        The figure's title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ..robustness import _rank, kendall_between

    if kendall is None:
        kendall = kendall_between(table)
    has_policy = "policy" in table.columns
    policies = list(dict.fromkeys(table["policy"])) if has_policy else [None]
    modes = [m for m in ("insertion", "deletion") if m in set(table["mode"])]
    methods = list(dict.fromkeys(table["method"]))
    removals = list(dict.fromkeys(table["removal"]))
    width = max(3.2, 1.4 * len(removals) + 2.2)  # of one panel, inches
    # a panel's τ list on as many lines as it takes to fit above the panel (about 14 characters
    # an inch at the title's size, the colour bar aside): on one line, 3 removals' titles ran
    # into each other and off the figure
    per_line = max(20, int(14 * (width - 1.0)))
    lines = len(_pack([f"τ({a}, {b}) = -0.00" for k, a in enumerate(removals)
                       for b in removals[k + 1:]], per_line))
    fig, axes = _new_figure(len(policies), len(modes),
                            (width * len(modes),
                             (0.45 * len(methods) + 1.6 + 0.2 * max(lines - 1, 0))
                             * len(policies)))
    for i, policy in enumerate(policies):
        sub = table[table["policy"] == policy] if has_policy else table
        ksub = kendall[kendall["policy"] == policy] if has_policy else kendall
        for j, mode in enumerate(modes):
            ax = axes[i, j]
            ms = sub[sub["mode"] == mode]
            M = ms.pivot(index="method", columns="removal", values="mean").loc[methods, removals]
            Rk = ms.pivot(index="method", columns="removal", values="rank").loc[methods,
                                                                                 removals]
            vals = M.to_numpy(dtype=float)
            im = ax.imshow(vals, cmap="viridis", aspect="auto")
            lo, hi = np.nanmin(vals), np.nanmax(vals)
            for a in range(len(methods)):
                for b in range(len(removals)):
                    v = vals[a, b]
                    if not np.isfinite(v):
                        continue
                    dark = hi > lo and (v - lo) / (hi - lo) < 0.5
                    ax.text(b, a, f"{v:.3g}\n{_rank(Rk.iloc[a, b])}", ha="center",
                            va="center", fontsize="x-small", color="white" if dark else "black")
            ax.set_xticks(range(len(removals)), removals, fontsize="small")
            ax.set_yticks(range(len(methods)), [_label(m) for m in methods], fontsize="small")
            taus = ksub[ksub["mode"] == mode]
            tau_text = "\n".join(_pack([f"τ({r.removal_a}, {r.removal_b}) = "
                                        + ("n/a" if not np.isfinite(r.tau) else f"{r.tau:.2f}")
                                        for r in taus.itertuples(index=False)], per_line))
            head = f"{policy}: {mode}" if has_policy else mode.capitalize()
            ax.set_title(head + ("\n" + tau_text if tau_text else ""), fontsize="small")
            fig.colorbar(im, ax=ax, fraction=0.05, label="mean ABC")
    fig.suptitle(title or "Mean ABC and rank of each method under each removal "
                 "(Kendall τ-b between rankings)", fontsize="medium")
    return fig
