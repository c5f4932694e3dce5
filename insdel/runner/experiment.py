"""``insdel run``: an experiment from its configuration, as a list of stages (paper §5).

The data and model stages run once; then each ``[[policies]]`` entry pairs its targets and runs
:data:`POLICY_STAGES` in order on a :class:`~insdel.runner.context.PolicyRun`; the run's tables,
its figures and its manifest close it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import _checkpoint as ck
from .. import config as _config
from .._validation import check_progress
from ..distributed import client_info, scatter
from ..evaluation import Evaluation
from ..report import run_header, run_tables
from .chunks import shareable_model
from .context import PolicyRun, logger
from .provenance import Stages, pairs_key, run_manifest
from .removals import (
    attributions_text,
    build_removals,
    check_available,
    params_text,
    removals_text,
)
from .session import loaded, opened
from .stages import attribution, curves, decomposition, interactions, metrics, tables
from .stages.data import dataset_info, groups_of, load_dataset, log_dataset, select_pool
from .stages.figures import figures as figures_stage
from .stages.model import model_files, model_stage

__all__ = ["POLICY_STAGES", "RunResult", "load_results", "run_experiment"]

#: The stages of one policy, in order: modules with ``run(p: PolicyRun)``, each reading what the
#: ones before it left in ``p`` (a new stage: one module in ``stages/``, one line here).
POLICY_STAGES = (
    decomposition,  # exact bounds and Shapley values of the first n_pairs pairs
    attribution,    # every method's attributions (exact Shapley from the decomposition if it can)
    curves,         # curves and ABCs; abc.parquet, curves.npz, attributions.npz
    metrics,        # [metrics] on the same attributions
    tables,         # summary, sampled vs exact, decomposition.parquet
    interactions,   # [interactions]: interactions.parquet (an interaction index per pair)
)


@dataclass
class RunResult:
    """What :func:`run_experiment` produced.

    Attributes
    ----------
    out : Path
        Output folder.
    config : dict
        The configuration used.
    evaluations : dict
        Policy label -> :class:`insdel.Evaluation`.
    pairings : dict
        Policy label -> :class:`insdel.policies.Pairing`.
    summary : pandas.DataFrame
        All policies' summaries (paper Tables 1-3 layout) with a ``policy`` column.
    diagnostics : pandas.DataFrame
        Paper Table 4 (one row per policy).
    manifest : dict
    figures : list of Path
    decompositions : dict
        Policy label -> per-pair decomposition table (when ``decomposition.n_pairs > 0``).
    sampled_vs_exact : pandas.DataFrame or None
        Sampled Kernel SHAP against exact Shapley, paired per pair (when both methods ran).
    metrics : pandas.DataFrame or None
        ``[metrics]`` summaries of every policy (``metrics_summary.csv``), when metrics ran.
    removal_evaluations : dict
        Policy label -> {removal name -> :class:`insdel.Evaluation`}, every removal of
        ``[removal] kinds`` (the first, the primary one, is ``evaluations[label]``).
    robustness : pandas.DataFrame or None
        With several removals: each method's mean ABC and rank under each removal, per policy
        (:func:`insdel.robustness.robustness_table` with a ``policy`` column;
        ``removal_robustness.csv``).
    robustness_kendall : pandas.DataFrame or None
        With several removals: the Kendall τ-b between their method rankings
        (:func:`insdel.robustness.kendall_between`; ``removal_kendall.csv``), with its
        bootstrap interval over the units (``tau_low``, ``tau_high``).
    robustness_verdicts : pandas.DataFrame or None
        With several removals: each removal's ranking with its simultaneous rank intervals
        (:func:`insdel.robustness.rank_verdicts`, with a ``policy`` column).
    """

    out: Path
    config: dict
    evaluations: dict
    pairings: dict
    summary: pd.DataFrame
    diagnostics: pd.DataFrame
    manifest: dict
    figures: list = field(default_factory=list)
    model: Any = None
    dataset: Any = None
    decompositions: dict = field(default_factory=dict)
    sampled_vs_exact: pd.DataFrame | None = None
    metrics: pd.DataFrame | None = None
    removal_evaluations: dict = field(default_factory=dict)
    robustness: pd.DataFrame | None = None
    robustness_kendall: pd.DataFrame | None = None
    robustness_verdicts: pd.DataFrame | None = None

    def to_markdown(self, digits: int = 3) -> str:
        """Every policy's table (paper layout), the Table 4 diagnostics and, when computed, the
        decomposition table: the same text as ``summary.md``."""
        methods = next(iter(self.evaluations.values())).methods if self.evaluations else []
        m = self.manifest
        mode = (m or {}).get("removal_attributions", "baseline")
        header = run_header(m["data"], m["model"], m["policy_specs"],
                            removals=_removal_lines(m.get("removals"), mode)) if m else None
        return run_tables(self.summary, self.diagnostics, self.decompositions, methods, digits,
                          header=header, sampled=self.sampled_vs_exact, metrics=self.metrics,
                          verdicts={k: ev.verdicts() for k, ev in self.evaluations.items()},
                          robustness=_robustness_text(self.robustness, self.robustness_kendall,
                                                      self.robustness_verdicts,
                                                      mode, digits))


def load_results(out: str | os.PathLike) -> dict[str, Evaluation]:
    """The evaluations of a finished run, policy label -> :class:`insdel.Evaluation`
    (:meth:`insdel.Evaluation.load` of each policy's folder), so plots can be redrawn without
    running anything again; a run with ``model.outputs`` gives a
    :class:`insdel.multi_output.MultiEvaluation` per label (its ``output_<h>/`` folders)."""
    out = Path(out)
    manifest = out / "manifest.json"
    if not manifest.exists():
        raise FileNotFoundError(f"{out} holds no finished run (no manifest.json).")
    m = json.loads(manifest.read_text())
    if m.get("outputs") is not None:  # a run with model.outputs = H: output_<h>/ per policy
        from ..multi_output import MultiEvaluation

        return {lab: MultiEvaluation([Evaluation.load(out / lab / f"output_{h}")
                                      for h in range(m["outputs"])],
                                     np.asarray(m["output_weights"], dtype=np.float64))
                for lab in m["policies"]}
    return {lab: Evaluation.load(out / lab) for lab in m["policies"]}


def run_experiment(config: str | os.PathLike | Mapping, out: str | os.PathLike | None = None, *,
                   quick: bool = False, progress: bool | None = None, verbose: bool = False,
                   figures: bool | None = None, wait: bool = False, client=None,
                   _interrupt: Callable[[], None] | None = None) -> RunResult:
    """Run an experiment: data -> model -> policies -> attributions -> curves -> tables, figures.

    Parameters
    ----------
    config : path, shipped name or dict
        See :func:`insdel.config.load` and ``docs/experiments.md``.
    out : path, optional
        Output folder (default: the configuration's ``out``, else ``runs/<name>``).
    quick : bool
        Apply the configuration's ``[quick]`` overrides.
    progress : bool, optional
        Progress bars (default: on a terminal for long stages).
    verbose : bool
        Print what each stage uses and does, and how long it took (to stderr).
    figures : bool, optional
        Override ``figures.enabled``.
    wait : bool
        If another run holds the output folder, wait for it instead of refusing.
    client : dask.distributed.Client, optional
        Run the checkpoint chunks (attributions, exact decomposition) on this client's workers
        instead of the backend of ``[compute]`` (a serial run, an existing scheduler or a
        LocalCluster started and stopped by the run). The results are identical either way.

    Returns
    -------
    RunResult

    Raises
    ------
    OutputFolderBusy
        Another run writes the same output folder (and ``wait`` is False).

    Notes
    -----
    Started again with the same configuration and output folder, the run resumes: the cached model
    is reused and finished chunks of attributions / decompositions are loaded, and the data files
    come out byte-identical to an uninterrupted run.
    """
    check_progress(progress)  # before the data and the model, not at the first bar
    cfg = loaded(config, quick)
    _config.check_sections(cfg, "run")
    if figures is not None:
        cfg = {**cfg, "figures": {**cfg["figures"], "enabled": bool(figures)}}
    with opened(cfg, out, wait, client, verbose, kind="run") as (folder, before, cl):
        return _run(cfg, folder, progress, verbose, _interrupt, cl, before)


def _run(cfg, out: Path, progress, verbose: bool, interrupt, client=None,
         before: Mapping[Path, tuple] | None = None) -> RunResult:
    """The experiment in ``out`` (locked): data, model, each policy's stages, tables, figures,
    manifest."""
    log = logger(verbose)
    stages = Stages()
    check_available(cfg)  # a removal this installation lacks is named before anything runs
    t_all = time.perf_counter()
    t0 = time.perf_counter()
    dataset = load_dataset(cfg)
    data_info = dataset_info(cfg, dataset)
    stages.add("data", time.perf_counter() - t0)
    log_dataset(data_info, log)
    removals = build_removals(cfg, dataset)  # fitted on the training rows, before the model
    for line in removals_text(removals):
        log(line)
    if len(removals) > 1 or not removals[0].is_baseline:
        log(attributions_text(cfg["removal"]["attributions"]))
    grp = groups_of(dataset)
    if grp is not None:
        log(f"groups: {data_info['groups_text']} (each group moves as one unit in the curves, "
            f"the decomposition and the Shapley values)")
    # a tree ensemble's trees are read once, there, and travel with the model to every stage
    model, model_metrics, model_info = model_stage(cfg, dataset, data_info, out, stages, log,
                                                   progress, with_trees=True)
    if cfg["model"]["outputs"] is not None:  # a model with H outputs: curves per output
        from .multi import run_multi

        return run_multi(cfg, out, dataset=dataset, data_info=data_info, model=model,
                         model_metrics=model_metrics, model_info=model_info, stages=stages,
                         log=log, progress=progress, before=before, grp=grp, client=client,
                         interrupt=interrupt, removals=removals)

    # the model reaches every Dask worker once (a future shared by every stage and policy)
    remote_model = None if client is None else scatter(client, [shareable_model(
        model, cfg, int(np.asarray(dataset.X_test).shape[1]), model_info["file_sha256"])])[0]
    pool, pool_idx = select_pool(dataset, cfg["targets"]["n"], cfg["seed"])
    if len(pool_idx) < cfg["targets"]["n"]:
        log(f"targets: all {len(pool_idx)} test rows (targets.n = {cfg['targets']['n']} is more "
            "than the test split has)")
    runs: list[PolicyRun] = []
    policy_specs: dict[str, str] = {}
    for entry in cfg["policies"]:
        label = _config.policy_label(entry)
        t0 = time.perf_counter()
        policy = _make_policy(entry)
        policy_specs[label] = repr(policy)
        log(f"policy {label}: {policy!r}")
        pairing = policy.pair(model, pool, seed=cfg["seed"], progress=progress)
        stages.add(f"{label}/pairing", time.perf_counter() - t0, pairs=len(pairing))
        units = "" if grp is None else f" ({pairing.mean_diff(groups=grp):.2f} of {grp.m} groups)"
        log(f"  {len(pairing)} pairs, mean number of differing features "
            f"{pairing.mean_diff():.2f}{units}")
        X, R = np.ascontiguousarray(pairing.X), np.ascontiguousarray(pairing.R)
        base_key = pairs_key(cfg, data_info, model_info, X, R)
        if model_info.get("engine", "black_box") != "black_box":  # the trees' closed forms
            base_key["engine"] = model_info["engine"]
        if grp is not None:  # every chunk's key holds the groups (none: no key)
            base_key["groups"] = grp.to_json()
        if model_info["file_sha256"] not in (None, model_info["sha256"]):
            # a torch model from a file: its parameters' hash does not cover its code (a
            # TorchScript forward), the file's does (none: no key)
            base_key["model_file"] = model_info["file_sha256"]
        remote = None if client is None else dict(
            zip(("model", "X", "R"), [remote_model, *scatter(client, [X, R])], strict=True))
        p = PolicyRun(cfg=cfg, out=out, label=label, model=model, dataset=dataset, groups=grp,
                      pairing=pairing, pool_idx=pool_idx, X=X, R=R, base_key=base_key,
                      stages=stages, log=log, progress=progress, interrupt=interrupt,
                      client=client, remote=remote, removals=removals)
        for stage in POLICY_STAGES:
            stage.run(p)
        runs.append(p)

    from ..diagnostics import diagnostics as _diagnostics

    evaluations = {p.label: p.evaluation for p in runs}
    pairings = {p.label: p.pairing for p in runs}
    decomps = {p.label: p.decomposition for p in runs if p.decomposition is not None}
    diag = _diagnostics(pairings, evaluations, groups=grp)
    summary = pd.concat([p.summary for p in runs], ignore_index=True)
    ck.atomic_write_text(out / "summary.csv", summary.to_csv(index=False))
    ck.atomic_write_text(out / "diagnostics.csv", diag.to_csv())
    methods = next(iter(evaluations.values())).methods
    removal_info = [{"name": r.name, "primary": r.primary, "folder": r.folder or None,
                     "params": r.params()} for r in removals]
    mode = cfg["removal"]["attributions"]
    header = run_header(data_info, model_info, policy_specs,
                        removals=_removal_lines(removal_info, mode))
    robust, kendall, rank_text = _robustness(runs, out, mode)
    sampled = [p.sampled_vs_exact for p in runs if p.sampled_vs_exact is not None]
    sampled_df = pd.concat(sampled, ignore_index=True) if sampled else None
    if sampled_df is not None:
        ck.atomic_write_text(out / "sampled_vs_exact.csv", sampled_df.to_csv(index=False))
    metric_summaries = [p.metrics for p in runs if p.metrics is not None]
    metrics_df = pd.concat(metric_summaries, ignore_index=True) if metric_summaries else None
    if metrics_df is not None:
        ck.atomic_write_text(out / "metrics_summary.csv", metrics_df.to_csv(index=False))
    ck.atomic_write_text(out / "summary.md", run_tables(summary, diag, decomps, methods,
                                                        header=header, sampled=sampled_df,
                                                        metrics=metrics_df,
                                                        verdicts={p.label: p.verdicts
                                                                  for p in runs},
                                                        robustness=_robustness_text(
                                                            robust, kendall, rank_text, mode)))

    fig_paths = figures_stage(cfg, evaluations, model, dataset, out, stages, log, decomps,
                              robustness=None if robust is None else (robust, kendall))

    evals_total = sum(int(v.get("model_evaluations", 0)) for v in stages.stages.values())
    manifest = run_manifest(
        cfg, out, before, data_info=data_info, model_info=model_info,
        model_metrics=model_metrics, stages=stages, used=model_files(model_info),
        before_model={"policies": list(evaluations), "policy_specs": policy_specs,
                      "removals": removal_info, "removal_attributions": mode},
        compute={"device": cfg["compute"]["device"], **client_info(client),
                 "seconds_total": time.perf_counter() - t_all,
                 "model_evaluations_total": evals_total})
    return RunResult(out=out, config=cfg, evaluations=evaluations, pairings=pairings,
                     summary=summary, diagnostics=diag, manifest=manifest, figures=fig_paths,
                     model=model, dataset=dataset, decompositions=decomps,
                     sampled_vs_exact=sampled_df, metrics=metrics_df,
                     removal_evaluations={p.label: dict(p.removal_evaluations) for p in runs},
                     robustness=robust, robustness_kendall=kendall,
                     robustness_verdicts=rank_text)


def _make_policy(entry: Mapping):
    """The policy of a ``[[policies]]`` entry, built once (spec + the entry's ``params``)."""
    from .. import policies

    return policies.load(entry["spec"], params=dict(entry.get("params", {}) or {}))


def _removal_lines(removals, mode: str) -> list[str] | None:
    """The header's removal lines (``- removal NAME: options``) and which attributions they
    score (``mode``: ``removal.attributions``), only when the run is not the paper's baseline
    alone (whose summary.md has no removal lines)."""
    if not removals or (len(removals) == 1 and removals[0]["name"] == "baseline"):
        return None
    lines = []
    for r in removals:
        opts = params_text(r["params"], " = ")
        where = "primary: the tables above" if r["primary"] else f"<policy>/{r['folder']}/"
        lines.append(f"removal {r['name']} ({where}): {opts}")
    return [*lines, attributions_text(mode)]


def _robustness(runs: list[PolicyRun], out: Path, mode: str):
    """With several removals: the robustness table and Kendall τ of every policy, written as
    ``removal_robustness.csv`` / ``removal_kendall.csv`` / ``removal_robustness.md``, and each
    removal's ranking with its rank intervals (``rank_verdicts``); else (None, None, None)."""
    from ..robustness import (
        kendall_between,
        kendall_intervals,
        rank_verdicts,
        robustness_markdown,
        robustness_table,
    )

    if not runs or len(runs[0].removal_evaluations) < 2:
        return None, None, None
    parts = []
    for p in runs:
        t = robustness_table(p.removal_evaluations)
        t.insert(0, "policy", p.label)
        parts.append(t)
    table = pd.concat(parts, ignore_index=True)
    kendall = kendall_between(table)
    boot = pd.concat([kendall_intervals(p.removal_evaluations).assign(policy=p.label)
                      for p in runs], ignore_index=True)  # τ's interval over the units
    kendall = kendall.merge(boot, on=["policy", "mode", "removal_a", "removal_b"], how="left")
    verdicts = pd.concat([rank_verdicts(p.removal_evaluations).assign(policy=p.label)
                          for p in runs], ignore_index=True)
    ck.atomic_write_text(out / "removal_robustness.csv", table.to_csv(index=False))
    ck.atomic_write_text(out / "removal_kendall.csv", kendall.to_csv(index=False))
    ck.atomic_write_text(out / "removal_robustness.md", f"{attributions_text(mode)}.\n\n"
                         + robustness_markdown(table, kendall, verdicts=verdicts))
    return table, kendall, verdicts


def _robustness_text(table, kendall, verdicts, mode: str, digits: int = 3) -> str | None:
    from ..robustness import robustness_markdown

    if table is None:
        return None
    return (f"{attributions_text(mode)}.\n\n"
            + robustness_markdown(table, kendall, digits, verdicts=verdicts))
