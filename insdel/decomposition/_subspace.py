"""Each pair's differing subspace D = {j : x_j != r_j}: the limits on |D|, the 2^|D| hybrids of
many pairs built and evaluated in large batches, the checked inputs."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import numpy as np

from .. import _decomposition_kernels as K
from .._validation import check_positive_int
from ..adapter import Model
from ..game import Game
from ..groups import Groups

DEFAULT_MAX_D = 20
"""Largest |D| (differing features of a pair) decomposed unless ``max_d=`` is raised (2^20 evaluations)."""

FULL_LAYOUT_MAX_N = 22
"""Largest n for which the full 2^n layout of g and Delta (``values``, ``delta``) is built."""

_HARD_MAX_D = 40


def _fmt_bytes(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if nbytes < 1024 or unit == "PiB":
            return f"{nbytes:,.1f} {unit}" if unit != "B" else f"{int(nbytes)} B"
        nbytes /= 1024
    return f"{nbytes:.1f} PiB"  # pragma: no cover


def _seconds_per_row(model, Xd: np.ndarray, rows: int = 4096) -> float:
    """The model's time per row on this machine, from one call of ``rows`` rows (error path only)."""
    batch = np.repeat(Xd[:1], rows, axis=0)
    t0 = time.perf_counter()
    model(batch)
    return (time.perf_counter() - t0) / rows


def _fmt_seconds(s: float) -> str:
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if s >= size:
            return f"{s / size:,.1f} {unit}"
    return f"{s:.1f} s"


def _check_d(dsz: np.ndarray, n: int, max_d, pairs: np.ndarray | None = None,
             what: str = "exact anchored decomposition",
             probe: Callable[[], float] | None = None, groups: bool = False,
             dset: str | None = None) -> int:
    """Refuse pairs with more than ``max_d`` differing features, naming the pair and its cost.

    ``dsz[p]`` is |D| of plan entry p, whose pair index is ``pairs[p]`` (default p). ``probe()``
    (called only when refusing) gives the model's seconds per row, for the time estimate.
    ``groups``: the units are groups of columns (the message says so). ``dset``: what D is
    under the removal in use (default the baseline's ``{j : x_j != r_j}``; ``"all"``: every
    unit, under a drawn or observational removal).
    """
    max_d = check_positive_int(max_d, "max_d", minimum=0)
    big = np.flatnonzero(dsz > min(max_d, _HARD_MAX_D))
    if big.size == 0:
        return max_d
    p = int(big[0])
    name = (lambda q: int(q)) if pairs is None else (lambda q: int(pairs[q]))
    d = int(dsz[p])
    N = 2 ** d
    others = ""
    if big.size > 1:
        w = int(big[np.argmax(dsz[big])])
        others = (f" {big.size} pairs exceed max_d; the largest is pair {name(w)} with "
                  f"|D| = {int(dsz[w])}.")
    hint = (f"pass max_d={d} to allow it" if d <= _HARD_MAX_D
            else f"|D| > {_HARD_MAX_D} is never enumerated")
    eta = ""
    if probe is not None:
        with contextlib.suppress(Exception):  # the estimate must never hide the real error
            eta = f", about {_fmt_seconds(N * probe())} of model time on this machine"
    unit = "groups" if groups else "features"
    if dset == "all":
        head = (f"pair {name(p)} has |D| = {d} removable {unit} (> max_d = {max_d}): under this "
                f"removal every one of its n = {n} {unit} is removable (D = all {unit}), and the "
                f"{what} of this pair")
    else:
        dset = dset or ("D = {groups with a column j where x_j != r_j}" if groups
                        else "D = {j : x_j != r_j}")
        head = (f"pair {name(p)} differs in |D| = {d} {unit} (> max_d = {max_d}): of its n = "
                f"{n} {unit} only {dset} matters, but the {what} of this pair still")
    raise ValueError(
        f"{head} "
        f"enumerates the 2^{d} subsets of D: 2**{d} = {N:,} model evaluations{eta}, and "
        f"{_fmt_bytes(16.0 * N)} for the values g(u) and Delta_u (16 bytes per subset)."
        f"{others} Group features, use a sampling-based attribution, or {hint}."
    )


