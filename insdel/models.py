"""The paper's MLP, its training, its Optuna search, saving/loading and the prediction plot.

Paper Appendix A.2 and A.4: a multilayer perceptron whose hidden layers are each followed by a
parametric ReLU (He et al. 2015) and dropout with one common ratio, trained with the Huber loss
(δ = 1) and Adam; the numbers of layers and units, the dropout ratio and the learning rate were
found with Optuna. The presets hold the paper's values (Table 6, Table 7) and two small models for
quick runs on 2 CPU cores:

=================  ===============================  ========  =========
preset             hidden                           dropout   lr
=================  ===============================  ========  =========
paper_bangalore    [333, 465, 86, 234]              0.10031   1.7389e-2
paper_cern         [509, 421, 65, 368, 122, 477]    0.11604   1.9163e-4
quick_cern         [128, 128, 64]                   0.0       3e-3
quick_housing      [64, 64]                         0.1       3e-3
=================  ===============================  ========  =========

Every prediction made elsewhere in insdel goes through :func:`insdel.as_model`, which puts the
module in eval mode (dropout off).
"""

from __future__ import annotations

import copy
import json
import math
import os
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ._checkpoint import to_jsonable
from ._progress import progress_bar
from ._registry import Registry, check_options
from ._threads import torch_threads, torch_threads_for
from ._validation import check_positive_int, check_progress, check_scalar

__all__ = ["MLP", "PRESETS", "available", "get", "options_of", "default_preset", "train_mlp", "tune_mlp",
           "save_model", "load_model", "regression_metrics", "mlp_parameters",
           "GRADIENT_BOOSTING_DEFAULTS", "gradient_boosting_params", "train_gradient_boosting"]

_BASE = {"huber_delta": 1.0, "batch_size": 256, "max_epochs": 200, "patience": 15,
         "val_fraction": 0.1, "weight_decay": 0.0, "lr_schedule": None, "num_threads": None}

#: Hyperparameter presets (``hidden``, ``dropout``, ``lr``, ``huber_delta``, ``batch_size``,
#: ``max_epochs``, ``patience``, ``val_fraction``, ``weight_decay``, ``lr_schedule``,
#: ``num_threads`` — torch threads while training, None = by the model's size: 1 thread below
#: ``insdel._threads.SMALL_WORK`` parameters x batch rows, torch's setting above, docs/data_and_models.md).
PRESETS: dict[str, dict[str, Any]] = {
    # paper Table 6 (Bangalore housing)
    "paper_bangalore": {**_BASE, "hidden": [333, 465, 86, 234], "dropout": 0.10031,
                        "lr": 1.7389e-2, "batch_size": 64, "max_epochs": 300, "patience": 30},
    # paper Table 7 (CERN dielectron)
    "paper_cern": {**_BASE, "hidden": [509, 421, 65, 368, 122, 477], "dropout": 0.11604,
                   "lr": 1.9163e-4, "batch_size": 256, "max_epochs": 300, "patience": 20},
    # small models for the README's main job and CI (2 CPU cores)
    "quick_cern": {**_BASE, "hidden": [128, 128, 64], "dropout": 0.0, "lr": 3e-3,
                   "batch_size": 512, "max_epochs": 15, "patience": 5, "lr_schedule": "cosine",
                   "num_threads": 1},
    "quick_housing": {**_BASE, "hidden": [64, 64], "dropout": 0.1, "lr": 3e-3,
                      "batch_size": 64, "max_epochs": 150, "patience": 20,
                      "weight_decay": 1e-4, "num_threads": 1},
}

# keys of tune_mlp's result that describe the search, not the model (ignored by train_mlp)
_INFO_KEYS = ("preset", "best_value", "n_trials", "study_name")

_DEFAULT_FOR = {"dielectron": "paper_cern", "bangalore": "paper_bangalore",
                "dielectron_sim": "quick_cern", "housing_sim": "quick_housing",
                "diabetes": "quick_housing"}


_PRESETS = Registry("model preset", PRESETS, copy=True)


def available() -> list[str]:
    """Names of the hyperparameter presets (see :data:`PRESETS`), sorted."""
    return _PRESETS.available()


