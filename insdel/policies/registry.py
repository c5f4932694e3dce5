"""The policy registry: built-in and user policies by name (the registry verbs of
CONTRIBUTING.md: ``available``, ``get``, ``options_of``, ``build``, ``register``, ``unregister``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from .._registry import Registry, check_options, signature_options
from .base import FunctionPolicy, Policy, UnknownPolicyError


def _check_entry(name: str, obj) -> None:
    if not name.isidentifier():
        raise ValueError(f"policy name must be an identifier-like string; got {name!r}.")
    if isinstance(obj, type):
        if not issubclass(obj, Policy):
            raise TypeError(f"a policy class must subclass insdel.policies.Policy; got {obj!r}.")
    elif not callable(obj):
        raise TypeError(f"policy must be a function or a Policy subclass; got "
                        f"{type(obj).__name__}.")


_POLICIES = Registry("policy", check=_check_entry, error=UnknownPolicyError)
_REGISTRY: dict[str, Callable | type] = _POLICIES.entries
_BUILTIN: set[str] = _POLICIES.protected


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
        return _POLICIES.register(name, obj, overwrite=overwrite)

    return deco if policy is None else deco(policy)


def unregister(name: str) -> None:
    """Remove a user policy."""
    _POLICIES.unregister(name)


def available() -> list[str]:
    """Registered policy names, sorted."""
    return _POLICIES.available()


def get(name: str) -> Callable | type:
    """The entry registered as ``name``: a :class:`Policy` subclass or a policy function (nothing
    built; :func:`build` makes the policy). Raises :class:`UnknownPolicyError` (an
    :class:`insdel.UnknownNameError`, a ``ValueError``) with the closest and the known names."""
    return _POLICIES.get(name)


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


def build(name: str, **params) -> Policy:
    """The registered policy ``name`` with parameters ``params`` (defaults filled in).

    Raises :class:`UnknownPolicyError` (an :class:`insdel.UnknownNameError`, a ``ValueError``)
    listing the known names, and ``TypeError`` naming the known parameters for an unknown
    parameter.
    """
    obj = get(name)
    if isinstance(obj, type):
        sig = inspect.signature(obj.__init__)
        known = [p for p in sig.parameters if p != "self"]
        var_kw = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
        if not var_kw:
            check_options(f"policy {name!r}", params, known, noun="parameter")
        pol = obj(**params)
        if not hasattr(pol, "params"):
            pol.params = dict(params)
        if type(pol).name == Policy.name:
            pol.name = name
        return pol
    defaults, var_kw = _function_params(obj)
    if not var_kw:
        check_options(f"policy {name!r}", params, defaults, noun="parameter")
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




def options_of(name: str) -> dict:
    """The parameters of the registered policy ``name`` with their defaults
    (``inspect.Parameter.empty``, :data:`insdel.REQUIRED`, where there is none)."""
    obj = get(name)
    if isinstance(obj, type):
        return signature_options(obj.__init__)
    d, _ = _function_params(obj)
    return d


def _summary(name: str) -> str:
    """One-line summary of the registered policy ``name`` (the first paragraph of its docstring;
    for ``insdel policies list``)."""
    doc = inspect.getdoc(get(name)) or ""
    return doc.split("\n\n")[0].replace("\n", " ")


def is_builtin(name: str) -> bool:
    """Whether ``name`` is one of insdel's own policies."""
    return name in _BUILTIN
