"""The configuration's section checks (docs/experiments.md): the values of each table against
the registries they name (data recipes, models, policies, methods, metrics, removals) and the
checks of the built-in commands' own tables (``[roar]``, ``[road]``, ``[sanity]``, ``[meta]``),
which their :class:`~insdel.config.commands.Command` specs name."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .._registry import check_options
from .schema import ConfigError, UnknownKeyError, _suggest


def policy_label(entry: Mapping) -> str:
    """The label of a ``[[policies]]`` entry: its ``label``, else the spec's name."""
    if entry.get("label"):
        return str(entry["label"])
    spec = entry["spec"]
    if isinstance(spec, Mapping):
        return str(spec.get("name") or spec.get("policy"))
    return Path(str(spec)).stem


def _check_roar(cfg: dict, source: str) -> None:
    from .. import roar as _roar

    r = cfg["roar"]
    if not r["orderings"]:
        raise ConfigError(f"{source}: roar.orderings must name at least one ordering.")
    canon = [_check_ordering(source, "roar.orderings", o, allowed=_roar._CANONICAL, ranking=None)
             for o in r["orderings"]]
    if len(set(canon)) != len(canon):
        raise ConfigError(f"{source}: roar.orderings names an ordering twice: "
                          f"{list(r['orderings'])} (each would be retrained and listed twice; "
                          "kar_signed is ascending, kar_absolute is least).")
    try:  # replicates, points_per_chunk and max_epochs: ranges in the schema
        _roar._check_fractions(r["fractions"])
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{source}: roar: {exc}") from None
    if r["reference"] != "removal":
        from .. import policies

        try:
            policies.load(r["reference"])
        except Exception as exc:  # the policy loader's own message says what is wrong
            raise ConfigError(f"{source}: roar.reference must be 'removal' or a policy spec; "
                              f"{r['reference']!r}: {exc}") from None
    if cfg["model"]["path"] is not None:
        raise ConfigError(f"{source}: model.path: ROAR retrains the model from scratch, so it "
                          "needs the architecture: give model.preset or model.params instead.")
    name = r["removal"]
    if name is None:
        if r["removal_options"]:
            raise ConfigError(f"{source}: roar.removal_options is given but roar.removal is not "
                              "set: name the removal they are for.")
        return
    from .. import removal

    _check_removal_name(source, "roar.removal", name)
    cls = removal.get(name)
    if cls is removal.Baseline or issubclass(cls, removal.GameRemoval):
        raise ConfigError(f"{source}: roar.removal = {name!r} gives no value to put in a removed "
                          "feature of a training row; name marginal, a conditional removal or "
                          "your own SampledRemoval (or leave it out: the training mean / mode).")
    _check_removal_options(source, "roar.removal_options", name, r["removal_options"])


def _check_ordering(source: str, where: str, name, **kwargs) -> str:
    """:func:`insdel.ordering.check_ordering` with the error a :class:`ConfigError` naming the
    key."""
    from ..ordering import check_ordering

    try:
        return check_ordering(name, argument=where, **kwargs)
    except ValueError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _check_choices(source: str, where: str, values, known) -> None:
    for v in values:
        if v not in known:
            raise ConfigError(f"{source}: {where}: unknown value {v!r}{_suggest(str(v), known)} "
                              f"(known: {', '.join(known)}).")