def get(name: str) -> dict[str, Any]:
    """A copy of hyperparameter preset ``name`` (see :data:`PRESETS`). Raises
    :class:`insdel.UnknownNameError` (a ``ValueError``) for an unknown name."""
    return _PRESETS.get(name)


def options_of(name: str) -> dict[str, Any]:
    """The hyperparameters of preset ``name`` with their values: the defaults that a ``params``
    dict starting from it (``{"preset": name, ...}``) overrides (a copy, as :func:`get`)."""
    return _PRESETS.get(name)


def default_preset(dataset) -> str:
    """The preset used when ``params=None``: the paper's for the real data, a quick one else."""
    return _DEFAULT_FOR.get(getattr(dataset, "name", ""), "quick_cern")


def _resolve_params(params, dataset) -> dict[str, Any]:
    if params is None:
        params = default_preset(dataset)
    if isinstance(params, str):
        return get(params)
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be None, a preset name or a dict; got "
                        f"{type(params).__name__}.")
    base = get(params["preset"]) if "preset" in params else dict(_BASE)
    out = {**base, **{k: v for k, v in params.items() if k not in _INFO_KEYS}}
    check_options("params", sorted(out), sorted(set(_BASE) | {"hidden", "dropout", "lr"}),
                  noun="key")
    for key in ("hidden", "dropout", "lr"):
        if key not in out:
            raise ValueError(f"params needs {key!r} (or 'preset': NAME to start from a preset).")
    hidden = out["hidden"]
    if isinstance(hidden, (str, bytes)) or not hasattr(hidden, "__iter__") or not list(hidden):
        # "64" is not [6, 4]
        raise TypeError(f"params['hidden'] must be a non-empty list of integer layer sizes; got "
                        f"{hidden!r}.")
    out["hidden"] = [check_positive_int(h, f"params['hidden'][{i}]") for i, h in enumerate(hidden)]
    for key in ("batch_size", "max_epochs", "patience", "num_threads"):
        if key != "num_threads" or out[key] is not None:  # num_threads None: torch's default
            out[key] = check_positive_int(out[key], f"params[{key!r}]")
    # (key, lower bound, upper bound, which bounds are allowed values)
    for key, lo, hi, bounds in (("dropout", 0.0, 1.0, "left"), ("lr", 0.0, None, "neither"),
                                ("val_fraction", 0.0, 1.0, "neither"),
                                ("huber_delta", 0.0, None, "neither"),
                                ("weight_decay", 0.0, None, "both")):
        # checked, not converted: the resolved params key ROAR's checkpoints as given
        check_scalar(out[key], f"params[{key!r}]", float, min_val=lo, max_val=hi,
                     include_boundaries=bounds, finite=True)
    if out["lr_schedule"] not in (None, "cosine", "plateau"):
        raise ValueError(f"params['lr_schedule'] must be None, 'cosine' or 'plateau'; got "
                         f"{out['lr_schedule']!r}.")
    return out


def mlp_parameters(n_features: int, hidden: list[int]) -> int:
    """The number of parameters of ``MLP(n_features, hidden)``: each layer's weights and biases
    and one PReLU slope per hidden layer."""
    total, width = 0, int(n_features)
    for h in hidden:
        total += width * int(h) + int(h) + 1
        width = int(h)
    return total + width + 1


