"""Honest tuning of an attribution method's settings against the insertion / deletion ABC.

:func:`tune` lets optuna (TPE, seeded) choose a method's settings to maximise the mean ABC on
*tuning* pairs, then reports the chosen settings, the ABC on *held-out* pairs with its standard
error, and the **optimism**: the tuning ABC minus the held-out ABC, what choosing on the same
pairs would have overstated. The split is by independent unit (:func:`split_pairs`: a pair and
its mirror stay on one side), seeded, and recorded in the result (and in ``insdel tune``'s
manifest). A ranking of methods on the pairs they were tuned on is refused
(:class:`TuningLeakError`): :func:`tune` with ``rank_on="tuning"``, :func:`rank` with
``on="tuning"`` or results tuned on different splits, and a leaderboard given a tune run whose
scores include tuning pairs (:mod:`insdel.leaderboard_runs`).

The search spaces per method are :data:`SPACES` (docs/tuning.md). Two settings are not options of
the method but become its ``removal=``: Kernel SHAP's ``background_size`` K (1: the pair's own
reference r, the paper's; K > 1: K rows of ``data`` per target, ``removal.Marginal``) and
DeepLIFT's ``baseline`` (``reference``: r; ``training_mean``: ``removal.TrainingMean`` of
``data``; ``marginal``: :data:`DEEPLIFT_MARGINAL_K` rows of ``data``, expected DeepLIFT). Both need
``data=`` (training rows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ._progress import progress_bar
from ._stats import mean_se, unit_ids
from ._validation import (
    TuningLeakError,
    check_choice,
    check_positive_int,
    check_progress,
    check_scalar,
    check_seed,
)

__all__ = ["SPACES", "DERIVED", "DEEPLIFT_MARGINAL_K", "TuningLeakError", "Split", "TuneResult",
           "split_pairs", "check_split", "space_of", "tune", "rank"]

#: The default search space of each method: setting -> ``("int", low, high, scale)``,
#: ``("float", low, high, scale)`` (scale ``"log"`` or ``"linear"``) or
#: ``("choice", (a, b, ...))``. Settings of :data:`DERIVED` need ``data=``; ``binary_mode`` is
#: searched only when the options name binary features (``binary=``).
SPACES: dict[str, dict[str, tuple]] = {
    "integrated_gradients": {"n_steps": ("int", 4, 1024, "log"),
                             "binary_mode": ("choice", ("cast", "interpolate", "jump"))},
    "kernel_shap": {"n_samples": ("int", 64, 4096, "log"),
                    "background_size": ("int", 1, 16, "log")},
    "lime": {"kernel_width": ("float", 0.05, 5.0, "log"),
             "n_samples": ("int", 100, 4000, "log"),
             "alpha": ("float", 1e-4, 0.1, "log")},
    "deeplift": {"baseline": ("choice", ("reference", "training_mean", "marginal"))},
}

#: Settings that are not options of the method: each becomes its ``removal=`` (module docstring).
DERIVED = ("background_size", "baseline")

#: References per target of DeepLIFT's ``baseline = "marginal"``.
DEEPLIFT_MARGINAL_K = 16

_MODES = ("insertion", "deletion", "total")


@dataclass(frozen=True)
class Split:
    """The pairs' split into tuning and held-out pairs, by independent unit.

    Attributes
    ----------
    tuning, held_out : ndarray of int
        Pair indices (sorted, disjoint, every unit on one side).
    seed : int or None
        The seed of :func:`split_pairs` (None: given by the caller).
    tune_fraction : float
        The fraction of the units on the tuning side (as asked; the split rounds it).
    n_units : int
    """

    tuning: np.ndarray
    held_out: np.ndarray
    seed: int | None
    tune_fraction: float
    n_units: int

    def record(self) -> dict:
        """The split as plain JSON (the manifest's ``tune.split``)."""
        return {"seed": self.seed, "tune_fraction": self.tune_fraction,
                "n_units": self.n_units, "tuning": [int(i) for i in self.tuning],
                "held_out": [int(i) for i in self.held_out]}


def split_pairs(n_pairs: int, *, clusters: ArrayLike | None = None, tune_fraction: float = 0.5,
                seed: int = 0) -> Split:
    """A seeded split of ``n_pairs`` pairs into tuning and held-out pairs, by unit.

    Parameters
    ----------
    n_pairs : int
    clusters : array_like of int (n_pairs,), optional
        The independent unit of each pair (a policy's ``Pairing.cluster``: a pair and its mirror
        share one); None: every pair is a unit. A unit's pairs all go to one side.
    tune_fraction : float, default 0.5
        Fraction of the units used for tuning, in (0, 1); at least one unit on each side.
    seed : int, default 0

    Returns
    -------
    Split

    Raises
    ------
    ValueError
        Fewer than two units, or ``tune_fraction`` outside (0, 1).
    """
    n_pairs = check_positive_int(n_pairs, "n_pairs")
    frac = check_scalar(tune_fraction, "tune_fraction", float, min_val=0.0, max_val=1.0,
                        include_boundaries="neither", finite=True)
    seed = check_seed(seed)
    u = unit_ids(clusters, n_pairs)
    G = int(u.max()) + 1
    if G < 2:
        raise ValueError(f"split_pairs: the {n_pairs} pairs form {G} independent unit; tuning "
                         "and held-out pairs need at least two units.")
    n_tune = min(G - 1, max(1, int(round(frac * G))))
    tune_units = np.random.default_rng(seed).permutation(G)[:n_tune]
    side = np.isin(u, tune_units)
    return Split(np.flatnonzero(side), np.flatnonzero(~side), seed, frac, G)


def check_split(tuning: ArrayLike, held_out: ArrayLike, *, n_pairs: int,
                clusters: ArrayLike | None = None) -> Split:
    """Check a caller's split: integer pair indices in range, each side non-empty, no pair on
    both sides and no unit (a pair and its mirror) split across them.

    Raises
    ------
    ValueError
        Overlapping sides (the message names the pairs), an empty side, an index out of range, or
        a unit with pairs on both sides.
    """
    sides = []
    for name, idx in (("tuning", tuning), ("held_out", held_out)):
        a = np.asarray(idx)
        if a.ndim != 1 or a.size == 0 or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"split: {name} must be a non-empty 1-D array of pair indices; got "
                             f"{a.dtype} of shape {a.shape}.")
        if a.min() < 0 or a.max() >= n_pairs:
            raise ValueError(f"split: {name} holds pair indices outside 0 .. {n_pairs - 1}.")
        if np.unique(a).size != a.size:
            raise ValueError(f"split: {name} repeats pair indices.")
        sides.append(np.sort(a.astype(np.int64)))
    both = np.intersect1d(*sides)
    if both.size:
        raise ValueError(f"split: the tuning and held-out pairs overlap: pair(s) "
                         f"{both[:10].tolist()}{' ...' if both.size > 10 else ''} are on both "
                         "sides; a held-out ABC on tuning pairs is optimistic.")
    u = unit_ids(clusters, n_pairs)
    shared = np.intersect1d(u[sides[0]], u[sides[1]])
    if shared.size:
        b = int(np.flatnonzero(u == shared[0])[0])
        raise ValueError(f"split: unit {int(shared[0])} (pair {b} and its mirror) has pairs on "
                         "both sides; keep a unit's pairs together (split_pairs does).")
    return Split(sides[0], sides[1], None, sides[0].size / (sides[0].size + sides[1].size),
                 int(np.unique(u[np.concatenate(sides)]).size))


