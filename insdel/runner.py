"""Experiments end to end: data, model, policy, attributions, curves, tables and figures (paper §5).

:func:`run_experiment` runs a configuration (:mod:`insdel.config`) and writes, per policy, the
per-pair ABCs (``abc.parquet``), the curves (``curves.npz``), the attributions, the summary in the
layout of the paper's Tables 1-3 (``summary.csv`` / ``summary.md``), plus the Table 4 diagnostics,
the figures and a ``manifest.json`` (configuration, versions, seed, data set and model fingerprints,
seconds and model evaluations per stage, file hashes).

Long stages (attributions, exact decomposition) are checkpointed in chunks under
``OUT/checkpoints``. Each chunk file is named by a hash of everything that determines it (data,
model, seed, pairs, method and options, chunk size), so a chunk is never reused by a run it does not
belong to; a run that is killed and started again with the same command resumes and produces
byte-identical data files (timings only go into the manifest). The output folder is locked while a
run writes it. Every file is written atomically (temporary file + ``os.replace``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import _checkpoint as ck
from . import config as _config
from ._checkpoint import is_plain_folder_name, to_jsonable
from ._progress import progress_bar
from ._validation import check_progress, check_scalar
from .distributed import (
    chunk_seed,
    client_info,
    driver_threads,
    make_client,
    map_chunks,
    scatter,
)
from .evaluation import Evaluation, evaluate
from .groups import Groups, group_attributions
from .report import (
    metrics_table,
    missing_rows_text,
    policy_table,
    run_header,
    run_tables,
    sampled_vs_exact,
)

__all__ = ["run_experiment", "load_results", "RunResult", "OutputFolderBusy", "lock_folder",
           "unfinish"]


class OutputFolderBusy(RuntimeError):
    """Another insdel run holds the output folder's lock."""


# --------------------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------------------
@dataclass
class RunResult:
    """What :func:`run_experiment` produced.

    Attributes
    ----------
    out : Path
        Output folder.
    config : dict
        The configuration used.
    evaluations : dict
        Policy label -> :class:`insdel.Evaluation`.
    pairings : dict
        Policy label -> :class:`insdel.policies.Pairing`.
    summary : pandas.DataFrame
        All policies' summaries (paper Tables 1-3 layout) with a ``policy`` column.
    diagnostics : pandas.DataFrame
        Paper Table 4 (one row per policy).
    manifest : dict
    figures : list of Path
    decompositions : dict
        Policy label -> per-pair decomposition table (when ``decomposition.n_pairs > 0``).
    sampled_vs_exact : pandas.DataFrame or None
        Sampled Kernel SHAP against exact Shapley, paired per pair (when both methods ran).
    metrics : pandas.DataFrame or None
        ``[metrics]`` summaries of every policy (``metrics_summary.csv``), when metrics ran.
    """

    out: Path
    config: dict
    evaluations: dict
    pairings: dict
    summary: pd.DataFrame
    diagnostics: pd.DataFrame
    manifest: dict
    figures: list = field(default_factory=list)
    model: Any = None
    dataset: Any = None
    decompositions: dict = field(default_factory=dict)
    sampled_vs_exact: pd.DataFrame | None = None
    metrics: pd.DataFrame | None = None

    def to_markdown(self, digits: int = 3) -> str:
        """Every policy's table (paper layout), the Table 4 diagnostics and, when computed, the
        decomposition table: the same text as ``summary.md``."""
        methods = next(iter(self.evaluations.values())).methods if self.evaluations else []
        m = self.manifest
        header = run_header(m["data"], m["model"], m["policy_specs"]) if m else None
        return run_tables(self.summary, self.diagnostics, self.decompositions, methods, digits,
                          header=header, sampled=self.sampled_vs_exact, metrics=self.metrics)


def load_results(out: str | os.PathLike) -> dict[str, Evaluation]:
    """The evaluations of a finished run, policy label -> :class:`insdel.Evaluation`
    (:meth:`insdel.Evaluation.load` of each policy's folder), so plots can be redrawn without
    running anything again."""
    out = Path(out)
    manifest = out / "manifest.json"
    if not manifest.exists():
        raise FileNotFoundError(f"{out} holds no finished run (no manifest.json).")
    labels = json.loads(manifest.read_text())["policies"]
    return {lab: Evaluation.load(out / lab) for lab in labels}


# --------------------------------------------------------------------------------------------------
# bookkeeping
# --------------------------------------------------------------------------------------------------
class _Stages:
    """Seconds and model evaluations per stage, kept in memory for the manifest."""

    def __init__(self):
        self.stages: dict[str, dict] = {}

    def add(self, name: str, seconds: float, **extra) -> None:
        d = self.stages.setdefault(name, {"seconds": 0.0})
        d["seconds"] += float(seconds)
        for k, v in extra.items():
            d[k] = d.get(k, 0) + v if isinstance(v, (int, float)) and not isinstance(v, bool) else v


_chunk_seed = chunk_seed  # the runner's name for it: one random stream per (policy, method, chunk)


def _chunked(store: ck.ChunkStore, n_chunks: int, task: Callable, args_of: Callable[[int], tuple],
             shared: Mapping[str, Any], bar, interrupt: Callable[[], None] | None, client=None,
             describe: Callable[[int], str] | None = None
             ) -> tuple[list[np.ndarray], float, int, int]:
    """Run one checkpointed stage: ``task(*args_of(i), **shared) -> (array, model evaluations,
    seconds)`` for each chunk not on disk, here (``client=None``) or on the Dask workers, in any
    order; the driver alone saves each chunk as it arrives. Returns (chunks in order, seconds,
    model evaluations, chunks resumed) of this run."""
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

    if client is None:
        for i in todo:
            finish(i, task(*args_of(i), **shared))
    else:
        for i, res in map_chunks(client, task, [args_of(i) for i in todo], shared=shared,
                                 ids=todo, describe=describe, name=getattr(task, "__name__",
                                                                           "insdel-chunk")):
            finish(i, res)
    return [out[i] for i in range(n_chunks)], secs, evals, n_chunks - len(todo)


class _ModelFromFile:
    """A user's model file sent to the workers by path (models that do not pickle, e.g. ONNX):
    each worker loads it once (:func:`_resolve_model`)."""

    def __init__(self, path: str, trust: bool, preset: str | None, n_features: int,
                 sha256: str | None):
        self.path, self.trust, self.preset = path, trust, preset
        self.n_features, self.sha256 = n_features, sha256


_WORKER_MODELS: dict[tuple, Any] = {}


def _resolve_model(model):
    if not isinstance(model, _ModelFromFile):
        return model
    key = (model.path, model.sha256)
    if key not in _WORKER_MODELS:
        from .model_files import load_any

        _WORKER_MODELS[key] = load_any(model.path, trust=model.trust, preset=model.preset,
                                       n_features=model.n_features)[0]
    return _WORKER_MODELS[key]


def _shareable_model(model, cfg: dict, n_features: int, file_sha256: str | None):
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
        return _ModelFromFile(str(Path(m["path"]).expanduser().resolve()), m["trust"],
                              m["architecture"], n_features, file_sha256)