def _check_road(cfg: dict, source: str) -> None:
    """``[road]``: fractions, orders, ranking, loss, the reference of the attributions, the
    removal (a registered :class:`~insdel.removal.SampledRemoval` and its options) and the leakage
    diagnostic's classifier; the numbers' ranges are the schema's."""
    from .. import removal as _removal
    from .. import road as _road
    from .. import roar as _roar

    r = cfg["road"]
    try:
        _roar._check_fractions(r["fractions"])
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{source}: road: {exc}") from None
    if not r["orders"]:
        raise ConfigError(f"{source}: road.orders must name at least one of "
                          f"{', '.join(_road.ORDERS)}.")
    for o in r["orders"]:
        _check_ordering(source, "road.orders", o, allowed=_road.ORDERS)
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
        from .. import policies

        try:
            policies.load(r["reference"])
        except Exception as exc:  # the policy loader's own message says what is wrong
            raise ConfigError(f"{source}: road.reference must be 'training_mean' or a policy "
                              f"spec; {r['reference']!r}: {exc}") from None
    name, options = r["removal"], r["removal_options"]
    _check_removal_name(source, "road.removal", name)
    cls = _removal.get(name)
    if not issubclass(cls, _removal.SampledRemoval):
        what = ("reads a coalition's value off the data's cohort (a game, no imputed row)"
                if issubclass(cls, _removal.GameRemoval) else
                "sets removed features to reference rows' values")
        raise ConfigError(f"{source}: road.removal = {name!r} {what}; ROAD imputes removed "
                          "features from the kept ones: name a sampled removal "
                          "(conditional_gaussian, conditional_mean, conditional_knn or your own "
                          "SampledRemoval).")
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


def check_reference(source: str, key: str, value: str) -> None:
    """A pairs' reference of ``insdel sanity`` / ``insdel tune``: ``training_mean`` or a policy
    spec that loads (the loader's own message says what is wrong)."""
    if value == "training_mean":
        return
    from .. import policies

    try:
        policies.load(value)
    except Exception as exc:  # the policy loader's own message says what is wrong
        raise ConfigError(f"{source}: {key} must be 'training_mean' or a policy spec; "
                          f"{value!r}: {exc}") from None


def check_sanity(cfg: dict, source: str) -> None:
    """``[sanity]`` and ``[meta]`` of ``insdel sanity``: the orders, similarity measures and
    reliability tests are known names (``sanity.orders`` may be empty: no parameter
    randomisation), a ``[sanity]`` table runs something, the reference is ``training_mean`` or a
    policy spec, the layers are names (checked against the model when it is built), the metrics
    are registered ones that need no ground truth and the reliability compares at least two
    methods; the numbers' ranges are the schema's. Whether the model can be randomised or
    refitted is known once it is loaded (:func:`insdel.runner.run_sanity`)."""
    from .. import metrics as _metrics
    from ..sanity import ADVERSARIAL_TESTS, RESILIENCE_TESTS, SIMILARITIES
    from ..sanity.randomisation import LAYER_ORDERS

    s, m = cfg["sanity"], cfg["meta"]
    given = set(cfg.get("sections", ()))
    if "sanity" in given and not s["orders"] and not s["data_randomisation"] \
            and "meta" not in given:
        raise ConfigError(f"{source}: [sanity] runs nothing: sanity.orders is empty (no "
                          "parameter randomisation), sanity.data_randomisation is false and "
                          "there is no [meta] table; name an order (" + ", ".join(LAYER_ORDERS)
                          + "), set data_randomisation = true or add [meta].")
    _check_distinct(source, "sanity.orders", s["orders"], LAYER_ORDERS)
    if not s["similarity"]:
        raise ConfigError(f"{source}: sanity.similarity must name at least one of "
                          f"{', '.join(SIMILARITIES)}.")
    _check_distinct(source, "sanity.similarity", s["similarity"], SIMILARITIES)
    if not all(isinstance(v, str) for v in s["layers"]) or len(set(s["layers"])) != len(
            s["layers"]):
        raise ConfigError(f"{source}: sanity.layers must be distinct layer names (empty: every "
                          f"randomisable layer); got {list(s['layers'])!r}.")
    check_reference(source, "sanity.reference", s["reference"])
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
    from ..distributed import BACKENDS

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


