"""``insdel run`` with ``model.outputs = H``: a model file returning (B, H) tested as a whole
(docs/multi_output.md).

After the data and model stages of :mod:`insdel.runner.experiment`, each ``[[policies]]`` entry
pairs its targets (a policy that pairs by the model's predictions is refused: it reads one
output), every configured method explains each output through the output views
(:func:`insdel.multi_output.output_views`: captum's target selection for the gradient methods, one
evaluation of each distinct batch of rows for all H outputs), and :func:`insdel.evaluate` traces
the curves of all outputs at once. Written per policy: ``<policy>/abc_by_output.csv`` (each
output's summary and the weighted aggregate, ``model.output_weights``), ``<policy>/output_<h>/``
(output h's ``curves.npz`` and ``abc.parquet``, :meth:`insdel.Evaluation.save`) and
``<policy>/attributions.npz`` ((B, H, n) per method); with ``decomposition.n_pairs`` the exact
decomposition of each output (``<policy>/output_<h>/decomposition.parquet``,
``decomposition_by_output.csv``); with ``metrics.names`` each metric per output and weighted
(:func:`insdel.runner.stages.metrics.metrics_per_output`: ``<policy>/metrics.parquet``,
``metrics_summary.csv``, ``metrics.md``); for the run ``summary.csv`` (a ``policy`` and an ``output``
column), ``summary.md``, the figures (:func:`output_figures`) and ``manifest.json``. Each
further removal of ``removal.kinds`` traces the curves of every output under it
(``<policy>/removal-<name>/output_<h>/``, ``abc_by_output.csv``), scored with the pairs'
references' attributions or, with ``removal.attributions = "per_removal"``, with each output's
attributions under that removal (:func:`insdel.runner.stages.attribution.by_removal`;
``<policy>/removal-<name>/attributions.npz``). The attributions, curves, decompositions and
metrics are checkpointed chunks (``checkpoints/<policy>/``) keyed by everything that determines
them (:func:`multi_key`): an interrupted run resumes. With a Dask client the attribution and
decomposition chunks run on its workers (the model sent once, as a single-output run sends it;
each chunk computes every output, :func:`output_task`, :func:`output_decomposition_task`) and
the curves and metrics on the driver, as in a single-output run: the same files as a serial run.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import _checkpoint as ck
from ..distributed import client_info, scatter
from ..removal import Baseline
from ..report import metrics_by_output_table, run_header
from .chunks import resolve_model, shareable_model
from .context import PolicyRun
from .experiment import RunResult, _removal_lines
from .provenance import Stages, pairs_key, run_manifest
from .removals import RunRemoval
from .stages.attribution import attribution_task, by_removal
from .stages.curves import evaluate_removal, to_test_rows
from .stages.decomposition import (
    DECOMP_COLS,
    decomposition_array,
    decomposition_table,
    decomposition_task,
)
from .stages.metrics import metrics_per_output
from .stages.model import model_files

__all__ = ["run_multi", "multi_model", "MultiRunResult"]


@dataclass
class MultiRunResult(RunResult):
    """A :class:`insdel.runner.RunResult` of a multi-output run: ``evaluations`` are
    :class:`insdel.multi_output.MultiEvaluation`; ``markdown`` is ``summary.md``'s text."""

    markdown: str = ""

    def to_markdown(self, digits: int = 3) -> str:
        return self.markdown


def multi_model(model, H: int, X: np.ndarray):
    """``model`` as an :class:`insdel.Model` with H outputs, checked on two rows of X: a model
    returning another width is an error naming ``model.outputs``."""
    from ..adapter import as_model

    mo = as_model(model, outputs=H)
    try:
        mo(np.ascontiguousarray(X[:2]))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"model.outputs = {H}: the model file does not return {H} outputs per "
                         f"row ({exc})") from None
    mo.n_evals = 0
    return mo


