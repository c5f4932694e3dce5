"""Data sets: a registry of recipes (``insdel/shipped/data_recipes/``) that yields model-ready,
split, scaled data.

The paper's experiments (§5, Appendix A.2 and A.4) use two public regression data sets; insdel
rebuilds both from a user's own copy of the files, and ships simulators shaped like them so that
everything runs without a download:

============== ======== ===================================================================
name           needs    what
============== ======== ===================================================================
bangalore      path=    Kaggle's Bangalore.csv: 38 features (Area, bedrooms + 36 binary)
dielectron     path=    CERN's dielectron.csv: 16 features (Q1, Q2 binary ±1), target M
dielectron_sim -        simulated dielectron events, same columns (the default everywhere)
housing_sim    -        simulated Bangalore-like housing data, same columns
diabetes       -        scikit-learn's diabetes data (real; 'sex' binary 1/2)
============== ======== ===================================================================

:func:`load` runs a recipe, splits 80/20 with a seeded permutation, fits the scaling on the
training split (z-scores for the recipe's continuous features; the Bangalore amenities stay 0/1)
and returns a :class:`Dataset`. ``insdel datasets list`` and
``insdel datasets prepare NAME --out DIR`` do the same on the command line (parquet + JSON).
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._checkpoint import sha256_file, to_jsonable
from ._registry import REQUIRED, Registry, check_options, signature_options
from ._validation import check_finite, check_scalar, repeated
from .groups import Groups

__all__ = ["Dataset", "Scaler", "available", "get", "load", "register", "unregister", "options_of",
           "prepare", "load_prepared", "format_list", "parse_options", "sha256_file",
           "TEST_FRACTION"]

#: Share of the rows held out as the test split (paper §5: 80 % train, 20 % test).
TEST_FRACTION = 0.2

_BUILTIN = {
    "dielectron_sim": "insdel.shipped.data_recipes.dielectron_sim",
    "housing_sim": "insdel.shipped.data_recipes.housing_sim",
    "dielectron": "insdel.shipped.data_recipes.dielectron",
    "bangalore": "insdel.shipped.data_recipes.bangalore",
    "diabetes": "insdel.shipped.data_recipes.diabetes",
    "table": "insdel.shipped.data_recipes.table",
}


class Scaler:
    """Per-feature affine scaling ``z = (x - mean_) / scale_`` (identity on unscaled features).

    Parameters
    ----------
    mean_, scale_ : array-like, shape (n,)
        Centre and scale of each feature (0 and 1 for features that are not standardised).
    """

    def __init__(self, mean_, scale_):
        self.mean_ = np.asarray(mean_, dtype=np.float64).copy()
        self.scale_ = np.asarray(scale_, dtype=np.float64).copy()
        if self.mean_.shape != self.scale_.shape or self.mean_.ndim != 1:
            raise ValueError(f"mean_ and scale_ must be 1-D of equal length; got "
                             f"{self.mean_.shape} and {self.scale_.shape}.")
        if np.any(~np.isfinite(self.scale_) | (self.scale_ <= 0)):
            raise ValueError("scale_ must be positive and finite.")

    @classmethod
    def fit(cls, X: np.ndarray, standardize: np.ndarray) -> Scaler:
        """z-scores (population standard deviation) for the columns flagged in ``standardize``."""
        X = np.asarray(X, dtype=np.float64)
        mean = np.where(standardize, X.mean(axis=0), 0.0)
        sd = X.std(axis=0)
        scale = np.where(standardize & (sd > 0), sd, 1.0)
        return cls(mean, scale)

    @property
    def n_features(self) -> int:
        return int(self.mean_.shape[0])

    def _check(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.shape[-1] != self.n_features:
            raise ValueError(f"X has {X.shape[-1]} features; the scaler was fitted on "
                             f"{self.n_features}.")
        return X

    def transform(self, X) -> np.ndarray:
        """Raw units -> model-input units."""
        return (self._check(X) - self.mean_) / self.scale_

    def inverse_transform(self, Z) -> np.ndarray:
        """Model-input units -> raw units."""
        return self._check(Z) * self.scale_ + self.mean_

    def to_dict(self) -> dict[str, list[float]]:
        return {"mean": self.mean_.tolist(), "scale": self.scale_.tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> Scaler:
        return cls(d["mean"], d["scale"])

    def __repr__(self) -> str:
        return f"Scaler(n_features={self.n_features})"


@dataclass
class Dataset:
    """A split, scaled regression data set.

    Attributes
    ----------
    name : str
        Recipe name (what chooses the recipe and a model preset).
    label : str
        Display name in titles, tables and leaderboards: the recipe's ``RawData.label`` (the
        ``table`` recipe: the file's name, e.g. ``"diabetes.csv"``), else :attr:`name`.
    X_train, X_test : ndarray (N, n), float64
        Features in model-input (scaled) units.
    y_train, y_test : ndarray (N,), float64
        Target in model units (raw target / ``target_scale``).
    feature_names : list of str
    target_name : str
    binary_mask : ndarray (n,), bool
        Binary features (paper §4).
    binary_levels : ndarray (n, 2)
        The two levels (lo, hi) of each binary feature in model-input units; NaN rows for
        continuous features.
    raw_binary_levels : ndarray (n, 2)
        The same levels in raw units (e.g. (-1, 1) for the charges, (0, 1) for amenities).
    scaler : Scaler
        The fitted feature scaling (``transform`` raw -> model units).
    target_scale : float or None
        Divisor of the raw target (Bangalore: 1e7 INR), None if the target is raw.
    description : str
    info : dict
        Provenance and counts (rows read, dropped, file hash, simulator options, seed).
    train_index, test_index : ndarray
        Rows of the recipe's cleaned table in each split.
    groups : insdel.groups.Groups or None
        Feature groups the recipe declares (issue #16; e.g. Bangalore's one-hot ``Location`` with
        ``location="onehot"``): the units moved in insertion/deletion curves. None: every feature
        is its own unit (the paper); :attr:`unit_groups` gives singletons then.
    """

    name: str
    X_train: np.ndarray
    X_test: np.ndarray
    y_train: np.ndarray
    y_test: np.ndarray
    feature_names: list[str]
    target_name: str
    binary_mask: np.ndarray
    binary_levels: np.ndarray
    raw_binary_levels: np.ndarray
    scaler: Scaler
    target_scale: float | None = None
    description: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    train_index: np.ndarray | None = None
    test_index: np.ndarray | None = None
    groups: Groups | None = None
    label: str = ""

    def __post_init__(self):
        if not self.label:
            self.label = self.name

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    @property
    def unit_groups(self) -> Groups:
        """The units of the curves: :attr:`groups`, or one singleton group per feature."""
        if self.groups is not None:
            return self.groups
        return Groups.singletons(self.n_features, names=list(self.feature_names))

    @property
    def n_units(self) -> int:
        """Number of units moved in the curves (groups, or features without groups)."""
        return self.unit_groups.m

    @property
    def binary_indices(self) -> np.ndarray:
        """The indices of the binary features (``binary_mask``'s columns)."""
        return np.flatnonzero(self.binary_mask)

    def raw_features(self, split: str = "test") -> np.ndarray:
        """Features of a split in raw units."""
        return self.scaler.inverse_transform(self._split(split)[0])

    def _split(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        if split == "train":
            return self.X_train, self.y_train
        if split == "test":
            return self.X_test, self.y_test
        raise ValueError(f"split must be 'train' or 'test'; got {split!r}.")

    def metadata(self) -> dict[str, Any]:
        """JSON-ready description: names, binary features and levels, scaling, sizes, provenance."""
        def levels(a: np.ndarray) -> list:
            return [None if np.isnan(r[0]) else [float(r[0]), float(r[1])] for r in a]

        return {
            "name": self.name,
            "label": self.label,
            "feature_names": list(self.feature_names),
            "target_name": self.target_name,
            "n_features": self.n_features,
            "n_train": int(self.X_train.shape[0]),
            "n_test": int(self.X_test.shape[0]),
            "binary_mask": [bool(b) for b in self.binary_mask],
            "binary_levels": levels(self.binary_levels),
            "raw_binary_levels": levels(self.raw_binary_levels),
            "scaler": self.scaler.to_dict(),
            "target_scale": self.target_scale,
            "description": self.description,
            "info": to_jsonable(self.info),
            "groups": None if self.groups is None else self.groups.to_json(),
        }

    def __repr__(self) -> str:
        grp = "" if self.groups is None else f", groups={self.groups.m}"
        label = "" if self.label == self.name else f", label={self.label!r}"
        return (f"Dataset({self.name!r}{label}, n_features={self.n_features}{grp}, "
                f"train={self.X_train.shape[0]}, test={self.X_test.shape[0]}, "
                f"binary={int(self.binary_mask.sum())}, target={self.target_name!r})")


def _check_recipe(name: str, build) -> None:
    if not callable(build):
        raise TypeError(f"build must be callable; got {type(build).__name__}.")


_RECIPES = Registry("data set", dict(_BUILTIN), protected=_BUILTIN, check=_check_recipe)


def available() -> list[str]:
    """Names of the available recipes (built-in and registered), sorted."""
    return _RECIPES.available()


def register(name: str, build: Callable[..., Any], *, overwrite: bool = False) -> None:
    """Register a custom recipe: ``build(seed=..., **options)`` returning a
    :class:`insdel.shipped.data_recipes._base.RawData`."""
    _RECIPES.register(name, build, overwrite=overwrite)


def unregister(name: str) -> None:
    """Remove a custom recipe."""
    _RECIPES.unregister(name)


def _recipe(name: str):
    """(module or None for a custom recipe, its ``build``)."""
    entry = _RECIPES.get(name)
    if isinstance(entry, str):
        mod = importlib.import_module(entry)
        return mod, mod.build
    return None, entry


def get(name: str) -> Callable[..., Any]:
    """The recipe registered as ``name``: its ``build(*, seed, **options) -> RawData`` (nothing
    run; :func:`load` makes the :class:`Dataset`). Raises :class:`insdel.UnknownNameError` (a
    ``ValueError``) for an unknown name."""
    return _recipe(name)[1]


def _summary(name: str) -> str:
    """One line about recipe ``name`` (``insdel datasets list``)."""
    mod, _ = _recipe(name)
    return getattr(mod, "SUMMARY", "custom recipe") if mod is not None else "custom recipe"


def options_of(name: str) -> dict[str, Any]:
    """The options recipe ``name`` takes (``seed`` aside) with their defaults
    (:data:`insdel.REQUIRED`, i.e. ``inspect.Parameter.empty``, for an option its signature gives
    no default: a required one, or one of the ``OPTIONS`` a recipe taking ``**options`` lists).
    A recipe whose ``build`` takes any keyword and lists no ``OPTIONS`` checks its options itself:
    :func:`_takes_any_option`."""
    mod, build = _recipe(name)
    named = signature_options(build, skip=("seed",))
    extra = getattr(mod, "OPTIONS", None) if mod is not None else None
    return {**named, **{k: REQUIRED for k in (extra or ()) if k not in named}}


def _takes_any_option(name: str) -> bool:
    """Whether recipe ``name`` takes keywords beyond :func:`options_of` (a ``**options`` build
    that lists no ``OPTIONS``)."""
    mod, build = _recipe(name)
    params = inspect.signature(build).parameters.values()
    return (any(p.kind == p.VAR_KEYWORD for p in params)
            and (mod is None or getattr(mod, "OPTIONS", None) is None))


def _recipe_groups(name: str, groups, feats: list[str]) -> Groups | None:
    """The recipe's ``RawData.groups`` (group name -> feature names) as :class:`Groups` over every
    feature: features in no group are singletons named after themselves; units are ordered by
    their first column. None when the recipe declares no group of two or more columns."""
    if not groups:
        return None
    if not isinstance(groups, dict):
        raise TypeError(f"recipe {name!r}: RawData.groups must be a dict group name -> feature "
                        f"names; got {type(groups).__name__}.")
    index = {c: j for j, c in enumerate(feats)}
    gnames = [str(g) for g in groups]
    owner = np.full(len(feats), -1, dtype=np.int64)
    for g, cols in enumerate(groups.values()):
        if isinstance(cols, str) or not cols:
            raise ValueError(f"recipe {name!r}: group {gnames[g]!r} must be a non-empty list of "
                             f"feature names; got {cols!r}.")
        for c in cols:
            j = index.get(c) if isinstance(c, str) else None
            if j is None:
                raise ValueError(f"recipe {name!r}: group {gnames[g]!r} names unknown feature "
                                 f"{c!r}.")
            if owner[j] >= 0:
                raise ValueError(f"recipe {name!r}: feature {c!r} is in two groups "
                                 f"({gnames[owner[j]]!r} and {gnames[g]!r}).")
            owner[j] = g
    units: list[tuple[str, list[int]]] = []
    unit_of_group: dict[int, int] = {}
    for j in range(len(feats)):
        g = int(owner[j])
        if g < 0:
            units.append((feats[j], [j]))
        elif g in unit_of_group:
            units[unit_of_group[g]][1].append(j)
        else:
            unit_of_group[g] = len(units)
            units.append((gnames[g], [j]))
    names = [u[0] for u in units]
    dup = repeated(names)
    if dup:
        raise ValueError(f"recipe {name!r}: group name(s) {dup} clash with feature names.")
    if all(len(u[1]) == 1 for u in units):
        return None
    labels = np.empty(len(feats), dtype=np.int64)
    for g, (_, cols) in enumerate(units):
        labels[cols] = g
    return Groups.from_labels(labels, names)


def _split_index(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if n < 2:
        raise ValueError(f"need at least 2 rows to split into train and test; got {n}.")
    n_test = min(max(math.ceil(TEST_FRACTION * n), 1), n - 1)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 8020]))
    perm = rng.permutation(n)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def load(name: str, *, seed: int = 0, **options) -> Dataset:
    """Load data set ``name``: run its recipe, split 80/20 (seeded), fit the scaling on train.

    Parameters
    ----------
    name : str
        One of :func:`available` (``"dielectron_sim"``, ``"housing_sim"``, ``"dielectron"``,
        ``"bangalore"``, ``"diabetes"`` or a registered recipe).
    seed : int
        Seed of the simulators and of the split.
    **options
        Recipe options: ``path=`` (the user's CSV) for ``bangalore`` and ``dielectron``;
        ``n_events=`` (default 100,000) for ``dielectron_sim``; ``n_samples=`` (default 1,951)
        for ``housing_sim``.

    Returns
    -------
    Dataset

    Examples
    --------
    >>> ds = load("dielectron_sim", n_events=2000)
    >>> ds.X_train.shape, ds.binary_mask.sum()
    ((1600, 16), 2)
    """
    seed = check_scalar(seed, "seed", int, min_val=0)
    _, build = _recipe(name)
    if not _takes_any_option(name):
        check_options(f"data set {name!r}", options, options_of(name))
    try:
        raw = build(seed=int(seed), **options)
    except TypeError as exc:
        if "unexpected keyword" in str(exc):
            raise TypeError(f"data set {name!r}: {exc}") from None
        raise
    feats = list(raw.features.columns)
    X = raw.features.to_numpy(dtype=np.float64)
    y = np.asarray(raw.target, dtype=np.float64)
    check_finite(f"{name} features", X, feature_names=feats)
    check_finite(f"{name} target", y)
    n = len(feats)
    unknown = [c for c in list(raw.binary_levels) + list(raw.standardize) if c not in feats]
    if unknown:
        raise ValueError(f"recipe {name!r} names unknown feature(s) {unknown}.")
    bmask = np.array([c in raw.binary_levels for c in feats])
    std = np.array([c in raw.standardize for c in feats])
    raw_lv = np.full((n, 2), np.nan)
    for j, c in enumerate(feats):
        if bmask[j]:
            raw_lv[j] = sorted(float(v) for v in raw.binary_levels[c])
    if raw.test_mask is not None:
        tm = np.asarray(raw.test_mask, dtype=bool)
        if tm.shape != (X.shape[0],):
            raise ValueError(f"recipe {name!r}: test_mask has shape {tm.shape}; expected "
                             f"({X.shape[0]},).")
        tr, te = np.flatnonzero(~tm), np.flatnonzero(tm)
    else:
        tr, te = _split_index(X.shape[0], seed)
    scaler = Scaler.fit(X[tr], std)
    Xs = scaler.transform(X)
    lv = np.where(bmask[:, None], (raw_lv - scaler.mean_[:, None]) / scaler.scale_[:, None],
                  np.nan)
    ts = raw.target_scale
    ym = y / ts if ts else y
    info = {**raw.info, "seed": int(seed), "options": to_jsonable(dict(options))}
    groups = _recipe_groups(name, getattr(raw, "groups", None), feats)
    return Dataset(
        name=name, X_train=np.ascontiguousarray(Xs[tr]), X_test=np.ascontiguousarray(Xs[te]),
        y_train=ym[tr].copy(), y_test=ym[te].copy(), feature_names=feats,
        target_name=raw.target_name, binary_mask=bmask, binary_levels=lv,
        raw_binary_levels=raw_lv, scaler=scaler, target_scale=float(ts) if ts else None,
        description=raw.description, info=info, train_index=tr, test_index=te, groups=groups,
        label=str(getattr(raw, "label", None) or name),
    )


