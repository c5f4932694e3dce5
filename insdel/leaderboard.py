"""Leaderboard of finished runs: method x metric means, standard errors and ranks, per data set
and policy, and overall mean ranks with bootstrap confidence intervals.

A finished run directory (:func:`insdel.run_experiment`) holds ``manifest.json`` (the merged
configuration, seed, data and model fingerprints) and one folder per policy with
``abc.parquet`` (one row per pair, method and mode). The metrics read from it are the insertion
ABC, the deletion ABC' and their sum ABC + ABC' (App. B.1), per pair; higher is better for all
three. A run with a ``[metrics]`` table also holds ``metrics.parquet`` per policy (every metric of
:mod:`insdel.metrics` it ran, per pair, with the metric's direction): those metrics join the
table, ranked by their own direction (1 = best, also where lower is better). A run with several
removals (``[removal] kinds``) holds each further removal's ``abc.parquet`` in
``<policy>/removal-<name>/``: its ABCs join as the metrics ``insertion@<name>``,
``deletion@<name>`` and ``total@<name>`` (the primary removal's are the plain ones), so one table
shows how each method ranks under every removal.

Runs are grouped by a **configuration fingerprint**: the hash of everything in the configuration
that changes the numbers (data recipe and options, model, targets, policies, methods and their
options, evaluation settings, and the fingerprints of user data or model files), but not the seed,
the name, the output folder, figures, compute device or chunk sizes. Runs of one group are
replicates (other seeds): their pairs are pooled. Runs with different fingerprints are never
pooled; each (group, policy) is a **block** with its own table, and the overall table only
averages *ranks* across blocks, over the methods every block has. A run whose fingerprint and
seed repeat an earlier one (the same pairs) is listed and skipped, not counted twice.

Ranks: 1 is best (largest mean), ties get the average rank. The overall mean rank of a method is
the average of its block ranks; its confidence interval comes from a seeded bootstrap that
resamples the independent units of every block with replacement (the same resampled units for
every method, so the comparison stays paired), recomputes the block means and ranks, and takes
percentiles of the mean rank. A unit is a pair, or the pairs of one ``cluster`` when the run's
``abc.parquet`` has that column (a pair and its mirror: a ``one_to_one`` couple's two
directions); standard errors are over the same units, means over the pairs.

Sanity checks (``insdel sanity``, :mod:`insdel.sanity`): a folder among the runs that holds
``sanity_flags.csv`` marks the methods failing a randomisation check (a ``randomisation`` column
in the overall table), and one that holds ``reliability.csv`` marks the metrics whose
meta-consistency MC (MetaQuantus: the mean of resilience's and reactivity's four criteria, in
[0, 1]) is below ``min_reliability`` (default :data:`MIN_RELIABILITY`). An ``insdel sanity`` run
folder is read for these only; an evaluation run folder may hold them too. Without them the
leaderboard is as before.
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

from . import _checkpoint as ck
from ._stats import mean_se, unit_ids
from ._validation import check_positive_int, check_scalar

__all__ = ["METRICS", "RunInfo", "Leaderboard", "find_runs", "read_run", "config_fingerprint",
           "leaderboard", "rank_means", "bootstrap_mean_ranks", "read_checks", "is_checks_run",
           "MIN_RELIABILITY",
           "RELIABILITY_METRICS"]

#: metric name -> label in the tables.
METRICS = {"insertion": "insertion ABC", "deletion": "deletion ABC'", "total": "ABC + ABC'"}

#: A metric whose meta-consistency MC (``reliability.csv``) is below this is marked unreliable:
#: a constant metric sits at MC = 0.5 (resilience 1, reactivity 0) and one that moves at random
#: below it; a metric that is both resilient and reactive well above.
MIN_RELIABILITY = 0.6
#: The leaderboard's metrics read under another name in ``reliability.csv``
#: (:mod:`insdel.metrics`); ``total`` is unreliable when either of its two parts is.
RELIABILITY_METRICS = {"insertion": ("insertion_abc",), "deletion": ("deletion_abc",),
                       "total": ("insertion_abc", "deletion_abc")}

# Configuration keys that do not change the numbers (left out of the fingerprint).
_IGNORED_TOP = ("name", "description", "seed", "out", "figures", "compute", "roar",
                "decomposition", "quick", "sections", "source")
_IGNORED_NESTED = {"evaluation": ("targets_per_chunk",), "model": ("trust",)}


def config_fingerprint(manifest: dict) -> str:
    """A 12-hex-digit fingerprint of what in a run's configuration changes its numbers.

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
    keep["_data_file"] = (manifest.get("data") or {}).get("file_sha256")
    keep["_model_file"] = (manifest.get("model") or {}).get("file_sha256")
    blob = json.dumps(keep, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


@dataclass
class RunInfo:
    """One finished run: where it is, its seed, fingerprint and data set, and its pairs' ABCs.

    Attributes
    ----------
    path : Path
    name : str
    seed : int or None
    fingerprint : str
    dataset : str
        The data recipe (or data set name) of the run.
    policies : list of str
    abc : pandas.DataFrame
        Columns ``policy, pair, cluster, method, metric, score`` (metric: insertion, deletion,
        total; ``cluster``: the pair's independent unit, the pair itself when the run recorded
        none).
    """

    path: Path
    name: str
    seed: int | None
    fingerprint: str
    dataset: str
    policies: list
    abc: pd.DataFrame = field(repr=False)
    directions: dict = field(default_factory=dict)


def find_runs(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """Run directories from the given paths: a folder with ``manifest.json`` is a run; a folder
    without one is searched one level down. Duplicates (same resolved path) are dropped.

    Raises
    ------
    FileNotFoundError
        A path that does not exist or holds no run.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if not p.is_dir():
            raise FileNotFoundError(f"run directory {str(p)!r}: no such folder.")
        if (p / "manifest.json").is_file():
            found = [p]
        else:
            found = sorted(q for q in p.iterdir() if (q / "manifest.json").is_file())
            if not found:
                raise FileNotFoundError(f"run directory {str(p)!r} holds no finished run "
                                        "(no manifest.json in it or in its sub-folders).")
        for q in found:
            if q.resolve() not in {o.resolve() for o in out}:
                out.append(q)
    if not out:
        raise ValueError("run_dirs: give at least one run directory.")
    return out


def read_run(path: str | os.PathLike) -> RunInfo:
    """Read one finished run (its manifest and every policy's ``abc.parquet``).

    Raises
    ------
    FileNotFoundError
        No manifest, or a policy folder without ``abc.parquet``.
    ValueError
        A run that is not an insertion/deletion evaluation (e.g. a ROAR run).
    """
    path = Path(path)
    mpath = path / "manifest.json"
    if not mpath.is_file():
        raise FileNotFoundError(f"{path} holds no finished run (no manifest.json).")
    manifest = json.loads(mpath.read_text())
    policies = manifest.get("policies")
    if not policies:
        raise ValueError(f"{path}: the manifest lists no policies (a ROAR run or not an "
                         "insertion/deletion evaluation); leaderboards rank evaluation runs.")
    frames = []
    directions = dict.fromkeys(METRICS, True)
    for pol in policies:
        first = len(frames)  # this policy's frames start here
        f = path / pol / "abc.parquet"
        if not f.is_file():
            raise FileNotFoundError(f"{path}: policy {pol!r} has no abc.parquet ({f}).")
        df = pd.read_parquet(f)
        # the pairs' independent units (a pair and its mirror share one); absent: the pair
        unit = (df.groupby("pair")["cluster"].first() if "cluster" in df.columns
                else pd.Series(df["pair"].unique(), index=df["pair"].unique()))
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
            for name, up in md.groupby("metric", sort=False)["higher_is_better"].first().items():
                directions[str(name)] = bool(up)
            frames.append(md.rename(columns={"value": "score"})[
                ["pair", "method", "metric", "score"]].assign(policy=pol))
        for fr in frames[first:]:
            fr["cluster"] = fr["pair"].map(unit).fillna(-1 - fr["pair"]).astype(np.int64)
    abc = pd.concat(frames, ignore_index=True)[["policy", "pair", "cluster", "method", "metric",
                                                 "score"]]
    cfg = manifest.get("config") or {}
    data = manifest.get("data") or {}
    dataset = str(data.get("name") or (cfg.get("data") or {}).get("recipe") or "data")
    seed = manifest.get("seed", cfg.get("seed"))
    return RunInfo(path=path, name=str(manifest.get("name", path.name)),
                   seed=None if seed is None else int(seed),
                   fingerprint=config_fingerprint(manifest), dataset=dataset,
                   policies=list(policies), abc=abc, directions=directions)


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


def rank_means(means: np.ndarray) -> np.ndarray:
    """Ranks of the columns of ``means`` (..., M): 1 = largest, ties get their average rank."""
    from scipy.stats import rankdata

    return rankdata(-np.asarray(means, dtype=np.float64), method="average", axis=-1)


def bootstrap_mean_ranks(blocks: Sequence[np.ndarray], *, n_boot: int = 1000, seed: int = 0,
                         clusters: Sequence[np.ndarray | None] | None = None) -> np.ndarray:
    """Bootstrap replicates of the mean rank over blocks, (n_boot, M).

    Parameters
    ----------
    blocks : sequence of ndarray (P_k, M)
        Per-pair scores of the same M methods (columns) in each block; higher is better.
    n_boot : int, default 1000
    seed : int, default 0
        Seed of numpy's generator; blocks are resampled in the order given.
    clusters : sequence of ndarray (P_k,) or None, optional
        Each block's unit of each pair (pairs with the same id are resampled together, e.g. a
        pair and its mirror); None (or a None entry): every pair is a unit.

    Returns
    -------
    ndarray (n_boot, M)
        For each replicate: the units of every block resampled with replacement (paired across
        methods), block means over the resampled pairs ranked, ranks averaged over the blocks.
        With every pair its own unit this is the pairs' bootstrap.
    """
    n_boot = check_positive_int("n_boot", n_boot)
    rng = np.random.default_rng(seed)
    M = blocks[0].shape[1]
    acc = np.zeros((n_boot, M))
    for k, V in enumerate(blocks):
        P = V.shape[0]
        u = unit_ids(None if clusters is None else clusters[k], P)
        G = int(u.max()) + 1
        sums = np.zeros((G, M))
        np.add.at(sums, u, V)  # each unit's sum and size: a resampled unit brings all its pairs
        size = np.bincount(u, minlength=G).astype(np.float64)
        counts = rng.multinomial(G, np.full(G, 1.0 / G), size=n_boot)
        acc += rank_means((counts @ sums) / (counts @ size)[:, None])
    return acc / len(blocks)


@dataclass
class Leaderboard:
    """Result of :func:`leaderboard`.

    Attributes
    ----------
    blocks : pandas.DataFrame
        Per block (group, policy) and metric: ``method, mean, se, n_pairs, n_units, rank,
        rank_low, rank_high`` (standard error and rank CI over the independent units).
    overall : pandas.DataFrame
        Per metric: ``method, mean_rank, ci_low, ci_high, n_blocks``.
    groups : pandas.DataFrame
        One row per run: ``group, fingerprint, dataset, run, path, seed, used, note``.
    notes : list of str
        Runs skipped, methods left out of the overall ranks, and why.
    n_boot, seed, level : bootstrap settings.
    """

    blocks: pd.DataFrame
    overall: pd.DataFrame
    groups: pd.DataFrame
    notes: list
    n_boot: int
    seed: int
    level: float
    labels: dict = field(default_factory=lambda: dict(METRICS))
    directions: dict = field(default_factory=dict)
    #: Per method: ``method, randomisation`` ("fails" / "passes"), ``failed`` (the failed checks,
    #: ``kind/order: check``), ``runs``; empty without ``sanity_flags.csv``.
    sanity: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: Per metric of ``reliability.csv``: ``metric, resilience, reactivity, mc, reliable, run``;
    #: empty without one.
    reliability: pd.DataFrame = field(default_factory=pd.DataFrame)
    min_reliability: float = MIN_RELIABILITY

    def unreliable(self, m: str) -> float | None:
        """The lowest MC of the reliability metrics behind leaderboard metric ``m`` when it is
        below ``min_reliability``; None when reliable or not meta-evaluated."""
        if self.reliability.empty:
            return None
        rel = self.reliability[~self.reliability["reliable"]]
        names = RELIABILITY_METRICS.get(m, (m,))
        low = rel.loc[rel["metric"].isin(names), "mc"]
        return float(low.min()) if len(low) else None

    def _label(self, m: str) -> str:
        lab = self.labels.get(m, m)
        lab = lab if self.directions.get(m, True) else f"{lab} (lower is better)"
        mc = self.unreliable(m)
        return lab if mc is None else f"{lab} [unreliable: MC {mc:.2f} < {self.min_reliability:g}]"

    def _randomisation(self, method: str) -> str:
        if self.sanity.empty:
            return ""
        row = self.sanity[self.sanity["method"] == method]
        if row.empty:
            return "not checked"
        r = row.iloc[0]
        return f"**fails** ({r['failed']})" if r["randomisation"] == "fails" else "passes"

    def to_markdown(self, digits: int = 3) -> str:
        """Groups, overall ranks and the per-block tables as Markdown."""
        out = ["## Leaderboard", "", "### Runs and configuration groups", "",
               "Runs with the same configuration fingerprint (everything but the seed, name, "
               "output and compute settings) are replicates: their pairs are pooled. Different "
               "fingerprints are never pooled.", "",
               "| group | fingerprint | data set | run | seed | used | path |",
               "|---|---|---|---|---:|---|---|"]
        for r in self.groups.itertuples():
            out.append(f"| {r.group} | `{r.fingerprint}` | {r.dataset} | {r.run} | {r.seed} | "
                       f"{'yes' if r.used else 'no: ' + r.note} | {r.path} |")
        pct = f"{100 * self.level:g}%"
        nblk = self.blocks[["group", "policy"]].drop_duplicates().shape[0]
        names = ", ".join(f"{g}/{p}" for g, p in
                          self.blocks[["group", "policy"]].drop_duplicates().itertuples(index=False))
        out += ["", f"### Overall: mean rank over {nblk} block(s) (data set x policy; 1 = best), "
                f"{pct} bootstrap CI over independent units ({self.n_boot} replicates, seed "
                f"{self.seed})", "",
                f"Blocks: {names}. Only ranks are averaged across blocks; scores are never "
                "pooled across configuration groups. A unit is a pair, or a pair and its mirror "
                "(the same two points the other way round, e.g. a one_to_one couple): standard "
                "errors and the bootstrap are over units, means over pairs.", ""]
        metrics = [m for m in self.labels if m in set(self.overall["metric"])]
        checked = not self.sanity.empty
        if metrics:
            out += ["| method | " + " | ".join(self._label(m) for m in metrics)
                    + (" | randomisation" if checked else "") + " |",
                    "|---|" + "---:|" * len(metrics) + ("---|" if checked else "")]
            ov = self.overall.set_index(["metric", "method"])
            for meth in _method_order(self.overall, metrics, "mean_rank"):
                cells = []
                for m in metrics:
                    if (m, meth) in ov.index:
                        r = ov.loc[(m, meth)]
                        cells.append(f"{r['mean_rank']:.2f} [{r['ci_low']:.2f}, "
                                     f"{r['ci_high']:.2f}]")
                    else:
                        cells.append("n/a")
                if checked:
                    cells.append(self._randomisation(meth))
                out.append(f"| {meth} | " + " | ".join(cells) + " |")
        out += self._checks_markdown()
        for note in self.notes:
            out.append(f"\n- {note}")
        for (g, pol), blk in self.blocks.groupby(["group", "policy"], sort=False):
            ds = blk["dataset"].iloc[0]
            runs = ", ".join(self.groups.loc[(self.groups["group"] == g) & self.groups["used"],
                                             "run"])
            npairs = int(blk["n_pairs"].max())
            nunits = int(blk["n_units"].max()) if "n_units" in blk else npairs
            count = f"{npairs} pairs" + (f", {nunits} units" if nunits < npairs else "")
            out += ["", f"### {ds} / {pol} (group {g}: {runs}; {count})", "",
                    "| method | " + " | ".join(
                        f"{self._label(m)} mean ± s.e. (rank)" for m in self.labels
                        if m in set(blk["metric"])) + " |"]
            ms = [m for m in self.labels if m in set(blk["metric"])]
            out.append("|---|" + "---:|" * len(ms))
            b = blk.set_index(["metric", "method"])
            for meth in _method_order(blk, ms, "rank"):
                cells = []
                for m in ms:
                    if (m, meth) not in b.index:  # left out of this metric (see the notes)
                        cells.append("n/a")
                        continue
                    r = b.loc[(m, meth)]
                    cells.append(f"{r['mean']:.{digits}f} ± {r['se']:.{digits}f} "
                                 f"({r['rank']:g})")
                out.append(f"| {meth} | " + " | ".join(cells) + " |")
        return "\n".join(out) + "\n"

    def _checks_markdown(self) -> list[str]:
        """The sanity checks' and the metrics' reliability sections (none without them)."""
        out = []
        if not self.sanity.empty:
            bad = list(self.sanity.loc[self.sanity["randomisation"] == "fails", "method"])
            out += ["", "Randomisation (insdel sanity, docs/sanity.md): a method **fails** when "
                    "its attributions barely change once the model's parameters (or the labels "
                    "it was trained on) are randomised, or its ABC does not react; such a "
                    "method's rank says nothing about the model. Failing: "
                    + (", ".join(bad) if bad else "none") + " (from "
                    + ", ".join(sorted(set(", ".join(self.sanity["runs"]).split(", "))))
                    + ")."]
        if not self.reliability.empty:
            out += ["", f"Metric reliability (MetaQuantus; MC below {self.min_reliability:g} is "
                    "marked unreliable in the column headers):", "",
                    "| metric | resilience | reactivity | MC | reliable | run |",
                    "|---|---:|---:|---:|---|---|"]
            for r in self.reliability.itertuples(index=False):
                out.append(f"| {r.metric} | {r.resilience:.3f} | {r.reactivity:.3f} | "
                           f"{r.mc:.3f} | {'yes' if r.reliable else '**no**'} | {r.run} |")
        return out

    def figure(self):
        """Mean-rank dot plot with CI bars, one panel per metric (matplotlib Figure)."""
        import matplotlib.pyplot as plt

        metrics = [m for m in self.labels if m in set(self.overall["metric"])]
        fig, axes = plt.subplots(1, max(1, len(metrics)), figsize=(4.2 * max(1, len(metrics)),
                                 0.45 * max(3, self.overall["method"].nunique()) + 1.2),
                                 squeeze=False, sharey=True)
        order = None
        for ax, m in zip(axes[0], metrics, strict=False):
            d = self.overall[self.overall["metric"] == m]
            if order is None:
                order = list(d.sort_values("mean_rank", ascending=False)["method"])
            d = d.set_index("method").reindex(order)
            y = np.arange(len(order))
            xerr = np.maximum(0.0, [d["mean_rank"] - d["ci_low"], d["ci_high"] - d["mean_rank"]])
            ax.errorbar(d["mean_rank"], y, xerr=xerr,
                        fmt="o", color="C0", ecolor="0.4", capsize=3)
            ax.set_yticks(y, order)
            ax.set_xlabel("mean rank (1 = best)")
            ax.set_title(self._label(m))
            ax.grid(axis="x", alpha=0.3)
        fig.suptitle(f"Leaderboard: mean rank, {100 * self.level:g}% bootstrap CI", fontsize=10)
        fig.tight_layout()
        return fig

    def save(self, out: str | os.PathLike, *, dpi: int = 110) -> list[Path]:
        """Write ``leaderboard.md``, ``leaderboard_blocks.csv``, ``leaderboard_overall.csv``,
        ``leaderboard_runs.csv`` and ``leaderboard.png`` into ``out`` (atomically); returns
        the paths."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        ck.atomic_write_text(out / "leaderboard.md", self.to_markdown())
        paths.append(out / "leaderboard.md")
        tables = [("blocks", self.blocks), ("overall", self.overall), ("runs", self.groups)]
        if not self.sanity.empty:
            tables.append(("sanity", self.sanity))
        if not self.reliability.empty:
            tables.append(("reliability", self.reliability))
        for name, df in tables:
            p = out / f"leaderboard_{name}.csv"
            ck.atomic_write_text(p, df.to_csv(index=False))
            paths.append(p)
        if len(self.overall):
            import matplotlib.pyplot as plt

            fig = self.figure()
            with ck.atomic_write(out / "leaderboard.png", suffix=".png") as tmp:
                fig.savefig(tmp, dpi=dpi)
            plt.close(fig)
            paths.append(out / "leaderboard.png")
        return paths


def _method_order(df: pd.DataFrame, metrics: list, by: str) -> list:
    """Every method of ``df`` once: by ``by`` on the first metric, then those missing there (in
    the order of the next metric that has them)."""
    out: list = []
    for m in metrics:
        for meth in df[df["metric"] == m].sort_values(by, kind="stable")["method"]:
            if meth not in out:
                out.append(meth)
    return out


def _group_runs(runs: list[RunInfo]) -> tuple[pd.DataFrame, dict[str, list[RunInfo]]]:
    fps = list(dict.fromkeys(r.fingerprint for r in runs))
    label = {fp: f"g{i + 1}" for i, fp in enumerate(fps)}
    rows, used = [], {label[fp]: [] for fp in fps}
    seen: dict[tuple, str] = {}
    for r in runs:
        g = label[r.fingerprint]
        key = (r.fingerprint, r.seed)
        note = ""
        if key in seen:
            note = f"same configuration and seed as {seen[key]} (identical pairs)"
        else:
            seen[key] = str(r.path)
            used[g].append(r)
        rows.append({"group": g, "fingerprint": r.fingerprint, "dataset": r.dataset,
                     "run": r.name, "path": str(r.path), "seed": r.seed, "used": not note,
                     "note": note})
    return pd.DataFrame(rows), used


def is_checks_run(path: str | os.PathLike) -> bool:
    """Whether ``path`` is an ``insdel sanity`` run (its manifest has a ``sanity`` entry and no
    policies): read for its checks only."""
    mpath = Path(path) / "manifest.json"
    try:
        manifest = json.loads(mpath.read_text())
    except (OSError, ValueError):
        return False
    return "sanity" in manifest and not manifest.get("policies")


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


def _checks(paths: list[Path], min_reliability: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per method: fails / passes and the failed checks; per (metric, run): MC and reliable."""
    srows: dict[str, dict] = {}
    rrows = []
    for p in paths:
        flags, rel = read_checks(p)
        if flags is not None:
            for r in flags.itertuples(index=False):
                d = srows.setdefault(str(r.method), {"method": str(r.method), "failed": [],
                                                     "runs": []})
                if str(p) not in d["runs"]:
                    d["runs"].append(str(p))
                if str(r.flagged).lower() in ("true", "1"):
                    where = "/".join(str(x) for x in (r.kind, r.order) if str(x) and str(x)
                                     != "nan")
                    d["failed"].append(f"{where}: {r.check}" if where else str(r.check))
        if rel is not None:
            for r in rel.itertuples(index=False):
                mc = float(r.mc)
                rrows.append({"metric": str(r.metric), "resilience": float(r.resilience),
                              "reactivity": float(r.reactivity), "mc": mc,
                              "reliable": bool(np.isfinite(mc) and mc >= min_reliability),
                              "run": str(p)})
    sanity = pd.DataFrame([{"method": d["method"],
                            "randomisation": "fails" if d["failed"] else "passes",
                            "failed": "; ".join(dict.fromkeys(d["failed"])),
                            "runs": ", ".join(d["runs"])} for d in srows.values()])
    return sanity, pd.DataFrame(rrows)


def leaderboard(run_dirs: Sequence[str | os.PathLike], *, n_boot: int = 1000, seed: int = 0,
                level: float = 0.95, min_reliability: float = MIN_RELIABILITY) -> Leaderboard:
    """Aggregate finished runs into a method x metric leaderboard.

    Parameters
    ----------
    run_dirs : sequence of paths
        Run directories (or folders holding run directories one level down).
    n_boot : int, default 1000
        Bootstrap replicates for the rank confidence intervals.
    seed : int, default 0
        Seed of the bootstrap.
    level : float, default 0.95
        Confidence level of the intervals (percentile bootstrap).
    min_reliability : float, default 0.6
        A metric of a ``reliability.csv`` among the folders (``insdel sanity``'s ``[meta]``)
        whose meta-consistency MC is below it is marked unreliable in the tables
        (:data:`MIN_RELIABILITY`); methods of a ``sanity_flags.csv`` that fail a randomisation
        check are marked in a ``randomisation`` column. ``insdel sanity`` run folders are read
        for these only.

    Returns
    -------
    Leaderboard

    Raises
    ------
    FileNotFoundError
        A path without a finished run.
    ValueError
        Bad ``n_boot`` / ``level``, or a run that is not an insertion/deletion evaluation.
    """
    n_boot = check_positive_int("n_boot", n_boot)
    seed = check_positive_int("seed", seed, minimum=0)
    level = check_scalar("level", level, float, min_val=0.0, max_val=1.0,
                         include_boundaries="neither", finite=True)
    min_reliability = check_scalar("min_reliability", min_reliability, float, min_val=0.0,
                                   max_val=1.0, finite=True)
    found = find_runs(run_dirs)
    sanity, reliability = _checks(found, min_reliability)
    evaluations = [p for p in found if not is_checks_run(p)]
    if not evaluations:
        raise ValueError("run_dirs holds only sanity-check runs (insdel sanity); give at least "
                         "one insertion/deletion run to rank (the checks mark its methods and "
                         "metrics).")
    runs = [read_run(p) for p in evaluations]
    groups, used = _group_runs(runs)
    rng_seed = seed
    blocks_rows: list[dict] = []
    directions: dict[str, bool] = {}
    for r in runs:
        for m, up in r.directions.items():
            if directions.setdefault(m, up) != up:
                raise ValueError(f"metric {m!r} is higher-is-better in one run and "
                                 f"lower-is-better in another ({r.path}).")
    labels = {m: METRICS.get(m, m) for m in directions}
    per_metric: dict[str, list[tuple[str, list[str], np.ndarray]]] = {m: [] for m in labels}
    lo_q, hi_q = 100 * (1 - level) / 2, 100 * (1 + level) / 2
    notes: list[str] = []
    for g, rs in used.items():
        pooled = pd.concat([r.abc.assign(run=i) for i, r in enumerate(rs)], ignore_index=True)
        dataset = rs[0].dataset
        for pol in dict.fromkeys(pooled["policy"]):
            for m in labels:
                d = pooled[(pooled["policy"] == pol) & (pooled["metric"] == m)]
                if d.empty:
                    continue
                W = d.pivot_table(index=["run", "pair"], columns="method", values="score",
                                  aggfunc="first", sort=False, dropna=False)
                W = W.dropna(axis=0, how="all")  # a pair no method has a score on
                missing = W.isna().sum(axis=0)
                incomplete = {str(c): int(k) for c, k in missing.items() if k}
                if incomplete:  # the paired bootstrap needs every method on every pair
                    W = W.drop(columns=list(incomplete))
                    notes.append(f"{g}/{pol}, {labels[m]}: "
                                 + ", ".join(f"{c} (no score or NaN on {k} of {W.shape[0]} "
                                             "pairs)"
                                             for c, k in incomplete.items())
                                 + " left out of this block (methods are ranked on the same "
                                 "pairs).")
                if W.shape[1] == 0:
                    continue
                methods = list(W.columns)
                V = W.to_numpy(dtype=np.float64)
                P = V.shape[0]
                # units: (run, cluster); pooled runs never share one
                cluster = d.groupby(["run", "pair"])["cluster"].first().reindex(W.index)
                units = unit_ids(pd.MultiIndex.from_arrays(
                    [W.index.get_level_values("run"), cluster.to_numpy()]).factorize()[0], P)
                mean, se, G = mean_se(V, units)
                sign = 1.0 if directions[m] else -1.0  # ranks: 1 = best by the metric's direction
                rank = rank_means(sign * mean)
                boot = bootstrap_mean_ranks([sign * V], n_boot=n_boot, seed=rng_seed,
                                            clusters=[units])
                rng_seed += 1
                lo, hi = np.percentile(boot, [lo_q, hi_q], axis=0)
                for j, meth in enumerate(methods):
                    blocks_rows.append({"group": g, "fingerprint": rs[0].fingerprint,
                                        "dataset": dataset, "policy": pol, "metric": m,
                                        "method": meth, "mean": mean[j], "se": se[j],
                                        "n_pairs": P, "n_units": G, "n_runs": len(rs),
                                        "rank": rank[j], "rank_low": lo[j], "rank_high": hi[j]})
                per_metric[m].append((f"{g}/{pol}", methods, sign * V, units))
    overall_rows = []
    for m, blks in per_metric.items():
        if not blks:
            continue
        common = [meth for meth in blks[0][1] if all(meth in b[1] for b in blks)]
        dropped = sorted({meth for b in blks for meth in b[1]} - set(common))
        if dropped:
            notes.append(f"{labels[m]}: {', '.join(dropped)} left out of the overall ranks "
                         "(not present in every block).")
        if not common:
            continue
        Vs = [b[2][:, [b[1].index(meth) for meth in common]] for b in blks]
        point = np.mean([rank_means(V.mean(axis=0)) for V in Vs], axis=0)
        boot = bootstrap_mean_ranks(Vs, n_boot=n_boot, seed=seed, clusters=[b[3] for b in blks])
        lo, hi = np.percentile(boot, [lo_q, hi_q], axis=0)
        for j, meth in enumerate(common):
            overall_rows.append({"metric": m, "method": meth, "mean_rank": point[j],
                                 "ci_low": lo[j], "ci_high": hi[j], "n_blocks": len(blks)})
    skipped = groups[~groups["used"]]
    for r in skipped.itertuples():
        notes.append(f"run {r.path} skipped: {r.note}.")
    return Leaderboard(blocks=pd.DataFrame(blocks_rows), overall=pd.DataFrame(overall_rows),
                       groups=groups, notes=notes, n_boot=n_boot, seed=seed, level=level,
                       labels=labels, directions=directions, sanity=sanity,
                       reliability=reliability, min_reliability=min_reliability)
