"""Reference-point policies (paper §2 and §5; conventions: *Reference-point policies*).

A *policy* decides which reference r is paired with each target x. insdel makes policies named,
parameterised and pluggable:

* :func:`get` returns a registered policy with its parameters; :func:`load` reads a TOML
  specification (a file, a spec shipped in ``insdel.policy_specs``, i.e. the top-level ``policies/``
  folder) or an inline dict;
* ``policy.pair(X_pool, f, targets=None, seed=0)`` returns a :class:`Pairing` (targets ``X``,
  references ``R``, their pool indices, the parameters used);
* :func:`register` adds a user policy (a function or a :class:`Policy` subclass);
* :func:`diagnostics` gives the paper's Table 4 per policy: the mean number of features with
  ``x_j != r_j`` and, per attribution method, the correlation between insertion and deletion ABCs.

Built-ins: ``counterfactual`` (§5.1, §5.2), ``one_to_one`` and ``average`` (§5.2), and the constant
references ``mean``, ``median``, ``mode`` (of a background set) and ``fixed`` (a given point).

The counterfactual search is one fused numba kernel over chunks of targets: for a target it streams
over the pool (features outer, candidates inner, so the loop vectorises), accumulating the squared
distance and the number of differing features of every candidate, then keeps a running top-k by
(distance, pool index). There is no Python loop over targets x candidates and no (m, N) matrix in
memory; the model is evaluated once on the pool rows that are needed.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numba as nb
import numpy as np
import pandas as pd

from ._progress import progress_bar
from ._validation import _first, as_float_array, check_finite, to_jsonable
from .adapter import as_model

try:  # Python >= 3.11
    import tomllib as _toml
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as _toml  # type: ignore[no-redef]

__all__ = [
    "Policy", "Pairing", "get", "load", "register", "unregister", "available", "list_specs",
    "spec_text", "diagnostics", "abc_correlation", "Counterfactual", "OneToOne", "Average",
    "Constant", "Fixed", "UnknownPolicyError", "register_cli",
]

SPEC_PACKAGE = "insdel.policy_specs"
DEFAULT_CHUNK = 1024  # targets per call of the counterfactual kernel
_SPEC_KEYS = ("name", "policy", "description", "params")


class UnknownPolicyError(KeyError, ValueError):
    """An unknown policy or specification name (the message lists the known ones)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


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

    def diff_count(self, tol: float | Sequence[float] | None = None) -> np.ndarray:
        """Number of features with ``|x_j - r_j| > tol_j`` per pair, shape (m,) (paper Table 4).

        ``tol=None`` uses the policy's ``tol`` parameter when it has one, else 0 (exact inequality).
        """
        if tol is None:
            tol = self.params.get("tol", 0.0)
        t = _tol_vector(tol, self.n_features)
        return np.count_nonzero(np.abs(self.X - self.R) > t, axis=1).astype(np.int64)

    def mean_diff(self, tol=None) -> float:
        """Mean number of differing features (the first column of paper Table 4)."""
        return float(self.diff_count(tol).mean()) if len(self) else float("nan")

    def to_frame(self) -> pd.DataFrame:
        """One row per pair: indices, number of differing features, f values and extras."""
        d: dict[str, Any] = {"target_index": self.target_index,
                             "reference_index": self.reference_index,
                             "n_diff": self.diff_count()}
        if self.fx is not None:
            d["fx"] = self.fx
        if self.fr is not None:
            d["fr"] = self.fr
        d.update(self.info)
        return pd.DataFrame(d)

    def save(self, path: str | Path) -> Path:
        """Write the pairing to a ``.npz`` file (arrays plus a JSON header); see :meth:`load`."""
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
        for k, v in self.info.items():
            arrays[f"info__{k}"] = np.asarray(v)
        np.savez_compressed(path, __meta__=np.array(json.dumps(meta)), **arrays)
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
                       skipped=z["skipped"], info=info)

    def __repr__(self) -> str:
        p = ", ".join(f"{k}={_short(v)}" for k, v in self.params.items())
        return f"Pairing({self.label!r}, m={len(self)}, n={self.n_features}, {p})"


# --------------------------------------------------------------------------------------------------
# Policy base class and registry
# --------------------------------------------------------------------------------------------------

