"""``cohort``: the observational value function of cohort Shapley (Mase, Owen & Seiler, 2019).

The value of a coalition u for a target x is the mean outcome over the *cohort* of observed data
points that are similar to x on every feature in u; ``v(∅)`` is the grand mean. An insertion or
deletion curve under this removal walks u along an attribution's order and never evaluates the
model off the data: its ABC is the *observational ABC* of Hama, Mase & Owen (2022, §5.1.2).

Similarity (the authors' rule, as in their ``cohortshapley`` and ``cohortintgrad`` packages):
data point z_i is similar to x on feature j when ``|z_ij - x_j| <= tolerance * range_j``, with
``range_j = max_i z_ij - min_i z_ij`` over the data (non-strict; ``tolerance = 0`` asks for equal
values). A binary column (exactly two distinct values in the data) and a ``categorical=`` column
ask for an exact match whatever the tolerance.

The engine: per (target, feature) the similar data points as a bit mask of uint64 words over the
N data rows; a coalition's cohort is the AND of its features' masks, and its value the sum of the
outcome over the set bits divided by their number (a numba kernel, parallel over coalitions).
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

from .._checkpoint import sha256_arrays
from .._threads import numba_threads
from .._validation import as_float_array, check_finite, check_scalar
from ._sampling import check_request
from .base import GameRemoval, MissingDataError

__all__ = ["Cohort", "EMPTY_RULES"]

#: What a coalition with an empty cohort gets (:class:`Cohort`'s ``empty=``).
EMPTY_RULES = ("raise", "nearest")
#: Similarity masks held at once (bytes): the targets of a request are taken in groups that fit.
_MASK_BUDGET = 64 * 2**20
#: Fewer coalitions than this per call run serially (no thread start-up).
_SERIAL_BELOW = 256

try:  # LLVM's cttz: the index of the lowest set bit of a word
    from numba.cpython.unsafe.numbers import trailing_zeros as _tz
except ImportError:  # pragma: no cover - an older or newer numba without it
    @nb.njit(cache=True, nogil=True)
    def _tz(w):  # the population count of the bits below the lowest set one
        w = (w & (~w + np.uint64(1))) - np.uint64(1)
        w = w - ((w >> np.uint64(1)) & np.uint64(0x5555555555555555))
        w = (w & np.uint64(0x3333333333333333)) + ((w >> np.uint64(2))
                                                   & np.uint64(0x3333333333333333))
        w = (w + (w >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
        return (w * np.uint64(0x0101010101010101)) >> np.uint64(56)


@nb.njit(cache=True, nogil=True)
def _similar(d, x, radius, exact):  # pragma: no cover - numba
    """The authors' rule for one value: exact match, or within the radius (non-strict)."""
    if exact:
        return d == x
    return abs(d - x) <= radius


@nb.njit(parallel=True, cache=True, nogil=True)
def _masks_kernel(Xu, DT, radius, exact, out):  # pragma: no cover - numba
    """``out[t, j, w]``: bit k set when data row ``64 w + k`` is similar to ``Xu[t]`` on j."""
    T, n = Xu.shape
    N = DT.shape[1]
    Wn = out.shape[2]
    for tj in nb.prange(T * n):
        t = tj // n
        j = tj % n
        x = Xu[t, j]
        r = radius[j]
        ex = exact[j]
        col = DT[j]
        for w in range(Wn):
            bits = np.uint64(0)
            lo = w * 64
            hi = min(N, lo + 64)
            for i in range(lo, hi):
                if _similar(col[i], x, r, ex):
                    bits |= np.uint64(1) << np.uint64(i - lo)
            out[t, j, w] = bits