def _check_values(cfg: dict, source: str, check_tables=None) -> None:
    """Every table's values; ``check_tables(cfg, source)`` checks the commands' own tables
    (:func:`insdel.config.commands.check_tables`, which sits above this module)."""
    # numbers were checked against their leaf's range when read (_check_leaf)
    _check_device(source, cfg["compute"]["device"])
    _check_compute(source, cfg["compute"])
    from ..tracing import ORDERS

    _check_ordering(source, "evaluation.order", cfg["evaluation"]["order"], allowed=ORDERS,
                    ranking=None)
    if check_tables is not None:  # the commands' own tables ([roar], [road], [sanity], ...)
        if check_tables(cfg, source) is False:
            return  # a command that reads no model, data, methods or policies (forecast)
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
    _check_interactions(cfg, source)
    if not cfg["policies"]:
        raise ConfigError(f"{source}: policies must name at least one policy ([[policies]]).")
    for i, p in enumerate(cfg["policies"]):
        _check_label(source, i, p)
    labels = [policy_label(p) for p in cfg["policies"]]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"{source}: two policies share the label; give each a distinct 'label' "
                          f"({labels}).")
    m = cfg["model"]
    if m["kind"] == "gradient_boosting" and (m["preset"] is not None or m["path"] is not None):
        raise ConfigError(f"{source}: model.kind = 'gradient_boosting' trains scikit-learn's "
                          "HistGradientBoostingRegressor from model.params; remove "
                          + ("model.preset" if m["preset"] is not None else "model.path") + ".")
    if m["kind"] == "gradient_boosting" and m["params"] is None:
        m["params"] = {}  # the ensemble's defaults (insdel.models.GRADIENT_BOOSTING_DEFAULTS)
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
    _check_outputs(cfg, source)
    _check_policies(cfg, source)


def _check_interactions(cfg: dict, source: str) -> None:
    """``[interactions]``: a known index (did-you-mean), and SV / BV only at order 1."""
    from ..interactions.indices import check_index

    t = cfg.get("interactions")
    if not t:
        return
    try:
        spec = check_index(t["index"], "interactions.index")
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{source}: {err}") from None
    if spec.fixed_order is not None and t["order"] not in (None, spec.fixed_order):
        raise ConfigError(f"{source}: interactions.order = {t['order']}: index {spec.name!r} "
                          f"has order {spec.fixed_order} (use 'SII' or 'BII' for higher orders).")


#: Reserved folders of a run's output (a policy folder there would be deleted with them or lose
#: its files to the run's own).
_RESERVED_LABELS = ("checkpoints",)


def _check_label(source: str, i: int, entry: Mapping) -> None:
    """A policy's label names its output folder: a plain folder name, never a path."""
    from .._checkpoint import is_plain_folder_name

    label = policy_label(entry)
    if "label" in entry and entry["label"] is not None and not entry["label"]:
        raise ConfigError(f"{source}: policies[{i}].label is empty; give a name or remove it.")
    if not is_plain_folder_name(label) or label in _RESERVED_LABELS:
        raise ConfigError(f"{source}: policies[{i}].label: {label!r} names the policy's output "
                          "folder: it must be a plain folder name (no '/', '\\', not '.', "
                          f"'..' or {', '.join(map(repr, _RESERVED_LABELS))}).")


def _check_free(where: str, given: Mapping, valid, source: str) -> None:
    """Keys of a free-form table (recipe options, policy or model parameters) against ``valid``."""
    check_options(source, given, valid, noun="key", prefix=f"{where}.", error=UnknownKeyError)


def _check_data(cfg: dict, source: str) -> None:
    """``data.recipe`` / ``data.real_recipe`` exist; their options are options the recipe takes."""
    from .. import datasets

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
    from .. import models
    from ..game import ENGINES

    m = cfg["model"]
    if m["kind"] not in ("mlp", "gradient_boosting"):
        raise ConfigError(f"{source}: model.kind: {m['kind']!r} is not 'mlp' (the default: a "
                          "preset, params or path) or 'gradient_boosting'.")
    if m["engine"] not in ENGINES:
        raise ConfigError(f"{source}: model.engine: {m['engine']!r} is not one of "
                          f"{', '.join(ENGINES)} (auto: the exact tree game when the model is a "
                          "tree ensemble insdel reads).")
    if m["kind"] == "gradient_boosting":
        _check_free("model.params", m["params"] or {}, list(models.GRADIENT_BOOSTING_DEFAULTS),
                    source)
        try:
            models.gradient_boosting_params(m["params"] or {})
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: model.params: {exc}") from None
        return
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


