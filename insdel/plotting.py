"""Figures of insertion and deletion tests (paper §5: Figures 2 and 4-12).

Every helper draws on a matplotlib ``Axes`` (a new figure when ``ax`` is None) and returns the axes
or, for multi-panel helpers, the figure. Nothing here calls ``show`` or picks a backend; scripts that
run without a display should call ``matplotlib.use("Agg")`` themselves (the ``insdel`` CLI does).

One pair (Figures 2, 5, 6, 8, 11)
    :func:`plot_curves` (one mode, any curves), :func:`plot_pair` (insertion and deletion panels of
    one pair of an :class:`insdel.Evaluation`), :func:`plot_image_curves` (curves next to the image
    of an attribution, for image-like inputs).
Many pairs (Figures 4, 7, 9, 10, 12)
    :func:`abc_histogram`, :func:`abc_scatter` (one method against another, with the 45-degree
    line), :func:`random_abc_histogram`, :func:`insertion_deletion_scatter` (coloured by the sign
    of f(r) - f(x)), :func:`abc_bars` (mean ABC and standard error per method and mode), and the
    composites :func:`figure4` and :func:`insertion_deletion_figure`.

Conventions (``docs/conventions.md``): x is the target, r the reference; the insertion curve runs
from f(r) to f(x), the deletion curve from f(x) to f(r); ABC is the signed area between the curve
and the straight line joining its end points (positive above the line for insertion, below it for
deletion), reported per feature (divided by n) when the evaluation was normalised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ._stats import mean_se, unit_ids
from ._validation import as_float_array, check_mode
from .areas import abc as _abc

__all__ = [
    "plot_curves", "plot_pair", "plot_image_curves", "abc_histogram", "abc_scatter",
    "random_abc_histogram", "insertion_deletion_scatter", "abc_bars", "figure4",
    "insertion_deletion_figure", "METHOD_LABELS", "plot_predictions", "policy_figures",
    "save_figure", "compare_pair", "decomposition_figure", "roar_figure",
]

#: Display names of the attribution methods (the paper's table labels).
METHOD_LABELS = {
    "kernel_shap": "Kernel SHAP",
    "exact_shapley": "Kernel SHAP (exact)",
    "integrated_gradients": "Integrated Gradients",
    "deeplift": "DeepLIFT",
    "vanilla_grad": "Vanilla Grad",
    "input_x_gradient": "Input×Gradient",
    "lime": "LIME",
    "random": "Random",
}

# colours: positive / negative signed area; f(r) > f(x) (purple) / f(r) < f(x) (green) as in Fig. 9
_POS, _NEG = "#2c7fb8", "#e6550d"
_PURPLE, _GREEN = "#7b3294", "#1b9e77"
_MODE_COLOURS = {"insertion": "#2c7fb8", "deletion": "#d95f02"}


def _label(method: str) -> str:
    if " - " in method:
        a, b = method.split(" - ", 1)
        return f"{_label(a)} − {_label(b)}"
    return METHOD_LABELS.get(method, method)


def _new_axes(ax, figsize=(5.0, 3.8)):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _new_figure(nrows: int, ncols: int, figsize):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(nrows, ncols, figsize=figsize, layout="constrained", squeeze=False)
    return fig, axes


def _unit(normalize: bool | None) -> str:
    return " (per feature)" if normalize else ""


# A standard error that is NaN (one pair, one replicate: ``std(ddof=1)`` is undefined) gets no
# error bar, never a zero-length one, which would read as "no uncertainty"; a note says so
# ("1 replicate: no standard error bars"): on the axes in roar_figure, under the axis label in
# the bar charts (abc_bars, decomposition_figure), where it cannot cover a bar or the legend.
def _why_no_se(n_missing, unit: str) -> str:
    """Why the standard errors are missing: ``"1 <unit>"`` when every row without one has
    ``n == 1`` (``n_missing``: their counts, or None when the table has no ``n``), else
    ``"NaN standard error"``."""
    if n_missing is None:
        return "NaN standard error"
    n = pd.to_numeric(pd.Series(np.asarray(n_missing).ravel()), errors="coerce").to_numpy()
    return f"1 {unit}" if n.size and bool((n == 1).all()) else "NaN standard error"


def _no_se_text(why: str, where: str = "") -> str:
    """The note's words: ``"<why>: no standard error bars<where>"``."""
    return f"{why}: no standard error bars{where}"


