"""Model-free attributions of the observational cohort game (:class:`insdel.removal.Cohort`).

* ``cohort_shapley`` (Mase, Owen & Seiler, 2019): the Shapley values of the cohort game
  ``v(u)`` = the mean outcome over the data points similar to x on u; exact where 2^n is
  affordable, else from sampled orderings with standard errors.
* ``igcs`` (Hama, Mase & Owen, 2022): integrated gradients in the space of cohort indicators,
  the authors' cost-linear-in-n approximation of cohort Shapley values.

Both read only the data and its outcome (y, or the model's predictions at the data points): the
model ``f`` given to :func:`insdel.attribute` is not evaluated (it may be None), and the reference
R is ignored (the cohort game has no reference: ``v(∅)`` is the grand mean). Rows sum to
``v(all) - v(∅)``, the full cohort's mean outcome minus the grand mean.
"""

from __future__ import annotations

import time
from typing import Any

import numba as nb
import numpy as np
from numpy.typing import ArrayLike

from .._validation import as_float_array, check_positive_int, check_seed
from ..adapter import ModelLike, as_model
from ..removal.cohort import _similar
from .base import Attribution

__all__ = ["CohortShapley", "IGCS", "IGCS_RULES", "igcs_nodes"]

#: Quadrature rules of :class:`IGCS` (``rule=``).
IGCS_RULES = ("gauss", "trapezoid", "authors")
#: Per-target tables held at once (bytes).
_TABLE_BUDGET = 64 * 2**20


def _cohort(data, outcome, y, tolerance, categorical, empty, method: str):
    """The :class:`~insdel.removal.Cohort` game of a method's options (``y=``: ``outcome=``)."""
    from ..removal.cohort import Cohort

    if outcome is not None and y is not None:
        raise ValueError(f"{method}: give the outcome once, as outcome= or as y=; got both.")
    if data is None or (outcome is None and y is None):
        raise ValueError(f"{method} reads the observational cohort game: give data= (the "
                         "observed points, shape (N, n)) and outcome= (or y=: the observed "
                         "outcome, or the model's predictions at the data points, shape (N,)).")
    return Cohort(data, y if outcome is None else outcome, tolerance=tolerance,
                  categorical=categorical, empty=empty)


def _targets(X, game) -> np.ndarray:
    X = as_float_array("X", X, ndim=(1, 2))
    if X.ndim == 1:
        X = X[None, :]
    if X.shape[0] == 0 or X.shape[1] != game.n_features:
        raise ValueError(f"X must have shape (B, n) with n = {game.n_features} (data='s "
                         f"columns) and B >= 1; got {X.shape}.")
    return np.ascontiguousarray(X)


def _zeros(Z):
    """The stand-in model of a cohort method called with ``f=None`` (never evaluated)."""
    return np.zeros(len(Z))


class _CohortAttribution(Attribution):
    """A method of the cohort game: the model is optional and not evaluated, R is ignored."""

    requires = "values"
    reads_rows = "the data's cohort game (the model is never evaluated)"

    def __init__(self, f: ModelLike | None = None) -> None:
        self.f = f
        self.model = as_model(_zeros if f is None else f)
        self.seconds_ = float("nan")
        self.n_evals_ = 0
        self.completeness_gap_ = None
        self.info_: dict[str, Any] = {}

    def _finish(self, A: np.ndarray, game, X: np.ndarray, t0: float, info: dict) -> np.ndarray:
        """Time, efficiency gap (against ``v(all) - v(∅)``) and info of a result."""
        from .._validation import check_finite

        A = np.ascontiguousarray(A, dtype=np.float64)
        check_finite(f"{self.name}'s attributions", A)
        B, n = X.shape
        keep = np.concatenate([np.ones((B, n), bool), np.zeros((B, n), bool)])
        sums, counts = game.cohorts(np.concatenate([X, X]), keep, np.tile(np.arange(B), 2))
        if not counts[:B].all():
            bad = np.flatnonzero(counts[:B] == 0)
            raise ValueError(f"{self.name}: the full cohort of target(s) {bad[:10].tolist()} is "
                             "empty (x lies off the data); give empty='nearest'.")
        v = sums / np.abs(counts)
        v_full, v_empty = v[:B], v[B:]
        gap = A.sum(axis=1) - (v_full - v_empty)
        self.seconds_ = time.perf_counter() - t0
        self.completeness_gap_ = gap
        self.info_ = {**info, "v_full": v_full, "v_empty": v_empty,
                      "cohort_size": np.abs(counts[:B]), "tolerance": game.tolerance,
                      "delta": gap, "max_abs_delta": float(np.abs(gap).max())}
        return A