def _check_outputs(cfg: dict, source: str) -> None:
    """``model.outputs`` (H) needs a model file (a trained preset has one output) and a run of
    the stages a multi-output run has (attributions, curves under each removal, ABCs, metrics
    and the decomposition per output, docs/multi_output.md);
    ``model.output_weights`` needs ``model.outputs`` and H valid weights."""
    from ..multi_output import check_output_weights

    m = cfg["model"]
    H = m["outputs"]
    if H is not None:
        if m["path"] is None:
            raise ConfigError(f"{source}: model.outputs = {H}: a model with several outputs comes "
                              "from a model file (model.path); a preset or params model has one "
                              "output.")
        if (cfg.get("interactions") or {}).get("n_pairs"):
            raise ConfigError(
                f"{source}: interactions.n_pairs: a run with model.outputs = {H} computes "
                "attributions, curves under each removal, ABCs, metrics and the exact "
                "decomposition per output, not this (the [interactions] stage explains one "
                "output; give the model's outputs one at a time (insdel.multi_output.per_output "
                "in the Python API), or remove the key).")
    if m["output_weights"] is not None:
        if H is None:
            raise ConfigError(f"{source}: model.output_weights weighs the outputs of a model with "
                              "several outputs; give model.outputs (H) too.")
        try:
            check_output_weights(m["output_weights"], H)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: model.{exc}") from None


def _check_policies(cfg: dict, source: str) -> None:
    """Each ``[[policies]]`` spec exists and its ``params`` are parameters of its policy."""
    from .. import policies

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
        check_options(source, opts, options_of(m), noun="key", prefix=f"{table}.options.{m}.",
                      error=UnknownKeyError)
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
    from .. import metrics

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
    from .. import attribution

    accepted = attribution.options_of(name)
    return "data" in accepted and "outcome" in accepted


def _method_options(name: str) -> dict:
    """The options method ``name`` takes from a configuration (the run-given ones excepted)."""
    from .. import attribution

    opts = {k: v for k, v in attribution.options_of(name).items() if k != "engine"}
    if observational_method(name):
        opts = {k: v for k, v in opts.items() if k not in RUN_GIVEN_METHOD_OPTIONS}
    return opts


def _check_backend(cfg: dict, source: str) -> None:
    """``methods.options.<name>.engine`` and ``.backend``. ``engine = "insdel"`` / ``"captum"``
    (the implementation's old key) becomes ``backend`` (the option that takes them); another
    ``engine`` is refused: the game's engine of every stage, attributions included, is
    ``[model] engine``. ``backend`` is one of insdel's and captum's, on a method that has both."""
    from ..attribution.base import BACKENDS

    for m, opts in cfg["methods"]["options"].items():
        if not isinstance(opts, dict):
            continue
        if "engine" in opts:
            value = opts["engine"]
            if value not in BACKENDS:
                raise ConfigError(f"{source}: methods.options.{m}.engine = {value!r}: the game's "
                                  "engine (auto, tree, black_box) of the curves and the "
                                  "attributions is one key, [model] engine; remove this one.")
            if "backend" in opts:
                raise ConfigError(f"{source}: methods.options.{m}: engine = {value!r} and "
                                  f"backend = {opts['backend']!r} both choose the implementation; "
                                  "keep backend.")
            opts["backend"] = opts.pop("engine")  # the implementation's key is backend
        if "backend" in opts and opts["backend"] not in BACKENDS:
            raise ConfigError(f"{source}: methods.options.{m}.backend: {opts['backend']!r} is "
                              f"not one of {', '.join(BACKENDS)} (insdel's implementation or "
                              "captum's).")


def _check_methods(cfg: dict, source: str) -> None:
    """Method names exist; ``methods.options.<name>.<key>`` are options that method takes (not
    the data and outcome the run gives the cohort methods)."""
    from .. import attribution
    from .._validation import check_scalar

    known = attribution.available()
    _check_known(source, "methods", "attribution method", known, cfg)
    _check_backend(cfg, source)
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
                check_scalar(opts["seed"], f"methods.options.{m}.seed", int, min_val=0)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"{source}: {exc}") from None
    adjust = cfg["verdicts"]["adjust"]
    if adjust not in ("holm", "maxt"):  # "none" would print unadjusted orderings as verdicts
        raise ConfigError(f"{source}: verdicts.adjust must be 'holm' or 'maxt'; got {adjust!r}"
                          f"{_suggest(str(adjust), ('holm', 'maxt'))}")
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