def _no_se_note(ax, why: str, where: str = "") -> None:
    """The note on the axes, bottom left."""
    ax.text(0.02, 0.02, _no_se_text(why, where), transform=ax.transAxes, fontsize="x-small",
            ha="left", va="bottom", color="0.3")


def _listing(names: Sequence[str], limit: int = 4) -> str:
    """``"a, b, c"``, the first ``limit`` names and ``"+k more"``."""
    names = list(names)
    more = f" (+{len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


# --------------------------------------------------------------------------------------------------
# one pair
# --------------------------------------------------------------------------------------------------
def plot_curves(curves: Mapping[str, np.ndarray] | np.ndarray, mode: str = "insertion", *,
                random_curves: np.ndarray | None = None, shade: str | None = "auto",
                ax=None, title: str | None = None, normalize: bool = True,
                ylabel: str = "f(hybrid)", legend: bool = True, positions=None,
                m: int | None = None):
    """Insertion or deletion curves of one pair, the straight line and the shaded signed area.

    Draws each curve ``c_0 .. c_n`` against the number k of features moved, the straight line
    from ``c_0`` to ``c_n`` (dashed), the signed area between one curve and that line (blue where it
    counts positively towards ABC, orange where negatively; paper Figure 2) and, in grey, curves of
    random orderings (Figures 5, 6, 8, 11). Legend entries carry each curve's ABC.

    Parameters
    ----------
    curves : mapping name -> array (n + 1,), or one array (n + 1,)
        Curves of the same pair and mode (insertion from f(r) to f(x), deletion from f(x) to f(r)).
    mode : {"insertion", "deletion"}
    random_curves : array (K, n + 1), optional
        Curves of K random orderings of the same pair, drawn in grey.
    shade : str, "auto" or None
        Name of the curve whose signed area is shaded; "auto" shades the first one.
    ax : matplotlib Axes, optional
    title : str, optional
    normalize : bool
        Whether the ABCs in the legend are per feature (divided by n, paper tables).
    positions : array of int (n + 1,), optional
        Units moved at each point (curves with ``step``, ``fractions`` or groups of an
        :class:`insdel.Evaluation`, its ``positions``): the x axis, the straight line and the
        legend's ABC use them, as :func:`insdel.areas.abc` does (default ``0 .. n``).
    m : int, optional
        Total number of units with ``positions`` (default ``positions[-1]``).

    Returns
    -------
    matplotlib.axes.Axes
    """
    mode = check_mode(mode)
    if not isinstance(curves, Mapping):
        curves = {"curve": curves}
    if not curves:
        raise ValueError("curves is empty: give at least one curve.")
    arrs = {}
    for name, c in curves.items():
        c = as_float_array(f"curves[{name!r}]", c, ndim=(1,))
        if c.shape[0] < 2:
            raise ValueError(f"curves[{name!r}] needs n + 1 >= 2 points; got {c.shape[0]}.")
        arrs[name] = c
    P = next(iter(arrs.values())).shape[0]
    for name, c in arrs.items():
        if c.shape[0] != P:
            raise ValueError(f"curves[{name!r}] has {c.shape[0]} points; the first curve has {P}.")
    if positions is None:
        if m is not None:
            raise ValueError("m= is the number of units of curves recorded at positions=; give "
                             "positions= with it.")
        k = np.arange(P)
    else:
        k = np.asarray(positions)
    # the legend's ABCs, first: positions are checked there as the areas check them (one per
    # point, increasing, in [0, m]) before anything is drawn
    abcs = {name: float(_abc(c, mode=mode, normalize=normalize, positions=positions, m=m))
            for name, c in arrs.items()}
    ax = _new_axes(ax, figsize=(7.0, 3.8) if legend else (5.0, 3.8))  # the legend on the right
    if random_curves is not None:
        rc = as_float_array("random_curves", random_curves, ndim=(1, 2))
        rc = rc[None, :] if rc.ndim == 1 else rc
        if rc.shape[1] != P:
            raise ValueError(f"random_curves must have {P} points per curve; got shape {rc.shape}.")
        for i, c in enumerate(rc):
            ax.plot(k, c, color="0.7", lw=0.7, alpha=0.7, zorder=1,
                    label=f"random orders (K = {len(rc)})" if i == 0 else None)
    first = next(iter(arrs.values()))
    line = first[0] + (first[-1] - first[0]) * (k - k[0]) / (k[-1] - k[0])
    ax.plot(k, line, color="k", ls="--", lw=1.0, zorder=2, label="straight line")
    if shade == "auto":
        shade = next(iter(arrs))
    if shade is not None:
        if shade not in arrs:
            raise KeyError(f"shade={shade!r} is not one of the curves {list(arrs)}.")
        c = arrs[shade]
        up = c >= line
        good, bad = (up, ~up) if mode == "insertion" else (~up, up)
        ax.fill_between(k, line, c, where=good, interpolate=True, color=_POS, alpha=0.25,
                        lw=0, zorder=0, label=f"ABC of {_label(shade)}: adds")
        ax.fill_between(k, line, c, where=bad, interpolate=True, color=_NEG, alpha=0.25,
                        lw=0, zorder=0, label=f"ABC of {_label(shade)}: subtracts")
    for i, (name, c) in enumerate(arrs.items()):
        ax.plot(k, c, marker="o", ms=3, lw=1.6, zorder=3 + i, color=f"C{i}",
                label=f"{_label(name)} (ABC {abcs[name]:.3g})")
    ax.set_xlabel("features moved, k" + (" (r → x)" if mode == "insertion" else " (x → r)"))
    ax.set_ylabel(ylabel)
    ax.set_xlim(0, int(k[-1]) if m is None else int(m))
    ax.set_title(title if title is not None else mode.capitalize())
    if legend:
        # outside the axes, on the right: it covers neither the curves nor the x axis's tick
        # labels and label, however long (feature names, rotated by plot_pair); the figure's
        # constrained layout makes room for it
        ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.02, 1.0),
                  borderaxespad=0.0, frameon=False)
    return ax


