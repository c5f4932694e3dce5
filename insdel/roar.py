"""ROAR for regression: remove and retrain (paper §6, Figure 13; Hooker et al., 2019).

For every point, the features are ranked by a method's attributions; at each fraction q of the
features, the top ⌈q n⌉ features of every training and test point are overwritten by a *removal
value* (the training mean of a continuous feature, the training mode of a binary one), the model is
retrained from scratch with the original architecture and hyper-parameters, and its Huber loss on
the modified held-out points is recorded. Several training seeds (replicates) give a mean ± one
standard error per (method, ordering, q).

Orderings (``ORDERINGS``; the canonical names of :mod:`insdel.ordering` are taken too):

* ``"absolute"`` — by |a_j|, largest first (what Hooker et al. and Quantus use);
* ``"signed"`` — by a_j, largest first (the insertion/deletion tests' ordering);
* ``"random"`` — a seeded random ordering per point, the same for every method (the control);
* ``"kar_absolute"``, ``"kar_signed"`` — keep and retrain (KAR): the *least* important ⌈q n⌉
  features are removed first, so at fraction q the top features are kept (aliases of the
  orderings ``"least"`` and ``"ascending"``).

The curve's **area** against the straight line joining q = 0 and q = 1 (both computed, whatever the
grid) is ``∫_0^1 (L(q) - line(q)) dq`` by the trapezoid on the actual q positions (the analogue of
the deletion ABC, conventions: *Areas*): for ROAR orderings a **larger** area is better (removing
what the method calls important hurts early), for KAR a **smaller** (more negative) one is.

Every training is one checkpointed unit keyed by a hash of everything that determines it (the data
set's arrays after removal, the model configuration, the replicate's seed, the device), so units
that coincide (q = 1 removes every feature whatever the ordering; the random control is shared by
all methods) are trained once, and a killed run resumes without retraining what finished.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import _checkpoint as ck
from ._progress import progress_bar
from .areas import trapezoid_area
from .game import Game, as_game
from .ordering import check_ordering, random_permutations, sort_orderings
from .removal import TrainingMean, training_mean_values

__all__ = ["ORDERINGS", "PAPER_FRACTIONS", "removal_values", "removal_orders", "remove", "impute",
           "n_removed", "roar", "summarize", "to_markdown"]

ORDERINGS = ("absolute", "signed", "random", "kar_absolute", "kar_signed")
#: The canonical orderings (:mod:`insdel.ordering`) ROAR runs; ORDERINGS are their ROAR spellings.
_CANONICAL = ("absolute", "signed", "random", "least", "ascending")
PAPER_FRACTIONS = (0.1, 0.3, 0.5, 0.7, 0.9, 1.0)
TABLE_COLUMNS = ["method", "ordering", "q", "replicate", "loss", "epochs"]


def removal_values(dataset) -> np.ndarray:
    """The value a removed feature takes (paper §6): the training-set mean of a continuous feature,
    the training-set mode of a binary one (ties go to the lower level); the values of the removal
    ``training_mean`` (:class:`insdel.removal.TrainingMean`) fitted on the data set."""
    return training_mean_values(dataset.X_train, dataset.binary_mask)


def n_removed(q: float, n: int) -> int:
    """Features removed at fraction q: ⌈q n⌉ (q = 1 removes all n)."""
    return min(n, int(math.ceil(q * n - 1e-9)))


def removal_orders(A: np.ndarray | None, ordering: str, *, seed: int = 0,
                   shape: tuple[int, int] | None = None) -> np.ndarray:
    """Features of every point in the order they are removed, (N, n).

    Parameters
    ----------
    A : ndarray (N, n) or None
        Attributions (None for ``"random"``, which then needs ``shape``).
    ordering : str
        One of :data:`ORDERINGS`. Ties are broken by feature index (stable sort).
    seed : int
        Seed of the random ordering.
    """
    canon = check_ordering(ordering, allowed=_CANONICAL, ranking=None, argument="ordering")
    if canon == "random":
        N, n = shape if shape is not None else np.shape(A)
        return random_permutations(np.random.default_rng(seed), (N, n))
    return sort_orderings(np.asarray(A, dtype=np.float64), canon)


def remove(X: np.ndarray, orders: np.ndarray, k: int, values: np.ndarray) -> np.ndarray:
    """A copy of ``X`` with the first ``k`` features of each row's removal order set to their
    removal values."""
    out = np.array(X, dtype=np.float64, copy=True)
    if k:
        cols = orders[:, :k]
        np.put_along_axis(out, cols, np.asarray(values, np.float64)[cols], axis=1)
    return out


def impute(X: np.ndarray, orders: np.ndarray, k: int, removal, *, offset: int = 0
           ) -> np.ndarray:
    """A copy of ``X`` with the first ``k`` features of each row's removal order replaced by the
    removal's value for the row: the first reference of a ``marginal`` removal, the first draw
    of a sampled one given the kept features (row i is target ``offset + i`` of the removal's
    seeded draws), the value of a ``constant`` or ``training_mean`` one."""
    return _fill(_rows_game(X, removal), orders, k, shift=offset)


def _rows_game(X: np.ndarray, removal) -> Game:
    """The game of the rows X under ``removal`` without a model: ROAR reads its rows only."""
    return as_game(None, X, None, removal=removal, rows_only=True)


def _fill(game: Game, orders: np.ndarray, k: int, *, shift: int = 0) -> np.ndarray:
    """The game's targets with the first ``k`` features of each row's removal order replaced by
    the first of the removal's rows for the row (:meth:`insdel.game.Game.imputed`; row i is
    target ``shift + i`` of a sampled removal's draws)."""
    out = game.X.copy()
    if not k:
        return out
    keep = np.ones(out.shape, dtype=bool)
    np.put_along_axis(keep, orders[:, :k], False, axis=1)
    fill = game.imputed(np.arange(game.B, dtype=np.int64), keep, shift=shift, draws=1)[:, 0, :]
    np.copyto(out, fill, where=~keep)
    return out


