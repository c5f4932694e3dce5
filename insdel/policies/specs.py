"""Policy specifications in TOML: shipped ones (``insdel.shipped.policies``, the folder
``insdel/shipped/policies/``), files and inline dicts."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from .._checkpoint import to_jsonable
from .._registry import REQUIRED as _REQUIRED
from .base import Policy, UnknownPolicyError
from .registry import _REGISTRY, _summary, available, build, is_builtin, options_of

try:  # Python >= 3.11
    import tomllib as _toml
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as _toml  # type: ignore[no-redef]

SPEC_PACKAGE = "insdel.shipped.policies"
_SPEC_KEYS = ("name", "policy", "description", "params")



def _spec_files() -> dict[str, Any]:
    from importlib.resources import files

    try:
        root = files(SPEC_PACKAGE)
    except ModuleNotFoundError:  # pragma: no cover - broken install
        return {}
    return {p.name[:-5]: p for p in sorted(root.iterdir(), key=lambda p: p.name)
            if p.name.endswith(".toml")}


def _parse_spec(spec: Mapping, where: str) -> tuple[str, dict, str | None, str | None]:
    if "policy" not in spec:
        raise ValueError(f"{where}: a policy specification needs a 'policy' key (the registered "
                         f"policy name; known: {', '.join(available())}).")
    policy = spec["policy"]
    params = dict(spec.get("params", {}))
    if not isinstance(params, Mapping):
        raise ValueError(f"{where}: 'params' must be a table of parameters.")
    for k, v in spec.items():
        if k not in _SPEC_KEYS:
            if k in params:
                raise ValueError(f"{where}: parameter {k!r} is given twice (top level and [params]).")
            params[k] = v
    return policy, params, spec.get("name"), spec.get("description")


def load(spec: str | Path | Mapping, *, params: Mapping | None = None) -> Policy:
    """A policy from a specification.

    Parameters
    ----------
    spec : str, Path or dict
        * a path to a TOML file;
        * the name of a shipped specification (``"cern_counterfactual"``; see :func:`list_specs`);
        * a registered policy name (``"average"``: the policy with its defaults);
        * a dict ``{"policy": "counterfactual", "min_diff": 16, "k_nearest": 20}`` (parameters at the
          top level or under ``"params"``; optional ``"name"`` and ``"description"``).

    params : mapping, optional
        Parameters that override the specification's (an experiment's ``[[policies]] params``).

    The TOML schema is the same as the dict: ``policy`` (required), ``name``, ``description`` and a
    ``[params]`` table (see docs/policies.md).
    """
    over = dict(params or {})
    if isinstance(spec, Policy):
        if not over:
            return spec
        pol = build(spec.name, **{**spec.params, **over})
        pol.spec, pol.description = spec.spec, spec.description
        return pol
    if isinstance(spec, Mapping):
        policy, p, name, desc = _parse_spec(spec, "policy spec")
        return _make(policy, {**p, **over}, name, desc)
    if not isinstance(spec, (str, Path)):
        raise TypeError(f"spec must be a path, a name or a dict; got {type(spec).__name__}.")
    path = Path(spec)
    s = str(spec)
    if path.is_file():
        return _load_text(path.read_text(encoding="utf-8"), str(path), default_name=path.stem,
                          params=over)
    shipped = _spec_files()
    if path.suffix == ".toml":
        if path.parent == Path(".") and path.stem in shipped:  # "cern_counterfactual.toml"
            return _load_text(shipped[path.stem].read_text(encoding="utf-8"), path.stem,
                              default_name=path.stem, params=over)
        raise FileNotFoundError(f"policy specification {s!r} not found.")
    if s in shipped:
        return _load_text(shipped[s].read_text(encoding="utf-8"), s, default_name=s, params=over)
    if s in _REGISTRY:
        return build(s, **over)
    raise _unknown(s)


def _unknown(name: str) -> UnknownPolicyError:
    """The error for a name that is neither a policy nor a shipped specification."""
    shipped = list(_spec_files())
    return UnknownPolicyError.of("policy or specification", name, available() + shipped,
                                 note=f"(policies: {', '.join(available())}; specifications: "
                                      f"{', '.join(shipped) or '(none)'}.)")


def _load_text(text: str, where: str, default_name: str | None = None,
               params: Mapping | None = None) -> Policy:
    try:
        data = _toml.loads(text)
    except _toml.TOMLDecodeError as exc:
        raise ValueError(f"{where}: invalid TOML ({exc}).") from None
    policy, p, name, desc = _parse_spec(data, where)
    return _make(policy, {**p, **dict(params or {})}, name or default_name, desc)


def _make(policy: str, params: dict, name: str | None, desc: str | None) -> Policy:
    pol = build(policy, **params)
    pol.spec = name
    pol.description = desc
    return pol


def list_specs() -> pd.DataFrame:
    """The shipped TOML specifications: name, policy, parameters, description."""
    rows = []
    for name, p in _spec_files().items():
        data = _toml.loads(p.read_text(encoding="utf-8"))
        pol, params, nm, desc = _parse_spec(data, name)
        rows.append({"name": nm or name, "policy": pol, "params": params,
                     "description": desc or ""})
    return pd.DataFrame(rows, columns=["name", "policy", "params", "description"])


def _spec_text(name: str) -> str:
    """The text of a shipped specification (or of a TOML file)."""
    shipped = _spec_files()
    if name in shipped:
        return shipped[name].read_text(encoding="utf-8")
    if Path(name).is_file():
        return Path(name).read_text(encoding="utf-8")
    raise UnknownPolicyError.of("policy specification", name, list(shipped))




def format_list() -> str:
    """The text of ``insdel policies list``: policies with their parameters, then the specifications."""
    lines = ["Policies (insdel.policies.build(name, **params)):"]
    for name in available():
        p = ", ".join(k if v is _REQUIRED else f"{k}={v!r}" for k, v in options_of(name).items())
        tag = "" if is_builtin(name) else "  [user]"
        lines.append(f"  {name}({p}){tag}")
        lines.append(f"      {_summary(name)}")
    lines.append(f"\nSpecifications (insdel.policies.load(name); package {SPEC_PACKAGE}):")
    specs = list_specs()
    if specs.empty:
        lines.append("  (none)")
    for r in specs.itertuples(index=False):
        p = ", ".join(f"{k}={v!r}" for k, v in r.params.items())
        lines.append(f"  {r.name}: {r.policy}({p})")
        if r.description:
            lines.append(f"      {r.description}")
    return "\n".join(lines)


def format_show(name: str) -> str:
    """The text of ``insdel policies show NAME``: a specification, or a policy's parameters as TOML."""
    if name in _spec_files() or Path(name).is_file():
        return f"{_spec_text(name).rstrip()}\n# -> {load(name)!r}"
    if name in available():
        lines = [f"# policy {name!r}: {_summary(name)}", f'policy = "{name}"', "[params]"]
        for k, v in options_of(name).items():
            if v is _REQUIRED:
                lines.append(f"# {k} = (required)")
            elif v is None:
                lines.append(f"# {k} = (not set)")
            else:
                lines.append(f"{k} = {json.dumps(to_jsonable(v))}")
        return "\n".join(lines)
    raise _unknown(name)
