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
