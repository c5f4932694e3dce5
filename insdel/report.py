"""Tables of a run rendered once, as Markdown, for the terminal and the files alike.

The paper's Tables 1-3 (mean ABC ± standard error per mode and method, one table per policy), its
Table 4 (policy diagnostics) and insdel's decomposition table (best achievable and expected
random-order ABC, and each method's fraction of the best).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from .evaluation import to_markdown

__all__ = ["policy_table", "diagnostics_table", "decomposition_table", "run_tables"]


def policy_table(label: str, summary: pd.DataFrame, digits: int = 3) -> str:
    """One policy's summary (paper Tables 1-3 layout) with a heading naming the policy."""
    n = int(summary["n"].iloc[0]) if len(summary) else 0
    return f"### Policy: {label} ({n} pairs)\n\n{to_markdown(summary, digits=digits)}\n"


def diagnostics_table(diag: pd.DataFrame, digits: int = 3) -> str:
    """Paper Table 4: pairs, features, mean number of differing features, ABC correlations."""
    d = diag.reset_index()
    cols = list(d.columns)
    lines = ["### Policy diagnostics (paper Table 4)\n",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in d.itertuples(index=False):
        cells = [f"{v:.{digits}f}" if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def decomposition_table(decomps: Mapping[str, pd.DataFrame], methods: list[str],
                        digits: int = 3) -> str:
    """Best achievable ABC, E[ABC] under random orderings (exact, §3.3) and each method's mean ABC
    as a fraction of the best, per policy and mode."""
    lines = ["### Exact decomposition: best achievable and expected random-order ABC\n",
             "| Policy | Mode | Pairs | Best achievable | E[random] | "
             + " | ".join("frac. of best: " + m for m in methods) + " |",
             "|---|---|---:|---:|---:|" + "---:|" * len(methods)]
    for label, dec in decomps.items():
        modes = [m for m in ("insertion", "deletion") if f"best_abc_{m}" in dec]
        for mode in modes:
            best = float(np.mean(dec[f"best_abc_{mode}"]))
            fr = [float(np.mean(dec[f"abc_{mode}_{m}"])) / best if best != 0 and
                  f"abc_{mode}_{m}" in dec else float("nan") for m in methods]
            lines.append(f"| {label} | {mode} | {len(dec)} | {best:.{digits}f} | "
                         f"{dec[f'expected_abc_{mode}'].mean():.{digits}f} | "
                         + " | ".join(f"{v:.{digits}f}" for v in fr) + " |")
    return "\n".join(lines) + "\n"


def run_tables(summary: pd.DataFrame, diagnostics: pd.DataFrame,
               decomps: Mapping[str, pd.DataFrame] | None = None,
               methods: list[str] | None = None, digits: int = 3) -> str:
    """Every policy's table, the Table 4 diagnostics and (when computed) the decomposition table."""
    parts = []
    for label in dict.fromkeys(summary["policy"]):
        sub = summary[summary["policy"] == label].drop(columns="policy")
        parts.append(policy_table(label, sub, digits))
    parts.append(diagnostics_table(diagnostics, digits))
    if decomps:
        parts.append(decomposition_table(decomps, list(methods or []), digits))
    return "\n".join(parts)
