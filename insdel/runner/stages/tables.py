"""The tables stage of one policy: its summary (paper Tables 1-3 layout), sampled against exact
Shapley, and the decomposition's bounds next to every method's ABC."""

from __future__ import annotations

from ... import _checkpoint as ck
from ...groups import group_attributions
from ...report import policy_table, sampled_vs_exact
from ..context import PolicyRun

__all__ = ["run"]


def run(p: PolicyRun) -> None:
    """Write ``summary.csv`` / ``summary.md`` (``p.summary``, with a ``policy`` column; the
    verdicts ``p.verdicts`` under the table and every pairwise comparison in
    ``comparisons.csv``), and when
    both ran ``sampled_vs_exact.csv`` (``p.sampled_vs_exact``), and with a decomposition
    ``decomposition.parquet`` (the ABC of every method and mode, and the pairs' units, added to
    ``p.decomposition``)."""
    ev, atts, folder, label = p.evaluation, p.attributions, p.folder, p.label
    s = ev.summary()
    v = p.cfg["verdicts"]  # margin, relative, level, adjust, n_resamples ([verdicts])
    p.verdicts = ev.verdicts(level=v["level"], margin=v["margin"], relative=v["relative"],
                             n_resamples=v["n_resamples"], adjust=v["adjust"])
    comp = ev.comparisons(level=v["level"], n_resamples=v["n_resamples"])
    ck.atomic_write_text(folder / "summary.csv", s.to_csv(index=False))
    if len(comp):  # every pairwise comparison per mode (insdel.verdicts)
        ck.atomic_write_text(folder / "comparisons.csv", comp.to_csv(index=False))
    ck.atomic_write_text(folder / "summary.md", policy_table(label, s, verdicts=p.verdicts)
                         + "\n")
    s.insert(0, "policy", label)
    p.summary = s
    if "kernel_shap" in atts and "exact_shapley" in atts:
        sve = sampled_vs_exact(ev, group_attributions(atts["kernel_shap"], p.groups),
                               group_attributions(atts["exact_shapley"], p.groups))
        ck.atomic_write_text(folder / "sampled_vs_exact.csv", sve.to_csv(index=False))
        sve.insert(0, "policy", label)
        p.sampled_vs_exact = sve
    dec = p.decomposition
    if dec is not None:
        for mode in ev.modes:
            for m in ev.methods:
                dec[f"abc_{mode}_{m}"] = ev.abc_array(m, mode)[:len(dec)]
        if p.pairing.cluster is not None:  # the pairs' independent units, for standard errors
            dec["cluster"] = p.pairing.cluster[:len(dec)]
        with ck.atomic_write(folder / "decomposition.parquet", suffix=".parquet") as tmp:
            dec.to_parquet(tmp, index=False)
