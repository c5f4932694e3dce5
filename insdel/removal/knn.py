"""``conditional_knn``: removed features taken from the training rows nearest on the kept ones."""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

from .._checkpoint import sha256_arrays
from .._threads import numba_threads
from .._validation import check_positive_int, check_seed
from ._sampling import DrawCache, check_request, one_hot_groups
from .base import SampledRemoval, check_background, check_max_rows, target_rng

__all__ = ["ConditionalKNN"]

#: Fewer coalitions than this per call run in one serial block (no thread start-up).
_SERIAL_BELOW = 64
#: The tie-break ranks held at once (targets x training rows), int32: 64 MB.
_RANK_BUDGET = 1 << 24


@nb.njit(cache=True, nogil=True)
def _knn_block(lo, hi, sel, X, Xz, keep, tix, rank, data, Dz, out):  # pragma: no cover - numba
    """Rows of coalitions ``sel[lo:hi]``: the K training rows nearest to x on the kept columns
    (squared distance of the standardised features ``Xz``, ``Dz``; ties by ``rank[tix[i]]``, the
    target's random order of the rows), kept columns replaced by x's. Partial selection: a
    sorted list of the K best, one pass over the training rows."""
    Nd, n = Dz.shape
    K = out.shape[1]
    kidx = np.empty(n, dtype=np.int64)
    bd = np.empty(K)
    br = np.empty(K, dtype=np.int64)
    bi = np.empty(K, dtype=np.int64)
    for s in range(lo, hi):
        i = sel[s]
        rk = rank[tix[i]]
        xz = Xz[i]
        k = 0
        for j in range(n):
            if keep[i, j]:
                kidx[k] = j
                k += 1
        cnt = 0
        for row in range(Nd):
            dz = Dz[row]
            dist = 0.0
            for b in range(k):
                t = xz[kidx[b]] - dz[kidx[b]]
                dist += t * t
            r = rk[row]
            if cnt == K and (dist > bd[K - 1] or (dist == bd[K - 1] and r > br[K - 1])):
                continue
            p = cnt if cnt < K else K - 1  # insert at p, shifting the worse ones right
            while p > 0 and (bd[p - 1] > dist or (bd[p - 1] == dist and br[p - 1] > r)):
                if p < K:
                    bd[p] = bd[p - 1]
                    br[p] = br[p - 1]
                    bi[p] = bi[p - 1]
                p -= 1
            bd[p] = dist
            br[p] = r
            bi[p] = row
            if cnt < K:
                cnt += 1
        x = X[i]
        o = out[i]
        for m in range(K):
            src = data[bi[m]]
            for j in range(n):
                o[m, j] = x[j] if keep[i, j] else src[j]


@nb.njit(parallel=True, cache=True, nogil=True)
def _knn_par(nblk, sel, X, Xz, keep, tix, rank, data, Dz, out):  # pragma: no cover - numba
    N = sel.shape[0]
    for b in nb.prange(nblk):
        _knn_block(b * N // nblk, (b + 1) * N // nblk, sel, X, Xz, keep, tix, rank, data, Dz,
                   out)


