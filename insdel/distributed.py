"""Chunks of work on a Dask cluster, with the same results as a serial run.

insdel writes no scheduler of its own: work that is already cut into chunks (the runner's
checkpoint chunks, the curve engine's chunks of pairs, exact Shapley's streamed chunks) is submitted
to a ``dask.distributed.Client``, one task per chunk; the results come back to the caller (the
driver), which alone writes files. What a chunk computes depends only on its inputs and its index
(random streams are seeded by :func:`chunk_seed`, never by worker or completion order), so a chunk
gives the same numbers on any worker, and on the driver.

* :func:`make_client` turns a configuration's ``[compute]`` table into a client (or ``None`` for
  the serial backend): an existing cluster (``address``) or a ``LocalCluster`` started and stopped
  here (``n_workers``, ``threads_per_worker``).
* :func:`map_chunks` submits one task per chunk, with the large shared inputs (model, data) sent to
  the workers once (``client.scatter``), and yields ``(chunk, result)`` as tasks finish.
* :func:`run_chunked` is the one entry the engines use (curves, exact Shapley, attribution, the
  runner's checkpointed stages): it runs a pure per-chunk function on every chunk, here when the
  client is ``None`` or on Dask otherwise, gives each chunk its seed (:func:`chunk_seed`) and
  joins the results in chunk order. The engines never import Dask or cut work for it themselves.

Dask is imported only when a client is asked for or used; without it, :func:`require_dask` raises an
error that names the extra (``pip install ".[dask]"`` in the insdel clone).
"""

from __future__ import annotations

import contextlib
import functools
import os
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["BACKENDS", "DASK_MISSING", "require_dask", "chunk_seed", "chunk_bounds",
           "make_client", "scatter", "map_chunks", "run_chunked", "concat_rows", "client_info", "set_torch_threads",
           "worker_env", "local_cluster", "WORKER_MALLOC", "ShippedModule", "CONNECT_TIMEOUT",
           "driver_threads"]

#: Values of ``[compute] backend``.
BACKENDS = ("serial", "dask")

#: The message of the error raised when dask is asked for but not installed.
DASK_MISSING = ("the Dask backend needs dask.distributed, which is not installed: "
                'pip install ".[dask]" in the insdel clone (or pip install "dask[distributed]")')


def require_dask():
    """Import and return ``dask.distributed``; a clear ImportError naming the extra otherwise."""
    try:
        import dask.distributed as dd
    except ImportError as exc:
        raise ImportError(DASK_MISSING) from exc
    return dd


def chunk_seed(seed: int, *names: str | int) -> int:
    """The seed of one chunk's random stream, from the run's seed and the chunk's names (policy,
    method, chunk index): the same chunk gets the same stream on any worker and in any order."""
    words = [int(seed)] + [zlib.crc32(str(x).encode()) for x in names]
    return int(np.random.SeedSequence(words).generate_state(1)[0] & 0x7FFFFFFF)


def chunk_bounds(total: int, size: int) -> list[tuple[int, int]]:
    """``[(lo, hi), ...]`` cutting ``range(total)`` into consecutive chunks of ``size``."""
    from ._validation import check_positive_int

    size = check_positive_int(size, "pairs_per_chunk")
    return [(lo, min(total, lo + size)) for lo in range(0, total, size)]


def worker_env(threads: int) -> dict[str, str]:
    """Environment of a LocalCluster's worker processes: torch, numba and the BLAS libraries use
    ``threads`` threads each, so that workers x threads does not oversubscribe the cores (OpenMP
    threads that spin while another process holds the core make a chunk many times slower)."""
    n = str(int(threads))
    return {"OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n,
            "NUMBA_NUM_THREADS": n}


#: Seconds a run waits for an existing Dask scheduler to answer (``[compute] connect_timeout``):
#: Dask's own default (30 s of retries) made an address with no scheduler look like a hang.
CONNECT_TIMEOUT = 5.0

#: glibc settings a LocalCluster's workers start with (Dask's ``pre-spawn-environ``: read by malloc
#: when the process starts, unlike ``env``). Dask's nannies set MALLOC_TRIM_THRESHOLD_=65536,
#: which also switches off glibc's adaptive mmap threshold: every array over 128 KiB (a chunk's
#: hybrid rows, its 2^|D| values) is then mmapped and page-faulted afresh, and exact Shapley ran
#: 1.5x slower in a worker than in a plain process. Large arrays stay on the heap, as they do in
#: a plain process after its first large free.
WORKER_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(256 << 20)}


