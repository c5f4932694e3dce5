"""Input validation shared by every module (scikit-learn style: fail early, name the culprit).

Validation only: a scalar option is checked by :func:`check_scalar` (a wrong type is a
``TypeError``, a value out of range a ``ValueError``); arrays, pairs, orderings and clusters by
their ``check_*``. numba's thread start-up lives in :mod:`insdel._threads`, JSON conversion and
folder-name rules in :mod:`insdel._checkpoint`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numba as nb
import numpy as np

from ._threads import numba_threads, start_numba_threads

_MAX_LISTED = 5


class TuningLeakError(ValueError):
    """A ranking of methods on the pairs their settings were tuned on (or on different splits):
    the tuning ABC is optimistic by construction, so such a ranking is refused
    (:mod:`insdel.tuning`, the leaderboard's reading of an ``insdel tune`` run)."""


def _first(idx: np.ndarray) -> str:
    shown = ", ".join(str(int(i)) for i in idx[:_MAX_LISTED])
    more = f" (and {len(idx) - _MAX_LISTED} more)" if len(idx) > _MAX_LISTED else ""
    return shown + more


def all_finite(arr: np.ndarray) -> bool:
    """Whether every value of ``arr`` is finite. For floats, one summing pass with no temporary (a
    NaN or inf makes the sum NaN or inf); the exact check runs only when the sum is not finite
    (a NaN or inf, or an overflowing sum of finite values)."""
    if arr.dtype.kind == "f" and np.isfinite(np.add.reduce(arr, axis=None, dtype=np.float64)):
        return True
    return bool(np.isfinite(arr).all())


def check_finite(name: str, arr: np.ndarray, *, feature_names: Sequence[str] | None = None,
                 entries: str = "feature") -> None:
    """Raise ``ValueError`` naming the rows (and features) of ``arr`` that hold NaN or inf.

    ``entries`` names what the entries of a 1-D ``arr`` are (``"feature"``: one row's features;
    ``"data point"``: one value per data point, e.g. an outcome)."""
    if all_finite(arr):
        return
    bad = ~np.isfinite(arr)
    if not bad.any():
        return
    kind = "NaN" if np.isnan(arr[bad]).any() else "inf"
    if arr.ndim == 0:
        raise ValueError(f"{name} is {kind}.")
    if arr.ndim == 1:
        cols = np.flatnonzero(bad)
        at = (_feature_list(cols, feature_names) if entries == "feature"
              else _first(cols))
        raise ValueError(f"{name} contains {kind} at {entries}(s) {at}.")
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
        # a DataFrame's NaN is named by its column name, not only its position
        cols = getattr(value, "columns", None)
        names = [str(c) for c in cols] if cols is not None and arr.ndim == 2 \
            and len(cols) == arr.shape[1] else None
        check_finite(name, arr, feature_names=names)
    return arr


def writable(a: np.ndarray) -> np.ndarray:
    """``a`` itself when it is writable, else a copy: torch warns on every read-only array it
    wraps (``torch.from_numpy``), and pandas hands out read-only views (copy-on-write)."""
    return a if a.flags.writeable else a.copy()


def align_columns(name: str, value, like, *, like_name: str = "X", labels=None):
    """``value`` in the column order of the DataFrame ``like`` when ``value`` is labelled too (a
    DataFrame's columns, or a Series' index for one row); else ``value`` unchanged.

    Labelled data are matched by name, never by position: the same names in another order are
    reordered; other names are an error naming the missing and unexpected ones. ``labels``
    overrides ``like``'s columns (e.g. group names for per-group attributions). A Series whose
    index is 0, 1, ..., n - 1 (no names) is taken by position.
    """
    cols = list(getattr(like, "columns", [])) if labels is None else list(labels)
    if not cols:
        return value
    if hasattr(value, "columns"):
        have = list(value.columns)
    elif getattr(value, "ndim", None) == 1 and hasattr(value, "index"):
        have = list(value.index)
        if have == list(range(len(have))):
            return value
    else:
        return value
    if have == cols:
        return value
    # names compare as text (feature names are strings; a DataFrame's columns may be 0, 1, ...)
    by_text = {str(c): c for c in have}
    want = [str(c) for c in cols]
    if sorted(by_text) != sorted(want) or len(by_text) != len(have):
        missing = [c for c in cols if str(c) not in by_text]
        extra = [c for c in have if str(c) not in set(want)]
        raise ValueError(f"{name} is labelled by other columns than {like_name} (matched by name, "
                         f"not position): missing {missing}, unexpected {extra}"
                         + (" (repeated names)" if len(by_text) != len(have) else "") + ".")
    keys = [by_text[str(c)] for c in cols]  # value's own labels, in like's order
    return value[keys] if hasattr(value, "columns") else value.loc[keys]


def align_attributions(name: str, A, features, group_names=None):
    """Attributions ``A`` matched by name when they are a DataFrame: to the feature names
    ``features`` (n columns) or, per group, to ``group_names`` (m columns); else unchanged
    (:func:`align_columns`; no names known: taken by position)."""
    if not hasattr(A, "columns"):
        return A
    k = len(A.columns)
    if features is not None and k == len(features):
        return align_columns(name, A, None, labels=features, like_name="the features")
    if group_names is not None and k == len(group_names):
        return align_columns(name, A, None, labels=group_names, like_name="the groups")
    return A


def check_pairs(X, R, *, x_name: str = "X", r_name: str = "R",
                finite: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Validate targets ``X`` and references ``R``; return 2-D float64 arrays of equal shape (B, n).

    A 1-D ``R`` of length n, or one row (1, n), is broadcast to every row of ``X`` (a constant
    reference). pandas DataFrames are accepted (their values; see :func:`feature_names_of`); a
    labelled R (DataFrame, or a Series for one row) is matched to X's columns by name
    (:func:`align_columns`).
    ``finite=False`` leaves the NaN/inf check to the caller (who must then make it, with
    :func:`check_finite` for the message).
    """
    start_numba_threads()  # numba's threads started now, keeping torch's count
    R = align_columns(r_name, R, X, like_name=x_name)
    X = as_float_array(x_name, X, finite=finite)
    R = as_float_array(r_name, R, finite=finite)
    if X.ndim == 1:
        X = X[None, :]
    if R.ndim == 1 or (R.shape[0] == 1 and X.shape[0] > 1):
        R = np.broadcast_to(R.reshape(-1), (X.shape[0], R.shape[-1]))
    if X.shape[1] == 0:
        raise ValueError(f"{x_name} has n = 0 features; at least one feature is needed.")
    if X.shape[0] == 0:
        raise ValueError(f"{x_name} has B = 0 rows; at least one pair is needed.")
    if X.shape != R.shape:
        raise ValueError(
            f"{x_name} and {r_name} must have the same shape (B, n); got {X.shape} and {R.shape}."
        )
    return writable(np.ascontiguousarray(X)), writable(np.ascontiguousarray(R))


def check_clusters(clusters, n: int, *, name: str = "clusters") -> np.ndarray | None:
    """The independent unit of each of n pairs (pairs with the same integer id are one unit, e.g.
    a pair and its mirror); None (every pair its own unit) is returned as None."""
    if clusters is None:
        return None
    c = np.asarray(clusters)
    if c.ndim != 1 or c.shape[0] != n:
        raise ValueError(f"{name} must hold one unit id per pair, shape ({n},); got shape "
                         f"{c.shape}.")
    if c.dtype == bool or not np.issubdtype(c.dtype, np.integer):
        raise TypeError(f"{name} must hold integer unit ids; got dtype {c.dtype}.")
    return np.ascontiguousarray(c, dtype=np.int64)


def check_mode(mode: str) -> str:
    if mode not in ("insertion", "deletion"):
        raise ValueError(f"mode must be 'insertion' or 'deletion'; got {mode!r}.")
    return mode


#: How a target type is named in a TypeError.
_TYPE_NAMES = {int: "an integer", float: "a number", bool: "True or False", str: "a string",
               type(None): "None"}


def _is_type(value, t: type) -> bool:
    """Whether ``value`` is of target type ``t``: numpy scalars count as Python ones; a bool is
    never an int or a float (True is no size or seed); an int is a float (2 is 2.0)."""
    if isinstance(value, (bool, np.bool_)):
        return t is bool
    if t is int:
        return isinstance(value, (int, np.integer))
    if t is float:
        return isinstance(value, (int, float, np.integer, np.floating))
    return isinstance(value, t)


def _bound(b) -> str:
    """A bound as written: 0 and 0.0 both as ``0``, 1e-3 as ``0.001``."""
    return f"{b:g}" if isinstance(b, float) else str(b)


def check_scalar(value, name: str, target_type: type | tuple[type, ...], *,
                 min_val: float | None = None, max_val: float | None = None,
                 include_boundaries: str = "both", finite: bool = False):
    """Validate one scalar option, with scikit-learn's ``check_scalar`` semantics.

    A value of the wrong type is a ``TypeError``; a value of the right type out of range is a
    ``ValueError``. Both messages name the argument (or config key) and what it must be, so
    ``check_scalar(-1, "seed", int, min_val=0)`` (scikit-learn's argument order: the value, then
    its name) says ``seed must be an integer >= 0; got -1.``

    Parameters
    ----------
    value : object
        The value to check.
    name : str
        The argument or config key, named in the error.
    target_type : type or tuple of types
        ``int`` accepts numpy integers, never a ``bool`` nor a float (2.0 or 2.7 is no size: a
        float is never truncated); ``float`` accepts ints and numpy numbers, never a ``bool``;
        ``bool`` accepts numpy bools, never 0 / 1 or a string (``"no"`` is truthy).
    min_val, max_val : float, optional
        Bounds; ``include_boundaries`` (``"both"``, ``"left"``, ``"right"`` or ``"neither"``) says
        which of them are allowed values.
    include_boundaries : str
        Which bounds are inclusive.
    finite : bool
        Refuse NaN and inf (a NaN passes every bound, since it compares false with all of them).

    Returns
    -------
    object
        The value, as a Python ``int``, ``float`` or ``bool`` when that is the one target type.

    Raises
    ------
    TypeError
        ``value`` is not of ``target_type``.
    ValueError
        ``value`` is out of range, or not finite with ``finite=True``.
    """
    types = target_type if isinstance(target_type, tuple) else (target_type,)
    match = next((t for t in types if _is_type(value, t)), None)
    if match is None:
        names = [w for t in types for w in _TYPE_NAMES.get(t, t.__name__).split(" or ")]
        want = names[-1] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
        raise TypeError(f"{name} must be {want}; got {value!r} ({type(value).__name__}).")
    given = value  # named in a range error as the caller wrote it (0, not 0.0)
    if match in (int, float, bool):  # numpy scalars as Python ones
        value = match(value)
    if include_boundaries not in ("both", "left", "right", "neither"):
        raise ValueError(f"include_boundaries must be 'both', 'left', 'right' or 'neither'; "
                         f"got {include_boundaries!r}.")
    if finite and not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number; got {given!r}.")
    left = include_boundaries in ("both", "left")
    right = include_boundaries in ("both", "right")
    low = min_val is not None and (value < min_val if left else value <= min_val)
    high = max_val is not None and (value > max_val if right else value >= max_val)
    if low or high:
        kind = {(int,): "an integer ", (float,): "a number "}.get(types, "")
        if min_val is not None and max_val is not None:
            want = (f"in {'[' if left else '('}{_bound(min_val)}, {_bound(max_val)}"
                    f"{']' if right else ')'}")
        else:
            op, b = (">=" if left else ">", min_val) if low else ("<=" if right else "<", max_val)
            want = f"{op} {_bound(b)}"
        raise ValueError(f"{name} must be {kind}{want}; got {given!r}.")
    return value


def check_positive_int(value, name: str, *, minimum: int = 1) -> int:
    """An integer ``>= minimum`` (a bool or a float is a TypeError; a smaller integer a
    ValueError): :func:`check_scalar` with ``int`` and ``min_val=minimum``, the check of sizes,
    counts and seeds."""
    return check_scalar(value, name, int, min_val=minimum)


def check_seed(value, name: str = "seed") -> int:
    """A seed: an integer ``>= 0`` (a bool, float or string is a TypeError; -1 a ValueError), the
    one check of every ``seed=``; returns it as a Python int."""
    return check_scalar(value, name, int, min_val=0)


def check_bool(value, name: str) -> bool:
    """``value`` is True or False (numpy bools accepted; 0 / 1 or a string is a TypeError: its
    truthiness would decide); returns it as a bool."""
    return check_scalar(value, name, bool)


def check_progress(progress) -> bool | None:
    """``progress=`` is None (automatic), True or False (numpy bools accepted; ``"no"``, 0 or 1 is a
    TypeError: its truthiness would decide); returns it as None or a bool."""
    return check_scalar(progress, "progress", (type(None), bool))


def check_choice(name: str, value, allowed) -> str:
    """``value`` is one of ``allowed``; the error lists them."""
    if value not in tuple(allowed):
        raise ValueError(f"{name} must be one of {list(allowed)}; got {value!r}.")
    return value


def repeated(values) -> list:
    """The values that occur more than once in ``values``, sorted (one pass)."""
    from collections import Counter

    return sorted(v for v, k in Counter(values).items() if k > 1)


def check_index(name: str, i, size: int, unit: str = "pairs") -> int:
    """An integer index into ``size`` items (negative counts from the end; ``bool`` and floats
    refused, never truncated); returns it in ``0 .. size - 1``."""
    if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
        raise TypeError(f"{name} must be an integer; got {i!r}.")
    i = int(i)
    if not -size <= i < size:
        raise IndexError(f"{name} {i} out of range for {size} {unit}.")
    return i % size


@nb.njit(cache=True, nogil=True)
def _not_permutations_block(flat, n, lo, hi, bad):  # pragma: no cover - numba
    """Mark the rows lo..hi - 1 of ``flat`` (m, n) that are not permutations of 0..n-1."""
    seen = np.zeros(n, np.int64)  # seen[v] == i + 1: v already met in row i
    for i in range(lo, hi):
        for s in range(n):
            v = flat[i, s]
            if v < 0 or v >= n or seen[v] == i + 1:
                bad[i] = True
                break
            seen[v] = i + 1


@nb.njit(parallel=True, cache=True, nogil=True)
def _not_permutations_par(flat, n, nblk, bad):  # pragma: no cover - numba
    m = flat.shape[0]
    for k in nb.prange(nblk):
        _not_permutations_block(flat, n, k * m // nblk, (k + 1) * m // nblk, bad)


#: Below this many entries the permutation check runs serially (a parallel region's start-up
#: costs more than the check; on a loaded machine, much more).
_PARALLEL_MIN_ENTRIES = 1 << 20


def _not_permutations(flat: np.ndarray, n: int) -> np.ndarray:
    """Rows of ``flat`` (m, n) that are not permutations of 0..n-1 (one pass, no sort)."""
    m = flat.shape[0]
    bad = np.zeros(m, np.bool_)
    if flat.size < _PARALLEL_MIN_ENTRIES or m < 2:
        _not_permutations_block(flat, n, 0, m, bad)
    else:
        _not_permutations_par(flat, n, min(m, 4 * numba_threads()), bad)
    return bad


def check_orders(orders, n: int, *, name: str = "orders", B: int | None = None,
                 check_perm: bool = True) -> np.ndarray:
    """Integer orderings (..., n), each a permutation of 0..n-1; errors name the offending entry.

    Parameters
    ----------
    orders : array_like of int, shape (..., n)
        ``orders[..., s]`` is the feature moved at step s + 1. Integer-valued floats are accepted.
    n : int
        Number of features.
    name : str
        Name used in errors.
    B : int, optional
        When given, ``orders`` must be (B, n) or (B, K, n) and is returned as (B, K, n).
    check_perm : bool
        Check that each ordering is a permutation (skip only for orderings built internally).

    Returns
    -------
    ndarray of int64, C-contiguous.
    """
    o = np.asarray(orders)
    if B is not None:
        if o.ndim == 2:
            o = o[:, None, :]
        if o.ndim != 3 or o.shape[0] != B or o.shape[2] != n:
            raise ValueError(
                f"{name} must have shape (B, n) or (B, K, n) = ({B}, K, {n}); got {o.shape}."
            )
    elif o.ndim == 0 or o.shape[-1] != n:
        raise ValueError(f"{name} must have last dimension n = {n}; got shape {o.shape}.")
    if o.dtype.kind not in "iu":  # bool is kind 'b'
        if np.issubdtype(o.dtype, np.floating) and np.all(np.isfinite(o)) and np.all(o == np.round(o)):
            o = o.astype(np.int64)
        else:
            raise TypeError(f"{name} must hold integer feature indices; got dtype {o.dtype}.")
    o = np.ascontiguousarray(o, dtype=np.int64)
    if not check_perm:
        return o
    flat = o.reshape(-1, n)
    bad = _not_permutations(flat, n)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        row = flat[i]
        where = (f"{name}[{', '.join(map(str, np.unravel_index(i, o.shape[:-1])))}]"
                 if o.ndim > 1 else name)
        parts = []
        out = np.flatnonzero((row < 0) | (row >= n))
        if out.size:
            parts.append("out of range: " + ", ".join(f"{int(row[p])} (position {int(p)})"
                                                      for p in out[:5]))
        inside = row[(row >= 0) & (row < n)]
        vals, cnt = np.unique(inside, return_counts=True)
        rep = vals[cnt > 1]
        if rep.size:
            parts.append("repeated: " + ", ".join(
                f"{int(v)} (positions {', '.join(str(int(p)) for p in np.flatnonzero(row == v))})"
                for v in rep[:5]))
        missing = np.setdiff1d(np.arange(n), inside)
        if missing.size:
            parts.append("missing: " + ", ".join(str(int(m)) for m in missing[:10])
                         + (" ..." if missing.size > 10 else ""))
        raise ValueError(
            f"{where} is not a permutation of 0..{n - 1}: {'; '.join(parts)} "
            f"(got {row.tolist()[:24]}{' ...' if n > 24 else ''})."
        )
    return o


def feature_names_of(X, feature_names=None, n: int | None = None) -> list[str] | None:
    """Feature names: the ``feature_names`` given, else a DataFrame's column names, else None.

    Checks that there are ``n`` of them, distinct.
    """
    if feature_names is None:
        cols = getattr(X, "columns", None)
        if cols is None:
            return None
        feature_names = [str(c) for c in cols]
    names = [str(c) for c in feature_names]
    if n is not None and len(names) != n:
        raise ValueError(f"feature_names has {len(names)} names for n = {n} features.")
    dup = repeated(names)
    if dup:
        raise ValueError(f"feature_names repeats {dup}.")
    return names