def _check_fractions(fractions: Sequence[float]) -> list[float]:
    from ._validation import check_scalar

    # q is the fraction of features removed (q = 0, nothing removed, is always added)
    qs = [check_scalar(q, f"fractions[{i}]", float, min_val=0.0, max_val=1.0,
                       include_boundaries="right", finite=True) for i, q in enumerate(fractions)]
    if len(set(qs)) != len(qs):
        raise ValueError(f"fractions has repeated values: {qs}.")
    return sorted(set(qs) | {1.0})


def roar(dataset, attributions: Mapping[str, np.ndarray], *, params: str | Mapping | None,
         orderings: Sequence[str] = ("absolute", "signed", "random"),
         fractions: Sequence[float] = PAPER_FRACTIONS, replicates: int = 5, seed: int = 0,
         max_epochs: int | None = None, device: str = "cpu", num_threads: int | None = 1,
         store: str | Path | None = None,
         progress: bool | None = None, log: Callable[[str], None] | None = None,
         removal=None, _interrupt: Callable[[], None] | None = None) -> pd.DataFrame:
    """Remove and retrain: the test loss of a retrained model as features are removed.

    Parameters
    ----------
    dataset : insdel.datasets.Dataset
        Train and test splits, ``binary_mask`` (removal by mode) and the target.
    attributions : mapping
        Method name -> attributions (N_train + N_test, n) of the training points, then the test
        points (the rows of ``X_train`` then ``X_test``).
    params : str, dict or None
        The model's architecture and hyper-parameters (a preset name of :mod:`insdel.models` or a
        params dict), used for every retraining.
    orderings : sequence of str
        Of :data:`ORDERINGS`. ``"random"`` is run once, as the method ``"random"``.
    fractions : sequence of float
        Fractions q in (0, 1] of features removed; q = 0 (nothing removed) and q = 1 are always
        computed (the straight line joins them).
    replicates : int
        Training seeds per (method, ordering, q); replicate r uses the same seed for every method,
        ordering and q (paired comparisons).
    seed : int
        Seeds the replicates' training seeds and the random ordering.
    max_epochs : int, optional
        Overrides the preset's maximum number of epochs.
    device : str
        Torch device of the trainings.
    num_threads : int or None, default 1
        Torch threads per training (the paper's MLPs on a few thousand rows train fastest on one
        thread, and several threads slow down badly on a busy machine); None leaves torch's
        setting. Part of every unit's key.
    store : path, optional
        Folder of the checkpointed units (one JSON file per training, named by its key).
    progress : bool, optional
        Progress bar over the trainings.
    removal : str or insdel.removal.Removal, optional
        What a removed feature becomes (:mod:`insdel.removal`). None: the paper's removal value
        (:func:`removal_values`, the removal ``training_mean`` fitted on the training rows with
        the data set's binary features). Otherwise each removed feature takes the removal's value for
        that row (:func:`impute`): ``marginal``, the row's first reference; a sampled removal
        (``conditional_gaussian``, ``conditional_knn``, ...) its first draw given the row's
        kept features, seeded by the row's index (training rows, then test rows). Every
        training's key holds the modified data, so no unit is shared between removals.

    Returns
    -------
    pandas.DataFrame
        Columns ``method, ordering, q, replicate, loss, epochs`` (q = 0 rows have method and
        ordering ``"none"``).
    """
    from . import models
    from ._validation import check_scalar

    replicates = check_scalar(replicates, "replicates", int, min_val=1)
    seed = check_scalar(seed, "seed", int, min_val=0)
    if isinstance(orderings, str):
        orderings = (orderings,)
    orderings = tuple(orderings)
    if not orderings:
        raise ValueError("orderings must name at least one ROAR ordering.")
    canon = [check_ordering(o, allowed=_CANONICAL, ranking=None, argument="orderings")
             for o in orderings]
    if len(set(canon)) != len(canon):
        raise ValueError(f"orderings names an ordering twice: {list(orderings)} (each would be "
                         "retrained and listed twice; kar_signed is ascending, kar_absolute is "
                         "least).")
    qs = _check_fractions(fractions)
    Xtr = np.asarray(dataset.X_train, np.float64)
    Xte = np.asarray(dataset.X_test, np.float64)
    N1, n = Xtr.shape
    N = N1 + Xte.shape[0]
    for m, A in attributions.items():
        if m == "none":
            raise ValueError("attributions: the method name 'none' is reserved for the q = 0 "
                             "baseline rows; rename the method.")
        if np.shape(A) != (N, n):
            raise ValueError(f"attributions[{m!r}] has shape {np.shape(A)}; expected ({N}, {n}) "
                             "= the training points then the test points.")
        if not np.all(np.isfinite(A)):
            raise ValueError(f"attributions[{m!r}] has non-finite values.")
    if removal is None:  # the paper's removal values
        removal = TrainingMean(Xtr, binary=dataset.binary_mask)
    # ROAR's rows have no pairs' references R: a removal that reads them is refused here
    games = (_rows_game(Xtr, removal), _rows_game(Xte, removal))
    rep_seeds = [int(np.random.SeedSequence([seed, 7_365, r]).generate_state(1)[0] & 0x7FFFFFFF)
                 for r in range(replicates)]
    # the resolved hyper-parameters, not the name given: params=None picks a preset by the data
    # set's name, and a preset's values are what the training uses
    model_key = {"params": models._resolve_params(params, dataset),
                 "max_epochs": max_epochs, "device": device, "num_threads": num_threads}
    base = ck.sha256_arrays(Xtr, Xte, np.asarray(dataset.y_train), np.asarray(dataset.y_test))

    # the units: (method, ordering, q) -> removal orders; q = 0 and the random control once
    plans: list[tuple[str, str, np.ndarray | None]] = []
    for o in orderings:
        if o == "random":
            plans.append(("random", "random", removal_orders(None, "random", seed=seed,
                                                             shape=(N, n))))
    for m, A in attributions.items():
        for o in orderings:
            if o != "random":
                plans.append((m, o, removal_orders(A, o)))
    units: list[tuple[str, str, float, int]] = [("none", "none", 0.0, r) for r in range(replicates)]
    units += [(m, o, q, r) for (m, o, _) in plans for q in qs for r in range(replicates)]
    orders = {(m, o): od for (m, o, od) in plans}

    store = Path(store) if store is not None else None
    done: dict[str, dict] = {}
    rows = []
    trained = 0
    t_all = time.perf_counter()
    with progress_bar(len(units), "roar trainings", unit="training", enable=progress,
                      auto=True) as bar:
        for (m, o, q, r) in units:
            if m == "none":
                Xa, Xb = Xtr, Xte
            else:
                od = orders[(m, o)]
                k = n_removed(q, n)
                Xa = _fill(games[0], od[:N1], k, shift=0)
                Xb = _fill(games[1], od[N1:], k, shift=N1)
            key = ck.config_hash({"data": base, "removed": ck.sha256_arrays(Xa, Xb),
                                  "model": model_key, "seed": rep_seeds[r]})
            res = done.get(key)
            path = store / f"unit.{key}.json" if store is not None else None
            if res is None and path is not None and path.exists():
                res = _load_unit(path, key)
            if res is None:
                ds = dataclasses.replace(dataset, X_train=Xa, X_test=Xb)
                _, metrics = models.train_mlp(ds, params, seed=rep_seeds[r],
                                              max_epochs=max_epochs, progress=False,
                                              device=device, num_threads=num_threads)
                res = {"loss": float(metrics["test"]["huber"]), "epochs": int(metrics["epochs"])}
                if path is not None:
                    ck.atomic_write_text(path, json.dumps(_unit_record(res, key)) + "\n")
                trained += 1
                if _interrupt is not None:
                    _interrupt()
            done[key] = res
            rows.append({"method": m, "ordering": o, "q": q, "replicate": r, **res})
            bar.update(1)
    if log is not None:
        log(f"roar: {len(units)} (method, ordering, q, replicate) units, {len(done)} distinct "
            f"trainings, {trained} trained now, {time.perf_counter() - t_all:.1f} s")
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def _unit_digest(res: dict, key: str) -> str:
    return ck.config_hash({"key": key, "loss": res["loss"], "epochs": res["epochs"]})


