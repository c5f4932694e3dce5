"""How reliable is a faithfulness metric? MetaQuantus' meta-evaluation (Hedström et al., 2023).

A metric is **resilient** when minor perturbations of the evaluation problem (the model's
parameters or the inputs moved so slightly that the predictions barely change) leave its scores
and its ranking of the methods where they were, and **reactive** when disruptive perturbations
(the model randomised, the attributions shuffled) move them. MetaQuantus measures both with two
consistency criteria per perturbation (``metaquantus/meta_evaluation.py``):

IAC (intra-consistency)
    The p-value of the Wilcoxon signed-rank test (two-sided, ``zero_method="zsplit"``) between a
    method's unperturbed scores q and perturbed scores q̂ over the pairs: IAC_NR = p under minor
    perturbations (high: same distribution), IAC_AR = 1 - p under disruptive ones. Here, when
    every difference is 0 the p-value is 1 (no evidence of a difference; scipy returns NaN or
    raises there).
IEC (inter-consistency)
    IEC_NR: the fraction of (pair, position) where the methods sorted by their scores
    (``argsort`` over the methods, per pair) are the same before and after; IEC_AR: the fraction
    of (method, pair) whose disrupted score is strictly worse than the unperturbed one by the
    metric's direction.

Resilience is the mean of IAC_NR and IEC_NR over the resilience tests, reactivity the mean of
IAC_AR and IEC_AR over the adversarial tests, each in [0, 1]; MC (meta-consistency) is the mean of
the four. An ideal metric sits at (1, 1).

Deviations from MetaQuantus, for regression:

* the "prediction unchanged" condition of a minor perturbation (MetaQuantus: the same predicted
  class) is ``|f~(x) - f(x)| <= tolerance * sd(f(X))`` and the same for r; pairs that fail are
  left out of that perturbation's comparison (the kept fraction is reported);
* the input noise is Gaussian, ``noise * sd_j`` per feature (MetaQuantus: uniform ``±noise``),
  added to the targets x only, and not where x_j = r_j (so each pair's differing units stay) nor
  to the columns of a feature group of several columns (a one-hot categorical stays one-hot);
* the input adversary is the attributions shuffled within each pair (MetaQuantus: large input
  noise); the model adversary re-initialises every layer (``reset_parameters()``) instead of
  large multiplicative noise;
* by default the attributions are held fixed and only the evaluation problem is perturbed; with
  ``explainers`` a method's attributions are recomputed on each perturbed model and input as in
  MetaQuantus;
* every perturbed problem's metrics are computed together with
  :func:`insdel.metrics.evaluate_metrics` under the same ``seed`` (common random numbers), so the
  perturbation is the only thing that differs, and each distinct model row of a perturbation is
  evaluated once for all metrics and methods.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .._progress import progress_bar
from .._validation import (
    check_pairs,
    check_positive_int,
    check_progress,
    check_scalar,
    check_seed,
)
from ..adapter import Model, ModelLike, as_model, torch_kind
from ..groups import check_groups, group_attributions
from ..ordering import random_permutations
from .randomisation import _check_layers, randomised_models

__all__ = ["metric_reliability", "ReliabilityResult", "RESILIENCE_TESTS", "ADVERSARIAL_TESTS"]

#: Minor perturbations (noise resilience) and disruptive ones (adversarial reactivity).
RESILIENCE_TESTS = ("model_noise", "input_noise")
ADVERSARIAL_TESTS = ("model_randomisation", "attribution_shuffle")
_MODEL_TESTS = ("model_noise", "model_randomisation")


@dataclass
class ReliabilityResult:
    """A metric's resilience and reactivity.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per metric: ``resilience``, ``reactivity``, ``mc``, ``IAC_NR``, ``IEC_NR``,
        ``IAC_AR``, ``IEC_AR``, ``higher_is_better``.
    tests : pandas.DataFrame
        One row per (metric, test): ``metric, test, kind`` (resilience / reactivity), ``iac``,
        ``iec``, ``kept`` (mean fraction of pairs compared), ``perturbations``.
    scores : pandas.DataFrame
        Every score: ``test, perturbation, pair, method, metric, value`` (test ``"none"``: the
        unperturbed problem).
    stats : dict
        ``model_rows`` (all evaluate_metrics calls), ``calls``, ``seconds``, ``skipped`` (tests
        that could not run on this model, with why).
    """

    table: pd.DataFrame
    tests: pd.DataFrame
    scores: pd.DataFrame
    stats: dict = field(default_factory=dict)

    def to_markdown(self, digits: int = 3) -> str:
        """One row per metric: resilience, reactivity, MC and the four criteria."""
        cols = ["resilience", "reactivity", "mc", "IAC_NR", "IEC_NR", "IAC_AR", "IEC_AR"]
        lines = ["| metric | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
        for r in self.table.itertuples(index=False):
            lines.append(f"| {r.metric} | " + " | ".join(
                f"{getattr(r, c):.{digits}g}" for c in cols) + " |")
        if self.stats.get("skipped"):
            lines.append("\nNot run: " + "; ".join(f"{k} ({v})" for k, v in
                                                   self.stats["skipped"].items()) + ".")
        return "\n".join(lines)


def _wilcoxon_p(q: np.ndarray, qh: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value (zsplit); 1 when every difference is 0, NaN with
    fewer than two comparable pairs."""
    from scipy.stats import wilcoxon

    ok = np.isfinite(q) & np.isfinite(qh)
    q, qh = q[ok], qh[ok]
    if q.size < 2:
        return float("nan")
    if np.all(q == qh):
        return 1.0
    return float(wilcoxon(q, qh, zero_method="zsplit", alternative="two-sided").pvalue)