class MLP(nn.Module):
    """The paper's MLP: ``[Linear -> PReLU -> Dropout] * len(hidden) -> Linear(1)``.

    Parameters
    ----------
    n_features : int
        Input width n.
    hidden : list of int
        Units of each hidden layer (paper Tables 6 and 7, "Number of Neurons").
    dropout : float
        Dropout ratio, common to all hidden layers.

    The forward pass returns shape (B,). Each PReLU is its own module (one learnable slope each),
    so gradient and DeepLIFT hooks see every nonlinearity.
    """

    def __init__(self, n_features: int, hidden: list[int], dropout: float = 0.0):
        super().__init__()
        self.n_features = int(n_features)
        self.hidden = [int(h) for h in hidden]
        self.dropout = float(dropout)
        layers: list[nn.Module] = []
        width = self.n_features
        for h in self.hidden:
            layers += [nn.Linear(width, h), nn.PReLU(), nn.Dropout(self.dropout)]
            width = h
        layers.append(nn.Linear(width, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)

    def config(self) -> dict[str, Any]:
        return {"n_features": self.n_features, "hidden": list(self.hidden),
                "dropout": self.dropout}


def regression_metrics(y_true: np.ndarray, y_pred: np.ndarray, delta: float = 1.0
                       ) -> dict[str, float]:
    """Huber loss (mean, parameter ``delta``), RMSE and R² of predictions."""
    y_true = np.asarray(y_true, dtype=np.float64)
    y_pred = np.asarray(y_pred, dtype=np.float64)
    r = y_pred - y_true
    a = np.abs(r)
    huber = np.where(a <= delta, 0.5 * r ** 2, delta * (a - 0.5 * delta)).mean()
    ss_res = float((r ** 2).sum())
    ss_tot = float(((y_true - y_true.mean()) ** 2).sum())
    return {"huber": float(huber), "rmse": float(math.sqrt(ss_res / len(r))),
            "r2": float(1.0 - ss_res / ss_tot) if ss_tot > 0 else float("nan")}


def _predict(model: nn.Module, X: np.ndarray, batch: int | None = None) -> np.ndarray:
    from .adapter import as_model

    was_training = model.training
    try:
        return as_model(model, batch_size=batch)(X)
    finally:
        model.train(was_training)


def _split_validation(n: int, frac: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    n_val = min(max(int(round(frac * n)), 1), n - 1)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 1010]))
    perm = rng.permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def _check_dataset(dataset) -> None:
    for attr in ("X_train", "y_train", "X_test", "y_test"):
        if not hasattr(dataset, attr):
            raise TypeError(f"dataset must have X_train, y_train, X_test, y_test (an "
                            f"insdel.datasets.Dataset); it lacks {attr!r}.")
    if len(dataset.X_train) < 2:
        raise ValueError(f"dataset has {len(dataset.X_train)} training rows; need at least 2.")


