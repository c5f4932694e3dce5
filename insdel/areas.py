"""Areas of insertion and deletion curves: AUC, AUL and ABC (paper eq. 1 and 2, Appendix B.1).

For a curve ``c_0 .. c_n`` (last axis, n + 1 points):

* ``AUC = sum_k c_k`` (eq. 1);
* ``AUL = (n + 1) / 2 * (c_0 + c_n)``, the area under the straight line joining the end points;
* insertion ``ABC = AUC - AUL`` (eq. 2); deletion ``ABC' = AUL - AUC'``.

``normalize=True`` (the default, what the paper's tables report) divides by n: the trapezoid area over
[0, 1] minus the straight line. All functions work over any leading shape.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ._validation import as_float_array, check_mode

__all__ = ["auc", "aul", "abc"]


@nb.njit(cache=True, nogil=True)
def _areas_kernel(c, sign, scale, out_auc, out_aul, out_abc):  # pragma: no cover - numba
    M, P = c.shape
    half = P / 2.0  # (n + 1) / 2
    for i in range(M):
        s = 0.0
        for k in range(P):
            s += c[i, k]
        line = half * (c[i, 0] + c[i, P - 1])
        out_auc[i] = s * scale
        out_aul[i] = line * scale
        out_abc[i] = sign * (s - line) * scale


def _areas(curves, mode: str, normalize: bool):
    check_mode(mode)
    c = as_float_array("curves", curves, ndim=tuple(range(1, 8)))
    P = c.shape[-1]
    if P < 2:
        raise ValueError(f"a curve needs at least 2 points (n >= 1); got last dimension {P}.")
    lead = c.shape[:-1]
    flat = np.ascontiguousarray(c.reshape(-1, P))
    M = flat.shape[0]
    scale = 1.0 / (P - 1) if normalize else 1.0
    sign = 1.0 if mode == "insertion" else -1.0
    a, line, b = np.empty(M), np.empty(M), np.empty(M)
    _areas_kernel(flat, sign, scale, a, line, b)
    return a.reshape(lead), line.reshape(lead), b.reshape(lead)


def auc(curves, *, normalize: bool = False) -> np.ndarray:
    """Area under the curve, ``sum_k c_k`` (paper eq. 1); divided by n when ``normalize``."""
    return _areas(curves, "insertion", normalize)[0]


def aul(curves, *, normalize: bool = False) -> np.ndarray:
    """Area under the straight line, ``(n + 1) / 2 * (c_0 + c_n)``; divided by n when ``normalize``."""
    return _areas(curves, "insertion", normalize)[1]


def abc(curves, *, mode: str = "insertion", normalize: bool = True) -> np.ndarray:
    """Signed area between the curve and its straight line (paper eq. 2 and its deletion form).

    Parameters
    ----------
    curves : array_like, shape (..., n + 1)
        Insertion or deletion curves.
    mode : {"insertion", "deletion"}
        Insertion: ``AUC - AUL`` (curve above the line is good). Deletion: ``AUL - AUC'`` (curve
        below the line is good).
    normalize : bool, default True
        Divide by n (per-feature area, trapezoid over [0, 1] minus the line), as in the paper's tables.

    Returns
    -------
    ndarray of shape (...)
    """
    return _areas(curves, mode, normalize)[2]
