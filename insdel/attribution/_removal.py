"""The attribution methods on a game (conventions: *Removal*; docs/attribution.md, *Removal*).

A method explains ``v(all) - v(∅)`` of the pair's value function v, read from the game
(:mod:`insdel.game`) that :meth:`insdel.attribution.base.Attribution._run` builds once from the
model, the pairs and the removal. What the reference means, per method:

* a game with one reference per target (:func:`single_reference`: the baseline, R): every method
  runs its single-reference path.
* Kernel SHAP, exact Shapley, LIME: the coalitions' values are the game's v(u)
  (:meth:`insdel.game.Game.values`: ``marginal``, the mean of f over the K references' hybrids;
  a sampled removal, the mean of f over its M rows).
* Integrated gradients, DeepLIFT: the averaged-baseline form, the mean of the single-reference
  attributions over the game's *empty rows* (:func:`empty_rows`): the K references of
  ``marginal`` (expected gradients over the K references, an exact average), or the M rows a
  sampled removal draws for the empty coalition (the same rows v(∅) averages f over).
* vanilla gradient, input x gradient, random: no reference is read; the removal is recorded and
  the completeness gap is taken against ``v(all) - v(∅)``.

The methods never ask what removal a game was built from: they ask the game for one reference
per target, its empty rows or its values. A sampled removal's draws are seeded by the target's
index in the run (:attr:`insdel.game.Game.offset` for a chunk), so a method reads the values of
any subset of its pairs from the whole game.
"""

from __future__ import annotations

import numpy as np

__all__ = ["single_reference", "empty_rows", "value_ends", "values_fn", "take", "averaged",
           "refuse", "refuse_captum"]


def single_reference(game) -> np.ndarray | None:
    """(B, n) float64: the one reference of each target when the game is a single-reference game
    (``v_b(u) = f(hybrid(x_b, r_b, u))``, the baseline), a fresh writable copy; else None."""
    refs = game.references
    if refs is None or refs.shape[1] != 1:
        return None
    return np.array(refs[:, 0, :], dtype=np.float64)


def refuse(method: str, game, why: str, instead: str) -> None:
    """Raise the error of a method (or backend) that cannot take the game's removal."""
    raise ValueError(f"{method}: removal {game.name!r} is not supported {why}; {instead}.")


def refuse_captum(method: str, game, captum_name: str, what: str) -> None:
    """Raise the error of a method's ``backend="captum"`` (one baseline per point) on a game
    without one reference per target; ``what`` the method evaluates under the removal."""
    refuse(method, game, f"by backend='captum' (captum's {captum_name} takes one baseline per "
           "point)", f"use backend='insdel' (the default), which evaluates every {what} under "
           "the removal")


def empty_rows(game) -> np.ndarray:
    """(B, K, n) float64: the rows whose mean model value is ``v(∅)``, which the
    averaged-baseline form averages over.

    A reference game: its K references per target. A tree game (:mod:`insdel.trees`) of the
    baseline: each target's reference r (K = 1); of ``marginal``: each target's K references
    (R (B, K, n) of the pairs' route) or the K references shared by every target (a read-only
    broadcast view). A game of model rows drawn per coalition (``n_draws`` M): its M draws for
    the empty coalition (every feature removed), seeded by the targets' indices in the run. A
    game read off the trees' structure (``path_dependent``) or off the data (``cohort``) has no
    such rows (an error that says which)."""
    if game.references is not None:
        return np.ascontiguousarray(game.references, dtype=np.float64)
    if game.engine == "tree":
        R, bg = getattr(game, "R", None), getattr(game, "background", None)
        if R is not None:
            R = np.ascontiguousarray(R, dtype=np.float64)
            return R if R.ndim == 3 else R[:, None, :]
        if bg is not None:
            bg = np.asarray(bg, dtype=np.float64)
            return np.broadcast_to(bg, (game.B, *bg.shape))
        raise ValueError(f"removal {game.name!r} is read off the tree ensemble's structure (the "
                         "tree engine): it has no reference rows for a method to average over; "
                         "under it, use a method that reads coalition values (tree_shap, "
                         "kernel_shap, exact_shapley).")
    rem = getattr(game, "removal", None)
    if game.n_draws < 1 or rem is None or not hasattr(rem, "sample"):
        raise ValueError(f"removal {game.name!r} is a game read off the data: it has no reference "
                         "rows for a method to average over; under it, use a method that reads "
                         "coalition values (kernel_shap, exact_shapley) or the game's own "
                         "methods (cohort_shapley, igcs).")
    B, n = game.X.shape
    rows = np.asarray(rem.sample(game.X, np.zeros((B, n), bool), game.offset + np.arange(B)),
                      dtype=np.float64)
    M = int(game.n_draws)
    if rows.shape != (B, M, n):
        raise ValueError(f"removal {game.name!r}: sample() returned shape {rows.shape}; "
                         f"expected (N, n_draws, n) = {(B, M, n)}.")
    return np.ascontiguousarray(rows)


