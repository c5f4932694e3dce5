"""Experiment configurations: read, merge and strictly validate TOML files (docs/experiments.md).

An experiment is a TOML file (the shipped ones are in ``insdel/configs/``: ``paper_cern``,
``paper_bangalore``, ``demo``)::

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
dict, completed and validated).
"""

from __future__ import annotations

import copy
import difflib
import importlib.resources
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._registry import UnknownNameError

try:  # Python >= 3.11
    import tomllib as _toml
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as _toml  # type: ignore[no-redef]

__all__ = ["ALL_METHODS", "PAPER_CONFIGS", "SCHEMA", "DEFAULTS", "ConfigError", "available", "get",
           "options_of", "format_list", "load", "policy_label", "PATH_OPTIONS", "removal_options",
           "RUN_GIVEN_METHOD_OPTIONS", "observational_method"]

#: The seven methods of the paper's tables (Kernel SHAP, its exact form, and the captum methods);
#: ``random`` is added by :func:`insdel.evaluate`.
ALL_METHODS = ("kernel_shap", "integrated_gradients", "deeplift", "vanilla_grad",
               "input_x_gradient", "lime")

#: ``insdel reproduce`` names -> shipped configuration names.
PAPER_CONFIGS = {"paper-cern": "paper_cern", "paper-bangalore": "paper_bangalore",
                 "paper-bangalore-location": "paper_bangalore_location",
                 "paper-bangalore-removals": "paper_bangalore_removals",
                 "observational-bangalore": "observational_bangalore",
                 "paper-cern-removals": "paper_cern_removals",
                 "paper-roar-bangalore": "paper_roar_bangalore",
                 "paper-roar-cern": "paper_roar_cern",
                 "paper-road-bangalore": "paper_road_bangalore",
                 "metrics-cern": "metrics_cern", "metrics-housing": "metrics_housing"}

#: ``insdel reproduce`` experiments that are not TOML runs (they take --quick, --out, --seed).
PAPER_EXPERIMENTS = ("paper-images",)


class ConfigError(ValueError):
    """A configuration key that is unknown, missing or of the wrong type (names the key)."""


def _check_roar(cfg: dict, source: str) -> None:
    from . import roar as _roar

    r = cfg["roar"]
    if not r["orderings"]:
        raise ConfigError(f"{source}: roar.orderings must name at least one ordering.")
    if len(set(map(str, r["orderings"]))) != len(r["orderings"]):
        raise ConfigError(f"{source}: roar.orderings names an ordering twice: "
                          f"{list(r['orderings'])} (each would be retrained and listed twice).")
    for o in r["orderings"]:
        if o not in _roar.ORDERINGS:
            raise ConfigError(f"{source}: roar.orderings: unknown ordering {o!r}"
                              f"{_suggest(str(o), _roar.ORDERINGS)} (known: "
                              f"{', '.join(_roar.ORDERINGS)}).")
    try:  # replicates, points_per_chunk and max_epochs: ranges in the schema
        _roar._check_fractions(r["fractions"])
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{source}: roar: {exc}") from None
    if r["reference"] != "removal":
        from . import policies

        try:
            policies.load(r["reference"])
        except Exception as exc:  # the policy loader's own message says what is wrong
            raise ConfigError(f"{source}: roar.reference must be 'removal' or a policy spec; "
                              f"{r['reference']!r}: {exc}") from None
    if cfg["model"]["path"] is not None:
        raise ConfigError(f"{source}: model.path: ROAR retrains the model from scratch, so it "
                          "needs the architecture: give model.preset or model.params instead.")


def _check_choices(source: str, where: str, values, known) -> None:
    for v in values:
        if v not in known:
            raise ConfigError(f"{source}: {where}: unknown value {v!r}{_suggest(str(v), known)} "
                              f"(known: {', '.join(known)}).")


def _check_road(cfg: dict, source: str) -> None:
    """``[road]``: fractions, orders, ranking, loss, the reference of the attributions, the
    removal (a registered :class:`~insdel.removal.SampledRemoval` and its options) and the leakage
    diagnostic's classifier; the numbers' ranges are the schema's."""
    from . import removal as _removal
    from . import road as _road
    from . import roar as _roar

    r = cfg["road"]
    try:
        _roar._check_fractions(r["fractions"])
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{source}: road: {exc}") from None
    if not r["orders"]:
        raise ConfigError(f"{source}: road.orders must name at least one of "
                          f"{', '.join(_road.ORDERS)}.")
    _check_choices(source, "road.orders", r["orders"], _road.ORDERS)
    if len(set(r["orders"])) != len(r["orders"]):
        raise ConfigError(f"{source}: road.orders names an order twice: {list(r['orders'])}.")
    _check_choices(source, "road.ranking", [r["ranking"]], _road.RANKINGS)
    _check_choices(source, "road.loss", [r["loss"]], _road.LOSSES)
    _check_choices(source, "road.leakage_options.classifier",
                   [r["leakage_options"]["classifier"]], _road.CLASSIFIERS)
    if r["random"] and "random" in cfg["methods"]["names"]:
        raise ConfigError(f"{source}: methods.names lists 'random', and road.random = true adds "
                          "ROAD's own seeded random control under that name: remove one.")
    if r["reference"] != "training_mean":
        from . import policies

        try:
            policies.load(r["reference"])
        except Exception as exc:  # the policy loader's own message says what is wrong
            raise ConfigError(f"{source}: road.reference must be 'training_mean' or a policy "
                              f"spec; {r['reference']!r}: {exc}") from None
    name, options = r["removal"], r["removal_options"]
    known = _removal.available()
    if name not in known:
        raise ConfigError(f"{source}: road.removal: unknown removal {name!r}"
                          f"{_suggest(name, known)} (known: {', '.join(known)}).")
    if not issubclass(_removal.get(name), _removal.SampledRemoval):
        raise ConfigError(f"{source}: road.removal = {name!r} sets removed features to fixed "
                          "references; ROAD imputes them from the kept ones: name a sampled "
                          "removal (conditional_gaussian, conditional_mean, conditional_knn or "
                          "your own SampledRemoval).")
    valid = {k: v for k, v in _removal.options_of(name).items() if k != "data"}
    if "data" in options:
        raise ConfigError(f"{source}: road.removal_options.data: the removal is fitted on the "
                          "data set's training rows; remove the key.")
    _check_free("road.removal_options", options, list(valid), source)
    import inspect

    missing = [k for k, v in valid.items() if v is inspect.Parameter.empty and k not in options]
    if missing:
        raise ConfigError(f"{source}: road.removal_options: removal {name!r} needs "
                          f"{', '.join(missing)}.")