class Policy:
    """Base class of policies: ``pair`` validates the input and calls ``select``.

    Subclasses implement ``select(X_pool, f, targets, seed)``, where ``X_pool`` is a validated
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
    def pair(self, X_pool, f=None, targets=None, seed: int = 0, *,
             progress: bool | None = None) -> Pairing:
        """Pair targets with references.

        Parameters
        ----------
        X_pool : array_like (N, n)
            Candidate points (the paper uses the held-out set itself, §5), in the model's input space.
        f : model, optional
            torch module, estimator or callable (see :func:`insdel.as_model`); ``counterfactual``
            needs it (it may also be given as the precomputed values f(X_pool), shape (N,)).
        targets : None, int indices, boolean mask (N,) or rows (m, n)
            Which targets to pair: None means every pool point. Rows that are not pool points are
            accepted by ``counterfactual`` and the constant references.
        seed : int
            Seed for random policies (``one_to_one``); deterministic policies ignore it.
        progress : bool, optional
            Progress bar (default: only for long work on a terminal).

        Returns
        -------
        Pairing
        """
        pool = as_float_array("X_pool", X_pool, ndim=(2,), finite=False)
        _check_pool(pool)
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
        return out

    def _pair(self, pool, f, tidx, T, labels, seed, progress):
        return self.select(pool, f, tidx, seed)

    def select(self, X_pool: np.ndarray, f, targets: np.ndarray, seed: int):
        raise NotImplementedError(
            f"{type(self).__name__} must implement select(X_pool, f, targets, seed)."
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
    """A user function ``fn(X_pool, f, targets, seed, **params)`` registered as a policy."""

    def __init__(self, fn: Callable, name: str, params: dict):
        self.fn = fn
        self.name = name
        self.params = dict(params)
        self.needs_model = False

    def select(self, X_pool, f, targets, seed):
        return self.fn(X_pool, f, targets, seed, **self.params)

    def __eq__(self, other) -> bool:
        if not isinstance(other, FunctionPolicy):
            return NotImplemented
        return self.fn is other.fn and _params_equal(self.params, other.params)


_REGISTRY: dict[str, Callable | type] = {}
_BUILTIN: set[str] = set()


def register(name: str, policy: Callable | type | None = None, *, overwrite: bool = False):
    """Register a user policy under ``name``; usable as a decorator.

    Parameters
    ----------
    name : str
        Policy name (what :func:`get`, :func:`load` and TOML specs use).
    policy : function or Policy subclass
        A function ``fn(X_pool, f, targets, seed, **params)`` returning ``R``, ``(R, reference_index)``
        or a :class:`Pairing` (``targets`` are pool indices; keyword-only arguments with defaults are
        the policy's parameters), or a subclass of :class:`Policy` implementing ``select``.
    overwrite : bool
        Replace an existing registration (built-ins cannot be replaced).

    Examples
    --------
    >>> @register("nearest")
    ... def nearest(X_pool, f, targets, seed):
    ...     d = ((X_pool[targets, None] - X_pool[None]) ** 2).sum(-1)
    ...     d[np.arange(len(targets)), targets] = np.inf
    ...     j = d.argmin(1)
    ...     return X_pool[j], j
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"policy name must be an identifier-like string; got {name!r}.")

    def deco(obj):
        if isinstance(obj, type):
            if not issubclass(obj, Policy):
                raise TypeError(f"a policy class must subclass insdel.policies.Policy; got {obj!r}.")
        elif not callable(obj):
            raise TypeError(f"policy must be a function or a Policy subclass; got {type(obj).__name__}.")
        if name in _BUILTIN:
            raise ValueError(f"{name!r} is a built-in policy and cannot be replaced; pick another name.")
        if name in _REGISTRY and not overwrite:
            raise ValueError(f"a policy named {name!r} is already registered; pass overwrite=True.")
        _REGISTRY[name] = obj
        return obj

    return deco if policy is None else deco(policy)


def unregister(name: str) -> None:
    """Remove a user policy."""
    if name in _BUILTIN:
        raise ValueError(f"{name!r} is a built-in policy and cannot be removed.")
    if name not in _REGISTRY:
        raise UnknownPolicyError(f"no user policy named {name!r}; known: {available()}.")
    del _REGISTRY[name]


def available() -> list[str]:
    """Registered policy names (built-ins first)."""
    return [n for n in _REGISTRY if n in _BUILTIN] + sorted(n for n in _REGISTRY if n not in _BUILTIN)