#: ``removal.attributions``: which attributions a removal's curves score. ``baseline``: one set,
#: computed for the pairs' reference r, scored under every removal; ``per_removal``: each
#: removal's own, computed under its game (``insdel.attribute(..., removal=)``).
REMOVAL_ATTRIBUTIONS = ("baseline", "per_removal")


def removal_options(name: str) -> dict:
    """The options removal ``name`` takes from a configuration (``[removal.<name>]``): those of
    :func:`insdel.removal.options_of` less the training rows the run gives
    (:data:`RUN_GIVEN_REMOVAL_OPTIONS`)."""
    from .. import removal

    return {k: v for k, v in removal.options_of(name).items()
            if k not in RUN_GIVEN_REMOVAL_OPTIONS}


def _check_removal_name(source: str, where: str, name) -> None:
    """``name`` (read at ``where``) is a registered removal; the error names the closest."""
    from .. import removal

    known = removal.available()
    if name not in known:
        raise ConfigError(f"{source}: {where}: unknown removal {name!r}"
                          f"{_suggest(str(name), known)} (known: {', '.join(known)}).")


def _check_removal_options(source: str, where: str, name: str, opts: Mapping) -> None:
    """The options table ``where`` of removal ``name``: only options it takes, and none of the
    rows the run gives it (:data:`RUN_GIVEN_REMOVAL_OPTIONS`)."""
    valid = removal_options(name)
    for k in opts:
        if k in RUN_GIVEN_REMOVAL_OPTIONS:
            raise ConfigError(f"{source}: {where}.{k}: the run gives {name} its training rows "
                              "(the data set's X_train); remove the key.")
    check_options(source, opts, valid, noun="key", prefix=f"{where}.", error=UnknownKeyError)


def _check_removal(cfg: dict, source: str) -> None:
    """``[removal]``: ``kinds`` is a non-empty list of distinct registered removals (the first is
    the primary one); each ``[removal.<name>]`` table names a registered removal and holds only
    options it takes (the training rows excepted: the run gives them). Option values are checked
    by building the removal where it needs no training rows (else when the run builds it)."""
    from .. import removal

    r = cfg["removal"]
    kinds = r["kinds"]
    if not kinds:
        raise ConfigError(f"{source}: removal.kinds must name at least one removal (default "
                          '["baseline"]).')
    for k in kinds:
        if not isinstance(k, str):
            raise ConfigError(f"{source}: removal.kinds must be a list of removal names; got "
                              f"{k!r} in {kinds!r}.")
        _check_removal_name(source, "removal.kinds", k)
        from .._checkpoint import is_plain_folder_name

        if not is_plain_folder_name(k):  # it names the folder removal-<name>
            raise ConfigError(f"{source}: removal.kinds: {k!r} names the folder removal-{k}: "
                              "it must be a plain folder name (no '/', '\\').")
    if len(set(kinds)) != len(kinds):
        raise ConfigError(f"{source}: removal.kinds names a removal twice: {list(kinds)}.")
    if r["attributions"] not in REMOVAL_ATTRIBUTIONS:
        raise ConfigError(f"{source}: removal.attributions: unknown value {r['attributions']!r}"
                          f"{_suggest(str(r['attributions']), list(REMOVAL_ATTRIBUTIONS))} "
                          f"(one of: {', '.join(REMOVAL_ATTRIBUTIONS)}).")
    for name, opts in r.items():
        if name in ("kinds", "n_random", "attributions"):
            continue
        _check_removal_name(source, f"[removal.{name}]", name)
        _check_removal_options(source, f"removal.{name}", name, opts)
        try:
            removal.build(name, **dict(opts))
        except removal.MissingDataError:
            pass  # fitted on the run's rows: its other options are checked when the run builds it
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: removal.{name}: {exc}") from None


#: The keys of a removal in a configuration: ``{name, options}``.
REMOVAL_SPEC_KEYS = ("name", "options")