def _check_distinct(source: str, where: str, values, known) -> None:
    """A list of distinct names among ``known`` (did-you-mean on a typo)."""
    if not all(isinstance(v, str) for v in values):
        raise ConfigError(f"{source}: {where} must be a list of names; got {list(values)!r}.")
    _check_choices(source, where, values, known)
    if len(set(values)) != len(values):
        raise ConfigError(f"{source}: {where} names a value twice: {list(values)}.")


def check_sanity(cfg: dict, source: str) -> None:
    """``[sanity]`` and ``[meta]`` of ``insdel sanity``: the orders, similarity measures and
    reliability tests are known names, the reference is ``training_mean`` or a policy spec, the
    layers are names (checked against the model when it is built), data randomisation retrains
    (it needs the model's preset or params), the metrics are registered ones that need no ground
    truth and the reliability compares at least two methods; the numbers' ranges are the
    schema's."""
    from . import metrics as _metrics
    from .sanity import ADVERSARIAL_TESTS, RESILIENCE_TESTS, SIMILARITIES
    from .sanity.randomisation import ORDERS

    s, m = cfg["sanity"], cfg["meta"]
    if not s["orders"]:
        raise ConfigError(f"{source}: sanity.orders must name at least one of "
                          f"{', '.join(ORDERS)}.")
    _check_distinct(source, "sanity.orders", s["orders"], ORDERS)
    if not s["similarity"]:
        raise ConfigError(f"{source}: sanity.similarity must name at least one of "
                          f"{', '.join(SIMILARITIES)}.")
    _check_distinct(source, "sanity.similarity", s["similarity"], SIMILARITIES)
    if not all(isinstance(v, str) for v in s["layers"]) or len(set(s["layers"])) != len(
            s["layers"]):
        raise ConfigError(f"{source}: sanity.layers must be distinct layer names (empty: every "
                          f"randomisable layer); got {list(s['layers'])!r}.")
    if s["reference"] != "training_mean":
        from . import policies

        try:
            policies.load(s["reference"])
        except Exception as exc:  # the policy loader's own message says what is wrong
            raise ConfigError(f"{source}: sanity.reference must be 'training_mean' or a policy "
                              f"spec; {s['reference']!r}: {exc}") from None
    if s["data_randomisation"] and cfg["model"]["path"] is not None:
        raise ConfigError(f"{source}: sanity.data_randomisation retrains the model on permuted "
                          "labels, so it needs the architecture: give model.preset or "
                          "model.params instead of model.path (or set it to false).")
    if s["data_max_epochs"] is not None and not s["data_randomisation"]:
        raise ConfigError(f"{source}: sanity.data_max_epochs caps the retraining of "
                          "sanity.data_randomisation, which is false: it would not be read.")
    if "meta" not in cfg.get("sections", ()):
        return
    if not m["metrics"]:
        raise ConfigError(f"{source}: meta.metrics must name at least one metric (or leave out "
                          "the [meta] table).")
    known = _metrics.available()
    _check_distinct(source, "meta.metrics", m["metrics"], known)
    for name in m["metrics"]:
        if _metrics.get(name).needs_ground_truth:
            raise ConfigError(f"{source}: meta.metrics: {name!r} compares with a known "
                              "ground-truth attribution, which a run does not have.")
    if not m["tests"]:
        raise ConfigError(f"{source}: meta.tests must name at least one test.")
    _check_distinct(source, "meta.tests", m["tests"], RESILIENCE_TESTS + ADVERSARIAL_TESTS)
    if len(cfg["methods"]["names"]) < 2:
        raise ConfigError(f"{source}: [meta] compares the rankings of the methods: "
                          f"methods.names needs at least two (got {cfg['methods']['names']}).")


def _check_device(source: str, device: str) -> None:
    """``compute.device`` must be a torch device this machine has (a silent CPU fallback would
    report CPU timings as GPU ones)."""
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise ConfigError(f"{source}: compute.device: {device!r} is not a torch device "
                          f"({exc}); use 'cpu', 'cuda', 'cuda:1', 'mps', ...") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"{source}: compute.device = {device!r}, but torch sees no CUDA device "
                          f"on this machine (torch {torch.__version__}).")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ConfigError(f"{source}: compute.device = {device!r}, but this machine has "
                          f"{torch.cuda.device_count()} CUDA device(s).")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(f"{source}: compute.device = {device!r}, but MPS is not available.")


