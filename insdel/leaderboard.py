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
shows how each method ranks under every removal. A ROAD run (``insdel road``) joins with its
SRG, MoRF and LeRF areas (``road_summary.csv``) as the metrics ``road_srg_<loss>``,
``road_morf_<loss>`` and ``road_lerf_<loss>``; it holds one score per method, so a ROAD run is
one unit. ROAR, image and sanity-check runs, and folders that cannot be read, are skipped with a
note each (:mod:`insdel.leaderboard_runs`). Runs with ``model.outputs = H`` are ranked per
output: one block per (group, policy, output), the outputs ``0`` .. ``H-1`` and ``weighted`` (the
run's own weighted aggregate), overall ranks per output, never averaged across outputs; such
runs beside runs of other outputs or output weights are refused (:attr:`Leaderboard.outputs`).

Runs are grouped by a **configuration fingerprint**: the hash of everything in the configuration
that changes the numbers (data recipe and options, model, targets, policies, methods and their
options, evaluation settings, and the fingerprints of user data or model files), but not the seed,
the name, the output folder, figures, compute device or chunk sizes. Runs of one group are
replicates (other seeds): their pairs are pooled. Runs with different fingerprints are never
pooled; each (group, policy) is a **block** with its own table, and the overall table only
averages *ranks* across blocks, over the methods every block has. A run whose fingerprint and
seed repeat an earlier one (the same pairs) is listed and skipped, not counted twice; so is a
run's metric whose per-pair results are byte-identical to an earlier run's
(:func:`~insdel.leaderboard_runs.content_key`: e.g. the same configuration run with and without
``--removal baseline``, whose fingerprints differ), with a note naming both runs.

Ranks: 1 is best (largest mean by the metric's direction), ties get the average rank. A seeded
bootstrap resamples the independent units of every block with replacement (the same resampled
units for every method, so the comparison stays paired) and recomputes the block means and
ranks; the overall mean rank averages them over the blocks. Point and interval come from these
replicates: the point is their median, the interval their percentiles (so the point always lies
inside it), for a block's rank and for the overall mean rank alike. Methods within the noise of
each other are shown tied by their **places** (:func:`rank_places`): "1–3" when the method is
not clearly ahead of, or behind, the others of those places. A unit is a pair, or the pairs of
one ``cluster`` when the run's ``abc.parquet`` has that column (a pair and its mirror: a
``one_to_one`` couple's two directions); standard errors are over the same units, means over the
pairs.

Sanity checks (``insdel sanity``, :mod:`insdel.sanity`): a folder among the runs that holds
``sanity_flags.csv`` marks the methods failing a randomisation check (a ``randomisation`` column
in the overall table), and one that holds ``reliability.csv`` marks the metrics whose
meta-consistency MC (MetaQuantus: the mean of resilience's and reactivity's four criteria, in
[0, 1]) is below ``min_reliability`` (default :data:`MIN_RELIABILITY`). An ``insdel sanity`` run
folder is read for these only; an evaluation run folder may hold them too. Without them the
leaderboard has no reliability columns.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import _checkpoint as ck
from ._stats import mean_se, unit_ids
from ._validation import TuningLeakError, check_positive_int, check_scalar
from .leaderboard_runs import (
    KINDS,
    METRICS,
    ROAD_SCORES,
    RunInfo,
    config_fingerprint,
    content_key,
    find_runs,
    find_runs_noted,
    is_checks_run,
    read_checks,
    read_manifest,
    read_run,
    run_kind,
)
from .verdicts import compare, verdict_lines

__all__ = ["METRICS", "ROAD_SCORES", "RunInfo", "Leaderboard", "find_runs", "read_run",
           "run_kind", "config_fingerprint", "leaderboard", "rank_means", "bootstrap_mean_ranks",
           "rank_places", "read_checks", "is_checks_run", "MIN_RELIABILITY",
           "RELIABILITY_METRICS", "BLOCK_COLUMNS", "OVERALL_COLUMNS", "output_name"]

#: A metric whose meta-consistency MC (``reliability.csv``) is below this is marked unreliable:
#: a constant metric sits at MC = 0.5 (resilience 1, reactivity 0) and one that moves at random
#: below it; a metric that is both resilient and reactive well above.
MIN_RELIABILITY = 0.6
#: The leaderboard's metrics read under another name in ``reliability.csv``
#: (:mod:`insdel.metrics`); ``total`` is unreliable when either of its two parts is.
RELIABILITY_METRICS = {"insertion": ("insertion_abc",), "deletion": ("deletion_abc",),
                       "total": ("insertion_abc", "deletion_abc")}


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
    n_boot = check_positive_int(n_boot, "n_boot")
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


def rank_places(reps: np.ndarray, *, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The places each method may take when methods within the noise are tied.

    Parameters
    ----------
    reps : ndarray (B, M)
        Bootstrap replicates of the methods' (mean) ranks, 1 = best
        (:func:`bootstrap_mean_ranks`).
    level : float, default 0.95
        Method i is **ahead** of method j when the upper ``(1 + level) / 2`` percentile of the
        replicates of rank_i - rank_j is below 0 (paired: the same replicates); otherwise they
        are tied. Pairwise, not adjusted for the number of pairs.

    Returns
    -------
    low, high : ndarray (M,) of int
        ``low`` = 1 + the number of methods ahead of the method, ``high`` = M - the number of
        methods it is ahead of: "1-3" for three methods within the noise of each other, one
        place for a method clearly apart.
    """
    reps = np.asarray(reps, dtype=np.float64)
    M = reps.shape[1]
    diff = reps[:, :, None] - reps[:, None, :]  # (B, i, j): rank_i - rank_j
    ahead = np.percentile(diff, 100 * (1 + level) / 2, axis=0) < 0  # ahead[i, j]: i before j
    np.fill_diagonal(ahead, False)
    return 1 + ahead.sum(axis=0), M - ahead.sum(axis=1)


def _rank_summary(reps: np.ndarray, level: float, units: int) -> dict[str, np.ndarray]:
    """Point rank, interval and places of one set of replicates (B, M). The point is the median
    of the replicates, so it lies inside the percentile interval by construction; with a single
    unit (nothing to resample) the interval and the places are NaN."""
    lo, mid, hi = np.percentile(reps, [100 * (1 - level) / 2, 50, 100 * (1 + level) / 2], axis=0)
    if units < 2:
        nan = np.full(reps.shape[1], np.nan)
        return {"point": mid, "low": nan, "high": nan, "place_low": nan, "place_high": nan}
    pl, ph = rank_places(reps, level=level)
    return {"point": mid, "low": lo, "high": hi, "place_low": pl, "place_high": ph}


def _places(low, high) -> str:
    """``1`` or ``1-3`` (tied), ``n/a`` without places."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return "n/a"
    return f"{int(low)}" if low == high else f"{int(low)}–{int(high)}"


@dataclass
class Leaderboard:
    """Result of :func:`leaderboard`.

    Attributes
    ----------
    blocks : pandas.DataFrame
        Per block (group, policy) and metric: ``method, mean, se, n_pairs, n_units, n_runs,
        unit, rank, rank_low, rank_high, place_low, place_high`` (:data:`BLOCK_COLUMNS`:
        standard error over the independent units; the rank is the median of its bootstrap
        replicates, ``rank_low / rank_high`` their percentile interval, the places say which
        methods are tied; ``unit`` is ``"pair"``, or ``"run"`` for ROAD; NaN interval and places
        with a single unit).
    overall : pandas.DataFrame
        Per metric: ``method, mean_rank, ci_low, ci_high, place_low, place_high, n_blocks``
        (:data:`OVERALL_COLUMNS`; the point is the median of the bootstrap replicates).
        Over multi-output runs both have a column ``output`` (:attr:`outputs`).
    groups : pandas.DataFrame
        One row per run: ``group, fingerprint, dataset, run, path, seed, used, note``.
    notes : list of str
        Folders skipped, duplicates merged, methods left out of the overall ranks, and why.
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
    #: Every pairwise comparison of every block (:func:`insdel.verdicts.compare`, by the
    #: metric's direction): ``group, policy, metric`` and the comparison's ``table()`` columns.
    comparisons: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: Per (group, policy, metric): the block's verdict lines (:func:`insdel.verdicts.
    #: verdict_lines`: significant orderings, Holm; simultaneous rank intervals; equivalence).
    verdicts: dict = field(default_factory=dict)
    #: Per (group, policy, metric): the block's :class:`insdel.verdicts.Comparisons`
    #: (``insdel.plotting.critical_difference(board.compared[key])`` draws it).
    compared: dict = field(default_factory=dict, repr=False)
    #: The outputs of multi-output runs (``model.outputs = H``): ``"0"`` .. ``"H-1"`` and
    #: ``"weighted"``; then ``blocks``, ``overall`` and ``comparisons`` have a column ``output``,
    #: every block is one output's, the overall ranks are per output, and the keys of
    #: ``verdicts`` / ``compared`` are ``(group, policy, output, metric)``. Empty for runs of one
    #: output.
    outputs: list = field(default_factory=list)
    #: The weights of the ``weighted`` output (the runs' ``model.output_weights``, sum 1).
    output_weights: list | None = None

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
               "fingerprints are never pooled; results byte-identical to an earlier run's are "
               "counted once (the notes name them).", "",
               "| group | fingerprint | data set | run | seed | used | path |",
               "|---|---|---|---|---:|---|---|"]
        for r in self.groups.itertuples():
            out.append(f"| {r.group} | `{r.fingerprint}` | {r.dataset} | {r.run} | {r.seed} | "
                       f"{'yes' if r.used else 'no: ' + r.note} | {r.path} |")
        pct = f"{100 * self.level:g}%"
        counts = sorted(set(self.overall["n_blocks"].astype(int)))
        nblk = (f"{counts[0]} block(s)" if len(counts) == 1 else
                f"the blocks that hold each metric ({counts[0]} to {counts[-1]})" if counts
                else "0 blocks")
        names = ", ".join("/".join([*k[:2], *(output_name(o) for o in k[2:])]) for k in
                          self.blocks[["group", "policy"] + (["output"] if self.outputs else [])]
                          .drop_duplicates().itertuples(index=False))
        out += ["", f"### Overall: mean rank over {nblk} (data set x policy; 1 = best), "
                f"{pct} bootstrap CI over independent units ({self.n_boot} replicates, seed "
                f"{self.seed})", "",
                f"Blocks: {names}. Only ranks are averaged across blocks; scores are never "
                "pooled across configuration groups. A unit is a pair, or a pair and its mirror "
                "(the same two points the other way round, e.g. a one_to_one couple): standard "
                "errors and the bootstrap are over units, means over pairs.", ""]
        checked = not self.sanity.empty
        if len(self.overall):
            out += ["Each cell: the mean rank (the median of its bootstrap replicates, so it lies "
                    f"inside its {pct} interval) [interval] (places: the ranks the method may "
                    "take; a range such as 1–3 means it is tied, within the noise, with the "
                    "methods whose places overlap; a method is ahead of another when its rank "
                    f"is lower in the {pct} interval of their paired difference)."]
        if self.outputs:
            out += ["", self.outputs_text()]
        for o in self.outputs or [None]:
            ov = self.overall if o is None else self.overall[self.overall["output"] == o]
            metrics = [m for m in self.labels if m in set(ov["metric"])]
            if not metrics:
                continue
            if o is not None:
                out += ["", f"#### {output_name(o)}"]
            out += ["", "| method | " + " | ".join(self._label(m) for m in metrics)
                    + (" | randomisation" if checked else "") + " |",
                    "|---|" + "---:|" * len(metrics) + ("---|" if checked else "")]
            idx = ov.set_index(["metric", "method"])
            for meth in _method_order(ov, metrics, "mean_rank"):
                cells = []
                for m in metrics:
                    if (m, meth) in idx.index:
                        r = idx.loc[(m, meth)]
                        ci = (f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
                              if np.isfinite(r["ci_low"]) else "[no interval]")
                        cells.append(f"{r['mean_rank']:.2f} {ci} "
                                     f"({_places(r['place_low'], r['place_high'])})")
                    else:
                        cells.append("n/a")
                if checked:
                    cells.append(self._randomisation(meth))
                out.append(f"| {meth} | " + " | ".join(cells) + " |")
        out += self._checks_markdown()
        for note in self.notes:
            out.append(f"\n- {note}")
        keys = ["group", "policy"] + (["output"] if self.outputs else [])
        for key, blk in self.blocks.groupby(keys, sort=False):
            out += self._block_markdown(*key, blk=blk, digits=digits)
        return "\n".join(out) + "\n"

    def outputs_text(self) -> str:
        """The sentence saying how multi-output runs are ranked and the weights of their
        ``weighted`` output (empty for runs of one output)."""
        if not self.outputs:
            return ""
        w = [round(float(x), 4) for x in self.output_weights]
        return (f"Multi-output runs ({len(self.outputs) - 1} outputs): each output is ranked on "
                "its own blocks, and `weighted` on each pair's weighted score sum_h w_h s_h "
                f"with w = {w} (the runs' model.output_weights); ranks are never averaged "
                "across outputs.")

    def _block_markdown(self, g: str, pol: str, o: str | None = None, *, blk: pd.DataFrame,
                        digits: int) -> list[str]:
        """One block's table: mean ± s.e. (rank, and the places when tied with others); ``o``:
        the output of a multi-output run's block."""
        ds = blk["dataset"].iloc[0]
        runs = ", ".join(self.groups.loc[(self.groups["group"] == g) & self.groups["used"],
                                         "run"])
        npairs = int(blk["n_pairs"].max())
        nunits = int(blk["n_units"].max())
        if (blk["unit"] == "run").all():
            count = (f"{nunits} run(s), one unit each: ROAD's scores are per method, not per "
                     "row")
        else:
            count = f"{npairs} pairs" + (f", {nunits} units" if nunits < npairs else "")
        ms = [m for m in self.labels if m in set(blk["metric"])]
        where = f"{ds} / {pol}" + ("" if o is None else f" / {output_name(o)}")
        out = ["", f"### {where} (group {g}: {runs}; {count})", "",
               "| method | " + " | ".join(f"{self._label(m)} mean ± s.e. (rank)" for m in ms)
               + " |", "|---|" + "---:|" * len(ms)]
        b = blk.set_index(["metric", "method"])
        for meth in _method_order(blk, ms, "rank"):
            cells = []
            for m in ms:
                if (m, meth) not in b.index:  # left out of this metric (see the notes)
                    cells.append("n/a")
                    continue
                r = b.loc[(m, meth)]
                se = f"{r['se']:.{digits}f}" if np.isfinite(r["se"]) else "n/a"
                tied = (f", tied: places {_places(r['place_low'], r['place_high'])}"
                        if np.isfinite(r["place_low"]) and r["place_low"] < r["place_high"]
                        else "")
                cells.append(f"{r['mean']:.{digits}f} ± {se} ({r['rank']:g}{tied})")
            out.append(f"| {meth} | " + " | ".join(cells) + " |")
        key = (g, pol) if o is None else (g, pol, o)
        said = [self.verdicts[(*key, m)] for m in ms if (*key, m) in self.verdicts]
        if said:
            out += ["", "Verdicts (paired over the block's independent units, by each metric's "
                    "direction; docs/verdicts.md):", "", *said]
        return out

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

    def _of_output(self, o: str | None) -> pd.Series:
        """The rows of :attr:`overall` of output ``o`` (None: every row, runs of one output)."""
        if o is None:
            return pd.Series(True, index=self.overall.index)
        return self.overall["output"] == o

    def figure(self, *, ncols: int = 3):
        """Mean-rank dot plot with CI bars, one panel per metric (matplotlib Figure).

        Each panel lists every method ranked under its metric, best at the top; the panels wrap
        into a grid of at most ``ncols`` columns. Over multi-output runs: one panel per output
        and metric, titled with the output (``output 0: insertion ABC``, ``weighted: ...``)."""
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator

        ncols = check_positive_int(ncols, "ncols")
        # a panel per metric, and per output of multi-output runs (their ranks are per output)
        panels = [(o, m) for o in self.outputs or [None] for m in self.labels
                  if ((self.overall["metric"] == m) & self._of_output(o)).any()]
        ncols = max(1, min(ncols, len(panels)))
        nrows = max(1, -(-len(panels) // ncols))
        per = [self.overall[(self.overall["metric"] == m) & self._of_output(o)].sort_values(
            "mean_rank", ascending=False, kind="stable") for o, m in panels]
        longest = max([len(str(x)) for x in self.overall.get("method", [])] or [1])
        most = max([len(d) for d in per] or [3])
        width = 3.2 + 0.07 * longest  # the panel and its method names
        fig, axes = plt.subplots(nrows, ncols, squeeze=False,
                                 figsize=(width * ncols, nrows * (0.3 * max(3, most) + 1.5)))
        for ax in axes.flat[len(panels):]:
            ax.set_visible(False)
        for ax, (o, m), d in zip(axes.flat, panels, per, strict=False):
            y = np.arange(len(d))
            point = d["mean_rank"].to_numpy(float)
            lo, hi = d["ci_low"].to_numpy(float), d["ci_high"].to_numpy(float)
            xerr = np.nan_to_num(np.maximum(0.0, [point - lo, hi - point]))
            ax.errorbar(point, y, xerr=xerr, fmt="o", color="C0", ecolor="0.4", capsize=3)
            ax.set_yticks(y, list(d["method"]))
            ax.set_ylim(-0.6, len(d) - 0.4)
            ax.set_xlim(0.5, max(2, len(d)) + 0.5)  # the ranks 1 .. M of this metric
            ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
            ax.set_xlabel("mean rank (1 = best)")
            title = self._label(m) if o is None else f"{output_name(o)}: {self._label(m)}"
            ax.set_title(textwrap.fill(title, 36), fontsize=9)
            ax.grid(axis="x", alpha=0.3)
        fig.suptitle(f"Leaderboard: mean rank, {100 * self.level:g}% bootstrap CI", fontsize=10)
        fig.tight_layout()
        return fig

    def save(self, out: str | os.PathLike, *, dpi: int = 110) -> list[Path]:
        """Write ``leaderboard.md``, ``leaderboard_blocks.csv``, ``leaderboard_overall.csv``,
        ``leaderboard_runs.csv``, ``leaderboard_comparisons.csv`` (every block's pairwise
        comparisons) and ``leaderboard.png`` into ``out`` (atomically); returns the paths."""
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
        if not self.comparisons.empty:
            tables.append(("comparisons", self.comparisons))
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


def _checks(paths: list[Path], min_reliability: float,
            notes: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per method: fails / passes and the failed checks; per (metric, run): MC and reliable. A
    folder whose check files cannot be read gets a note in ``notes``."""
    srows: dict[str, dict] = {}
    rrows = []
    for p in paths:
        try:
            flags, rel = read_checks(p)
        except (OSError, ValueError, KeyError) as exc:
            notes.append(f"{p}: its sanity_flags.csv / reliability.csv cannot be read "
                         f"({type(exc).__name__}: {exc}); their marks are not shown.")
            continue
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
        Run directories (or folders holding run directories one level down): insertion/deletion
        and ROAD runs are ranked, ``insdel sanity`` runs read for their checks, other folders
        skipped with a note.
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
        Bad ``n_boot`` / ``level``, or no insertion/deletion or ROAD run among ``run_dirs``
        (the other folders are skipped with a note each: ROAR and image runs, folders that
        cannot be read).
    """
    n_boot = check_positive_int(n_boot, "n_boot")
    seed = check_positive_int(seed, "seed", minimum=0)
    level = check_scalar(level, "level", float, min_val=0.0, max_val=1.0,
                         include_boundaries="neither", finite=True)
    min_reliability = check_scalar(min_reliability, "min_reliability", float, min_val=0.0,
                                   max_val=1.0, finite=True)
    found, notes = find_runs_noted(run_dirs)
    sanity, reliability = _checks(found, min_reliability, notes)
    runs, skipped = _readable(found)
    if not runs and not skipped:
        raise ValueError("run_dirs holds only sanity-check runs (insdel sanity); give at least "
                         "one insertion/deletion or ROAD run to rank (the checks mark its methods "
                         "and metrics).")
    if not runs:
        raise ValueError("run_dirs holds no insertion/deletion or ROAD run to rank: "
                         + " ".join(skipped))
    notes += skipped
    outputs, output_weights = _check_outputs(runs)
    groups, used = _group_runs(runs)
    directions: dict[str, bool] = {}
    labels = dict(METRICS)
    for r in runs:
        labels.update(r.labels)
        for m, up in r.directions.items():
            if directions.setdefault(m, up) != up:
                raise ValueError(f"metric {m!r} is higher-is-better in one run and "
                                 f"lower-is-better in another ({r.path}).")
    labels = {m: labels.get(m, m) for m in directions}
    notes += _merge_duplicates([r for r in runs if any(r is u for us in used.values()
                                                       for u in us)], groups, labels)
    blocks_rows, per_metric, comparisons, verdicts, compared = _blocks(
        used, labels, directions, n_boot, seed, level, notes)
    overall_rows = []
    outs = outputs or [None]
    order = list(labels)
    for o, m in sorted(per_metric, key=lambda k: (outs.index(k[0]), order.index(k[1]))):
        blks = per_metric[(o, m)]
        lab = labels[m] if o is None else f"{output_name(o)}, {labels[m]}"
        common = [meth for meth in blks[0][1] if all(meth in b[1] for b in blks)]
        dropped = sorted({meth for b in blks for meth in b[1]} - set(common))
        if dropped:
            notes.append(f"{lab}: {', '.join(dropped)} left out of the overall ranks "
                         "(not present in every block).")
        if not common:
            continue
        Vs = [b[2][:, [b[1].index(meth) for meth in common]] for b in blks]
        boot = bootstrap_mean_ranks(Vs, n_boot=n_boot, seed=seed, clusters=[b[3] for b in blks])
        units = max(int(b[3].max()) + 1 for b in blks)
        single = [b[0] for b in blks if int(b[3].max()) == 0]
        if single and units > 1:
            notes.append(f"{lab}: block(s) {', '.join(single)} have one unit (nothing to "
                         "resample): their ranks enter every bootstrap replicate unchanged.")
        if units < 2:
            notes.append(f"{lab}: every block has one unit (one run of a ROAD "
                         "configuration: road_summary.csv holds one score per method, not one "
                         "per row), so these ranks have no interval and no places; runs of the "
                         "same configuration with other seeds are its units.")
        summ = _rank_summary(boot, level, units)
        for j, meth in enumerate(common):
            overall_rows.append({"output": o, "metric": m, "method": meth, "mean_rank": summ["point"][j],
                                 "ci_low": summ["low"][j], "ci_high": summ["high"][j],
                                 "place_low": summ["place_low"][j],
                                 "place_high": summ["place_high"][j], "n_blocks": len(blks)})
    for r in groups[~groups["used"]].itertuples():
        notes.append(f"run {r.path} skipped: {r.note}.")
    # the output column only on a leaderboard of multi-output runs (the single-output tables
    # are unchanged)
    bcols = BLOCK_COLUMNS if not outputs else [*BLOCK_COLUMNS[:4], "output", *BLOCK_COLUMNS[4:]]
    ocols = OVERALL_COLUMNS if not outputs else ["output", *OVERALL_COLUMNS]
    return Leaderboard(blocks=pd.DataFrame(blocks_rows, columns=bcols),
                       overall=pd.DataFrame(overall_rows, columns=ocols),
                       groups=groups, notes=notes, n_boot=n_boot, seed=seed, level=level,
                       labels=labels, directions=directions, sanity=sanity,
                       reliability=reliability, min_reliability=min_reliability,
                       comparisons=comparisons, verdicts=verdicts, compared=compared,
                       outputs=outputs, output_weights=output_weights)


def output_name(o: str) -> str:
    """``output 0``, ..., or ``weighted`` (the aggregate over a multi-output run's outputs)."""
    return "weighted" if o == "weighted" else f"output {o}"


def _check_outputs(runs: list[RunInfo]) -> tuple[list, list | None]:
    """The outputs every ranked run shares (``[]``: runs of one output) and the weights of their
    aggregate. Runs of one output beside runs with ``model.outputs``, or multi-output runs with
    another H or other weights, are refused naming both folders: an output's ranks are averaged
    over blocks of that output only, so every run must have the same outputs, and ``weighted``
    the same weights."""
    ref = runs[0]
    for r in runs[1:]:
        if r.outputs == ref.outputs and r.output_weights == ref.output_weights:
            continue
        def what(x: RunInfo) -> str:
            if not x.outputs:
                return f"{x.path} has one output (no model.outputs)"
            return (f"{x.path} has model.outputs = {len(x.outputs) - 1}, weighted with "
                    f"{np.round(x.output_weights, 6).tolist()}")
        raise ValueError(f"run {r.path}: the runs of one leaderboard must have the same outputs "
                         f"and output weights (each output is ranked on its own, over the "
                         f"blocks of that output); {what(ref)}, {what(r)}. Rank them in separate "
                         "leaderboards.")
    return list(ref.outputs), ref.output_weights


def _readable(found: list[Path]) -> tuple[list[RunInfo], list[str]]:
    """The runs a leaderboard ranks (insertion/deletion and ROAD runs), and a note for each other
    folder: sanity-check runs (read for their checks), ROAR and image runs, and folders that
    cannot be read (the reason named)."""
    runs, notes = [], []
    for p in found:
        try:
            kind = run_kind(read_manifest(p))
            if kind == "sanity":
                continue  # read by _checks
            if kind not in ("evaluation", "road", "tune"):
                notes.append(f"{p} skipped: {KINDS[kind]}, not ranked (leaderboards rank "
                             "insertion/deletion and ROAD runs).")
                continue
            runs.append(read_run(p))
        except TuningLeakError:  # a ranking on tuning pairs is refused, never skipped quietly
            raise
        except (OSError, ValueError, KeyError, TypeError) as exc:
            notes.append(f"{p} skipped: cannot be read ({type(exc).__name__}: {exc}).")
    return runs, notes


def _merge_duplicates(runs: list[RunInfo], groups: pd.DataFrame, labels: dict) -> list[str]:
    """Count identical numbers once: a (run, policy, metric) whose per-pair results
    (:func:`~insdel.leaderboard_runs.content_key`) repeat an earlier run's is dropped from its run
    (e.g. the same configuration run with and without ``--removal baseline``, whose fingerprints
    differ). Marks a run left with nothing as not used in ``groups``; returns the notes."""
    seen: dict[tuple, tuple[str, str]] = {}
    notes = []
    for r in runs:
        drop = np.zeros(len(r.abc), dtype=bool)
        dup: dict[tuple[str, str, str], list[str]] = {}
        by = ["policy", "metric"] + (["output"] if r.outputs else [])
        for (pol, m, *o), idx in r.abc.groupby(by, sort=False).indices.items():
            key = (str(m), *o, content_key(r.abc.iloc[idx]))
            if key in seen:
                drop[idx] = True
                dup.setdefault((pol, *seen[key]), []).append(
                    labels.get(m, m) + "".join(f" ({output_name(x)})" for x in o))
            else:
                seen[key] = (str(r.path), pol)
        if not dup:
            continue
        r.abc = r.abc[~drop].reset_index(drop=True)
        firsts = sorted({first for _, first, _ in dup})
        for (pol, first, fpol), ms in dup.items():
            notes.append(f"duplicates merged: run {r.path} ({pol}) holds the same numbers as "
                         f"{first} ({fpol}) for {', '.join(ms)}: counted once.")
        row = groups["path"] == str(r.path)
        if r.abc.empty:
            groups.loc[row, "used"] = False
            groups.loc[row, "note"] = (f"its numbers are identical to {', '.join(firsts)}'s "
                                       "(counted once)")
        else:
            groups.loc[row, "note"] = (f"some numbers identical to {', '.join(firsts)}'s "
                                       "(counted once)")
    return notes


#: The columns of :attr:`Leaderboard.blocks` and :attr:`Leaderboard.overall`.
BLOCK_COLUMNS = ["group", "fingerprint", "dataset", "policy", "metric", "method", "mean", "se",
                 "n_pairs", "n_units", "n_runs", "unit", "rank", "rank_low", "rank_high",
                 "place_low", "place_high"]
OVERALL_COLUMNS = ["metric", "method", "mean_rank", "ci_low", "ci_high", "place_low",
                   "place_high", "n_blocks"]


def _blocks(used: dict, labels: dict, directions: dict, n_boot: int, seed: int, level: float,
            notes: list) -> tuple[list[dict], dict, pd.DataFrame, dict]:
    """Per (group, policy, metric), and output of a multi-output run: the pooled runs' means,
    standard errors and ranks (rows of :attr:`Leaderboard.blocks`), per (output, metric) the
    blocks' (name, methods, signed scores, units) for the overall ranks (output None without
    outputs), the blocks' pairwise comparisons and their verdict lines
    (max-T with ``n_boot`` sign flips, seeded like the block's bootstrap)."""
    # each (group, policy, metric) seeds its bootstrap with the next seed; the outputs of a
    # multi-output run share their (group, policy, metric)'s, so output h's block draws what a
    # run of output h alone draws
    seeds: dict[tuple, int] = {}
    rows: list[dict] = []
    comps: list[pd.DataFrame] = []
    verdicts: dict[tuple, str] = {}
    compared: dict[tuple, object] = {}
    per_metric: dict[tuple, list[tuple]] = {}
    for g, rs in used.items():
        rs = [r for r in rs if len(r.abc)]
        if not rs:
            continue
        pooled = pd.concat([r.abc.assign(run=i) for i, r in enumerate(rs)], ignore_index=True)
        # a multi-output run: one block per (policy, output), never pooled across outputs
        outs = list(rs[0].outputs) or [None]
        for pol, o, m in ((pol, o, m) for pol in dict.fromkeys(pooled["policy"])
                          for o in outs for m in labels):
            sel = (pooled["policy"] == pol) & (pooled["metric"] == m)
            if o is not None:
                sel &= pooled["output"] == o
            d = pooled[sel]
            if d.empty:
                continue
            name = f"{g}/{pol}" if o is None else f"{g}/{pol}/{output_name(o)}"
            key = (g, pol, m) if o is None else (g, pol, o, m)
            W = d.pivot_table(index=["run", "pair"], columns="method", values="score",
                              aggfunc="first", sort=False, dropna=False)
            W = W.dropna(axis=0, how="all")  # a pair no method has a score on
            missing = W.isna().sum(axis=0)
            incomplete = {str(c): int(k) for c, k in missing.items() if k}
            if incomplete:  # the paired bootstrap needs every method on every pair
                W = W.drop(columns=list(incomplete))
                notes.append(f"{name}, {labels[m]}: "
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
            rng_seed = seeds.get((g, pol, m), seed + len(seeds))
            boot = bootstrap_mean_ranks([sign * V], n_boot=n_boot, seed=rng_seed,
                                        clusters=[units])
            if G >= 2 and len(methods) >= 2:
                c = compare(sign * V, methods, clusters=units, level=level,
                            n_resamples=n_boot, seed=rng_seed)
                t = c.table()
                t.insert(0, "metric", m)
                if o is not None:
                    t.insert(0, "output", o)
                t.insert(0, "policy", pol)
                t.insert(0, "group", g)
                comps.append(t)
                verdicts[key] = verdict_lines(c, scores=V, clusters=units, title=labels[m])
                compared[key] = c
            seeds.setdefault((g, pol, m), rng_seed)
            summ = _rank_summary(boot, level, G)
            kind = "run" if all(r.kind == "road" for r in rs) else "pair"
            for j, meth in enumerate(methods):
                rows.append({"group": g, "fingerprint": rs[0].fingerprint,
                             "dataset": rs[0].dataset, "policy": pol, "output": o,
                             "metric": m,
                             "method": meth, "mean": mean[j], "se": se[j], "n_pairs": P,
                             "n_units": G, "n_runs": len(rs), "unit": kind,
                             "rank": summ["point"][j], "rank_low": summ["low"][j],
                             "rank_high": summ["high"][j],
                             "place_low": summ["place_low"][j],
                             "place_high": summ["place_high"][j]})
            per_metric.setdefault((o, m), []).append((name, methods, sign * V, units))
    return (rows, per_metric, pd.concat(comps, ignore_index=True) if comps else pd.DataFrame(),
            verdicts, compared)