def _rows(where: str, lo: int, hi: int) -> str:
    return where.replace("{lo}", str(lo)).replace("{hi}", str(hi - 1))


def _attribution_task(lo: int, hi: int, method: str, kw: dict, where: str, *, model, X, R):
    """One attribution chunk (rows lo..hi - 1): (A, model evaluations, seconds); an error names
    the method and the rows (``where`` formats them)."""
    t0 = time.perf_counter()
    try:
        A, info = _attribute_chunk(_resolve_model(model), X[lo:hi], R[lo:hi], method, kw)
    except Exception as exc:
        raise type(exc)(f"{method} on {_rows(where, lo, hi)}: {exc}") from exc
    return A, info["model_evaluations"], time.perf_counter() - t0


def _decomposition_task(lo: int, hi: int, kw: dict, normalize: bool, where: str, *, model, X, R):
    """One decomposition chunk (pairs lo..hi - 1): (table, model evaluations, seconds)."""
    from . import decomposition

    t0 = time.perf_counter()
    try:
        dec = decomposition.batch_decomposition(_resolve_model(model), X[lo:hi], R[lo:hi], **kw)
    except Exception as exc:
        raise type(exc)(f"exact decomposition on {_rows(where, lo, hi)}: {exc}") \
            from exc
    arr = np.column_stack([dec.best_abc(mode="insertion", normalize=normalize),
                           dec.best_abc(mode="deletion", normalize=normalize),
                           dec.expected_abc(mode="insertion", normalize=normalize),
                           dec.expected_abc(mode="deletion", normalize=normalize),
                           dec.shapley()])
    return arr, int(dec.n_evals), time.perf_counter() - t0


# --------------------------------------------------------------------------------------------------
# data, model, policy
# --------------------------------------------------------------------------------------------------
def _load_dataset(cfg: dict):
    from . import datasets

    d = cfg["data"]
    return datasets.get(d["recipe"], seed=cfg["seed"], **dict(d["options"]))


def _dataset_info(cfg: dict, dataset) -> dict:
    """Name, file (path and sha256), rows, features and a hash of the arrays the run uses."""
    opts = cfg["data"]["options"]
    # a configuration file's relative paths are already absolute (insdel.config.load); a dict's
    # are relative to the current folder, and `~` is the user's home as the recipes read it
    path = next((opts[k] for k in _config.PATH_OPTIONS if opts.get(k)), None)
    path = None if path is None else Path(str(path)).expanduser()
    # the display name (a user's file: its name, not the recipe's "table")
    name = getattr(dataset, "label", None) or getattr(dataset, "name", cfg["data"]["recipe"])
    info = {"name": name, "recipe": cfg["data"]["recipe"],
            "file": None if path is None else str(path.resolve()),
            "file_sha256": None if path is None or not path.is_file()
            else ck.sha256_file(path),
            "rows_train": int(len(dataset.X_train)), "rows_test": int(len(dataset.X_test)),
            "features": int(np.asarray(dataset.X_test).shape[1]),
            "feature_names": list(getattr(dataset, "feature_names", []) or []),
            "arrays_sha256": ck.sha256_arrays(dataset.X_train, dataset.y_train, dataset.X_test,
                                              dataset.y_test)}
    rinfo = getattr(dataset, "info", None) or {}
    if "n_dropped_missing" in rinfo:  # rows the recipe read and dropped for missing values
        info["rows_read"] = rinfo.get("n_read")
        info["rows_dropped_missing"] = int(rinfo["n_dropped_missing"])
        if rinfo.get("missing_by_column") is not None:
            info["missing_by_column"] = dict(rinfo["missing_by_column"])
    grp = _groups_of(dataset)
    if grp is not None:
        info["units"] = grp.m
        info["groups"] = {grp.names[g]: grp.columns(g).tolist() for g in range(grp.m)
                          if grp.sizes[g] > 1}
        info["groups_text"] = groups_text(grp)
    return info


def _groups_of(dataset) -> Groups | None:
    """The data set's feature groups (``Dataset.groups``), None when absent or all singletons."""
    grp = getattr(dataset, "groups", None)
    if grp is None or grp.singleton:
        return None
    return grp


def groups_text(grp: Groups) -> str:
    """``"39 units: Location (one group of 30 columns), 38 single columns"``."""
    big = [f"{grp.names[g]} (one group of {int(grp.sizes[g])} columns)" for g in range(grp.m)
           if grp.sizes[g] > 1]
    single = int((grp.sizes == 1).sum())
    rest = [f"{single} single column{'s' if single != 1 else ''}"] if single else []
    return f"{grp.m} units: " + ", ".join(big + rest)


def _model_hash(model, file_sha256: str | None = None) -> str:
    """SHA-256 of a torch module's parameters and buffers (names, dtypes, shapes, bytes); for
    other models, the SHA-256 of the file they were loaded from."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        torch = None
    h = hashlib.sha256()
    if torch is not None and isinstance(model, torch.nn.Module):
        for name, t in model.state_dict().items():
            a = t.detach().cpu().contiguous().numpy()
            h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
            h.update(a.tobytes())
        return h.hexdigest()
    if file_sha256 is None:
        raise ValueError(f"cannot fingerprint a {type(model).__name__} model that was not loaded "
                         "from a file; checkpoints must be keyed by the model.")
    return file_sha256


def _get_model(cfg: dict, dataset, data_hash: str, out: Path, log, progress
               ) -> tuple[Any, dict, dict]:
    """Train (or load) the model; a trained model is cached in ``out`` under a key of the data and
    the model's configuration, so a resumed run uses the same f. Returns (model, metrics, info)."""
    from . import models

    m = cfg["model"]
    if m["path"] is not None:
        from .model_files import load_any

        model, info = load_any(m["path"], trust=m["trust"], preset=m["architecture"],
                               n_features=int(np.asarray(dataset.X_test).shape[1]),
                               dataset=dataset)  # an insdel model file: its features and scaling
        return model, {}, {"source": "path", **info}
    key = ck.config_hash({"data": data_hash, "model": m, "seed": cfg["seed"],
                          "device": cfg["compute"]["device"]})
    path, keyfile = out / "model.pt", out / "model.key"
    if path.exists() and keyfile.exists() and keyfile.read_text().strip() == key:
        model, meta = models.load_model(path)
        log(f"model: loaded the cached model {path}")
        return model, dict((meta or {}).get("metrics", {}) or {}), {
            "source": "cache", "preset": m["preset"], "key": key}
    spec = m["preset"] if m["preset"] is not None else dict(m["params"])
    log(f"model: training {spec if isinstance(spec, str) else 'custom MLP'} on "
        f"{len(dataset.X_train)} points ...")
    model, metrics = models.train_mlp(dataset, spec, seed=cfg["seed"], max_epochs=m["max_epochs"],
                                      progress=progress, device=cfg["compute"]["device"])
    # the old key goes first: a run killed between the two writes must not pair it with this model
    keyfile.unlink(missing_ok=True)
    with ck.atomic_write(path, suffix=".pt") as tmp:
        models.save_model(model, tmp, dataset=dataset, params=spec, metrics=metrics)
    ck.atomic_write_text(keyfile, key + "\n")
    return model, dict(metrics or {}), {"source": "trained", "preset": m["preset"], "key": key}