def value_ends(game) -> tuple[np.ndarray, np.ndarray]:
    """``v(all)`` and ``v(∅)`` (B,) of every target."""
    return game.v_all(), game.v_empty()


def take(game, idx: np.ndarray):
    """The game of its pairs ``idx`` (sorted, distinct), their values unchanged.

    A run of consecutive pairs: :meth:`insdel.game.Game.subset` (a sampled removal's draws keep
    the run's indices). Other pairs of a reference game: the same game on those targets and
    their references. A game of drawn values is taken as a whole or in a run (every unit of a
    pair is removable there, so its pairs' |D| are equal)."""
    idx = np.asarray(idx, dtype=np.int64)
    lo, hi = int(idx[0]), int(idx[-1]) + 1
    if hi - lo == idx.size:
        return game if (lo, hi) == (0, game.B) else game.subset(lo, hi)
    if game.references is None:
        raise ValueError(f"the pairs {idx.tolist()} of a game of removal {game.name!r} are "
                         "not consecutive: take them in runs (Game.subset).")
    part = game.subset(0, game.B)
    part.X = game.X[idx]
    part.references = game.references[idx]
    R = getattr(game, "R", None)
    part.R = R[idx] if R is not None and np.ndim(R) >= 2 else R
    return part


def values_fn(game, pairs: np.ndarray, *, columns: bool = True):
    """``values(b0, masks) -> (y, distinct)``: v of the coalitions ``masks`` (P, S, n) of the
    game's pairs ``pairs[b0 .. b0 + P - 1]`` (the sampled engines' value callback).

    A reference game with K references: the mean of the K single-reference values (each pair's
    distinct hybrids once per reference, :func:`insdel.attribution._sampling.evaluate_coalitions`).
    Any other game: :meth:`insdel.game.Game.values`, each distinct coalition of a pair once;
    ``masks`` are over the columns (``columns=True``: a grouped game's masks hold each group's
    columns together, reduced here to its units) or over the units."""
    from ._sampling import evaluate_coalitions

    pairs = np.asarray(pairs, dtype=np.int64)
    refs = game.references
    if refs is not None:
        model = game.model
        Xd = np.ascontiguousarray(game.X[pairs], dtype=model.dtype)
        Rk = [np.ascontiguousarray(refs[pairs, k], dtype=model.dtype)
              for k in range(refs.shape[1])]

        def values(b0, masks):
            y, distinct = 0.0, 0
            for Rd in Rk:
                yk, dk = evaluate_coalitions(model, Xd, Rd, b0, masks)
                y, distinct = y + yk, distinct + dk
            return y / len(Rk), distinct
        return values
    grp = game.groups

    def values(b0, masks):
        P, S, w = masks.shape
        keep = masks.reshape(P * S, w)
        if columns and grp is not None:  # a group's columns move together: its first column
            keep = keep[:, grp.members[grp.starts[:-1]]]
        clock: dict = {}
        v = game.values(np.repeat(pairs[b0:b0 + P], S), keep, clock=clock)
        return v.reshape(P, S), int(clock["coalitions"]) * int(game.n_draws)
    return values


def averaged(compute, model, X: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, dict]:
    """The averaged-baseline form: ``compute(model, X, R) -> (A, info)`` of a single-reference
    method on the B K pairs (x_b, rows[b, k]), averaged over k. Per-pair arrays of the info
    become (B, K)."""
    B, K, n = rows.shape
    A, info = compute(model, np.ascontiguousarray(np.repeat(X, K, axis=0)),
                      np.ascontiguousarray(rows.reshape(B * K, n)))
    A = np.asarray(A, dtype=np.float64)
    A = A.reshape((B, K) + A.shape[1:]).mean(axis=1)
    out = {}
    for k, v in info.items():
        if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == B * K:
            v = v.reshape((B, K) + v.shape[1:])
        out[k] = v
    out["references_per_target"] = int(K)
    return A, out
