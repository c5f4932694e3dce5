"""numba's threading layer, started once per process without changing torch's thread count."""

from __future__ import annotations

import sys

import numba as nb

_numba_started = False


def start_numba_threads() -> None:
    """Start numba's threading layer (once per process) while keeping torch's intra-op thread
    count as the user set it.

    On numba's OpenMP layer, starting it sets the OpenMP thread count that torch reads to numba's:
    a ``torch.set_num_threads(1)`` (or ``OMP_NUM_THREADS=1``) made before insdel's first parallel
    kernel used to end up at numba's count (the number of cores) without a word, and with it a
    float32 model's rounding on some CPUs. Called where insdel's work starts (:class:`Model`,
    :func:`check_pairs`, :func:`insdel.trace`); a flag test after the first call.
    """
    global _numba_started
    if _numba_started:
        return
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    nb.get_num_threads()  # starts the threading layer
    if before is not None and torch.get_num_threads() != before:
        torch.set_num_threads(before)
    _numba_started = True


def numba_threads() -> int:
    """numba's thread count, its threading layer started by :func:`start_numba_threads`."""
    if not _numba_started:
        start_numba_threads()
    return nb.get_num_threads()
