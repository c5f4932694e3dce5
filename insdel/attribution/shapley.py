"""Shapley-value methods with the single baseline r: Kernel SHAP (sampled) and exact Shapley."""

from __future__ import annotations

import warnings

import numba as nb
import numpy as np
from numpy.typing import ArrayLike

from .._progress import progress_bar
from .._validation import check_positive_int
from ..adapter import Model
from .base import Attribution, captum_per_point, module_forward

DEFAULT_KS_SAMPLES = 2000
PAPER_KS_SAMPLES = 120_000


class KernelShap(Attribution):
    """Kernel SHAP (Lundberg & Lee) with the single baseline r (paper §5, Appendix A.3).

    The attributions are the weighted least squares fit of the model at sampled coalitions'
    hybrids (conventions: *Points, attributions, orderings*) with the intercept at f(r) and
    efficiency, ``sum_j a_j = f(x) - f(r)`` (conventions: *Anchored decomposition*), as a
    constraint. The two implementations (``backend=``) hold that constraint differently:

    * ``backend="insdel"`` (default) enforces it exactly, as shap's ``KernelExplainer`` does: one
      coefficient is eliminated and the rest are fitted (``completeness_gap_`` is rounding only,
      whatever ``n_samples`` is);
    * ``backend="captum"`` (captum's ``KernelShap``) enforces it only approximately: the all-ones
      and all-zeros coalitions enter the fit as rows of weight 10^6, so the sum falls short of
      f(x) - f(r) by an amount that grows with ``n_samples`` (measured on a 6-feature float64
      MLP: about 5e-5 of f(x) - f(r) at 2,000 samples, 5e-4 at 20,000, 5e-3 at 200,000).

    Pairs with 2^|D| <= ``n_samples`` take the exact road (``exact="auto"``) with either backend.

    On a tree ensemble insdel reads (``engine="auto"``, the default, or ``"tree"``; insdel's
    backend) the coalitions' values come from the trees' closed forms instead of model rows
    (:mod:`insdel.trees`): the same coalitions are drawn, so the same numbers to rounding, and the
    exact road is the trees' exact Shapley values at any |D|.

    Parameters
    ----------
    f : model
        Any model :func:`insdel.as_model` accepts.
    """

    name = "kernel_shap"
    revision = 2  # insdel's backend holds efficiency exactly (revision 1 weighted it by 10^6)
    reads_rows = None  # the game's coalition values

    def attribute(self, X: ArrayLike, R: ArrayLike, *, n_samples: int = DEFAULT_KS_SAMPLES,
                  perturbations_per_eval: int = 4096, seed: int = 0, backend: str = "insdel",
                  chunk_rows: int = 1 << 18, exact: str = "auto",
                  progress: bool | None = None, groups=None, removal=None,
                  engine: str = "auto") -> np.ndarray:
        """Kernel SHAP attributions (B, n) of targets ``X`` against references ``R``.

        Parameters
        ----------
        X, R : array_like (B, n)
            Targets and references (a 1-D R is one reference for every target).
        n_samples : int, default 2000
            Coalitions per point, the all-ones and all-zeros coalitions included (they give f(x)
            and f(r); ``backend="captum"`` fits them as rows of weight 10^6).
            The paper used 120,000 (``PAPER_KS_SAMPLES``) on the 38-feature housing data; for small
            n, ``exact_shapley`` is exact with 2^n evaluations.
        perturbations_per_eval : int, default 4096
            Coalitions evaluated per model call (captum backend).
        seed : int, default 0
            Seed of the coalitions (captum samples with torch's generator, whose global state is
            restored afterwards).
        backend : {"insdel", "captum"}, default "insdel"
            ``"insdel"``: captum's sampling of coalitions, vectorised over points (numpy
            sampling, each distinct hybrid evaluated once -- at most 2^|D| rows per pair
            whatever ``n_samples`` is --, batched least squares with efficiency held exactly,
            :func:`_kernel_shap_fit`); agrees with captum in distribution (tested), not
            bit-identical (other random numbers, and captum's approximate efficiency).
            ``"captum"``: captum's ``KernelShap``, point by point (one model call per
            ``perturbations_per_eval`` coalitions); efficiency only approximately.
        chunk_rows : int, default 262144
            Rows per model call of the insdel backend.
        exact : {"auto", "never"}, default "auto"
            ``"auto"``: a pair whose differing features D satisfy 2^|D| <= ``n_samples`` gets its
            exact baseline Shapley values (what Kernel SHAP estimates, computed in D with 2^|D|
            evaluations: cheaper and exact); the others are sampled. ``"never"``: sample every
            pair (to reproduce a paper's sampled row). ``info_["exact_pairs"]`` counts the pairs
            that took the exact road and ``info_["exact"]`` marks them.
        progress : bool, optional
            Progress bar (default: only on long runs in a terminal).
        groups : optional
            Kernel SHAP of the group game over m groups (:mod:`insdel.groups`), shape (B, m):
            coalitions are drawn over the m groups (each group one player, its columns moved
            together) and the fit has one coefficient per group; the exact road
            (``exact="auto"``) applies when 2^|D| <= ``n_samples`` with D the groups that differ.
            Both backends (captum's through its ``feature_mask``).
        removal : str or insdel.removal.Removal, optional
            What a removed feature becomes (:mod:`insdel.removal`). None or ``"baseline"``: the
            hybrids with r, as above. Otherwise every coalition's value is v(u) under the
            removal: ``marginal``, the mean of f over the hybrids with the K references
            (shap's ``KernelExplainer`` with K background rows); a sampled removal, the mean of f
            over its M rows (:func:`insdel.removal.values.coalition_values`, each distinct
            coalition of a pair once). The intercept is v(∅) and efficiency holds exactly
            against ``v(all) - v(∅)``. The exact road takes D as the removal's differing
            units (the union over the K references; every unit for a sampled removal) and
            computes the removal's exact Shapley values
            (:func:`insdel.decomposition.shapley_values` with ``removal=``). insdel's backend
            only: ``backend="captum"`` (one baseline per point) refuses another removal.
        engine : {"auto", "tree", "black_box"}, default "auto"
            Where the coalitions' values come from (:func:`insdel.game.as_game`): ``auto``, a
            tree ensemble's closed forms when the model is one insdel reads and the removal has
            a tree game (``baseline``, shared-reference ``marginal``), else the model's values
            on hybrid rows; ``tree``, the closed forms or an error; ``black_box``, model rows.
            The same coalitions are drawn either way. ``backend="captum"`` evaluates model rows
            (``engine="tree"`` with it is an error). ``info_["engine"]`` says which ran.

        Returns
        -------
        ndarray of float64, shape (B, n) (or (B, m) with groups)

        Warns
        -----
        UserWarning
            insdel backend: when a pair's sampled coalitions do not determine all its attributions
            (rank-deficient least squares, e.g. ``n_samples`` below n + 1); those pairs get the
            minimum-norm solution, still efficient, and ``info_["underdetermined"]`` marks them.
        """
        ns = check_positive_int(n_samples, "n_samples", minimum=2)
        check_positive_int(perturbations_per_eval, "perturbations_per_eval")
        check_positive_int(chunk_rows, "chunk_rows")
        check_positive_int(seed, "seed", minimum=0)  # None or 2.5: not a repeatable run
        from .base import check_backend

        backend = check_backend(backend, self.name)
        engine = self._engine(engine, backend=backend)
        if exact not in ("auto", "never"):
            raise ValueError(f"kernel_shap: exact must be 'auto' or 'never'; got {exact!r}.")

        from ._removal import refuse_captum, single_reference

        def compute(game):
            model, X, grp = game.model, game.X, game.groups
            R = single_reference(game)
            if R is None:
                if backend == "captum":
                    refuse_captum("kernel_shap", game, "KernelShap", "coalition")
                return _kernel_shap_removal(game, ns, seed, chunk_rows, exact, progress)
            from ..decomposition import subspace_shapley

            B = X.shape[0]
            diff = X != R
            d = diff.sum(axis=1) if grp is None else grp.reduce_any(diff).sum(axis=1)
            is_exact = (d <= np.log2(ns)) if exact == "auto" else np.zeros(B, bool)
            A = np.empty((B, X.shape[1] if grp is None else grp.m))
            ex = np.flatnonzero(is_exact)
            if ex.size:
                # the model's rows, as the game's (auto would read a tree ensemble's game)
                A[ex] = subspace_shapley(model, X, R, pairs=ex, max_d=int(np.log2(ns)),
                                         progress=progress, groups=grp,
                                         engine="black_box")[0][ex]
            rest = np.flatnonzero(~is_exact)
            distinct = 0
            underdetermined = np.zeros(B, bool)
            if rest.size:
                if backend == "insdel":
                    A[rest], distinct, deficient = _kernel_shap_batched(
                        model, X[rest], R[rest], ns, seed, chunk_rows, progress, groups=grp)
                    underdetermined[rest] = deficient
                    _warn_deficient(deficient, B, ns, A.shape[1], "f(x) - f(r)")
                else:
                    from captum.attr import KernelShap as _KS

                    A[rest] = captum_per_point(_KS(module_forward(model)), X[rest], R[rest], ns,
                                               perturbations_per_eval, seed, progress,
                                               "kernel shap", groups=grp)
            info = {"n_samples": ns, "backend": backend, "exact": is_exact,
                    "exact_pairs": int(ex.size), "sampled_distinct_rows": int(distinct),
                    "underdetermined": underdetermined}
            if grp is not None:
                info["groups"] = grp.m
            return A, info

        return self._run(X, R, compute, removal=removal, groups=groups, engine=engine)


