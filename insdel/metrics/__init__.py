"""The field's faithfulness metrics from one engine (issue #17).

Every metric is a :class:`~insdel.metrics.base.Metric` subclass, one per metric, grouped in one
module per family: :mod:`.insertion_deletion` (insdel's ABC and AUC), :mod:`.quantus_family`
(Quantus' faithfulness metrics), :mod:`.beexai_family` (BEExAI's faithfulness table),
:mod:`.xaibench_family` (XAI-Bench's faithfulness, for conditional removal),
:mod:`.openxai_family` (OpenXAI's PGI / PGU) and :mod:`.ground_truth` (OpenXAI's agreement with a
known attribution). Each takes ``(f, X, R, A, *, groups=None, ...)`` with R from a policy, and
documents its source and how it maps to regression.

:func:`evaluate_metrics` runs many metrics on many methods' attributions with one
:class:`~insdel.metrics.base.MetricContext`: a hybrid point needed by several metrics or methods is
evaluated once.

Registry verbs as elsewhere in insdel (CONTRIBUTING.md): :func:`available` lists names, :func:`get`
gives a metric's class, :func:`options_of` its options and defaults, :func:`build` an instance with
options, :func:`register` / :func:`unregister` add and remove user metrics; :func:`catalogue`
describes them all.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .._progress import progress_bar
from .._registry import Registry, check_options, signature_options
from .._stats import mean_se
from .._validation import repeated
from ..adapter import ModelLike
from .base import Metric, MetricContext, describe

__all__ = ["Metric", "MetricContext", "available", "get", "build", "catalogue",
           "evaluate_metrics", "MetricResults", "register", "unregister", "options_of",
           "summary_markdown", "FAMILY_MODULES"]

#: Family modules, in catalogue order. A module that is not there yet is skipped.
FAMILY_MODULES = ("insertion_deletion", "quantus_family", "beexai_family", "openxai_family",
                  "xaibench_family", "ground_truth")

def _check_entry(name: str, cls) -> None:
    if not (isinstance(cls, type) and issubclass(cls, Metric)) or not cls.name:
        raise TypeError(f"register takes a Metric subclass with a name; got {cls!r}.")
    if cls.name != name:
        raise ValueError(f"metric class {cls.__name__} is named {cls.name!r}; register it as "
                         f"{cls.name!r}, not {name!r} (its scores are listed under its name).")


def _load_families(reg: Registry) -> None:
    for mod in FAMILY_MODULES:
        try:
            m = importlib.import_module(f"{__name__}.{mod}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{mod}":
                raise
            continue
        for obj in vars(m).values():
            if (isinstance(obj, type) and issubclass(obj, Metric) and obj.name
                    and obj.__module__ == m.__name__):
                reg.register(obj.name, obj)


_REGISTRY = Registry("metric", check=_check_entry, loader=_load_families)


def _load() -> dict[str, type[Metric]]:
    """name -> class, in catalogue order (the family modules', then user metrics)."""
    return _REGISTRY._all()


def register(name: str | type[Metric], entry: type[Metric] | None = None, *,
             overwrite: bool = False):
    """Register the :class:`Metric` subclass ``entry`` as ``name`` (its ``name`` attribute).

    Also a decorator: ``@register`` or ``@register("my_metric")`` on the class (``register(cls)``
    registers it under ``cls.name``). Returns the class.
    """
    if isinstance(name, type):  # @register / register(cls)
        if entry is not None:
            raise TypeError("register(name, entry): give the name first.")
        if not issubclass(name, Metric) or not name.name:
            raise TypeError(f"register takes a Metric subclass with a name; got {name!r}.")
        return _REGISTRY.register(name.name, name, overwrite=overwrite)
    if entry is None:
        return lambda cls: _REGISTRY.register(name, cls, overwrite=overwrite)
    return _REGISTRY.register(name, entry, overwrite=overwrite)


def unregister(name: str) -> None:
    """Remove the metric ``name``."""
    _REGISTRY.unregister(name)


def available(family: str | None = None) -> list[str]:
    """Names of the registered metrics, sorted (of one ``family`` if given)."""
    reg = _load()
    return sorted(k for k, c in reg.items() if family is None or c.family == family)


def get(name: str) -> type[Metric]:
    """The :class:`Metric` subclass registered as ``name`` (nothing built).

    Raises
    ------
    insdel.UnknownNameError
        Unknown name (a ``ValueError``; with the closest names and the available ones).
    """
    return _REGISTRY.get(name)


def build(name: str | Metric, **options) -> Metric:
    """The metric ``name`` built with ``options`` (a :class:`Metric` instance passes through).

    Raises
    ------
    insdel.UnknownNameError
        Unknown name (with the closest names).
    ValueError
        An option the metric does not take (with the closest ones).
    """
    if isinstance(name, Metric):
        if options:
            raise ValueError(f"options are given to an already built metric {name!r}.")
        return name
    cls = get(name)
    valid = list(options_of(name))
    check_options(f"metric {name!r}", options, valid)
    try:
        return cls(**options)
    except (TypeError, ValueError) as e:  # the same type, naming the metric and its options
        raise type(e)(f"metric {name!r}: {e} (its options are {valid})") from None


def options_of(name: str) -> dict[str, object]:
    """The keyword options the metric ``name`` takes, with their defaults."""
    return signature_options(get(name).__init__, skip=("self",))


def catalogue() -> pd.DataFrame:
    """One row per registered metric: name, family, source, direction, default options."""
    return pd.DataFrame([describe(c()) for c in _load().values()])


@dataclass
class MetricResults:
    """Scores of every (metric, method, pair).

    Attributes
    ----------
    scores : pandas.DataFrame
        Long table: ``pair, method, metric, value``.
    directions : dict
        metric -> True when higher is better.
    stats : dict
        Hybrid points requested by all metrics and distinct points evaluated, model rows.
    """

    scores: pd.DataFrame
    directions: dict
    stats: dict = field(default_factory=dict)

    def wide(self) -> pd.DataFrame:
        """(pair, method) x metric."""
        return self.scores.pivot_table(index=["pair", "method"], columns="metric",
                                       values="value", sort=False)

    def summary(self, clusters=None) -> pd.DataFrame:
        """Mean and standard error per method and metric (NaN scores left out and counted).

        ``clusters`` (one unit id per pair, e.g. a policy's ``Pairing.cluster``): standard errors
        over the independent units (column ``n_units``; a pair and its mirror are one unit), means
        over the pairs. None: every pair is a unit."""
        g = self.scores.groupby(["metric", "method"], sort=False)["value"]
        out = pd.DataFrame({"mean": g.mean(), "std_error": g.sem(), "n": g.count(),
                            "n_nan": g.apply(lambda v: int(v.isna().sum()))}).reset_index()
        if clusters is not None:
            cl = np.asarray(clusters)
            se, units = [], []
            for _, d in self.scores.groupby(["metric", "method"], sort=False):
                ok = d["value"].notna().to_numpy()
                _, s, u = mean_se(d["value"].to_numpy()[ok], cl[d["pair"].to_numpy()[ok]])
                se.append(s)
                units.append(u)
            out["std_error"], out["n_units"] = se, units
        else:
            out["n_units"] = out["n"]
        out["higher_is_better"] = out["metric"].map(self.directions)
        return out

    def ranks(self) -> pd.DataFrame:
        """Rank of each method per metric (1 = best by the metric's direction), from the means."""
        s = self.summary()
        s["rank"] = s.groupby("metric")["mean"].rank(ascending=False, method="average")
        flip = ~s["higher_is_better"].astype(bool)
        s.loc[flip, "rank"] = s[flip].groupby("metric")["mean"].rank(ascending=True,
                                                                      method="average")
        return s.pivot(index="method", columns="metric", values="rank")

    def to_markdown(self, digits: int = 3) -> str:
        """method x metric table of means ± standard errors (↑ / ↓ marks the good direction)."""
        return summary_markdown(self.summary(), digits)


def summary_markdown(summary: pd.DataFrame, digits: int = 3) -> str:
    """A summary (:meth:`MetricResults.summary`, or one policy's rows of a run's
    ``metrics_summary.csv``) as a method x metric Markdown table of means ± standard errors, the
    good direction marked ↑ (higher is better) or ↓."""
    metrics = list(dict.fromkeys(summary["metric"]))
    methods = list(dict.fromkeys(summary["method"]))
    up = dict(zip(summary["metric"], summary["higher_is_better"], strict=False))
    idx = summary.set_index(["metric", "method"])
    lines = ["| method | " + " | ".join(f"{m} {'↑' if up[m] else '↓'}" for m in metrics) + " |",
             "|---|" + "---:|" * len(metrics)]
    for me in methods:
        cells = [f"{idx.loc[(mt, me), 'mean']:.{digits}g} ± {idx.loc[(mt, me), 'std_error']:.2g}"
                 for mt in metrics]
        lines.append(f"| {me} | " + " | ".join(cells) + " |")
    if "n_units" in summary and (pd.to_numeric(summary["n_units"])
                                 < pd.to_numeric(summary["n"])).any():
        lines.append("\nStandard errors over independent units, not pairs: a pair and its "
                     "mirror (the same two points the other way round) are one unit; means over "
                     "pairs.")
    return "\n".join(lines)


def evaluate_metrics(f: ModelLike, X: ArrayLike, R: ArrayLike,
                     attributions: Mapping[str, ArrayLike], *,
                     metrics: Sequence[str | Metric] | None = None, groups=None, seed: int = 0,
                     batch_size: int | None = None, ground_truth: ArrayLike | None = None,
                     explainers: Mapping | None = None, progress: bool | None = None,
                     removal=None) -> MetricResults:
    """Score every method's attributions on every metric, each distinct hybrid evaluated once.

    Parameters
    ----------
    f : model
    X, R : array_like (B, n)
        Targets and their references (from a policy).
    attributions : mapping
        method name -> attributions (B, n) (or per group (B, m)).
    metrics : sequence of names or Metric instances, optional
        Default: every registered metric that needs neither a ground truth nor an explainer
        (plus the ground-truth ones when ``ground_truth`` is given, the explainer ones when
        ``explainers`` is).
    groups : optional
        Units that move together.
    seed : int, default 0
        Seed of the random draws (each metric and method has its own stream).
    ground_truth : array_like (B, n), optional
        Known attributions, for the ground-truth agreement metrics.
    explainers : mapping, optional
        method name -> callable ``(X, R) -> A``, for metrics that re-explain perturbed inputs
        (sensitivity).
    removal : str or insdel.removal.Removal, optional
        What a removed unit becomes (:mod:`insdel.removal`); None: the baseline R. Every metric
        that reads coalition values reads the removal's; a metric that builds its own points
        (noise, imputation) does not, and is listed in ``stats["ignores_removal"]`` with a
        warning (one that needs R refuses a removal without one).

    Returns
    -------
    MetricResults
    """
    if not isinstance(attributions, Mapping) or not attributions:
        raise ValueError("attributions must be a non-empty mapping method -> (B, n) array.")
    reg = _load()
    if metrics is None:
        metrics = [n for n, c in reg.items()
                   if (not c.needs_ground_truth or ground_truth is not None)
                   and (not c.needs_explainer or explainers is not None)]
    ms = [build(m) for m in metrics]
    names = [m.name for m in ms]
    dup = repeated(names)
    if dup:
        raise ValueError(f"metrics: {dup} given more than once; give each once.")
    ctx = MetricContext(f, X, R, groups=groups, seed=seed, batch_size=batch_size,
                        removal=removal)
    e0 = 0 if ctx.model is None else ctx.model.n_evals  # f may be a Model that counted before
    ignores: list[str] = []
    As = {k: ctx.unit_attributions(v, name=f"attributions[{k!r}]") for k, v in
          attributions.items()}
    gt = None if ground_truth is None else ctx.unit_attributions(ground_truth,
                                                                 name="ground_truth")
    rows = []
    with progress_bar(total=len(ms) * len(As), desc="metrics", unit="metric",
                      enable=progress) as bar:
        for metric in ms:
            for method, A in As.items():
                kw = {}
                if metric.needs_ground_truth:
                    if gt is None:
                        raise ValueError(f"metric {metric.name!r} needs ground_truth=.")
                    kw["ground_truth"] = gt
                if metric.needs_explainer:
                    if not explainers or method not in explainers:
                        raise ValueError(f"metric {metric.name!r} re-explains perturbed inputs: "
                                         f"give explainers={{{method!r}: callable(X, R) -> A}}.")
                    kw["explainer"] = explainers[method]
                before = ctx.cache.n_removing
                v = np.asarray(metric.compute(ctx, A, method=method, **kw), dtype=np.float64)
                if (ctx.removal is not None and ctx.cache.n_removing == before
                        and metric.name not in ignores and not metric.needs_ground_truth):
                    ignores.append(metric.name)
                if v.shape != (ctx.B,):
                    raise RuntimeError(f"metric {metric.name!r} returned shape {v.shape}; "
                                       f"expected ({ctx.B},).")
                rows.append(pd.DataFrame({"pair": np.arange(ctx.B), "method": method,
                                          "metric": metric.name, "value": v}))
                bar.update(1)
    if ignores:
        import warnings

        warnings.warn(f"metrics {ignores} build their own points and do not read removal "
                      f"{ctx.game.name!r}: their scores are those of the model alone.",
                      stacklevel=2)
    # a game without a model (a closed-form game such as the tree game) evaluates no model row
    stats = {**ctx.stats,
             "model_rows": 0 if ctx.model is None else int(ctx.model.n_evals - e0)}
    if ctx.removal is not None:
        stats.update(removal=ctx.game.params(), ignores_removal=ignores)
    return MetricResults(scores=pd.concat(rows, ignore_index=True),
                         directions={m.name: m.higher_is_better for m in ms}, stats=stats)
