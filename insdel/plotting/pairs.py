"""Figures of one pair (paper Figures 1, 2, 5, 6, 8, 11): its insertion and deletion curves,
the straight line and the shaded signed area; curves next to an image and its attribution map."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .._validation import as_float_array, check_mode
from ..areas import abc as _abc
from ._common import (
    _NEG,
    _POS,
    _label,
    _new_axes,
    _new_figure,
)


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


def _image_and_map(fig, axes, img: np.ndarray, att: np.ndarray, image_title: str,
                   map_title: str) -> None:
    """The image (``axes[0, 0]``) and its attribution map (``axes[0, 1]``, a diverging colour
    scale symmetric about 0, with a colour bar), both without ticks or axis labels."""
    axes[0, 0].imshow(img, cmap="gray" if img.ndim == 2 else None)
    axes[0, 0].set_title(image_title)
    lim = float(np.max(np.abs(att))) or 1.0
    im = axes[0, 1].imshow(att, cmap="RdBu_r", vmin=-lim, vmax=lim)
    axes[0, 1].set_title(map_title)
    fig.colorbar(im, ax=axes[0, 1], shrink=0.8)
    for a in axes[0, :2]:
        a.set_xticks([])
        a.set_yticks([])
        a.set_xlabel("")


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
    _image_and_map(fig, axes, img, att, "target x", "attribution")
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
    from ..areas import petsiuk_auc

    img = np.asarray(image, dtype=float)
    sal = np.asarray(saliency, dtype=float)
    if sal.shape != img.shape[:2]:
        raise ValueError(f"saliency must cover the image's {img.shape[:2]} pixels; got {sal.shape}.")
    fig, axes = _new_figure(1, 4, figsize)
    _image_and_map(fig, axes, img, sal, "image x", "saliency")
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