#: Schemes of ``compute.address`` (a Dask scheduler).
SCHEDULER_SCHEMES = ("tcp://", "tls://", "ucx://", "inproc://", "ws://", "wss://")


def _check_compute(source: str, c: Mapping) -> None:
    """``compute.backend`` and the keys of its Dask cluster: an existing scheduler (``address``) or
    a LocalCluster (``n_workers``, ``threads_per_worker``), never both; none with the serial
    backend (they would be silently ignored)."""
    from .distributed import BACKENDS

    backend = c["backend"]
    if backend not in BACKENDS:
        raise ConfigError(f"{source}: compute.backend must be one of {BACKENDS}; got {backend!r}"
                          f"{_suggest(str(backend), BACKENDS)}")
    given = [k for k in ("address", "n_workers", "threads_per_worker", "connect_timeout")
             if c[k] is not None]
    if backend == "serial" and given:
        raise ConfigError(f"{source}: compute.{given[0]} is only read with compute.backend = "
                          "'dask' (the backend is 'serial').")
    address = c["address"]
    if address is not None:
        if not address.startswith(SCHEDULER_SCHEMES) or "://" not in address \
                or not address.split("://", 1)[1]:
            raise ConfigError(f"{source}: compute.address must be a Dask scheduler address such "
                              f"as 'tcp://host:8786'; got {address!r}.")
        extra = [k for k in ("n_workers", "threads_per_worker") if c[k] is not None]
        if extra:
            raise ConfigError(f"{source}: compute.{extra[0]} configures a LocalCluster started by "
                              "insdel; with compute.address (an existing cluster) the cluster's "
                              "own workers are used: remove one of the two.")


# -- the schema ---------------------------------------------------------------------------------------
# A leaf is (types, default) or, for a number, (types, default, range): the range holds
# check_scalar's keywords (min_val, max_val, include_boundaries, finite), so a value out of it is
# an error naming the key and the bound. A dict is a table; ``ANY_TABLE`` is a free-form table
# checked by its consumer (recipe options, method options, policy parameters).
ANY_TABLE = "any-table"
#: A table's key for "any other key, whose value is a table": ``[removal.<name>]``, the options of
#: the removal ``name`` (checked by :func:`_check_removal`).
NAMED_TABLES = "<name>"
_REQUIRED = object()
_INT, _NUM, _STR, _BOOL, _LIST = (int,), (int, float), (str,), (bool,), (list,)


def _at_least(minimum: int) -> dict:
    """The range of an integer leaf: ``>= minimum``."""
    return {"min_val": minimum}


#: The range of a positive, finite number of seconds.
_SECONDS = {"min_val": 0.0, "include_boundaries": "neither", "finite": True}

SCHEMA: dict[str, Any] = {
    "name": (_STR, "experiment"),
    "description": (_STR, ""),
    "seed": (_INT, 0, _at_least(0)),
    "out": (_STR + (type(None),), None),
    "data": {
        "recipe": (_STR, _REQUIRED),
        "options": (ANY_TABLE, {}),
        "real_recipe": (_STR + (type(None),), None),
        "real_options": (ANY_TABLE, {}),
    },
    "model": {
        "preset": (_STR + (type(None),), None),
        "path": (_STR + (type(None),), None),
        "params": (ANY_TABLE + "|none", None),
        "max_epochs": (_INT + (type(None),), None, _at_least(1)),
        "trust": (_BOOL, False),
        "architecture": (_STR + (type(None),), None),
    },
    "targets": {"n": (_INT, 200, _at_least(2))},
    "compute": {
        "device": (_STR, "cpu"),
        "backend": (_STR, "serial"),
        "address": (_STR + (type(None),), None),
        "n_workers": (_INT + (type(None),), None, _at_least(1)),
        "threads_per_worker": (_INT + (type(None),), None, _at_least(1)),
        "connect_timeout": (_NUM + (type(None),), None, _SECONDS),
    },
    "roar": {
        "orderings": (_LIST, ["absolute", "signed", "random"]),
        "fractions": (_LIST, [0.1, 0.3, 0.5, 0.7, 0.9, 1.0]),
        "replicates": (_INT, 5, _at_least(1)),
        "reference": (_STR, "removal"),
        "max_epochs": (_INT + (type(None),), None, _at_least(1)),
        "points_per_chunk": (_INT, 500, _at_least(1)),
    },
    "policies": ([{"spec": ((str, dict), _REQUIRED), "label": (_STR, None),
                   "params": (ANY_TABLE, {})}], [{"spec": "cern_counterfactual"}]),
    "methods": {
        "names": (_LIST, list(ALL_METHODS)),
        "options": (ANY_TABLE, {}),
    },
    "evaluation": {
        "modes": (_LIST, ["insertion", "deletion"]),
        "n_random": (_INT, 20, _at_least(0)),
        "normalize": (_BOOL, True),
        "targets_per_chunk": (_INT, 50, _at_least(1)),
        "order": (_STR, "signed"),
    },
    "decomposition": {
        "n_pairs": (_INT, 0, _at_least(0)),
        "pairs_per_chunk": (_INT, 8, _at_least(1)),
        "max_d": (_INT, 16, _at_least(1)),
    },
    "metrics": {
        "names": (_LIST, []),
        "options": (ANY_TABLE, {}),
    },
    "removal": {
        "kinds": (_LIST, ["baseline"]),
        # random orderings traced under the further removals (None: evaluation.n_random)
        "n_random": (_INT + (type(None),), None, _at_least(0)),
        NAMED_TABLES: (ANY_TABLE, {}),
    },
    "figures": {
        "enabled": (_BOOL, True),
        "compare": (_LIST, ["kernel_shap", "integrated_gradients"]),
        "n_random": (_INT, 20, _at_least(0)),
        "dpi": (_INT, 110, _at_least(10)),
    },
}

