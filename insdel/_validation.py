"""Input validation shared by every module (scikit-learn style: fail early, name the culprit)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_MAX_LISTED = 5


def _first(idx: np.ndarray) -> str:
    shown = ", ".join(str(int(i)) for i in idx[:_MAX_LISTED])
    more = f" (and {len(idx) - _MAX_LISTED} more)" if len(idx) > _MAX_LISTED else ""
    return shown + more


def check_finite(name: str, arr: np.ndarray, *, feature_names: Sequence[str] | None = None) -> None:
    """Raise ``ValueError`` naming the rows (and features) of ``arr`` that hold NaN or inf."""
    bad = ~np.isfinite(arr)
    if not bad.any():
        return
    kind = "NaN" if np.isnan(arr[bad]).any() else "inf"
    if arr.ndim == 0:
        raise ValueError(f"{name} is {kind}.")
    if arr.ndim == 1:
        cols = np.flatnonzero(bad)
        raise ValueError(f"{name} contains {kind} at feature(s) {_feature_list(cols, feature_names)}.")
    flat = bad.reshape(bad.shape[0], -1)
    rows = np.flatnonzero(flat.any(axis=1))
    r0 = rows[0]
    cols = np.flatnonzero(bad[r0].reshape(-1)) if arr.ndim == 2 else np.flatnonzero(flat[r0])
    where = (
        f"feature(s) {_feature_list(cols, feature_names)}"
        if arr.ndim == 2
        else f"flat position(s) {_first(cols)}"
    )
    raise ValueError(
        f"{name} contains non-finite values ({kind}) in {len(rows)} row(s): {_first(rows)}; "
        f"row {int(r0)} at {where}."
    )


def _feature_list(cols: np.ndarray, feature_names: Sequence[str] | None) -> str:
    if feature_names is None:
        return _first(cols)
    return ", ".join(f"{int(c)} ({feature_names[int(c)]!r})" for c in cols[:_MAX_LISTED])


def as_float_array(name: str, value, *, ndim: tuple[int, ...] = (1, 2), finite: bool = True,
                   dtype=np.float64) -> np.ndarray:
    """Convert ``value`` to a float array with one of the allowed numbers of dimensions."""
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array; could not convert it ({exc}).") from None
    if arr.ndim not in ndim:
        allowed = " or ".join(f"{d}-D" for d in ndim)
        raise ValueError(f"{name} must be {allowed}; got shape {arr.shape}.")
    if finite:
        check_finite(name, arr)
    return arr


def check_pairs(X, R, *, x_name: str = "X", r_name: str = "R") -> tuple[np.ndarray, np.ndarray]:
    """Validate targets ``X`` and references ``R``; return 2-D float64 arrays of equal shape (B, n).

    A 1-D ``R`` of length n is broadcast to every row of ``X`` (a constant reference).
    """
    X = as_float_array(x_name, X)
    R = as_float_array(r_name, R)
    if X.ndim == 1:
        X = X[None, :]
    if R.ndim == 1:
        R = np.broadcast_to(R, (X.shape[0], R.shape[0]))
    if X.shape[1] == 0:
        raise ValueError(f"{x_name} has n = 0 features; at least one feature is needed.")
    if X.shape[0] == 0:
        raise ValueError(f"{x_name} has B = 0 rows; at least one pair is needed.")
    if X.shape != R.shape:
        raise ValueError(
            f"{x_name} and {r_name} must have the same shape (B, n); got {X.shape} and {R.shape}."
        )
    return np.ascontiguousarray(X), np.ascontiguousarray(R)


def check_mode(mode: str) -> str:
    if mode not in ("insertion", "deletion"):
        raise ValueError(f"mode must be 'insertion' or 'deletion'; got {mode!r}.")
    return mode


def check_positive_int(name: str, value, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}.")
    return int(value)