def _warn_deficient(deficient: np.ndarray, B: int, ns: int, m: int, total: str) -> None:
    if deficient.any():
        warnings.warn(
            f"kernel_shap: for {int(deficient.sum())} of {B} pairs the "
            f"n_samples={ns} coalitions do not determine all {m} "
            "attributions (rank-deficient least squares); those pairs get the "
            f"minimum-norm solution, which still adds up to {total}. Raise "
            "n_samples (info_['underdetermined'] marks the pairs).", stacklevel=5)


def _kernel_shap_removal(game, ns: int, seed: int, chunk_rows: int, exact: str, progress
                         ) -> tuple[np.ndarray, dict]:
    """Kernel SHAP (insdel backend) of a game without one reference per target: the exact road
    by :func:`insdel.decomposition.shapley_values` of the game's pairs that take it (a game that
    knows its Shapley values in closed form, a tree game, gives them at any |D|), the sampled
    one by :func:`_kernel_shap_batched` with v(u) from the game
    (:func:`insdel.attribution._removal.values_fn`)."""
    from ..decomposition import shapley_values
    from ._removal import take, values_fn

    model, X, grp = game.model, game.X, game.groups
    B = game.B
    d = game.differing().sum(axis=1)
    is_exact = (d <= np.log2(ns)) if exact == "auto" else np.zeros(B, bool)
    A = np.empty((B, game.m))
    ex = np.flatnonzero(is_exact)
    if ex.size and game.knows("shapley"):
        A[ex] = game.shapley()[ex]
    elif ex.size:
        A[ex] = shapley_values(take(game, ex), None, None, max_d=int(np.log2(ns)),
                               progress=progress)
    rest = np.flatnonzero(~is_exact)
    distinct = 0
    underdetermined = np.zeros(B, bool)
    if rest.size:
        A[rest], distinct, deficient = _kernel_shap_batched(
            model, X[rest], None, ns, seed, chunk_rows, progress, groups=grp,
            values=values_fn(game, rest))
        underdetermined[rest] = deficient
        _warn_deficient(deficient, B, ns, A.shape[1], "v(all) - v(∅)")
    info = {"n_samples": ns, "backend": "insdel", "exact": is_exact,
            "exact_pairs": int(ex.size), "sampled_distinct_rows": int(distinct),
            "underdetermined": underdetermined}
    if grp is not None:
        info["groups"] = grp.m
    return A, info


