"""Gradient methods at the target x (paper §5): vanilla gradient and input x gradient."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .. import _ig
from .._validation import (
    as_float_array,
    check_bool,
    check_positive_int,
    check_progress,
    check_scalar,
)
from .base import Attribution


def std_scale(X: ArrayLike) -> np.ndarray:
    """The per-feature standard deviation of the rows of ``X``: what ``scale="std"`` stands for.
    A computation that calls a method chunk by chunk resolves it once over all rows (each
    chunk's own standard deviation would give other attributions and other orderings)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError("scale='std' takes the standard deviation of the rows of X and needs at "
                         f"least 2 of them; got shape {X.shape}. Pass the scale as an array of "
                         "length n (e.g. the training data's standard deviations).")
    return X.std(axis=0)


def _scale_vector(scale, X: np.ndarray) -> np.ndarray:
    n = X.shape[1]
    if scale is None:
        return np.ones(n)
    if isinstance(scale, str):
        if scale != "std":
            raise ValueError(f"scale must be None, 'std' or an array of length n; got {scale!r}.")
        return std_scale(X)
    s = as_float_array("scale", scale, ndim=(0, 1, 2)).reshape(-1)  # NaN / inf named
    if s.shape != (n,):
        raise ValueError(f"scale must have length n = {n}; got shape {np.shape(scale)}.")
    return s


class _GradientAtX(Attribution):
    """A method built on the input gradients of a torch module ``f`` at x; r is not read.

    Parameters
    ----------
    f : torch.nn.Module
        A differentiable model.
    """

    reads_rows = "input gradients of a torch module at x"
    requires = "gradients"

    @staticmethod
    def _chunk_rows(progress, chunk_rows) -> int:
        """Check ``progress`` (unused: one pass per chunk, no bar) and return ``chunk_rows``."""
        check_progress(progress)  # no bar is made here: progress_bar would not check it
        return check_positive_int(chunk_rows, "chunk_rows")


class VanillaGrad(_GradientAtX):
    """Vanilla gradient ("saliency", Simonyan et al.) at x, scaled per feature (paper §5);
    r is ignored (``f``: a differentiable torch module)."""

    name = "vanilla_grad"

    def attribute(self, X: ArrayLike, R: ArrayLike, *, scale: ArrayLike | str | None = None,
                  abs: bool = False, chunk_rows: int = _ig.DEFAULT_CHUNK_ROWS,
                  progress: bool | None = None, removal=None,
                  engine: str = "auto") -> np.ndarray:
        """``a_j = s_j * df/dx_j(x)``, shape (B, n).

        Parameters
        ----------
        X, R : array_like (B, n)
            Targets and references (R is not used).
        scale : array_like (n,), "std" or None, default None
            Per-feature scale s in model-input units; ``None`` means 1, which *is* the paper's
            standard-deviation scaling for z-scored inputs; ``"std"`` uses the standard deviation
            of the rows of X (all of them: a chunked call, ``pairs_per_chunk=`` or the runner's
            chunks, resolves it before chunking; fewer than 2 rows is an error).
        abs : bool, default False
            Return ``|a_j|`` (captum ``Saliency``'s default).
        chunk_rows : int, default 16384
            Rows per forward/backward pass.
        progress : bool, optional
            Unused (one pass per chunk); kept for a uniform runner interface. Still checked:
            None, True or False (``progress="no"`` is a TypeError).
        removal : str or insdel.removal.Removal, optional
            Accepted under every removal (:mod:`insdel.removal`) and recorded in ``info_``: the
            method reads no reference (the gradient is taken at x), so its attributions are the
            same whatever the removal; only the completeness gap (``info_``) is taken against
            the removal's ``v(all) - v(∅)``.
        engine : {"auto", "tree", "black_box"}, default "auto"
            The game's engine (:func:`insdel.game.as_game`). vanilla_grad reads input gradients
            of a torch module at x, not coalition values, so a tree game has nothing to give it:
            ``auto`` and ``black_box`` are the same, ``tree`` is an error naming the method.

        Returns
        -------
        ndarray of float64, shape (B, n)
        """
        cs = self._chunk_rows(progress, chunk_rows)
        abs = check_bool(abs, "abs")

        def compute(game):
            model, X = game.model, game.X
            A = model.grad(X, chunk_rows=cs) * _scale_vector(scale, X)
            return (np.abs(A) if abs else A), {}

        return self._run(X, R, compute, removal=removal, engine=self._engine(engine))


class InputXGradient(_GradientAtX):
    """Input x gradient (Shrikumar et al. 2016): ``a_j = x_j * df/dx_j(x)``; r is ignored
    (``f``: a differentiable torch module)."""

    name = "input_x_gradient"

    def attribute(self, X: ArrayLike, R: ArrayLike, *, binary: ArrayLike | None = None,
                  binary_zero: float | None = None, chunk_rows: int = _ig.DEFAULT_CHUNK_ROWS,
                  progress: bool | None = None, removal=None,
                  engine: str = "auto") -> np.ndarray:
        """Input x gradient attributions, shape (B, n).

        Parameters
        ----------
        X, R : array_like (B, n)
            Targets and references (R is not used).
        binary : indices or boolean mask (n,), optional
            The binary features (needed with ``binary_zero``).
        binary_zero : float, optional
            Paper Appendix A.3: zeros of binary inputs were replaced by a small negative value
            (-1e-4) so that they do not get attribution exactly 0; every binary input equal to 0
            is replaced by ``binary_zero`` (in the point where the gradient is taken and in the
            product). Default: no replacement.
        chunk_rows : int, default 16384
            Rows per forward/backward pass.
        progress : bool, optional
            Unused; kept for a uniform runner interface. Still checked: None, True or False
            (``progress="no"`` is a TypeError).
        removal : str or insdel.removal.Removal, optional
            Accepted under every removal (:mod:`insdel.removal`) and recorded in ``info_``: the
            method reads no reference (``x * grad f(x)``: x, not x - r), so its attributions are the
            same whatever the removal; only the completeness gap (``info_``) is taken against
            the removal's ``v(all) - v(∅)``.
        engine : {"auto", "tree", "black_box"}, default "auto"
            The game's engine (:func:`insdel.game.as_game`). input_x_gradient reads input
            gradients of a torch module at x, not coalition values, so a tree game has nothing
            to give it: ``auto`` and ``black_box`` are the same, ``tree`` is an error naming the
            method.

        Returns
        -------
        ndarray of float64, shape (B, n)
        """
        cs = self._chunk_rows(progress, chunk_rows)
        if binary_zero is not None and binary is None:
            raise ValueError("input_x_gradient: binary_zero needs binary= (the binary features).")
        if binary_zero is not None:
            binary_zero = check_scalar(binary_zero, "binary_zero", float, finite=True)

        def compute(game):
            model, X = game.model, game.X
            Xm = X
            if binary_zero is not None:
                spec = _ig.binary_spec(binary, "infer", X, X)
                Xm = X.copy()
                cols = spec.is_bin
                sub = Xm[:, cols]
                sub[sub == 0] = float(binary_zero)
                Xm[:, cols] = sub
            return Xm * model.grad(Xm, chunk_rows=cs), {}

        return self._run(X, R, compute, removal=removal, engine=self._engine(engine))