def plot_pair(ev, pair: int, methods: Sequence[str] | None = None,
              modes: Sequence[str] | None = None, *, n_random: int = 20,
              shade: str | None = "auto", axes=None, figsize=None, suptitle: str | None = None,
              target: str | None = None):
    """Deletion and insertion curves of one pair of an evaluation (paper Figures 5, 6, 8, 11).

    Parameters
    ----------
    ev : insdel.Evaluation
    pair : int
        Row of the pair in the evaluation.
    methods : list of str, optional
        Methods to draw (default: every evaluated method).
    modes : list of str, optional
        Panels, left to right (default: the evaluated modes, deletion first as in Figure 5).
    n_random : int
        Grey random-order curves per panel (at most the evaluation's ``n_random``).
    shade : str, "auto" or None
        Method whose signed area is shaded ("auto": the first of ``methods``).
    axes : sequence of Axes, optional
        One per mode.
    target : str, optional
        The target's name (and units), for the y axis.

    Returns
    -------
    matplotlib.figure.Figure
    """
    B = ev.n_pairs
    if not 0 <= int(pair) < B:
        raise IndexError(f"pair {pair} is out of range for an evaluation of {B} pairs.")
    pair = int(pair)
    methods = list(ev.methods if methods is None else methods)
    for m in methods:
        if m not in ev.methods:
            raise KeyError(f"unknown method {m!r}; evaluated: {ev.methods}.")
    if modes is None:
        modes = [m for m in ("deletion", "insertion") if m in ev.modes]
    modes = [check_mode(m) for m in modes]
    if axes is None:
        # each panel: the axes and, on its right, the legend (plot_curves)
        fig, ax_arr = _new_figure(1, len(modes), figsize or (7.0 * len(modes), 4.8))
        axes = list(ax_arr[0])
    else:
        axes = list(np.atleast_1d(axes))
        if len(axes) != len(modes):
            raise ValueError(f"axes must hold one Axes per mode ({len(modes)}); got {len(axes)}.")
        fig = axes[0].figure
    for ax, mode in zip(axes, modes, strict=True):
        if mode not in ev.modes:
            raise KeyError(f"mode {mode!r} was not evaluated; evaluated: {ev.modes}.")
        cur = {m: ev.curves[mode][pair, ev.methods.index(m)] for m in methods}
        rc = ev.random_curves[mode][pair, :n_random] if n_random else None
        if rc is not None and rc.shape[0] == 0:
            rc = None
        pos = getattr(ev, "positions", None)
        plot_curves(cur, mode, random_curves=rc, shade=shade, ax=ax, normalize=ev.normalize,
                    title=f"{mode.capitalize()}, pair {pair}",
                    ylabel=f"f(hybrid): predicted {target}" if target else "f(hybrid)",
                    positions=pos, m=None if pos is None else ev.m)
        # the orders index units: the groups' names when the evaluation has groups
        grp = getattr(ev, "groups", None)
        names = getattr(ev, "feature_names", None) if grp is None else list(grp.names)
        n = ev.curves[mode].shape[-1] - 1
        if (names is not None and ev.orders is not None and n <= 12 and methods
                and pos is None and ev.orders.shape[-1] == n):  # one point per unit moved
            o = ev.orders[pair, ev.methods.index(methods[0])]
            ax.set_xticks(np.arange(n + 1), ["none"] + [names[int(j)] for j in o], rotation=45,
                          ha="right", fontsize="x-small")
            ax.set_xlabel(f"feature moved at each step ({_label(methods[0])}'s order)")
    fig.suptitle(suptitle if suptitle is not None else
                 f"f(x) = {ev.fx[pair]:.4g}, f(r) = {ev.fr[pair]:.4g}")
    return fig


