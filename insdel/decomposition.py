"""Anchored decomposition of a pair (x, r): exact AUC/ABC algebra, Shapley values, best ordering.

Implements paper §3.2–3.4 and Appendix B (conventions: *Anchored decomposition*). For a pair
(x, r) let ``g(u) = f(hybrid(x, r, u))`` for all 2^n subsets u (index = bitmask, bit j = feature j
taken from the target x). The anchored decomposition with anchor r is the Möbius transform

    Delta_u = sum_{v ⊆ u} (-1)^{|u| - |v|} g(v),   Delta_∅ = f(r),   sum_u Delta_u = f(x),

(the Harsanyi dividends of the game g). Everything else follows from the Delta_u alone:

* Theorem 1: insertion ``AUC = sum_u (n - ceil(u) + 1) Delta_u``;
* Appendix B.1: deletion ``AUC' = sum_u floor(u) Delta_u``;
* §3.3 with Proposition 1: ``E[ABC] = (n + 1)/2 sum_{u≠∅} (1 - |u|)/(|u| + 1) Delta_u`` under a
  uniformly random ordering, and ``E[ABC + ABC'] = 0``;
* exact baseline Shapley values ``phi_j = sum_{u ∋ j} Delta_u / |u|`` (what exact Kernel SHAP with
  the single background point r computes; the paper's "exact KS", 2^16 evaluations per CERN pair);
* the best achievable ordering (insdel's addition): the chain through the subset lattice with the
  largest (insertion) or smallest (deletion) sum of g, by dynamic programming in O(n 2^n).

The 2^n hybrids of many pairs are built by :func:`insdel.hybrid.build_rows` from bitmask words and
evaluated through :func:`insdel.as_model` in large batches; features with ``x_j == r_j`` do not change
the point, so only the distinct (canonical) rows ``u ∩ {j : x_j != r_j}`` are evaluated and scattered.
The transforms, the Shapley accumulation and the best-path search are numba kernels
(:mod:`insdel._decomposition_kernels`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from . import _decomposition_kernels as K
from ._progress import progress_bar
from ._validation import (
    as_float_array,
    check_finite,
    check_mode,
    check_orders,
    check_pairs,
    check_positive_int,
)
from .adapter import ModelLike, as_model
from .hybrid import build_rows

__all__ = [
    "DEFAULT_MAX_N", "AnchoredDecomposition", "BatchDecomposition", "Interaction",
    "anchored_decomposition", "batch_decomposition", "shapley_values", "expected_last_position",
    "mobius", "zeta",
]

DEFAULT_MAX_N = 22
"""Largest n decomposed without ``max_n=`` being raised explicitly (2^22 = 4.2 M evaluations/pair)."""

_HARD_MAX_N = 40


def _fmt_bytes(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if nbytes < 1024 or unit == "PiB":
            return f"{nbytes:,.1f} {unit}" if unit != "B" else f"{int(nbytes)} B"
        nbytes /= 1024
    return f"{nbytes:.1f} PiB"  # pragma: no cover


def _check_size(n: int, B: int, max_n: int) -> None:
    """Refuse exact enumeration above ``max_n`` features, stating its cost."""
    max_n = check_positive_int("max_n", max_n)
    if n <= max_n and n <= _HARD_MAX_N:
        return
    N = 2 ** n
    mem = _fmt_bytes(16.0 * N * B)
    hint = (f"pass max_n={n} to force it" if n <= _HARD_MAX_N
            else f"n > {_HARD_MAX_N} is never enumerated")
    raise ValueError(
        f"exact anchored decomposition of n = {n} features needs 2**{n} = {N:,} model evaluations "
        f"per pair ({B * N:,} for {B} pair(s)) and {mem} for the values g(u) and Delta_u "
        f"(16 bytes per subset and pair); the limit is max_n = {max_n}. Group features, use a "
        f"sampling-based attribution, or {hint}."
    )


def _n_from_length(N: int, name: str) -> int:
    n = int(N).bit_length() - 1
    if N < 2 or (1 << n) != N:
        raise ValueError(f"{name} must have 2**n entries per pair (n >= 1); got {N}.")
    return n


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
    """Anchored decompositions of B pairs with the same n (all arrays vectorised over pairs).

    Attributes
    ----------
    n : int
    values : ndarray (B, 2^n)
        ``g_b(u) = f(hybrid(x_b, r_b, u))``, index = bitmask.
    delta : ndarray (B, 2^n)
        ``Delta_u`` (Möbius transform of ``values``).
    fx, fr : ndarray (B,)
        f(x) = g(full) and f(r) = g(∅).
    feature_names : list of str or None
    n_evals : int
        Model evaluations spent (distinct hybrid rows), 0 when built from arrays.
    timings : dict
        ``model_s`` (inside the model), ``other_s`` (rows, Möbius, bookkeeping), ``total_s``.
    """

    def __init__(self, values, delta=None, *, feature_names: Sequence[str] | None = None,
                 n_evals: int = 0, timings: dict | None = None):
        v = as_float_array("values", values, ndim=(2,))
        self.n = _n_from_length(v.shape[1], "values")
        self.values = np.ascontiguousarray(v)
        if delta is None:
            delta = self.values.copy()
            K.mobius_inplace(delta, self.n)
        self.delta = np.ascontiguousarray(delta, dtype=np.float64)
        if self.delta.shape != self.values.shape:
            raise ValueError(f"delta must have shape {self.values.shape}; got {self.delta.shape}.")
        if feature_names is not None:
            feature_names = [str(s) for s in feature_names]
            if len(feature_names) != self.n:
                raise ValueError(
                    f"feature_names has {len(feature_names)} names for n = {self.n} features.")
        self.feature_names = feature_names
        self.n_evals = int(n_evals)
        self.timings = dict(timings or {})
        self._best: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._sizes: np.ndarray | None = None

    # -- constructors ------------------------------------------------------------------------
    @classmethod
    def from_values(cls, values, **kw) -> BatchDecomposition:
        """From the 2^n values g(u) per pair, shape (B, 2^n)."""
        return cls(values, **kw)

    @classmethod
    def from_delta(cls, delta, **kw) -> BatchDecomposition:
        """From given Delta_u per pair (B, 2^n); g is rebuilt by the zeta transform."""
        d = np.ascontiguousarray(as_float_array("delta", delta, ndim=(2,)), dtype=np.float64)
        n = _n_from_length(d.shape[1], "delta")
        g = d.copy()
        K.zeta_inplace(g, n)
        return cls(g, d.copy(), **kw)

    # -- basics ------------------------------------------------------------------------------
    @property
    def B(self) -> int:
        return self.values.shape[0]

    @property
    def fx(self) -> np.ndarray:
        return self.values[:, -1].copy()

    @property
    def fr(self) -> np.ndarray:
        return self.values[:, 0].copy()

    @property
    def sizes(self) -> np.ndarray:
        """|u| for every bitmask u (int8, length 2^n)."""
        if self._sizes is None:
            self._sizes = K.popcounts(self.n)
        return self._sizes

    def __len__(self) -> int:
        return self.B

    def __getitem__(self, i: int) -> AnchoredDecomposition:
        i = int(i)
        if not -self.B <= i < self.B:
            raise IndexError(f"pair index {i} out of range for B = {self.B} pairs.")
        return AnchoredDecomposition(self.values[i], self.delta[i],
                                     feature_names=self.feature_names)

    def __repr__(self) -> str:
        return f"BatchDecomposition(B={self.B}, n={self.n})"

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
        shape = o.shape[:2]
        outs = tuple(np.empty(shape) for _ in range(4))
        K.theorem1_areas(self.delta, o, self.n, *outs)
        return outs, squeeze

    def auc(self, orders, *, mode: str = "insertion", normalize: bool = False) -> np.ndarray:
        """AUC (insertion, Theorem 1) or AUC' (deletion, Appendix B.1) of each ordering.

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
        (ai, ad, _, _), squeeze = self._areas(orders)
        a = ai if mode == "insertion" else ad
        if normalize:
            a = a / self.n
        return a[:, 0] if squeeze else a

    def abc(self, orders, *, mode: str = "insertion", normalize: bool = True) -> np.ndarray:
        """ABC (insertion) or ABC' (deletion) from Delta_u (Theorem 1, Appendix B.1).

        ``ABC = sum_{u≠∅} ((n + 1)/2 - ceil(u)) Delta_u``,
        ``ABC' = sum_{u≠∅} ((n + 1)/2 - floor(u)) Delta_u``; divided by n when ``normalize``
        (the paper's tables). Shapes as in :meth:`auc`.
        """
        check_mode(mode)
        (_, _, bi, bd), squeeze = self._areas(orders)
        a = bi if mode == "insertion" else bd
        if normalize:
            a = a / self.n
        return a[:, 0] if squeeze else a

    def abc_total(self, orders, *, normalize: bool = True) -> np.ndarray:
        """ABC + ABC' of each ordering, ``sum_{u≠∅} (n - ceil(u) - floor(u) + 1) Delta_u`` (App. B.1)."""
        (_, _, bi, bd), squeeze = self._areas(orders)
        a = bi + bd
        if normalize:
            a = a / self.n
        return a[:, 0] if squeeze else a

    # -- expectations under a random ordering (§3.3) ----------------------------------------
    def expected_abc(self, *, mode: str = "insertion", normalize: bool = True) -> np.ndarray:
        """Expected ABC (or ABC') under a uniformly random ordering, closed form (§3.3, App. B.1).

        Insertion: ``E[ABC] = sum_{u≠∅} ((n + 1)/2 - E ceil(u)) Delta_u
        = (n + 1)/2 sum_{u≠∅} (1 - |u|)/(|u| + 1) Delta_u`` with Proposition 1; deletion:
        ``E[ABC'] = sum_{u≠∅} ((n + 1)/2 - E floor(u)) Delta_u`` with ``E floor(u) = n + 1 - E ceil(u)``,
        so that ``E[ABC + ABC'] = 0``.

        Returns
        -------
        ndarray (B,)
        """
        check_mode(mode)
        n = self.n
        s = np.arange(n + 1)
        e_ceil = expected_last_position(s, n)
        half = (n + 1) / 2.0
        w_size = half - e_ceil if mode == "insertion" else half - (n + 1 - e_ceil)
        w_size[0] = 0.0
        w = w_size[self.sizes]
        out = self.delta @ w
        return out / n if normalize else out

    # -- Shapley values from the Harsanyi dividends -----------------------------------------
    def shapley(self) -> np.ndarray:
        """Exact baseline Shapley values with reference r: ``phi_j = sum_{u ∋ j} Delta_u / |u|``.

        Returns
        -------
        ndarray (B, n); each row sums to f(x) - f(r).
        """
        out = np.empty((self.B, self.n))
        K.shapley_from_delta(self.delta, self.n, out)
        return out

    # -- best achievable ordering -----------------------------------------------------------
    def _best_path(self, mode: str) -> tuple[np.ndarray, np.ndarray]:
        check_mode(mode)
        if mode not in self._best:
            best = np.empty(self.B)
            chain = np.empty((self.B, self.n), dtype=np.int64)
            K.best_paths(self.values, self.n, 1.0 if mode == "insertion" else -1.0, best, chain)
            order = chain[:, ::-1].copy() if mode == "insertion" else chain
            self._best[mode] = (best, order)
        return self._best[mode]

    def best_order(self, *, mode: str = "insertion") -> np.ndarray:
        """Ordering with the largest ABC (insertion) or ABC' (deletion), per pair.

        Dynamic programming over subsets, ``best(S) = g(S) + max_{j∈S} best(S \\ {j})`` (deletion:
        min), O(n 2^n) per pair. Ties are broken towards the smallest feature index at each step
        read from the full set down (deterministic).

        Returns
        -------
        ndarray of int64 (B, n)
        """
        return self._best_path(mode)[1].copy()

    def best_auc(self, *, mode: str = "insertion", normalize: bool = False) -> np.ndarray:
        """Largest AUC (insertion) or smallest AUC' (deletion) over all n! orderings, (B,)."""
        a = self._best_path(mode)[0]
        return a / self.n if normalize else a.copy()

    def best_abc(self, *, mode: str = "insertion", normalize: bool = True) -> np.ndarray:
        """Best achievable ABC (insertion) or ABC' (deletion) over all n! orderings, (B,)."""
        best = self._best_path(mode)[0]
        aul = (self.n + 1) / 2.0 * (self.values[:, 0] + self.values[:, -1])
        out = best - aul if mode == "insertion" else aul - best
        return out / self.n if normalize else out


