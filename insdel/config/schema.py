"""The configuration schema (docs/experiments.md): what every key of an experiment may hold, its
type, default and range, the shipped experiments' names, and the generic checks every table goes
through (unknown keys with did-you-mean, leaf types and ranges, merging)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from .._registry import UnknownOptionError, check_options, closest_names

#: The seven methods of the paper's tables (Kernel SHAP, its exact form, and the captum methods);
#: ``random`` is added by :func:`insdel.evaluate`.
ALL_METHODS = ("kernel_shap", "integrated_gradients", "deeplift", "vanilla_grad",
               "input_x_gradient", "lime")


#: ``insdel reproduce`` names -> shipped configuration names: filled by each command's spec when
#: it is registered (:mod:`insdel.config.commands`, ``Command.experiments``).
PAPER_CONFIGS: dict[str, str] = {}


#: ``insdel reproduce`` experiments that are not TOML runs (they take --quick, --out, --seed).
PAPER_EXPERIMENTS = ("paper-images",)


class ConfigError(ValueError):
    """A configuration key that is unknown, missing or of the wrong type (names the key)."""


class UnknownKeyError(ConfigError, UnknownOptionError):
    """A key a configuration table does not take: the :class:`ConfigError` of a configuration and
    the one unknown-option error (:class:`insdel.UnknownOptionError`, its message format)."""


_INT, _NUM, _STR, _BOOL, _LIST = (int,), (int, float), (str,), (bool,), (list,)


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
        # H: a model file returning (B, H) is tested as a whole (docs/multi_output.md)
        "outputs": (_INT + (type(None),), None, _at_least(1)),
        "output_weights": (_LIST + (type(None),), None),
        "engine": (_STR, "auto"),
        "kind": (_STR, "mlp"),
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
        # what a removed feature becomes in the retrainings (None: the training mean / mode)
        "removal": (_STR + (type(None),), None),
        "removal_options": (ANY_TABLE, {}),
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
    # Shapley interaction indices of the first n_pairs pairs (insdel.interactions,
    # docs/interactions.md): one interactions.parquet per policy; n_pairs = 0: none
    "interactions": {
        "n_pairs": (_INT, 0, _at_least(0)),
        "index": (_STR, "k-SII"),
        "order": (_INT + (type(None),), None, _at_least(1)),
        "max_d": (_INT, 16, _at_least(1)),
        "n_samples": (_INT + (type(None),), None, _at_least(2)),
        "pairs_per_chunk": (_INT, 8, _at_least(1)),
    },
    "metrics": {
        "names": (_LIST, []),
        "options": (ANY_TABLE, {}),
    },
    "removal": {
        "kinds": (_LIST, ["baseline"]),
        # random orderings traced under the further removals (None: evaluation.n_random)
        "n_random": (_INT + (type(None),), None, _at_least(0)),
        # "baseline": one set of attributions (the pairs' reference r) scored under every
        # removal; "per_removal": each removal's curves score attributions under its own game
        "attributions": (_STR, "baseline"),
        NAMED_TABLES: (ANY_TABLE, {}),
    },
    # the verdicts printed beside each policy's table (docs/verdicts.md): read from the per-unit
    # results, they change no ABC (left out of the leaderboard's configuration fingerprint)
    "verdicts": {
        "margin": (_NUM, 0.1, {"min_val": 0.0, "include_boundaries": "neither", "finite": True}),
        "relative": (_BOOL, True),
        "level": (_NUM, 0.95, {"min_val": 0.0, "max_val": 1.0, "include_boundaries": "neither",
                               "finite": True}),
        "adjust": (_STR, "holm"),
        "n_resamples": (_INT, 2000, _at_least(1)),
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
    "n_seeds": (_INT, 1, _at_least(1)),
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
    close = closest_names(key, valid)
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
        from .._validation import check_scalar

        try:
            check_scalar(value, where, float if float in types else int, **bounds)
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
            valid = [k for k in schema if k != NAMED_TABLES]
            named = (f"Or a table [{prefix}<name>]." if NAMED_TABLES in schema else "")
            check_options(source, [key], valid, noun="top-level key" if not prefix else "key",
                          prefix=prefix, note=named, error=UnknownKeyError)
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
