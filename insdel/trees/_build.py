"""What every parser of :mod:`insdel.trees` shares: trees collected one by one and joined into
one :class:`~insdel.trees.ensemble.TreeEnsemble`, and the float32 comparisons of the libraries
that round a row to float32 before comparing it, written as exact float64 thresholds."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .ensemble import TreeEnsemble


def file_library(p) -> str | None:
    """The library that wrote the model file ``p``, by its first bytes: LightGBM's text model
    (a ``tree`` line), CatBoost's binary (``CBM1``), XGBoost's JSON or UBJSON (a ``learner``
    object) and CatBoost's JSON (``features_info`` / ``oblivious_trees``); None otherwise."""
    with open(Path(p), "rb") as fh:
        head = fh.read(256)
    if head.startswith(b"tree\n") or head.startswith(b"tree\r\n"):
        return "lightgbm"
    if head.startswith(b"CBM1"):
        return "catboost"
    if head.lstrip().startswith(b"{"):
        if b"learner" in head[:40]:
            return "xgboost"
        if b"features_info" in head or b"oblivious_trees" in head or b"model_info" in head:
            return "catboost"
    return None


def wrong_library(p, want: str) -> str:
    """The end of a loader's error: which library's model the file ``p`` holds instead of
    ``want``'s, when its content says so."""
    try:
        kind = file_library(p)
    except OSError:
        return ""
    if kind is None or kind == want:
        return ""
    return f"; the file holds a model of {kind}: read it with insdel.trees.read_{kind}"


class UnsupportedModelError(ValueError):
    """A model, or a model file, insdel cannot read exactly as a single-output regression
    ensemble (a classifier, a multi-output or non-identity-link booster, a CTR feature...)."""


@dataclass
class Tree:
    """One tree's nodes, indexed from 0 (the root) within the tree; children are local indices.
    ``cat_sets[i]`` is the set of category codes that go left at a categorical node i."""

    feature: list[int] = field(default_factory=list)
    threshold: list[float] = field(default_factory=list)
    left: list[int] = field(default_factory=list)
    right: list[int] = field(default_factory=list)
    missing_left: list[bool] = field(default_factory=list)
    value: list[float] = field(default_factory=list)
    cover: list[float] = field(default_factory=list)
    cat_sets: dict[int, np.ndarray] = field(default_factory=dict)

    def add(self, *, feature: int = -1, threshold: float = np.nan, left: int = -1,
            right: int = -1, missing_left: bool = False, value: float = 0.0,
            cover: float = np.nan, categories=None) -> int:
        """Append a node (a leaf when ``feature`` is -1) and return its local index."""
        i = len(self.feature)
        self.feature.append(int(feature))
        self.threshold.append(float(threshold))
        self.left.append(int(left))
        self.right.append(int(right))
        self.missing_left.append(bool(missing_left))
        self.value.append(float(value))
        self.cover.append(float(cover))
        if categories is not None:
            self.cat_sets[i] = np.unique(np.asarray(categories, dtype=np.float64))
        return i

    def set_children(self, i: int, left: int, right: int) -> None:
        self.left[i] = int(left)
        self.right[i] = int(right)


def from_arrays(feature, threshold, left, right, missing_left, value, cover,
                cat_sets: dict | None = None) -> Tree:
    """A :class:`Tree` from a library's own per-tree node arrays (leaves: feature < 0)."""
    t = Tree()
    t.feature = [int(f) if f >= 0 else -1 for f in np.asarray(feature)]
    t.threshold = np.asarray(threshold, dtype=np.float64).tolist()
    t.left = np.asarray(left, dtype=np.int64).tolist()
    t.right = np.asarray(right, dtype=np.int64).tolist()
    t.missing_left = np.asarray(missing_left, dtype=bool).tolist()
    t.value = np.asarray(value, dtype=np.float64).tolist()
    t.cover = np.asarray(cover, dtype=np.float64).tolist()
    t.cat_sets = dict(cat_sets or {})
    return t


