"""Tables of a run rendered once, as Markdown, for the terminal and the files alike.

The paper's Tables 1-3 (mean ABC ± standard error per mode and method, one table per policy), its
Table 4 (policy diagnostics) and insdel's decomposition table (best achievable and expected
random-order ABC, and each method's fraction of the best).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ._stats import mean_se
from .evaluation import to_markdown

__all__ = ["run_header", "model_sha256_text", "missing_rows_text", "policy_table", "diagnostics_table",
           "decomposition_table", "sampled_vs_exact", "sampled_vs_exact_table", "run_tables"]


def model_sha256_text(model: Mapping, digits: int | None = None) -> str:
    """``"parameters sha256 <hash>, file sha256 <hash>"`` of the manifest's ``model`` entry: which
    hash is which (``sha256`` is the parameters' hash of a torch module, the file's of other
    models, ``sha256_of`` says which; ``file_sha256`` the file's, when there is a file), each cut
    to ``digits`` hex digits when given."""
    def cut(h):
        return h if digits is None or h is None else h[:digits]

    kind = model.get("sha256_of")
    text = f"{kind + ' ' if kind else ''}sha256 {cut(model.get('sha256'))}"
    if kind == "parameters" and model.get("file_sha256"):
        text += f", file sha256 {cut(model['file_sha256'])}"
    return text


def run_header(data: Mapping, model: Mapping, policies: Mapping[str, str], *,
               removals: list[str] | None = None) -> str:
    """What the run used: the data set (name, recipe, file and its SHA-256, rows, features), the
    model (where it came from, SHA-256 of its parameters or file) and each policy.

    Parameters
    ----------
    data : mapping
        The manifest's ``data`` entry (``name``, ``recipe``, ``file``, ``file_sha256``,
        ``rows_train``, ``rows_test``, ``features``; ``groups_text`` and ``units`` when the data
        set has feature groups; ``rows_read``, ``rows_dropped_missing`` and
        ``missing_by_column`` when the recipe counts rows dropped for missing values).
    model : mapping
        The manifest's ``model`` entry (``sha256`` and ``path`` + ``format``, or ``preset``).
    policies : mapping
        Policy label -> description (the policy's ``repr``).
    removals : list of str, optional
        One line per removal of the run (``[removal]``); None: the paper's baseline alone, not
        mentioned.
    """
    file = (f", file `{data['file']}` (sha256 {data.get('file_sha256')})"
            if data.get("file") else "")
    lines = ["### Inputs\n",
             f"- data: {data['name']} (recipe {data['recipe']}{file}): {data['rows_train']} train "
             f"/ {data['rows_test']} test rows, {data['features']} features"]
    if "rows_dropped_missing" in data:
        lines.append(f"- rows: {missing_rows_text(data)}")
    if data.get("groups_text"):
        lines.append(f"- groups: {data['groups_text']}; each group moves as one unit (curves have "
                     f"{data['units']} + 1 points, ABC / {data['units']}), per-column attributions "
                     "are summed per group, Shapley values are the group game's")
    if model.get("path"):
        origin = f"file `{model['path']}`" + (f" ({model['format']})" if model.get("format")
                                              else "")
    elif model.get("kind") == "gradient_boosting":
        origin = "scikit-learn HistGradientBoostingRegressor, trained by the run"
    elif model.get("preset"):
        origin = f"preset {model['preset']}, trained by the run"
    else:
        origin = "custom MLP ([model] params), trained by the run"
    lines.append(f"- model: {origin}, {model_sha256_text(model)}")
    if model.get("tree_ensemble") or model.get("engine", "black_box") != "black_box":
        lines.append(f"- engine: {model['engine']}")
    lines += [f"- policy {label}: {desc}" for label, desc in policies.items()]
    lines += [f"- {line}" for line in removals or ()]
    return "\n".join(lines) + "\n"


def missing_rows_text(data: Mapping) -> str:
    """``"1500 read, 65 dropped for missing values (4.3 %; by column: bmi 40, bp 30)"``, from a
    manifest's ``data`` entry (``rows_read``, ``rows_dropped_missing``, ``missing_by_column``)."""
    read, drop = data.get("rows_read"), int(data["rows_dropped_missing"])
    by = data.get("missing_by_column") or {}
    cols = ", ".join(f"{c} {k}" for c, k in sorted(by.items(), key=lambda kv: -kv[1]))
    share = f"{100 * drop / read:.1f} %" if read else ""
    detail = "; ".join(x for x in (share, f"by column: {cols}" if cols else "") if x)
    return ((f"{read} read, " if read is not None else "")
            + (f"{drop} dropped for missing values" if drop else "none dropped for missing values")
            + (f" ({detail})" if drop and detail else ""))


def policy_table(label: str, summary: pd.DataFrame, digits: int = 3, *,
                 verdicts: str | None = None) -> str:
    """One policy's summary (paper Tables 1-3 layout) with a heading naming the policy, its
    pairs and, when fewer, the independent units its standard errors are over; ``verdicts``
    (:meth:`insdel.Evaluation.verdicts`) follow the table under their own heading."""
    n = int(summary["n"].iloc[0]) if len(summary) else 0
    units = int(summary["n_units"].iloc[0]) if len(summary) and "n_units" in summary else n
    count = f"{n} pairs" + (f", {units} independent units" if units < n else "")
    text = f"### Policy: {label} ({count})\n\n{to_markdown(summary, digits=digits)}\n"
    if verdicts:
        text += f"\n{VERDICTS_HEAD}\n\n{verdicts}\n"
    return text


#: The heading of a policy's verdict lines (docs/verdicts.md).
VERDICTS_HEAD = ("#### Verdicts (paired over independent units; which differences survive "
                 "the multiplicity, docs/verdicts.md)")


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


def _mean_se(v, clusters=None) -> tuple[float, float]:
    """Mean over pairs, standard error over independent units (:func:`insdel._stats.mean_se`)."""
    mean, se, _ = mean_se(np.asarray(v, dtype=float), clusters)
    return mean, se


def decomposition_table(decomps: Mapping[str, pd.DataFrame], methods: list[str],
                        digits: int = 3) -> str:
    """Best achievable ABC (the best ordering, exact), E[ABC] under uniformly random orderings
    (exact, §3.3, Theorem 1) and each method's gap to the best: the mean over pairs of
    ``best_abc - abc_method`` ± one standard error (paired, pair by pair; 0 = the method found the
    best ordering on every pair), per policy and mode. A table's ``cluster`` column (the pairs'
    independent units) makes the standard errors over units."""
    clustered = False
    lines = ["### Exact decomposition: best achievable ABC, E[random], each method's gap to the "
             "best\n",
             "| Policy | Mode | Pairs | Best achievable | E[random] | "
             + " | ".join("gap: " + m for m in methods) + " |",
             "|---|---|---:|---:|---:|" + "---:|" * len(methods)]
    for label, dec in decomps.items():
        modes = [m for m in ("insertion", "deletion") if f"best_abc_{m}" in dec]
        cl = dec["cluster"].to_numpy() if "cluster" in dec else None
        units = len(dec) if cl is None else len(np.unique(cl))
        clustered |= units < len(dec)
        for mode in modes:
            best = dec[f"best_abc_{mode}"].to_numpy()
            cells = []
            for m in methods:
                col = f"abc_{mode}_{m}"
                if col not in dec:
                    cells.append("")
                    continue
                g, se = _mean_se(best - dec[col].to_numpy(), cl)
                cells.append(f"{g:.{digits}f} ± {se:.{digits}f}")
            b, bse = _mean_se(best, cl)
            e, ese = _mean_se(dec[f"expected_abc_{mode}"], cl)
            pairs = f"{len(dec)}" + (f" ({units} units)" if units < len(dec) else "")
            lines.append(f"| {label} | {mode} | {pairs} | {b:.{digits}f} ± {bse:.{digits}f} | "
                         f"{e:.{digits}f} ± {ese:.{digits}f} | " + " | ".join(cells) + " |")
    if clustered:
        lines.append("\nStandard errors over independent units where the pairs are fewer units "
                     "(a pair and its mirror are one unit); means over pairs.")
    return "\n".join(lines) + "\n"


def sampled_vs_exact(evaluation, sampled: np.ndarray, exact: np.ndarray, *,
                     sampled_name: str = "kernel_shap",
                     exact_name: str = "exact_shapley") -> pd.DataFrame:
    """Sampled Kernel SHAP beside exact baseline Shapley, pair by pair.

    Per mode: the mean ABC of each, their paired difference (sampled - exact) ± one standard error
    (over the evaluation's independent units, ``n_units``),
    and the attributions' relative error ``||a_sampled - a_exact|| / ||a_exact||`` (mean, median
    and largest over the pairs with ``a_exact != 0``).

    Parameters
    ----------
    evaluation : insdel.Evaluation
        Holds both methods' ABCs.
    sampled, exact : ndarray (B, n)
        The two methods' attributions for the same pairs.
    """
    norm = np.linalg.norm(exact, axis=1)
    ok = norm > 0
    rel = np.linalg.norm(sampled - exact, axis=1)[ok] / norm[ok]
    rows = []
    for mode in evaluation.modes:
        a_s = evaluation.abc_array(sampled_name, mode)
        a_e = evaluation.abc_array(exact_name, mode)
        d, se, units = mean_se(a_s - a_e, getattr(evaluation, "clusters", None))
        rows.append({"mode": mode, "n": a_s.size, "n_units": units,
                     f"abc_{sampled_name}": float(a_s.mean()),
                     f"abc_{exact_name}": float(a_e.mean()), "difference": d,
                     "se_difference": se,
                     "rel_error_mean": float(rel.mean()) if rel.size else float("nan"),
                     "rel_error_median": float(np.median(rel)) if rel.size else float("nan"),
                     "rel_error_max": float(rel.max()) if rel.size else float("nan")})
    return pd.DataFrame(rows)


def sampled_vs_exact_table(sampled: pd.DataFrame, digits: int = 3) -> str:
    """The :func:`sampled_vs_exact` rows of every policy as one Markdown table; one line instead
    when Kernel SHAP's attributions equal exact Shapley's on every pair (it enumerated every
    coalition, ``2^|D| <= n_samples``: a table of zero differences would read as a measured
    sampling error)."""
    same = ((sampled["rel_error_max"] == 0) & (sampled["difference"] == 0)
            & (sampled["se_difference"] == 0))
    if same.all():
        return ("### Sampled Kernel SHAP against exact Shapley\n\nKernel SHAP enumerated every "
                "coalition of every pair (2^|D| <= n_samples): its attributions are exact Shapley "
                "values, identical to exact_shapley's; nothing was sampled.\n")
    lines = ["### Sampled Kernel SHAP against exact Shapley (paired by pair)\n",
             "| Policy | Mode | Pairs | ABC sampled | ABC exact | difference ± se | "
             "attribution rel. error: mean | median | max |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    s_col = next(c for c in sampled.columns if c.startswith("abc_"))
    e_col = [c for c in sampled.columns if c.startswith("abc_")][1]
    for r in sampled.to_dict("records"):
        lines.append(f"| {r.get('policy', '')} | {r['mode']} | {r['n']} | "
                     f"{r[s_col]:.{digits}f} | {r[e_col]:.{digits}f} | "
                     f"{r['difference']:.{digits + 1}f} ± {r['se_difference']:.{digits + 1}f} | "
                     f"{r['rel_error_mean']:.4f} | {r['rel_error_median']:.4f} | "
                     f"{r['rel_error_max']:.4f} |")
    return "\n".join(lines) + "\n"


def run_tables(summary: pd.DataFrame, diagnostics: pd.DataFrame,
               decomps: Mapping[str, pd.DataFrame] | None = None,
               methods: list[str] | None = None, digits: int = 3, *,
               header: str | None = None, sampled: pd.DataFrame | None = None,
               metrics: pd.DataFrame | None = None, robustness: str | None = None,
               verdicts: Mapping[str, str] | None = None) -> str:
    """The run's inputs (``header``, see :func:`run_header`), every policy's table (with its
    ``verdicts``, policy label -> :meth:`insdel.Evaluation.verdicts`), the Table 4
    diagnostics and (when computed) the sampled-vs-exact Kernel SHAP table, the decomposition
    table, the metrics and, with several removals, the robustness report (``robustness``: its
    Markdown, :func:`insdel.robustness.robustness_markdown`)."""
    parts = [header] if header else []
    for label in dict.fromkeys(summary["policy"]):
        sub = summary[summary["policy"] == label].drop(columns="policy")
        parts.append(policy_table(label, sub, digits,
                                  verdicts=(verdicts or {}).get(label)))
    parts.append(diagnostics_table(diagnostics, digits))
    if sampled is not None and len(sampled):
        parts.append(sampled_vs_exact_table(sampled, digits))
    if decomps:
        parts.append(decomposition_table(decomps, list(methods or []), digits))
    if metrics is not None and len(metrics):
        parts.append(metrics_table(metrics, digits))
    if robustness:
        parts.append(robustness)
    return "\n".join(parts)


def metrics_table(metrics: pd.DataFrame, digits: int = 3) -> str:
    """``[metrics]`` results: per policy, method x metric means ± standard errors (↑ higher is
    better, ↓ lower is better)."""
    from .metrics import summary_markdown

    return "\n".join(f"## Metrics, policy {label}\n\n"
                     + summary_markdown(metrics[metrics["policy"] == label], digits) + "\n"
                     for label in dict.fromkeys(metrics["policy"]))


def metrics_by_output_table(metrics: pd.DataFrame, digits: int = 3) -> str:
    """``[metrics]`` results of a model with several outputs (a summary with ``policy`` and
    ``output`` columns): per policy and metric, a method x output table of means (standard
    errors in brackets), the last column the weighted aggregate (↑ higher is better, ↓ lower is
    better)."""
    parts = []
    for label in dict.fromkeys(metrics["policy"]):
        part = metrics[metrics["policy"] == label]
        cols = [str(o) for o in dict.fromkeys(part["output"])]
        for metric, sub in part.groupby("metric", sort=False):
            up = "↑" if bool(sub["higher_is_better"].iloc[0]) else "↓"
            cell = {(str(o), m): f"{mu:.{digits}g} ({se:.2g})" for o, m, mu, se in zip(
                sub["output"], sub["method"], sub["mean"], sub["std_error"], strict=True)}
            lines = [f"## Metrics, policy {label}: {metric} {up} by output", "",
                     "| method | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
            for m in dict.fromkeys(sub["method"]):
                lines.append(f"| {m} | " + " | ".join(cell.get((c, m), "") for c in cols)
                             + " |")
            parts.append("\n".join(lines) + "\n")
        if "n_units" in part and (pd.to_numeric(part["n_units"])
                                  < pd.to_numeric(part["n"])).any():
            parts.append("Standard errors over independent units, not pairs: a pair and its "
                         "mirror are one unit; means over pairs.\n")
    return "\n".join(parts)
