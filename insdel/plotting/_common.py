"""What every figure shares: method labels, colours, new axes, the standard-error notes, and
which two methods a run's figures compare."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

#: Display names of the attribution methods (the paper's table labels).
METHOD_LABELS = {
    "kernel_shap": "Kernel SHAP",
    "exact_shapley": "Kernel SHAP (exact)",
    "integrated_gradients": "Integrated Gradients",
    "deeplift": "DeepLIFT",
    "vanilla_grad": "Vanilla Grad",
    "input_x_gradient": "Input×Gradient",
    "lime": "LIME",
    "cohort_shapley": "Cohort Shapley",
    "igcs": "IGCS",
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
