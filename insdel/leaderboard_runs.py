"""The run folders a leaderboard reads (:mod:`insdel.leaderboard`): which folders are runs, of
which kind, and each run's per-unit scores.

An **insertion/deletion run** (``insdel run / demo / reproduce``; its manifest lists policies)
gives, per policy, the insertion ABC, the deletion ABC' and their sum per pair
(``<policy>/abc.parquet``), each further removal's (``<policy>/removal-<name>/abc.parquet``, as
``insertion@<name>``, ...) and the ``[metrics]`` of ``<policy>/metrics.parquet``. A **ROAD run**
(``insdel road``; its manifest has a ``road`` entry) gives the scores of ``road_summary.csv``
(:data:`ROAD_SCORES`), one value per method: the run is their one unit. A run with
``model.outputs = H`` (:mod:`insdel.runner.multi`) gives each output's scores
(``<policy>/output_<h>/abc.parquet``, the ``output`` column of ``metrics.parquet``) and their
weighted aggregate, with a column ``output`` (:func:`run_outputs`). ROAR runs, image runs
(``reproduce paper-images``) and sanity-check runs are not ranked (:func:`run_kind`).

Runs are grouped by a **configuration fingerprint** (:func:`config_fingerprint`), and a block's
numbers are keyed by their content (:func:`content_key`): two runs whose configurations differ
only in how they are spelled (e.g. ``--removal baseline``, the default) have byte-identical
results, counted once.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["METRICS", "ROAD_SCORES", "KINDS", "RunInfo", "config_fingerprint", "find_runs",
           "run_kind", "run_outputs", "read_run", "content_key", "is_checks_run", "read_checks"]

#: metric name -> label in the tables.
METRICS = {"insertion": "insertion ABC", "deletion": "deletion ABC'", "total": "ABC + ABC'"}

#: The scores of a ROAD run's ``road_summary.csv``: column -> (metric name, label, higher is
#: better). The metric's name and label end with the run's loss (``road_srg_mse``: "ROAD SRG
#: (mse)"): areas of different losses are different metrics.
ROAD_SCORES = {"srg": ("road_srg", "ROAD SRG", True),
               "morf_area": ("road_morf", "ROAD MoRF area", True),
               "lerf_area": ("road_lerf", "ROAD LeRF area", False)}

#: What :func:`run_kind` calls each kind of run folder (the notes' words).
KINDS = {"evaluation": "an insertion/deletion run", "road": "a ROAD run (insdel road)",
         "roar": "a ROAR run (insdel roar)", "sanity": "a sanity-check run (insdel sanity)",
         "tune": "a tuning run (insdel tune; ranked on its held-out pairs only)",
         "images": "an image run (reproduce paper-images)",
         "unknown": "not a run of insdel's runner (its manifest has no policies, road, roar or "
                    "sanity entry)"}

# Configuration keys that do not change the numbers (left out of the fingerprint).
_IGNORED_TOP = ("name", "description", "seed", "out", "figures", "compute", "roar",
                "decomposition", "quick", "sections", "source", "verdicts")
_IGNORED_NESTED = {"evaluation": ("targets_per_chunk",), "model": ("trust",),
                   "road": ("points_per_chunk", "leakage", "leakage_options")}


def config_fingerprint(manifest: dict) -> str:
    """A 12-hex-digit fingerprint of what in a run's configuration changes its numbers, and of
    the kind of run (:func:`run_kind`) when it is not an insertion/deletion run.

    Parameters
    ----------
    manifest : dict
        The run's ``manifest.json`` (its ``config``, and the sha256 of a user's data or model
        file when there is one).

    Returns
    -------
    str
    """
    cfg = manifest.get("config")
    if not isinstance(cfg, dict):
        raise ValueError("manifest: no 'config' table (not a run written by insdel's runner).")
    keep = {k: v for k, v in cfg.items() if k not in _IGNORED_TOP}
    for k, drop in _IGNORED_NESTED.items():
        if isinstance(keep.get(k), dict):
            keep[k] = {kk: vv for kk, vv in keep[k].items() if kk not in drop}
    kind = run_kind(manifest)
    if kind != "evaluation":  # a ROAD run of a configuration is not a replicate of its evaluation
        keep["_kind"] = kind
    keep["_data_file"] = (manifest.get("data") or {}).get("file_sha256")
    keep["_model_file"] = (manifest.get("model") or {}).get("file_sha256")
    blob = json.dumps(keep, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


@dataclass
class RunInfo:
    """One finished run: where it is, its seed, fingerprint and data set, and its scores.

    Attributes
    ----------
    path : Path
    name : str
    seed : int or None
    fingerprint : str
    dataset : str
        The data recipe (or data set name) of the run.
    policies : list of str
        The policies (a ROAD run: ``road:<reference>``).
    abc : pandas.DataFrame
        Columns ``policy, pair, cluster, method, metric, score`` (``cluster``: the pair's
        independent unit, the pair itself when the run recorded none; a ROAD run: one pair).
    directions : dict
        Metric -> higher is better.
    labels : dict
        Metric -> label, for the metrics not in :data:`METRICS` that have one.
    kind : str
        ``"evaluation"`` or ``"road"`` (:func:`run_kind`).
    outputs : list of str
        ``[]`` for a run of one output; a run with ``model.outputs = H``: ``"0"``, ...,
        ``"H-1"``, ``"weighted"`` (:func:`run_outputs`), and ``abc`` has a column ``output``
        (one of them) after ``policy``.
    output_weights : list of float or None
        The weights of the ``"weighted"`` aggregate (sum 1).
    """

    path: Path
    name: str
    seed: int | None
    fingerprint: str
    dataset: str
    policies: list
    abc: pd.DataFrame = field(repr=False)
    directions: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    kind: str = "evaluation"
    outputs: list = field(default_factory=list)
    output_weights: list | None = None


def find_runs(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """Run directories from the given paths: a folder with ``manifest.json`` is a run; a folder
    without one is searched one level down. Duplicates (same resolved path) are dropped.

    Raises
    ------
    FileNotFoundError
        A path that does not exist or holds no run.
    """
    return find_runs_noted(paths)[0]


def find_runs_noted(paths) -> tuple[list[Path], list[str]]:
    """:func:`find_runs` and a note for each sub-folder searched that holds no finished run."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out: list[Path] = []
    notes: list[str] = []
    for p in paths:
        p = Path(p)
        if not p.is_dir():
            raise FileNotFoundError(f"run directory {str(p)!r}: no such folder.")
        if (p / "manifest.json").is_file():
            found = [p]
        else:
            subs = sorted(q for q in p.iterdir() if q.is_dir())
            found = [q for q in subs if (q / "manifest.json").is_file()]
            if not found:
                raise FileNotFoundError(f"run directory {str(p)!r} holds no finished run "
                                        "(no manifest.json in it or in its sub-folders).")
            notes += [f"{q} skipped: no manifest.json (not a finished run)." for q in subs
                      if q not in found]
        for q in found:
            if q.resolve() not in {o.resolve() for o in out}:
                out.append(q)
    if not out:
        raise ValueError("run_dirs: give at least one run directory.")
    return out, notes


