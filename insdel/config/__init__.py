"""Experiment configurations: read, merge and strictly validate TOML files (docs/experiments.md).

An experiment is a TOML file (the shipped ones are in ``insdel/shipped/configs/``:
``paper_cern``, ``paper_bangalore``, ``demo``)::

    name = "my_run"
    seed = 0
    [data]        recipe = "dielectron_sim", options = {n_events = 20000}
    [model]       preset = "quick_cern"          # or path = "model.pt", or params = {...}
    [targets]     n = 200                        # held-out points: the pool and the targets
    [compute]     device = "cpu"                 # torch device of training and evaluation
                  backend = "serial"             # or "dask": address = "tcp://host:8786", or a
                                                 # LocalCluster: n_workers, threads_per_worker
    [[policies]]  spec = "cern_counterfactual"   # any insdel.policies.load spec (+ label, params)
    [methods]     names = [...], [methods.options.<name>] ...
    [evaluation]  modes, n_random = 20, normalize = true, targets_per_chunk = 50
    [decomposition] n_pairs = 0, pairs_per_chunk = 8, max_d = 16
    [figures]     enabled = true, compare = [...], n_random = 20, dpi = 110
    [removal]     kinds = ["baseline", "marginal"]  # what a removed feature becomes; the first is
                  [removal.marginal] n_references = 20   # the primary, the others are compared
    [quick]       ...                            # overrides applied with --quick

Every key at every level is checked against one schema (:data:`SCHEMA`): an unknown key is an
error that names the full dotted key and the closest valid one; a value of the wrong type names its
key. Input paths in a file (``data.options.path``, ``model.path``) are relative to the file's
folder, its output folder ``out`` to the current folder (:func:`load`). Registry verbs
(CONTRIBUTING.md): :func:`available` (shipped configurations), :func:`get` (one's TOML text, as
shipped), :func:`options_of` (:func:`load`'s options) and :func:`load` (a file, a shipped name or a
dict, completed and validated). The commands that read a configuration (``insdel run``, ``roar``,
``road``, ``sanity``, your own) are declared specs in :mod:`insdel.config.commands`: their tables,
checks and ``insdel reproduce`` experiments are read from there.
"""

from __future__ import annotations

import copy
import importlib.resources
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._registry import UnknownNameError
from .commands import (  # noqa: I001  (after sections: the built-in specs name its checks)
    ROAD_SECTIONS,
    ROAR_SECTIONS,
    SANITY_SECTIONS,
    Command,
    check_sections,
    check_tables,
)
from .schema import (
    ALL_METHODS,
    ANY_TABLE,
    DEFAULTS,
    NAMED_TABLES,
    PAPER_CONFIGS,
    PAPER_EXPERIMENTS,
    RENAMED,
    SCHEMA,
    ConfigError,
    UnknownKeyError,
    _check_table,
    _merge,
)
from .sections import (
    RUN_GIVEN_METHOD_OPTIONS,
    RUN_GIVEN_REMOVAL_OPTIONS,
    SCHEDULER_SCHEMES,
    _check_values,
    check_sanity,
    normalize_removals,
    observational_method,
    policy_label,
    removal_options,
)

try:  # Python >= 3.11
    import tomllib as _toml
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as _toml  # type: ignore[no-redef]

__all__ = ["ALL_METHODS", "PAPER_CONFIGS", "PAPER_EXPERIMENTS", "SCHEMA", "DEFAULTS", "ConfigError",
           "UnknownKeyError",
           "available", "get", "options_of", "format_list", "load", "policy_label", "PATH_OPTIONS",
           "removal_options", "RUN_GIVEN_METHOD_OPTIONS", "RUN_GIVEN_REMOVAL_OPTIONS",
           "observational_method", "check_sections", "check_sanity", "SCHEDULER_SCHEMES",
           "ROAR_SECTIONS", "ROAD_SECTIONS", "SANITY_SECTIONS", "ANY_TABLE", "NAMED_TABLES",
           "RENAMED", "Command", "commands"]


# -- registry verbs ---------------------------------------------------------------------------------
def available() -> list[str]:
    """Names of the configurations shipped in ``insdel/shipped/configs``, sorted."""
    folder = importlib.resources.files("insdel.shipped.configs")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def _unknown(name) -> UnknownNameError:
    return UnknownNameError.of("shipped configuration", name, available(),
                               candidates=available() + list(PAPER_CONFIGS),
                               note=f"(insdel reproduce names: {', '.join(PAPER_CONFIGS)}.)")