#: ``[road]``: ROAD (:mod:`insdel.road`, ``insdel road``, docs/road.md). The removal's options are
#: free-form (checked against the registered removal's ``__init__``); the leakage diagnostic's are
#: checked here.
ROAD_SCHEMA: dict[str, Any] = {
    "fractions": (_LIST, [0.1, 0.3, 0.5, 0.7, 0.9, 1.0]),
    "orders": (_LIST, ["morf", "lerf"]),
    "ranking": (_STR, "absolute"),
    "loss": (_STR, "mse"),
    "random": (_BOOL, True),
    "reference": (_STR, "training_mean"),
    "n_rows": (_INT + (type(None),), None, _at_least(1)),
    "points_per_chunk": (_INT, 500, _at_least(1)),
    "removal": (_STR, "conditional_gaussian"),
    "removal_options": (ANY_TABLE, {}),
    "leakage": (_BOOL, True),
    "leakage_options": {
        "fraction": (_NUM, 0.5, {"min_val": 0.0, "max_val": 1.0, "include_boundaries": "neither",
                                 "finite": True}),
        "n_rows": (_INT + (type(None),), 2000, _at_least(1)),
        "classifier": (_STR, "forest"),
        "folds": (_INT, 5, _at_least(2)),
    },
}
SCHEMA["road"] = ROAD_SCHEMA

#: ``[sanity]``: the randomisation sanity checks of ``insdel sanity`` (:mod:`insdel.sanity`,
#: docs/sanity.md); read with ``[meta]`` (the metrics' reliability) by that command only.
SANITY_SCHEMA: dict[str, Any] = {
    "orders": (_LIST, ["cascading"]),
    "layers": (_LIST, []),
    "similarity": (_LIST, ["spearman", "sign_agreement"]),
    "threshold": (_NUM, 0.5, {"min_val": -1.0, "max_val": 1.0, "finite": True}),
    "abc_tolerance": (_NUM, 0.1, {"min_val": 0.0, "finite": True}),
    "abc": (_BOOL, True),
    "n_targets": (_INT, 100, _at_least(2)),
    "reference": (_STR, "training_mean"),
    "data_randomisation": (_BOOL, False),
    "data_max_epochs": (_INT + (type(None),), None, _at_least(1)),
}
#: ``[meta]``: MetaQuantus-style reliability of faithfulness metrics
#: (:func:`insdel.sanity.metric_reliability`), on the attributions of ``insdel sanity``'s pairs.
META_SCHEMA: dict[str, Any] = {
    "metrics": (_LIST, ["insertion_abc", "deletion_abc", "faithfulness_correlation"]),
    "n_perturbations": (_INT, 5, _at_least(1)),
    "noise": (_NUM, 0.01, {"min_val": 0.0, "include_boundaries": "neither", "finite": True}),
    "tolerance": (_NUM, 0.05, {"min_val": 0.0, "finite": True}),
    "tests": (_LIST, ["model_noise", "input_noise", "model_randomisation",
                      "attribution_shuffle"]),
}
SCHEMA["sanity"] = SANITY_SCHEMA
SCHEMA["meta"] = META_SCHEMA
PAPER_CONFIGS["sanity-cern"] = "sanity_cern"

#: Keys renamed since earlier versions: an old name is an error that names the new one.
RENAMED = {"evaluation.chunk_size": "evaluation.targets_per_chunk",
           "decomposition.chunk_size": "decomposition.pairs_per_chunk"}


def _defaults(schema: Mapping) -> dict:
    out = {}
    for k, spec in schema.items():
        if k == NAMED_TABLES:
            continue
        if isinstance(spec, dict):
            out[k] = _defaults(spec)
        else:
            default = spec[1]
            out[k] = None if default is _REQUIRED else copy.deepcopy(default)
    return out


#: The defaults of every key (``data.recipe`` has none: it must be given).
DEFAULTS = _defaults(SCHEMA)


def _suggest(key: str, valid) -> str:
    valid = list(valid)
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
    if not close and len(valid) == 1:
        close = valid
    return f"; did you mean {close[0]!r}?" if close else ""


def _type_name(types) -> str:
    names = {bool: "true/false", int: "an integer", float: "a number", str: "a string",
             list: "a list", dict: "a table", type(None): "nothing"}
    return " or ".join(names.get(t, t.__name__) for t in types)


def _check_leaf(where: str, value, types, source: str, bounds: Mapping | None = None) -> None:
    """A leaf's value is of its types and, when the leaf has a range (``bounds``, check_scalar's
    keywords), in it; the error names the key."""
    if types == ANY_TABLE or types == ANY_TABLE + "|none":
        if value is None and types.endswith("|none"):
            return
        if not isinstance(value, Mapping):
            raise ConfigError(f"{source}: {where} must be a table; got {value!r}.")
        return
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
    if not ok:
        raise ConfigError(f"{source}: {where} must be {_type_name(types)}; got {value!r}.")
    if bounds is not None and value is not None:
        from ._validation import check_scalar

        try:
            check_scalar(where, value, float if float in types else int, **bounds)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: {exc}") from None


