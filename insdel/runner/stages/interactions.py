"""The interactions stage: a Shapley interaction index of the first ``interactions.n_pairs``
pairs (:mod:`insdel.interactions`, docs/interactions.md), exact from the decomposition (or
sampled above ``max_d`` when ``n_samples`` is set), checkpointed in chunks; one
``interactions.parquet`` per policy."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ... import _checkpoint as ck
from ..._progress import progress_bar
from ..chunks import resolve_model, rows_text, run_chunks
from ..context import PolicyRun

__all__ = ["interactions_task", "run"]


def interactions_task(lo: int, hi: int, kw: dict, where: str, *, model, X, R):
    """One chunk (pairs lo..hi - 1) as rows ``pair, size, value, se, unit_1..unit_k`` (units -1
    past the subset's size): (array, coalition values, seconds)."""
    from ... import interactions

    t0 = time.perf_counter()
    try:
        res = interactions.interactions(resolve_model(model), X[lo:hi], R[lo:hi], **kw)
    except Exception as exc:
        raise type(exc)(f"interactions on {rows_text(where, lo, hi)}: {exc}") from exc
    pair = np.repeat(np.arange(lo, hi), np.diff(res._eoff))
    se = res._se if res._se is not None else np.zeros(res._values.size)
    arr = np.column_stack([pair, res._sizes, res._values, se, res._members]).astype(np.float64)
    return arr, res.n_evals, time.perf_counter() - t0


def run(p: PolicyRun) -> None:
    """``interactions.parquet`` in the policy's folder: one row per (pair, subset) with
    ``pair``, ``subset`` (the unit names joined by ``" x "``; ``""`` for the empty set),
    ``size``, ``value``, ``se`` (0 when exact); its ``attrs`` / the log say the index, the
    order, the removal and exact or sampled. Nothing when ``n_pairs`` is 0."""
    t = p.cfg.get("interactions") or {}
    K = min(int(t.get("n_pairs", 0) or 0), p.X.shape[0])
    if K == 0:
        return
    from ...interactions.exact import check_order
    from ...interactions.indices import check_index

    spec = check_index(t["index"], "interactions.index")
    m = p.X.shape[1] if p.groups is None else p.groups.m
    k = check_order(spec, t["order"], m, name="interactions.order")
    kw: dict = {"index": spec.name, "order": k, "max_d": t["max_d"],
                "n_samples": t["n_samples"], "seed": int(p.cfg.get("seed", 0))}
    key_of = {**p.base_key, "stage": "interactions", "K": K,
              "pairs_per_chunk": t["pairs_per_chunk"], **kw}
    primary = p.removals[0] if p.removals else None
    if primary is not None and not primary.is_baseline:
        from ..removals import removal_record

        key_of["removal"] = removal_record(primary.removal)
        kw["removal"] = primary.removal
    if p.groups is not None:
        kw["groups"] = p.groups
    kw["progress"] = False
    store = ck.ChunkStore(p.out / "checkpoints" / p.label / "interactions", ck.config_hash(key_of))
    cs = t["pairs_per_chunk"]
    n_chunks = -(-K // cs)

    def args_of(i):
        return (i * cs, min(K, (i + 1) * cs), kw, "pairs {lo}..{hi} of policy " + repr(p.label))

    shared = {"model": p.model, "X": p.X, "R": p.R} if p.client is None else p.remote
    with progress_bar(n_chunks, f"  interactions [{p.label}]", unit="chunk",
                      enable=p.progress, log=p.log) as bar:
        chunks, secs, evals, resumed = run_chunks(
            store, n_chunks, interactions_task, args_of, shared, bar, p.interrupt, p.client,
            describe=lambda i: f"interactions on pairs {i * cs}..{min(K, (i + 1) * cs) - 1} of "
            f"policy {p.label!r}")
    arr = np.concatenate(chunks, axis=0)
    p.stages.add(f"{p.label}/interactions", secs, model_evaluations=evals, pairs=K,
                 chunks_resumed=resumed)
    names = (list(p.groups.names) if p.groups is not None
             else list(getattr(p.dataset, "feature_names", None) or [f"x{j}" for j in range(m)]))
    members = arr[:, 4:].astype(np.int64)
    sizes = arr[:, 1].astype(np.int64)
    subset = [" x ".join(names[j] for j in row[:s]) for row, s in zip(members, sizes,
                                                                       strict=True)]
    df = pd.DataFrame({"pair": arr[:, 0].astype(np.int64), "subset": subset, "size": sizes,
                       "value": arr[:, 2], "se": arr[:, 3]})
    how = "exact" if t["n_samples"] is None else f"sampled above max_d = {t['max_d']}"
    p.log(f"  interactions ({spec.name}, order {k}, {how}) of {K} pairs: {secs:.1f} s")
    p.folder.mkdir(parents=True, exist_ok=True)
    with ck.atomic_write(p.folder / "interactions.parquet", suffix=".parquet") as tmp:
        df.to_parquet(tmp, index=False)
    p.interactions = df
