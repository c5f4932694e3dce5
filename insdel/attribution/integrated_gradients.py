"""Integrated gradients along the straight path from r to x, with binary features (paper §4)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import _ig
from .._validation import check_positive_int
from .base import Attribution


class IntegratedGradients(Attribution):
    """Integrated gradients, batched over pairs and path points (paper §4).

    ``a_j = (x_j - r_j) int_0^1 df/dx_j(r + t (x - r)) dt`` by a quadrature rule with ``n_steps``
    nodes, computed with torch autograd (through the model adapter) on chunks of
    (points x steps) rows. Binary features are handled by ``binary_mode`` (conventions:
    *Integrated gradients with binary features*).

    Parameters
    ----------
    f : torch.nn.Module
        A differentiable model.
    """

    name = "integrated_gradients"
    reads_rows = "input gradients of a torch module along the path"
    requires = "gradients"

    def attribute(self, X: ArrayLike, R: ArrayLike, *, n_steps: int = 500,
                  rule: str = "riemann_middle", binary: ArrayLike | None = None,
                  binary_levels: Any = None, binary_mode: str = "cast", max_interpolate: int = 12,
                  all_orders_max_m: int = 10, n_orders: int = 256, seed: int = 0,
                  chunk_rows: int = _ig.DEFAULT_CHUNK_ROWS, progress: bool | None = None,
                  feature_names: Sequence[str] | None = None, removal: Any = None,
                  engine: str = "auto") -> np.ndarray:
        """Integrated-gradients attributions (B, n) of targets ``X`` against references ``R``.

        Parameters
        ----------
        X, R : array_like (B, n)
            Targets and references.
        n_steps : int, default 500
            Quadrature nodes (the paper's Riemann sum on 500 points).
        rule : str, default "riemann_middle"
            ``riemann_middle`` | ``riemann_right`` | ``riemann_left`` | ``riemann_trapezoid`` |
            ``gausslegendre``: the same names as captum's ``method=``; results agree with
            captum's for the same rule.
        binary : indices or boolean mask (n,), optional
            Binary features; their values must be one of two levels (``binary_levels``).
        binary_levels : (n, 2) array, dict j -> (lo, hi), "infer" or None (= (0, 1))
            The two levels of each binary feature in model-input space (z-scored data: two
            numbers lo < hi). The interpolation / jumps work in ``t_j = (x_j - lo) / (hi - lo)``.
        binary_mode : {"cast", "interpolate", "jump"}, default "cast"
            ``cast`` uses f between the levels as it is (the paper's recommendation);
            ``interpolate`` takes IG of the multilinear interpolation in the differing binaries
            (2^m rows per path point, refused above ``max_interpolate``); ``jump`` moves the
            continuous features along the path and lets the differing binaries jump at t = 1/2,
            averaging over all m! jump orders exactly when m <= ``all_orders_max_m``, else over
            ``n_orders`` orders drawn with ``seed``.
        max_interpolate : int, default 12
            Largest m accepted by ``interpolate``.
        all_orders_max_m : int, default 10
            Largest m for which ``jump`` averages over all orders exactly.
        n_orders : int, default 256
            Sampled jump orders above ``all_orders_max_m``.
        seed : int, default 0
            Seed of the sampled jump orders.
        chunk_rows : int, default 16384
            Rows per forward/backward pass (memory bound).
        progress : bool, optional
            Progress bar.
        feature_names : sequence of str, optional
            Used in error messages about binary levels.
        removal : str or insdel.removal.Removal, optional
            What a removed feature becomes (:mod:`insdel.removal`). None or ``"baseline"``: IG
            from the reference r, as above. Otherwise IG has no path to a distribution, so the
            averaged-baseline form is taken: the mean of the single-reference IGs over the
            removal's reference rows -- for ``marginal`` its K references per target (expected
            gradients over those K references, an exact average, not sampled); for a sampled
            removal the M rows it draws for the empty coalition, ``sample(X, all-False,
            targets)`` (the rows whose mean model value is v(∅); expected gradients over the
            removal's draws, not a conditional path method). Completeness then holds against
            ``mean_k f(x) - f(b_k) = v(all) - v(∅)`` (the gap is in ``info_``). B K pairs are
            integrated; binary modes apply to each (x, b_k) pair.
        engine : {"auto", "tree", "black_box"}, default "auto"
            The game's engine (:func:`insdel.game.as_game`). integrated_gradients reads input
            gradients of a torch module along the path, not coalition values, so a tree game has
            nothing to give it: ``auto`` and ``black_box`` are the same, ``tree`` is an error
            naming the method.

        Returns
        -------
        ndarray of float64, shape (B, n)
            ``info_`` holds ``n_grad_rows``, ``n_value_rows``, ``binary_mode``, ``m`` (differing
            binaries per pair) and the completeness gap ``delta``.
        """
        check_positive_int(n_steps, "n_steps")
        check_positive_int(n_orders, "n_orders")
        check_positive_int(chunk_rows, "chunk_rows")
        check_positive_int(max_interpolate, "max_interpolate", minimum=0)
        check_positive_int(all_orders_max_m, "all_orders_max_m", minimum=0)
        check_positive_int(seed, "seed", minimum=0)  # None or 2.5: not a repeatable run
        if binary is None and (binary_mode != "cast" or binary_levels is not None):
            given = "binary_mode=" + repr(binary_mode) if binary_mode != "cast" \
                else "binary_levels"
            raise ValueError(f"integrated_gradients: {given} needs binary= (the binary "
                             "features; \"dataset\" in a configuration); without it every "
                             "feature is continuous and plain IG would be returned.")

        from ._removal import averaged, empty_rows, single_reference


        def single(model, X, R):
            return _ig.integrated_gradients(
                model, X, R, n_steps=n_steps, rule=rule, binary=binary,
                binary_levels=binary_levels, binary_mode=binary_mode,
                max_interpolate=max_interpolate, all_orders_max_m=all_orders_max_m,
                n_orders=n_orders, seed=seed, chunk_rows=chunk_rows, progress=progress,
                feature_names=feature_names)

        def compute(game):
            R = single_reference(game)
            if R is not None:
                return single(game.model, game.X, R)
            return averaged(single, game.model, game.X, empty_rows(game))

        return self._run(X, R, compute, removal=removal, engine=self._engine(engine))