@nb.njit(cache=True, nogil=True)
def _cohort_block(lo, hi, sel, masks, tix, keep, y, last, nearest, sums, counts):  # pragma: no cover
    """Sum of the outcome and size of the cohort of coalitions ``sel[lo:hi]``; an empty cohort
    with ``nearest`` becomes the data points dissimilar to x on the fewest kept features."""
    n = keep.shape[1]
    Wn = masks.shape[2]
    N = y.shape[0]
    full = ~np.uint64(0)
    kidx = np.empty(n, dtype=np.int64)
    for s in range(lo, hi):
        c = sel[s]
        t = tix[c]
        k = 0
        for j in range(n):
            if keep[c, j]:
                kidx[k] = j
                k += 1
        tot = 0.0
        cnt = 0
        for w in range(Wn):
            acc = last if w == Wn - 1 else full
            for b in range(k):
                acc &= masks[t, kidx[b], w]
                if acc == 0:
                    break
            base = w * 64
            while acc != 0:
                tot += y[base + np.int64(_tz(acc))]
                cnt += 1
                acc &= acc - np.uint64(1)
        if cnt == 0 and nearest:
            best = k + 1
            for i in range(N):
                w = i >> 6
                bit = np.uint64(i & 63)
                miss = 0
                for b in range(k):
                    if (masks[t, kidx[b], w] >> bit) & np.uint64(1) == 0:
                        miss += 1
                if miss < best:
                    best = miss
                    tot = y[i]
                    cnt = 1
                elif miss == best:
                    tot += y[i]
                    cnt += 1
            cnt = -cnt  # marks a fallback value
        sums[c] = tot
        counts[c] = cnt


@nb.njit(parallel=True, cache=True, nogil=True)
def _cohort_par(nblk, sel, masks, tix, keep, y, last, nearest, sums, counts):  # pragma: no cover
    N = sel.shape[0]
    for b in nb.prange(nblk):
        _cohort_block(b * N // nblk, (b + 1) * N // nblk, sel, masks, tix, keep, y, last, nearest,
                      sums, counts)


def _numeric_data(data) -> np.ndarray:
    """``data`` as float64 (N, n); a column that holds strings is an error naming it."""
    cols = getattr(data, "columns", None)
    if cols is not None:  # a DataFrame: name the column by its label
        for k, c in enumerate(cols):
            col = data[c]
            if col.dtype.kind not in "biuf":
                try:
                    np.asarray(col, dtype=np.float64)
                except (TypeError, ValueError):
                    bad = next(v for v in col if not _is_number(v))
                    raise TypeError(
                        f"cohort: data= column {k} ({c!r}) holds non-numeric values (e.g. "
                        f"{bad!r}); the cohort game needs numeric data: encode a categorical "
                        "column as integer codes and name it in categorical=.") from None
        return as_float_array("data", data, ndim=(2,))
    arr = np.asarray(data)
    if arr.dtype.kind in "OUS" and arr.ndim == 2:
        for j in range(arr.shape[1]):
            try:
                np.asarray(arr[:, j], dtype=np.float64)
            except (TypeError, ValueError):
                bad = next(v for v in arr[:, j] if not _is_number(v))
                raise TypeError(
                    f"cohort: data= column {j} holds non-numeric values (e.g. {bad!r}); the "
                    "cohort game needs numeric data: encode a categorical column as integer "
                    "codes and name it in categorical=.") from None
    return as_float_array("data", arr, ndim=(2,))


def _is_number(v) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def _check_categorical(categorical, n: int, columns) -> tuple[int, ...]:
    """Column indices from None, indices, a bool mask of length n, or a DataFrame's labels."""
    if categorical is None:
        return ()
    if isinstance(categorical, (str, bytes)) or np.ndim(categorical) == 0:
        categorical = [categorical]
    items = list(categorical)
    if items and all(isinstance(v, (bool, np.bool_)) for v in items):
        if len(items) != n:
            raise ValueError(f"cohort: categorical= as a boolean mask needs one entry per data "
                             f"column ({n}); got {len(items)}.")
        return tuple(int(j) for j in np.flatnonzero(items))
    labels = [str(c) for c in columns] if columns is not None else None
    out = []
    for v in items:
        if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            j = int(v)
            if not -n <= j < n:
                raise ValueError(f"cohort: categorical= names column {j}, but data= has {n} "
                                 "columns.")
            out.append(j % n)
        elif labels is not None and str(v) in labels:
            out.append(labels.index(str(v)))
        else:
            raise ValueError(f"cohort: categorical= entry {v!r} is not a column index"
                             + (f" nor one of data='s columns {labels}." if labels else
                                " (give integer column indices or a boolean mask)."))
    return tuple(sorted(set(out)))


