"""Experiments end to end: data, model, policy, attributions, curves, tables and figures (paper §5).

An experiment is a TOML file (see ``docs/experiments.md``; the shipped ones are in
``insdel/configs/``: ``paper_cern``, ``paper_bangalore``, ``demo``)::

    name = "my_run"
    seed = 0
    [data]        recipe = "dielectron_sim", options = {n_events = 20000}
    [model]       preset = "quick_cern"          # or path = "model.pt", or params = {...}
    [targets]     n = 200                        # held-out points: the pool and the targets
    [[policies]]  spec = "cern_counterfactual"   # any insdel.policies.load spec (+ label, params)
    [methods]     names = [...], [methods.options.<name>] ...
    [evaluation]  modes, n_random = 20, normalize = true, chunk_size = 50
    [decomposition] n_pairs = 0                  # exact decomposition of the first pairs
    [quick]       ...                            # overrides applied with --quick

:func:`run_experiment` runs it and writes, per policy, the per-pair ABCs (``abc.parquet``), the
curves (``curves.npz``), the attributions, the summary in the layout of the paper's Tables 1-3
(``summary.csv`` / ``summary.md``), plus the Table 4 diagnostics, the figures and a
``manifest.json`` (configuration, versions, seed, seconds and model evaluations per stage, model
metrics, file hashes).

Long stages (attributions, exact decomposition) are checkpointed in chunks of targets under
``OUT/checkpoints``; a run that is killed and started again with the same command resumes and
produces byte-identical data files (timings only go into the manifest). Every file is written
atomically (temporary file + ``os.replace``).

Command line: ``insdel run CONFIG``, ``insdel reproduce paper-cern|paper-bangalore``,
``insdel demo``.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.resources
import inspect
import json
import os
import platform
import sys
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import _checkpoint as ck
from ._progress import progress_bar
from ._validation import to_jsonable
from .areas import abc as _abc
from .evaluation import Evaluation, evaluate, to_markdown

try:  # Python >= 3.11
    import tomllib as _toml
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as _toml

__all__ = [
    "ALL_METHODS", "PAPER_CONFIGS", "load_config", "list_configs", "run_experiment",
    "load_results", "RunResult", "register_cli",
]

#: The seven methods of the paper's tables (Kernel SHAP, its exact form, and the captum methods);
#: ``random`` is added by :func:`insdel.evaluate`.
ALL_METHODS = ("kernel_shap", "integrated_gradients", "deeplift", "vanilla_grad",
               "input_x_gradient", "lime")

#: ``insdel reproduce`` names -> shipped configuration names.
PAPER_CONFIGS = {"paper-cern": "paper_cern", "paper-bangalore": "paper_bangalore"}

_DEFAULTS: dict[str, Any] = {
    "name": "experiment",
    "description": "",
    "seed": 0,
    "out": None,
    "data": {"recipe": "dielectron_sim", "options": {}, "real_recipe": None, "real_options": {}},
    "model": {"preset": None, "path": None, "params": None, "max_epochs": None},
    "targets": {"n": 200},
    "policies": [{"spec": "cern_counterfactual"}],
    "methods": {"names": list(ALL_METHODS), "options": {}},
    "evaluation": {"modes": ["insertion", "deletion"], "n_random": 20, "normalize": True,
                   "chunk_size": 50},
    "decomposition": {"n_pairs": 0, "chunk_size": 8},
    "figures": {"enabled": True, "compare": ["kernel_shap", "integrated_gradients"],
                "n_random": 20, "dpi": 110},
}

_TOP_KEYS = set(_DEFAULTS) | {"quick"}


# --------------------------------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------------------------------
def _merge(base: dict, over: Mapping) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(dict(v) if isinstance(v, Mapping) else v)
    return out


def list_configs() -> list[str]:
    """Names of the configurations shipped in ``insdel/configs``."""
    folder = importlib.resources.files("insdel") / "configs"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def _read_config_text(config: str | os.PathLike) -> tuple[str, str]:
    path = Path(config)
    if path.is_file():
        return path.read_text(encoding="utf-8"), str(path)
    name = str(config)
    name = PAPER_CONFIGS.get(name, name)
    name = name[:-5] if name.endswith(".toml") else name
    res = importlib.resources.files("insdel") / "configs" / f"{name}.toml"
    if res.is_file():
        return res.read_text(encoding="utf-8"), f"insdel/configs/{name}.toml"
    raise FileNotFoundError(
        f"experiment configuration {str(config)!r} not found: not a file, and not one of the "
        f"shipped configurations ({', '.join(list_configs())}).")


def load_config(config: str | os.PathLike | Mapping, *, quick: bool = False,
                overrides: Mapping | None = None) -> dict:
    """Read and complete an experiment configuration.

    Parameters
    ----------
    config : path, shipped name ("demo", "paper_cern", "paper-cern", ...) or dict
    quick : bool
        Apply the configuration's ``[quick]`` overrides (small sizes).
    overrides : mapping, optional
        Further overrides, merged last (nested tables merge key by key).

    Returns
    -------
    dict
        The full configuration with defaults filled in (``quick`` removed, ``source`` added).
    """
    if isinstance(config, Mapping):
        raw, source = copy.deepcopy(dict(config)), "<dict>"
    else:
        text, source = _read_config_text(config)
        try:
            raw = _toml.loads(text)
        except _toml.TOMLDecodeError as exc:
            raise ValueError(f"{source}: invalid TOML ({exc}).") from None
    unknown = set(raw) - _TOP_KEYS - {"source"}
    if unknown:
        raise ValueError(f"{source}: unknown top-level key(s) {sorted(unknown)}; "
                         f"known: {sorted(_TOP_KEYS)}.")
    quick_over = raw.pop("quick", {})
    cfg = _merge(_DEFAULTS, raw)
    if quick:
        cfg = _merge(cfg, quick_over)
    if overrides:
        cfg = _merge(cfg, overrides)
    cfg["source"] = source
    cfg["quick"] = bool(quick)
    _check_config(cfg, source)
    return cfg


def _check_config(cfg: dict, source: str) -> None:
    def need_int(where: str, v, minimum: int) -> None:
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise ValueError(f"{source}: {where} must be an integer >= {minimum}; got {v!r}.")

    need_int("seed", cfg["seed"], 0)
    need_int("targets.n", cfg["targets"]["n"], 2)
    need_int("evaluation.n_random", cfg["evaluation"]["n_random"], 0)
    need_int("evaluation.chunk_size", cfg["evaluation"]["chunk_size"], 1)
    need_int("decomposition.n_pairs", cfg["decomposition"]["n_pairs"], 0)
    need_int("decomposition.chunk_size", cfg["decomposition"]["chunk_size"], 1)
    for m in cfg["evaluation"]["modes"]:
        if m not in ("insertion", "deletion"):
            raise ValueError(f"{source}: evaluation.modes: unknown mode {m!r}.")
    names = cfg["methods"]["names"]
    if not isinstance(names, list) or not names:
        raise ValueError(f"{source}: methods.names must be a non-empty list of method names.")
    if len(set(names)) != len(names):
        raise ValueError(f"{source}: methods.names lists a method twice: {names}.")
    for m in cfg["methods"]["options"]:
        if m not in names:
            raise ValueError(f"{source}: methods.options.{m} is given but {m!r} is not in "
                             f"methods.names {names}.")
    pols = cfg["policies"]
    if not isinstance(pols, list) or not pols:
        raise ValueError(f"{source}: give at least one [[policies]] entry.")
    labels = []
    for i, p in enumerate(pols):
        if not isinstance(p, Mapping) or "spec" not in p:
            raise ValueError(f"{source}: policies[{i}] must be a table with a 'spec' key.")
        labels.append(_policy_label(p))
    if len(set(labels)) != len(labels):
        raise ValueError(f"{source}: two policies share the label; give each a distinct 'label' "
                         f"({labels}).")
    m = cfg["model"]
    if sum(x is not None for x in (m["preset"], m["path"], m["params"])) != 1:
        raise ValueError(f"{source}: [model] needs exactly one of 'preset', 'path', 'params'.")


def _policy_label(p: Mapping) -> str:
    if p.get("label"):
        return str(p["label"])
    spec = p["spec"]
    if isinstance(spec, Mapping):
        return str(spec.get("name") or spec.get("policy"))
    return Path(str(spec)).stem


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

    def to_markdown(self, digits: int = 3) -> str:
        """Every policy's table (paper layout) followed by the Table 4 diagnostics."""
        return _tables_markdown(self.summary, self.diagnostics, digits)


