"""``evaluate``: insertion and deletion ABCs of several attribution methods on the same pairs.

All methods, the seeded ``random`` row and ``n_random`` further random orderings of every pair are
traced in a single pass of the curve engine, so shared points (the end points, common prefixes of
similar orderings) are evaluated once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ._stats import mean_se
from ._validation import (
    align_attributions,
    as_float_array,
    check_bool,
    check_clusters,
    check_index,
    check_mode,
    check_positive_int,
    feature_names_of,
)
from .adapter import ModelLike
from .areas import abc as _abc
from .game import as_game
from .groups import Groups, group_attributions, is_full
from .groups import positions as make_positions
from .ordering import random_permutations
from .tracing import (
    DEFAULT_CHUNK_SIZE,
    _curve_job,
    _trace_game,
    check_order,
    orderings,
    per_output_take,
)

__all__ = ["evaluate", "Evaluation", "CurvePoints", "summarize", "to_markdown", "random_orderings"]

#: ``evaluate``'s keywords that moved: the curve points into ``points=``
#: (:class:`CurvePoints`), the rows per model call into the model (``insdel.as_model(f,
#: batch_size=...)``) or the game (``insdel.game.as_game``), which carries it.
_MOVED = {"step": "points=insdel.CurvePoints(step=...)",
          "fractions": "points=insdel.CurvePoints(fractions=...)",
          "max_fraction": "points=insdel.CurvePoints(max_fraction=...)",
          "batch_size": "the model or the game: insdel.as_model(f, batch_size=...) or "
                        "insdel.game.as_game(f, X, R, batch_size=...) as f"}


@dataclass(frozen=True)
class CurvePoints:
    """Where each curve is recorded (:func:`insdel.groups.positions`): nothing given, at every
    unit moved.

    Attributes
    ----------
    step : int, optional
        Units moved per step (the curve is the subsequence of the one-per-step curve).
    fractions : array_like of float, optional
        Curve points at these fractions of the units (instead of ``step``).
    max_fraction : float, optional
        Partial curves that stop after this fraction of the units.
    """

    step: int | None = None
    fractions: ArrayLike | None = None
    max_fraction: float | None = None

    def given(self) -> dict:
        """The attributes given (not None)."""
        return {k: v for k, v in (("step", self.step), ("fractions", self.fractions),
                                  ("max_fraction", self.max_fraction)) if v is not None}

AUTO_DIFFERENCES = (("kernel_shap", "integrated_gradients"), ("exact_shapley", "integrated_gradients"))


def attribution_values(A):
    """The array inside what attribution libraries return: a shap ``Explanation`` (``.values``),
    a torch tensor (detached), or any array-like."""
    if type(A).__name__ == "Explanation" and hasattr(A, "values"):
        A = A.values
    if hasattr(A, "detach") and hasattr(A, "cpu"):
        A = A.detach().cpu().numpy()
    return A


def random_orderings(B: int, K: int, n: int, seed: int = 0) -> np.ndarray:
    """K seeded uniformly random orderings per pair, shape (B, K, n)."""
    from ._validation import check_seed

    B = check_positive_int(B, "B", minimum=0)
    K = check_positive_int(K, "K")
    n = check_positive_int(n, "n", minimum=0)
    return random_permutations(np.random.default_rng(check_seed(seed)), (B, K, n))


@dataclass
class Evaluation:
    """Result of :func:`evaluate`.

    Attributes
    ----------
    methods : list of str
        Method names in the order of the curves' second axis (``random`` last).
    modes : tuple of str
    curves : dict
        mode -> array (B, n_methods, n + 1).
    random_curves : dict
        mode -> array (B, n_random, n + 1): further random orderings (for plots and the empirical
        mean under random orderings).
    fx, fr : ndarray (B,)
        f(x) and f(r) of each pair.
    abc : pandas.DataFrame
        Long table with columns ``pair, method, mode, abc``.
    random_abc : dict
        mode -> array (B, n_random) of the ABCs of the further random orderings.
    normalize : bool
        Whether areas are per feature (divided by n), as in the paper's tables.
    orders : ndarray (B, n_methods, n), optional
        Each method's ordering of each pair.
    feature_names : list of str, optional
        Names of the n features (a DataFrame's columns, or ``evaluate(feature_names=...)``).
    order : str
        How the methods' orderings were derived from their attributions (``"signed"``, the
        paper's, unless ``evaluate(order=...)`` said otherwise).
    stats : dict
        Compute used: curve points, distinct model evaluations, seconds.
    groups : Groups, optional
        The feature groups moved as units (None: one feature per unit).
    positions : ndarray of int (S,), optional
        Units moved at each curve point when not ``0 .. m`` (``step=``, ``fractions=``,
        ``max_fraction=``); areas then use the trapezoid on these positions.
    clusters : ndarray of int (B,), optional
        The independent unit of each pair (``evaluate(clusters=...)``, a policy's
        ``Pairing.cluster``): standard errors are over units, means over pairs. None: every pair
        is its own unit.
    removal : dict, optional
        The removal the curves were traced under (its ``params()``: name, options, data hash);
        None for the paper's baseline (one reference per target).
    """

    methods: list
    modes: tuple
    curves: dict
    random_curves: dict
    fx: np.ndarray
    fr: np.ndarray
    abc: pd.DataFrame
    random_abc: dict
    normalize: bool
    orders: np.ndarray | None = None
    stats: dict = field(default_factory=dict)
    feature_names: list | None = None
    order: str = "signed"
    groups: Groups | None = None
    positions: np.ndarray | None = None
    clusters: np.ndarray | None = None
    removal: dict | None = None

    @property
    def n_pairs(self) -> int:
        return int(self.fx.shape[0])

    @property
    def m(self) -> int:
        """Number of units (groups, or features)."""
        if self.groups is not None:
            return self.groups.m
        if self.orders is not None:
            return int(self.orders.shape[-1])
        return int(next(iter(self.curves.values())).shape[-1] - 1)

    def _abc(self, c: np.ndarray, mode: str) -> np.ndarray:
        return _abc(c, mode=mode, normalize=self.normalize, positions=self.positions,
                    m=None if self.positions is None else self.m)

    def abc_array(self, method: str, mode: str = "insertion") -> np.ndarray:
        """ABCs of one method and mode, shape (B,)."""
        if method not in self.methods:
            raise KeyError(f"unknown method {method!r}; known: {self.methods}.")
        check_mode(mode)
        if mode not in self.modes:
            raise KeyError(f"mode {mode!r} was not evaluated; evaluated: {self.modes}.")
        k = self.methods.index(method)
        return self._abc(self.curves[mode][:, k, :], mode)

    def wide(self) -> pd.DataFrame:
        """ABCs as a wide table: one row per pair, one column per (mode, method)."""
        return self.abc.pivot_table(index="pair", columns=["mode", "method"], values="abc")

    def summary(self, differences: Sequence[tuple[str, str]] | None | str = "auto") -> pd.DataFrame:
        """Mean and standard error of the ABC per mode and method (paper Tables 1-3 layout).

        Means are over the pairs; standard errors over the independent units (:attr:`clusters`;
        column ``n_units``), which are the pairs themselves without clusters.

        Parameters
        ----------
        differences : list of (method_a, method_b), "auto" or None
            Paired-difference rows ``a - b`` (mean and standard error of the per-pair difference).
            "auto" adds Kernel SHAP (or exact Shapley) minus integrated gradients when both are there.
        """
        return summarize(self.abc, differences=differences, methods=self.methods,
                         clusters=self.clusters)

    def to_markdown(self, differences="auto", digits: int = 3) -> str:
        """The summary as a Markdown table (paper layout)."""
        return to_markdown(self.summary(differences), digits=digits)

    def block(self, mode: str = "insertion") -> np.ndarray:
        """The per-pair ABCs of every method in one mode, (B, len(methods)): the block
        :mod:`insdel.verdicts` compares (with :attr:`clusters` as its units)."""
        return np.stack([self.abc_array(m, mode) for m in self.methods], axis=1)

    def comparisons(self, *, level: float = 0.95, n_resamples: int = 2000,
                    seed: int = 0) -> pd.DataFrame:
        """Every pairwise comparison of the methods per mode (:func:`insdel.verdicts.compare`
        over the independent units): its ``table()`` with a ``mode`` column first; empty with
        fewer than 2 methods or 2 units."""
        from .verdicts import compare

        frames = []
        for mode in self.modes:
            try:
                c = compare(self.block(mode), self.methods, clusters=self.clusters, level=level,
                            n_resamples=n_resamples, seed=seed)
            except ValueError:
                continue
            t = c.table()
            t.insert(0, "mode", mode)
            frames.append(t)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def verdicts(self, *, level: float = 0.95, margin: float | None = None,
                 relative: bool = True, n_resamples: int = 2000, seed: int = 0,
                 adjust: str = "holm") -> str:
        """Plain-words verdicts beside the summary, per mode (:func:`insdel.verdicts.
        block_verdicts`): the significant orderings (``adjust``: Holm or max-T), the
        simultaneous rank intervals and, when both ran, integrated gradients' equivalence to
        Kernel SHAP (or exact Shapley) within ``margin`` (default :data:`insdel.verdicts.text.
        DEFAULT_MARGIN` of the spread of ABC with ``relative``). Empty with fewer than 2
        methods."""
        from .verdicts.text import DEFAULT_MARGIN, block_verdicts

        if len(self.methods) < 2:
            return ""
        margin = DEFAULT_MARGIN if margin is None else margin
        return "\n".join(block_verdicts(self.block(mode), self.methods, clusters=self.clusters,
                                        level=level, margin=margin, relative=relative,
                                        n_resamples=n_resamples, seed=seed, adjust=adjust,
                                        title=mode.capitalize()) for mode in self.modes)

    def random_mean(self, mode: str = "insertion") -> np.ndarray:
        """Per-pair empirical mean ABC over the ``n_random`` random orderings, shape (B,)."""
        check_mode(mode)
        if mode not in self.modes:
            raise KeyError(f"mode {mode!r} was not evaluated; evaluated: {self.modes}.")
        a = self.random_abc[mode]
        if a.shape[-1] == 0:
            raise ValueError("this evaluation holds no further random orderings (n_random=0): "
                             "there is no random-order mean.")
        return a.mean(axis=1)

    def ordering(self, pair: int, method: str) -> pd.DataFrame:
        """The steps of one pair's curves under one method: step, feature (index and name) moved
        at that step, and the insertion / deletion curve values after it (step 0: none moved)."""
        if self.orders is None:
            raise ValueError("this evaluation holds no orderings.")
        if method not in self.methods:
            raise KeyError(f"unknown method {method!r}; known: {self.methods}.")
        pair = check_index("pair", pair, self.n_pairs)
        k = self.methods.index(method)
        o = self.orders[pair, k]
        n = o.shape[0]
        if self.groups is not None:
            names = list(self.groups.names)
        else:
            names = self.feature_names or [f"x{j}" for j in range(n)]
        if self.positions is not None:  # several units per point: list what moved since the last
            t = self.positions
            df = pd.DataFrame({"step": np.arange(t.shape[0]), "moved": t,
                               "feature": [[int(j) for j in o[a:b]] for a, b in
                                           zip(np.r_[0, t[:-1]], t, strict=True)],
                               "name": [[names[int(j)] for j in o[a:b]] for a, b in
                                        zip(np.r_[0, t[:-1]], t, strict=True)]})
            for mo in self.modes:
                df[mo] = self.curves[mo][int(pair), k]
            return df
        # step 0 moves no feature: pandas' nullable Int64 keeps the indices integers beside it
        df = pd.DataFrame({"step": np.arange(n + 1),
                           "feature": pd.array([None] + [int(j) for j in o], dtype="Int64"),
                           "name": [None] + [names[int(j)] for j in o]})
        for m in self.modes:
            df[m] = self.curves[m][int(pair), k]
        return df

    @classmethod
    def from_curves(cls, *, methods: Sequence[str], modes: Sequence[str], curves: Mapping,
                    random_curves: Mapping, fx: np.ndarray, fr: np.ndarray, normalize: bool,
                    orders: np.ndarray | None = None, stats: dict | None = None,
                    feature_names: Sequence[str] | None = None,
                    order: str = "signed", groups: Groups | None = None,
                    positions: np.ndarray | None = None,
                    clusters: np.ndarray | None = None,
                    removal: dict | None = None) -> Evaluation:
        """Build an Evaluation from traced curves: the areas (paper eq. 1, 2) are computed here,
        the one place that turns curves into the long ABC table.

        The number of units m comes from ``groups``, else from ``orders``, else from the curves'
        length; with ``positions`` one of ``groups`` or ``orders`` is needed (a partial or
        stepped curve does not tell m)."""
        methods = list(methods)
        if positions is not None and groups is None and orders is None:
            raise ValueError("from_curves: with positions= give orders= or groups= too: the "
                             "number of units m (what the positions are fractions of) cannot "
                             "be read from curves recorded at positions.")
        if groups is not None and orders is not None and np.shape(orders)[-1] != groups.m:
            raise ValueError(f"from_curves: orders are of {np.shape(orders)[-1]} units but groups "
                             f"has m = {groups.m} groups.")
        units = (groups.m if groups is not None
                 else np.shape(orders)[-1] if orders is not None else None)
        points = None if positions is None else len(positions)
        if units is not None and points is None:
            points = units + 1
        for m in modes:
            for what, cv in (("curves", curves[m]), ("random_curves", random_curves[m])):
                if points is not None and np.shape(cv)[-1] != points:
                    raise ValueError(f"from_curves: {what}[{m!r}] has {np.shape(cv)[-1]} points "
                                     f"per curve; expected {points} (m = {units} units"
                                     f"{'' if positions is None else ' at the positions'}).")
        obj = cls(methods=methods, modes=tuple(modes), curves=dict(curves),
                  random_curves=dict(random_curves), fx=np.asarray(fx), fr=np.asarray(fr),
                  abc=pd.DataFrame(), random_abc={}, normalize=bool(normalize), orders=orders,
                  stats=dict(stats or {}),
                  feature_names=None if feature_names is None else list(feature_names),
                  order=str(order), groups=groups,
                  positions=None if positions is None else np.asarray(positions, np.int64),
                  clusters=check_clusters(clusters, int(np.asarray(fx).shape[0])),
                  removal=None if removal is None else dict(removal))
        modes = tuple(modes)
        B = int(np.asarray(fx).shape[0])
        Km = len(methods)
        frames = []
        for m in modes:
            a = obj._abc(curves[m], m)  # (B, Km)
            frames.append(pd.DataFrame({
                "pair": np.repeat(np.arange(B), Km),
                "method": np.tile(np.array(methods, dtype=object), B),
                "mode": m,
                "abc": a.reshape(-1),
            }))
        obj.random_abc = {m: obj._abc(random_curves[m], m) for m in modes}
        obj.abc = pd.concat(frames, ignore_index=True)
        return obj

    def save(self, folder, *, pairing=None) -> Path:
        """Write ``curves.npz`` (every array needed by :meth:`load`) and ``abc.parquet`` (the long
        ABC table with f(x), f(r), each pair's ``cluster`` when the evaluation has clusters and,
        given the ``pairing``, the targets' and references' indices and the points themselves)
        into ``folder``, atomically. Returns the folder."""
        from . import _checkpoint as ck

        folder = Path(folder)
        arrays: dict[str, np.ndarray] = {
            "methods": np.array(self.methods), "modes": np.array(list(self.modes)),
            "normalize": np.array(self.normalize), "fx": self.fx, "fr": self.fr,
            "order": np.array(self.order),
        }
        if pairing is not None:
            arrays.update({"X": pairing.X, "R": pairing.R,
                           "target_index": np.asarray(pairing.target_index),
                           "reference_index": np.asarray(pairing.reference_index)})
        if self.orders is not None:
            arrays["orders"] = self.orders
        if self.feature_names is not None:
            arrays["feature_names"] = np.array(self.feature_names)
        if self.groups is not None:
            arrays["group_labels"] = self.groups.labels
            arrays["group_names"] = np.array(self.groups.names)
        if self.positions is not None:
            arrays["positions"] = self.positions
        if self.clusters is not None:
            arrays["clusters"] = self.clusters
        if self.removal is not None:
            import json

            arrays["removal"] = np.array(json.dumps(self.removal, sort_keys=True))
        for m in self.modes:
            arrays[f"curves_{m}"] = self.curves[m]
            arrays[f"random_curves_{m}"] = self.random_curves[m]
        ck.save_npz(folder / "curves.npz", arrays)
        df = self.abc.copy()
        pair = df["pair"].to_numpy()
        if pairing is not None:
            df["target_index"] = np.asarray(pairing.target_index)[pair]
            df["reference_index"] = np.asarray(pairing.reference_index)[pair]
        df["fx"] = self.fx[pair]
        df["fr"] = self.fr[pair]
        if self.clusters is not None:  # the independent unit of each pair (the leaderboard's)
            df["cluster"] = self.clusters[pair]
        with ck.atomic_write(folder / "abc.parquet", suffix=".parquet") as tmp:
            df.to_parquet(tmp, index=False)
        return folder

    @classmethod
    def load(cls, folder) -> Evaluation:
        """Read an Evaluation written by :meth:`save` (areas recomputed from the curves)."""
        path = Path(folder) / "curves.npz"
        if not path.is_file():
            raise FileNotFoundError(f"{folder} holds no saved evaluation (no curves.npz).")
        import json

        z = np.load(path, allow_pickle=False)
        modes = tuple(str(m) for m in z["modes"])
        return cls.from_curves(
            methods=[str(m) for m in z["methods"]], modes=modes,
            curves={m: z[f"curves_{m}"] for m in modes},
            random_curves={m: z[f"random_curves_{m}"] for m in modes},
            fx=z["fx"], fr=z["fr"], normalize=bool(z["normalize"]),
            orders=z["orders"] if "orders" in z.files else None,
            feature_names=[str(c) for c in z["feature_names"]] if "feature_names" in z.files
            else None,
            order=str(z["order"].reshape(-1)[0]) if "order" in z.files else "signed",
            groups=Groups.from_labels(z["group_labels"], [str(g) for g in z["group_names"]])
            if "group_labels" in z.files else None,
            positions=z["positions"] if "positions" in z.files else None,
            clusters=z["clusters"] if "clusters" in z.files else None,
            removal=json.loads(str(z["removal"].reshape(-1)[0])) if "removal" in z.files
            else None)


def summarize(abc: pd.DataFrame, differences="auto", methods: Sequence[str] | None = None,
              clusters: ArrayLike | None = None) -> pd.DataFrame:
    """Paper-style summary of a long ABC table (columns pair, method, mode, abc).

    Columns ``mode, method, mean, std_error, n, kind, n_units``: the mean over the n pairs and its
    standard error over the ``n_units`` independent units. ``clusters`` (indexed by pair): the
    unit of each pair (:func:`insdel._stats.mean_se`: the cluster-robust standard error, which is
    the standard error of the unit means when every unit holds as many pairs, e.g. a
    ``one_to_one`` couple's two directions); None: every pair is a unit.
    """
    if methods is None:
        methods = list(dict.fromkeys(abc["method"]))
    present = set(methods)
    if differences == "auto":
        differences = [d for d in AUTO_DIFFERENCES if d[0] in present and d[1] in present][:1]
    differences = list(differences or [])
    for a, b in differences:
        for m in (a, b):
            if m not in present:
                raise ValueError(f"difference {a!r} - {b!r}: unknown method {m!r}; known: {methods}.")
    rows = []
    for mode in [m for m in ("insertion", "deletion") if m in set(abc["mode"])]:
        sub = abc[abc["mode"] == mode]
        wide = sub.pivot(index="pair", columns="method", values="abc")
        units = None if clusters is None else np.asarray(clusters)[wide.index.to_numpy()]
        for m in methods:
            v = wide[m].to_numpy()
            rows.append(_row(mode, m, v, "method", units))
        for a, b in differences:
            v = (wide[a] - wide[b]).to_numpy()
            rows.append(_row(mode, f"{a} - {b}", v, "difference", units))
    return pd.DataFrame(rows, columns=["mode", "method", "mean", "std_error", "n", "kind",
                                       "n_units"])


def _row(mode: str, method: str, v: np.ndarray, kind: str, clusters=None) -> dict:
    mean, se, units = mean_se(v, clusters)
    return {"mode": mode, "method": method, "mean": mean, "std_error": se, "n": len(v),
            "kind": kind, "n_units": units}


#: The note under a table whose standard errors are over fewer units than pairs.
UNITS_NOTE = ("Std. error over the {units} independent units, not the {n} pairs: a pair (x, r) "
              "and its mirror (r, x) are one unit (a one_to_one couple's two directions, or a "
              "counterfactual target and reference that chose each other), their ABCs averaged; "
              "with attributions that change sign with the pair (exact Shapley, integrated "
              "gradients) the two ABCs are equal. Means are over the pairs.")


def units_note(summary: pd.DataFrame) -> str | None:
    """The :data:`UNITS_NOTE` of a summary whose ``n_units`` is below ``n`` (None otherwise)."""
    if "n_units" not in summary.columns or not len(summary):
        return None
    fewer = summary[pd.to_numeric(summary["n_units"]) < pd.to_numeric(summary["n"])]
    if not len(fewer):
        return None
    return UNITS_NOTE.format(units=int(fewer["n_units"].iloc[0]), n=int(fewer["n"].iloc[0]))


def to_markdown(summary: pd.DataFrame, digits: int = 3) -> str:
    """Render a summary DataFrame as a Markdown table (no extra dependency); a NaN standard
    error (one pair) is left blank, with a footnote, never printed as "nan"; standard errors over
    fewer units than pairs get a note saying so (:func:`units_note`)."""
    head = "| Test mode | Method | Mean | Std. error |\n|---|---|---:|---:|"
    lines = [head]
    last = None
    blank = False
    for r in summary.itertuples(index=False):
        mode = r.mode.capitalize() if r.mode != last else ""
        last = r.mode
        se = "" if np.isnan(r.std_error) else f"{r.std_error:.{digits}f}"
        blank |= not se
        lines.append(f"| {mode} | {r.method} | {r.mean:.{digits}f} | {se} |")
    if blank:
        lines.append("\nA blank standard error is undefined there: it needs at least two pairs.")
    note = units_note(summary)
    if note:
        lines.append("\n" + note)
    return "\n".join(lines)


def evaluate(f: ModelLike, X: ArrayLike, R: ArrayLike, attributions: Mapping[str, ArrayLike], *,
             modes: Iterable[str] = ("insertion", "deletion"), n_random: int = 20, seed: int = 0,
             normalize: bool = True, feature_names: Sequence[str] | None = None,
             add_random: bool = True, order: str = "signed", groups=None,
             points: CurvePoints | None = None, chunk_size: int = DEFAULT_CHUNK_SIZE,
             progress: bool | None = None, client=None, clusters: ArrayLike | None = None,
             removal=None, engine: str = "auto", output_weights: ArrayLike | None = None,
             **moved) -> Evaluation:
    """Insertion/deletion ABCs for several attribution methods on the same pairs (x, r).

    Parameters
    ----------
    f : model
        torch module, estimator with ``predict`` or callable (see :func:`insdel.as_model`).
    X : array_like (B, n)
        Targets.
    R : array_like (B, n) or (n,)
        References (from a policy).
    attributions : mapping name -> array (B, n)
        Attributions explaining f(x) - f(r) (signed; larger means "raises f"): arrays, torch
        tensors or shap ``Explanation`` objects.
    modes : iterable of {"insertion", "deletion"}
    n_random : int, default 20
        Further random orderings per pair kept for plots and the empirical random-order mean.
    seed : int
        Seed of the random orderings.
    normalize : bool, default True
        Per-feature areas (ABC / n) as in the paper's tables.
    feature_names : sequence of str, optional
        Names of the n features (default: the columns of ``X`` when it is a DataFrame); they reach
        :meth:`Evaluation.ordering`, saved results and plots.
    add_random : bool, default True
        Add the ``random`` method (one seeded random ordering per pair, the paper's Random row).
        It is not added when ``attributions`` already holds a method called ``random``.
    order : {"signed", "absolute", "ascending"}, default "signed"
        How each method's ordering is derived from its attributions
        (:func:`insdel.tracing.orderings`): the paper's decreasing signed value, decreasing |a_j|
        (MoRF) or increasing a_j (LeRF). Recorded as ``Evaluation.order``.
    groups : optional
        A partition of the columns into m groups moved as units (:mod:`insdel.groups`; columns
        a list or mapping leaves out are groups of their own, named after the column); each
        method's group attribution is the sum of its columns' (or given per group, (B, m)).
        Curves have m + 1 points and areas are normalised by m.
    points : CurvePoints, optional
        Where each curve is recorded: ``CurvePoints(step=k)`` every k units,
        ``CurvePoints(fractions=...)`` at fractions of the units, ``CurvePoints(max_fraction=q)``
        partial curves (None: at every unit moved).
    chunk_size : int
        Curve points per chunk of work (:func:`insdel.trace`).
    progress : bool, optional
        Progress bar over the chunks.
    client : dask.distributed.Client, optional
        Trace the curves of each chunk of pairs (``chunk_size`` curve points) on the client's
        workers (:func:`insdel.trace`); the orderings, random ones included, are drawn here, so the
        result is identical to ``client=None``. The model and the pairs are sent to each worker
        once. A model with H outputs gives every output's curves per chunk (the same
        :class:`insdel.multi_output.MultiEvaluation` as ``client=None``); under a removal that
        draws its rows it is refused, as without a client.
    clusters : array_like of int (B,), optional
        The independent unit of each pair (a policy's ``Pairing.cluster``; pairs with the same id
        are one unit, e.g. a ``one_to_one`` couple's two directions): :meth:`Evaluation.summary`
        gives standard errors over units, means over pairs. None: every pair is a unit.
    removal : str or insdel.removal.Removal, optional
        What a removed unit becomes (:mod:`insdel.removal`; conventions: *Removal*). None is the
        paper's ``baseline`` (R is the reference); ``marginal`` averages f over K references
        per target; ``conditional_gaussian`` / ``conditional_mean`` / ``conditional_knn`` draw
        the removed features given the kept ones (R is not read). The areas are those of the
        pair's value function v; the removal is recorded as ``Evaluation.removal``.
    output_weights : array_like (H,), optional
        For a model with H outputs (``insdel.as_model(f, outputs=H)``): the weights of the
        aggregate over outputs in :meth:`insdel.multi_output.MultiEvaluation.summary`
        (normalised to sum 1; None: the mean over outputs). Such a model's attributions are
        (B, n), one set for all outputs, or (B, H, n), one per output; the curves of all outputs
        come from one evaluation of the distinct rows, and the result is a
        :class:`insdel.multi_output.MultiEvaluation` (one Evaluation per output).
    **moved
        Deprecated keywords, accepted for one release with a ``DeprecationWarning``: ``step``,
        ``fractions``, ``max_fraction`` (``points=``) and ``batch_size`` (carried by the model,
        ``insdel.as_model(f, batch_size=...)``, or the game).
    engine : {"auto", "tree", "black_box"}, default "auto"
        Which engine answers (:func:`insdel.game.as_game`): a recognised tree ensemble's exact
        closed forms (``auto``, ``tree``) or the model's values on rows (``black_box``).

    Returns
    -------
    Evaluation, or MultiEvaluation for a model with H outputs
    """
    import time
    import warnings

    for k, v in moved.items():
        if k not in _MOVED:
            raise TypeError(f"evaluate() got an unexpected keyword argument {k!r}.")
        if v is not None:
            warnings.warn(f"evaluate({k}=...) is deprecated: give it through {_MOVED[k]}.",
                          DeprecationWarning, stacklevel=2)
    if points is not None and not isinstance(points, CurvePoints):
        raise TypeError(f"points must be an insdel.CurvePoints; got {type(points).__name__}.")
    if points is not None and any(moved.get(k) is not None
                                  for k in ("step", "fractions", "max_fraction")):
        raise TypeError("give the curve points once: points= or the deprecated step= / "
                        "fractions= / max_fraction=, not both.")
    pts = {**(points.given() if points is not None else {}),
           **{k: v for k, v in moved.items() if k != "batch_size" and v is not None}}
    step, fractions, max_fraction = (pts.get(k) for k in ("step", "fractions", "max_fraction"))
    batch_size = moved.get("batch_size")

    modes = tuple(dict.fromkeys(check_mode(m) for m in modes))
    if not modes:
        raise ValueError("modes must name at least one of 'insertion', 'deletion'.")
    check_order(order)
    normalize = check_bool(normalize, "normalize")
    add_random = check_bool(add_random, "add_random")
    n_random = check_positive_int(n_random, "n_random", minimum=0)
    seed = check_positive_int(seed, "seed", minimum=0)
    names = feature_names_of(X, feature_names) if X is not None else feature_names
    game = as_game(f, X, R, removal=removal, groups=groups, batch_size=batch_size,
                   feature_names=names, engine=engine)
    B, n, m = game.B, game.n, game.m
    clusters = check_clusters(clusters, B)
    if names is not None and len(names) != n:
        raise ValueError(f"feature_names has {len(names)} names for n = {n} features.")
    if not isinstance(attributions, Mapping):
        raise TypeError("attributions must be a mapping name -> array (B, n).")
    grp = game.groups
    pos = None
    if step is not None or fractions is not None or max_fraction is not None:
        pos = make_positions(m, step=step, fractions=fractions, max_fraction=max_fraction)
        if pos.shape[0] == 2 and not is_full(pos, m):
            given = ", ".join(f"{k}={v!r}" for k, v in (("step", step), ("fractions", fractions),
                                                        ("max_fraction", max_fraction))
                              if v is not None)
            raise ValueError(f"{given} records each curve at only 2 points ({pos[0]} and "
                             f"{pos[1]} of the m = {m} units moved): the ABC, the area between "
                             f"a curve and the straight line joining its ends, is 0 by "
                             f"definition for every ordering; ask for at least 3 points.")
        if is_full(pos, m):
            pos = None
    H = getattr(game.model, "n_outputs", None)
    if H is None and output_weights is not None:
        raise ValueError("output_weights is for a model with several outputs "
                         "(insdel.as_model(f, outputs=H)); this model has one.")
    if H is not None:  # checked before the curves are traced (a client's workers included)
        from .multi_output import check_output_weights

        weights = check_output_weights(output_weights, H)
    methods = list(attributions)
    orders = []
    for name in methods:
        raw = align_attributions(f"attributions[{name!r}]", attributions[name], names,
                                 game.unit_names)
        label = f"attributions[{name!r}]"
        A = as_float_array(label, attribution_values(raw), ndim=(2,) if H is None else (2, 3))
        if A.shape[0] != B or A.shape[-1] not in ((n,) if game.unit_names is None else (n, m)):
            per = "" if game.unit_names is None else f" (or (B, m) = {(B, m)} per group)"
            raise ValueError(f"attributions[{name!r}] must have shape (B, n) = {(B, n)}{per}"
                             + ("" if H is None else f", or (B, H, n) with H = {H} outputs")
                             + f"; got {A.shape}.")
        if A.ndim == 3:
            per_output_take(A, H, label)
        orders.append(orderings(group_attributions(A, grp, name=label), order=order))
    rand = random_orderings(B, 1 + n_random, m, seed=seed)
    if add_random and "random" not in attributions:
        methods.append("random")
        orders.append(rand[:, 0, :])
    if not methods:
        raise ValueError("attributions is empty and add_random is False: nothing to evaluate.")
    take = None
    if H is not None:  # every method's orderings side by side; take: output h's, in order
        orders = [o[:, None, :] if o.ndim == 2 else o for o in orders]
        at = np.cumsum([0] + [o.shape[1] for o in orders])
        take = np.array([[at[j] + (h if o.shape[1] > 1 else 0) for j, o in enumerate(orders)]
                         + list(range(at[-1], at[-1] + n_random)) for h in range(H)],
                        dtype=np.int64).reshape(H, -1)
        all_orders = np.concatenate(orders + [rand[:, 1:, :]], axis=1)
    else:
        all_orders = np.concatenate([np.stack(orders, axis=1), rand[:, 1:, :]], axis=1)
    t0 = time.perf_counter()
    res = _trace_game(_curve_job(game, all_orders, modes=modes, positions=pos,
                                 chunk_size=chunk_size, progress=progress, client=client,
                                 take=take))
    elapsed = time.perf_counter() - t0
    Km = len(methods)
    stats = {"curve_points": res.n_points, "model_evaluations": res.n_unique,
             "seconds": elapsed, **res.timings}
    common = dict(normalize=normalize, stats=stats, feature_names=names, order=order,
                  groups=grp, positions=pos, clusters=clusters,
                  removal=None if game.name == "baseline" else game.params())
    if H is not None:
        from .multi_output import MultiEvaluation, split_outputs

        per_h = all_orders[:, take[:, :Km], :]  # (B, H, Km, m)
        return MultiEvaluation(split_outputs(res, methods, modes, take, Km, orders=per_h,
                                             **common), weights, stats)
    return Evaluation.from_curves(
        methods=methods, modes=modes,
        curves={m: res.curves[m][:, :Km, :] for m in modes},
        random_curves={m: res.curves[m][:, Km:, :] for m in modes},
        fx=res.fx, fr=res.fr, orders=all_orders[:, :Km, :], **common)
