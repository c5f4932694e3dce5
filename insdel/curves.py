"""The batched insertion/deletion curve engine (conventions: *Curves*).

For an ordering pi and S_k = {pi(1), ..., pi(k)}:

* insertion ``y_k = f(hybrid(x, r, S_k))``, from f(r) to f(x);
* deletion ``z_k = f(hybrid(x, r, complement(S_k)))``, from f(x) to f(r).

How the work is laid out (all pairs, all orderings, both modes at once):

1. Every point of every curve is a set of features taken from x. Features with ``x_j == r_j`` do not
   change the point, so each set is reduced to its *canonical* form ``S ∩ D`` with
   ``D = {j : x_j != r_j}``. Two curve points of one pair with the same canonical set are the same
   point and are evaluated once; the end points f(r) (set ∅) and f(x) (set D) are shared by all
   orderings and both modes of a pair.
2. A numba kernel walks every ordering once, keeping the canonical set as packed uint64 words and a
   Zobrist hash of it, and assigns each curve point the index of its distinct row (hash collisions are
   resolved by comparing the words, so deduplication is exact).
3. Distinct rows are written straight into the model's input dtype by a second numba kernel, one batch
   at a time, evaluated by the model adapter, and gathered back into the curves.

Pairs are processed in chunks so that at most ``chunk_size`` curve points are indexed at once and at
most ``batch_size`` hybrid rows exist at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba as nb
import numpy as np
from numpy.typing import ArrayLike

from ._progress import progress_bar
from ._validation import as_float_array, check_mode, check_orders, check_pairs
from .adapter import ModelLike, as_model
from .groups import (
    Groups,
    check_groups,
    check_positions,
    full_positions,
    group_attributions,
    is_full,
)
from .groups import positions as make_positions
from .hybrid import build_rows, masks_to_words, n_words

__all__ = ["curves", "orderings", "unit_orderings", "trace", "TraceResult", "DEFAULT_CHUNK_SIZE"]

DEFAULT_CHUNK_SIZE = 1 << 21  # curve points indexed per chunk of pairs
MODES = ("insertion", "deletion")

_ZOBRIST_SEED = 0x1D5E1
_zobrist_cache: dict[int, np.ndarray] = {}


def _zobrist(n: int) -> np.ndarray:
    z = _zobrist_cache.get(n)
    if z is None:
        rng = np.random.default_rng(_ZOBRIST_SEED)
        z = rng.integers(1, np.iinfo(np.uint64).max, size=n, dtype=np.uint64, endpoint=True)
        _zobrist_cache[n] = z
    return z


#: How an ordering is derived from attributions (``order=``): the paper's decreasing signed value,
#: decreasing absolute value (MoRF, what Quantus and ROAR use) and increasing signed value (LeRF).
ORDERS = ("signed", "absolute", "ascending")


def check_order(order: str) -> str:
    """Validate an ``order=`` option (one of :data:`ORDERS`)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}; got {order!r}.")
    return order


def orderings(A: ArrayLike, *, order: str = "signed") -> np.ndarray:
    """Feature orderings of attributions, ties broken by feature index (stable sort).

    Parameters
    ----------
    A : array_like, shape (..., n)
    order : {"signed", "absolute", "ascending"}, default "signed"
        ``"signed"``: decreasing a_j, the paper's ordering (the convention of insdel's tables);
        ``"absolute"``: decreasing |a_j| (MoRF, "most relevant first", as in Quantus and ROAR);
        ``"ascending"``: increasing a_j (LeRF, "least relevant first").

    Returns
    -------
    ndarray of int64, shape (..., n)
        ``order[..., k]`` is the feature moved at step k + 1.
    """
    check_order(order)
    A = as_float_array("A", A, ndim=tuple(range(1, 8)))
    key = {"signed": -A, "absolute": -np.abs(A), "ascending": A}[order]
    return np.argsort(key, axis=-1, kind="stable").astype(np.int64)


@nb.njit(cache=True, nogil=True)
def _lookup_insert(words_buf, hash_buf, base, count, table, cur, h):  # pragma: no cover
    """Find the canonical set ``cur`` (hash h) among this pair's rows; insert it if new."""
    T = table.shape[0]
    W = cur.shape[0]
    slot = np.int64(h & np.uint64(T - 1))
    while True:
        e = table[slot]
        if e == 0:
            u = count[0]
            table[slot] = u + 1
            for w in range(W):
                words_buf[base + u, w] = cur[w]
            hash_buf[base + u] = h
            count[0] = u + 1
            return u
        u = e - 1
        if hash_buf[base + u] == h:
            same = True
            for w in range(W):
                if words_buf[base + u, w] != cur[w]:
                    same = False
                    break
            if same:
                return u
        slot = (slot + 1) & (T - 1)


