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
continuous data leaks almost perfectly (:func:`constant_removal` makes one to compare).

Every row's draws are seeded by the removal's seed and the row's index (``targets`` =
``arange(N)``), so the same row gets the same draws in every method, order and fraction (common
random numbers: the curves differ only by what is kept).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._progress import progress_bar
from ._validation import as_float_array, check_choice, check_scalar, check_seed
from .adapter import as_model
from .areas import trapezoid_area
from .ordering import check_ordering, sort_orderings
from .removal.base import SampledRemoval
from .roar import PAPER_FRACTIONS, _check_fractions, n_removed

__all__ = ["ORDERS", "LOSSES", "RANKINGS", "RoadResult", "LeakageResult", "road", "leakage",
           "constant_removal", "ConstantRemoval", "srg_table"]

ORDERS = ("morf", "lerf")
LOSSES = ("mse", "rmse", "mae")
RANKINGS = ("absolute", "signed")
CLASSIFIERS = ("forest", "logistic")
CURVE_COLUMNS = ["method", "order", "q", "k", "loss", "mse", "rmse", "mae"]
SUMMARY_COLUMNS = ["method", "morf_area", "lerf_area", "srg", "rank", "rank_morf", "rank_lerf"]

# rows of one sample() call: block * M * n float64 values of at most about 32 MiB
_BLOCK_VALUES = 1 << 22


