"""Removal: what a removed feature becomes (conventions: *Removal*).

Every engine that evaluates coalitions (curves, ``evaluate``, the decomposition, Shapley values,
the metrics, ROAR, the runner) takes ``removal=``: a name, a :class:`Removal` or None (the
paper's ``baseline``: one reference per target, on its own numba fast path).

Built in: ``baseline`` and ``marginal`` (:mod:`.reference`); ``constant`` and ``training_mean``
(:mod:`.constant`: fixed values, one row per coalition); ``conditional_gaussian``,
``conditional_mean`` and ``conditional_knn`` (fitted on training rows); ``noisy_linear``
(:mod:`.noisy_linear`: Rong et al.'s interpolation from kept neighbours, ROAD's imputation);
``locf`` and ``interpolate`` (:mod:`.timeseries`: a window's removed steps filled from its kept
steps, per channel); ``stationary_gaussian`` (:mod:`.stationary`: the Gaussian conditional over a
window of a stationary process, its block-Toeplitz covariance from lag autocovariances);
``cohort`` (:mod:`.cohort`, a :class:`GameRemoval`: the observational cohort game, read off the
data); ``path_dependent`` (:mod:`.trees`: the trees' own cover-weighted removal, for tree
ensembles only, exact from their structure). Your own: a
:class:`SampledRemoval` subclass, registered with :func:`register` or passed as an instance.

Registry verbs: :func:`available` (names), :func:`get` (the class), :func:`options_of` (its options
and defaults), :func:`register`, :func:`build` (an instance with options).
"""

from __future__ import annotations

from typing import Any

from .._registry import Registry, check_options, signature_options
from .base import (
    GameRemoval,
    MissingDataError,
    ReferenceRemoval,
    Removal,
    SampledRemoval,
    target_rng,
)
from .constant import Constant, TrainingMean, training_mean_values
from .reference import Baseline, Marginal
from .trees import PathDependent

__all__ = ["Removal", "ReferenceRemoval", "SampledRemoval", "GameRemoval", "Baseline", "Marginal",
           "PathDependent", "Constant", "TrainingMean", "training_mean_values", "draws_rows", "available", "get",
           "options_of", "register", "unregister", "build", "resolve", "check_targets",
           "target_rng", "MissingDataError"]


def _check_entry(name: str, cls) -> None:
    if not (isinstance(cls, type) and issubclass(cls, Removal)):
        raise TypeError(f"register: {cls!r} is not a Removal subclass.")


def _load_builtins(reg: Registry) -> None:
    """The fitted removals (their modules compile numba kernels on first use)."""
    from . import cohort, gaussian, knn, noisy_linear, stationary, timeseries

    for cls in (gaussian.ConditionalGaussian, gaussian.ConditionalMean, knn.ConditionalKNN,
                cohort.Cohort, noisy_linear.NoisyLinear, timeseries.LOCF, timeseries.Interpolate,
                stationary.StationaryGaussian):
        reg.entries.setdefault(cls.name, cls)


#: The fitted removals' classes, imported on first access (``insdel.removal.Cohort``): their
#: modules compile numba kernels.
_LAZY = {"Cohort": "cohort", "ConditionalGaussian": "gaussian", "ConditionalMean": "gaussian",
         "ConditionalKNN": "knn", "NoisyLinear": "noisy_linear", "LOCF": "timeseries",
         "Interpolate": "timeseries", "StationaryGaussian": "stationary"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_BUILTINS = ("baseline", "marginal", "constant", "training_mean", "conditional_gaussian",
             "conditional_mean", "conditional_knn", "cohort", "noisy_linear", "locf",
             "interpolate", "stationary_gaussian", "path_dependent")
_REGISTRY = Registry("removal", {"baseline": Baseline, "marginal": Marginal, "constant": Constant,
                                 "training_mean": TrainingMean,
                                 "path_dependent": PathDependent},
                     protected=_BUILTINS, check=_check_entry, loader=_load_builtins)


def available() -> list[str]:
    """The registered removals' names, sorted."""
    return _REGISTRY.available()


def get(name: str) -> type[Removal]:
    """The class registered as ``name`` (nothing built)."""
    return _REGISTRY.get(name)


def options_of(name: str) -> dict[str, Any]:
    """Options of removal ``name`` and their defaults (:data:`insdel.REQUIRED`: required)."""
    return signature_options(get(name).__init__)


def register(name: str, cls: type[Removal], *, overwrite: bool = False) -> type[Removal]:
    """Register a :class:`Removal` subclass as ``name``."""
    return _REGISTRY.register(name, cls, overwrite=overwrite)


def unregister(name: str) -> None:
    """Remove the user removal ``name`` (built-ins cannot be removed)."""
    _REGISTRY.unregister(name)


def build(name: str, **options) -> Removal:
    """An instance of removal ``name`` with ``options``; an unknown option is named."""
    cls = get(name)
    check_options(f"removal {name!r}", options, options_of(name))
    return cls(**options)


def resolve(removal) -> Removal:
    """None (baseline), a registered name (built without options) or a :class:`Removal`."""
    if removal is None:
        return Baseline()
    if isinstance(removal, Removal):
        return removal
    if isinstance(removal, str):
        return build(removal)
    raise TypeError(f"removal must be None, a name {available()} or a Removal; got "
                    f"{removal!r} ({type(removal).__name__}).")


def draws_rows(removal) -> bool:
    """Whether ``removal`` imputes removed features from the kept ones: it writes rows
    (``sample(X, keep, targets)``, ``n_draws`` >= 1 of them per coalition) that need no
    reference, as ROAD and its leakage diagnostic read them."""
    return callable(getattr(removal, "sample", None)) and int(getattr(removal, "n_draws", 0)) >= 1


def check_targets(X, R, removal: Removal):
    """Targets X (B, n) and, where the removal reads them, references R (checked as
    :func:`insdel._validation.check_pairs` does; ``(B, K, n)`` for ``marginal`` without a
    background). A removal that does not read R returns it unchecked (``None`` allowed)."""
    import numpy as np

    from .._validation import as_float_array, check_pairs, writable

    if isinstance(removal, Baseline):
        if R is None:
            raise ValueError(f"removal={removal.name!r} needs one reference per target (R); got "
                             "R=None.")
        return check_pairs(X, R)
    if removal.uses_reference and R is not None and np.ndim(R) == 3:
        X = as_float_array("X", X, ndim=(2,))
        R3 = as_float_array("R", R, ndim=(3,))
        if R3.shape[0] != X.shape[0] or R3.shape[2] != X.shape[1]:
            raise ValueError(f"R must have shape (B, K, n) = ({X.shape[0]}, K, {X.shape[1]}) "
                             f"for removal {removal.name!r}; got {R3.shape}.")
        return writable(np.ascontiguousarray(X)), R3
    if removal.uses_reference and R is not None:
        return check_pairs(X, R)
    X = as_float_array("X", X, ndim=(1, 2))
    if X.ndim == 1:
        X = X[None, :]
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must have at least one row and one feature; got shape {X.shape}.")
    return writable(np.ascontiguousarray(X)), R