def assemble(trees: list[Tree], *, base: float, rule: str, n_features: int,
             feature_names=None, source: str, extra: dict | None = None) -> TreeEnsemble:
    """Join the trees into one :class:`TreeEnsemble` (node indices made absolute, leaves'
    children -1, internal nodes' values 0)."""
    if not trees:
        raise UnsupportedModelError(f"{source}: the model has no trees (is it fitted?)")
    offsets = np.cumsum([0] + [len(t.feature) for t in trees])
    N = int(offsets[-1])
    feature = np.concatenate([np.asarray(t.feature, dtype=np.int64) for t in trees])
    inner = feature >= 0
    left = np.concatenate([np.asarray(t.left, dtype=np.int64) + o for t, o in zip(trees, offsets[:-1], strict=True)])
    right = np.concatenate([np.asarray(t.right, dtype=np.int64) + o
                            for t, o in zip(trees, offsets[:-1], strict=True)])
    left[~inner] = -1
    right[~inner] = -1
    value = np.concatenate([np.asarray(t.value, dtype=np.float64) for t in trees])
    value[inner] = 0.0
    is_cat = np.zeros(N, dtype=bool)
    counts = np.zeros(N, dtype=np.int64)
    cats = []
    for t, o in zip(trees, offsets[:-1], strict=True):
        for i in sorted(t.cat_sets):
            is_cat[o + i] = True
            counts[o + i] = t.cat_sets[i].size
    for t in trees:
        cats += [t.cat_sets[i] for i in sorted(t.cat_sets)]
    cat_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    categories = (np.concatenate(cats) if cats else np.zeros(0)).astype(np.float64)
    threshold = np.concatenate([np.asarray(t.threshold, dtype=np.float64) for t in trees])
    threshold[~inner | is_cat] = np.nan
    names = None if feature_names is None else tuple(str(c) for c in feature_names)
    return TreeEnsemble(
        feature=feature, threshold=threshold, left=left, right=right,
        missing_left=np.concatenate([np.asarray(t.missing_left, dtype=bool) for t in trees]),
        is_categorical=is_cat, cat_ptr=cat_ptr, categories=categories, value=value,
        cover=np.concatenate([np.asarray(t.cover, dtype=np.float64) for t in trees]),
        roots=offsets[:-1].astype(np.int64), base=float(base), rule=rule,
        n_features=int(n_features), feature_names=names, source=source, extra=dict(extra or {}))


def _float32_le_bound(m: np.ndarray) -> np.ndarray:
    """For float32 values ``m``: the largest float64 ``b`` with ``float32(b) <= m`` (round to
    nearest, ties to even), so that ``float32(z) <= m`` iff ``z <= b`` for every float64 z."""
    m = np.asarray(m, dtype=np.float32)
    with np.errstate(over="ignore"):
        up = np.nextafter(m, np.float32(np.inf)).astype(np.float64)
    m64 = m.astype(np.float64)
    # above float32's largest finite value, float32 rounds to inf from 2**128 - 2**103 on: the
    # midpoint with a "next value" of 2**128
    up = np.where(np.isinf(up) & np.isfinite(m64), 2.0 ** 128, up)
    mid = (m64 + up) / 2.0  # exact in float64: a float32 midpoint needs 25 bits
    with np.errstate(over="ignore"):
        to_m = mid.astype(np.float32).astype(np.float64) <= m64
    bound = np.where(to_m, mid, np.nextafter(mid, -np.inf))
    # float32(z) is -inf from -(2**128 - 2**103) down (the midpoint rounds to the even -2**128)
    lowest = -(float(np.finfo(np.float32).max) + 2.0 ** 103)
    return np.where(np.isfinite(m64), bound, np.where(m64 < 0, lowest, m64))


def float32_le(t) -> np.ndarray:
    """The float64 threshold ``b`` with ``z <= b`` iff ``float32(z) <= t`` (a library that
    rounds the row to float32 and compares with ``<=``: scikit-learn's trees and forests).

    ``t`` is a float64 threshold; the comparison of a float32 value with it is the same as with
    the largest float32 ``m <= t``."""
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(over="ignore"):
        m = t.astype(np.float32)
        m = np.where(m.astype(np.float64) > t, np.nextafter(m, np.float32(-np.inf)), m)
    return _float32_le_bound(m)


def float32_lt(t) -> np.ndarray:
    """The float64 threshold ``b`` with ``z < b`` iff ``float32(z) < t`` for a float32
    threshold ``t`` (XGBoost: the row rounded to float32, compared with ``<``)."""
    t = np.asarray(t, dtype=np.float32)
    with np.errstate(over="ignore"):  # float32(z) < t iff float32(z) <= below
        below = np.nextafter(t, np.float32(-np.inf))
    b = _float32_le_bound(below)
    return np.where(t == -np.inf, -np.inf, np.nextafter(b, np.inf))
