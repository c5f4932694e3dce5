"""The ``[metrics]`` stage: the field's faithfulness metrics (:mod:`insdel.metrics`) on every
method's attributions of a policy's pairs, and how alike they rank the methods; for a model with
H outputs (:func:`metrics_per_output`) per output through the output views, and aggregated."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ... import _checkpoint as ck
from ..._progress import progress_bar
from ...report import metrics_by_output_table, metrics_table
from ..chunks import chunk_seed
from ..context import PolicyRun
from .attribution import attribute_chunk, method_options
from .data import groups_of

__all__ = ["metrics_stage", "metrics_per_output", "run"]


def _explainer(X, R, *, model, method: str, kw: dict) -> np.ndarray:
    """Re-explain (X, R) with a configured method (metrics that perturb x and explain again)."""
    return attribute_chunk(model, X, R, method, kw)[0]


def _score(cfg, model, dataset, X, R, atts, seed: int, progress, removal):
    """Every configured metric on every method's attributions ``atts`` and a seeded random
    attribution (the control, one draw per unit), on one shared hybrid cache of ``model``:
    :class:`insdel.metrics.MetricResults`. Metrics that re-explain perturbed inputs explain
    them with ``model`` and each method's configured options."""
    from functools import partial

    from ... import metrics as _metrics

    names = cfg["metrics"]["names"]
    ms = [_metrics.build(n, **dict(cfg["metrics"]["options"].get(n, {}) or {})) for n in names]
    grp = groups_of(dataset)
    # the random control: one draw per unit (a per-column draw summed per group is not uniform)
    shape_of = (lambda X_: X_.shape) if grp is None else (lambda X_: (X_.shape[0], grp.m))
    A = dict(atts)
    A.setdefault("random", np.random.default_rng(seed).normal(size=shape_of(X)))
    explainers = None
    if any(m.needs_explainer for m in ms):
        explainers = {meth: partial(_explainer, model=model, method=meth, kw=method_options(
            meth, dict(cfg["methods"]["options"].get(meth, {}) or {}), seed, dataset,
            cfg["model"]["engine"]))
            for meth in atts}
        # the random control re-draws: its explanation does not depend on x
        explainers["random"] = lambda X_, R_: np.random.default_rng(seed).normal(
            size=shape_of(X_))
    return _metrics.evaluate_metrics(model, X, R, A, metrics=ms, seed=seed, groups=grp,
                                     explainers=explainers, progress=progress, removal=removal)


def _agreement(cfg, scores, directions, clusters, seed, folder, label, title: str):
    """Kendall τ between the metrics' rankings of the methods (:func:`metric_agreement`) of
    ``scores``, its Markdown section, and (``figures.enabled``) its heat map
    ``figures/<label>_metric_agreement.png``: (table, Markdown)."""
    from ...metrics.agreement import agreement_figure, agreement_markdown, metric_agreement

    agree = metric_agreement(scores, directions, clusters=clusters, seed=seed)
    text = ("\n### Agreement: Kendall τ between the metrics' rankings of the methods, "
            f"{title}mean over pairs (± standard error, 95 % bootstrap interval over the "
            "independent units)\n\n" + agreement_markdown(agree) + "\n")
    if cfg["figures"]["enabled"]:
        import matplotlib.pyplot as plt

        fig = agreement_figure(agree, title=f"{label}: Kendall τ between metrics' method "
                               f"rankings ({title}mean over pairs)")
        (folder.parent / "figures").mkdir(parents=True, exist_ok=True)
        with ck.atomic_write(folder.parent / "figures" / f"{label}_metric_agreement.png",
                             suffix=".png") as tmp:
            fig.savefig(tmp, dpi=cfg["figures"]["dpi"])
        plt.close(fig)
    return agree, text