def _check_table(raw: Mapping, schema: Mapping, prefix: str, source: str, *,
                 partial: bool) -> None:
    for key, value in raw.items():
        where = f"{prefix}{key}"
        if key not in schema and NAMED_TABLES in schema and isinstance(value, Mapping):
            continue  # a named table ([removal.<name>]): its consumer checks name and keys
        if key not in schema:
            if where in RENAMED:
                raise ConfigError(f"{source}: {where} was renamed to {RENAMED[where]!r}.")
            if prefix == "data." and key == "path":
                raise ConfigError(
                    f"{source}: data.path is not a key: a file is read by a recipe. Write "
                    f'recipe = "table" (your own CSV or parquet) and put path under '
                    f"[data.options] (docs/your_own_data.md), or name the recipe of the data set.")
            kind = "top-level key" if not prefix else "key"
            valid = [k for k in schema if k != NAMED_TABLES]
            named = (f", or a table [{prefix}<name>]" if NAMED_TABLES in schema else "")
            raise ConfigError(f"{source}: unknown {kind} {where!r}{_suggest(key, valid)} "
                              f"(valid keys here: {', '.join(valid)}{named}).")
        spec = schema[key]
        if isinstance(spec, dict):
            if not isinstance(value, Mapping):
                raise ConfigError(f"{source}: {where} must be a table; got {value!r}.")
            _check_table(value, spec, where + ".", source, partial=partial)
        elif isinstance(spec[0], list):  # array of tables
            if not isinstance(value, list) or (not value and not partial):
                raise ConfigError(f"{source}: {where} must be a non-empty array of tables "
                                  f"([[{where}]]); got {value!r}.")
            for i, item in enumerate(value):
                if not isinstance(item, Mapping):
                    raise ConfigError(f"{source}: {where}[{i}] must be a table; got {item!r}.")
                _check_table(item, spec[0][0], f"{where}[{i}].", source, partial=partial)
                for k, s in spec[0][0].items():
                    if s[1] is _REQUIRED and k not in item:
                        raise ConfigError(f"{source}: {where}[{i}] needs the key {k!r}.")
        else:
            _check_leaf(where, value, spec[0], source, spec[2] if len(spec) > 2 else None)


def _merge(base: dict, over: Mapping) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict) and k not in _FREE_TABLES:
            out[k] = _merge(out[k], v)
        elif isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = _merge_free(out[k], v)
        else:
            out[k] = copy.deepcopy(dict(v) if isinstance(v, Mapping) else v)
    return out


_FREE_TABLES = ("options", "real_options", "params")