@nb.njit(parallel=True, cache=True, nogil=True)
def _index_kernel(orders, diff_words, zob, pos, do_ins, do_del, cap, words_buf, hash_buf, counts,
                  idx):  # pragma: no cover - numba
    """Assign every curve point of every pair its distinct-row index (local to the pair), by
    hashing the sets of units taken from x (K > 1 orderings; one ordering takes
    :func:`_chain_rows_kernel`). Point s moves the first ``pos[s]`` units of the ordering."""
    B, K, m = orders.shape
    W = diff_words.shape[1]
    S = pos.shape[0]
    T = 1
    while T < 2 * cap:
        T *= 2
    for b in nb.prange(B):
        base = b * cap
        table = np.zeros(T, dtype=np.int64)
        count = np.zeros(1, dtype=np.int64)
        cur = np.zeros(W, dtype=np.uint64)
        # end points: the empty set -> f(r) (local id 0), the full difference set D -> f(x) (id 1)
        _lookup_insert(words_buf, hash_buf, base, count, table, cur, np.uint64(0))
        hD = np.uint64(0)
        for j in range(m):
            if (diff_words[b, j >> 6] >> np.uint64(j & 63)) & np.uint64(1):
                hD ^= zob[j]
        for w in range(W):
            cur[w] = diff_words[b, w]
        _lookup_insert(words_buf, hash_buf, base, count, table, cur, hD)
        mi = 0
        for mode in range(2):
            if (mode == 0 and not do_ins) or (mode == 1 and not do_del):
                continue
            for k in range(K):
                if mode == 0:
                    for w in range(W):
                        cur[w] = 0
                    h = np.uint64(0)
                else:
                    for w in range(W):
                        cur[w] = diff_words[b, w]
                    h = hD
                t = 0
                for s in range(S):
                    while t < pos[s]:
                        j = orders[b, k, t]
                        t += 1
                        bit = np.uint64(1) << np.uint64(j & 63)
                        if diff_words[b, j >> 6] & bit:
                            if mode == 0:
                                cur[j >> 6] |= bit
                            else:
                                cur[j >> 6] &= ~bit
                            h ^= zob[j]
                    idx[b, k, mi, s] = _lookup_insert(words_buf, hash_buf, base, count, table,
                                                      cur, h)
            mi += 1
        counts[b] = count[0]


@nb.njit(cache=True, nogil=True)
def _compact_kernel(words_buf, cap, counts, offsets, out_words, out_pair, idx):  # pragma: no cover
    B = counts.shape[0]
    W = words_buf.shape[1]
    for b in range(B):
        off = offsets[b]
        for u in range(counts[b]):
            for w in range(W):
                out_words[off + u, w] = words_buf[b * cap + u, w]
            out_pair[off + u] = b
        for k in range(idx.shape[1]):
            for m in range(idx.shape[2]):
                for s in range(idx.shape[3]):
                    idx[b, k, m, s] += off


@nb.njit(parallel=True, cache=True, nogil=True)
def _chain_count_kernel(orders, diff, n_d, pos, do_ins, do_del, counts):  # pragma: no cover
    """Distinct rows of each pair under one ordering (the walk of :func:`_chain_rows_kernel`
    without writing): r, x and one row per recorded point strictly between them."""
    B = orders.shape[0]
    S = pos.shape[0]
    for b in nb.prange(B):
        c = 1 if n_d[b] == 0 else 2
        for mode in range(2):
            if (mode == 0 and not do_ins) or (mode == 1 and not do_del):
                continue
            inside = 0 if mode == 0 else n_d[b]
            changed = False
            t = 0
            for s in range(S):
                while t < pos[s]:
                    g = orders[b, 0, t]
                    t += 1
                    if diff[b, g]:
                        inside += 1 if mode == 0 else -1
                        changed = True
                if changed:
                    if inside != n_d[b] and inside != 0:
                        c += 1
                    changed = False
        counts[b] = c


@nb.njit(parallel=True, cache=True, nogil=True)
def _chain_rows_kernel(orders, X, R, diff, n_d, pos, starts, members, do_ins, do_del, offsets,
                       rows, idx):  # pragma: no cover - numba
    """One ordering per pair (K = 1): the distinct rows are known without hashing (r, x and, per
    mode, one row per recorded point that differs from the previous one and from both ends), so
    they are written straight into the model's input buffer in one pass, with their indices.
    Unit g is the columns ``members[starts[g]:starts[g + 1]]``."""
    B = orders.shape[0]
    n = X.shape[1]
    S = pos.shape[0]
    for b in nb.prange(B):
        off = offsets[b]
        for j in range(n):
            rows[off, j] = R[b, j]
        id_r = off
        id_x = off
        u = off + 1
        if n_d[b] > 0:
            id_x = off + 1
            for j in range(n):
                rows[off + 1, j] = X[b, j]
            u = off + 2
        work = rows[off].copy()  # the current point, changed unit by unit
        mi = 0
        for mode in range(2):
            if (mode == 0 and not do_ins) or (mode == 1 and not do_del):
                continue
            ins = mode == 0
            inside = 0 if ins else n_d[b]
            prev = id_r if ins else id_x
            src = R if ins else X
            dst = X if ins else R
            for i in range(n):
                work[i] = src[b, i]
            changed = False
            t = 0
            for s in range(S):
                while t < pos[s]:
                    g = orders[b, 0, t]
                    t += 1
                    if diff[b, g]:
                        inside += 1 if ins else -1
                        for c in range(starts[g], starts[g + 1]):
                            col = members[c]
                            work[col] = dst[b, col]
                        changed = True
                if changed:
                    if inside == n_d[b]:
                        prev = id_x
                    elif inside == 0:
                        prev = id_r
                    else:
                        for i in range(n):
                            rows[u, i] = work[i]
                        prev = u
                        u += 1
                    changed = False
                idx[b, 0, mi, s] = prev
            mi += 1


@nb.njit(parallel=True, cache=True, nogil=True)
def _gather_kernel(values, idx, mi, out):  # pragma: no cover - numba
    """``out[b, k, s] = values[idx[b, k, mi, s]]`` (the curves from the distinct values)."""
    B, K, _, S = idx.shape
    for b in nb.prange(B):
        for k in range(K):
            for s in range(S):
                out[b, k, s] = values[idx[b, k, mi, s]]


@dataclass
class TraceResult:
    """Curves of B pairs under K orderings, with the bookkeeping an experiment reports.

    Attributes
    ----------
    curves : dict
        mode -> array (B, K, S): S = n + 1 points for the paper's curves, or one per position.
    fx, fr : ndarray (B,)
        f(x) and f(r) per pair (each evaluated once).
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


def _unit_plan(X: np.ndarray, R: np.ndarray, groups: Groups | None):
    """Which units differ per pair (B, m) and the unit -> columns map (starts, members)."""
    diff = X != R
    n = X.shape[1]
    if groups is None:
        return np.ascontiguousarray(diff), np.arange(n + 1, dtype=np.int64), np.arange(
            n, dtype=np.int64), None
    return (np.ascontiguousarray(groups.reduce_any(diff)), groups.starts, groups.members,
            groups.labels)


def trace(f: ModelLike, X: ArrayLike, R: ArrayLike, orders: ArrayLike, *, modes=MODES,
          groups=None, positions: ArrayLike | None = None, batch_size: int | None = None,
          chunk_size: int = DEFAULT_CHUNK_SIZE, progress: bool | None = None,
          validate: bool = True, client=None) -> TraceResult:
    """Trace insertion and/or deletion curves of every pair under every given ordering.

    Parameters
    ----------
    f : model
        Anything :func:`insdel.as_model` accepts.
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
    client : dask.distributed.Client, optional
        Trace each chunk of pairs (the ``chunk_size`` chunks above) on the client's workers; the
        curves are identical to ``client=None`` (the same chunks, the same model calls). A smaller
        ``chunk_size`` gives more, smaller tasks.

    Returns
    -------
    TraceResult
    """
    import time

    model = as_model(f, batch_size=batch_size)
    if validate:
        X, R = check_pairs(X, R)
    B, n = X.shape
    grp = check_groups(groups, n)
    if grp is not None and grp.singleton:
        grp = None
    m = n if grp is None else grp.m
    pos = full_positions(m) if positions is None else check_positions(positions, m)
    full = is_full(pos, m)
    S = pos.shape[0]
    modes = tuple(check_mode(mo) for mo in modes)
    if not modes:
        raise ValueError("modes must name at least one of 'insertion', 'deletion'.")
    orders = check_orders(orders, m, name="orders", B=B, check_perm=validate)
    K = orders.shape[1]
    do_ins, do_del = "insertion" in modes, "deletion" in modes
    M = int(do_ins) + int(do_del)
    per_pair = K * M * S
    chunk_pairs = max(1, int(chunk_size) // max(per_pair, 1))
    if client is not None:
        return _trace_on(client, f, X, R, orders, modes, batch_size, chunk_size, chunk_pairs,
                         progress, grp, pos)
    W = n_words(m)
    Xd = np.ascontiguousarray(X, dtype=model.dtype)
    Rd = np.ascontiguousarray(R, dtype=model.dtype)
    diff, starts, members, labels = _unit_plan(X, R, grp)
    n_d = diff.sum(axis=1).astype(np.int64)
    if K > 1:  # the hashed path (K = 1 takes the chain path below)
        zob = _zobrist(m)
        diff_words = masks_to_words(diff)

    cap = 2 + K * M * S
    out = {mo: np.empty((B, K, S)) for mo in modes}
    fx = np.empty(B)
    fr = np.empty(B)
    n_unique = 0
    t_index = t_model = 0.0
    bs = model.batch_size
    total_points = B * per_pair
    with progress_bar(total=B, desc="curves", unit="pair", enable=progress,
                      auto=total_points > 5_000_000) as bar:
        for b0 in range(0, B, chunk_pairs):
            b1 = min(b0 + chunk_pairs, B)
            Bc = b1 - b0
            nd = n_d[b0:b1]
            if K == 1:  # the chain path: rows written once, straight into the model's input
                t0 = time.perf_counter()
                if full:
                    counts = np.where(nd > 0, 2 + M * np.maximum(nd - 1, 0), 1)
                else:
                    counts = np.empty(Bc, dtype=np.int64)
                    _chain_count_kernel(orders[b0:b1], diff[b0:b1], nd, pos, do_ins, do_del,
                                        counts)
                offsets = np.zeros(Bc, dtype=np.int64)
                np.cumsum(counts[:-1], out=offsets[1:])
                U = int(counts.sum())
                rows = np.empty((U, n), dtype=model.dtype)
                idx = np.empty((Bc, 1, M, S), dtype=np.int64)
                _chain_rows_kernel(orders[b0:b1], Xd[b0:b1], Rd[b0:b1], diff[b0:b1], nd, pos,
                                   starts, members, do_ins, do_del, offsets, rows, idx)
                t1 = time.perf_counter()
                t_index += t1 - t0
                values = model(rows)
                t0 = time.perf_counter()
                t_model += t0 - t1
                for mi, mo in enumerate(modes):
                    _gather_kernel(values, idx, mi, out[mo][b0:b1])
            else:
                t0 = time.perf_counter()
                words_buf = np.empty((Bc * cap, W), dtype=np.uint64)
                hash_buf = np.empty(Bc * cap, dtype=np.uint64)
                counts = np.empty(Bc, dtype=np.int64)
                idx = np.empty((Bc, K, M, S), dtype=np.int64)
                _index_kernel(orders[b0:b1], diff_words[b0:b1], zob, pos, do_ins, do_del, cap,
                              words_buf, hash_buf, counts, idx)
                offsets = np.zeros(Bc, dtype=np.int64)
                np.cumsum(counts[:-1], out=offsets[1:])
                U = int(counts.sum())
                uwords = np.empty((U, W), dtype=np.uint64)
                upair = np.empty(U, dtype=np.int64)
                _compact_kernel(words_buf, cap, counts, offsets, uwords, upair, idx)
                del words_buf, hash_buf
                values = np.empty(U)
                rows = np.empty((min(bs, U), n), dtype=model.dtype)
                t_index += time.perf_counter() - t0
                for s0 in range(0, U, bs):
                    s1 = min(s0 + bs, U)
                    t0 = time.perf_counter()
                    buf = build_rows(Xd[b0:b1], Rd[b0:b1], upair[s0:s1], uwords[s0:s1],
                                     out=rows[: s1 - s0], unit_of=labels)
                    t1 = time.perf_counter()
                    values[s0:s1] = model(buf)
                    t_model += time.perf_counter() - t1
                    t_index += t1 - t0
                t0 = time.perf_counter()
                for mi, mo in enumerate(modes):
                    out[mo][b0:b1] = values[idx[:, :, mi, :]]
            # local row 0 is r; row 1 is x when D is not empty (else x = r)
            fr[b0:b1] = values[offsets]
            fx[b0:b1] = values[offsets + (nd > 0)]
            n_unique += U
            t_index += time.perf_counter() - t0
            bar.update(Bc)
    return TraceResult(curves=out, fx=fx, fr=fr, n_points=total_points, n_unique=n_unique,
                       timings={"bookkeeping_s": t_index, "model_s": t_model}, positions=pos,
                       m=m, groups=grp)


def unit_orderings(A: np.ndarray, groups: Groups | None, *, order: str = "signed",
                   name: str = "A") -> np.ndarray:
    """Orderings of the units (features, or groups with attributions summed per group)."""
    return orderings(group_attributions(A, groups, name=name), order=order)


def _trace_chunk(b0: int, b1: int, modes: tuple, batch_size: int | None, chunk_size: int, *,
                 f, X, R, orders, groups=None, positions=None) -> TraceResult:
    """One chunk of pairs of :func:`trace` (on a Dask worker): exactly one chunk of the serial
    loop, so the same rows reach the model in the same batches."""
    return trace(f, X[b0:b1], R[b0:b1], orders[b0:b1], modes=modes, groups=groups,
                 positions=positions, batch_size=batch_size, chunk_size=chunk_size,
                 progress=False, validate=False)


def _trace_on(client, f, X, R, orders, modes, batch_size, chunk_size, chunk_pairs,
              progress, groups=None, positions=None) -> TraceResult:
    """:func:`trace` with its chunks of pairs on Dask workers, gathered in order."""
    from .distributed import gather_chunks

    B = X.shape[0]
    bounds = [(b0, min(B, b0 + chunk_pairs), modes, batch_size, chunk_size)
              for b0 in range(0, B, chunk_pairs)]
    parts = gather_chunks(client, _trace_chunk, bounds,
                          shared={"f": f, "X": X, "R": R, "orders": orders, "groups": groups,
                                  "positions": positions},
                          describe=lambda k: f"curves of pairs {bounds[k][0]}..{bounds[k][1] - 1}",
                          progress=progress, desc="curves", name="insdel-curves")
    timings: dict = {}
    for p in parts:
        for k, v in p.timings.items():
            timings[k] = timings.get(k, 0.0) + v
    return TraceResult(curves={m: np.concatenate([p.curves[m] for p in parts]) for m in modes},
                       fx=np.concatenate([p.fx for p in parts]),
                       fr=np.concatenate([p.fr for p in parts]),
                       n_points=sum(p.n_points for p in parts),
                       n_unique=sum(p.n_unique for p in parts), timings=timings,
                       positions=parts[0].positions, m=parts[0].m, groups=parts[0].groups)


def curves(f: ModelLike, X: ArrayLike, R: ArrayLike, A: ArrayLike, *, mode: str = "insertion",
           order: str = "signed", groups=None, step: int | None = None,
           fractions: ArrayLike | None = None, max_fraction: float | None = None,
           batch_size: int | None = None, chunk_size: int = DEFAULT_CHUNK_SIZE,
           progress: bool | None = None) -> np.ndarray:
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

    Returns
    -------
    ndarray of float64, shape (B, S) or (B, K, S)
        S = n + 1 (or m + 1) for the whole one-per-step curve, else one point per position
        (:func:`insdel.groups.positions`).
    """
    check_mode(mode)
    X, R = check_pairs(X, R)
    grp = check_groups(groups, X.shape[1])
    A = as_float_array("A", A, ndim=(2, 3))
    units = (X.shape[1],) if grp is None else (grp.n, grp.m)
    if A.shape[0] != X.shape[0] or A.shape[-1] not in units:
        raise ValueError(
            f"A must have shape (B, n) or (B, K, n) with (B, n) = {X.shape}"
            + ("" if grp is None else f" (or m = {grp.m} per group)") + f"; got {A.shape}."
        )
    m = X.shape[1] if grp is None else grp.m
    pos = None
    if step is not None or fractions is not None or max_fraction is not None:
        pos = make_positions(m, step=step, fractions=fractions, max_fraction=max_fraction)
    res = trace(f, X, R, unit_orderings(A, grp, order=order), modes=(mode,), groups=grp,
                positions=pos, batch_size=batch_size, chunk_size=chunk_size, progress=progress,
                validate=False)
    c = res.curves[mode]
    return c[:, 0, :] if A.ndim == 2 else c
