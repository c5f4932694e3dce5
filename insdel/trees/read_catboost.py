"""CatBoost's oblivious trees read into a :class:`~insdel.trees.ensemble.TreeEnsemble`.

Read from the model's JSON (``save_model(format="json")``): a ``CatBoostRegressor`` /
``CatBoost`` object or a ``.cbm`` / ``.json`` model file, saved again as JSON by CatBoost in a
temporary folder. An oblivious tree of depth d asks the same d questions at every node of a
level; it is written as a binary tree of 2^d leaves (leaf index bit k = the answer to split k).

- **rule**: a float feature's split asks ``x > border`` (right when true), on the row rounded
  to float32; the float32 borders are written as exact float64 thresholds with ``x <= b``
  going left (:func:`insdel.trees._build.float32_le`).
- **missing values**: ``nan_value_treatment`` ``AsFalse`` / ``AsIs`` (``nan_mode="Min"``, the
  default): a NaN answers false (left); ``AsTrue`` (``nan_mode="Max"``): right.
- **one-hot categorical features** (``one_hot_max_size``): a split asks ``x == category`` (right
  when true); the row holds the category as an integer code, which the black-box route passes
  to CatBoost as its string (``"3"``). Categories are matched through CatBoost's own hashes of
  the strings ``"-1"`` ... ``"1023"``; another category is refused, and so are rows,
  references and backgrounds whose categorical columns hold anything but NaN or an integer
  code -1..1023 (:func:`insdel.trees.ensemble.check_category_codes`).
- **base**: ``get_scale_and_bias()``: the leaves are multiplied by the scale, the bias is the
  base.

Refused: CTR-based categorical features (``OnlineCtr`` splits: a statistic of the training
labels, not a function of the row alone), multi-dimensional leaves (multi-target, multi-class,
uncertainty), and losses with a non-identity prediction (``Poisson``, ``Tweedie``, ``Logloss``...).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ._build import Tree, UnsupportedModelError, assemble, float32_le, require, wrong_library
from .ensemble import TreeEnsemble

__all__ = ["read_catboost", "IDENTITY_LOSSES", "load_model"]

#: losses whose ``predict`` is the trees' scaled sum plus the bias (identity link)
IDENTITY_LOSSES = ("RMSE", "MAE", "Quantile", "Expectile", "Huber", "MAPE", "Lq", "FairLoss",
                   "LogCosh", "MultiQuantile")

#: the integer codes whose string hashes are looked up for one-hot splits
CODES = range(-1, 1024)


def load_model(path: str | Path):
    """A ``CatBoost`` model from a ``.cbm`` (or CatBoost ``.json``) file, with a clear error for
    a file that is not one."""
    cb = require("catboost", "CatBoost")
    p = Path(path)
    other = wrong_library(p, "catboost")
    if other:
        raise UnsupportedModelError(f"{p.name}: not a CatBoost model file{other}.")
    fmt = "json" if p.suffix.lower() == ".json" else "cbm"
    model = cb.CatBoost()
    try:
        model.load_model(str(p), format=fmt)
    except Exception as exc:  # catboost.CatBoostError
        raise UnsupportedModelError(f"{p.name}: not a CatBoost model file CatBoost can read "
                                    f"({str(exc).splitlines()[0] if str(exc) else exc!r}).") \
            from None
    return model


def _code_pool(cb, model):
    """A pool whose categorical columns hold the strings of :data:`CODES`, so that CatBoost's
    JSON lists their hashes (``cat_features_hash``)."""
    cat = set(model.get_cat_feature_indices())
    n = len(model.feature_names_)
    cols = [[str(c) for c in CODES] if j in cat else [0.0] * len(CODES) for j in range(n)]
    rows = [list(r) for r in zip(*cols, strict=True)]
    return cb.Pool(rows, cat_features=sorted(cat), feature_names=list(model.feature_names_))


def _model_json(model: Any) -> tuple[dict, str]:
    cb = require("catboost", "CatBoost")
    if isinstance(model, (str, os.PathLike)):
        source = f"CatBoost {Path(model).name}"
        model = load_model(model)
    else:
        name = type(model).__name__
        if name in ("CatBoostClassifier", "CatBoostRanker"):
            raise UnsupportedModelError(
                f"CatBoost {name}: insdel reads regression models; a classifier's or ranker's "
                "prediction is not the sum of its trees.")
        if not isinstance(model, cb.CatBoost):
            raise UnsupportedModelError(f"a {name} is not a CatBoost model.")
        if not model.is_fitted():
            raise UnsupportedModelError(f"CatBoost {name} is not fitted.")
        source = f"CatBoost {name}"
    pool = _code_pool(cb, model) if model.get_cat_feature_indices() else None
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "model.json"
        model.save_model(str(out), format="json", pool=pool)
        doc = json.loads(out.read_text())
    return doc, source


def _loss(doc: dict) -> str:
    params = doc.get("model_info", {}).get("params", {})
    if isinstance(params, str):
        params = json.loads(params)
    return str(params.get("loss_function", {}).get("type", "?"))


def read_catboost(model: Any) -> TreeEnsemble:
    """Read a CatBoost regression model (``CatBoostRegressor``, ``CatBoost``, or a ``.cbm`` /
    ``.json`` file).

    Raises
    ------
    UnsupportedModelError
        CTR-based categorical features, multi-dimensional leaves, a non-identity loss (named),
        a classifier, a one-hot category that is not an integer code in -1..1023.
    """
    doc, source = _model_json(model)
    loss = _loss(doc)
    if loss not in IDENTITY_LOSSES:
        raise UnsupportedModelError(
            f"{source}: loss {loss!r} predicts a transform of the trees' sum (a non-identity "
            f"link) or several values; insdel reads the identity-link regression losses "
            f"{', '.join(IDENTITY_LOSSES[:-1])}.")
    if "oblivious_trees" not in doc:
        raise UnsupportedModelError(f"{source}: non-symmetric trees (grow_policy Depthwise or "
                                    "Lossguide); insdel reads CatBoost's oblivious trees.")
    info = doc["features_info"]
    floats = {int(f["feature_index"]): f for f in info.get("float_features", [])}
    cats = {int(f["feature_index"]): f for f in info.get("categorical_features", [])}
    hashes = {int(h["hash"]) & 0xFFFFFFFF: h["value"] for h in info.get("cat_features_hash", [])}
    scale, bias = doc.get("scale_and_bias", [1.0, [0.0]])
    bias = np.asarray(bias, dtype=np.float64).reshape(-1)
    if bias.size != 1:
        raise UnsupportedModelError(f"{source}: a multi-dimensional model ({bias.size} "
                                    "outputs).")
    flat = [int(f["flat_feature_index"]) for f in [*floats.values(), *cats.values()]]
    n_features = max(flat) + 1 if flat else 1
    names = [None] * n_features
    for f in [*floats.values(), *cats.values()]:
        names[int(f["flat_feature_index"])] = f.get("feature_name") or f.get("feature_id")
    trees = [_tree(t, float(scale), floats, cats, hashes, source, k)
             for k, t in enumerate(doc["oblivious_trees"])]
    return assemble(trees, base=float(bias[0]), rule="le", n_features=n_features,
                    feature_names=names if all(isinstance(s, str) for s in names) else None,
                    source=source, extra={"loss": loss,
                                          "category_codes": (CODES.start, CODES.stop - 1),
                                          "categorical_features": sorted(
                                              int(f["flat_feature_index"])
                                              for f in cats.values())})


def _question(split: dict, floats, cats, hashes, source: str, k: int):
    """(feature, threshold, missing answers true, category or None) of one oblivious split:
    the answer true takes bit 1."""
    kind = split.get("split_type")
    if kind == "FloatFeature":
        f = floats[int(split["float_feature_index"])]
        treat = f.get("nan_value_treatment", "AsIs")
        return (int(f["flat_feature_index"]), float(float32_le(split["border"])),
                treat == "AsTrue", None)
    if kind == "OneHotFeature":
        f = cats[int(split["cat_feature_index"])]
        value = hashes.get(int(split["value"]) & 0xFFFFFFFF)
        try:
            code = float(int(value))
        except (TypeError, ValueError):
            raise UnsupportedModelError(
                f"{source}: tree {k}: a one-hot split on categorical feature "
                f"{f.get('feature_name') or f['flat_feature_index']} by a category that is not an "
                f"integer code in {CODES.start}..{CODES.stop - 1}; insdel passes categories as "
                "integer codes.") from None
        return int(f["flat_feature_index"]), np.nan, False, code
    raise UnsupportedModelError(
        f"{source}: tree {k} splits on a {kind} feature (CTR: a statistic of the training "
        "labels per category, not a function of the row alone), which insdel cannot read; "
        "train with one_hot_max_size above the categories' count, or encode the categories "
        "as numbers.")


def _tree(tree: dict, scale: float, floats, cats, hashes, source: str, k: int) -> Tree:
    splits = tree.get("splits", [])
    leaves = np.asarray(tree["leaf_values"], dtype=np.float64) * scale
    weights = np.asarray(tree.get("leaf_weights", np.full(leaves.size, np.nan)), float)
    d = len(splits)
    if leaves.size != 2 ** d:
        raise UnsupportedModelError(f"{source}: tree {k} has {leaves.size} leaf values for "
                                    f"depth {d} (multi-dimensional leaves).")
    qs = [_question(s, floats, cats, hashes, source, k) for s in splits]
    t = Tree()

    def build(level: int, index: int) -> tuple[int, float]:
        # the subtree below `level` questions answered, leaf index bits so far in `index`
        if level == d:
            return t.add(value=float(leaves[index]), cover=float(weights[index])), \
                float(weights[index])
        f, thr, nan_true, code = qs[d - 1 - level]  # the last split is the root (highest bit)
        bit = 1 << (d - 1 - level)
        if code is None:  # x <= border: false (bit 0) on the left
            i = t.add(feature=f, threshold=thr, missing_left=not nan_true)
            lo, lc = build(level + 1, index)
            hi, hc = build(level + 1, index | bit)
        else:  # x == category: true (bit 1) on the left, the category being the left set
            i = t.add(feature=f, missing_left=False, categories=[code])
            lo, lc = build(level + 1, index | bit)
            hi, hc = build(level + 1, index)
        t.set_children(i, lo, hi)
        t.cover[i] = lc + hc
        return i, lc + hc

    build(0, 0)
    return t