class AnchoredDecomposition:
    """The anchored decomposition of one pair (x, r) (paper §3.3, Appendix B).

    Attributes
    ----------
    n : int
    values : ndarray (2^n,)
        ``g(u) = f(hybrid(x, r, u))``, index = bitmask (bit j = feature j from x).
    delta : ndarray (2^n,)
        ``Delta_u``; ``delta[0] = f(r)``, ``delta.sum() = f(x)``.
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
    values = property(lambda self: self._batch.values[0])
    delta = property(lambda self: self._batch.delta[0])
    feature_names = property(lambda self: self._batch.feature_names)
    n_evals = property(lambda self: self._batch.n_evals)
    timings = property(lambda self: self._batch.timings)
    fx = property(lambda self: float(self._batch.values[0, -1]))
    fr = property(lambda self: float(self._batch.values[0, 0]))

    def __repr__(self) -> str:
        return f"AnchoredDecomposition(n={self.n}, f(x)={self.fx:.6g}, f(r)={self.fr:.6g})"

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

        Returns
        -------
        list of Interaction
            ``features`` holds feature names when given, else indices; ties by bitmask.
        """
        top = check_positive_int("top", top)
        sizes = self._batch.sizes
        cand = np.flatnonzero(sizes >= 2)
        if cand.size == 0:
            return []
        d = self.delta[cand]
        sel = cand[np.argsort(-np.abs(d), kind="stable")[:top]]
        names = self.feature_names
        out = []
        for u in sel:
            feats = tuple(j for j in range(self.n) if (int(u) >> j) & 1)
            if names is not None:
                feats = tuple(names[j] for j in feats)
            out.append(Interaction(feats, int(u), int(sizes[u]), float(self.delta[u])))
        return out


