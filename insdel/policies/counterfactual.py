"""The counterfactual policy (paper §5.1, §5.2) and its fused numba nearest-neighbour search.

For a target the kernel streams over the pool (features outer, candidates inner, so the loop
vectorises), accumulating the squared distance and the number of differing features of every
candidate, then keeps a running top-k by (distance, pool index). There is no Python loop over
targets x candidates and no (m, N) matrix in memory; the model is evaluated once on the pool rows
that are needed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numba as nb
import numpy as np

from .._progress import progress_bar
from .._validation import _first, as_float_array, check_positive_int, check_scalar
from ..adapter import as_model
from .base import Pairing, Policy, _tol_vector
from .registry import _builtin

DEFAULT_CHUNK = 1024  # targets per call of the counterfactual kernel



@nb.njit(cache=True, parallel=True, nogil=True)
def _knn_kernel(T, PT, self_idx, tol, min_diff, out_idx, out_d2, out_n, out_cmax):  # pragma: no cover
    """Per target: k nearest pool points (by (squared distance, index)) with >= min_diff differences.

    T (m, n) targets; PT (n, N) pool transposed; self_idx (m,) pool index of the target or -1;
    tol (n,); min_diff (m,); out_idx/out_d2 (m, k) filled with -1/inf; out_n (m,) number kept;
    out_cmax (m,) the largest number of differing features over the other pool points.
    """
    m, n = T.shape
    N = PT.shape[1]
    k = out_idx.shape[1]
    for i in nb.prange(m):
        d2 = np.zeros(N)
        cnt = np.zeros(N, np.int64)
        for j in range(n):
            xj = T[i, j]
            tj = tol[j]
            row = PT[j]
            for c in range(N):
                diff = xj - row[c]
                d2[c] += diff * diff
                cnt[c] += np.int64(abs(diff) > tj)
        me = self_idx[i]
        md = min_diff[i]
        kept = 0
        cmax = -1
        for c in range(N):
            if c == me:
                continue
            cc = cnt[c]
            if cc > cmax:
                cmax = cc
            if cc < md:
                continue
            dc = d2[c]
            if kept == k:
                if dc >= out_d2[i, k - 1]:
                    continue  # ties keep the lower pool index (candidates come in index order)
                p = k - 1
            else:
                p = kept
                kept += 1
            while p > 0 and out_d2[i, p - 1] > dc:
                out_d2[i, p] = out_d2[i, p - 1]
                out_idx[i, p] = out_idx[i, p - 1]
                p -= 1
            out_d2[i, p] = dc
            out_idx[i, p] = c
        out_n[i] = kept
        out_cmax[i] = cmax


def _knn(T, pool, self_idx, tol, min_diff, k, progress=None, chunk=DEFAULT_CHUNK):
    m = T.shape[0]
    PT = np.ascontiguousarray(pool.T)
    idx = np.full((m, k), -1, np.int64)
    d2 = np.full((m, k), np.inf)
    n_kept = np.zeros(m, np.int64)
    cmax = np.zeros(m, np.int64)
    with progress_bar(m, "counterfactual", unit="target", enable=progress,
                      auto=m * pool.shape[0] > 5e7) as bar:
        for s in range(0, m, chunk):
            e = min(s + chunk, m)
            _knn_kernel(T[s:e], PT, self_idx[s:e], tol, min_diff[s:e], idx[s:e], d2[s:e],
                        n_kept[s:e], cmax[s:e])
            bar.update(e - s)
    return idx, d2, n_kept, cmax


def _check_tol(name: str, value) -> float:
    """One feature's tolerance: a finite real number >= 0 (``bool`` refused)."""
    return check_scalar(value, name, float, min_val=0.0, finite=True)


