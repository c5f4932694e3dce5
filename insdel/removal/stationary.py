"""``stationary_gaussian``: the Gaussian conditional over a window whose law is a stationary
process (docs/multi_output.md, *Removals that read the kept steps*).

A window of L steps x C channels (the layout of :mod:`insdel.timeseries`: column ``t * C + c``,
step 0 the oldest) is taken as a stretch of a stationary Gaussian process with mean ``mu_c`` per
channel and lag autocovariances ``Gamma(h)`` (C x C, ``Gamma_{c,d}(h) = Cov(z[t + h, c],
z[t, d])``, ``Gamma(-h) = Gamma(h)^T``). Its covariance over the window is block-Toeplitz:
``Cov(z[t, c], z[t', d]) = Gamma_{c,d}(t - t')``. L C^2 numbers are estimated, not the
n (n + 1) / 2 of a free covariance of n = L C cells, so a few windows (or one long series)
suffice, and the estimate holds the lag structure (a removed step is filled from its kept
neighbours in time and across channels).

The removed cells of a coalition are set to their conditional mean given the kept cells, or, with
``n_draws``, to exact conditional draws (Matheron's rule, common random numbers per target): the
linear algebra is the one of :mod:`.gaussian`: :func:`~.gaussian.solved_conditional_rows`, one
Cholesky factor per distinct kept set of a request (of ``S_KK``, or of the precision's block
``P_RR`` where fewer cells are removed than kept) and a solve per row: O(min(k, r)^3 / 3) per
set, where :func:`~.gaussian.conditional_rows`' regression matrix costs O(k^3 / 6 + r k^2) per
coalition, which dominates at a window's n of hundreds of cells.

Estimation. From series (``series=``: one (T, C) series or several), ``Gamma(h)`` is the biased
estimator ``(1 / sum_s T_s) sum_s sum_t (z_s[t + h] - mu)(z_s[t] - mu)^T``; from windows
(``data=``, the (N, L C) training windows a run gives), by default the lag-averaged estimator
``... / sum_s (T_s - h)`` (the mean of the windows' cell pairs h steps apart): the biased one would
shrink lag h by ``1 - h / L``, a large bias on short windows. The biased estimate's block-Toeplitz
matrix is positive semi-definite by construction (each series' term is the autocovariance of a
finite sequence: ``sum_u |sum_t a_t^T y[u + t]|^2 >= 0``); the lag-averaged one is not always, and
a clearly indefinite estimate is an error that names the remedies. Bartlett's taper
(``max_lag``, weights ``1 - h / (max_lag + 1)``) keeps a positive semi-definite estimate so (a
Schur product with a positive definite Toeplitz matrix); the flat cut (``taper="flat"``) need not.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._checkpoint import sha256_arrays
from .._validation import as_float_array, check_choice, check_scalar
from ..timeseries import as_windows, check_window
from ._sampling import DrawCache, check_request
from .base import MissingDataError, SampledRemoval, check_draws, check_max_rows
from .gaussian import RIDGE_FRACTION, SINGULAR_RTOL, joint_draws, precision, solved_conditional_rows
from .timeseries import check_window_width

__all__ = ["StationaryGaussian", "block_toeplitz", "lag_autocovariance", "TAPERS", "ESTIMATORS"]

#: ``taper=``: how the lags up to ``max_lag`` are weighted (beyond it: 0).
TAPERS = ("bartlett", "flat")
#: ``estimator=``: ``auto`` is ``unbiased`` (lag-averaged) for ``data=`` windows and ``biased``
#: for ``series=``.
ESTIMATORS = ("auto", "biased", "unbiased")
#: A smallest eigenvalue above ``-NEGATIVE_RTOL x`` the largest is rounding of a positive
#: semi-definite estimate (repaired by the jitter); below it, the estimate is indefinite.
NEGATIVE_RTOL = 1e-8


def block_toeplitz(gamma: np.ndarray) -> np.ndarray:
    """The (L C, L C) covariance of a window from its lag autocovariances ``gamma`` (L, C, C):
    block (t, t') is ``Gamma(t - t')``, ``Gamma(-h) = Gamma(h)^T`` (step-major layout)."""
    L, C, _ = gamma.shape
    full = np.concatenate([np.transpose(gamma[:0:-1], (0, 2, 1)), gamma])  # index d + L - 1
    d = np.subtract.outer(np.arange(L), np.arange(L))
    return np.ascontiguousarray(full[d + L - 1].transpose(0, 2, 1, 3).reshape(L * C, L * C))


def lag_autocovariance(blocks: list[np.ndarray], lags: int, *, biased: bool
                       ) -> tuple[np.ndarray, np.ndarray]:
    """The channels' mean ``mu`` (C,) and ``Gamma(h)`` (lags, C, C), h = 0 .. lags - 1, of the
    segments in ``blocks`` (each (S, T, C): S segments of T steps, T >= lags), about one pooled
    mean; ``biased``: divided by the number of cells, else by the number of pairs h apart."""
    cells = sum(B.shape[0] * B.shape[1] for B in blocks)
    mu = sum(B.sum(axis=(0, 1)) for B in blocks) / cells
    C = mu.shape[0]
    sums = np.zeros((lags, C, C))
    pairs = np.zeros(lags)
    for B in blocks:
        Y = B - mu
        S, T = Y.shape[:2]
        for h in range(lags):
            sums[h] += np.einsum("stc,std->cd", Y[:, h:], Y[:, :T - h])
            pairs[h] += S * (T - h)
    gamma = sums / (np.full(lags, float(cells)) if biased else pairs)[:, None, None]
    gamma[0] = 0.5 * (gamma[0] + gamma[0].T)
    return mu, gamma


def _taper_weights(L: int, max_lag: int | None, taper: str) -> np.ndarray:
    if max_lag is None:
        return np.ones(L)
    h = np.arange(L, dtype=np.float64)
    w = 1.0 - h / (max_lag + 1) if taper == "bartlett" else np.ones(L)
    return np.where(h <= max_lag, w, 0.0)


class StationaryGaussian(SampledRemoval):
    """Removed cells of a window from the Gaussian conditional of a stationary process.

    The window's law is N(mu, S) with ``mu[t C + c] = mu_c`` and S block-Toeplitz,
    ``S[t C + c, t' C + d] = w(|t - t'|) Gamma_{c,d}(t - t')`` (``w``: the taper, 1 without
    ``max_lag``). For coalition u (kept K, removed R) the removed cells are
    ``mu_R + S_RK S_KK^-1 (x_K - mu_K)`` (one row, the default), or with ``n_draws = M`` M exact
    draws of ``Z_R | Z_K = x_K`` (as ``conditional_gaussian`` draws them). Kept cells keep x's
    values exactly. For an AR(1) series a removed middle step with both neighbours kept is
    ``mu + phi / (1 + phi^2) (x[t-1] + x[t+1] - 2 mu)`` (the process is Markov).

    Give exactly one of ``data``, ``series``, ``autocovariance``.

    Parameters
    ----------
    data : array_like (N, L C) or (N, L, C), optional
        Training windows (a run gives its ``X_train``); each window is a segment of the process.
    length, channels : int
        L steps x C channels (n = L C).
    series : array_like, optional
        Training series instead of windows: one series (T, C) (or (T,) for C = 1), S series of
        one length (S, T, C), or a list of arrays (T_s, C) (series of different lengths); each
        at least L steps.
    autocovariance : array_like (K, C, C), optional
        ``Gamma(0) .. Gamma(K - 1)`` given (a known process; 1 <= K <= L; lags K and beyond are 0;
        (K,) for C = 1); ``Gamma(0)`` symmetric.
    mean : float or sequence of C floats, optional
        The channels' mean, with ``autocovariance`` only (default 0); estimated otherwise.
    max_lag : int, optional
        Lags above ``max_lag`` (0 <= max_lag < L) are set to 0, lags up to it weighted by
        ``taper``. Default: every lag of the window, unweighted.
    taper : {"bartlett", "flat"}, default "bartlett"
        With ``max_lag``: Bartlett's weights ``1 - h / (max_lag + 1)`` (a positive
        semi-definite estimate stays so) or 1 (a flat cut, which can make it indefinite).
    estimator : {"auto", "biased", "unbiased"}, default "auto"
        ``biased`` divides lag h's sum by the number of cells (positive semi-definite),
        ``unbiased`` by the number of cell pairs h apart; ``auto``: ``unbiased`` for ``data``
        windows (the biased estimator shrinks lag h by 1 - h / L there), ``biased`` for
        ``series`` (a bias of h / T).
    n_draws : int, optional
        None (default): the conditional mean, one deterministic row per coalition. M >= 1: M
        conditional draws per coalition, seeded by ``seed`` and the target's index.
    seed : int, default 0
        Seeds the draws.
    max_rows : int, optional
        Model rows one request may cost before it is refused (not part of ``params()``).

    Raises
    ------
    ValueError
        Windows of another length x channels, ``max_lag >= length``, a series shorter than the
        window, an indefinite estimate (naming ``estimator`` / ``taper``), bad option values.
    insdel.removal.MissingDataError
        None of ``data``, ``series``, ``autocovariance`` given.

    Notes
    -----
    When the estimate is singular (smallest eigenvalue <= 1e-10 x largest, e.g. a constant
    channel) or slightly negative by rounding, ``jitter = 1e-6 mean(diag(S))`` (1e-6 when every
    channel is constant; plus the negative part) is added to the diagonal with a warning; ``params()["jitter"]`` records it
    (0.0 when none).
    """

    name = "stationary_gaussian"
    #: 2: the rows of :func:`~.gaussian.solved_conditional_rows`; revision 1's were
    #: :func:`~.gaussian.conditional_rows`' (equal to rounding), so its cached results are not read
    revision = 2

    def __init__(self, data=None, *, length: int, channels: int, series=None,
                 autocovariance=None, mean=None, max_lag: int | None = None,
                 taper: str = "bartlett", estimator: str = "auto", n_draws: int | None = None,
                 seed: int = 0, max_rows: int | None = None):
        self.length, self.channels = L, C = check_window(length, channels)
        self.n_features = L * C
        self.max_lag = None if max_lag is None else check_scalar(max_lag, "max_lag", int,
                                                                 min_val=0)
        if self.max_lag is not None and self.max_lag >= L:
            raise ValueError(f"max_lag={self.max_lag} is not a lag of the window: "
                             f"a window of length={L} has lags 0 .. {L - 1}.")
        self.taper = check_choice("taper", taper, TAPERS)
        estimator = check_choice("estimator", estimator, ESTIMATORS)
        self.draws = n_draws is not None
        self.n_draws, self.seed = check_draws(1 if n_draws is None else n_draws, seed)
        self.max_rows = check_max_rows(max_rows)
        given = [k for k, v in (("data", data), ("series", series),
                                ("autocovariance", autocovariance)) if v is not None]
        if len(given) > 1:
            raise ValueError(f"{self.name}: give one of data=, series=, autocovariance=; got "
                             f"{' and '.join(k + '=' for k in given)}.")
        if mean is not None and given != ["autocovariance"]:
            raise ValueError(f"{self.name}: mean= goes with autocovariance= (a known process); "
                             "with data= or series= the mean is estimated.")
        if not given:
            raise MissingDataError(f"{self.name} needs training data: give data= (training "
                                   f"windows, shape (N, {L * C}) or (N, {L}, {C})), series= (a "
                                   f"series (T, {C})) or autocovariance= (Gamma(h), (K, {C}, "
                                   f"{C})).")
        self.source = given[0]
        if self.source == "autocovariance":
            self.estimator = None
            self._input = as_float_array("autocovariance", autocovariance, ndim=(1, 3))
            mu, gamma = self._given(self._input, mean)
        else:
            self.estimator = estimator if estimator != "auto" else (
                "unbiased" if self.source == "data" else "biased")
            blocks = (self._windows(data) if self.source == "data" else self._series(series))
            self._input = blocks
            mu, gamma = lag_autocovariance(blocks, L, biased=self.estimator == "biased")
        self.gamma_ = gamma * _taper_weights(L, self.max_lag, self.taper)[:, None, None]
        self.channel_mean_ = mu
        self.mean_ = np.tile(mu, L)
        self.cov_, self.jitter_ = self._positive_definite(block_toeplitz(self.gamma_))
        self._P = precision(self.cov_)
        if self.draws:
            self._L = np.linalg.cholesky(self.cov_)
            self._draws = DrawCache(self._make_draws)
        self._Z = self.mean_[None, None, :].copy()

    # ------------------------------------------------------------------------ the inputs

    def _windows(self, data) -> list[np.ndarray]:
        L, C = self.length, self.channels
        W = as_windows(data, L, C, name="data")
        if W.shape[0] < 1:
            raise ValueError(f"{self.name}: data= has no windows.")
        return [W.reshape(-1, L, C)]

    def _series(self, series) -> list[np.ndarray]:
        """One array (T,), (T, C) or (S, T, C), or a list / tuple of arrays (T_s, C) (series of
        different lengths), as blocks (S, T, C)."""
        C = self.channels
        several = isinstance(series, (list, tuple)) and any(
            isinstance(a, np.ndarray) for a in series)
        if not several:
            arr = as_float_array("series", series, ndim=(1, 2, 3))
            if arr.ndim == 3:
                if arr.shape[2] != C:
                    raise ValueError(f"{self.name}: series= has {arr.shape[2]} channels (shape "
                                     f"{arr.shape}: series, steps, channels); channels={C}.")
                if arr.shape[0] < 1:
                    raise ValueError(f"{self.name}: series= holds no series.")
                self._check_steps("series=", arr.shape[1])
                return [arr]
            series = [arr]
        blocks = []
        for s, item in enumerate(series):
            where = "series=" if not several else f"series[{s}]"
            a = as_float_array(where.rstrip("="), item, ndim=(1, 2))
            if a.ndim == 1:
                if C != 1:
                    raise ValueError(f"{self.name}: {where} is 1-D (one channel); channels={C} "
                                     "needs a (steps, channels) series.")
                a = a[:, None]
            if a.shape[1] != C:
                raise ValueError(f"{self.name}: {where} has {a.shape[1]} channels (shape "
                                 f"{a.shape}: steps, channels); channels={C}.")
            self._check_steps(where, a.shape[0])
            blocks.append(a[None])
        return blocks

    def _check_steps(self, where: str, T: int) -> None:
        if T < self.length:
            raise ValueError(f"{self.name}: {where} has {T} steps; a window of length="
                             f"{self.length} needs series of at least {self.length} steps to "
                             "estimate its lag autocovariances.")

    def _given(self, gamma, mean) -> tuple[np.ndarray, np.ndarray]:
        L, C = self.length, self.channels
        if gamma.ndim == 1:
            if C != 1:
                raise ValueError(f"{self.name}: autocovariance= is 1-D (one channel); channels="
                                 f"{C} needs shape (K, {C}, {C}).")
            gamma = gamma[:, None, None]
        K = gamma.shape[0]
        if gamma.shape[1:] != (C, C) or not 1 <= K <= L:
            raise ValueError(f"{self.name}: autocovariance= must have shape (K, {C}, {C}) with "
                             f"1 <= K <= length={L}; got {gamma.shape}.")
        if not np.allclose(gamma[0], gamma[0].T, rtol=1e-12, atol=0.0):
            raise ValueError(f"{self.name}: autocovariance[0] (Gamma(0), the channels' "
                             "covariance) must be symmetric.")
        full = np.zeros((L, C, C))
        full[:K] = gamma
        mu = as_float_array("mean", 0.0 if mean is None else mean, ndim=(0, 1))
        if mu.ndim == 1 and mu.shape[0] != C:
            raise ValueError(f"{self.name}: mean has {mu.shape[0]} values; give one number, or "
                             f"one per channel (channels = {C}).")
        return np.broadcast_to(mu, (C,)).astype(np.float64), full

    def _positive_definite(self, S: np.ndarray) -> tuple[np.ndarray, float]:
        """S, or S plus a jitter on its diagonal where it is singular or negative by rounding;
        an indefinite S is an error naming the options that change it."""
        w = np.linalg.eigvalsh(S)
        top = max(float(w[-1]), 0.0)
        if top > 0.0 and float(w[0]) > SINGULAR_RTOL * top:
            return S, 0.0
        if float(w[0]) < -NEGATIVE_RTOL * top:
            what = (f"estimated with estimator={self.estimator!r}" if self.estimator else "given")
            raise ValueError(
                f"{self.name}: the window's block-Toeplitz covariance ({what}"
                + (f", max_lag={self.max_lag}, taper={self.taper!r}" if self.max_lag is not None
                   else "") + f") is not positive semi-definite: smallest eigenvalue "
                f"{w[0]:.3g}, largest {top:.3g}. estimator='biased' from data or series is "
                "positive semi-definite by construction (with taper='bartlett' if max_lag is "
                "given); or give more windows, or series=.")
        mean_var = float(np.mean(np.diag(S)))
        jitter = RIDGE_FRACTION * (mean_var if mean_var > 0.0 else 1.0) + max(0.0, -float(w[0]))
        flat = [c for c in range(self.channels) if self.gamma_[0, c, c] <= 0.0]
        warnings.warn(f"{self.name}: the window's covariance is singular (smallest eigenvalue "
                      f"{w[0]:.3g} <= {SINGULAR_RTOL:g} x largest {top:.3g})"
                      + (f": constant channel(s) {flat}" if flat else "")
                      + f"; regularised by adding jitter = {jitter:.3g} to the diagonal "
                      "(params()['jitter']).", stacklevel=4)
        return S + jitter * np.eye(S.shape[0]), float(jitter)

    # ------------------------------------------------------------------------ the rows

    def _make_draws(self, t: int) -> np.ndarray:
        return joint_draws(self.mean_, self._L, self.n_draws, self.seed, t, self.name)

    def params(self) -> dict[str, Any]:
        inputs = self._input if isinstance(self._input, list) else [self._input]
        return {**super().params(), "length": self.length, "channels": self.channels,
                "draws": self.draws, "source": self.source,
                f"{self.source}_sha256": sha256_arrays(*inputs),
                "steps": None if self.source == "autocovariance" else int(
                    sum(a.shape[0] * a.shape[1] for a in inputs)),
                "mean": None if self.source != "autocovariance" else self.channel_mean_.tolist(),
                "estimator": self.estimator, "max_lag": self.max_lag,
                "taper": self.taper if self.max_lag is not None else None,
                "jitter": self.jitter_}

    def sample(self, X: np.ndarray, keep: np.ndarray, targets: np.ndarray) -> np.ndarray:
        check_window_width(self.name, X, self.length, self.channels)
        X, keep, targets = check_request(self.name, X, keep, targets, self.n_features)
        if X.shape[0] == 0:
            return np.empty((0, self.n_draws, self.n_features))
        if self.draws:
            Z, tix = self._draws.stack(targets)
        else:
            Z, tix = self._Z, np.zeros(X.shape[0], dtype=np.int64)
        return solved_conditional_rows(X, keep, tix, Z, self.cov_, self._P)