def _model_files(model_info: Mapping) -> tuple[str, ...]:
    """The files of ``out`` a run uses without writing them: the cached model it loaded."""
    return ("model.pt", "model.key") if model_info.get("source") == "cache" else ()


def _model_stage(cfg: dict, dataset, data_info: dict, out: Path, stages: _Stages, log,
                 progress) -> tuple[Any, dict, dict]:
    """The model stage of both commands: train, load from the cache or from the user's file
    (:func:`_get_model`), check the gradient methods against it, fingerprint it (the key of every
    checkpoint chunk), put a torch module in eval mode on ``compute.device``, and log what was
    used. Returns (model, training metrics, model info)."""
    t0 = time.perf_counter()
    model, metrics, model_info = _get_model(cfg, dataset, data_info["arrays_sha256"], out, log,
                                            progress)
    from .adapter import eval_mode, model_capabilities
    from .attribution import check_supported, supported

    check_supported(model, cfg["methods"]["names"])  # DeepLIFT on TorchScript: refused here
    model_info["capabilities"] = list(model_capabilities(model))
    model_info["methods"] = supported(model)
    model_info["file_sha256"] = model_info.pop("sha256", None)
    model_info["sha256"] = _model_hash(model, model_info["file_sha256"])
    stages.add("model", time.perf_counter() - t0, **{"source": model_info["source"]})
    log(f"model: {model_info['source']}"
        + (f" {model_info['path']}" if model_info.get("path") else "")
        + (f" ({model_info['format']})" if model_info.get("format") else "")
        + f", sha256 {model_info['sha256'][:12]}")
    device = cfg["compute"]["device"]
    try:
        import torch

        if isinstance(model, torch.nn.Module):
            eval_mode(model)
            if device != "cpu":
                model.to(device)
                log(f"compute: model on {device} "
                    f"({torch.cuda.get_device_name(torch.device(device)) if device.startswith('cuda') else device})")
    except ImportError:  # pragma: no cover
        pass
    return model, metrics, model_info


