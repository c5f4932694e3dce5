"""The ``[metrics]`` stage: the field's faithfulness metrics (:mod:`insdel.metrics`) on every
method's attributions of a policy's pairs, and how alike they rank the methods."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ... import _checkpoint as ck
from ...report import metrics_table
from ..chunks import chunk_seed
from ..context import PolicyRun
from .attribution import attribute_chunk, method_options
from .data import groups_of

__all__ = ["metrics_stage", "run"]


def _explainer(X, R, *, model, method: str, kw: dict) -> np.ndarray:
    """Re-explain (X, R) with a configured method (metrics that perturb x and explain again)."""
    return attribute_chunk(model, X, R, method, kw)[0]


def metrics_stage(cfg, model, dataset, X, R, atts, label, folder, stages, log, progress,
                  clusters=None, removal=None) -> pd.DataFrame | None:
    """``[metrics]``: every configured metric on every method's attributions (and a seeded random
    attribution, the control), on one shared hybrid cache, under the run's primary removal
    (``removal``; None: the baseline). Writes ``metrics.parquet`` (pair, method, metric, value)
    and ``metrics_summary.csv``; returns the summary."""
    from functools import partial

    from ... import metrics as _metrics

    names = cfg["metrics"]["names"]
    if not names:
        return None
    t0 = time.perf_counter()
    ms = [_metrics.build(n, **dict(cfg["metrics"]["options"].get(n, {}) or {})) for n in names]
    seed = chunk_seed(cfg["seed"], label, "metrics")
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
    res = _metrics.evaluate_metrics(model, X, R, A, metrics=ms, seed=seed, groups=grp,
                                    explainers=explainers, progress=progress, removal=removal)
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
    if len(ms) > 1 and len(A) > 1:  # do the metrics rank the methods alike, pair by pair?
        from ...metrics.agreement import agreement_figure, agreement_markdown, metric_agreement

        agree = metric_agreement(res.scores, res.directions, clusters=clusters,
                                 seed=seed)
        ck.atomic_write_text(folder / "metric_agreement.csv", agree.to_csv(index=False))
        text += ("\n### Agreement: Kendall τ between the metrics' rankings of the methods, "
                 "mean over pairs (± standard error, 95 % bootstrap interval over the "
                 "independent units)\n\n" + agreement_markdown(agree) + "\n")
        if cfg["figures"]["enabled"]:
            import matplotlib.pyplot as plt

            fig = agreement_figure(agree, title=f"{label}: Kendall τ between metrics' method "
                                   "rankings (mean over pairs)")
            (folder.parent / "figures").mkdir(parents=True, exist_ok=True)
            with ck.atomic_write(folder.parent / "figures" / f"{label}_metric_agreement.png",
                                 suffix=".png") as tmp:
                fig.savefig(tmp, dpi=cfg["figures"]["dpi"])
            plt.close(fig)
    ck.atomic_write_text(folder / "metrics.md", text)
    stages.add(f"{label}/metrics", time.perf_counter() - t0, model_evaluations=int(
        res.stats["model_rows"]), hybrids_requested=int(res.stats["requested"]),
        hybrids_evaluated=int(res.stats["evaluated"]))
    log(f"  metrics: {len(ms)} metrics x {len(A)} methods, {res.stats['requested']:,} hybrid "
        f"points requested, {res.stats['evaluated']:,} distinct evaluated, "
        f"{time.perf_counter() - t0:.1f} s")
    return summ


def run(p: PolicyRun) -> None:
    """A policy's metrics (``p.metrics``: their summary, None when none are configured)."""
    primary = p.removals[0].removal if p.removals and not p.removals[0].is_baseline else None
    p.metrics = metrics_stage(p.cfg, p.model, p.dataset, p.X, p.R, p.attributions, p.label,
                              p.folder, p.stages, p.log, p.progress, p.pairing.cluster,
                              removal=primary)
