"""Sanity checks of attribution methods and reliability of the metrics that grade them (issue 38).

``randomisation``
    :func:`parameter_randomisation` (the model parameter randomisation test, MPRT, with the
    efficient MPRT's complexity rise) and :func:`data_randomisation` (retraining on permuted
    labels: insdel's MLP, or a clone of a scikit-learn estimator, :func:`refit_clone`); both
    return a :class:`SanityResult` (tidy table, flags, Markdown).
``meta``
    :func:`metric_reliability`: MetaQuantus' noise resilience and adversarial reactivity of
    faithfulness metrics, every perturbed problem's metrics on one shared hybrid cache; a
    :class:`ReliabilityResult`.

Figures: :func:`insdel.plotting.plot_sanity`, :func:`insdel.plotting.plot_reliability`.
Definitions, thresholds and how to read them: docs/sanity.md.
"""

from __future__ import annotations

from .meta import ADVERSARIAL_TESTS, RESILIENCE_TESTS, ReliabilityResult, metric_reliability
from .randomisation import (
    DEFAULT_ABC_TOLERANCE,
    DEFAULT_THRESHOLD,
    SIMILARITIES,
    SanityResult,
    data_randomisation,
    is_estimator,
    parameter_randomisation,
    randomisable_layers,
    randomised_models,
    refit_clone,
)

__all__ = ["parameter_randomisation", "data_randomisation", "SanityResult",
           "randomisable_layers", "randomised_models", "is_estimator", "refit_clone",
           "SIMILARITIES", "DEFAULT_THRESHOLD",
           "DEFAULT_ABC_TOLERANCE", "metric_reliability", "ReliabilityResult",
           "RESILIENCE_TESTS", "ADVERSARIAL_TESTS"]