def set_torch_threads(n: int) -> int:
    """Set torch's intra-op threads of this process (run on every worker); returns ``n``."""
    with contextlib.suppress(ImportError):
        import torch

        torch.set_num_threads(int(n))
    return int(n)


def local_cluster(n_workers: int, threads: int = 1, **kwargs):
    """A ``dask.distributed.LocalCluster`` of ``n_workers`` processes x ``threads`` threads, with
    the workers' thread counts (:func:`worker_env`) and glibc settings (:data:`WORKER_MALLOC`);
    ``kwargs`` go to LocalCluster (e.g. ``dashboard_address=None``). Call
    ``client.run(set_torch_threads, threads)`` once a client is connected."""
    import dask

    dd = require_dask()
    with dask.config.set({f"distributed.nanny.pre-spawn-environ.{k}": v
                          for k, v in WORKER_MALLOC.items()}):
        return dd.LocalCluster(n_workers=int(n_workers), threads_per_worker=int(threads),
                               processes=True, env=worker_env(threads), **kwargs)


@contextlib.contextmanager
def make_client(compute: Mapping, *, log: Callable[[str], None] | None = None
                ) -> Iterator[Any]:
    """The client described by a ``[compute]`` table, closed (and its LocalCluster stopped) on exit.

    Parameters
    ----------
    compute : mapping
        ``backend`` ("serial" or "dask"), ``address`` (an existing scheduler,
        ``"tcp://host:8786"``) or ``n_workers`` / ``threads_per_worker`` (a LocalCluster of
        processes started here; torch uses ``threads_per_worker`` threads in each);
        ``connect_timeout`` (seconds, default :data:`CONNECT_TIMEOUT`): how long to wait for
        the scheduler at ``address``.
    log : callable, optional
        Receives one line naming the scheduler (and the dashboard of a LocalCluster).

    Yields
    ------
    dask.distributed.Client or None
        None for the serial backend.

    Raises
    ------
    ImportError
        ``backend = "dask"`` without dask installed (the message names the extra).
    ConnectionError
        No scheduler answered at ``address`` within ``connect_timeout`` seconds (the message
        names the address).
    """
    backend = compute.get("backend", "serial")
    if backend not in BACKENDS:
        raise ValueError(f"compute.backend must be one of {BACKENDS}; got {backend!r}.")
    from ._validation import check_positive_int, check_scalar

    given = [k for k in ("address", "n_workers", "threads_per_worker", "connect_timeout")
             if compute.get(k) is not None]
    if backend == "serial" and given:
        raise ValueError(f"compute: {given} describe a Dask cluster but backend = 'serial' "
                         "ignores them; set backend = 'dask' or drop them.")
    sizes = [k for k in given if k in ("n_workers", "threads_per_worker")]
    if compute.get("address") is not None and sizes:
        raise ValueError(f"compute: {sizes} size a LocalCluster, "
                         "but address names an existing scheduler (its workers are used as they "
                         "are); give one or the other.")
    for k in ("n_workers", "threads_per_worker"):
        if compute.get(k) is not None:
            check_positive_int(compute[k], f"compute.{k}")
    timeout = compute.get("connect_timeout")
    timeout = CONNECT_TIMEOUT if timeout is None else check_scalar(
        timeout, "compute.connect_timeout", float, min_val=0.0, include_boundaries="neither",
        finite=True)
    if backend == "serial":
        yield None
        return
    dd = require_dask()
    address = compute.get("address")
    if address:
        try:
            client = dd.Client(address, timeout=timeout)
        except OSError as exc:  # Dask's TimeoutError: nothing answered at the address
            raise ConnectionError(
                f"no Dask scheduler answered at {address} within {timeout:g} s ({exc}); start "
                "one there (dask scheduler), check the address, or raise "
                "[compute] connect_timeout.") from None
        try:
            if log is not None:
                log(f"compute: Dask scheduler {address}, {len(client.nthreads())} workers")
            yield client
        finally:
            client.close()
        return
    threads = int(compute.get("threads_per_worker") or 1)
    n_workers = compute.get("n_workers")
    if n_workers is None:
        n_workers = max(1, (os.cpu_count() or 1) // threads)
    cluster = local_cluster(int(n_workers), threads)
    try:
        client = dd.Client(cluster)
        try:
            client.run(set_torch_threads, threads)
            if log is not None:
                log(f"compute: Dask LocalCluster of {n_workers} worker processes x {threads} "
                    f"thread(s), scheduler {cluster.scheduler_address}, dashboard "
                    f"{client.dashboard_link}")
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


def _torch_threads() -> int | None:
    """torch's intra-op thread count in this process (run on every worker); None without torch."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        return None
    return int(torch.get_num_threads())


@contextlib.contextmanager
def driver_threads(client, *, log: Callable[[str], None] | None = None) -> Iterator[int | None]:
    """Inside the block, torch in this process (the driver) uses the workers' thread count.

    The driver evaluates the model too (training, the policies' pairing, the curves), and on some
    CPUs a float32 model's rounding depends on torch's thread count; with the workers' count here
    a Dask run gives the bytes of a serial run at that count (docs/experiments.md). Workers whose
    counts differ (an existing cluster) leave the driver as it is, with a line through ``log``.
    Yields the count in use here (None without torch); restores the previous count on exit.
    """
    from ._threads import start_numba_threads

    _torch_threads()  # torch imported first: numba's start then keeps torch's count
    start_numba_threads()
    before = _torch_threads()
    counts = {n for n in client.run(_torch_threads).values() if n is not None}
    if len(counts) != 1 or before is None:
        if log is not None and len(counts) > 1:
            log(f"compute: the workers use {sorted(counts)} torch threads; the driver keeps its "
                f"{before} (a float32 model's values may differ from a serial run's by rounding)")
        yield before
        return
    (n,) = counts
    set_torch_threads(n)
    try:
        yield n
    finally:
        set_torch_threads(before)


def client_info(client) -> dict:
    """What a run actually used, for the manifest: backend, scheduler, workers and threads (a
    serial run: torch's intra-op threads in this process, which can move a float32 model's values
    by a rounding unit on some CPUs, so a Dask run's bytes equal a serial run's with its workers'
    thread count: docs/experiments.md; a Dask run: the workers' Dask threads, and torch's threads
    on the driver, ``driver_threads``, which :func:`driver_threads` sets to the workers')."""
    if client is None:
        try:
            import torch

            threads = int(torch.get_num_threads())
        except ImportError:  # pragma: no cover
            threads = None
        return {"backend": "serial", "scheduler": None, "workers": None, "threads": threads}
    # asked of the scheduler now: Client.scheduler_info() returns the client's cached copy, which
    # its periodic refresh (every 2 s, cluster totals only) can overwrite with no workers at all
    # between the fetch of every worker and the return
    nthreads = client.nthreads()
    return {"backend": "dask", "scheduler": client.scheduler.address, "workers": len(nthreads),
            "threads": int(sum(nthreads.values())), "driver_threads": _torch_threads()}


def _reraise(exc: BaseException, where: str):
    """``exc`` again with ``where`` (the chunk's pairs) in front of its message."""
    if str(exc).startswith(where):  # the task named its chunk already
        raise exc
    msg = f"{where}: {exc}"
    try:
        new = type(exc)(msg)
    except Exception:  # an exception type whose constructor wants more than a message
        new = RuntimeError(f"{type(exc).__name__}: {msg}")
    raise new from exc


class ShippedModule:
    """A torch module on its way to the workers, as its pickle; :meth:`get` returns the module.

    Dask serialises a ``torch.nn.Module`` by walking its ``__dict__`` (``register_generic``),
    which rebuilds the module's hook registries (``OrderedDict``) as plain dicts: the module
    computes, but ``register_forward_pre_hook`` fails ("cannot create weak reference to 'dict'
    object"), so captum's DeepLift cannot run on it. Pickled whole (cloudpickle: a class defined
    in ``__main__`` travels by value), the module unpickles through ``Module.__setstate__`` like a
    ``torch.save`` file. The worker keeps this object as the scattered data and unpickles the
    module once, on the first :meth:`get`; every chunk on that worker gets the same module.
    """

    def __init__(self, module: Any) -> None:
        import cloudpickle

        try:
            self.payload = cloudpickle.dumps(module)
        except Exception as exc:  # e.g. the module of a torch.export program
            raise TypeError(f"the torch module ({type(module).__name__}) cannot be sent to Dask "
                            f"workers: it does not pickle ({exc}); compute without a client, or "
                            "give a run its file ([model] path), which each worker loads "
                            "itself.") from exc
        self._module = module

    def __getstate__(self) -> dict:
        return {"payload": self.payload}

    def __setstate__(self, state: dict) -> None:
        self.payload = state["payload"]
        self._module = None

    def get(self) -> Any:
        """The module (unpickled here on the first call)."""
        if self._module is None:
            import pickle

            self._module = pickle.loads(self.payload)
        return self._module


def _is_torch_module(obj: Any) -> bool:
    """Whether ``obj`` is a ``torch.nn.Module`` (False without importing torch when it is not
    loaded: then no object can be one)."""
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


def scatter(client, objects: Sequence[Any]) -> list:
    """Send ``objects`` (the model, the data) to every worker once; their futures, in order.

    Each gets a fresh key (never the content's hash, so two runs' futures never collide); a worker
    that joins later fetches them from a peer. A torch module travels as a :class:`ShippedModule`
    (Dask's own serialisation of modules loses their hook registries); the tasks of
    :func:`map_chunks` receive the module itself."""
    if not objects:
        return []
    objects = [ShippedModule(o) if _is_torch_module(o) else o for o in objects]
    return list(client.scatter(objects, broadcast=True, hash=False))


def _run_chunk(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """One task of :func:`map_chunks` on a worker: ``fn(*args, **kwargs)``, with each shared
    torch module (a :class:`ShippedModule`) replaced by the module."""
    kwargs = {k: v.get() if isinstance(v, ShippedModule) else v for k, v in kwargs.items()}
    return fn(*args, **kwargs)


def map_chunks(client, fn: Callable, chunk_args: Sequence[tuple], *,
               shared: Mapping[str, Any] | None = None, ids: Sequence[int] | None = None,
               describe: Callable[[int], str] | None = None, name: str = "insdel-chunk"
               ) -> Iterator[tuple[int, Any]]:
    """Submit ``fn(*chunk_args[k], **shared)`` for every chunk; yield ``(id, result)`` as they finish.

    Parameters
    ----------
    client : dask.distributed.Client
    fn : callable
        A module-level function (pickled by reference).
    chunk_args : sequence of tuple
        The positional arguments of each chunk (small: indices, options, seeds).
    shared : mapping, optional
        Keyword arguments common to every chunk (the model, the data): scattered to the workers
        once and passed to each task as a reference, not once per chunk. Values that are already
        futures (:func:`scatter`, to share them between several calls) are passed as they are.
    ids : sequence of int, optional
        The id yielded with each chunk's result (default 0, 1, ...).
    describe : callable, optional
        ``describe(id)`` names a chunk (e.g. its pair indices) in the error of a failed task.
    name : str
        Prefix of the task keys (shown on the dashboard).

    Yields
    ------
    (int, object)
        In completion order; a task that raised re-raises here, naming its chunk. Tasks still
        pending when the caller stops (an error, an interrupt) are cancelled.

    Notes
    -----
    A worker that dies mid-chunk is replaced and its chunks are run again by the scheduler; the
    result is the same, since a chunk depends only on its arguments.
    """
    dd = require_dask()
    ids = list(range(len(chunk_args))) if ids is None else list(ids)
    if len(ids) != len(chunk_args):
        raise ValueError(f"ids has {len(ids)} entries for {len(chunk_args)} chunks.")
    from ._validation import repeated

    dup = repeated(ids)
    if dup:  # equal task keys would make Dask return one chunk's result twice
        raise ValueError(f"ids must be distinct; repeated: {dup[:5]}.")
    if not chunk_args:
        return
    shared = dict(shared or {})
    sent = [k for k, v in shared.items() if not isinstance(v, dd.Future)]
    scattered = scatter(client, [shared[k] for k in sent])
    shared_f = {**shared, **dict(zip(sent, scattered, strict=True))}
    token = os.urandom(4).hex()
    futures = {}
    for cid, args in zip(ids, chunk_args, strict=True):
        fut = client.submit(_run_chunk, fn, *args, **shared_f, key=f"{name}-{cid}-{token}",
                            pure=False)
        futures[fut] = cid
    try:
        for fut in dd.as_completed(list(futures)):
            cid = futures[fut]
            try:
                res = fut.result()
            except Exception as exc:
                if describe is None:
                    raise
                _reraise(exc, describe(cid))
            fut.release()
            yield cid, res
    finally:
        client.cancel(list(futures))
        if scattered:
            client.cancel(scattered)


def concat_rows(parts: Sequence[Any]) -> np.ndarray:
    """The chunks' arrays stacked along their first axis (the pairs), in chunk order."""
    return np.concatenate(parts, axis=0)


def run_chunked(fn: Callable, chunks: Sequence[tuple], *, shared: Mapping[str, Any] | None = None,
                client=None, seed: int | None = None, seed_names: Sequence[str | int] = (),
                todo: Sequence[int] | None = None,
                on_result: Callable[[int, Any], None] | None = None,
                concat: Callable[[list], Any] | None = concat_rows, progress: bool | None = None,
                desc: str = "chunks", name: str = "insdel-chunk",
                describe: Callable[[int], str] | None = None) -> Any:
    """Run ``fn`` on every chunk, here or on Dask workers, and join the results in chunk order.

    The one place where insdel's work is cut and sent out: an engine passes a pure per-chunk
    function (a module-level function of its chunk's arguments and the shared inputs) and gets
    the results of a serial loop over the same chunks, whatever the client.

    Parameters
    ----------
    fn : callable
        ``fn(*chunks[k], **shared)`` (plus ``seed=`` when ``seed`` is given) computes chunk ``k``;
        module-level, so that Dask pickles it by reference.
    chunks : sequence of tuple
        Each chunk's positional arguments (small: bounds, options), e.g. the ``(lo, hi)`` of
        :func:`chunk_bounds`.
    shared : mapping, optional
        Keyword arguments common to every chunk (the model, the data): sent to the workers once
        (:func:`scatter`: a torch module as a :class:`ShippedModule`); futures are passed as they
        are. With ``client=None`` they are passed as they are.
    client : dask.distributed.Client, optional
        None: the chunks run here, one after the other; else one task per chunk on its workers
        (:func:`map_chunks`). The results are the same either way.
    seed : int, optional
        Give chunk ``k`` the keyword ``seed=chunk_seed(seed, *seed_names, k)``: its own random
        stream, fixed by its index (not by the worker or the order chunks finish in).
    seed_names : sequence of str or int
        Names mixed into each chunk's seed (e.g. the method), before the chunk's index.
    todo : sequence of int, optional
        The chunks to run (default all; a resumed run skips the chunks on disk).
    on_result : callable, optional
        ``on_result(k, result)`` for each chunk as it finishes (completion order on Dask, chunk
        order here), e.g. to save it.
    concat : callable or None
        Joins the list of results in chunk order (default :func:`concat_rows`); None returns
        the list (None for chunks not in ``todo``).
    progress : bool, optional
        A progress bar over the chunks (default: on Dask runs in a terminal); False when the
        caller keeps its own (through ``on_result``).
    desc, name : str
        The progress bar's label; the prefix of the Dask task keys (shown on the dashboard).
    describe : callable, optional
        ``describe(k)`` names chunk ``k`` (e.g. its pairs) in front of the error of a failed
        chunk.

    Returns
    -------
    object
        ``concat(results)``, or the list of results when ``concat`` is None.
    """
    from ._progress import progress_bar

    n = len(chunks)
    todo = list(range(n)) if todo is None else list(todo)
    out: list = [None] * n
    shared = dict(shared or {})

    def args_of(k: int) -> tuple:
        return tuple(chunks[k])

    def seed_of(k: int) -> dict:
        return {} if seed is None else {"seed": chunk_seed(seed, *seed_names, k)}

    with progress_bar(len(todo), desc, unit="chunk", enable=progress,
                      auto=client is not None) as bar:
        def finish(k: int, res: Any) -> None:
            out[k] = res
            if on_result is not None:
                on_result(k, res)
            bar.update(1)

        if client is None:
            for k in todo:
                try:
                    res = fn(*args_of(k), **shared, **seed_of(k))
                except Exception as exc:
                    if describe is None:
                        raise
                    _reraise(exc, describe(k))
                finish(k, res)
        else:
            task = fn if seed is None else functools.partial(_with_seed, fn)
            chunk_args = [args_of(k) + ((seed_of(k)["seed"],) if seed is not None else ())
                          for k in todo]
            for k, res in map_chunks(client, task, chunk_args, shared=shared, ids=todo,
                                     describe=describe, name=name):
                finish(k, res)
    return out if concat is None else concat(out)


def _with_seed(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args[:-1], seed=args[-1], **kwargs)``: a task of :func:`run_chunked` whose chunk
    seed travels as its last positional argument."""
    return fn(*args[:-1], seed=args[-1], **kwargs)
