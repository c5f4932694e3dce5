"""Pairs of targets and references: the :class:`Pairing` record and the :class:`Policy` base class
(paper §2 and §5; conventions: *Reference-point policies*)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .._checkpoint import to_jsonable
from .._registry import UnknownNameError
from .._stats import unit_ids
from .._validation import (
    _first,
    as_float_array,
    check_clusters,
    check_finite,
    check_positive_int,
    check_progress,
)
from ..adapter import ModelLike
from ..groups import check_groups


class UnknownPolicyError(UnknownNameError):
    """An unknown policy or specification name: an :class:`insdel.UnknownNameError` (a
    ``ValueError``) whose message lists the known ones."""


# --------------------------------------------------------------------------------------------------
# Pairing
# --------------------------------------------------------------------------------------------------

@dataclass
class Pairing:
    """Targets and references chosen by a policy.

    Attributes
    ----------
    X, R : ndarray (m, n)
        Targets x and references r, row by row (float64).
    target_index : ndarray (m,) int64
        Pool index of each target; -1 where the target is not a pool point (targets given as rows).
    reference_index : ndarray (m,) int64
        Pool index of each reference; -1 where the reference is not a pool point (``average``,
        ``mean``, ``median``, ``mode``, ``fixed`` with a point).
    name : str
        Registered policy name (``"counterfactual"``, ...).
    params : dict
        Parameters used, including resolved ones (e.g. ``min_diff_used`` for ``min_diff = "all"``).
    seed : int
        Seed passed to :meth:`Policy.pair`.
    spec : str or None
        Name of the TOML specification the policy came from, if any.
    fx, fr : ndarray (m,) or None
        f(x) and f(r) when the policy evaluated the model (``counterfactual``).
    skipped : ndarray int64
        Targets without a reference (``on_unmet = "skip"``, the odd point out of ``one_to_one``),
        as given: pool indices, or row numbers when targets were passed as rows.
    info : dict of str -> ndarray (m,)
        Per-row extras (``distance``, ``n_candidates``, ``min_diff``, ``match``, ...).
    cluster : ndarray (m,) int64 or None
        The independent unit of each pair, for standard errors (:func:`insdel.evaluate`'s
        ``clusters=``): pairs of the same two pool points, in either direction, share an id
        (``one_to_one``'s couples; a target and reference that chose each other under
        ``counterfactual``). Set by :meth:`Policy.pair` when such pairs exist; None: every pair
        is its own unit.
    """

    X: np.ndarray
    R: np.ndarray
    target_index: np.ndarray
    reference_index: np.ndarray
    name: str
    params: dict
    seed: int = 0
    spec: str | None = None
    fx: np.ndarray | None = None
    fr: np.ndarray | None = None
    skipped: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    info: dict = field(default_factory=dict)
    cluster: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_pairs(self) -> int:
        return len(self)

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def label(self) -> str:
        """The spec name when there is one, else the policy name."""
        return self.spec or self.name

    def diff_count(self, tol: float | Sequence[float] | None = None, *,
                   groups=None) -> np.ndarray:
        """Number of features with ``|x_j - r_j| > tol_j`` per pair, shape (m,) (paper Table 4).

        ``tol=None`` uses the policy's ``tol`` parameter when it has one, else 0 (exact inequality).
        ``groups`` (anything :func:`insdel.groups.check_groups` takes): count the groups with a
        differing column instead, the units that curves and the decomposition move.
        """
        if tol is None:
            tol = self.params.get("tol", 0.0)
        t = _tol_vector(tol, self.n_features)
        mask = np.abs(self.X - self.R) > t
        grp = check_groups(groups, self.n_features)
        if grp is not None:
            mask = grp.reduce_any(mask)
        return np.count_nonzero(mask, axis=1).astype(np.int64)

    def mean_diff(self, tol=None, *, groups=None) -> float:
        """Mean number of differing features, or groups (the first column of paper Table 4)."""
        return float(self.diff_count(tol, groups=groups).mean()) if len(self) else float("nan")

    def to_frame(self) -> pd.DataFrame:
        """One row per pair: indices, number of differing features, f values and extras."""
        d: dict[str, Any] = {"target_index": self.target_index,
                             "reference_index": self.reference_index,
                             "n_diff": self.diff_count()}
        if self.fx is not None:
            d["fx"] = self.fx
        if self.fr is not None:
            d["fr"] = self.fr
        if self.cluster is not None:
            d["cluster"] = self.cluster
        d.update(self.info)
        return pd.DataFrame(d)

    def save(self, path: str | Path) -> Path:
        """Write the pairing to a ``.npz`` file (arrays plus a JSON header) atomically; see
        :meth:`load`."""
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_suffix(".npz")
        meta = {"name": self.name, "params": to_jsonable(self.params), "seed": int(self.seed),
                "spec": self.spec, "info": list(self.info)}
        arrays = {"X": self.X, "R": self.R, "target_index": self.target_index,
                  "reference_index": self.reference_index, "skipped": self.skipped}
        if self.fx is not None:
            arrays["fx"] = self.fx
        if self.fr is not None:
            arrays["fr"] = self.fr
        if self.cluster is not None:
            arrays["cluster"] = self.cluster
        for k, v in self.info.items():
            arrays[f"info__{k}"] = np.asarray(v)
        from .. import _checkpoint as ck

        with ck.atomic_write(path, suffix=".npz") as tmp:  # readable, never half-written
            np.savez_compressed(tmp, __meta__=np.array(json.dumps(meta)), **arrays)
        return path

    @classmethod
    def load(cls, path: str | Path) -> Pairing:
        """Read a pairing written by :meth:`save`."""
        with np.load(Path(path), allow_pickle=False) as z:
            meta = json.loads(str(z["__meta__"]))
            info = {k: z[f"info__{k}"] for k in meta["info"]}
            return cls(X=z["X"], R=z["R"], target_index=z["target_index"],
                       reference_index=z["reference_index"], name=meta["name"],
                       params=meta["params"], seed=meta["seed"], spec=meta["spec"],
                       fx=z["fx"] if "fx" in z else None, fr=z["fr"] if "fr" in z else None,
                       skipped=z["skipped"], info=info,
                       cluster=z["cluster"] if "cluster" in z else None)

    def __repr__(self) -> str:
        p = ", ".join(f"{k}={_short(v)}" for k, v in self.params.items())
        return f"Pairing({self.label!r}, m={len(self)}, n={self.n_features}, {p})"



class Policy:
    """Base class of policies: ``pair`` validates the input and calls ``select``.

    Subclasses implement ``select(f, X_pool, targets, seed)``, where ``X_pool`` is a validated
    float64 array (N, n) and ``targets`` an int64 array of pool indices, and return one of

    * an array ``R`` of shape (m, n) (or (n,) for one constant reference),
    * a tuple ``(R, reference_index)`` (``reference_index`` -1 where r is not a pool point),
    * a :class:`Pairing`.

    Built-ins override ``_pair`` instead, which also receives targets given as rows.

    Attributes
    ----------
    name : str
        Registered name.
    params : dict
        Parameters (the defaults filled in).
    spec, description : str or None
        Set by :func:`load` for policies read from a TOML specification.
    """

    name: str = "policy"
    accepts_rows: bool = False  # whether targets may be rows that are not pool points
    needs_model: bool = False
    spec: str | None = None
    description: str | None = None

    def __init__(self, **params):
        self.params = dict(params)

    # -- the public entry point --------------------------------------------------------------------
    def pair(self, f: ModelLike | None, X_pool: ArrayLike, *, targets=None, seed: int = 0,
             progress: bool | None = None) -> Pairing:
        """Pair targets with references.

        Parameters
        ----------
        f : model or None
            torch module, estimator or callable (see :func:`insdel.as_model`); ``counterfactual``
            needs it (it may also be given as the precomputed values f(X_pool), shape (N,)); policies
            that need no model take None.
        X_pool : array_like (N, n)
            Candidate points (the paper uses the held-out set itself, §5), in the model's input space.
        targets : None, int indices, boolean mask (N,) or rows (m, n)
            Which targets to pair: None means every pool point. Rows that are not pool points are
            accepted by ``counterfactual`` and the constant references.
        seed : int
            Seed for random policies (``one_to_one``); deterministic policies ignore it.
        progress : bool, optional
            Progress bar (default: only for long work on a terminal); None, True or False
            (checked here for every policy, also those that make no bar).

        Returns
        -------
        Pairing
        """
        progress = check_progress(progress)  # most policies make no bar: progress_bar is not reached
        pool = as_float_array("X_pool", X_pool, ndim=(2,), finite=False)
        cols = getattr(X_pool, "columns", None)  # a DataFrame's names, for the NaN message
        _check_pool(pool, None if cols is None else [str(c) for c in cols])
        seed = _check_seed(seed)
        tidx, T, labels, rows_given = _normalize_targets(targets, pool)
        if rows_given and not self.accepts_rows:
            raise ValueError(
                f"policy {self.name!r} pairs pool points with each other; give targets as pool "
                "indices or a boolean mask, not as rows."
            )
        if self.needs_model and f is None:
            raise ValueError(f"policy {self.name!r} needs the model f (to compare f(x) and f(x')).")
        out = self._pair(pool, f, tidx, T, labels, seed, progress)
        if not isinstance(out, Pairing):
            out = _to_pairing(out, pool, tidx, T, self.name, self.params, seed)
        out.name = self.name
        out.seed = seed
        out.spec = self.spec
        out.params = {**self.params, **out.params}
        _check_result(out, T.shape[1])
        if out.cluster is None:
            out.cluster = mirror_clusters(out.target_index, out.reference_index)
        else:
            out.cluster = check_clusters(out.cluster, len(out), name="Pairing.cluster")
        return out

    def _pair(self, pool, f, tidx, T, labels, seed, progress):
        return self.select(f, pool, tidx, seed)

    def select(self, f, X_pool: np.ndarray, targets: np.ndarray, seed: int):
        raise NotImplementedError(
            f"{type(self).__name__} must implement select(f, X_pool, targets, seed)."
        )

    # -- comparison and display --------------------------------------------------------------------
    def __eq__(self, other) -> bool:
        if not isinstance(other, Policy):
            return NotImplemented
        return (type(self) is type(other) and self.name == other.name
                and _params_equal(self.params, other.params))

    __hash__ = None  # type: ignore[assignment]

    def to_spec(self) -> dict:
        """The policy as an inline specification dict (what :func:`load` accepts)."""
        d: dict[str, Any] = {"policy": self.name}
        if self.spec:
            d["name"] = self.spec
        if self.description:
            d["description"] = self.description
        d["params"] = to_jsonable(self.params)
        return d

    def __repr__(self) -> str:
        p = ", ".join(f"{k}={_short(v)}" for k, v in self.params.items())
        spec = f" [spec {self.spec!r}]" if self.spec else ""
        return f"Policy({self.name!r}{', ' if p else ''}{p}){spec}"


class FunctionPolicy(Policy):
    """A user function ``fn(f, X_pool, targets, seed, **params)`` registered as a policy."""

    def __init__(self, fn: Callable, name: str, params: dict):
        self.fn = fn
        self.name = name
        self.params = dict(params)
        self.needs_model = False

    def select(self, f, X_pool, targets, seed):
        return self.fn(f, X_pool, targets, seed, **self.params)

    def __eq__(self, other) -> bool:
        if not isinstance(other, FunctionPolicy):
            return NotImplemented
        return self.fn is other.fn and _params_equal(self.params, other.params)




def mirror_clusters(target_index: np.ndarray, reference_index: np.ndarray) -> np.ndarray | None:
    """Unit ids of pairs (shape (m,)): pairs of the same two pool points, in either direction
    ((x, r) and its mirror (r, x), or a repeated pair), share an id; ids number the units in
    order of first appearance. None when every pair is its own unit (no two pairs share both
    points; a reference that is not a pool point, index -1, is shared with no pair)."""
    t = np.asarray(target_index, dtype=np.int64)
    r = np.asarray(reference_index, dtype=np.int64)
    both = (t >= 0) & (r >= 0)
    if not both.any():
        return None
    lo, hi = np.minimum(t, r), np.maximum(t, r)
    key = np.where(both, lo * (int(max(t.max(), r.max())) + 1) + hi, -1 - np.arange(t.size))
    units = unit_ids(key, t.size)
    return None if int(units.max()) + 1 == t.size else units


def _check_pool(pool: np.ndarray, names: list[str] | None = None) -> None:
    if pool.shape[0] == 0:
        raise ValueError("X_pool has no rows.")
    if pool.shape[1] == 0:
        raise ValueError("X_pool has n = 0 features.")
    try:
        check_finite("X_pool", pool, feature_names=names)
    except ValueError as exc:
        raise ValueError(f"{exc} Drop or impute those rows before choosing references.") from None


def _check_seed(seed) -> int:
    return check_positive_int(seed, "seed", minimum=0)


def _normalize_targets(targets, pool):
    """(pool indices or -1, target rows, labels for messages, rows_given)."""
    N, n = pool.shape
    if targets is None:
        idx = np.arange(N, dtype=np.int64)
        return idx, pool.copy(), idx, False
    arr = np.asarray(targets)
    if arr.dtype == bool:
        if arr.shape != (N,):
            raise ValueError(f"targets as a boolean mask must have shape ({N},); got {arr.shape}.")
        idx = np.flatnonzero(arr).astype(np.int64)
    elif arr.ndim == 2:
        T = as_float_array("targets", arr, ndim=(2,))
        if T.shape[1] != n:
            raise ValueError(f"targets have {T.shape[1]} features but X_pool has n = {n}.")
        m = T.shape[0]
        return np.full(m, -1, np.int64), np.ascontiguousarray(T), np.arange(m, dtype=np.int64), True
    elif arr.ndim == 1 and (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        idx = arr.astype(np.int64)
        bad = np.flatnonzero((idx < 0) | (idx >= N))
        if bad.size:
            raise ValueError(f"targets hold indices outside the pool [0, {N}) at position(s) "
                             f"{_first(bad)}.")
    else:
        raise TypeError("targets must be None, integer pool indices, a boolean mask of the pool, "
                        f"or a 2-D array of rows; got dtype {arr.dtype} and shape {arr.shape}.")
    if idx.size == 0:
        raise ValueError("targets select no point.")
    return idx, pool[idx], idx, False


def _to_pairing(out, pool, tidx, T, name, params, seed) -> Pairing:
    """Convert what a user ``select`` returned into a Pairing."""
    m, n = T.shape
    ref = None
    if isinstance(out, tuple):
        if len(out) != 2:
            raise TypeError(f"policy {name!r} returned a tuple of {len(out)}; expected (R, reference_index).")
        out, ref = out
    R = as_float_array(f"R returned by policy {name!r}", out)
    if R.ndim == 1:
        R = np.tile(R, (m, 1))
    if R.shape != (m, n):
        raise ValueError(f"policy {name!r} returned R of shape {R.shape}; expected {(m, n)} "
                         f"(one reference per target) or ({n},).")
    if ref is None:
        ref = np.full(m, -1, np.int64)
    else:
        ref = np.asarray([-1 if r is None else r for r in ref] if isinstance(ref, list) else ref)
        if ref.shape != (m,) or not np.issubdtype(ref.dtype, np.integer):
            raise ValueError(f"policy {name!r}: reference_index must be {m} integers; got "
                             f"dtype {ref.dtype}, shape {ref.shape}.")
        ref = ref.astype(np.int64)
        bad = np.flatnonzero((ref < -1) | (ref >= pool.shape[0]))
        if bad.size:
            raise ValueError(f"policy {name!r}: reference_index out of range at row(s) {_first(bad)}.")
    return Pairing(X=T.copy(), R=np.ascontiguousarray(R), target_index=tidx.copy(),
                   reference_index=ref, name=name, params={}, seed=seed)


def _check_result(p: Pairing, n: int) -> None:
    if p.X.shape != p.R.shape or p.X.ndim != 2 or p.X.shape[1] != n:
        raise ValueError(f"policy {p.name!r} produced X {p.X.shape} and R {p.R.shape}; expected (m, {n}).")
    check_finite(f"references R of policy {p.name!r}", p.R)
    for a in ("target_index", "reference_index"):
        v = np.asarray(getattr(p, a))
        if v.shape != (len(p),):
            raise ValueError(f"policy {p.name!r}: {a} has shape {v.shape}; expected ({len(p)},).")


def _tol_vector(tol, n: int) -> np.ndarray:
    t = np.asarray(tol, dtype=np.float64)
    if t.ndim == 0:
        return np.full(n, float(t))
    if t.shape != (n,):
        raise ValueError(f"tol must be one number or n = {n} numbers; got {t.shape[0]}.")
    return t


def _eq(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if a is None or b is None:
            return False
        return np.array_equal(np.asarray(a), np.asarray(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_eq(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _params_equal(p: dict, q: dict) -> bool:
    return set(p) == set(q) and all(_eq(p[k], q[k]) for k in p)


def _short(v) -> str:
    if isinstance(v, np.ndarray):
        return f"array{v.shape}"
    if isinstance(v, list) and len(v) > 6:
        return f"[{len(v)} values]"
    return repr(v)