def _merge_free(base: dict, over: Mapping) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = _merge_free(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


# -- registry verbs ---------------------------------------------------------------------------------
def available() -> list[str]:
    """Names of the configurations shipped in ``insdel/configs``, sorted."""
    folder = importlib.resources.files("insdel") / "configs"
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
    res = importlib.resources.files("insdel") / "configs" / f"{stem}.toml"
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
    res = importlib.resources.files("insdel") / "configs" / f"{name}.toml"
    if not name.endswith(".toml") and res.is_file():
        return res.read_text(encoding="utf-8"), f"insdel/configs/{name}.toml", None
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
    _check_values(cfg, source)
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


#: Top-level keys `insdel roar` reads; `insdel run` reads every other one and not ``roar``.
ROAR_SECTIONS = ("name", "description", "seed", "out", "data", "model", "methods", "compute",
                 "roar")

#: Top-level keys `insdel road` reads; `insdel run` refuses a ``[road]`` table.
ROAD_SECTIONS = ("name", "description", "seed", "out", "data", "model", "methods", "compute",
                 "road")

#: The tables of the commands that read only some of a configuration: table -> what it reads.
_COMMAND_SECTIONS = {"roar": ROAR_SECTIONS, "road": ROAD_SECTIONS}
_COMMAND_NAMES = {"roar": "ROAR", "road": "ROAD"}

#: Top-level keys `insdel sanity` reads; `insdel run`, `roar` and `road` refuse ``[sanity]`` and
#: ``[meta]``.
SANITY_SECTIONS = ("name", "description", "seed", "out", "data", "model", "methods", "compute",
                   "sanity", "meta")
_COMMAND_SECTIONS["sanity"] = SANITY_SECTIONS
_COMMAND_NAMES["sanity"] = "sanity-check"
#: Tables only a command reads besides its own: table -> that command.
_COMMAND_TABLES = {"meta": "sanity"}


def check_sections(cfg: Mapping, command: str) -> None:
    """Refuse a configuration whose tables the command would not read (``"run"``, ``"roar"`` or
    ``"road"``)."""
    given = set(cfg.get("sections", ()))
    if command in _COMMAND_SECTIONS:
        reads = _COMMAND_SECTIONS[command]
        if command not in given:
            raise ConfigError(f"{cfg['source']}: `insdel {command}` needs a [{command}] table "
                              f"(see docs/{command}.md); this configuration has none.")
        extra = sorted(given - set(reads))
        if extra:
            raise ConfigError(f"{cfg['source']}: {', '.join(extra)}: not read by `insdel "
                              f"{command}` (it reads {', '.join(reads)}); remove them.")
        return
    for table, command in [*((t, t) for t in _COMMAND_SECTIONS), *_COMMAND_TABLES.items()]:
        if table in given:
            raise ConfigError(f"{cfg['source']}: this is a {_COMMAND_NAMES[command]} "
                              f"configuration ([{table}] table): run it with `insdel {command}`, "
                              "not `insdel run`.")


def policy_label(entry: Mapping) -> str:
    """The label of a ``[[policies]]`` entry: its ``label``, else the spec's name."""
    if entry.get("label"):
        return str(entry["label"])
    spec = entry["spec"]
    if isinstance(spec, Mapping):
        return str(spec.get("name") or spec.get("policy"))
    return Path(str(spec)).stem


def _check_values(cfg: dict, source: str) -> None:
    # numbers were checked against their leaf's range when read (_check_leaf)
    _check_device(source, cfg["compute"]["device"])
    _check_compute(source, cfg["compute"])
    from .curves import ORDERS

    if cfg["evaluation"]["order"] not in ORDERS:
        raise ConfigError(f"{source}: evaluation.order must be one of {ORDERS}; got "
                          f"{cfg['evaluation']['order']!r}"
                          f"{_suggest(str(cfg['evaluation']['order']), ORDERS)}")
    if "roar" in cfg.get("sections", ()):
        _check_roar(cfg, source)
    if "road" in cfg.get("sections", ()):
        _check_road(cfg, source)
    if {"sanity", "meta"} & set(cfg.get("sections", ())):
        check_sanity(cfg, source)
    modes = cfg["evaluation"]["modes"]
    if not modes:
        raise ConfigError(f"{source}: evaluation.modes must name at least one mode.")
    for m in modes:
        if m not in ("insertion", "deletion"):
            raise ConfigError(f"{source}: evaluation.modes: unknown mode {m!r}"
                              f"{_suggest(str(m), ('insertion', 'deletion'))}")
    if len(set(modes)) != len(modes):
        raise ConfigError(f"{source}: evaluation.modes names a mode twice: {list(modes)}.")
    names = cfg["methods"]["names"]
    if not names or not all(isinstance(m, str) for m in names):
        raise ConfigError(f"{source}: methods.names must be a non-empty list of method names.")
    if len(set(names)) != len(names):
        raise ConfigError(f"{source}: methods.names lists a method twice: {names}.")
    _check_methods(cfg, source)
    _check_metrics(cfg, source)
    _check_removal(cfg, source)
    if not cfg["policies"]:
        raise ConfigError(f"{source}: policies must name at least one policy ([[policies]]).")
    for i, p in enumerate(cfg["policies"]):
        _check_label(source, i, p)
    labels = [policy_label(p) for p in cfg["policies"]]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"{source}: two policies share the label; give each a distinct 'label' "
                          f"({labels}).")
    m = cfg["model"]
    if sum(x is not None for x in (m["preset"], m["path"], m["params"])) != 1:
        raise ConfigError(f"{source}: [model] needs exactly one of 'preset', 'path', 'params'.")
    if m["max_epochs"] is not None and m["path"] is not None:
        raise ConfigError(f"{source}: model.max_epochs caps the training of a preset or params "
                          "model; model.path loads a trained model, so it would not be read.")
    if m["architecture"] is not None and m["path"] is None:
        raise ConfigError(f"{source}: model.architecture names the preset of a bare state_dict "
                          "given by model.path; there is no path.")
    if m["trust"] and m["path"] is None:
        given = "model.preset" if m["preset"] is not None else "model.params"
        raise ConfigError(f"{source}: model.trust = true allows loading a pickle-based model file "
                          f"given by model.path; the model comes from {given} (no path), so it "
                          "would not be read: remove model.trust.")
    if cfg["data"]["recipe"] is None:
        raise ConfigError(f"{source}: data.recipe is required (e.g. \"dielectron_sim\", or "
                          f"\"table\" for your own CSV); insdel never picks a data set for you.")
    _check_data(cfg, source)
    _check_model(cfg, source)
    _check_policies(cfg, source)


#: Reserved folders of a run's output (a policy folder there would be deleted with them or lose
#: its files to the run's own).
_RESERVED_LABELS = ("checkpoints",)


def _check_label(source: str, i: int, entry: Mapping) -> None:
    """A policy's label names its output folder: a plain folder name, never a path."""
    from ._checkpoint import is_plain_folder_name

    label = policy_label(entry)
    if "label" in entry and entry["label"] is not None and not entry["label"]:
        raise ConfigError(f"{source}: policies[{i}].label is empty; give a name or remove it.")
    if not is_plain_folder_name(label) or label in _RESERVED_LABELS:
        raise ConfigError(f"{source}: policies[{i}].label: {label!r} names the policy's output "
                          "folder: it must be a plain folder name (no '/', '\\', not '.', "
                          f"'..' or {', '.join(map(repr, _RESERVED_LABELS))}).")


def _check_free(where: str, given: Mapping, valid, source: str) -> None:
    """Keys of a free-form table (recipe options, policy or model parameters) against ``valid``."""
    for k in given:
        if k not in valid:
            raise ConfigError(f"{source}: unknown key '{where}.{k}'{_suggest(str(k), valid)} "
                              f"(valid keys here: {', '.join(valid) or 'none'}).")


