"""``insdel sanity``: the sanity checks of attribution methods and the reliability of the metrics
that grade them, from a configuration (:mod:`insdel.sanity`, docs/sanity.md).

The data and model stages are the experiment's, ROAR's and ROAD's (:mod:`insdel.runner.stages`):
the model is trained once and cached in the output folder. The pairs are the first
``sanity.n_targets`` test rows against the training mean / mode, or a policy's pairs of them
(``sanity.reference``, as ``road.reference``). Then :func:`insdel.sanity.parameter_randomisation`
in each of ``sanity.orders`` (an eager torch module only: for any other model it is left out with
one note), :func:`insdel.sanity.data_randomisation` when ``sanity.data_randomisation`` is on
(insdel's MLP retrained, or a clone of a scikit-learn estimator refitted), and
:func:`insdel.sanity.metric_reliability` of ``meta.metrics`` on the trained model's attributions
when the configuration has a ``[meta]`` table (which may come without ``[sanity]``). A data set's
feature groups (one-hot categoricals) are the units of every check, as in ``insdel run``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import _checkpoint as ck
from .. import config as _config
from .._validation import check_progress
from ..report import run_header
from .context import logger
from .provenance import Stages, run_manifest
from .session import loaded, opened
from .stages.attribution import method_options
from .stages.data import dataset_info, groups_of, load_dataset, log_dataset
from .stages.model import model_files, model_stage, read_trees

__all__ = ["SanityRun", "run_sanity", "SANITY_FILES"]

#: The data files of a run (besides ``summary.md``, the figures and ``manifest.json``).
SANITY_FILES = ("sanity.csv", "sanity_flags.csv", "reliability.csv", "reliability_tests.csv")


@dataclass
class SanityRun:
    """A finished ``insdel sanity`` run.

    Attributes
    ----------
    out : Path
    config : dict
    results : dict
        ``"parameters/<order>"`` (and ``"data/labels"``) -> :class:`insdel.sanity.SanityResult`.
    table, flags : pandas.DataFrame or None
        ``sanity.csv`` and ``sanity_flags.csv``: every result's table and flags, with their
        ``kind`` and ``order`` (None when no randomisation ran: ``[meta]`` alone, or a model
        that can take neither).
    reliability : insdel.sanity.ReliabilityResult or None
        None without a ``[meta]`` table.
    flagged : list of str
        Methods that fail at least one check of at least one test.
    manifest : dict
    markdown : str
    figures : list of Path
    """

    out: Path
    config: dict
    results: dict
    table: pd.DataFrame
    flags: pd.DataFrame
    reliability: object | None
    flagged: list
    manifest: dict
    markdown: str = ""
    figures: list | None = None

    def to_markdown(self) -> str:
        """The tables of ``summary.md`` (below its header)."""
        return self.markdown


def run_sanity(config: str | os.PathLike | Mapping, out: str | os.PathLike | None = None, *,
               quick: bool = False, progress: bool | None = None, verbose: bool = False,
               wait: bool = False) -> SanityRun:
    """Run the sanity checks of a configuration (``insdel sanity``, docs/sanity.md).

    The configuration's ``[data]``, ``[model]``, ``[methods]``, ``[compute]``, ``[sanity]`` and
    ``[meta]`` are read (at least one of the last two); any other table is an error. The model
    (trained, or loaded from the folder's cache or ``model.path``) is randomised layer by layer
    (:func:`insdel.sanity.parameter_randomisation`, each of ``sanity.orders``; an eager torch
    module only, any other model gets a note that it was not run) and, with
    ``sanity.data_randomisation``, retrained on permuted labels
    (:func:`insdel.sanity.data_randomisation`: insdel's MLP, ``sanity.data_max_epochs``, or a
    clone of a scikit-learn estimator from ``model.path``; any other model file is an error
    saying what can run); every method's attributions of the pairs are compared with the
    trained model's. With a ``[meta]`` table the metrics ``meta.metrics`` are meta-evaluated on
    the trained model's attributions (:func:`insdel.sanity.metric_reliability`; its model tests
    need an eager torch module and are otherwise reported as not run). A data set's feature
    groups are the units of the attributions, the measures and the curves.

    Outputs in ``out``: ``sanity.csv`` (kind, order, method, step, layer, measure, mean,
    std_error, n, n_units), ``sanity_flags.csv`` (kind, order, method, check, value, reference,
    threshold, flagged, std_error, ci_low, ci_high, verdict: the flag's 95 % interval over the
    units and whether it holds beyond the noise), ``reliability.csv`` (one row per metric: resilience, reactivity, mc and
    the four criteria) and ``reliability_tests.csv`` (per metric and test), ``summary.md``,
    ``figures/sanity.png``, ``figures/reliability.png``, ``attributions.npz`` and
    ``manifest.json``. Started again on the same folder it reuses the trained model and writes
    identical data files.
    """
    check_progress(progress)
    cfg = loaded(config, quick)
    _config.check_sections(cfg, "sanity")
    if cfg["compute"]["backend"] != "serial":
        raise ValueError(f"{cfg['source']}: compute.backend = {cfg['compute']['backend']!r}: "
                         "`insdel sanity` runs serially (its randomised models are deep copies "
                         "on the driver); remove the Dask settings.")
    with opened(cfg, out, wait, None, verbose, kind="sanity") as (folder, before, _):
        return _run_sanity(cfg, folder, progress, verbose, before)


def _pairs(cfg, model, dataset, grp, progress, log, table: str = "sanity"):
    """(X, R, clusters): the first ``n_targets`` test rows against the training mean / mode (a
    one-hot group's most common level, :func:`_reference_values`), or a policy's pairs of
    them. ``table``: the configuration table of ``n_targets`` and ``reference`` (``insdel tune``
    reads its own)."""
    s = cfg[table]
    n = min(s["n_targets"], len(dataset.X_test))
    X = np.ascontiguousarray(dataset.X_test[:n], dtype=np.float64)
    if s["reference"] == "training_mean":
        log(f"pairs: {n} test rows against the training mean (mode of the "
            f"{int(dataset.binary_mask.sum())} binary features)")
        return X, np.broadcast_to(_reference_values(dataset, grp), X.shape).copy(), None
    from .. import policies

    pol = policies.load(s["reference"])
    pairing = pol.pair(model, X, seed=cfg["seed"], progress=progress)
    if len(pairing) < 2:
        raise ValueError(f"{table}.reference = {s['reference']!r}: the policy paired "
                         f"{len(pairing)} of the {n} test rows; the checks need at least two "
                         f"pairs (raise {table}.n_targets).")
    log(f"pairs: policy {pol!r} on {n} test rows: {len(pairing)} pairs, mean |D| "
        f"{pairing.mean_diff():.2f}")
    return (np.ascontiguousarray(pairing.X, dtype=np.float64),
            np.ascontiguousarray(pairing.R, dtype=np.float64), pairing.cluster)


def _tidy(results: Mapping) -> tuple[pd.DataFrame, pd.DataFrame]:
    tables, flags = [], []
    for res in results.values():
        tables.append(res.table.assign(kind=res.kind, order=res.order))
        flags.append(res.flags.assign(kind=res.kind, order=res.order))
    table = pd.concat(tables, ignore_index=True)
    flag = pd.concat(flags, ignore_index=True)
    first = ["kind", "order"]
    return (table[first + [c for c in table.columns if c not in first]],
            flag[first + [c for c in flag.columns if c not in first]])


def _flagged(flags: pd.DataFrame, methods) -> list:
    bad = set(flags.loc[flags["flagged"].astype(bool), "method"])
    return [m for m in methods if m in bad]


def _markdown(results, flagged, rel, meta: Mapping | None, pairs_text: str,
              skipped: Mapping) -> str:
    lines = [f"### Sanity checks ({pairs_text})", ""]
    for res in results.values():
        what = {"parameters": "Parameter", "data": "Data"}.get(res.kind, res.kind)
        lines += [f"#### {what} randomisation ({res.order})", "",
                  res.to_markdown(), ""]
    for check, why in skipped.items():
        lines += [f"Not run: {check} ({why}).", ""]
    if results:
        lines.append("Methods failing a randomisation check: "
                     + (", ".join(flagged) if flagged else "none") + ".")
    if rel is not None:
        lines += ["", f"### Metric reliability (MetaQuantus; {meta['n_perturbations']} "
                  f"perturbations per test, noise {meta['noise']:g}, tolerance "
                  f"{meta['tolerance']:g})", "", rel.to_markdown()]
    return "\n".join(lines) + "\n"


def _figures(results, rel, out: Path, title: str) -> list[Path]:
    import matplotlib.pyplot as plt

    from .. import plotting

    paths = []
    with plt.rc_context({"figure.max_open_warning": 0}):
        k = len(results)
        if k:
            fig, axes = plt.subplots(1, k, figsize=(6.0 * k, 4.2), squeeze=False)
            for ax, res in zip(axes[0], results.values(), strict=True):
                plotting.plot_sanity(res, ax=ax)
            fig.suptitle(title, fontsize=10)
            fig.tight_layout()
            paths.append(plotting.save_figure(fig, out / "figures" / "sanity.png", 110))
        else:
            (out / "figures" / "sanity.png").unlink(missing_ok=True)
        if rel is not None:
            ax = plotting.plot_reliability(rel)
            paths.append(plotting.save_figure(ax.figure, out / "figures" / "reliability.png",
                                              110))
        else:
            (out / "figures" / "reliability.png").unlink(missing_ok=True)
    return paths


def _reference_values(dataset, grp) -> np.ndarray:
    """The training mean / mode of every column (:func:`insdel.roar.removal_values`) and, for a
    group of several binary columns (a one-hot categorical), its most common level: a column's
    own mode would set no level at all."""
    from .. import roar as _roar

    v = _roar.removal_values(dataset)
    if grp is None:
        return v
    Xtr = np.asarray(dataset.X_train, dtype=np.float64)
    binary = np.asarray(dataset.binary_mask, bool)
    for g in range(grp.m):
        cols = grp.columns(g)
        if cols.size > 1 and binary[cols].all():
            rows, counts = np.unique(Xtr[:, cols], axis=0, return_counts=True)
            v[cols] = rows[np.argmax(counts)]
    return v


def _estimator(model):
    """The user's model itself: the estimator a :class:`insdel.trees.ModelWithTrees` holds, or
    ``model``."""
    from ..trees import ModelWithTrees

    return model.model if isinstance(model, ModelWithTrees) else model


def _refit_with_trees(estimator):
    """:func:`insdel.sanity.refit_clone` of ``estimator`` whose refitted tree ensemble comes
    as a :class:`insdel.trees.ModelWithTrees` (its trees read once for all its attributions)."""
    from ..sanity import refit_clone
    from ..trees import ModelWithTrees

    refit = refit_clone(estimator)

    def train(ds, params, seed):
        fitted = refit(ds, params, seed)
        trees = read_trees(fitted)
        return fitted if trees is None else ModelWithTrees(fitted, trees)

    return train


def _model_kind(model, model_info) -> str:
    """``"scikit-learn GradientBoostingRegressor (joblib file)"``: what the model is, for the
    notes on checks it cannot take."""
    what = type(model).__name__
    fmt = model_info.get("format")
    return what + (f" ({fmt} file)" if fmt else "")


def _plan(cfg, model, model_info, log) -> tuple[list, str | None, dict]:
    """What can run on this model: (the parameter randomisation orders, how data randomisation
    retrains: ``"mlp"``, ``"refit"`` or None, the checks not run with why). A parameter
    randomisation the model cannot take is left out with one note; a data randomisation asked
    for that cannot retrain this model is an error saying what can run."""
    from ..adapter import torch_kind
    from ..sanity import is_estimator

    given = set(cfg.get("sections", ()))
    s = cfg["sanity"]
    orders = list(s["orders"]) if "sanity" in given else []
    skipped = {}
    what = _model_kind(model, model_info)
    if orders and torch_kind(model) != "module":
        skipped["parameter randomisation"] = (
            f"it re-initialises the layers of an eager torch.nn.Module; the model is {what}, "
            "whose parameters insdel cannot reach")
        log(f"sanity: parameter randomisation not run: {skipped['parameter randomisation']}")
        orders = []
    retrain = None
    if "sanity" in given and s["data_randomisation"]:
        if cfg["model"]["path"] is None:
            retrain = "mlp"
        elif is_estimator(model):
            retrain = "refit"
            if s["data_max_epochs"] is not None:
                raise ValueError(f"{cfg['source']}: sanity.data_max_epochs caps the training of "
                                 f"insdel's MLP; the model is {what}, refitted with its own "
                                 "hyperparameters: remove data_max_epochs.")
        else:
            # the advice must lead to a run: name what runs once data randomisation is off
            if orders:
                then = "the parameter randomisation (sanity.orders) runs on it" + (
                    " with the metrics' reliability ([meta])" if "meta" in given else "")
            elif "meta" in given:
                then = "the metrics' reliability ([meta]) runs on it"
            else:
                then = ("add a [meta] table too: the metrics' reliability runs on any model "
                        "(nothing else can run on this one)")
            raise ValueError(
                f"{cfg['source']}: sanity.data_randomisation retrains the model on permuted "
                f"labels: it needs insdel's MLP (model.preset or model.params) or a "
                f"scikit-learn estimator file (refitted from a clone); the model is {what}, "
                f"which insdel cannot refit. Set sanity.data_randomisation = false; {then}.")
    if not orders and retrain is None and "meta" not in given:
        why = "; ".join(f"{k}: {v}" for k, v in skipped.items()) or "no check is configured"
        raise ValueError(f"{cfg['source']}: no sanity check can run on this model ({why}). "
                         "Add a [meta] table: the metrics' reliability runs on any model (its "
                         "input_noise and attribution_shuffle tests need no torch module).")
    return orders, retrain, skipped


def _run_sanity(cfg, out: Path, progress, verbose: bool,
                before: Mapping[Path, tuple] | None = None) -> SanityRun:
    """The checks in ``out`` (locked): data, model, pairs, randomisations, reliability, files."""
    from ..attribution import attribute
    from ..groups import group_attributions
    from ..sanity import data_randomisation, metric_reliability, parameter_randomisation

    log = logger(verbose)
    stages = Stages()
    t_all = time.perf_counter()
    s = cfg["sanity"]
    dataset = load_dataset(cfg)
    grp = groups_of(dataset)
    data_info = dataset_info(cfg, dataset)
    log_dataset(data_info, log, file=False)
    if grp is not None:
        log(f"groups: {data_info['groups_text']} (each group is one unit of the attributions, "
            "the similarity measures and the curves)")
    model, metrics, model_info = model_stage(cfg, dataset, data_info, out, stages, log, progress,
                                           with_trees=True)
    # the estimator itself (a tree ensemble comes as a ModelWithTrees holding its trees, read
    # once for every check's attributions): what the notes name and what a refit clones
    est = _estimator(model)
    orders, retrain, skipped = _plan(cfg, est, model_info, log)
    t0 = time.perf_counter()
    X, R, clusters = _pairs(cfg, model, dataset, grp, progress, log)
    stages.add("sanity/pairs", time.perf_counter() - t0, units=int(X.shape[0]))
    names = list(cfg["methods"]["names"])
    opts = {m: method_options(m, cfg["methods"]["options"].get(m, {}), cfg["seed"], dataset,
                              cfg["model"]["engine"]) for m in names}
    methods = {m: m for m in names}
    common = {"similarity": list(s["similarity"]), "seed": cfg["seed"], "abc": s["abc"],
              "method_options": opts, "threshold": float(s["threshold"]),
              "abc_tolerance": float(s["abc_tolerance"]), "clusters": clusters,
              "groups": grp, "progress": progress}
    results = {}
    for order in orders:
        t0 = time.perf_counter()
        res = parameter_randomisation(model, X, R, methods, order=order,
                                      layers=list(s["layers"]) or None, **common)
        stages.add(f"sanity/parameters/{order}", time.perf_counter() - t0,
                   model_rows=res.stats["model_rows"])
        log(f"parameter randomisation ({order}, {len(res.layers)} layers): flagged "
            f"{', '.join(res.flagged) or 'none'}")
        results[f"parameters/{order}"] = res
    if retrain is not None:
        t0 = time.perf_counter()
        if retrain == "mlp":
            spec = cfg["model"]["preset"] if cfg["model"]["preset"] is not None else dict(
                cfg["model"]["params"])
            res = data_randomisation(dataset, methods, params=spec, model=model, X=X, R=R,
                                     max_epochs=s["data_max_epochs"], **common)
        else:
            log(f"data randomisation: refitting a clone of {_model_kind(est, model_info)} on "
                f"permuted labels (random_state left None set to the seed {cfg['seed']})")
            res = data_randomisation(dataset, methods, model=model, X=X, R=R,
                                     train=_refit_with_trees(est), **common)
        stages.add("sanity/data", time.perf_counter() - t0, model_rows=res.stats["model_rows"])
        log(f"data randomisation: flagged {', '.join(res.flagged) or 'none'}")
        results["data/labels"] = res
    table, flags = _tidy(results) if results else (None, None)
    flagged = _flagged(flags, names) if results else []

    rel = None
    meta = cfg["meta"] if "meta" in cfg.get("sections", ()) else None
    t0 = time.perf_counter()
    atts = {m: group_attributions(attribute(model, X, R, m, **opts[m]), grp,
                                  name=f"the attributions of {m!r}") for m in names}
    ck.save_npz(out / "attributions.npz", atts)
    stages.add("sanity/attributions", time.perf_counter() - t0)
    if meta is not None:
        t0 = time.perf_counter()
        rel = metric_reliability(model, X, R, atts, metrics=list(meta["metrics"]),
                                 n_perturbations=meta["n_perturbations"], noise=meta["noise"],
                                 tolerance=meta["tolerance"], tests=list(meta["tests"]),
                                 seed=cfg["seed"], groups=grp, progress=progress)
        stages.add("sanity/reliability", time.perf_counter() - t0,
                   model_rows=rel.stats["model_rows"])
        for test, why in rel.stats.get("skipped", {}).items():
            log(f"metric reliability: {test} not run ({why})")

    if results:
        ck.atomic_write_text(out / "sanity.csv", table.to_csv(index=False))
        ck.atomic_write_text(out / "sanity_flags.csv", flags.to_csv(index=False))
    else:  # an earlier run's tables would describe checks this one did not run
        for name in ("sanity.csv", "sanity_flags.csv"):
            (out / name).unlink(missing_ok=True)
    if rel is not None:
        ck.atomic_write_text(out / "reliability.csv", rel.table.to_csv(index=False))
        ck.atomic_write_text(out / "reliability_tests.csv", rel.tests.to_csv(index=False))
    else:  # an earlier run's tables would describe other metrics
        for name in ("reliability.csv", "reliability_tests.csv"):
            (out / name).unlink(missing_ok=True)
    ref = s["reference"]
    pairs_text = (f"{X.shape[0]} pairs of {data_info['name']} test rows against "
                  + ("the training mean" if ref == "training_mean" else f"policy {ref}"))
    text = _markdown(results, flagged, rel, meta, pairs_text, skipped)
    header = run_header(data_info, model_info, {"reference": ref})
    ck.atomic_write_text(out / "summary.md", header + "\n" + text)
    figs = _figures(results, rel, out, f"Sanity checks on {data_info['name']}")
    manifest = run_manifest(
        cfg, out, before, data_info=data_info, model_info=model_info, model_metrics=metrics,
        stages=stages, used=model_files(model_info),
        after_model={"sanity": {
            "pairs": int(X.shape[0]), "reference": ref, "methods": names,
            "flagged": flagged, "skipped": skipped,
            "groups": None if grp is None else data_info["groups"],
            "tests": {k: {"kind": r.kind, "order": r.order, "layers": list(r.layers),
                          "flagged": r.flagged} for k, r in results.items()},
            "reliability": None if rel is None else {
                "metrics": list(rel.table["metric"]), "skipped": rel.stats.get("skipped", {})}}},
        compute={"device": cfg["compute"]["device"], "backend": "serial",
                 "seconds_total": time.perf_counter() - t_all})
    return SanityRun(out=out, config=cfg, results=results, table=table, flags=flags,
                     reliability=rel, flagged=flagged, manifest=manifest, markdown=text,
                     figures=figs)