def _unit_record(res: dict, key: str) -> dict:
    """A finished training as stored (``unit.<key>.json``): its loss and epochs, its key and a
    SHA-256 over the three, so that a changed or damaged file is never read as a result."""
    return {**res, "key": key, "sha256": _unit_digest(res, key)}


def _load_unit(path: Path, key: str) -> dict | None:
    """The stored training ``key`` (:func:`_unit_record`); None (trained again, with a warning)
    for a file from an older insdel without a checksum; an error naming the file when it cannot be
    read or its content does not match its checksum or key."""
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"ROAR checkpoint {path} cannot be read ({type(exc).__name__}: {exc}); "
                         "delete it and run again to retrain that unit.") from exc
    if not isinstance(rec, dict) or "sha256" not in rec:
        warnings.warn(f"ROAR checkpoint {path} has no checksum (written by an older insdel): it "
                      "is not trusted and the unit is trained again.", UserWarning, stacklevel=3)
        return None
    try:
        res = {"loss": float(rec["loss"]), "epochs": int(rec["epochs"])}
        ok = rec.get("key") == key and rec["sha256"] == _unit_digest(res, key)
    except (KeyError, TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"ROAR checkpoint {path} does not match its checksum or key: it was "
                         "changed or damaged since it was written, so its numbers are not used; "
                         "delete it and run again to retrain that unit.")
    return res


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """Mean ± one standard error (over replicates) of the loss per (method, ordering, q), the
    q = 0 baseline joined to every curve, and each curve's area against the straight line from
    q = 0 to q = 1 (computed per replicate, then mean ± se; ``q`` = NaN rows)."""
    base = table[table["method"] == "none"].set_index("replicate")["loss"]
    out = []
    for (m, o), g in table[table["method"] != "none"].groupby(["method", "ordering"], sort=False):
        wide = g.pivot_table(index="replicate", columns="q", values="loss")
        wide.insert(0, 0.0, base.reindex(wide.index).to_numpy())
        qv = wide.columns.to_numpy(dtype=float)
        R = len(wide)
        for q in qv:
            v = wide[q].to_numpy()
            out.append({"method": m, "ordering": o, "q": q, "mean": float(v.mean()),
                        "std_error": float(v.std(ddof=1) / np.sqrt(R)) if R > 1 else float("nan"),
                        "n": R})
        # ∫_0^1 (L - line) dq by the trapezoid on the given q (q[0] = 0, q[-1] = 1)
        areas = np.array([float(trapezoid_area(row, qv, minus_line=True))
                          for row in wide.to_numpy()])
        out.append({"method": m, "ordering": o, "q": float("nan"), "mean": float(areas.mean()),
                    "std_error": float(areas.std(ddof=1) / np.sqrt(R)) if R > 1 else float("nan"),
                    "n": R})
    return pd.DataFrame(out, columns=["method", "ordering", "q", "mean", "std_error", "n"])