def _check_data(cfg: dict, source: str) -> None:
    """``data.recipe`` / ``data.real_recipe`` exist; their options are options the recipe takes."""
    from . import datasets

    known = datasets.available()
    for rkey, okey in (("recipe", "options"), ("real_recipe", "real_options")):
        recipe, options = cfg["data"][rkey], cfg["data"][okey]
        if recipe is None:
            if options:
                raise ConfigError(f"{source}: data.{okey} is given but data.{rkey} is not.")
            continue
        if recipe not in known:
            raise ConfigError(f"{source}: data.{rkey}: unknown data set {recipe!r}"
                              f"{_suggest(recipe, known)} (known: {', '.join(known)}).")
        if "seed" in options:
            raise ConfigError(f"{source}: data.{okey}.seed: the seed is the top-level key 'seed'.")
        if not datasets._takes_any_option(recipe):
            _check_free(f"data.{okey}", options, list(datasets.options_of(recipe)), source)


def _check_model(cfg: dict, source: str) -> None:
    """``model.preset`` / ``model.architecture`` are presets; ``model.params`` resolves."""
    from . import models

    m = cfg["model"]
    presets = models.available()
    for key in ("preset", "architecture"):
        if m[key] is not None and m[key] not in presets:
            raise ConfigError(f"{source}: model.{key}: unknown preset {m[key]!r}"
                              f"{_suggest(m[key], presets)} (presets: {', '.join(presets)}).")
    if m["params"] is not None:
        valid = ["preset", *models.get(presets[0])]
        _check_free("model.params", m["params"], valid, source)
        try:
            models._resolve_params(dict(m["params"]), None)
        except (TypeError, ValueError, KeyError) as exc:
            raise ConfigError(f"{source}: model.params: {exc}") from None


def _check_policies(cfg: dict, source: str) -> None:
    """Each ``[[policies]]`` spec exists and its ``params`` are parameters of its policy."""
    from . import policies

    for i, entry in enumerate(cfg["policies"]):
        where = f"policies[{i}]"
        try:
            base = policies.load(entry["spec"])
        except (TypeError, ValueError, KeyError, FileNotFoundError) as exc:
            raise ConfigError(f"{source}: {where}.spec: {exc}") from None
        params = dict(entry.get("params") or {})
        if not params:
            continue
        try:
            policies.load(entry["spec"], params=params)
        except (TypeError, ValueError, KeyError) as exc:
            valid = list(policies.options_of(base.name)) if base.name in policies.available() \
                else []
            if valid and any(k not in valid for k in params):
                _check_free(f"{where}.params", params, valid, source)
            raise ConfigError(f"{source}: {where}.params: {exc}") from None


def _checked_options(cfg: dict, table: str, options_of, source: str):
    """``<table>.options.<name>.<key>``: each name is in ``<table>.names``, each value a table
    of options that name takes (``options_of(name)``). Yields (name, options)."""
    names = cfg[table]["names"]
    for m, opts in cfg[table]["options"].items():
        if m not in names:
            raise ConfigError(f"{source}: {table}.options.{m} is given but {m!r} is not in "
                              f"{table}.names {names}{_suggest(m, names)}")
        if not isinstance(opts, Mapping):
            raise ConfigError(f"{source}: {table}.options.{m} must be a table; got {opts!r}.")
        valid = options_of(m)
        for k in opts:
            if k not in valid:
                raise ConfigError(f"{source}: unknown key '{table}.options.{m}.{k}'"
                                  f"{_suggest(k, valid)} (options of {m}: {', '.join(valid)}).")
        yield m, opts


def _check_known(source: str, table: str, what: str, known: list[str], cfg: dict,
                 key: str = "names") -> list[str]:
    """Every name in ``<table>.<key>`` is one of ``known`` (the error names the key and suggests
    the closest); returns the names."""
    names = cfg[table][key]
    for m in names:
        if m not in known:
            raise ConfigError(f"{source}: {table}.{key}: unknown {what} {m!r}"
                              f"{_suggest(m, known)} (known: {', '.join(known)}).")
    return names


def _check_metrics(cfg: dict, source: str) -> None:
    """Metric names exist and can run in a run (no ground truth there); ``metrics.options.<name>``
    are options that metric takes (built once here, so a bad value fails when the file is read)."""
    from . import metrics

    names = _check_known(source, "metrics", "metric", metrics.available(), cfg)
    for m in names:
        if metrics.get(m).needs_ground_truth:
            raise ConfigError(f"{source}: metrics.names: {m!r} compares with a known ground-truth "
                              "attribution, which a run does not have; use it from Python "
                              "(insdel.metrics.evaluate_metrics(..., ground_truth=)).")
    if len(set(names)) != len(names):
        raise ConfigError(f"{source}: metrics.names lists a metric twice: {names}.")
    for m, opts in _checked_options(cfg, "metrics", metrics.options_of, source):
        try:
            metrics.build(m, **opts)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: metrics.options.{m}: {exc}") from None


#: Options of a method read off the data (:func:`observational_method`: ``cohort_shapley``,
#: ``igcs``) that the run gives itself: every row of the data set, training and test, as ``data``
#: and their y as ``outcome`` (``y`` is its other name), as it gives the ``cohort`` removal.
RUN_GIVEN_METHOD_OPTIONS = ("data", "outcome", "y")


