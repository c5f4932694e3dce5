"""``insdel road``: ROAD for regression from a configuration (:mod:`insdel.road`, docs/road.md).

The data and model stages and the attribution stage are the experiment's and ROAR's
(:mod:`insdel.runner.stages`); the removal is built from the registry by name and fitted on the
training rows; the curves are :func:`insdel.road.evaluate` on the test rows, the imputation's check
:func:`insdel.road.leakage`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import _checkpoint as ck
from .. import config as _config
from .._checkpoint import to_jsonable
from .._progress import bars_shown
from .._validation import check_progress
from ..distributed import client_info, scatter
from ..report import run_header
from .chunks import shareable_model
from .context import logger
from .provenance import Stages, pairs_key, run_manifest
from .removals import build_removal
from .session import loaded, opened
from .stages.attribution import AttributionPlan, attribute_all
from .stages.data import (
    dataset_info,
    groups_of,
    groups_text,
    load_dataset,
    log_dataset,
    policy_references,
)
from .stages.model import model_files, model_stage

__all__ = ["RoadRun", "run_road", "removal_text"]


@dataclass
class RoadRun:
    """A finished ROAD run: the curves (``road.csv``), the per-method summary
    (``road_summary.csv``), the leakage table (``leakage.csv``, None when ``road.leakage`` is
    false), the removal's parameters, the figure and the manifest."""

    out: Path
    config: dict
    curves: pd.DataFrame
    summary: pd.DataFrame
    leakage: pd.DataFrame | None
    removal: dict
    manifest: dict
    markdown: str = ""
    figure: Path | None = None

    def to_markdown(self) -> str:
        """The tables of ``summary.md`` (below its header): the removal, SRG and the leakage."""
        return self.markdown


def road_plan(cfg: Mapping, out: Path) -> AttributionPlan:
    """The attribution plan of ROAD: ``road.points_per_chunk`` test rows a chunk, checkpoints in
    ``out/checkpoints/road_attributions/<method>``."""
    return AttributionPlan(size=cfg["road"]["points_per_chunk"], size_key="points_per_chunk",
                           key_stage="road_attributions",
                           folder=out / "checkpoints" / "road_attributions", stream="road",
                           rows="test rows", suffix="", record="attributions",
                           bar="road attributions")


def removal_text(params: Mapping) -> str:
    """``name (key = value, ...)`` of a removal's ``params()`` (the summary's line)."""
    rest = ", ".join(f"{k} = {v}" for k, v in params.items() if k != "name")
    return f"{params.get('name', '?')}" + (f" ({rest})" if rest else "")


def run_road(config: str | os.PathLike | Mapping, out: str | os.PathLike | None = None, *,
             quick: bool = False, progress: bool | None = None, verbose: bool = False,
             wait: bool = False, client=None,
             _interrupt: Callable[[], None] | None = None) -> RoadRun:
    """Run a ROAD experiment (:mod:`insdel.road`, ``docs/road.md``).

    The configuration's ``[data]``, ``[model]``, ``[methods]``, ``[compute]`` and ``[road]`` are
    read; any other table is an error. The model (trained, or loaded from the folder's cache or
    ``model.path``) gives every method's attributions of the test rows (the first
    ``road.n_rows``; against ``road.reference``: the training mean / mode, or a policy's
    references), checkpointed in chunks. The removal ``road.removal`` (a registered
    :class:`~insdel.removal.SampledRemoval`, with ``road.removal_options``) is fitted on the
    training rows; :func:`insdel.road.evaluate` gives the MoRF / LeRF loss curves and SRG, and
    :func:`insdel.road.leakage` (``road.leakage``) whether the imputation reveals what it removed.

    A data set with feature groups (a one-hot categorical column) is evaluated by units: a group
    is ranked, removed and imputed as a whole (the removal gets the one-hot blocks as
    ``one_hot=`` when it takes it). ``road.n_seeds`` repeats the removal's draws. An
    ``n_rows`` (``road.n_rows``, ``road.leakage_options.n_rows``) larger than the rows there are
    is capped, with one line on stderr and in ``summary.md`` naming the key, the requested and
    the used value.

    Outputs in ``out``: ``road.csv`` (method, order, q, k, loss, mse, rmse, mae),
    ``road_summary.csv`` (areas, SRG, ranks, SRG's standard error, its s.d. over seeds, the
    methods within noise), ``road_repeats.csv`` (each repeat's curves, when ``road.n_seeds`` >
    1), ``leakage.csv`` (per feature or group, with Wilson intervals), ``summary.md`` (the
    removal and its parameters, the tables, the leakage verdict), ``figures/road.png``,
    ``attributions.npz`` and ``manifest.json``. Started again on the same folder it reuses the trained model and the
    attribution chunks and writes identical data files.
    """
    check_progress(progress)
    cfg = loaded(config, quick)
    _config.check_sections(cfg, "road")
    with opened(cfg, out, wait, client, verbose, kind="road") as (folder, before, cl):
        return _run_road(cfg, folder, progress, verbose, _interrupt, cl, before)


