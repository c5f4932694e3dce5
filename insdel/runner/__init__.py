"""Experiments end to end: data, model, policy, attributions, curves, tables and figures (paper §5).

:func:`run_experiment` runs a configuration (:mod:`insdel.config`) and writes, per policy, the
per-pair ABCs (``abc.parquet``), the curves (``curves.npz``), the attributions, the summary in the
layout of the paper's Tables 1-3 (``summary.csv`` / ``summary.md``), plus the Table 4 diagnostics,
the figures and a ``manifest.json`` (configuration, versions, seed, data set and model fingerprints,
seconds and model evaluations per stage, file hashes). :func:`run_roar` runs ROAR (paper §6),
:func:`run_road` ROAD (:mod:`insdel.road`), :func:`run_sanity` the sanity checks
(:mod:`insdel.sanity`).

Long stages (attributions, exact decomposition) are checkpointed in chunks under
``OUT/checkpoints``. Each chunk file is named by a hash of everything that determines it (data,
model, seed, pairs, method and options, chunk size), so a chunk is never reused by a run it does not
belong to; a run that is killed and started again with the same command resumes and produces
byte-identical data files (timings only go into the manifest). The output folder is locked while a
run writes it. Every file is written atomically (temporary file + ``os.replace``).

One module per concern:

- ``provenance``: the folder's lock, ``unfinish``, the manifest and the fingerprints;
- ``chunks``: the checkpointed-chunk helper and the model as it reaches Dask workers;
- ``session``: the configuration loaded, the folder opened, the Dask client;
- ``context``: :class:`~insdel.runner.context.PolicyRun`, what one policy's stages share;
- ``stages/``: one module per stage (``data``, ``model``, ``attribution``, ``decomposition``,
  ``curves``, ``metrics``, ``tables``, ``figures``);
- ``experiment``: :func:`run_experiment`, its stage list (``POLICY_STAGES``);
- ``roar``: :func:`run_roar`;
- ``road``: :func:`run_road` (ROAD: imputation without retraining, ``insdel road``);
- ``sanity``: :func:`run_sanity` (randomisation sanity checks and metric reliability,
  ``insdel sanity``).
"""

from __future__ import annotations

from .. import _checkpoint as ck  # noqa: F401  (tests replace ck's functions through runner.ck)
from .chunks import chunk_seed as _chunk_seed  # noqa: F401  (one random stream per chunk)
from .experiment import RunResult, load_results, run_experiment
from .provenance import (
           OutputFolderBusy,
           OutputFolderOfAnotherKind,
           folder_kind,
           lock_folder,
           unfinish,
)
from .road import RoadRun, run_road
from .roar import RoarRun, run_roar
from .sanity import SanityRun, run_sanity
from .stages.attribution import method_options as _method_options  # noqa: F401
from .stages.data import dataset_info as _dataset_info  # noqa: F401
from .stages.data import groups_text
from .stages.data import load_dataset as _load_dataset  # noqa: F401

__all__ = ["run_experiment", "load_results", "RunResult", "OutputFolderBusy",
           "OutputFolderOfAnotherKind", "folder_kind", "lock_folder", "unfinish", "run_roar", "RoarRun", "run_road", "RoadRun", "groups_text",
           "run_sanity", "SanityRun"]
