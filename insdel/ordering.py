"""The one vocabulary of feature orderings (conventions: *Orderings*).

An ordering lists a row's units in the order they are moved (inserted, deleted, removed). Every
engine that takes an ordering by name (``evaluate`` and the curves' ``order=``, the metrics,
``roar``'s ``orderings``, ``road``'s ``orders``, the configuration's keys, the CLI) resolves the
name here, with :func:`check_ordering`, to one of the canonical names of :data:`ORDERINGS`; the
other spellings of :data:`ALIASES` are documented and keep working. Ties are broken by unit index
(stable sort); :func:`sort_orderings` is the one sort, :func:`random_permutations` the one draw of
random orderings.

| canonical name | units first | aliases |
|---|---|---|
| ``signed`` | largest a_j (the paper's ordering) | ``morf`` under a signed ranking |
| ``absolute`` | largest \\|a_j\\| (MoRF of Quantus, ROAR) | ``morf`` under an absolute ranking |
| ``ascending`` | smallest a_j (LeRF) | ``kar_signed`` (ROAR), ``lerf`` under a signed ranking |
| ``least`` | smallest \\|a_j\\| | ``kar_absolute`` (ROAR), ``lerf`` under an absolute ranking |
| ``random`` | a seeded uniformly random ordering per row | none |

``morf`` / ``lerf`` (most / least relevant first) name a direction: the ordering they mean
depends on what counts as relevance, the ``ranking`` (|a_j| or a_j; ROAD's ``ranking=``).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ._registry import UnknownNameError

__all__ = ["ORDERINGS", "ALIASES", "RELEVANCE", "check_ordering", "sort_orderings",
           "random_permutations", "RANDOM_SCHEMES"]

#: Canonical ordering name -> what comes first.
ORDERINGS: dict[str, str] = {
    "signed": "decreasing a_j: the paper's ordering (insertion/deletion tests' tables)",
    "absolute": "decreasing |a_j|: most relevant first by magnitude (MoRF of Quantus and ROAR)",
    "ascending": "increasing a_j: least relevant first (LeRF)",
    "least": "increasing |a_j|: least relevant first by magnitude",
    "random": "a seeded uniformly random ordering per row (the control)",
}

#: Other spellings -> canonical name (ROAR's keep-and-retrain names).
ALIASES: dict[str, str] = {"kar_signed": "ascending", "kar_absolute": "least"}

#: Directions -> canonical name per ranking (what counts as relevance: |a_j| or a_j).
RELEVANCE: dict[str, dict[str, str]] = {
    "morf": {"absolute": "absolute", "signed": "signed"},
    "lerf": {"absolute": "least", "signed": "ascending"},
}

RANKINGS = ("absolute", "signed")

#: How :func:`random_permutations` draws: ``"keys"`` sorts uniform keys (stable; the curves,
#: ``evaluate``, ROAR, the metrics' random subsets, sanity's shuffles, the functional cases, the
#: sampled Shapley route), ``"permuted"`` shuffles ``arange`` with ``Generator.permuted`` (the
#: Quantus region perturbation's random order, as Quantus draws it).
RANDOM_SCHEMES = ("keys", "permuted")

_SORT_KEYS = {"signed": np.negative, "absolute": lambda A: -np.abs(A),
              "ascending": lambda A: A, "least": np.abs}


def _canonical(name: str, ranking: str | None) -> str | None:
    if name in ORDERINGS:
        return name
    if name in ALIASES:
        return ALIASES[name]
    if name in RELEVANCE and ranking is not None:
        return RELEVANCE[name][ranking]
    return None


def check_ordering(name, *, allowed: Iterable[str] | None = None, ranking: str | None = "absolute",
                   argument: str = "order") -> str:
    """The canonical name (:data:`ORDERINGS`) of the ordering ``name``.

    Parameters
    ----------
    name : str
        A canonical name, an alias (:data:`ALIASES`) or a direction ``"morf"`` / ``"lerf"``
        (:data:`RELEVANCE`).
    allowed : iterable of str, optional
        The names the caller takes (canonical names or directions); an alias of an allowed
        canonical name is taken too. Default: every name.
    ranking : {"absolute", "signed"} or None, default "absolute"
        What a direction ranks by; None refuses the directions.
    argument : str
        The argument or configuration key named in the error.

    Raises
    ------
    insdel.UnknownNameError
        (a ``ValueError``) naming the argument, the name, the closest and the allowed names.
    """
    if ranking is not None and ranking not in RANKINGS:
        raise UnknownNameError.of("ranking", ranking, RANKINGS)
    if allowed is None:
        allowed = [*ORDERINGS, *(RELEVANCE if ranking is not None else ())]
    allowed = list(allowed)
    names = allowed + [a for a, c in ALIASES.items() if c in allowed and a not in allowed]
    canon = _canonical(name, ranking) if isinstance(name, str) and name in names else None
    if canon is None:
        err = UnknownNameError.of("ordering", name, names)
        err.args = (f"{argument}: {err.args[0]}",)
        raise err
    return canon


def sort_orderings(A, name: str) -> np.ndarray:
    """Unit orderings of scores ``A`` (..., m) under the deterministic ordering ``name`` (a
    canonical or alias name, not ``"random"``): ``argsort`` of its key along the last axis, ties
    by index (stable), int64."""
    key = _SORT_KEYS[check_ordering(name, allowed=list(_SORT_KEYS), ranking=None)]
    return np.argsort(key(A), axis=-1, kind="stable").astype(np.int64)


def random_permutations(rng: np.random.Generator, shape: tuple[int, ...], *,
                        scheme: str = "keys") -> np.ndarray:
    """Uniformly random orderings of ``0 .. shape[-1] - 1``, one per leading index, int64.

    Parameters
    ----------
    rng : numpy.random.Generator
        The stream drawn from (the caller seeds it).
    shape : tuple of int
        ``(..., m)``.
    scheme : {"keys", "permuted"}, default "keys"
        ``"keys"``: ``argsort`` (stable) of ``rng.random(shape)``; ``"permuted"``:
        ``rng.permuted`` of ``arange(m)`` along the last axis. The two give different draws of
        the same distribution; each caller keeps its scheme so that a seed gives the same
        orderings (:data:`RANDOM_SCHEMES`).
    """
    shape = tuple(int(s) for s in shape)
    if scheme == "keys":
        return np.argsort(rng.random(shape), axis=-1, kind="stable").astype(np.int64)
    if scheme == "permuted":
        base = np.broadcast_to(np.arange(shape[-1], dtype=np.int64), shape).copy()
        return rng.permuted(base, axis=-1)
    raise UnknownNameError.of("random ordering scheme", scheme, RANDOM_SCHEMES)
