"""Do the metrics agree? Kendall's tau between the metrics' rankings of the methods, per pair.

For each pair p and each metric a, the metric ranks the methods by their scores (its direction
applied, so that larger is better for every metric). The agreement of metrics a and b on pair p
is Kendall's tau-b between the two rankings,

    tau_b = sum_{i<j} s_a(i, j) s_b(i, j) / sqrt(sum_{i<j} s_a(i, j)^2 · sum_{i<j} s_b(i, j)^2),

with ``s_a(i, j) = sign(score_a(i) - score_a(j))`` over the pairs of methods i < j (ties count in
neither numerator nor the tied metric's denominator, as in :func:`scipy.stats.kendalltau`'s
default). The table reports its mean over the pairs where it is defined, with a standard error
and a percentile bootstrap interval over the independent units (a pair and its mirror are one
unit: ``clusters``), so a τ is read with its uncertainty: :func:`agreement_verdicts` says in
plain words which metrics agree with ABC, which disagree and which cannot be told from no
agreement (the interval holds 0). Everything is read from the saved per-pair scores (a run's
``metrics.parquet``): no model evaluation.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .._stats import unit_ids
from .._validation import check_positive_int, check_scalar, check_seed

__all__ = ["kendall_tau_matrix", "metric_agreement", "agreement_markdown", "agreement_figure",
           "tau_intervals", "agreement_verdicts"]


def _pair_taus(S: np.ndarray) -> np.ndarray:
    """(P, Q, Q) Kendall tau-b per pair between every two metrics; NaN where one ranking is
    constant."""
    M = S.shape[2]
    i, j = np.triu_indices(M, 1)
    sg = np.sign(S[:, :, i] - S[:, :, j])                   # (P, Q, M(M-1)/2)
    sg[np.isnan(sg)] = 0.0
    num = np.einsum("pak,pbk->pab", sg, sg)                  # C - D
    norm = np.einsum("pak,pak->pa", sg, sg)                  # untied pairs of methods
    den = np.sqrt(norm[:, :, None] * norm[:, None, :])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def tau_intervals(S: np.ndarray, *, clusters: ArrayLike | None = None, n_boot: int = 1000,
                  level: float = 0.95, seed: int = 0) -> tuple[np.ndarray, np.ndarray, int]:
    """Percentile bootstrap intervals of the mean per-pair tau-b (:func:`kendall_tau_matrix`)
    over the independent units: each replicate resamples units with replacement (a unit's pairs
    together) and recomputes every mean over the pairs where tau is defined.

    Parameters
    ----------
    S : ndarray (P, Q, M)
        As :func:`kendall_tau_matrix`.
    clusters : array_like (P,), optional
        The pairs' units (``insdel._stats.unit_ids``); None: every pair is a unit.
    n_boot, level, seed
        Replicates, the interval's level, the generator's seed.

    Returns
    -------
    low, high : ndarray (Q, Q)
        NaN where tau is defined on no pair.
    n_units : int
    """
    n_boot = check_positive_int(n_boot, "n_boot")
    level = check_scalar(level, "level", float, min_val=0.0, max_val=1.0,
                         include_boundaries="neither", finite=True)
    S = np.asarray(S, dtype=np.float64)
    P, Q = S.shape[:2]
    u = unit_ids(clusters, P)
    if u.shape != (P,):
        raise ValueError(f"clusters: one unit per pair expected ({P}); got shape {u.shape}.")
    G = int(u.max()) + 1 if P else 0
    tau = _pair_taus(S).reshape(P, Q * Q)
    ok = np.isfinite(tau)
    sums, cnt = np.zeros((G, Q * Q)), np.zeros((G, Q * Q))
    np.add.at(sums, u, np.where(ok, tau, 0.0))
    np.add.at(cnt, u, ok.astype(np.float64))
    rng = np.random.default_rng(check_seed(seed))
    W = rng.multinomial(G, np.full(G, 1.0 / G), size=n_boot).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = (W @ sums) / (W @ cnt)
    lo_q, hi_q = 50 * (1 - level), 50 * (1 + level)
    low, high = np.full(Q * Q, np.nan), np.full(Q * Q, np.nan)
    for k in range(Q * Q):
        r = reps[:, k][np.isfinite(reps[:, k])]
        if r.size:
            low[k], high[k] = np.percentile(r, [lo_q, hi_q])
    return low.reshape(Q, Q), high.reshape(Q, Q), G


def kendall_tau_matrix(S: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-pair Kendall tau-b between every two metrics' rankings of the methods.

    Parameters
    ----------
    S : ndarray (P, Q, M)
        Scores of M methods under Q metrics on P pairs, larger is better for every metric.

    Returns
    -------
    mean, se, count : ndarray (Q, Q)
        Mean of tau_b over the pairs where both rankings are not constant, its standard error,
        and the number of such pairs.
    """
    S = np.asarray(S, dtype=np.float64)
    P, Q, M = S.shape
    tau = _pair_taus(S)
    count = np.sum(~np.isnan(tau), axis=0)
    with np.errstate(invalid="ignore"):
        mean = np.nanmean(np.where(count[None] > 0, tau, 0.0), axis=0)
        sd = np.nanstd(tau, axis=0, ddof=1) if P > 1 else np.full((Q, Q), np.nan)
    mean = np.where(count > 0, mean, np.nan)
    se = np.where(count > 1, sd / np.sqrt(np.maximum(count, 1)), np.nan)
    return mean, se, count


