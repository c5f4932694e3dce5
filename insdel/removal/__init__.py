"""Removal: what a removed feature becomes (conventions: *Removal*).

Every engine that evaluates coalitions (curves, ``evaluate``, the decomposition, Shapley values,
the metrics, ROAR, the runner) takes ``removal=``: a name, a :class:`Removal` or None (the
paper's ``baseline``: one reference per target, exactly as fast as before).

Built in: ``baseline`` and ``marginal`` (:mod:`.reference`); ``conditional_gaussian``,
``conditional_mean`` and ``conditional_knn`` (fitted on training rows). Your own: a
:class:`SampledRemoval` subclass, registered with :func:`register` or passed as an instance.

Registry verbs: :func:`available` (names), :func:`get` (the class), :func:`options_of` (its options
and defaults), :func:`register`, :func:`build` (an instance with options).
"""

from __future__ import annotations

import difflib
import inspect
from typing import Any

from .base import ReferenceRemoval, Removal, SampledRemoval, target_rng
from .reference import Baseline, Marginal

__all__ = ["Removal", "ReferenceRemoval", "SampledRemoval", "Baseline", "Marginal",
           "available", "get", "options_of", "register", "build", "resolve", "check_targets",
           "target_rng"]

_REGISTRY: dict[str, type[Removal]] = {"baseline": Baseline, "marginal": Marginal}


def _load_builtins() -> None:
    """The fitted removals, registered on first use (their modules compile numba kernels)."""
    if "conditional_gaussian" in _REGISTRY:
        return
    try:
        from . import gaussian, knn
    except ImportError:  # pragma: no cover - only while a module is being added
        return
    for cls in (gaussian.ConditionalGaussian, gaussian.ConditionalMean, knn.ConditionalKNN):
        _REGISTRY.setdefault(cls.name, cls)


def available() -> list[str]:
    """The registered removals' names, sorted."""
    _load_builtins()
    return sorted(_REGISTRY)


def get(name: str) -> type[Removal]:
    """The class registered as ``name`` (nothing built)."""
    _load_builtins()
    if name not in _REGISTRY:
        close = difflib.get_close_matches(str(name), list(_REGISTRY), n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ValueError(f"removal: unknown removal {name!r}.{hint} Available: {available()}.")
    return _REGISTRY[name]


def options_of(name: str) -> dict[str, Any]:
    """Options of removal ``name`` and their defaults (``inspect.Parameter.empty``: required)."""
    sig = inspect.signature(get(name).__init__)
    return {p.name: p.default for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


def register(name: str, cls: type[Removal], *, overwrite: bool = False) -> type[Removal]:
    """Register a :class:`Removal` subclass as ``name``."""
    _load_builtins()
    if not (isinstance(cls, type) and issubclass(cls, Removal)):
        raise TypeError(f"register: {cls!r} is not a Removal subclass.")
    if name in _REGISTRY and not overwrite:
        raise ValueError(f"removal {name!r} is already registered; pass overwrite=True.")
    _REGISTRY[name] = cls
    return cls


def build(name: str, **options) -> Removal:
    """An instance of removal ``name`` with ``options``; an unknown option is named."""
    cls = get(name)
    valid = options_of(name)
    unknown = [k for k in options if k not in valid]
    if unknown:
        raise ValueError(f"removal {name!r}: unknown option(s) {unknown}; its options are "
                         f"{list(valid)}.")
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


def check_targets(X, R, removal: Removal):
    """Targets X (B, n) and, where the removal reads them, references R (checked as
    :func:`insdel._validation.check_pairs` does; ``(B, K, n)`` for ``marginal`` without a
    background). A removal that does not read R returns it unchecked (``None`` allowed)."""
    import numpy as np

    from .._validation import as_float_array, check_pairs, writable

    if isinstance(removal, Baseline):
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