def metrics_stage(cfg, model, dataset, X, R, atts, label, folder, stages, log, progress,
                  clusters=None, removal=None) -> pd.DataFrame | None:
    """``[metrics]``: every configured metric on every method's attributions (and a seeded random
    attribution, the control), on one shared hybrid cache, under the run's primary removal
    (``removal``; None: the baseline). Writes ``metrics.parquet`` (pair, method, metric, value)
    and ``metrics_summary.csv``; returns the summary. The stage's ``model_evaluations`` are all
    the model rows it evaluates (the hybrids, the metrics' own points and the re-explaining
    metrics' explainer calls, gradient rows included), ``gradient_evaluations`` those with an
    input gradient, as :func:`metrics_per_output` counts per output."""
    names = cfg["metrics"]["names"]
    if not names:
        return None
    from ...adapter import as_model

    t0 = time.perf_counter()
    seed = chunk_seed(cfg["seed"], label, "metrics")
    # one Model for the metrics' rows and the explainers' re-explanations (forward and gradient
    # rows), so that its counts are every model evaluation of the stage, as metrics_per_output's
    f = as_model(model)
    e0, g0 = f.n_evals, f.n_grad_evals
    res = _score(cfg, f, dataset, X, R, atts, seed, progress, removal)
    evals, grads = int(f.n_evals - e0), int(f.n_grad_evals - g0)
    n_methods = res.scores["method"].nunique()
    if res.stats.get("ignores_removal"):
        log(f"  metrics {res.stats['ignores_removal']} build their own points: they do not "
            f"read removal {removal.name!r}")
    with ck.atomic_write(folder / "metrics.parquet", suffix=".parquet") as tmp:
        res.scores.assign(higher_is_better=res.scores["metric"].map(res.directions)).to_parquet(
            tmp, index=False)
    summ = res.summary(clusters).assign(policy=label)
    ck.atomic_write_text(folder / "metrics_summary.csv", summ.drop(columns="policy").to_csv(
        index=False))
    text = metrics_table(summ)
    if len(names) > 1 and n_methods > 1:  # do the metrics rank the methods alike, pair by pair?
        agree, more = _agreement(cfg, res.scores, res.directions, clusters, seed, folder, label,
                                 "")
        ck.atomic_write_text(folder / "metric_agreement.csv", agree.to_csv(index=False))
        text += more
    ck.atomic_write_text(folder / "metrics.md", text)
    stages.add(f"{label}/metrics", time.perf_counter() - t0, model_evaluations=evals,
               gradient_evaluations=grads, hybrids_requested=int(res.stats["requested"]),
               hybrids_evaluated=int(res.stats["evaluated"]))
    log(f"  metrics: {len(names)} metrics x {n_methods} methods, {res.stats['requested']:,} "
        f"hybrid points requested, {res.stats['evaluated']:,} distinct evaluated, {evals:,} "
        f"model rows evaluated ({grads:,} with gradients), {time.perf_counter() - t0:.1f} s")
    return summ


def _scores_frame(vals: np.ndarray, names: list, methods: list) -> pd.DataFrame:
    """The long table ``pair, method, metric, value`` of scores ``vals`` (metrics, methods,
    pairs), in :func:`insdel.metrics.evaluate_metrics`' row order."""
    Q, M, B = vals.shape
    return pd.DataFrame({"pair": np.tile(np.arange(B), Q * M),
                         "method": np.tile(np.repeat(np.asarray(methods, dtype=object), B), Q),
                         "metric": np.repeat(np.asarray(names, dtype=object), M * B),
                         "value": vals.reshape(-1)})


