"""The algebra of the anchored decomposition: Proposition 1 (expected last position), the Möbius
and zeta transforms, one interaction term."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import _decomposition_kernels as K
from .._validation import (
    as_float_array,
    check_positive_int,
)
from ._subspace import _n_from_length


def expected_last_position(size, n: int):
    """Proposition 1: expected position of the last element of a random ``size``-subset.

    Under a uniformly random ordering of n features, a fixed set u of ``|u| = size`` features has
    ``E[ceil(u)] = |u| (n + 1) / (|u| + 1)`` (0 for the empty set). By symmetry (Appendix B.1)
    ``E[floor(u)] = n + 1 - E[ceil(u)]``.

    Parameters
    ----------
    size : int or array_like of int
        |u|, between 0 and n.
    n : int
        Number of features (>= 1).

    Returns
    -------
    float or ndarray of float
    """
    n = check_positive_int(n, "n")
    s = np.asarray(size)
    if s.dtype == bool or not np.issubdtype(s.dtype, np.integer):
        raise TypeError(f"size must be an integer (or integer array); got dtype {s.dtype}.")
    if (s < 0).any() or (s > n).any():
        raise ValueError(f"size must lie in 0..n = 0..{n}; got {s.tolist()}.")
    e = s * (n + 1) / (s + 1.0)
    return float(e) if e.ndim == 0 else e


def _transform(arr, name: str, kernel) -> np.ndarray:
    a = as_float_array(name, arr, ndim=(1, 2))
    n = _n_from_length(a.shape[-1], name)
    out = np.array(a, dtype=np.float64, order="C", ndmin=2, copy=True)
    kernel(out, n)
    return out.reshape(a.shape)


def mobius(values) -> np.ndarray:
    """Möbius transform of g (..., 2^n) -> Delta (..., 2^n), fast O(n 2^n) (conventions)."""
    return _transform(values, "values", K.mobius_inplace)


def zeta(delta) -> np.ndarray:
    """Inverse Möbius (zeta) transform: ``g(u) = sum_{v ⊆ u} Delta_v``."""
    return _transform(delta, "delta", K.zeta_inplace)


class Interaction(NamedTuple):
    """One interaction term Delta_u with |u| >= 2 (see :meth:`AnchoredDecomposition.interactions`)."""

    features: tuple
    mask: int
    size: int
    delta: float