# ---------------------------------------------------------------- files on disk


def prepare(name: str, out: str | os.PathLike, *, seed: int = 0, **options) -> Path:
    """Write data set ``name`` to ``out``: ``train.parquet``, ``test.parquet`` (features in model
    units and the target) and ``metadata.json``. Files are written atomically.

    Returns
    -------
    pathlib.Path
        The output folder.
    """
    from ._checkpoint import atomic_write, atomic_write_text

    ds = load(name, seed=seed, **options)
    if ds.target_name in ds.feature_names:
        raise ValueError(f"data set {name!r}: the target {ds.target_name!r} is also a feature "
                         "name; the parquet files need distinct column names.")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    # the old metadata goes first: a prepare killed between files must not leave new splits
    # readable under another preparation's metadata (or the reverse)
    (out / "metadata.json").unlink(missing_ok=True)
    hashes = {}
    for split, (X, y) in (("train", (ds.X_train, ds.y_train)), ("test", (ds.X_test, ds.y_test))):
        df = pd.DataFrame(X, columns=ds.feature_names)
        df[ds.target_name] = y
        with atomic_write(out / f"{split}.parquet", suffix=".parquet") as tmp:
            df.to_parquet(tmp, index=False)
            hashes[split] = sha256_file(tmp)
    meta = ds.metadata()
    meta["files_sha256"] = hashes
    atomic_write_text(out / "metadata.json", json.dumps(meta, indent=2) + "\n")
    return out


