"""The attribution methods under a removal (conventions: *Removal*; docs/attribution.md, *Removal*).

A method explains ``v(all) - v(∅)`` of the pair's value function v under the removal. What the
reference means, per method:

* Kernel SHAP, exact Shapley, LIME: the coalitions' values are v(u) under the removal
  (``marginal``: the mean of f over the K references' hybrids; a sampled removal: the mean of f
  over its M rows, :func:`insdel.removal.values.coalition_values`).
* Integrated gradients, DeepLIFT: the averaged-baseline form, the mean of the single-reference
  attributions over the removal's *reference rows* (:func:`reference_rows`): the K references of
  ``marginal`` (expected gradients over the K references, an exact average), or the M rows a
  sampled removal draws for the empty coalition (the same rows v(∅) averages f over).
* vanilla gradient, input x gradient, random: no reference is read; the removal is recorded and
  the completeness gap is taken against ``v(all) - v(∅)``.

The sampled removals seed their draws by the target's index (common random numbers);
:class:`Reindexed` keeps those indices global when a method works on a subset of the targets
(a chunk of :func:`insdel.attribute`, the pairs of Kernel SHAP's exact road).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..removal import Baseline, GameRemoval, ReferenceRemoval, Removal, SampledRemoval, resolve

__all__ = ["active", "Reindexed", "ReindexedGame", "reindexed", "reference_rows", "value_ends", "averaged",
           "refuse"]


def active(removal) -> Removal | None:
    """The removal to apply, or None for the baseline (None, ``"baseline"``, a :class:`Baseline`):
    the methods' one-reference path, unchanged."""
    if removal is None:
        return None
    rem = resolve(removal)
    return None if isinstance(rem, Baseline) else rem


def refuse(method: str, rem: Removal, why: str, instead: str) -> None:
    """Raise the error of a method (or engine) that cannot take the removal ``rem``."""
    raise ValueError(f"{method}: removal {rem.name!r} is not supported {why}; {instead}.")


class _Reindexing:
    """What :class:`Reindexed` and :class:`ReindexedGame` share: the inner removal, the global
    index of each of the current targets, and the inner removal's name, revision and params."""

    def __init__(self, inner, index: np.ndarray) -> None:
        self.inner = inner
        self.index = np.asarray(index, dtype=np.int64)
        self.name = inner.name
        self.revision = inner.revision

    def _global(self, targets) -> np.ndarray:
        return self.index[np.asarray(targets, dtype=np.int64)]

    def params(self) -> dict[str, Any]:
        return self.inner.params()

    def __repr__(self) -> str:
        return repr(self.inner)


class Reindexed(_Reindexing, SampledRemoval):
    """A sampled removal whose targets are rows ``index`` of a larger set: ``sample`` is called
    with the global indices, so the draws (seeded by the target's index) are those of the whole
    run whatever subset or chunk a method works on."""

    def __init__(self, inner: SampledRemoval, index: np.ndarray) -> None:
        super().__init__(inner, index)
        self.n_draws = inner.n_draws
        self.seed = getattr(inner, "seed", 0)
        self.max_rows = getattr(inner, "max_rows", None)

    def sample(self, X: np.ndarray, keep: np.ndarray, targets: np.ndarray) -> np.ndarray:
        return self.inner.sample(X, keep, self._global(targets))


class ReindexedGame(_Reindexing, GameRemoval):
    """A game read off the data (:class:`~insdel.removal.GameRemoval`) whose targets are rows
    ``index`` of a larger set, as :class:`Reindexed` is for a sampled removal."""

    def values(self, X: np.ndarray, keep: np.ndarray, targets: np.ndarray) -> np.ndarray:
        return self.inner.values(X, keep, self._global(targets))


def reindexed(rem: SampledRemoval | GameRemoval, index) -> SampledRemoval | GameRemoval:
    """``rem`` seen from the targets ``index`` of its current targets (composes)."""
    index = np.asarray(index, dtype=np.int64)
    if isinstance(rem, ReindexedGame):
        return ReindexedGame(rem.inner, rem.index[index])
    if isinstance(rem, GameRemoval):
        return ReindexedGame(rem, index)
    if isinstance(rem, Reindexed):
        return Reindexed(rem.inner, rem.index[index])
    return Reindexed(rem, index)


def reference_rows(rem: Removal, X: np.ndarray, R) -> np.ndarray:
    """(B, K, n) float64: the rows the averaged-baseline form averages over.

    A reference removal: its K references per target. A sampled removal: its M draws for the
    empty coalition (every feature removed), ``sample(X, all-False, targets)``: the rows whose mean
    model value is v(∅)."""
    X = np.asarray(X, dtype=np.float64)
    B, n = X.shape
    if isinstance(rem, ReferenceRemoval):
        rows = np.asarray(rem.references(X, R), dtype=np.float64)
    elif isinstance(rem, GameRemoval):
        raise ValueError(f"removal {rem.name!r} is a game read off the data: it has no reference "
                         "rows for a method to average over; under it, use a method that reads "
                         "coalition values (kernel_shap, exact_shapley) or the game's own "
                         "methods (cohort_shapley, igcs).")
    else:
        rows = np.asarray(rem.sample(X, np.zeros((B, n), bool), np.arange(B)), dtype=np.float64)
        M = int(rem.n_draws)
        if rows.shape != (B, M, n):
            raise ValueError(f"removal {rem.name!r}: sample() returned shape {rows.shape}; "
                             f"expected (N, n_draws, n) = {(B, M, n)}.")
    return np.ascontiguousarray(rows)


def value_ends(model, rem: Removal, X: np.ndarray, R) -> tuple[np.ndarray, np.ndarray]:
    """``v(all)`` and ``v(∅)`` (B,) of every target under the removal."""
    from ..removal.values import coalition_values

    B, n = X.shape
    if isinstance(rem, ReferenceRemoval):
        refs = reference_rows(rem, X, R)
        K = refs.shape[1]
        return (np.asarray(model(X), dtype=np.float64),
                np.asarray(model(refs.reshape(B * K, n)), dtype=np.float64).reshape(B, K)
                .mean(axis=1))
    targets = np.concatenate([np.arange(B), np.arange(B)])
    keep = np.concatenate([np.ones((B, n), bool), np.zeros((B, n), bool)])
    v = coalition_values(model, rem, X, targets, keep)
    return v[:B], v[B:]


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
