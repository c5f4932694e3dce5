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
``decomposition_by_output.csv``); for the run ``summary.csv`` (a ``policy`` and an ``output``
column), ``summary.md`` and ``manifest.json``. No figures, no checkpointed chunks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import _checkpoint as ck
from ..report import run_header
from .experiment import RunResult
from .provenance import Stages, run_manifest
from .stages.attribution import method_options
from .stages.decomposition import DECOMP_COLS, decomposition_table, decomposition_task
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
              model_info: dict, stages: Stages, log, progress, before, grp, client=None):
    """The policies of a multi-output run (see the module docstring); a
    :class:`insdel.runner.RunResult` whose ``evaluations`` are
    :class:`insdel.multi_output.MultiEvaluation` per policy label."""
    import insdel

    from ..multi_output import check_output_weights, output_views
    from .experiment import _make_policy
    from .stages.data import select_pool

    if client is not None:
        raise ValueError("client=: a Dask client is refused for a model with several outputs "
                         "(model.outputs): the output views share one store of the model's "
                         "values in this process, which workers would not share.")
    t_all = time.perf_counter()
    H = cfg["model"]["outputs"]
    pool, pool_idx = select_pool(dataset, cfg["targets"]["n"], cfg["seed"])
    model = multi_model(model, H, pool)
    weights = check_output_weights(cfg["model"]["output_weights"], H)
    log(f"model: {H} outputs, aggregate weights {np.round(weights, 4).tolist()}")
    ev_cfg = cfg["evaluation"]
    if cfg["figures"]["enabled"]:
        log("figures: not drawn for a model with several outputs (abc_by_output.csv holds the "
            "ABCs per output)")
    evaluations, pairings, policy_specs, summaries = {}, {}, {}, []
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
        X, R = np.ascontiguousarray(pairing.X), np.ascontiguousarray(pairing.R)
        views = output_views(model)
        attr = {}
        for m in cfg["methods"]["names"]:
            if m == "random":
                continue  # the random orderings of evaluation.n_random
            opts = method_options(m, (cfg["methods"]["options"] or {}).get(m, {}), cfg["seed"],
                                  dataset)
            attr[m] = np.stack([insdel.attribute(v, X, R, method=m, **opts) for v in views],
                               axis=1)
            log(f"  {m}: attributions per output {attr[m].shape}")
        ev = insdel.evaluate(model, X, R, attr, modes=ev_cfg["modes"], n_random=ev_cfg["n_random"],
                             seed=cfg["seed"], normalize=ev_cfg["normalize"],
                             order=ev_cfg["order"], groups=grp, output_weights=weights)
        decs = _decompositions(cfg, views, X, R, grp, ev, label, log)
        stages.add(f"{label}/multi_output", time.perf_counter() - t0, pairs=len(pairing),
                   model_evaluations=int(model.n_evals))
        model.n_evals = 0
        folder = out / label
        folder.mkdir(parents=True, exist_ok=True)
        for h in range(H):
            ev[h].save(folder / f"output_{h}", pairing=pairing)
            if decs:
                with ck.atomic_write(folder / f"output_{h}" / "decomposition.parquet",
                                     suffix=".parquet") as tmp:
                    decs[h].to_parquet(tmp, index=False)
                decomposition_rows.append(decs[h][DECOMP_COLS].mean().to_frame().T.assign(
                    policy=label, output=h))
        with ck.atomic_write(folder / "attributions.npz", suffix=".npz") as tmp:
            np.savez(tmp, **attr)
        table = ev.summary()
        ck.atomic_write_text(folder / "abc_by_output.csv", table.to_csv(index=False))
        summaries.append(table.assign(policy=label))
        evaluations[label], pairings[label] = ev, pairing
    summary = pd.concat(summaries, ignore_index=True)
    summary = summary[["policy"] + [c for c in summary.columns if c != "policy"]]
    ck.atomic_write_text(out / "summary.csv", summary.to_csv(index=False))
    header = run_header(data_info, model_info, policy_specs)
    text = header + "\n\n" + summary_markdown(summary, H, weights)
    if decomposition_rows:
        dec = pd.concat(decomposition_rows, ignore_index=True)[["policy", "output", *DECOMP_COLS]]
        ck.atomic_write_text(out / "decomposition_by_output.csv", dec.to_csv(index=False))
        text += "\n\n## Exact decomposition (mean over the decomposed pairs)\n\n" + "\n".join(
            ["| " + " | ".join(dec.columns) + " |", "|---" * dec.shape[1] + "|"]
            + ["| " + " | ".join([str(r[0]), str(r[1])] + [f"{v:.3f}" for v in r[2:]]) + " |"
               for r in dec.itertuples(index=False)])
    ck.atomic_write_text(out / "summary.md", text + "\n")
    evals_total = sum(int(v.get("model_evaluations", 0)) for v in stages.stages.values())
    manifest = run_manifest(
        cfg, out, before, data_info=data_info, model_info=model_info,
        model_metrics=model_metrics, stages=stages, used=model_files(model_info),
        before_model={"policies": list(evaluations), "policy_specs": policy_specs,
                      "outputs": H, "output_weights": weights.tolist()},
        compute={"device": cfg["compute"]["device"],
                 "seconds_total": time.perf_counter() - t_all,
                 "model_evaluations_total": evals_total})
    return MultiRunResult(out=out, config=cfg, evaluations=evaluations, pairings=pairings,
                          summary=summary, diagnostics=pd.DataFrame(), manifest=manifest,
                          model=model, dataset=dataset, markdown=text)


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


def _decompositions(cfg: dict, views: list, X: np.ndarray, R: np.ndarray, grp, ev, label: str,
                    log) -> list:
    """The exact decomposition of the first ``decomposition.n_pairs`` pairs for each output (its
    view: each distinct batch of rows evaluated once for all outputs), as the single-output
    run's per-pair tables with every method's ABC of that output; [] when ``n_pairs = 0``."""
    K = min(cfg["decomposition"]["n_pairs"], X.shape[0])
    if K == 0:
        return []
    kw = {"progress": False, "max_d": cfg["decomposition"]["max_d"]}
    if grp is not None:
        kw["groups"] = grp
    n = X.shape[1] if grp is None else grp.m
    tables = []
    for h, view in enumerate(views):
        arr, _, _ = decomposition_task(0, K, kw, cfg["evaluation"]["normalize"],
                                       "pairs {lo}..{hi} of policy " + repr(label) +
                                       f", output {h}", model=view, X=X, R=R)
        df = decomposition_table(arr, n)
        for mode in ev.modes:
            for m in ev.methods:
                df[f"abc_{mode}_{m}"] = ev[h].abc_array(m, mode)[:K]
        tables.append(df)
    log(f"  exact decomposition of {K} pairs for each of the {len(views)} outputs")
    return tables
