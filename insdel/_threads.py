"""numba's threading layer, started once per process without changing torch's thread count; torch's
thread count for a model's work chosen by the model's size (:func:`torch_threads_for`)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import numba as nb

_numba_started = False


def start_numba_threads() -> None:
    """Start numba's threading layer (once per process) while keeping torch's intra-op thread
    count as the user set it.

    On numba's OpenMP layer, starting it sets the OpenMP thread count that torch reads to numba's:
    a ``torch.set_num_threads(1)`` (or ``OMP_NUM_THREADS=1``) made before insdel's first parallel
    kernel would end up at numba's count (the number of cores) without a word, and with it a
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


#: Work per model call (parameters x rows per call, about the multiply-adds of a forward pass)
#: below which torch runs on one intra-op thread (:func:`torch_threads_for`). Measured on a
#: 2-core AMD EPYC shared with other jobs (load 14, 2026-12-01), 2 threads against 1: a training
#: step (forward, backward, Adam) took 23x longer at 3.4e5 (an MLP of 5k parameters, batches of
#: 64), 14x at 1.4e7 (the paper's Bangalore MLP, batches of 64), 9.5x at 9.7e7 (the paper's
#: CERN MLP, batches of 256), 2.6x at 2.2e9; an evaluation call 4.1x at 4.4e7, 2.9x at 2.2e8,
#: 1.5x at 1.9e9 and 1.06x at 1.8e10. Threads wait for each other at every operation, which
#: costs more than they gain on small operations, most of all on a busy machine.
SMALL_WORK = 10 ** 9


def torch_threads_for(n_params: int, rows: int) -> int | None:
    """torch's intra-op thread count for calls of ``rows`` rows through a model of ``n_params``
    parameters: 1 below :data:`SMALL_WORK` (``n_params * rows``), else None (torch's setting,
    the user's, is kept)."""
    return 1 if int(n_params) * int(rows) < SMALL_WORK else None


def module_parameters(module) -> int:
    """The number of parameters of a torch module (0 for one without ``parameters()``)."""
    params = getattr(module, "parameters", None)
    return sum(int(p.numel()) for p in params()) if callable(params) else 0


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[int | None]:
    """Inside the block torch uses ``n`` intra-op threads (None: its setting unchanged); the
    previous count is restored on exit. Yields the count in use (None without torch)."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield None
        return
    before = torch.get_num_threads()
    if n is None or int(n) == before:
        yield before
        return
    torch.set_num_threads(int(n))
    try:
        yield int(n)
    finally:
        torch.set_num_threads(before)