@nb.njit(cache=True, nogil=True)
def _draw_members(sizes, u, masks):  # pragma: no cover - numba
    """``masks[p, s]`` gets ``sizes[p, s]`` members, uniform given the size (partial Fisher-Yates
    driven by the uniforms ``u[p, s, :size]``)."""
    P, S = sizes.shape
    n = masks.shape[2]
    idx = np.empty(n, np.int64)
    for p in range(P):
        for s in range(S):
            for j in range(n):
                idx[j] = j
            for t in range(sizes[p, s]):
                j = t + int(u[p, s, t] * (n - t))
                if j >= n:
                    j = n - 1
                idx[t], idx[j] = idx[j], idx[t]
                masks[p, s, idx[t]] = True


def _kernel_shap_batched(model: Model, X, R, n_samples: int, seed: int, chunk_rows: int,
                         progress, groups=None, values=None) -> tuple[np.ndarray, int, np.ndarray]:
    """Kernel SHAP vectorised over points (``backend="insdel"``): captum's sampling, efficiency
    as an exact constraint.

    The coalitions are captum's ``KernelShap``'s: the all-ones and all-zeros coalitions, then
    ``n_samples - 2`` coalitions whose size k is drawn with probability proportional to
    (n - 1) / (k (n - k)) and whose members are uniform given k (weight 1). The all-ones and
    all-zeros coalitions give f(x) and f(r); the sampled ones are fitted by
    :func:`_kernel_shap_fit`, which holds ``phi_0 = f(r)`` and ``sum_j phi_j = f(x) - f(r)``
    exactly (captum weights the two end coalitions 10^6 instead, so its sum falls short by an
    amount that grows with ``n_samples``).

    A coalition's hybrid depends only on its intersection with the pair's differing features
    D = {j : x_j != r_j}, so each pair needs at most ``min(n_samples, 2^|D|)`` distinct model rows:
    those are found per pair and evaluated once, in large model calls
    (:func:`insdel.attribution._sampling.evaluate_coalitions`); the fits are batched in float64.
    Different random numbers from captum's (numpy's generator).

    With ``groups`` (a :class:`insdel.groups.Groups` of m groups) the players are the groups: the
    coalitions are drawn over m players, expanded to their columns for the hybrids, and the fit
    has m coefficients (Kernel SHAP of the group game).

    ``values(b0, cols) -> (y, distinct)`` (:func:`insdel.attribution._removal.values_fn`), when given, replaces the
    hybrids with r: v of the coalitions under a removal (R is then not read; the all-ones and
    all-zeros coalitions give v(all) and v(∅)).

    Returns the attributions (B, n) (or (B, m)), the number of distinct rows evaluated and a
    boolean (B,) marking the pairs whose sampled coalitions did not determine every coefficient.
    """
    from ._sampling import evaluate_coalitions

    B = X.shape[0]
    n = X.shape[1] if groups is None else groups.m
    if values is None:
        Xd = np.ascontiguousarray(X, dtype=model.dtype)
        Rd = np.ascontiguousarray(R, dtype=model.dtype)

        def values(b0, cols):
            return evaluate_coalitions(model, Xd, Rd, b0, cols)
    if n == 1:
        if R is not None:
            return (model(X) - model(R))[:, None], 2 * B, np.zeros(B, bool)
        ends = np.zeros((B, 2, X.shape[1]), bool)
        ends[:, 0] = True
        y, d = values(0, ends)
        return (y[:, 0] - y[:, 1])[:, None], d, np.zeros(B, bool)
    rng = np.random.default_rng(seed)
    k = np.arange(1, n)
    p = (n - 1) / (k * (n - k))
    p /= p.sum()
    S = n_samples
    w = np.ones(S - 2)  # the size distribution already carries the Shapley kernel
    out = np.empty((B, n))
    deficient = np.zeros(B, bool)
    step = max(1, int(chunk_rows) // S)
    distinct = 0
    with progress_bar(B, "kernel shap", "point", enable=progress, auto=B * S > 1 << 22) as bar:
        for b0 in range(0, B, step):
            b1 = min(B, b0 + step)
            P = b1 - b0
            sizes = rng.choice(k, size=(P, S - 2), p=p)
            masks = np.zeros((P, S, n), bool)
            masks[:, 0] = True
            _draw_members(sizes, rng.random((P, S - 2, n)), masks[:, 2:])
            cols = masks if groups is None else np.ascontiguousarray(groups.expand(masks))
            y, d = values(b0, cols)
            distinct += d
            out[b0:b1], rank = _kernel_shap_fit(masks[:, 2:], y[:, 2:], w, y[:, 0], y[:, 1])
            deficient[b0:b1] = rank < n - 1
            bar.update(P)
    return out, distinct, deficient


def _kernel_shap_fit(Z: np.ndarray, y: np.ndarray, w: np.ndarray, fx: np.ndarray,
                     fr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kernel SHAP's weighted least squares with efficiency held exactly, P problems at once.

    For each problem, with T = f(x) - f(r), solves::

        minimise over phi   sum_s w_s (y_s - f(r) - z_s . phi)^2
        subject to          sum_j phi_j = T,

    i.e. the intercept phi_0 is fixed at f(r) and the empty and full coalitions are constraints
    (their Shapley-kernel weight is infinite), not rows. As shap's ``KernelExplainer`` does, the
    constraint eliminates the last coefficient, ``phi_n = T - sum_{j<n} phi_j``, and the other
    n - 1 are the weighted least squares fit of ``y_s - f(r) - z_sn T`` on ``z_sj - z_sn``
    (no intercept). The sum of the result equals T up to rounding whatever the samples are.

    The normal equations are solved through an eigendecomposition of their (n - 1)^2 Gram
    matrix; when the coalitions do not determine every coefficient (fewer distinct coalitions
    than coefficients, for instance), the minimum-norm least-squares solution is taken and the
    returned rank is below n - 1.

    With every proper coalition once and ``w`` the Shapley kernel
    ``(n - 1) / (C(n, |z|) |z| (n - |z|))``, the result is the exact Shapley values of the game
    (conventions, *Anchored decomposition*).

    Parameters
    ----------
    Z : ndarray (P, S, n)
        Coalitions, 1 (or True) where the player comes from x. Rows with every player in or every
        player out may be included: after the elimination they are zero rows.
    y : ndarray (P, S)
        The model at each coalition's hybrid.
    w : ndarray (S,) or (P, S)
        Non-negative weights of the coalitions.
    fx, fr : ndarray (P,)
        f(x) and f(r) of each problem.

    Returns
    -------
    phi : ndarray (P, n)
        The attributions (without phi_0 = f(r)).
    rank : ndarray of int (P,)
        Rank of each fit's Gram matrix; ``n - 1`` when the coalitions determine the attributions.
    """
    Z = np.asarray(Z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    fx = np.asarray(fx, dtype=np.float64)
    fr = np.asarray(fr, dtype=np.float64)
    P, S, n = Z.shape
    T = fx - fr
    phi = np.empty((P, n))
    if n == 1:
        phi[:, 0] = T
        return phi, np.zeros(P, np.int64)
    t = y - fr[:, None] - Z[..., -1] * T[:, None]
    # the Gram matrix and right-hand side of the regressors z_j - z_n, from those of z
    Zw = Z * np.broadcast_to(np.asarray(w, dtype=np.float64), (P, S))[..., None]
    M = np.matmul(Zw.transpose(0, 2, 1), Z)
    v = np.matmul(Zw.transpose(0, 2, 1), t[..., None])[..., 0]
    G = M[:, :-1, :-1] - M[:, :-1, -1:] - M[:, -1:, :-1] + M[:, -1:, -1:]
    c = v[:, :-1] - v[:, -1:]
    lam, V = np.linalg.eigh(G)
    # numpy's matrix_rank threshold: eigenvalues below it are rounding noise of a zero
    keep = lam > lam[:, -1:] * (n - 1) * np.finfo(np.float64).eps
    inv = np.divide(1.0, lam, out=np.zeros_like(lam), where=keep)
    coef = np.einsum("pjk,pk->pj", V, inv * np.einsum("pjk,pj->pk", V, c))
    phi[:, :-1] = coef
    phi[:, -1] = T - coef.sum(axis=1)
    return phi, keep.sum(axis=1)


class ExactShapley(Attribution):
    """Exact baseline Shapley values from the anchored decomposition (conventions: *Anchored
    decomposition*; the paper's "exact KS" on the 16-feature CERN data): ``sum_j a_j = f(x) - f(r)``
    exactly. Computed by :func:`insdel.decomposition.subspace_shapley`, the route of
    :func:`insdel.decomposition.shapley_values` (it also returns |D| per pair).

    Parameters
    ----------
    f : model
        Any model :func:`insdel.as_model` accepts.
    """

    name = "exact_shapley"
    reads_rows = None  # the game's coalition values (or its closed-form Shapley values)

    def attribute(self, X: ArrayLike, R: ArrayLike, *, batch_size: int | None = None,
                  progress: bool | None = None, max_d: int = 20, groups=None,
                  removal=None, engine: str = "auto") -> np.ndarray:
        """Exact baseline Shapley values (B, n): ``phi_j = sum_{u ∋ j} Delta_u / |u|``, computed in
        each pair's differing subspace D (2^|D| evaluations per pair, whatever n is).

        Parameters
        ----------
        X, R : array_like (B, n)
            Targets and references.
        batch_size : int, optional
            Rows per model call.
        progress : bool, optional
            Progress bar.
        max_d : int, default 20
            Refuse pairs with more differing features (the error names the pair and the cost).
        groups : optional
            Shapley values of the group game over m groups (:mod:`insdel.groups`): one player per
            group, shape (B, m).
        removal : str or insdel.removal.Removal, optional
            What a removed feature becomes (:mod:`insdel.removal`). None or ``"baseline"``: the
            game ``f(hybrid(x, r, u))``, as above. Otherwise the exact Shapley values of v under
            the removal (:func:`insdel.decomposition.shapley_values` with ``removal=``):
            ``marginal`` gives the interventional SHAP values over the K references (the mean
            of the K single-reference exact Shapley values: v is their mean and Shapley values
            are linear in v), in D = the union of the K references' differing units; a sampled
            removal the conditional ones, every unit removable (n <= ``max_d``). Rows sum to
            ``v(all) - v(∅)``.
        engine : {"auto", "tree", "black_box"}, default "auto"
            ``auto``: on a tree ensemble insdel reads, under a removal with a tree game
            (``baseline``, shared-reference ``marginal``, ``path_dependent``), the trees' exact
            Shapley values in closed form at any |D| (``max_d`` does not apply); otherwise,
            and with ``black_box``, 2^|D| model values per pair. ``tree``: the closed form or an
            error. ``info_["engine"]`` says which ran.

        Returns
        -------
        ndarray of float64, shape (B, n) (or (B, m) with groups)
        """
        from ..decomposition import batch_decomposition, subspace_shapley
        from ._removal import single_reference

        engine = self._engine(engine)

        def compute(game):
            if game.knows("shapley"):  # a tree game: exact at any |D|
                return game.shapley(), {"d": game.differing().sum(axis=1)}
            R = single_reference(game)
            if R is None:
                dec = batch_decomposition(game, None, None, progress=progress, max_d=max_d)
                return dec.shapley(), {"d": dec.d}
            phi, d = subspace_shapley(game, None, None, max_d=max_d, progress=progress)
            return phi, {"d": d}

        return self._run(X, R, compute, removal=removal, groups=groups, batch_size=batch_size,
                         engine=engine)


def _groups_of(groups, X):
    """Validated groups for the columns of X (None for none or singleton groups)."""
    from ..groups import check_groups

    if groups is None:
        return None
    n = np.shape(X)[-1]
    grp = check_groups(groups, n)
    return None if grp.singleton else grp