class ConditionalKNN(SampledRemoval):
    """Removed features taken from the ``n_neighbors`` training rows most similar to x on the kept
    features (a nearest-neighbour conditional: ``v(u)`` is the mean of f over K rows that equal
    x on u and hold a similar training row's values elsewhere).

    Similarity: the Euclidean distance on the kept features only, each standardised by its
    training standard deviation (a constant column by 1). Ties (rows at the same distance) are
    broken by a random order of the training rows drawn once per target
    (:func:`~insdel.removal.target_rng`, the seed and the target's index), so the empty coalition
    (every distance 0) gives K random training rows, and every coalition of a target reads the
    same order (common random numbers: no dependence on chunking or on which coalitions are asked
    together). The K rows of a coalition are ordered nearest first.

    Parameters
    ----------
    data : array_like (N, n)
        Training rows (e.g. ``dataset.X_train``).
    n_neighbors : int, default 10
        K, the rows per coalition (``n_draws``); at most N.
    seed : int, default 0
        Seeds the tie-breaking order.
    one_hot : groups, optional
        One-hot groups, as :class:`~insdel.removal.ConditionalGaussian` takes them (column lists,
        a mapping, a :class:`~insdel.groups.Groups` or group names); a run gives the data set's
        one-hot groups itself. A group removed whole takes a training row's levels (one-hot
        already); for a group removed in part, a kept hot member sets every removed member to
        the low level, and when the neighbour's hot level is one of the kept (cold) members, the
        removed member most frequent in ``data`` is set high: the group stays one-hot.
    max_rows : int, optional
        Model rows (coalitions x n_draws) one request may cost before it is refused with the
        estimate (default ``insdel.removal.values.MAX_ROWS``, 10^8); not part of ``params()``.

    Each coalition reads every training row (O(N |u|) per coalition): subsample ``data`` for
    large training sets.
    """

    name = "conditional_knn"

    def __init__(self, data=None, *, n_neighbors: int = 10, seed: int = 0, one_hot=None,
                 max_rows: int | None = None):
        self.max_rows = check_max_rows(max_rows)
        names = getattr(data, "columns", None)
        self.data = check_background(self.name, data)
        self.one_hot = one_hot_groups(self.name, one_hot, self.data, names)
        self.n_neighbors = check_positive_int(n_neighbors, "n_neighbors")
        self.seed = check_seed(seed)
        N, n = self.data.shape
        if self.n_neighbors > N:
            raise ValueError(f"{self.name}: n_neighbors = {self.n_neighbors} is more than data's "
                             f"{N} rows.")
        self.n_draws = self.n_neighbors
        self.n_features = n
        sd = self.data.std(axis=0)
        sd[sd == 0] = 1.0
        self._sd = sd
        self._Dz = np.ascontiguousarray(self.data / sd)
        self._ranks = DrawCache(self._make_rank, size=max(16, _RANK_BUDGET // N))

    def _make_rank(self, t: int) -> np.ndarray:
        """The rank of each training row in target t's random order (the tie-break)."""
        perm = target_rng(self.seed, t, self.name).permutation(self.data.shape[0])
        rank = np.empty(perm.shape[0], dtype=np.int64)
        rank[perm] = np.arange(perm.shape[0])
        return rank

    def params(self) -> dict[str, Any]:
        p = {**super().params(), "n_neighbors": self.n_neighbors,
             "data_sha256": sha256_arrays(self.data), "data_rows": int(self.data.shape[0])}
        if self.one_hot:  # absent without groups: the same record as a removal without them
            p["one_hot"] = [list(g) for g in self.one_hot]
        return p

    def _keep_one_hot(self, X: np.ndarray, keep: np.ndarray, out: np.ndarray) -> None:
        """Groups removed in part stay one-hot (see ``one_hot``), in place."""
        for g in self.one_hot:
            lo, hi = self.data[:, g].min(axis=0), self.data[:, g].max(axis=0)
            if np.isin(self.data[:, g], (0.0, 1.0)).all():  # also a level absent from data
                lo, hi = np.zeros(len(g)), np.ones(len(g))
            kg = keep[:, g]
            part = kg.any(axis=1) & ~kg.all(axis=1)
            if not part.any():
                continue
            rows = out[part][:, :, g]  # (P, M, k)
            removed = ~kg[part]  # (P, k)
            hot_kept = ((X[part][:, g] == hi) & kg[part]).any(axis=1)  # (P,)
            rows = np.where((hot_kept[:, None] & removed)[:, None, :], lo, rows)
            none_hot = ~((rows == hi) & removed[:, None, :]).any(axis=2) & ~hot_kept[:, None]
            if none_hot.any():  # the neighbour's level is a kept (cold) one
                freq = (self.data[:, g] == hi).mean(axis=0)  # (k,)
                best = np.argmax(np.where(removed, freq, -1.0), axis=1)  # (P,)
                p_idx, m_idx = np.nonzero(none_hot)
                rows[p_idx, m_idx, best[p_idx]] = hi[best[p_idx]]
            sub = out[part]
            sub[:, :, g] = rows
            out[part] = sub

    def sample(self, X, keep, targets) -> np.ndarray:
        X, keep, targets = check_request(self.name, X, keep, targets, self.n_features)
        N, n = X.shape
        out = np.empty((N, self.n_neighbors, n))
        if N == 0:
            return out
        Xz = np.ascontiguousarray(X / self._sd)
        order = np.argsort(targets, kind="stable")
        _, starts = np.unique(targets[order], return_index=True)
        per = max(1, _RANK_BUDGET // self.data.shape[0])  # targets per group (bounded memory)
        bounds = list(starts[::per]) + [N]
        for g in range(len(bounds) - 1):  # one pass per group of targets, not per coalition
            sel = np.ascontiguousarray(order[bounds[g]:bounds[g + 1]])
            rank, tix_local = self._ranks.stack(targets[sel])
            tix = np.zeros(N, dtype=np.int64)
            tix[sel] = tix_local
            if sel.shape[0] < _SERIAL_BELOW:
                _knn_block(0, sel.shape[0], sel, X, Xz, keep, tix, rank, self.data, self._Dz, out)
            else:
                nblk = min(sel.shape[0] // 16, 8 * numba_threads())
                _knn_par(nblk, sel, X, Xz, keep, tix, rank, self.data, self._Dz, out)
        if self.one_hot:
            self._keep_one_hot(X, keep, out)
        return out
