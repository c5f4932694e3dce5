"""Gaussian conditional removals: ``conditional_gaussian`` (draws) and ``conditional_mean``.

Both fit a mean ``mu`` and covariance ``S`` (``np.cov``, ddof = 1) on training rows and, for a
coalition u (the kept features K, the removed R), use the Gaussian conditional of ``Z_R`` given
``Z_K = x_K``: mean ``mu_R + S_RK S_KK^-1 (x_K - mu_K)``, covariance
``S_RR - S_RK S_KK^-1 S_KR`` (conventions: *Removal*).

The per-coalition linear algebra (a Cholesky factor of ``S_KK``, the regression matrix
``B = S_RK S_KK^-1`` and the M rows) runs in one numba kernel over all requested coalitions
(``prange`` over blocks of coalitions); Python runs once per call and once per new target.
:func:`solved_conditional_rows` gives the same rows (to rounding) for large n, as
``stationary_gaussian`` reads them: one Cholesky factor of the smaller block (``S_KK``, or the
precision's ``P_RR``) per distinct kept set and a solve per row, no regression matrix.
"""

from __future__ import annotations

import warnings
from typing import Any

import numba as nb
import numpy as np

from .._checkpoint import sha256_arrays
from .._threads import numba_threads
from .._validation import check_scalar
from ._sampling import DrawCache, check_request, is_one_hot, one_hot_groups
from .base import SampledRemoval, check_background, check_draws, check_max_rows, target_rng

__all__ = ["ConditionalGaussian", "ConditionalMean", "conditional_rows", "joint_draws",
           "solved_conditional_rows"]

#: The covariance is regularised when its smallest eigenvalue is at most this times its largest.
SINGULAR_RTOL = 1e-10
#: The default ridge, as a fraction of the mean variance (``mean(diag(S))``).
RIDGE_FRACTION = 1e-6
#: Fewer coalitions than this per call run in one serial block (no thread start-up).
_SERIAL_BELOW = 256
#: :func:`solved_conditional_rows` runs serially below this many (kept sets x n^2).
_SERIAL_WORK = 1 << 22


# --------------------------------------------------------------------------------- the kernel