def _n_from_length(N: int, name: str) -> int:
    n = int(N).bit_length() - 1
    if N < 2 or (1 << n) != N:
        raise ValueError(f"{name} must have 2**n entries per pair (n >= 1); got {N}.")
    return n


def _value_offsets(dsz: np.ndarray) -> np.ndarray:
    off = np.zeros(dsz.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.left_shift(np.int64(1), dsz), out=off[1:])
    return off


def _unit_map(n: int, groups: Groups | None) -> tuple[np.ndarray, np.ndarray]:
    if groups is None:
        return np.arange(n + 1, dtype=np.int64), np.arange(n, dtype=np.int64)
    return groups.starts, groups.members


def _evaluate(model: Model, Xd: np.ndarray, Rd: np.ndarray, pairs: np.ndarray, dsz: np.ndarray,
              Dflat: np.ndarray, doff: np.ndarray, bar, groups: Groups | None = None
              ) -> tuple[np.ndarray, np.ndarray, float]:
    """``g_p(u)`` for every subset u of D_p of the plan entries p (pair ``pairs[p]``), flat.

    Each distinct hybrid is built once (numba, straight into the model's dtype) and evaluated in
    model calls of ``batch_size`` rows; at most ``batch_size`` rows exist at once.
    Returns the flat values, their offsets and the seconds spent inside the model.
    """
    off = _value_offsets(dsz)
    U = int(off[-1])
    vals = np.empty(U)
    bs = model.batch_size
    rows = np.empty((min(bs, U), Xd.shape[1]), dtype=model.dtype)
    pairs = np.ascontiguousarray(pairs, dtype=np.int64)
    t_model = 0.0
    starts, members = _unit_map(Xd.shape[1], groups)
    for s0 in range(0, U, bs):
        s1 = min(s0 + bs, U)
        buf = rows[:s1 - s0]
        K.subspace_rows(Xd, Rd, pairs, off, Dflat, doff, starts, members, s0, buf)
        t0 = time.perf_counter()
        vals[s0:s1] = model(buf)
        t_model += time.perf_counter() - t0
        bar.update(s1 - s0)
    return vals, off, t_model