def read_manifest(path: str | os.PathLike) -> dict:
    """A run folder's ``manifest.json`` (a JSON object)."""
    mpath = Path(path) / "manifest.json"
    if not mpath.is_file():
        raise FileNotFoundError(f"{path} holds no finished run (no manifest.json).")
    manifest = json.loads(mpath.read_text())
    if not isinstance(manifest, dict):
        raise ValueError(f"{mpath}: not a JSON object.")
    return manifest


def run_kind(manifest: dict) -> str:
    """The kind of run a ``manifest.json`` describes (:data:`KINDS`): ``"evaluation"`` (it lists
    policies), ``"road"``, ``"roar"``, ``"sanity"``, ``"images"`` (``reproduce paper-images``)
    or ``"unknown"``."""
    if manifest.get("policies"):
        return "evaluation"
    for kind in ("road", "roar", "sanity", "tune"):
        if kind in manifest:
            return kind
    if str(manifest.get("experiment", "")).endswith("images"):
        return "images"
    return "unknown"


def read_run(path: str | os.PathLike) -> RunInfo:
    """Read one finished run: an insertion/deletion run (every policy's ``abc.parquet``, its
    further removals' and its ``metrics.parquet``) or a ROAD run (``road_summary.csv``).

    Raises
    ------
    FileNotFoundError
        No manifest, a policy folder without ``abc.parquet`` or a ROAD run without
        ``road_summary.csv``.
    ValueError
        A run of another kind (a ROAR, image or sanity-check run: :func:`run_kind`).
    """
    path = Path(path)
    manifest = read_manifest(path)
    kind = run_kind(manifest)
    if kind == "road":
        return _read_road(path, manifest)
    if kind == "tune":
        return _read_tune(path, manifest)
    if kind != "evaluation":
        raise ValueError(f"{path}: {KINDS[kind]}; leaderboards rank insertion/deletion and ROAD "
                         "runs.")
    policies = manifest["policies"]
    outputs, weights = run_outputs(manifest, path)
    if outputs:
        return _read_multi(path, manifest, list(policies), outputs, weights)
    frames = []
    directions = dict.fromkeys(METRICS, True)
    for pol in policies:
        first = len(frames)  # this policy's frames start here
        f = path / pol / "abc.parquet"
        if not f.is_file():
            raise FileNotFoundError(f"{path}: policy {pol!r} has no abc.parquet ({f}).")
        df = pd.read_parquet(f)
        unit = _units(df)
        frames.append(_abc_scores(df).assign(policy=pol))
        # the run's other removals ([removal] kinds): the same pairs and methods, their ABCs as
        # metrics "insertion@<removal>", ... (the primary removal's are the plain ones)
        for sub in sorted((path / pol).glob("removal-*/abc.parquet")):
            name = sub.parent.name[len("removal-"):]
            scores = _abc_scores(pd.read_parquet(sub))
            scores["metric"] = scores["metric"] + f"@{name}"
            for m in scores["metric"].unique():
                directions[str(m)] = True
            frames.append(scores.assign(policy=pol))
        mf = path / pol / "metrics.parquet"
        if mf.is_file():  # the run's [metrics] (insdel.metrics), with their directions
            md = pd.read_parquet(mf)
            if "output" in md.columns:
                raise ValueError(f"{mf}: an 'output' column in a run without model.outputs "
                                 "in its manifest (not written by insdel's runner).")
            _metric_directions(md, directions)
            frames.append(md.rename(columns={"value": "score"})[
                ["pair", "method", "metric", "score"]].assign(policy=pol))
        for fr in frames[first:]:
            fr["cluster"] = fr["pair"].map(unit).fillna(-1 - fr["pair"]).astype(np.int64)
    abc = pd.concat(frames, ignore_index=True)[["policy", "pair", "cluster", "method", "metric",
                                                 "score"]]
    return _info(path, manifest, list(policies), abc, directions, {}, "evaluation")


