"""Grade evaluation metrics: do they rank a known-better ordering above a known-worse one?

A **metric** is any callable ``metric(f, X, R, A) -> scores (B,)``, higher is better, where ``A``
(B, n) are attributions whose ordering is the one being scored — the same ``(f, X, R, ...)``
convention as the rest of insdel. Graded by default: every metric of :mod:`insdel.metrics` that
needs only a model (insdel's ABC and AUC, Quantus', BEExAI's and OpenXAI's faithfulness metrics;
a lower-is-better metric is negated), and ABC + ABC' (App. B.1). This module is the grading
registry (the registry verbs of CONTRIBUTING.md): :func:`available`, :func:`get` (the scoring
callable), :func:`options_of`, :func:`register` and :func:`unregister`
(``insdel.functional.grading.register(name, fn)``).

On every case of the catalogue that declares ``grading`` pairs (better, worse) of orderings
(exact-Shapley order vs its reverse and a random order on h(additive) models, the off-manifold
``trap_first`` order on the OOD trap, the §3.4 AUC-optimal order vs the Shapley order), each
metric scores both orderings on every pair; it passes when it never ranks the worse ordering
strictly above the better one, ranks the better one higher on at least one pair and is
defined (not NaN) on every pair.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .._registry import Registry, UnknownNameError
from .._validation import check_orders, check_seed
from ..adapter import ModelLike
from .cases import select

__all__ = ["METRICS", "available", "get", "options_of", "register", "unregister",
           "grade_metrics", "order_scores", "grading_markdown"]

Metric = Callable[[ModelLike, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def _from_catalogue(name: str) -> Metric:
    """A metric of :mod:`insdel.metrics` as ``(f, X, R, A) -> scores``, higher is better (a
    lower-is-better metric is negated)."""
    from .. import metrics as _metrics

    m = _metrics.build(name)

    def score(f: ModelLike, X: ArrayLike, R: ArrayLike, A: ArrayLike) -> np.ndarray:
        v = np.asarray(m(f, X, R, A), dtype=np.float64)
        return v if m.higher_is_better else -v

    score.__name__ = name
    return score


def _gradable() -> list[str]:
    """Metrics of :mod:`insdel.metrics` that need only (f, X, R, A), in catalogue order."""
    from .. import metrics as _metrics

    return [n for n, c in _metrics._load().items()
            if not (c.needs_ground_truth or c.needs_explainer)]


def abc_total(f: ModelLike, X: ArrayLike, R: ArrayLike, A: ArrayLike) -> np.ndarray:
    """ABC + ABC' (App. B.1)."""
    return _from_catalogue("insertion_abc")(f, X, R, A) + _from_catalogue("deletion_abc")(
        f, X, R, A)


#: name -> metric ``(f, X, R, A) -> (B,)``, higher is better, registered here (beside every
#: metric of :mod:`insdel.metrics`, which are graded too).
METRICS: dict[str, Metric] = {"abc_total": abc_total}


def _check_entry(name: str, metric) -> None:
    if not callable(metric):
        raise TypeError(f"metric must be callable (f, X, R, A) -> scores; got "
                        f"{type(metric).__name__}.")


_REGISTERED = Registry("gradable metric", METRICS, check=_check_entry)


def register(name: str, metric: Metric, *, overwrite: bool = False) -> Metric:
    """Register ``metric(f, X, R, A) -> (B,)`` (higher is better) under ``name``; returns it.

    Raises
    ------
    TypeError
        ``metric`` is not callable.
    ValueError
        ``name`` is taken and ``overwrite`` is False.
    """
    return _REGISTERED.register(name, metric, overwrite=overwrite)


def unregister(name: str) -> None:
    """Remove a metric registered here (those of :mod:`insdel.metrics` stay)."""
    _REGISTERED.unregister(name)


def _default_names() -> list[str]:
    return list(dict.fromkeys(_gradable() + list(METRICS)))


def available() -> list[str]:
    """Names of the gradable metrics, sorted: :mod:`insdel.metrics` (those that need only a
    model) and the ones registered here."""
    return sorted(_default_names())


def get(name: str) -> Metric:
    """The scoring callable ``(f, X, R, A) -> scores (B,)``, higher is better, of gradable metric
    ``name``: the one registered here, or a metric of :mod:`insdel.metrics` with its defaults (a
    lower-is-better one negated). Raises :class:`insdel.UnknownNameError` (a ``ValueError``)."""
    if name in METRICS:
        return METRICS[name]
    if name in _gradable():
        return _from_catalogue(name)
    raise UnknownNameError.of("gradable metric", name, available())


def options_of(name: str) -> dict:
    """The options of gradable metric ``name``: none (a metric is called as ``(f, X, R, A)``;
    give options by registering a configured callable)."""
    get(name)  # the unknown-name error
    return {}


def order_scores(orders: ArrayLike) -> np.ndarray:
    """Attribution-like scores (B, n) whose signed ordering is ``orders`` (B, n): the feature at
    step k gets n - k."""
    o = np.asarray(orders)
    if o.ndim != 2:
        raise ValueError(f"orders must have shape (B, n); got {o.shape}.")
    o = check_orders(o, o.shape[1])  # a repeated feature would leave np.empty garbage in A
    B, n = o.shape
    A = np.empty((B, n))
    np.put_along_axis(A, o, np.arange(n, 0, -1, dtype=np.float64)[None, :].repeat(B, 0), axis=1)
    return A