def _function_params(fn: Callable) -> tuple[dict, bool]:
    """Default parameters of a function policy (arguments after the 4 positional ones)."""
    sig = inspect.signature(fn)
    ps = list(sig.parameters.values())
    positional = [p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < 4 and not any(p.kind == p.VAR_POSITIONAL for p in ps):
        raise TypeError(f"policy function {fn.__name__} must take (X_pool, f, targets, seed, ...).")
    extra = positional[4:] + [p for p in ps if p.kind == p.KEYWORD_ONLY]
    defaults = {p.name: p.default for p in extra}
    var_kw = any(p.kind == p.VAR_KEYWORD for p in ps)
    return defaults, var_kw


def get(name: str, **params) -> Policy:
    """The registered policy ``name`` with parameters ``params`` (defaults filled in).

    Raises :class:`UnknownPolicyError` (a ``KeyError`` and ``ValueError``) listing the known names,
    and ``TypeError`` naming the known parameters for an unknown parameter.
    """
    obj = _REGISTRY.get(name)
    if obj is None:
        raise UnknownPolicyError(f"unknown policy {name!r}; known policies: {', '.join(available())}.")
    if isinstance(obj, type):
        sig = inspect.signature(obj.__init__)
        known = [p for p in sig.parameters if p != "self"]
        var_kw = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
        bad = [k for k in params if k not in known]
        if bad and not var_kw:
            raise TypeError(f"policy {name!r}: unknown parameter(s) {bad}; known: {known}.")
        pol = obj(**params)
        if not hasattr(pol, "params"):
            pol.params = dict(params)
        if type(pol).name == Policy.name:
            pol.name = name
        return pol
    defaults, var_kw = _function_params(obj)
    bad = [k for k in params if k not in defaults]
    if bad and not var_kw:
        raise TypeError(f"policy {name!r}: unknown parameter(s) {bad}; known: {list(defaults)}.")
    missing = [k for k, v in defaults.items() if v is inspect.Parameter.empty and k not in params]
    if missing:
        raise TypeError(f"policy {name!r}: missing required parameter(s) {missing}.")
    full = {k: v for k, v in defaults.items() if v is not inspect.Parameter.empty}
    full.update(params)
    return FunctionPolicy(obj, name, full)


def _builtin(name: str):
    def deco(cls):
        cls.name = name
        _REGISTRY[name] = cls
        _BUILTIN.add(name)
        return cls
    return deco


# --------------------------------------------------------------------------------------------------
# counterfactual
# --------------------------------------------------------------------------------------------------

@nb.njit(cache=True, parallel=True, nogil=True)
def _knn_kernel(T, PT, self_idx, tol, min_diff, out_idx, out_d2, out_n, out_cmax):  # pragma: no cover
    """Per target: k nearest pool points (by (squared distance, index)) with >= min_diff differences.

    T (m, n) targets; PT (n, N) pool transposed; self_idx (m,) pool index of the target or -1;
    tol (n,); min_diff (m,); out_idx/out_d2 (m, k) filled with -1/inf; out_n (m,) number kept;
    out_cmax (m,) the largest number of differing features over the other pool points.
    """
    m, n = T.shape
    N = PT.shape[1]
    k = out_idx.shape[1]
    for i in nb.prange(m):
        d2 = np.zeros(N)
        cnt = np.zeros(N, np.int64)
        for j in range(n):
            xj = T[i, j]
            tj = tol[j]
            row = PT[j]
            for c in range(N):
                diff = xj - row[c]
                d2[c] += diff * diff
                cnt[c] += np.int64(abs(diff) > tj)
        me = self_idx[i]
        md = min_diff[i]
        kept = 0
        cmax = -1
        for c in range(N):
            if c == me:
                continue
            cc = cnt[c]
            if cc > cmax:
                cmax = cc
            if cc < md:
                continue
            dc = d2[c]
            if kept == k:
                if dc >= out_d2[i, k - 1]:
                    continue  # ties keep the lower pool index (candidates come in index order)
                p = k - 1
            else:
                p = kept
                kept += 1
            while p > 0 and out_d2[i, p - 1] > dc:
                out_d2[i, p] = out_d2[i, p - 1]
                out_idx[i, p] = out_idx[i, p - 1]
                p -= 1
            out_d2[i, p] = dc
            out_idx[i, p] = c
        out_n[i] = kept
        out_cmax[i] = cmax


def _knn(T, pool, self_idx, tol, min_diff, k, progress=None, chunk=DEFAULT_CHUNK):
    m = T.shape[0]
    PT = np.ascontiguousarray(pool.T)
    idx = np.full((m, k), -1, np.int64)
    d2 = np.full((m, k), np.inf)
    n_kept = np.zeros(m, np.int64)
    cmax = np.zeros(m, np.int64)
    with progress_bar(m, "counterfactual", unit="target", enable=progress,
                      auto=m * pool.shape[0] > 5e7) as bar:
        for s in range(0, m, chunk):
            e = min(s + chunk, m)
            _knn_kernel(T[s:e], PT, self_idx[s:e], tol, min_diff[s:e], idx[s:e], d2[s:e],
                        n_kept[s:e], cmax[s:e])
            bar.update(e - s)
    return idx, d2, n_kept, cmax


@_builtin("counterfactual")
class Counterfactual(Policy):
    """Counterfactual reference (paper §5.1, §5.2; conventions: *Reference-point policies*).

    Candidates are the other pool points x' with ``#{j : |x'_j - x_j| > tol_j} >= min_diff``; the
    ``k_nearest`` of them with the smallest Euclidean ``||x - x'||`` are kept (ties: lower pool index
    first) and among those the one with the largest ``|f(x) - f(x')|`` is chosen (ties: the nearer,
    then the lower pool index).

    Parameters
    ----------
    min_diff : int or "all", default 1
        Minimum number of differing features; ``"all"`` means n (every feature differs, the CERN
        policy of §5.2). Bangalore housing (§5.1) used 12.
    k_nearest : int, default 20
        Number of nearest candidates among which |f(x) - f(x')| is maximised. A pool with fewer
        candidates keeps all of them (``info["n_candidates"]`` says how many).
    tol : float or sequence of n floats, default 0
        Features with ``|x_j - x'_j| <= tol_j`` count as equal (float features compared with a
        tolerance); 0 means exact inequality.
    on_unmet : {"error", "skip", "relax"}, default "error"
        Targets with no candidate meeting ``min_diff``: fail (the message gives their count and first
        indices), drop them (listed in ``Pairing.skipped``), or lower ``min_diff`` for them to the
        largest number of differing features any other pool point has (``info["min_diff"]``).
    """

    accepts_rows = True
    needs_model = True

    def __init__(self, min_diff: int | str = 1, k_nearest: int = 20, tol: float | Sequence[float] = 0.0,
                 on_unmet: str = "error"):
        if isinstance(min_diff, str):
            if min_diff != "all":
                raise ValueError(f"min_diff must be a non-negative integer or 'all'; got {min_diff!r}.")
        elif (isinstance(min_diff, bool) or not isinstance(min_diff, (int, np.integer))
              or min_diff < 0):
            raise ValueError(f"min_diff must be a non-negative integer or 'all'; got {min_diff!r}.")
        else:
            min_diff = int(min_diff)
        if (isinstance(k_nearest, bool) or not isinstance(k_nearest, (int, np.integer))
                or k_nearest < 1):
            raise ValueError(f"k_nearest must be an integer >= 1; got {k_nearest!r}.")
        if on_unmet not in ("error", "skip", "relax"):
            raise ValueError(f"on_unmet must be 'error', 'skip' or 'relax'; got {on_unmet!r}.")
        if np.ndim(tol) == 0:
            tol = float(tol)
            if not np.isfinite(tol) or tol < 0:
                raise ValueError(f"tol must be a finite number >= 0; got {tol!r}.")
        else:
            t = np.asarray(tol, dtype=np.float64)
            if t.ndim != 1 or not np.all(np.isfinite(t)) or np.any(t < 0):
                raise ValueError("tol must be a number >= 0 or a 1-D sequence of them (one per feature).")
            tol = [float(v) for v in t]
        self.params = {"min_diff": min_diff, "k_nearest": int(k_nearest), "tol": tol,
                       "on_unmet": on_unmet}

    def _pair(self, pool, f, tidx, T, labels, seed, progress):
        N, n = pool.shape
        m = T.shape[0]
        md = self.params["min_diff"]
        md = n if md == "all" else md
        if md > n:
            raise ValueError(f"min_diff = {md} exceeds the number of features n = {n}.")
        tol = _tol_vector(self.params["tol"], n)
        k = min(self.params["k_nearest"], N)
        fpool, model = _pool_values(f, pool, self.name)
        if model is None and tidx.min(initial=0) < 0:
            raise ValueError("targets given as rows need the model f itself, not precomputed values.")
        min_diff = np.full(m, md, np.int64)
        nbr, d2, n_kept, cmax = _knn(T, pool, tidx, tol, min_diff, k, progress)
        keep = np.ones(m, bool)
        unmet = np.flatnonzero(n_kept == 0)
        if unmet.size:
            where = labels[unmet]
            how = self.params["on_unmet"]
            if how == "error":
                raise ValueError(
                    f"counterfactual: {unmet.size} of {m} target(s) have no other pool point differing "
                    f"in at least min_diff = {md} features (tol = {self.params['tol']}): targets "
                    f"{_first(where)}. Use on_unmet='skip' to drop them or on_unmet='relax' to lower "
                    "min_diff for them, or lower min_diff / raise tol."
                )
            if how == "skip":
                keep[unmet] = False
            else:  # relax
                relaxed = np.maximum(cmax[unmet], 1)
                bad = cmax[unmet] < 1
                if bad.any():
                    raise ValueError(
                        f"counterfactual: {int(bad.sum())} target(s) have no other pool point that "
                        f"differs in any feature (targets {_first(where[bad])}); even on_unmet='relax' "
                        "cannot pair them. Use on_unmet='skip'."
                    )
                min_diff[unmet] = relaxed
                r_idx, r_d2, r_n, _ = _knn(T[unmet], pool, tidx[unmet], tol, relaxed, k, progress)
                nbr[unmet], d2[unmet], n_kept[unmet] = r_idx, r_d2, r_n
        skipped = labels[~keep]
        nbr, d2, n_kept, T, tidx, min_diff = (a[keep] for a in (nbr, d2, n_kept, T, tidx, min_diff))
        valid = nbr >= 0
        if fpool is None:  # evaluate f once on the pool rows that are needed
            need = np.unique(np.concatenate([nbr[valid], tidx[tidx >= 0]]))
            fpool = np.full(N, np.nan)
            if need.size:
                fpool[need] = model(pool[need])
        fx = fpool[np.maximum(tidx, 0)]
        if (tidx < 0).any():
            fx[tidx < 0] = model(T[tidx < 0])
        score = np.where(valid, np.abs(fx[:, None] - fpool[np.where(valid, nbr, 0)]), -np.inf)
        best = np.argmax(score, axis=1)  # first maximum = nearest, then lowest index
        rows = np.arange(len(best))
        ref = nbr[rows, best]
        return Pairing(X=T.copy(), R=pool[ref].copy(), target_index=tidx.copy(),
                       reference_index=ref.astype(np.int64), name=self.name,
                       params={"min_diff_used": md, "k_used": k}, fx=fx, fr=fpool[ref].copy(),
                       skipped=np.asarray(skipped, np.int64),
                       info={"distance": np.sqrt(d2[rows, best]), "n_candidates": n_kept,
                             "min_diff": min_diff})


def _pool_values(f, pool, name):
    """(precomputed f(pool) or None, Model or None)."""
    if f is None:
        raise ValueError(f"policy {name!r} needs the model f.")
    if isinstance(f, np.ndarray) and not callable(f):
        v = as_float_array("f (precomputed values f(X_pool))", f, ndim=(1,))
        if v.shape[0] != pool.shape[0]:
            raise ValueError(
                f"f given as precomputed values must have one value per pool point "
                f"({pool.shape[0]}); got {v.shape[0]}."
            )
        return v, None
    return None, as_model(f)


# --------------------------------------------------------------------------------------------------
# one-to-one
# --------------------------------------------------------------------------------------------------

@_builtin("one_to_one")
class OneToOne(Policy):
    """Random perfect matching of the selected pool points (paper §5.2, "one-to-one policy").

    A seeded permutation is cut into consecutive pairs; each point is the target once with its
    partner as reference, so every pair appears in both directions (rows in target order;
    ``info["match"]`` numbers the pairs).

    Parameters
    ----------
    odd : {"drop", "extra", "error"}, default "drop"
        With an odd number of points one point (the last of the seeded permutation, so it is
        random) has no partner: ``"drop"`` leaves it out (it is in ``Pairing.skipped``), ``"extra"``
        adds it as a target whose reference is a random other point (one direction only,
        ``info["match"] = -1``), ``"error"`` raises.
    """

    def __init__(self, odd: str = "drop"):
        if odd not in ("drop", "extra", "error"):
            raise ValueError(f"odd must be 'drop', 'extra' or 'error'; got {odd!r}.")
        self.params = {"odd": odd}

    def _pair(self, pool, f, tidx, T, labels, seed, progress):
        m = tidx.size
        if np.unique(tidx).size != m:
            raise ValueError("one_to_one: targets contain repeated pool indices; a matching needs "
                             "each point once.")
        if m < 2:
            raise ValueError(f"one_to_one needs at least 2 points to match; got {m}.")
        odd = self.params["odd"]
        if m % 2 and odd == "error":
            raise ValueError(f"one_to_one: {m} points cannot be perfectly matched (odd count); "
                             "use odd='drop' or odd='extra'.")
        rng = np.random.default_rng(seed)
        perm = rng.permutation(m)
        h = m // 2
        a, b = perm[0:2 * h:2], perm[1:2 * h:2]
        partner = np.full(m, -1, np.int64)
        match = np.full(m, -1, np.int64)
        partner[a], partner[b] = b, a
        match[a] = match[b] = np.arange(h)
        skipped = np.empty(0, np.int64)
        if m % 2:
            left = perm[-1]
            if odd == "drop":
                skipped = np.array([tidx[left]], np.int64)
            else:
                other = rng.integers(m - 1)
                partner[left] = perm[other]
        keep = partner >= 0
        ti = tidx[keep]
        ri = tidx[partner[keep]]
        return Pairing(X=pool[ti].copy(), R=pool[ri].copy(), target_index=ti.copy(),
                       reference_index=ri.astype(np.int64), name=self.name, params={},
                       skipped=skipped, info={"match": match[keep]})


# --------------------------------------------------------------------------------------------------
# constant references
# --------------------------------------------------------------------------------------------------

def _constant_pairing(name, c, T, tidx, extra=None):
    m = T.shape[0]
    return Pairing(X=T.copy(), R=np.tile(c, (m, 1)), target_index=tidx.copy(),
                   reference_index=np.full(m, -1, np.int64), name=name,
                   params=extra or {})


def _statistic(stat: str, B: np.ndarray) -> np.ndarray:
    if stat == "mean":
        return B.mean(axis=0)
    if stat == "median":
        return np.median(B, axis=0)
    out = np.empty(B.shape[1])
    for j in range(B.shape[1]):  # loop over features only
        vals, counts = np.unique(B[:, j], return_counts=True)
        out[j] = vals[np.argmax(counts)]  # ties: the smallest value
    return out


class Constant(Policy):
    """One reference for every target: a feature-wise statistic of a background set.

    Parameters
    ----------
    background : array_like (M, n), optional
        Background points; default the pool.
    """

    accepts_rows = True
    statistic = "mean"

    def __init__(self, background=None):
        if background is not None:
            background = as_float_array("background", background, ndim=(2,))
            if background.shape[0] == 0:
                raise ValueError("background has no rows.")
        self.params = {"background": background}

    def _pair(self, pool, f, tidx, T, labels, seed, progress):
        B = self.params.get("background")
        if B is None:
            B = pool
        elif B.shape[1] != pool.shape[1]:
            raise ValueError(f"background has {B.shape[1]} features but X_pool has {pool.shape[1]}.")
        c = _statistic(self.statistic, B)
        return _constant_pairing(self.name, c, T, tidx, {"reference": c.tolist()})


@_builtin("mean")
class Mean(Constant):
    """Feature-wise mean of a background set (default: the pool)."""

    statistic = "mean"


@_builtin("median")
class Median(Constant):
    """Feature-wise median of a background set (default: the pool)."""

    statistic = "median"


@_builtin("mode")
class Mode(Constant):
    """Feature-wise most frequent value of a background set (ties: the smallest value)."""

    statistic = "mode"


@_builtin("average")
class Average(Constant):
    """The paper's average policy (§5.2): the feature-wise mean of the pool.

    Binary features get their mean too, which is why the paper calls these points unphysical.
    """

    statistic = "mean"

    def __init__(self):
        self.params = {}


@_builtin("fixed")
class Fixed(Policy):
    """A given reference point for every target.

    Parameters
    ----------
    point : array_like (n,), optional
        The reference r.
    index : int, optional
        Use the pool point with this index instead (``reference_index`` is then that index).
    """

    accepts_rows = True

    def __init__(self, point=None, index: int | None = None):
        if (point is None) == (index is None):
            raise ValueError("fixed: give exactly one of point (an array of n values) or index.")
        if point is not None:
            point = as_float_array("point", point, ndim=(1,))
        elif isinstance(index, bool) or not isinstance(index, (int, np.integer)) or index < 0:
            raise ValueError(f"fixed: index must be a non-negative integer; got {index!r}.")
        else:
            index = int(index)
        self.params = {"point": point, "index": index}

    def _pair(self, pool, f, tidx, T, labels, seed, progress):
        N, n = pool.shape
        point, index = self.params["point"], self.params["index"]
        if point is not None:
            if point.shape[0] != n:
                raise ValueError(f"fixed: point has {point.shape[0]} values but X_pool has n = {n} "
                                 "features.")
            return _constant_pairing(self.name, point, T, tidx)
        if index >= N:
            raise ValueError(f"fixed: index {index} is out of range for a pool of {N} points.")
        p = _constant_pairing(self.name, pool[index], T, tidx)
        p.reference_index[:] = index
        return p


# --------------------------------------------------------------------------------------------------
# specifications (TOML)
# --------------------------------------------------------------------------------------------------

def _spec_files() -> dict[str, Any]:
    from importlib.resources import files

    try:
        root = files(SPEC_PACKAGE)
    except ModuleNotFoundError:  # pragma: no cover - broken install
        return {}
    return {p.name[:-5]: p for p in sorted(root.iterdir(), key=lambda p: p.name)
            if p.name.endswith(".toml")}


def _parse_spec(spec: Mapping, where: str) -> tuple[str, dict, str | None, str | None]:
    if "policy" not in spec:
        raise ValueError(f"{where}: a policy specification needs a 'policy' key (the registered "
                         f"policy name; known: {', '.join(available())}).")
    policy = spec["policy"]
    params = dict(spec.get("params", {}))
    if not isinstance(params, Mapping):
        raise ValueError(f"{where}: 'params' must be a table of parameters.")
    for k, v in spec.items():
        if k not in _SPEC_KEYS:
            if k in params:
                raise ValueError(f"{where}: parameter {k!r} is given twice (top level and [params]).")
            params[k] = v
    return policy, params, spec.get("name"), spec.get("description")


def load(spec: str | Path | Mapping) -> Policy:
    """A policy from a specification.

    Parameters
    ----------
    spec : str, Path or dict
        * a path to a TOML file;
        * the name of a shipped specification (``"cern_counterfactual"``; see :func:`list_specs`);
        * a registered policy name (``"average"``: the policy with its defaults);
        * a dict ``{"policy": "counterfactual", "min_diff": 16, "k_nearest": 20}`` (parameters at the
          top level or under ``"params"``; optional ``"name"`` and ``"description"``).

    The TOML schema is the same as the dict: ``policy`` (required), ``name``, ``description`` and a
    ``[params]`` table (see docs/policies.md).
    """
    if isinstance(spec, Policy):
        return spec
    if isinstance(spec, Mapping):
        policy, params, name, desc = _parse_spec(spec, "policy spec")
        return _make(policy, params, name, desc)
    if not isinstance(spec, (str, Path)):
        raise TypeError(f"spec must be a path, a name or a dict; got {type(spec).__name__}.")
    path = Path(spec)
    s = str(spec)
    if path.is_file():
        return _load_text(path.read_text(encoding="utf-8"), str(path), default_name=path.stem)
    shipped = _spec_files()
    if path.suffix == ".toml":
        if path.parent == Path(".") and path.stem in shipped:  # "cern_counterfactual.toml"
            return _load_text(shipped[path.stem].read_text(encoding="utf-8"), path.stem,
                              default_name=path.stem)
        raise FileNotFoundError(f"policy specification {s!r} not found.")
    if s in shipped:
        return _load_text(shipped[s].read_text(encoding="utf-8"), s, default_name=s)
    if s in _REGISTRY:
        return get(s)
    raise UnknownPolicyError(
        f"unknown policy or specification {s!r}; policies: {', '.join(available())}; "
        f"specifications: {', '.join(shipped) or '(none)'}."
    )


def _load_text(text: str, where: str, default_name: str | None = None) -> Policy:
    try:
        data = _toml.loads(text)
    except _toml.TOMLDecodeError as exc:
        raise ValueError(f"{where}: invalid TOML ({exc}).") from None
    policy, params, name, desc = _parse_spec(data, where)
    return _make(policy, params, name or default_name, desc)


def _make(policy: str, params: dict, name: str | None, desc: str | None) -> Policy:
    pol = get(policy, **params)
    pol.spec = name
    pol.description = desc
    return pol


def list_specs() -> pd.DataFrame:
    """The shipped TOML specifications: name, policy, parameters, description."""
    rows = []
    for name, p in _spec_files().items():
        data = _toml.loads(p.read_text(encoding="utf-8"))
        pol, params, nm, desc = _parse_spec(data, name)
        rows.append({"name": nm or name, "policy": pol, "params": params,
                     "description": desc or ""})
    return pd.DataFrame(rows, columns=["name", "policy", "params", "description"])


def spec_text(name: str) -> str:
    """The text of a shipped specification (or of a TOML file)."""
    shipped = _spec_files()
    if name in shipped:
        return shipped[name].read_text(encoding="utf-8")
    if Path(name).is_file():
        return Path(name).read_text(encoding="utf-8")
    raise UnknownPolicyError(f"unknown specification {name!r}; known: {', '.join(shipped)}.")


# --------------------------------------------------------------------------------------------------
# diagnostics (paper Table 4)
# --------------------------------------------------------------------------------------------------

def abc_correlation(evaluation, methods: Sequence[str] | None = None) -> pd.Series:
    """Pearson correlation over pairs between insertion and deletion ABCs, per method (Table 4).

    ``evaluation`` is an :class:`insdel.evaluation.Evaluation` (or its long ``abc`` DataFrame with
    columns pair, method, mode, abc) holding both modes. NaN where fewer than 2 pairs or a constant
    column.
    """
    df = evaluation.abc if hasattr(evaluation, "abc") else evaluation
    modes = set(df["mode"])
    if not {"insertion", "deletion"} <= modes:
        raise ValueError(f"the correlation needs both insertion and deletion ABCs; got modes {sorted(modes)}.")
    all_methods = list(dict.fromkeys(df["method"]))
    methods = all_methods if methods is None else list(methods)
    for m in methods:
        if m not in all_methods:
            raise ValueError(f"unknown method {m!r}; evaluated: {all_methods}.")
    w = df.pivot_table(index="pair", columns=["mode", "method"], values="abc")
    out = {}
    for m in methods:
        a = w[("insertion", m)].to_numpy()
        b = w[("deletion", m)].to_numpy()
        ok = np.isfinite(a) & np.isfinite(b)
        a, b = a[ok] - a[ok].mean(), b[ok] - b[ok].mean()
        den = np.sqrt((a * a).sum() * (b * b).sum())
        out[m] = float((a * b).sum() / den) if a.size > 1 and den > 0 else float("nan")
    return pd.Series(out, name="abc_correlation", dtype=float)


def diagnostics(pairings, evaluations=None, *, methods: Sequence[str] | None = None,
                tol: float | None = None) -> pd.DataFrame:
    """Per-policy diagnostics of paper Table 4.

    Parameters
    ----------
    pairings : Pairing, mapping label -> Pairing, or sequence of Pairing
        One pairing per policy (labels default to the spec or policy name).
    evaluations : Evaluation, mapping label -> Evaluation, sequence, or None
        The evaluations of those pairings (same labels / order); adds one ``corr_<method>`` column
        per method with the correlation between insertion and deletion ABCs.
    methods : list of str, optional
        Methods whose correlation to report (default: all evaluated ones).
    tol : float, optional
        Tolerance for "x_j != r_j" (default: each policy's ``tol``, else exact).

    Returns
    -------
    pandas.DataFrame
        Index ``policy``; columns ``pairs``, ``features``, ``mean_n_diff`` and ``corr_<method>``.
    """
    P = _labelled(pairings, Pairing, "pairings")
    E = None if evaluations is None else _labelled(evaluations, None, "evaluations",
                                                   labels=list(P))
    rows = []
    for label, p in P.items():
        row: dict[str, Any] = {"policy": label, "pairs": len(p), "features": p.n_features,
                               "mean_n_diff": p.mean_diff(tol)}
        if E is not None:
            if label not in E:
                raise ValueError(f"no evaluation for policy {label!r}; evaluations: {list(E)}.")
            ev = E[label]
            n_ev = getattr(ev, "n_pairs", None)
            if n_ev is not None and n_ev != len(p):
                raise ValueError(f"policy {label!r}: the evaluation has {n_ev} pairs but the pairing "
                                 f"has {len(p)}.")
            for m, v in abc_correlation(ev, methods).items():
                row[f"corr_{m}"] = v
        rows.append(row)
    return pd.DataFrame(rows).set_index("policy")


def _labelled(obj, cls, what, labels=None) -> dict:
    if isinstance(obj, Mapping):
        return dict(obj)
    if isinstance(obj, (list, tuple)):
        if labels is not None:
            if len(obj) != len(labels):
                raise ValueError(f"{what}: got {len(obj)} items for {len(labels)} pairings.")
            return dict(zip(labels, obj, strict=True))
        out = {}
        for p in obj:
            lab = p.label
            if lab in out:
                raise ValueError(f"{what}: two pairings are labelled {lab!r}; pass a dict.")
            out[lab] = p
        return out
    if labels is not None:
        return {labels[0]: obj} if len(labels) == 1 else _labelled([obj], cls, what, labels)
    if cls is not None and not isinstance(obj, cls):
        raise TypeError(f"{what} must be a Pairing, a dict of them or a list of them.")
    return {obj.label: obj}


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------

def _check_pool(pool: np.ndarray) -> None:
    if pool.shape[0] == 0:
        raise ValueError("X_pool has no rows.")
    if pool.shape[1] == 0:
        raise ValueError("X_pool has n = 0 features.")
    try:
        check_finite("X_pool", pool)
    except ValueError as exc:
        raise ValueError(f"{exc} Drop or impute those rows before choosing references.") from None


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer; got {seed!r}.")
    return int(seed)


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
                         "(one reference per target) or ({n},).")
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


