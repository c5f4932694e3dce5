"""``insdel tune``: honest tuning of the methods' settings from a configuration
(:mod:`insdel.tuning`, docs/tuning.md).

The data and model stages are the other commands' (:mod:`insdel.runner.stages`). The pairs are
the first ``tune.n_targets`` test rows against the training mean / mode, or a policy's pairs of
them (``tune.reference``, as ``sanity.reference``). One split of the pairs by unit
(:func:`insdel.tuning.split_pairs`, seeded by the run's seed) serves every method, so their
held-out ABCs are on the same pairs; it is recorded in the manifest (``tune.split``). Each method
of ``tune.methods`` (empty: every method of ``methods.names`` with a search space) is tuned by
:func:`insdel.tuning.tune` from its ``methods.options`` (the defaults it is compared with).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import _checkpoint as ck
from .. import config as _config
from .._validation import check_progress
from ..report import run_header
from .context import logger
from .provenance import Stages, run_manifest
from .sanity import _pairs
from .session import loaded, opened
from .stages.attribution import method_options
from .stages.data import dataset_info, groups_of, load_dataset, log_dataset
from .stages.model import model_files, model_stage

__all__ = ["TuneRun", "run_tune"]


@dataclass
class TuneRun:
    """A finished ``insdel tune`` run.

    Attributes
    ----------
    out : Path
    config : dict
    results : list of insdel.tuning.TuneResult
    summary : pandas.DataFrame
        ``tune_summary.csv``.
    split : insdel.tuning.Split
    manifest : dict
    markdown : str
    figures : list of Path
    """

    out: Path
    config: dict
    results: list
    summary: pd.DataFrame
    split: object
    manifest: dict
    markdown: str = ""
    figures: list | None = None

    def to_markdown(self) -> str:
        """The tables of ``summary.md`` (below its header)."""
        return self.markdown


def run_tune(config: str | os.PathLike | Mapping, out: str | os.PathLike | None = None, *,
             quick: bool = False, progress: bool | None = None, verbose: bool = False,
             wait: bool = False) -> TuneRun:
    """Tune the methods of a configuration (``insdel tune``, docs/tuning.md).

    Reads ``[data]``, ``[model]``, ``[methods]``, ``[compute]`` and ``[tune]``. Outputs in
    ``out``: ``tune.csv`` (method, setting, tuned, default), ``tune_summary.csv`` (per method:
    tuning / held-out / default held-out ABC with standard errors, gain, optimism, pair counts),
    ``trials.csv`` (every trial's settings and tuning ABC), ``held_out_abc.parquet`` (per
    held-out pair: the tuned and the default settings' ABC; no tuning pair), ``summary.md``,
    ``figures/tune.png`` and ``manifest.json`` with the split (``tune.split``).
    """
    check_progress(progress)
    cfg = loaded(config, quick)
    _config.check_sections(cfg, "tune")
    if cfg["compute"]["backend"] != "serial":
        raise ValueError(f"{cfg['source']}: compute.backend = {cfg['compute']['backend']!r}: "
                         "`insdel tune` runs serially; remove the Dask settings.")
    with opened(cfg, out, wait, None, verbose, kind="tune") as (folder, before, _):
        return _run_tune(cfg, folder, progress, verbose, before)


def _figure(results, out: Path, title: str) -> Path:
    import matplotlib.pyplot as plt

    from .. import plotting

    k = len(results)
    fig, ax = plt.subplots(figsize=(1.6 + 1.5 * k, 3.6))
    x = np.arange(k)
    for off, (lab, get) in zip((-0.27, 0.0, 0.27), (
            ("defaults, held-out", lambda r: r.default_held_out),
            ("tuned, held-out", lambda r: r.held_out),
            ("tuned, tuning pairs (optimistic)", lambda r: r.tuning)), strict=True):
        v = np.array([get(r) for r in results], dtype=float)
        ax.bar(x + off, v[:, 0], 0.26, yerr=np.nan_to_num(v[:, 1]), capsize=3, label=lab,
               hatch="//" if "optimistic" in lab else None, alpha=0.6 if "optimistic" in lab
               else 1.0)
    ax.set_xticks(x, [r.method for r in results], rotation=20, ha="right")
    ax.set_ylabel(f"mean {results[0].mode} ABC (± s.e.)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return plotting.save_figure(fig, out / "figures" / "tune.png", 110)


def _run_tune(cfg, out: Path, progress, verbose: bool,
              before: Mapping[Path, tuple] | None = None) -> TuneRun:
    """The tuning in ``out`` (locked): data, model, pairs, split, one study per method, files."""
    from ..tuning import SPACES, split_pairs, to_markdown, tune

    log = logger(verbose)
    stages = Stages()
    t_all = time.perf_counter()
    t = cfg["tune"]
    dataset = load_dataset(cfg)
    grp = groups_of(dataset)
    data_info = dataset_info(cfg, dataset)
    log_dataset(data_info, log, file=False)
    model, metrics, model_info = model_stage(cfg, dataset, data_info, out, stages, log, progress,
                                           with_trees=True)
    X, R, clusters = _pairs(cfg, model, dataset, grp, progress, log, table="tune")
    split = split_pairs(X.shape[0], clusters=clusters, tune_fraction=t["tune_fraction"],
                        seed=cfg["seed"])
    log(f"split: {split.tuning.size} tuning / {split.held_out.size} held-out pairs "
        f"({split.n_units} units, seed {cfg['seed']})")
    names = list(t["methods"]) or [m for m in cfg["methods"]["names"] if m in SPACES]
    data = np.asarray(dataset.X_train, dtype=np.float64)
    binary = np.asarray(dataset.binary_mask, bool)
    results = []
    for m in names:
        t0 = time.perf_counter()
        opts = method_options(m, cfg["methods"]["options"].get(m, {}), cfg["seed"], dataset,
                              cfg["model"]["engine"])
        res = tune(model, X, R, m, n_trials=t["n_trials"], seed=cfg["seed"], mode=t["mode"],
                   options=opts, data=data, binary=binary, clusters=clusters, groups=grp,
                   split=split, progress=progress)
        stages.add(f"tune/{m}", time.perf_counter() - t0, trials=t["n_trials"])
        log(f"tune {m}: {res.params}; held-out gain {res.gain[0]:+.4f} ± {res.gain[1]:.4f}, "
            f"optimism {res.optimism[0]:+.4f}")
        results.append(res)
    summary = pd.DataFrame([r.row() for r in results])
    settings = pd.DataFrame([{"method": r.method, "setting": k, "tuned": str(v),
                              "default": str(r.defaults.get(k))}
                             for r in results for k, v in r.params.items()])
    trials = pd.concat([r.trials.assign(method=r.method) for r in results], ignore_index=True)
    held = pd.concat([r.held_out_abc for r in results], ignore_index=True)
    ck.atomic_write_text(out / "tune.csv", settings.to_csv(index=False))
    ck.atomic_write_text(out / "tune_summary.csv", summary.to_csv(index=False))
    ck.atomic_write_text(out / "trials.csv", trials.to_csv(index=False))
    ck.atomic_write_bytes(out / "held_out_abc.parquet", held.to_parquet(index=False))
    ref = t["reference"]
    pairs_text = (f"{X.shape[0]} pairs of {data_info['name']} test rows against "
                  + ("the training mean" if ref == "training_mean" else f"policy {ref}"))
    text = "\n".join([
        f"### Tuning ({pairs_text}; {split.tuning.size} tuning / {split.held_out.size} "
        f"held-out pairs, split by unit with seed {cfg['seed']}; {t['n_trials']} optuna trials "
        f"per method, {t['mode']} ABC)", "",
        to_markdown(results),
        "The held-out ABC is the one to compare methods by; the tuning ABC is optimistic by "
        "the optimism (tuning minus held-out). The gain is the tuned minus the default "
        "settings' ABC on the held-out pairs (paired; its ratio to its standard error in "
        "parentheses).", ""])
    header = run_header(data_info, model_info, {"reference": ref})
    ck.atomic_write_text(out / "summary.md", header + "\n" + text)
    figs = [_figure(results, out, f"Tuning on {data_info['name']}: held-out vs tuning ABC")]
    manifest = run_manifest(
        cfg, out, before, data_info=data_info, model_info=model_info, model_metrics=metrics,
        stages=stages, used=model_files(model_info),
        after_model={"tune": {
            "pairs": int(X.shape[0]), "reference": ref, "methods": names, "mode": t["mode"],
            "n_trials": t["n_trials"], "split": split.record(),
            "tuned": {r.method: r.params for r in results},
            "defaults": {r.method: r.defaults for r in results}}},
        compute={"device": cfg["compute"]["device"], "backend": "serial",
                 "seconds_total": time.perf_counter() - t_all})
    return TuneRun(out=out, config=cfg, results=results, summary=summary, split=split,
                   manifest=manifest, markdown=text, figures=figs)
