"""LightGBM boosters read into a :class:`~insdel.trees.ensemble.TreeEnsemble`.

Read from ``Booster.dump_model()`` (a ``Booster``, an ``LGBMRegressor``, a model ``.txt`` file
loaded by LightGBM, or the dump's dict).

- **rule**: a numeric split (``decision_type`` ``<=``) sends ``x <= threshold`` left, compared
  in float64 as LightGBM does, with the thresholds of the text model (17 digits; the dump's JSON
  prints fewer). LightGBM reads every ``|x| <= 1e-35`` (``kZeroThreshold``) as 0: a threshold
  inside that zero region is moved to its edge on the side 0 takes, so the region goes as 0.
- **missing values** by the node's ``missing_type``: ``NaN``: a NaN takes ``default_left``;
  ``None``: LightGBM reads a NaN as 0, so a NaN goes where 0 goes; ``Zero``
  (``zero_as_missing``): NaN and values within 1e-35 of 0 take ``default_left``: the node's
  missing interval ``[-1e-35, 1e-35]`` (:class:`~insdel.trees.ensemble.TreeEnsemble`).
- **categorical splits** (``decision_type`` ``==``, threshold ``"a||b||c"``): the listed
  categories go left, every other value, NaN and negative values included, right; the value is
  the category's integer code. LightGBM truncates a value to an integer there (2.5 is category
  2): rows, references and backgrounds whose categorical columns hold anything but NaN or an
  integer code -1..2^31 - 2 are refused, naming the argument, row and feature
  (:func:`insdel.trees.ensemble.check_category_codes`).
- **base**: 0: LightGBM folds the initial score (``boost_from_average``) into the first tree's
  leaves, and the shrinkage into every leaf; a random forest (``boosting="rf"``,
  ``average_output``) averages its trees, folded into the leaves.

Refused: multi-class (``num_tree_per_iteration > 1``), linear trees (``linear_tree``: a leaf
is a linear function of the row, not a constant), and objectives whose link is not the
identity (``binary``, ``poisson``, ``gamma``, ``tweedie``, ``cross_entropy``, ranking...).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ._build import Tree, UnsupportedModelError, assemble, require, wrong_library
from .ensemble import TreeEnsemble

__all__ = ["read_lightgbm", "IDENTITY_OBJECTIVES", "load_booster"]

#: objectives whose prediction is the trees' sum (identity link)
IDENTITY_OBJECTIVES = ("regression", "regression_l1", "huber", "fair", "quantile", "mape")

#: LightGBM's ``kZeroThreshold``: |x| <= this is zero for ``missing_type`` Zero
ZERO_THRESHOLD = float(np.float32(1e-35))
#: the codes a categorical split's column may hold (``extra["category_codes"]``): LightGBM
#: truncates the value to a C int and reads a negative one as missing (-1: pandas' code of a
#: missing category)
CATEGORY_CODES = (-1, 2**31 - 2)


def load_booster(path: str | Path):
    """A ``lightgbm.Booster`` from a model ``.txt`` file (``Booster.save_model``), with a clear
    error for a file that is not one."""
    lgb = require("lightgbm", "LightGBM")
    p = Path(path)
    try:
        head = p.read_bytes()[:4096].decode("utf-8", "replace")
    except OSError as exc:
        raise UnsupportedModelError(f"{p.name}: cannot read it ({exc}).") from None
    if not head.startswith("tree\n") and "\ntree\n" not in head[:64]:
        raise UnsupportedModelError(f"{p.name}: not a LightGBM model file (a LightGBM .txt "
                                    "model starts with a 'tree' line: Booster.save_model)"
                                    f"{wrong_library(p, 'lightgbm')}.")
    try:
        return lgb.Booster(model_file=str(p))
    except Exception as exc:  # lightgbm.basic.LightGBMError
        raise UnsupportedModelError(f"{p.name}: LightGBM cannot read it ({exc}).") from None


def _dump(model: Any) -> tuple[dict, list | None, str]:
    """(the dump, each tree's exact thresholds by split index or None, a name)."""
    if isinstance(model, dict):
        return model, None, "LightGBM dump"
    if isinstance(model, (str, os.PathLike)):
        booster, source = load_booster(model), f"LightGBM {Path(model).name}"
    elif hasattr(model, "booster_"):  # the scikit-learn wrapper (fitted)
        try:
            booster = model.booster_
        except Exception:  # sklearn's NotFittedError / LightGBMError
            raise UnsupportedModelError(f"LightGBM {type(model).__name__} is not fitted.") \
                from None
        source = f"LightGBM {type(model).__name__}"
    elif type(model).__name__ == "Booster" and hasattr(model, "dump_model"):
        booster, source = model, "LightGBM Booster"
    else:
        raise UnsupportedModelError(f"a {type(model).__name__} is not a LightGBM Booster.")
    return booster.dump_model(), _thresholds(booster.model_to_string()), source


def _thresholds(text: str) -> list[np.ndarray]:
    """Each tree's ``threshold=`` line of the text model, by split index: printed with 17
    digits (the dump's JSON prints fewer, which need not give back the same double)."""
    out = []
    for block in text.split("\nTree=")[1:]:
        line = next((ln for ln in block.splitlines() if ln.startswith("threshold=")), None)
        out.append(np.array([float(v) for v in line[len("threshold="):].split()])
                   if line else np.zeros(0))
    return out


def read_lightgbm(model: Any) -> TreeEnsemble:
    """Read a LightGBM regression booster (``Booster``, ``LGBMRegressor``, a model ``.txt``
    file, or ``Booster.dump_model()``'s dict).

    From a dict alone the thresholds are the dump's, printed with fewer digits than the double
    LightGBM compares with: a row within that rounding of a threshold may take the other way.
    Pass the booster (or its file) for exact thresholds.

    Raises
    ------
    UnsupportedModelError
        Multi-class, linear trees, a non-identity objective (named), or a classifier wrapper.
    """
    if type(model).__name__ in ("LGBMClassifier", "LGBMRanker"):
        raise UnsupportedModelError(
            f"LightGBM {type(model).__name__}: insdel reads regression boosters; a classifier's or "
            "ranker's prediction is not the sum of its trees.")
    dump, exact, source = _dump(model)
    if "tree_info" not in dump:
        raise UnsupportedModelError(f"{source}: not a LightGBM dump (no tree_info).")
    objective = str(dump.get("objective", "?")).split()[0]
    per = int(dump.get("num_tree_per_iteration", 1))
    if per != 1 or int(dump.get("num_class", 1)) > 1:
        raise UnsupportedModelError(
            f"{source}: a multi-output booster ({per} trees per iteration, objective "
            f"{objective!r}); insdel reads single-output regression boosters.")
    if objective not in IDENTITY_OBJECTIVES:
        raise UnsupportedModelError(
            f"{source}: objective {objective!r} predicts a transform of the trees' sum (a "
            "non-identity link: logistic, exp or ranking scores); insdel reads the identity-link "
            f"regression objectives {', '.join(IDENTITY_OBJECTIVES)}.")
    info = dump["tree_info"]
    if any(t.get("is_linear") for t in info):
        raise UnsupportedModelError(f"{source}: linear trees (linear_tree=True): a leaf is a "
                                    "linear function of the row, not a constant.")
    scale = 1.0 / len(info) if dump.get("average_output") and info else 1.0
    n_features = int(dump["max_feature_idx"]) + 1
    if exact is not None and len(exact) != len(info):
        raise UnsupportedModelError(f"{source}: the text model has {len(exact)} trees, the dump "
                                    f"{len(info)}.")
    trees = [_tree(t["tree_structure"], scale, source, k, None if exact is None else exact[k])
             for k, t in enumerate(info)]
    return assemble(trees, base=0.0, rule="le", n_features=n_features,
                    feature_names=dump.get("feature_names"), source=source,
                    extra={"objective": objective, "category_codes": CATEGORY_CODES})


def _tree(root: dict, scale: float, source: str, index: int, exact) -> Tree:
    t = Tree()
    stack = [(root, None, None)]  # (node, parent, is left child)
    while stack:
        node, parent, is_left = stack.pop()
        if "leaf_value" in node:
            if node.get("leaf_coeff"):
                raise UnsupportedModelError(f"{source}: linear trees (linear_tree=True): a leaf "
                                            "is a linear function of the row, not a constant.")
            i = t.add(value=float(node["leaf_value"]) * scale,
                      cover=float(node.get("leaf_weight", np.nan)))
        else:
            i = _split(t, node, source, index, exact)
            stack.append((node["right_child"], i, False))
            stack.append((node["left_child"], i, True))
        if parent is not None:
            if is_left:
                t.left[parent] = i
            else:
                t.right[parent] = i
    return t


def _split(t: Tree, node: dict, source: str, index: int, exact) -> int:
    f = int(node["split_feature"])
    cover = float(node.get("internal_weight", np.nan))
    if node["decision_type"] == "==":
        cats = [float(c) for c in str(node["threshold"]).split("||")]
        return t.add(feature=f, missing_left=False, cover=cover, categories=cats)
    if node["decision_type"] != "<=":
        raise UnsupportedModelError(f"{source}: tree {index}: decision type "
                                    f"{node['decision_type']!r}.")
    thr = float(node["threshold"])
    if exact is not None:
        j = int(node["split_index"])
        if abs(exact[j] - thr) > 1e-12 * max(1.0, abs(thr)):
            raise UnsupportedModelError(f"{source}: tree {index}: the text model's threshold "
                                        f"{exact[j]!r} is not the dump's {thr!r}.")
        thr = float(exact[j])
    kind = node.get("missing_type", "None")
    default = bool(node.get("default_left", False))
    zero_left = 0.0 <= thr  # where 0 goes, and with it every |x| <= 1e-35 (read as 0)
    if -ZERO_THRESHOLD <= thr < ZERO_THRESHOLD:  # the threshold splits the zero region
        thr = ZERO_THRESHOLD if zero_left else float(np.nextafter(-ZERO_THRESHOLD, -np.inf))
    if kind == "NaN":
        missing = default
    elif kind == "None":
        missing = zero_left  # LightGBM reads NaN as 0
    elif kind == "Zero":  # NaN is read as 0, and the zero region takes default_left
        return t.add(feature=f, threshold=thr, missing_left=default, cover=cover,
                     missing_interval=(-ZERO_THRESHOLD, ZERO_THRESHOLD))
    else:
        raise UnsupportedModelError(f"{source}: tree {index}: missing type {kind!r}.")
    return t.add(feature=f, threshold=thr, missing_left=missing, cover=cover)
