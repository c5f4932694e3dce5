"""``insdel forecast`` / ``insdel reproduce forecast-sim``: insertion/deletion for a forecaster
with H outputs over lag x channel blocks (docs/multi_output.md).

The series come from :mod:`insdel.forecast_sim`'s simulator (``forecast.data = ""``) or from a
file: a ``.npy`` array of series (S, T, C) or (T, C), or a CSV with one row per time step and one
numeric column per channel (the target first), an optional ``series`` column naming the series
its rows belong to (rows in time order within each). Windows of ``length`` steps forecast the
next ``horizon`` values of the target; the first 80 % of each series' windows train a small torch
MLP (:func:`insdel.forecast_sim.train_forecaster`), the first ``n_pairs`` held-out windows are
the targets and their references come from the time-series policy ``reference``. With
``forecast.model`` (a model file :func:`insdel.model_files.load_any` reads, ``forecast.trust``
for pickle-based ones) the user's model is tested instead of the trained MLP; it must return
(B, horizon) on windows flattened as :mod:`insdel.timeseries` lays them out.

Methods, per output: integrated gradients and gradient x input (captum's target through
:func:`insdel.multi_output.output_views`), exact Shapley values of the lag x channel blocks
(:func:`insdel.multi_output.per_output`) and a random ordering. Written: ``abc_by_horizon.csv``
(per output and the weighted aggregate, ``forecast.discount ** h``), ``lead.json`` (the leading
covariate check, for the simulator), ``summary.md``, four figures and ``manifest.json``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import _checkpoint as ck
from .. import config as _config
from .. import forecast_sim as fs
from .._validation import check_progress
from .context import logger
from .provenance import manifest_head, model_hash, write_manifest
from .session import loaded, opened
from .stages.curves import pack, unpack_arrays

FILES = ("abc_by_horizon.csv", "lead.json", "summary.md", "manifest.json")


@dataclass
class ForecastRun:
    """The result of :func:`run_forecast`: the output folder, the ABC table, the lead check."""

    out: Path
    table: pd.DataFrame
    lead: dict

    def to_markdown(self) -> str:
        t = self.table[self.table["mode"] == "insertion"]
        wide = t.pivot(index="method", columns="output", values="mean")
        head = ["method"] + [str(o) for o in wide.columns]
        lines = ["insertion ABC per output (horizon) and the weighted aggregate:", "",
                 "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join([str(m)] + [f"{v:.3f}" for v in row]) + " |"
                  for m, row in zip(wide.index, wide.to_numpy(), strict=True)]
        if self.lead:
            lines += ["", f"leading covariate found: {self.lead['found']} (channel "
                      f"{self.lead['top_covariate_channel']} at lag "
                      f"{self.lead['top_covariate_lag']}; expected channel 1 at lag "
                      f"{self.lead['expected_lag']})"]
        return "\n".join(lines)


def read_series(path: str) -> np.ndarray:
    """Series (S, T, C) from a ``.npy`` file ((S, T, C) or (T, C)) or a CSV (one row per step,
    one numeric column per channel, target first; an optional ``series`` column)."""
    p = Path(path)
    if p.suffix == ".npy":
        S = np.load(p, allow_pickle=False)
        S = S[None] if S.ndim == 2 else S
        if S.ndim != 3:
            raise ValueError(f"forecast.data = {path!r}: a .npy of series must be (S, T, C) or "
                             f"(T, C); got shape {S.shape}.")
        return np.asarray(S, dtype=np.float64)
    if p.suffix != ".csv":
        raise ValueError(f"forecast.data = {path!r}: give a .npy array of series or a .csv "
                         "(docs/multi_output.md).")
    df = pd.read_csv(p)
    groups = [g for _, g in df.groupby("series", sort=False)] if "series" in df else [df]
    parts = [g.drop(columns=["series"], errors="ignore").to_numpy(np.float64) for g in groups]
    if len({a.shape[0] for a in parts}) != 1:
        raise ValueError(f"forecast.data = {path!r}: every series needs the same number of "
                         "steps.")
    return np.stack(parts)


def run_forecast(config: str | os.PathLike | Mapping, out: str | os.PathLike | None = None, *,
                 quick: bool = False, progress: bool | None = None, verbose: bool = False,
                 wait: bool = False, _interrupt: Callable[[], None] | None = None
                 ) -> ForecastRun:
    """Run a forecasting configuration (its ``[forecast]`` table); see the module docstring.
    Started again with the same configuration and output folder, the run resumes: the finished
    stages (the trained forecaster, or its training after the last finished epoch, each
    method's attributions, the curves, the decompositions) are loaded from ``checkpoints/``,
    keyed by everything that determines them."""
    check_progress(progress)
    cfg = loaded(config, quick)
    _config.check_sections(cfg, "forecast")
    with opened(cfg, out, wait, None, verbose, kind="forecast") as (folder, _, _cl):
        return _run(cfg, folder, logger(verbose), _interrupt)


def _stage(folder: Path, name: str, key: Mapping, compute: Callable[[], np.ndarray], log,
           interrupt: Callable[[], None] | None) -> np.ndarray:
    """One checkpointed stage of a forecast run: ``compute()``'s array, saved as one chunk in
    ``checkpoints/<name>`` under the hash of ``key`` (and the stage's name), or loaded from a run
    with the same key; ``interrupt`` runs after a computed chunk is saved."""
    store = ck.ChunkStore(folder / "checkpoints" / name, ck.config_hash({**key, "stage": name}))

    def after(i: int, computed: bool) -> None:
        if not computed:
            log(f"  {name}: resumed from the checkpoint")
        elif interrupt is not None:
            interrupt()

    return store.run(1, lambda i: compute(), on_chunk=after)[0]


#: The training settings of the forecaster besides the ``[forecast]`` keys (``hidden``,
#: ``epochs``) and the seed. ``num_threads``: torch's thread count while training, fixed (the
#: trained floats can depend on it) so that every machine trains the same weights.
_TRAINING = {"batch_size": 256, "lr": 3e-3, "num_threads": 1}


def _forecaster(folder: Path, Xtr: np.ndarray, Ytr: np.ndarray, c: Mapping, seed: int, log,
                interrupt: Callable[[], None] | None):
    """The trained :func:`insdel.forecast_sim.Forecaster`, checkpointed after every epoch.

    ``checkpoints/forecaster`` keeps the training state (weights and Adam's moments,
    :func:`insdel.forecast_sim.train_forecaster`'s ``on_epoch``) after the latest finished epoch,
    as chunk ``epoch - 1`` of a :class:`insdel._checkpoint.ChunkStore` keyed by everything that
    determines it: the training windows' and targets' SHA-256, the architecture, the seed, the
    epochs, the optimiser's settings, torch's thread count while training (``num_threads``,
    fixed at 1) and torch's version. A run started again with that key
    loads the trained weights (all epochs finished) or resumes training after the last finished
    epoch, giving the bytes of an uninterrupted training; under another key it trains afresh
    (the store removes the other key's chunks). ``interrupt`` runs after each saved epoch.
    """
    import torch

    settings = {"hidden": c["hidden"], "epochs": c["epochs"], "seed": seed, **_TRAINING}
    key = {"stage": "forecaster", "data": ck.sha256_arrays(Xtr, Ytr),
           "architecture": {"model": "insdel.forecast_sim.Forecaster", "inputs": Xtr.shape[1],
                            "outputs": Ytr.shape[1], "hidden": c["hidden"]},
           "optimizer": "torch.optim.Adam (torch's defaults but lr), mean squared error, "
                        "float32", "settings": settings, "torch": torch.__version__}
    store = ck.ChunkStore(folder / "checkpoints" / "forecaster", ck.config_hash(key))
    E = c["epochs"]
    done = next((k for k in range(E, 0, -1) if store.done(k - 1)), 0)
    start = (done, store.load(done - 1)) if done else None

    def saved(k: int, state: np.ndarray) -> None:
        store.save(k - 1, state)
        for j in range(k - 1):  # the latest epoch's state is the one a resumed run needs
            if store.path(j).exists():
                store.discard(j)
        if interrupt is not None:
            interrupt()

    if done == E:
        log(f"forecaster: loaded from the checkpoint ({E} epochs trained on "
            f"{settings['num_threads']} torch thread(s))")
    elif done:
        log(f"forecaster: resumed from the checkpoint after epoch {done} of {E}")
    if done < E:
        log(f"forecaster: training on {settings['num_threads']} torch thread(s)")
    return fs.train_forecaster(Xtr, Ytr, **settings, start=start, on_epoch=saved)


def _run(cfg: Mapping, folder: Path, log, interrupt=None) -> ForecastRun:
    import torch

    import insdel
    from insdel import policies
    from insdel.decomposition import batch_decomposition, shapley_values
    from insdel.multi_output import MultiEvaluation, check_output_weights, output_views, per_output
    from insdel.timeseries import block_groups

    t0 = time.perf_counter()
    c = cfg["forecast"]
    seed = cfg["seed"]
    simulated = not c["data"]
    series = (fs.simulate(c["n_series"], c["steps"], channels=c["channels"], lead=c["lead"],
                          period=c["period"], seed=seed) if simulated else read_series(c["data"]))
    L, H, C = c["length"], c["horizon"], series.shape[2]
    log(f"series: {series.shape[0]} x {series.shape[1]} steps x {C} channels "
        f"({'simulated' if simulated else c['data']}); windows of {L} steps, H = {H}")
    parts = [fs.windowed(s[None], L, H, stride=c["stride"]) for s in series]
    cut = [int(0.8 * len(p[0])) for p in parts]
    Xtr = np.concatenate([p[0][:k] for p, k in zip(parts, cut, strict=True)])
    Ytr = np.concatenate([p[1][:k] for p, k in zip(parts, cut, strict=True)])
    Xte = np.concatenate([p[0][k:] for p, k in zip(parts, cut, strict=True)])
    Yte = np.concatenate([p[1][k:] for p, k in zip(parts, cut, strict=True)])
    if c["model"]:  # the user's model file (insdel.model_files.load_any), not trained here
        from ..model_files import load_any

        net, info = load_any(c["model"], trust=c["trust"], n_features=L * C)
        log(f"model: {c['model']} ({info.get('format', '?')}), H = {H} outputs")
    else:
        net = _forecaster(folder, Xtr, Ytr, c, seed, log, interrupt)
    model = insdel.as_model(net, outputs=H)  # a model returning another width: error naming H
    rmse = np.sqrt(((model(Xte) - Yte) ** 2).mean(axis=0))
    model.n_evals = 0  # the count the manifest reports: the evaluation's alone
    log("test RMSE per horizon: " + ", ".join(f"{v:.3f}" for v in rmse))
    X = np.ascontiguousarray(Xte[:c["n_pairs"]])
    pol = policies.build(c["reference"], length=L, channels=C)
    R = pol.pair(None, X).R
    groups = block_groups(L, C, lag_block=c["lag_block"])
    # what determines every stage's result (n_random: the curves'; the discount weighs the
    # aggregate alone)
    key = {"forecast": {k: v for k, v in c.items() if k not in ("discount", "n_random")},
           "seed": seed,
           "series": ck.sha256_arrays(series), "model": model_hash(net, None)
           if isinstance(net, torch.nn.Module) else None,
           "model_file": ck.sha256_file(c["model"]) if c["model"] else None,
           "pairs": ck.sha256_arrays(X, R), "groups": groups.to_json(), "outputs": H}
    views = output_views(model)
    grads = ("integrated_gradients", "input_x_gradient") if model.has_gradients else ()
    if not grads:
        log("the model has no input gradients: integrated gradients and gradient x input are "
            "not run")
    attr = {m: _stage(folder, f"attributions/{m}", key, lambda m=m: np.stack(
        [insdel.attribute(v, X, R, method=m) for v in views], axis=1), log, interrupt)
        for m in grads}
    attr["exact_shapley"] = _stage(folder, "attributions/exact_shapley", key, lambda: np.moveaxis(
        per_output(shapley_values, model, X, R, groups=groups), -1, 1), log, interrupt)
    w = c["discount"] ** np.arange(H)
    methods = [*attr, "random"]

    def curves() -> np.ndarray:
        mev = insdel.evaluate(model, X, R, attr, groups=groups, n_random=c["n_random"],
                              seed=seed, output_weights=w)
        return np.concatenate([pack(e) for e in mev.evaluations], axis=1)

    packed = _stage(folder, "curves", {**key, "n_random": c["n_random"], "attributions": {
        m: ck.sha256_arrays(a) for m, a in attr.items()}}, curves, log, interrupt)
    width = packed.shape[1] // H
    ev = MultiEvaluation([unpack_arrays(
        packed[:, h * width:(h + 1) * width], methods=methods, modes=("insertion", "deletion"),
        n_random=c["n_random"], normalize=True, order="signed", groups=groups,
        n_features=L * C, where="of the forecast run") for h in range(H)],
        check_output_weights(w, H))
    table = ev.summary(differences=None)
    table.to_csv(folder / "abc_by_horizon.csv", index=False)
    mains = _stage(folder, "decomposition", key, lambda: np.stack(
        [np.abs(d.full_delta()[:, 1 << np.arange(groups.m)]).mean(axis=0)
         for d in per_output(batch_decomposition, model, X, R, groups=groups)]), log,
        interrupt)  # (H, m): mean |main effect| of each block
    heat = np.abs(attr[grads[0] if grads else "exact_shapley"][:, 0]).mean(axis=0)
    heat = heat.reshape(L, C)[::-1] if grads else np.repeat(
        heat.reshape(L // c["lag_block"], C), c["lag_block"], axis=0)[::-1]
    lead = fs.lead_found(heat, c["lead"]) if simulated else {}
    (folder / "lead.json").write_text(json.dumps(lead, indent=2) + "\n")
    _figures(folder, ev, heat, mains, groups, L, C, c["lag_block"])
    res = ForecastRun(out=folder, table=table, lead=lead)
    (folder / "summary.md").write_text(f"# {cfg['name']}\n\n{res.to_markdown()}\n")
    write_manifest(folder, {**manifest_head(cfg), "kind": "forecast",
                            "rmse_per_horizon": rmse.tolist(), "lead": lead,
                            "forecaster_training": None if c["model"] else {
                                "hidden": c["hidden"], "epochs": c["epochs"], **_TRAINING},
                            "model_evaluations": int(model.n_evals),
                            "seconds": time.perf_counter() - t0, "files": list(FILES)})
    return res


def _figures(folder: Path, ev, heat, mains, groups, L: int, C: int, lag_block: int) -> None:
    """ABC by horizon, curves per horizon, the lag x channel heat maps (attributions of output
    0, per lag; decomposition main effects of output 0, per block)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs = folder / "figures"
    figs.mkdir(exist_ok=True)
    H = ev.n_outputs
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for m in ev.methods:
        ax.plot(range(H), ev.abc_array(m, "insertion").mean(axis=0), marker="o", label=m)
    ax.set(xlabel="horizon (output)", ylabel="mean insertion ABC", title="ABC by horizon")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(figs / "abc_by_horizon.png", dpi=110)
    plt.close(fig)
    cols = min(H, 4)
    fig, axes = plt.subplots(1, cols, figsize=(3 * cols, 3), squeeze=False)
    shown = np.unique(np.linspace(0, H - 1, cols).round().astype(int))
    for ax, h in zip(axes[0], shown, strict=False):
        e = ev[h]
        for k, m in enumerate(e.methods):
            ax.plot(e.curves["insertion"][:, k].mean(axis=0), label=m)
        ax.set(title=f"output {h}", xlabel="blocks inserted")
    axes[0][0].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(figs / "curves_per_horizon.png", dpi=110)
    plt.close(fig)
    for name, grid, ylabel in (
            ("heatmap_attributions", heat, "lag"),
            ("heatmap_main_effects", mains[0].reshape(L // lag_block, C)[::-1],
             f"lag block ({lag_block} steps)")):
        fig, ax = plt.subplots(figsize=(4, 4))
        im = ax.imshow(grid, aspect="auto", cmap="viridis")
        ax.set(xlabel="channel", ylabel=ylabel, title=name.replace("_", " ") + " (output 0)")
        fig.colorbar(im, ax=ax)
        fig.tight_layout()
        fig.savefig(figs / f"{name}.png", dpi=110)
        plt.close(fig)