def load_prepared(folder: str | os.PathLike) -> Dataset:
    """Read a folder written by :func:`prepare` back into a :class:`Dataset`."""
    folder = Path(folder)
    mpath = folder / "metadata.json"
    if not mpath.is_file():
        raise FileNotFoundError(f"{folder} has no metadata.json (write it with "
                                f"`insdel datasets prepare`).")
    meta = json.loads(mpath.read_text())
    feats = meta["feature_names"]
    arrays = {}
    for split in ("train", "test"):
        fp = folder / f"{split}.parquet"
        want = meta.get("files_sha256", {}).get(split)
        if want is not None and fp.is_file() and sha256_file(fp) != want:
            raise ValueError(f"{fp} is not the file metadata.json was written with (its SHA-256 "
                             "differs: changed or from another preparation); prepare the data "
                             "set again.")
        df = pd.read_parquet(fp)
        arrays[split] = (df[feats].to_numpy(np.float64), df[meta["target_name"]].to_numpy(np.float64))

    def levels(rows):
        return np.array([[np.nan, np.nan] if r is None else r for r in rows], dtype=np.float64)

    return Dataset(
        name=meta["name"], X_train=arrays["train"][0], X_test=arrays["test"][0],
        y_train=arrays["train"][1], y_test=arrays["test"][1], feature_names=feats,
        target_name=meta["target_name"], binary_mask=np.array(meta["binary_mask"], dtype=bool),
        binary_levels=levels(meta["binary_levels"]),
        raw_binary_levels=levels(meta["raw_binary_levels"]),
        scaler=Scaler.from_dict(meta["scaler"]), target_scale=meta["target_scale"],
        description=meta["description"], info=meta.get("info", {}),
        label=str(meta.get("label") or meta["name"]),
        groups=None if not meta.get("groups") else Groups.from_labels(
            np.asarray(meta["groups"]["labels"], dtype=np.int64), meta["groups"]["names"]),
    )


# ---------------------------------------------------------------- command line


def _parse_value(text: str):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def parse_options(items: Sequence[str] | None) -> dict[str, Any]:
    """``["n_events=2000", "noise=0.1"]`` -> ``{"n_events": 2000, "noise": 0.1}`` (CLI options)."""
    out: dict[str, Any] = {}
    for item in items or ():
        if "=" not in item:
            raise ValueError(f"--option expects KEY=VALUE; got {item!r}.")
        k, v = item.split("=", 1)
        out[k.strip()] = _parse_value(v.strip())
    return out


def format_list() -> str:
    """The text of ``insdel datasets list``: name, whether it is embedded, description."""
    lines = []
    for n in available():
        mod, _ = _recipe(n)
        needs = "embedded" if mod is None or getattr(mod, "EMBEDDED", False) else "needs --path"
        lines.append(f"{n:16s} {needs:13s} {_summary(n)}")
    return "\n".join(lines)