@nb.njit(cache=True, nogil=True)
def _gauss_block(lo, hi, X, keep, tix, Z, S, lev_lo, lev_hi, rounded, oh_start, oh_cols,
                 out):  # pragma: no cover - numba
    """Rows of coalitions ``lo .. hi - 1``: ``out[i, m]`` is x on the kept columns K and
    ``z_R + B (x_K - z_K)`` on the removed R, with ``z = Z[tix[i], m]`` (Matheron's rule; ``z =
    mu`` gives the conditional mean) and ``B = S_RK S_KK^-1`` from a Cholesky factor of ``S_KK``.

    Then a removed column with ``rounded[j]`` goes to the nearer of ``lev_lo[j]``,
    ``lev_hi[j]``, and each one-hot group ``oh_cols[oh_start[g]:oh_start[g + 1]]`` is set to one
    hot column (``lev_hi``) and the rest ``lev_lo``: a kept hot member keeps every removed member
    cold, else the removed member with the largest drawn (level-scaled) value is hot."""
    n = X.shape[1]
    M = Z.shape[1]
    kidx = np.empty(n, dtype=np.int64)
    ridx = np.empty(n, dtype=np.int64)
    L = np.empty((n, n))
    Bm = np.empty((n, n))
    y = np.empty(n)
    d = np.empty(n)
    n_groups = oh_start.shape[0] - 1
    for i in range(lo, hi):
        x = X[i]
        z = Z[tix[i]]
        o = out[i]
        k = 0
        r = 0
        for j in range(n):
            if keep[i, j]:
                kidx[k] = j
                k += 1
            else:
                ridx[r] = j
                r += 1
        if r == 0:
            for m in range(M):
                for j in range(n):
                    o[m, j] = x[j]
            continue
        if k > 0:
            # Cholesky factor of S_KK (lower), row by row
            for a in range(k):
                ka = kidx[a]
                for b in range(a + 1):
                    kb = kidx[b]
                    s = S[ka, kb]
                    for c in range(b):
                        s -= L[a, c] * L[b, c]
                    if a == b:
                        L[a, a] = np.sqrt(s) if s > 0.0 else 1e-150
                    else:
                        L[a, b] = s / L[b, b]
            # B[a_r, :] = S_KK^-1 S_K,r for each removed column r (two triangular solves)
            for a in range(r):
                rc = ridx[a]
                for b in range(k):
                    s = S[kidx[b], rc]
                    for c in range(b):
                        s -= L[b, c] * y[c]
                    y[b] = s / L[b, b]
                for b in range(k - 1, -1, -1):
                    s = y[b]
                    for c in range(b + 1, k):
                        s -= L[c, b] * Bm[a, c]
                    Bm[a, b] = s / L[b, b]
        for m in range(M):
            zm = z[m]
            om = o[m]
            for b in range(k):
                kb = kidx[b]
                d[b] = x[kb] - zm[kb]
                om[kb] = x[kb]
            for a in range(r):
                rc = ridx[a]
                s = zm[rc]
                for b in range(k):
                    s += Bm[a, b] * d[b]
                if rounded[rc]:
                    s = lev_hi[rc] if 2.0 * s >= lev_lo[rc] + lev_hi[rc] else lev_lo[rc]
                om[rc] = s
            for g in range(n_groups):
                g0 = oh_start[g]
                g1 = oh_start[g + 1]
                hot_kept = False
                any_removed = False
                for c in range(g0, g1):
                    col = oh_cols[c]
                    if keep[i, col]:
                        if x[col] == lev_hi[col]:
                            hot_kept = True
                    else:
                        any_removed = True
                if not any_removed:
                    continue
                best = -1
                best_v = 0.0
                for c in range(g0, g1):
                    col = oh_cols[c]
                    if not keep[i, col]:
                        span = lev_hi[col] - lev_lo[col]
                        v = (om[col] - lev_lo[col]) / span if span > 0.0 else 0.0
                        if best < 0 or v > best_v:
                            best = col
                            best_v = v
                        om[col] = lev_lo[col]
                if not hot_kept:
                    om[best] = lev_hi[best]


@nb.njit(parallel=True, cache=True, nogil=True)
def _gauss_par(nblk, X, keep, tix, Z, S, lev_lo, lev_hi, rounded, oh_start, oh_cols,
               out):  # pragma: no cover - numba
    N = X.shape[0]
    for b in nb.prange(nblk):
        _gauss_block(b * N // nblk, (b + 1) * N // nblk, X, keep, tix, Z, S, lev_lo, lev_hi,
                     rounded, oh_start, oh_cols, out)


def _gauss_rows(X, keep, tix, Z, S, lev_lo, lev_hi, rounded, oh_start, oh_cols) -> np.ndarray:
    N, n = X.shape
    out = np.empty((N, Z.shape[1], n))
    if N < _SERIAL_BELOW:
        _gauss_block(0, N, X, keep, tix, Z, S, lev_lo, lev_hi, rounded, oh_start, oh_cols, out)
    else:
        nblk = min(N // 64, 8 * numba_threads())
        _gauss_par(nblk, X, keep, tix, Z, S, lev_lo, lev_hi, rounded, oh_start, oh_cols, out)
    return out


def conditional_rows(X: np.ndarray, keep: np.ndarray, tix: np.ndarray, Z: np.ndarray,
                     S: np.ndarray) -> np.ndarray:
    """The plain Gaussian conditional rows (no rounding, no one-hot group): ``out[i, m]`` is
    ``X[i]`` on the kept columns and ``z_R + S_RK S_KK^-1 (x_K - z_K)`` on the removed ones,
    ``z = Z[tix[i], m]`` (``z = mu``: the conditional mean; ``z`` a joint draw: a conditional
    draw, Matheron's rule). ``S`` must be positive definite. Shape (N, M, n)."""
    n = X.shape[1]
    lev = np.zeros(n)
    return _gauss_rows(X, keep, tix, Z, S, lev, lev, np.zeros(n, dtype=np.bool_),
                       np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64))


