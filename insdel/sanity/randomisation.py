"""Randomisation sanity checks of attribution methods (Adebayo et al., 2018; Hedström et al., 2024).

An explanation that does not change when the model's parameters (or the labels it was trained on)
are randomised cannot be explaining the model. :func:`parameter_randomisation` randomises an eager
``torch.nn.Module`` layer by layer from the output down and recomputes every method's attributions
on each randomised copy; :func:`data_randomisation` retrains the model on permuted labels (the
paper's MLP, or a clone of a scikit-learn estimator).
Both compare the attributions with the trained model's, pair by pair, and return a
:class:`SanityResult` (docs/sanity.md).

Measures (per pair, then mean and standard error over the pairs):

``spearman``
    Spearman rank correlation of the signed ``a`` with ``a_0`` (the trained model's
    attributions), i.e. of the orders the insertion and deletion tests follow (insdel's
    ``order="signed"``). NaN where a row is constant. The flags read it.
``spearman_abs``
    Spearman rank correlation of ``|a|`` with ``|a_0|``: the measure of Adebayo et al.'s figures
    and Quantus' ``MPRT`` default (``abs=True``; its max normalisation does not change ranks).
    Methods that multiply by ``x - r`` (integrated gradients, Input×Gradient, DeepLIFT) keep the
    ranks of ``|x - r|`` whatever the model, so on a fully randomised model their ``spearman_abs``
    stays near the rank correlation of ``|a_0|`` with ``|x - r|`` (around 0.5 for standard normal
    targets and r = 0) although they do depend on the model: it is reported, not flagged.
``sign_agreement``
    Fraction of the units whose sign (-1, 0, +1) is the same in ``a`` and ``a_0``.
``complexity`` / ``complexity_rise``
    The efficient MPRT (eMPRT, Hedström et al. 2024): the entropy of ``|a| / sum |a|`` divided by
    ``ln m`` (insdel's ``complexity`` metric, ``normalize="log"``), and its relative rise
    ``(H_k - H_0) / H_0`` from the trained model to step k. A model-sensitive explanation becomes
    noisier (its entropy rises) when the model is randomised; Quantus' ``EfficientMPRT`` scores
    the same rise, on a histogram entropy of the attribution values (built for images with many
    pixels; with tens of tabular features the distribution entropy is the meaningful one).
``insertion_abc`` / ``deletion_abc`` / ``*_abc_change``
    The mean ABC of the method's ordering on the model of step k (:func:`insdel.evaluate`), and
    the per-pair change from the trained model's ABC. A randomised network's outputs are on a
    scale of their own (often orders of magnitude smaller), so these are not compared across
    steps.
``insertion_abc_on_trained`` / ``deletion_abc_on_trained``
    The ABC, on the *trained* model, of the ordering the method gives on the model of step k:
    the ABC flag compares it with step 0 on one model's scale.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import time
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .._progress import progress_bar
from .._stats import mean_se
from .._validation import (
    check_bool,
    check_choice,
    check_clusters,
    check_pairs,
    check_progress,
    check_scalar,
    check_seed,
    repeated,
)
from ..adapter import Model, ModelLike, as_model, torch_kind

__all__ = ["parameter_randomisation", "data_randomisation", "SanityResult", "randomisable_layers",
           "randomised_models", "is_estimator", "refit_clone", "SIMILARITIES",
           "DEFAULT_THRESHOLD", "DEFAULT_ABC_TOLERANCE"]

#: The similarity measures between a step's attributions and the trained model's.
SIMILARITIES = ("spearman", "spearman_abs", "sign_agreement")
#: A method whose mean Spearman similarity stays above this after full randomisation is flagged.
DEFAULT_THRESHOLD = 0.5
#: A method whose mean ABC on the fully randomised model is within this fraction of its trained
#: ABC (``|ABC_rand - ABC_0| <= tol * |ABC_0|``) is flagged.
DEFAULT_ABC_TOLERANCE = 0.1
#: The orders in which layers are randomised (``order=``): a layer order, not an ordering of
#: features (those are :mod:`insdel.ordering`'s). ``ORDERS`` is the same tuple.
LAYER_ORDERS = ("cascading", "independent")
ORDERS = LAYER_ORDERS


# -- the measures --------------------------------------------------------------------------------

def _similarity(name: str, a0: np.ndarray, a: np.ndarray) -> np.ndarray:
    from ..metrics.base import spearman_rows

    if name == "spearman":
        return spearman_rows(a0, a)
    if name == "spearman_abs":
        return spearman_rows(np.abs(a0), np.abs(a))
    return (np.sign(a0) == np.sign(a)).mean(axis=1)


def _complexity(A: np.ndarray) -> np.ndarray:
    """The entropy of ``|a| / sum |a|`` over ``ln m`` per row (insdel's ``complexity`` metric)."""
    from ..metrics import build

    return build("complexity", normalize="log").compute(None, A)


# -- the layers ----------------------------------------------------------------------------------

def _module_of(f: ModelLike, what: str):
    """The eager torch module inside ``f``, or a TypeError saying what is supported."""
    kind = torch_kind(f)
    if kind != "module":
        got = {"torchscript": "a TorchScript module", "exported": "a torch.export program"}.get(
            kind, type(f).__name__)
        raise TypeError(
            f"{what} needs an eager torch.nn.Module (each layer's parameters are re-initialised "
            "with its own reset_parameters() on a deep copy); got " + got + ". Load the eager "
            "module (e.g. insdel.models.load_model) or use data_randomisation, which retrains.")
    return f.torch_module if isinstance(f, Model) else f


def randomisable_layers(module) -> list[str]:
    """Names of the layers :func:`parameter_randomisation` can randomise, input side first: the
    sub-modules that hold parameters of their own and have ``reset_parameters()`` (Quantus'
    choice, restricted to modules with parameters), in ``named_modules()`` order."""
    return [name for name, m in module.named_modules()
            if callable(getattr(m, "reset_parameters", None))
            and any(True for _ in m.parameters(recurse=False))]


def _check_layers(module, layers) -> list[str]:
    """The layers to randomise, output side first (reverse ``named_modules()`` order)."""
    if not any(True for _ in module.parameters()):
        raise ValueError(f"the model ({type(module).__name__}) has no parameters to randomise.")
    ok = randomisable_layers(module)
    if not ok:
        raise ValueError(f"the model ({type(module).__name__}) has parameters but no layer with "
                         "reset_parameters() to re-initialise them.")
    if layers is None:
        return ok[::-1]
    if isinstance(layers, str):
        layers = [layers]
    layers = list(layers)
    if not layers:
        raise ValueError("layers is empty; give None (every randomisable layer) or names of "
                         f"{ok}.")
    dup = repeated(layers)
    if dup:
        raise ValueError(f"layers: {dup} given more than once.")
    names = dict(module.named_modules())
    for name in layers:
        if not isinstance(name, str):
            raise TypeError(f"layers must be layer names (str); got {name!r}.")
        if name not in ok:
            if name in names:
                why = ("has no parameters of its own" if not any(
                    True for _ in names[name].parameters(recurse=False))
                    else "has no reset_parameters()")
                raise ValueError(f"layer {name!r} {why}; randomisable layers: {ok}.")
            close = difflib.get_close_matches(name, ok, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"unknown layer {name!r}.{hint} Randomisable layers: {ok}.")
    return [n for n in ok[::-1] if n in layers]


def _layer_seed(seed: int, name: str) -> int:
    """The torch seed of one layer's re-initialisation: from the run's seed and the layer's name,
    so a layer gets the same weights in both orders and whichever other layers are chosen."""
    return zlib.crc32(f"{seed}:{name}".encode())


def randomised_models(module, layers: Sequence[str], *, order: str = "cascading",
                      seed: int = 0) -> Iterator[tuple[str, Any]]:
    """Yield ``(layer, model)`` for each layer of ``layers`` in turn: a deep copy of ``module``
    with that layer re-initialised (``independent``) or with it and every layer before it in
    ``layers`` re-initialised (``cascading``, one copy updated in place). Each layer's
    ``reset_parameters()`` runs under its own torch seed; torch's global random state is
    restored afterwards."""
    from ..attribution.base import torch_seed

    order = check_choice("order", order, LAYER_ORDERS)
    work = copy.deepcopy(module) if order == "cascading" else None
    for name in layers:
        target = work if order == "cascading" else copy.deepcopy(module)
        with torch_seed(_layer_seed(seed, name)):
            dict(target.named_modules())[name].reset_parameters()
        yield name, target


# -- the result ----------------------------------------------------------------------------------

@dataclass
class SanityResult:
    """What a randomisation sanity check found.

    Attributes
    ----------
    table : pandas.DataFrame
        Tidy: ``method, step, layer, measure, mean, std_error, n, n_units``; step 0 is the trained
        model (``layer="trained"``), step k the model after the k-th randomisation (``layer``:
        the layer randomised at that step, or ``"permuted labels"``).
    pairs : pandas.DataFrame
        Per pair: ``pair, method, step, layer, measure, value``.
    flags : pandas.DataFrame
        One row per method and check (``similarity``, ``insertion_abc_on_trained``,
        ``deletion_abc_on_trained``):
        ``method, check, value, reference, threshold, flagged, std_error, ci_low, ci_high,
        verdict``: the flag with its uncertainty over the independent units (the 95 % t
        interval of the similarity; for an ABC check, ``std_error`` is that of the per-pair
        change value − reference, paired, and the interval reference + the change's) and in
        words whether the flag (or the pass) holds beyond the noise.
    kind : str
        ``"parameters"`` or ``"data"``.
    order : str
        ``"cascading"``, ``"independent"`` or ``"labels"``.
    layers : list of str
        The layers in step order.
    threshold, abc_tolerance : float
    stats : dict
        ``model_rows`` (model evaluations of the attributions and the ABCs), ``seconds``.
    """

    table: pd.DataFrame
    pairs: pd.DataFrame
    flags: pd.DataFrame
    kind: str
    order: str
    layers: list[str]
    threshold: float = DEFAULT_THRESHOLD
    abc_tolerance: float = DEFAULT_ABC_TOLERANCE
    stats: dict = field(default_factory=dict)

    @property
    def methods(self) -> list[str]:
        return list(dict.fromkeys(self.table["method"]))

    @property
    def measures(self) -> list[str]:
        return list(dict.fromkeys(self.table["measure"]))

    @property
    def default_measure(self) -> str:
        """The first similarity measure computed (what tables and figures show by default)."""
        return next(m for m in self.measures if m in SIMILARITIES)

    @property
    def flagged(self) -> list[str]:
        """Methods with at least one flagged check, in method order."""
        bad = set(self.flags.loc[self.flags["flagged"], "method"])
        return [m for m in self.methods if m in bad]

    def curve(self, method: str, measure: str = "spearman") -> pd.DataFrame:
        """One method's measure by step: ``step, layer, mean, std_error``."""
        t = self.table
        d = t[(t["method"] == method) & (t["measure"] == measure)]
        if d.empty:
            raise KeyError(f"no {measure!r} for method {method!r}; methods {self.methods}, "
                           f"measures {self.measures}.")
        return d[["step", "layer", "mean", "std_error"]].reset_index(drop=True)

    def to_markdown(self, measure: str | None = None, digits: int = 3) -> str:
        """method x step table of one measure's means ± standard errors (default: the first
        similarity measure), then the flags."""
        if measure is None:
            measure = self.default_measure
        t = self.table[self.table["measure"] == measure]
        steps = t[["step", "layer"]].drop_duplicates().sort_values("step")
        head = [f"{s}: {lay}" for s, lay in zip(steps["step"], steps["layer"], strict=True)]
        lines = [f"{measure} ({self.kind} randomisation, {self.order})", "",
                 "| method | " + " | ".join(head) + " |", "|---|" + "---:|" * len(head)]
        idx = t.set_index(["method", "step"])
        for me in self.methods:
            cells = []
            for s in steps["step"]:
                r = idx.loc[(me, s)]
                se = "" if not np.isfinite(r["std_error"]) else f" ± {r['std_error']:.2g}"
                cells.append(f"{r['mean']:.{digits}g}{se}")
            lines.append(f"| {me} | " + " | ".join(cells) + " |")
        words = "verdict" in self.flags.columns  # flags with their 95 % intervals
        lines += ["", "| method | check | value | reference | threshold | flagged |"
                  + (" 95 % interval | in words |" if words else ""),
                  "|---|---|---:|---:|---:|---|" + ("---|---|" if words else "")]
        for r in self.flags.itertuples(index=False):
            row = (f"| {r.method} | {r.check} | {r.value:.{digits}g} | "
                   f"{r.reference:.{digits}g} | {r.threshold:.{digits}g} | "
                   f"{'**yes**' if r.flagged else 'no'} |")
            if words:
                ci = (f"[{r.ci_low:.{digits}g}, {r.ci_high:.{digits}g}]"
                      if np.isfinite(r.ci_low) else "n/a")
                row += f" {ci} | {r.verdict} |"
            lines.append(row)
        return "\n".join(lines)


# -- the shared driver ---------------------------------------------------------------------------

def _method_items(methods) -> list[tuple[str, Any]]:
    """(label, method) pairs: names, callables ``(X, R) -> A``, or a mapping label -> either."""
    from .. import attribution

    if isinstance(methods, (str, bytes)) or callable(methods):
        methods = [methods]
    if isinstance(methods, Mapping):
        items = list(methods.items())
    else:
        items = []
        for m in methods:
            label = attribution.get(m).name if isinstance(m, str) else getattr(
                m, "__name__", type(m).__name__)
            items.append((label, m))
    if not items:
        raise ValueError("methods is empty; give method names or callables (X, R) -> A.")
    dup = repeated([k for k, _ in items])
    if dup:
        raise ValueError(f"methods: {dup} given more than once; give each once (a mapping "
                         "label -> method names two callables of the same name).")
    for label, m in items:
        if isinstance(m, str):
            attribution.get(m)  # an unknown name: UnknownNameError now, before any work
        elif not callable(m) and not hasattr(m, "attribute"):
            raise TypeError(f"method {label!r} must be a method name or a callable (X, R) -> A; "
                            f"got {type(m).__name__}.")
    return items


def _check_similarity(similarity) -> tuple[str, ...]:
    if isinstance(similarity, str):
        similarity = (similarity,)
    similarity = tuple(similarity)
    for s in similarity:
        check_choice("similarity", s, SIMILARITIES)
    if not similarity:
        raise ValueError(f"similarity is empty; give some of {list(SIMILARITIES)}.")
    if repeated(similarity):
        raise ValueError(f"similarity: {repeated(similarity)} given more than once.")
    return similarity


class _Steps:
    """Attributions and ABCs step by step, the per-pair rows of :class:`SanityResult`."""

    def __init__(self, X, R, items, method_options, similarity, abc, modes, clusters, seed,
                 groups=None):
        self.X, self.R = X, R
        self.groups = groups
        self.model0 = None
        self.items = items
        self.options = dict(method_options or {})
        unknown = sorted(set(self.options) - {k for k, _ in items})
        if unknown:
            raise ValueError(f"method_options names {unknown}, which are not among the methods "
                             f"{[k for k, _ in items]}.")
        self.similarity = similarity
        self.abc = abc
        self.modes = modes
        self.clusters = clusters
        self.seed = seed
        self.rows: list[pd.DataFrame] = []
        self.A0: dict[str, np.ndarray] = {}
        self.H0: dict[str, np.ndarray] = {}
        self.abc0: dict[tuple[str, str], np.ndarray] = {}
        self.model_rows = 0

    def _emit(self, method, step, layer, measure, v):
        self.rows.append(pd.DataFrame({"pair": np.arange(v.shape[0]), "method": method,
                                       "step": step, "layer": layer, "measure": measure,
                                       "value": np.asarray(v, dtype=np.float64)}))

    def run(self, f, step: int, layer: str) -> None:
        from ..attribution import attribute
        from ..evaluation import evaluate
        from ..groups import group_attributions

        model = as_model(f)
        e0 = model.n_evals
        e00 = self.model0.n_evals if self.model0 is not None else 0
        As = {}
        for label, m in self.items:
            A = group_attributions(attribute(model, self.X, self.R, m,
                                             **self.options.get(label, {})), self.groups,
                                   name=f"the attributions of {label!r}")
            As[label] = A
            if step == 0:
                self.A0[label] = A
            for s in self.similarity:
                self._emit(label, step, layer, s, _similarity(s, self.A0[label], A))
            H = _complexity(A)
            if step == 0:
                self.H0[label] = H
            self._emit(label, step, layer, "complexity", H)
            with np.errstate(divide="ignore", invalid="ignore"):
                rise = (H - self.H0[label]) / self.H0[label]
            self._emit(label, step, layer, "complexity_rise",
                       np.where(self.H0[label] > 0, rise, np.nan))
        if self.abc:
            if step == 0:
                self.model0 = model
            ev = evaluate(model, self.X, self.R, As, modes=self.modes, n_random=0,
                          seed=self.seed, add_random=False, groups=self.groups)
            # the step's orderings on the trained model: one scale for every step (a randomised
            # model's outputs, and so its ABCs, are on a scale of their own)
            ev0 = ev if step == 0 else evaluate(
                self.model0, self.X, self.R, As, modes=self.modes, n_random=0, seed=self.seed,
                add_random=False, groups=self.groups)
            for label in As:
                for mode in self.modes:
                    v = ev.abc_array(label, mode)
                    if step == 0:
                        self.abc0[(label, mode)] = v
                    self._emit(label, step, layer, f"{mode}_abc", v)
                    self._emit(label, step, layer, f"{mode}_abc_change",
                               v - self.abc0[(label, mode)])
                    self._emit(label, step, layer, f"{mode}_abc_on_trained",
                               ev0.abc_array(label, mode))
        self.model_rows += model.n_evals - e0
        if step > 0 and self.model0 is not None:
            self.model_rows += self.model0.n_evals - e00

    def result(self, kind, order, layers, threshold, abc_tolerance, final_steps,
               seconds) -> SanityResult:
        pairs = pd.concat(self.rows, ignore_index=True)
        out = []
        for (method, step, layer, measure), d in pairs.groupby(
                ["method", "step", "layer", "measure"], sort=False):
            v = d["value"].to_numpy()
            ok = np.isfinite(v)
            cl = None if self.clusters is None else self.clusters[d["pair"].to_numpy()[ok]]
            mean, se, units = (mean_se(v[ok], cl) if ok.any() else (np.nan, np.nan, 0))
            out.append({"method": method, "step": int(step), "layer": layer, "measure": measure,
                        "mean": mean, "std_error": se, "n": int(ok.sum()), "n_units": units})
        table = pd.DataFrame(out)
        flags = _flags(table, [k for k, _ in self.items], self.similarity, self.modes if
                       self.abc else (), threshold, abc_tolerance, final_steps, order,
                       pairs=pairs, clusters=self.clusters)
        return SanityResult(table=table, pairs=pairs, flags=flags, kind=kind, order=order,
                            layers=list(layers), threshold=threshold, abc_tolerance=abc_tolerance,
                            stats={"model_rows": int(self.model_rows), "seconds": seconds,
                                   "pairs": int(self.X.shape[0])})


def _flags(table, methods, similarity, modes, threshold, abc_tolerance, final_steps,
           order, *, pairs=None, clusters=None) -> pd.DataFrame:
    """The checks of each method on the randomised model(s) of ``final_steps``: cascading and
    labels: the last step (everything randomised); independent: the step with the lowest mean
    similarity (the most disruptive single layer) and the ABC farthest from the trained one.

    The ABC check reads ``{mode}_abc_on_trained``: the mean ABC, on the trained model, of the
    ordering the method gives on the randomised model, against the trained model's own ordering
    (step 0). Both are areas of the same model's curves, so their ratio is free of the scale of
    the model's outputs (a randomised network's outputs are orders of magnitude smaller than the
    trained one's, and its own ABCs with them). A method whose ordering does not move with the
    model keeps its ABC exactly and is flagged; a model-sensitive one falls towards a random
    ordering's ABC."""
    sim = next((s for s in ("spearman", "spearman_abs") if s in similarity), similarity[0])
    rows = []
    for method in methods:
        t = table[(table["method"] == method) & table["step"].isin(final_steps)]
        d = t[(t["measure"] == sim) & t["mean"].notna()]
        if len(d):
            r = d.loc[d["mean"].idxmin()]
            value, se, n = float(r["mean"]), float(r["std_error"]), int(r["n_units"])
        else:
            value, se, n = float("nan"), float("nan"), 0
        lo, hi = _interval(value, se, n)
        flagged = bool(np.isfinite(value) and value > threshold)
        rows.append({"method": method, "check": f"similarity ({sim})", "value": value,
                     "reference": 1.0, "threshold": threshold, "flagged": flagged,
                     "std_error": se, "ci_low": lo, "ci_high": hi,
                     "verdict": _flag_verdict(flagged, lo - threshold, hi - threshold,
                                              "above the threshold")})
        for mode in modes:
            measure = f"{mode}_abc_on_trained"
            b = table[(table["method"] == method) & (table["step"] == 0)
                      & (table["measure"] == measure)].iloc[0]
            base, se_b = float(b["mean"]), float(b["std_error"])
            d = t[(t["measure"] == measure) & np.isfinite(t["mean"])]
            if len(d):
                r = d.loc[(d["mean"] - base).abs().idxmax()]
                value, se_v, n = float(r["mean"]), float(r["std_error"]), int(r["n_units"])
            else:
                value, se_v, n = float("nan"), float("nan"), 0
            near = bool(np.isfinite(value) and np.isfinite(base)
                        and abs(value - base) <= abc_tolerance * abs(base))
            se_d = _change_se(pairs, clusters, method, measure, int(r["step"]) if len(d)
                              else None, float(np.hypot(se_v, se_b)))
            lo, hi = _interval(value - base, se_d, n)
            band = abc_tolerance * abs(base)
            # flagged when the change lies inside ±band; the interval's largest |change| inside
            # the band: wholly inside, its smallest |change| outside it: wholly outside
            smallest = 0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))
            rows.append({"method": method, "check": measure, "value": value,
                         "reference": base, "threshold": abc_tolerance, "flagged": near,
                         "std_error": se_d, "ci_low": base + lo, "ci_high": base + hi,
                         "verdict": _flag_verdict(near, band - max(abs(lo), abs(hi)),
                                                  band - smallest,
                                                  "within the tolerance of the trained ABC")})
    return pd.DataFrame(rows)


