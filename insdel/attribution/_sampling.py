"""Shared internals of the sampled perturbation methods (Kernel SHAP, LIME) vectorised over points:
each pair's distinct hybrids evaluated once, and a batched weighted Lasso (numba).

A coalition z (a boolean mask over the n features, True = the feature comes from x) gives the
hybrid ``hybrid(x, r, z)``, which depends only on z ∩ D, D = {j : x_j != r_j}: a pair needs at most
``min(S, 2^|D|)`` distinct model rows however many coalitions S are sampled.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..adapter import Model
from ..hybrids import build_rows, masks_to_words


def evaluate_coalitions(model: Model, Xd: np.ndarray, Rd: np.ndarray, b0: int,
                        masks: np.ndarray) -> tuple[np.ndarray, int]:
    """Model values of the hybrids of pairs ``b0 .. b0 + P - 1`` for coalitions ``masks`` (P, S, n).

    Each pair's distinct hybrids are found from the coalitions' D-bits (packed, ``np.unique``),
    built with :func:`insdel.hybrids.build_rows` and evaluated once, in one model call for the P
    pairs. Returns the values (P, S) and the number of distinct rows evaluated.
    """
    P, S, _ = masks.shape
    inv = np.empty((P, S), np.int64)
    uniq, owner, offset = [], [], 0
    for i in range(P):  # one vectorised pass per pair over its S coalitions
        D = np.flatnonzero(Xd[b0 + i] != Rd[b0 + i])
        if D.size:
            keys = np.ascontiguousarray(np.packbits(masks[i][:, D], axis=1))
            keys = keys.view(np.dtype((np.void, keys.shape[1])))[:, 0]
            _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        else:  # x == r: every coalition is the same row
            first, inverse = np.zeros(1, np.int64), np.zeros(S, np.int64)
        uniq.append(masks[i, first])
        owner.append(np.full(first.size, b0 + i))
        inv[i] = inverse.reshape(-1) + offset
        offset += first.size
    rows = build_rows(Xd, Rd, np.concatenate(owner), masks_to_words(np.concatenate(uniq)))
    return model(rows)[inv], offset


@nb.njit(parallel=True, cache=True, nogil=True)
def _lasso_gram(G, c, alpha, tol, max_iter, beta, n_iter):  # pragma: no cover - numba
    P, n, _ = G.shape
    for p in nb.prange(P):
        for it in range(max_iter):
            max_step = 0.0
            max_b = 0.0
            for j in range(n):
                gjj = G[p, j, j]
                old = beta[p, j]
                if gjj <= 0.0:
                    beta[p, j] = 0.0
                    continue
                rho = c[p, j]
                for k in range(n):
                    rho -= G[p, j, k] * beta[p, k]
                rho += gjj * old
                if rho > alpha:
                    new = (rho - alpha) / gjj
                elif rho < -alpha:
                    new = (rho + alpha) / gjj
                else:
                    new = 0.0
                beta[p, j] = new
                d = abs(new - old)
                if d > max_step:
                    max_step = d
                if abs(new) > max_b:
                    max_b = abs(new)
            n_iter[p] = it + 1
            if max_step <= tol * max(max_b, 1e-300) or max_b == 0.0 and max_step == 0.0:
                break


def weighted_lasso(Z: np.ndarray, y: np.ndarray, w: np.ndarray, alpha: float, *,
                   tol: float = 1e-10, max_iter: int = 10_000) -> tuple[np.ndarray, np.ndarray]:
    """Weighted Lasso with intercept for P problems at once, scikit-learn's objective.

    For each problem p, minimises over (b, beta)::

        1 / (2 S) * sum_s w'_s (y_s - b - z_s . beta)^2 + alpha * ||beta||_1,

    with ``w' = w * S / sum(w)`` (scikit-learn's ``Lasso.fit(Z, y, sample_weight=w)`` rescales the
    weights to sum to S). The intercept is removed by weighted centring; the rest is cyclic
    coordinate descent on the weighted Gram matrix (numba, parallel over problems), stopped when
    the largest coefficient change is below ``tol`` times the largest coefficient.

    Parameters
    ----------
    Z : ndarray (P, S, n)
    y, w : ndarray (P, S)
    alpha : float
    tol, max_iter : convergence control.

    Returns
    -------
    coef : ndarray (P, n)
    intercept : ndarray (P,)
    """
    Z = np.asarray(Z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    P, S, n = Z.shape
    w = w * (S / w.sum(axis=1, keepdims=True))
    zm = np.einsum("ps,psj->pj", w, Z) / S
    ym = (w * y).sum(axis=1) / S
    Zc = Z - zm[:, None, :]
    yc = y - ym[:, None]
    Zw = Zc * (w[..., None] / S)
    G = np.ascontiguousarray(np.matmul(Zw.transpose(0, 2, 1), Zc))
    c = np.ascontiguousarray(np.matmul(Zw.transpose(0, 2, 1), yc[..., None])[..., 0])
    beta = np.zeros((P, n))
    n_iter = np.zeros(P, np.int64)
    _lasso_gram(G, c, float(alpha), float(tol), int(max_iter), beta, n_iter)
    return beta, ym - np.einsum("pj,pj->p", zm, beta)
