"""DeepLIFT (rescale rule) with baselines r, PReLU treated as a nonlinearity (Appendix A.3)."""

from __future__ import annotations

import contextlib
import copy
import operator
import threading
import warnings
import weakref

import numpy as np
from numpy.typing import ArrayLike

from .._progress import progress_bar
from .._validation import check_bool, check_positive_int, check_scalar
from .base import Attribution

#: One lock per module that DeepLift hooks in place (a module that cannot be copied,
#: :func:`_private_module`): two calls on it at once would each run the other's hooks.
_HOOK_LOCKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_HOOK_LOCKS_GUARD = threading.Lock()


def _private_module(module):
    """``(module to hook, lock)``: a deep copy of ``module`` and no lock, or, when the module
    cannot be copied, the module itself and the lock of its DeepLift calls in this process.

    captum's DeepLift registers hooks on the module it explains (and on its nonlinearity modules)
    for the length of a call; every forward pass of that module meanwhile runs them (its
    pre-hook appends the baselines to the batch). On a copy, other calls on the module (the
    threads of a Dask worker, which share the scattered model; a user's own threads) never see
    them."""
    try:
        return copy.deepcopy(module), contextlib.nullcontext()
    except Exception:  # e.g. a module holding a lock or a file handle
        with _HOOK_LOCKS_GUARD:
            lock = _HOOK_LOCKS.get(module)
            if lock is None:
                lock = _HOOK_LOCKS[module] = threading.Lock()
        return module, lock


_RESCALED_PRELU: list = []


def _rescaled_prelu_class() -> type:
    """The subclass of ``nn.PReLU`` that captum's DeepLift treats as an elementwise
    nonlinearity (rescale rule), registered once in captum's table of nonlinearities."""
    with _HOOK_LOCKS_GUARD:
        if not _RESCALED_PRELU:
            import torch
            from captum.attr._core import deep_lift as dl

            class RescaledPReLU(torch.nn.PReLU):
                """A PReLU under DeepLIFT's rescale rule (the same forward pass)."""

            dl.SUPPORTED_NON_LINEAR[RescaledPReLU] = dl.nonlinear
            _RESCALED_PRELU.append(RescaledPReLU)
        return _RESCALED_PRELU[0]


@contextlib.contextmanager
def _prelu_as_nonlinearity(module, enable: bool):
    """Inside the block, the ``nn.PReLU`` modules of ``module`` are of the subclass that captum's
    DeepLift applies the rescale rule to (Appendix A.3); their class is restored on exit.

    Only ``module``'s own PReLUs change (captum's table of nonlinearities is left as it is), so a
    DeepLift call with ``prelu_rescale=False`` running at the same time is not affected."""
    import torch

    swapped = [m for m in module.modules() if type(m) is torch.nn.PReLU] if enable else []
    if swapped:
        cls = _rescaled_prelu_class()
        for m in swapped:
            m.__class__ = cls
    try:
        yield
    finally:
        for m in swapped:
            m.__class__ = torch.nn.PReLU


