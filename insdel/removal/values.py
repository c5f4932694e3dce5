"""Coalition values of a sampled removal: ``v(u)`` = the mean of f over the removal's M rows.

The one place a :class:`~insdel.removal.SampledRemoval` meets the model: every engine that
needs ``v`` for a list of (target, coalition) (curves, the decomposition, Shapley values) calls
:func:`coalition_values` with the coalitions it needs, each once, through the game
(:class:`insdel.game.Game`); ROAD, ROAR and ROAD's leakage diagnostic read the rows themselves
(:func:`imputed_rows`, through :meth:`insdel.game.Game.imputed`).
"""

from __future__ import annotations

import time

import numpy as np

from .base import SampledRemoval

__all__ = ["coalition_values", "unique_coalitions", "check_rows", "imputed_rows",
           "ROW_BUDGET_BYTES", "MAX_ROWS"]

#: Imputed rows held at once (bytes of float64 rows); the coalitions are taken in slices that fit.
ROW_BUDGET_BYTES = 64 * 2**20
#: Model rows (coalitions x n_draws) one request may cost unless the removal's ``max_rows``
#: raises it: about 10^8 rows, minutes to hours of model time.
MAX_ROWS = 100_000_000


def check_rows(removal, n_coalitions: int, *, what: str, model=None, n: int | None = None) -> int:
    """Refuse a request of ``n_coalitions`` coalition values whose model rows (``n_coalitions x
    removal.n_draws``) exceed the removal's budget, ``removal.max_rows`` (default
    :data:`MAX_ROWS`), before any row is drawn: the error names the estimate, the budget and the
    option that raises it. ``model`` and ``n`` (the width): the error adds the model's time,
    measured on a few rows. Returns the rows."""
    M = max(int(getattr(removal, "n_draws", 1)), 1)
    rows = int(n_coalitions) * M
    budget = getattr(removal, "max_rows", None) or MAX_ROWS
    if rows <= budget:
        return rows
    eta = ""
    if model is not None and n is not None:
        try:  # the estimate must never hide the real error
            probe = np.zeros((min(M, 1024), n))
            t = time.perf_counter()
            model(probe)
            secs = rows * (time.perf_counter() - t) / probe.shape[0]
            eta = f", about {secs / 3600:,.1f} h of model time on this machine" if secs > 3600 \
                else f", about {secs:,.0f} s of model time on this machine"
        except Exception:  # noqa: BLE001
            eta = ""
    raise ValueError(
        f"{what}: {n_coalitions:,} coalition values x n_draws = {M:,} of removal "
        f"{removal.name!r} = {rows:,} model rows{eta}, more than max_rows = {budget:,}. Lower "
        f"n_draws, or raise the removal's budget: the option max_rows= "
        f"(removal.build({removal.name!r}, max_rows=...); in a configuration "
        f"[removal.{removal.name}] max_rows or [road] removal_options.max_rows).")


def imputed_rows(removal: SampledRemoval, X: np.ndarray, keep: np.ndarray,
                 targets: np.ndarray) -> np.ndarray:
    """``removal.sample(X, keep, targets)`` checked: (N, M, n) float64, finite, equal to X on the
    kept features (row i is drawn as target ``targets[i]``)."""
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


def coalition_values(model, removal: SampledRemoval, X: np.ndarray, targets: np.ndarray,
                     keep: np.ndarray, *, clock: dict | None = None,
                     offset: int = 0) -> np.ndarray:
    """``v(u)`` for each requested coalition.

    Parameters
    ----------
    model : insdel.adapter.Model
        The adapted model (:func:`insdel.as_model`).
    removal : SampledRemoval or GameRemoval
    X : ndarray (B, n)
        The targets.
    targets : ndarray of int (N,)
        The target of each coalition (a row of X; also the index that seeds its draws).
    keep : ndarray of bool (N, n)
        The kept features of each coalition.
    clock : dict, optional
        Adds ``model_s`` (seconds in the model) and ``sampling_s`` (drawing and writing rows).
    offset : int, default 0
        ``X`` holds the run's targets from index ``offset`` on (one chunk of them): target
        ``targets[i]`` is row ``targets[i]`` of X and seeds its draws as ``offset + targets[i]``,
        so a chunk draws what the whole run draws for its targets.

    Returns
    -------
    ndarray of float64 (N,)
    """
    from .base import GameRemoval

    N, n = keep.shape
    if isinstance(removal, GameRemoval):  # read off the data: no model rows
        v = np.asarray(removal.values(X[targets], keep, targets + offset), dtype=np.float64)
        if v.shape != (N,):
            raise ValueError(f"removal {removal.name!r}: values() returned shape {v.shape}; "
                             f"expected ({N},).")
        return v
    M = int(removal.n_draws)
    check_rows(removal, N, what="coalition values", model=model, n=n)
    out = np.empty(N)
    step = max(1, ROW_BUDGET_BYTES // max(1, M * n * 8))
    t_model = t_sample = 0.0
    for s0 in range(0, N, step):
        s1 = min(N, s0 + step)
        t = time.perf_counter()
        rows = removal.sample(X[targets[s0:s1]], keep[s0:s1], targets[s0:s1] + offset)
        if rows.shape != (s1 - s0, M, n):
            raise ValueError(f"removal {removal.name!r}: sample() returned shape {rows.shape}; "
                             f"expected (N, n_draws, n) = {(s1 - s0, M, n)}.")
        flat = rows.reshape(-1, n)
        t_sample += time.perf_counter() - t
        t = time.perf_counter()
        vals = np.asarray(model(flat), dtype=np.float64)
        t_model += time.perf_counter() - t
        out[s0:s1] = vals.reshape(s1 - s0, M).mean(axis=1)
    if clock is not None:
        clock["model_s"] = clock.get("model_s", 0.0) + t_model
        clock["sampling_s"] = clock.get("sampling_s", 0.0) + t_sample
    return out


def unique_coalitions(pairs: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                    np.ndarray]:
    """The distinct (pair, coalition) of a list, each once.

    Returns ``(pair, keep, inverse)``: the distinct pairs and masks, and for every input entry the
    index of its distinct one.
    """
    pairs = np.asarray(pairs, dtype=np.int64)
    packed = np.packbits(keep, axis=1, bitorder="little")
    key = np.concatenate([pairs[:, None].view(np.uint8).reshape(len(pairs), 8), packed], axis=1)
    key = np.ascontiguousarray(key).view(np.dtype((np.void, key.shape[1]))).ravel()
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return pairs[first], keep[first], inverse.ravel()
