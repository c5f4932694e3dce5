"""Exact baseline Shapley values (eq. 6) streamed pair by pair, serially or on Dask workers,
without keeping the decomposition."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .. import _decomposition_kernels as K
from .._progress import progress_bar
from .._validation import (
    check_finite,
    check_positive_int,
)
from ..adapter import ModelLike
from ..game import Game, as_game, from_parts, one_output
from ..ordering import random_permutations
from ._subspace import (
    DEFAULT_MAX_D,
    _check_d,
    _evaluate,
    _ragged,
    _seconds_per_row,
)


def shapley_values(f: ModelLike, X: ArrayLike, R: ArrayLike, *,
                   batch_size: int | None = None, progress: bool | None = None,
                   max_d: int = DEFAULT_MAX_D, max_rows: int = 1 << 20,
                   client=None, groups=None, removal=None, engine: str = "auto") -> np.ndarray:
    """Exact baseline Shapley values of B pairs, ``phi_j = sum_{u ∋ j} Delta_u / |u|``.

    The same numbers as exact Kernel SHAP with the single background point r, computed in each
    pair's differing subspace D_b: 2^|D_b| evaluations per pair whatever n is, and 0 for the
    features outside D_b. Pairs are streamed in chunks: memory stays at about ``batch_size``
    hybrid rows plus about 2^20 values, whatever B is.

    Parameters
    ----------
    f : model
    X : array_like (B, n)
    R : array_like (B, n) or (n,)
    batch_size : int, optional
    progress : bool, optional
    max_d : int, default 20
        Refuse pairs with more differing features (the error names the pair and the cost).
    max_rows : int, default 2^20
        Subsets held at once: pairs are streamed in chunks of about this many 2^|D| values.
    client : dask.distributed.Client, optional
        Compute each of those chunks on the client's workers (the model and the pairs are sent
        to each worker once); the values are identical to ``client=None``, which computes the same
        chunks here. A smaller ``max_rows`` gives more, smaller tasks.
    groups : optional
        Shapley values of the group game over m groups (:mod:`insdel.groups`): shape (B, m).
    removal : str or insdel.removal.Removal, optional
        Shapley values of the value function under this removal (:mod:`insdel.removal`): for
        ``marginal`` the interventional SHAP values over the K references (shap's
        ``ExactExplainer`` with an ``Independent`` masker), for a sampled removal the
        conditional ones (every unit removable: n <= ``max_d``; above it use
        :func:`sampled_shapley`). Rows then sum to ``v(all) - v(∅)``.
    engine : {"auto", "tree", "black_box"}, default "auto"
        Which engine answers (:func:`insdel.game.as_game`): a recognised tree ensemble's exact
        closed forms (``auto``, ``tree``) or the model's values on rows (``black_box``).

    Returns
    -------
    ndarray (B, n) or (B, m); rows sum to f(x_b) - f(r_b).
    """
    game = one_output(as_game(f, X, R, removal=removal, groups=groups, batch_size=batch_size,
                              engine=engine), "shapley_values")
    max_rows = check_positive_int(max_rows, "max_rows")
    if game.knows("shapley"):
        return game.shapley()
    refs = game.references
    if refs is None or refs.shape[1] != 1:
        if client is not None:
            raise ValueError(f"shapley_values: client= is not supported with removal "
                             f"{game.name!r} yet; run without a client.")
        from .batch import _decompose

        return _decompose(game, max_d=max_d, progress=progress).shapley()
    if client is None:
        return _subspace_shapley(game, max_d=max_d, progress=progress, max_rows=max_rows)[0]
    dsz = _ragged(game.differing())[0]
    if int(dsz.max(initial=0)) > int(max_d):  # the serial call names the pair and the cost
        return _subspace_shapley(game, max_d=max_d, max_rows=max_rows)[0]
    from ..distributed import run_chunked

    bounds = _stream_chunks(dsz, max_rows)  # the chunks subspace_shapley streams, one task each
    return run_chunked(_shapley_chunk, [(s, e, max_d, max_rows) for s, e in bounds],
                       shared=game.parts(), client=client, progress=progress,
                       desc="exact Shapley", name="insdel-shapley",
                       describe=lambda k: f"exact Shapley of pairs {bounds[k][0]}.."
                       f"{bounds[k][1] - 1}")


def _stream_chunks(dsz: np.ndarray, max_rows: int) -> list[tuple[int, int]]:
    """Consecutive chunks ``(start, end)`` of pairs whose first subsets' offsets fall in the same
    block of ``max_rows`` values (the chunks :func:`subspace_shapley` streams)."""
    counts = np.left_shift(np.int64(1), np.asarray(dsz, dtype=np.int64))
    first = np.cumsum(counts) - counts
    cid = first // max_rows
    cut = np.flatnonzero(np.diff(cid) != 0) + 1
    starts = np.concatenate([[0], cut]).astype(np.int64)
    ends = np.concatenate([cut, [counts.size]]).astype(np.int64)
    return [(s, e) for s, e in zip(starts.tolist(), ends.tolist(), strict=True) if s < e]


def _shapley_chunk(s: int, e: int, max_d: int, max_rows: int, **parts) -> np.ndarray:
    """Exact Shapley values of pairs s..e - 1, one streamed chunk (the task
    :func:`insdel.distributed.run_chunked` runs on a Dask worker)."""
    return _subspace_shapley(from_parts(**parts).subset(s, e), max_d=max_d,
                             max_rows=max_rows)[0]


def subspace_shapley(f: ModelLike, X: ArrayLike, R: ArrayLike, *, max_d: int = DEFAULT_MAX_D,
                     batch_size: int | None = None, progress: bool | None = None,
                     pairs: np.ndarray | None = None, max_rows: int = 1 << 20,
                     groups=None, engine: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """Exact baseline Shapley values computed in each pair's differing subspace, and |D|.

    A pair (x, r) only involves D = {j : x_j != r_j}: every hybrid is determined by u ∩ D, so
    Delta_u = 0 unless u ⊆ D and a feature outside D has Shapley value 0. For each pair the 2^|D|
    values ``g(u) = f(hybrid(x, r, u))``, u ⊆ D, are evaluated once, Möbius-transformed and turned
    into ``phi_j = sum_{u ∋ j} Delta_u / |u|`` (conventions: *Anchored decomposition*), then mapped
    back to the n features. Cost: ``sum_b 2^|D_b|`` evaluations, whatever n is.

    Parameters
    ----------
    f : model
        Anything :func:`insdel.as_model` accepts.
    X, R : array_like (B, n)
        Targets and references.
    max_d : int, default 20
        Refuse pairs with more than ``max_d`` differing features (2^|D| evaluations each).
    batch_size : int, optional
        Rows per model call.
    progress : bool, optional
        Progress bar.
    pairs : array of int, optional
        Compute only these pairs (the others' rows of the result are NaN).
    max_rows : int, default 2^20
        Values held at once (pairs are streamed in chunks of about this many subsets).
    groups : optional
        The group game over m groups (:mod:`insdel.groups`); phi is then (B, m).
    engine : {"auto", "tree", "black_box"}, default "auto"
        Which engine answers (:func:`insdel.game.as_game`): a recognised tree ensemble's exact
        closed forms (``auto``, ``tree``) or the model's values on rows (``black_box``).

    Returns
    -------
    phi : ndarray (B, n) or (B, m)
        Exact Shapley values; ``phi.sum(1) == f(X) - f(R)`` up to rounding.
    d : ndarray of int (B,)
        |D| per pair.

    Raises
    ------
    ValueError
        A pair with |D| > ``max_d``; the message names the pair, its |D| and the cost.
    """
    game = one_output(as_game(f, X, R, groups=groups, batch_size=batch_size, engine=engine),
                      "subspace_shapley")
    max_rows = check_positive_int(max_rows, "max_rows")
    B = game.B
    if pairs is None:
        todo = np.arange(B, dtype=np.int64)
    else:
        todo = np.asarray(pairs)
        if todo.dtype == bool or not np.issubdtype(todo.dtype, np.integer) or todo.ndim != 1:
            raise TypeError(f"pairs must be a 1-D integer array of pair indices; got {todo!r}.")
        bad = (todo < 0) | (todo >= B)
        if bad.any():
            raise ValueError(f"pairs: index {int(todo[bad][0])} out of range for B = {B} pairs.")
        todo = todo.astype(np.int64)
    refs = game.references
    if refs is None or refs.shape[1] != 1:  # no single reference: from the decomposition
        from .batch import _decompose

        phi = np.full((B, game.m), np.nan)
        phi[todo] = _decompose(game, max_d=max_d, progress=progress).shapley()[todo]
        return phi, _ragged(game.differing())[0]
    return _subspace_shapley(game, max_d=max_d, progress=progress, todo=todo,
                             max_rows=max_rows)


def _subspace_shapley(game: Game, *, max_d, progress=None, todo: np.ndarray | None = None,
                      max_rows: int = 1 << 20) -> tuple[np.ndarray, np.ndarray]:
    """:func:`subspace_shapley` of a checked single-reference game (``game.references`` with
    K = 1): each pair's 2^|D| hybrids streamed through the subset row kernel."""
    model, grp = game.model, game.groups
    B, n = game.B, game.m
    Xd = np.ascontiguousarray(game.X, dtype=model.dtype)
    Rd = np.ascontiguousarray(game.references[:, 0, :], dtype=model.dtype)
    dsz, Dflat, doff = _ragged(game.differing())
    if todo is None:
        todo = np.arange(B, dtype=np.int64)
    _check_d(dsz[todo], n, max_d, pairs=todo, what="exact Shapley computation",
             probe=lambda: _seconds_per_row(model, Xd), groups=grp is not None)
    phi = np.full((B, n), np.nan)
    total = int(np.left_shift(np.int64(1), dsz[todo]).sum())
    with progress_bar(total, "exact Shapley (subspace)", unit="row", enable=progress,
                      auto=total > 1 << 22) as bar:
        for s, e in _stream_chunks(dsz[todo], max_rows):
            idx = todo[s:e]
            dc = dsz[idx]
            dco = np.zeros(idx.size + 1, dtype=np.int64)
            np.cumsum(dc, out=dco[1:])
            Dc = Dflat[np.repeat(doff[idx] - dco[:-1], dc) + np.arange(dco[-1])]
            vals, off, _ = _evaluate(model, Xd, Rd, idx, dc, Dc, dco, bar, grp)
            K.mobius_ragged(vals, off, dc)
            out = np.empty((idx.size, n))
            K.shapley_ragged(vals, off, dc, Dc, dco, out)
            phi[idx] = out
    check_finite("shapley values", phi[todo])
    return phi, dsz


def sampled_shapley(f: ModelLike, X: ArrayLike, R: ArrayLike, *, removal=None,
                    n_orderings: int = 64, seed: int = 0, groups=None,
                    batch_size: int | None = None, progress: bool | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Shapley values from sampled orderings, with their standard errors: the route above
    ``max_d`` (e.g. a conditional removal with many features).

    For each pair, ``n_orderings`` uniformly random orderings (half of them the reverses of the
    other half: antithetic pairs, one unit for the standard error) are traced by insertion; a
    unit's value is its mean marginal contribution ``v(S ∪ {j}) - v(S)`` along them. Each row
    sums to ``v(all) - v(∅)`` exactly (every ordering's contributions telescope).

    Parameters
    ----------
    f, X, R, removal, groups, batch_size, progress
        As in :func:`insdel.tracing.trace`.
    n_orderings : int, default 64
        Orderings per pair (even: antithetic couples).
    seed : int, default 0

    Returns
    -------
    phi : ndarray (B, m)
    se : ndarray (B, m)
        Standard errors over the ``n_orderings / 2`` antithetic couples.
    """
    from .._validation import check_seed
    from ..tracing import DEFAULT_CHUNK_SIZE, _curve_job, _trace_game

    n_orderings = check_positive_int(n_orderings, "n_orderings", minimum=2)
    if n_orderings % 2:
        raise ValueError(f"n_orderings must be even (antithetic couples); got {n_orderings}.")
    seed = check_seed(seed)
    game = one_output(as_game(f, X, R, removal=removal, groups=groups, batch_size=batch_size),
                      "sampled_shapley")
    B, m = game.B, game.m
    half = n_orderings // 2
    o = random_permutations(np.random.default_rng(seed), (B, half, m))
    orders = np.concatenate([o, o[:, :, ::-1]], axis=1)
    res = _trace_game(_curve_job(game, orders, modes=("insertion",), positions=None,
                                 chunk_size=DEFAULT_CHUNK_SIZE, progress=progress, client=None))
    steps = np.diff(res.curves["insertion"], axis=-1)  # (B, K, m): contribution of orders[..., s]
    contrib = np.empty_like(steps)
    np.put_along_axis(contrib, orders, steps, axis=-1)
    couples = 0.5 * (contrib[:, :half] + contrib[:, half:])
    phi = couples.mean(axis=1)
    se = couples.std(axis=1, ddof=1) / np.sqrt(half) if half > 1 else np.full_like(phi, np.nan)
    return phi, se
