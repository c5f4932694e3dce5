"""Command-line interface: ``insdel demo | run | reproduce | roar | road | sanity | tune |
configs | datasets | policies | functional | leaderboard | report | plan``.

The commands that run a configuration other than ``insdel run`` (``roar``, ``road``, ``sanity``
and any registered one) are read off their specs (:mod:`insdel.config.commands`): one
sub-command each, ``reproduce``'s experiments and how a run's files are printed. The modules it drives expose plain functions (the runner's
:func:`insdel.runner.run_experiment`, the text of :func:`insdel.datasets.format_list` and
:func:`insdel.policies.format_list` / :func:`insdel.policies.format_show`), so this module only
parses arguments and prints.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

#: What ``insdel reproduce paper-images`` reproduces; every other experiment's line is in its
#: command's spec (:func:`insdel.config.commands.reproducible`).
_PAPER_IMAGES = ("paper Figure 1 and Table 5's layout (Appendix A.1) on scikit-learn's 8 x 8 "
                 "digits with a small CNN")


def reproduces() -> dict[str, str]:
    """What each ``insdel reproduce`` experiment reproduces (its ``--help``), in the commands'
    order, ``paper-images`` after ``insdel run``'s."""
    from .config import commands

    described = commands.reproducible()
    out = {e: described[e] for e in commands.get("run").experiments}
    out["paper-images"] = _PAPER_IMAGES
    return {**out, **described}


REPRODUCES = reproduces()