def metrics_per_output(p: PolicyRun, views: list, weights: np.ndarray) -> pd.DataFrame | None:
    """``[metrics]`` of a model with H outputs: for each output h, every configured metric on
    every method's attributions of output h (and the random control) on output h's view
    (:func:`insdel.multi_output.output_views`: the views share one store of the model's values,
    so each distinct batch of rows is evaluated once for all H outputs; the metrics that
    re-explain perturbed inputs explain them with the view, per output), the numbers a
    single-output run on that output's column gives; and their aggregate over the outputs, each
    pair's ``sum_h w_h score_h`` (``weights``, summing to 1; NaN where an output with a positive
    weight has a NaN score).

    Each output's scores are a checkpoint (``checkpoints/<policy>/output_<h>/metrics``) keyed by
    the policy's key (with H), the output h, the metrics and their options, the attributions'
    SHA-256, the methods' options, the seed and the primary removal. Writes ``metrics.parquet``
    (``output``, then the single-output table's columns), ``metrics_summary.csv`` (``output`` =
    0 .. H - 1 or ``weighted``, then the single-output summary's columns), ``metrics.md`` and,
    with two metrics or more, ``metric_agreement.csv`` (per output and for the aggregate) and the
    aggregate's agreement figure. Returns the summary with a ``policy`` column (None without
    ``metrics.names``)."""
    from ... import metrics as _metrics
    from ...multi_output import aggregate_scores
    from ..removals import removal_record

    cfg = p.cfg
    names = list(cfg["metrics"]["names"])
    if not names:
        return None
    t_all = time.perf_counter()
    H = len(views)
    primary = p.removals[0] if p.removals else None
    removal = None if primary is None or primary.is_baseline else primary.removal
    seed = chunk_seed(cfg["seed"], p.label, "metrics")
    atts = _with_random_method(p, views[0], H)
    methods = list(dict.fromkeys([*atts, "random"]))  # evaluate_metrics' order
    key_of = {**p.base_key, "stage": "metrics", "metrics_seed": seed,
              "metrics": [[n, dict(cfg["metrics"]["options"].get(n, {}) or {})] for n in names],
              "methods": methods,
              "methods_options": {m: dict(cfg["methods"]["options"].get(m, {}) or {})
                                  for m in atts},
              "attributions": {m: ck.sha256_arrays(a) for m, a in atts.items()}}
    if removal is not None:  # absent: the keys of a run without a removal
        key_of["removal"] = removal_record(removal)
    directions = {n: _metrics.get(n).higher_is_better for n in names}
    per_output, ignores, resumed_total, evals_total = [], set(), 0, 0
    with progress_bar(H, f"  metrics per output [{p.label}]", unit="output",
                      enable=p.progress, log=p.log) as bar:
        for h, view in enumerate(views):
            # the model's forward rows (shared by the views) and the view's gradient rows (a
            # re-explaining metric's gradient methods differentiate output h alone)
            t0, e0, g0 = time.perf_counter(), p.model.n_evals, view.n_grad_evals
            vals, flags, stats, resumed = _output_scores(p, h, view, atts, key_of, names,
                                                         methods, seed, removal)
            ignores.update(n for n, f in zip(names, flags, strict=True) if f)
            grads = int(view.n_grad_evals - g0)
            evals = int(p.model.n_evals - e0) + grads
            p.stages.add(f"{p.label}/output_{h}/metrics", time.perf_counter() - t0,
                         model_evaluations=evals, gradient_evaluations=grads,
                         hybrids_requested=int(stats["requested"]),
                         hybrids_evaluated=int(stats["evaluated"]), chunks_resumed=resumed)
            resumed_total += resumed
            evals_total += evals
            per_output.append(vals)
            bar.update(1)
    if ignores:
        log_names = [n for n in names if n in ignores]
        p.log(f"  metrics {log_names} build their own points: they do not read removal "
              f"{removal.name!r}")
    allv = np.stack(per_output)                                   # (H, metrics, methods, B)
    agg = aggregate_scores(allv, weights)  # NaN where a weighted output is NaN
    frames = [_scores_frame(v, names, methods) for v in per_output]
    clusters = p.pairing.cluster
    table = pd.concat([fr.assign(higher_is_better=fr["metric"].map(directions)).assign(output=h)
                       for h, fr in enumerate(frames)], ignore_index=True)
    table = table[["output"] + [c for c in table.columns if c != "output"]]
    folder = p.folder
    folder.mkdir(parents=True, exist_ok=True)
    with ck.atomic_write(folder / "metrics.parquet", suffix=".parquet") as tmp:
        table.to_parquet(tmp, index=False)
    outs = [*range(H), "weighted"]
    frames.append(_scores_frame(agg, names, methods))
    summ = pd.concat([_metrics.MetricResults(fr, directions).summary(clusters).assign(output=o)
                      for o, fr in zip(outs, frames, strict=True)], ignore_index=True)
    summ = summ[["output"] + [c for c in summ.columns if c != "output"]]
    ck.atomic_write_text(folder / "metrics_summary.csv", summ.to_csv(index=False))
    summ = summ.assign(policy=p.label)
    text = metrics_by_output_table(summ)
    if len(names) > 1 and len(methods) > 1:  # do the metrics rank the methods alike?
        from ...metrics.agreement import metric_agreement

        agree = [metric_agreement(fr, directions, clusters=clusters, seed=seed).assign(output=o)
                 for o, fr in zip(outs[:-1], frames[:-1], strict=True)]
        last, more = _agreement(cfg, frames[-1], directions, clusters, seed, folder, p.label,
                                "of the weighted aggregate over the outputs, ")
        agree = pd.concat([*agree, last.assign(output="weighted")], ignore_index=True)
        agree = agree[["output"] + [c for c in agree.columns if c != "output"]]
        ck.atomic_write_text(folder / "metric_agreement.csv", agree.to_csv(index=False))
        text += more + ("\nEach output's agreement is in `metric_agreement.csv` (column "
                        "`output`).\n")
    ck.atomic_write_text(folder / "metrics.md", text)
    p.log(f"  metrics: {len(names)} metrics x {len(methods)} methods x {H} outputs, "
          f"{evals_total:,} model rows evaluated ({resumed_total} of {H} outputs resumed), "
          f"{time.perf_counter() - t_all:.1f} s")
    return summ


