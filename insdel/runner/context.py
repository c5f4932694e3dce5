"""What one policy's stages share (:class:`PolicyRun`), and the pieces both commands' stages take."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..evaluation import Evaluation
from ..groups import Groups
from .provenance import Stages

__all__ = ["PolicyRun", "logger"]


def logger(verbose: bool) -> Callable[[str], None]:
    """``log(msg)``: print ``msg`` to stderr when ``verbose``, else nothing."""

    def log(msg: str) -> None:
        if verbose:
            print(msg, file=sys.stderr, flush=True)

    return log


@dataclass
class PolicyRun:
    """One policy of an experiment as its stages see it.

    The first block is fixed once the policy has paired its targets; each stage of
    :data:`insdel.runner.experiment.POLICY_STAGES` reads it and fills in the results below it,
    in order (the attributions read the decomposition, the curves the attributions, ...).
    """

    cfg: dict
    out: Path                       # the run's folder
    label: str                      # the policy's label: its folder is out / label
    model: Any
    dataset: Any
    groups: Groups | None           # the data set's feature groups (None: single columns)
    pairing: Any                    # insdel.policies.Pairing, indices into the target pool
    pool_idx: np.ndarray            # the pool's rows in the test split
    X: np.ndarray                   # targets and references, C-contiguous
    R: np.ndarray
    base_key: dict                  # what every checkpoint chunk's key of this policy holds
    stages: Stages
    log: Callable[[str], None]
    progress: bool | None
    interrupt: Callable[[], None] | None
    client: Any = None              # a dask.distributed.Client, or None: serial
    remote: Mapping | None = None   # model, X, R scattered to the workers (with a client)
    removals: list = field(default_factory=list)  # RunRemoval of removal.kinds; [0] the primary
    # filled in by the stages
    decomposition: pd.DataFrame | None = None
    given: dict = field(default_factory=dict)  # methods' attributions another stage computed
    attributions: dict = field(default_factory=dict)  # the primary removal's (see below)
    # removal name -> the attributions its curves score (removal.attributions = "per_removal");
    # empty: every removal scores ``attributions``
    removal_attributions: dict = field(default_factory=dict)
    evaluation: Evaluation | None = None       # under the primary removal
    removal_evaluations: dict = field(default_factory=dict)  # removal name -> Evaluation
    summary: pd.DataFrame | None = None
    verdicts: str | None = None
    sampled_vs_exact: pd.DataFrame | None = None
    metrics: pd.DataFrame | None = None
    interactions: pd.DataFrame | None = None  # [interactions]: one row per (pair, subset)

    @property
    def folder(self) -> Path:
        """The policy's output folder."""
        return self.out / self.label
