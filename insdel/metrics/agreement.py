"""Do the metrics agree? Kendall's tau between the metrics' rankings of the methods, per pair.

For each pair p and each metric a, the metric ranks the methods by their scores (its direction
applied, so that larger is better for every metric). The agreement of metrics a and b on pair p
is Kendall's tau-b between the two rankings,

    tau_b = sum_{i<j} s_a(i, j) s_b(i, j) / sqrt(sum_{i<j} s_a(i, j)^2 · sum_{i<j} s_b(i, j)^2),

with ``s_a(i, j) = sign(score_a(i) - score_a(j))`` over the pairs of methods i < j (ties count in
neither numerator nor the tied metric's denominator, as in :func:`scipy.stats.kendalltau`'s
default). The table reports its mean over the pairs where it is defined, with a standard error.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["kendall_tau_matrix", "metric_agreement", "agreement_markdown", "agreement_figure"]


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
    i, j = np.triu_indices(M, 1)
    sg = np.sign(S[:, :, i] - S[:, :, j])                   # (P, Q, M(M-1)/2)
    sg[np.isnan(sg)] = 0.0
    num = np.einsum("pak,pbk->pab", sg, sg)                  # C - D
    norm = np.einsum("pak,pak->pa", sg, sg)                  # untied pairs of methods
    den = np.sqrt(norm[:, :, None] * norm[:, None, :])
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(den > 0, num / den, np.nan)
    count = np.sum(~np.isnan(tau), axis=0)
    with np.errstate(invalid="ignore"):
        mean = np.nanmean(np.where(count[None] > 0, tau, 0.0), axis=0)
        sd = np.nanstd(tau, axis=0, ddof=1) if P > 1 else np.full((Q, Q), np.nan)
    mean = np.where(count > 0, mean, np.nan)
    se = np.where(count > 1, sd / np.sqrt(np.maximum(count, 1)), np.nan)
    return mean, se, count


def metric_agreement(scores: pd.DataFrame, directions: dict, *,
                     methods: list[str] | None = None) -> pd.DataFrame:
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

    Returns
    -------
    pandas.DataFrame
        Long table ``metric_a, metric_b, tau, se, n_pairs``.
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
    rows = [{"metric_a": a, "metric_b": b, "tau": mean[ia, ib], "se": se[ia, ib],
             "n_pairs": int(count[ia, ib])}
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
        lines += ["", "| metric | " + " | ".join(f"τ with {r} (± se)" for r in ref) + " |",
                  "|---|" + "---:|" * len(ref)]
        for a in metrics:
            if a in ref:
                continue
            cells = [f"{idx.loc[(a, r), 'tau']:+.{digits}f} ± {idx.loc[(a, r), 'se']:.{digits}f}"
                     for r in ref]
            lines.append(f"| {a} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


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
