"""LIME with the policy's reference: features "off" take r's value (paper Appendix A.3)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_positive_int
from .base import Attribution, captum_per_point, module_forward

DEFAULT_LIME_SAMPLES = 1000


class Lime(Attribution):
    """LIME (captum ``Lime``) with baseline r.

    captum's defaults otherwise: ``SkLearnLasso(alpha=0.01)`` as the interpretable model, an
    exponential kernel on the cosine distance, Bernoulli(1/2) perturbations.

    Parameters
    ----------
    f : model
        Any model :func:`insdel.as_model` accepts.
    """

    name = "lime"

    def attribute(self, X: ArrayLike, R: ArrayLike, *, n_samples: int = DEFAULT_LIME_SAMPLES,
                  perturbations_per_eval: int = 4096, seed: int = 0,
                  interpretable_model: Any = None, progress: bool | None = None) -> np.ndarray:
        """LIME attributions (B, n) of targets ``X`` against references ``R``.

        Parameters
        ----------
        X, R : array_like (B, n)
            Targets and references.
        n_samples : int, default 1000
            Perturbations per point (captum's own default is 50; the paper used captum "with
            default set arguments").
        perturbations_per_eval : int, default 4096
            Perturbations evaluated per model call.
        seed : int, default 0
            Seed of the perturbations (torch's global generator state is restored).
        interpretable_model : captum interpretable model, optional
            Default: captum's ``SkLearnLasso(alpha=0.01)``.
        progress : bool, optional
            Progress bar.

        Returns
        -------
        ndarray of float64, shape (B, n)
        """
        ns = check_positive_int("n_samples", n_samples, minimum=2)
        check_positive_int("perturbations_per_eval", perturbations_per_eval)

        def compute(model, X, R):
            from captum.attr import Lime as _Lime

            lime = _Lime(module_forward(model), interpretable_model=interpretable_model)
            A = captum_per_point(lime, X, R, ns, perturbations_per_eval, seed, progress, "lime")
            return A, {"n_samples": ns}

        return self._run(X, R, compute)