def train_mlp(dataset, params: str | Mapping | None = None, *, seed: int = 0,
              max_epochs: int | None = None, progress: bool | None = None,
              device: str = "cpu", max_seconds: float | None = None,
              num_threads: int | None = None, trial=None) -> tuple[MLP, dict[str, Any]]:
    """Train the paper's MLP on ``dataset`` with early stopping (Appendix A.2/A.4).

    Parameters
    ----------
    dataset : insdel.datasets.Dataset
        Uses ``X_train``/``y_train`` (a validation share of them is held out for early stopping)
        and ``X_test``/``y_test`` for the reported test metrics.
    params : None, str or dict
        A preset name (:data:`PRESETS`), a dict of hyperparameters (``hidden``, ``dropout``,
        ``lr`` and optionally the other keys of a preset, or ``preset`` to start from one), or None
        for :func:`default_preset`.
    seed : int
        Seeds weight initialisation, dropout, shuffling and the validation split. The global
        torch random state is left unchanged.
    max_epochs : int, optional
        Overrides ``params['max_epochs']``.
    progress : bool, optional
        Show a progress bar (default: on a terminal only).
    device : str
        Torch device for training (the returned model is moved back to the CPU).
    max_seconds : float, optional
        Stop after the epoch that crosses this wall-clock budget.
    num_threads : int, optional
        Torch intra-op threads while training (restored afterwards); None uses
        ``params['num_threads']`` (1 in the quick presets), and where that is None too, a count by
        the model's size on the CPU: 1 thread while parameters x ``batch_size`` is below
        ``insdel._threads.SMALL_WORK`` (10^9; every preset), torch's setting above it. Small
        MLPs train fastest with 1 thread, and on a busy machine 2 threads can be many times slower
        than 1 (threads wait for each other at every operation; docs/data_and_models.md). The
        count used is ``metrics['num_threads']``.
    trial : optuna.Trial, optional
        Report the validation loss every epoch and stop early if the trial is pruned
        (used by :func:`tune_mlp`).

    Returns
    -------
    model : MLP
        The weights of the epoch with the best validation loss, in eval mode, on the CPU.
    metrics : dict
        ``train``, ``val`` and ``test`` dicts of ``huber``, ``rmse``, ``r2`` (model units), the
        epochs run, the best epoch, seconds, the per-epoch losses, the resolved ``params`` and
        ``num_threads`` (torch threads while training).
    """
    _check_dataset(dataset)
    check_positive_int(seed, "seed", minimum=0)
    p = _resolve_params(params, dataset)
    if num_threads is None:
        num_threads = p.get("num_threads")
    if num_threads is None and torch.device(device).type == "cpu":  # by the model's size
        num_threads = torch_threads_for(
            mlp_parameters(np.shape(dataset.X_train)[1], p["hidden"]), p["batch_size"])
    if num_threads is not None and int(num_threads) != torch.get_num_threads():
        with torch_threads(check_positive_int(num_threads, "num_threads")):
            return train_mlp(dataset, p, seed=seed, max_epochs=max_epochs, progress=progress,
                             device=device, max_seconds=max_seconds, trial=trial)
    if max_epochs is not None:
        p["max_epochs"] = check_positive_int(max_epochs, "max_epochs")
    X = np.asarray(dataset.X_train, dtype=np.float32)
    y = np.asarray(dataset.y_train, dtype=np.float32)
    tr, va = _split_validation(len(X), float(p["val_fraction"]), seed)
    dev = torch.device(device)
    Xt, yt = torch.from_numpy(X[tr]).to(dev), torch.from_numpy(y[tr]).to(dev)
    Xv, yv = torch.from_numpy(X[va]).to(dev), torch.from_numpy(y[va]).to(dev)
    loss_fn = nn.HuberLoss(delta=float(p["huber_delta"]))
    bs = int(p["batch_size"])
    n_tr = len(tr)
    t0 = time.perf_counter()
    hist_tr: list[float] = []
    hist_va: list[float] = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        model = MLP(X.shape[1], p["hidden"], p["dropout"])
        with torch.no_grad():  # start at the mean target: fewer epochs spent learning an offset
            model.net[-1].bias.fill_(float(y[tr].mean()))
        model = model.to(dev)
        gen = torch.Generator(device="cpu").manual_seed(int(seed) + 1)
        opt = torch.optim.Adam(model.parameters(), lr=float(p["lr"]),
                               weight_decay=float(p["weight_decay"]))
        sched = None
        if p["lr_schedule"] == "cosine":
            steps = p["max_epochs"] * math.ceil(n_tr / bs)
            sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(steps, 1))
        elif p["lr_schedule"] == "plateau":
            plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(
                opt, factor=0.5, patience=max(int(p["patience"]) // 3, 1))
        best = (math.inf, 0, copy.deepcopy(model.state_dict()))
        epoch = 0
        with progress_bar(p["max_epochs"], desc="training MLP", unit="epoch",
                          enable=progress) as bar:
            for epoch in range(1, p["max_epochs"] + 1):
                model.train()
                perm = torch.randperm(n_tr, generator=gen).to(dev)
                total = 0.0
                for start in range(0, n_tr, bs):
                    idx = perm[start:start + bs]
                    opt.zero_grad(set_to_none=True)
                    loss = loss_fn(model(Xt[idx]), yt[idx])
                    loss.backward()
                    opt.step()
                    if sched is not None:
                        sched.step()
                    total += float(loss.detach()) * len(idx)
                model.eval()
                with torch.inference_mode():
                    vloss = float(loss_fn(model(Xv), yv))
                hist_tr.append(total / n_tr)
                hist_va.append(vloss)
                if p["lr_schedule"] == "plateau":
                    plateau.step(vloss)
                if vloss < best[0]:
                    best = (vloss, epoch, copy.deepcopy(model.state_dict()))
                bar.update(1)
                bar.set_postfix_str(f"train {hist_tr[-1]:.4g} val {vloss:.4g}")
                if trial is not None:
                    trial.report(vloss, epoch)
                    if trial.should_prune():
                        import optuna

                        raise optuna.TrialPruned()
                if not math.isfinite(vloss):
                    break
                if epoch - best[1] >= int(p["patience"]):
                    break
                if max_seconds is not None and time.perf_counter() - t0 > max_seconds:
                    break
        model.load_state_dict(best[2])
    model = model.to("cpu").eval()
    seconds = time.perf_counter() - t0
    delta = float(p["huber_delta"])
    Xd = np.asarray(dataset.X_train, dtype=np.float64)
    yd = np.asarray(dataset.y_train, dtype=np.float64)
    metrics: dict[str, Any] = {
        "train": regression_metrics(yd[tr], _predict(model, Xd[tr]), delta),
        "val": regression_metrics(yd[va], _predict(model, Xd[va]), delta),
        "test": regression_metrics(dataset.y_test, _predict(model, dataset.X_test), delta),
        "epochs": epoch, "best_epoch": best[1], "seconds": seconds,
        "history": {"train_loss": hist_tr, "val_loss": hist_va},
        "params": p, "seed": int(seed), "num_threads": torch.get_num_threads(),
    }
    return model, metrics


# ---------------------------------------------------------------- Optuna search


def _storage_url(storage) -> str | None:
    if storage is None:
        return None
    s = os.fspath(storage)
    if "://" in s:
        return s
    Path(s).expanduser().resolve().parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{Path(s).expanduser().resolve()}"


def tune_mlp(dataset, n_trials: int = 50, timeout: float | None = None, *,
             storage: str | os.PathLike | None = None, study_name: str = "insdel_mlp",
             seed: int = 0, max_layers: int = 6, max_units: int = 512,
             max_epochs: int = 50, patience: int = 8, batch_size: int = 256,
             progress: bool | None = None, callbacks=None,
             num_threads: int | None = None) -> dict[str, Any]:
    """Optuna search over the MLP's layers, units, dropout and learning rate (Appendix A.2/A.4).

    Parameters
    ----------
    dataset : insdel.datasets.Dataset
    n_trials : int
        Total number of finished (complete or pruned) trials wanted in the study; a resumed
        study only runs the missing ones.
    timeout : float, optional
        Stop starting new trials after this many seconds.
    storage : path or URL, optional
        A SQLite file (``"search.sqlite3"``) or an Optuna storage URL. With a storage the search
        is resumable: run the same call again after an interruption and it continues. Trials
        left "running" by a killed process are marked failed on resume.
    study_name : str
        Name of the study inside the storage.
    seed : int
        Seeds the sampler (offset by the number of trials already in the study, so a resumed
        search does not repeat its first proposals) and every trial's training.
    max_layers, max_units : int
        Search space: 1..max_layers hidden layers, 8..max_units units each (log scale); dropout
        in [0, 0.5]; learning rate in [1e-5, 1e-1] (log scale).
    max_epochs, patience, batch_size : int
        Training budget of each trial; the validation loss is reported every epoch and a median
        pruner stops unpromising trials.
    progress : bool, optional
        Show Optuna's progress bar and log lines (default: quiet); None, True or False
        (``progress="no"`` is a TypeError: its truthiness would decide).
    callbacks : list, optional
        Extra Optuna callbacks ``f(study, trial)``.
    num_threads : int, optional
        Passed to :func:`train_mlp` for every trial.

    Returns
    -------
    dict
        The best hyperparameters in the form :func:`train_mlp` takes (``hidden``, ``dropout``,
        ``lr`` and the training budget), plus ``"best_value"`` (validation Huber loss),
        ``"n_trials"`` (finished trials in the study) and ``"study_name"``.
    """
    progress = check_progress(progress)  # optuna's bar is not progress_bar: checked here
    import optuna
    from optuna.trial import TrialState

    _check_dataset(dataset)
    n_trials = check_positive_int(n_trials, "n_trials")
    seed = check_positive_int(seed, "seed", minimum=0)
    url = _storage_url(storage)
    base = {**_BASE, "max_epochs": int(max_epochs), "patience": int(patience),
            "batch_size": int(batch_size)}
    old_verbosity = optuna.logging.get_verbosity()
    if not progress:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        probe = optuna.create_study(study_name=study_name, storage=url, direction="minimize",
                                    load_if_exists=True)
        for t in probe.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            probe._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
        done = len(probe.get_trials(deepcopy=False,
                                    states=(TrialState.COMPLETE, TrialState.PRUNED)))
        n_existing = len(probe.get_trials(deepcopy=False))
        sampler = optuna.samplers.TPESampler(seed=int(seed) + n_existing, n_startup_trials=5)
        pruner = optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=3)
        study = optuna.load_study(study_name=study_name, storage=url, sampler=sampler,
                                  pruner=pruner) if url else probe
        if url is None:
            study.sampler, study.pruner = sampler, pruner

        def objective(trial: optuna.Trial) -> float:
            n_layers = trial.suggest_int("n_layers", 1, int(max_layers))
            hidden = [trial.suggest_int(f"units_{i}", 8, int(max_units), log=True)
                      for i in range(n_layers)]
            params = {**base, "hidden": hidden,
                      "dropout": trial.suggest_float("dropout", 0.0, 0.5),
                      "lr": trial.suggest_float("lr", 1e-5, 1e-1, log=True)}
            _, m = train_mlp(dataset, params, seed=int(seed) + trial.number, trial=trial,
                             progress=False, num_threads=num_threads)
            return float(m["val"]["huber"])

        remaining = n_trials - done
        if remaining > 0:
            study.optimize(objective, n_trials=remaining, timeout=timeout,
                           callbacks=list(callbacks or []), show_progress_bar=bool(progress),
                           catch=())
    finally:
        optuna.logging.set_verbosity(old_verbosity)
    completed = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not completed:
        raise RuntimeError(f"study {study_name!r} has no completed trial yet; run more trials.")
    bt = study.best_trial
    hidden = [int(bt.params[f"units_{i}"]) for i in range(int(bt.params["n_layers"]))]
    finished = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,
                                                               TrialState.PRUNED)))
    return {**base, "hidden": hidden, "dropout": float(bt.params["dropout"]),
            "lr": float(bt.params["lr"]), "best_value": float(bt.value),
            "n_trials": finished, "study_name": study_name}