@nb.njit(cache=True, nogil=True)
def _cholesky_rows(S, idx, L):  # pragma: no cover - numba
    """The lower Cholesky factor of ``S[idx][:, idx]`` into L, row by row: ``L[a, b]`` from the
    dot product of rows a and b of L so far (contiguous), in four partial sums (the adds of one
    sum do not wait on each other). Plain loops, not LAPACK: the same bytes on every machine and
    no BLAS thread pool inside numba's threads."""
    k = idx.shape[0]
    for a in range(k):
        La = L[a]
        for b in range(a + 1):
            Lb = L[b]
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            c = 0
            while c + 4 <= b:
                s0 += La[c] * Lb[c]
                s1 += La[c + 1] * Lb[c + 1]
                s2 += La[c + 2] * Lb[c + 2]
                s3 += La[c + 3] * Lb[c + 3]
                c += 4
            while c < b:
                s0 += La[c] * Lb[c]
                c += 1
            t = S[idx[a], idx[b]] - ((s0 + s1) + (s2 + s3))
            if a == b:
                La[a] = np.sqrt(t) if t > 0.0 else 1e-150
            else:
                La[b] = t / Lb[b]


@nb.njit(cache=True, nogil=True)
def _cho_solve(L, y):  # pragma: no cover - numba
    """y <- (L L^T)^-1 y in place: L y' = y forward, then L^T y = y' column by column (L read by
    rows)."""
    k = y.shape[0]
    for b in range(k):
        t = y[b]
        for c in range(b):
            t -= L[b, c] * y[c]
        y[b] = t / L[b, b]
    for b in range(k - 1, -1, -1):
        y[b] /= L[b, b]
        for c in range(b):
            y[c] -= L[b, c] * y[b]


@nb.njit(cache=True, nogil=True)
def _solved_set(s, set_start, set_rows, X, keep, tix, Z, S, P, out):  # pragma: no cover - numba
    """The rows of one kept set ``keep[s]`` (rows ``set_rows[set_start[s]:set_start[s + 1]]``),
    with d = x_K - z_K per row and draw. Kept side (k <= r, or no precision P given): one
    Cholesky factor of ``S_KK`` for all the rows, ``z_R + S_RK S_KK^-1 d``. Removed side (r < k
    and ``P = S^-1`` given): one factor of ``P_RR``, ``z_R - P_RR^-1 P_RK d`` (the same
    conditional mean, from the precision's block; a factor of the smaller block)."""
    n = X.shape[1]
    M = Z.shape[1]
    kidx = np.flatnonzero(keep[s])
    ridx = np.flatnonzero(~keep[s])
    k = kidx.shape[0]
    r = ridx.shape[0]
    r0 = set_start[s]
    r1 = set_start[s + 1]
    if r == 0 or k == 0:  # nothing removed: x; nothing kept: the joint draws (the mean)
        for q in range(r0, r1):
            i = set_rows[q]
            for m in range(M):
                for j in range(n):
                    out[i, m, j] = X[i, j] if r == 0 else Z[tix[i], m, j]
        return
    removed_side = P.shape[0] > 0 and r < k
    f = r if removed_side else k  # the factored block's size
    G = P if removed_side else S
    fidx = ridx if removed_side else kidx
    L = np.zeros((f, f))
    _cholesky_rows(G, fidx, L)
    cross = np.empty((r, k))  # P_RK or S_RK
    for a in range(r):
        for b in range(k):
            cross[a, b] = G[ridx[a], kidx[b]]
    d = np.empty(k)
    y = np.empty(f)
    for q in range(r0, r1):
        i = set_rows[q]
        x = X[i]
        for m in range(M):
            zm = Z[tix[i], m]
            om = out[i, m]
            for b in range(k):
                d[b] = x[kidx[b]] - zm[kidx[b]]
                om[kidx[b]] = x[kidx[b]]
            if removed_side:
                for a in range(r):
                    t = 0.0
                    for b in range(k):
                        t += cross[a, b] * d[b]
                    y[a] = t
                _cho_solve(L, y)
                for a in range(r):
                    om[ridx[a]] = zm[ridx[a]] - y[a]
            else:
                for b in range(k):
                    y[b] = d[b]
                _cho_solve(L, y)
                for a in range(r):
                    t = zm[ridx[a]]
                    for b in range(k):
                        t += cross[a, b] * y[b]
                    om[ridx[a]] = t