def metric_agreement(scores: pd.DataFrame, directions: dict, *,
                     methods: list[str] | None = None, clusters: ArrayLike | None = None,
                     n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Kendall tau between the metrics' method rankings, averaged over pairs.

    Parameters
    ----------
    scores : pandas.DataFrame
        Long table ``pair, method, metric, value`` (:attr:`MetricResults.scores`, or a run's
        ``metrics.parquet``).
    directions : dict
        metric -> True when higher is better.
    methods : list of str, optional
        Methods to rank (default all; at least 3 make a ranking worth comparing).
    clusters : array_like, optional
        One unit id per pair number (``clusters[pair]``, e.g. a policy's ``Pairing.cluster``, as
        :meth:`MetricResults.summary` reads it); None: every pair is a unit.
    n_boot, level, seed
        The bootstrap interval of each tau over the units (:func:`tau_intervals`).

    Returns
    -------
    pandas.DataFrame
        Long table ``metric_a, metric_b, tau, se, n_pairs, tau_low, tau_high, n_units``.
    """
    W = scores.pivot_table(index="pair", columns=["metric", "method"], values="value",
                           aggfunc="first", sort=False)
    metrics = list(dict.fromkeys(scores["metric"]))
    methods = list(methods or dict.fromkeys(scores["method"]))
    if len(methods) < 2:
        raise ValueError(f"metric agreement needs at least 2 methods; got {methods}.")
    unknown = [m for m in metrics if m not in directions]
    if unknown:
        raise ValueError(f"directions: no direction for metric(s) {unknown}.")
    S = np.stack([W[m].reindex(columns=methods).to_numpy(dtype=np.float64)
                  * (1.0 if directions[m] else -1.0) for m in metrics], axis=1)
    mean, se, count = kendall_tau_matrix(S)
    if clusters is not None:  # indexed by the pair number, as MetricResults.summary reads it
        cl = np.asarray(clusters)
        pairs = W.index.to_numpy()
        if cl.ndim != 1 or not np.issubdtype(pairs.dtype, np.integer) or pairs.min() < 0 \
                or pairs.max() >= cl.size:
            raise ValueError(f"clusters: one unit id per pair number expected (pairs 0 .. "
                             f"{pairs.max()}); got {cl.size} ids.")
        clusters = cl[pairs]
    low, high, G = tau_intervals(S, clusters=clusters, n_boot=n_boot, level=level, seed=seed)
    rows = [{"metric_a": a, "metric_b": b, "tau": mean[ia, ib], "se": se[ia, ib],
             "n_pairs": int(count[ia, ib]), "tau_low": low[ia, ib], "tau_high": high[ia, ib],
             "n_units": G}
            for ia, a in enumerate(metrics) for ib, b in enumerate(metrics)]
    return pd.DataFrame(rows)


def agreement_markdown(agree: pd.DataFrame, *, against: tuple[str, ...] = ("insertion_abc",
                                                                          "deletion_abc"),
                       digits: int = 2) -> str:
    """The agreement matrix as Markdown, and each metric's tau against ``against`` (ABC)."""
    metrics = list(dict.fromkeys(agree["metric_a"]))
    T = agree.pivot(index="metric_a", columns="metric_b", values="tau").loc[metrics, metrics]
    lines = ["| metric | " + " | ".join(metrics) + " |", "|---|" + "---:|" * len(metrics)]
    for a in metrics:
        lines.append(f"| {a} | " + " | ".join(f"{T.loc[a, b]:.{digits}f}" for b in metrics)
                     + " |")
    ref = [r for r in against if r in metrics]
    if ref:
        idx = agree.set_index(["metric_a", "metric_b"])
        boot = "tau_low" in agree.columns
        lines += ["", "| metric | " + " | ".join(
            f"τ with {r} (± se" + (", bootstrap interval" if boot else "") + ")" for r in ref)
            + " |", "|---|" + "---:|" * len(ref)]
        for a in metrics:
            if a in ref:
                continue
            cells = []
            for r in ref:
                row = idx.loc[(a, r)]
                c = f"{row['tau']:+.{digits}f} ± {row['se']:.{digits}f}"
                if boot and np.isfinite(row["tau_low"]):
                    c += f" [{row['tau_low']:+.{digits}f}, {row['tau_high']:+.{digits}f}]"
                cells.append(c)
            lines.append(f"| {a} | " + " | ".join(cells) + " |")
        if boot:
            lines += [""] + [f"- {v}." for v in agreement_verdicts(agree, against=ref)]
    return "\n".join(lines)


def agreement_verdicts(agree: pd.DataFrame, *, against: tuple[str, ...] = ("insertion_abc",
                                                                          "deletion_abc"),
                       level: float = 0.95) -> list[str]:
    """Plain sentences from :func:`metric_agreement`'s intervals: for each metric and each of
    ``against`` it has, whether it ranks the methods like it (the interval lies above 0), in the
    opposite order (below 0), or cannot be told from no agreement (it holds 0)."""
    if "tau_low" not in agree.columns:
        raise ValueError("agree has no tau_low / tau_high: make it with metric_agreement.")
    metrics = list(dict.fromkeys(agree["metric_a"]))
    idx = agree.set_index(["metric_a", "metric_b"])
    pct = f"{100 * level:g} %"
    out = []
    for r in (r for r in against if r in metrics):
        up, down, unsure = [], [], []
        for a in metrics:
            if a == r or a in against:
                continue
            lo, hi = idx.loc[(a, r), "tau_low"], idx.loc[(a, r), "tau_high"]
            if not (np.isfinite(lo) and np.isfinite(hi)):
                continue
            (up if lo > 0 else down if hi < 0 else unsure).append(a)
        n = int(idx.loc[(r, r), "n_units"])
        if up:
            out.append(f"Rank the methods like {r} ({pct} bootstrap interval of τ above 0, {n} "
                       "units): " + ", ".join(up))
        if down:
            out.append(f"Rank them in the opposite order to {r} (interval below 0): "
                       + ", ".join(down))
        if unsure:
            out.append(f"Cannot be told from no agreement with {r} (interval holds 0): "
                       + ", ".join(unsure))
    return out


def agreement_figure(agree: pd.DataFrame, *, title: str = "Kendall τ between metrics' "
                     "method rankings (mean over pairs)"):
    """A heat map of the agreement matrix (matplotlib Figure)."""
    import matplotlib.pyplot as plt

    metrics = list(dict.fromkeys(agree["metric_a"]))
    T = agree.pivot(index="metric_a", columns="metric_b", values="tau").loc[metrics, metrics]
    k = len(metrics)
    fig, ax = plt.subplots(figsize=(0.55 * k + 2.5, 0.5 * k + 1.8))
    im = ax.imshow(T.to_numpy(), vmin=-1, vmax=1, cmap="RdBu_r")
    ax.set_xticks(range(k), metrics, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(k), metrics, fontsize=8)
    for a in range(k):
        for b in range(k):
            v = T.iloc[a, b]
            if np.isfinite(v):
                ax.text(b, a, f"{v:.2f}", ha="center", va="center", fontsize=6,
                        color="white" if abs(v) > 0.6 else "black")
    fig.colorbar(im, ax=ax, fraction=0.04)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig
