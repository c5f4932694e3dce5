"""The batched insertion/deletion curve engine (conventions: *Curves*).

For an ordering pi and S_k = {pi(1), ..., pi(k)}:

* insertion ``y_k = f(hybrid(x, r, S_k))``, from f(r) to f(x);
* deletion ``z_k = f(hybrid(x, r, complement(S_k)))``, from f(x) to f(r).

How the work is laid out (all pairs, all orderings, both modes at once):

1. Every point of every curve is a set of units taken from x. Units with ``x_j == r_j`` do not
   change the point, so each set is reduced to its *canonical* form ``S ∩ D`` with
   ``D = {j : x_j != r_j}``. Two curve points of one pair with the same canonical set are the same
   point and are evaluated once; the end points f(r) (set ∅) and f(x) (set D) are shared by all
   orderings and both modes of a pair.
2. One pass over the pairs finds D and |D| per pair and checks that every value is finite and
   every ordering a permutation (the messages come from the checkers, only on failure).
3. The pairs are traced chunk by chunk (at most ``chunk_size`` curve points at once), each chunk
   in runs of pairs whose rows fit :data:`ROW_BUFFER_BYTES` (and at least a batch): a numba
   kernel (:mod:`insdel._curve_kernels`) writes the run's distinct rows in the model's dtype and
   each curve point's row id, then the adapter evaluates them.

   * One ordering per pair (the *chain* kernel): a pair's distinct rows are r, x and per mode one
     per recorded point that moves a unit of D, so their number and place are known without an
     index; the run's rows are one contiguous region, evaluated by one adapter call.
   * Several orderings per pair (the *set* kernel): each point's canonical set is looked up in a
     direct table (up to :data:`DIRECT_MAX_UNITS` units) or a hash table (exact), and each new
     set's row is written after the pair's previous one; parallel blocks of pairs (one per
     thread) each fill one region of the buffer, evaluated by one adapter call per region.

4. The curves are gathered from the distinct values; every value is read there, so that is where
   the model's values are checked for NaN and inf (the adapter is called with
   ``check_finite=False``).

The chunk's arrays live in a per-thread workspace kept between calls (:func:`clear_workspace`).
"""

from __future__ import annotations

import math
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from . import _curve_kernels as kern
from ._curve_kernels import DIRECT_MAX_UNITS as DIRECT_MAX_UNITS  # documented here
from ._progress import progress_bar
from ._threads import numba_threads
from ._validation import (
    _first,
    align_attributions,
    as_float_array,
    check_finite,
    check_mode,
    check_orders,
    check_positive_int,
)
from .adapter import ModelLike, as_model
from .game import Game, as_game, from_parts, refuse_drawn_outputs
from .groups import (
    Groups,
    check_positions,
    full_positions,
    group_attributions,
)
from .groups import positions as make_positions
from .ordering import check_ordering, sort_orderings

__all__ = ["curves", "orderings", "unit_orderings", "trace", "TraceResult", "DEFAULT_CHUNK_SIZE",
           "clear_workspace", "per_output_take"]

DEFAULT_CHUNK_SIZE = 1 << 21  # curve points indexed per chunk of pairs
MODES = ("insertion", "deletion")

#: The orderings ``order=`` takes (:mod:`insdel.ordering`): the paper's decreasing signed value,
#: decreasing absolute value (MoRF, what Quantus and ROAR use) and increasing signed value (LeRF).
ORDERS = ("signed", "absolute", "ascending")


def check_order(order: str) -> str:
    """Validate an ``order=`` option (one of :data:`ORDERS` or its aliases in
    :mod:`insdel.ordering`); returns the canonical name."""
    return check_ordering(order, allowed=ORDERS, ranking=None)


def orderings(A: ArrayLike, *, order: str = "signed") -> np.ndarray:
    """Feature orderings of attributions, ties broken by feature index (stable sort).

    Parameters
    ----------
    A : array_like, shape (..., n)
    order : {"signed", "absolute", "ascending"}, default "signed"
        ``"signed"``: decreasing a_j, the paper's ordering (the convention of insdel's tables);
        ``"absolute"``: decreasing |a_j| (MoRF, "most relevant first", as in Quantus and ROAR);
        ``"ascending"``: increasing a_j (LeRF, "least relevant first"). The names and their
        aliases: :mod:`insdel.ordering`.

    Returns
    -------
    ndarray of int64, shape (..., n)
        ``order[..., k]`` is the feature moved at step k + 1.
    """
    order = check_order(order)
    A = as_float_array("A", A, ndim=tuple(range(1, 8)))
    return sort_orderings(A, order)


def _raise_non_finite(model, curves_out, fr, fx, b0: int, modes) -> None:
    """The error for non-finite model values found while gathering a chunk from pair ``b0`` on:
    names the model, the pairs and, for the first, the mode and curve points."""
    bad_pt = ~np.isfinite(curves_out).reshape(curves_out.shape[0], curves_out.shape[1], -1)
    bad = bad_pt.any(axis=(0, 2)) | ~np.isfinite(fr) | ~np.isfinite(fx)
    pairs = np.flatnonzero(bad)
    b = pairs[0]
    where = [f"{mo} points {_first(np.flatnonzero(bad_pt[mi, b]))}"
             for mi, mo in enumerate(modes) if bad_pt[mi, b].any()]
    ends = [name for name, v in (("f(r)", fr[b]), ("f(x)", fx[b])) if not np.isfinite(v)]
    raise ValueError(
        f"{model.name} returned non-finite values on the curves of {len(pairs)} pair(s) (pairs "
        f"{_first(pairs + b0)}); pair {b0 + b}: {', '.join(ends + where)}.")


def _raise_non_finite_at(model, curves_out, fr, fx, b0: int, modes) -> None:
    """:func:`_raise_non_finite` for one output's curves when any of its values is not finite."""
    if not (np.isfinite(curves_out).all() and np.isfinite(fr).all() and np.isfinite(fx).all()):
        _raise_non_finite(model, curves_out, fr, fx, b0, modes)


@dataclass
class TraceResult:
    """Curves of B pairs under K orderings, with the bookkeeping an experiment reports.

    Attributes
    ----------
    curves : dict
        mode -> array (B, K, S): S = n + 1 points for the paper's curves, or one per position;
        (B, K, S, H) for a model with H outputs (``outputs=H``).
    fx, fr : ndarray (B,)
        f(x) and f(r) per pair (each evaluated once); (B, H) for H outputs.
    n_points : int
        Curve points requested (B * K * modes * S).
    n_unique : int
        Distinct points evaluated by the model (the physical minimum for these curves).
    positions : ndarray of int64 (S,)
        Units moved at each point (``0 .. m`` for the paper's curves).
    m : int
        Number of units (groups; n without groups).
    groups : Groups or None
    """

    curves: dict
    fx: np.ndarray
    fr: np.ndarray
    n_points: int = 0
    n_unique: int = 0
    timings: dict = field(default_factory=dict)
    positions: np.ndarray | None = None
    m: int = 0
    groups: Groups | None = None


class _Workspace(threading.local):
    """Per-thread scratch arrays (the rows, ids and values of a chunk), kept between calls.

    Fresh multi-megabyte arrays cost a page fault per page on first touch (bench/RESULTS.md has
    what that cost), so the engine reuses them, as torch's allocator does. Nothing kept here is returned to the caller; a nested call
    (a model that itself traces curves) gets fresh arrays; :func:`clear_workspace` frees them.
    """

    def __init__(self):
        self.arrays: dict = {}
        self.busy = False

    def get(self, name: str, shape: tuple, dtype) -> np.ndarray:
        size = math.prod(shape)
        a = self.arrays.get(name)
        if a is None or a.dtype != np.dtype(dtype) or a.size < size:
            a = np.empty(size, dtype=dtype)
            if a.nbytes <= WORKSPACE_MAX_BYTES:
                self.arrays[name] = a
        return a[:size].reshape(shape)


#: Arrays larger than this are not kept between calls.
WORKSPACE_MAX_BYTES = 1 << 28

_workspace = _Workspace()


def clear_workspace() -> None:
    """Free the calling thread's scratch arrays kept between calls of :func:`trace`."""
    _workspace.arrays.clear()


class _Fresh:
    """A workspace that keeps nothing (for a nested call while the thread's own is in use)."""

    @staticmethod
    def get(name: str, shape: tuple, dtype) -> np.ndarray:
        return np.empty(shape, dtype=dtype)


class _scratch:
    """``with _scratch() as ws``: the thread's workspace, or a fresh one while it is in use
    (re-entrant calls). A class, not a generator: it is entered on every call."""

    __slots__ = ("ws",)

    def __enter__(self):
        if _workspace.busy:
            self.ws = _Fresh()
        else:
            _workspace.busy = True
            self.ws = _workspace
        return self.ws

    def __exit__(self, *exc) -> None:
        if self.ws is _workspace:
            _workspace.busy = False


#: The row kernels write the rows of as many pairs as fit in this many bytes (and at least one
#: batch), then the model evaluates them. Large on purpose: every switch between numba's parallel
#: kernels and the model's own threads costs (each OpenMP pool's workers spin for a while after
#: their region, on the cores the other pool needs), so fewer, longer runs win although their rows
#: leave the cache (the sizes measured: bench/RESULTS.md). The buffer is kept in the thread's
#: workspace between calls (:func:`clear_workspace` frees it).
ROW_BUFFER_BYTES = 1 << 26

#: Kernels over fewer rows (or curve points) than this run serially: below it a parallel region's
#: start-up costs more than the work.
PARALLEL_MIN_POINTS = 1 << 12

#: The pass over the pairs (:func:`insdel._curve_kernels.prepare`) is a read of X and R with
#: little arithmetic: it runs serially below this many entries of X and the orderings (where a
#: parallel region's start-up, right after a torch call, costs more; bench/RESULTS.md).
PREPARE_PARALLEL_MIN = 1 << 14


class _Clock:
    """Seconds spent indexing and writing rows (bookkeeping) and in the model, for TraceResult
    (the row runs add ``time.perf_counter`` differences to them directly)."""

    __slots__ = ("index_s", "model_s")

    def __init__(self):
        self.index_s = self.model_s = 0.0


class _Plan(NamedTuple):
    """What the row kernels need besides the pairs: recorded positions, unit -> columns (read-only
    int64 arrays: one argument type for every call), each traced mode's index on the ids' mode
    axis (-1 when not traced), the chain kernel's row layout, and the threads the parallel kernels
    share out (read once per call: numba's ``get_num_threads`` costs microseconds)."""

    pos: np.ndarray
    starts: np.ndarray
    members: np.ndarray
    ins_at: int
    del_at: int
    interleave: bool  # the chain kernel's modes alternate row by row
    threads: int

    @property
    def args(self) -> tuple:
        """The plan as the row kernels take it, after the pairs."""
        return self.pos, self.starts, self.members, self.ins_at, self.del_at


def _read_only(a: np.ndarray) -> np.ndarray:
    """``a`` as a read-only array (a view when it is writeable)."""
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


def _chain_run_rows(model, plan: _Plan, ws, ob, Xc, Rc, dc, nd, idx, values,
                    clock: _Clock) -> tuple[np.ndarray, int]:
    """One ordering per pair: count each pair's distinct rows (closed form when every step is
    recorded: r, x and per mode one row per inner step), then, per run of pairs whose rows fit
    :data:`ROW_BUFFER_BYTES`, write them contiguously (:func:`insdel._curve_kernels._chain_block`)
    and evaluate them with one adapter call (batched by the model's ``batch_size``). Returns each
    pair's first row id and the number of distinct rows."""
    Bc, n = Xc.shape
    S = plan.pos.shape[0]
    M = (plan.ins_at >= 0) + (plan.del_at >= 0)
    cap = 2 + M * S  # most rows of one pair
    budget = _row_budget(model, n, cap)
    t = time.perf_counter()
    heads = np.zeros(Bc + 1, dtype=np.int64)
    if S == plan.starts.shape[0]:  # positions 0, 1, ..., m
        np.cumsum(1 + (nd > 0) + M * np.maximum(nd - 1, 0), out=heads[1:])
    else:
        counts = np.empty(Bc, dtype=np.int64)
        kern.write_chain_rows(_blocks(Bc, Bc * cap, plan.threads), ob, Xc, Rc, dc, nd, *plan.args,
                              plan.interleave, False, 0, counts,
                              ws.get("rows", (0, n), model.dtype), idx)
        np.cumsum(counts, out=heads[1:])
    clock.index_s += time.perf_counter() - t
    b = 0
    while b < Bc:
        t = time.perf_counter()
        base = int(heads[b])
        # the pairs from b whose rows fit the budget (at least one pair)
        e = Bc if heads[Bc] - base <= budget else max(
            b + 1, int(np.searchsorted(heads, base + budget, side="right")) - 1)
        rows = int(heads[e]) - base
        stage = ws.get("rows", (rows, n), model.dtype)
        kern.write_chain_rows(_blocks(e - b, rows, plan.threads), ob[b:e], Xc[b:e], Rc[b:e],
                              dc[b:e], nd[b:e], *plan.args, plan.interleave, True, base,
                              heads[b:e + 1], stage, idx[b:e])
        t1 = time.perf_counter()
        clock.index_s += t1 - t
        model(stage, out=values[base:base + rows], check_finite=False)
        clock.model_s += time.perf_counter() - t1
        b = e
    return heads[:Bc], int(heads[Bc])


def _set_run_rows(model, plan: _Plan, ws, ob, Xc, Rc, dc, nd, idx, values,
                  clock: _Clock) -> tuple[np.ndarray, int]:
    """K orderings per pair, per run of pairs whose rows fit :data:`ROW_BUFFER_BYTES`: parallel
    blocks of pairs (one per thread) index every curve point's canonical set and write each new
    row right after their previous pair's rows (:func:`insdel._curve_kernels._set_block`, a
    direct table or a hash table); each block's rows are one region of the buffer, evaluated by
    one adapter call (no compaction pass: the values keep the buffer's layout). Returns each
    pair's first row id and the number of distinct rows."""
    Bc, n = Xc.shape
    _, K, M, S = idx.shape
    cap = 2 + K * M * S  # most distinct rows one pair can have
    lgT = kern.index_size(plan.starts.shape[0] - 1, cap)
    run_pairs = max(1, _row_budget(model, n, cap) // cap)
    first = np.empty(Bc, dtype=np.int64)  # global id of each pair's row r
    n_rows = 0
    for p0 in range(0, Bc, run_pairs):
        p1 = min(Bc, p0 + run_pairs)
        t = time.perf_counter()
        P = p1 - p0
        stage = ws.get("rows", (P * cap, n), model.dtype)
        counts = np.empty(P, dtype=np.int64)
        nblk = min(_blocks(P, P * (cap - 2), plan.threads), max(1, plan.threads))
        heads = first[p0:p1]
        kern.write_set_rows(nblk, ob[p0:p1], Xc[p0:p1], Rc[p0:p1], dc[p0:p1], *plan.args, lgT, cap,
                            counts, idx[p0:p1], heads, stage)
        base = p0 * cap  # the run's rows and values keep the buffer's layout from here
        t1 = time.perf_counter()
        clock.index_s += t1 - t
        for i in range(nblk):  # block i's rows: one region from its first pair's r on
            b_lo, b_hi = i * P // nblk, (i + 1) * P // nblk
            if b_hi > b_lo:
                lo, hi = int(heads[b_lo]), int(heads[b_hi - 1] + counts[b_hi - 1])
                model(stage[lo:hi], out=values[base + lo:base + hi], check_finite=False)
        t2 = time.perf_counter()
        clock.model_s += t2 - t1
        heads += base
        n_rows += int(counts.sum())
        clock.index_s += time.perf_counter() - t2
    return first, n_rows


def _row_budget(model, n: int, cap: int) -> int:
    """Rows written before the model evaluates them: as many as fit :data:`ROW_BUFFER_BYTES`,
    and at least one batch and one pair's ``cap`` rows."""
    return max(model.batch_size, cap, ROW_BUFFER_BYTES // max(n * model.dtype.itemsize, 1))


def _blocks(B: int, work: int, threads: int, parallel_min: int | None = None) -> int:
    """Parallel blocks for a kernel over B pairs and ``work`` rows or points on ``threads``
    threads (1: serially, below ``parallel_min``, default :data:`PARALLEL_MIN_POINTS`)."""
    if work < (PARALLEL_MIN_POINTS if parallel_min is None else parallel_min) or B < 2:
        return 1
    return min(B, 4 * max(1, threads))


def trace(f: ModelLike | Game, X: ArrayLike | None, R: ArrayLike | None, orders: ArrayLike, *,
          modes=MODES, groups=None, positions: ArrayLike | None = None,
          batch_size: int | None = None, chunk_size: int = DEFAULT_CHUNK_SIZE,
          progress: bool | None = None, validate: bool | None = None, client=None,
          removal=None, engine: str = "auto") -> TraceResult:
    """Trace insertion and/or deletion curves of every pair under every given ordering.

    Parameters
    ----------
    f : model or insdel.game.Game
        Anything :func:`insdel.as_model` accepts, or a game (:func:`insdel.game.as_game`) that
        holds the pairs, the removal and the groups (then X and R are None).
    X, R : array_like (B, n)
        Targets and references (a 1-D R is one reference for all targets).
    orders : array_like of int, (B, m) or (B, K, m)
        Orderings of the m units (``orders[b, k, s]`` is the unit moved at step s + 1); the units
        are the n features, or the m groups of ``groups``.
    modes : sequence of {"insertion", "deletion"}
    groups : optional
        A partition of the columns into m groups that move as one unit (:mod:`insdel.groups`).
    positions : array_like of int (S,), optional
        Units moved at each recorded point, strictly increasing in [0, m] (:func:`insdel.groups.positions`
        builds them from ``step=``, ``fractions=``, ``max_fraction=``). Default ``0, 1, ..., m``.
    batch_size : int, optional
        Rows per model call.
    chunk_size : int
        Maximum number of curve points indexed at once (bounds memory).
    progress : bool, optional
        Show a progress bar (default: only on long runs in a terminal).
    validate : bool, optional
        Deprecated and ignored: the inputs are checked once, by :func:`insdel.game.as_game`.
    client : dask.distributed.Client, optional
        Trace each chunk of pairs (the ``chunk_size`` chunks above) on the client's workers; the
        curves are identical to ``client=None`` (the same chunks, the same model calls). A smaller
        ``chunk_size`` gives more, smaller tasks. A model with H outputs (``outputs=H``) is
        wrapped with its H outputs on the workers and each chunk gives every output's curves;
        under a removal that draws its rows it is refused here, as without a client (one output
        view at a time: :func:`insdel.multi_output.per_output`).
    removal : str or insdel.removal.Removal, optional
        What a removed unit becomes (:mod:`insdel.removal`); None is the paper's ``baseline``
        (R is the reference). The curves are those of the pair's value function ``v``: from
        ``v(∅)`` (``TraceResult.fr``) to ``v(all)`` (``fx``). ``marginal`` traces the K pairs
        (x, b_k) and averages; a sampled removal (``conditional_*``) evaluates each distinct
        coalition of a pair once, with M rows (:meth:`insdel.game.Game.values`).
    engine : {"auto", "tree", "black_box"}, default "auto"
        Which engine answers (:func:`insdel.game.as_game`): a recognised tree ensemble's exact
        closed forms (``auto``, ``tree``) or the model's values on rows (``black_box``).

    Returns
    -------
    TraceResult
    """
    if validate is not None:
        warnings.warn("trace(validate=) is deprecated and ignored: the inputs are checked once, "
                      "when the game is built (insdel.game.as_game).", DeprecationWarning,
                      stacklevel=2)
    game = as_game(f, X, R, removal=removal, groups=groups, batch_size=batch_size, engine=engine)
    return _trace_game(_curve_job(game, orders, modes=modes, positions=positions,
                                  chunk_size=chunk_size, progress=progress, client=client))


class _CurveJob(NamedTuple):
    """A checked curve problem: the game and the options, trusted by the drivers."""

    game: Game
    orders: np.ndarray  # (B, K, m) int64; permutations checked, or checked in the fused pass
    modes: tuple  # the engine's order (insertion first)
    asked: tuple  # the order asked (the result's dict follows it)
    pos: np.ndarray
    full: bool  # every step recorded (positions 0 .. m)
    chunk_size: int
    progress: bool | None
    client: object
    take: object = None  # (H, K') the orderings of each output of a multi-output model


def _curve_job(game: Game, orders, *, modes, positions, chunk_size, progress,
               client, take=None) -> _CurveJob:
    """The options of a curve problem on ``game``, checked once (the front door's second half)."""
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    if client is not None and not game.knows("curves"):
        # here, before anything is sent to the workers: the refusal the chunks would raise there
        refuse_drawn_outputs(game)
    m = game.m
    full = positions is None
    pos = _full_positions(m) if full else check_positions(positions, m)
    asked = modes
    if modes is not MODES:
        asked = tuple(check_mode(mo) for mo in modes)
        if not asked:
            raise ValueError("modes must name at least one of 'insertion', 'deletion'.")
        if len(set(asked)) != len(asked):
            raise ValueError(f"modes must name each mode at most once; got {asked}.")
        # the engine's order (insertion first); the result's dict follows the order asked
        modes = tuple(mo for mo in MODES if mo in asked)
    # shape and integer values; the row kernels' pass over the pairs checks the permutations
    orders = check_orders(orders, m, name="orders", B=game.B,
                          check_perm=game.references is None)
    return _CurveJob(game, orders, modes, tuple(asked), pos, full, chunk_size, progress, client,
                     take)


def _n_outputs(game: Game) -> int | None:
    """H of the game's model when it keeps several outputs (``outputs=H``), else None."""
    return getattr(getattr(game, "model", None), "n_outputs", None)


def _trace_game(job: _CurveJob) -> TraceResult:
    """The curves of a checked problem: the game's closed form, its references' row kernels, or
    its values."""
    game = job.game
    if game.knows("curves"):
        curves_out = game.curves(job.orders, modes=job.modes, positions=job.pos)
        B, K, S = job.orders.shape[0], job.orders.shape[1], job.pos.shape[0]
        res = TraceResult(curves=curves_out, fx=game.v_all(), fr=game.v_empty(),
                          n_points=B * K * len(job.modes) * S, positions=job.pos, m=game.m,
                          groups=game.groups)
        return _in_order(res, job.asked)
    if game.references is None:
        return _trace_values(job)
    refs = game.references
    B, Kr, n = refs.shape
    if Kr == 1:
        res = _trace_pairs(job, game.model, game.groups, game.X, refs[:, 0, :], job.orders,
                           getattr(game, "f", None))
    else:  # v is the mean of the K single-reference games: trace the pairs (x, b_k), average
        res = _trace_pairs(job, game.model, game.groups, np.repeat(game.X, Kr, axis=0),
                           refs.reshape(B * Kr, n), np.repeat(job.orders, Kr, axis=0),
                           getattr(game, "f", None))
        res.curves = {mo: c.reshape((B, Kr) + c.shape[1:]).mean(axis=1)
                      for mo, c in res.curves.items()}
        res.fx = res.fx.reshape((B, Kr) + res.fx.shape[1:]).mean(axis=1)
        res.fr = res.fr.reshape((B, Kr) + res.fr.shape[1:]).mean(axis=1)
        res.n_points //= Kr
    return res


def _trace_pairs(job: _CurveJob, model, grp: Groups | None, X, R, orders, f=None
                 ) -> TraceResult:
    """The curves of the single-reference pairs (X, R) (rows written by the numba kernels of
    :mod:`insdel._curve_kernels`); with a client, one task per chunk of pairs (``f``: the model
    as the workers receive it)."""
    modes, pos, client = job.modes, job.pos, job.client
    B, n = X.shape
    m = n if grp is None else grp.m
    S = pos.shape[0]
    K = orders.shape[1]
    do_ins, do_del = "insertion" in modes, "deletion" in modes
    M = int(do_ins) + int(do_del)
    # each traced mode's index on the curves' mode axis (-1: not traced)
    ins_at = 0 if do_ins else -1
    del_at = int(do_ins) if do_del else -1
    per_pair = K * M * S
    chunk_pairs = max(1, int(job.chunk_size) // max(per_pair, 1))
    # the row kernels read the pairs directly (C-contiguous float64: a broadcast R is copied)
    X = np.ascontiguousarray(X, dtype=np.float64)
    R = np.ascontiguousarray(R, dtype=np.float64)
    with _scratch() as ws:
        # one pass: the differing columns and their count, finiteness, and whether every
        # ordering is a permutation (the error messages come from the checkers)
        diff = ws.get("diff", (B, n), np.bool_)
        n_d = ws.get("n_d", (B,), np.int64)
        threads = numba_threads()
        nblk = _blocks(B, B * (n + K * m), threads, PREPARE_PARALLEL_MIN)
        finite, perms = kern.prepare(nblk, X, R, orders, True, diff, n_d)
        if not finite:
            check_finite("X", X)
            check_finite("R", R)
        if not perms:
            check_orders(orders, m, name="orders", B=B)
        if client is not None:
            # the serial loop's chunks of pairs, one task each (the same rows in the same batches)
            from .distributed import chunk_bounds, run_chunked

            bounds = chunk_bounds(B, chunk_pairs)
            res = run_chunked(
                _trace_chunk, [(lo, hi, modes, model.batch_size, job.chunk_size,
                                model.n_outputs) for lo, hi in bounds],
                shared={"f": model if f is None else f, "X": X, "R": R, "orders": orders,
                        "groups": grp, "positions": None if job.full else pos,
                        "take": job.take},
                client=client, concat=_concat_traces, progress=job.progress, desc="curves",
                name="insdel-curves",
                describe=lambda k: f"curves of pairs {bounds[k][0]}..{bounds[k][1] - 1}")
            return _in_order(res, job.asked)
        if grp is None:
            starts, members = _identity_units(n)
        else:  # units are groups: D = the groups with a differing column
            diff = np.ascontiguousarray(grp.reduce_any(diff))
            n_d = kern.row_counts(diff)
            starts, members = grp.starts, grp.members
        # the chain kernel's modes alternate row by row for one-column units with every step
        # recorded, else all of insertion's rows come first (a fixed layout per case: the rows
        # a float32 model sees together in a batch, on which its rounding can depend)
        plan = _Plan(_read_only(pos), _read_only(starts), _read_only(members), ins_at, del_at,
                     grp is None and S == m + 1, threads)
        res = _trace_chunks(model, X, R, diff, n_d, orders, plan, modes, chunk_pairs,
                            job.progress, grp, ws, job.take)
        res.positions = pos  # the caller's array (the plan holds a read-only view of it)
        return _in_order(res, job.asked)


def _trace_values(job: _CurveJob) -> TraceResult:
    """The curves read from the game's values (conventions: *Removal*): every curve point's
    coalition requested from :meth:`insdel.game.Game.values`, each distinct one evaluated once;
    with a client, one task per chunk of pairs (a chunk's draws are seeded by the run's index of
    its pairs, so it gives what the whole run gives)."""
    game, orders, pos, asked = job.game, job.orders, job.pos, job.asked
    B, m = game.B, game.m
    if job.client is not None:
        from .distributed import chunk_bounds, run_chunked

        bounds = chunk_bounds(B, max(1, job.chunk_size // (orders.shape[1] * len(asked)
                                                           * pos.shape[0] + 2)))
        return _in_order(run_chunked(
            _trace_values_chunk, [(lo, hi, asked, job.chunk_size) for lo, hi in bounds],
            shared={**game.parts(), "orders": orders, "positions": pos},
            client=job.client, concat=_concat_traces, progress=job.progress,
            desc=f"curves ({game.name})", name="insdel-curves-removal",
            describe=lambda k: f"curves of pairs {bounds[k][0]}..{bounds[k][1] - 1}"), asked)
    K, S, Mm = orders.shape[1], pos.shape[0], len(asked)
    per_pair = K * Mm * S + 2
    chunk_pairs = max(1, job.chunk_size // per_pair)
    out = np.empty((Mm, B, K, S))
    fx, fr = np.empty(B), np.empty(B)
    clock: dict = {}
    t0 = time.perf_counter()
    with progress_bar(total=B, desc=f"curves ({game.name})", unit="pair", enable=job.progress,
                      auto=B * per_pair > 200_000) as bar:
        for b0 in range(0, B, chunk_pairs):
            b1 = min(B, b0 + chunk_pairs)
            Bc = b1 - b0
            rank = np.empty_like(orders[b0:b1])
            np.put_along_axis(rank, orders[b0:b1], np.arange(m), axis=2)
            ins = rank[:, :, None, :] < pos[None, None, :, None]  # (Bc, K, S, m): kept units
            keep = np.stack([ins if mo == "insertion" else ~ins for mo in asked], axis=2)
            keep = np.concatenate([keep.reshape(-1, m), np.ones((Bc, m), bool),
                                   np.zeros((Bc, m), bool)])
            pairs = np.concatenate([np.repeat(np.arange(b0, b1), K * Mm * S),
                                    np.arange(b0, b1), np.arange(b0, b1)])
            vals = game.values(pairs, keep, clock=clock)
            if not np.all(np.isfinite(vals)):
                bad = int(pairs[~np.isfinite(vals)].min())
                raise ValueError(f"the model returned a non-finite value under removal "
                                 f"{game.name!r} for pair {bad + game.offset}.")
            N = Bc * K * Mm * S
            out[:, b0:b1] = vals[:N].reshape(Bc, K, Mm, S).transpose(2, 0, 1, 3)
            fx[b0:b1] = vals[N:N + Bc]
            fr[b0:b1] = vals[N + Bc:]
            bar.update(Bc)
    total = time.perf_counter() - t0
    timings = {"model_s": clock.get("model_s", 0.0), "sampling_s": clock.get("sampling_s", 0.0),
               "bookkeeping_s": total - clock.get("model_s", 0.0) - clock.get("sampling_s", 0.0)}
    return TraceResult(curves={mo: out[i] for i, mo in enumerate(asked)}, fx=fx, fr=fr,
                       n_points=B * K * Mm * S,
                       n_unique=clock.get("coalitions", 0) * int(game.n_draws), timings=timings,
                       positions=pos, m=m, groups=game.groups)


def _trace_values_chunk(b0: int, b1: int, modes: tuple, chunk_size: int, *, orders, positions,
                        **parts) -> TraceResult:
    """One chunk of pairs of :func:`_trace_values` (a Dask task): the game rebuilt from its
    parts, cut to the chunk (its draws seeded by the pairs' indices in the whole run)."""
    game = from_parts(**parts).subset(b0, b1)
    job = _CurveJob(game, orders[b0:b1], modes, modes, positions, False, chunk_size, False,
                    None)
    return _trace_values(job)


def _in_order(res: TraceResult, asked: tuple) -> TraceResult:
    """``res`` with its curves' dict in the order of the modes asked (the engine traces insertion
    first whatever the order asked; each curve is the same array)."""
    if tuple(res.curves) != tuple(asked):
        res.curves = {mo: res.curves[mo] for mo in asked}
    return res


_identity_cache: dict[int, tuple] = {}
_positions_cache: dict[int, np.ndarray] = {}


def _full_positions(m: int) -> np.ndarray:
    """:func:`insdel.groups.full_positions`, cached read-only (TraceResult.positions shares it)."""
    p = _positions_cache.get(m)
    if p is None:
        p = _positions_cache[m] = full_positions(m)
        p.flags.writeable = False
    return p


def _identity_units(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``starts, members`` of n one-column units (cached: read-only arrays)."""
    u = _identity_cache.get(n)
    if u is None:
        starts, members = np.arange(n + 1, dtype=np.int64), np.arange(n, dtype=np.int64)
        starts.flags.writeable = members.flags.writeable = False
        u = _identity_cache[n] = (starts, members)
    return u


def _trace_chunks(model, X, R, diff, n_d, orders, plan, modes, chunk_pairs, progress, grp,
                  ws, take=None) -> TraceResult:
    """:func:`trace` after validation: the pairs chunk by chunk (rows, model, gathering).

    A model with H outputs (``outputs=H``) writes each distinct row's H values at once and one
    pass gathers every output's curves: ``take`` (H, K') int picks the orderings of each output
    (None: all K); the curves are (B, K', S, H), C-contiguous, and f(x), f(r) (B, H)."""
    B, n = X.shape
    K = orders.shape[1]
    S = plan.pos.shape[0]
    m = len(plan.starts) - 1  # units
    M = len(modes)
    H = model.n_outputs
    per_pair = K * M * S
    if H is None:
        curves_out = np.empty((M, B, K, S))  # one array; each mode's curves are a view of it
        fx = np.empty(B)
        fr = np.empty(B)
    else:
        if take is not None:
            take = np.ascontiguousarray(take, dtype=np.int64)
            if (take == take[:1]).all():  # every output on the same orderings: one row for all
                take = take[:1]
        Kt = K if take is None else take.shape[1]
        curves_out = np.empty((M, B, Kt, S, H))  # the outputs last: a point's H values in a run
        fx = np.empty((B, H))
        fr = np.empty((B, H))
    n_unique = 0
    clock = _Clock()
    total_points = B * per_pair
    with progress_bar(total=B, desc="curves", unit="pair", enable=progress,
                      auto=total_points > 5_000_000) as bar:
        walk = _chain_run_rows if K == 1 else _set_run_rows
        cap = 2 + per_pair  # most distinct rows of one pair: r, x and one per curve point
        id_type = np.int32 if cap < 2**31 else np.int64
        for b0 in range(0, B, chunk_pairs):
            t = time.perf_counter()
            b1 = min(b0 + chunk_pairs, B)
            Bc = b1 - b0
            nd = n_d[b0:b1]
            idx = ws.get("ids", (Bc, K, M, S), id_type)  # each point's local row id
            values = ws.get("values", (Bc * cap,) + model.value_shape, np.float64)
            ob, dc = orders[b0:b1], diff[b0:b1]
            clock.index_s += time.perf_counter() - t
            first, U = walk(model, plan, ws, ob, X[b0:b1], R[b0:b1], dc, nd, idx, values, clock)
            t = time.perf_counter()
            nblk = _blocks(Bc, Bc * per_pair, plan.threads)
            if kern.gather(nblk, values, first, idx, curves_out, b0, nd, fr, fx, take):
                if H is None:
                    _raise_non_finite(model, curves_out[:, b0:b1], fr[b0:b1], fx[b0:b1], b0,
                                      modes)
                else:
                    for h in range(H):  # all outputs gathered at once; the error names the first
                        _raise_non_finite_at(model, curves_out[:, b0:b1, ..., h], fr[b0:b1, h],
                                             fx[b0:b1, h], b0, modes)
            clock.index_s += time.perf_counter() - t
            n_unique += U
            bar.update(Bc)
    out = {mo: curves_out[mi] for mi, mo in enumerate(modes)}  # (B, K', S) or (B, K', S, H)
    return TraceResult(curves=out, fx=fx, fr=fr, n_points=total_points, n_unique=n_unique,
                       timings={"bookkeeping_s": clock.index_s, "model_s": clock.model_s},
                       positions=plan.pos, m=m, groups=grp)


def unit_orderings(A: np.ndarray, groups: Groups | None, *, order: str = "signed",
                   name: str = "A") -> np.ndarray:
    """Orderings of the units (features, or groups with attributions summed per group)."""
    return orderings(group_attributions(A, groups, name=name), order=order)


def _trace_chunk(b0: int, b1: int, modes: tuple, batch_size: int | None, chunk_size: int,
                 outputs: int | None = None, *, f, X, R, orders, groups=None, positions=None,
                 take=None) -> TraceResult:
    """One chunk of pairs of :func:`_trace_pairs` (the task :func:`insdel.distributed.run_chunked`
    runs on a Dask worker): exactly one chunk of the serial loop, so the same rows reach the model
    in the same batches. A model with H outputs (``outputs``) is wrapped with its H outputs
    again and gives every output's curves of the chunk (``take``: each output's orderings)."""
    m = X.shape[1] if groups is None else groups.m
    pos = _full_positions(m) if positions is None else positions
    job = _CurveJob(None, None, modes, modes, pos, positions is None, chunk_size, False, None,
                    take)
    return _trace_pairs(job, as_model(f, batch_size=batch_size, outputs=outputs), groups,
                        X[b0:b1], R[b0:b1], orders[b0:b1])


def _concat_traces(parts: list) -> TraceResult:
    """The chunks' TraceResults of :func:`trace` joined along the pairs, in chunk order."""
    timings: dict = {}
    for p in parts:
        for k, v in p.timings.items():
            timings[k] = timings.get(k, 0.0) + v
    return TraceResult(curves={m: np.concatenate([p.curves[m] for p in parts])
                               for m in parts[0].curves},
                       fx=np.concatenate([p.fx for p in parts]),
                       fr=np.concatenate([p.fr for p in parts]),
                       n_points=sum(p.n_points for p in parts),
                       n_unique=sum(p.n_unique for p in parts), timings=timings,
                       positions=parts[0].positions, m=parts[0].m, groups=parts[0].groups)


def curves(f: ModelLike, X: ArrayLike, R: ArrayLike, A: ArrayLike, *, mode: str = "insertion",
           order: str = "signed", groups=None, step: int | None = None,
           fractions: ArrayLike | None = None, max_fraction: float | None = None,
           batch_size: int | None = None, chunk_size: int = DEFAULT_CHUNK_SIZE,
           progress: bool | None = None, removal=None, engine: str = "auto") -> np.ndarray:
    """Insertion or deletion curves for B pairs ordered by their attributions.

    Parameters
    ----------
    f : torch.nn.Module, estimator with ``predict``, or callable
        The model (see :func:`insdel.as_model`).
    X : array_like, shape (B, n)
        Targets x (the points being explained).
    R : array_like, shape (B, n) or (n,)
        References r.
    A : array_like, shape (B, n) or (B, K, n); with groups also (B, m) or (B, K, m)
        Attributions explaining f(x) - f(r); units are moved in decreasing signed order (ties by
        index). K orderings per pair give K curves per pair. With groups, a group's attribution is
        the sum of its columns' (or given per group).
    mode : {"insertion", "deletion"}
        Insertion starts at f(r) and ends at f(x); deletion starts at f(x) and ends at f(r).
    order : {"signed", "absolute", "ascending"}, default "signed"
        How the ordering is derived from ``A`` (:func:`orderings`).
    groups : optional
        Columns that move together (:mod:`insdel.groups`): m groups, m + 1 points.
    step : int, optional
        Groups (or features) moved per step; the curve is the subsequence of the one-per-step curve
        at ``0, k, 2k, ..., m``.
    fractions : array_like of float, optional
        Points at these fractions of the units (instead of ``step``).
    max_fraction : float, optional
        A partial curve that stops after this fraction of the units.
    batch_size : int, optional
        Rows per model call.
    chunk_size : int
        Curve points indexed at once (memory bound).
    progress : bool, optional
        Progress bar on long runs.
    removal : str or insdel.removal.Removal, optional
        What a removed unit becomes (:func:`trace`); None: the baseline, R.
    engine : {"auto", "tree", "black_box"}, default "auto"
        Which engine answers (:func:`insdel.game.as_game`): a recognised tree ensemble's exact
        closed forms (``auto``, ``tree``) or the model's values on rows (``black_box``).

    Returns
    -------
    ndarray of float64, shape (B, S) or (B, K, S)
        A model with H outputs (``as_model(f, outputs=H)``): (B, S, H), A being one set for all
        outputs (B, n) or one per output (B, H, n) (a 3-D A whose second axis is not H is an
        error naming H). S = n + 1 (or m + 1) for the whole one-per-step curve, else one point per position
        (:func:`insdel.groups.positions`).
    """
    check_mode(mode)
    names = list(X.columns) if hasattr(X, "columns") else None
    game = as_game(f, X, R, removal=removal, groups=groups, batch_size=batch_size, engine=engine)
    B, n, m = game.B, game.n, game.m
    # a labelled A (DataFrame) is matched to X's columns (or the groups) by name, as in evaluate
    A = align_attributions("A", A, names, game.unit_names)
    A = as_float_array("A", A, ndim=(2, 3))
    units = (n,) if game.unit_names is None else (n, m)
    H = _n_outputs(game)
    if A.shape[0] != B or A.shape[-1] not in units:
        raise ValueError(
            f"A must have shape (B, n) or (B, {'H' if H else 'K'}, n) with (B, n) = {(B, n)}"
            + ("" if game.unit_names is None else f" (or m = {m} per group)")
            + f"; got {A.shape}.")
    take = None
    if H is not None and A.ndim == 3:
        take = per_output_take(A, H, "A")
    pos = None
    if step is not None or fractions is not None or max_fraction is not None:
        pos = make_positions(m, step=step, fractions=fractions, max_fraction=max_fraction)
    orders = orderings(group_attributions(A, game.groups), order=order)
    res = _trace_game(_curve_job(game, orders, modes=(mode,), positions=pos,
                                 chunk_size=chunk_size, progress=progress, client=None,
                                 take=take))
    c = res.curves[mode]
    return c[:, 0] if A.ndim == 2 or H is not None else c


def per_output_take(A: np.ndarray, H: int, name: str) -> np.ndarray:
    """``take`` (H, 1) of per-output attributions ``A`` (B, H, units) of a model with H outputs:
    output h is traced on ordering h; any other second axis is an error naming ``name`` and H."""
    if A.shape[1] != H:
        raise ValueError(
            f"{name} has {A.shape[1]} attribution sets per pair (shape {A.shape}) but the model "
            f"has H = {H} outputs (outputs={H}): give one set for all outputs, (B, n), or one "
            "per output, (B, H, n).")
    return np.arange(H, dtype=np.int64)[:, None]