def _ragged_repeat(dsz: np.ndarray, Dflat: np.ndarray, doff: np.ndarray, idx: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The D lists of the plan entries ``idx`` (entry p takes pair ``idx[p]``'s D)."""
    dsz_e = dsz[idx]
    doff_e = np.zeros(idx.size + 1, dtype=np.int64)
    np.cumsum(dsz_e, out=doff_e[1:])
    within = np.arange(int(doff_e[-1]), dtype=np.int64) - np.repeat(doff_e[:-1], dsz_e)
    Dflat_e = Dflat[np.repeat(doff[idx], dsz_e) + within]
    return dsz_e, Dflat_e, doff_e


def _ragged(diff: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """|D| per pair, the units of every D in increasing order (flat) and their offsets, from the
    (B, m) mask of D."""
    dsz = diff.sum(axis=1).astype(np.int64)
    Dflat = np.nonzero(diff)[1].astype(np.int64)
    doff = np.zeros(diff.shape[0] + 1, dtype=np.int64)
    np.cumsum(dsz, out=doff[1:])
    return dsz, Dflat, doff


def _what(game: Game, what: str) -> str:
    """The refusal's name of the computation, with the game's removal when not the paper's."""
    return what if game.name == "baseline" else f"{what} under removal {game.name!r}"


def _subset_values(game: Game, max_d, bar_factory, *, dedup: bool = True,
                   what: str = "exact anchored decomposition"
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float, int]:
    """``v_b(u)`` for every subset u of each pair's D_b (``dedup=False``: D_b = every unit).

    A game of K references (``game.references``): the 2^|D_b| hybrids of each of the K pairs
    (x_b, b_k) written by the subset row kernel (:func:`_evaluate`), averaged over k (K = 1,
    the baseline: used as they are). Any other game: the subsets requested from
    :meth:`insdel.game.Game.values` (each once, in order: pair after pair, subset index
    increasing, bit t = the t-th unit of D_b).

    Returns ``dsz, Dflat, doff, values, model seconds, evaluations``.
    """
    B, m = game.B, game.m
    grp = game.groups
    diff = game.differing() if dedup else np.ones((B, m), dtype=bool)
    dsz, Dflat, doff = _ragged(diff)
    model = game.model
    refs = game.references
    probe = None
    if model is not None:
        Xp = np.ascontiguousarray(game.X[:1], dtype=model.dtype)
        probe = lambda: _seconds_per_row(model, Xp)  # noqa: E731
    dset = None  # what D is under this game, for the max_d error
    if refs is None and bool(diff.all()):
        dset = "all"
    elif refs is not None and refs.shape[1] > 1:
        dset = (f"D = {{{'groups' if grp is not None else 'j'} where x differs from one of its "
                "references}")
    _check_d(dsz, m, max_d, probe=probe, groups=grp is not None, what=_what(game, what),
             dset=dset)
    if refs is not None:
        Kr = refs.shape[1]
        if Kr == 1:
            Xd = np.ascontiguousarray(game.X, dtype=model.dtype)
            Rd = np.ascontiguousarray(refs[:, 0, :], dtype=model.dtype)
            total = int(np.sum(np.left_shift(np.int64(1), dsz)))
            with bar_factory(total) as bar:
                vals, _, t_model = _evaluate(model, Xd, Rd, np.arange(B), dsz, Dflat, doff, bar,
                                             grp)
            return dsz, Dflat, doff, vals, t_model, total
        n = game.n
        idx = np.repeat(np.arange(B), Kr)
        dsz_e, Dflat_e, doff_e = _ragged_repeat(dsz, Dflat, doff, idx)
        Xd = np.ascontiguousarray(np.repeat(game.X, Kr, axis=0), dtype=model.dtype)
        Rd = np.ascontiguousarray(refs.reshape(B * Kr, n), dtype=model.dtype)
        total = int(np.sum(np.left_shift(np.int64(1), dsz_e)))
        with bar_factory(total) as bar:
            vals_e, off_e, t_model = _evaluate(model, Xd, Rd, np.arange(B * Kr), dsz_e, Dflat_e,
                                               doff_e, bar, grp)
        off = _value_offsets(dsz)
        # entry p = b * Kr + k holds pair b's 2^|D_b| values: average the K entries of each pair
        within = np.arange(vals_e.size, dtype=np.int64) - np.repeat(off_e[:-1],
                                                                    np.diff(off_e))
        target = np.repeat(off[idx], np.diff(off_e)) + within
        vals = np.bincount(target, weights=vals_e, minlength=int(off[-1])) / Kr
        return dsz, Dflat, doff, vals, t_model, total
    off = _value_offsets(dsz)
    vals = np.empty(int(off[-1]))
    clock: dict = {}
    S = 1 << int(dsz.max(initial=0))
    per = max(1, (1 << 22) // max(1, S * int(game.n_draws)))  # pairs per slice of requests
    with bar_factory(int(off[-1])) as bar:
        for b0 in range(0, B, per):
            b1 = min(B, b0 + per)
            pairs, keep = _subset_requests(dsz, Dflat, doff, b0, b1, m)
            vals[off[b0]:off[b1]] = game.values(pairs, keep, unique=True, clock=clock)
            bar.update(int(off[b1] - off[b0]))
    return (dsz, Dflat, doff, vals, clock.get("model_s", 0.0),
            int(off[-1]) * int(game.n_draws))


def _subset_requests(dsz: np.ndarray, Dflat: np.ndarray, doff: np.ndarray, b0: int, b1: int,
                     m: int) -> tuple[np.ndarray, np.ndarray]:
    """Every subset of D_b of the pairs ``b0 .. b1 - 1`` as (pair, coalition over the m units)
    requests: pair after pair, subset index increasing (bit t = the t-th unit of D_b)."""
    d = dsz[b0:b1]
    count = np.left_shift(np.int64(1), d)
    pairs = np.repeat(np.arange(b0, b1, dtype=np.int64), count)
    first = np.repeat(np.cumsum(count) - count, count)
    s = np.arange(pairs.size, dtype=np.int64) - first  # the subset's index within its pair
    t = np.arange(int(d.max(initial=0)), dtype=np.int64)
    bit = ((s[:, None] >> t[None, :]) & 1).astype(bool) & (t[None, :] < dsz[pairs][:, None])
    rows, ts = np.nonzero(bit)
    keep = np.zeros((pairs.size, m), dtype=bool)
    keep[rows, Dflat[doff[pairs[rows]] + ts]] = True
    return pairs, keep
