"""Robustness of a method ranking to the removal: the same pairs and attributions evaluated under
several removals (:mod:`insdel.removal`), and how alike the removals rank the methods.

:func:`robustness_table` gives each method's mean ABC (± standard error, from
:meth:`insdel.Evaluation.summary`) and rank under each removal; :func:`kendall_between` the
Kendall τ-b between the method rankings of every two removals, per mode;
:func:`robustness_markdown` renders both. ``insdel run`` with several ``[removal] kinds`` writes
them as ``removal_robustness.csv`` / ``.md`` and ``figures/removal_robustness.png``
(:func:`insdel.plotting.removal_robustness`); they are plain functions of evaluations, usable
without the runner::

    evs = {name: insdel.evaluate(f, X, R, A, removal=name_or_removal) for name in ...}
    table = robustness_table(evs)
    tau = kendall_between(table)

A larger ABC is better in both modes (conventions: *ABC*), so rank 1 is the largest mean ABC.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations

import numpy as np
import pandas as pd

__all__ = ["TABLE_COLUMNS", "KENDALL_COLUMNS", "robustness_table", "kendall_between",
           "kendall_intervals", "rank_verdicts", "robustness_markdown"]

#: Columns of :func:`robustness_table`.
TABLE_COLUMNS = ["mode", "method", "removal", "mean", "std_error", "n", "n_units", "rank"]

#: Columns of :func:`kendall_between`.
KENDALL_COLUMNS = ["mode", "removal_a", "removal_b", "tau", "p_value", "n_methods"]

_MODES = ("insertion", "deletion")


def _checked(evaluations, methods, who: str) -> tuple[list, object, list]:
    """The removals' names, the first evaluation and the methods (default: the first's); the
    error names ``who``."""
    if not isinstance(evaluations, Mapping) or not evaluations:
        raise ValueError(f"{who}: evaluations must be a non-empty mapping removal name -> "
                         "Evaluation.")
    names = list(evaluations)
    first = evaluations[names[0]]
    return names, first, list(first.methods if methods is None else methods)


def robustness_table(evaluations: Mapping[str, object], *, methods=None) -> pd.DataFrame:
    """Each method's mean ABC, its standard error and its rank under each removal.

    Parameters
    ----------
    evaluations : mapping of str to insdel.Evaluation
        Removal name -> the evaluation of the same pairs and attributions under that removal, in
        the order the columns are wanted (the first is the primary one).
    methods : sequence of str, optional
        Methods to compare (default: the first evaluation's, in its order). Each must be in
        every evaluation.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`TABLE_COLUMNS`: ``mode``, ``method``, ``removal``, ``mean`` and
        ``std_error`` (over the independent units, :meth:`insdel.Evaluation.summary`), ``n``
        (pairs), ``n_units`` and ``rank`` (1 = the largest mean ABC among the methods under that
        removal and mode; ties share their average rank). One row per mode, method and removal,
        in that order of nesting; the modes are those every evaluation has.

    Raises
    ------
    ValueError
        Fewer than one evaluation, or a method missing from one of them.
    """
    from scipy.stats import rankdata

    names, first, methods = _checked(evaluations, methods, "robustness_table")
    for name, ev in evaluations.items():
        missing = [m for m in methods if m not in ev.methods]
        if missing:
            raise ValueError(f"robustness_table: removal {name!r} has no evaluation of "
                             f"{missing} (its methods: {list(ev.methods)}).")
    modes = [m for m in _MODES if all(m in ev.modes for ev in evaluations.values())]
    if not modes:
        raise ValueError("robustness_table: the evaluations share no mode.")
    summaries = {}
    for name, ev in evaluations.items():
        s = ev.summary(differences=None)
        summaries[name] = s[s["kind"] == "method"].set_index(["mode", "method"])
    rows = []
    for mode in modes:
        ranks = {name: dict(zip(methods, rankdata(
            -s.loc[mode].loc[methods, "mean"].to_numpy(dtype=float), method="average",
            nan_policy="omit"), strict=True)) for name, s in summaries.items()}
        for m in methods:
            for name, s in summaries.items():
                row = s.loc[(mode, m)]
                rows.append({"mode": mode, "method": m, "removal": name,
                             "mean": float(row["mean"]), "std_error": float(row["std_error"]),
                             "n": int(row["n"]), "n_units": int(row["n_units"]),
                             "rank": float(ranks[name][m])})
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def kendall_between(table, *, methods=None) -> pd.DataFrame:
    """Kendall's τ-b between the method rankings of every two removals, per mode.

    Parameters
    ----------
    table : pandas.DataFrame or mapping of str to insdel.Evaluation
        A :func:`robustness_table` (with a ``policy`` column: one set of rows per policy), or the
        evaluations it is made from.
    methods : sequence of str, optional
        With evaluations: passed to :func:`robustness_table`.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`KENDALL_COLUMNS` (and ``policy`` first when the table has one): for each
        mode and each two removals a, b (in the table's order, a before b), ``tau``
        (:func:`scipy.stats.kendalltau`, variant ``"b"``, of the methods' mean ABCs: the same as
        of their ranks; 1 = the same ranking, -1 = reversed; NaN when a ranking is constant),
        its two-sided ``p_value`` and the number of methods compared (those with a finite mean
        under both).
    """
    from scipy.stats import kendalltau

    if not isinstance(table, pd.DataFrame):
        table = robustness_table(table, methods=methods)
    has_policy = "policy" in table.columns
    groups = (table.groupby("policy", sort=False) if has_policy
              else [(None, table)])
    rows = []
    for policy, sub in groups:
        removals = list(dict.fromkeys(sub["removal"]))
        for mode in [m for m in _MODES if m in set(sub["mode"])]:
            wide = sub[sub["mode"] == mode].pivot(index="method", columns="removal",
                                                  values="mean")
            wide = wide.loc[list(dict.fromkeys(sub.loc[sub["mode"] == mode, "method"]))]
            for a, b in combinations(removals, 2):
                x, y = wide[a].to_numpy(dtype=float), wide[b].to_numpy(dtype=float)
                ok = np.isfinite(x) & np.isfinite(y)
                if ok.sum() >= 2 and np.ptp(x[ok]) > 0 and np.ptp(y[ok]) > 0:
                    res = kendalltau(x[ok], y[ok])
                    tau, p = float(res.statistic), float(res.pvalue)
                else:
                    tau = p = float("nan")
                row = {"mode": mode, "removal_a": a, "removal_b": b, "tau": tau, "p_value": p,
                       "n_methods": int(ok.sum())}
                rows.append(({"policy": policy} if has_policy else {}) | row)
    cols = (["policy"] if has_policy else []) + KENDALL_COLUMNS
    return pd.DataFrame(rows, columns=cols)


def _tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's τ-b between the rows of ``x`` and ``y`` (B, K), from the signs of every two
    columns' differences (NaN where a row is constant)."""
    i, j = np.triu_indices(x.shape[1], k=1)
    sx, sy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    den = np.sqrt((sx ** 2).sum(axis=1) * (sy ** 2).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (sx * sy).sum(axis=1) / np.where(den > 0, den, 1.0), np.nan)


def kendall_intervals(evaluations: Mapping[str, object], *, methods=None, n_boot: int = 1000,
                      level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Bootstrap intervals of the Kendall τ-b between every two removals' method rankings.

    The evaluations hold the same pairs (one per removal): each replicate resamples the
    independent units (the first evaluation's ``clusters``; a pair and its mirror are one unit)
    with replacement, the same units for every removal, method and mode, and recomputes every
    method's mean ABC under each removal and their τ-b. A τ whose interval reaches far below 1
    says the removals' rankings may differ; one whose interval holds 1 says they need not.

    Returns
    -------
    pandas.DataFrame
        ``mode, removal_a, removal_b, tau_low, tau_high, n_units``: the percentile interval at
        ``level`` (NaN replicates, constant rankings, left out).
    """
    from ._stats import unit_ids
    from ._validation import check_positive_int, check_scalar, check_seed

    n_boot = check_positive_int(n_boot, "n_boot")
    level = check_scalar(level, "level", float, min_val=0.0, max_val=1.0,
                         include_boundaries="neither", finite=True)
    rng = np.random.default_rng(check_seed(seed))
    names, first, methods = _checked(evaluations, methods, "kendall_intervals")
    B = first.n_pairs
    for name, ev in evaluations.items():
        if ev.n_pairs != B:
            raise ValueError(f"kendall_intervals: removal {name!r} holds {ev.n_pairs} pairs, "
                             f"{names[0]!r} {B}: the removals must score the same pairs.")
    u = unit_ids(first.clusters, B)
    G = int(u.max()) + 1
    size = np.bincount(u, minlength=G).astype(np.float64)
    counts = rng.multinomial(G, np.full(G, 1.0 / G), size=n_boot).astype(np.float64)
    modes = [m for m in _MODES if all(m in ev.modes for ev in evaluations.values())]
    lo_q, hi_q = 50 * (1 - level), 50 * (1 + level)
    rows = []
    for mode in modes:
        means = {}
        for name, ev in evaluations.items():
            V = np.stack([ev.abc_array(m, mode) for m in methods], axis=1)
            sums = np.zeros((G, len(methods)))
            np.add.at(sums, u, V)
            means[name] = (counts @ sums) / (counts @ size)[:, None]
        for a, b in combinations(names, 2):
            t = _tau_b(means[a], means[b])
            t = t[np.isfinite(t)]
            low, high = (np.percentile(t, [lo_q, hi_q]) if t.size else (np.nan, np.nan))
            rows.append({"mode": mode, "removal_a": a, "removal_b": b, "tau_low": float(low),
                         "tau_high": float(high), "n_units": G})
    return pd.DataFrame(rows, columns=["mode", "removal_a", "removal_b", "tau_low", "tau_high",
                                       "n_units"])


def rank_verdicts(evaluations: Mapping[str, object], *, methods=None, level: float = 0.95,
                  n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Each removal's ranking with its uncertainty: per mode and removal, the simultaneous rank
    intervals of the methods (:func:`insdel.verdicts.rank_intervals` over the independent units,
    max-T with ``n_resamples`` sign flips) as one sentence each.

    Returns
    -------
    pandas.DataFrame
        ``mode, removal, verdict`` (the first place, then each method's places) and ``ranks``
        (``method rank_low–rank_high`` joined by ``; ``).
    """
    from .verdicts import compare, rank_intervals

    names, _, methods = _checked(evaluations, methods, "rank_verdicts")
    rows = []
    for mode in [m for m in _MODES if all(m in ev.modes for ev in evaluations.values())]:
        for name in names:
            ev = evaluations[name]
            V = np.stack([ev.abc_array(m, mode) for m in methods], axis=1)
            try:
                r = rank_intervals(compare(V, methods, clusters=ev.clusters, level=level,
                                           n_resamples=n_resamples, seed=seed))
            except ValueError as exc:  # one unit, or one method: nothing to rank
                rows.append({"mode": mode, "removal": name, "verdict": f"no verdict: {exc}",
                             "ranks": ""})
                continue
            t = r.table()
            rows.append({"mode": mode, "removal": name, "verdict": "; ".join(r.verdicts()),
                         "ranks": "; ".join(f"{m} {lo}–{hi}" for m, lo, hi in zip(
                             t["method"], t["rank_low"], t["rank_high"], strict=True))})
    return pd.DataFrame(rows, columns=["mode", "removal", "verdict", "ranks"])


def robustness_markdown(table: pd.DataFrame, kendall: pd.DataFrame | None = None,
                        digits: int = 3, *, verdicts: pd.DataFrame | None = None) -> str:
    """The robustness report as Markdown: per policy (when the table has a ``policy`` column) and
    mode, one row per method with its mean ABC ± standard error and rank under each removal, then
    the Kendall τ-b between every two removals' rankings.

    Parameters
    ----------
    table : pandas.DataFrame
        A :func:`robustness_table` (optionally with a ``policy`` column).
    kendall : pandas.DataFrame, optional
        Its :func:`kendall_between` (computed when None).
    digits : int
        Decimals of the means and standard errors.
    verdicts : pandas.DataFrame, optional
        :func:`rank_verdicts` (with a ``policy`` column when the table has one): each removal's
        ranking with its simultaneous rank intervals, listed under the policy's tables.
    """
    if kendall is None:
        kendall = kendall_between(table)
    has_policy = "policy" in table.columns
    policies = list(dict.fromkeys(table["policy"])) if has_policy else [None]
    lines = ["### Robustness to the removal: mean ABC ± s.e. (rank) under each removal\n"]
    for policy in policies:
        sub = table[table["policy"] == policy] if has_policy else table
        ksub = kendall[kendall["policy"] == policy] if has_policy else kendall
        removals = list(dict.fromkeys(sub["removal"]))
        n = int(sub["n"].iloc[0]) if len(sub) else 0
        head = f"Policy {policy}, {n} pairs" if has_policy else f"{n} pairs"
        lines.append(f"#### {head}; primary removal: {removals[0]}\n")
        lines.append("| Test mode | Method | " + " | ".join(removals) + " |")
        lines.append("|---|---|" + "---:|" * len(removals))
        for mode in [m for m in _MODES if m in set(sub["mode"])]:
            ms = sub[sub["mode"] == mode]
            label = mode.capitalize()
            for method in dict.fromkeys(ms["method"]):
                cells = []
                for r in removals:
                    row = ms[(ms["method"] == method) & (ms["removal"] == r)].iloc[0]
                    se = "" if not np.isfinite(row["std_error"]) else \
                        f" ± {row['std_error']:.{digits}f}"
                    cells.append(f"{row['mean']:.{digits}f}{se} ({_rank(row['rank'])})")
                lines.append(f"| {label} | {method} | " + " | ".join(cells) + " |")
                label = ""
        if len(ksub):
            boot = "tau_low" in ksub.columns
            lines.append("\nKendall τ-b between the removals' method rankings (1: the same "
                         "ranking, -1: reversed)"
                         + ("; the interval resamples the independent units (the same units "
                            "under both removals), so a τ below 1 whose interval reaches 1 "
                            "says the rankings cannot be told apart" if boot else "") + ":\n")
            lines.append("| Test mode | Removals | τ | p-value | Methods |"
                         + (" τ interval (bootstrap) |" if boot else ""))
            lines.append("|---|---|---:|---:|---:|" + ("---:|" if boot else ""))
            for r in ksub.itertuples(index=False):
                tau = "" if not np.isfinite(r.tau) else f"{r.tau:.3f}"
                p = "" if not np.isfinite(r.p_value) else f"{r.p_value:.3g}"
                ci = ""
                if boot:
                    ci = (f" [{r.tau_low:.2f}, {r.tau_high:.2f}] |"
                          if np.isfinite(r.tau_low) else " |")
                lines.append(f"| {r.mode} | {r.removal_a} / {r.removal_b} | {tau} | {p} | "
                             f"{r.n_methods} |{ci}")
        if verdicts is not None and len(verdicts):
            vsub = verdicts[verdicts["policy"] == policy] if has_policy else verdicts
            lines.append("\nEach removal's ranking with its uncertainty (simultaneous 95 % rank "
                         "intervals over the independent units, docs/verdicts.md):\n")
            lines += [f"- {r.mode}, {r.removal}: {r.verdict}." for r in
                      vsub.itertuples(index=False)]
        lines.append("")
    return "\n".join(lines)


def _rank(r: float) -> str:
    """``"#2"``, or ``"#2.5"`` for a tie."""
    if not np.isfinite(r):
        return "–"
    return f"#{int(r)}" if float(r).is_integer() else f"#{r:g}"