@nb.njit(parallel=True, cache=True, nogil=True)
def _solved_par(nblk, set_start, set_rows, X, keep, tix, Z, S, P,
                out):  # pragma: no cover - numba
    n_sets = keep.shape[0]
    for b in nb.prange(nblk):
        for s in range(b, n_sets, nblk):  # strided: sets of every size in every block
            _solved_set(s, set_start, set_rows, X, keep, tix, Z, S, P, out)


@nb.njit(cache=True, nogil=True)
def _solved_serial(set_start, set_rows, X, keep, tix, Z, S, P, out):  # pragma: no cover - numba
    for s in range(keep.shape[0]):
        _solved_set(s, set_start, set_rows, X, keep, tix, Z, S, P, out)


def precision(S: np.ndarray) -> np.ndarray:
    """``S^-1`` of a positive definite S, symmetric, for :func:`solved_conditional_rows`."""
    P = np.linalg.inv(S)
    return 0.5 * (P + P.T)


def solved_conditional_rows(X: np.ndarray, keep: np.ndarray, tix: np.ndarray, Z: np.ndarray,
                            S: np.ndarray, P: np.ndarray | None = None) -> np.ndarray:
    """The rows of :func:`conditional_rows` (``X[i]`` on K, ``z_R + S_RK S_KK^-1 (x_K - z_K)`` on
    R, ``z = Z[tix[i], m]``), equal to rounding, for large n: one Cholesky factor per distinct
    kept set of the request, shared by every row that keeps that set, and per row and draw a
    solve instead of the regression matrix ``S_RK S_KK^-1`` (r k^2 per coalition). The factor is
    of ``S_KK``, or with ``P`` (:func:`precision`: ``S^-1``) of ``P_RR`` where fewer cells are
    removed than kept (``z_R - P_RR^-1 P_RK (x_K - z_K)``, the same conditional mean): O(min(k,
    r)^3 / 3) per kept set plus O(M n min(k, r)) per row. A row's numbers depend only on its kept
    set, x, z, S and P (not on the other rows asked with it). ``S`` must be positive definite.
    Shape (N, M, n)."""
    N, n = X.shape
    out = np.empty((N, Z.shape[1], n))
    if N == 0:
        return out
    packed, inv = np.unique(np.packbits(keep, axis=1), axis=0, return_inverse=True)
    sets = np.unpackbits(packed, axis=1, count=n).astype(bool)  # the distinct kept sets
    inv = inv.reshape(-1)
    set_rows = np.argsort(inv, kind="stable").astype(np.int64)
    set_start = np.searchsorted(inv[set_rows], np.arange(len(sets) + 1)).astype(np.int64)
    args = (set_start, set_rows, np.ascontiguousarray(X, dtype=np.float64),
            np.ascontiguousarray(sets), np.ascontiguousarray(tix, dtype=np.int64),
            np.ascontiguousarray(Z, dtype=np.float64), np.ascontiguousarray(S),
            np.zeros((0, 0)) if P is None else np.ascontiguousarray(P, dtype=np.float64), out)
    if len(sets) < 2 or len(sets) * n * n < _SERIAL_WORK:
        _solved_serial(*args)
    else:
        _solved_par(min(len(sets), 8 * numba_threads()), *args)
    return out


def joint_draws(mean: np.ndarray, chol: np.ndarray, n_draws: int, seed: int, target: int,
                salt: str) -> np.ndarray:
    """(n_draws, n) joint draws ``mean + L eps`` of N(mean, L L^T) for one target, ``eps`` from
    :func:`~insdel.removal.target_rng` (common random numbers for every coalition)."""
    eps = target_rng(seed, target, salt).standard_normal((n_draws, mean.shape[0]))
    return mean + eps @ chol.T


# ---------------------------------------------------------------------------------- the fit


def _column_names(data) -> list[str] | None:
    cols = getattr(data, "columns", None)
    return None if cols is None else [str(c) for c in cols]


def _describe(cols, names) -> str:
    return ", ".join(f"{j} ({names[j]!r})" if names else str(j) for j in cols)


def _fit_moments(name: str, data: np.ndarray, ridge, names,
                 expected: frozenset = frozenset()) -> tuple[np.ndarray, np.ndarray, float,
                                                             list[int]]:
    """mu, S (regularised when singular), the ridge added (0.0: none) and the degenerate
    columns; warns naming the columns and the ridge, unless every degenerate column is in
    ``expected`` (the columns of complete one-hot groups, collinear by construction: the ridge
    is recorded in ``params()`` and the run's log, without a warning)."""
    mu = data.mean(axis=0)
    n = data.shape[1]
    S = np.cov(data, rowvar=False, ddof=1).reshape(n, n) if data.shape[0] > 1 else np.zeros((n, n))
    w, V = np.linalg.eigh(S)
    top = max(float(w[-1]), 0.0)
    if float(w[0]) > SINGULAR_RTOL * top and top > 0.0:
        return mu, S, 0.0, []
    small = w <= SINGULAR_RTOL * top
    weight = np.sum(V[:, small] ** 2, axis=1)
    degenerate = [int(j) for j in np.flatnonzero(weight > 1e-6)]
    constant = [j for j in degenerate if np.ptp(data[:, j]) == 0.0]
    dependent = [j for j in degenerate if j not in constant]
    if ridge is None:
        mean_var = float(np.mean(np.diag(S)))
        ridge = RIDGE_FRACTION * mean_var if mean_var > 0.0 else RIDGE_FRACTION
    parts = []
    if constant:
        parts.append(f"constant column(s) {_describe(constant, names)}")
    if dependent:
        parts.append(f"linearly dependent column(s) {_describe(dependent, names)}")
    if degenerate and not constant and set(degenerate) <= expected:
        return mu, S + ridge * np.eye(n), float(ridge), degenerate
    warnings.warn(f"{name}: the training covariance is singular (smallest eigenvalue "
                  f"{w[0]:.3g} <= {SINGULAR_RTOL:g} x largest {top:.3g}): "
                  f"{'; '.join(parts) or 'no single column'}; regularised by adding "
                  f"ridge = {ridge:.3g} to the diagonal.", stacklevel=4)
    return mu, S + ridge * np.eye(n), float(ridge), degenerate


def _check_ridge(ridge):
    if ridge is None:
        return None
    return check_scalar(ridge, "ridge", float, min_val=0.0, include_boundaries="neither",
                        finite=True)


def _two_levels(data: np.ndarray, j: int) -> np.ndarray:
    return np.unique(data[:, j])


class _GaussianBase(SampledRemoval):
    """The fit shared by ``conditional_gaussian`` and ``conditional_mean``."""

    def _fit(self, data, ridge, one_hot) -> None:
        names = _column_names(data)
        self.data = check_background(self.name, data)
        self.ridge = _check_ridge(ridge)
        self.feature_names = names
        self.one_hot = one_hot_groups(self.name, one_hot, self.data, names)
        complete = frozenset(j for g in self.one_hot if is_one_hot(self.data, g) for j in g)
        self.mean_, self.cov_, self.ridge_added_, self.regularised_columns = _fit_moments(
            self.name, self.data, self.ridge, names, complete)
        n = self.data.shape[1]
        self.n_features = n
        self._lev_lo = self.data.min(axis=0)
        self._lev_hi = self.data.max(axis=0)
        for g in self.one_hot:  # a 0/1 group's levels, also for a level absent from data
            if np.isin(self.data[:, g], (0.0, 1.0)).all():
                self._lev_lo[g], self._lev_hi[g] = 0.0, 1.0
        self._rounded = np.zeros(n, dtype=np.bool_)
        self._oh_start = np.zeros(1, dtype=np.int64)
        self._oh_cols = np.zeros(0, dtype=np.int64)

    def params(self) -> dict[str, Any]:
        return {**super().params(), "data_sha256": sha256_arrays(self.data),
                "data_rows": int(self.data.shape[0]), "ridge": self.ridge,
                "ridge_added": self.ridge_added_,
                "regularised_columns": list(self.regularised_columns)}

    def _rows(self, X, keep, targets, Z, tix) -> np.ndarray:
        return _gauss_rows(X, keep, tix, Z, self.cov_, self._lev_lo, self._lev_hi,
                           self._rounded, self._oh_start, self._oh_cols)


class ConditionalGaussian(_GaussianBase):
    """Removed features drawn from the Gaussian conditional given the kept ones.

    A Gaussian N(mu, S) is fitted on ``data`` (mean, ``np.cov`` with ddof = 1). For coalition u
    (kept K, removed R) the M rows equal x on K and hold a draw of
    ``Z_R | Z_K = x_K`` on R, by Matheron's rule: per target, M joint draws
    ``z = mu + L eps`` (L the Cholesky factor of S, eps standard normal from
    :func:`~insdel.removal.target_rng` with the target's index) are made once, and coalition u
    maps them to ``z_R + S_RK S_KK^-1 (x_K - z_K)``: exact conditional draws, the same eps for
    every coalition of the target (common random numbers), so the values do not depend on
    chunking or on which coalitions are asked together.

    Parameters
    ----------
    data : array_like (N, n)
        Training rows (e.g. ``dataset.X_train``).
    n_draws : int, default 32
        M, rows per coalition.
    seed : int, default 0
        Seeds the draws (with the target's index).
    ridge : float > 0, optional
        The amount added to S's diagonal when S is singular or ill-conditioned (smallest
        eigenvalue <= 1e-10 x largest: a constant column, collinear columns). Default
        ``1e-6 * mean(diag(S))``. A warning names the degenerate columns and the ridge;
        ``params()`` records both. A constant column then varies by about ``sqrt(ridge)`` in the
        draws, unless its level is restored (below).
    binary : "auto", False or sequence of int, default "auto"
        Columns with two levels. ``"auto"``: the columns of ``data`` with exactly two distinct
        values. A removed binary column is set to the nearer of its two levels (threshold at
        their midpoint). A constant column of ``data`` is likewise set to its one value (with
        ``"auto"``). ``False``: no rounding.
    one_hot : groups, optional
        One-hot groups (columns with levels 0/1, or the two levels of the data): a list of
        column lists, a mapping ``name -> columns``, a :class:`~insdel.groups.Groups` (e.g.
        ``dataset.groups``: its groups of two or more columns) or group names (``"region"``:
        the columns ``region=<level>`` of ``data`` given as a DataFrame); a run gives the data
        set's one-hot groups itself. After drawing, the removed members of a group are set so
        the group stays one-hot: the removed member with the largest drawn value (scaled to its
        levels) is set to the high level and the others to the low level; if a kept member is
        hot, every removed member is set low. Group columns are not also rounded as binary. A
        complete group (exactly one 1 per row of ``data``) sums to 1, so its columns are
        collinear: the ridge above is added and recorded in ``params()``, without a warning
        (expected); any other singularity still warns.
    max_rows : int, optional
        Model rows (coalitions x n_draws) one request may cost before it is refused with the
        estimate (default ``insdel.removal.values.MAX_ROWS``, 10^8); not part of ``params()``.

    Notes
    -----
    Rounding is an approximation: the draw is from the Gaussian conditional given the kept
    columns (kept binary columns enter as numbers), then rounded; it is not the conditional of a
    model with discrete columns. ``binary=False`` and no ``one_hot`` give the plain Gaussian.
    """

    name = "conditional_gaussian"

    def __init__(self, data=None, *, n_draws: int = 32, seed: int = 0, ridge: float | None = None,
                 binary="auto", one_hot=None, max_rows: int | None = None):
        self.n_draws, self.seed = check_draws(n_draws, seed)
        self.max_rows = check_max_rows(max_rows)
        self._fit(data, ridge, one_hot)
        n = self.n_features
        in_group = {j for g in self.one_hot for j in g}
        if binary is False:
            self.binary_columns: list[int] = []
        elif isinstance(binary, str):
            if binary != "auto":
                raise ValueError(f"{self.name}: binary must be 'auto', False or a list of column "
                                 f"indices; got {binary!r}.")
            self.binary_columns = [j for j in range(n)
                                   if j not in in_group and len(_two_levels(self.data, j)) == 2]
        elif binary is True or not hasattr(binary, "__iter__"):
            raise TypeError(f"{self.name}: binary must be 'auto', False or a list of column "
                            f"indices; got {binary!r}.")
        else:
            cols = self._check_columns("binary", binary)
            for j in cols:
                if len(_two_levels(self.data, j)) > 2:
                    raise ValueError(f"{self.name}: binary column {j} has "
                                     f"{len(_two_levels(self.data, j))} distinct values in data; "
                                     "a binary column has two.")
            self.binary_columns = [j for j in cols if j not in in_group]
        self._rounded = np.zeros(n, dtype=np.bool_)
        self._rounded[self.binary_columns] = True
        if isinstance(binary, str):  # a constant column's one level (the covariance has no say)
            self._rounded |= self._lev_lo == self._lev_hi
        if self.one_hot:
            self._oh_start = np.cumsum([0] + [len(g) for g in self.one_hot]).astype(np.int64)
            self._oh_cols = np.array([j for g in self.one_hot for j in g], dtype=np.int64)
        self._L = np.linalg.cholesky(self.cov_)
        self._draws = DrawCache(self._make_draws)

    def _check_columns(self, what: str, cols) -> list[int]:
        out = []
        for j in cols:
            if isinstance(j, (bool, np.bool_)) or not isinstance(j, (int, np.integer)):
                raise TypeError(f"{self.name}: {what} columns must be integer indices; got "
                                f"{j!r}.")
            if not 0 <= j < self.n_features:
                raise ValueError(f"{self.name}: {what} column {j} is out of range for data with "
                                 f"{self.n_features} columns.")
            out.append(int(j))
        return out

    def _make_draws(self, t: int) -> np.ndarray:
        return joint_draws(self.mean_, self._L, self.n_draws, self.seed, t, self.name)

    def params(self) -> dict[str, Any]:
        return {**super().params(), "binary_columns": list(self.binary_columns),
                "one_hot": [list(g) for g in self.one_hot]}

    def sample(self, X, keep, targets) -> np.ndarray:
        X, keep, targets = check_request(self.name, X, keep, targets, self.n_features)
        if X.shape[0] == 0:
            return np.empty((0, self.n_draws, self.n_features))
        Z, tix = self._draws.stack(targets)
        return self._rows(X, keep, targets, Z, tix)


