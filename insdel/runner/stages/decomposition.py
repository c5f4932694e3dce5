"""The exact decomposition stage: best and expected ABC bounds and exact Shapley values of the
first ``decomposition.n_pairs`` pairs (paper Theorem 1, eq. (6)), checkpointed in chunks."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from ... import _checkpoint as ck
from ..._progress import progress_bar
from ...groups import Groups
from ..chunks import resolve_model, rows_text, run_chunks
from ..context import PolicyRun

__all__ = ["DECOMP_COLS", "decomposition_task", "decompose", "decomposition_array",
           "decomposition_table", "shapley_from_decomposition", "run"]

DECOMP_COLS = ["best_abc_insertion", "best_abc_deletion", "expected_abc_insertion",
               "expected_abc_deletion"]

#: exact_shapley options that do not change its values (the decomposition's Shapley values are the
#: same numbers when every pair is decomposed)
_SHAPLEY_FROM_DECOMPOSITION_OK = {"max_d", "batch_size", "progress"}


def decomposition_task(lo: int, hi: int, kw: dict, normalize: bool, where: str, *, model, X, R):
    """One decomposition chunk (pairs lo..hi - 1): (table, model evaluations, seconds)."""
    from ... import decomposition

    t0 = time.perf_counter()
    try:
        dec = decomposition.batch_decomposition(resolve_model(model), X[lo:hi], R[lo:hi], **kw)
    except Exception as exc:
        raise type(exc)(f"exact decomposition on {rows_text(where, lo, hi)}: {exc}") \
            from exc
    arr = np.column_stack([dec.best_abc(mode="insertion", normalize=normalize),
                           dec.best_abc(mode="deletion", normalize=normalize),
                           dec.expected_abc(mode="insertion", normalize=normalize),
                           dec.expected_abc(mode="deletion", normalize=normalize),
                           dec.shapley()])
    return arr, int(dec.n_evals), time.perf_counter() - t0


def shapley_from_decomposition(cfg, B: int) -> bool:
    """Whether ``exact_shapley`` is taken from the decomposition stage (it computes the same
    Shapley values, eq. (6), from the same 2^|D| evaluations): the method is requested, every pair
    is decomposed and its options are only cost options."""
    opts = cfg["methods"]["options"].get("exact_shapley", {}) or {}
    return ("exact_shapley" in cfg["methods"]["names"] and cfg["decomposition"]["n_pairs"] >= B
            and set(opts) <= _SHAPLEY_FROM_DECOMPOSITION_OK)


def decompose(cfg, model, X, R, label, out, base_key, stages, log, progress, interrupt,
              client=None, remote: Mapping | None = None, groups: Groups | None = None,
              removal=None) -> pd.DataFrame | None:
    """The exact anchored decomposition of the first ``decomposition.n_pairs`` pairs (in each
    pair's differing subspace, checkpointed in chunks): a table with the best achievable and
    expected random-order ABC per mode and the exact Shapley values (one per unit: the groups'
    when the data set has groups, the group game), or None. ``groups`` is in ``base_key``.
    ``removal``: the run's primary removal when it is not the paper's baseline (its value
    function is decomposed; its ``params()`` enter the chunks' key)."""
    arr = decomposition_array(cfg, model, X, R, label, out, base_key, stages, log, progress,
                              interrupt, client, remote, groups=groups, removal=removal)
    return None if arr is None else decomposition_table(arr, X.shape[1] if groups is None
                                                        else groups.m)


def decomposition_array(cfg, model, X, R, label, out, base_key, stages, log, progress,
                        interrupt, client=None, remote: Mapping | None = None,
                        groups: Groups | None = None, removal=None,
                        task: Callable = decomposition_task) -> np.ndarray | None:
    """:func:`decompose`'s checkpointed chunks joined in pair order (None when ``n_pairs =
    0``): each chunk is ``task(lo, hi, kw, normalize, where, model=, X=, R=)``
    (:func:`decomposition_task`: one row per pair, :func:`decomposition_table`'s columns; the
    multi-output run's gives every output's side by side)."""
    import inspect

    from ... import decomposition

    K = min(cfg["decomposition"]["n_pairs"], X.shape[0])
    if K == 0:
        return None
    cs = cfg["decomposition"]["pairs_per_chunk"]
    n_chunks = -(-K // cs)
    normalize = cfg["evaluation"]["normalize"]
    kw: dict = {"progress": False}
    if "max_d" in inspect.signature(decomposition.batch_decomposition).parameters:
        kw["max_d"] = cfg["decomposition"]["max_d"]
    key_of = {**base_key, "stage": "decomposition", "K": K, "pairs_per_chunk": cs,
              "normalize": normalize, **{k: v for k, v in kw.items() if k != "progress"}}
    if cfg["model"]["engine"] != "auto":  # absent: the keys of a run on the default engine
        kw["engine"] = cfg["model"]["engine"]
    if removal is not None:  # absent: the keys of a run without a removal
        from ..removals import removal_record

        key_of["removal"] = removal_record(removal)
        kw["removal"] = removal
    key = ck.config_hash(key_of)
    if groups is not None:
        if "groups" not in base_key:
            raise ValueError("the chunk key must hold the groups (base_key['groups']).")
        kw["groups"] = groups
    store = ck.ChunkStore(out / "checkpoints" / label / "decomposition", key)

    def args_of(i):
        return (i * cs, min(K, (i + 1) * cs), kw, normalize,
                "pairs {lo}..{hi} of policy " + repr(label))

    shared = {"model": model, "X": X, "R": R} if client is None else remote
    with progress_bar(n_chunks, f"  exact decomposition [{label}]", unit="chunk",
                      enable=progress, log=log) as bar:
        chunks, secs, evals, resumed = run_chunks(
            store, n_chunks, task, args_of, shared, bar, interrupt, client,
            describe=lambda i: f"exact decomposition on pairs {i * cs}..{min(K, (i + 1) * cs) - 1}"
            f" of policy {label!r}")
    arr = np.concatenate(chunks, axis=0)
    stages.add(f"{label}/decomposition", secs, model_evaluations=evals, pairs=K,
               chunks_resumed=resumed)
    log(f"  exact decomposition of {K} pairs: {secs:.1f} s")
    return arr


def decomposition_table(arr: np.ndarray, n: int) -> pd.DataFrame:
    """The decomposition's per-pair table from :func:`decomposition_task`'s array: ``pair``, the
    best and expected ABC per mode (:data:`DECOMP_COLS`) and the n units' exact Shapley
    values."""
    df = pd.DataFrame(arr[:, :4], columns=DECOMP_COLS)
    df.insert(0, "pair", np.arange(arr.shape[0]))
    shap = pd.DataFrame(arr[:, 4:4 + n], columns=[f"shapley_{j}" for j in range(n)])
    return pd.concat([df, shap], axis=1)


def run(p: PolicyRun) -> None:
    """A policy's exact decomposition (``p.decomposition``; None when ``n_pairs = 0``), and its
    exact Shapley values in ``p.given`` when they are the ``exact_shapley`` method's
    (:func:`shapley_from_decomposition`): the attribution stage does not compute them again."""
    primary = p.removals[0] if p.removals else None
    other = primary is not None and not primary.is_baseline
    dec = decompose(p.cfg, p.model, p.X, p.R, p.label, p.out, p.base_key, p.stages, p.log,
                    p.progress, p.interrupt, p.client, p.remote, groups=p.groups,
                    removal=primary.removal if other else None)
    p.decomposition = dec
    # exact_shapley (the method) explains the baseline game: taken from the decomposition only
    # when that is the game decomposed
    if dec is not None and not other and shapley_from_decomposition(p.cfg, p.X.shape[0]):
        units = p.X.shape[1] if p.groups is None else p.groups.m
        p.given["exact_shapley"] = dec[[f"shapley_{j}" for j in range(units)]].to_numpy()
