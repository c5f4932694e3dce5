"""Figures of the interactions behind insertion and deletion: the strongest pairwise effects as a
heat map, and the order-k surrogate curves of Theorem 1 beside the real curve
(:mod:`insdel.decomposition.surrogate`)."""

from __future__ import annotations

import numpy as np

from .._validation import check_mode, check_positive_int
from ..decomposition import BatchDecomposition, pairwise_effects, surrogate_curves
from ._common import _new_axes, _new_figure

__all__ = ["interaction_heatmap", "plot_surrogate", "interaction_figure"]

_ANNOTATE_MAX = 12  # units up to which every cell carries its value


def _names(dec: BatchDecomposition) -> list[str]:
    return list(dec.feature_names) if dec.feature_names is not None else [
        f"x{j}" for j in range(dec.n)]


def interaction_heatmap(dec: BatchDecomposition, pair: int | None = None, *, top: int = 10,
                        ax=None, annotate: bool | None = None):
    """The strongest pairwise interactions as a symmetric heat map (units x units).

    One pair (``pair=i``): its signed order-2 effects ``Delta_ij``
    (:func:`insdel.decomposition.pairwise_effects`) on a diverging scale centred at 0. A batch
    (``pair=None``): the mean of ``|Delta_ij|`` over the pairs. Only the ``top`` units with the
    largest total ``|Delta_ij|`` are shown (in unit order); the diagonal, where the main effects
    would sit, is left blank so the interactions set the colour scale.

    Parameters
    ----------
    dec : BatchDecomposition
    pair : int, optional
        A pair index; None summarises the batch.
    top : int, default 10
        Units shown, at most.
    ax : matplotlib Axes, optional
    annotate : bool, optional
        Write each cell's value (default: when at most 12 units are shown).

    Returns
    -------
    matplotlib.axes.Axes
    """
    top = check_positive_int(top, "top")
    P = pairwise_effects(dec)
    if pair is None:
        M = np.abs(P).mean(axis=0)
        what = f"mean |Δ_ij| over {dec.B} pairs"
    else:
        M = P[dec._index(pair)]
        what = f"Δ_ij of pair {pair}"
    M = M.copy()
    np.fill_diagonal(M, 0.0)
    M[np.abs(M) <= 1e-12 * np.abs(M).max(initial=0.0)] = 0.0  # rounding noise of the transform
    strength = np.abs(M).sum(axis=1)
    keep = np.sort(np.argsort(-strength, kind="stable")[:min(top, dec.n)])
    S = M[np.ix_(keep, keep)]
    shown = np.where(np.eye(len(keep), dtype=bool), np.nan, S)
    names = [_names(dec)[j] for j in keep]
    size = 1.2 + 0.42 * len(keep)
    ax = _new_axes(ax, figsize=(size + 1.4, size + 0.6))
    lim = float(np.nanmax(np.abs(shown))) if np.isfinite(shown).any() else 0.0
    lim = lim if lim > 0 else 1.0
    if pair is None:
        im = ax.imshow(shown, cmap="viridis", vmin=0.0, vmax=lim)
    else:
        im = ax.imshow(shown, cmap="RdBu_r", vmin=-lim, vmax=lim)
    ax.figure.colorbar(im, ax=ax, shrink=0.8, label=what)
    ax.set_xticks(range(len(keep)), names, rotation=90, fontsize="small")
    ax.set_yticks(range(len(keep)), names, fontsize="small")
    ax.set_title("strongest pairwise interactions", fontsize="medium")
    if annotate is None:
        annotate = len(keep) <= _ANNOTATE_MAX
    if annotate:
        for a in range(len(keep)):
            for b in range(len(keep)):
                if a != b:
                    v = S[a, b]
                    dark = abs(v) > 0.6 * lim if pair is not None else v < 0.5 * lim
                    ax.text(b, a, f"{v:.2g}", ha="center", va="center", fontsize=6,
                            color="white" if dark else "black")
    return ax


def plot_surrogate(sur, pair: int = 0, ordering: int = 0, *, ax=None, title: str | None = None):
    """The order-0..k surrogate curves of one pair and ordering beside its real curve.

    Each surrogate is labelled with the share of the real ABC it explains
    (:class:`insdel.decomposition.SurrogateCurves`: ``explained_abc``) and its root mean square gap.

    Parameters
    ----------
    sur : SurrogateCurves
        From :func:`insdel.decomposition.surrogate_curves`.
    pair, ordering : int
    ax : matplotlib Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    B, Q = sur.real.shape[:2]
    if not (0 <= pair < B and 0 <= ordering < Q):
        raise IndexError(f"pair {pair} / ordering {ordering} outside the surrogate's {B} pairs x "
                         f"{Q} orderings.")
    ax = _new_axes(ax, figsize=(5.6, 3.8))
    n = sur.real.shape[-1] - 1
    t = np.arange(n + 1)
    ax.plot(t, sur.real[pair, ordering], color="black", lw=2.2, label="real curve", zorder=3)
    cmap = __import__("matplotlib").colormaps["viridis"]
    for L in range(1, sur.k + 1):
        e = sur.explained_abc[pair, ordering, L]
        share = "n/a" if not np.isfinite(e) else f"{100 * e:.0f}%"
        ax.plot(t, sur.curves[pair, ordering, L], color=cmap(0.15 + 0.7 * (L - 1) / max(sur.k, 1)),
                lw=1.3, ls="--", marker="o", ms=2.5,
                label=f"order ≤ {L}: {share} of ABC, gap {sur.gap[pair, ordering, L]:.2g}")
    ax.set_xlabel(f"units {'inserted' if sur.mode == 'insertion' else 'deleted'}")
    ax.set_ylabel("v(coalition)")
    ax.set_title(title or f"{sur.mode}: surrogate curves of pair {pair}", fontsize="medium")
    ax.legend(fontsize="x-small", frameon=False)
    return ax


def interaction_figure(dec: BatchDecomposition, orders, *, pair: int = 0, k: int = 2,
                       mode: str = "insertion", top: int = 10):
    """Two panels for one pair: its strongest pairwise interactions and the order-1..k surrogate
    curves of ``orders`` (the pair's ordering, (n,) or (B, n)) beside the real curve.

    Returns
    -------
    matplotlib.figure.Figure
    """
    check_mode(mode)
    k = check_positive_int(k, "k")
    o = np.asarray(orders)
    row = o if o.ndim == 1 else o[dec._index(pair)]
    sur = surrogate_curves(dec[pair]._batch, row, k=k, mode=mode)
    fig, axes = _new_figure(1, 2, figsize=(12.0, 4.8))
    interaction_heatmap(dec, pair, top=top, ax=axes[0, 0])
    axes[0, 0].set_title(f"pair {pair}: strongest pairwise interactions", fontsize="medium")
    plot_surrogate(sur, 0, 0, ax=axes[0, 1], title=f"pair {pair}: {mode} curve and its surrogates")
    return fig
