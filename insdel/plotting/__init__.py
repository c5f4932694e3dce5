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

Modules: ``_common`` (labels, colours, standard-error notes, :func:`compare_pair`), ``pairs`` (one
pair), ``distributions`` (many pairs), ``runs`` (a run's figures, predictions, ROAR, ROAD,
:func:`save_figure`, the removals' :func:`removal_robustness`), ``sanity`` (:func:`plot_sanity`:
similarity against the randomised layer; :func:`plot_reliability`: metrics by resilience and
reactivity), ``interactions`` (:func:`interaction_heatmap`: the strongest pairwise effects;
:func:`plot_surrogate`: the order-k surrogate curves beside the real curve;
:func:`interaction_figure`: both for one pair), ``verdicts`` (:func:`critical_difference`:
methods on a rank axis, bars joining those that cannot be told apart, from a ``Comparisons`` or
its saved table; :func:`critical_difference_figure`: one panel per block), ``outputs`` (a model
with H outputs: :func:`abc_by_output`, each method's mean ABC by output with standard-error bars;
:func:`curves_by_output`, the curves of each output); every public name is
importable from ``insdel.plotting``.
"""

from __future__ import annotations

from ._common import METHOD_LABELS, compare_pair
from .distributions import (
    abc_bars,
    abc_histogram,
    abc_scatter,
    decomposition_figure,
    figure4,
    insertion_deletion_figure,
    insertion_deletion_scatter,
    random_abc_histogram,
)
from .interactions import interaction_figure, interaction_heatmap, plot_surrogate
from .outputs import abc_by_output, curves_by_output
from .pairs import figure1, plot_curves, plot_image_curves, plot_pair
from .runs import (
    plot_predictions,
    plot_road,
    policy_figures,
    removal_robustness,
    roar_figure,
    save_figure,
)
from .sanity import plot_reliability, plot_sanity
from .verdicts import (
    TableComparisons,
    cannot_tell_apart,
    comparisons_from_table,
    critical_difference,
    critical_difference_figure,
)

__all__ = [
    "plot_curves", "plot_pair", "plot_image_curves", "abc_histogram", "abc_scatter",
    "random_abc_histogram", "insertion_deletion_scatter", "abc_bars", "figure4",
    "insertion_deletion_figure", "METHOD_LABELS", "plot_predictions", "policy_figures",
    "save_figure", "compare_pair", "decomposition_figure", "roar_figure", "plot_road", "figure1",
    "plot_sanity", "plot_reliability", "removal_robustness", "interaction_heatmap",
    "plot_surrogate", "interaction_figure", "critical_difference", "cannot_tell_apart",
    "critical_difference_figure", "comparisons_from_table", "TableComparisons",
    "abc_by_output", "curves_by_output",
]