def run_multi(cfg: dict, out: Path, *, dataset, data_info: dict, model, model_metrics: dict,
              model_info: dict, stages: Stages, log, progress, before, grp, client=None,
              interrupt: Callable[[], None] | None = None, removals: list | None = None):
    """The policies of a multi-output run (see the module docstring); a
    :class:`insdel.runner.RunResult` whose ``evaluations`` are
    :class:`insdel.multi_output.MultiEvaluation` per policy label."""
    from ..multi_output import check_output_weights, output_views
    from .experiment import _make_policy
    from .stages.data import select_pool

    t_all = time.perf_counter()
    H = cfg["model"]["outputs"]
    # the model reaches every Dask worker once, as the single-output run sends it (itself, or
    # its file); each chunk's task keeps its H outputs (output_task, output_decomposition_task)
    remote_model = None if client is None else scatter(client, [shareable_model(
        model, cfg, int(np.asarray(dataset.X_test).shape[1]), model_info["file_sha256"])])[0]
    pool, pool_idx = select_pool(dataset, cfg["targets"]["n"], cfg["seed"])
    model = multi_model(model, H, pool)
    weights = check_output_weights(cfg["model"]["output_weights"], H)
    log(f"model: {H} outputs, aggregate weights {np.round(weights, 4).tolist()}")
    evaluations, pairings, policy_specs, summaries, by_rem = {}, {}, {}, [], {}
    metric_summaries = []
    removals = removals or [RunRemoval(name="baseline", removal=Baseline(), primary=True)]
    # "random" is the curves' random orderings (evaluation.n_random), not a set of scores
    scored = {**cfg, "methods": {**cfg["methods"], "names": [
        m for m in cfg["methods"]["names"] if m != "random"]}}
    decomposition_rows: list = []
    for i, entry in enumerate(cfg["policies"]):
        from .. import config as _config

        label = _config.policy_label(entry)
        policy = _make_policy(entry)
        if getattr(policy, "needs_model", False):
            raise ValueError(f"policies[{i}] ({label}): {policy!r} pairs targets by the model's "
                             f"predictions, one number per row; a model with model.outputs = "
                             f"{H} has {H}: give a policy that needs no model.")
        policy_specs[label] = repr(policy)
        log(f"policy {label}: {policy!r}")
        t0 = time.perf_counter()
        pairing = policy.pair(None, pool, seed=cfg["seed"], progress=progress)
        stages.add(f"{label}/pairing", time.perf_counter() - t0, pairs=len(pairing))
        X, R = np.ascontiguousarray(pairing.X), np.ascontiguousarray(pairing.R)
        remote = None if client is None else dict(
            zip(("model", "X", "R"), [remote_model, *scatter(client, [X, R])], strict=True))
        p = PolicyRun(cfg=cfg, out=out, label=label, model=model, dataset=dataset, groups=grp,
                      pairing=pairing, pool_idx=pool_idx, X=X, R=R,
                      base_key=multi_key(cfg, data_info, model_info, X, R, grp, H),
                      stages=stages, log=log, progress=progress, interrupt=interrupt,
                      client=client, remote=remote, removals=removals)
        p.removal_attributions, p.attributions = by_removal(
            p, cfg=scored, task=functools.partial(output_task, outputs=H))
        for m, a in p.attributions.items():
            log(f"  {m}: attributions per output {a.shape}")
        evs = {rem.name: evaluate_removal(p, rem, output_weights=weights)
               for rem in p.removals}
        ev = evs[p.removals[0].name]
        decs = _decompositions(p, H, ev)
        p.metrics = metrics_per_output(p, output_views(model), weights)
        if p.metrics is not None:
            metric_summaries.append(p.metrics)
        to_test_rows(pairing, pool_idx)  # saved and returned as rows of the test split
        model.n_evals = 0
        folder = out / label
        folder.mkdir(parents=True, exist_ok=True)
        for rem in p.removals[1:]:  # each further removal's curves in <policy>/removal-<name>/
            for h in range(H):
                evs[rem.name][h].save(folder / rem.folder / f"output_{h}", pairing=pairing)
            ck.atomic_write_text(folder / rem.folder / "abc_by_output.csv",
                                 evs[rem.name].summary().to_csv(index=False))
            if rem.name in p.removal_attributions:  # its own attributions, beside its curves
                ck.save_npz(folder / rem.folder / "attributions.npz",
                            p.removal_attributions[rem.name])
        for h in range(H):
            ev[h].save(folder / f"output_{h}", pairing=pairing)
            if decs:
                with ck.atomic_write(folder / f"output_{h}" / "decomposition.parquet",
                                     suffix=".parquet") as tmp:
                    decs[h].to_parquet(tmp, index=False)
                decomposition_rows.append(decs[h][DECOMP_COLS].mean().to_frame().T.assign(
                    policy=label, output=h))
        with ck.atomic_write(folder / "attributions.npz", suffix=".npz") as tmp:
            np.savez(tmp, **p.attributions)
        table = ev.summary()
        ck.atomic_write_text(folder / "abc_by_output.csv", table.to_csv(index=False))
        summaries.append(table.assign(policy=label))
        evaluations[label], pairings[label], by_rem[label] = ev, pairing, evs
    summary = pd.concat(summaries, ignore_index=True)
    summary = summary[["policy"] + [c for c in summary.columns if c != "policy"]]
    ck.atomic_write_text(out / "summary.csv", summary.to_csv(index=False))
    removal_info = [{"name": r.name, "primary": r.primary, "folder": r.folder or None,
                     "params": r.params()} for r in removals]
    # the removals and which attributions their curves score (none: the baseline alone)
    header = run_header(data_info, model_info, policy_specs,
                        removals=_removal_lines(removal_info, cfg["removal"]["attributions"]))
    text = header + "\n\n" + summary_markdown(summary, H, weights)
    if decomposition_rows:
        dec = pd.concat(decomposition_rows, ignore_index=True)[["policy", "output", *DECOMP_COLS]]
        ck.atomic_write_text(out / "decomposition_by_output.csv", dec.to_csv(index=False))
        text += "\n\n## Exact decomposition (mean over the decomposed pairs)\n\n" + "\n".join(
            ["| " + " | ".join(dec.columns) + " |", "|---" * dec.shape[1] + "|"]
            + ["| " + " | ".join([str(r[0]), str(r[1])] + [f"{v:.3f}" for v in r[2:]]) + " |"
               for r in dec.itertuples(index=False)])
    metrics_df = pd.concat(metric_summaries, ignore_index=True) if metric_summaries else None
    if metrics_df is not None:
        ck.atomic_write_text(out / "metrics_summary.csv", metrics_df.to_csv(index=False))
        text += "\n\n" + metrics_by_output_table(metrics_df).rstrip("\n")
    ck.atomic_write_text(out / "summary.md", text + "\n")
    fig_paths = output_figures(cfg, evaluations, out, stages)
    evals_total = sum(int(v.get("model_evaluations", 0)) for v in stages.stages.values())
    manifest = run_manifest(
        cfg, out, before, data_info=data_info, model_info=model_info,
        model_metrics=model_metrics, stages=stages, used=model_files(model_info),
        before_model={"policies": list(evaluations), "policy_specs": policy_specs,
                      "outputs": H, "output_weights": weights.tolist(),
                      "removal_attributions": cfg["removal"]["attributions"],
                      "removals": removal_info},
        compute={"device": cfg["compute"]["device"], **client_info(client),
                 "seconds_total": time.perf_counter() - t_all,
                 "model_evaluations_total": evals_total})
    return MultiRunResult(out=out, config=cfg, evaluations=evaluations, pairings=pairings,
                          summary=summary, diagnostics=pd.DataFrame(), manifest=manifest,
                          figures=fig_paths, removal_evaluations=by_rem,
                          model=model, dataset=dataset, metrics=metrics_df, markdown=text)


