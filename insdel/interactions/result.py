"""One result type for every interaction index: :class:`InteractionResult` (docs/interactions.md).

Per pair b the result stores the index's value of every subset S of D_b (the units whose removal
can change v_b) with |S| <= order, S = ∅ included; a subset that is not inside D_b holds a null
player and its value is exactly 0 under every index (never stored). Subsets are tuples of unit
indices, increasing; unit names come from the groups, the columns of a DataFrame or
``feature_names``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from .._validation import check_index as _check_pair_index

__all__ = ["InteractionResult"]


class InteractionResult:
    """Interaction values of B pairs: one index, one order, every subset up to the order.

    Attributes
    ----------
    index : str
        The canonical index name (:data:`insdel.interactions.INDICES`).
    order : int
        The largest subset size k (the order the index was computed at: k-SII, STII, FSII and
        FBII depend on it).
    units : list of str
        The m unit names (``"x0"``, ``"x1"``, ... when none were given).
    v_empty, v_all : ndarray (B,)
        ``v_b(∅)`` and ``v_b(N)`` (f(r) and f(x) under the baseline removal).
    exact : bool
        True when read from the exact decomposition; False for a sampled estimate.
    method : str
        ``"exact"`` or the estimator (``"permutation"``, ``"taylor"``, ``"coalitions"``).
    n_samples : int or None
        Samples per pair of a sampled estimate.
    n_evals : int
        Coalition values computed (model rows times draws).
    removal : str
        The removal the game was built with.
    timings : dict
        Seconds: ``decomposition_s`` (the game's effects), ``indices_s`` (reading the index),
        ``total_s``.
    """

    def __init__(self, *, index: str, order: int, units: Sequence[str], dsz, Dflat, doff, eoff,
                 members, sizes, values, v_empty, v_all, se=None, exact: bool = True,
                 method: str = "exact", n_samples: int | None = None, n_evals: int = 0,
                 removal: str = "baseline", timings: dict | None = None):
        self.index = str(index)
        self.order = int(order)
        self.units = [str(u) for u in units]
        self._dsz = np.ascontiguousarray(dsz, dtype=np.int64)
        self._Dflat = np.ascontiguousarray(Dflat, dtype=np.int64)
        self._doff = np.ascontiguousarray(doff, dtype=np.int64)
        self._eoff = np.ascontiguousarray(eoff, dtype=np.int64)
        self._members = np.ascontiguousarray(members, dtype=np.int64).reshape(-1, self.order)
        self._sizes = np.ascontiguousarray(sizes, dtype=np.int64)
        self._values = np.ascontiguousarray(values, dtype=np.float64)
        self._se = None if se is None else np.ascontiguousarray(se, dtype=np.float64)
        self.v_empty = np.asarray(v_empty, dtype=np.float64)
        self.v_all = np.asarray(v_all, dtype=np.float64)
        self.exact = bool(exact)
        self.method = str(method)
        self.n_samples = n_samples
        self.n_evals = int(n_evals)
        self.removal = str(removal)
        self.timings = dict(timings or {})
        if self._members.shape[0] != self._values.shape[0] or self._eoff[-1] != self._values.size:
            raise ValueError("InteractionResult: members, sizes, values and offsets disagree.")

    # -- basics ---------------------------------------------------------------------------------
    @property
    def B(self) -> int:
        """Number of pairs."""
        return int(self._dsz.shape[0])

    @property
    def m(self) -> int:
        """Number of units."""
        return len(self.units)

    @property
    def d(self) -> np.ndarray:
        """|D_b| per pair (B,)."""
        return self._dsz.copy()

    def __len__(self) -> int:
        return self.B

    def __repr__(self) -> str:
        how = "exact" if self.exact else f"sampled ({self.method}, {self.n_samples} samples)"
        return (f"InteractionResult(index={self.index!r}, order={self.order}, B={self.B}, "
                f"m={self.m}, {how}, removal={self.removal!r})")

    def _pair(self, pair) -> int:
        return _check_pair_index("pair", pair, self.B)

    def D(self, pair: int) -> np.ndarray:
        """The units of pair b's D_b (increasing)."""
        b = self._pair(pair)
        return self._Dflat[self._doff[b]:self._doff[b + 1]].copy()

    def _unit(self, u) -> int:
        if isinstance(u, str):
            try:
                return self.units.index(u)
            except ValueError:
                raise ValueError(f"unknown unit {u!r}; units: {self.units}.") from None
        j = int(u)
        if not 0 <= j < self.m:
            raise ValueError(f"unit index {j} out of range for m = {self.m} units.")
        return j

    def _key(self, subset: Iterable) -> tuple[int, ...]:
        key = tuple(sorted(self._unit(u) for u in subset))
        if len(set(key)) != len(key):
            raise ValueError(f"subset {tuple(subset)} repeats a unit.")
        if len(key) > self.order:
            raise ValueError(f"subset {tuple(subset)} has {len(key)} units, above this result's "
                             f"order {self.order}.")
        return key

    # -- the sparse map -------------------------------------------------------------------------
    def subsets(self, pair: int) -> list[tuple[int, ...]]:
        """The stored subsets of pair b (those inside D_b, sizes 0..order), by size."""
        b = self._pair(pair)
        lo, hi = self._eoff[b], self._eoff[b + 1]
        return [tuple(int(j) for j in row[:s])
                for row, s in zip(self._members[lo:hi], self._sizes[lo:hi], strict=True)]

    def to_dict(self, pair: int, *, names: bool = False) -> dict[tuple, float]:
        """Subset -> value for pair b (subsets of unit indices, or of unit names with
        ``names=True``). Subsets not inside D_b are absent: their value is 0."""
        b = self._pair(pair)
        vals = self._values[self._eoff[b]:self._eoff[b + 1]].tolist()
        keys = self.subsets(b)
        if names:
            keys = [tuple(self.units[j] for j in k) for k in keys]
        return dict(zip(keys, vals, strict=True))

    def get(self, pair: int, subset: Iterable = ()) -> float:
        """The value of one subset (unit indices or names) for pair b; 0 outside D_b."""
        b = self._pair(pair)
        key = self._key(subset)
        return float(self._lookup(b, key, self._values))

    def standard_error(self, pair: int, subset: Iterable = ()) -> float:
        """The standard error of one subset's value (0 for an exact result)."""
        b = self._pair(pair)
        key = self._key(subset)
        return 0.0 if self._se is None else float(self._lookup(b, key, self._se))

    def _lookup(self, b: int, key: tuple, arr: np.ndarray) -> float:
        lo, hi = self._eoff[b], self._eoff[b + 1]
        s = len(key)
        sel = np.flatnonzero(self._sizes[lo:hi] == s)
        if s == 0:
            return arr[lo + sel[0]]
        hit = np.flatnonzero((self._members[lo + sel, :s] == np.array(key)).all(axis=1))
        return arr[lo + sel[hit[0]]] if hit.size else 0.0

    # -- dense accessors ------------------------------------------------------------------------
    def _dense(self, order: int, arr: np.ndarray | None) -> np.ndarray:
        if order not in (0, 1, 2):
            raise ValueError(f"order must be 0, 1 or 2 for a dense array; got {order!r} (use "
                             "to_dict or to_frame for higher orders).")
        if order > self.order:
            raise ValueError(f"order {order} is above this result's order {self.order}.")
        pair = np.repeat(np.arange(self.B), np.diff(self._eoff))
        sel = np.flatnonzero(self._sizes == order)
        src = np.zeros(self._values.size) if arr is None else arr
        if order == 0:
            out = np.zeros(self.B)
            out[pair[sel]] = src[sel]
            return out
        if order == 1:
            out = np.zeros((self.B, self.m))
            out[pair[sel], self._members[sel, 0]] = src[sel]
            return out
        out = np.zeros((self.B, self.m, self.m))
        i, j = self._members[sel, 0], self._members[sel, 1]
        out[pair[sel], i, j] = src[sel]
        out[pair[sel], j, i] = src[sel]
        return out

    def values(self, order: int = 1) -> np.ndarray:
        """Dense values of one order: (B,) for 0 (the ∅ entry), (B, m) for 1, (B, m, m) for 2
        (symmetric, zero diagonal); 0 for every subset outside D_b."""
        return self._dense(order, self._values)

    def standard_errors(self, order: int = 1) -> np.ndarray:
        """Dense standard errors shaped as :meth:`values` (zeros for an exact result)."""
        return self._dense(order, self._se)

    def matrix(self, pair: int | None = None) -> np.ndarray:
        """The order-2 values with the order-1 values on the diagonal (the usual heat map):
        (m, m) for one pair, (B, m, m) for all."""
        if self.order < 2:
            raise ValueError(f"matrix() needs order >= 2; this result has order {self.order}.")
        M = self._dense(2, self._values)
        idx = np.arange(self.m)
        M[:, idx, idx] = self._dense(1, self._values)
        return M if pair is None else M[self._pair(pair)]

    def to_frame(self):
        """A long pandas DataFrame: ``pair``, ``subset`` (tuple of unit names), ``size``,
        ``value`` (and ``se`` for a sampled result), one row per stored subset."""
        import pandas as pd

        pair = np.repeat(np.arange(self.B), np.diff(self._eoff))
        names = np.asarray(self.units, dtype=object)
        subsets = [tuple(names[row[:s]]) for row, s in zip(self._members, self._sizes,
                                                           strict=True)]
        cols = {"pair": pair, "subset": subsets, "size": self._sizes.copy(),
                "value": self._values.copy()}
        if self._se is not None:
            cols["se"] = self._se.copy()
        df = pd.DataFrame(cols)
        df.attrs.update(index=self.index, order=self.order, removal=self.removal,
                        method=self.method)
        return df

    def sums(self) -> np.ndarray:
        """``sum_{0 < |S| <= order} I(S)`` per pair (B,): ``v(N) - v(∅)`` for the efficient
        indices (k-SII, STII, FSII, SV; Moebius of order >= |D_b|)."""
        pair = np.repeat(np.arange(self.B), np.diff(self._eoff))
        w = np.where(self._sizes > 0, self._values, 0.0)
        return np.bincount(pair, weights=w, minlength=self.B)