class Cohort(GameRemoval):
    """The observational cohort game: ``v(u)`` = the mean of ``outcome`` over the data points
    similar to the target x on every feature in u (``v(∅)`` = the grand mean).

    No model is evaluated for a coalition: the curves, Shapley values and decomposition under
    this removal are read off the data. The model enters only through the outcome, if you want it
    to: pass the observed ``y`` to test how the attributions explain the *data* (the authors'
    observational setting), or the model's predictions at the data points, ``f(data)``, to test
    how they explain the model on the data's own points.

    Similarity, the authors' rule (Mase, Owen & Seiler 2019; their ``cohortintgrad``): data point
    z_i is similar to x on feature j when ``|z_ij - x_j| <= tolerance * range_j``, with
    ``range_j`` = max - min of column j over ``data`` (non-strict: ``tolerance = 0`` asks for equal
    values). Binary columns (exactly two distinct values in ``data``) and ``categorical=``
    columns ask for an exact match.

    Empty cohorts: a target that is a data point is in its own cohort, so its cohorts are never
    empty. A target off the data can have an empty cohort for a large u; ``empty="raise"``
    (default) refuses it with an error naming the target, ``empty="nearest"`` gives it the mean
    outcome over the data points similar to x on the most features of u (those dissimilar on the
    fewest). That is the limit of the authors' soft value function (IGCS's ``nu``) at the corner
    u, and equals the cohort mean whenever the cohort is not empty.

    Parameters
    ----------
    data : array_like (N, n)
        The observed points (numeric; a DataFrame's labels name its columns in errors). Targets
        must have the same n columns.
    outcome : array_like (N,)
        The value of each data point: the observed y, or the model's predictions ``f(data)``.
    tolerance : float in [0, 1], default 0.1
        The similarity radius as a fraction of each feature's range (the authors' default).
    categorical : sequence of int, boolean mask or DataFrame labels, optional
        Columns similar only when equal (integer-coded categories).
    empty : {"raise", "nearest"}, default "raise"
        What a coalition whose cohort is empty gets (see above).

    Cost: building the masks reads every data point once per (target, feature), O(B N n); a
    coalition costs O(|u| N / 64) word operations plus its cohort's size. Memory: n N / 8 bytes
    per target in a request (taken in groups of 64 MiB).
    """

    name = "cohort"

    def __init__(self, data=None, outcome=None, *, tolerance: float = 0.1, categorical=None,
                 empty: str = "raise"):
        self.tolerance = check_scalar(tolerance, "tolerance", float, min_val=0.0, max_val=1.0,
                                      finite=True)
        if not isinstance(empty, str) or empty not in EMPTY_RULES:
            raise ValueError(f"cohort: empty must be one of {list(EMPTY_RULES)}; got {empty!r}.")
        self.empty = empty
        if data is None:
            raise MissingDataError("cohort needs the observed points: give data= (shape (N, n)) and "
                             "outcome= (shape (N,): y, or the model's predictions f(data)).")
        if outcome is None:
            raise MissingDataError("cohort needs outcome= (shape (N,)): the observed y of the data "
                             "points, or the model's predictions f(data).")
        self.data = np.ascontiguousarray(_numeric_data(data))
        N, n = self.data.shape
        if N < 1 or n < 1:
            raise ValueError(f"cohort: data= must have at least one row and one column; got "
                             f"shape {self.data.shape}.")
        y = as_float_array("outcome", outcome, ndim=(1, 2), finite=False)
        if y.ndim == 2:
            if y.shape[1] != 1:
                raise ValueError(f"cohort: outcome= must have shape (N,) (one value per data "
                                 f"point); got {y.shape}.")
            y = y[:, 0]
        if y.shape[0] != N:
            raise ValueError(f"cohort: outcome= has {y.shape[0]} values but data= has {N} rows "
                             "(one outcome per data point).")
        check_finite("outcome", y, entries="data point")
        self.outcome = np.ascontiguousarray(y, dtype=np.float64)
        self.categorical = _check_categorical(categorical, n, getattr(data, "columns", None))
        self.n_features = n
        lo, hi = self.data.min(axis=0), self.data.max(axis=0)
        distinct = np.array([np.unique(self.data[:, j]).size for j in range(n)])
        exact = distinct <= 2
        exact[list(self.categorical)] = True
        self.exact = exact
        self.radius = np.where(exact, 0.0, (hi - lo) * self.tolerance)
        self._DT = np.ascontiguousarray(self.data.T)
        Wn = (N + 63) // 64
        self._words = Wn
        tail = N - 64 * (Wn - 1)
        self._last = np.uint64((1 << tail) - 1) if tail < 64 else ~np.uint64(0)

    # -- the game ---------------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        return {**super().params(), "data_sha256": sha256_arrays(self.data),
                "outcome_sha256": sha256_arrays(self.outcome),
                "data_rows": int(self.data.shape[0]), "tolerance": self.tolerance,
                "categorical": list(self.categorical), "empty": self.empty}

    def similar(self, x) -> np.ndarray:
        """(n, N) bool: ``[j, i]`` when data point i is similar to ``x`` on feature j."""
        x = as_float_array("x", x, ndim=(1,))
        if x.shape[0] != self.n_features:
            raise ValueError(f"cohort: x has {x.shape[0]} features; data= has "
                             f"{self.n_features}.")
        d = self._DT
        close = np.abs(d - x[:, None]) <= self.radius[:, None]
        return np.where(self.exact[:, None], d == x[:, None], close)

    def masks(self, X) -> np.ndarray:
        """(T, n, ceil(N / 64)) uint64: the similarity of each data row to each target on each
        feature, bit ``i % 64`` of word ``i // 64`` for data row i."""
        X = np.ascontiguousarray(as_float_array("X", X, ndim=(2,)))
        out = np.empty((X.shape[0], self.n_features, self._words), dtype=np.uint64)
        if X.shape[0]:
            numba_threads()
            _masks_kernel(X, self._DT, self.radius, self.exact, out)
        return out

    def cohorts(self, X, keep, targets=None) -> tuple[np.ndarray, np.ndarray]:
        """Sum of the outcome and size of each coalition's cohort: ``(sums, sizes)``, (N,) each.

        A size of 0 is an empty cohort; with ``empty="nearest"`` an empty cohort's fallback
        points are counted negatively (``-k``: k points, similar on the most features of u)."""
        if targets is None:
            targets = np.arange(np.shape(X)[0])
        X, keep, targets = check_request(self.name, X, keep, targets, self.n_features)
        Nc = X.shape[0]
        sums = np.empty(Nc)
        counts = np.empty(Nc, dtype=np.int64)
        if Nc == 0:
            return sums, counts
        uniq, first, inv = np.unique(targets, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        per = max(1, _MASK_BUDGET // (8 * self.n_features * self._words))
        nearest = self.empty == "nearest"
        threads = numba_threads()
        for g0 in range(0, len(uniq), per):
            g1 = min(len(uniq), g0 + per)
            sel = np.arange(Nc) if (g0 == 0 and g1 == len(uniq)) else \
                np.flatnonzero((inv >= g0) & (inv < g1))
            masks = self.masks(X[first[g0:g1]])
            tix = np.ascontiguousarray(inv - g0)
            if sel.shape[0] < _SERIAL_BELOW or threads == 1:
                _cohort_block(0, sel.shape[0], sel, masks, tix, keep, self.outcome, self._last,
                              nearest, sums, counts)
            else:
                nblk = min(sel.shape[0] // 64, 8 * threads)
                _cohort_par(nblk, sel, masks, tix, keep, self.outcome, self._last, nearest,
                            sums, counts)
        return sums, counts

    def values(self, X, keep, targets) -> np.ndarray:
        """``v(u)``: the mean outcome over each coalition's cohort (see the class)."""
        sums, counts = self.cohorts(X, keep, targets)
        if sums.shape[0] and not counts.all():
            c = int(np.flatnonzero(counts == 0)[0])
            k = int(np.count_nonzero(np.asarray(keep)[c]))
            t = int(np.asarray(targets)[c])
            raise ValueError(
                f"cohort: the cohort of target {t} is empty for a coalition of {k} features: no "
                f"data point is within tolerance {self.tolerance} of x on all of them (x lies "
                "off the data). Give empty='nearest' (the mean over the data points similar to "
                "x on the most of those features), a larger tolerance, or targets that are data "
                "points.")
        return sums / np.abs(counts)