# ---------------------------------------------------------------- save / load

_FORMAT = "insdel-mlp"
_FORMAT_VERSION = 1


def save_model(model: MLP, path: str | os.PathLike, dataset=None, params=None,
               metrics: Mapping | None = None) -> Path:
    """Save a trained MLP with its metadata (atomic write: temporary file + ``os.replace``).

    Parameters
    ----------
    model : MLP
    path : path-like
        Output file (``.pt``).
    dataset : Dataset, optional
        Its feature names, binary features and fitted scaling are stored, so that a later run
        can check it feeds the model the same inputs (:func:`load_model`).
    params : str or dict, optional
        The preset name or hyperparameters used.
    metrics : dict, optional
        The metrics returned by :func:`train_mlp`.

    Returns
    -------
    pathlib.Path
    """
    from ._checkpoint import atomic_write

    if not isinstance(model, MLP):
        raise TypeError(f"save_model saves an insdel.models.MLP; got {type(model).__name__}.")
    meta: dict[str, Any] = {"format": _FORMAT, "version": _FORMAT_VERSION,
                            "config": model.config(), "params": params,
                            "metrics": metrics, "torch": torch.__version__}
    if dataset is not None:
        meta["dataset"] = dataset.metadata() if hasattr(dataset, "metadata") else None
    meta_json = json.dumps(to_jsonable(meta))
    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    path = Path(path)
    with atomic_write(path, suffix=".pt") as tmp:
        torch.save({"format": _FORMAT, "version": _FORMAT_VERSION, "metadata": meta_json,
                    "state_dict": state}, tmp)
    return path


