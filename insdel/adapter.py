"""One model adapter used everywhere: torch modules, scikit-learn style estimators, plain callables.

Every part of insdel calls the model through :func:`as_model`, so the rules on batching, dtypes and
output shapes live in one place:

* a ``torch.nn.Module`` is put in eval mode and evaluated under ``torch.inference_mode`` in batches,
  in its own parameter dtype (float32 or float64) and on its own device;
* an object with a ``predict`` method (scikit-learn, xgboost, ...) is called as ``est.predict(X)``;
* any other callable is called on a float64 array of shape (B, n).

The output must have shape (B,) or (B, 1); anything else, or a non-finite value, raises an error that
names the rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Union

import numpy as np

from ._validation import _first

#: What :func:`as_model` accepts: a torch module, an estimator with ``predict``, a callable
#: ``(B, n) -> (B,)`` or an insdel :class:`Model`.
ModelLike = Union["Model", Callable[[np.ndarray], Any], Any]

# Rows per model call. On CPU, MLP throughput peaks around 4k-16k rows (activations stay in cache;
# 65,536-row batches of the paper's CERN MLP ran 2x slower per row); raise it for GPUs.
DEFAULT_BATCH_SIZE = 8192


class Model:
    """A model f: R^n -> R evaluated in batches on NumPy arrays.

    Parameters
    ----------
    fn : callable
        Function taking a 2-D array (B, n) and returning an array of B values.
    dtype : numpy dtype
        The input dtype the model computes in (hybrid points are built directly in it).
    batch_size : int
        Rows per call of ``fn``.
    torch_module : torch.nn.Module or None
        The wrapped module, when there is one (gradient-based attributions need it).

    Attributes
    ----------
    n_evals : int
        Number of rows evaluated so far (the compute an experiment reports).
    n_calls : int
        Number of calls of ``fn``.
    """

    def __init__(self, fn: Callable[[np.ndarray], Any], *, dtype=np.float64,
                 batch_size: int = DEFAULT_BATCH_SIZE, torch_module=None, name: str = "model"):
        self._fn = fn
        self.dtype = np.dtype(dtype)
        self.batch_size = int(batch_size)
        self.torch_module = torch_module
        self.name = name
        self.n_evals = 0
        self.n_calls = 0

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """Evaluate f on the rows of ``X`` (N, n); returns float64 values (N,)."""
        X = np.asarray(X)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2:
            raise ValueError(f"the model takes a 2-D array (B, n); got shape {X.shape}.")
        N = X.shape[0]
        out = np.empty(N, dtype=np.float64)
        bs = self.batch_size
        for start in range(0, N, bs):
            stop = min(start + bs, N)
            out[start:stop] = self._call_batch(X[start:stop], start)
        return out

    def _call_batch(self, Xb: np.ndarray, offset: int) -> np.ndarray:
        if Xb.dtype != self.dtype:
            Xb = Xb.astype(self.dtype)
        y = self._fn(np.ascontiguousarray(Xb))
        y = np.asarray(y, dtype=np.float64)
        B = Xb.shape[0]
        if y.shape == (B, 1):
            y = y[:, 0]
        elif y.shape != (B,):
            raise ValueError(
                f"{self.name} must return an array of shape (B,) or (B, 1) for B = {B} input rows; "
                f"got shape {y.shape}. Models with several outputs: wrap them so that they return the "
                "one output to explain."
            )
        bad = ~np.isfinite(y)
        if bad.any():
            rows = np.flatnonzero(bad) + offset
            raise ValueError(
                f"{self.name} returned non-finite values for {len(rows)} input row(s) "
                f"(rows {_first(rows)} of this call)."
            )
        self.n_evals += B
        self.n_calls += 1
        return y

    def __repr__(self) -> str:
        return f"Model({self.name}, dtype={self.dtype}, batch_size={self.batch_size})"


def _is_torch_module(f) -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a hard dependency
        return False
    return isinstance(f, torch.nn.Module)


def _torch_fn(module):
    import torch

    params = [p for p in module.parameters()] + [b for b in module.buffers()]
    floating = [p for p in params if p.is_floating_point()]
    tdtype = floating[0].dtype if floating else torch.float32
    device = floating[0].device if floating else torch.device("cpu")
    np_dtype = {torch.float32: np.float32, torch.float64: np.float64,
                torch.float16: np.float32, torch.bfloat16: np.float32}[tdtype]

    def fn(X: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            t = torch.from_numpy(X).to(device=device, dtype=tdtype, non_blocking=True)
            y = module(t)
            if isinstance(y, (tuple, list)):
                raise ValueError("the torch module returned a tuple/list; it must return one tensor.")
            return y.detach().to("cpu", torch.float64).numpy()

    return fn, np_dtype


def as_model(f, *, batch_size: int | None = None, dtype=None) -> Model:
    """Wrap ``f`` in the :class:`Model` adapter.

    Parameters
    ----------
    f : torch.nn.Module, estimator with ``predict``, callable, or Model
        The prediction function to test.
    batch_size : int, optional
        Rows per model call (default 8,192; larger batches help on a GPU).
    dtype : numpy dtype, optional
        Override the input dtype (default: the module's parameter dtype, else float64).

    Returns
    -------
    Model
    """
    if isinstance(f, Model):
        if batch_size is not None and batch_size != f.batch_size:
            m = Model(f._fn, dtype=f.dtype if dtype is None else dtype, batch_size=batch_size,
                      torch_module=f.torch_module, name=f.name)
            return m
        return f
    bs = DEFAULT_BATCH_SIZE if batch_size is None else int(batch_size)
    if bs < 1:
        raise ValueError(f"batch_size must be >= 1; got {batch_size}.")
    if _is_torch_module(f):
        f.eval()  # dropout off, batch-norm statistics frozen
        fn, np_dtype = _torch_fn(f)
        return Model(fn, dtype=np_dtype if dtype is None else dtype, batch_size=bs,
                     torch_module=f, name=type(f).__name__)
    if hasattr(f, "predict") and callable(f.predict):
        return Model(f.predict, dtype=np.float64 if dtype is None else dtype, batch_size=bs,
                     name=type(f).__name__)
    if callable(f):
        return Model(f, dtype=np.float64 if dtype is None else dtype, batch_size=bs,
                     name=getattr(f, "__name__", type(f).__name__))
    raise TypeError(
        "f must be a torch.nn.Module, an estimator with a predict method, or a callable taking a "
        f"(B, n) array; got {type(f).__name__}."
    )