def run_outputs(manifest: dict, path: str | os.PathLike = "run") -> tuple[list[str],
                                                                          np.ndarray | None]:
    """The outputs of an insertion/deletion run and their aggregate's weights.

    Parameters
    ----------
    manifest : dict
        The run's ``manifest.json``.
    path : path, optional
        The run folder, named in the errors.

    Returns
    -------
    outputs : list of str
        ``[]`` for a run of one output; for a run with ``model.outputs = H``
        (:mod:`insdel.runner.multi`) the labels ``"0"``, ..., ``"H-1"`` and ``"weighted"`` (the
        aggregate over the outputs).
    weights : ndarray (H,) or None
        The aggregate's weights: the run's ``model.output_weights`` normalised by
        :func:`insdel.multi_output.check_output_weights`, as the run weighed them (checked
        against the manifest's ``output_weights``).
    """
    H = manifest.get("outputs")
    if H is None:
        return [], None
    if isinstance(H, bool) or not isinstance(H, int) or H < 1:
        raise ValueError(f"{path}: manifest 'outputs' is {H!r}, not a number of outputs >= 1.")
    from .multi_output import check_output_weights

    cfg_w = ((manifest.get("config") or {}).get("model") or {}).get("output_weights")
    weights = check_output_weights(cfg_w, H)
    saved = manifest.get("output_weights")
    if saved is None or len(saved) != H or not np.allclose(saved, weights, rtol=0, atol=1e-12):
        raise ValueError(f"{path}: manifest 'output_weights' {saved!r} are not the weights of "
                         f"its model.output_weights {cfg_w!r} ({weights.tolist()}).")
    return [*(str(h) for h in range(H)), "weighted"], weights