class CohortShapley(_CohortAttribution):
    """Cohort Shapley values (Mase, Owen & Seiler, 2019): the Shapley values of the observational
    cohort game :class:`insdel.removal.Cohort`.

    Exact (the anchored decomposition of the 2^n coalition values,
    :func:`insdel.decomposition.shapley_values`) when n <= ``max_d``; above it the mean marginal
    contribution over ``n_orderings`` antithetic random orderings
    (:func:`insdel.decomposition.sampled_shapley`), with its standard error in
    ``info["standard_error"]``. Either way each row sums to ``v(all) - v(∅)`` up to rounding.

    Parameters
    ----------
    f : model or None
        Not evaluated (the game is read off ``data`` and ``outcome``); None is accepted.
    """

    name = "cohort_shapley"

    def attribute(self, X: ArrayLike, R: ArrayLike | None = None, *, data=None, outcome=None,
                  y=None, tolerance: float = 0.1, categorical=None, empty: str = "raise",
                  max_d: int = 12, n_orderings: int = 64, seed: int = 0,
                  engine: str = "auto") -> np.ndarray:
        """Cohort Shapley values (B, n) of the targets ``X``.

        Parameters
        ----------
        X : array_like (B, n)
            Targets (data points, or any points with n features: see ``empty``).
        R : ignored
            The cohort game has no reference (``v(∅)`` is the grand mean); None is fine.
        data : array_like (N, n)
            The observed points.
        outcome : array_like (N,)
            Their outcome: the observed y, or the model's predictions ``f(data)``. ``y=`` is
            the same option under another name (give one of them).
        tolerance : float in [0, 1], default 0.1
            Similarity radius as a fraction of each feature's range (:class:`~insdel.removal.
            Cohort`).
        categorical : optional
            Columns similar only when equal.
        empty : {"raise", "nearest"}, default "raise"
            What an empty cohort gets (targets off the data; :class:`~insdel.removal.Cohort`).
        max_d : int, default 12
            Exact values when n <= ``max_d`` (2^n coalitions per target), else sampled.
        n_orderings : int, default 64
            Orderings per target when sampled (even: antithetic couples).
        seed : int, default 0
            Seed of the sampled orderings.
        engine : {"auto", "tree", "black_box"}, default "auto"
            The game's engine (:func:`insdel.game.as_game`): the method reads the data's cohort
            game and never evaluates the model, so ``auto`` and ``black_box`` are the same and
            ``tree`` is an error naming the method.

        Returns
        -------
        ndarray (B, n)
        """
        from ..decomposition import sampled_shapley, shapley_values

        self._engine(engine)
        seed = check_seed(seed)
        max_d = check_positive_int(max_d, "max_d")
        n_orderings = check_positive_int(n_orderings, "n_orderings", minimum=2)
        if n_orderings % 2:
            raise ValueError(f"n_orderings must be even (antithetic couples); got {n_orderings}.")
        t0 = time.perf_counter()
        game = _cohort(data, outcome, y, tolerance, categorical, empty, self.name)
        X = _targets(X, game)
        n = X.shape[1]
        if n <= max_d:
            A = shapley_values(self.model, X, None, removal=game, max_d=max_d)
            info = {"exact": True, "standard_error": None}
        else:
            A, se = sampled_shapley(self.model, X, None, removal=game, n_orderings=n_orderings,
                                    seed=seed)
            info = {"exact": False, "standard_error": se, "n_orderings": n_orderings}
        return self._finish(A, game, X, t0, info)


@nb.njit(parallel=True, cache=True, nogil=True)
def _igcs_tables(X, data, radius, exact, y, W, Y, A, Ay):  # pragma: no cover - numba
    """Per target b, the data points by their number c of dissimilar features: ``W[b, c]``
    (count), ``Y[b, c]`` (outcome sum), ``A[b, c, j]`` (those dissimilar on j) and ``Ay[b, c, j]``
    (their outcome sum)."""
    B, n = X.shape
    N = data.shape[0]
    for b in nb.prange(B):
        dis = np.empty(n, dtype=np.int64)
        x = X[b]
        for i in range(N):
            k = 0
            row = data[i]
            for j in range(n):
                if not _similar(row[j], x[j], radius[j], exact[j]):
                    dis[k] = j
                    k += 1
            yi = y[i]
            W[b, k] += 1.0
            Y[b, k] += yi
            for q in range(k):
                A[b, k, dis[q]] += 1.0
                Ay[b, k, dis[q]] += yi