# -- evaluation of the 2^n hybrids of many pairs ---------------------------------------------------
def _value_chunks(model, X: np.ndarray, R: np.ndarray, n: int, dedup: bool, progress,
                  timings: dict):
    """Yield ``(b0, b1, values)`` with values (b1 - b0, 2^n) float64 for consecutive pair chunks.

    Only canonical rows ``u ∩ D_b`` are evaluated (``dedup``); at most ``batch_size`` hybrid rows
    exist at once, and a chunk holds at most ``4 max(batch_size, 2^n)`` values.
    """
    B = X.shape[0]
    N = 1 << n
    bs = model.batch_size
    Xd = np.ascontiguousarray(X, dtype=model.dtype)
    Rd = np.ascontiguousarray(R, dtype=model.dtype)
    bits = np.int64(1) << np.arange(n, dtype=np.int64)
    if dedup:
        diff = X != R
        dmask = (diff * bits).sum(axis=1).astype(np.int64)
        counts = np.int64(1) << diff.sum(axis=1).astype(np.int64)
    else:
        dmask = np.full(B, N - 1, dtype=np.int64)
        counts = np.full(B, N, dtype=np.int64)
    first = np.cumsum(counts) - counts
    cid_rows = first // bs
    cid_vals = (np.arange(B, dtype=np.int64) * N) // (4 * max(bs, N))
    cut = np.flatnonzero((np.diff(cid_rows) != 0) | (np.diff(cid_vals) != 0)) + 1
    starts = np.concatenate([[0], cut]).astype(np.int64)
    ends = np.concatenate([cut, [B]]).astype(np.int64)
    t_model = 0.0
    n_evals = 0
    with progress_bar(total=B, desc="decomposition", unit="pair", enable=progress,
                      auto=B * N > 4_000_000) as bar:
        for b0, b1 in zip(starts.tolist(), ends.tolist(), strict=True):
            offsets = np.zeros(b1 - b0 + 1, dtype=np.int64)
            np.cumsum(counts[b0:b1], out=offsets[1:])
            U = int(offsets[-1])
            cvals = np.empty(U)
            m = min(bs, U)
            rows = np.empty((m, n), dtype=model.dtype)
            pair_idx = np.empty(m, dtype=np.int64)
            words = np.empty((m, 1), dtype=np.uint64)
            for s0 in range(0, U, bs):
                s1 = min(s0 + bs, U)
                k = s1 - s0
                K.canonical_words(dmask[b0:b1], offsets, b0, s0, s1, pair_idx[:k], words[:k])
                buf = build_rows(Xd, Rd, pair_idx[:k], words[:k], out=rows[:k])
                t0 = time.perf_counter()
                cvals[s0:s1] = model(buf)
                t_model += time.perf_counter() - t0
            n_evals += U
            vals = np.empty((b1 - b0, N))
            K.scatter_canonical(cvals, offsets, dmask[b0:b1], n, vals)
            yield b0, b1, vals
            bar.update(b1 - b0)
    timings["model_s"] = t_model
    timings["n_evals"] = n_evals