def _reference(cfg, model, dataset, X: np.ndarray, progress, log) -> np.ndarray:
    """The attributions' references of the rows X: the training mean / mode, or a policy's."""
    from .. import roar as _roar

    ref = cfg["road"]["reference"]
    if ref == "training_mean":
        log(f"reference: the training mean (mode of the {int(dataset.binary_mask.sum())} binary "
            "features)")
        return np.broadcast_to(_roar.removal_values(dataset), X.shape).copy()
    return policy_references(cfg, model, X, ref, progress, log, key="road.reference",
                             rows="test rows", need="ROAD needs a reference for every evaluated "
                             "row")


def _markdown(res, removal: Mapping, lk, rows: int, data_name: str, units: str | None,
              capped: list[str]) -> str:
    lines = [f"### Removal\n\n- removal: {removal_text(removal)}, fitted on the training rows",
             f"- evaluated: {rows} test rows of {data_name}, against their true targets"]
    if units is not None:
        lines.append(f"- units: {units} (a group is removed and imputed as a whole; k counts "
                     "units)")
    if res.n_seeds > 1:
        lines.append(f"- the removal's draws repeated {res.n_seeds} times (road.n_seeds); the "
                     "curves are their means")
    lines += [f"- {c}" for c in capped]
    lines += ["", res.to_markdown()]
    if lk is not None:
        unit = "unit" if units is not None else "feature"
        lines += [f"### Leakage of the removal ({lk.classifier} classifier, {lk.n_rows} rows, "
                  f"each {unit} removed with probability {lk.fraction:g})\n",
                  f"Mean accuracy of telling a removed {unit} from its imputed row: "
                  f"{lk.accuracy:.3f} against chance {lk.chance:.3f} (excess {lk.excess:+.3f}); "
                  f"verdict: {lk.verdict_text()}\n",
                  f"| {unit.capitalize()} | Accuracy | {lk.level:.0%} interval | Chance | Excess |",
                  "|---|---:|---:|---:|---:|"]
        lines += [f"| {r.feature} | {r.accuracy:.3f} | [{r.ci_low:.3f}, {r.ci_high:.3f}] | "
                  f"{r.chance:.3f} | {r.excess:+.3f} |" for r in lk.table.itertuples()]
    return "\n".join(lines) + "\n"


def _capped(key: str, requested: int, used: int, what: str) -> str:
    """The line that says an option was capped; printed on stderr as it happens."""
    line = f"{key} = {requested} asks for more rows than the {used} {what}: used {used}"
    print(f"note: {line}.", file=sys.stderr, flush=True)
    return line