def plot_image_curves(image: np.ndarray, attribution: np.ndarray, curves: Mapping[str, np.ndarray],
                      mode: str = "deletion", *, figsize=(11.0, 3.6), **kwargs):
    """Image-like inputs: the image, its attribution map and the insertion/deletion curves.

    Parameters
    ----------
    image : array (H, W) or (H, W, 3)
        The target x as an image (values in [0, 1] for RGB).
    attribution : array (H, W) or (H, W, C)
        Attribution per pixel (channels are summed, as in paper Figure 1).
    curves : mapping name -> array (n + 1,)
        Curves of this pair (n may be the number of pixels or of pixel groups).
    mode : {"insertion", "deletion"}
    **kwargs
        Passed to :func:`plot_curves` (``random_curves``, ``shade``, ``normalize``...).

    Returns
    -------
    matplotlib.figure.Figure
    """
    img = np.asarray(image, dtype=float)
    att = np.asarray(attribution, dtype=float)
    if img.ndim not in (2, 3):
        raise ValueError(f"image must be (H, W) or (H, W, 3); got shape {img.shape}.")
    if att.ndim == 3:
        att = att.sum(axis=-1)
    if att.shape != img.shape[:2]:
        raise ValueError(f"attribution must cover the image's {img.shape[:2]} pixels; got {att.shape}.")
    fig, axes = _new_figure(1, 3, figsize)
    axes[0, 0].imshow(img, cmap="gray" if img.ndim == 2 else None)
    axes[0, 0].set_title("target x")
    lim = float(np.max(np.abs(att))) or 1.0
    im = axes[0, 1].imshow(att, cmap="RdBu_r", vmin=-lim, vmax=lim)
    axes[0, 1].set_title("attribution")
    fig.colorbar(im, ax=axes[0, 1], shrink=0.8)
    for a in axes[0, :2]:
        a.set_xticks([])
        a.set_yticks([])
        a.set_xlabel("")
    plot_curves(curves, mode, ax=axes[0, 2], **kwargs)
    return fig