def _prepare(f, X, R, batch_size, max_n):
    model = as_model(f, batch_size=batch_size)
    X, R = check_pairs(X, R)
    B, n = X.shape
    _check_size(n, B, max_n)
    return model, X, R, B, n


def batch_decomposition(f: ModelLike, X: ArrayLike, R: ArrayLike, *,
                        batch_size: int | None = None, progress: bool | None = None,
                        max_n: int = DEFAULT_MAX_N, dedup: bool = True,
                        feature_names: Sequence[str] | None = None) -> BatchDecomposition:
    """Anchored decompositions of B pairs: all 2^n values g(u) and Delta_u per pair.

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
    max_n : int
        Refuse n above this (the error states the evaluations and memory needed).
    dedup : bool, default True
        Evaluate only the distinct rows ``u ∩ {j : x_j != r_j}`` and scatter them.
    feature_names : sequence of str, optional

    Returns
    -------
    BatchDecomposition
        ``values`` and ``delta`` (B, 2^n) take 16 B 2^n bytes; for Shapley values of many pairs use
        :func:`shapley_values`, which streams.
    """
    t0 = time.perf_counter()
    model, X, R, B, n = _prepare(f, X, R, batch_size, max_n)
    N = 1 << n
    values = np.empty((B, N))
    delta = np.empty((B, N))
    timings: dict = {}
    for b0, b1, vals in _value_chunks(model, X, R, n, dedup, progress, timings):
        values[b0:b1] = vals
        K.mobius_inplace(vals, n)
        delta[b0:b1] = vals
    total = time.perf_counter() - t0
    n_evals = timings.pop("n_evals")
    timings.update(total_s=total, other_s=total - timings["model_s"])
    return BatchDecomposition(values, delta, feature_names=feature_names, n_evals=n_evals,
                              timings=timings)


