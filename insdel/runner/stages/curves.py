"""The curves stage: every method's insertion and deletion curves and ABCs of a policy's pairs
(:func:`insdel.evaluate`), saved with the pairing and the attributions."""

from __future__ import annotations

import time

import numpy as np

from ... import _checkpoint as ck
from ...evaluation import evaluate
from ..chunks import chunk_seed
from ..context import PolicyRun

__all__ = ["run"]


def run(p: PolicyRun) -> None:
    """Evaluate the attributions (``p.evaluation``), then save the evaluation (``abc.parquet``,
    ``curves.npz``, the pairing) and ``attributions.npz`` in the policy's folder."""
    cfg, ev_cfg, pairing = p.cfg, p.cfg["evaluation"], p.pairing
    t0 = time.perf_counter()
    ev = evaluate(p.model, p.X, p.R, p.attributions, modes=ev_cfg["modes"],
                  n_random=ev_cfg["n_random"], seed=chunk_seed(cfg["seed"], p.label, "orders"),
                  normalize=ev_cfg["normalize"], order=ev_cfg["order"], progress=p.progress,
                  feature_names=list(getattr(p.dataset, "feature_names", None) or []) or None,
                  groups=p.groups, clusters=pairing.cluster)
    p.stages.add(f"{p.label}/curves", time.perf_counter() - t0,
                 model_evaluations=int(ev.stats.get("model_evaluations", 0)),
                 curve_points=int(ev.stats.get("curve_points", 0)))
    p.log(f"  curves: {ev.stats.get('model_evaluations', 0):,} model evaluations, "
          f"{time.perf_counter() - t0:.1f} s")
    # the pairs are explained from the pool; indices are into the pool sample: translate them
    # to rows of the data set's test split.
    pool_idx = p.pool_idx
    pairing.target_index = np.where(pairing.target_index >= 0,
                                    pool_idx[np.maximum(pairing.target_index, 0)], -1)
    pairing.reference_index = np.where(pairing.reference_index >= 0,
                                       pool_idx[np.maximum(pairing.reference_index, 0)], -1)
    ev.save(p.folder, pairing=pairing)
    ck.save_npz(p.folder / "attributions.npz", p.attributions)
    p.evaluation = ev
