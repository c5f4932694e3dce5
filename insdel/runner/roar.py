"""``insdel roar``: ROAR for regression from a configuration (paper §6, :mod:`insdel.roar`).

The data and model stages and the attribution stage are the experiment's
(:mod:`insdel.runner.stages`); the retrainings are :func:`insdel.roar.roar`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import _checkpoint as ck
from .. import config as _config
from .._validation import check_progress
from ..distributed import client_info, scatter
from ..report import run_header
from .chunks import shareable_model
from .context import logger
from .provenance import Stages, pairs_key, run_manifest
from .removals import build_removal, params_text, removal_record
from .session import loaded, opened
from .stages.attribution import attribute_all, roar_plan
from .stages.data import (
    dataset_info,
    load_dataset,
    log_dataset,
    policy_references,
    refuse_groups,
)
from .stages.model import model_files, model_stage

__all__ = ["RoarRun", "run_roar"]


@dataclass
class RoarRun:
    """A finished ROAR run: the per-training table (``roar.csv``), its summary, the figure and the
    manifest."""

    out: Path
    config: dict
    table: pd.DataFrame
    summary: pd.DataFrame
    manifest: dict
    figure: Path | None = None

    def to_markdown(self, digits: int = 4) -> str:
        """The summary as Markdown (the text of ``summary.md`` below its header)."""
        from .. import roar as _roar

        return _roar.to_markdown(self.summary, digits)


def run_roar(config: str | os.PathLike | Mapping, out: str | os.PathLike | None = None, *,
             quick: bool = False, progress: bool | None = None, verbose: bool = False,
             wait: bool = False, client=None,
             _interrupt: Callable[[], None] | None = None) -> RoarRun:
    """Run a ROAR experiment (paper §6, :mod:`insdel.roar`, ``docs/roar.md``).

    The configuration's ``[data]``, ``[model]`` (a preset or params: every retraining uses them),
    ``[methods]`` (names and options), ``[compute]`` and ``[roar]`` are read; any other table is an
    error. The model trained on the unmodified data gives the attributions of every training and
    test point, against the removal point itself (``roar.reference = "removal"``: training mean /
    mode) or the references of a policy; then every (method, ordering, q, replicate) is one
    checkpointed retraining. With ``compute.backend = "dask"`` (or ``client=``) the attribution
    chunks run on Dask workers (the retrainings stay on the driver).

    Outputs in ``out``: ``roar.csv`` (method, ordering, q, replicate, loss, epochs),
    ``roar_summary.csv`` / ``summary.md`` (mean ± se per q and the area against the straight line),
    ``figures/roar.png`` (Figure 13), ``attributions.npz`` and ``manifest.json``. Started again on
    the same folder it resumes without retraining finished units, with identical results.
    """
    check_progress(progress)
    cfg = loaded(config, quick)
    _config.check_sections(cfg, "roar")
    with opened(cfg, out, wait, client, verbose, kind="roar") as (folder, before, cl):
        return _run_roar(cfg, folder, progress, verbose, _interrupt, cl, before)


def _run_roar(cfg, out: Path, progress, verbose: bool, interrupt, client=None,
              before: Mapping[Path, tuple] | None = None) -> RoarRun:
    """ROAR in ``out`` (locked): data, model, references, attributions, retrainings, summary,
    figure, manifest."""
    from .. import plotting
    from .. import roar as _roar

    log = logger(verbose)
    stages = Stages()
    t_all = time.perf_counter()
    dataset = load_dataset(cfg)
    refuse_groups(cfg, dataset, "ROAR removes single features")
    data_info = dataset_info(cfg, dataset)
    log_dataset(data_info, log, file=False)
    model, metrics, model_info = model_stage(cfg, dataset, data_info, out, stages, log, progress,
                                           with_trees=True)
    device = cfg["compute"]["device"]
    values = _roar.removal_values(dataset)
    Xall = np.concatenate([dataset.X_train, dataset.X_test]).astype(np.float64)
    ref = cfg["roar"]["reference"]
    if ref == "removal":
        R = np.broadcast_to(values, Xall.shape).copy()
        log(f"reference: the removal point (training mean, mode of the "
            f"{int(dataset.binary_mask.sum())} binary features)")
    else:
        R = policy_references(cfg, model, Xall, ref, progress, log, key="roar.reference",
                              rows="points", need="ROAR needs a reference for every training "
                              "and test point")
    base_key = pairs_key(cfg, data_info, model_info, Xall, R, reference=ref)
    remote = None if client is None else dict(zip(("model", "X", "R"), scatter(
        client, [shareable_model(model, cfg, Xall.shape[1], None), Xall, R]), strict=True))
    atts = attribute_all(cfg, model, dataset, Xall, R, roar_plan(cfg, out), base_key, stages, log,
                         progress, interrupt, client=client, remote=remote)
    ck.save_npz(out / "attributions.npz", atts)
    spec = cfg["model"]["preset"] if cfg["model"]["preset"] is not None else \
        dict(cfg["model"]["params"] or {})
    r = cfg["roar"]
    max_epochs = r["max_epochs"] if r["max_epochs"] is not None else cfg["model"]["max_epochs"]
    t0 = time.perf_counter()
    rem = None
    if r["removal"] is not None:
        rem = build_removal(cfg, r["removal"], r["removal_options"], dataset,
                            where="roar.removal_options")
        log(f"removal {r['removal']}: {params_text(removal_record(rem))} (each removed feature "
            "takes the removal's value for its row)")
    table = _roar.roar(dataset, atts, params=spec, orderings=r["orderings"],
                       fractions=r["fractions"], replicates=r["replicates"], seed=cfg["seed"],
                       max_epochs=max_epochs, device=device,
                       store=out / "checkpoints" / "roar", progress=progress, log=log,
                       removal=rem, _interrupt=interrupt)
    stages.add("roar/trainings", time.perf_counter() - t0, units=len(table),
               epochs=int(table["epochs"].sum()))
    summary = _roar.summarize(table)
    ck.atomic_write_text(out / "roar.csv", table.to_csv(index=False))
    ck.atomic_write_text(out / "roar_summary.csv", summary.to_csv(index=False))
    header = run_header(data_info, model_info, {"reference": ref}, removals=None if rem is None
                        else [f"removal {r['removal']}: {params_text(removal_record(rem))} "
                              "(the value of each removed feature in the retrainings)"])
    ck.atomic_write_text(out / "summary.md", header + "\n" + _roar.to_markdown(summary))
    import matplotlib.pyplot as plt

    with plt.rc_context({"figure.max_open_warning": 0}):
        fig = plotting.roar_figure(summary, title=f"ROAR on {data_info['name']}")
        fig_path = plotting.save_figure(fig, out / "figures" / "roar.png", 110)
    manifest = run_manifest(
        cfg, out, before, data_info=data_info, model_info=model_info, model_metrics=metrics,
        stages=stages, used=model_files(model_info),
        after_model={"roar": {**_roar.run_info(cfg, dataset, values),
                              **({} if rem is None else {"removal": removal_record(rem)})}},
        compute={"device": device, **client_info(client),
                 "seconds_total": time.perf_counter() - t_all, "trainings": int(len(table)),
                 "epochs_total": int(table["epochs"].sum())})
    return RoarRun(out=out, config=cfg, table=table, summary=summary, manifest=manifest,
                   figure=fig_path)