def space_of(method: str, *, options: Mapping | None = None, data: Any = None) -> dict:
    """The default search space of ``method`` (:data:`SPACES`) for these options and data:
    ``binary_mode`` only with ``binary=`` among the options, the :data:`DERIVED` settings only
    with ``data``.

    Raises
    ------
    ValueError
        A method with nothing to tune here (the message lists the methods that have a space).
    """
    if method not in SPACES:
        raise ValueError(f"tune: method {method!r} has no settings to tune; methods with a "
                         f"search space: {', '.join(sorted(SPACES))} (docs/tuning.md).")
    opts = dict(options or {})
    space = {k: v for k, v in SPACES[method].items()
             if (k != "binary_mode" or opts.get("binary") is not None)
             and (k not in DERIVED or data is not None)}
    if not space:
        raise ValueError(f"tune: {method}'s settings ({', '.join(SPACES[method])}) need data= "
                         "(training rows) to tune.")
    return space


def _check_space(method: str, space: Mapping, data: Any) -> dict:
    from . import attribution
    from ._registry import check_options

    check_options(f"tune: the space of {method}", space,
                  sorted(set(attribution.options_of(method)) | set(DERIVED)), noun="setting")
    out = {}
    for name, spec in space.items():
        if name in DERIVED and data is None:
            raise ValueError(f"tune: space setting {name!r} of {method} draws from training rows; "
                             "give data=.")
        ok = isinstance(spec, tuple) and len(spec) >= 2
        if ok and spec[0] in ("int", "float"):
            ok = (len(spec) in (3, 4) and spec[1] < spec[2]
                  and (len(spec) == 3 or spec[3] in ("log", "linear"))
                  and not (len(spec) == 4 and spec[3] == "log" and spec[1] <= 0))
        elif ok and spec[0] == "choice":
            ok = len(spec) == 2 and len(tuple(spec[1])) >= 1
        else:
            ok = False
        if not ok:
            raise ValueError(f"tune: space[{name!r}] = {spec!r}: give ('int', low, high[, "
                             "'log'|'linear']), ('float', low, high[, scale]) with low < high "
                             "(low > 0 on a log scale), or ('choice', (a, b, ...)).")
        out[name] = spec
    if not out:
        raise ValueError(f"tune: the search space of {method} is empty.")
    return out