def _output_head(module, output):
    """``module`` followed by the callable ``output``, as one ``torch.nn.Module`` whose output has
    shape (B,). ``module`` (and ``output`` when it is a module) become submodules, so captum's
    DeepLift still registers its rescale hooks on their nonlinearity modules."""
    import torch

    class _OutputHead(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = module
            self.head = output  # a module is registered: its nonlinearities (nn.Softmax) get hooks
            self.training = module.training  # without recursing into the submodules

        def forward(self, x):
            y = self.head(self.inner(x))
            if not isinstance(y, torch.Tensor):
                raise TypeError(
                    "deeplift: output= must be a function of the module's output tensor that "
                    f"returns a tensor (gradients flow through it); it returned a "
                    f"{type(y).__name__}.")
            B = x.shape[0]
            if y.shape == (B, 1):
                y = y[:, 0]
            if y.shape != (B,):
                raise ValueError(
                    f"deeplift: output= returned shape {tuple(y.shape)} for {B} input rows; it must "
                    "return one value per row, shape (B,) or (B, 1).")
            return y

    return _OutputHead()


def _explained_module(model, probe):
    """The module and the captum ``target`` that explain the model's selected output.

    ``probe`` is the module's output on one row. ``output=None``: the module itself (its output
    must be (B,) or (B, 1)); ``output=k``: the module with ``target=k``; ``output=callable``: the
    module wrapped with the callable (:func:`_output_head`)."""
    import torch

    from ..adapter import _one_output, _one_tensor

    module, out = model.torch_module, model.output
    _one_tensor(probe, torch)
    if out is None:
        _one_output(probe, 1, model.name)  # the shape check of the forward pass (one row)
        return module, (0 if probe.ndim == 2 else None)
    if callable(out):
        return _output_head(module, out), None
    try:
        k = operator.index(out)
    except TypeError:
        raise TypeError(f"output must be an int (a column) or a callable; got "
                        f"{type(out).__name__}.") from None
    if probe.ndim != 2:
        raise ValueError(f"output={out!r} selects a column, but {model.name} returned shape "
                         f"{tuple(probe.shape)}.")
    ncols = probe.shape[1]
    if not -ncols <= k < ncols:
        raise ValueError(f"output={out} is out of range for {model.name}'s {ncols} outputs.")
    return module, k % ncols


class DeepLift(Attribution):
    """DeepLIFT (captum ``DeepLift``, rescale rule) with baselines r (Appendix A.3).

    PReLU is treated as an ordinary elementwise nonlinearity (rescale multipliers Δy/Δx), as the
    paper did; captum alone would pass plain gradients through it. Nonlinearities must be modules
    (``nn.ReLU``, ``nn.PReLU``, ...), each used once.

    The model's ``output=`` (:func:`insdel.as_model`) is honoured: a column ``k`` is explained with
    captum's ``target=k``; a callable is applied to the module's output inside a wrapping module
    (the rescale rule still applies to the nonlinearity modules of the network, and of the callable
    when it is a ``torch.nn.Module``; plain tensor operations in the callable get gradients, exact
    for linear functions of the outputs such as ``lambda y: y[:, 1] - y[:, 0]``). A warning is
    issued when a callable ``output`` leaves a completeness gap (``completeness_gap_``) with
    ``prelu_rescale=True``.

    Parameters
    ----------
    f : torch.nn.Module
        A differentiable model.
    """

    name = "deeplift"
    reads_rows = "captum's DeepLift multipliers of a torch module"
    requires = "hooks"

    def attribute(self, X: ArrayLike, R: ArrayLike, *, chunk_rows: int = 4096,
                  prelu_rescale: bool = True, eps: float = 1e-10,
                  progress: bool | None = None, removal=None,
                  engine: str = "auto") -> np.ndarray:
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
        removal : str or insdel.removal.Removal, optional
            What a removed feature becomes (:mod:`insdel.removal`). None or ``"baseline"``:
            DeepLIFT against the reference r. Otherwise the averaged-baseline form: the mean of
            the single-reference DeepLIFT attributions over the removal's reference rows -- for
            ``marginal`` its K references per target (exact average); for a sampled removal the
            M rows it draws for the empty coalition, ``sample(X, all-False, targets)`` (the rows
            whose mean model value is v(∅); a choice of references, not a conditional method).
            Completeness (rescale rule) then holds against ``v(all) - v(∅)``.
        engine : {"auto", "tree", "black_box"}, default "auto"
            The game's engine (:func:`insdel.game.as_game`). deeplift reads captum's DeepLift
            multipliers of a torch module, not coalition values, so a tree game has nothing to
            give it: ``auto`` and ``black_box`` are the same, ``tree`` is an error naming the
            method.

        Returns
        -------
        ndarray of float64, shape (B, n)
        """
        from ._removal import averaged, empty_rows, single_reference

        cs = check_positive_int(chunk_rows, "chunk_rows")
        prelu_rescale = check_bool(prelu_rescale, "prelu_rescale")
        eps = check_scalar(eps, "eps", float, min_val=0.0, finite=True)

        def compute(game):
            R = single_reference(game)
            if R is not None:
                return single(game.model, game.X, R)
            return averaged(single, game.model, game.X, empty_rows(game))

        def single(model, X, R):
            import torch
            from captum.attr import DeepLift as _DL

            B, n = X.shape
            A = np.empty((B, n))
            x0 = torch.from_numpy(X[:1].astype(model.dtype)).to(
                device=model.device, dtype=model.torch_dtype)
            with torch.no_grad():
                try:
                    probe = model.torch_module(x0)
                except (RuntimeError, AssertionError) as exc:  # a width error names both widths
                    model._raise_width_error(exc, n)
                    raise
            module, target = _explained_module(model, probe)
            if module is not model.torch_module:
                with torch.no_grad():
                    module(x0)  # the callable's checks (tensor, one value per row) before captum
            module, lock = _private_module(module)
            dl = _DL(module, eps=eps)
            with lock, _prelu_as_nonlinearity(module, prelu_rescale), warnings.catch_warnings(), \
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

        A = self._run(X, R, compute, removal=removal, engine=self._engine(engine))
        if callable(self.model.output) and prelu_rescale:  # completeness expected
            gap = np.abs(self.completeness_gap_)
            dfx = np.abs(A.sum(axis=1) - self.completeness_gap_)
            tol = 1e-6 if self.model.dtype == np.float64 else 1e-3
            if (gap > tol * (1.0 + dfx)).any():
                warnings.warn(
                    f"deeplift: completeness gap up to {gap.max():.3g} with a callable output=: "
                    "the rescale rule applies only to nonlinearity modules, and plain tensor "
                    "operations in output= (or in the network's forward) get gradients; pass a "
                    "column index, a linear function of the outputs or a torch.nn.Module for "
                    "output= to keep completeness.", RuntimeWarning, stacklevel=2)
        return A