#: The commands' tables that configure one removal (``<table>.removal``).
_REMOVAL_TABLES = ("roar", "road")


def _deprecated(source: str, old: str, new: str) -> None:
    """An old spelling of a removal: a ``DeprecationWarning`` and one plain line on stderr, each
    naming the new key."""
    import sys
    import warnings

    msg = (f"{source}: {old} is deprecated: write {new} (docs/experiments.md, *One shape for a "
           "removal*).")
    warnings.warn(msg, DeprecationWarning, stacklevel=4)
    print(f"note: {msg}", file=sys.stderr, flush=True)


def _removal_spec(value, where: str, source: str) -> tuple:
    """(name, options) of a removal given as ``{name, options}``; either may be absent (None)."""
    _check_free(where, value, REMOVAL_SPEC_KEYS, source)
    name, options = value.get("name"), value.get("options")
    if name is not None and not isinstance(name, str):
        raise ConfigError(f"{source}: {where}.name must be a removal's name; got {name!r}.")
    if options is not None and not isinstance(options, Mapping):
        raise ConfigError(f"{source}: {where}.options must be a table of the removal's options; "
                          f"got {options!r}.")
    if isinstance(name, str) and options is not None:
        # checked here, under the key the user wrote, before the options move to the internal form
        _check_removal_name(source, f"{where}.name", name)
        _check_removal_options(source, f"{where}.options", name, options)
    return name, options


def normalize_removals(layer: dict, prefix: str, source: str) -> None:
    """Read every removal of one layer of a configuration (the file's top level, its ``[quick]``
    table or the overrides) in its one shape, ``{name, options}``, in place.

    ``roar.removal`` / ``road.removal`` is a name or a table ``{name, options}``; each entry of
    ``removal.kinds`` is a name or a table ``{name, options}``. The loaded configuration records
    them in one internal form (``<table>.removal`` the name, ``<table>.removal_options`` the options;
    ``removal.kinds`` the names, ``removal.<name>`` the options), so a run's manifest and its
    fingerprint do not depend on the spelling. The older spellings (``<table>.removal_options``,
    ``[removal.<name>]`` tables) keep working, each with a deprecation message naming the new
    key."""
    for t in _REMOVAL_TABLES:
        tab = layer.get(t)
        if not isinstance(tab, Mapping):
            continue
        where = f"{prefix}{t}.removal"
        if isinstance(tab.get("removal"), Mapping):
            if "removal_options" in tab:
                raise ConfigError(f"{source}: {where}.options and {prefix}{t}.removal_options "
                                  f"both give the removal's options; keep {where}.options.")
            name, options = _removal_spec(tab["removal"], where, source)
            del tab["removal"]
            if name is not None:
                tab["removal"] = name
            if options is not None:
                tab["removal_options"] = dict(options)
        elif "removal_options" in tab:
            _deprecated(source, f"{prefix}{t}.removal_options",
                        f"{where} = {{name = ..., options = {{...}}}} (or [{where}] with name "
                        f"and [{where}.options])")
    r = layer.get("removal")
    if not isinstance(r, Mapping):
        return
    kinds = r.get("kinds")
    given = []  # the removals whose options the kinds entries give
    if isinstance(kinds, list):
        for i, entry in enumerate(kinds):
            if not isinstance(entry, Mapping):
                continue
            name, options = _removal_spec(entry, f"{prefix}removal.kinds[{i}]", source)
            if name is None:
                raise ConfigError(f"{source}: {prefix}removal.kinds[{i}] needs a name.")
            if options is not None:
                if isinstance(r.get(name), Mapping):
                    raise ConfigError(f"{source}: {prefix}removal.kinds[{i}].options and "
                                      f"[{prefix}removal.{name}] both give {name}'s options; "
                                      f"keep {prefix}removal.kinds[{i}].options.")
                r[name] = dict(options)
                given.append(name)
            kinds[i] = name
    for name, value in r.items():
        if isinstance(value, Mapping) and name not in given:
            _deprecated(source, f"[{prefix}removal.{name}]",
                        f'{prefix}removal.kinds = [..., {{name = "{name}", options = {{...}}}}]')