def _units(df: pd.DataFrame) -> pd.Series:
    """Each pair's independent unit of an ``abc.parquet`` (a pair and its mirror share one);
    without a ``cluster`` column, the pair itself."""
    if "cluster" in df.columns:
        return df.groupby("pair")["cluster"].first()
    return pd.Series(df["pair"].unique(), index=df["pair"].unique())


def _metric_directions(md: pd.DataFrame, directions: dict) -> None:
    """The directions of a ``metrics.parquet``'s metrics into ``directions``."""
    for name, up in md.groupby("metric", sort=False)["higher_is_better"].first().items():
        directions[str(name)] = bool(up)


def _read_multi(path: Path, manifest: dict, policies: list, outputs: list[str],
                weights: np.ndarray) -> RunInfo:
    """A run with ``model.outputs = H`` (:mod:`insdel.runner.multi`): per policy, each output's
    scores (``<policy>/output_<h>/abc.parquet``, each further removal's
    ``<policy>/removal-<name>/output_<h>/abc.parquet``, the rows of ``metrics.parquet`` whose
    ``output`` is h) as output ``"h"``, and their aggregate as output ``"weighted"``: each
    pair's ABCs weighed by :func:`insdel.multi_output.aggregate_abc` and its metric scores by
    :func:`insdel.multi_output.aggregate_scores`, the functions of the run's own weighted
    summaries (``total`` is the weighted insertion plus the weighted deletion)."""
    from .multi_output import aggregate_abc, aggregate_scores

    H = len(weights)
    frames = []
    directions = dict.fromkeys(METRICS, True)
    for pol in policies:
        first = len(frames)
        per = _output_abcs(path, path / pol, pol, H)
        unit = _units(per[0])
        subs = sorted({q.parent.parent for q in (path / pol).glob("removal-*/output_*/abc.parquet")})
        for folder, suffix in [(None, ""), *((q, f"@{q.name[len('removal-'):]}") for q in subs)]:
            dfs = per if folder is None else _output_abcs(path, folder, pol, H)
            for h, df in enumerate(dfs):
                frames.append(_abc_scores(df).assign(output=str(h), policy=pol))
            wide = pd.concat([df.assign(output=h) for h, df in enumerate(dfs)]).pivot_table(
                index=["pair", "method", "mode"], columns="output", values="abc",
                aggfunc="first")
            if wide.shape[1] != H or wide.isna().any(axis=None):
                raise ValueError(f"{path}: policy {pol!r}: the outputs' abc.parquet files "
                                 f"({folder or path / pol}/output_<h>) do not hold the same pairs, "
                                 "methods and modes.")
            agg = wide.index.to_frame(index=False).assign(
                abc=aggregate_abc(wide[list(range(H))].to_numpy(np.float64), weights))
            frames.append(_abc_scores(agg).assign(output="weighted", policy=pol))
            for fr in frames[-H - 1:]:
                if suffix:
                    fr["metric"] = fr["metric"] + suffix
                    for m in fr["metric"].unique():
                        directions[str(m)] = True
        mf = path / pol / "metrics.parquet"
        if mf.is_file():  # the run's [metrics] per output (column output), with their directions
            md = pd.read_parquet(mf)
            if "output" not in md.columns:
                raise ValueError(f"{mf}: no 'output' column, yet the run's manifest has "
                                 f"outputs = {H} (not written by insdel's runner).")
            got = sorted(set(md["output"].astype(int)))
            if got != list(range(H)):
                raise ValueError(f"{mf}: outputs {got}, not the run's 0 .. {H - 1}.")
            _metric_directions(md, directions)
            md = md.rename(columns={"value": "score"})
            frames.append(md[["pair", "method", "metric", "score"]].assign(
                output=md["output"].astype(int).astype(str), policy=pol))
            wide = md.pivot_table(index=["metric", "method", "pair"], columns="output",
                                  values="score", aggfunc="first", sort=False, dropna=False)
            wide = wide[list(range(H))]
            agg = aggregate_scores(wide.to_numpy(np.float64).T, weights)
            frames.append(wide.index.to_frame(index=False).assign(
                score=agg, output="weighted", policy=pol))
        for fr in frames[first:]:
            fr["cluster"] = fr["pair"].map(unit).fillna(-1 - fr["pair"]).astype(np.int64)
    abc = pd.concat(frames, ignore_index=True)[["policy", "output", "pair", "cluster", "method",
                                                 "metric", "score"]]
    info = _info(path, manifest, policies, abc, directions, {}, "evaluation")
    info.outputs = outputs
    info.output_weights = weights.tolist()
    return info