def figure1(image: np.ndarray, saliency: np.ndarray, curves: Mapping[str, np.ndarray], *,
            positions: np.ndarray | None = None, m: int | None = None, title: str | None = None,
            figsize=(12.0, 3.2)):
    """Paper Figure 1's layout: the image, its saliency map, and the deletion and insertion
    curves against the fraction of units (pixels) moved, Petsiuk's AUC shaded and printed.

    Parameters
    ----------
    image : array (H, W) or (H, W, 3)
    saliency : array (H, W) (channels summed beforehand)
    curves : mapping {"deletion": (S,), "insertion": (S,)}
        One image's curves (either may be missing).
    positions : array of int (S,), optional
        Units moved at each point (default ``0 .. S - 1``).
    m : int, optional
        Total units (default ``positions[-1]``).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from .areas import petsiuk_auc

    img = np.asarray(image, dtype=float)
    sal = np.asarray(saliency, dtype=float)
    if sal.shape != img.shape[:2]:
        raise ValueError(f"saliency must cover the image's {img.shape[:2]} pixels; got {sal.shape}.")
    fig, axes = _new_figure(1, 4, figsize)
    axes[0, 0].imshow(img, cmap="gray" if img.ndim == 2 else None)
    axes[0, 0].set_title("image x")
    lim = float(np.max(np.abs(sal))) or 1.0
    im = axes[0, 1].imshow(sal, cmap="RdBu_r", vmin=-lim, vmax=lim)
    axes[0, 1].set_title("saliency")
    fig.colorbar(im, ax=axes[0, 1], shrink=0.8)
    for a in axes[0, :2]:
        a.set_xticks([])
        a.set_yticks([])
    for j, mode in enumerate(("deletion", "insertion")):
        ax = axes[0, 2 + j]
        c = curves.get(mode)
        if c is None:
            ax.set_visible(False)
            continue
        c = np.asarray(c, dtype=float)
        t = np.arange(c.shape[0]) if positions is None else np.asarray(positions)
        mm = int(t[-1]) if m is None else int(m)
        x = t / mm
        a = float(petsiuk_auc(c[None], positions=t, m=mm)[0])
        ax.plot(x, c, color="C3" if mode == "deletion" else "C0", lw=1.8)
        ax.fill_between(x, c, 0, alpha=0.25, color="C3" if mode == "deletion" else "C0")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, max(1.0, float(c.max()) * 1.05))
        ax.set_xlabel("fraction of pixels " + ("deleted" if mode == "deletion" else "inserted"))
        ax.set_ylabel("probability")
        ax.set_title(f"{mode}: AUC = {a:.3f}")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


# --------------------------------------------------------------------------------------------------
# many pairs
# --------------------------------------------------------------------------------------------------
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

    from .adapter import as_model
    from .models import regression_metrics

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


def compare_pair(want: Sequence[str], methods: Sequence[str]) -> list[str]:
    """The two methods a run's figures compare: those asked for that were run (``kernel_shap``
    falls back to ``exact_shapley``), filled up from the methods present."""
    want = list(want)
    out = []
    for m in want:
        if m in methods:
            out.append(m)
        elif m == "kernel_shap" and "exact_shapley" in methods:
            out.append("exact_shapley")
    for m in methods:  # fill up to two
        if len(out) >= 2:
            break
        if m not in out:
            out.append(m)
    return out[:2]


def save_figure(fig, path, dpi: int = 110) -> Path:
    """Write ``fig`` as PNG to ``path`` atomically (no timestamp metadata) and close it."""
    import matplotlib.pyplot as plt

    from . import _checkpoint as ck

    path = Path(path)
    with ck.atomic_write(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=dpi, format="png", metadata={"Software": None})
    plt.close(fig)
    return path


def policy_figures(ev, label: str, folder, *, compare: Sequence[str] = ("kernel_shap",
                   "integrated_gradients"), n_random: int = 20, dpi: int = 110,
                   seed: int = 0, target: str | None = None) -> list[Path]:
    """The paper's §5 figures for one policy's evaluation, written as PNG files into ``folder``.

    A random pair's curves, the pairs where the two compared methods differ most (Figures 6, 8),
    the ABC distributions (Figures 4, 7), deletion against insertion ABC (Figures 9, 10, 12), the
    most asymmetric pair (Figure 11) and the mean ABC per method. Returns the paths written.
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
    return out