def get(name: str) -> str:
    """The TOML text of the shipped configuration ``name``, exactly as shipped (comments
    included): the file to copy and edit (``insdel configs show NAME --out FILE``); nothing merged
    or checked (:func:`load` does that).

    Parameters
    ----------
    name : str
        A shipped configuration (:func:`available`: ``"paper_cern"``, ...) or its ``insdel
        reproduce`` name (``"paper-cern"``).

    Raises
    ------
    insdel.UnknownNameError
        ``name`` is not shipped (a ``ValueError``; with the closest and the shipped names).
    """
    stem = PAPER_CONFIGS.get(str(name), str(name))
    if stem not in available():
        raise _unknown(name)
    res = importlib.resources.files("insdel.shipped.configs") / f"{stem}.toml"
    return res.read_bytes().decode("utf-8")


def options_of(name: str) -> dict[str, Any]:
    """The options :func:`load` takes for the shipped configuration ``name``, with their defaults
    (the same for every configuration: ``quick`` and ``overrides``)."""
    get(name)  # the unknown-name error
    return {"quick": False, "overrides": None}


def format_list() -> str:
    """The text of ``insdel configs list``: each shipped configuration, its ``insdel reproduce``
    name and its description."""
    alias = {v: k for k, v in PAPER_CONFIGS.items()}
    lines = ["Shipped configurations (insdel run NAME; insdel configs show NAME --out FILE to edit "
             "a copy):"]
    for name in available():
        desc = _toml.loads(get(name)).get("description", "")
        also = f"  (insdel reproduce {alias[name]})" if name in alias else ""
        lines.append(f"  {name}{also}")
        if desc:
            lines.append(f"      {desc}")
    return "\n".join(lines)


def _read_text(config: str | os.PathLike) -> tuple[str, str, Path | None]:
    """(text, source, folder): the folder of a configuration file (its relative input paths are
    relative to it), None for a shipped configuration."""
    path = Path(config)
    if path.is_file():
        # the folder that holds the file as named (a symlinked file keeps its own folder), with
        # the folder's own symlinks resolved: the folder the operating system opened it in
        return path.read_text(encoding="utf-8"), str(path), path.absolute().parent.resolve()
    name = str(config)
    name = PAPER_CONFIGS.get(name, name)
    res = importlib.resources.files("insdel.shipped.configs") / f"{name}.toml"
    if not name.endswith(".toml") and res.is_file():
        return res.read_text(encoding="utf-8"), f"insdel/shipped/configs/{name}.toml", None
    stem = Path(name).name[:-5] if name.endswith(".toml") else None
    if stem and stem in available():  # a missing file never quietly becomes a shipped one
        raise FileNotFoundError(
            f"experiment configuration file {str(config)!r} does not exist (from {os.getcwd()}); "
            f"for the shipped configuration of that name write {stem!r} (no .toml).")
    if stem is not None or os.sep in name or "/" in name or isinstance(config, os.PathLike):
        raise FileNotFoundError(
            f"experiment configuration file {str(config)!r} does not exist (from "
            f"{os.getcwd()}); shipped configurations: {', '.join(available())}.")
    raise _unknown(str(config))