# --------------------------------------------------------------------------------------------------
# command line: insdel policies list | show NAME
# --------------------------------------------------------------------------------------------------

def _policy_defaults(name: str) -> dict:
    obj = _REGISTRY[name]
    if isinstance(obj, type):
        sig = inspect.signature(obj.__init__)
        return {k: (p.default if p.default is not inspect.Parameter.empty else "<required>")
                for k, p in sig.parameters.items()
                if k != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    d, _ = _function_params(obj)
    return {k: ("<required>" if v is inspect.Parameter.empty else v) for k, v in d.items()}


def _summary_line(name: str) -> str:
    doc = inspect.getdoc(_REGISTRY[name]) or ""
    return doc.split("\n\n")[0].replace("\n", " ")


def _cli_list(args) -> int:
    print("Policies (insdel.policies.get(name, **params)):")
    for name in available():
        p = ", ".join(f"{k}={v!r}" for k, v in _policy_defaults(name).items())
        tag = "" if name in _BUILTIN else "  [user]"
        print(f"  {name}({p}){tag}")
        print(f"      {_summary_line(name)}")
    print("\nSpecifications (insdel.policies.load(name); package insdel.policy_specs):")
    specs = list_specs()
    if specs.empty:
        print("  (none)")
    for r in specs.itertuples(index=False):
        p = ", ".join(f"{k}={v!r}" for k, v in r.params.items())
        print(f"  {r.name}: {r.policy}({p})")
        if r.description:
            print(f"      {r.description}")
    return 0


def _cli_show(args) -> int:
    name = args.name
    if name in _spec_files() or Path(name).is_file():
        text = spec_text(name)
        print(text.rstrip())
        print(f"# -> {load(name)!r}")
        return 0
    if name in _REGISTRY:
        print(f"# policy {name!r}: {_summary_line(name)}")
        print(f'policy = "{name}"')
        print("[params]")
        for k, v in _policy_defaults(name).items():
            print(f"# {k} = (not set)" if v is None else f"{k} = {json.dumps(to_jsonable(v))}")
        return 0
    raise UnknownPolicyError(f"unknown policy or specification {name!r}; policies: "
                             f"{', '.join(available())}; specifications: {', '.join(_spec_files())}.")


def register_cli(subparsers) -> None:
    """Add ``insdel policies list`` and ``insdel policies show NAME``."""
    p = subparsers.add_parser("policies", help="list and show reference-point policies and specs",
                              description="Reference-point policies (paper §5) and the TOML "
                                          "specifications shipped in insdel.policy_specs.")
    p.set_defaults(func=_cli_list)
    sp = p.add_subparsers(dest="policies_command", metavar="ACTION")
    pl = sp.add_parser("list", help="policy names, parameters and the TOML specifications")
    pl.set_defaults(func=_cli_list)
    ps = sp.add_parser("show", help="print a specification (or a policy's parameters)")
    ps.add_argument("name", help="spec name, TOML path or policy name")
    ps.set_defaults(func=_cli_show)
