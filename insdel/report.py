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

__all__ = ["run_header", "policy_table", "diagnostics_table", "decomposition_table", "run_tables"]


def run_header(data: Mapping, model: Mapping, policies: Mapping[str, str]) -> str:
    """What the run used: the data set (name, recipe, file and its SHA-256, rows, features), the
    model (where it came from, SHA-256 of its parameters or file) and each policy.

    Parameters
    ----------
    data : mapping
        The manifest's ``data`` entry (``name``, ``recipe``, ``file``, ``file_sha256``,
        ``rows_train``, ``rows_test``, ``features``).
    model : mapping
        The manifest's ``model`` entry (``sha256`` and ``path`` + ``format``, or ``preset``).
    policies : mapping
        Policy label -> description (the policy's ``repr``).
    """
    file = (f", file `{data['file']}` (sha256 {data.get('file_sha256')})"
            if data.get("file") else "")
    lines = ["### Inputs\n",
             f"- data: {data['name']} (recipe {data['recipe']}{file}): {data['rows_train']} train "
             f"/ {data['rows_test']} test rows, {data['features']} features"]
    if model.get("path"):
        origin = f"file `{model['path']}`" + (f" ({model['format']})" if model.get("format")
                                              else "")
    elif model.get("preset"):
        origin = f"preset {model['preset']}, trained by the run"
    else:
        origin = "custom MLP ([model] params), trained by the run"
    lines.append(f"- model: {origin}, sha256 {model.get('sha256')}")
    lines += [f"- policy {label}: {desc}" for label, desc in policies.items()]
    return "\n".join(lines) + "\n"


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
               methods: list[str] | None = None, digits: int = 3, *,
               header: str | None = None) -> str:
    """The run's inputs (``header``, see :func:`run_header`), every policy's table, the Table 4
    diagnostics and (when computed) the decomposition table."""
    parts = [header] if header else []
    for label in dict.fromkeys(summary["policy"]):
        sub = summary[summary["policy"] == label].drop(columns="policy")
        parts.append(policy_table(label, sub, digits))
    parts.append(diagnostics_table(diagnostics, digits))
    if decomps:
        parts.append(decomposition_table(decomps, list(methods or []), digits))
    return "\n".join(parts)
