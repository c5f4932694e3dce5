"""ROAD for tabular regression: remove and debias (Rong et al., 2022), beside ROAR.

ROAR (:mod:`insdel.roar`) retrains the model after removing features; ROAD does not retrain. For
every row x, its features are ranked by a method's attributions, the top k (MoRF: most relevant
first) or the bottom k (LeRF: least relevant first) features are removed, k = ⌈q n⌉ for each
fraction q (:func:`insdel.roar.n_removed`), and the removed features are *imputed* by a
:class:`~insdel.removal.SampledRemoval` (a conditional distribution fitted on training rows, not
a constant): the row's prediction under removal is the mean of f over the removal's M imputed rows,

    f_q(x) = (1/M) sum_m f(x̃_m),   x̃_m = x on the kept features, drawn on the removed ones,

and its loss against the true target y is recorded (mean squared error, its root, mean absolute
error). Removing what the method calls relevant first (MoRF) should hurt early; removing the least
relevant first (LeRF) should barely hurt.

**Symmetric relevance gain.** With the loss curves L_MoRF(q), L_LeRF(q) on q in [0, 1] (q = 0, the
model's own loss, and q = 1, every feature imputed, are always computed and are shared by both
orders), the areas are the trapezoid integrals over the actual q, and

    SRG = area(L_MoRF) - area(L_LeRF)

is **higher for a better attribution**. (Rong et al. state it on accuracy, a score where higher is
better: SRG = area(LeRF) - area(MoRF); on a loss the two orders swap places, so the sign of
"better" is the same.) A seeded ``random`` method (scores drawn uniformly per row, the same for
every order) has SRG near 0: a method below it ranks features worse than chance.

**Ranking.** ``ranking="absolute"`` (default) orders features by |a_j|: a squared or absolute loss
against y is hurt by removing a feature that moves f either way, so the magnitude is the relevance;
``ranking="signed"`` orders by a_j (the insertion/deletion tests' ordering). Ties are broken by
feature index (stable sort, :func:`insdel.ordering.sort_orderings`; ``morf`` / ``lerf`` in
:mod:`insdel.ordering`).

**Leakage.** :func:`leakage` is ROAD's diagnostic of the imputation itself: can a classifier tell,
from an imputed row's values, which features were removed? Near chance, the removal leaks nothing
(the loss measures lost information, not the imputation's artefacts); a constant reference on
continuous data leaks almost perfectly (the removal ``constant``, :class:`insdel.removal.Constant`,
makes one to compare).

Every row's draws are seeded by the removal's seed and the row's index (``targets`` =
``arange(N)``), so the same row gets the same draws in every method, order and fraction (common
random numbers: the curves differ only by what is kept).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ._progress import progress_bar
from ._stats import mean_se, normal_quantile, wilson_interval
from ._validation import as_float_array, check_choice, check_scalar, check_seed
from .areas import trapezoid_area
from .game import Game, as_game
from .groups import check_groups, group_attributions
from .ordering import check_ordering, sort_orderings
from .removal import Constant, draws_rows
from .removal.base import SampledRemoval
from .roar import PAPER_FRACTIONS, _check_fractions, n_removed

__all__ = ["ORDERS", "LOSSES", "RANKINGS", "RoadResult", "LeakageResult", "evaluate", "leakage",
           "constant_removal", "draws_rows", "srg_table", "LEAK_MARGIN"]

ORDERS = ("morf", "lerf")
LOSSES = ("mse", "rmse", "mae")
RANKINGS = ("absolute", "signed")
CLASSIFIERS = ("forest", "logistic")
CURVE_COLUMNS = ["method", "order", "q", "k", "loss", "mse", "rmse", "mae"]
AREA_COLUMNS = ["method", "morf_area", "lerf_area", "srg", "rank", "rank_morf", "rank_lerf"]
#: :func:`srg_table`'s columns, then the spread :func:`evaluate` adds: the standard error of SRG over
#: the rows, its s.d. over the removal's seeds (NaN with one seed), the seeds, and the methods whose
#: SRG is within noise of this one's.
SUMMARY_COLUMNS = [*AREA_COLUMNS, "srg_se", "srg_sd_seeds", "n_seeds", "tied_with"]
LEAKAGE_COLUMNS = ["feature", "accuracy", "chance", "excess", "ci_low", "ci_high"]
#: Mean accuracy above chance that counts as clear leakage: a verdict of "does not reveal what it
#: removed" needs the interval's upper end below chance + LEAK_MARGIN.
LEAK_MARGIN = 0.05

# rows of one sample() call: block * M * n float64 values of at most about 32 MiB
_BLOCK_VALUES = 1 << 22


def constant_removal(values) -> Constant:
    """Deprecated: the removal ``constant`` (``insdel.removal.Constant(values)``, or
    ``insdel.removal.build("constant", values=...)``), which sets removed features to ``values``.
    """
    warnings.warn("insdel.road.constant_removal(values) is deprecated: use "
                  "insdel.removal.Constant(values) (the registered removal 'constant').",
                  DeprecationWarning, stacklevel=2)
    return Constant(values)


def __getattr__(name: str):
    if name == "ConstantRemoval":
        warnings.warn("insdel.road.ConstantRemoval is deprecated: use insdel.removal.Constant "
                      "(the registered removal 'constant').", DeprecationWarning, stacklevel=2)
        return Constant
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclasses.dataclass
class RoadResult:
    """What :func:`evaluate` measured.

    Attributes
    ----------
    curves : pandas.DataFrame
        One row per (method, order, q): ``k`` units removed (features, or groups with
        ``groups=``), ``loss`` (the chosen ``loss``) and every loss (``mse``, ``rmse``, ``mae``),
        each the mean over the ``n_seeds`` repeats. q = 0 and q = 1 are in every curve.
    summary : pandas.DataFrame
        One row per method: ``morf_area``, ``lerf_area`` (trapezoid areas of the chosen loss over
        q in [0, 1]), ``srg`` = morf_area - lerf_area (higher is better) and ranks (1 = best): by
        ``srg``, by ``morf_area`` (larger is better) and by ``lerf_area`` (smaller is better);
        then ``srg_se`` (standard error over the rows, the removal's draws included),
        ``srg_sd_seeds`` (s.d. over the repeats; NaN with one), ``n_seeds`` and ``tied_with``
        (the methods whose SRG differs from this one's by less than the noise, ``;``-separated).
    loss, ranking : str
        The loss the areas use and how features were ranked.
    removal : dict
        The removal's ``params()``.
    n_seeds : int
        Repeats of the removal's draws.
    level : float
        Confidence level of the ties.
    repeats : pandas.DataFrame or None
        With ``n_seeds`` > 1: the curves of every repeat (a ``seed`` column first); else None.
    units : list of str or None
        With ``groups=``: the units' names (k counts them); None: one unit per feature.
    """

    curves: pd.DataFrame
    summary: pd.DataFrame
    loss: str
    ranking: str
    removal: dict
    n_seeds: int = 1
    level: float = 0.95
    repeats: pd.DataFrame | None = None
    units: list | None = None

    def to_markdown(self, digits: int = 4) -> str:
        """The summary as a Markdown table, best SRG first, with each SRG's standard error and
        the methods within noise of it."""
        s = self.summary.sort_values("rank", kind="stable")
        seeds = self.n_seeds > 1 and "srg_sd_seeds" in s.columns
        lines = [f"### ROAD: {self.loss} under imputation ({self.removal.get('name', '?')}), "
                 f"features ranked by {self.ranking} attribution\n",
                 "| Rank | Method | MoRF area | LeRF area | SRG | SE | "
                 + ("SD over seeds | " if seeds else "") + "Within noise of | "
                 f"SRG {100 * self.level:g} % interval |",
                 "|---:|---|---:|---:|---:|---:|" + ("---:|" if seeds else "") + "---|---:|"]
        z = normal_quantile(self.level)
        for _, r in s.iterrows():
            se = r.get("srg_se", float("nan"))
            tied = r.get("tied_with", "")
            tied = tied if isinstance(tied, str) and tied else "—"
            lines.append(f"| {r['rank']} | {r['method']} | {r['morf_area']:.{digits}f} | "
                         f"{r['lerf_area']:.{digits}f} | {r['srg']:+.{digits}f} | "
                         f"{se:.{digits}f} | "
                         + (f"{r['srg_sd_seeds']:.{digits}f} | " if seeds else "")
                         + f"{tied.replace(';', ', ')} | "
                         + (f"[{r['srg'] - z * se:+.{digits}f}, {r['srg'] + z * se:+.{digits}f}]"
                            if np.isfinite(se) else "") + " |")
        lines.append("\nSRG = area(MoRF loss) − area(LeRF loss): higher is better (removing what "
                     "the method calls relevant first hurts most). SE: standard error of SRG over "
                     "the evaluated rows (each row's draws are its own, so it holds the "
                     "removal's sampling noise too)"
                     + (f", over {self.n_seeds} repeats of the removal's draws" if seeds else "")
                     + f". Two methods are within noise when their SRGs differ by less than "
                     f"{normal_quantile(self.level):.2f} standard errors of the difference (paired "
                     f"over rows, level {self.level:g}): their order is not established. "
                     "The interval is SRG ± that many standard errors.")
        lines.append("\n" + self.verdict())
        return "\n".join(lines) + "\n"

    def verdict(self) -> str:
        """One plain sentence on the best SRG: clear of every other method, or tied (within the
        noise, ``tied_with``) with some."""
        s = self.summary.sort_values("rank", kind="stable")
        if s.empty:
            return "Verdict: no method was scored."
        top = s.iloc[0]
        tied = top.get("tied_with", "")
        tied = [t for t in tied.split(";") if t] if isinstance(tied, str) else []
        if tied:
            return (f"Verdict: {top['method']} has the highest SRG but cannot be told apart from "
                    f"{', '.join(tied)} (within the noise at level {self.level:g}): a tie.")
        return (f"Verdict: {top['method']} has the highest SRG, clear of every other method "
                f"(pairwise over rows at level {self.level:g}, not adjusted for the "
                f"{max(len(s) - 1, 0)} comparisons).")


def _check_orders(orders) -> tuple[str, ...]:
    if isinstance(orders, str):
        orders = (orders,)
    orders = tuple(orders)
    if not orders:
        raise ValueError(f"orders must name at least one of {list(ORDERS)}.")
    for o in orders:
        check_ordering(o, allowed=ORDERS, argument="orders")
    if len(set(orders)) != len(orders):
        raise ValueError(f"orders names an order twice: {list(orders)}.")
    return orders


def _check_removal(removal) -> SampledRemoval:
    if not draws_rows(removal):
        raise TypeError("removal must be a SampledRemoval (e.g. insdel.removal's "
                        "conditional_gaussian fitted on training rows, or "
                        "insdel.removal.Constant(values) for a fixed reference); got "
                        f"{removal!r} ({type(removal).__name__}).")
    return removal


def _predict_removed(game: Game, keep: np.ndarray, shift: int = 0) -> np.ndarray:
    """f under removal, per row: the mean of f over the removal's M imputed rows
    (:meth:`insdel.game.Game.imputed`, ``keep`` over the game's units); row i's draws are those
    of target ``shift + i`` (a repeat of the draws starts at another ``shift``)."""
    N, n = game.B, game.n
    M = max(int(game.n_draws), 1)
    block = max(1, _BLOCK_VALUES // max(M * n, 1))
    out = np.empty(N, dtype=np.float64)
    for s in range(0, N, block):
        e = min(N, s + block)
        Z = game.imputed(np.arange(s, e, dtype=np.int64), keep[s:e], shift=shift)
        out[s:e] = game.model(Z.reshape(-1, n)).reshape(e - s, Z.shape[1]).mean(axis=1)
    return out


def _losses(pred: np.ndarray, y: np.ndarray) -> dict[str, float]:
    err = pred - y
    mse = float(np.mean(err * err))
    return {"mse": mse, "rmse": float(np.sqrt(mse)), "mae": float(np.mean(np.abs(err)))}


def srg_table(curves: pd.DataFrame, loss: str = "mse") -> pd.DataFrame:
    """Per method: the areas of its MoRF and LeRF ``loss`` curves over q (trapezoid on the actual
    q), SRG = morf_area - lerf_area, and ranks (1 = best; ties share the lower rank). A method
    with one order only has NaN where the other is missing."""
    check_choice("loss", loss, LOSSES)
    rows = []
    for m, g in curves.groupby("method", sort=False):
        areas = {}
        for o in ORDERS:
            c = g[g["order"] == o].sort_values("q")
            areas[o] = (float(trapezoid_area(c[loss].to_numpy(float), c["q"].to_numpy(float)))
                        if len(c) else float("nan"))
        rows.append({"method": m, "morf_area": areas["morf"], "lerf_area": areas["lerf"],
                     "srg": areas["morf"] - areas["lerf"]})
    out = pd.DataFrame(rows, columns=AREA_COLUMNS[:4])
    for col, name, asc in (("srg", "rank", False), ("morf_area", "rank_morf", False),
                           ("lerf_area", "rank_lerf", True)):
        out[name] = out[col].rank(ascending=asc, method="min").astype("Int64")
    return out[AREA_COLUMNS]


def _trapezoid_weights(q: np.ndarray) -> np.ndarray:
    """w with sum_j w_j L_j = the trapezoid area of L over the sorted q (:func:`_trapezoid`)."""
    d = np.diff(q) / 2.0
    return np.concatenate([d, [0.0]]) + np.concatenate([[0.0], d])


def _row_terms(pred: np.ndarray, y: np.ndarray, loss: str, value: float) -> np.ndarray:
    """Each row's term of the loss ``value`` (its influence): the loss is their mean for mse and
    mae; rmse = sqrt(mse) is linearised (delta method), err^2 / (2 rmse)."""
    err = pred - y
    if loss == "mae":
        return np.abs(err)
    if loss == "mse":
        return err * err
    return err * err / (2.0 * value) if value > 0 else np.full(err.shape, np.nan)


def _spread(summary: pd.DataFrame, influence: Mapping[str, np.ndarray], srg_repeats: np.ndarray,
            level: float) -> pd.DataFrame:
    """The summary with ``srg_se`` (over rows), ``srg_sd_seeds``, ``n_seeds`` and ``tied_with``:
    two methods are tied when their SRGs differ by at most z times the standard error of the
    paired per-row difference of their influences."""
    out = summary.copy()
    methods = list(out["method"])
    n_seeds = srg_repeats.shape[0]
    out["srg_se"] = [mean_se(influence[m])[1] if m in influence else float("nan")
                     for m in methods]
    out["srg_sd_seeds"] = (srg_repeats.std(axis=0, ddof=1) if n_seeds > 1
                           else np.full(len(methods), np.nan))
    out["n_seeds"] = n_seeds
    z = normal_quantile(level)
    srg = dict(zip(methods, out["srg"], strict=True))
    tied = []
    for a in methods:
        near = []
        for b in methods:
            if b == a or a not in influence or b not in influence:
                continue
            se = mean_se(influence[a] - influence[b])[1]
            diff = abs(srg[a] - srg[b])
            if np.isfinite(diff) and (diff <= z * se if np.isfinite(se) else diff == 0):
                near.append(b)
        tied.append(";".join(near))
    out["tied_with"] = tied
    return out[SUMMARY_COLUMNS]


def evaluate(f, X, y, attributions: Mapping[str, np.ndarray], removal: SampledRemoval, *,
         fractions: Sequence[float] = PAPER_FRACTIONS, orders: Sequence[str] = ORDERS,
         ranking: str = "absolute", loss: str = "mse", random: bool = True, seed: int = 0,
         groups=None, n_seeds: int = 1, level: float = 0.95, batch_size: int | None = None,
         progress: bool | None = None) -> RoadResult:
    """ROAD: the loss of f under imputation as the most (MoRF) or least (LeRF) relevant features
    are removed, without retraining (Rong et al., 2022).

    Parameters
    ----------
    f : model
        Anything :func:`insdel.as_model` takes.
    X : array_like (N, n)
        The evaluated rows (held-out rows: the removal should be fitted on training rows).
    y : array_like (N,)
        Their true targets.
    attributions : mapping
        Method name -> attributions (N, n) of the rows of X (or (N, m), one per group).
    removal : SampledRemoval
        What a removed feature becomes; its ``sample(X, keep, targets)`` is called with ``targets``
        the row indices (the same draws for a row in every method, order and q).
    fractions : sequence of float
        Fractions q in (0, 1] of units removed, k = ⌈q m⌉; q = 0 and q = 1 are always added.
    orders : sequence of {"morf", "lerf"}
        Most relevant first, least relevant first. SRG needs both.
    ranking : {"absolute", "signed"}
        Relevance = |a_j| (default) or a_j.
    loss : {"mse", "rmse", "mae"}
        The loss of the ``loss`` column and the areas.
    random : bool
        Add the method ``"random"``: scores drawn uniformly per row (seeded by ``seed``).
    seed : int
        Seed of the random method.
    groups : optional
        Feature groups (anything :func:`insdel.groups.check_groups` takes: e.g. a one-hot block
        as one group): a unit is a group, removed and imputed as a whole, ranked by the sum of
        its columns' attributions (:func:`insdel.groups.group_attributions`), as the insertion
        and deletion curves do. None: one unit per feature.
    n_seeds : int
        Repeats of the removal's draws: repeat s draws row i as target ``s N + i`` (repeat 0 is
        the single run's draws) and the random method's scores anew; the curves are the means
        over the repeats and ``srg_sd_seeds`` their spread.
    level : float in (0, 1)
        Confidence level of the ties (``tied_with``).
    batch_size : int, optional
        Rows per model call (:func:`insdel.as_model`).
    progress : bool, optional
        Progress bar over the (method, order, k) units.

    Returns
    -------
    RoadResult
    """
    from ._validation import check_bool, check_positive_int

    X = as_float_array("X", X, ndim=(2,))
    N, n = X.shape
    if N < 1 or n < 1:
        raise ValueError(f"X must have at least one row and one feature; got shape {X.shape}.")
    y = as_float_array("y", y, ndim=(1, 2))
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.shape != (N,):
        raise ValueError(f"y must have shape (N,) = ({N},), one target per row of X; got "
                         f"{y.shape}.")
    if not isinstance(attributions, Mapping):
        raise TypeError("attributions must be a mapping: method name -> (N, n) attributions; got "
                        f"{type(attributions).__name__}.")
    removal = _check_removal(removal)
    qs = [0.0, *_check_fractions(fractions)]
    orders = _check_orders(orders)
    ranking = check_choice("ranking", ranking, RANKINGS)
    loss = check_choice("loss", loss, LOSSES)
    random = check_bool(random, "random")
    seed = check_seed(seed)
    n_seeds = check_positive_int(n_seeds, "n_seeds")
    level = check_scalar(level, "level", float, min_val=0.0, max_val=1.0,
                         include_boundaries="neither", finite=True)
    game = as_game(f, X, None, removal=removal, groups=groups, batch_size=batch_size)
    grp, m = game.groups, game.m
    scores: dict[str, np.ndarray] = {}
    for meth, A in attributions.items():
        if random and meth == "random":
            raise ValueError("attributions: the method name 'random' is the seeded random "
                             "baseline (random=True); rename the method or pass random=False.")
        A = as_float_array(f"attributions[{meth!r}]", A, ndim=(2,))
        if A.shape[0] != N or A.shape[1] not in (n, m):
            raise ValueError(f"attributions[{meth!r}] has shape {A.shape}; expected ({N}, {n}), "
                             "one row per row of X" + ("" if grp is None else
                                                       f" (or ({N}, {m}), one per group)") + ".")
        A = group_attributions(A, grp, name=f"attributions[{meth!r}]")
        scores[str(meth)] = np.abs(A) if ranking == "absolute" else A
    if not scores and not random:
        raise ValueError("attributions is empty and random=False: nothing to evaluate.")

    def random_scores(s: int) -> np.ndarray:
        entropy = [seed, 5_322] if s == 0 else [seed, 5_322, s]
        return np.random.default_rng(np.random.SeedSequence(entropy)).random((N, m))

    # units: k = 0 and k = m are shared by every curve; other (method, order, k) once each
    ks = sorted({n_removed(q, m) for q in qs})
    fixed = {(meth, o): sort_orderings(S, check_ordering(o, allowed=ORDERS, ranking="signed"))
             for meth, S in scores.items() for o in orders}
    keys = [(meth, o) for meth in [*scores, *(["random"] if random else [])] for o in orders]
    units = [(meth, o, k) for (meth, o) in keys for k in ks if 0 < k < m]
    w = _trapezoid_weights(np.asarray(qs, dtype=np.float64))
    # the cost is refused before any draw
    game.check_cost(n_seeds * (len(units) + 1) * N, what="ROAD")
    runs, influence, srg_runs = [], {}, []
    with progress_bar(n_seeds * (len(units) + 1) + 1, "road units", unit="unit",
                      enable=progress, auto=True) as bar:
        pred0 = game.model(game.X)
        bar.update(1)
        for s in range(n_seeds):
            plans = dict(fixed)
            if random:
                R = random_scores(s)
                plans.update({("random", o): sort_orderings(
                    R, check_ordering(o, allowed=ORDERS, ranking="signed")) for o in orders})
            preds = {0: pred0, m: _predict_removed(game, np.zeros((N, m), bool), shift=s * N)}
            bar.update(1)
            for (meth, o, k) in units:
                keep = np.ones((N, m), dtype=bool)
                np.put_along_axis(keep, plans[(meth, o)][:, :k], False, axis=1)
                preds[(meth, o, k)] = _predict_removed(game, keep, shift=s * N)
                bar.update(1)
            losses = {key: _losses(p, y) for key, p in preds.items()}
            rows, terms = [], {}
            for (meth, o) in keys:
                for j, q in enumerate(qs):
                    k = n_removed(q, m)
                    key = k if k in (0, m) else (meth, o, k)
                    res = losses[key]
                    rows.append({"method": meth, "order": o, "q": q, "k": k, "loss": res[loss],
                                 **res})
                    t = w[j] * _row_terms(preds[key], y, loss, res[loss])
                    terms[(meth, o)] = terms.get((meth, o), 0.0) + t
            curves_s = pd.DataFrame(rows, columns=CURVE_COLUMNS)
            runs.append(curves_s)
            srg_runs.append(srg_table(curves_s, loss)["srg"].to_numpy(float))
            if set(orders) == set(ORDERS):
                for meth in dict.fromkeys(meth for meth, _ in keys):
                    influence[meth] = influence.get(meth, 0.0) + (
                        terms[(meth, "morf")] - terms[(meth, "lerf")]) / n_seeds
    if n_seeds == 1:
        curves, repeats = runs[0], None
    else:
        repeats = pd.concat([c.assign(seed=s) for s, c in enumerate(runs)], ignore_index=True)
        repeats = repeats[["seed", *CURVE_COLUMNS]]
        curves = runs[0].copy()
        for col in ("loss", *LOSSES):
            curves[col] = np.mean([c[col].to_numpy(float) for c in runs], axis=0)
    summary = _spread(srg_table(curves, loss), influence, np.asarray(srg_runs), level)
    return RoadResult(curves=curves, summary=summary, loss=loss, ranking=ranking,
                      removal=dict(removal.params()), n_seeds=n_seeds, level=level,
                      repeats=repeats, units=None if grp is None else list(grp.names))


@dataclasses.dataclass
class LeakageResult:
    """What :func:`leakage` measured.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per feature (or group): ``feature``, ``accuracy`` (cross-validated accuracy of
        predicting whether the feature was removed from the imputed row's values), ``chance``
        (the majority rate of that label), ``excess`` = accuracy - chance, and ``ci_low``,
        ``ci_high``: the accuracy's Wilson interval over the ``n_rows`` rows.
    accuracy, chance : float
        Means over the features.
    fraction : float
        Probability that a feature of a row was removed.
    classifier : str
    n_rows : int
        Rows used.
    ci_low, ci_high : float
        Wilson interval of the mean accuracy at ``level`` with the ``n_rows`` rows as its trials,
        as each feature's: a leak may sit in one feature, so the mean is not given the width of
        ``n_rows`` times the features independent trials (which the features of one row, sharing
        its imputation, are not either).
    level : float
    n_rows_requested : int or None
        The ``n_rows`` asked for (None: all rows); more than X has is capped to its rows.
    """

    table: pd.DataFrame
    accuracy: float
    chance: float
    fraction: float
    classifier: str
    n_rows: int
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    level: float = 0.95
    n_rows_requested: int | None = None

    @property
    def excess(self) -> float:
        """Mean accuracy above chance: near 0, the imputation does not reveal what was removed."""
        return self.accuracy - self.chance

    @property
    def capped(self) -> bool:
        """Whether fewer rows were used than ``n_rows`` asked for (X has fewer)."""
        return self.n_rows_requested is not None and self.n_rows < self.n_rows_requested

    def verdict(self, margin: float = LEAK_MARGIN) -> str:
        """What the interval allows one to say: ``"leaks"`` (its lower end above chance),
        ``"no leak"`` (its upper end below chance + ``margin``: no clear leakage) or
        ``"too few rows"`` (it reaches chance + ``margin`` and more: the rows cannot tell)."""
        if self.ci_low > self.chance:
            return "leaks"
        if self.ci_high < self.chance + margin:
            return "no leak"
        return "too few rows"

    def verdict_text(self, margin: float = LEAK_MARGIN) -> str:
        """The verdict as a sentence, with the interval and the rows it rests on."""
        ci = (f"accuracy {self.accuracy:.3f}, {self.level:.0%} interval [{self.ci_low:.3f}, "
              f"{self.ci_high:.3f}], against chance {self.chance:.3f}, from {self.n_rows} rows")
        v = self.verdict(margin)
        if v == "leaks":
            return f"the imputation reveals what it removed ({ci})."
        if v == "no leak":
            return (f"no clear leakage: the imputation does not reveal what it removed beyond "
                    f"{margin:g} over chance ({ci}).")
        return (f"too few rows to tell: the interval reaches chance + {margin:g} and more, "
                f"so clear leakage is not ruled out ({ci}); use more rows.")


def _classifier(kind: str, seed: int):
    if kind == "forest":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(n_estimators=100, min_samples_leaf=1, random_state=seed,
                                      n_jobs=1)
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))


def leakage(X, removal: SampledRemoval, *, fraction: float = 0.5, n_rows: int | None = 2000,
            classifier: str = "forest", folds: int = 5, seed: int = 0,
            feature_names: Sequence[str] | None = None, groups=None,
            level: float = 0.95) -> LeakageResult:
    """ROAD's leakage diagnostic: does an imputed row reveal which of its features were removed?

    From ``n_rows`` rows of X (drawn without replacement, seeded), each feature of each row is
    removed with probability ``fraction`` (seeded), the removed features are imputed by
    ``removal`` (its first draw: one plausible row per row), and for every feature j a classifier
    learns, from the imputed row's n values, whether j was removed; its ``folds``-fold
    cross-validated accuracy is compared with chance (the majority rate of the label).

    Read it as: accuracy near chance (``excess`` ≈ 0) — the imputed values look like real ones
    and the ROAD losses measure lost information; well above chance — the removal leaks the mask
    (the model can react to the imputation's artefacts, as on images with a constant baseline),
    and MoRF / LeRF curves confound information with that leak. A constant reference on
    continuous features leaks almost perfectly (accuracy ≈ 1 with the forest). The accuracy's
    Wilson interval says whether the rows suffice: :meth:`LeakageResult.verdict` is "too few
    rows" when it reaches clear leakage (chance + :data:`LEAK_MARGIN`) without excluding chance.

    Parameters
    ----------
    X : array_like (N, n)
        Rows to impute (e.g. held-out rows).
    removal : SampledRemoval
    fraction : float in (0, 1)
        Probability that a feature is removed.
    n_rows : int or None
        Rows used (at most N: more is capped to N, and the result says so); None: all of them.
    classifier : {"forest", "logistic"}
        ``forest``: a random forest over all features (finds exact constants, intervals and
        interactions); ``logistic``: standardised logistic regression (finds linear shifts only:
        a constant at the mean is invisible to it).
    folds : int
        Cross-validation folds (>= 2).
    seed : int
        Seeds the rows, the masks, the folds and the forest.
    feature_names : sequence of str, optional
        Names of the table's rows (one per feature; with ``groups``, the groups' names are used).
    groups : optional
        Feature groups (:func:`insdel.groups.check_groups`): a group is removed as a whole and is
        one row of the table. None: one per feature.
    level : float in (0, 1)
        Confidence level of the Wilson intervals.

    Returns
    -------
    LeakageResult
    """
    from sklearn.model_selection import KFold

    from ._validation import check_positive_int

    X = as_float_array("X", X, ndim=(2,))
    removal = _check_removal(removal)
    fraction = check_scalar(fraction, "fraction", float, min_val=0.0, max_val=1.0,
                            include_boundaries="neither", finite=True)
    classifier = check_choice("classifier", classifier, CLASSIFIERS)
    folds = check_positive_int(folds, "folds", minimum=2)
    seed = check_seed(seed)
    level = check_scalar(level, "level", float, min_val=0.0, max_val=1.0,
                         include_boundaries="neither", finite=True)
    N, n = X.shape
    if n_rows is not None:
        n_rows = check_positive_int(n_rows, "n_rows")
    B = N if n_rows is None else min(N, n_rows)
    if B < 2 * folds:
        raise ValueError(f"leakage needs at least 2 * folds = {2 * folds} rows; X has {N}"
                         + ("" if n_rows is None else f" and n_rows = {n_rows}") + ".")
    grp = check_groups(groups, n, feature_names=feature_names)
    if grp is not None and grp.singleton:
        grp = None
    names = [str(v) for v in feature_names] if feature_names is not None else \
        [f"x{j}" for j in range(n)]
    if len(names) != n:
        raise ValueError(f"feature_names has {len(names)} names; X has n = {n} features.")
    if grp is not None:
        names = [str(v) for v in grp.names]
    m = len(names)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 3_917]))
    idx = np.sort(rng.choice(N, B, replace=False)) if B < N else np.arange(N)
    removed = rng.random((B, m)) < fraction
    keep = ~removed if grp is None else grp.expand(~removed)
    rows = as_game(None, X, None, removal=removal, rows_only=True)
    Z = rows.imputed(idx.astype(np.int64), keep, draws=1)[:, 0, :]

    pred = np.empty_like(removed)
    for train, test in KFold(folds, shuffle=True, random_state=seed).split(Z):
        if classifier == "forest":  # one multi-output forest for the m labels
            clf = _classifier("forest", seed).fit(Z[train], removed[train])
            pred[test] = np.asarray(clf.predict(Z[test])).reshape(len(test), m).astype(bool)
            continue
        for j in range(m):
            lab = removed[train, j]
            if lab.min() == lab.max():  # one class in this fold's training rows
                pred[test, j] = lab[0]
            else:
                pred[test, j] = _classifier("logistic", seed).fit(Z[train], lab).predict(Z[test])
    acc = (pred == removed).mean(axis=0)
    p = removed.mean(axis=0)
    chance = np.maximum(p, 1.0 - p)
    ci = np.array([wilson_interval(float(a), B, level) for a in acc]).reshape(m, 2)
    table = pd.DataFrame({"feature": names, "accuracy": acc, "chance": chance,
                          "excess": acc - chance, "ci_low": ci[:, 0], "ci_high": ci[:, 1]})
    # the mean accuracy's interval counts the B rows as its trials, as each feature's does: a leak
    # may sit in one feature, and a verdict must not claim more than one feature's rows can show
    mean_acc = float(acc.mean())
    low, high = wilson_interval(mean_acc, B, level)
    return LeakageResult(table=table, accuracy=mean_acc, chance=float(chance.mean()),
                         fraction=fraction, classifier=classifier, n_rows=int(B), ci_low=low,
                         ci_high=high, level=level, n_rows_requested=n_rows)


def road(*args, **kwargs) -> RoadResult:
    """The former name of :func:`evaluate` (a function named like its module), kept for one
    release: the same arguments, with a DeprecationWarning."""
    warnings.warn("insdel.road.evaluate is deprecated: call insdel.road.evaluate (the same "
                  "arguments).", DeprecationWarning, stacklevel=2)
    return evaluate(*args, **kwargs)
