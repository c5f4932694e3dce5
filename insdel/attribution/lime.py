"""LIME with the policy's reference: features "off" take r's value (paper Appendix A.3).

Two implementations (``backend=``) compute captum's default LIME estimator: ``"insdel"`` (default)
vectorised over points, ``"captum"`` point by point through captum's ``Lime``. insdel's reads the
perturbations' values from the game (``engine=``): a tree ensemble's closed forms or model rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._progress import progress_bar
from .._validation import check_positive_int, check_scalar
from ..adapter import Model
from .base import Attribution, captum_per_point, module_forward

DEFAULT_LIME_SAMPLES = 1000
#: The Lasso penalty of captum's default interpretable model, SkLearnLasso(alpha=0.01).
DEFAULT_LIME_ALPHA = 0.01


class Lime(Attribution):
    """LIME with baseline r: captum ``Lime``'s default estimator.

    Perturbations z are Bernoulli(1/2) over the n features (feature j from x where z_j = 1, from r
    otherwise); each is weighted by ``exp(-d^2 / (2 w^2))`` with d the cosine distance between x
    and the perturbed input and w the kernel width (``kernel_width``, captum's default 1); the
    attributions are the coefficients of a Lasso (``alpha = 0.01``, with intercept, scikit-learn's
    objective) of f(perturbed input) on z.

    Parameters
    ----------
    f : model
        Any model :func:`insdel.as_model` accepts.
    """

    name = "lime"
    reads_rows = None  # the game's coalition values (insdel's backend)

    def attribute(self, X: ArrayLike, R: ArrayLike, *, n_samples: int = DEFAULT_LIME_SAMPLES,
                  perturbations_per_eval: int = 4096, seed: int = 0, backend: str = "insdel",
                  alpha: float = DEFAULT_LIME_ALPHA, kernel_width: float = 1.0,
                  chunk_rows: int = 1 << 18,
                  interpretable_model: Any = None, progress: bool | None = None,
                  removal: Any = None, engine: str = "auto") -> np.ndarray:
        """LIME attributions (B, n) of targets ``X`` against references ``R``.

        Parameters
        ----------
        X, R : array_like (B, n)
            Targets and references.
        n_samples : int, default 1000
            Perturbations per point (captum's own default is 50; the paper used captum "with
            default set arguments").
        perturbations_per_eval : int, default 4096
            Perturbations evaluated per model call (captum backend).
        seed : int, default 0
            Seed of the perturbations (numpy's generator; with the captum backend torch's, whose
            global state is restored).
        backend : {"insdel", "captum"}, default "insdel"
            ``"insdel"``: the estimator vectorised over points: perturbations of many points drawn
            at once, each pair's distinct hybrids evaluated once (a perturbation's hybrid depends
            only on its intersection with D = {j : x_j != r_j}), the similarity weights computed
            in closed form, and all the weighted Lassos solved together by numba coordinate
            descent (:func:`insdel.attribution._sampling.weighted_lasso`, equal to scikit-learn's
            ``Lasso`` to 1e-7 in the tests). Agrees with captum in distribution (tested), not
            bit-identical. ``"captum"``: captum's ``Lime`` point by point.
        alpha : float, default 0.01
            The Lasso penalty (captum's ``SkLearnLasso(alpha=0.01)``), for both backends (the
            captum backend fits ``SkLearnLasso(alpha=alpha)`` unless ``interpretable_model`` is
            given, which then needs ``alpha`` left at its default).
        kernel_width : float, default 1.0
            Width w of the similarity kernel ``exp(-d^2 / (2 w^2))`` over the cosine distance d
            (captum's ``get_exp_kernel_similarity_function("cosine", w)``, its default 1.0):
            smaller widths weight the perturbations close to x more.
        chunk_rows : int, default 262144
            Perturbations per batch of points (insdel backend).
        interpretable_model : captum interpretable model, optional
            captum backend only. Default: ``SkLearnLasso(alpha=alpha)`` (captum's default model).
        progress : bool, optional
            Progress bar.
        removal : str or insdel.removal.Removal, optional
            What a removed feature becomes (:mod:`insdel.removal`). None or ``"baseline"``:
            features "off" take r's value, as above. Otherwise each perturbation's model value
            is replaced by v(z) under the removal (``marginal``: the mean of f over the hybrids
            with the K references; a sampled removal: the mean of f over its M rows); the
            perturbations and the Lasso are unchanged. The similarity weights are those of the
            hybrid of x with the removal's mean reference row (the mean of the K references, or
            of the M rows drawn for the empty coalition), so a removal with one fixed reference
            gives baseline LIME with that reference. insdel's backend only.
        engine : {"auto", "tree", "black_box"}, default "auto"
            Where the perturbations' values come from (:func:`insdel.game.as_game`): ``auto``,
            a tree ensemble's closed forms when the model is one insdel reads and the removal
            has a tree game, else the model's values on hybrid rows; ``tree``, the closed forms
            or an error; ``black_box``, model rows. The same perturbations and weights either
            way. ``backend="captum"`` evaluates model rows (``engine="tree"`` with it is an
            error). ``info_["engine"]`` says which ran.

        Returns
        -------
        ndarray of float64, shape (B, n)
        """
        ns = check_positive_int(n_samples, "n_samples", minimum=2)
        check_positive_int(perturbations_per_eval, "perturbations_per_eval")
        check_positive_int(chunk_rows, "chunk_rows")
        check_positive_int(seed, "seed", minimum=0)  # None or 2.5: not a repeatable run
        alpha = check_scalar(alpha, "alpha", float, min_val=0.0, finite=True)
        width = check_scalar(kernel_width, "kernel_width", float, min_val=0.0,
                             include_boundaries="neither", finite=True)
        from .base import check_backend

        backend = check_backend(backend, self.name)
        engine = self._engine(engine, backend=backend)
        if interpretable_model is not None and backend != "captum":
            raise ValueError("lime: interpretable_model is a captum model and needs "
                             "backend='captum' (the insdel backend fits the Lasso of alpha=).")
        if interpretable_model is not None and alpha != DEFAULT_LIME_ALPHA:
            raise ValueError(f"lime: alpha={alpha} and interpretable_model were both given; "
                             "the interpretable model has its own penalty (give one of them).")
        from ._removal import empty_rows, refuse_captum, single_reference, values_fn

        def compute(game):
            model, X = game.model, game.X
            R = single_reference(game)
            if R is None:
                if backend == "captum":
                    refuse_captum("lime", game, "Lime", "perturbation")
                values = values_fn(game, np.arange(game.B))
                A, distinct = _lime_batched(model, X, empty_rows(game).mean(axis=1), ns, seed,
                                            alpha, chunk_rows, progress, values=values,
                                            width=width)
                return A, {"n_samples": ns, "backend": backend, "distinct_rows": distinct}
            if backend == "insdel":
                A, distinct = _lime_batched(model, X, R, ns, seed, alpha, chunk_rows, progress,
                                            width=width)
                return A, {"n_samples": ns, "backend": backend, "distinct_rows": distinct}
            from captum.attr import Lime as _Lime

            interp = interpretable_model
            if interp is None:
                from captum._utils.models.linear_model import SkLearnLasso

                interp = SkLearnLasso(alpha=alpha)
            similar = {}
            if width != 1.0:  # captum's default similarity is this kernel of width 1
                from captum.attr._core.lime import get_exp_kernel_similarity_function

                similar["similarity_func"] = get_exp_kernel_similarity_function("cosine", width)
            lime = _Lime(module_forward(model), interpretable_model=interp, **similar)
            A = captum_per_point(lime, X, R, ns, perturbations_per_eval, seed, progress, "lime")
            return A, {"n_samples": ns, "backend": backend}

        return self._run(X, R, compute, removal=removal, engine=engine)


def _lime_batched(model: Model, X: np.ndarray, R: np.ndarray, n_samples: int, seed: int,
                  alpha: float, chunk_rows: int, progress,
                  values=None, width: float = 1.0) -> tuple[np.ndarray, int]:
    """captum's default LIME vectorised over points (``backend="insdel"``); returns the
    attributions (B, n) and the number of distinct rows evaluated.

    ``values(b0, masks) -> (y, distinct)``, when given, gives the perturbations' model values (a
    game's v, :func:`insdel.attribution._removal.values_fn`); R then only enters the
    similarity weights.

    The cosine distance between x and the hybrid h = z x + (1 - z) r needs no rows:
    ``x . h = z . (x^2 - r x) + r . x`` and ``|h|^2 = z . (x^2 - r^2) + |r|^2``.
    """
    from ._sampling import evaluate_coalitions, weighted_lasso

    B, n = X.shape
    rng = np.random.default_rng(seed)
    S = n_samples
    if values is None:
        Xd = np.ascontiguousarray(X, dtype=model.dtype)
        Rd = np.ascontiguousarray(R, dtype=model.dtype)

        def values(b0, masks):
            return evaluate_coalitions(model, Xd, Rd, b0, masks)
    out = np.empty((B, n))
    step = max(1, int(chunk_rows) // S)
    distinct = 0
    with progress_bar(B, "lime", "point", enable=progress, auto=B * S > 1 << 22) as bar:
        for b0 in range(0, B, step):
            b1 = min(B, b0 + step)
            P = b1 - b0
            masks = rng.random((P, S, n)) < 0.5
            y, d = values(b0, masks)
            distinct += d
            x, r = X[b0:b1], R[b0:b1]
            Z = masks.astype(np.float64)
            xh = Z @ (x * x - r * x)[..., None]
            hh = Z @ (x * x - r * r)[..., None]
            xh = xh[..., 0] + (r * x).sum(1)[:, None]
            hh = np.maximum(hh[..., 0] + (r * r).sum(1)[:, None], 0.0)
            nx = np.sqrt((x * x).sum(1))[:, None]
            cos = xh / np.maximum(nx * np.sqrt(hh), 1e-8)  # torch's CosineSimilarity eps
            w = np.exp(-((1.0 - cos) ** 2) / (2.0 * width * width))
            out[b0:b1] = weighted_lasso(Z, y, w, alpha)[0]
            bar.update(P)
    return out, distinct
