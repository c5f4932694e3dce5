"""The commands (verbs) of insdel, each one declared spec (CONTRIBUTING.md, *Adding a command*).

A :class:`Command` says everything the rest of insdel needs to know about a verb: its name (the
``insdel NAME`` sub-command and the kind of output folder it writes), the configuration tables
it owns with their schema, the other tables it reads, the check of its tables' values, the
function that runs it, the data files it writes and the shipped experiments ``insdel reproduce``
runs with it. The command line (:mod:`insdel.cli`: sub-commands, ``reproduce``), the
configuration checker (:func:`check_sections`, :func:`check_tables`), the tables' schema
(:data:`insdel.config.SCHEMA`) and the output folder's kinds
(:func:`insdel.runner.provenance.kinds`) all read this registry, so a new verb is one spec here
(or one :func:`register` call), one runner module and, if it ships an experiment, its TOML.

Registry verbs (CONTRIBUTING.md): :func:`available`, :func:`get`, :func:`options_of`,
:func:`register`, :func:`unregister`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._registry import Registry, signature_options
from .schema import (
    _BOOL,
    _INT,
    _LIST,
    _NUM,
    _STR,
    DEFAULTS,
    PAPER_CONFIGS,
    SCHEMA,
    ConfigError,
    _at_least,
    _defaults,
)
from .sections import _check_road, _check_roar, check_reference, check_sanity

__all__ = ["Command", "COMMON_TABLES", "available", "get", "options_of", "register", "unregister",
           "ordered", "check_sections", "check_tables", "owner", "reproducible", "ROAR_SECTIONS",
           "ROAD_SECTIONS", "SANITY_SECTIONS", "TUNE_SCHEMA"]

#: The top-level keys every command that trains or loads a model reads besides its own tables.
COMMON_TABLES = ("name", "description", "seed", "out", "data", "model", "methods", "compute")


@dataclass(frozen=True)
class Command:
    """One verb of insdel, declared once.

    Attributes
    ----------
    name : str
        The sub-command (``insdel NAME CONFIG``) and the kind of output folder it writes.
    title : str
        What a configuration of it is called in messages ("ROAR", "sanity-check").
    help, description : str
        The sub-command's one-line help and its ``--help`` text.
    run : str or callable
        ``run(config, out, *, progress, verbose, wait)`` returning a result with ``out`` and
        ``to_markdown()`` (and optionally ``figure`` / ``figures``); a ``"module:function"``
        string is imported when the command runs (the runner sits above the configuration).
    tables : mapping
        The tables it owns: table name -> its schema (leaves as in :data:`insdel.config.SCHEMA`).
        Registering the command adds them to the schema; ``insdel run`` refuses them.
    reads : tuple of str
        The other top-level keys it reads (default :data:`COMMON_TABLES`); any other table given
        is refused.
    needs : tuple of str, optional
        Tables of which a configuration needs at least one (default: every table of ``tables``).
    check : callable, optional
        ``check(cfg, source)`` of the tables' values, run by :func:`insdel.config.load` whenever
        one of ``tables`` is given; raises :class:`insdel.config.ConfigError` naming the key.
    outputs : tuple of str
        Its data files: printed after the run (those that exist).
    experiments : mapping
        ``insdel reproduce`` name -> (shipped configuration, one-line description).
    serial : bool
        It runs on this machine only: the command line offers no ``--scheduler``.
    notes : callable, optional
        ``notes(result) -> list[str]``: lines printed after its tables (before the files).
    """

    name: str
    title: str
    help: str
    description: str
    run: str | Callable[..., Any]
    tables: Mapping[str, Mapping] = field(default_factory=dict)
    reads: tuple[str, ...] = COMMON_TABLES
    needs: tuple[str, ...] | None = None
    check: Callable[[dict, str], None] | None = None
    outputs: tuple[str, ...] = ()
    experiments: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    serial: bool = False
    notes: Callable[[Any], list[str]] | None = None

    @property
    def sections(self) -> tuple[str, ...]:
        """Every top-level key a configuration of this command may give."""
        return tuple(self.reads) + tuple(self.tables)

    @property
    def needed(self) -> tuple[str, ...]:
        """The tables of which a configuration needs at least one."""
        return tuple(self.needs if self.needs is not None else self.tables)

    def runner(self) -> Callable[..., Any]:
        """The function that runs the command (``run``, imported when it is a string)."""
        if callable(self.run):
            return self.run
        module, _, attr = str(self.run).partition(":")
        return getattr(importlib.import_module(module), attr)


def _check_command(name: str, cmd: Any) -> None:
    if not isinstance(cmd, Command):
        raise TypeError(f"a command is an insdel.config.Command; got {type(cmd).__name__}.")
    if cmd.name != name:
        raise TypeError(f"the command {cmd.name!r} registered as {name!r}: give it its own name.")
    taken = {t: c.name for c in _REGISTRY.entries.values() if c.name != name for t in c.tables}
    for t in cmd.tables:
        if t in taken or (t in SCHEMA and t not in _BUILTIN_TABLES):
            raise ValueError(f"command {name!r}: the table [{t}] is already "
                             + (f"command {taken[t]!r}'s." if t in taken else
                                "a table of every run; name its own table."))
    for e, (stem, _) in cmd.experiments.items():
        if PAPER_CONFIGS.get(e, stem) != stem:
            raise ValueError(f"command {name!r}: insdel reproduce {e} already runs "
                             f"{PAPER_CONFIGS[e]!r}.")


_REGISTRY = Registry("command", check=_check_command)

#: The tables of the built-in commands, declared in :data:`insdel.config.SCHEMA`.
_BUILTIN_TABLES = ("roar", "road", "sanity", "meta")


def available() -> list[str]:
    """The registered commands, sorted."""
    return _REGISTRY.available()


def ordered() -> list[str]:
    """The registered commands in the order they were registered (the command line's)."""
    return list(_REGISTRY.entries)


def get(name: str) -> Command:
    """The :class:`Command` registered as ``name`` (an :class:`insdel.UnknownNameError` names
    the closest)."""
    return _REGISTRY.get(name)


def options_of(name: str) -> dict[str, Any]:
    """The options of command ``name``'s runner besides the configuration and the output folder
    (``quick``, ``progress``, ``verbose``, ``wait``, ...), with their defaults."""
    return signature_options(get(name).runner(), skip=("config", "out"), keyword_only=True)


def register(command: Command, *, overwrite: bool = False) -> Command:
    """Register ``command``: its tables join the schema (with their defaults), its experiments
    ``insdel reproduce``'s table, and the command line offers ``insdel NAME`` from then on.

    Raises
    ------
    TypeError
        ``command`` is not a :class:`Command`.
    ValueError
        The name is a built-in one or taken (without ``overwrite``), a table is another
        command's or a table of every run, or a ``reproduce`` name runs another configuration.
    """
    if not isinstance(command, Command):
        raise TypeError(f"a command is an insdel.config.Command; got {type(command).__name__}.")
    _REGISTRY.register(command.name, command, overwrite=overwrite)
    for table, schema in command.tables.items():
        if SCHEMA.get(table) is not schema:
            SCHEMA[table] = schema
            DEFAULTS[table] = _defaults(schema)
    for e, (stem, _) in command.experiments.items():
        PAPER_CONFIGS[e] = stem
    return command


def unregister(name: str) -> None:
    """Remove the user command ``name``, its tables and its experiments (built-ins stay)."""
    cmd = _REGISTRY.get(name)
    _REGISTRY.unregister(name)
    for table in cmd.tables:
        SCHEMA.pop(table, None)
        DEFAULTS.pop(table, None)
    for e in cmd.experiments:
        PAPER_CONFIGS.pop(e, None)


def owner(cfg: Mapping) -> Command:
    """The command a loaded configuration is for: the one whose tables it gives, else ``run``."""
    given = set(cfg.get("sections", ()))
    for name in available():
        cmd = get(name)
        if given & set(cmd.tables):
            return cmd
    return get("run")


def reproducible() -> dict[str, str]:
    """``insdel reproduce`` name -> its description, every registered command's, in the order
    they were registered."""
    return {e: desc for cmd in _REGISTRY.entries.values()
            for e, (_, desc) in cmd.experiments.items()}


def check_tables(cfg: dict, source: str) -> bool:
    """Run each command's check on the tables a configuration gives (the tables' values).
    Returns False when those tables are a command's that reads no model (``"model"`` not in its
    :attr:`Command.reads`, e.g. ``forecast``, which trains its own): the run's model, data,
    methods and policies are then not checked (that command refuses those tables)."""
    given = set(cfg.get("sections", ()))
    reads_model = True
    for name in available():
        cmd = get(name)
        if given & set(cmd.tables):
            if cmd.check is not None:
                cmd.check(cfg, source)
            if "model" not in cmd.reads:
                reads_model = False
    return reads_model


def check_sections(cfg: Mapping, command: str) -> None:
    """Refuse a configuration whose tables ``command`` would not read: a command needs one of
    its own tables and reads only :attr:`Command.sections`; ``insdel run`` refuses every other
    command's tables."""
    given = set(cfg.get("sections", ()))
    cmd = get(command)
    if (cfg.get("model") or {}).get("outputs") is not None and command != "run":
        raise ConfigError(f"{cfg['source']}: model.outputs: a model with several outputs is "
                          f"tested by `insdel run` (`insdel forecast` reads forecast.model and "
                          f"forecast.horizon), not by `insdel {command}`; remove model.outputs "
                          "(or run it with `insdel run`).")
    if command != "run":
        tables = cmd.needed
        if not given & set(tables):
            raise ConfigError(f"{cfg['source']}: `insdel {command}` needs a "
                              + " or a ".join(f"[{t}]" for t in tables)
                              + f" table (see docs/{command}.md); this configuration has none.")
        extra = sorted(given - set(cmd.sections))
        if extra:
            raise ConfigError(f"{cfg['source']}: {', '.join(extra)}: not read by `insdel "
                              f"{command}` (it reads {', '.join(cmd.sections)}); remove them.")
        return
    for name in available():
        other = get(name)
        for table in other.tables:
            if table in given:
                raise ConfigError(f"{cfg['source']}: this is a {other.title} configuration "
                                  f"([{table}] table): run it with `insdel {name}`, not "
                                  "`insdel run`.")


def _sanity_notes(res) -> list[str]:
    lines = []
    if res.results:
        lines.append(f"methods failing a randomisation check: {', '.join(res.flagged) or 'none'}")
    lines.append(f"compute: {res.manifest['compute']['seconds_total']:.1f} s")
    return lines


#: ``[tune]``: honest tuning of the methods' settings (``insdel tune``, :mod:`insdel.tuning`,
#: docs/tuning.md): optuna on the tuning pairs, the ABC reported on the held-out pairs.
TUNE_SCHEMA: dict[str, Any] = {
    "methods": (_LIST, []),
    "n_trials": (_INT, 20, _at_least(1)),
    "tune_fraction": (_NUM, 0.5, {"min_val": 0.0, "max_val": 1.0,
                                  "include_boundaries": "neither", "finite": True}),
    "mode": (_STR, "insertion"),
    "n_targets": (_INT, 200, _at_least(4)),
    "reference": (_STR, "training_mean"),
}


def _check_tune(cfg: dict, source: str) -> None:
    """``[tune]``: the methods have a search space and are among ``methods.names`` (empty: every
    method of ``methods.names`` that has one), the mode is an ABC, the reference is
    ``training_mean`` or a policy spec."""
    from ..tuning import SPACES

    t = cfg["tune"]
    names = list(cfg["methods"]["names"])
    for m in t["methods"]:
        if m not in SPACES:
            raise ConfigError(f"{source}: tune.methods: {m!r} has no settings to tune; methods "
                              f"with a search space: {', '.join(sorted(SPACES))}.")
        if m not in names:
            raise ConfigError(f"{source}: tune.methods: {m!r} is not in methods.names (its "
                              "default options come from there); add it.")
    if not t["methods"] and not any(m in SPACES for m in names):
        raise ConfigError(f"{source}: [tune] has nothing to tune: no method of methods.names "
                          f"has a search space ({', '.join(sorted(SPACES))}).")
    if t["mode"] not in ("insertion", "deletion", "total"):
        raise ConfigError(f"{source}: tune.mode must be 'insertion', 'deletion' or 'total'; "
                          f"got {t['mode']!r}.")
    check_reference(source, "tune.reference", t["reference"])


def _tune_notes(res) -> list[str]:
    return ["optimism (tuning minus held-out ABC; of the gain over the defaults), per method: "
            + ", ".join(f"{r.method} {r.optimism[0]:+.4f} ± {r.optimism[1]:.4f} "
                        f"({r.gain_optimism[0]:+.4f} ± {r.gain_optimism[1]:.4f})"
                        for r in res.results),
            "held-out gain of at least one standard error: "
            + (", ".join(r.method for r in res.results if r.gain[1] > 0
                         and r.gain[0] >= r.gain[1]) or "none")]


#: ``[forecast]``: ``insdel forecast`` (docs/multi_output.md): a forecaster with H outputs.
FORECAST_SCHEMA: dict[str, Any] = {
    "data": (_STR, ""),  # "": the simulator; else a .npy of series or a CSV
    "n_series": (_INT, 200, _at_least(1)),
    "steps": (_INT, 120, _at_least(2)),
    "channels": (_INT, 3, _at_least(2)),
    "lead": (_INT, 3, _at_least(1)),
    "period": (_INT, 12, _at_least(1)),
    "length": (_INT, 12, _at_least(1)),
    "horizon": (_INT, 4, _at_least(1)),
    "stride": (_INT, 2, _at_least(1)),
    "lag_block": (_INT, 3, _at_least(1)),
    "hidden": (_INT, 32, _at_least(1)),
    "epochs": (_INT, 20, _at_least(1)),
    "n_pairs": (_INT, 100, _at_least(2)),
    "n_random": (_INT, 10, _at_least(0)),
    "reference": (_STR, "series_mean"),
    "discount": (_NUM, 1.0, {"min_val": 0.0, "finite": True}),
    "model": (_STR, ""),  # "": train the MLP; else a model file (insdel.model_files.load_any)
    "trust": (_BOOL, False),
}


def _check_forecast(cfg, source):
    f = cfg["forecast"]
    if f["length"] % f["lag_block"]:
        raise ConfigError(f"{source}: forecast.lag_block = {f['lag_block']} does not partition "
                          f"the window's forecast.length = {f['length']} steps.")
    if not f["data"] and f["lead"] > f["length"]:
        raise ConfigError(f"{source}: forecast.lead = {f['lead']} is longer than the window "
                          f"(forecast.length = {f['length']}): the lead cannot be found.")


for _cmd in (
    Command(
        name="run", title="insertion/deletion",
        help="run an experiment described by a TOML file",
        description="Run an experiment (docs/experiments.md).",
        run="insdel.runner.experiment:run_experiment", reads=(),
        experiments={
            "paper-bangalore": ("paper_bangalore", "paper §5.1: Table 1 and Figures 4-6, "
                                "Bangalore housing prices (housing_sim, or --data "
                                "Bangalore.csv)"),
            "paper-bangalore-location": ("paper_bangalore_location", "paper §5.1 with Location "
                                         "kept as one one-hot feature group (beyond the paper, "
                                         "which drops it)"),
            "paper-cern": ("paper_cern", "paper §5.2: Tables 2-4 and Figures 7-12, CERN "
                           "dielectron events (dielectron_sim, or --data dielectron.csv)"),
            "paper-bangalore-removals": ("paper_bangalore_removals", "paper §5.1 under three "
                                         "removals (baseline, marginal, conditional_gaussian) "
                                         "and how alike they rank the methods (beyond the "
                                         "paper; --removal NAME,... for a subset)"),
            "paper-bangalore-trees": ("paper_bangalore_trees", "paper §5.1 with a "
                                      "gradient-boosted ensemble on the tree engine: Table 1 "
                                      "with tree_shap, exact at n = 38, under baseline, "
                                      "marginal and path_dependent removals (beyond the paper)"),
            "paper-cern-removals": ("paper_cern_removals", "paper §5.2 under three removals "
                                    "(baseline, marginal, conditional_gaussian) and how alike "
                                    "they rank the methods (beyond the paper; --removal "
                                    "NAME,... for a subset)"),
            "observational-bangalore": ("observational_bangalore", "beyond the paper: §5.1's "
                                        "methods plus cohort Shapley and IGCS on Bangalore "
                                        "housing, ABC under the paper's baseline removal beside "
                                        "the observational (cohort game) ABC and the Kendall "
                                        "tau between the two rankings"),
            "metrics-cern": ("metrics_cern", "beyond the paper: the faithfulness metrics of "
                             "insdel.metrics and their agreement (Kendall's tau) on "
                             "dielectron_sim"),
            "metrics-housing": ("metrics_housing", "beyond the paper: the faithfulness metrics "
                                "of insdel.metrics and their agreement (Kendall's tau) on "
                                "housing_sim"),
        }),
    Command(
        name="roar", title="ROAR", help="remove and retrain (paper section 6, Figure 13)",
        description="ROAR for regression (docs/roar.md): CONFIG is a TOML file with a [roar] "
                    "table, or a shipped one: paper_roar_bangalore, paper_roar_cern.",
        run="insdel.runner.roar:run_roar", tables={"roar": SCHEMA["roar"]}, check=_check_roar,
        outputs=("roar.csv", "roar_summary.csv", "summary.md", "manifest.json"),
        experiments={
            "paper-roar-bangalore": ("paper_roar_bangalore", "paper §6: Figure 13, remove and "
                                     "retrain (ROAR) on Bangalore housing"),
            "paper-roar-cern": ("paper_roar_cern", "paper §6: Figure 13, remove and retrain "
                                "(ROAR) on CERN dielectron events"),
        }),
    Command(
        name="road", title="ROAD",
        help="remove and debias: ROAD without retraining (docs/road.md)",
        description="ROAD for regression (docs/road.md): removed features imputed by a "
                    "conditional removal fitted on the training rows, MoRF / LeRF losses of the "
                    "same model, SRG and the leakage diagnostic. CONFIG is a TOML file with a "
                    "[road] table, or a shipped one: paper_road_bangalore.",
        run="insdel.runner.road:run_road", tables={"road": SCHEMA["road"]}, check=_check_road,
        outputs=("road.csv", "road_summary.csv", "leakage.csv", "summary.md", "manifest.json"),
        experiments={
            "paper-road-bangalore": ("paper_road_bangalore", "beyond the paper: ROAD, remove and "
                                     "debias without retraining (a conditional imputation, SRG, "
                                     "leakage), on Bangalore housing beside §6's Figure 13"),
        }),
    Command(
        name="sanity", title="sanity-check",
        help="sanity checks of the methods and the reliability of the metrics (docs/sanity.md)",
        description="Model parameter randomisation (MPRT / eMPRT), optionally data "
                    "randomisation, and MetaQuantus-style reliability of the metrics "
                    "(docs/sanity.md). CONFIG is a TOML file with a [sanity] table (and "
                    "optionally [meta]), or a shipped one: sanity_cern. It runs serially on this "
                    "machine (no Dask scheduler): its randomised models are deep copies of the "
                    "model.",
        run="insdel.runner.sanity:run_sanity",
        tables={"sanity": SCHEMA["sanity"], "meta": SCHEMA["meta"]}, check=check_sanity,
        outputs=("sanity.csv", "sanity_flags.csv", "reliability.csv", "reliability_tests.csv",
                 "summary.md", "manifest.json"),
        serial=True, notes=_sanity_notes,
        experiments={
            "sanity-cern": ("sanity_cern", "beyond the paper: sanity checks of the methods (model "
                            "parameter and data randomisation) and the reliability of the "
                            "metrics (MetaQuantus) on dielectron_sim"),
        }),
    Command(
        name="tune", title="tuning",
        help="tune the methods' settings on tuning pairs, report them on held-out pairs "
             "(docs/tuning.md)",
        description="Honest tuning (docs/tuning.md): optuna (TPE, seeded) chooses each method's "
                    "settings to maximise the mean ABC on tuning pairs; the tuned settings, the "
                    "ABC on held-out pairs and the optimism (tuning minus held-out) are reported; "
                    "the split (by unit) is recorded in the manifest. CONFIG is a TOML file with "
                    "a [tune] table, or a shipped one: tune_cern.",
        run="insdel.runner.tune:run_tune", tables={"tune": TUNE_SCHEMA}, check=_check_tune,
        outputs=("tune.csv", "tune_summary.csv", "trials.csv", "held_out_abc.parquet",
                 "summary.md", "manifest.json"),
        serial=True, notes=_tune_notes,
        experiments={
            "tune-cern": ("tune_cern", "beyond the paper: honest tuning of IG, Kernel SHAP, "
                          "LIME and DeepLIFT settings on dielectron_sim: tuned settings, "
                          "held-out ABC, gain over the defaults and the optimism"),
        }),
    Command(
        name="forecast", title="forecast",
        help="insertion/deletion for a forecaster with H outputs over lag x channel blocks",
        description="A torch forecaster with H outputs on windowed series (the simulator, a "
                    ".npy of series or a CSV; docs/multi_output.md): the methods' ABC per "
                    "horizon, the curves over lag x channel blocks, the heat maps and the "
                    "leading-covariate check. CONFIG is a TOML file with a [forecast] table, or "
                    "a shipped one: forecast_sim.",
        run="insdel.runner.forecast:run_forecast", tables={"forecast": FORECAST_SCHEMA},
        reads=("name", "description", "seed", "out", "compute"), check=_check_forecast,
        outputs=("abc_by_horizon.csv", "lead.json", "summary.md", "manifest.json"),
        serial=True,
        experiments={
            "forecast-sim": ("forecast_sim", "beyond the paper: a forecaster with H outputs on "
                             "simulated series with a covariate leading the target by a known "
                             "lag; ABC per horizon over lag x channel blocks"),
        }),
):
    register(_cmd)
_REGISTRY.protected.update(_REGISTRY.entries)

#: Top-level keys `insdel roar` reads; `insdel run` reads every other one and not ``roar``.
ROAR_SECTIONS = get("roar").sections

#: Top-level keys `insdel road` reads; `insdel run` refuses a ``[road]`` table.
ROAD_SECTIONS = get("road").sections

#: Top-level keys `insdel sanity` reads; `insdel run`, `roar` and `road` refuse ``[sanity]`` and
#: ``[meta]``.
SANITY_SECTIONS = get("sanity").sections
