"""Means and standard errors over independent units (clusters of pairs).

A policy may pair the same two points more than once: ``one_to_one`` evaluates every couple in
both directions, (x, r) and (r, x), and ``counterfactual`` can choose r for x and x for r. Such
pairs are one independent unit: with an attribution that changes sign with the pair (exact
Shapley, integrated gradients) the ordering reverses and both directions have the same ABC
(conventions: *Areas*; paper §3.1), so a standard error over pairs counts one value twice and is
about sqrt(2) too small. Means stay over all pairs (the paper's tables); standard errors are over
the units.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["mean_se", "unit_ids", "wilson_interval", "normal_quantile"]


def unit_ids(clusters: ArrayLike | None, n: int) -> np.ndarray:
    """Units numbered 0 .. G - 1 in order of first appearance, shape (n,); ``None``: every row its
    own unit (``arange(n)``)."""
    if clusters is None:
        return np.arange(n, dtype=np.int64)
    _, first, inv = np.unique(np.asarray(clusters), return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # unique ids sorted by first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inv.reshape(-1)].astype(np.int64)


def mean_se(v: ArrayLike, clusters: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Mean over all rows of ``v`` and its standard error over independent units.

    Parameters
    ----------
    v : array_like (P,) or (P, M)
        Values per pair (columns: methods), reduced over axis 0.
    clusters : array_like (P,), optional
        Unit id of each pair; pairs with the same id are one unit. None: every pair is a unit.

    Returns
    -------
    mean : ndarray (or float for 1-D ``v``)
        Mean over the P pairs.
    se : ndarray (or float)
        Without clusters (or with every pair its own unit): ``s.d.(v) / sqrt(P)``. With G < P
        units: the cluster-robust standard error of the mean,
        ``sqrt(G / (G - 1) * sum_g (sum_{i in g} (v_i - mean))^2) / P``, which equals
        ``s.d.(unit means) / sqrt(G)`` when every unit holds the same number of pairs (a couple's
        two directions averaged, then the standard error over couples). NaN with fewer than two
        units.
    units : int
        G, the number of independent units.
    """
    v = np.asarray(v, dtype=np.float64)
    P = v.shape[0]
    mean = v.mean(axis=0) if P else np.full(v.shape[1:], np.nan)
    u = unit_ids(clusters, P)
    G = int(u.max()) + 1 if P else 0
    if G < 2:
        se = np.full(v.shape[1:], np.nan)
    elif G == P:  # every pair its own unit: the plain standard error
        se = v.std(axis=0, ddof=1) / np.sqrt(P)
    else:
        sums = np.zeros((G, *v.shape[1:]))
        np.add.at(sums, u, v - mean)
        se = np.sqrt(G / (G - 1) * (sums ** 2).sum(axis=0)) / P
    if v.ndim == 1:
        return float(mean), float(se), G
    return mean, se, G


def normal_quantile(level: float) -> float:
    """z with P(|Z| <= z) = ``level`` for a standard normal Z (1.96 at 0.95)."""
    from statistics import NormalDist

    return float(NormalDist().inv_cdf(0.5 + level / 2.0))


def wilson_interval(p: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of a binomial proportion: ``p`` observed in ``n`` trials, at
    ``level`` (Wilson, 1927). Unlike p ± z s.e. it stays in [0, 1] and keeps its coverage near 0
    and 1 and for small n. ``n`` may be an effective number of trials (clustered trials: n over
    the design effect). (NaN, NaN) when n < 1."""
    if n < 1:
        return float("nan"), float("nan")
    z = normal_quantile(level)
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * np.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n)) / (1.0 + z2n)
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))