def load(config: str | os.PathLike | Mapping, *, quick: bool = False,
         overrides: Mapping | None = None) -> dict:
    """Read, complete and validate an experiment configuration.

    Parameters
    ----------
    config : path, shipped name ("demo", "paper_cern", "paper-cern", ...) or dict
        A path that does not exist (one ending in ``.toml`` or naming a folder) is a
        ``FileNotFoundError``; any other unknown name an :class:`insdel.UnknownNameError`.
    quick : bool
        Apply the configuration's ``[quick]`` overrides (small sizes); a configuration without a
        (non-empty) ``[quick]`` table is then an error.
    overrides : mapping, optional
        Further overrides, merged last (nested tables merge key by key).

    Returns
    -------
    dict
        The full configuration with defaults filled in (``quick`` set to the flag, ``source``
        added).

    Raises
    ------
    ConfigError
        An unknown key (with the closest valid key), a missing required key, a value of the wrong
        type, inconsistent values, ``quick=True`` without a ``[quick]`` table, or a relative input
        path that would read another file than before (see Notes); the message names the dotted
        key and the source.

    Notes
    -----
    Input paths (``data.options.path``, ``data.real_options.path`` and a custom recipe's ``csv``
    or ``file`` option: :data:`PATH_OPTIONS`; ``model.path``) in a configuration **file**, its
    ``[quick]`` table included, are relative to the file's folder, as in Cargo or docker-compose:
    ``insdel run experiments/a.toml`` reads ``experiments/data.csv`` for ``path = "data.csv"``,
    from whatever folder it is started. They are stored absolute (``~`` expanded) in the returned
    configuration, so the run's printed inputs and ``manifest.json`` name the file read; an
    absolute path is kept. Before this rule a relative path was read from the current folder, so
    a relative path that exists from the current folder but is missing from the file's folder, or
    names another file there, is an error naming the key and both paths, never a silent switch of
    file: give an absolute path or move the file. A dict (the Python API), ``overrides`` and the
    command line's options keep relative paths relative to the current folder, and so does the
    output folder ``out`` of every configuration (default ``runs/<name>``).
    """
    folder = None  # a dict's relative paths stay relative to the current folder
    if isinstance(config, Mapping):
        raw, source = copy.deepcopy(dict(config)), "<dict>"
        raw.pop("source", None)
        if isinstance(raw.get("quick"), bool):
            if raw["quick"] != bool(quick):  # a flag in the dict never applies (or drops) [quick]
                raise ConfigError(f"<dict>: quick = {raw['quick']!r} in the dict does not say "
                                  f"which sizes to use: pass load(..., quick={raw['quick']!r}) "
                                  "(the [quick] overrides are the table 'quick').")
            raw.pop("quick")
    else:
        text, source, folder = _read_text(config)
        try:
            raw = _toml.loads(text)
        except _toml.TOMLDecodeError as exc:
            raise ConfigError(f"{source}: invalid TOML ({exc}).") from None
    has_quick = "quick" in raw
    quick_over = raw.pop("quick", {})
    if not isinstance(quick_over, Mapping):
        raise ConfigError(f"{source}: quick must be a table of overrides; got {quick_over!r}.")
    if quick and not quick_over:  # full sizes recorded as quick = true: a silent wrong result
        what = "an empty [quick] table" if has_quick else "no [quick] table"
        raise ConfigError(f"{source}: quick=True (--quick) applies the configuration's [quick] "
                          f"overrides, but it has {what}: it would run at full size and record "
                          "quick = true. Run it without --quick (quick=False), or add a [quick] "
                          "table of smaller sizes (docs/experiments.md).")
    normalize_removals(raw, "", source)
    normalize_removals(quick_over, "quick.", source)
    if overrides:
        overrides = copy.deepcopy(dict(overrides))
        normalize_removals(overrides, "", "overrides")
    _check_table(raw, SCHEMA, "", source, partial=False)
    _check_table(quick_over, SCHEMA, "quick.", source, partial=True)
    if overrides:
        _check_table(overrides, SCHEMA, "", "overrides", partial=True)
    cfg = _merge(DEFAULTS, raw)
    if quick:
        cfg = _merge(cfg, quick_over)
    if overrides:
        cfg = _merge(cfg, overrides)
    if folder is not None:  # the input paths the file gives (its [quick] table too), not overrides'
        _resolve_inputs(cfg, [(raw, ""), (quick_over if quick else {}, "quick."),
                              (overrides or {}, None)], folder, source)
    cfg["source"] = source
    cfg["quick"] = bool(quick)
    # the tables the file (or dict) itself gives: `insdel run` and `insdel roar` refuse tables the
    # other reads, so that no key is silently ignored
    cfg["sections"] = sorted(set(raw) | (set(quick_over) if quick else set())
                             | set(overrides or {}))
    _check_values(cfg, source, check_tables)
    return cfg


#: Recipe options that name an input file (``path`` of the ``table``, ``bangalore`` and
#: ``dielectron`` recipes; ``csv`` / ``file`` of a custom recipe, the keys the run reports as the
#: data file): in a configuration file they are relative to the file's folder, as ``model.path``.
PATH_OPTIONS = ("path", "csv", "file")


_PATH_RULE = ("paths in a configuration file are relative to the configuration file's folder, "
              "not to the current folder")


