"""Anchored decomposition of a pair (x, r): exact AUC/ABC algebra, Shapley values, best ordering.

Implements paper §3.2–3.4 and Appendix B (conventions: *Anchored decomposition*). For a pair
(x, r) let ``g(u) = f(hybrid(x, r, u))`` for the subsets u of the features (index = bitmask, bit j =
feature j taken from the target x). The anchored decomposition with anchor r is the Möbius transform

    Delta_u = sum_{v ⊆ u} (-1)^{|u| - |v|} g(v),   Delta_∅ = f(r),   sum_u Delta_u = f(x),

(the Harsanyi dividends of the game g). Everything else follows from the Delta_u alone:

* Theorem 1: insertion ``AUC = sum_u (n - ceil(u) + 1) Delta_u``;
* Appendix B.1: deletion ``AUC' = sum_u floor(u) Delta_u``;
* §3.3 with Proposition 1: ``E[ABC] = (n + 1)/2 sum_{u≠∅} (1 - |u|)/(|u| + 1) Delta_u`` under a
  uniformly random ordering, and ``E[ABC + ABC'] = 0``;
* exact baseline Shapley values ``phi_j = sum_{u ∋ j} Delta_u / |u|`` (what exact Kernel SHAP with
  the single background point r computes; the paper's "exact KS", 2^16 evaluations per CERN pair);
* the best achievable ordering (insdel's addition): the chain through the subset lattice with the
  largest (insertion) or smallest (deletion) sum of g, by dynamic programming.

**Everything works in each pair's differing subspace** D = {j : x_j != r_j}. A hybrid depends on u
only through u ∩ D, so Delta_u = 0 unless u ⊆ D and a feature outside D has Shapley value 0: a pair
costs 2^|D| model evaluations and 2^|D| stored values, whatever n is. The limit ``max_d`` is on |D|.
Orderings stay orderings of all n features (a feature outside D keeps its position in ceil/floor);
the full 2^n layout of g and Delta is available for n <= 22 (:meth:`BatchDecomposition.full_values`,
:meth:`~BatchDecomposition.full_delta`). The hybrids of many pairs are built by a numba kernel and
evaluated through :func:`insdel.as_model` in large batches; the transforms, Theorem 1, the Shapley
accumulation and the best-path search are ragged numba kernels over all pairs at once
(:mod:`insdel._decomposition_kernels`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from . import _decomposition_kernels as K
from ._progress import progress_bar
from ._validation import (
    align_columns,
    as_float_array,
    check_bool,
    check_finite,
    check_index,
    check_mode,
    check_orders,
    check_pairs,
    check_positive_int,
    feature_names_of,
    repeated,
)
from .adapter import Model, ModelLike, as_model
from .groups import Groups, check_groups

__all__ = [
    "DEFAULT_MAX_D", "FULL_LAYOUT_MAX_N", "AnchoredDecomposition", "BatchDecomposition",
    "Interaction", "anchored_decomposition", "batch_decomposition", "shapley_values",
    "subspace_shapley", "expected_last_position", "mobius", "zeta",
]

DEFAULT_MAX_D = 20
"""Largest |D| (differing features of a pair) decomposed unless ``max_d=`` is raised (2^20 evaluations)."""

FULL_LAYOUT_MAX_N = 22
"""Largest n for which the full 2^n layout of g and Delta (``values``, ``delta``) is built."""

_HARD_MAX_D = 40


def _fmt_bytes(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if nbytes < 1024 or unit == "PiB":
            return f"{nbytes:,.1f} {unit}" if unit != "B" else f"{int(nbytes)} B"
        nbytes /= 1024
    return f"{nbytes:.1f} PiB"  # pragma: no cover


def _seconds_per_row(model, Xd: np.ndarray, rows: int = 4096) -> float:
    """The model's time per row on this machine, from one call of ``rows`` rows (error path only)."""
    batch = np.repeat(Xd[:1], rows, axis=0)
    t0 = time.perf_counter()
    model(batch)
    return (time.perf_counter() - t0) / rows


def _fmt_seconds(s: float) -> str:
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if s >= size:
            return f"{s / size:,.1f} {unit}"
    return f"{s:.1f} s"


def _check_d(dsz: np.ndarray, n: int, max_d, pairs: np.ndarray | None = None,
             what: str = "exact anchored decomposition",
             probe: Callable[[], float] | None = None, groups: bool = False) -> int:
    """Refuse pairs with more than ``max_d`` differing features, naming the pair and its cost.

    ``dsz[p]`` is |D| of plan entry p, whose pair index is ``pairs[p]`` (default p). ``probe()``
    (called only when refusing) gives the model's seconds per row, for the time estimate.
    ``groups``: the units are groups of columns (the message says so).
    """
    max_d = check_positive_int("max_d", max_d, minimum=0)
    big = np.flatnonzero(dsz > min(max_d, _HARD_MAX_D))
    if big.size == 0:
        return max_d
    p = int(big[0])
    name = (lambda q: int(q)) if pairs is None else (lambda q: int(pairs[q]))
    d = int(dsz[p])
    N = 2 ** d
    others = ""
    if big.size > 1:
        w = int(big[np.argmax(dsz[big])])
        others = (f" {big.size} pairs exceed max_d; the largest is pair {name(w)} with "
                  f"|D| = {int(dsz[w])}.")
    hint = (f"pass max_d={d} to allow it" if d <= _HARD_MAX_D
            else f"|D| > {_HARD_MAX_D} is never enumerated")
    eta = ""
    if probe is not None:
        with contextlib.suppress(Exception):  # the estimate must never hide the real error
            eta = f", about {_fmt_seconds(N * probe())} of model time on this machine"
    unit, dset = (("groups", "D = {groups with a column j where x_j != r_j}") if groups
                  else ("features", "D = {j : x_j != r_j}"))
    raise ValueError(
        f"pair {name(p)} differs in |D| = {d} {unit} (> max_d = {max_d}): of its n = {n} "
        f"{unit} only {dset} matters, but the {what} of this pair still "
        f"enumerates the 2^{d} subsets of D: 2**{d} = {N:,} model evaluations{eta}, and "
        f"{_fmt_bytes(16.0 * N)} for the values g(u) and Delta_u (16 bytes per subset)."
        f"{others} Group features, use a sampling-based attribution, or {hint}."
    )


