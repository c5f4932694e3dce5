"""DeepLIFT (rescale rule) with baselines r, PReLU treated as a nonlinearity (Appendix A.3)."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
from numpy.typing import ArrayLike

from .._progress import progress_bar
from .._validation import check_positive_int
from .base import Attribution


@contextlib.contextmanager
def _prelu_as_nonlinearity(enable: bool):
    """Temporarily register nn.PReLU with captum DeepLift's rescale rule (Appendix A.3)."""
    import torch
    from captum.attr._core import deep_lift as dl

    added = enable and torch.nn.PReLU not in dl.SUPPORTED_NON_LINEAR
    if added:
        dl.SUPPORTED_NON_LINEAR[torch.nn.PReLU] = dl.nonlinear
    try:
        yield
    finally:
        if added:
            dl.SUPPORTED_NON_LINEAR.pop(torch.nn.PReLU, None)


class DeepLift(Attribution):
    """DeepLIFT (captum ``DeepLift``, rescale rule) with baselines r (Appendix A.3).

    PReLU is treated as an ordinary elementwise nonlinearity (rescale multipliers Δy/Δx), as the
    paper did; captum alone would pass plain gradients through it. Nonlinearities must be modules
    (``nn.ReLU``, ``nn.PReLU``, ...), each used once.

    Parameters
    ----------
    f : torch.nn.Module
        A differentiable model.
    """

    name = "deeplift"
    needs_gradients = True

    def attribute(self, X: ArrayLike, R: ArrayLike, *, chunk_rows: int = 4096,
                  prelu_rescale: bool = True, eps: float = 1e-10,
                  progress: bool | None = None) -> np.ndarray:
        """DeepLIFT attributions (B, n) of targets ``X`` against references ``R``.

        Parameters
        ----------
        X, R : array_like (B, n)
            Targets and references.
        chunk_rows : int, default 4096
            Points per captum call.
        prelu_rescale : bool, default True
            Apply the rescale rule to ``nn.PReLU`` (the paper's choice); False is captum's own
            behaviour (gradients through PReLU, completeness lost).
        eps : float, default 1e-10
            captum's threshold below which Δx is treated as zero.
        progress : bool, optional
            Progress bar.

        Returns
        -------
        ndarray of float64, shape (B, n)
        """
        cs = check_positive_int("chunk_rows", chunk_rows)

        def compute(model, X, R):
            import torch
            from captum.attr import DeepLift as _DL

            module = model.torch_module
            B, n = X.shape
            A = np.empty((B, n))
            with torch.no_grad():
                probe = module(torch.from_numpy(X[:1].astype(model.dtype)).to(
                    device=model.device, dtype=model.torch_dtype))
            target = 0 if probe.ndim == 2 else None
            dl = _DL(module, eps=eps)
            with _prelu_as_nonlinearity(prelu_rescale), warnings.catch_warnings(), \
                    progress_bar(B, "deeplift", "point", enable=progress, auto=B > 1 << 16) as bar:
                warnings.simplefilter("ignore", UserWarning)
                for s in range(0, B, cs):
                    e = min(B, s + cs)
                    xt = torch.from_numpy(X[s:e].astype(model.dtype)).to(
                        device=model.device, dtype=model.torch_dtype)
                    rt = torch.from_numpy(R[s:e].astype(model.dtype)).to(
                        device=model.device, dtype=model.torch_dtype)
                    a = dl.attribute(xt, baselines=rt, target=target)
                    A[s:e] = a.detach().to("cpu", torch.float64).numpy()
                    model.count(2 * (e - s))  # captum's own passes over x and r
                    bar.update(e - s)
            return A, {}

        return self._run(X, R, compute)
