"""The checkpointed-chunk helper every long stage uses, and the model as it reaches Dask workers.

A stage cuts its rows into chunks; each chunk is a task ``task(*args, **shared) -> (array, model
evaluations, seconds)`` run here or on the Dask workers by :func:`insdel.distributed.run_chunked`
(where all of insdel's parallelism lives), and the driver alone saves each finished chunk in the
stage's :class:`insdel._checkpoint.ChunkStore`, so a killed run resumes from the chunks on disk.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .. import _checkpoint as ck
from ..distributed import chunk_seed, run_chunked

__all__ = ["run_chunks", "chunk_seed", "resolve_model", "shareable_model", "rows_text"]


def run_chunks(store: ck.ChunkStore, n_chunks: int, task: Callable,
               args_of: Callable[[int], tuple], shared: Mapping[str, Any], bar,
               interrupt: Callable[[], None] | None, client=None,
               describe: Callable[[int], str] | None = None
               ) -> tuple[list[np.ndarray], float, int, int]:
    """Run one checkpointed stage.

    ``task(*args_of(i), **shared) -> (array, model evaluations, seconds)`` runs for each chunk not
    on disk, here (``client=None``) or on the Dask workers, in any order; the driver alone saves
    each chunk as it arrives.

    Returns
    -------
    tuple
        (chunks in order, seconds, model evaluations, chunks resumed) of this run.
    """
    secs, evals = 0.0, 0
    out: dict[int, np.ndarray] = {}
    todo = []
    for i in range(n_chunks):
        if store.done(i):
            out[i] = store.load(i)
            bar.update(1)
        else:
            todo.append(i)

    def finish(i: int, res) -> None:
        nonlocal secs, evals
        arr, e, s = res
        arr = np.asarray(arr)
        store.save(i, arr)
        out[i] = arr
        secs += float(s)
        evals += int(e)
        bar.update(1)
        if interrupt is not None:
            interrupt()

    run_chunked(task, [args_of(i) for i in range(n_chunks)], shared=shared, client=client,
                todo=todo, on_result=finish, concat=None, progress=False,
                name=getattr(task, "__name__", "insdel-chunk"),
                # a serial stage's errors are the task's own (they name their rows themselves)
                describe=describe if client is not None else None)
    return [out[i] for i in range(n_chunks)], secs, evals, n_chunks - len(todo)


def rows_text(where: str, lo: int, hi: int) -> str:
    """``where`` with ``{lo}`` and ``{hi}`` filled in (``hi`` exclusive, shown inclusive)."""
    return where.replace("{lo}", str(lo)).replace("{hi}", str(hi - 1))


# --------------------------------------------------------------------------------------------------
# the model on the workers
# --------------------------------------------------------------------------------------------------
class ModelFromFile:
    """A user's model file sent to the workers by path (models that do not pickle, e.g. ONNX):
    each worker loads it once (:func:`resolve_model`)."""

    def __init__(self, path: str, trust: bool, preset: str | None, n_features: int,
                 sha256: str | None):
        self.path, self.trust, self.preset = path, trust, preset
        self.n_features, self.sha256 = n_features, sha256


_WORKER_MODELS: dict[tuple, Any] = {}


def resolve_model(model):
    """The model itself, or the one a :class:`ModelFromFile` names (loaded once per process)."""
    if not isinstance(model, ModelFromFile):
        return model
    key = (model.path, model.sha256)
    if key not in _WORKER_MODELS:
        from ..model_files import load_any

        _WORKER_MODELS[key] = load_any(model.path, trust=model.trust, preset=model.preset,
                                       n_features=model.n_features)[0]
    return _WORKER_MODELS[key]


def shareable_model(model, cfg: dict, n_features: int, file_sha256: str | None):
    """The model as it travels to Dask workers: itself when it pickles, else its file path."""
    try:
        import cloudpickle

        cloudpickle.dumps(model)
        return model
    except Exception as exc:
        if cfg["model"]["path"] is None:
            raise TypeError(f"the model ({type(model).__name__}) cannot be sent to Dask workers "
                            f"({exc}); use compute.backend = 'serial'.") from exc
        m = cfg["model"]
        return ModelFromFile(str(Path(m["path"]).expanduser().resolve()), m["trust"],
                             m["architecture"], n_features, file_sha256)