def _n_from_length(N: int, name: str) -> int:
    n = int(N).bit_length() - 1
    if N < 2 or (1 << n) != N:
        raise ValueError(f"{name} must have 2**n entries per pair (n >= 1); got {N}.")
    return n


def _subspaces(X: np.ndarray, R: np.ndarray, dedup: bool = True, groups: Groups | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pair: |D| (B,), the units (features or groups) of every D in increasing order (flat)
    and their offsets. A group is in D when any of its columns differs."""
    diff = X != R
    if groups is not None:
        diff = groups.reduce_any(diff)
    if not dedup:
        diff = np.ones(diff.shape, dtype=bool)
    dsz = diff.sum(axis=1).astype(np.int64)
    Dflat = np.nonzero(diff)[1].astype(np.int64)
    doff = np.zeros(X.shape[0] + 1, dtype=np.int64)
    np.cumsum(dsz, out=doff[1:])
    return dsz, Dflat, doff


def _value_offsets(dsz: np.ndarray) -> np.ndarray:
    off = np.zeros(dsz.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.left_shift(np.int64(1), dsz), out=off[1:])
    return off


def _unit_map(n: int, groups: Groups | None) -> tuple[np.ndarray, np.ndarray]:
    if groups is None:
        return np.arange(n + 1, dtype=np.int64), np.arange(n, dtype=np.int64)
    return groups.starts, groups.members


def _evaluate(model: Model, Xd: np.ndarray, Rd: np.ndarray, pairs: np.ndarray, dsz: np.ndarray,
              Dflat: np.ndarray, doff: np.ndarray, bar, groups: Groups | None = None
              ) -> tuple[np.ndarray, np.ndarray, float]:
    """``g_p(u)`` for every subset u of D_p of the plan entries p (pair ``pairs[p]``), flat.

    Each distinct hybrid is built once (numba, straight into the model's dtype) and evaluated in
    model calls of ``batch_size`` rows; at most ``batch_size`` rows exist at once.
    Returns the flat values, their offsets and the seconds spent inside the model.
    """
    off = _value_offsets(dsz)
    U = int(off[-1])
    vals = np.empty(U)
    bs = model.batch_size
    rows = np.empty((min(bs, U), Xd.shape[1]), dtype=model.dtype)
    pairs = np.ascontiguousarray(pairs, dtype=np.int64)
    t_model = 0.0
    starts, members = _unit_map(Xd.shape[1], groups)
    for s0 in range(0, U, bs):
        s1 = min(s0 + bs, U)
        buf = rows[:s1 - s0]
        K.subspace_rows(Xd, Rd, pairs, off, Dflat, doff, starts, members, s0, buf)
        t0 = time.perf_counter()
        vals[s0:s1] = model(buf)
        t_model += time.perf_counter() - t0
        bar.update(s1 - s0)
    return vals, off, t_model


def expected_last_position(size, n: int):
    """Proposition 1: expected position of the last element of a random ``size``-subset.

    Under a uniformly random ordering of n features, a fixed set u of ``|u| = size`` features has
    ``E[ceil(u)] = |u| (n + 1) / (|u| + 1)`` (0 for the empty set). By symmetry (Appendix B.1)
    ``E[floor(u)] = n + 1 - E[ceil(u)]``.

    Parameters
    ----------
    size : int or array_like of int
        |u|, between 0 and n.
    n : int
        Number of features (>= 1).

    Returns
    -------
    float or ndarray of float
    """
    n = check_positive_int("n", n)
    s = np.asarray(size)
    if s.dtype == bool or not np.issubdtype(s.dtype, np.integer):
        raise TypeError(f"size must be an integer (or integer array); got dtype {s.dtype}.")
    if (s < 0).any() or (s > n).any():
        raise ValueError(f"size must lie in 0..n = 0..{n}; got {s.tolist()}.")
    e = s * (n + 1) / (s + 1.0)
    return float(e) if e.ndim == 0 else e


def _transform(arr, name: str, kernel) -> np.ndarray:
    a = as_float_array(name, arr, ndim=(1, 2))
    n = _n_from_length(a.shape[-1], name)
    out = np.array(a, dtype=np.float64, order="C", ndmin=2, copy=True)
    kernel(out, n)
    return out.reshape(a.shape)


def mobius(values) -> np.ndarray:
    """Möbius transform of g (..., 2^n) -> Delta (..., 2^n), fast O(n 2^n) (conventions)."""
    return _transform(values, "values", K.mobius_inplace)


def zeta(delta) -> np.ndarray:
    """Inverse Möbius (zeta) transform: ``g(u) = sum_{v ⊆ u} Delta_v``."""
    return _transform(delta, "delta", K.zeta_inplace)


class Interaction(NamedTuple):
    """One interaction term Delta_u with |u| >= 2 (see :meth:`AnchoredDecomposition.interactions`)."""

    features: tuple
    mask: int
    size: int
    delta: float


class BatchDecomposition:
    """Anchored decompositions of B pairs with the same n, each in its differing subspace D_b.

    Pair b keeps the 2^|D_b| values ``g_b(u)``, u ⊆ D_b = {j : x_j != r_j}, and their dividends
    Delta_u (Delta_u = 0 for every u ⊄ D_b), in flat arrays with per-pair offsets: pairs of
    different |D| share one batch without padding. Built by :func:`batch_decomposition`; the
    constructor takes the full layout (B, 2^n) (then D_b = all n features).

    Parameters
    ----------
    values : array_like (B, 2^n)
        ``g_b(u)`` for every bitmask u.
    delta : array_like (B, 2^n), optional
        Delta_u; the Möbius transform of ``values`` when omitted.
    feature_names : sequence of str, optional
    n_evals : int
        Model evaluations spent.
    timings : dict, optional

    Attributes
    ----------
    n : int
    d : ndarray of int64 (B,)
        |D_b| per pair.
    values, delta : ndarray (B, 2^n)
        The full layout (n <= 22 only; see :meth:`full_values`).
    fx, fr : ndarray (B,)
        f(x) = g(D) and f(r) = g(∅).
    feature_names : list of str or None
    n_evals : int
        Model evaluations spent (distinct hybrid rows, sum of 2^|D_b|), 0 when built from arrays.
    timings : dict
        ``model_s`` (inside the model), ``other_s`` (rows, Möbius, bookkeeping), ``total_s``.
    """

    def __init__(self, values, delta=None, *, feature_names: Sequence[str] | None = None,
                 n_evals: int = 0, timings: dict | None = None):
        v = as_float_array("values", values, ndim=(2,))
        n = _n_from_length(v.shape[1], "values")
        B = v.shape[0]
        vflat = np.array(v, dtype=np.float64, order="C").reshape(-1)
        dsz = np.full(B, n, dtype=np.int64)
        if delta is None:
            dflat = vflat.copy()
            K.mobius_ragged(dflat, _value_offsets(dsz), dsz)
        else:
            dl = as_float_array("delta", delta, ndim=(2,))
            if dl.shape != v.shape:
                raise ValueError(f"delta must have shape {v.shape}; got {dl.shape}.")
            dflat = np.array(dl, order="C").reshape(-1)
        self._set(n, dsz, np.tile(np.arange(n, dtype=np.int64), B),
                  np.arange(B + 1, dtype=np.int64) * n, vflat, dflat, feature_names, n_evals,
                  timings)

    def _set(self, n, dsz, Dflat, doff, vflat, dflat, feature_names, n_evals, timings) -> None:
        self.n = int(n)
        self._dsz = np.ascontiguousarray(dsz, dtype=np.int64)
        self._Dflat = np.ascontiguousarray(Dflat, dtype=np.int64)
        self._doff = np.ascontiguousarray(doff, dtype=np.int64)
        self._off = _value_offsets(self._dsz)
        self._values = np.ascontiguousarray(vflat, dtype=np.float64)
        self._delta = np.ascontiguousarray(dflat, dtype=np.float64)
        if feature_names is not None:
            feature_names = [str(s) for s in feature_names]
            if len(feature_names) != self.n:
                raise ValueError(
                    f"feature_names has {len(feature_names)} names for n = {self.n} features.")
            dup = repeated(feature_names)
            if dup:
                raise ValueError(f"feature_names repeats {dup}.")
        self.feature_names = feature_names
        self.n_evals = int(n_evals)
        self.timings = dict(timings or {})
        self._best: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._full: dict[str, np.ndarray] = {}

    @classmethod
    def _from_parts(cls, n, dsz, Dflat, doff, vflat, dflat, *, feature_names=None, n_evals=0,
                    timings=None) -> BatchDecomposition:
        obj = cls.__new__(cls)
        obj._set(n, dsz, Dflat, doff, vflat, dflat, feature_names, n_evals, timings)
        return obj

    # -- constructors ------------------------------------------------------------------------
    @classmethod
    def from_values(cls, values, **kw) -> BatchDecomposition:
        """From the 2^n values g(u) per pair, shape (B, 2^n) (D_b = all n features)."""
        return cls(values, **kw)

    @classmethod
    def from_delta(cls, delta, **kw) -> BatchDecomposition:
        """From given Delta_u per pair (B, 2^n); g is rebuilt by the zeta transform."""
        d = np.array(as_float_array("delta", delta, ndim=(2,)), dtype=np.float64, order="C")
        n = _n_from_length(d.shape[1], "delta")
        g = d.copy()
        K.zeta_inplace(g, n)
        return cls(g, d, **kw)

    # -- basics ------------------------------------------------------------------------------
    @property
    def B(self) -> int:
        return self._dsz.shape[0]

    @property
    def d(self) -> np.ndarray:
        """|D_b|, the number of differing features of each pair (B,)."""
        return self._dsz.copy()

    def D(self, i: int) -> np.ndarray:
        """The differing features D_i of pair i, increasing (int64)."""
        i = self._index(i)
        return self._Dflat[self._doff[i]:self._doff[i + 1]].copy()

    def subspace_values(self, i: int) -> np.ndarray:
        """``g_i(u)`` for the 2^|D_i| subsets u of D_i (local bit t = feature ``D(i)[t]``)."""
        i = self._index(i)
        return self._values[self._off[i]:self._off[i + 1]].copy()

    def subspace_delta(self, i: int) -> np.ndarray:
        """Delta_u for the 2^|D_i| subsets u of D_i (every other Delta_u is 0)."""
        i = self._index(i)
        return self._delta[self._off[i]:self._off[i + 1]].copy()

    @property
    def fx(self) -> np.ndarray:
        return self._values[self._off[1:] - 1].copy()

    @property
    def fr(self) -> np.ndarray:
        return self._values[self._off[:-1]].copy()

    def _check_full(self, what: str) -> None:
        if self.n > FULL_LAYOUT_MAX_N:
            raise ValueError(
                f"{what}: the full layout holds 2**{self.n} = {2 ** self.n:,} entries per pair "
                f"(n = {self.n} > {FULL_LAYOUT_MAX_N}); the decomposition is stored in each pair's "
                f"differing subspace D: use subspace_values(i) / subspace_delta(i) and D(i).")

    def _full_layout(self, kind: str) -> np.ndarray:
        self._check_full(kind)
        if kind not in self._full:
            N = 1 << self.n
            dm = np.zeros(self.B, dtype=np.int64)
            np.add.at(dm, np.repeat(np.arange(self.B), self._dsz),
                      np.left_shift(np.int64(1), self._Dflat))
            out = np.empty((self.B, N))
            src = self._values if kind == "values" else self._delta
            K.scatter_full(src, self._off, dm, self.n, kind == "delta", out)
            self._full[kind] = out
        return self._full[kind]

    def full_values(self) -> np.ndarray:
        """``g_b(u)`` for all 2^n bitmasks u, (B, 2^n) (g depends on u ∩ D_b only); n <= 22.

        Raises
        ------
        ValueError
            n > ``FULL_LAYOUT_MAX_N`` (22).
        """
        return self._full_layout("values").copy()

    def full_delta(self) -> np.ndarray:
        """Delta_u for all 2^n bitmasks u, (B, 2^n) (0 for u ⊄ D_b); n <= 22.

        Raises
        ------
        ValueError
            n > ``FULL_LAYOUT_MAX_N`` (22).
        """
        return self._full_layout("delta").copy()

    @property
    def values(self) -> np.ndarray:
        """The full layout of g, (B, 2^n) (read-only view; n <= 22), see :meth:`full_values`."""
        v = self._full_layout("values").view()
        v.flags.writeable = False
        return v

    @property
    def delta(self) -> np.ndarray:
        """The full layout of Delta, (B, 2^n) (read-only view; n <= 22), see :meth:`full_delta`."""
        v = self._full_layout("delta").view()
        v.flags.writeable = False
        return v

    @property
    def sizes(self) -> np.ndarray:
        """|u| for every bitmask u < 2^n (int8; n <= 22)."""
        self._check_full("sizes")
        return K.popcounts(self.n)

    def __len__(self) -> int:
        return self.B

    def _index(self, i) -> int:
        return check_index("pair index", i, self.B)

    def __getitem__(self, i: int) -> AnchoredDecomposition:
        i = self._index(i)
        d = self._dsz[i:i + 1]
        part = BatchDecomposition._from_parts(
            self.n, d, self._Dflat[self._doff[i]:self._doff[i + 1]],
            np.array([0, d[0]], dtype=np.int64), self._values[self._off[i]:self._off[i + 1]],
            self._delta[self._off[i]:self._off[i + 1]], feature_names=self.feature_names)
        return AnchoredDecomposition._wrap(part)

    def __repr__(self) -> str:
        if self.B == 0:
            return f"BatchDecomposition(B=0, n={self.n})"
        return (f"BatchDecomposition(B={self.B}, n={self.n}, |D| in "
                f"{int(self._dsz.min())}..{int(self._dsz.max())})")

    # -- areas from Delta (Theorem 1, Appendix B.1) -----------------------------------------
    def _orders3(self, orders) -> tuple[np.ndarray, bool]:
        o = check_orders(orders, self.n, name="orders")
        if o.ndim == 1:
            return np.ascontiguousarray(np.broadcast_to(o, (self.B, 1, self.n))), True
        if o.ndim == 2:
            if o.shape[0] != self.B:
                raise ValueError(f"orders must have shape (n,), (B, n) or (B, K, n) with B = "
                                 f"{self.B}, n = {self.n}; got {o.shape}.")
            return np.ascontiguousarray(o[:, None, :]), True
        if o.ndim == 3 and o.shape[0] == self.B:
            return np.ascontiguousarray(o), False
        raise ValueError(f"orders must have shape (n,), (B, n) or (B, K, n) with B = {self.B}, "
                         f"n = {self.n}; got {o.shape}.")

    def _areas(self, orders) -> tuple[tuple[np.ndarray, ...], bool]:
        o, squeeze = self._orders3(orders)
        o = o.astype(np.int64, copy=False)
        shape = o.shape[:2]
        outs = tuple(np.empty(shape) for _ in range(4))
        K.theorem1_ragged(self._delta, self._off, self._dsz, self._Dflat, self._doff, o, self.n,
                          *outs)
        return outs, squeeze

    def auc(self, orders, *, mode: str = "insertion", normalize: bool = False) -> np.ndarray:
        """AUC (insertion, Theorem 1) or AUC' (deletion, Appendix B.1) of each ordering.

        Orderings are of all n features; a feature outside D_b keeps its position in ceil(u) and
        floor(u), and since Delta_u = 0 for u ⊄ D_b the sums run over the subsets of D_b only
        (exactly the full-space areas).

        Parameters
        ----------
        orders : array_like of int, (n,), (B, n) or (B, K, n)
            ``orders[..., s]`` is the feature moved at step s + 1 (a 1-D order is used for every pair).
        mode : {"insertion", "deletion"}
        normalize : bool, default False
            Divide by n (as :func:`insdel.auc`).

        Returns
        -------
        ndarray (B,) or (B, K)
        """
        check_mode(mode)
        normalize = check_bool("normalize", normalize)
        (ai, ad, _, _), squeeze = self._areas(orders)
        a = ai if mode == "insertion" else ad
        if normalize:
            a = a / self.n
        return a[:, 0] if squeeze else a

    def abc(self, orders, *, mode: str = "insertion", normalize: bool = True) -> np.ndarray:
        """ABC (insertion) or ABC' (deletion) from Delta_u (Theorem 1, Appendix B.1).

        ``ABC = sum_{u≠∅} ((n + 1)/2 - ceil(u)) Delta_u``,
        ``ABC' = sum_{u≠∅} ((n + 1)/2 - floor(u)) Delta_u``, u over the subsets of D_b; divided
        by n when ``normalize`` (the paper's tables). Shapes as in :meth:`auc`.
        """
        check_mode(mode)
        normalize = check_bool("normalize", normalize)
        (_, _, bi, bd), squeeze = self._areas(orders)
        a = bi if mode == "insertion" else bd
        if normalize:
            a = a / self.n
        return a[:, 0] if squeeze else a

    def abc_total(self, orders, *, normalize: bool = True) -> np.ndarray:
        """ABC + ABC' of each ordering, ``sum_{u≠∅} (n - ceil(u) - floor(u) + 1) Delta_u`` (App. B.1)."""
        normalize = check_bool("normalize", normalize)
        (_, _, bi, bd), squeeze = self._areas(orders)
        a = bi + bd
        if normalize:
            a = a / self.n
        return a[:, 0] if squeeze else a

    # -- expectations under a random ordering (§3.3) ----------------------------------------
    def expected_abc(self, *, mode: str = "insertion", normalize: bool = True) -> np.ndarray:
        """Expected ABC (or ABC') under a uniformly random ordering of all n features (§3.3).

        Insertion: ``E[ABC] = sum_{u≠∅} ((n + 1)/2 - E ceil(u)) Delta_u
        = (n + 1)/2 sum_{u≠∅} (1 - |u|)/(|u| + 1) Delta_u`` with Proposition 1 (n the full number of
        features; u over the subsets of D_b); deletion:
        ``E[ABC'] = sum_{u≠∅} ((n + 1)/2 - E floor(u)) Delta_u`` with ``E floor(u) = n + 1 - E ceil(u)``,
        so that ``E[ABC + ABC'] = 0``.

        Returns
        -------
        ndarray (B,)
        """
        check_mode(mode)
        normalize = check_bool("normalize", normalize)
        n = self.n
        e_ceil = expected_last_position(np.arange(n + 1), n)
        half = (n + 1) / 2.0
        w = half - e_ceil if mode == "insertion" else half - (n + 1 - e_ceil)
        w[0] = 0.0
        out = np.empty(self.B)
        K.size_weighted_sums(self._delta, self._off, self._dsz, np.ascontiguousarray(w), out)
        return out / n if normalize else out

    # -- Shapley values from the Harsanyi dividends -----------------------------------------
    def shapley(self) -> np.ndarray:
        """Exact baseline Shapley values with reference r: ``phi_j = sum_{u ∋ j} Delta_u / |u|``.

        Computed over the subsets of D_b; a feature outside D_b gets exactly 0.

        Returns
        -------
        ndarray (B, n); each row sums to f(x) - f(r).
        """
        out = np.empty((self.B, self.n))
        K.shapley_ragged(self._delta, self._off, self._dsz, self._Dflat, self._doff, out)
        return out

    # -- best achievable ordering -----------------------------------------------------------
    def _best_path(self, mode: str) -> tuple[np.ndarray, np.ndarray]:
        check_mode(mode)
        if mode not in self._best:
            best = np.empty(self.B)
            order = np.empty((self.B, self.n), dtype=np.int64)
            K.best_paths_ragged(self._values, self._off, self._dsz, self._Dflat, self._doff,
                                self.n, mode == "insertion", best, order)
            self._best[mode] = (best, order)
        return self._best[mode]

    def best_order(self, *, mode: str = "insertion") -> np.ndarray:
        """Ordering of all n features with the largest ABC (insertion) or ABC' (deletion), per pair.

        Dynamic programming over the 2^|D| subsets of D (O(|D| 2^|D|) per pair): the curve is a
        chain of subsets of D, and each of the n - |D| features outside D repeats the current
        value wherever it is placed. The best ordering is therefore the best chain of D up to a
        set T*, then the features outside D in increasing index, then the best chain from T* to D,
        where T* maximises (insertion) or minimises (deletion) the chain's sum plus
        (n - |D|) g(T*). The ordering attains the full-space optimum over all n! orderings.

        Tie rule: T* = D — the features outside D placed after those inside, in increasing
        index — whenever that is optimal (it is unless the best chain overshoots: its largest
        value, insertion, or smallest, deletion, lies strictly inside the chain); otherwise the
        largest bitmask T* attaining the optimum. Within a chain, ties go to the smallest feature
        index at each step (deterministic).

        Returns
        -------
        ndarray of int64 (B, n)
        """
        return self._best_path(mode)[1].copy()

    def best_auc(self, *, mode: str = "insertion", normalize: bool = False) -> np.ndarray:
        """Largest AUC (insertion) or smallest AUC' (deletion) over all n! orderings, (B,)."""
        normalize = check_bool("normalize", normalize)
        a = self._best_path(mode)[0]
        return a / self.n if normalize else a.copy()

    def best_abc(self, *, mode: str = "insertion", normalize: bool = True) -> np.ndarray:
        """Best achievable ABC (insertion) or ABC' (deletion) over all n! orderings, (B,)."""
        normalize = check_bool("normalize", normalize)
        best = self._best_path(mode)[0]
        aul = (self.n + 1) / 2.0 * (self.fr + self.fx)
        out = best - aul if mode == "insertion" else aul - best
        return out / self.n if normalize else out

    # -- interactions ------------------------------------------------------------------------
    def interactions(self, i: int, top: int = 10) -> list[Interaction]:
        """The ``top`` interaction terms Delta_u, |u| >= 2, of pair i, largest |Delta_u| first.

        Only u ⊆ D_i can be nonzero. ``features`` holds feature names when given, else indices;
        ``mask`` is the bitmask over all n features (a Python int); ties by bitmask.
        """
        i = self._index(i)
        top = check_positive_int("top", top)
        d = int(self._dsz[i])
        if d < 2:
            return []
        sizes = K.popcounts(d)
        cand = np.flatnonzero(sizes >= 2)
        dl = self._delta[self._off[i]:self._off[i + 1]]
        sel = cand[np.argsort(-np.abs(dl[cand]), kind="stable")[:top]]
        D = self._Dflat[self._doff[i]:self._doff[i + 1]].tolist()
        names = self.feature_names
        out = []
        for u in sel.tolist():
            feats = tuple(D[t] for t in range(d) if (u >> t) & 1)
            mask = sum(1 << j for j in feats)
            if names is not None:
                feats = tuple(names[j] for j in feats)
            out.append(Interaction(feats, mask, int(sizes[u]), float(dl[u])))
        return out


class AnchoredDecomposition:
    """The anchored decomposition of one pair (x, r) (paper §3.3, Appendix B), in its subspace D.

    Parameters
    ----------
    values : array_like (2^n,)
        ``g(u) = f(hybrid(x, r, u))``, index = bitmask (bit j = feature j from x); D = all features.
    delta : array_like (2^n,), optional
        Delta_u (the Möbius transform of ``values`` when omitted).
    feature_names : sequence of str, optional

    Attributes
    ----------
    n : int
    D : ndarray of int64
        The differing features {j : x_j != r_j} (all n when built from the full layout).
    values, delta : ndarray (2^n,)
        Full layout (n <= 22); ``subspace_values`` / ``subspace_delta`` hold the 2^|D| entries.
    fx, fr : float
    feature_names : list of str or None
    """

    def __init__(self, values, delta=None, *, feature_names: Sequence[str] | None = None,
                 n_evals: int = 0, timings: dict | None = None):
        v = as_float_array("values", values, ndim=(1,))
        d = None if delta is None else np.asarray(delta, dtype=np.float64)[None, :]
        self._batch = BatchDecomposition(v[None, :], d, feature_names=feature_names,
                                         n_evals=n_evals, timings=timings)

    @classmethod
    def _wrap(cls, batch: BatchDecomposition) -> AnchoredDecomposition:
        obj = cls.__new__(cls)
        obj._batch = batch
        return obj

    @classmethod
    def from_values(cls, values, **kw) -> AnchoredDecomposition:
        """From the 2^n values g(u) (index = bitmask)."""
        return cls(values, **kw)

    @classmethod
    def from_delta(cls, delta, **kw) -> AnchoredDecomposition:
        """From given Delta_u (2^n,), e.g. the §3.4 counterexample; g by the zeta transform."""
        d = as_float_array("delta", delta, ndim=(1,))
        b = BatchDecomposition.from_delta(d[None, :])
        return cls(b.values[0], b.delta[0], **kw)

    n = property(lambda self: self._batch.n)
    D = property(lambda self: self._batch.D(0))
    d = property(lambda self: int(self._batch._dsz[0]))
    values = property(lambda self: self._batch.values[0])
    delta = property(lambda self: self._batch.delta[0])
    subspace_values = property(lambda self: self._batch.subspace_values(0))
    subspace_delta = property(lambda self: self._batch.subspace_delta(0))
    feature_names = property(lambda self: self._batch.feature_names)
    n_evals = property(lambda self: self._batch.n_evals)
    timings = property(lambda self: self._batch.timings)
    fx = property(lambda self: float(self._batch.fx[0]))
    fr = property(lambda self: float(self._batch.fr[0]))

    def full_values(self) -> np.ndarray:
        """g(u) for all 2^n bitmasks (n <= 22)."""
        return self._batch.full_values()[0]

    def full_delta(self) -> np.ndarray:
        """Delta_u for all 2^n bitmasks, 0 for u ⊄ D (n <= 22)."""
        return self._batch.full_delta()[0]

    def __repr__(self) -> str:
        return (f"AnchoredDecomposition(n={self.n}, |D|={self.d}, f(x)={self.fx:.6g}, "
                f"f(r)={self.fr:.6g})")

    def _one(self, order, fn, **kw):
        o = check_orders(order, self.n, name="order")
        if o.ndim == 1:
            return float(fn(o[None, :], **kw)[0])
        if o.ndim == 2:
            return fn(o[None, :, :], **kw)[0]
        raise ValueError(f"order must have shape (n,) or (K, n) with n = {self.n}; got {o.shape}.")

    def auc(self, order, *, mode: str = "insertion", normalize: bool = False):
        """AUC / AUC' of an ordering (n,) or of K orderings (K, n) by Theorem 1 / Appendix B.1."""
        return self._one(order, self._batch.auc, mode=mode, normalize=normalize)

    def abc(self, order, *, mode: str = "insertion", normalize: bool = True):
        """ABC / ABC' of an ordering (n,) or K orderings (K, n) from Delta_u (Theorem 1, App. B.1)."""
        return self._one(order, self._batch.abc, mode=mode, normalize=normalize)

    def abc_total(self, order, *, normalize: bool = True):
        """ABC + ABC' of an ordering (Appendix B.1)."""
        return self._one(order, self._batch.abc_total, normalize=normalize)

    def expected_abc(self, *, mode: str = "insertion", normalize: bool = True) -> float:
        """Closed-form expected ABC / ABC' under a uniformly random ordering (§3.3)."""
        return float(self._batch.expected_abc(mode=mode, normalize=normalize)[0])

    def shapley(self) -> np.ndarray:
        """Exact baseline Shapley values (n,) from the Harsanyi dividends."""
        return self._batch.shapley()[0]

    def best_order(self, *, mode: str = "insertion") -> np.ndarray:
        """The ordering (n,) maximising ABC (insertion) or ABC' (deletion), O(n 2^n)."""
        return self._batch.best_order(mode=mode)[0]

    def best_abc(self, *, mode: str = "insertion", normalize: bool = True) -> float:
        """The best achievable ABC / ABC' of this pair."""
        return float(self._batch.best_abc(mode=mode, normalize=normalize)[0])

    def best_auc(self, *, mode: str = "insertion", normalize: bool = False) -> float:
        """The largest AUC (insertion) or smallest AUC' (deletion) of this pair."""
        return float(self._batch.best_auc(mode=mode, normalize=normalize)[0])

    def interactions(self, top: int = 10) -> list[Interaction]:
        """The ``top`` interaction terms Delta_u with |u| >= 2, largest |Delta_u| first.

        Only u ⊆ D can be nonzero, so only those are ranked.

        Returns
        -------
        list of Interaction
            ``features`` holds feature names when given, else indices; ``mask`` is the bitmask
            over all n features; ties by bitmask.
        """
        return self._batch.interactions(0, top)


# -- evaluation of the 2^|D| hybrids of many pairs ------------------------------------------------
def _prepare(f, X, R, batch_size, groups=None):
    """Model, checked pairs (and in the model's dtype), the grouping (None for singleton groups)
    and the group names (kept for singleton groups too)."""
    model = as_model(f, batch_size=batch_size)
    X, R = check_pairs(X, R)
    Xd = np.ascontiguousarray(X, dtype=model.dtype)
    Rd = np.ascontiguousarray(R, dtype=model.dtype)
    grp = check_groups(groups, X.shape[1])
    names = None if grp is None else list(grp.names)
    if grp is not None and grp.singleton:
        grp = None
    return model, X, R, Xd, Rd, grp, names


def batch_decomposition(f: ModelLike, X: ArrayLike, R: ArrayLike, *,
                        batch_size: int | None = None, progress: bool | None = None,
                        max_d: int = DEFAULT_MAX_D, dedup: bool = True,
                        feature_names: Sequence[str] | None = None,
                        groups=None) -> BatchDecomposition:
    """Anchored decompositions of B pairs, each in its differing subspace D_b = {j : x_j != r_j}.

    Evaluates ``g_b(u) = f(hybrid(x_b, r_b, u))`` for the 2^|D_b| subsets u of D_b (each distinct
    hybrid once) and takes the fast Möbius transform per pair (paper §3.3, Appendix B); every
    other Delta_u is 0. Cost: ``sum_b 2^|D_b|`` evaluations and 16 bytes per subset, whatever n is.

    Parameters
    ----------
    f : model
        Anything :func:`insdel.as_model` accepts.
    X : array_like (B, n)
        Targets x.
    R : array_like (B, n) or (n,)
        References r (the anchor).
    batch_size : int, optional
        Hybrid rows per model call; at most this many rows exist at once.
    progress : bool, optional
        Progress bar (default: only long runs on a terminal).
    max_d : int, default 20
        Refuse a pair with more than ``max_d`` differing features; the error names the pair, its
        |D| and the model evaluations and memory it would need.
    dedup : bool, default True
        Work in D_b. ``False`` takes D_b = all n features (2^n evaluations per pair, the full-space
        route; for checks).
    feature_names : sequence of str, optional
        Names of the units (the features, or the groups). Default: the groups' names, else a
        DataFrame X's column names.
    groups : optional
        A partition of the columns into m groups (:mod:`insdel.groups`): the decomposition of the
        *group game* ``g(u) = f(hybrid(x, r, columns of the groups in u))`` over the m groups
        (no Owen values: each group is one player). D_b is then the groups with a differing
        column, and every result (Shapley values, orderings, areas) is over the m groups.
        Singleton groups give today's results exactly.

    Returns
    -------
    BatchDecomposition

    Raises
    ------
    ValueError
        A pair with |D| > ``max_d``.
    """
    t0 = time.perf_counter()
    columns = feature_names_of(X)  # a DataFrame's column names (None otherwise)
    model, X, R, Xd, Rd, grp, gnames = _prepare(f, X, R, batch_size, groups)
    B = X.shape[0]
    n = X.shape[1] if grp is None else grp.m
    if feature_names is None:
        feature_names = gnames if gnames is not None else columns
    elif grp is not None and len(feature_names) != n:
        raise ValueError(f"feature_names has {len(feature_names)} names but groups= makes the "
                         f"units the m = {n} groups: give one name per group (or none: the "
                         "groups' names are used).")
    dedup = check_bool("dedup", dedup)
    dsz, Dflat, doff = _subspaces(X, R, dedup, grp)
    _check_d(dsz, n, max_d, probe=lambda: _seconds_per_row(model, Xd), groups=grp is not None)
    total = int(np.sum(np.left_shift(np.int64(1), dsz)))
    with progress_bar(total, "decomposition", unit="row", enable=progress,
                      auto=total > 4_000_000) as bar:
        vals, _, t_model = _evaluate(model, Xd, Rd, np.arange(B), dsz, Dflat, doff, bar, grp)
    delta = vals.copy()
    K.mobius_ragged(delta, _value_offsets(dsz), dsz)
    elapsed = time.perf_counter() - t0
    timings = {"model_s": t_model, "total_s": elapsed, "other_s": elapsed - t_model}
    return BatchDecomposition._from_parts(n, dsz, Dflat, doff, vals, delta,
                                          feature_names=feature_names, n_evals=total,
                                          timings=timings)


def anchored_decomposition(f: ModelLike, x: ArrayLike, r: ArrayLike, *,
                           feature_names: Sequence[str] | None = None,
                           batch_size: int | None = None, max_d: int = DEFAULT_MAX_D,
                           progress: bool | None = None, groups=None) -> AnchoredDecomposition:
    """The anchored decomposition of f for one pair (target x, reference/anchor r).

    Evaluates ``g(u) = f(hybrid(x, r, u))`` for the 2^|D| subsets u of D = {j : x_j != r_j} and
    takes the fast Möbius transform (paper §3.3, Appendix B); Delta_u = 0 for u ⊄ D.

    Parameters
    ----------
    f : model
        Anything :func:`insdel.as_model` accepts.
    x, r : array_like (n,)
        Target and reference.
    feature_names : sequence of str, optional
        Used by :meth:`AnchoredDecomposition.interactions`.
    batch_size : int, optional
        Rows per model call.
    max_d : int, default 20
        Refuse |D| above this (the error states the evaluations and memory needed).
    progress : bool, optional
    groups : optional
        Decompose the group game over m groups (see :func:`batch_decomposition`).

    Returns
    -------
    AnchoredDecomposition

    Examples
    --------
    >>> import numpy as np, insdel
    >>> f = lambda Z: Z[:, 0] * Z[:, 1] + Z[:, 2]
    >>> d = insdel.anchored_decomposition(f, np.ones(3), np.zeros(3))
    >>> d.shapley()
    array([0.5, 0.5, 1. ])
    """
    if getattr(x, "ndim", None) == 1 and hasattr(x, "index"):  # labelled: match r by name
        r = align_columns("r", r, None, like_name="x", labels=list(x.index))
    x = as_float_array("x", x, ndim=(1,))
    r = as_float_array("r", r, ndim=(1,))
    b = batch_decomposition(f, x[None, :], r[None, :], batch_size=batch_size,
                            progress=progress, max_d=max_d, feature_names=feature_names,
                            groups=groups)
    return AnchoredDecomposition._wrap(b)


def shapley_values(f: ModelLike, X: ArrayLike, R: ArrayLike, *,
                   batch_size: int | None = None, progress: bool | None = None,
                   max_d: int = DEFAULT_MAX_D, max_rows: int = 1 << 20,
                   client=None, groups=None) -> np.ndarray:
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

    Returns
    -------
    ndarray (B, n) or (B, m); rows sum to f(x_b) - f(r_b).
    """
    if client is None:
        return subspace_shapley(f, X, R, max_d=max_d, batch_size=batch_size, progress=progress,
                                max_rows=max_rows, groups=groups)[0]
    X, R = check_pairs(X, R)
    max_rows = check_positive_int("max_rows", max_rows)
    grp = check_groups(groups, X.shape[1])
    dsz = _subspaces(X, R, groups=grp)[0]
    if int(dsz.max(initial=0)) > int(max_d):  # the serial call names the pair and the cost
        return subspace_shapley(f, X, R, max_d=max_d, batch_size=batch_size, max_rows=max_rows,
                                groups=grp)[0]
    from .distributed import gather_chunks

    bounds = [(s, e, max_d, batch_size, max_rows) for s, e in _stream_chunks(dsz, max_rows)]
    parts = gather_chunks(client, _shapley_chunk, bounds,
                          shared={"f": f, "X": X, "R": R, "groups": grp},
                          describe=lambda k: f"exact Shapley of pairs {bounds[k][0]}.."
                          f"{bounds[k][1] - 1}", progress=progress, desc="exact Shapley",
                          name="insdel-shapley")
    return np.concatenate(parts, axis=0)


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


def _shapley_chunk(s: int, e: int, max_d: int, batch_size: int | None, max_rows: int, *,
                   f, X, R, groups=None) -> np.ndarray:
    """Exact Shapley values of pairs s..e - 1, one streamed chunk (on a Dask worker)."""
    return subspace_shapley(f, X[s:e], R[s:e], max_d=max_d, batch_size=batch_size,
                            max_rows=max_rows, groups=groups)[0]


def subspace_shapley(f: ModelLike, X: ArrayLike, R: ArrayLike, *, max_d: int = DEFAULT_MAX_D,
                     batch_size: int | None = None, progress: bool | None = None,
                     pairs: np.ndarray | None = None, max_rows: int = 1 << 20,
                     groups=None) -> tuple[np.ndarray, np.ndarray]:
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
    model, X, R, Xd, Rd, grp, _ = _prepare(f, X, R, batch_size, groups)
    max_rows = check_positive_int("max_rows", max_rows)
    B = X.shape[0]
    n = X.shape[1] if grp is None else grp.m
    dsz, Dflat, doff = _subspaces(X, R, groups=grp)
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
