"""Policies with no search: one-to-one matching (§5.2), constant references (mean, median, mode,
average of a background set) and a fixed point."""

from __future__ import annotations

import numpy as np

from .._validation import as_float_array, check_positive_int
from .base import Pairing, Policy
from .registry import _builtin


@_builtin("one_to_one")
class OneToOne(Policy):
    """Random perfect matching of the selected pool points (paper §5.2, "one-to-one policy").

    A seeded permutation is cut into consecutive pairs; each point is the target once with its
    partner as reference, so every pair appears in both directions (rows in target order;
    ``info["match"]`` numbers the pairs).

    Parameters
    ----------
    odd : {"drop", "extra", "error"}, default "drop"
        With an odd number of points one point (the last of the seeded permutation, so it is
        random) has no partner: ``"drop"`` leaves it out (it is in ``Pairing.skipped``), ``"extra"``
        adds it as a target whose reference is a random other point (one direction only,
        ``info["match"] = -1``), ``"error"`` raises.
    """

    def __init__(self, odd: str = "drop"):
        if odd not in ("drop", "extra", "error"):
            raise ValueError(f"odd must be 'drop', 'extra' or 'error'; got {odd!r}.")
        self.params = {"odd": odd}

    def _pair(self, pool, f, tidx, T, labels, seed, progress):
        m = tidx.size
        if np.unique(tidx).size != m:
            raise ValueError("one_to_one: targets contain repeated pool indices; a matching needs "
                             "each point once.")
        if m < 2:
            raise ValueError(f"one_to_one needs at least 2 points to match; got {m}.")
        odd = self.params["odd"]
        if m % 2 and odd == "error":
            raise ValueError(f"one_to_one: {m} points cannot be perfectly matched (odd count); "
                             "use odd='drop' or odd='extra'.")
        rng = np.random.default_rng(seed)
        perm = rng.permutation(m)
        h = m // 2
        a, b = perm[0:2 * h:2], perm[1:2 * h:2]
        partner = np.full(m, -1, np.int64)
        match = np.full(m, -1, np.int64)
        partner[a], partner[b] = b, a
        match[a] = match[b] = np.arange(h)
        skipped = np.empty(0, np.int64)
        if m % 2:
            left = perm[-1]
            if odd == "drop":
                skipped = np.array([tidx[left]], np.int64)
            else:
                other = rng.integers(m - 1)
                partner[left] = perm[other]
        keep = partner >= 0
        ti = tidx[keep]
        ri = tidx[partner[keep]]
        return Pairing(X=pool[ti].copy(), R=pool[ri].copy(), target_index=ti.copy(),
                       reference_index=ri.astype(np.int64), name=self.name, params={},
                       skipped=skipped, info={"match": match[keep]})


# --------------------------------------------------------------------------------------------------
# constant references
# --------------------------------------------------------------------------------------------------

def _constant_pairing(name, c, T, tidx, extra=None):
    m = T.shape[0]
    return Pairing(X=T.copy(), R=np.tile(c, (m, 1)), target_index=tidx.copy(),
                   reference_index=np.full(m, -1, np.int64), name=name,
                   params=extra or {})


def _statistic(stat: str, B: np.ndarray) -> np.ndarray:
    if stat == "mean":
        return B.mean(axis=0)
    if stat == "median":
        return np.median(B, axis=0)
    out = np.empty(B.shape[1])
    for j in range(B.shape[1]):  # loop over features only
        vals, counts = np.unique(B[:, j], return_counts=True)
        out[j] = vals[np.argmax(counts)]  # ties: the smallest value
    return out


class Constant(Policy):
    """One reference for every target: a feature-wise statistic of a background set.

    Parameters
    ----------
    background : array_like (M, n), optional
        Background points; default the pool.
    """

    accepts_rows = True
    statistic = "mean"

    def __init__(self, background=None):
        if background is not None:
            background = as_float_array("background", background, ndim=(2,))
            if background.shape[0] == 0:
                raise ValueError("background has no rows.")
        self.params = {"background": background}

    def _pair(self, pool, f, tidx, T, labels, seed, progress):
        B = self.params.get("background")
        if B is None:
            B = pool
        elif B.shape[1] != pool.shape[1]:
            raise ValueError(f"background has {B.shape[1]} features but X_pool has {pool.shape[1]}.")
        c = _statistic(self.statistic, B)
        return _constant_pairing(self.name, c, T, tidx, {"reference": c.tolist()})


@_builtin("mean")
class Mean(Constant):
    """Feature-wise mean of a background set (default: the pool)."""

    statistic = "mean"


@_builtin("median")
class Median(Constant):
    """Feature-wise median of a background set (default: the pool)."""

    statistic = "median"


@_builtin("mode")
class Mode(Constant):
    """Feature-wise most frequent value of a background set (ties: the smallest value)."""

    statistic = "mode"


@_builtin("average")
class Average(Constant):
    """The paper's average policy (§5.2): the feature-wise mean of the pool.

    Binary features get their mean too, which is why the paper calls these points unphysical.
    """

    statistic = "mean"

    def __init__(self):
        self.params = {}


@_builtin("fixed")
class Fixed(Policy):
    """A given reference point for every target.

    Parameters
    ----------
    point : array_like (n,), optional
        The reference r.
    index : int, optional
        Use the pool point with this index instead (``reference_index`` is then that index).
    """

    accepts_rows = True

    def __init__(self, point=None, index: int | None = None):
        if (point is None) == (index is None):
            raise ValueError("fixed: give exactly one of point (an array of n values) or index.")
        if point is not None:
            point = as_float_array("point", point, ndim=(1,))
        else:
            index = check_positive_int(index, "fixed: index", minimum=0)
        self.params = {"point": point, "index": index}

    def _pair(self, pool, f, tidx, T, labels, seed, progress):
        N, n = pool.shape
        point, index = self.params["point"], self.params["index"]
        if point is not None:
            if point.shape[0] != n:
                raise ValueError(f"fixed: point has {point.shape[0]} values but X_pool has n = {n} "
                                 "features.")
            return _constant_pairing(self.name, point, T, tidx)
        if index >= N:
            raise ValueError(f"fixed: index {index} is out of range for a pool of {N} points.")
        p = _constant_pairing(self.name, pool[index], T, tidx)
        p.reference_index[:] = index
        return p


