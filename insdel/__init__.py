"""insdel: insertion and deletion tests of feature attributions for regression models.

Implements Hama, Mase & Owen, *Deletion and Insertion Tests in Regression Models*. The conventions
(target x, reference r, signed attributions explaining f(x) - f(r), insertion from r to x, deletion
from x to r, ABC normalised per feature) are restated in the README.
"""

from __future__ import annotations

import importlib

from ._registry import REQUIRED, UnknownNameError, UnknownOptionError
from .adapter import Model, as_model
from .areas import abc, auc, aul
from .evaluation import CurvePoints, Evaluation, evaluate, random_orderings
from .hybrids import hybrid
from .tracing import TraceResult, curves, orderings, trace

__version__ = "0.1.0"

# Heavier parts load on first use: ``insdel.anchored_decomposition`` imports insdel.decomposition.
_LAZY = {
    "anchored_decomposition": "insdel.decomposition",
    "batch_decomposition": "insdel.decomposition",
    "expected_last_position": "insdel.decomposition",
    "attribute": "insdel.attribution",
    "policies": "insdel.policies",
    "datasets": "insdel.datasets",
    "models": "insdel.models",
    "plotting": "insdel.plotting",
    "config": "insdel.config",
    "runner": "insdel.runner",
    "run_experiment": "insdel.runner",
    "report": "insdel.report",
    "diagnostics": "insdel.diagnostics",
    "shapley_values": "insdel.decomposition",
    "interaction_orderings": "insdel.decomposition",
    "surrogate_curves": "insdel.decomposition",
    "interactions": "insdel.interactions",
    "decomposition": "insdel.decomposition",
    "attribution": "insdel.attribution",
    # modules the docs call as insdel.<module>.<name> after a bare ``import insdel``
    "images": "insdel.images",
    "metrics": "insdel.metrics",
    "functional": "insdel.functional",
    "leaderboard": "insdel.leaderboard",
    "roar": "insdel.roar",
    "road": "insdel.road",
    "model_files": "insdel.model_files",
    "digits": "insdel.digits",
    "sanity": "insdel.sanity",
    "robustness": "insdel.robustness",
    "tuning": "insdel.tuning",
    "report_page": "insdel.report_page",
    "verdicts": "insdel.verdicts",
    "study_plan": "insdel.study_plan",
}


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'insdel' has no attribute {name!r}")
    module = importlib.import_module(mod)
    value = module if mod.rsplit(".", 1)[-1] == name else getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Model", "as_model", "abc", "auc", "aul", "curves", "orderings", "trace", "TraceResult",
    "Evaluation", "CurvePoints", "evaluate", "random_orderings", "hybrid", "UnknownNameError", "UnknownOptionError", "REQUIRED", *_LAZY,
]