def load_model(path: str | os.PathLike, dataset=None) -> tuple[MLP, dict[str, Any]]:
    """Load a model written by :func:`save_model`.

    Parameters
    ----------
    path : path-like
    dataset : Dataset, optional
        If given, its feature names and scaling must match the stored ones (raises otherwise), so
        the loaded f sees exactly the inputs it was trained on. A file saved without them
        (``save_model(..., dataset=None)``) loads with a ``UserWarning``: nothing was checked.

    Returns
    -------
    model : MLP
        In eval mode, on the CPU.
    metadata : dict
        ``config``, ``params``, ``metrics``, ``dataset`` (names, binary features, ``scaler``
        mean/scale, ``target_scale``), ``torch`` version.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"model file {str(path)!r} does not exist.")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ValueError(f"{path} is not a model saved by insdel.models.save_model ({exc}).") \
            from None
    if not isinstance(blob, dict) or blob.get("format") != _FORMAT:
        raise ValueError(f"{path} is not a model saved by insdel.models.save_model.")
    meta = json.loads(blob["metadata"])
    cfg = meta["config"]
    model = MLP(cfg["n_features"], cfg["hidden"], cfg["dropout"])
    model.load_state_dict(blob["state_dict"])
    model.eval()
    stored = meta.get("dataset")
    if dataset is not None and not stored:  # only what the file records can be checked
        warnings.warn(f"{path} was saved without dataset metadata (save_model(..., "
                      "dataset=None)), so its features and scaling could not be checked against "
                      "the dataset; make sure the data has the features, order and scaling the "
                      "model was trained on.", UserWarning, stacklevel=2)
    elif dataset is not None:
        if list(stored.get("feature_names", ())) != list(dataset.feature_names):
            raise ValueError(f"{path} was trained on features {stored.get('feature_names')}; the "
                             f"dataset has {list(dataset.feature_names)}.")
        sc = stored.get("scaler")
        if not isinstance(sc, Mapping) or "mean" not in sc or "scale" not in sc:
            raise ValueError(f"{path}: its dataset metadata has no feature scaling (scaler mean "
                             "and scale) to check against the dataset's; the file was not "
                             "written by save_model, or was edited.")
        if not (np.allclose(sc["mean"], dataset.scaler.mean_, rtol=1e-12, atol=0)
                and np.allclose(sc["scale"], dataset.scaler.scale_, rtol=1e-12, atol=0)):
            raise ValueError(f"{path} was trained with a different feature scaling than this "
                             f"dataset's (another split, seed or data file?).")
    return model, meta


# ---------------------------------------------------------------- plot


#: ``[model] kind = "gradient_boosting"``: scikit-learn's HistGradientBoostingRegressor (no
#: extra to install; a tree ensemble :mod:`insdel.trees` reads exactly), squared error, no early
#: stopping (the number of trees is ``max_iter``, whatever the data)
GRADIENT_BOOSTING_DEFAULTS: dict[str, Any] = {
    "max_iter": 300, "max_depth": 6, "learning_rate": 0.05, "max_leaf_nodes": 31,
    "min_samples_leaf": 20, "l2_regularization": 0.0}


def gradient_boosting_params(params: Mapping | None) -> dict[str, Any]:
    """The ensemble's parameters: :data:`GRADIENT_BOOSTING_DEFAULTS` updated by ``params``,
    each checked (an unknown name or a value out of range: an error naming it)."""
    params = dict(params or {})
    check_options("model.params (gradient_boosting)", params, GRADIENT_BOOSTING_DEFAULTS)
    p = {**GRADIENT_BOOSTING_DEFAULTS, **params}
    for k in ("max_iter", "max_depth", "max_leaf_nodes", "min_samples_leaf"):
        p[k] = check_positive_int(p[k], k, minimum=2 if k == "max_leaf_nodes" else 1)
    p["learning_rate"] = check_scalar(p["learning_rate"], "learning_rate", float, min_val=0.0,
                                      include_boundaries="right")
    p["l2_regularization"] = check_scalar(p["l2_regularization"], "l2_regularization", float,
                                          min_val=0.0)
    return p


def train_gradient_boosting(dataset, params: Mapping | None = None, *, seed: int = 0
                            ) -> tuple[Any, dict[str, Any]]:
    """Fit scikit-learn's ``HistGradientBoostingRegressor`` on ``dataset``'s training rows.

    Deterministic given ``seed`` (no early stopping, no subsampling). Returns the fitted model
    and its metrics on the test rows (``huber``, ``rmse``, ``r2``), ``seconds`` and ``params``.
    """
    from sklearn.ensemble import HistGradientBoostingRegressor

    _check_dataset(dataset)
    p = gradient_boosting_params(params)
    t0 = time.perf_counter()
    model = HistGradientBoostingRegressor(loss="squared_error", early_stopping=False,
                                          random_state=int(seed), **p)
    model.fit(np.asarray(dataset.X_train, dtype=np.float64),
              np.asarray(dataset.y_train, dtype=np.float64))
    secs = time.perf_counter() - t0
    y_hat = model.predict(np.asarray(dataset.X_test, dtype=np.float64))
    return model, {**regression_metrics(np.asarray(dataset.y_test), y_hat), "seconds": secs,
                   "params": p}