def igcs_nodes(n_steps: int, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """Nodes t in [0, 1] and weights of the path integral over t (:class:`IGCS`'s ``rule``)."""
    if rule == "gauss":
        x, w = np.polynomial.legendre.leggauss(n_steps)
        return (x + 1.0) / 2.0, w / 2.0
    t = np.linspace(0.0, 1.0, n_steps + 1)
    if rule == "trapezoid":
        w = np.full(n_steps + 1, 1.0 / n_steps)
        w[[0, -1]] /= 2.0
        return t, w
    return t, np.full(n_steps + 1, 1.0 / (n_steps + 1))  # "authors": the mean of the gradients


class IGCS(_CohortAttribution):
    """Integrated gradients in the space of cohort indicators (IGCS; Hama, Mase & Owen, 2022).

    The cohort game relaxed to the unit cube: at ``z in [0, 1]^n`` data point i has the weight
    ``s_i(z) = prod_j (1 - z_j (1 - S_ij))`` (``S_ij`` = 1 when it is similar to x on feature j,
    :class:`insdel.removal.Cohort`), and ``nu(z) = sum_i s_i(z) y_i / sum_i s_i(z)``; at a corner
    ``z = 1_u`` it is the cohort value ``v(u)``. IGCS integrates the gradient of nu along the
    diagonal ``z = t 1`` from no feature (every point weighs 1: the grand mean) to all features::

        IGCS_j = int_0^1 d nu / d z_j (t 1) dt
               = -int_0^1 sum_i (1 - S_ij) (1 - t)^(c_i - 1) (y_i - nu(t 1)) / sum_i (1 - t)^c_i dt

    with ``c_i`` the number of features on which point i is dissimilar to x. Grouping the points
    by c_i makes every step cost O(n) per target after one O(N n) pass over the data (the
    authors' autograd costs O(N n) per step). The rows sum to ``nu(1) - nu(0) = v(all) - v(∅)``
    up to the quadrature's error, reported as ``completeness_gap`` (efficiency gap).

    IGCS equals cohort Shapley where nu is additive over the features (e.g. an additive outcome
    on a full factorial design) and approximates it elsewhere (the authors: nu is close to
    multilinear over most of the cube). A target whose full cohort is empty (off the data) has
    no IGCS: the integrand diverges like 1 / (1 - t) at t = 1; it is refused.

    Parameters
    ----------
    f : model or None
        Not evaluated; None is accepted.
    """

    name = "igcs"

    def attribute(self, X: ArrayLike, R: ArrayLike | None = None, *, data=None, outcome=None,
                  y=None, tolerance: float = 0.1, categorical=None, n_steps: int = 64,
                  rule: str = "gauss", engine: str = "auto") -> np.ndarray:
        """IGCS values (B, n) of the targets ``X``.

        Parameters
        ----------
        X : array_like (B, n)
            Targets whose full cohort is not empty (data points always qualify).
        R : ignored
            None is fine.
        data, outcome, y, tolerance, categorical
            The cohort game, as for ``cohort_shapley``.
        n_steps : int, default 64
            Quadrature nodes along the path (``rule="gauss"``) or intervals (the others).
        rule : {"gauss", "trapezoid", "authors"}, default "gauss"
            ``"gauss"``: Gauss-Legendre on [0, 1] (the integrand is smooth: error falls
            geometrically with ``n_steps``); ``"trapezoid"``: equally spaced, error O(1 /
            n_steps^2); ``"authors"``: the mean of the gradients at the ``n_steps + 1`` equally
            spaced points t = 0, 1 / n_steps, ..., 1, as ``cohortintgrad`` computes it (error
            O(1 / n_steps); its default is 500).
        engine : {"auto", "tree", "black_box"}, default "auto"
            As for ``cohort_shapley`` (the cohort game is read, never the model).

        Returns
        -------
        ndarray (B, n)
        """
        self._engine(engine)
        n_steps = check_positive_int(n_steps, "n_steps")
        if not isinstance(rule, str) or rule not in IGCS_RULES:
            raise ValueError(f"igcs: rule must be one of {list(IGCS_RULES)}; got {rule!r}.")
        t0 = time.perf_counter()
        game = _cohort(data, outcome, y, tolerance, categorical, "raise", self.name)
        X = _targets(X, game)
        B, n = X.shape
        L = n + 1
        t, w = igcs_nodes(n_steps, rule)
        u = 1.0 - t
        Pw = u[:, None] ** np.arange(L)  # (S, L): u^c
        Pm1 = np.zeros_like(Pw)
        Pm1[:, 1:] = Pw[:, :-1]  # u^(c - 1), 0 for c = 0
        yc = game.outcome - game.outcome.mean()  # nu's gradient is shift-free: less cancellation
        A = np.empty((B, n))
        per = max(1, _TABLE_BUDGET // (16 * L * n + 16 * L))
        for b0 in range(0, B, per):
            b1 = min(B, b0 + per)
            Wc = np.zeros((b1 - b0, L))
            Yc = np.zeros((b1 - b0, L))
            Ac = np.zeros((b1 - b0, L, n))
            Ayc = np.zeros((b1 - b0, L, n))
            _igcs_tables(X[b0:b1], game.data, game.radius, game.exact, yc, Wc, Yc, Ac, Ayc)
            if not (Wc[:, 0] > 0).all():
                bad = b0 + np.flatnonzero(Wc[:, 0] == 0)
                raise ValueError(f"igcs: the full cohort of target(s) {bad[:10].tolist()} is "
                                 "empty (x lies off the data): IGCS diverges there (its "
                                 "integrand grows like 1 / (1 - t)). Use targets that are data "
                                 "points, a larger tolerance, or cohort_shapley with "
                                 "empty='nearest'.")
            Dn = Wc @ Pw.T  # (b, S): the total weight
            nu = (Yc @ Pw.T) / Dn
            G1 = (w / Dn) @ Pm1  # (b, L): sum_s w_s u_s^(c - 1) / Dn_s
            G2 = (w * nu / Dn) @ Pm1
            A[b0:b1] = (np.einsum("bcj,bc->bj", Ac, G2) - np.einsum("bcj,bc->bj", Ayc, G1))
        return self._finish(A, game, X, t0, {"n_steps": n_steps, "rule": rule})