class ConstantRemoval(SampledRemoval):
    """Removed features set to fixed values (one row per coalition, M = 1): the baseline
    reference as a :class:`~insdel.removal.SampledRemoval`, for :func:`road` and :func:`leakage`
    to compare against a conditional imputation.

    Parameters
    ----------
    values : float or array_like (n,)
        The value of each removed feature (e.g. the training mean).
    """

    name = "constant"
    n_draws = 1

    def __init__(self, values):
        self.values = as_float_array("values", values, ndim=(0, 1))

    def params(self) -> dict[str, Any]:
        return {**super().params(), "values": np.atleast_1d(self.values).tolist()}

    def sample(self, X: np.ndarray, keep: np.ndarray, targets: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        v = np.broadcast_to(self.values, X.shape[1:]) if self.values.ndim == 0 else self.values
        if v.shape != X.shape[1:]:
            raise ValueError(f"constant removal: values has {v.shape[0]} entries but the rows have "
                             f"n = {X.shape[1]} features.")
        return np.where(np.asarray(keep, bool), X, v)[:, None, :]


def constant_removal(values) -> ConstantRemoval:
    """A :class:`SampledRemoval` that sets removed features to ``values`` (a scalar or one value
    per feature): the baseline reference, e.g. ``constant_removal(X_train.mean(axis=0))``."""
    return ConstantRemoval(values)


@dataclasses.dataclass
class RoadResult:
    """What :func:`road` measured.

    Attributes
    ----------
    curves : pandas.DataFrame
        One row per (method, order, q): ``k`` features removed, ``loss`` (the chosen ``loss``) and
        every loss (``mse``, ``rmse``, ``mae``). q = 0 and q = 1 are in every curve.
    summary : pandas.DataFrame
        One row per method: ``morf_area``, ``lerf_area`` (trapezoid areas of the chosen loss over
        q in [0, 1]), ``srg`` = morf_area - lerf_area (higher is better) and ranks (1 = best): by
        ``srg``, by ``morf_area`` (larger is better) and by ``lerf_area`` (smaller is better).
    loss, ranking : str
        The loss the areas use and how features were ranked.
    removal : dict
        The removal's ``params()``.
    """

    curves: pd.DataFrame
    summary: pd.DataFrame
    loss: str
    ranking: str
    removal: dict

    def to_markdown(self, digits: int = 4) -> str:
        """The summary as a Markdown table, best SRG first."""
        s = self.summary.sort_values("rank", kind="stable")
        lines = [f"### ROAD: {self.loss} under imputation ({self.removal.get('name', '?')}), "
                 f"features ranked by {self.ranking} attribution\n",
                 "| Rank | Method | MoRF area | LeRF area | SRG |", "|---:|---|---:|---:|---:|"]
        for _, r in s.iterrows():
            lines.append(f"| {r['rank']} | {r['method']} | {r['morf_area']:.{digits}f} | "
                         f"{r['lerf_area']:.{digits}f} | {r['srg']:+.{digits}f} |")
        lines.append("\nSRG = area(MoRF loss) − area(LeRF loss): higher is better (removing what "
                     "the method calls relevant first hurts most).")
        return "\n".join(lines) + "\n"


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
    if not isinstance(removal, SampledRemoval):
        raise TypeError("removal must be a SampledRemoval (e.g. insdel.removal's "
                        "conditional_gaussian fitted on training rows, or "
                        "insdel.road.constant_removal(values) for a fixed reference); got "
                        f"{removal!r} ({type(removal).__name__}).")
    return removal


def _imputed(removal: SampledRemoval, X: np.ndarray, keep: np.ndarray,
             targets: np.ndarray) -> np.ndarray:
    """``removal.sample`` checked: (B, M, n), finite, equal to X on the kept features."""
    Z = np.asarray(removal.sample(X, keep, targets), dtype=np.float64)
    B, n = X.shape
    if Z.ndim != 3 or Z.shape[0] != B or Z.shape[2] != n or Z.shape[1] < 1:
        raise ValueError(f"removal {removal!r}: sample() returned shape {Z.shape}; expected "
                         f"(B, M, n) = ({B}, M, {n}).")
    if not np.all(np.isfinite(Z)):
        raise ValueError(f"removal {removal!r}: sample() returned non-finite values.")
    if np.any(np.where(keep[:, None, :], Z != X[:, None, :], False)):
        raise ValueError(f"removal {removal!r}: sample() changed kept features (a row must equal "
                         "x where keep is True).")
    return Z


def _predict_removed(model, removal: SampledRemoval, X: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """f under removal, per row: the mean of f over the removal's M imputed rows."""
    N, n = X.shape
    M = max(int(getattr(removal, "n_draws", 1)), 1)
    block = max(1, _BLOCK_VALUES // max(M * n, 1))
    out = np.empty(N, dtype=np.float64)
    for s in range(0, N, block):
        e = min(N, s + block)
        Z = _imputed(removal, X[s:e], keep[s:e], np.arange(s, e, dtype=np.int64))
        out[s:e] = model(Z.reshape(-1, n)).reshape(e - s, Z.shape[1]).mean(axis=1)
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
    out = pd.DataFrame(rows, columns=SUMMARY_COLUMNS[:4])
    for col, name, asc in (("srg", "rank", False), ("morf_area", "rank_morf", False),
                           ("lerf_area", "rank_lerf", True)):
        out[name] = out[col].rank(ascending=asc, method="min").astype("Int64")
    return out[SUMMARY_COLUMNS]


def road(f, X, y, attributions: Mapping[str, np.ndarray], removal: SampledRemoval, *,
         fractions: Sequence[float] = PAPER_FRACTIONS, orders: Sequence[str] = ORDERS,
         ranking: str = "absolute", loss: str = "mse", random: bool = True, seed: int = 0,
         batch_size: int | None = None, progress: bool | None = None) -> RoadResult:
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
        Method name -> attributions (N, n) of the rows of X.
    removal : SampledRemoval
        What a removed feature becomes; its ``sample(X, keep, targets)`` is called with ``targets``
        the row indices (the same draws for a row in every method, order and q).
    fractions : sequence of float
        Fractions q in (0, 1] of features removed, k = ⌈q n⌉; q = 0 and q = 1 are always added.
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
    batch_size : int, optional
        Rows per model call (:func:`insdel.as_model`).
    progress : bool, optional
        Progress bar over the (method, order, k) units.

    Returns
    -------
    RoadResult
    """
    from ._validation import check_bool

    model = as_model(f, batch_size=batch_size)
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
    random = check_bool("random", random)
    seed = check_seed(seed)
    scores: dict[str, np.ndarray] = {}
    for m, A in attributions.items():
        if random and m == "random":
            raise ValueError("attributions: the method name 'random' is the seeded random "
                             "baseline (random=True); rename the method or pass random=False.")
        A = as_float_array(f"attributions[{m!r}]", A, ndim=(2,))
        if A.shape != (N, n):
            raise ValueError(f"attributions[{m!r}] has shape {A.shape}; expected ({N}, {n}), one "
                             "row per row of X.")
        scores[str(m)] = np.abs(A) if ranking == "absolute" else A
    if random:
        scores["random"] = np.random.default_rng(np.random.SeedSequence([seed, 5_322])).random(
            (N, n))
    if not scores:
        raise ValueError("attributions is empty and random=False: nothing to evaluate.")

    # units: k = 0 and k = n are shared by every curve; other (method, order, k) once each
    ks = sorted({n_removed(q, n) for q in qs})
    # the scores are the relevance (|a| under ranking="absolute"): morf / lerf sort them signed
    plans = {(m, o): sort_orderings(S, check_ordering(o, allowed=ORDERS, ranking="signed"))
             for m, S in scores.items() for o in orders}
    units = [(m, o, k) for (m, o) in plans for k in ks if 0 < k < n]
    cache: dict[Any, dict[str, float]] = {}
    with progress_bar(len(units) + 2, "road units", unit="unit", enable=progress,
                      auto=True) as bar:
        cache[0] = _losses(model(X), y)
        bar.update(1)
        cache[n] = _losses(_predict_removed(model, removal, X, np.zeros((N, n), bool)), y)
        bar.update(1)
        for (m, o, k) in units:
            keep = np.ones((N, n), dtype=bool)
            np.put_along_axis(keep, plans[(m, o)][:, :k], False, axis=1)
            cache[(m, o, k)] = _losses(_predict_removed(model, removal, X, keep), y)
            bar.update(1)
    rows = []
    for (m, o) in plans:
        for q in qs:
            k = n_removed(q, n)
            res = cache[k] if k in (0, n) else cache[(m, o, k)]
            rows.append({"method": m, "order": o, "q": q, "k": k, "loss": res[loss], **res})
    curves = pd.DataFrame(rows, columns=CURVE_COLUMNS)
    return RoadResult(curves=curves, summary=srg_table(curves, loss), loss=loss, ranking=ranking,
                      removal=dict(removal.params()))


@dataclasses.dataclass
class LeakageResult:
    """What :func:`leakage` measured.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per feature: ``feature``, ``accuracy`` (cross-validated accuracy of predicting
        whether the feature was removed from the imputed row's values), ``chance`` (the majority
        rate of that label) and ``excess`` = accuracy - chance.
    accuracy, chance : float
        Means over the features.
    fraction : float
        Probability that a feature of a row was removed.
    classifier : str
    n_rows : int
    """

    table: pd.DataFrame
    accuracy: float
    chance: float
    fraction: float
    classifier: str
    n_rows: int

    @property
    def excess(self) -> float:
        """Mean accuracy above chance: near 0, the imputation does not reveal what was removed."""
        return self.accuracy - self.chance


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
            feature_names: Sequence[str] | None = None) -> LeakageResult:
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
    continuous features leaks almost perfectly (accuracy ≈ 1 with the forest).

    Parameters
    ----------
    X : array_like (N, n)
        Rows to impute (e.g. held-out rows).
    removal : SampledRemoval
    fraction : float in (0, 1)
        Probability that a feature is removed.
    n_rows : int or None
        Rows used (at most N); None: all of them.
    classifier : {"forest", "logistic"}
        ``forest``: a random forest over all features (finds exact constants, intervals and
        interactions); ``logistic``: standardised logistic regression (finds linear shifts only:
        a constant at the mean is invisible to it).
    folds : int
        Cross-validation folds (>= 2).
    seed : int
        Seeds the rows, the masks, the folds and the forest.
    feature_names : sequence of str, optional
        Names of the table's rows.

    Returns
    -------
    LeakageResult
    """
    from sklearn.model_selection import KFold

    from ._validation import check_positive_int

    X = as_float_array("X", X, ndim=(2,))
    removal = _check_removal(removal)
    fraction = check_scalar("fraction", fraction, float, min_val=0.0, max_val=1.0,
                            include_boundaries="neither", finite=True)
    classifier = check_choice("classifier", classifier, CLASSIFIERS)
    folds = check_positive_int("folds", folds, minimum=2)
    seed = check_seed(seed)
    N, n = X.shape
    if n_rows is not None:
        n_rows = check_positive_int("n_rows", n_rows)
    B = N if n_rows is None else min(N, n_rows)
    if B < 2 * folds:
        raise ValueError(f"leakage needs at least 2 * folds = {2 * folds} rows; X has {N}"
                         + ("" if n_rows is None else f" and n_rows = {n_rows}") + ".")
    names = [str(v) for v in feature_names] if feature_names is not None else \
        [f"x{j}" for j in range(n)]
    if len(names) != n:
        raise ValueError(f"feature_names has {len(names)} names; X has n = {n} features.")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 3_917]))
    idx = np.sort(rng.choice(N, B, replace=False)) if B < N else np.arange(N)
    removed = rng.random((B, n)) < fraction
    Z = _imputed(removal, X[idx], ~removed, idx.astype(np.int64))[:, 0, :]

    pred = np.empty_like(removed)
    for train, test in KFold(folds, shuffle=True, random_state=seed).split(Z):
        if classifier == "forest":  # one multi-output forest for the n labels
            clf = _classifier("forest", seed).fit(Z[train], removed[train])
            pred[test] = np.asarray(clf.predict(Z[test])).reshape(len(test), n).astype(bool)
            continue
        for j in range(n):
            lab = removed[train, j]
            if lab.min() == lab.max():  # one class in this fold's training rows
                pred[test, j] = lab[0]
            else:
                pred[test, j] = _classifier("logistic", seed).fit(Z[train], lab).predict(Z[test])
    acc = (pred == removed).mean(axis=0)
    p = removed.mean(axis=0)
    chance = np.maximum(p, 1.0 - p)
    table = pd.DataFrame({"feature": names, "accuracy": acc, "chance": chance,
                          "excess": acc - chance})
    return LeakageResult(table=table, accuracy=float(acc.mean()), chance=float(chance.mean()),
                         fraction=fraction, classifier=classifier, n_rows=int(B))
