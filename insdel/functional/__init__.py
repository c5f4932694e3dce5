"""Functional tests with exact answers (Compare-xAI / XAI-Bench style) and metric grading.

A catalogue of small synthetic torch models whose exact Shapley values, anchored decomposition
and best orderings are known in closed form or by enumeration (:mod:`.cases`), each with pass
criteria (:mod:`.criteria`) that an attribution method meets or fails; :func:`run_catalogue`
runs methods through it (``insdel functional``; :func:`exit_code` gives its exit status, 1 with
``--strict`` when a method fails a criterion). :func:`grade_metrics` asks the converse: does an
evaluation metric (insertion / deletion ABC and AUC, or any registered callable
``(f, X, R, A) -> scores``) rank a known-better ordering above a known-worse one?

Two registries: the cases (:func:`available`, :func:`get`, :func:`options_of` here) and the
gradable metrics (``grading.available``, ``grading.get``, ``grading.register``, ...).

Modules: ``models`` (the torch models), ``criteria``, ``cases`` (the catalogue), ``run``
(running methods, the pass/fail table), ``grading`` (metric grades).
"""

from __future__ import annotations

from . import grading
from .cases import CASES, COUNTEREXAMPLE_A, Case, Truth, available, get, options_of
from .criteria import (
    Criterion,
    Efficiency,
    EqualFor,
    MatchesShapley,
    MatchesValues,
    OrderRegret,
    RanksLast,
    ZeroFor,
)
from .grading import (
    METRICS,
    grade_metrics,
    grading_markdown,
    order_scores,
)
from .run import (
    DEFAULT_METHODS,
    VARIANTS,
    MethodSpec,
    exit_code,
    failure_summary,
    resolve_methods,
    run_catalogue,
    to_markdown,
)

__all__ = [
    "CASES", "COUNTEREXAMPLE_A", "Case", "Truth", "available", "get", "options_of", "Criterion",
    "Efficiency", "EqualFor", "MatchesShapley", "MatchesValues", "OrderRegret", "RanksLast",
    "ZeroFor", "METRICS", "grading", "grade_metrics", "grading_markdown", "order_scores",
    "DEFAULT_METHODS", "VARIANTS", "MethodSpec", "resolve_methods",
    "run_catalogue", "to_markdown", "failure_summary", "exit_code",
]