def _tables_markdown(summary: pd.DataFrame, diagnostics: pd.DataFrame, digits: int = 3) -> str:
    parts = []
    for label in dict.fromkeys(summary["policy"]):
        sub = summary[summary["policy"] == label].drop(columns="policy")
        n = int(sub["n"].iloc[0]) if len(sub) else 0
        parts.append(f"### Policy: {label} ({n} pairs)\n\n{to_markdown(sub, digits=digits)}\n")
    parts.append("### Policy diagnostics (paper Table 4)\n\n" + _diag_markdown(diagnostics, digits))
    return "\n".join(parts)


def _diag_markdown(diag: pd.DataFrame, digits: int = 3) -> str:
    d = diag.reset_index()
    cols = list(d.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in d.itertuples(index=False):
        cells = [f"{v:.{digits}f}" if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# the stages
# --------------------------------------------------------------------------------------------------
class _Stages:
    """Seconds and model evaluations per stage, for the manifest."""

    def __init__(self):
        self.stages: dict[str, dict] = {}

    def add(self, name: str, seconds: float, **extra) -> None:
        d = self.stages.setdefault(name, {"seconds": 0.0})
        d["seconds"] += float(seconds)
        for k, v in extra.items():
            d[k] = d.get(k, 0) + v if isinstance(v, (int, float)) and not isinstance(v, bool) else v


def _file_fingerprint(options: Mapping) -> dict:
    out = {}
    for k, v in options.items():
        if k in ("path", "csv", "file") and v is not None and Path(str(v)).is_file():
            out[f"{k}_sha256"] = ck.sha256_file(v)
    return out


def _load_dataset(cfg: dict):
    from . import datasets

    d = cfg["data"]
    return datasets.load(d["recipe"], seed=cfg["seed"], **dict(d["options"]))


def _model_key(cfg: dict) -> str:
    d = cfg["data"]
    return ck.config_hash({"data": {"recipe": d["recipe"], "options": d["options"],
                                    "files": _file_fingerprint(d["options"])},
                           "model": cfg["model"], "seed": cfg["seed"]})


def _get_model(cfg: dict, dataset, out: Path, log, progress) -> tuple[Any, dict, dict]:
    """Train (or load) the model; a trained model is cached in ``out`` so a resumed run uses the
    same f. Returns (model, metrics, info)."""
    from . import models

    m = cfg["model"]
    if m["path"] is not None:
        model, meta = models.load_model(m["path"])
        return model, dict((meta or {}).get("metrics", {}) or {}), {"source": str(m["path"])}
    key = _model_key(cfg)
    path, keyfile = out / "model.pt", out / "model.key"
    if path.exists() and keyfile.exists() and keyfile.read_text().strip() == key:
        model, meta = models.load_model(path)
        log(f"model: loaded the cached model {path}")
        return model, dict((meta or {}).get("metrics", {}) or {}), {"source": "cache", "key": key}
    spec = m["preset"] if m["preset"] is not None else dict(m["params"])
    log(f"model: training {spec if isinstance(spec, str) else 'custom MLP'} on "
        f"{len(dataset.X_train)} points ...")
    kw = {"seed": cfg["seed"], "max_epochs": m["max_epochs"]}
    if "progress" in inspect.signature(models.train_mlp).parameters:
        kw["progress"] = progress
    model, metrics = models.train_mlp(dataset, spec, **kw)
    with ck.atomic_write(path, suffix=".pt") as tmp:
        models.save_model(model, tmp, dataset=dataset, params=spec, metrics=metrics)
    ck.atomic_write_text(keyfile, key + "\n")
    return model, dict(metrics or {}), {"source": "trained", "key": key}


def _select_pool(dataset, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(dataset.X_test, dtype=np.float64)
    if n >= X.shape[0]:
        idx = np.arange(X.shape[0])
    else:
        rng = np.random.default_rng([seed, 7])
        idx = np.sort(rng.choice(X.shape[0], size=n, replace=False))
    return X[idx], idx


def _make_policy(entry: Mapping):
    from . import policies

    pol = policies.load(entry["spec"])
    extra = dict(entry.get("params", {}) or {})
    if extra:
        spec = pol.to_spec()
        params = {**dict(spec.get("params", {}) or {}), **extra}
        spec = {k: v for k, v in spec.items() if k != "params"}
        spec["params"] = params
        pol = policies.load(spec)
    return pol


def _array_hash(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _chunk_seed(seed: int, *names: str | int) -> int:
    words = [int(seed)] + [zlib.crc32(str(x).encode()) for x in names]
    return int(np.random.SeedSequence(words).generate_state(1)[0] & 0x7FFFFFFF)


def _method_options(method: str, options: Mapping, seed: int, dataset) -> dict:
    """Options of one method for one chunk: the per-chunk seed is passed to seeded methods and
    the value ``"dataset"`` of ``binary`` / ``binary_levels`` takes the data set's binary
    features."""
    from . import attribution

    if method not in attribution.METHODS:
        raise ValueError(f"methods.names: unknown attribution method {method!r}; choose from "
                         f"{sorted(attribution.METHODS)}.")
    cls = attribution.METHODS[method]
    kw = dict(options)
    if "seed" in cls.defaults:
        kw.setdefault("seed", seed)
    for key, attr in (("binary", "binary_mask"), ("binary_levels", "binary_levels")):
        if kw.get(key) == "dataset":
            kw[key] = getattr(dataset, attr, None)
    if "progress" in cls.defaults:
        kw.setdefault("progress", False)
    return kw


def _attribute_chunk(model, X, R, method: str, kw: dict) -> tuple[np.ndarray, dict]:
    from . import attribution

    obj = attribution.METHODS[method](model, **kw)
    A = np.asarray(obj.attribute(X, R), dtype=np.float64)
    if A.shape != X.shape:
        raise ValueError(f"attribution method {method!r} returned shape {A.shape}; "
                         f"expected {X.shape}.")
    return A, {"seconds": float(obj.seconds_), "model_evaluations": int(obj.n_evals_)}


def _one_method(cfg, model, dataset, X, R, label, method, out, base, bar, interrupt):
    B = X.shape[0]
    cs = cfg["evaluation"]["chunk_size"]
    n_chunks = -(-B // cs)
    opts = dict(cfg["methods"]["options"].get(method, {}) or {})
    key = ck.config_hash({**base, "method": method, "options": opts})
    store = ck.ChunkStore(out / "checkpoints" / label / method, key)
    computed = 0

    def compute(i: int) -> np.ndarray:
        nonlocal computed
        lo, hi = i * cs, min(B, (i + 1) * cs)
        kw = _method_options(method, opts, _chunk_seed(cfg["seed"], label, method, i), dataset)
        A, meta = _attribute_chunk(model, X[lo:hi], R[lo:hi], method, kw)
        ck.atomic_write_text(store.path(i).with_suffix(".json"), json.dumps(meta))
        computed += 1
        return A

    def on_chunk(i: int, was_computed: bool) -> None:
        bar.update(1)
        if was_computed and interrupt is not None:
            interrupt()

    chunks = store.run(n_chunks, compute, on_chunk)
    secs, evals = 0.0, 0
    for i in range(n_chunks):
        meta = json.loads(store.path(i).with_suffix(".json").read_text())
        secs += meta["seconds"]
        evals += meta["model_evaluations"]
    return np.concatenate(chunks, axis=0), secs, evals, n_chunks - computed


def _attributions(cfg, model, dataset, X, R, label, out, stages, log, progress,
                  interrupt: Callable[[], None] | None) -> dict[str, np.ndarray]:
    B = X.shape[0]
    cs = cfg["evaluation"]["chunk_size"]
    n_chunks = -(-B // cs)
    names = cfg["methods"]["names"]
    base = {"model": _model_key(cfg), "seed": cfg["seed"], "chunk_size": cs,
            "pairs": _array_hash(X, R)}
    result = {}
    with progress_bar(len(names) * n_chunks, f"attributions [{label}]", unit="chunk",
                      enable=progress, auto=True) as bar:
        for method in names:
            A, secs, evals, resumed = _one_method(cfg, model, dataset, X, R, label, method, out,
                                                  base, bar, interrupt)
            stages.add(f"{label}/attributions/{method}", secs, model_evaluations=evals,
                       chunks=n_chunks, chunks_resumed=resumed,
                       seconds_per_pair=secs / max(B, 1))
            result[method] = A
            log(f"  {method}: {secs:.1f} s ({secs / max(B, 1) * 1e3:.1f} ms per pair, "
                f"{evals:,} model evaluations{', resumed' if resumed else ''})")
    return result


def _decomposition(cfg, model, X, R, label, out, stages, log, progress, interrupt):
    from . import decomposition

    K = min(cfg["decomposition"]["n_pairs"], X.shape[0])
    if K == 0:
        return None
    cs = cfg["decomposition"]["chunk_size"]
    n_chunks = -(-K // cs)
    key = ck.config_hash({"model": _model_key(cfg), "targets": cfg["targets"], "K": K, "cs": cs,
                          "pairs": _array_hash(X[:K], R[:K])})
    store = ck.ChunkStore(out / "checkpoints" / label / "decomposition", key)
    cols = ["best_abc_insertion", "best_abc_deletion", "expected_abc_insertion",
            "expected_abc_deletion"]
    normalize = cfg["evaluation"]["normalize"]

    def compute(i):
        lo, hi = i * cs, min(K, (i + 1) * cs)
        t0 = time.perf_counter()
        dec = decomposition.batch_decomposition(model, X[lo:hi], R[lo:hi], progress=False)
        arr = np.column_stack([dec.best_abc(mode="insertion", normalize=normalize),
                               dec.best_abc(mode="deletion", normalize=normalize),
                               dec.expected_abc(mode="insertion", normalize=normalize),
                               dec.expected_abc(mode="deletion", normalize=normalize),
                               dec.shapley()])
        ck.atomic_write_text(store.path(i).with_suffix(".json"), json.dumps(
            {"seconds": time.perf_counter() - t0, "model_evaluations": int(dec.n_evals)}))
        return arr

    with progress_bar(n_chunks, f"exact decomposition [{label}]", unit="chunk",
                      enable=progress) as bar:
        def on_chunk(i, was_computed):
            bar.update(1)
            if was_computed and interrupt is not None:
                interrupt()

        arr = np.concatenate(store.run(n_chunks, compute, on_chunk), axis=0)
    secs, evals = 0.0, 0
    for i in range(n_chunks):
        meta = json.loads(store.path(i).with_suffix(".json").read_text())
        secs += meta["seconds"]
        evals += meta["model_evaluations"]
    stages.add(f"{label}/decomposition", secs, model_evaluations=evals, pairs=K)
    log(f"  exact decomposition of {K} pairs: {secs:.1f} s")
    n = X.shape[1]
    df = pd.DataFrame(arr[:, :4], columns=cols)
    df.insert(0, "pair", np.arange(K))
    shap = pd.DataFrame(arr[:, 4:4 + n], columns=[f"shapley_{j}" for j in range(n)])
    return pd.concat([df, shap], axis=1)


def _evaluation_frames(ev: Evaluation, pairing) -> pd.DataFrame:
    df = ev.abc.copy()
    df["target_index"] = np.asarray(pairing.target_index)[df["pair"].to_numpy()]
    df["reference_index"] = np.asarray(pairing.reference_index)[df["pair"].to_numpy()]
    df["fx"] = ev.fx[df["pair"].to_numpy()]
    df["fr"] = ev.fr[df["pair"].to_numpy()]
    return df


def _save_evaluation(folder: Path, ev: Evaluation, pairing, attributions: dict) -> None:
    arrays: dict[str, np.ndarray] = {
        "methods": np.array(ev.methods), "modes": np.array(list(ev.modes)),
        "normalize": np.array(ev.normalize), "fx": ev.fx, "fr": ev.fr,
        "X": pairing.X, "R": pairing.R,
        "target_index": np.asarray(pairing.target_index),
        "reference_index": np.asarray(pairing.reference_index),
    }
    if ev.orders is not None:
        arrays["orders"] = ev.orders
    for m in ev.modes:
        arrays[f"curves_{m}"] = ev.curves[m]
        arrays[f"random_curves_{m}"] = ev.random_curves[m]
    ck.save_npz(folder / "curves.npz", arrays)
    ck.save_npz(folder / "attributions.npz", attributions)
    with ck.atomic_write(folder / "abc.parquet", suffix=".parquet") as tmp:
        _evaluation_frames(ev, pairing).to_parquet(tmp, index=False)


def _evaluation_from_npz(path: Path) -> Evaluation:
    z = np.load(path, allow_pickle=False)
    methods = [str(m) for m in z["methods"]]
    modes = tuple(str(m) for m in z["modes"])
    normalize = bool(z["normalize"])
    curves = {m: z[f"curves_{m}"] for m in modes}
    random_curves = {m: z[f"random_curves_{m}"] for m in modes}
    B = z["fx"].shape[0]
    Km = len(methods)
    frames = []
    for m in modes:
        a = _abc(curves[m], mode=m, normalize=normalize)
        frames.append(pd.DataFrame({"pair": np.repeat(np.arange(B), Km),
                                    "method": np.tile(np.array(methods, dtype=object), B),
                                    "mode": m, "abc": a.reshape(-1)}))
    return Evaluation(methods=methods, modes=modes, curves=curves, random_curves=random_curves,
                      fx=z["fx"], fr=z["fr"], abc=pd.concat(frames, ignore_index=True),
                      random_abc={m: _abc(random_curves[m], mode=m, normalize=normalize)
                                  for m in modes},
                      normalize=normalize, orders=z["orders"] if "orders" in z.files else None)


def load_results(out: str | os.PathLike) -> dict[str, Evaluation]:
    """The evaluations of a finished run, policy label -> :class:`insdel.Evaluation`.

    Rebuilt from each policy's ``curves.npz`` (areas recomputed), so plots can be redrawn without
    running anything again.
    """
    out = Path(out)
    manifest = out / "manifest.json"
    if not manifest.exists():
        raise FileNotFoundError(f"{out} holds no finished run (no manifest.json).")
    labels = json.loads(manifest.read_text())["policies"]
    return {lab: _evaluation_from_npz(out / lab / "curves.npz") for lab in labels}


def _compare_methods(cfg: dict, methods: list[str]) -> list[str]:
    want = list(cfg["figures"]["compare"])
    out = []
    for m in want:
        if m in methods:
            out.append(m)
        elif m == "kernel_shap" and "exact_shapley" in methods:
            out.append("exact_shapley")
    for m in methods:  # fill up to two
        if len(out) >= 2:
            break
        if m not in out:
            out.append(m)
    return out[:2]


def _save_fig(fig, path: Path, dpi: int) -> Path:
    import matplotlib.pyplot as plt

    with ck.atomic_write(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=dpi, format="png", metadata={"Software": None})
    plt.close(fig)
    return path


def _policy_figures(cfg, ev: Evaluation, label: str, folder: Path) -> list[Path]:
    from . import plotting

    dpi = int(cfg["figures"]["dpi"])
    K = int(cfg["figures"]["n_random"])
    two = _compare_methods(cfg, ev.methods)
    a, b = two[0], two[-1]
    out = []
    rng = np.random.default_rng([cfg["seed"], 5])
    p = int(rng.integers(ev.n_pairs))
    out.append(_save_fig(plotting.plot_pair(ev, p, two, n_random=K, suptitle=(
        f"{label}: a random pair (f(x) = {ev.fx[p]:.4g}, f(r) = {ev.fr[p]:.4g})")),
        folder / f"{label}_curves_random_pair.png", dpi))
    modes = list(ev.modes)
    if a != b:
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(len(modes), len(modes), figsize=(5.2 * len(modes),
                                                                  4.0 * len(modes)),
                                 layout="constrained", squeeze=False)
        for i, mode in enumerate(modes):
            d = ev.abc_array(a, mode) - ev.abc_array(b, mode)
            q = int(np.argmax(d))
            plotting.plot_pair(ev, q, two, n_random=K, axes=axes[i], suptitle="")
            axes[i, 0].set_title(f"pair {q}: largest {mode} ABC gap "
                                 f"{plotting._label(a)} − {plotting._label(b)} = {d[q]:.3g}",
                                 fontsize="small")
        fig.suptitle(f"{label}: pairs where {plotting._label(a)} and {plotting._label(b)} differ "
                     "most (paper Figures 6, 8)")
        out.append(_save_fig(fig, folder / f"{label}_curves_largest_difference.png", dpi))
    fig = plotting.figure4(ev, a, b)
    fig.suptitle(f"{label}: ABC distributions (paper Figures 4, 7)")
    out.append(_save_fig(fig, folder / f"{label}_abc_panels.png", dpi))
    if {"insertion", "deletion"} <= set(modes):
        out.append(_save_fig(plotting.insertion_deletion_figure(
            ev, two, suptitle=f"{label}: deletion vs insertion ABC (paper Figures 9, 10, 12)"),
            folder / f"{label}_insertion_vs_deletion.png", dpi))
        asym = ev.abc_array(a, "insertion") - ev.abc_array(a, "deletion")
        q = int(np.argmax(np.abs(asym)))
        out.append(_save_fig(plotting.plot_pair(ev, q, two, n_random=K, suptitle=(
            f"{label}: most asymmetric pair {q} (insertion − deletion ABC of "
            f"{plotting._label(a)} = {asym[q]:.3g}; paper Figure 11)")),
            folder / f"{label}_most_asymmetric_pair.png", dpi))
    ax = plotting.abc_bars(ev)
    ax.set_title(f"{label}: mean ABC ± s.e.")
    out.append(_save_fig(ax.figure, folder / f"{label}_mean_abc.png", dpi))
    return out


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


def run_experiment(config: str | os.PathLike | Mapping, out: str | os.PathLike | None = None, *,
                   quick: bool = False, progress: bool | None = None, verbose: bool = False,
                   figures: bool | None = None, _interrupt: Callable[[], None] | None = None
                   ) -> RunResult:
    """Run an experiment: data -> model -> policies -> attributions -> curves -> tables, figures.

    Parameters
    ----------
    config : path, shipped name or dict
        See :func:`load_config` and ``docs/experiments.md``.
    out : path, optional
        Output folder (default: the configuration's ``out``, else ``runs/<name>``).
    quick : bool
        Apply the configuration's ``[quick]`` overrides.
    progress : bool, optional
        Progress bars (default: on a terminal for long stages).
    verbose : bool
        Print what each stage does and how long it took (to stderr).
    figures : bool, optional
        Override ``figures.enabled``.

    Returns
    -------
    RunResult

    Notes
    -----
    Started again with the same configuration and output folder, the run resumes: the cached model
    is reused and finished chunks of attributions / decompositions are loaded, and the data files
    come out byte-identical to an uninterrupted run.
    """
    cfg = config if (isinstance(config, Mapping) and "source" in config) else load_config(
        config, quick=quick)
    if figures is not None:
        cfg = _merge(cfg, {"figures": {"enabled": bool(figures)}})
    out = Path(out if out is not None else (cfg["out"] or Path("runs") / cfg["name"]))
    out.mkdir(parents=True, exist_ok=True)

    def log(msg: str) -> None:
        if verbose:
            print(msg, file=sys.stderr, flush=True)

    stages = _Stages()
    t_all = time.perf_counter()
    t0 = time.perf_counter()
    dataset = _load_dataset(cfg)
    stages.add("data", time.perf_counter() - t0)
    log(f"data: {cfg['data']['recipe']} ({len(dataset.X_train)} train / {len(dataset.X_test)} "
        f"test points, n = {np.asarray(dataset.X_test).shape[1]} features)")
    t0 = time.perf_counter()
    model, metrics, model_info = _get_model(cfg, dataset, out, log, progress)
    stages.add("model", time.perf_counter() - t0, **{"source": model_info["source"]})
    try:
        import torch

        if isinstance(model, torch.nn.Module):
            model.eval()
    except ImportError:  # pragma: no cover
        pass

    pool, pool_idx = _select_pool(dataset, cfg["targets"]["n"], cfg["seed"])
    evaluations, pairings, summaries = {}, {}, []
    decomps = {}
    ev_cfg = cfg["evaluation"]
    for entry in cfg["policies"]:
        label = _policy_label(entry)
        folder = out / label
        log(f"policy {label}:")
        t0 = time.perf_counter()
        policy = _make_policy(entry)
        pairing = policy.pair(pool, model, seed=cfg["seed"], progress=progress)
        stages.add(f"{label}/pairing", time.perf_counter() - t0, pairs=len(pairing))
        log(f"  {len(pairing)} pairs, mean number of differing features "
            f"{pairing.mean_diff():.2f}")
        X, R = np.ascontiguousarray(pairing.X), np.ascontiguousarray(pairing.R)
        atts = _attributions(cfg, model, dataset, X, R, label, out, stages, log, progress,
                             _interrupt)
        t0 = time.perf_counter()
        ev = evaluate(model, X, R, atts, modes=ev_cfg["modes"], n_random=ev_cfg["n_random"],
                      seed=_chunk_seed(cfg["seed"], label, "orders"),
                      normalize=ev_cfg["normalize"], progress=progress)
        stages.add(f"{label}/curves", time.perf_counter() - t0,
                   model_evaluations=int(ev.stats.get("model_evaluations", 0)),
                   curve_points=int(ev.stats.get("curve_points", 0)))
        log(f"  curves: {ev.stats.get('model_evaluations', 0):,} model evaluations, "
            f"{time.perf_counter() - t0:.1f} s")
        # the paper's pairs are explained from the pool, indices are into the pool sample;
        # translate to rows of the data set's test split.
        pairing.target_index = np.where(pairing.target_index >= 0,
                                        pool_idx[np.maximum(pairing.target_index, 0)], -1)
        pairing.reference_index = np.where(pairing.reference_index >= 0,
                                           pool_idx[np.maximum(pairing.reference_index, 0)], -1)
        _save_evaluation(folder, ev, pairing, atts)
        s = ev.summary()
        ck.atomic_write_text(folder / "summary.csv", s.to_csv(index=False))
        ck.atomic_write_text(folder / "summary.md", f"Policy: {label} ({ev.n_pairs} pairs)\n\n"
                             + to_markdown(s) + "\n")
        s.insert(0, "policy", label)
        summaries.append(s)
        dec = _decomposition(cfg, model, X, R, label, out, stages, log, progress, _interrupt)
        if dec is not None:
            for mode in ev.modes:
                for m in ev.methods:
                    dec[f"abc_{mode}_{m}"] = ev.abc_array(m, mode)[:len(dec)]
            with ck.atomic_write(folder / "decomposition.parquet", suffix=".parquet") as tmp:
                dec.to_parquet(tmp, index=False)
            decomps[label] = dec
        evaluations[label] = ev
        pairings[label] = pairing

    from . import policies

    diag = policies.diagnostics(pairings, evaluations)
    summary = pd.concat(summaries, ignore_index=True)
    ck.atomic_write_text(out / "summary.csv", summary.to_csv(index=False))
    ck.atomic_write_text(out / "diagnostics.csv", diag.to_csv())
    md = _tables_markdown(summary, diag)
    if decomps:
        md += "\n" + _decomposition_markdown(decomps, evaluations)
    ck.atomic_write_text(out / "summary.md", md)

    fig_paths: list[Path] = []
    if cfg["figures"]["enabled"]:
        t0 = time.perf_counter()
        import matplotlib.pyplot as plt

        fdir = out / "figures"
        with plt.rc_context({"figure.max_open_warning": 0}):
            for label, ev in evaluations.items():
                fig_paths += _policy_figures(cfg, ev, label, fdir)
            try:
                from . import models

                if hasattr(models, "plot_predictions"):
                    ax = models.plot_predictions(model, dataset)
                    fig = ax.figure if hasattr(ax, "figure") else ax
                    fig_paths.append(_save_fig(fig, fdir / "model_predictions.png",
                                               int(cfg["figures"]["dpi"])))
            except ImportError:  # pragma: no cover
                pass
        stages.add("figures", time.perf_counter() - t0, count=len(fig_paths))
        log(f"figures: {len(fig_paths)} written to {fdir}")

    total = time.perf_counter() - t_all
    files = sorted(p for p in out.rglob("*") if p.is_file() and "checkpoints" not in p.parts
                   and p.name != "manifest.json" and not p.name.startswith("."))
    evals_total = sum(int(v.get("model_evaluations", 0)) for v in stages.stages.values())
    manifest = {
        "name": cfg["name"], "source": cfg["source"], "quick": cfg["quick"], "seed": cfg["seed"],
        "config": to_jsonable({k: v for k, v in cfg.items() if k not in ("source",)}),
        "versions": _versions(),
        "policies": list(evaluations),
        "model": {"metrics": to_jsonable(metrics), **to_jsonable(model_info)},
        "compute": {"seconds_total": total, "model_evaluations_total": evals_total,
                    "cpu_count": os.cpu_count(), "stages": to_jsonable(stages.stages)},
        "files": {str(p.relative_to(out)): ck.sha256_file(p) for p in files},
    }
    ck.atomic_write_text(out / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    return RunResult(out=out, config=cfg, evaluations=evaluations, pairings=pairings,
                     summary=summary, diagnostics=diag, manifest=manifest, figures=fig_paths,
                     model=model, dataset=dataset)


def _decomposition_markdown(decomps: dict, evaluations: dict, digits: int = 3) -> str:
    lines = ["### Exact decomposition: best achievable and expected random-order ABC\n",
             "| Policy | Mode | Pairs | Best achievable | E[random] | "
             + " | ".join("frac. of best: " + m for m in next(iter(evaluations.values())).methods)
             + " |",
             "|---|---|---:|---:|---:|" + "---:|" * len(next(iter(evaluations.values())).methods)]
    for label, dec in decomps.items():
        ev = evaluations[label]
        for mode in ev.modes:
            best = dec[f"best_abc_{mode}"].to_numpy()
            fr = [float(np.mean(dec[f"abc_{mode}_{m}"])) / float(np.mean(best))
                  if np.mean(best) != 0 else float("nan") for m in ev.methods]
            lines.append(f"| {label} | {mode} | {len(dec)} | {np.mean(best):.{digits}f} | "
                         f"{dec[f'expected_abc_{mode}'].mean():.{digits}f} | "
                         + " | ".join(f"{v:.{digits}f}" for v in fr) + " |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------------
def _use_agg() -> None:
    import matplotlib

    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")


def _print_result(res: RunResult) -> None:
    print(res.to_markdown())
    c = res.manifest["compute"]
    print(f"compute: {c['seconds_total']:.1f} s, {c['model_evaluations_total']:,} model "
          f"evaluations (per stage: {res.out / 'manifest.json'})")
    print(f"results: {res.out}")
    if res.figures:
        print(f"figures: {len(res.figures)} PNG files in {res.out / 'figures'}")


def _cli_run(args) -> int:
    _use_agg()
    res = run_experiment(args.config, args.out, quick=args.quick, verbose=True,
                         progress=None if not args.no_progress else False)
    _print_result(res)
    return 0


def _cli_reproduce(args) -> int:
    _use_agg()
    name = PAPER_CONFIGS[args.experiment]
    cfg = load_config(name, quick=args.quick)
    if args.data is not None:
        path = Path(args.data)
        if not path.is_file():
            raise FileNotFoundError(f"--data {args.data}: no such file.")
        real = cfg["data"].get("real_recipe")
        if not real:
            raise ValueError(f"{name}: the configuration names no real-data recipe.")
        # the simulator's options (n_events, ...) do not apply to the real data
        cfg["data"] = {**cfg["data"], "recipe": real,
                       "options": {**dict(cfg["data"].get("real_options") or {}),
                                   "path": str(path.resolve())}}
    out = args.out or f"runs/{args.experiment}{'-quick' if args.quick else ''}"
    res = run_experiment(cfg, out, verbose=True,
                         progress=None if not args.no_progress else False)
    _print_result(res)
    return 0


def _cli_demo(args) -> int:
    _use_agg()
    res = run_experiment("demo", args.out, verbose=True,
                         progress=None if not args.no_progress else False)
    _print_result(res)
    return 0


def register_cli(subparsers) -> None:
    """Add ``run``, ``reproduce`` and ``demo`` to the ``insdel`` command line."""
    p = subparsers.add_parser("run", help="run an experiment described by a TOML file",
                              description="Run an experiment (docs/experiments.md). CONFIG is a "
                              "TOML file or a shipped configuration: " + ", ".join(list_configs()))
    p.add_argument("config", metavar="CONFIG")
    p.add_argument("--out", default=None, help="output folder (default: the config's, else "
                   "runs/<name>)")
    p.add_argument("--quick", action="store_true", help="apply the config's [quick] sizes")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.set_defaults(func=_cli_run)

    p = subparsers.add_parser("reproduce", help="reproduce the paper's section 5 experiments",
                              description="Reproduce paper §5 (Tables 1-4, Figures 4-12) on the "
                              "embedded simulator or, with --data, on your copy of the real data.")
    p.add_argument("experiment", choices=sorted(PAPER_CONFIGS))
    p.add_argument("--data", default=None, metavar="PATH",
                   help="the real CSV (otherwise the matching simulator is used)")
    p.add_argument("--quick", action="store_true",
                   help="small version (a few minutes on 2 cores)")
    p.add_argument("--out", default=None, help="output folder (default: runs/<experiment>)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.set_defaults(func=_cli_reproduce)

    p = subparsers.add_parser("demo", help="the CERN experiment in miniature (a few minutes)",
                              description="dielectron_sim, the three paper policies, all seven "
                              "methods at quick sizes; tables printed, figures written.")
    p.add_argument("--out", default="insdel-demo", help="output folder (default: ./insdel-demo)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.set_defaults(func=_cli_demo)
