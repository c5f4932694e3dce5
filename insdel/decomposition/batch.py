"""The anchored decomposition of many pairs and of one (Theorem 1, Appendix B.1, §3.3): AUC and ABC
of any ordering, the expected ABC of a random ordering, exact Shapley values, the best ordering."""

from __future__ import annotations

import inspect
import time
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .. import _decomposition_kernels as K
from .._progress import progress_bar
from .._validation import (
    align_columns,
    as_float_array,
    check_bool,
    check_index,
    check_mode,
    check_orders,
    check_positive_int,
    feature_names_of,
    repeated,
)
from ..adapter import ModelLike
from ..game import Game, as_game, one_output
from ._subspace import (
    DEFAULT_MAX_D,
    FULL_LAYOUT_MAX_N,
    _n_from_length,
    _subset_values,
    _value_offsets,
)
from .algebra import Interaction, expected_last_position


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
        normalize = check_bool(normalize, "normalize")
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
        normalize = check_bool(normalize, "normalize")
        (_, _, bi, bd), squeeze = self._areas(orders)
        a = bi if mode == "insertion" else bd
        if normalize:
            a = a / self.n
        return a[:, 0] if squeeze else a

    def abc_total(self, orders, *, normalize: bool = True) -> np.ndarray:
        """ABC + ABC' of each ordering, ``sum_{u≠∅} (n - ceil(u) - floor(u) + 1) Delta_u`` (App. B.1)."""
        normalize = check_bool(normalize, "normalize")
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
        normalize = check_bool(normalize, "normalize")
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
        normalize = check_bool(normalize, "normalize")
        a = self._best_path(mode)[0]
        return a / self.n if normalize else a.copy()

    def best_abc(self, *, mode: str = "insertion", normalize: bool = True) -> np.ndarray:
        """Best achievable ABC (insertion) or ABC' (deletion) over all n! orderings, (B,)."""
        normalize = check_bool(normalize, "normalize")
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
        top = check_positive_int(top, "top")
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


def batch_decomposition(f: ModelLike, X: ArrayLike, R: ArrayLike, *,
                        batch_size: int | None = None, progress: bool | None = None,
                        max_d: int = DEFAULT_MAX_D, dedup: bool = True,
                        feature_names: Sequence[str] | None = None,
                        groups=None, removal=None, engine: str = "auto") -> BatchDecomposition:
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
    removal : str or insdel.removal.Removal, optional
        Decompose the pair's value function under this removal (:mod:`insdel.removal`;
        conventions: *Removal*) instead of ``g(u) = f(hybrid(x, r, u))``. ``marginal``: D_b is
        the union of the K references' differing units; a sampled removal (``conditional_*``):
        every unit is removable, so D_b is all n units and ``max_d`` applies to n.
    engine : {"auto", "tree", "black_box"}, default "auto"
        Which engine answers (:func:`insdel.game.as_game`): a recognised tree ensemble's exact
        closed forms (``auto``, ``tree``) or the model's values on rows (``black_box``).

    Returns
    -------
    BatchDecomposition

    Raises
    ------
    ValueError
        A pair with |D| > ``max_d``.
    """
    t0 = time.perf_counter()
    columns = feature_names_of(X) if X is not None else None  # a DataFrame's column names
    game = one_output(as_game(f, X, R, removal=removal, groups=groups, batch_size=batch_size,
                              engine=engine), "batch_decomposition")
    dedup = check_bool(dedup, "dedup")
    n = game.m
    if feature_names is None:
        feature_names = game.unit_names if game.unit_names is not None else columns
    elif game.groups is not None and len(feature_names) != n:
        raise ValueError(f"feature_names has {len(feature_names)} names but groups= makes the "
                         f"units the m = {n} groups: give one name per group (or none: the "
                         "groups' names are used).")
    return _decompose(game, max_d=max_d, dedup=dedup, feature_names=feature_names,
                      progress=progress, t0=t0)


def _decompose(game: Game, *, max_d, dedup: bool = True, feature_names=None, progress=None,
               t0: float | None = None) -> BatchDecomposition:
    """The decomposition of a checked game: its closed-form effects, or the Möbius transform of
    its values on every subset of each D_b (:func:`insdel.decomposition._subspace._subset_values`).
    """
    t0 = time.perf_counter() if t0 is None else t0
    if game.knows("effects"):
        # a game may take the caller's limit on |D| (a game of its own may not: its default)
        takes = "max_d" in inspect.signature(game.effects).parameters
        dsz, Dflat, doff, delta = game.effects(**({"max_d": max_d} if takes else {}))
        vals = np.array(delta, dtype=np.float64)
        K.zeta_ragged(vals, _value_offsets(dsz), dsz)
        t_model, evals = 0.0, 0
    else:
        label = "decomposition" if game.name == "baseline" else f"decomposition ({game.name})"

        def bar(total):
            return progress_bar(total, label, unit="row", enable=progress,
                                auto=total > 4_000_000)

        dsz, Dflat, doff, vals, t_model, evals = _subset_values(game, max_d, bar, dedup=dedup)
        delta = vals.copy()
        K.mobius_ragged(delta, _value_offsets(dsz), dsz)
    elapsed = time.perf_counter() - t0
    timings = {"model_s": t_model, "total_s": elapsed, "other_s": elapsed - t_model}
    return BatchDecomposition._from_parts(game.m, dsz, Dflat, doff, vals, delta,
                                          feature_names=feature_names, n_evals=evals,
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