def _with_random_method(p: PolicyRun, view, H: int) -> dict:
    """The policy's attributions (B, H, n) per method and, when ``methods.names`` has
    ``random``, the random method's (its checkpointed chunks, the same for every output): the
    metrics' random control of a single-output run. (A multi-output run's curves score random
    orderings under ``random``, not the method, so its attribution stage leaves it out.)"""
    from .attribution import attribute_all, experiment_plan

    atts = dict(p.attributions)
    if "random" in p.cfg["methods"]["names"] and "random" not in atts:
        cfg = {**p.cfg, "methods": {**p.cfg["methods"], "names": ["random"]}}
        one = attribute_all(cfg, view, p.dataset, p.X, p.R, experiment_plan(cfg, p.out, p.label),
                            p.base_key, p.stages, p.log, False, p.interrupt)["random"]
        atts["random"] = np.repeat(one[:, None], H, axis=1)
    return atts


def _output_scores(p: PolicyRun, h: int, view, atts: dict, key_of: dict, names: list,
                   methods: list, seed: int, removal) -> tuple[np.ndarray, np.ndarray, dict, int]:
    """Output h's scores (metrics, methods, pairs) and which metrics build their own points
    (metrics,), from its checkpoint or scored on its view and saved: (scores, flags, the
    hybrid counts, 1 when resumed else 0)."""
    store = ck.ChunkStore(p.out / "checkpoints" / p.label / f"output_{h}" / "metrics",
                          ck.config_hash({**key_of, "output": h}))
    if store.done(0) and store.done(1):
        return store.load(0), store.load(1), {"requested": 0, "evaluated": 0}, 1
    res = _score(p.cfg, view, p.dataset, p.X, p.R,
                 {m: a[:, h] for m, a in atts.items()}, seed, False, removal)
    got = list(dict.fromkeys(res.scores["method"]))
    if got != methods:
        raise RuntimeError(f"the metrics scored methods {got}; expected {methods}.")
    vals = res.scores["value"].to_numpy(np.float64).reshape(len(names), len(methods), -1)
    flags = np.array([n in res.stats.get("ignores_removal", ()) for n in names])
    store.save(0, vals)
    store.save(1, flags)
    if p.interrupt is not None:
        p.interrupt()
    return vals, flags, res.stats, 0


def run(p: PolicyRun) -> None:
    """A policy's metrics (``p.metrics``: their summary, None when none are configured)."""
    primary = p.removals[0].removal if p.removals and not p.removals[0].is_baseline else None
    p.metrics = metrics_stage(p.cfg, p.model, p.dataset, p.X, p.R, p.attributions, p.label,
                              p.folder, p.stages, p.log, p.progress, p.pairing.cluster,
                              removal=primary)