def _suggest(trial, space: Mapping) -> dict:
    params = {}
    for name, spec in space.items():
        if spec[0] == "choice":
            params[name] = trial.suggest_categorical(name, list(spec[1]))
        else:
            log = len(spec) == 4 and spec[3] == "log"
            suggest = trial.suggest_int if spec[0] == "int" else trial.suggest_float
            params[name] = suggest(name, spec[1], spec[2], log=log)
    return params


def _inside(spec: tuple, value) -> bool:
    """Whether ``value`` lies in one setting's space (the defaults outside it are not tried)."""
    if spec[0] == "choice":
        return value in tuple(spec[1])
    return isinstance(value, (int, float)) and not isinstance(value, bool) and (
        spec[1] <= value <= spec[2])


def _options(method: str, options: Mapping, params: Mapping, data, binary, seed: int) -> dict:
    """The method's options for one setting: ``options`` updated by ``params``, the derived
    settings turned into its ``removal=``."""
    from .removal import Marginal, TrainingMean

    kw = {**dict(options), **{k: v for k, v in params.items() if k not in DERIVED}}
    K = params.get("background_size")
    if K is not None and int(K) > 1:
        kw["removal"] = Marginal(data, n_references=min(int(K), len(data)), seed=seed)
    base = params.get("baseline")
    if base == "training_mean":
        kw["removal"] = TrainingMean(data, binary=binary)
    elif base == "marginal":
        kw["removal"] = Marginal(data, n_references=min(DEEPLIFT_MARGINAL_K, len(data)),
                                 seed=seed)
    return kw