class _Parser(argparse.ArgumentParser):
    """An argument parser whose every command and sub-command takes ``--debug``: the sub-parsers
    ``add_subparsers`` makes are of this class too."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # SUPPRESS: a sub-command's default must not undo `insdel --debug COMMAND`
        self.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                          help="show tracebacks instead of messages")


def _use_agg() -> None:
    import matplotlib

    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")


def _print_result(res) -> None:
    print(res.to_markdown())
    c = res.manifest["compute"]
    where = (f"Dask, {c['workers']} workers at {c['scheduler']}" if c.get("backend") == "dask"
             else "serial")
    print(f"compute: {c['seconds_total']:.1f} s ({where}), {c['model_evaluations_total']:,} model "
          f"evaluations (per stage: {res.out / 'manifest.json'})")
    print(f"results: {res.out}")
    kinds = list(res.config["removal"]["kinds"])
    if kinds != ["baseline"]:
        others = ", ".join(f"{k} in <policy>/removal-{k}/" for k in kinds[1:])
        print(f"removals: {kinds[0]} (primary)" + (f"; {others}" if others else "")
              + ("; robustness report: removal_robustness.md" if len(kinds) > 1 else ""))
    if res.figures:
        print(f"figures: {len(res.figures)} PNG files in {res.out / 'figures'}")


def _progress(args):
    return None if not args.no_progress else False


def _scheduler(value: str) -> dict:
    """The ``[compute]`` overrides of ``--scheduler``: ``serial``, ``local`` (a LocalCluster) or a
    scheduler address (``tcp://host:8786``)."""
    from .config import SCHEDULER_SCHEMES

    if value == "serial":
        return {"backend": "serial", "address": None, "n_workers": None,
                "threads_per_worker": None, "connect_timeout": None}
    if value == "local":
        return {"backend": "dask", "address": None}
    if value.startswith(SCHEDULER_SCHEMES):
        return {"backend": "dask", "address": value, "n_workers": None,
                "threads_per_worker": None}
    raise ValueError(f"--scheduler {value!r}: give 'local' (a Dask LocalCluster on this machine), "
                     "'serial', or a scheduler address such as tcp://host:8786.")


def _device(args, overrides: dict) -> dict:
    """Add ``--device``, ``--scheduler`` and ``--removal`` to the configuration overrides."""
    if getattr(args, "removal", None):
        overrides = {**overrides, "removal": {"kinds": list(args.removal)}}
    compute: dict = {}
    if getattr(args, "device", None):
        compute["device"] = args.device
    if getattr(args, "scheduler", None):
        compute.update(_scheduler(args.scheduler))
    if compute:
        overrides = {**overrides, "compute": compute}
    return overrides


def _cmd_run(args) -> int:
    from . import config
    from .runner import run_experiment

    _use_agg()
    model: dict = {}
    if getattr(args, "model", None) is not None:  # the user's file replaces the config's model
        model.update({"path": str(args.model), "preset": None, "params": None,
                      "max_epochs": None, "architecture": None})
    if getattr(args, "engine", None) is not None:
        model["engine"] = args.engine
    base = {"model": model} if model else {}
    cfg = config.load(args.config, quick=args.quick, overrides=_device(args, base) or None)
    if args.trust_model:  # model.trust is read only when the model is loaded from model.path
        if cfg["model"]["path"] is None:
            given = "preset" if cfg["model"]["preset"] is not None else "params"
            raise ValueError(f"--trust-model allows loading a pickle-based model file ([model] "
                             f"path), but {cfg['source']} has no model.path (its model comes from "
                             f"model.{given}), so the flag would not be read: leave it out.")
        cfg = config.load(args.config, quick=args.quick,
                          overrides=_device(args, {"model": {**model, "trust": True}}))
    res = run_experiment(cfg, args.out, verbose=True, progress=_progress(args), wait=args.wait)
    _print_result(res)
    return 0


def _cmd_reproduce(args) -> int:
    from . import config
    from .runner import run_experiment

    _use_agg()
    if args.experiment == "paper-images":
        from .paper_images import run_paper_images

        if args.data is not None:
            raise ValueError("paper-images uses scikit-learn's digits; it takes no --data.")
        for opt in ("scheduler", "device", "removal"):
            if getattr(args, opt, None):
                raise ValueError(f"paper-images runs serially on the CPU; it takes no --{opt}.")
        from .runner.provenance import lock_folder, unfinish

        out = Path(args.out or f"runs/paper-images{'-quick' if args.quick else ''}")
        out.mkdir(parents=True, exist_ok=True)
        lock = lock_folder(out, args.wait, kind="paper-images")  # two runs (other --seed) must not mix their files
        try:
            unfinish(out)  # a run stopped half-way leaves no earlier run's manifest
            res = run_paper_images(out, quick=args.quick,
                                   seed=args.seed if args.seed is not None else 0,
                                   progress=_progress(args))
        finally:
            lock.release()
        print(res.to_markdown())
        print(f"results: {res.out} (table5.csv, table5.md, rankings.csv, figure1.png, "
              "manifest.json)")
        return 0
    if args.seed is not None:
        raise ValueError("--seed applies to paper-images; set seed in the configuration of "
                         f"{args.experiment} instead.")
    name = config.PAPER_CONFIGS[args.experiment]
    cfg = config.load(name, quick=args.quick, overrides=_device(args, {}) or None)
    if args.data is not None:
        path = Path(args.data)
        if not path.is_file():
            raise FileNotFoundError(f"--data {args.data}: no such file.")
        real = cfg["data"].get("real_recipe")
        if not real:
            raise ValueError(f"{name}: the configuration names no real-data recipe.")
        # the simulator's options (n_events, ...) do not apply to the real data
        cfg["data"] = {**cfg["data"], "recipe": real,
                       "options": {**dict(cfg["data"].get("real_options") or {}),
                                   "path": str(path.resolve())}}
    out = args.out or f"runs/{args.experiment}{'-quick' if args.quick else ''}"
    cmd = config.commands.owner(cfg)
    if cmd.name != "run":
        return _run_command(cmd, cfg, out, args)
    res = run_experiment(cfg, out, verbose=True, progress=_progress(args), wait=args.wait)
    _print_result(res)
    return 0


def _command_config(args):
    """The configuration of ``insdel roar / road / sanity CONFIG`` (``--quick``, ``--device``),
    figures drawn off-screen."""
    from . import config

    _use_agg()
    return config.load(args.config, quick=args.quick, overrides=_device(args, {}) or None)


def _cmd_command(args) -> int:
    """``insdel NAME CONFIG`` of a registered command (``roar``, ``road``, ``sanity``, ...)."""
    from .config import commands

    return _run_command(commands.get(args.command), _command_config(args), args.out, args)


def _run_command(cmd, cfg, out, args) -> int:
    """Run command ``cmd`` (an :class:`insdel.config.Command`) on a loaded configuration; print
    its tables, its notes, the data files it wrote and its figures."""
    if getattr(args, "removal", None):
        raise ValueError(f"--removal applies to insertion/deletion runs; `insdel {cmd.name}` "
                         "configures its removal in its own table.")
    if cmd.serial and getattr(args, "scheduler", None) not in (None, "serial"):
        raise ValueError(f"--scheduler {args.scheduler}: `insdel {cmd.name}` runs serially on "
                         "this machine; leave the option out.")
    res = cmd.runner()(cfg, out, verbose=True, progress=_progress(args), wait=args.wait)
    print(res.to_markdown())
    for line in cmd.notes(res) if cmd.notes is not None else ():
        print(line)
    written = [n for n in cmd.outputs if (Path(res.out) / n).is_file()]
    print(f"results: {res.out}" + (f" ({', '.join(written)})" if written else ""))
    figures = getattr(res, "figures", None)
    if figures is None and getattr(res, "figure", None) is not None:
        figures = [res.figure]
    for fig in figures or ():
        print(f"figure: {fig}")
    return 0


def _cmd_demo(args) -> int:
    from .runner import run_experiment

    _use_agg()
    from . import config

    cfg = config.load("demo", overrides=_device(args, {}) or None)
    res = run_experiment(cfg, args.out, verbose=True, progress=_progress(args), wait=args.wait)
    _print_result(res)
    return 0


def _cmd_datasets_list(args) -> int:
    from . import datasets

    print(datasets.format_list())
    return 0


def _cmd_datasets_prepare(args) -> int:
    from . import datasets
    from ._validation import repeated

    twice = repeated(item.split("=", 1)[0].strip() for item in args.option or () if "=" in item)
    if twice:
        raise ValueError(f"--option {', '.join(twice)} given more than once; give each once.")
    options = datasets.parse_options(args.option)
    if args.path is not None:
        if "path" in options:
            raise ValueError("--path and --option path=... both name the file; give one.")
        options["path"] = args.path
    out = datasets.prepare(args.name, args.out, seed=args.seed, **options)
    meta = json.loads((out / "metadata.json").read_text())
    print(f"{args.name}: {meta['n_train']} train / {meta['n_test']} test rows, "
          f"{meta['n_features']} features ({sum(meta['binary_mask'])} binary) -> {out}")
    print(meta["description"])
    return 0


def _cmd_policies_list(args) -> int:
    from . import policies

    print(policies.format_list())
    return 0


def _cmd_policies_show(args) -> int:
    from . import policies

    print(policies.format_show(args.name))
    return 0


def _cmd_configs_list(args) -> int:
    from . import config

    print(config.format_list())
    return 0


def _cmd_configs_show(args) -> int:
    from . import config

    text = config.get(args.name)
    if args.out is None:
        sys.stdout.write(text)  # the file's bytes: redirecting the output gives the same file
        return 0
    from . import _checkpoint as ck

    out = Path(args.out)
    if out.exists() and not args.force:
        raise FileExistsError(f"--out {args.out}: the file exists; give another name, or --force "
                              "to replace it.")
    if out.is_dir():
        raise IsADirectoryError(f"--out {args.out} is a folder; name the TOML file to write.")
    ck.atomic_write_text(out, text)
    print(f"wrote {out} (shipped configuration {args.name}); edit it, then: insdel run {out}")
    return 0


def _cmd_functional(args) -> int:
    from . import functional

    if args.no_metrics and args.metrics is not None:
        raise ValueError("--metrics names metrics to grade and --no-metrics skips the grades; "
                         "give one of them.")

    results = functional.run_catalogue(args.methods, seed=args.seed, cases=args.tests)
    print("### Functional tests (PASS/fail and the measured value)\n")
    print(functional.to_markdown(results))
    grades = None
    if not args.no_metrics:
        grades = functional.grade_metrics(args.metrics, seed=args.seed, cases=args.tests)
        print("\n### Metric grades: does the metric rank the known-better ordering first? "
              "(mean score difference; wins/ties/losses over pairs)\n")
        print(functional.grading_markdown(grades) if len(grades) else "(no graded tests)")
    if args.out:
        from . import _checkpoint as ck

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        ck.atomic_write_text(out / "functional.csv", results.to_csv(index=False))
        written = [out / "functional.csv"]
        if grades is not None:
            ck.atomic_write_text(out / "metric_grades.csv", grades.to_csv(index=False))
            written.append(out / "metric_grades.csv")
        print("\nwritten: " + ", ".join(str(p) for p in written))
    return functional.exit_code(results, strict=args.strict)


def _cmd_leaderboard(args) -> int:
    from .leaderboard import leaderboard

    _use_agg()
    board = leaderboard(args.run_dirs, n_boot=args.n_boot, seed=args.seed, level=args.level,
                        min_reliability=args.min_reliability)
    print(board.to_markdown())
    paths = board.save(args.out)
    if board.compared:  # beside leaderboard.png: which differences are significant, per block
        from .plotting import critical_difference_figure, save_figure

        # keys (group, policy, metric); over multi-output runs (group, policy, output, metric)
        fig = critical_difference_figure({
            "/".join(blk[:2]) + "".join(f" (output {o})" for o in blk[2:])
            + f": {board.labels.get(m, m)}": c for (*blk, m), c in board.compared.items()})
        paths.append(save_figure(fig, Path(args.out) / "leaderboard_critical_difference.png"))
    print("written: " + ", ".join(str(p) for p in paths))
    return 0


def _cmd_report(args) -> int:
    from .report_page import build_report

    _use_agg()
    page = build_report(args.run_dirs, n_boot=args.n_boot, seed=args.seed, level=args.level)
    paths = page.save(args.out)
    print("written: " + ", ".join(str(p) for p in paths))
    return 0


def _cmd_plan(args) -> int:
    from .study_plan import plan_run

    a, b = args.methods
    rp = plan_run(args.run, a, b, margin=args.margin, policy=args.policy, metric=args.metric,
                  relative=args.relative, power=args.power, alpha=args.alpha,
                  all_pairs=args.all_pairs, output=args.output)
    print(rp.text())
    return 0


def _split(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:  # an empty list would run nothing (or everything) without a word
        raise argparse.ArgumentTypeError(f"{text!r} names nothing; give NAME[,NAME...] or leave "
                                         "the option out.")
    return names


def _run_options(p: argparse.ArgumentParser, *, scheduler: bool = True) -> None:
    """The options every running command takes; ``scheduler=False`` leaves out ``--scheduler``
    (a command that runs serially only)."""
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--wait", action="store_true",
                   help="if another run writes the output folder, wait for it (default: refuse)")
    p.add_argument("--device", default=None, metavar="DEVICE",
                   help="torch device of training and model evaluation, e.g. cuda (overrides "
                        "[compute] device; default cpu)")
    if not scheduler:
        return
    p.add_argument("--scheduler", default=None, metavar="SCHEDULER",
                   help="where the checkpoint chunks run: 'local' (a Dask LocalCluster on this "
                        "machine), a Dask scheduler address such as tcp://host:8786, or 'serial' "
                        "(overrides [compute] backend / address; needs dask: pip install "
                        "\".[dask]\" in the insdel clone; results are identical to a serial run)")


def _runs_options(p: argparse.ArgumentParser, metavar: str, out: str, what: str) -> None:
    """The run folders, ``--out`` and the bootstrap's options of the commands that read finished
    runs (``leaderboard``, ``report``)."""
    p.add_argument("run_dirs", nargs="+", metavar=metavar,
                   help="run directories (or folders holding them)")
    p.add_argument("--out", default=out, metavar="DIR", help=f"{what} (default: ./{out})")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")


def _removal_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--removal", type=_split, default=None, metavar="NAME[,NAME...]",
                   help="what a removed feature becomes (overrides [removal] kinds; "
                        "docs/experiments.md): baseline (the paper's), marginal, "
                        "conditional_gaussian, ...; the first is the primary one, each other is "
                        "evaluated on the same pairs into <policy>/removal-NAME/ and compared "
                        "(removal_robustness.md)")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__, config

    parser = _Parser(
        prog="insdel",
        description="Insertion and deletion tests of feature attributions for regression models.",
    )
    parser.add_argument("--version", action="version", version=f"insdel {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = config.commands.get("run")
    p = sub.add_parser("run", help=run.help,
                       description=run.description + " CONFIG is a TOML file "
                       "or a shipped configuration: " + ", ".join(config.available()) + ". `insdel "
                       "configs show NAME --out my.toml` writes a shipped one to edit.")
    p.add_argument("config", metavar="CONFIG")
    p.add_argument("--out", default=None, help="output folder (default: the config's, else "
                   "runs/<name>)")
    p.add_argument("--quick", action="store_true", help="apply the config's [quick] sizes")
    p.add_argument("--trust-model", action="store_true",
                   help="allow a pickle-based model file ([model] path): loading it runs code "
                        "(an error when the model has no path)")
    p.add_argument("--model", default=None, metavar="FILE",
                   help="run this model file instead of the config's model ([model] path: an "
                        "insdel, torch, ONNX, skops or joblib file, an XGBoost .json/.ubj, a "
                        "LightGBM .txt or a CatBoost .cbm; docs/your_own_data.md)")
    p.add_argument("--engine", default=None, choices=("auto", "tree", "black_box"),
                   help="[model] engine: auto (default) runs a tree ensemble's exact closed "
                        "forms, black_box its values on rows, tree refuses any other model")
    _removal_option(p)
    _run_options(p)
    p.set_defaults(func=_cmd_run)

    described = reproduces()
    experiments = sorted(config.PAPER_CONFIGS) + list(config.PAPER_EXPERIMENTS)
    listed = sorted(experiments, key=list(described).index)  # the paper's order, then the rest
    width = max(map(len, experiments))
    p = sub.add_parser("reproduce", help="reproduce the paper's experiments (§5, §6, Figure 1 / "
                       "Table 5) and the metric studies",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Reproduce an experiment on the embedded simulator or, with "
                       "--data, on your copy of the real data.\n\nEXPERIMENT:\n" + "\n".join(
                           textwrap.fill(described[e], 96, initial_indent=f"  {e:<{width}}  ",
                                         subsequent_indent=" " * (width + 4))
                           for e in listed)
                       + "\n\nEach TOML experiment is a shipped configuration: insdel configs "
                       "show EXPERIMENT prints it.")
    p.add_argument("experiment", metavar="EXPERIMENT", choices=experiments,
                   help="one of the experiments listed above")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of paper-images (the TOML experiments take theirs from the config)")
    p.add_argument("--data", default=None, metavar="PATH",
                   help="the real CSV (otherwise the matching simulator is used)")
    p.add_argument("--quick", action="store_true", help="small version (a few minutes on 2 cores)")
    p.add_argument("--out", default=None, help="output folder (default: runs/<experiment>, or runs/<experiment>-quick with --quick)")
    _removal_option(p)
    _run_options(p)
    p.set_defaults(func=_cmd_reproduce)

    for name in config.commands.ordered():
        cmd = config.commands.get(name)
        if name == "run":
            continue
        p = sub.add_parser(name, help=cmd.help, description=cmd.description)
        p.add_argument("config", metavar="CONFIG")
        p.add_argument("--out", default=None, help="output folder (default: the config's, else "
                       "runs/<name>)")
        p.add_argument("--quick", action="store_true", help="apply the config's [quick] sizes")
        _run_options(p, scheduler=not cmd.serial)
        p.set_defaults(func=_cmd_command)

    p = sub.add_parser("demo", help="the CERN experiment in miniature (a few minutes)",
                       description="dielectron_sim, the three paper policies, all seven methods at "
                       "quick sizes; tables printed, figures written.")
    p.add_argument("--out", default="insdel-demo", help="output folder (default: ./insdel-demo)")
    _run_options(p)
    p.set_defaults(func=_cmd_demo)

    p = sub.add_parser("configs", help="list the shipped configurations, or print one to edit",
                       description="The shipped experiment configurations (insdel run NAME, "
                       "insdel reproduce): list them, or print one exactly as shipped (TOML, "
                       "comments included) to copy and edit.")
    cs = p.add_subparsers(dest="configs_command", metavar="ACTION")
    pl = cs.add_parser("list", help="names, insdel reproduce names and descriptions")
    pl.set_defaults(func=_cmd_configs_list)
    pshow = cs.add_parser("show", help="print a shipped configuration (or write it with --out)",
                          description="Print a shipped configuration's TOML exactly as shipped; "
                          "with --out, write it to a file to edit and run (insdel run FILE).")
    pshow.add_argument("name", metavar="NAME", help="a shipped configuration (insdel configs "
                       "list) or its insdel reproduce name, e.g. paper_cern or paper-cern")
    pshow.add_argument("--out", default=None, metavar="FILE",
                       help="write the TOML to FILE instead of printing it")
    pshow.add_argument("--force", action="store_true", help="replace FILE if it exists")
    pshow.set_defaults(func=_cmd_configs_show)
    p.set_defaults(func=_cmd_configs_list)

    p = sub.add_parser("datasets", help="list or prepare data sets",
                       description="Data recipes: list them or write one to disk.")
    ds = p.add_subparsers(dest="datasets_command", metavar="ACTION")
    pl = ds.add_parser("list", help="list the available data sets")
    pl.set_defaults(func=_cmd_datasets_list)
    pp = ds.add_parser("prepare", help="write a data set as parquet + metadata.json",
                       description="Run a recipe, split 80/20, scale, and write train.parquet, "
                                   "test.parquet and metadata.json to --out.")
    pp.add_argument("name", help="data set name (see `insdel datasets list`)")
    pp.add_argument("--out", required=True, help="output folder")
    pp.add_argument("--path", default=None, help="your copy of the public CSV (real data sets)")
    pp.add_argument("--seed", type=int, default=0, help="seed of the split and simulators")
    pp.add_argument("--option", action="append", metavar="KEY=VALUE",
                    help="recipe option, e.g. --option n_events=20000 (repeatable)")
    pp.set_defaults(func=_cmd_datasets_prepare)
    p.set_defaults(func=lambda args, p=p: (p.print_help(), 2)[1])

    p = sub.add_parser("policies", help="list and show reference-point policies and specs",
                       description="Reference-point policies (paper §5) and the TOML "
                                   "specifications shipped in insdel.shipped.policies.")
    p.set_defaults(func=_cmd_policies_list)
    ps = p.add_subparsers(dest="policies_command", metavar="ACTION")
    pl = ps.add_parser("list", help="policy names, parameters and the TOML specifications")
    pl.set_defaults(func=_cmd_policies_list)
    pshow = ps.add_parser("show", help="print a specification (or a policy's parameters)")
    pshow.add_argument("name", help="spec name, TOML path or policy name")
    pshow.set_defaults(func=_cmd_policies_show)

    p = sub.add_parser("functional", help="functional tests of attribution methods (exact answers)",
                       description="Run attribution methods through the catalogue of functional "
                       "tests with exact answers (docs/functional.md), then grade the metrics: "
                       "every metric of insdel.metrics that needs only the model (insdel's ABC "
                       "and AUC, Quantus', BEExAI's and OpenXAI's faithfulness metrics), ABC + "
                       "ABC' and any metric registered with insdel.functional.grading.register: "
                       "does each rank a known-better ordering above a known-worse one?")
    p.add_argument("--methods", type=_split, default=None, metavar="A,B,...",
                   help="methods or variants (ig_cast, ig_interpolate, ig_jump); default: "
                        "exact_shapley, kernel_shap, the three IG modes, deeplift, vanilla_grad, "
                        "input_x_gradient, lime, random")
    p.add_argument("--tests", type=_split, default=None, metavar="T,U,...",
                   help="which tests (default: all)")
    p.add_argument("--metrics", type=_split, default=None, metavar="M,N,...",
                   help="metrics to grade (default: all of them, "
                        "insdel.functional.grading.available())")
    p.add_argument("--no-metrics", action="store_true", help="skip the metric grades")
    p.add_argument("--seed", type=int, default=0, help="seed of the data and seeded methods")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="also write functional.csv and metric_grades.csv into DIR")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when any method fails any criterion (default: exit 0: a failed "
                        "criterion is a result)")
    p.set_defaults(func=_cmd_functional)

    p = sub.add_parser("leaderboard", help="rank methods over finished runs",
                       description="Aggregate finished runs (docs/leaderboard.md): method x metric "
                       "means, standard errors and ranks per data set and policy, overall mean "
                       "ranks with bootstrap CIs and ties. Runs with different configurations are "
                       "kept apart; identical results are counted once. Insertion/deletion and "
                       "ROAD runs are ranked; ROAR and image runs and unreadable folders are "
                       "skipped with a note each.")
    _runs_options(p, "RUN_DIR", "insdel-leaderboard",
                  "where leaderboard.md, the CSVs and leaderboard.png go")
    p.add_argument("--min-reliability", type=float, default=0.6, metavar="MC",
                   help="metrics of an insdel sanity run's reliability.csv with meta-consistency "
                        "below MC are marked unreliable (default 0.6; docs/leaderboard.md)")
    p.set_defaults(func=_cmd_leaderboard)

    p = sub.add_parser("report", help="one page with the answer: the verdict and the evidence of "
                       "finished runs (HTML and Markdown)",
                       description="Write a self-contained HTML page (report.html) and the same "
                       "as Markdown (report.md) from finished run folders (docs/report.md): the "
                       "question, the verdict (which methods are best, which cannot be told "
                       "apart, under which removals the answer holds), then the evidence (ABC "
                       "with intervals, robustness across removals, ROAD, tuning, sanity flags, "
                       "metric reliability, every figure), each section naming its files.")
    _runs_options(p, "RUN", "insdel-report", "where report.html, report.md and report_files/ go")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("plan", help="how many pairs a study needs to tell two methods apart, "
                       "with a finished run as the pilot",
                       description="Plan a study from a finished run (docs/verdicts.md): the "
                       "independent units and pairs whose paired t test tells two methods apart "
                       "at a true difference MARGIN with the given power, from the run's "
                       "per-pair results (no model evaluation).")
    p.add_argument("run", metavar="RUN", help="a finished insertion/deletion run folder")
    p.add_argument("--methods", nargs=2, required=True, metavar=("A", "B"),
                   help="the two methods to tell apart")
    p.add_argument("--margin", type=float, required=True,
                   help="the true difference to detect (> 0; in ABC units, or with --relative "
                        "a fraction of the spread of ABC)")
    p.add_argument("--relative", action="store_true",
                   help="the margin is a fraction of the spread of the two methods' ABC")
    p.add_argument("--policy", default=None, help="the policy (default: the run's only one)")
    p.add_argument("--metric", default="insertion",
                   help="insertion (default), deletion, total, insertion@REMOVAL or a "
                        "[metrics] metric")
    p.add_argument("--output", default=None,
                   help="a run with model.outputs = H: the output, 0 .. H-1 or weighted")
    p.add_argument("--power", type=float, default=0.8, help="the power wanted (default 0.8)")
    p.add_argument("--alpha", type=float, default=0.05, help="the test's level (default 0.05)")
    p.add_argument("--all-pairs", action="store_true",
                   help="plan for all K(K-1)/2 comparisons of the block (Holm's worst case)")
    p.set_defaults(func=_cmd_plan)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        # given but empty: "" would be the current folder, nothing, or the config's value
        for opt, what in (("out", "an output folder"), ("device", "a device"),
                          ("scheduler", "a scheduler")):
            v = getattr(args, opt, None)
            if v is not None and not str(v).strip():
                raise ValueError(f"--{opt} is empty; name {what} or leave the option out.")
        return int(func(args) or 0)
    except KeyboardInterrupt:
        print("\ninterrupted; finished chunks are saved, run the same command again to resume.",
              file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError, FileExistsError, IsADirectoryError, PermissionError,
            KeyError, TypeError, RuntimeError, ImportError, ConnectionError) as exc:
        if getattr(args, "debug", False):
            raise
        print(f"insdel: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