@_builtin("counterfactual")
class Counterfactual(Policy):
    """Counterfactual reference (paper §5.1, §5.2; conventions: *Reference-point policies*).

    Candidates are the other pool points x' with ``#{j : |x'_j - x_j| > tol_j} >= min_diff``; the
    ``k_nearest`` of them with the smallest Euclidean ``||x - x'||`` are kept (ties: lower pool index
    first) and among those the one with the largest ``|f(x) - f(x')|`` is chosen (ties: the nearer,
    then the lower pool index).

    Parameters
    ----------
    min_diff : int or "all", default 1
        Minimum number of differing features; ``"all"`` means n (every feature differs, the CERN
        policy of §5.2). Bangalore housing (§5.1) used 12.
    k_nearest : int, default 20
        Number of nearest candidates among which |f(x) - f(x')| is maximised. A pool with fewer
        candidates keeps all of them (``info["n_candidates"]`` says how many).
    tol : float or sequence of n floats, default 0
        Features with ``|x_j - x'_j| <= tol_j`` count as equal (float features compared with a
        tolerance); 0 means exact inequality.
    on_unmet : {"error", "skip", "relax"}, default "error"
        Targets with no candidate meeting ``min_diff``: fail (the message gives their count and first
        indices), drop them (listed in ``Pairing.skipped``), or lower ``min_diff`` for them to the
        largest number of differing features any other pool point has (``info["min_diff"]``).
    """

    accepts_rows = True
    needs_model = True

    def __init__(self, min_diff: int | str = 1, k_nearest: int = 20, tol: float | Sequence[float] = 0.0,
                 on_unmet: str = "error"):
        if isinstance(min_diff, str):
            if min_diff != "all":
                raise ValueError(f"min_diff must be a non-negative integer or 'all'; got {min_diff!r}.")
        else:
            min_diff = check_positive_int(min_diff, "min_diff (a non-negative integer or 'all')",
                                          minimum=0)
        k_nearest = check_positive_int(k_nearest, "k_nearest")
        if on_unmet not in ("error", "skip", "relax"):
            raise ValueError(f"on_unmet must be 'error', 'skip' or 'relax'; got {on_unmet!r}.")
        if np.ndim(tol) == 0:
            tol = _check_tol("tol", tol)
        else:
            if np.ndim(tol) != 1:
                raise ValueError("tol must be a number >= 0 or a 1-D sequence of them (one per feature).")
            tol = [_check_tol(f"tol[{j}]", v) for j, v in enumerate(tol)]
        self.params = {"min_diff": min_diff, "k_nearest": int(k_nearest), "tol": tol,
                       "on_unmet": on_unmet}

    def _pair(self, pool, f, tidx, T, labels, seed, progress):
        N, n = pool.shape
        m = T.shape[0]
        md = self.params["min_diff"]
        md = n if md == "all" else md
        if md > n:
            raise ValueError(f"min_diff = {md} exceeds the number of features n = {n}.")
        tol = _tol_vector(self.params["tol"], n)
        k = min(self.params["k_nearest"], N)
        fpool, model = _pool_values(f, pool, self.name)
        if model is None and tidx.min(initial=0) < 0:
            raise ValueError("targets given as rows need the model f itself, not precomputed values.")
        min_diff = np.full(m, md, np.int64)
        nbr, d2, n_kept, cmax = _knn(T, pool, tidx, tol, min_diff, k, progress)
        keep = np.ones(m, bool)
        unmet = np.flatnonzero(n_kept == 0)
        if unmet.size:
            where = labels[unmet]
            how = self.params["on_unmet"]
            if how == "error":
                raise ValueError(
                    f"counterfactual: {unmet.size} of {m} target(s) have no other pool point differing "
                    f"in at least min_diff = {md} features (tol = {self.params['tol']}): targets "
                    f"{_first(where)}. Use on_unmet='skip' to drop them or on_unmet='relax' to lower "
                    "min_diff for them, or lower min_diff / raise tol."
                )
            if how == "skip":
                keep[unmet] = False
            else:  # relax
                relaxed = np.maximum(cmax[unmet], 1)
                bad = cmax[unmet] < 1
                if bad.any():
                    raise ValueError(
                        f"counterfactual: {int(bad.sum())} target(s) have no other pool point that "
                        f"differs in any feature (targets {_first(where[bad])}); even on_unmet='relax' "
                        "cannot pair them. Use on_unmet='skip'."
                    )
                min_diff[unmet] = relaxed
                r_idx, r_d2, r_n, _ = _knn(T[unmet], pool, tidx[unmet], tol, relaxed, k, progress)
                nbr[unmet], d2[unmet], n_kept[unmet] = r_idx, r_d2, r_n
        skipped = labels[~keep]
        nbr, d2, n_kept, T, tidx, min_diff = (a[keep] for a in (nbr, d2, n_kept, T, tidx, min_diff))
        valid = nbr >= 0
        if fpool is None:  # evaluate f once on the pool rows that are needed
            need = np.unique(np.concatenate([nbr[valid], tidx[tidx >= 0]]))
            fpool = np.full(N, np.nan)
            if need.size:
                fpool[need] = model(pool[need])
        fx = fpool[np.maximum(tidx, 0)]
        if (tidx < 0).any():
            fx[tidx < 0] = model(T[tidx < 0])
        score = np.where(valid, np.abs(fx[:, None] - fpool[np.where(valid, nbr, 0)]), -np.inf)
        best = np.argmax(score, axis=1)  # first maximum = nearest, then lowest index
        rows = np.arange(len(best))
        ref = nbr[rows, best]
        return Pairing(X=T.copy(), R=pool[ref].copy(), target_index=tidx.copy(),
                       reference_index=ref.astype(np.int64), name=self.name,
                       params={"min_diff_used": md, "k_used": k}, fx=fx, fr=fpool[ref].copy(),
                       skipped=np.asarray(skipped, np.int64),
                       info={"distance": np.sqrt(d2[rows, best]), "n_candidates": n_kept,
                             "min_diff": min_diff})


def _pool_values(f, pool, name):
    """(precomputed f(pool) or None, Model or None)."""
    if f is None:
        raise ValueError(f"policy {name!r} needs the model f.")
    if isinstance(f, np.ndarray) and not callable(f):
        v = as_float_array("f (precomputed values f(X_pool))", f, ndim=(1,))
        if v.shape[0] != pool.shape[0]:
            raise ValueError(
                f"f given as precomputed values must have one value per pool point "
                f"({pool.shape[0]}); got {v.shape[0]}."
            )
        return v, None
    return None, as_model(f)


