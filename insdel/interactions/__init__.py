"""Shapley interaction indices, exactly, from the anchored decomposition (docs/interactions.md).

Every index in use (Möbius, SII, k-SII / n-Shapley values, STII, FSII, FBII, BII, Banzhaf and
Shapley values) is a linear read-out of the game's Möbius transform, which the anchored
decomposition computes exactly in each pair's differing subspace D_b
(:mod:`insdel.interactions.indices` holds the formulas and their sources). The front door is
:func:`interactions`; this package is itself callable, ``insdel.interactions(f, X, R, ...)``.

Modules: ``indices`` (the indices' names and weights), ``exact`` (the read-out: ``from_effects``,
``from_decomposition``), ``sampled`` (estimates with standard errors above ``max_d``),
``result`` (:class:`InteractionResult`), ``shapiq_io`` (conversion to and from shapiq's
``InteractionValues``; shapiq imported lazily).
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_positive_int, check_seed, feature_names_of
from ..adapter import ModelLike
from ..decomposition._subspace import DEFAULT_MAX_D, _ragged
from ..game import as_game
from .exact import check_order, from_decomposition, from_effects
from .indices import ALIASES, INDICES, IndexSpec, check_index, index_names, weights
from .result import InteractionResult

__all__ = ["interactions", "InteractionResult", "from_decomposition", "from_effects", "INDICES",
           "ALIASES", "IndexSpec", "check_index", "index_names", "weights", "to_shapiq",
           "from_shapiq"]


def interactions(f: ModelLike, X: ArrayLike | None = None, R: ArrayLike | None = None, *,
                 index: str = "k-SII", order: int | None = None, removal=None, groups=None,
                 max_d: int = DEFAULT_MAX_D, n_samples: int | None = None, seed: int = 0,
                 batch_size: int | None = None, progress: bool | None = None,
                 feature_names: Sequence[str] | None = None) -> InteractionResult:
    """Interaction index of every pair, exactly from the decomposition (or sampled above max_d).

    Parameters
    ----------
    f : model or insdel.game.Game
        Anything :func:`insdel.as_model` accepts, or a game (then X, R, removal, groups are not
        given). A game with the ``effects`` closed form (docs/game.md) is read without any
        evaluation, at any |D_b| its effects hold; a tree game (:func:`insdel.trees.tree_game`)
        is read off its leaf patterns, exactly at any n and any |D_b|
        (:func:`insdel.interactions.trees.from_tree_game`; ``max_d`` and ``n_samples`` unused).
    X : array_like (B, n)
        Targets.
    R : array_like
        References, as the removal reads them (:func:`insdel.game.as_game`).
    index : str, default "k-SII"
        ``"Moebius"``, ``"SII"``, ``"k-SII"`` (alias ``"n-SV"``), ``"STII"``, ``"FSII"``,
        ``"FBII"``, ``"BII"``, ``"SV"``, ``"BV"`` (any case; docs/interactions.md).
    order : int, optional
        The largest interaction size k, 1..m (default 2; SV and BV have order 1). Above a pair's
        |D_b| the result is still exact: its subsets of more than |D_b| units are 0.
    removal, groups
        The value function and the units (:mod:`insdel.removal`, :mod:`insdel.groups`).
    max_d : int, default 20
        Largest |D_b| computed exactly (2^|D_b| coalition values per pair).
    n_samples : int, optional
        Above ``max_d``: a sampled estimate of every pair with standard errors, from this many
        samples per pair (permutations for SII / k-SII / SV, permutations for STII's top
        order, coalitions for BII / BV; :mod:`insdel.interactions.sampled`). Without it a pair
        above ``max_d`` is an error. Ignored when every pair is within ``max_d`` (exact).
    seed : int, default 0
        Seed of the sampled estimate.
    batch_size, progress, feature_names
        As in :func:`insdel.batch_decomposition`.

    Returns
    -------
    InteractionResult

    Raises
    ------
    insdel.UnknownNameError
        An unknown index name (with "did you mean").
    ValueError
        An order above m; a pair above ``max_d`` without ``n_samples``; ``n_samples`` for an
        index that has no sampled estimator (Moebius, FSII, FBII).
    """
    t0 = time.perf_counter()
    spec = check_index(index)
    columns = feature_names_of(X) if X is not None else None
    game = as_game(f, X, R, removal=removal, groups=groups, batch_size=batch_size)
    k = check_order(spec, order, game.m)
    max_d = check_positive_int(max_d, "max_d", minimum=0)
    seed = check_seed(seed)
    if n_samples is not None:
        n_samples = check_positive_int(n_samples, "n_samples", minimum=2)
    names = feature_names or game.unit_names or columns or [f"x{j}" for j in range(game.m)]
    if len(names) != game.m:
        raise ValueError(f"feature_names has {len(names)} names for m = {game.m} units.")
    names = [str(s) for s in names]
    from ..decomposition.batch import _decompose
    from ..trees.game import TreeGame

    if isinstance(game, TreeGame):  # exact at any n from the leaf patterns, no 2^|D| work
        from .trees import from_tree_game

        res = from_tree_game(game, index=spec.name, order=k, units=names)
        res.timings["total_s"] = time.perf_counter() - t0
        return res
    if not game.knows("effects"):
        dsz = _ragged(game.differing())[0]
        big = np.flatnonzero(dsz > max_d)
        if big.size:
            p = int(big[np.argmax(dsz[big])])
            if n_samples is None:
                how = (f"n_samples=N for a sampled estimate with standard errors "
                       f"({spec.estimator} sampling)" if spec.estimator else
                       f"index {spec.name!r} has no sampled estimator (SII, k-SII, STII, BII, "
                       "SV, BV have)")
                raise ValueError(
                    f"interactions: {big.size} pair(s) above max_d = {max_d}; pair {p} has "
                    f"|D| = {int(dsz[p])} units whose removal changes its value, and the exact "
                    f"index enumerates 2^{int(dsz[p])} coalitions. Pass max_d={int(dsz[p])} to "
                    f"compute it exactly, or {how}.")
            from .sampled import sampled_interactions

            return sampled_interactions(game, spec, k, n_samples=n_samples, seed=seed,
                                        units=names, t0=t0)
    dec = _decompose(game, max_d=max_d, feature_names=names, progress=progress, t0=t0)
    return from_effects(dec._dsz, dec._Dflat, dec._doff, dec._delta, index=spec.name, order=k,
                        units=names, m=game.m, v_empty=dec.fr, v_all=dec.fx, removal=game.name,
                        n_evals=dec.n_evals,
                        timings={"decomposition_s": dec.timings.get("total_s", 0.0)})


def to_shapiq(result: InteractionResult, pair: int = 0):
    """The pair's values as a ``shapiq.InteractionValues`` (:mod:`insdel.interactions.shapiq_io`)."""
    from .shapiq_io import to_shapiq as _to

    return _to(result, pair)


def from_shapiq(iv, **kw) -> InteractionResult:
    """A one-pair :class:`InteractionResult` from a ``shapiq.InteractionValues``
    (:mod:`insdel.interactions.shapiq_io`)."""
    from .shapiq_io import from_shapiq as _from

    return _from(iv, **kw)


class _CallableModule(types.ModuleType):
    """``insdel.interactions`` is the package and its front door: calling it calls
    :func:`interactions`."""

    def __call__(self, *args, **kwargs) -> InteractionResult:
        return interactions(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