def _metrics(metrics) -> dict[str, Metric]:
    if metrics is None:
        metrics = _default_names()
    if isinstance(metrics, str):
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    out: dict[str, Metric] = {}
    for m in metrics:
        if callable(m):
            out[getattr(m, "__name__", repr(m))] = m
        else:
            out[m] = get(m)
    return out


def grade_metrics(metrics: Sequence[str | Metric] | str | None = None, *, seed: int = 0,
                  cases: Sequence[str] | None = None, rel_tol: float = 1e-9) -> pd.DataFrame:
    """Does each metric rank the known-better ordering above the known-worse one?

    Parameters
    ----------
    metrics : names or callables, or comma-separated str, optional
        Default: every gradable metric (:func:`available`).
    seed : int, default 0
        Seed of the cases' data and of the random orderings.
    cases : list of str, optional
        Tests to use (those without grading pairs are skipped); default all. A grading pair
        restricted to some metrics (``Case.grading``) is not scored by the others.
    rel_tol : float, default 1e-9
        Score differences within ``rel_tol * max(1, |score|)`` count as ties.

    Returns
    -------
    pandas.DataFrame
        Columns ``test, better, worse, metric, better_mean, worse_mean, mean_diff, wins, ties,
        losses, undefined, passed, why`` (``undefined``: pairs where a score is NaN; a metric
        passes only when it is defined on every pair, never loses and wins at least once).

    Raises
    ------
    ValueError
        A metric that does not return one score per pair.
    """
    seed = check_seed(seed)
    ms = _metrics(metrics)
    rows = []
    for case in select(cases):
        if not case.grading:
            continue
        truth = case.truth(seed=seed)
        for better, worse, *scope in case.grading:
            Ab = order_scores(truth.ordering(better, seed=seed))
            Aw = order_scores(truth.ordering(worse, seed=seed))
            for name, metric in ms.items():
                if scope and scope[0] is not None and name not in scope[0]:
                    continue
                sb = np.asarray(metric(truth.f, truth.X, truth.R, Ab), dtype=np.float64)
                sw = np.asarray(metric(truth.f, truth.X, truth.R, Aw), dtype=np.float64)
                B = truth.X.shape[0]
                if sb.shape != (B,) or sw.shape != (B,):
                    raise ValueError(f"metric {name!r} must return one score per pair, shape "
                                     f"({B},); got {sb.shape} and {sw.shape} on test "
                                     f"{case.name!r}.")
                d = sb - sw
                undefined = ~np.isfinite(d)  # NaN on either ordering: the pair decides nothing
                tie = np.abs(d) <= rel_tol * np.maximum(1.0, np.maximum(np.abs(sb), np.abs(sw)))
                wins = int(np.sum((d > 0) & ~tie))
                losses = int(np.sum((d < 0) & ~tie))
                n_undef = int(undefined.sum())
                rows.append({"test": case.name, "better": better, "worse": worse,
                             "metric": name, "better_mean": float(sb.mean()),
                             "worse_mean": float(sw.mean()), "mean_diff": float(d.mean()),
                             "wins": wins, "ties": int(tie.sum()), "losses": losses,
                             "undefined": n_undef,
                             "passed": bool(losses == 0 and wins > 0 and n_undef == 0),
                             "why": case.why})
    out = pd.DataFrame(rows)
    out.attrs["metrics"] = list(ms)
    return out


def grading_markdown(grades: pd.DataFrame) -> str:
    """The metric grades as Markdown: one row per (test, better > worse), one column per metric;
    cells ``PASS +0.42 (6/0/0)`` with the mean score difference and wins / ties / losses
    (``n/a`` where the pair's claim does not cover the metric)."""
    present = set(grades["metric"])
    metrics = [m for m in grades.attrs.get("metrics", []) if m in present]
    metrics += [m for m in dict.fromkeys(grades["metric"]) if m not in metrics]
    head = ["test", "better > worse", *metrics]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    keys = list(dict.fromkeys(zip(grades["test"], grades["better"], grades["worse"],
                                  strict=True)))
    idx = grades.set_index(["test", "better", "worse", "metric"])
    for t, b, w in keys:
        cells = []
        for m in metrics:
            if (t, b, w, m) not in idx.index:
                cells.append("n/a")
                continue
            r = idx.loc[(t, b, w, m)]
            undef = f", {r['undefined']} NaN" if r.get("undefined", 0) else ""
            cells.append(f"{'PASS' if r['passed'] else 'fail'} {r['mean_diff']:+.3g} "
                         f"({r['wins']}/{r['ties']}/{r['losses']}{undef})")
        lines.append("| " + " | ".join([t, f"{b} > {w}", *cells]) + " |")
    tally = grades.groupby("metric", sort=False)["passed"].agg(["sum", "count"])
    lines.append("| **passed** | | " + " | ".join(
        f"**{int(tally.loc[m, 'sum'])}/{int(tally.loc[m, 'count'])}**" for m in metrics) + " |")
    return "\n".join(lines)
