"""The model stage of both commands: train, load from the run's cache or from the user's file,
check the configured methods against it, fingerprint it (the key of every checkpoint chunk)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ... import _checkpoint as ck
from ...report import model_sha256_text
from ..provenance import Stages, model_hash, model_hash_of

__all__ = ["get_model", "model_files", "model_stage", "read_trees"]


def get_model(cfg: dict, dataset, data_hash: str, out: Path, log, progress
              ) -> tuple[Any, dict, dict]:
    """Train (or load) the model; a trained model is cached in ``out`` under a key of the data and
    the model's configuration, so a resumed run uses the same f. Returns (model, metrics, info)."""
    from ... import models

    m = cfg["model"]
    if m["path"] is not None:
        from ...model_files import load_any

        model, info = load_any(m["path"], trust=m["trust"], preset=m["architecture"],
                               n_features=int(np.asarray(dataset.X_test).shape[1]),
                               dataset=dataset)  # an insdel model file: its features and scaling
        return model, {}, {"source": "path", **info}
    if m["kind"] == "gradient_boosting":  # seconds to fit, deterministic: fitted every run
        log(f"model: fitting scikit-learn HistGradientBoostingRegressor on "
            f"{len(dataset.X_train)} points ...")
        model, metrics = models.train_gradient_boosting(dataset, m["params"], seed=cfg["seed"])
        log(f"model: fitted in {metrics['seconds']:.1f} s ({model.n_iter_} trees, test R² "
            f"{metrics['r2']:.3f})")
        # its fingerprint: the trees' SHA-256, taken by model_stage when it reads them
        return model, metrics, {"source": "trained", "kind": "gradient_boosting",
                                "params": metrics["params"]}
    # the trained MLP's key: the keys that change its training (model.outputs needs model.path,
    # the engine reads the model; neither changes what is trained)
    trained = {k: v for k, v in m.items()
               if k not in ("outputs", "output_weights", "engine", "kind")}
    key = ck.config_hash({"data": data_hash, "model": trained, "seed": cfg["seed"],
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
    hp = metrics["params"]
    why = ("params num_threads" if hp.get("num_threads") is not None else threads_rule(
        models.mlp_parameters(np.shape(dataset.X_train)[1], hp["hidden"]), hp["batch_size"],
        "batch"))
    log(f"model: trained in {metrics['seconds']:.1f} s on {metrics['num_threads']} torch "
        f"thread(s) ({why})")
    return model, dict(metrics or {}), {"source": "trained", "preset": m["preset"], "key": key}


def model_files(model_info: Mapping) -> tuple[str, ...]:
    """The files of ``out`` a run uses without writing them: the cached model it loaded."""
    return ("model.pt", "model.key") if model_info.get("source") == "cache" else ()


def read_trees(model):
    """The trees of ``model`` (:func:`insdel.trees.read`), read once for the whole run, or None:
    not a tree ensemble insdel reads, or one whose reader refuses it or whose library is not
    installed (:func:`insdel.game.model_engine` then says why, or reports ``black_box``)."""
    from ...removal.trees import is_ensemble

    if not is_ensemble(model):
        return None
    from ...trees import UnsupportedModelError, read

    try:
        return read(model)
    except (UnsupportedModelError, ImportError):
        return None


def model_stage(cfg: dict, dataset, data_info: dict, out: Path, stages: Stages, log,
                progress, *, with_trees: bool = False) -> tuple[Any, dict, dict]:
    """The model stage of every command (``run``, ``road``, ``tune``, ``sanity``, ``roar``).

    Train, load from the cache or from the user's file (:func:`get_model`), check the gradient
    methods against it, fingerprint it (the key of every checkpoint chunk), put a torch module in
    eval mode on ``compute.device``, and log what was used. A tree ensemble's trees are read
    once here (:func:`read_trees`): the engine's text and a fitted ensemble's fingerprint come
    from them.

    Parameters
    ----------
    with_trees : bool, default False
        Return a tree ensemble as an :class:`insdel.trees.ModelWithTrees` holding the trees read
        here, so that the run's stages and chunks build their tree games without reading the
        model again (a model whose trees are not read is returned as it is).

    Returns
    -------
    tuple
        (model, training metrics, model info).
    """
    t0 = time.perf_counter()
    model, metrics, model_info = get_model(cfg, dataset, data_info["arrays_sha256"], out, log,
                                           progress)
    trees = read_trees(model)
    if model_info.get("kind") == "gradient_boosting":
        from ...trees import read
        from ...trees._tree_game import ensemble_sha256

        # read again only where the first read failed: the reader's error, named
        model_info["sha256"] = ensemble_sha256(read(model) if trees is None else trees)
    from ...adapter import eval_mode, model_capabilities
    from ...attribution import check_supported, supported

    check_supported(model, cfg["methods"]["names"])  # DeepLIFT on TorchScript: refused here
    model_info["capabilities"] = list(model_capabilities(model))
    model_info["methods"] = supported(model)
    model_info["file_sha256"] = model_info.pop("sha256", None)
    model_info["sha256"] = model_hash(model, model_info["file_sha256"])
    model_info["sha256_of"] = ("trees" if model_info.get("kind") == "gradient_boosting"
                               else model_hash_of(model))  # "parameters", "file" or "trees"
    from ...game import model_engine
    from ...removal.trees import is_ensemble

    try:
        model_info["engine"] = model_engine(model if trees is None else trees,
                                            cfg["model"]["engine"])
    except ValueError as exc:
        raise ValueError(f"model.engine = {cfg['model']['engine']!r}: {exc}") from None
    model_info["tree_ensemble"] = bool(is_ensemble(model))
    log(f"engine: {model_info['engine']}")
    stages.add("model", time.perf_counter() - t0, **{"source": model_info["source"]})
    log(f"model: {model_info['source']}"
        + (f" {model_info['path']}" if model_info.get("path") else "")
        + (f" ({model_info['format']})" if model_info.get("format") else "")
        + f", {model_sha256_text(model_info, 12)}")
    device = cfg["compute"]["device"]
    try:
        import torch

        if isinstance(model, torch.nn.Module):
            eval_mode(model)
            if device != "cpu":
                model.to(device)
                log(f"compute: model on {device} "
                    f"({torch.cuda.get_device_name(torch.device(device)) if device.startswith('cuda') else device})")
        if isinstance(model, torch.nn.Module):
            from ..._threads import module_parameters
            from ...adapter import as_model

            f = as_model(model)
            n = torch.get_num_threads() if f.threads is None else f.threads
            model_info["eval_threads"] = n
            log(f"compute: the model evaluates on {n} torch thread(s) "
                f"({threads_rule(module_parameters(model), f.batch_size, 'call')})")
    except ImportError:  # pragma: no cover
        pass
    if with_trees and trees is not None:
        from ...trees import ModelWithTrees

        model = ModelWithTrees(model, trees)
    return model, metrics, model_info


def threads_rule(n_params: int, rows: int, per: str) -> str:
    """Why torch runs on the thread count it does (:func:`insdel._threads.torch_threads_for`):
    ``"27009 parameters x 8192 rows per call < 1e9: 1 thread"`` or ``"... >= 1e9: torch's
    setting"``."""
    from ..._threads import SMALL_WORK, torch_threads_for

    small = torch_threads_for(n_params, rows) == 1
    return (f"{n_params} parameters x {rows} rows per {per} {'<' if small else '>='} "
            f"{SMALL_WORK:.0e}: {'1 thread' if small else 'torch' + chr(39) + 's setting'}")