def observational_method(name: str) -> bool:
    """Whether attribution method ``name`` reads the observational cohort game (it takes ``data``
    and ``outcome``): the run gives it the data set's rows and y, and its ``tolerance``,
    ``categorical`` and ``empty`` default to ``[removal.cohort]``'s."""
    from . import attribution

    accepted = attribution.options_of(name)
    return "data" in accepted and "outcome" in accepted


def _method_options(name: str) -> dict:
    """The options method ``name`` takes from a configuration (the run-given ones excepted)."""
    from . import attribution

    opts = attribution.options_of(name)
    if observational_method(name):
        opts = {k: v for k, v in opts.items() if k not in RUN_GIVEN_METHOD_OPTIONS}
    return opts


def _check_methods(cfg: dict, source: str) -> None:
    """Method names exist; ``methods.options.<name>.<key>`` are options that method takes (not
    the data and outcome the run gives the cohort methods)."""
    from . import attribution
    from ._validation import check_scalar

    known = attribution.available()
    _check_known(source, "methods", "attribution method", known, cfg)
    for m, opts in cfg["methods"]["options"].items():
        if m in known and isinstance(opts, Mapping) and observational_method(m):
            for k in RUN_GIVEN_METHOD_OPTIONS:
                if k in opts:
                    raise ConfigError(
                        f"{source}: methods.options.{m}.{k}: the run gives {m} every row of the "
                        "data set (training and test) as data and their y as outcome, as it "
                        "gives the cohort removal; remove the key (set tolerance, categorical "
                        "here or in [removal.cohort]).")
    for m, opts in _checked_options(cfg, "methods", _method_options, source):
        if "seed" in opts:  # the runner derives each chunk's seed from it: 2.7 is not 2
            try:
                check_scalar(f"methods.options.{m}.seed", opts["seed"], int, min_val=0)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"{source}: {exc}") from None
    compare = cfg["figures"]["compare"]
    known = list(dict.fromkeys([*attribution.available(), "random"]))
    if not isinstance(compare, list) or not all(isinstance(m, str) for m in compare):
        raise ConfigError(f"{source}: figures.compare must be a list of method names; got "
                          f"{compare!r}.")
    # a typo would silently compare other methods (the figures fill up from those run)
    _check_known(source, "figures", "method", known, cfg, key="compare")
    if len(set(compare)) != len(compare):  # a method against itself: every difference is 0
        raise ConfigError(f"{source}: figures.compare names a method twice: {compare}.")


#: Options of a removal that the run gives itself: the training rows of the run's data set
#: (``background``, ``data``); for a game read off the data (``cohort``) the data set's rows,
#: training and test, as ``data`` and their outcome y as ``outcome``.
RUN_GIVEN_REMOVAL_OPTIONS = ("background", "data", "outcome")


def removal_options(name: str) -> dict:
    """The options removal ``name`` takes from a configuration (``[removal.<name>]``): those of
    :func:`insdel.removal.options_of` less the training rows the run gives
    (:data:`RUN_GIVEN_REMOVAL_OPTIONS`)."""
    from . import removal

    return {k: v for k, v in removal.options_of(name).items()
            if k not in RUN_GIVEN_REMOVAL_OPTIONS}


def _check_removal(cfg: dict, source: str) -> None:
    """``[removal]``: ``kinds`` is a non-empty list of distinct registered removals (the first is
    the primary one); each ``[removal.<name>]`` table names a registered removal and holds only
    options it takes (the training rows excepted: the run gives them). Option values are checked
    by building the removal where it needs no training rows (else when the run builds it)."""
    from . import removal

    r = cfg["removal"]
    kinds = r["kinds"]
    if not kinds:
        raise ConfigError(f"{source}: removal.kinds must name at least one removal (default "
                          '["baseline"]).')
    known = removal.available()
    for k in kinds:
        if not isinstance(k, str):
            raise ConfigError(f"{source}: removal.kinds must be a list of removal names; got "
                              f"{k!r} in {kinds!r}.")
        if k not in known:
            raise ConfigError(f"{source}: removal.kinds: unknown removal {k!r}"
                              f"{_suggest(k, known)} (known: {', '.join(known)}).")
        from ._checkpoint import is_plain_folder_name

        if not is_plain_folder_name(k):  # it names the folder removal-<name>
            raise ConfigError(f"{source}: removal.kinds: {k!r} names the folder removal-{k}: "
                              "it must be a plain folder name (no '/', '\\').")
    if len(set(kinds)) != len(kinds):
        raise ConfigError(f"{source}: removal.kinds names a removal twice: {list(kinds)}.")
    for name, opts in r.items():
        if name in ("kinds", "n_random"):
            continue
        if name not in known:
            raise ConfigError(f"{source}: [removal.{name}]: unknown removal {name!r}"
                              f"{_suggest(name, known)} (known: {', '.join(known)}).")
        valid = removal_options(name)
        for k in opts:
            if k in RUN_GIVEN_REMOVAL_OPTIONS:
                raise ConfigError(f"{source}: removal.{name}.{k}: the run gives {name} its "
                                  "training rows (the data set's X_train); remove the key.")
            if k not in valid:
                raise ConfigError(f"{source}: unknown key 'removal.{name}.{k}'"
                                  f"{_suggest(k, valid)} (options of {name}: "
                                  f"{', '.join(valid) or 'none'}).")
        try:
            removal.build(name, **dict(opts))
        except removal.MissingDataError:
            pass  # fitted on the run's rows: its other options are checked when the run builds it
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: removal.{name}: {exc}") from None