def _change_se(pairs, clusters, method, measure, step, fallback: float) -> float:
    """The standard error over the units of the per-pair change of ``measure`` from step 0 to
    ``step`` (paired: the same pairs under both models); ``fallback`` without the pairs."""
    if pairs is None or step is None:
        return fallback
    d = pairs[(pairs["method"] == method) & (pairs["measure"] == measure)]
    v = d.pivot_table(index="pair", columns="step", values="value", aggfunc="first")
    if 0 not in v.columns or step not in v.columns:
        return fallback
    ch = (v[step] - v[0]).to_numpy(dtype=np.float64)
    ok = np.isfinite(ch)
    if ok.sum() < 2:
        return fallback
    cl = None if clusters is None else np.asarray(clusters)[v.index.to_numpy()[ok]]
    return float(mean_se(ch[ok], cl)[1])


def _interval(value: float, se: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """The ``level`` t interval value ± t_{n-1} se (NaN without a standard error)."""
    from scipy.stats import t as t_dist

    if not (np.isfinite(value) and np.isfinite(se)) or n < 2:
        return float("nan"), float("nan")
    q = float(t_dist.ppf(0.5 + level / 2, n - 1))
    return value - q * se, value + q * se


def _flag_verdict(flagged: bool, low: float, high: float, region: str) -> str:
    """A flag in words with its uncertainty: ``low`` / ``high`` bound how far inside the flag's
    ``region`` the 95 % interval lies (``low > 0``: wholly inside, ``high < 0``: wholly
    outside)."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return ("flagged" if flagged else "passes") + " (no interval: fewer than 2 units)"
    if flagged:
        return (f"flagged: its 95 % interval lies wholly {region}" if low > 0 else
                f"flagged, but within the noise: its 95 % interval is not wholly {region}")
    return (f"passes: no part of its 95 % interval is {region}" if high < 0 else
            f"passes, but within the noise: part of its 95 % interval is {region}")


def _common_checks(X, R, methods, similarity, seed, abc, method_options, progress, threshold,
                   abc_tolerance, modes, clusters, groups=None):
    from ..groups import check_groups

    X, R = check_pairs(X, R)
    groups = check_groups(groups, X.shape[1])
    items = _method_items(methods)
    similarity = _check_similarity(similarity)
    seed = check_seed(seed)
    abc = check_bool(abc, "abc")
    threshold = check_scalar(threshold, "threshold", float, min_val=-1.0, max_val=1.0)
    abc_tolerance = check_scalar(abc_tolerance, "abc_tolerance", float, min_val=0.0,
                                 finite=True)
    if isinstance(modes, str):
        modes = (modes,)
    modes = tuple(check_choice("modes", m, ("insertion", "deletion")) for m in modes)
    if method_options is not None and not isinstance(method_options, Mapping):
        raise TypeError("method_options must be a mapping method -> {option: value}; got "
                        f"{type(method_options).__name__}.")
    clusters = check_clusters(clusters, X.shape[0])
    steps = _Steps(X, R, items, method_options, similarity, abc, modes, clusters, seed, groups)
    return steps, threshold, abc_tolerance


# -- the two checks ------------------------------------------------------------------------------

def parameter_randomisation(f: ModelLike, X: ArrayLike, R: ArrayLike, methods, *,
                            order: str = "cascading", layers: Sequence[str] | None = None,
                            similarity: Sequence[str] = ("spearman", "sign_agreement"),
                            seed: int = 0, abc: bool = True,
                            method_options: Mapping[str, Mapping] | None = None,
                            threshold: float = DEFAULT_THRESHOLD,
                            abc_tolerance: float = DEFAULT_ABC_TOLERANCE,
                            modes: Sequence[str] = ("insertion", "deletion"),
                            clusters: ArrayLike | None = None, groups=None,
                            progress: bool | None = None) -> SanityResult:
    """The model parameter randomisation test (MPRT; Adebayo et al. 2018) with the efficient
    MPRT's complexity rise (Hedström et al. 2024).

    Layers are re-initialised from the output down, each with its own ``reset_parameters()``
    under a seed of its own, on a deep copy (the model given is never changed). After each step
    every method's attributions are recomputed on the randomised copy
    (:func:`insdel.attribution.attribute`) and compared, pair by pair, with the trained model's.

    Parameters
    ----------
    f : torch.nn.Module
        An eager module (or an insdel ``Model`` wrapping one): TorchScript, ``torch.export`` and
        non-torch models have no layers to re-initialise and are refused.
    X, R : array_like (B, n)
        Targets and references (from a policy).
    methods : sequence or mapping
        Method names (:func:`insdel.attribution.available`) or callables ``(X, R) -> A``, or a
        mapping label -> either. A name is recomputed on each randomised model; a callable gets
        only ``(X, R)``: it cannot see the randomised model, which is what the test exposes (an
        explainer bound to the trained model, or one that ignores the model).
    order : {"cascading", "independent"}, default "cascading"
        Cascading: step k has the top k layers randomised (Adebayo et al.'s cascading
        randomisation, Quantus' ``layer_order="top_down"``); independent: step k has only the k-th
        layer from the top randomised, the others trained.
    layers : sequence of str, optional
        Names (``named_modules()``) of the layers to randomise, taken from the output down
        whatever order they are given in; default every layer with parameters of its own and a
        ``reset_parameters()`` (:func:`randomisable_layers`).
    similarity : sequence of {"spearman", "spearman_abs", "sign_agreement"}
        The similarity measures (module docstring): ``spearman`` ranks the signed ``a``,
        ``spearman_abs`` ranks ``|a|`` (Quantus' MPRT default).
    seed : int, default 0
        Seeds each layer's re-initialisation (from the seed and the layer's name) and the ABCs'
        evaluation; the same seed gives the same bytes.
    abc : bool, default True
        Also the insertion / deletion ABC of every method at every step (:func:`insdel.evaluate`),
        on the step's own model and, for the ABC flag, on the trained model.
    method_options : mapping, optional
        label -> keyword options of that method's ``attribute``.
    threshold : float, default 0.5
        A method whose mean Spearman similarity (``spearman``, else ``spearman_abs``, else the
        first measure) on the fully randomised model is above it is flagged: a model-sensitive
        method's signed order falls to near 0 (Adebayo et al.), and 0.5 leaves room for the
        agreement two unrelated smooth models share by chance on a few features. With ``order="independent"`` the lowest similarity
        over the layers is compared.
    abc_tolerance : float, default 0.1
        A method is flagged when the ordering it gives on the fully randomised model, scored on
        the *trained* model, has a mean ABC within this fraction of its trained ordering's
        (``|ABC_0(order_k) - ABC_0(order_0)| <= abc_tolerance * |ABC_0(order_0)|``): its
        ordering did not react to the model being destroyed. Both ABCs are of the same model,
        so the rule does not depend on the randomised model's output scale. Independent order:
        the layer whose ABC is farthest from the trained one.
    modes : sequence of {"insertion", "deletion"}
    clusters : array_like (B,), optional
        Independent unit of each pair (a policy's ``Pairing.cluster``) for the standard errors.
    groups : optional
        Feature groups moved as units (:mod:`insdel.groups`, e.g. a data set's one-hot groups):
        every method's attributions are summed per group (a method that returns one column per
        group is taken as it is), the measures compare the groups' attributions and the ABCs
        move whole groups.
    progress : bool, optional

    Returns
    -------
    SanityResult

    Raises
    ------
    TypeError
        ``f`` is not an eager ``torch.nn.Module``.
    ValueError
        A model without parameters, a layer that does not exist (with the closest name), an
        unknown order or measure.
    """
    check_progress(progress)
    module = _module_of(f, "parameter_randomisation")
    order = check_choice("order", order, LAYER_ORDERS)
    names = _check_layers(module, layers)
    steps, threshold, abc_tolerance = _common_checks(
        X, R, methods, similarity, seed, abc, method_options, progress, threshold,
        abc_tolerance, modes, clusters, groups)
    out = getattr(f, "output", None) if isinstance(f, Model) else None

    def wrap(m):
        return as_model(m, output=out, batch_size=f.batch_size) if isinstance(f, Model) else m

    t0 = time.perf_counter()
    with progress_bar(len(names) + 1, "parameter randomisation", "model", enable=progress) as bar:
        steps.run(wrap(module), 0, "trained")
        bar.update(1)
        for k, (name, model) in enumerate(randomised_models(module, names, order=order,
                                                            seed=steps.seed), start=1):
            steps.run(wrap(model), k, name)
            bar.update(1)
    final = [len(names)] if order == "cascading" else list(range(1, len(names) + 1))
    return steps.result("parameters", order, names, threshold, abc_tolerance, final,
                        time.perf_counter() - t0)


def is_estimator(model) -> bool:
    """Whether ``model`` is a scikit-learn-style estimator that can be refitted: it has
    ``get_params`` and ``fit`` (``sklearn.base.clone`` copies it unfitted)."""
    return callable(getattr(model, "get_params", None)) and callable(getattr(model, "fit", None))


def refit_clone(estimator) -> Callable:
    """``train(dataset, params, seed) -> model`` for :func:`data_randomisation`: a fresh
    ``sklearn.base.clone`` of the user's own estimator fitted on ``dataset.X_train`` and its
    ``y_train``. Every ``random_state`` parameter (nested ones of a pipeline too) that is None is
    set to ``seed``, so the same seed refits the same model; the estimator given is unchanged.
    ``params`` must be None: the clone keeps the estimator's own hyperparameters."""
    from sklearn.base import clone

    def train(ds, params, seed):
        if params is not None:
            raise ValueError("params: a scikit-learn estimator is refitted with its own "
                             f"hyperparameters ({type(estimator).__name__}); leave params out.")
        est = clone(estimator)
        unset = {k: int(seed) for k, v in est.get_params(deep=True).items()
                 if (k == "random_state" or k.endswith("__random_state")) and v is None}
        if unset:
            est.set_params(**unset)
        return est.fit(np.asarray(ds.X_train, dtype=np.float64), np.asarray(ds.y_train))

    return train


def data_randomisation(dataset, methods, *, params: str | Mapping | None = None, seed: int = 0,
                       model=None, X: ArrayLike | None = None, R: ArrayLike | None = None,
                       n_pairs: int = 100,
                       similarity: Sequence[str] = ("spearman", "sign_agreement"),
                       abc: bool = True, method_options: Mapping[str, Mapping] | None = None,
                       threshold: float = DEFAULT_THRESHOLD,
                       abc_tolerance: float = DEFAULT_ABC_TOLERANCE,
                       modes: Sequence[str] = ("insertion", "deletion"),
                       clusters: ArrayLike | None = None, groups=None,
                       max_epochs: int | None = None,
                       progress: bool | None = None,
                       train: Callable | None = None) -> SanityResult:
    """The data randomisation test (Adebayo et al. 2018): the model retrained on permuted
    labels, its attributions compared with the trained model's. The retraining is insdel's MLP
    (:func:`insdel.models.train_mlp`), ``train`` when given, or, when ``model`` is a
    scikit-learn estimator (:func:`is_estimator`), a clone of it refitted (:func:`refit_clone`).

    Parameters
    ----------
    dataset : insdel.datasets.Dataset
    methods : sequence or mapping
        As in :func:`parameter_randomisation`.
    params : str or mapping, optional
        The MLP's preset or hyperparameters (:func:`insdel.models.train_mlp`), for both models.
    seed : int, default 0
        Seeds the permutation of ``y_train``, both trainings and the ABCs.
    model : torch.nn.Module or scikit-learn estimator, optional
        The trained model (default: trained here on the true labels with ``params`` and
        ``seed``). A fitted scikit-learn estimator (a pipeline too) is step 0 as it is, and a
        ``sklearn.base.clone`` of it fitted on the permuted labels is step 1 (``random_state``
        parameters left None are set to ``seed``).
    X, R : array_like, optional
        Targets and references; default the first ``n_pairs`` test rows and, as one reference for
        all, the mean of ``X_train``.
    n_pairs : int, default 100
    similarity, abc, method_options, threshold, abc_tolerance, modes, clusters, groups, progress
        As in :func:`parameter_randomisation`; the flags compare the permuted-label model with
        the trained one.
    max_epochs : int, optional
        Passed to :func:`insdel.models.train_mlp`.
    train : callable, optional
        ``train(dataset, params, seed) -> model`` instead of :func:`insdel.models.train_mlp`.

    Returns
    -------
    SanityResult
        Steps 0 (``"trained"``) and 1 (``"permuted labels"``).
    """
    from ..models import train_mlp

    check_progress(progress)
    seed = check_seed(seed)
    if train is None and model is not None and is_estimator(model):
        if max_epochs is not None:
            raise ValueError("max_epochs caps insdel's MLP training; a scikit-learn estimator "
                             f"({type(model).__name__}) is refitted with its own "
                             "hyperparameters: leave max_epochs out.")
        train = refit_clone(model)
    if train is None:
        def train(ds, p, s):
            return train_mlp(ds, p, seed=s, max_epochs=max_epochs, progress=progress)[0]
    if X is None:
        n = check_scalar(n_pairs, "n_pairs", int, min_val=1)
        X = dataset.X_test[:n]
    if R is None:
        R = np.asarray(dataset.X_train, dtype=np.float64).mean(axis=0)
    steps, threshold, abc_tolerance = _common_checks(
        X, R, methods, similarity, seed, abc, method_options, progress, threshold,
        abc_tolerance, modes, clusters, groups)
    t0 = time.perf_counter()
    if model is None:
        model = train(dataset, params, seed)
    perm = np.random.default_rng(seed).permutation(len(dataset.y_train))
    shuffled = dataclasses.replace(dataset, y_train=np.asarray(dataset.y_train)[perm])
    permuted = train(shuffled, params, seed)
    steps.run(model, 0, "trained")
    steps.run(permuted, 1, "permuted labels")
    return steps.result("data", "labels", ["permuted labels"], threshold, abc_tolerance, [1],
                        time.perf_counter() - t0)
