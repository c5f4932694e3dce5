"""The policy registry: built-in and user policies by name (``available``, ``get``, ``register``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from .base import FunctionPolicy, Policy, UnknownPolicyError

_REGISTRY: dict[str, Callable | type] = {}
_BUILTIN: set[str] = set()


def register(name: str, policy: Callable | type | None = None, *, overwrite: bool = False):
    """Register a user policy under ``name``; usable as a decorator.

    Parameters
    ----------
    name : str
        Policy name (what :func:`get`, :func:`load` and TOML specs use).
    policy : function or Policy subclass
        A function ``fn(f, X_pool, targets, seed, **params)`` returning ``R``, ``(R, reference_index)``
        or a :class:`Pairing` (``targets`` are pool indices; keyword-only arguments with defaults are
        the policy's parameters), or a subclass of :class:`Policy` implementing ``select``.
    overwrite : bool
        Replace an existing registration (built-ins cannot be replaced).

    Examples
    --------
    >>> @register("nearest")
    ... def nearest(f, X_pool, targets, seed):
    ...     d = ((X_pool[targets, None] - X_pool[None]) ** 2).sum(-1)
    ...     d[np.arange(len(targets)), targets] = np.inf
    ...     j = d.argmin(1)
    ...     return X_pool[j], j
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"policy name must be an identifier-like string; got {name!r}.")

    def deco(obj):
        if isinstance(obj, type):
            if not issubclass(obj, Policy):
                raise TypeError(f"a policy class must subclass insdel.policies.Policy; got {obj!r}.")
        elif not callable(obj):
            raise TypeError(f"policy must be a function or a Policy subclass; got {type(obj).__name__}.")
        if name in _BUILTIN:
            raise ValueError(f"{name!r} is a built-in policy and cannot be replaced; pick another name.")
        if name in _REGISTRY and not overwrite:
            raise ValueError(f"a policy named {name!r} is already registered; pass overwrite=True.")
        _REGISTRY[name] = obj
        return obj

    return deco if policy is None else deco(policy)


def unregister(name: str) -> None:
    """Remove a user policy."""
    if name in _BUILTIN:
        raise ValueError(f"{name!r} is a built-in policy and cannot be removed.")
    if name not in _REGISTRY:
        raise UnknownPolicyError(f"no user policy named {name!r}; known: {available()}.")
    del _REGISTRY[name]


def available() -> list[str]:
    """Registered policy names (built-ins first)."""
    return [n for n in _REGISTRY if n in _BUILTIN] + sorted(n for n in _REGISTRY if n not in _BUILTIN)


def _function_params(fn: Callable) -> tuple[dict, bool]:
    """Default parameters of a function policy (arguments after the 4 positional ones)."""
    sig = inspect.signature(fn)
    ps = list(sig.parameters.values())
    positional = [p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < 4 and not any(p.kind == p.VAR_POSITIONAL for p in ps):
        raise TypeError(f"policy function {fn.__name__} must take (f, X_pool, targets, seed, ...).")
    extra = positional[4:] + [p for p in ps if p.kind == p.KEYWORD_ONLY]
    defaults = {p.name: p.default for p in extra}
    var_kw = any(p.kind == p.VAR_KEYWORD for p in ps)
    return defaults, var_kw


def get(name: str, **params) -> Policy:
    """The registered policy ``name`` with parameters ``params`` (defaults filled in).

    Raises :class:`UnknownPolicyError` (a ``KeyError`` and ``ValueError``) listing the known names,
    and ``TypeError`` naming the known parameters for an unknown parameter.
    """
    obj = _REGISTRY.get(name)
    if obj is None:
        raise UnknownPolicyError(f"unknown policy {name!r}; known policies: {', '.join(available())}.")
    if isinstance(obj, type):
        sig = inspect.signature(obj.__init__)
        known = [p for p in sig.parameters if p != "self"]
        var_kw = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
        bad = [k for k in params if k not in known]
        if bad and not var_kw:
            raise TypeError(f"policy {name!r}: unknown parameter(s) {bad}; known: {known}.")
        pol = obj(**params)
        if not hasattr(pol, "params"):
            pol.params = dict(params)
        if type(pol).name == Policy.name:
            pol.name = name
        return pol
    defaults, var_kw = _function_params(obj)
    bad = [k for k in params if k not in defaults]
    if bad and not var_kw:
        raise TypeError(f"policy {name!r}: unknown parameter(s) {bad}; known: {list(defaults)}.")
    missing = [k for k, v in defaults.items() if v is inspect.Parameter.empty and k not in params]
    if missing:
        raise TypeError(f"policy {name!r}: missing required parameter(s) {missing}.")
    full = {k: v for k, v in defaults.items() if v is not inspect.Parameter.empty}
    full.update(params)
    return FunctionPolicy(obj, name, full)


def _builtin(name: str):
    def deco(cls):
        cls.name = name
        _REGISTRY[name] = cls
        _BUILTIN.add(name)
        return cls
    return deco




def defaults(name: str) -> dict:
    """The parameters of the registered policy ``name`` with their defaults (``"<required>"`` where
    there is none)."""
    if name not in _REGISTRY:
        raise UnknownPolicyError(f"unknown policy {name!r}; known policies: {', '.join(available())}.")
    obj = _REGISTRY[name]
    if isinstance(obj, type):
        sig = inspect.signature(obj.__init__)
        return {k: (p.default if p.default is not inspect.Parameter.empty else "<required>")
                for k, p in sig.parameters.items()
                if k != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    d, _ = _function_params(obj)
    return {k: ("<required>" if v is inspect.Parameter.empty else v) for k, v in d.items()}


def describe(name: str) -> str:
    """One-line summary of the registered policy ``name`` (the first paragraph of its docstring)."""
    if name not in _REGISTRY:
        raise UnknownPolicyError(f"unknown policy {name!r}; known policies: {', '.join(available())}.")
    doc = inspect.getdoc(_REGISTRY[name]) or ""
    return doc.split("\n\n")[0].replace("\n", " ")


def is_builtin(name: str) -> bool:
    """Whether ``name`` is one of insdel's own policies."""
    return name in _BUILTIN