def summary_markdown(summary: pd.DataFrame, H: int, weights: np.ndarray, digits: int = 3) -> str:
    """Per policy and mode, each method's mean ABC (its standard error in brackets) for each
    output and the weighted aggregate: one markdown table each."""
    lines = [f"Model with {H} outputs; `weighted`: each pair's sum_h w_h ABC_h with w = "
             f"{np.round(weights, 4).tolist()}."]
    t = summary[summary["kind"] == "method"]
    cols = [str(h) for h in range(H)] + ["weighted"]
    for (policy, mode), part in t.groupby(["policy", "mode"], sort=False):
        cell = {(str(o), m): f"{mu:.{digits}f} ({se:.{digits}f})" for o, m, mu, se in zip(
            part["output"], part["method"], part["mean"], part["std_error"], strict=True)}
        lines += ["", f"## {policy}: {mode} ABC by output", "",
                  "| method | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        for m in dict.fromkeys(part["method"]):
            lines.append(f"| {m} | " + " | ".join(cell.get((c, m), "") for c in cols) + " |")
    return "\n".join(lines)


def output_figures(cfg: dict, evaluations: dict, out: Path, stages: Stages) -> list[Path]:
    """Per policy, in ``out/figures`` (none when ``figures.enabled`` is false):
    ``<policy>_abc_by_output.png`` (each method's mean ABC by output with standard-error bars,
    one panel per mode) and ``<policy>_<mode>_curves_by_output.png`` (the mean curves of up
    to four outputs)."""
    if not cfg["figures"]["enabled"]:
        return []
    import matplotlib.pyplot as plt

    from .. import plotting

    t0 = time.perf_counter()
    fdir, dpi = out / "figures", cfg["figures"]["dpi"]
    paths: list[Path] = []
    for label, ev in evaluations.items():
        modes = list(ev.modes)
        fig, axes = plt.subplots(1, len(modes), figsize=(6.0 * len(modes), 3.8),
                                 layout="constrained", squeeze=False)
        for ax, mode in zip(axes[0], modes, strict=True):
            plotting.abc_by_output(ev, mode, ax=ax)
        fig.suptitle(f"{label}: ABC by output")
        paths.append(plotting.save_figure(fig, fdir / f"{label}_abc_by_output.png", dpi))
        for mode in modes:
            fig = plotting.curves_by_output(ev, mode)
            fig.suptitle(f"{label}: mean {mode} curves by output")
            paths.append(plotting.save_figure(fig, fdir / f"{label}_{mode}_curves_by_output.png",
                                              dpi))
    stages.add("figures", time.perf_counter() - t0, figures=len(paths))
    return paths


def multi_key(cfg: dict, data_info: dict, model_info: dict, X: np.ndarray, R: np.ndarray, grp,
              H: int) -> dict:
    """What every checkpoint chunk of a multi-output policy's key holds: the single-output
    run's (:func:`insdel.runner.provenance.pairs_key`, the groups, the model file's hash) and
    ``outputs`` (H). The output weights are not in it: they weigh the aggregate, which is
    computed from the per-output curves every time."""
    key = pairs_key(cfg, data_info, model_info, X, R)
    if grp is not None:
        key["groups"] = grp.to_json()
    if model_info["file_sha256"] not in (None, model_info["sha256"]):
        key["model_file"] = model_info["file_sha256"]
    key["outputs"] = H
    return key


def output_task(lo: int, hi: int, method: str, kw: dict, where: str, *, model, X, R,
                outputs: int):
    """One attribution chunk of every output (rows lo..hi - 1): (A (rows, H, n), model
    evaluations, seconds); the outputs' views share one store of the model's values, so each
    distinct batch of rows is evaluated once for all H outputs. ``model``: the run's model with
    H = ``outputs`` outputs, or as it reaches a Dask worker (:func:`~.chunks.resolve_model`)."""
    t0 = time.perf_counter()
    f, views = _outputs_of(model, outputs)
    e0 = f.n_evals
    parts = [attribution_task(lo, hi, method, kw, where, model=v, X=X, R=R)[0] for v in views]
    return np.stack(parts, axis=1), int(f.n_evals - e0), time.perf_counter() - t0


def output_decomposition_task(lo: int, hi: int, kw: dict, normalize: bool, where: str, *,
                              model, X, R, outputs: int):
    """One decomposition chunk of every output (pairs lo..hi - 1): (each output's
    :func:`~.stages.decomposition.decomposition_task` table side by side, model evaluations,
    seconds); each distinct batch of rows is evaluated once for all H outputs."""
    t0 = time.perf_counter()
    f, views = _outputs_of(model, outputs)
    e0 = f.n_evals
    parts = [decomposition_task(lo, hi, kw, normalize, where, model=v, X=X, R=R)[0]
             for v in views]
    return np.concatenate(parts, axis=1), int(f.n_evals - e0), time.perf_counter() - t0


def _outputs_of(model, H: int) -> tuple:
    """(the model as an :class:`insdel.Model` with H outputs, its H output views sharing one
    store of its values)."""
    from ..adapter import as_model
    from ..multi_output import output_views

    f = as_model(resolve_model(model), outputs=H)
    return f, output_views(f)


def _decompositions(p: PolicyRun, H: int, ev) -> list:
    """The exact decomposition of the first ``decomposition.n_pairs`` pairs for each output
    (:func:`insdel.runner.stages.decomposition.decomposition_array` with
    :func:`output_decomposition_task`: each chunk decomposes every output, checkpointed in
    ``checkpoints/<policy>/decomposition``), as the single-output run's per-pair tables with
    every method's ABC of that output (under the primary removal, as the single-output run);
    [] when ``n_pairs = 0``."""
    primary = p.removals[0]
    arr = decomposition_array(p.cfg, p.model, p.X, p.R, p.label, p.out, p.base_key, p.stages,
                              p.log, p.progress, p.interrupt, p.client, p.remote,
                              groups=p.groups,
                              removal=None if primary.is_baseline else primary.removal,
                              task=functools.partial(output_decomposition_task, outputs=H))
    if arr is None:
        return []
    W = arr.shape[1] // H
    units = p.X.shape[1] if p.groups is None else p.groups.m
    tables = []
    for h in range(H):
        df = decomposition_table(arr[:, h * W:(h + 1) * W], units)
        for mode in ev.modes:
            for m in ev.methods:
                df[f"abc_{mode}_{m}"] = ev[h].abc_array(m, mode)[:len(df)]
        tables.append(df)
    return tables