def anchored_decomposition(f: ModelLike, x: ArrayLike, r: ArrayLike, *,
                           feature_names: Sequence[str] | None = None,
                           batch_size: int | None = None, max_n: int = DEFAULT_MAX_N,
                           progress: bool | None = None) -> AnchoredDecomposition:
    """The anchored decomposition of f for one pair (target x, reference/anchor r).

    Evaluates ``g(u) = f(hybrid(x, r, u))`` for all 2^n subsets (only distinct rows) and takes the
    fast Möbius transform (paper §3.3, Appendix B).

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
    max_n : int
        Refuse n above this.
    progress : bool, optional

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
    x = as_float_array("x", x, ndim=(1,))
    r = as_float_array("r", r, ndim=(1,))
    b = batch_decomposition(f, x[None, :], r[None, :],
                            batch_size=batch_size, progress=progress, max_n=max_n,
                            feature_names=feature_names)
    return AnchoredDecomposition(b.values[0], b.delta[0], feature_names=feature_names,
                                 n_evals=b.n_evals, timings=b.timings)


def shapley_values(f: ModelLike, X: ArrayLike, R: ArrayLike, *,
                   batch_size: int | None = None, progress: bool | None = None,
                   max_n: int = DEFAULT_MAX_N) -> np.ndarray:
    """Exact baseline Shapley values of B pairs, ``phi_j = sum_{u ∋ j} Delta_u / |u|``.

    The same numbers as exact Kernel SHAP with the single background point r (2^n evaluations per
    pair, fewer when some ``x_j == r_j``). Pairs are streamed in chunks: memory stays at about
    ``batch_size`` hybrid rows plus a few 2^n-value blocks, whatever B is.

    Parameters
    ----------
    f : model
    X : array_like (B, n)
    R : array_like (B, n) or (n,)
    batch_size : int, optional
    progress : bool, optional
    max_n : int

    Returns
    -------
    ndarray (B, n); rows sum to f(x_b) - f(r_b).
    """
    model, X, R, B, n = _prepare(f, X, R, batch_size, max_n)
    out = np.empty((B, n))
    timings: dict = {}
    for b0, b1, vals in _value_chunks(model, X, R, n, True, progress, timings):
        K.mobius_inplace(vals, n)
        K.shapley_from_delta(vals, n, out[b0:b1])
    check_finite("shapley values", out)
    return out


def _fmt_rows(rows: float) -> str:
    return f"{rows:,.0f} model evaluations"


def subspace_shapley(f: ModelLike, X: ArrayLike, R: ArrayLike, *, max_d: int = 20,
                     batch_size: int | None = None, progress: bool | None = None,
                     pairs: np.ndarray | None = None, max_rows: int = 1 << 20
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Exact baseline Shapley values computed in each pair's differing subspace.

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
        Hybrid rows built at once (memory bound).

    Returns
    -------
    phi : ndarray (B, n)
        Exact Shapley values; ``phi.sum(1) == f(X) - f(R)`` up to rounding.
    d : ndarray of int (B,)
        |D| per pair.

    Raises
    ------
    ValueError
        A pair with |D| > ``max_d``; the message names the pair, its |D| and the cost.
    """
    from .hybrid import masks_to_words

    model = as_model(f, batch_size=batch_size)
    X, R = check_pairs(X, R)
    max_d = check_positive_int("max_d", max_d, minimum=0)
    B, n = X.shape
    diff = X != R
    d = diff.sum(axis=1).astype(np.int64)
    todo = np.arange(B) if pairs is None else np.asarray(pairs, dtype=np.int64)
    phi = np.full((B, n), np.nan)
    phi[todo] = 0.0
    big = todo[d[todo] > max_d]
    if big.size:
        b = int(big[np.argmax(d[big])])
        rows = float(2.0 ** d[b])
        raise ValueError(
            f"pair {b} differs in |D| = {int(d[b])} features (> max_d = {max_d}): its exact "
            f"Shapley values need 2^{int(d[b])} = {_fmt_rows(rows)} and about "
            f"{_fmt_bytes(rows * n * model.dtype.itemsize)} of hybrid rows; {big.size} pair(s) "
            f"exceed max_d. Raise max_d, or use a sampled method.")
    Xd = np.ascontiguousarray(X, dtype=model.dtype)
    Rd = np.ascontiguousarray(R, dtype=model.dtype)
    total = int(np.sum(np.left_shift(np.int64(1), d[todo])))
    with progress_bar(total, "exact Shapley (subspace)", "row", enable=progress,
                      auto=total > 1 << 22) as bar:
        for dd in np.unique(d[todo]):
            dd = int(dd)
            grp = todo[d[todo] == dd]
            if dd == 0:
                continue
            N = 1 << dd
            ubits = ((np.arange(N)[:, None] >> np.arange(dd)[None, :]) & 1).astype(bool)
            Dg = np.stack([np.flatnonzero(diff[b]) for b in grp])  # (G, dd), increasing
            step = max(1, max_rows // N)
            for s in range(0, grp.size, step):
                g = grp[s:s + step]
                Dc = Dg[s:s + step]
                G = g.size
                masks = np.zeros((G, N, n), bool)
                ar = np.arange(G)
                for i in range(dd):
                    masks[ar, :, Dc[:, i]] = ubits[None, :, i]
                words = masks_to_words(masks.reshape(G * N, n))
                vals = model(build_rows(Xd, Rd, np.repeat(g, N), words)).reshape(G, N)
                K.mobius_inplace(vals, dd)
                out = np.empty((G, dd))
                K.shapley_from_delta(vals, dd, out)
                phi[g[:, None], Dc] = out
                bar.update(G * N)
    return phi, d