#: The input paths of a configuration (key paths): resolved against a configuration file's folder.
_INPUT_KEYS = tuple([("data", o, k) for o in ("options", "real_options") for k in PATH_OPTIONS]
                    + [("model", "path")])


_MISSING = object()


def _dig(table, keys: tuple[str, ...]):
    for k in keys:
        if not isinstance(table, Mapping) or k not in table:
            return _MISSING
        table = table[k]
    return table


def _resolve_inputs(cfg: dict, layers: list, folder: Path, source: str) -> None:
    """Make the input paths of the merged ``cfg`` that a configuration file gives absolute against
    the file's ``folder``, in place. ``layers`` are the (table, prefix) merged in order: the
    file's top level (``""``), its ``[quick]`` table (``"quick."``) and ``overrides`` (prefix
    None: left relative to the current folder); the last layer that sets a key gave its value, so
    only the file actually read is checked."""
    for keys in _INPUT_KEYS:
        value = _dig(cfg, keys)
        prefix = _given_by(layers, keys)
        if isinstance(value, str) and prefix is not None:
            parent = _dig(cfg, keys[:-1])
            parent[keys[-1]] = _resolve_input(prefix + ".".join(keys), value, folder, source)
    # policy specifications given as files ("my_policy.toml", "specs/p.toml"; a name such as
    # "average" or a shipped "cern_counterfactual.toml" with no such file stays a name):
    # (table holding the spec, its key, its dotted name, the key path the layers set)
    slots = [(item, "spec", f"policies[{i}].spec", ("policies",))
             for i, item in enumerate(cfg.get("policies") or []) if isinstance(item, Mapping)]
    if isinstance(cfg.get("roar"), Mapping):
        slots.append((cfg["roar"], "reference", "roar.reference", ("roar", "reference")))
    if isinstance(cfg.get("road"), Mapping):
        slots.append((cfg["road"], "reference", "road.reference", ("road", "reference")))
    for table, key, name, keys in slots:
        spec = table.get(key)
        prefix = _given_by(layers, keys)
        if isinstance(spec, str) and _names_a_file(spec) and prefix is not None:
            table[key] = _resolve_input(prefix + name, spec, folder, source, missing_ok=True)


def _given_by(layers: list, keys: tuple[str, ...]) -> str | None:
    """The prefix of the last of ``layers`` that sets ``keys`` (the one whose value the merged
    configuration holds), None when none does or that layer is ``overrides``."""
    return next((pre for table, pre in reversed(layers) if _dig(table, keys) is not _MISSING),
                None)


def _names_a_file(spec: str) -> bool:
    """Whether a policy spec string is a file name (a ``.toml`` file or a path with a folder)."""
    return spec.endswith(".toml") or "/" in spec or os.sep in spec


def _resolve_input(key: str, value: str, folder: Path, source: str, *,
                   missing_ok: bool = False) -> str:
    """``value`` of input path ``key`` of a configuration file in ``folder``, absolute: ``~``
    expanded, an absolute path kept, a relative one joined to ``folder``. A relative path that
    the current folder would resolve to an existing file the configuration's folder does not
    have, or to a different file, is an error (it was read from the current folder before).
    ``missing_ok``: a value that is a file in neither place is returned as given (a policy
    spec's shipped name)."""
    given = Path(value).expanduser()
    if given.is_absolute():
        return str(given)
    mine = folder / given
    try:
        cwd = Path.cwd() / given
    except OSError:  # the current folder was removed: nothing to read from it
        return str(mine)
    if missing_ok and not mine.exists() and not cwd.exists():
        return value  # not a file in either place: a name (a shipped policy spec) stays one
    if mine == cwd or not cwd.exists():
        return str(mine)
    if not mine.exists():
        raise ConfigError(
            f"{source}: {key} = {value!r}: {mine} (relative to the configuration file's folder) "
            f"does not exist, but {cwd} (relative to the current folder) does; {_PATH_RULE}. "
            "Give an absolute path, or a path relative to the configuration file, or move the "
            "file next to it.")
    if not os.path.samefile(mine, cwd):
        raise ConfigError(
            f"{source}: {key} = {value!r} names two different files: {mine} (relative to the "
            f"configuration file's folder) and {cwd} (relative to the current folder); {_PATH_RULE}, "
            "but insdel refuses to guess when both exist. Give an absolute path, or run from the "
            "configuration's folder, or rename one of the files.")
    return str(mine)