@dataclass
class TuneResult:
    """What :func:`tune` found for one method.

    Attributes
    ----------
    method, mode : str
    params : dict
        The tuned settings (the best trial's).
    defaults : dict
        The settings' values without tuning (the given options, else the method's defaults).
    tuning, held_out, default_held_out : tuple (mean, se)
        ABC of the tuned settings on the tuning and held-out pairs, and of the defaults on the
        held-out pairs (standard errors over units).
    gain : tuple (mean, se)
        Held-out ABC of the tuned minus the default settings, paired over the held-out pairs.
    optimism : tuple (mean, se)
        Tuning minus held-out ABC of the tuned settings (independent pairs: the standard errors
        add in quadrature).
    tuning_gain, gain_optimism : tuple (mean, se)
        The gain over the defaults on the tuning pairs (paired), and it minus the held-out gain:
        how much the search overstated its own improvement (the pair-to-pair spread of the ABC
        cancels in both gains, so this is far less noisy than ``optimism``).
    split : Split
    trials : pandas.DataFrame
        One row per trial: ``trial``, each setting, ``tuning_abc``.
    held_out_abc : pandas.DataFrame
        Per held-out pair: ``pair, cluster, method, setting`` (``tuned`` / ``default``), ``abc``.
    """

    method: str
    mode: str
    params: dict
    defaults: dict
    tuning: tuple
    held_out: tuple
    default_held_out: tuple
    gain: tuple
    optimism: tuple
    split: Split
    trials: pd.DataFrame = field(repr=False)
    held_out_abc: pd.DataFrame = field(repr=False)
    n_trials: int = 0
    tuning_gain: tuple = (float("nan"), float("nan"))
    gain_optimism: tuple = (float("nan"), float("nan"))

    def row(self) -> dict:
        """One row of the summary table (``tune_summary.csv``)."""
        return {"method": self.method, "mode": self.mode, "n_trials": self.n_trials,
                "tuning_abc": self.tuning[0], "tuning_se": self.tuning[1],
                "held_out_abc": self.held_out[0], "held_out_se": self.held_out[1],
                "default_held_out_abc": self.default_held_out[0],
                "default_held_out_se": self.default_held_out[1],
                "gain": self.gain[0], "gain_se": self.gain[1],
                "optimism": self.optimism[0], "optimism_se": self.optimism[1],
                "tuning_gain": self.tuning_gain[0], "tuning_gain_se": self.tuning_gain[1],
                "gain_optimism": self.gain_optimism[0],
                "gain_optimism_se": self.gain_optimism[1],
                "tuning_pairs": int(self.split.tuning.size),
                "held_out_pairs": int(self.split.held_out.size)}

    def to_markdown(self, digits: int = 4) -> str:
        """The tuned settings and the three ABCs as Markdown."""
        return to_markdown([self], digits=digits)


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def to_markdown(results: Sequence[TuneResult], digits: int = 4) -> str:
    """The tuned settings and, per method, the tuning / held-out ABC, the gain over the defaults
    on the held-out pairs and the optimism, as Markdown."""
    d = digits
    out = ["| method | tuned settings (defaults) | tuning ABC | held-out ABC | default "
           "held-out ABC | held-out gain (gain / s.e.) | optimism (of the gain) |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for r in results:
        sets = ", ".join(f"{k} = {_fmt(v)} ({_fmt(r.defaults.get(k))})"
                         for k, v in r.params.items())
        z = r.gain[0] / r.gain[1] if r.gain[1] > 0 else float("nan")
        out.append(f"| {r.method} | {sets} | {r.tuning[0]:.{d}f} ± {r.tuning[1]:.{d}f} | "
                   f"{r.held_out[0]:.{d}f} ± {r.held_out[1]:.{d}f} | "
                   f"{r.default_held_out[0]:.{d}f} ± {r.default_held_out[1]:.{d}f} | "
                   f"{r.gain[0]:+.{d}f} ± {r.gain[1]:.{d}f} ({z:+.1f}) | "
                   f"{r.optimism[0]:+.{d}f} ± {r.optimism[1]:.{d}f} "
                   f"({r.gain_optimism[0]:+.{d}f} ± {r.gain_optimism[1]:.{d}f}) |")
    return "\n".join(out) + "\n"


def _abc(f, X, R, method, A, mode, removal, groups, clusters, normalize) -> np.ndarray:
    """Per-pair ABC of ``mode`` (``total``: insertion ABC + deletion ABC')."""
    from .evaluation import evaluate

    modes = ("insertion", "deletion") if mode == "total" else (mode,)
    ev = evaluate(f, X, R, {method: A}, modes=modes, n_random=0, add_random=False,
                  removal=removal, groups=groups, clusters=clusters, normalize=normalize,
                  progress=False)
    return sum(ev.abc_array(method, m) for m in modes)


def tune(f, X: ArrayLike, R: ArrayLike, method: str, *, space: Mapping | None = None,
         n_trials: int = 20, tune_fraction: float = 0.5, seed: int = 0, removal: Any = None,
         mode: str = "insertion", options: Mapping | None = None, data: ArrayLike | None = None,
         binary: ArrayLike | None = None, clusters: ArrayLike | None = None, groups: Any = None,
         split: Split | tuple | None = None, normalize: bool = True,
         rank_on: str = "held_out", progress: bool | None = None) -> TuneResult:
    """Tune ``method``'s settings on tuning pairs; report them on held-out pairs.

    Parameters
    ----------
    f : model
        Anything :func:`insdel.attribute` takes for ``method``.
    X, R : array_like (B, n)
        Targets and references.
    method : str
        A method with a search space (:data:`SPACES`).
    space : mapping, optional
        Setting -> ``("int", low, high[, scale])`` / ``("float", ...)`` / ``("choice",
        values)``; default :func:`space_of`.
    n_trials : int, default 20
        Optuna trials (TPE sampler seeded with ``seed``); one progress-bar step each.
    tune_fraction : float, default 0.5
        Fraction of the units used for tuning (:func:`split_pairs`).
    seed : int, default 0
        Seeds the split, the sampler and the derived removals' draws.
    removal : optional
        The removal the ABC is measured under (:func:`insdel.evaluate`; None: the baseline).
    mode : {"insertion", "deletion", "total"}, default "insertion"
        The ABC maximised (``total``: insertion ABC + deletion ABC').
    options : mapping, optional
        The method's other options, also the defaults the tuned settings are compared with.
    data : array_like (N, n), optional
        Training rows: the :data:`DERIVED` settings draw from them.
    binary : array_like of bool (n,), optional
        Binary features (DeepLIFT's ``training_mean`` baseline takes their mode).
    clusters : array_like of int (B,), optional
        Each pair's independent unit: the split keeps units together, standard errors are over
        units.
    groups : optional
        Feature groups (:mod:`insdel.groups`) of the curves.
    split : Split or (tuning, held_out), optional
        A split to use instead of :func:`split_pairs` (checked by :func:`check_split`: overlapping
        sides are an error).
    normalize : bool, default True
    rank_on : {"held_out"}, default "held_out"
        Where the reported (rankable) ABC comes from. ``"tuning"`` is refused.
    progress : bool, optional

    Returns
    -------
    TuneResult

    Raises
    ------
    TuningLeakError
        ``rank_on="tuning"``.
    ValueError
        A method without a space, a bad space, an overlapping split, fewer than two units.
    """
    if rank_on == "tuning":
        raise TuningLeakError("tune(rank_on='tuning'): the ABC on the pairs the settings were "
                              "tuned on is optimistic by construction (see the optimism); "
                              "methods are ranked on the held-out pairs only.")
    check_choice("rank_on", rank_on, ("held_out",))
    mode = check_choice("mode", mode, _MODES)
    n_trials = check_positive_int(n_trials, "n_trials")
    seed = check_seed(seed)
    check_progress(progress)
    X = np.ascontiguousarray(X, dtype=np.float64)
    R = np.ascontiguousarray(np.broadcast_to(np.asarray(R, dtype=np.float64), X.shape))
    B = X.shape[0]
    options = dict(options or {})
    if data is not None:
        data = np.ascontiguousarray(data, dtype=np.float64)
    space = (space_of(method, options=options, data=data) if space is None
             else _check_space(method, space, data))
    if split is None:
        sp = split_pairs(B, clusters=clusters, tune_fraction=tune_fraction, seed=seed)
    elif isinstance(split, Split):
        sp = check_split(split.tuning, split.held_out, n_pairs=B, clusters=clusters)
    else:
        sp = check_split(*split, n_pairs=B, clusters=clusters)
    cl = None if clusters is None else np.asarray(clusters)
    t, h = sp.tuning, sp.held_out

    def score(idx, params):
        kw = _options(method, options, params, data, binary, seed)
        from .attribution import attribute

        A = attribute(f, X[idx], R[idx], method, **kw)
        return _abc(f, X[idx], R[idx], method, A, mode, removal, groups,
                    None if cl is None else cl[idx], normalize)

    import optuna

    old = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    from . import attribution

    accepted = attribution.options_of(method)
    defaults = {k: options.get(k, accepted.get(k)) for k in space if k not in DERIVED}
    if "background_size" in space:
        defaults["background_size"] = 1
    if "baseline" in space:
        defaults["baseline"] = "reference"
    rows = []
    try:
        study = optuna.create_study(direction="maximize",
                                    sampler=optuna.samplers.TPESampler(seed=seed))
        # the first trial is the defaults: the tuned settings are never worse on the tuning pairs
        study.enqueue_trial({k: v for k, v in defaults.items() if _inside(space[k], v)})
        with progress_bar(n_trials, f"tune {method}", "trial", enable=progress,
                          auto=True) as bar:
            for k in range(n_trials):
                trial = study.ask()
                params = _suggest(trial, space)
                value = float(score(t, params).mean())
                study.tell(trial, value)
                rows.append({"trial": k, **params, "tuning_abc": value})
                bar.update(1)
    finally:
        optuna.logging.set_verbosity(old)
    best = dict(study.best_trial.params)
    tuned_t = score(t, best)
    tuned_h = score(h, best)
    default_h = score(h, defaults)
    default_t = score(t, defaults)
    ct, ch = (None, None) if cl is None else (cl[t], cl[h])
    tm, ts, _ = mean_se(tuned_t, ct)
    hm, hs, _ = mean_se(tuned_h, ch)
    dm, ds, _ = mean_se(default_h, ch)
    gm, gs, _ = mean_se(tuned_h - default_h, ch)
    tgm, tgs, _ = mean_se(tuned_t - default_t, ct)
    held = pd.concat([pd.DataFrame({"pair": h, "cluster": h if cl is None else cl[h],
                                    "method": method, "setting": s, "abc": v})
                      for s, v in (("tuned", tuned_h), ("default", default_h))],
                     ignore_index=True)
    return TuneResult(method=method, mode=mode, params=best, defaults=defaults,
                      tuning=(tm, ts), held_out=(hm, hs), default_held_out=(dm, ds),
                      gain=(gm, gs), optimism=(tm - hm, float(np.hypot(ts, hs))), split=sp,
                      tuning_gain=(tgm, tgs), gain_optimism=(tgm - gm, float(np.hypot(tgs, gs))),
                      trials=pd.DataFrame(rows), held_out_abc=held, n_trials=n_trials)


def rank(results: Sequence[TuneResult], *, on: str = "held_out") -> pd.DataFrame:
    """Rank tuned methods by their held-out ABC (1 = best).

    Parameters
    ----------
    results : sequence of TuneResult
        Tuned on the same split (the same held-out pairs) and ABC mode.
    on : {"held_out"}
        ``"tuning"`` is refused: the tuning ABC is optimistic by construction.

    Returns
    -------
    pandas.DataFrame
        ``method, held_out_abc, held_out_se, rank``, best first.

    Raises
    ------
    TuningLeakError
        ``on="tuning"``, or results tuned on different splits (a method's held-out pairs would be
        another's tuning pairs).
    """
    if on == "tuning":
        raise TuningLeakError("rank(on='tuning'): methods are not ranked on the pairs their "
                              "settings were tuned on; rank on the held-out pairs.")
    check_choice("on", on, ("held_out",))
    results = list(results)
    if not results:
        raise ValueError("rank: give at least one TuneResult.")
    first = results[0]
    for r in results[1:]:
        if not (np.array_equal(r.split.held_out, first.split.held_out)
                and np.array_equal(r.split.tuning, first.split.tuning)):
            raise TuningLeakError(f"rank: {r.method} was tuned on another split than "
                                  f"{first.method}; rank methods tuned on the same split.")
        if r.mode != first.mode:
            raise ValueError(f"rank: {r.method}'s ABC is {r.mode}, {first.method}'s "
                             f"{first.mode}; rank one ABC.")
    df = pd.DataFrame([{"method": r.method, "held_out_abc": r.held_out[0],
                        "held_out_se": r.held_out[1]} for r in results])
    from scipy.stats import rankdata

    df["rank"] = rankdata(-df["held_out_abc"].to_numpy(), method="average")
    return df.sort_values("rank", kind="stable").reset_index(drop=True)