def to_markdown(summary: pd.DataFrame, digits: int = 4) -> str:
    """The summary as one Markdown table: a row per (method, ordering), the mean test loss
    ± se at each q, and the area against the straight line.

    A cell whose standard error is NaN (one replicate: :func:`summarize` gives none) shows the
    mean alone, never "± nan", and a footnote line under the table says why (the standard error
    needs at least two replicates)."""
    qs = sorted(q for q in summary["q"].dropna().unique())
    lines = ["### ROAR: test Huber loss after removing a fraction q of the features (paper §6)\n",
             "| Method | Ordering | " + " | ".join(f"q = {q:g}" for q in qs)
             + " | area vs line |",
             "|---|---|" + "---:|" * (len(qs) + 1)]
    n_missing: list = []  # the n of every cell shown without a standard error

    def cell(r, sign: str = "") -> str:
        mean = f"{r['mean'].iloc[0]:{sign}.{digits}f}"
        se = pd.to_numeric(r["std_error"], errors="coerce").iloc[0]
        if np.isfinite(se):
            return f"{mean} ± {se:.{digits}f}"
        n_missing.append(r["n"].iloc[0] if "n" in r.columns else None)
        return mean

    for (m, o), g in summary.groupby(["method", "ordering"], sort=False):
        cells = []
        for q in qs:
            r = g[g["q"] == q]
            cells.append(cell(r) if len(r) else "")
        area = g[g["q"].isna()]
        if not len(area):
            raise ValueError(f"summary has no area row (q = NaN) for method {m!r}, ordering "
                             f"{o!r}: pass roar.summarize(table)'s output.")
        cells.append(cell(area, "+"))
        lines.append(f"| {m} | {o} | " + " | ".join(cells) + " |")
    if n_missing:
        n = pd.to_numeric(pd.Series(n_missing, dtype=object), errors="coerce")
        if bool((n == 1).all()):
            lines.append("\nCells without ± s.e. come from one replicate: the standard error "
                         "needs at least two replicates (`roar.replicates` >= 2).")
        else:
            lines.append("\nCells without ± s.e.: the standard error is NaN there (it needs at "
                         "least two replicates).")
    lines.append("\nArea = ∫ (loss − straight line from q = 0 to q = 1) dq: larger is better for "
                 "ROAR orderings (important features removed first hurt most), smaller for KAR.")
    return "\n".join(lines) + "\n"


def run_info(cfg: Mapping, dataset, values: np.ndarray) -> dict[str, Any]:
    """What a ROAR run used, for its manifest."""
    return {"fractions": _check_fractions(cfg["roar"]["fractions"]),
            "orderings": list(cfg["roar"]["orderings"]),
            "replicates": cfg["roar"]["replicates"], "reference": cfg["roar"]["reference"],
            "methods": list(cfg["methods"]["names"]),
            "removal_values": {name: float(v) for name, v in
                               zip(dataset.feature_names, values, strict=True)},
            "binary_features": [dataset.feature_names[j]
                                for j in np.flatnonzero(dataset.binary_mask)]}
