"""What the fitted sampled removals share: the check of a ``sample(X, keep, targets)`` request and
a bounded per-target cache of draws (common random numbers: a target's draws are computed once)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from .._validation import as_float_array


def check_request(name: str, X, keep, targets, n: int) -> tuple[np.ndarray, np.ndarray,
                                                                 np.ndarray]:
    """``X`` (N, n) float64, ``keep`` (N, n) bool and ``targets`` (N,) int64 >= 0, C-contiguous.

    ``n`` is the width of the removal's training data: targets of another width are refused with
    both widths named."""
    X = as_float_array("X", X, ndim=(2,))
    if X.shape[1] != n:
        raise ValueError(f"{name}: the targets X have {X.shape[1]} features but the removal was "
                         f"fitted on data with {n} columns (targets of the wrong width).")
    keep = np.asarray(keep)
    if keep.shape != X.shape:
        raise ValueError(f"{name}: keep must have the shape of X, {X.shape} (one bool per "
                         f"coalition and feature); got {keep.shape}.")
    if keep.dtype != np.bool_:
        if keep.dtype.kind not in "iu" or not np.isin(keep, (0, 1)).all():
            raise ValueError(f"{name}: keep must be bool (True: the feature keeps x's value); "
                             f"got dtype {keep.dtype}.")
        keep = keep.astype(bool)
    targets = np.asarray(targets)
    if targets.shape != (X.shape[0],):
        raise ValueError(f"{name}: targets must have shape (N,) = ({X.shape[0]},) (the target "
                         f"index of each coalition); got {targets.shape}.")
    if targets.size and (targets.dtype.kind not in "iu" or targets.min() < 0):
        raise ValueError(f"{name}: targets must be integer indices >= 0; got dtype "
                         f"{targets.dtype}" + (f", min {targets.min()}." if targets.dtype.kind
                                               in "iu" else "."))
    return (np.ascontiguousarray(X), np.ascontiguousarray(keep),
            np.ascontiguousarray(targets, dtype=np.int64))


class DrawCache:
    """The draws of the last ``size`` targets, computed by ``make(target)`` on first use.

    :meth:`stack` returns the draws of the unique targets of a request as one array and each
    coalition's row in it; a Python call per *new target*, never per coalition."""

    def __init__(self, make: Callable[[int], np.ndarray], size: int = 4096):
        self._make = make
        self._size = size
        self._store: OrderedDict[int, np.ndarray] = OrderedDict()
        self._mutex = threading.Lock()

    def get(self, t: int) -> np.ndarray:
        with self._mutex:
            hit = self._store.get(t)
            if hit is not None:
                self._store.move_to_end(t)
                return hit
        arr = self._make(t)
        with self._mutex:
            self._store[t] = arr
            while len(self._store) > self._size:
                self._store.popitem(last=False)
        return arr

    def stack(self, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(draws of the unique targets stacked, (T, ...); the index of each coalition's target)."""
        uniq, inv = np.unique(targets, return_inverse=True)
        return (np.stack([self.get(int(t)) for t in uniq]),
                np.ascontiguousarray(inv.reshape(-1), dtype=np.int64))

    def __getstate__(self):  # pickled removals carry no cache and no lock
        return {"_make": self._make, "_size": self._size}

    def __setstate__(self, state):
        self.__init__(state["_make"], state["_size"])


def one_hot_groups(name: str, one_hot, data: np.ndarray, columns=None) -> list[list[int]]:
    """The one-hot groups of a fitted removal's ``one_hot=`` option, as column indices.

    ``one_hot`` is None (no group), a :class:`insdel.groups.Groups` (its groups of two or more
    columns, e.g. ``dataset.groups``), a mapping ``group name -> columns``, or a sequence whose
    items are each a list of columns or a group name. A column is an integer index or, when
    ``data`` was a DataFrame (``columns``: its labels), a column label; a group name ``"region"``
    names the DataFrame columns ``region=<level>`` (the ``table`` recipe's one-hot columns).
    Every group has at least two columns of ``data`` with at most two distinct values each, and
    no column is in two groups."""
    n = data.shape[1]
    if one_hot is None:
        return []
    if hasattr(one_hot, "starts") and hasattr(one_hot, "columns"):  # a Groups
        if one_hot.n != n:
            raise ValueError(f"{name}: one_hot= is a Groups over {one_hot.n} columns but data= "
                             f"has {n}.")
        items = [one_hot.columns(g).tolist() for g in range(one_hot.m) if one_hot.sizes[g] > 1]
    elif isinstance(one_hot, dict) or hasattr(one_hot, "keys"):
        items = [list(v) if not isinstance(v, str) else v for v in one_hot.values()]
    elif isinstance(one_hot, str):
        items = [one_hot]
    elif hasattr(one_hot, "__iter__"):
        items = list(one_hot)
    else:
        raise TypeError(f"{name}: one_hot must be a list of groups (column lists or group names), "
                        f"a mapping name -> columns or a Groups; got {one_hot!r}.")
    labels = None if columns is None else [str(c) for c in columns]
    groups = []
    for item in items:
        if isinstance(item, str):
            if labels is None:
                raise ValueError(f"{name}: one_hot group name {item!r} needs data= as a DataFrame "
                                 f"with columns '{item}=<level>', or one_hot= as a mapping "
                                 "name -> columns or a Groups (e.g. dataset.groups).")
            cols = [j for j, c in enumerate(labels) if c.startswith(f"{item}=")]
            if not cols:
                prefixes = sorted({c.split("=", 1)[0] for c in labels if "=" in c})
                raise ValueError(f"{name}: one_hot group {item!r} names no column of data "
                                 f"(no column '{item}=<level>'; one-hot prefixes in data: "
                                 f"{prefixes or 'none'}).")
            groups.append(cols)
            continue
        if not hasattr(item, "__iter__"):
            raise TypeError(f"{name}: a one_hot group is a list of columns or a group name; got "
                            f"{item!r}.")
        cols = []
        for j in item:
            if isinstance(j, str) and labels is not None and j in labels:
                j = labels.index(j)
            if isinstance(j, (bool, np.bool_)) or not isinstance(j, (int, np.integer)):
                raise TypeError(f"{name}: one_hot columns must be integer indices"
                                + (" or data's column labels" if labels else "")
                                + f"; got {j!r}.")
            if not 0 <= j < n:
                raise ValueError(f"{name}: one_hot column {j} is out of range for data with {n} "
                                 "columns.")
            cols.append(int(j))
        groups.append(cols)
    seen: set[int] = set()
    for g in groups:
        if len(g) < 2:
            raise ValueError(f"{name}: a one_hot group has at least two columns; got {g}.")
        if seen & set(g) or len(set(g)) < len(g):
            raise ValueError(f"{name}: one_hot groups must not share columns; column(s) "
                             f"{sorted((seen & set(g)) | {j for j in g if g.count(j) > 1})} "
                             "repeat.")
        seen |= set(g)
        for j in g:
            levels = np.unique(data[:, j]).size
            if levels > 2:
                raise ValueError(f"{name}: one_hot column {j} has {levels} distinct values in "
                                 "data; a one-hot column has two levels.")
    return groups


def is_one_hot(data: np.ndarray, cols) -> bool:
    """Whether columns ``cols`` of ``data`` are a complete one-hot block: values 0/1, exactly one
    1 per row."""
    block = np.asarray(data)[:, list(cols)]
    return bool(np.isin(block, (0.0, 1.0)).all() and (block.sum(axis=1) == 1).all())