def _output_abcs(path: Path, folder: Path, pol: str, H: int) -> list[pd.DataFrame]:
    """The H ``output_<h>/abc.parquet`` of one policy (or one removal of it) of a multi-output
    run."""
    out = []
    for h in range(H):
        f = folder / f"output_{h}" / "abc.parquet"
        if not f.is_file():
            raise FileNotFoundError(f"{path}: policy {pol!r} of a run with {H} outputs has no "
                                    f"abc.parquet for output {h} ({f}).")
        out.append(pd.read_parquet(f))
    return out


def _info(path: Path, manifest: dict, policies: list, abc: pd.DataFrame, directions: dict,
          labels: dict, kind: str) -> RunInfo:
    cfg = manifest.get("config") or {}
    data = manifest.get("data") or {}
    dataset = str(data.get("name") or (cfg.get("data") or {}).get("recipe") or "data")
    seed = manifest.get("seed", cfg.get("seed"))
    return RunInfo(path=path, name=str(manifest.get("name", path.name)),
                   seed=None if seed is None else int(seed),
                   fingerprint=config_fingerprint(manifest), dataset=dataset, policies=policies,
                   abc=abc, directions=directions, labels=labels, kind=kind)


def _read_road(path: Path, manifest: dict) -> RunInfo:
    """A ROAD run's scores (``road_summary.csv``): one unit (pair 0), policy
    ``road:<reference>``, the metrics of :data:`ROAD_SCORES` named with the run's loss."""
    f = path / "road_summary.csv"
    if not f.is_file():
        raise FileNotFoundError(f"{path}: a ROAD run without road_summary.csv ({f}).")
    summary = pd.read_csv(f)
    missing = ({"method"} | set(ROAD_SCORES)) - set(summary.columns)
    if missing:
        raise ValueError(f"{f}: no column(s) {sorted(missing)} (not written by insdel road).")
    road = manifest.get("road") or {}
    loss = str(road.get("loss") or "mse")
    policy = f"road:{road.get('reference', 'training_mean')}"
    frames, directions, labels = [], {}, {}
    for col, (name, label, up) in ROAD_SCORES.items():
        metric = f"{name}_{loss}"
        directions[metric], labels[metric] = up, f"{label} ({loss})"
        frames.append(pd.DataFrame({"policy": policy, "pair": 0, "cluster": 0,
                                    "method": summary["method"].astype(str), "metric": metric,
                                    "score": summary[col].astype(np.float64)}))
    abc = pd.concat(frames, ignore_index=True)
    return _info(path, manifest, [policy], abc, directions, labels, "road")


