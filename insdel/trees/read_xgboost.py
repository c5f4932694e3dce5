"""XGBoost boosters read into a :class:`~insdel.trees.ensemble.TreeEnsemble`.

Read from the booster's own JSON (``Booster.save_raw("json")``): a ``Booster``, an
``XGBRegressor`` / ``XGBRFRegressor``, a model file (``.json`` or ``.ubj``, loaded by XGBoost
and saved again as JSON) or the JSON's bytes.

- **rule**: the row is rounded to float32 and a numeric split sends ``x < threshold`` left;
  the float32 thresholds are written as exact float64 bounds
  (:func:`insdel.trees._build.float32_lt`), so every float64 row takes XGBoost's way.
- **missing values**: a NaN takes the node's ``default_left``.
- **categorical splits** (``enable_categorical``): the node's listed categories go *right*,
  every other value (an unlisted or unknown category) left; the value is the category's code
  (``Series.cat.codes`` of the training frame's categories). They are written with the children
  swapped, so that the set goes left as :func:`~insdel.trees.ensemble.goes_left` reads it.
  XGBoost truncates a value to an integer there (2.5 is category 2): rows, references and
  backgrounds whose categorical columns hold anything but NaN or an integer code -1..2^24 - 1
  are refused, naming the argument, row and feature
  (:func:`insdel.trees.ensemble.check_category_codes`).
- **base**: ``base_score`` (margin space in XGBoost >= 2: with the identity link it is added as
  is); leaves already hold the learning rate; a DART booster's tree weights are folded in.

Refused, with the reason: a multi-output booster (``num_target > 1``), a multi-class one
(``num_class > 1``), ``gblinear``, and every objective whose link is not the identity
(``reg:logistic``, ``binary:*``, ``count:poisson``, ``reg:gamma``, ``reg:tweedie``, ranking,
survival...): their trees sum in margin space and the prediction is a transform of that sum,
so the ensemble's sum would not be the model's prediction.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ._build import (
    Tree,
    UnsupportedModelError,
    assemble,
    float32_lt,
    from_arrays,
    require,
    wrong_library,
)
from .ensemble import TreeEnsemble

__all__ = ["read_xgboost", "IDENTITY_OBJECTIVES", "load_booster"]

#: objectives whose prediction is the trees' sum (identity link)
IDENTITY_OBJECTIVES = ("reg:squarederror", "reg:absoluteerror", "reg:pseudohubererror",
                       "reg:quantileerror", "reg:linear")
#: the codes a categorical split's column may hold (``extra["category_codes"]``): XGBoost
#: rounds the row to float32 (exact up to 2^24) and truncates it to an integer code; a negative
#: one is no category (-1: pandas' code of a missing category)
CATEGORY_CODES = (-1, 2**24 - 1)


def load_booster(path: str | Path):
    """An ``xgboost.Booster`` loaded from a ``.json`` / ``.ubj`` model file, with a clear error
    for a file that is not an XGBoost model (another library's, or another JSON)."""
    xgb = require("xgboost", "XGBoost")
    p = Path(path)
    other = wrong_library(p, "xgboost")
    if other:
        raise UnsupportedModelError(f"{p.name}: not an XGBoost model file{other}.")
    bst = xgb.Booster()
    try:
        bst.load_model(str(p))
    except Exception as exc:  # xgboost.core.XGBoostError
        raise UnsupportedModelError(
            f"{p.name}: not an XGBoost model file XGBoost can read ({str(exc).splitlines()[0]}"
            "); XGBoost saves its models with Booster.save_model('model.json' or '.ubj').") \
            from None
    return bst


def _booster_json(model: Any) -> tuple[dict, Any, str]:
    """(the model's JSON, the sklearn wrapper or None, a name for messages)."""
    if isinstance(model, (bytes, bytearray)):
        return json.loads(bytes(model)), None, "XGBoost JSON"
    if isinstance(model, (str, os.PathLike)):
        bst = load_booster(model)
        return json.loads(bytes(bst.save_raw("json"))), None, f"XGBoost {Path(model).name}"
    wrapper = None
    if hasattr(model, "get_booster"):
        wrapper, model = model, model.get_booster()
    if type(model).__name__ != "Booster" or not hasattr(model, "save_raw"):
        raise UnsupportedModelError(f"a {type(model).__name__} is not an XGBoost Booster.")
    name = f"XGBoost {type(wrapper).__name__}" if wrapper is not None else "XGBoost Booster"
    return json.loads(bytes(model.save_raw("json"))), wrapper, name


def _param_float(v) -> float:
    """A learner parameter: ``"5E-1"`` or, in XGBoost >= 3, ``"[5E-1]"`` (one per target)."""
    vals = np.asarray(json.loads(v) if isinstance(v, str) and v.startswith("[")
                      else [v], dtype=np.float64).reshape(-1)
    if vals.size != 1:
        raise UnsupportedModelError(f"a base_score with {vals.size} values (one per target).")
    return float(vals[0])


def read_xgboost(model: Any) -> TreeEnsemble:
    """Read an XGBoost regression booster (``Booster``, ``XGBRegressor``, ``XGBRFRegressor``,
    a ``.json`` / ``.ubj`` file, or the JSON's bytes).

    Raises
    ------
    UnsupportedModelError
        A multi-output or multi-class booster, ``gblinear``, an objective with a non-identity
        link (the message names it), or a classifier wrapper.
    """
    if type(model).__name__ in ("XGBClassifier", "XGBRFClassifier", "XGBRanker"):
        raise UnsupportedModelError(
            f"XGBoost {type(model).__name__}: insdel reads regression boosters; a classifier's or "
            "ranker's prediction is not the sum of its trees.")
    doc, wrapper, source = _booster_json(model)
    try:
        learner = doc["learner"]
        params = learner["learner_model_param"]
        booster = learner["gradient_booster"]
    except (KeyError, TypeError):
        raise UnsupportedModelError(f"{source}: not an XGBoost model's JSON (no learner / "
                                    "gradient_booster).") from None
    objective = learner.get("objective", {}).get("name", "?")
    n_target = int(params.get("num_target", 1) or 1)
    n_class = int(params.get("num_class", 0) or 0)
    if n_target > 1 or n_class > 1:
        raise UnsupportedModelError(
            f"{source}: a multi-output booster (num_target = {n_target}, num_class = {n_class}, "
            f"objective {objective!r}); insdel reads single-output regression boosters.")
    if objective not in IDENTITY_OBJECTIVES:
        raise UnsupportedModelError(
            f"{source}: objective {objective!r} predicts a transform of the trees' sum (a "
            "non-identity link: logistic, exp, softmax or ranking scores); insdel reads the "
            f"identity-link regression objectives {', '.join(IDENTITY_OBJECTIVES[:4])}, whose "
            "prediction is the sum itself.")
    kind = booster.get("name")
    if kind == "dart":
        weights = np.asarray(booster.get("weight_drop", []), dtype=np.float64)
        gbtree = booster["gbtree"]["model"]
    elif kind == "gbtree":
        gbtree, weights = booster["model"], None
    else:
        raise UnsupportedModelError(f"{source}: booster {kind!r} has no trees (insdel reads "
                                    "gbtree and dart boosters).")
    raw = gbtree["trees"]
    stop = _best_stop(wrapper, learner, gbtree, len(raw))
    n_features = int(params.get("num_feature", 0))
    trees = []
    for k, t in enumerate(raw[:stop]):
        w = 1.0 if weights is None or weights.size == 0 else float(weights[k])
        trees.append(_tree(t, w, source))
    names = learner.get("feature_names") or None
    return assemble(trees, base=_param_float(params["base_score"]), rule="lt",
                    n_features=n_features, feature_names=names, source=source,
                    extra={"objective": objective, "category_codes": CATEGORY_CODES,
                           "feature_types":
                           list(learner.get("feature_types") or [])})


def _best_stop(wrapper, learner, gbtree, n_trees: int) -> int:
    """How many trees ``predict`` uses: a wrapper trained with early stopping predicts with its
    best iteration's trees, as XGBoost's ``predict`` does."""
    best = getattr(wrapper, "best_iteration", None) if wrapper is not None else None
    if best is None:
        return n_trees
    indptr = gbtree.get("iteration_indptr")
    if indptr is not None and int(best) + 1 < len(indptr):
        return int(indptr[int(best) + 1])
    per = int(gbtree.get("gbtree_model_param", {}).get("num_parallel_tree", 1))
    return min(n_trees, (int(best) + 1) * per)


def _tree(t: dict, weight: float, source: str) -> Tree:
    if int(t.get("tree_param", {}).get("size_leaf_vector", 1) or 1) > 1:
        raise UnsupportedModelError(f"{source}: a tree with vector leaves (multi-output).")
    left = np.asarray(t["left_children"], dtype=np.int64)
    right = np.asarray(t["right_children"], dtype=np.int64)
    leaf = left < 0
    feature = np.where(leaf, -1, np.asarray(t["split_indices"], dtype=np.int64))
    cond = np.asarray(t["split_conditions"], dtype=np.float64)
    # split_conditions are float32 values printed in full: back to float32 exactly
    threshold = np.where(leaf, np.nan, float32_lt(np.where(leaf, 0.0, cond).astype(np.float32)))
    value = np.where(leaf, cond * weight, 0.0)
    missing = np.asarray(t["default_left"], dtype=bool)
    split_type = np.asarray(t.get("split_type", np.zeros(left.size)), dtype=np.int64)
    cat_sets = {}
    if (split_type == 1).any():
        nodes = list(t["categories_nodes"])
        seg, size = t["categories_segments"], t["categories_sizes"]
        cats = np.asarray(t["categories"], dtype=np.float64)
        for k, i in enumerate(nodes):
            # listed categories go right in XGBoost: swap the children so the set goes left
            cat_sets[int(i)] = cats[int(seg[k]):int(seg[k]) + int(size[k])]
            left[i], right[i] = right[i], left[i]
            missing[i] = not missing[i]
        if set(nodes) != set(np.flatnonzero(split_type == 1).tolist()):
            raise UnsupportedModelError(f"{source}: categorical nodes without categories.")
    return from_arrays(feature, threshold, left, right, missing, value,
                       np.asarray(t.get("sum_hessian", np.full(left.size, np.nan)), float),
                       cat_sets)