def _select_pool(dataset, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(dataset.X_test, dtype=np.float64)
    if n >= X.shape[0]:
        idx = np.arange(X.shape[0])
    else:
        rng = np.random.default_rng([seed, 7])
        idx = np.sort(rng.choice(X.shape[0], size=n, replace=False))
    return X[idx], idx


def _make_policy(entry: Mapping):
    """The policy of a ``[[policies]]`` entry, built once (spec + the entry's ``params``)."""
    from . import policies

    return policies.load(entry["spec"], params=dict(entry.get("params", {}) or {}))


# --------------------------------------------------------------------------------------------------
# the checkpointed stages
# --------------------------------------------------------------------------------------------------
#: Method options whose value ``"dataset"`` stands for an attribute of the data set.
_DATASET_VALUED = (("binary", "binary_mask"), ("binary_levels", "binary_levels"))


def _options_key(options: Mapping, dataset) -> dict:
    """A method's options as its chunks' key holds them: the value ``"dataset"`` replaced by what
    it stands for (the data set's binary features and levels change with ``data.options`` while
    the data set's arrays, and so the key's data hash, may not)."""
    key = dict(options)
    for name, attr in _DATASET_VALUED:
        if key.get(name) == "dataset":
            value = getattr(dataset, attr, None)
            key[name] = {"dataset": None if value is None else np.asarray(value).tolist()}
    return key


def _method_options(method: str, options: Mapping, seed: int, dataset) -> dict:
    """Options of one method for one chunk: the per-chunk seed goes to seeded methods, progress
    bars inside a chunk are off, the value ``"dataset"`` of ``binary`` / ``binary_levels``
    takes the data set's binary features, and methods that take ``groups`` get the data set's
    groups (the others' per-column attributions are summed per group by :func:`evaluate`)."""
    from . import attribution

    accepted = attribution.options_of(method)
    kw = dict(options)
    grp = _groups_of(dataset)
    if "groups" in kw:
        raise ValueError(f"methods.options.{method}.groups: the groups are the data set's "
                         "(its recipe declares them, e.g. bangalore's location = 'onehot'); "
                         "remove the option.")
    if grp is not None and "groups" in accepted:
        kw["groups"] = grp
    if "seed" in accepted:
        # a seed in the method's options replaces the run's seed for this method: each chunk
        # still draws its own stream from it (the same seed in every chunk would repeat the
        # first chunk's random draws in all the others)
        if "seed" in kw:  # 2.7, "2" or true are errors, not seeds 2, 2 and 1
            kw["seed"] = check_scalar(f"methods.options.{method}.seed", kw["seed"], int,
                                      min_val=0)
        kw["seed"] = seed if "seed" not in kw else _chunk_seed(kw["seed"], seed)
    for key, attr in _DATASET_VALUED:
        if kw.get(key) == "dataset":
            kw[key] = getattr(dataset, attr, None)
    if "progress" in accepted:
        kw.setdefault("progress", False)
    return kw


def _attribute_chunk(model, X, R, method: str, options: dict) -> tuple[np.ndarray, dict]:
    """One chunk of one method through :func:`insdel.attribute`: (A, info); a method given
    ``groups`` returns one column per group."""
    from . import attribution

    A, info = attribution.attribute(model, X, R, method, return_info=True, **options)
    grp = options.get("groups")
    expected = X.shape if grp is None else (X.shape[0], grp.m)
    if A.shape != expected:
        raise ValueError(f"attribution method {method!r} returned shape {A.shape}; "
                         f"expected {expected}.")
    return A, info


def _attributions(cfg, model, dataset, X, R, label, out, base_key, stages, log, progress,
                  interrupt, given: Mapping[str, np.ndarray] | None = None, client=None,
                  remote: Mapping | None = None) -> dict[str, np.ndarray]:
    """Every method's attributions, chunk by chunk (checkpointed); ``given`` holds methods already
    computed by another stage (exact Shapley from the decomposition)."""
    from . import attribution

    B = X.shape[0]
    cs = cfg["evaluation"]["targets_per_chunk"]
    n_chunks = -(-B // cs)
    given = dict(given or {})
    names = cfg["methods"]["names"]
    result = {}
    with progress_bar((len(names) - len(given)) * n_chunks, f"attributions [{label}]",
                      unit="chunk", enable=progress, auto=True) as bar:
        for method in names:
            if method in given:
                result[method] = given[method]
                log(f"  {method}: from the exact decomposition (same values, no extra model "
                    f"evaluations)")
                continue
            opts = dict(cfg["methods"]["options"].get(method, {}) or {})
            key = ck.config_hash({**base_key, "stage": "attributions", "method": method,
                                  "options": _options_key(opts, dataset),
                                  "targets_per_chunk": cs})
            store = ck.ChunkStore(out / "checkpoints" / label / method, key)
            opts = attribution.resolve_std_scale(method, opts, X)  # over all targets, not a chunk

            def args_of(i, method=method, opts=opts):
                lo, hi = i * cs, min(B, (i + 1) * cs)
                kw = _method_options(method, opts, _chunk_seed(cfg["seed"], label, method, i),
                                     dataset)
                return lo, hi, method, kw, "pairs {lo}..{hi} of policy " + repr(label)

            shared = {"model": model, "X": X, "R": R} if client is None else remote
            chunks, secs, evals, resumed = _chunked(
                store, n_chunks, _attribution_task, args_of, shared, bar, interrupt, client,
                describe=lambda i, method=method: f"{method} on pairs {i * cs}.."
                f"{min(B, (i + 1) * cs) - 1} of policy {label!r}")
            stages.add(f"{label}/attributions/{method}", secs, model_evaluations=evals,
                       chunks=n_chunks, chunks_resumed=resumed,
                       seconds_per_pair=secs / max(B - resumed * cs, 1))
            result[method] = np.concatenate(chunks, axis=0)
            log(f"  {method}: {secs:.1f} s, {evals:,} model evaluations"
                + (f" ({resumed} of {n_chunks} chunks resumed)" if resumed else ""))
    return result


_DECOMP_COLS = ["best_abc_insertion", "best_abc_deletion", "expected_abc_insertion",
                "expected_abc_deletion"]


#: exact_shapley options that do not change its values (the decomposition's Shapley values are the
#: same numbers when every pair is decomposed)
_SHAPLEY_FROM_DECOMPOSITION_OK = {"max_d", "batch_size", "progress"}


def _shapley_from_decomposition(cfg, B: int) -> bool:
    """Whether ``exact_shapley`` is taken from the decomposition stage (it computes the same
    Shapley values, eq. (6), from the same 2^|D| evaluations): the method is requested, every pair
    is decomposed and its options are only cost options."""
    opts = cfg["methods"]["options"].get("exact_shapley", {}) or {}
    return ("exact_shapley" in cfg["methods"]["names"] and cfg["decomposition"]["n_pairs"] >= B
            and set(opts) <= _SHAPLEY_FROM_DECOMPOSITION_OK)


def _decomposition(cfg, model, X, R, label, out, base_key, stages, log, progress, interrupt,
                   client=None, remote: Mapping | None = None, groups: Groups | None = None):
    """The exact anchored decomposition of the first ``decomposition.n_pairs`` pairs (in each
    pair's differing subspace, checkpointed in chunks): a table with the best achievable and
    expected random-order ABC per mode and the exact Shapley values (one per unit: the groups'
    when the data set has groups, the group game), or None. ``groups`` is in ``base_key``."""
    import inspect

    from . import decomposition

    K = min(cfg["decomposition"]["n_pairs"], X.shape[0])
    if K == 0:
        return None
    cs = cfg["decomposition"]["pairs_per_chunk"]
    n_chunks = -(-K // cs)
    normalize = cfg["evaluation"]["normalize"]
    kw: dict = {"progress": False}
    if "max_d" in inspect.signature(decomposition.batch_decomposition).parameters:
        kw["max_d"] = cfg["decomposition"]["max_d"]
    key = ck.config_hash({**base_key, "stage": "decomposition", "K": K, "pairs_per_chunk": cs,
                          "normalize": normalize, **{k: v for k, v in kw.items()
                                                     if k != "progress"}})
    if groups is not None:
        if "groups" not in base_key:
            raise ValueError("the chunk key must hold the groups (base_key['groups']).")
        kw["groups"] = groups
    store = ck.ChunkStore(out / "checkpoints" / label / "decomposition", key)

    def args_of(i):
        return (i * cs, min(K, (i + 1) * cs), kw, normalize,
                "pairs {lo}..{hi} of policy " + repr(label))

    shared = {"model": model, "X": X, "R": R} if client is None else remote
    with progress_bar(n_chunks, f"exact decomposition [{label}]", unit="chunk",
                      enable=progress) as bar:
        chunks, secs, evals, resumed = _chunked(
            store, n_chunks, _decomposition_task, args_of, shared, bar, interrupt, client,
            describe=lambda i: f"exact decomposition on pairs {i * cs}..{min(K, (i + 1) * cs) - 1}"
            f" of policy {label!r}")
    arr = np.concatenate(chunks, axis=0)
    stages.add(f"{label}/decomposition", secs, model_evaluations=evals, pairs=K,
               chunks_resumed=resumed)
    log(f"  exact decomposition of {K} pairs: {secs:.1f} s")
    n = X.shape[1] if groups is None else groups.m
    df = pd.DataFrame(arr[:, :4], columns=_DECOMP_COLS)
    df.insert(0, "pair", np.arange(K))
    shap = pd.DataFrame(arr[:, 4:4 + n], columns=[f"shapley_{j}" for j in range(n)])
    return pd.concat([df, shap], axis=1)


# --------------------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------------------
def _explainer(X, R, *, model, method: str, kw: dict) -> np.ndarray:
    """Re-explain (X, R) with a configured method (metrics that perturb x and explain again)."""
    return _attribute_chunk(model, X, R, method, kw)[0]


def _metrics_stage(cfg, model, dataset, X, R, atts, label, folder, stages, log, progress,
                   clusters=None) -> pd.DataFrame | None:
    """``[metrics]``: every configured metric on every method's attributions (and a seeded random
    attribution, the control), on one shared hybrid cache. Writes ``metrics.parquet`` (pair,
    method, metric, value) and ``metrics_summary.csv``; returns the summary."""
    from functools import partial

    from . import metrics as _metrics

    names = cfg["metrics"]["names"]
    if not names:
        return None
    t0 = time.perf_counter()
    ms = [_metrics.get(n, **dict(cfg["metrics"]["options"].get(n, {}) or {})) for n in names]
    seed = _chunk_seed(cfg["seed"], label, "metrics")
    grp = _groups_of(dataset)
    # the random control: one draw per unit (a per-column draw summed per group is not uniform)
    shape_of = (lambda X_: X_.shape) if grp is None else (lambda X_: (X_.shape[0], grp.m))
    A = dict(atts)
    A.setdefault("random", np.random.default_rng(seed).normal(size=shape_of(X)))
    explainers = None
    if any(m.needs_explainer for m in ms):
        explainers = {meth: partial(_explainer, model=model, method=meth, kw=_method_options(
            meth, dict(cfg["methods"]["options"].get(meth, {}) or {}), seed, dataset))
            for meth in atts}
        # the random control re-draws: its explanation does not depend on x
        explainers["random"] = lambda X_, R_: np.random.default_rng(seed).normal(
            size=shape_of(X_))
    res = _metrics.evaluate_metrics(model, X, R, A, metrics=ms, seed=seed, groups=grp,
                                    explainers=explainers, progress=progress)
    with ck.atomic_write(folder / "metrics.parquet", suffix=".parquet") as tmp:
        res.scores.assign(higher_is_better=res.scores["metric"].map(res.directions)).to_parquet(
            tmp, index=False)
    summ = res.summary(clusters).assign(policy=label)
    ck.atomic_write_text(folder / "metrics_summary.csv", summ.drop(columns="policy").to_csv(
        index=False))
    text = metrics_table(summ)
    if len(ms) > 1 and len(A) > 1:  # do the metrics rank the methods alike, pair by pair?
        from .metrics.agreement import agreement_figure, agreement_markdown, metric_agreement

        agree = metric_agreement(res.scores, res.directions)
        ck.atomic_write_text(folder / "metric_agreement.csv", agree.to_csv(index=False))
        text += ("\n### Agreement: Kendall τ between the metrics' rankings of the methods, "
                 "mean over pairs\n\n" + agreement_markdown(agree) + "\n")
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


def _versions() -> dict:
    import importlib.metadata as md

    from . import __version__

    out = {"insdel": __version__, "python": platform.python_version(),
           "platform": platform.platform()}
    for pkg in ("numpy", "numba", "pandas", "torch", "captum", "matplotlib", "scikit-learn",
                "pyarrow"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    return out


def lock_folder(out: str | os.PathLike, wait: bool = False):
    """Take the exclusive lock of an output folder (``OUT/.insdel.lock``, a ``filelock.FileLock``).

    Every command that writes an output folder holds it for the whole run, so that two runs never
    mix their files in one folder.

    Parameters
    ----------
    out : path
        The output folder; it must exist.
    wait : bool
        If another run holds the lock, wait for it to be released instead of refusing.

    Returns
    -------
    filelock.FileLock
        The acquired lock; call its ``release()`` when the run is over.

    Raises
    ------
    OutputFolderBusy
        Another insdel run holds the lock and ``wait`` is False.
    """
    from filelock import FileLock, Timeout

    out = Path(out)
    lock = FileLock(str(out / ".insdel.lock"))
    try:
        lock.acquire(timeout=-1 if wait else 0)
    except Timeout:
        raise OutputFolderBusy(
            f"output folder {out} is in use by another insdel run (lock {out / '.insdel.lock'}); "
            "wait for it to finish, or choose another --out.") from None
    return lock


def _default_out(name: str) -> Path:
    """``runs/NAME``, the output folder when neither ``out=`` nor the configuration's ``out`` is
    given: ``name`` must then be a plain folder name (``"../x"`` would write outside ``runs/``)."""
    if not is_plain_folder_name(name):
        raise ValueError(f"name = {name!r} names the run's folder under runs/ (neither out= nor "
                         "the configuration's out is given): it must be a plain folder name (no "
                         "'/', '\\', not '.' or '..'); or give out = PATH.")
    return Path("runs") / name


def unfinish(out: str | os.PathLike) -> None:
    """Mark an output folder as not finished: remove its ``manifest.json`` before a run rewrites it.

    A run stopped half-way must not leave an earlier run's manifest (what :func:`load_results`
    and the leaderboard read as "finished, with this configuration") above files it has already
    replaced; the run writes its own manifest last. Call it while holding :func:`lock_folder`.

    Parameters
    ----------
    out : path
        The output folder (a missing ``manifest.json`` is not an error).
    """
    (Path(out) / "manifest.json").unlink(missing_ok=True)


def _listable(out: Path) -> list[Path]:
    """The files of ``out`` a manifest may list: not under ``checkpoints/``, not the manifest, not
    hidden (the lock, temporary files)."""
    return sorted(p for p in out.rglob("*") if p.is_file()
                  and "checkpoints" not in p.relative_to(out).parts
                  and p.name != "manifest.json" and not p.name.startswith("."))


def _stamp(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


def _snapshot(out: Path) -> dict[Path, tuple[int, int, int]]:
    """(inode, mtime, size) of every listable file before a run writes: every file a run writes
    is moved into place (a new inode), so one with the same stamp afterwards was not written."""
    return {p.relative_to(out): _stamp(p) for p in _listable(out)}


def _run_files(out: Path, before: Mapping[Path, tuple], used: tuple[str, ...] = ()
               ) -> list[Path]:
    """The files of this run, for the manifest: those written since ``before``
    (:func:`_snapshot`), plus ``used`` (names relative to ``out``: the cached model the run
    loaded). Anything else (an earlier run's policy folders, figures or tables) is left in place,
    kept out of the manifest, and named in one line on stderr."""
    mine, stale = [], []
    for p in _listable(out):
        rel = p.relative_to(out)
        if before.get(rel) != _stamp(p) or rel.as_posix() in used:
            mine.append(p)
        else:
            stale.append(rel)
    if stale:
        touched = {p.relative_to(out).parts[0] for p in mine}
        names: list[str] = []
        for rel in stale:
            top = rel.parts[0]
            if len(rel.parts) > 1 and top not in touched:  # a folder this run did not write at all
                name = f"{top}/"
                if name not in names:
                    names.append(name)
            else:
                names.append(rel.as_posix())
        shown = names if len(names) <= 8 else names[:8] + [f"and {len(names) - 8} more"]
        print(f"note: {out} holds {len(stale)} file(s) this run did not write (left by an earlier "
              f"run or added by hand; not in manifest.json, left in place): {', '.join(shown)}",
              file=sys.stderr, flush=True)
    return mine


def run_experiment(config: str | os.PathLike | Mapping, out: str | os.PathLike | None = None, *,
                   quick: bool = False, progress: bool | None = None, verbose: bool = False,
                   figures: bool | None = None, wait: bool = False, client=None,
                   _interrupt: Callable[[], None] | None = None) -> RunResult:
    """Run an experiment: data -> model -> policies -> attributions -> curves -> tables, figures.

    Parameters
    ----------
    config : path, shipped name or dict
        See :func:`insdel.config.load` and ``docs/experiments.md``.
    out : path, optional
        Output folder (default: the configuration's ``out``, else ``runs/<name>``).
    quick : bool
        Apply the configuration's ``[quick]`` overrides.
    progress : bool, optional
        Progress bars (default: on a terminal for long stages).
    verbose : bool
        Print what each stage uses and does, and how long it took (to stderr).
    figures : bool, optional
        Override ``figures.enabled``.
    wait : bool
        If another run holds the output folder, wait for it instead of refusing.
    client : dask.distributed.Client, optional
        Run the checkpoint chunks (attributions, exact decomposition) on this client's workers
        instead of the backend of ``[compute]`` (a serial run, an existing scheduler or a
        LocalCluster started and stopped by the run). The results are identical either way.

    Returns
    -------
    RunResult

    Raises
    ------
    OutputFolderBusy
        Another run writes the same output folder (and ``wait`` is False).

    Notes
    -----
    Started again with the same configuration and output folder, the run resumes: the cached model
    is reused and finished chunks of attributions / decompositions are loaded, and the data files
    come out byte-identical to an uninterrupted run.
    """
    check_progress(progress)  # before the data and the model, not at the first bar
    cfg = _loaded(config, quick)
    _config.check_sections(cfg, "run")
    if figures is not None:
        cfg = {**cfg, "figures": {**cfg["figures"], "enabled": bool(figures)}}
    out = Path(out if out is not None else (cfg["out"] or _default_out(cfg["name"])))
    out.mkdir(parents=True, exist_ok=True)
    lock = lock_folder(out, wait)
    try:
        unfinish(out)
        before = _snapshot(out)
        with _client_of(cfg, client, verbose) as cl:
            return _run(cfg, out, progress, verbose, _interrupt, cl, before)
    finally:
        lock.release()


def _loaded(config, quick: bool) -> dict:
    """The configuration, loaded by :func:`insdel.config.load` unless it already was (its
    ``source`` key); ``quick`` cannot apply to a loaded one (its ``[quick]`` table is gone)."""
    if isinstance(config, Mapping) and "source" in config:
        if quick and not config.get("quick"):
            raise ValueError("quick=True, but the configuration is already loaded without its "
                             "[quick] overrides; pass the file (or dict) itself, or load it with "
                             "insdel.config.load(..., quick=True).")
        return dict(config)
    return _config.load(config, quick=quick)


@contextlib.contextmanager
def _client_of(cfg: Mapping, client, verbose: bool):
    """The given client, or the one ``[compute]`` describes (None: serial); with a client, torch
    on the driver uses the workers' thread count meanwhile (:func:`driver_threads`)."""

    def log(msg: str) -> None:
        if verbose:
            print(msg, file=sys.stderr, flush=True)

    with contextlib.ExitStack() as stack:
        cl = client if client is not None else stack.enter_context(
            make_client(cfg["compute"], log=log))
        if cl is not None:
            stack.enter_context(driver_threads(cl, log=log))
        yield cl


def _run(cfg, out: Path, progress, verbose: bool, interrupt, client=None,
         before: Mapping[Path, tuple] | None = None) -> RunResult:
    def log(msg: str) -> None:
        if verbose:
            print(msg, file=sys.stderr, flush=True)

    stages = _Stages()
    t_all = time.perf_counter()
    t0 = time.perf_counter()
    dataset = _load_dataset(cfg)
    data_info = _dataset_info(cfg, dataset)
    stages.add("data", time.perf_counter() - t0)
    log(f"data: {data_info['name']} (recipe {data_info['recipe']}"
        + (f", file {data_info['file']} sha256 {data_info['file_sha256'][:12]}"
           if data_info["file"] else "")
        + f"): {data_info['rows_train']} train / {data_info['rows_test']} test rows, "
        f"{data_info['features']} features")
    if "rows_dropped_missing" in data_info:
        log(f"data: {missing_rows_text(data_info)}")
    grp = _groups_of(dataset)
    if grp is not None:
        log(f"groups: {data_info['groups_text']} (each group moves as one unit in the curves, "
            f"the decomposition and the Shapley values)")
    model, metrics, model_info = _model_stage(cfg, dataset, data_info, out, stages, log, progress)
    device = cfg["compute"]["device"]

    # the model reaches every Dask worker once (a future shared by every stage and policy)
    remote_model = None if client is None else scatter(client, [_shareable_model(
        model, cfg, int(np.asarray(dataset.X_test).shape[1]), model_info["file_sha256"])])[0]
    pool, pool_idx = _select_pool(dataset, cfg["targets"]["n"], cfg["seed"])
    if len(pool_idx) < cfg["targets"]["n"]:
        log(f"targets: all {len(pool_idx)} test rows (targets.n = {cfg['targets']['n']} is more "
            "than the test split has)")
    evaluations, pairings, summaries, decomps, policy_specs = {}, {}, [], {}, {}
    sampled: list[pd.DataFrame] = []
    metric_summaries: list[pd.DataFrame] = []
    ev_cfg = cfg["evaluation"]
    for entry in cfg["policies"]:
        label = _config.policy_label(entry)
        folder = out / label
        t0 = time.perf_counter()
        policy = _make_policy(entry)
        policy_specs[label] = repr(policy)
        log(f"policy {label}: {policy!r}")
        pairing = policy.pair(model, pool, seed=cfg["seed"], progress=progress)
        stages.add(f"{label}/pairing", time.perf_counter() - t0, pairs=len(pairing))
        units = "" if grp is None else f" ({pairing.mean_diff(groups=grp):.2f} of {grp.m} groups)"
        log(f"  {len(pairing)} pairs, mean number of differing features "
            f"{pairing.mean_diff():.2f}{units}")
        X, R = np.ascontiguousarray(pairing.X), np.ascontiguousarray(pairing.R)
        base_key = {"data": data_info["arrays_sha256"], "model": model_info["sha256"],
                    "seed": cfg["seed"], "pairs": ck.sha256_arrays(X, R), "device": device}
        if grp is not None:  # every chunk's key holds the groups (absent: keys as before)
            base_key["groups"] = grp.to_json()
        if model_info["file_sha256"] not in (None, model_info["sha256"]):
            # a torch model from a file: its parameters' hash does not cover its code (a
            # TorchScript forward), the file's does (absent: keys as before)
            base_key["model_file"] = model_info["file_sha256"]
        remote = None if client is None else dict(
            zip(("model", "X", "R"), [remote_model, *scatter(client, [X, R])], strict=True))
        dec = _decomposition(cfg, model, X, R, label, out, base_key, stages, log, progress,
                             interrupt, client, remote, groups=grp)
        given = {}
        if dec is not None and _shapley_from_decomposition(cfg, X.shape[0]):
            units = X.shape[1] if grp is None else grp.m
            given["exact_shapley"] = dec[[f"shapley_{j}" for j in range(units)]].to_numpy()
        atts = _attributions(cfg, model, dataset, X, R, label, out, base_key, stages, log,
                             progress, interrupt, given, client, remote)
        t0 = time.perf_counter()
        ev = evaluate(model, X, R, atts, modes=ev_cfg["modes"], n_random=ev_cfg["n_random"],
                      seed=_chunk_seed(cfg["seed"], label, "orders"),
                      normalize=ev_cfg["normalize"], order=ev_cfg["order"], progress=progress,
                      feature_names=list(getattr(dataset, "feature_names", None) or []) or None,
                      groups=grp, clusters=pairing.cluster)
        stages.add(f"{label}/curves", time.perf_counter() - t0,
                   model_evaluations=int(ev.stats.get("model_evaluations", 0)),
                   curve_points=int(ev.stats.get("curve_points", 0)))
        log(f"  curves: {ev.stats.get('model_evaluations', 0):,} model evaluations, "
            f"{time.perf_counter() - t0:.1f} s")
        # the pairs are explained from the pool; indices are into the pool sample: translate them
        # to rows of the data set's test split.
        pairing.target_index = np.where(pairing.target_index >= 0,
                                        pool_idx[np.maximum(pairing.target_index, 0)], -1)
        pairing.reference_index = np.where(pairing.reference_index >= 0,
                                           pool_idx[np.maximum(pairing.reference_index, 0)], -1)
        ev.save(folder, pairing=pairing)
        ck.save_npz(folder / "attributions.npz", atts)
        msum = _metrics_stage(cfg, model, dataset, X, R, atts, label, folder, stages, log,
                              progress, pairing.cluster)
        if msum is not None:
            metric_summaries.append(msum)
        s = ev.summary()
        ck.atomic_write_text(folder / "summary.csv", s.to_csv(index=False))
        ck.atomic_write_text(folder / "summary.md", policy_table(label, s) + "\n")
        s.insert(0, "policy", label)
        summaries.append(s)
        if "kernel_shap" in atts and "exact_shapley" in atts:
            sve = sampled_vs_exact(ev, group_attributions(atts["kernel_shap"], grp),
                                   group_attributions(atts["exact_shapley"], grp))
            ck.atomic_write_text(folder / "sampled_vs_exact.csv", sve.to_csv(index=False))
            sve.insert(0, "policy", label)
            sampled.append(sve)
        if dec is not None:
            for mode in ev.modes:
                for m in ev.methods:
                    dec[f"abc_{mode}_{m}"] = ev.abc_array(m, mode)[:len(dec)]
            if pairing.cluster is not None:  # the pairs' independent units, for standard errors
                dec["cluster"] = pairing.cluster[:len(dec)]
            with ck.atomic_write(folder / "decomposition.parquet", suffix=".parquet") as tmp:
                dec.to_parquet(tmp, index=False)
            decomps[label] = dec
        evaluations[label] = ev
        pairings[label] = pairing

    from .diagnostics import diagnostics as _diagnostics

    diag = _diagnostics(pairings, evaluations, groups=grp)
    summary = pd.concat(summaries, ignore_index=True)
    ck.atomic_write_text(out / "summary.csv", summary.to_csv(index=False))
    ck.atomic_write_text(out / "diagnostics.csv", diag.to_csv())
    methods = next(iter(evaluations.values())).methods
    header = run_header(data_info, model_info, policy_specs)
    sampled_df = pd.concat(sampled, ignore_index=True) if sampled else None
    if sampled_df is not None:
        ck.atomic_write_text(out / "sampled_vs_exact.csv", sampled_df.to_csv(index=False))
    metrics_df = pd.concat(metric_summaries, ignore_index=True) if metric_summaries else None
    if metrics_df is not None:
        ck.atomic_write_text(out / "metrics_summary.csv", metrics_df.to_csv(index=False))
    ck.atomic_write_text(out / "summary.md", run_tables(summary, diag, decomps, methods,
                                                        header=header, sampled=sampled_df,
                                                        metrics=metrics_df))

    fig_paths = _figures(cfg, evaluations, model, dataset, out, stages, log, decomps)

    total = time.perf_counter() - t_all
    files = _run_files(out, {} if before is None else before, _model_files(model_info))
    evals_total = sum(int(v.get("model_evaluations", 0)) for v in stages.stages.values())
    manifest = {
        "name": cfg["name"], "source": cfg["source"], "quick": cfg["quick"], "seed": cfg["seed"],
        "config": to_jsonable({k: v for k, v in cfg.items() if k not in ("source",)}),
        "versions": _versions(),
        "data": to_jsonable(data_info),
        "policies": list(evaluations),
        "policy_specs": policy_specs,
        "model": {"metrics": to_jsonable(metrics), **to_jsonable(model_info)},
        "compute": {"device": cfg["compute"]["device"], **client_info(client),
                    "seconds_total": total, "model_evaluations_total": evals_total,
                    "cpu_count": os.cpu_count(), "stages": to_jsonable(stages.stages)},
        "files": {str(p.relative_to(out)): ck.sha256_file(p) for p in files},
    }
    ck.atomic_write_text(out / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    return RunResult(out=out, config=cfg, evaluations=evaluations, pairings=pairings,
                     summary=summary, diagnostics=diag, manifest=manifest, figures=fig_paths,
                     model=model, dataset=dataset, decompositions=decomps,
                     sampled_vs_exact=sampled_df, metrics=metrics_df)


def _target_label(dataset) -> str | None:
    name = getattr(dataset, "target_name", None)
    scale = getattr(dataset, "target_scale", None)
    return None if not name else (f"{name} / {scale:g}" if scale else str(name))


def _figures(cfg, evaluations, model, dataset, out: Path, stages, log,
             decomps: Mapping[str, pd.DataFrame] | None = None) -> list[Path]:
    if not cfg["figures"]["enabled"]:
        return []
    import matplotlib.pyplot as plt

    from . import plotting

    t0 = time.perf_counter()
    f = cfg["figures"]
    fdir = out / "figures"
    paths: list[Path] = []
    with plt.rc_context({"figure.max_open_warning": 0}):
        for label, ev in evaluations.items():
            two = plotting.compare_pair(f["compare"], ev.methods)
            if two != list(f["compare"])[:2]:  # say what the figures show instead
                log(f"figures [{label}]: comparing {' and '.join(two)} (figures.compare = "
                    f"{list(f['compare'])}; a method not run is replaced)")
            paths += plotting.policy_figures(ev, label, fdir, compare=f["compare"],
                                             n_random=f["n_random"], dpi=f["dpi"],
                                             seed=cfg["seed"], target=_target_label(dataset))
        for label, dec in (decomps or {}).items():
            fig = plotting.decomposition_figure(dec, evaluations[label].methods,
                                                title=f"{label}: ABC against the exact bounds")
            paths.append(plotting.save_figure(fig, fdir / f"{label}_decomposition.png", f["dpi"]))
        ax = plotting.plot_predictions(model, dataset)
        paths.append(plotting.save_figure(ax.figure, fdir / "model_predictions.png", f["dpi"]))
    stages.add("figures", time.perf_counter() - t0, count=len(paths))
    log(f"figures: {len(paths)} written to {fdir}")
    return paths


# --------------------------------------------------------------------------------------------------
# ROAR (paper §6): `insdel roar CONFIG`
# --------------------------------------------------------------------------------------------------
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
        from . import roar as _roar

        return _roar.to_markdown(self.summary, digits)


def _roar_attributions(cfg, model, dataset, Xall, R, out, base_key, stages, log, progress,
                       interrupt, client=None, remote: Mapping | None = None
                       ) -> dict[str, np.ndarray]:
    """Every method's attributions of the training and test points, checkpointed in chunks."""
    from . import attribution

    N = Xall.shape[0]
    cs = cfg["roar"]["points_per_chunk"]
    n_chunks = -(-N // cs)
    result = {}
    names = cfg["methods"]["names"]
    with progress_bar(len(names) * n_chunks, "roar attributions", unit="chunk", enable=progress,
                      auto=True) as bar:
        for method in names:
            opts = dict(cfg["methods"]["options"].get(method, {}) or {})
            key = ck.config_hash({**base_key, "stage": "roar_attributions", "method": method,
                                  "options": _options_key(opts, dataset), "points_per_chunk": cs})
            store = ck.ChunkStore(out / "checkpoints" / "attributions" / method, key)
            opts = attribution.resolve_std_scale(method, opts, Xall)

            def args_of(i, method=method, opts=opts):
                lo, hi = i * cs, min(N, (i + 1) * cs)
                kw = _method_options(method, opts, _chunk_seed(cfg["seed"], "roar", method, i),
                                     dataset)
                return lo, hi, method, kw, "points {lo}..{hi}"

            shared = {"model": model, "X": Xall, "R": R} if client is None else remote
            chunks, secs, evals, resumed = _chunked(
                store, n_chunks, _attribution_task, args_of, shared, bar, interrupt, client,
                describe=lambda i, method=method: f"{method} on points {i * cs}.."
                f"{min(N, (i + 1) * cs) - 1}")
            stages.add(f"attributions/{method}", secs, model_evaluations=evals,
                       chunks=n_chunks, chunks_resumed=resumed)
            result[method] = np.concatenate(chunks, axis=0)
            log(f"  {method}: {secs:.1f} s, {evals:,} model evaluations"
                + (f" ({resumed} of {n_chunks} chunks resumed)" if resumed else ""))
    return result


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
    from . import roar as _roar

    check_progress(progress)
    cfg = _loaded(config, quick)
    _config.check_sections(cfg, "roar")
    out = Path(out if out is not None else (cfg["out"] or _default_out(cfg["name"])))
    out.mkdir(parents=True, exist_ok=True)
    lock = lock_folder(out, wait)
    try:
        unfinish(out)
        before = _snapshot(out)
        with _client_of(cfg, client, verbose) as cl:
            return _run_roar(cfg, out, progress, verbose, _interrupt, _roar, cl, before)
    finally:
        lock.release()


def _run_roar(cfg, out: Path, progress, verbose: bool, interrupt, _roar, client=None,
              before: Mapping[Path, tuple] | None = None) -> RoarRun:
    def log(msg: str) -> None:
        if verbose:
            print(msg, file=sys.stderr, flush=True)

    stages = _Stages()
    t_all = time.perf_counter()
    dataset = _load_dataset(cfg)
    if _groups_of(dataset) is not None:
        raise ValueError(f"data set {cfg['data']['recipe']!r} declares feature groups "
                         f"({groups_text(_groups_of(dataset))}); ROAR removes single features "
                         "and does not support groups yet (use the recipe's default, e.g. "
                         "location = 'drop').")
    data_info = _dataset_info(cfg, dataset)
    log(f"data: {data_info['name']} (recipe {data_info['recipe']}): {data_info['rows_train']} "
        f"train / {data_info['rows_test']} test rows, {data_info['features']} features")
    if "rows_dropped_missing" in data_info:
        log(f"data: {missing_rows_text(data_info)}")
    model, metrics, model_info = _model_stage(cfg, dataset, data_info, out, stages, log, progress)
    device = cfg["compute"]["device"]
    values = _roar.removal_values(dataset)
    Xall = np.concatenate([dataset.X_train, dataset.X_test]).astype(np.float64)
    ref = cfg["roar"]["reference"]
    if ref == "removal":
        R = np.broadcast_to(values, Xall.shape).copy()
        log(f"reference: the removal point (training mean, mode of the "
            f"{int(dataset.binary_mask.sum())} binary features)")
    else:
        from . import policies

        pol = policies.load(ref)
        pairing = pol.pair(model, Xall, seed=cfg["seed"], progress=progress)
        if len(pairing) != Xall.shape[0] or not np.array_equal(pairing.target_index,
                                                                np.arange(Xall.shape[0])):
            raise ValueError(f"roar.reference = {ref!r}: the policy paired {len(pairing)} of the "
                             f"{Xall.shape[0]} points (or reordered them); ROAR needs a reference "
                             "for every training and test point.")
        R = np.ascontiguousarray(pairing.R)
        log(f"reference: policy {pol!r}, mean |D| {pairing.mean_diff():.2f}")
    base_key = {"data": data_info["arrays_sha256"], "model": model_info["sha256"],
                "seed": cfg["seed"], "reference": ref, "pairs": ck.sha256_arrays(Xall, R),
                "device": device}
    remote = None if client is None else dict(zip(("model", "X", "R"), scatter(
        client, [_shareable_model(model, cfg, Xall.shape[1], None), Xall, R]), strict=True))
    atts = _roar_attributions(cfg, model, dataset, Xall, R, out, base_key, stages, log, progress,
                              interrupt, client, remote)
    ck.save_npz(out / "attributions.npz", atts)
    spec = cfg["model"]["preset"] if cfg["model"]["preset"] is not None else \
        dict(cfg["model"]["params"] or {})
    r = cfg["roar"]
    max_epochs = r["max_epochs"] if r["max_epochs"] is not None else cfg["model"]["max_epochs"]
    t0 = time.perf_counter()
    table = _roar.roar(dataset, atts, params=spec, orderings=r["orderings"],
                       fractions=r["fractions"], replicates=r["replicates"], seed=cfg["seed"],
                       max_epochs=max_epochs, device=device,
                       store=out / "checkpoints" / "roar", progress=progress, log=log,
                       _interrupt=interrupt)
    stages.add("roar/trainings", time.perf_counter() - t0, units=len(table),
               epochs=int(table["epochs"].sum()))
    summary = _roar.summarize(table)
    ck.atomic_write_text(out / "roar.csv", table.to_csv(index=False))
    ck.atomic_write_text(out / "roar_summary.csv", summary.to_csv(index=False))
    header = run_header(data_info, model_info, {"reference": ref})
    ck.atomic_write_text(out / "summary.md", header + "\n" + _roar.to_markdown(summary))
    fig_path = None
    import matplotlib.pyplot as plt

    from . import plotting

    with plt.rc_context({"figure.max_open_warning": 0}):
        fig = plotting.roar_figure(summary, title=f"ROAR on {data_info['name']}")
        fig_path = plotting.save_figure(fig, out / "figures" / "roar.png", 110)
    files = _run_files(out, {} if before is None else before, _model_files(model_info))
    manifest = {
        "name": cfg["name"], "source": cfg["source"], "quick": cfg["quick"], "seed": cfg["seed"],
        "config": to_jsonable({k: v for k, v in cfg.items() if k != "source"}),
        "versions": _versions(), "data": to_jsonable(data_info),
        "model": {"metrics": to_jsonable(metrics), **to_jsonable(model_info)},
        "roar": to_jsonable(_roar.run_info(cfg, dataset, values)),
        "compute": {"device": device, **client_info(client),
                    "seconds_total": time.perf_counter() - t_all,
                    "trainings": int(len(table)), "epochs_total": int(table["epochs"].sum()),
                    "cpu_count": os.cpu_count(), "stages": to_jsonable(stages.stages)},
        "files": {str(p.relative_to(out)): ck.sha256_file(p) for p in files},
    }
    ck.atomic_write_text(out / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    return RoarRun(out=out, config=cfg, table=table, summary=summary, manifest=manifest,
                   figure=fig_path)