def _read_tune(path: Path, manifest: dict) -> RunInfo:
    """An ``insdel tune`` run's held-out scores (``held_out_abc.parquet``): per held-out pair,
    each method's tuned settings (``<method> (tuned)``) and defaults (``<method> (default)``),
    under the run's ABC mode, policy ``tune:<reference>``. A pair of the manifest's tuning pairs
    among them is refused (:class:`insdel._validation.TuningLeakError`): methods are never
    ranked on the pairs their settings were tuned on."""
    from ._validation import TuningLeakError

    f = path / "held_out_abc.parquet"
    if not f.is_file():
        raise FileNotFoundError(f"{path}: a tuning run without held_out_abc.parquet ({f}).")
    tune = manifest.get("tune") or {}
    split = tune.get("split") or {}
    if "tuning" not in split:
        raise ValueError(f"{path}: the manifest records no tuning split (tune.split.tuning); "
                         "without it the held-out pairs cannot be checked.")
    df = pd.read_parquet(f)
    leak = np.intersect1d(df["pair"].to_numpy(np.int64), np.asarray(split["tuning"], np.int64))
    if leak.size:
        raise TuningLeakError(f"{f}: pair(s) {leak[:10].tolist()} are tuning pairs of this run "
                              "(manifest tune.split.tuning): a ranking on the pairs the settings "
                              "were tuned on is refused; rank on the held-out pairs only.")
    mode = str(tune.get("mode") or "insertion")
    abc = pd.DataFrame({"policy": f"tune:{tune.get('reference', 'training_mean')}",
                        "pair": df["pair"].astype(np.int64),
                        "cluster": df["cluster"].astype(np.int64),
                        "method": df["method"].astype(str) + " (" + df["setting"].astype(str)
                        + ")", "metric": mode, "score": df["abc"].astype(np.float64)})
    return _info(path, manifest, [str(abc["policy"].iloc[0])], abc, {mode: True}, {}, "tune")


def _abc_scores(df: pd.DataFrame) -> pd.DataFrame:
    """Long scores (pair, method, metric, score) of an ``abc.parquet``: the insertion ABC, the
    deletion ABC' and, with both, their sum ("total")."""
    wide = df.pivot_table(index=["pair", "method"], columns="mode", values="abc",
                          aggfunc="first")
    long = []
    for mode in ("insertion", "deletion"):
        if mode in wide.columns:
            long.append(wide[mode].rename("score").reset_index().assign(metric=mode))
    if {"insertion", "deletion"} <= set(wide.columns):
        tot = (wide["insertion"] + wide["deletion"]).rename("score").reset_index()
        long.append(tot.assign(metric="total"))
    return pd.concat(long, ignore_index=True)


def content_key(scores: pd.DataFrame) -> str:
    """The SHA-256 of one (run, policy, metric)'s per-pair results (``pair, cluster, method,
    score``, in a fixed order): what a block's numbers are computed from. Two runs with the same
    key hold the same numbers, whatever their configurations say."""
    d = scores.sort_values(["pair", "method"], kind="stable")
    h = hashlib.sha256()
    h.update("\0".join(d["method"].astype(str)).encode())
    h.update(b"\1")
    for col in ("pair", "cluster"):
        h.update(np.ascontiguousarray(d[col].to_numpy(np.int64)).tobytes())
    h.update(np.ascontiguousarray(d["score"].to_numpy(np.float64)).tobytes())
    return h.hexdigest()


def is_checks_run(path: str | os.PathLike) -> bool:
    """Whether ``path`` is an ``insdel sanity`` run (its manifest has a ``sanity`` entry and no
    policies): read for its checks only."""
    try:
        manifest = read_manifest(path)
    except (OSError, ValueError):
        return False
    return run_kind(manifest) == "sanity"


def read_checks(path: str | os.PathLike) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """The sanity flags (``sanity_flags.csv``) and the metrics' reliability
    (``reliability.csv``) a run folder holds, each None when absent."""
    path = Path(path)
    flags = rel = None
    if (path / "sanity_flags.csv").is_file():
        flags = pd.read_csv(path / "sanity_flags.csv")
        missing = {"method", "check", "flagged"} - set(flags.columns)
        if missing:
            raise ValueError(f"{path / 'sanity_flags.csv'}: no column(s) {sorted(missing)} (not "
                             "written by insdel sanity).")
        for col in ("kind", "order"):
            if col not in flags.columns:
                flags[col] = ""
    if (path / "reliability.csv").is_file():
        rel = pd.read_csv(path / "reliability.csv")
        missing = {"metric", "resilience", "reactivity", "mc"} - set(rel.columns)
        if missing:
            raise ValueError(f"{path / 'reliability.csv'}: no column(s) {sorted(missing)} (not "
                             "written by insdel sanity).")
    return flags, rel
