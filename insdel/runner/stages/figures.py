"""The figures stage of an experiment: each policy's figures, the decomposition figures and the
model's predictions (:mod:`insdel.plotting`), after every policy has run."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from ..provenance import Stages

__all__ = ["target_label", "figures"]


def target_label(dataset) -> str | None:
    """The target's name for axis labels, with its scale (``"price / 1e+05"``), or None."""
    name = getattr(dataset, "target_name", None)
    scale = getattr(dataset, "target_scale", None)
    return None if not name else (f"{name} / {scale:g}" if scale else str(name))


def figures(cfg, evaluations, model, dataset, out: Path, stages: Stages, log,
            decomps: Mapping[str, pd.DataFrame] | None = None,
            robustness: tuple[pd.DataFrame, pd.DataFrame] | None = None) -> list[Path]:
    """Write the run's figures to ``out/figures`` (none when ``figures.enabled`` is false);
    returns their paths. ``robustness``: the removals' table and Kendall τ
    (``removal_robustness.png``)."""
    if not cfg["figures"]["enabled"]:
        return []
    import matplotlib.pyplot as plt

    from ... import plotting

    t0 = time.perf_counter()
    f = cfg["figures"]
    fdir = out / "figures"
    paths: list[Path] = []
    with plt.rc_context({"figure.max_open_warning": 0}):
        for label, ev in evaluations.items():
            two = plotting.compare_pair(f["compare"], ev.methods)
            if two != list(f["compare"])[:2]:  # say what the figures show instead
                log(f"figures [{label}]: comparing {' and '.join(two)} (figures.compare = "
                    f"{list(f['compare'])}; a method not run is replaced)")
            comp = out / label / "comparisons.csv"  # the tables stage's, when it wrote one
            paths += plotting.policy_figures(ev, label, fdir, compare=f["compare"],
                                             n_random=f["n_random"], dpi=f["dpi"],
                                             seed=cfg["seed"], target=target_label(dataset),
                                             comparisons=pd.read_csv(comp) if comp.is_file()
                                             else None)
        for label, dec in (decomps or {}).items():
            fig = plotting.decomposition_figure(dec, evaluations[label].methods,
                                                title=f"{label}: ABC against the exact bounds")
            paths.append(plotting.save_figure(fig, fdir / f"{label}_decomposition.png", f["dpi"]))
        ax = plotting.plot_predictions(model, dataset)
        paths.append(plotting.save_figure(ax.figure, fdir / "model_predictions.png", f["dpi"]))
        if robustness is not None:
            fig = plotting.removal_robustness(*robustness)
            paths.append(plotting.save_figure(fig, fdir / "removal_robustness.png", f["dpi"]))
    stages.add("figures", time.perf_counter() - t0, count=len(paths))
    log(f"figures: {len(paths)} written to {fdir}")
    return paths