def _run_road(cfg, out: Path, progress, verbose: bool, interrupt, client=None,
              before: Mapping[Path, tuple] | None = None) -> RoadRun:
    """ROAD in ``out`` (locked): data, model, references, attributions, removal, curves,
    leakage, summary, figure, manifest."""
    from .. import plotting
    from .. import road as _road

    log = logger(verbose)
    stages = Stages()
    t_all = time.perf_counter()
    r = cfg["road"]
    dataset = load_dataset(cfg)
    grp = groups_of(dataset)
    data_info = dataset_info(cfg, dataset)
    log_dataset(data_info, log, file=False)
    if grp is not None:
        log(f"units: {groups_text(grp)}")
    t0 = time.perf_counter()  # before the model: a removal that cannot be built fails at once
    removal = build_removal(cfg, r["removal"], r["removal_options"], dataset,
                            where="road.removal_options", run_seed=False, sampled=True)
    params = to_jsonable(dict(removal.params()))
    stages.add("road/removal", time.perf_counter() - t0)
    log(f"removal: {removal_text(params)}, fitted on {len(dataset.X_train)} training rows")
    model, metrics, model_info = model_stage(cfg, dataset, data_info, out, stages, log, progress,
                                           with_trees=True)
    device = cfg["compute"]["device"]
    n_test = len(dataset.X_test)
    n_rows = n_test if r["n_rows"] is None else min(r["n_rows"], n_test)
    capped = [] if n_rows == (r["n_rows"] or n_test) else [
        _capped("road.n_rows", r["n_rows"], n_rows, "test rows")]
    X = np.ascontiguousarray(dataset.X_test[:n_rows], dtype=np.float64)
    y = np.asarray(dataset.y_test[:n_rows], dtype=np.float64)
    log(f"road: {n_rows} of {len(dataset.X_test)} test rows")
    R = _reference(cfg, model, dataset, X, progress, log)
    base_key = pairs_key(cfg, data_info, model_info, X, R, reference=r["reference"])
    remote = None if client is None else dict(zip(("model", "X", "R"), scatter(
        client, [shareable_model(model, cfg, X.shape[1], None), X, R]), strict=True))
    atts = attribute_all(cfg, model, dataset, X, R, road_plan(cfg, out), base_key, stages, log,
                         progress, interrupt, client=client, remote=remote)
    ck.save_npz(out / "attributions.npz", atts)

    t0 = time.perf_counter()
    if not bars_shown(progress):  # no bar: one plain line names the long stage
        log(f"road curves: started ({len(atts)} methods, {n_rows} rows, removal {removal.name})")
    res = _road.evaluate(model, X, y, atts, removal, fractions=r["fractions"], orders=r["orders"],
                     ranking=r["ranking"], loss=r["loss"], random=r["random"], seed=cfg["seed"],
                     groups=grp, n_seeds=r["n_seeds"], progress=progress)
    stages.add("road/curves", time.perf_counter() - t0, units=int(len(res.curves)))
    lk = None
    if r["leakage"]:
        t0 = time.perf_counter()
        lo = r["leakage_options"]
        lk = _road.leakage(X, removal, fraction=lo["fraction"], n_rows=lo["n_rows"],
                           classifier=lo["classifier"], folds=lo["folds"], seed=cfg["seed"],
                           feature_names=dataset.feature_names, groups=grp)
        stages.add("road/leakage", time.perf_counter() - t0)
        # the default n_rows is an upper bound, not a request: only a value the user set is noted
        default = _config.schema.ROAD_SCHEMA["leakage_options"]["n_rows"][1]
        if lk.capped and lo["n_rows"] != default:
            capped.append(_capped("road.leakage_options.n_rows", lo["n_rows"], lk.n_rows,
                                  "evaluated test rows"))
        log(f"leakage: {lk.verdict_text()}")

    ck.atomic_write_text(out / "road.csv", res.curves.to_csv(index=False))
    ck.atomic_write_text(out / "road_summary.csv", res.summary.to_csv(index=False))
    if res.repeats is not None:
        ck.atomic_write_text(out / "road_repeats.csv", res.repeats.to_csv(index=False))
    else:  # an earlier run's repeats would not be this run's
        (out / "road_repeats.csv").unlink(missing_ok=True)
    if lk is not None:
        ck.atomic_write_text(out / "leakage.csv", lk.table.to_csv(index=False))
    else:  # an earlier run's table would describe another removal
        (out / "leakage.csv").unlink(missing_ok=True)
    text = _markdown(res, params, lk, n_rows, data_info["name"],
                     None if grp is None else groups_text(grp), capped)
    header = run_header(data_info, model_info, {"reference": r["reference"]})
    ck.atomic_write_text(out / "summary.md", header + "\n" + text)
    import matplotlib.pyplot as plt

    with plt.rc_context({"figure.max_open_warning": 0}):
        fig = plotting.plot_road(res, title=f"ROAD on {data_info['name']} "
                                 f"({params.get('name', '?')} imputation)").figure
        fig_path = plotting.save_figure(fig, out / "figures" / "road.png", 110)
    leak_info = None if lk is None else {
        "accuracy": lk.accuracy, "chance": lk.chance, "excess": lk.excess,
        "fraction": lk.fraction, "classifier": lk.classifier, "n_rows": lk.n_rows,
        "n_rows_requested": lk.n_rows_requested, "folds": r["leakage_options"]["folds"],
        "interval": [lk.ci_low, lk.ci_high], "level": lk.level, "verdict": lk.verdict()}
    manifest = run_manifest(
        cfg, out, before, data_info=data_info, model_info=model_info, model_metrics=metrics,
        stages=stages, used=model_files(model_info),
        after_model={"road": {"fractions": list(r["fractions"]), "orders": list(r["orders"]),
                              "ranking": res.ranking, "loss": res.loss, "random": r["random"],
                              "reference": r["reference"], "rows": n_rows,
                              "n_seeds": res.n_seeds, "units": res.units,
                              "methods": list(cfg["methods"]["names"]),
                              "removal": params, "leakage": leak_info}},
        compute={"device": device, **client_info(client),
                 "seconds_total": time.perf_counter() - t_all})
    return RoadRun(out=out, config=cfg, curves=res.curves, summary=res.summary,
                   leakage=None if lk is None else lk.table, removal=params, manifest=manifest,
                   markdown=text, figure=fig_path)