class ConditionalMean(_GaussianBase):
    """Removed features set to their Gaussian conditional mean given the kept ones:
    ``mu_R + S_RK S_KK^-1 (x_K - mu_K)`` (one row per coalition, deterministic, n_draws = 1).

    ``v(u) = f(x_K, E[Z_R | x_K])``: equal to the conditional expectation of f only for f linear
    in the removed features. Binary and one-hot columns are **not** rounded (the conditional mean
    of a 0/1 column is a probability-like number; rounding it would move v for a linear f).

    Parameters
    ----------
    data : array_like (N, n)
        Training rows; mu and S (``np.cov``, ddof = 1) are fitted on them.
    ridge : float > 0, optional
        Added to S's diagonal when S is singular (as :class:`ConditionalGaussian`: default
        ``1e-6 * mean(diag(S))``, with a warning naming the columns).
    one_hot : groups, optional
        One-hot groups, as :class:`ConditionalGaussian` takes them: their collinearity is
        expected (the ridge is added without a warning); the mean is not rounded to a level.
    max_rows : int, optional
        Model rows (coalitions x n_draws) one request may cost before it is refused with the
        estimate (default ``insdel.removal.values.MAX_ROWS``, 10^8); not part of ``params()``.
    """

    name = "conditional_mean"
    n_draws = 1

    def __init__(self, data=None, *, ridge: float | None = None, one_hot=None,
                 max_rows: int | None = None):
        self.max_rows = check_max_rows(max_rows)
        self._fit(data, ridge, one_hot)
        self._Z = self.mean_[None, None, :].copy()

    def sample(self, X, keep, targets) -> np.ndarray:
        X, keep, targets = check_request(self.name, X, keep, targets, self.n_features)
        return self._rows(X, keep, targets, self._Z, np.zeros(X.shape[0], dtype=np.int64))
