"""Areas of insertion and deletion curves: AUC, AUL and ABC (paper eq. 1 and 2, Appendix B.1).

For a curve ``c_0 .. c_n`` (last axis, n + 1 points):

* ``AUC = sum_k c_k`` (eq. 1);
* ``AUL = (n + 1) / 2 * (c_0 + c_n)``, the area under the straight line joining the end points;
* insertion ``ABC = AUC - AUL`` (eq. 2); deletion ``ABC' = AUL - AUC'``.

``normalize=True`` (the default, what the paper's tables report) divides by n: the trapezoid area over
[0, 1] minus the straight line. All functions work over any leading shape.

Curves recorded at other positions (groups, ``step=k``, ``fractions=``, partial curves; see
:mod:`insdel.groups`) have points at ``x_s = t_s / m`` (``t_s`` units moved of m). Their ABC is the
trapezoid on those positions minus the straight line joining the curve's ends::

    ABC = sum_s (x_s - x_{s-1}) (c_{s-1} + c_s) / 2 - (x_last - x_0) (c_0 + c_last) / 2

(deletion: the negative), times m when ``normalize=False``. On the whole one-per-step curve
(``t_s = s``) this is exactly eq. (2) divided by n: ``AUC - AUL = n * trapezoid - n * line``,
because ``sum_k c_k = n * trapezoid + (c_0 + c_n) / 2``. :func:`petsiuk_auc` is Petsiuk et al.'s
AUC (the trapezoid over the fraction of units moved), the definition of the paper's Table 5.

:func:`trapezoid_area` is the area of a curve over any real points (ROAR's and ROAD's loss curves
over the fraction q of features removed), optionally against the straight line joining its ends.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ._validation import as_float_array, check_bool, check_mode, check_positive_int

__all__ = ["auc", "aul", "abc", "petsiuk_auc", "trapezoid_area"]


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
    normalize = check_bool(normalize, "normalize")
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


@nb.njit(cache=True, nogil=True)
def _trapz_kernel(c, x, out_trap, out_line):  # pragma: no cover - numba
    M, P = c.shape
    span = x[P - 1] - x[0]
    for i in range(M):
        s = 0.0
        for k in range(1, P):
            s += (x[k] - x[k - 1]) * (c[i, k - 1] + c[i, k])
        out_trap[i] = 0.5 * s
        out_line[i] = 0.5 * span * (c[i, 0] + c[i, P - 1])


def _positions_and_m(positions, m, P: int) -> tuple[np.ndarray, int]:
    """Checked positions (one per curve point, integers, strictly increasing, in [0, m]) and m
    (an integer >= 1; default ``positions[-1]``)."""
    from .groups import check_positions

    t = np.asarray(positions)
    if t.shape != (P,):
        raise ValueError(f"positions must have one entry per curve point ({P}); got shape "
                         f"{t.shape}.")
    if m is None:  # m is where the positions end (checked once, against no upper bound)
        t = check_positions(t, np.iinfo(np.int64).max)
        mm = int(t[-1])
        if mm < 1:
            raise ValueError(f"positions end at {mm} units moved; give m= (the number of units).")
        return t, mm
    mm = check_positive_int(m, "m")
    return check_positions(t, mm), mm


def _x_of(positions, m, P: int) -> np.ndarray:
    t, mm = _positions_and_m(positions, m, P)
    return t / mm


def _trapezoid(curves, positions, m):
    c = as_float_array("curves", curves, ndim=tuple(range(1, 8)))
    P = c.shape[-1]
    x = _x_of(positions, m, P)
    flat = np.ascontiguousarray(c.reshape(-1, P))
    trap, line = np.empty(flat.shape[0]), np.empty(flat.shape[0])
    _trapz_kernel(flat, x, trap, line)
    return trap.reshape(c.shape[:-1]), line.reshape(c.shape[:-1])


def petsiuk_auc(curves, *, positions=None, m: int | None = None) -> np.ndarray:
    """Petsiuk et al.'s AUC: the trapezoid area under the curve over the fraction of units moved.

    The definition of the paper's Table 5 (RISE's ``auc``: ``(sum c - c_0/2 - c_last/2) / (S - 1)``
    for evenly spaced points). For a classifier's probability, a small deletion AUC and a large
    insertion AUC are good.

    Parameters
    ----------
    curves : array_like (..., S)
    positions : array_like of int (S,), optional
        Units moved at each point (default ``0 .. S - 1``).
    m : int, optional
        Total number of units (default ``positions[-1]``; give it for partial curves).
    """
    c = as_float_array("curves", curves, ndim=tuple(range(1, 8)))
    if positions is None:
        positions = np.arange(c.shape[-1])
    return _trapezoid(c, positions, m)[0]


def abc(curves, *, mode: str = "insertion", normalize: bool = True, positions=None,
        m: int | None = None) -> np.ndarray:
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
    positions : array_like of int (S,), optional
        Units moved at each point, for curves recorded at other positions than ``0 .. n`` (steps,
        fractions, partial curves): the trapezoid on ``x_s = positions[s] / m`` minus the line
        joining the curve's ends (module docstring). Omitted: eq. (2) on evenly spaced points.
    m : int, optional
        Total number of units with ``positions`` (default ``positions[-1]``).

    Returns
    -------
    ndarray of shape (...)
    """
    if positions is None:
        if m is not None:
            raise ValueError("m= is the number of units of curves recorded at positions=; give "
                             "positions= with it (without them the curve has one point per unit).")
        return _areas(curves, mode, normalize)[2]
    check_mode(mode)
    normalize = check_bool(normalize, "normalize")
    c = as_float_array("curves", curves, ndim=tuple(range(1, 8)))
    t, mm = _positions_and_m(positions, m, c.shape[-1])
    if mm == t.shape[0] - 1 and np.array_equal(t, np.arange(mm + 1)):
        return _areas(c, mode, normalize)[2]  # the paper's curve: eq. (2) exactly
    trap, line = _trapezoid(c, t, mm)
    sign = 1.0 if mode == "insertion" else -1.0
    return sign * (trap - line) * (1.0 if normalize else mm)


def trapezoid_area(curves, x, *, minus_line: bool = False) -> np.ndarray:
    """The trapezoid area of curves over the points ``x``: ``sum_s (x_s - x_{s-1}) (c_{s-1} +
    c_s) / 2``, with numpy's summation (what ROAR's and ROAD's tables report).

    Parameters
    ----------
    curves : array_like (..., S)
        Values at the points ``x`` (non-finite values give a non-finite area).
    x : array_like (S,)
        Strictly increasing real points (S >= 2), e.g. the fractions q of features removed.
    minus_line : bool, default False
        The area of the curve minus the straight line joining its first and last points, ``line_s
        = c_0 + (c_last - c_0) x_s`` (ROAR's area against the line, for x from 0 to 1).

    Returns
    -------
    ndarray of shape (...)
    """
    minus_line = check_bool(minus_line, "minus_line")
    c = as_float_array("curves", curves, ndim=tuple(range(1, 8)), finite=False)
    q = as_float_array("x", x, ndim=(1,))
    if q.shape != c.shape[-1:] or q.shape[0] < 2:
        raise ValueError(f"x must have one point per curve point (at least 2); got shape "
                         f"{q.shape} for curves of shape {c.shape}.")
    if np.any(np.diff(q) <= 0):
        raise ValueError(f"x must be strictly increasing; got {q.tolist()}.")
    if minus_line:
        c = c - (c[..., :1] + (c[..., -1:] - c[..., :1]) * q)
    return np.sum((c[..., 1:] + c[..., :-1]) * np.diff(q), axis=-1) / 2.0