def _perturb_parameters(module, noise: float, seed: int):
    """A deep copy whose every parameter is multiplied by ``1 + noise * N(0, 1)`` elementwise
    (MetaQuantus' multiplicative model noise, mean 1)."""
    import torch

    m = copy.deepcopy(module)
    g = torch.Generator().manual_seed(int(seed))
    with torch.no_grad():
        for p in m.parameters():
            eps = torch.randn(p.shape, generator=g, dtype=p.dtype)
            p.mul_(1 + noise * eps)
    return m


def metric_reliability(f: ModelLike, X: ArrayLike, R: ArrayLike,
                       attributions: Mapping[str, ArrayLike], *, metrics: Sequence,
                       n_perturbations: int = 5, noise: float = 0.01, tolerance: float = 0.05,
                       tests: Sequence[str] = RESILIENCE_TESTS + ADVERSARIAL_TESTS,
                       explainers: Mapping | None = None, seed: int = 0, groups=None,
                       batch_size: int | None = None,
                       progress: bool | None = None) -> ReliabilityResult:
    """Noise resilience and adversarial reactivity of faithfulness metrics (MetaQuantus).

    Parameters
    ----------
    f : model
        Anything :func:`insdel.as_model` accepts; the model tests (``model_noise``,
        ``model_randomisation``) need an eager ``torch.nn.Module`` and are skipped otherwise
        (``stats["skipped"]`` says so).
    X, R : array_like (B, n)
        Targets and references (from a policy).
    attributions : mapping
        method -> attributions (B, n), at least two methods (the rankings compare methods).
    metrics : sequence of names or Metric instances
        The metrics to meta-evaluate (:mod:`insdel.metrics`).
    n_perturbations : int, default 5
        Perturbations per test.
    noise : float, default 0.01
        Scale of the minor perturbations: parameters multiplied by ``1 + noise * N(0, 1)``;
        targets moved by ``noise * sd_j * N(0, 1)`` (``sd_j`` the feature's standard deviation
        over X; features where x_j = r_j stay).
    tolerance : float, default 0.05
        A minor perturbation keeps a pair when its predictions f(x), f(r) move by at most
        ``tolerance * sd(f(X))`` (the regression form of MetaQuantus' "same predicted class").
    tests : sequence of str
        Some of ``model_noise``, ``input_noise`` (resilience), ``model_randomisation``,
        ``attribution_shuffle`` (reactivity).
    explainers : mapping, optional
        method -> method name or callable ``(X, R) -> A``: that method's attributions are
        recomputed (:func:`insdel.attribution.attribute`) on every perturbed model and input;
        other methods keep their given attributions.
    seed : int, default 0
        Seeds the perturbations; the metrics' own draws use ``seed`` on every problem (common
        random numbers).
    groups, batch_size, progress
        As in :func:`insdel.metrics.evaluate_metrics` (attributions per column or per group).
        ``input_noise`` leaves the columns of a group of several columns (a one-hot categorical)
        as they are: noise would put them off the data.

    Returns
    -------
    ReliabilityResult
    """
    from ..attribution import attribute
    from ..metrics import build, evaluate_metrics

    check_progress(progress)
    X, R = check_pairs(X, R)
    if not isinstance(attributions, Mapping) or len(attributions) < 2:
        raise ValueError("attributions must be a mapping method -> (B, n) array with at least "
                         "two methods (the inter-consistency compares their rankings).")
    methods = list(attributions)
    grp = check_groups(groups, X.shape[1])
    # one attribution per unit (a group's columns summed): the shuffles permute units
    As = {k: group_attributions(v, grp, name=f"attributions[{k!r}]")
          for k, v in attributions.items()}
    ms = [build(m) for m in metrics]
    names = [m.name for m in ms]
    if not names:
        raise ValueError("metrics is empty.")
    n_perturbations = check_positive_int(n_perturbations, "n_perturbations")
    noise = check_scalar(noise, "noise", float, min_val=0.0, include_boundaries="neither",
                         finite=True)
    tolerance = check_scalar(tolerance, "tolerance", float, min_val=0.0, finite=True)
    seed = check_seed(seed)
    tests = [tests] if isinstance(tests, str) else list(tests)
    for t in tests:
        if t not in RESILIENCE_TESTS + ADVERSARIAL_TESTS:
            raise ValueError(f"tests must be among {list(RESILIENCE_TESTS + ADVERSARIAL_TESTS)}; "
                             f"got {t!r}.")
    explainers = dict(explainers or {})
    unknown = sorted(set(explainers) - set(methods))
    if unknown:
        raise ValueError(f"explainers names {unknown}, which are not among the methods {methods}.")
    skipped = {}
    module = None
    if any(t in _MODEL_TESTS for t in tests):
        if torch_kind(f) == "module":
            module = f.torch_module if isinstance(f, Model) else f
            layers = _check_layers(module, None)
        else:
            for t in tests:
                if t in _MODEL_TESTS:
                    skipped[t] = "needs an eager torch.nn.Module"
            tests = [t for t in tests if t not in _MODEL_TESTS]
    if not tests:
        raise ValueError(f"no test can run on this model ({skipped}).")
    out = f.output if isinstance(f, Model) else None
    directions = {m.name: m.higher_is_better for m in ms}

    def wrap(m):
        return as_model(m, output=out, batch_size=batch_size or (
            f.batch_size if isinstance(f, Model) else None))

    model = wrap(module if module is not None else f)
    fX = model(X)
    sd_f = float(np.std(fX)) or 1.0
    sd_x = X.std(axis=0)
    differ = X != R
    if grp is not None:  # a group's columns (a one-hot level) move together or not at all
        differ &= (grp.sizes[grp.labels] == 1)[None, :]
    rows: list[pd.DataFrame] = []
    model_rows = 0
    calls = 0

    def run(g, Xp, attrs):
        nonlocal model_rows, calls
        res = evaluate_metrics(g, Xp, R, attrs, metrics=ms, groups=groups, seed=seed,
                               batch_size=batch_size)
        model_rows += res.stats["model_rows"]
        calls += 1
        return res

    def record(res, test, p, labels):
        s = res.scores[res.scores["method"].isin(labels)].copy()
        s["method"] = s["method"].map(labels)
        s.insert(0, "perturbation", p)
        s.insert(0, "test", test)
        rows.append(s)

    t0 = time.perf_counter()
    # the unperturbed problem, with the shuffled attributions on the same cache (same model)
    shuffles = {}
    if "attribution_shuffle" in tests:
        for p in range(n_perturbations):
            perm = random_permutations(np.random.default_rng([seed, 3, p]),
                                       (X.shape[0], X.shape[1] if grp is None else grp.m))
            for k in methods:
                shuffles[f"{k} (shuffled {p})"] = (p, k, np.take_along_axis(As[k], perm, axis=1))
    base = run(model, X, {**As, **{k: v[2] for k, v in shuffles.items()}})
    record(base, "none", -1, {k: k for k in methods})
    for p in range(n_perturbations):
        if shuffles:
            record(base, "attribution_shuffle", p,
                   {k: v[1] for k, v in shuffles.items() if v[0] == p})
    kept_frac = {}
    todo = [t for t in tests if t != "attribution_shuffle"]
    with progress_bar(len(todo) * n_perturbations, "metric reliability", "problem",
                      enable=progress) as bar:
        for ti, test in enumerate(todo):
            for p in range(n_perturbations):
                rng = np.random.default_rng([seed, ti, p])
                Xp, g = X, model
                if test == "model_noise":
                    g = wrap(_perturb_parameters(module, noise, int(rng.integers(2**31))))
                elif test == "model_randomisation":
                    s = int(rng.integers(2**31))
                    *_, (_, rand) = randomised_models(module, layers, order="cascading", seed=s)
                    g = wrap(rand)
                elif test == "input_noise":
                    Xp = X + np.where(differ, noise * sd_x * rng.standard_normal(X.shape), 0.0)
                attrs = dict(As)
                for k, how in explainers.items():
                    attrs[k] = attribute(g, Xp, R, how)
                if test in RESILIENCE_TESTS:
                    keep = (np.abs(g(Xp) - fX) <= tolerance * sd_f) & (
                        np.abs(g(R) - model(R)) <= tolerance * sd_f)
                    kept_frac[(test, p)] = keep
                res = run(g, Xp, attrs)
                record(res, test, p, {k: k for k in methods})
                bar.update(1)
    scores = pd.concat(rows, ignore_index=True)
    seconds = time.perf_counter() - t0

    # the criteria
    def arr(test, p, metric):
        s = scores[(scores["test"] == test) & (scores["perturbation"] == p)
                   & (scores["metric"] == metric)]
        return s.pivot(index="method", columns="pair", values="value").loc[methods].to_numpy(
            np.float64)

    trows = []
    for metric in names:
        Q = arr("none", -1, metric)
        for test in tests:
            resil = test in RESILIENCE_TESTS
            iac, iec, kept = [], [], []
            for p in range(n_perturbations):
                Qh = arr(test, p, metric)
                keep = kept_frac.get((test, p), np.ones(X.shape[0], bool))
                kept.append(keep.mean())
                pv = [_wilcoxon_p(Q[i, keep], Qh[i, keep]) for i in range(len(methods))]
                if resil:
                    iac.append(np.nanmean(pv) if np.isfinite(pv).any() else np.nan)
                    if keep.any():
                        same = np.argsort(Q[:, keep], axis=0, kind="stable") == np.argsort(
                            Qh[:, keep], axis=0, kind="stable")
                        iec.append(same.mean())
                    else:
                        iec.append(np.nan)
                else:
                    iac.append(1 - np.nanmean(pv) if np.isfinite(pv).any() else np.nan)
                    ok = np.isfinite(Q) & np.isfinite(Qh)
                    worse = (Qh < Q) if directions[metric] else (Qh > Q)
                    iec.append(worse[ok].mean() if ok.any() else np.nan)
            trows.append({"metric": metric, "test": test,
                          "kind": "resilience" if resil else "reactivity",
                          "iac": _nanmean(iac), "iec": _nanmean(iec),
                          "kept": float(np.mean(kept)), "perturbations": n_perturbations})
    tdf = pd.DataFrame(trows)
    summary = []
    for metric in names:
        d = tdf[tdf["metric"] == metric]
        nr, ar = d[d["kind"] == "resilience"], d[d["kind"] == "reactivity"]
        crit = {"IAC_NR": _nanmean(nr["iac"]), "IEC_NR": _nanmean(nr["iec"]),
                "IAC_AR": _nanmean(ar["iac"]), "IEC_AR": _nanmean(ar["iec"])}
        summary.append({"metric": metric,
                        "resilience": _nanmean([crit["IAC_NR"], crit["IEC_NR"]]),
                        "reactivity": _nanmean([crit["IAC_AR"], crit["IEC_AR"]]),
                        "mc": _nanmean(list(crit.values())), **crit,
                        "higher_is_better": directions[metric]})
    return ReliabilityResult(table=pd.DataFrame(summary), tests=tdf, scores=scores,
                             stats={"model_rows": int(model_rows), "calls": calls,
                                    "seconds": seconds, "skipped": skipped,
                                    "noise": noise, "tolerance": tolerance, "seed": seed})


def _nanmean(v) -> float:
    v = np.asarray(list(v), dtype=np.float64)
    return float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
