"""LightGBM boosters read into a :class:`~insdel.trees.ensemble.TreeEnsemble`.

Read from ``Booster.dump_model()`` (a ``Booster``, an ``LGBMRegressor``, a model ``.txt`` file
loaded by LightGBM, or the dump's dict).

- **rule**: a numeric split (``decision_type`` ``<=``) sends ``x <= threshold`` left, compared
  in float64 as LightGBM does.
- **missing values** by the node's ``missing_type``: ``NaN``: a NaN takes ``default_left``;
  ``None``: LightGBM reads a NaN as 0, so a NaN goes where 0 goes; ``Zero``
  (``zero_as_missing``): NaN and values within 1e-35 of 0 take ``default_left``, read exactly
  where 0 goes that way by the comparison too, refused (naming the node) where it does not,
  since :func:`~insdel.trees.ensemble.goes_left` has no zero-as-missing rule.
- **categorical splits** (``decision_type`` ``==``, threshold ``"a||b||c"``): the listed
  categories go left, every other value, NaN and negative values included, right; the value is
  the category's integer code.
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

from ._build import Tree, UnsupportedModelError, assemble, wrong_library
from .ensemble import TreeEnsemble

__all__ = ["read_lightgbm", "IDENTITY_OBJECTIVES", "load_booster"]

#: objectives whose prediction is the trees' sum (identity link)
IDENTITY_OBJECTIVES = ("regression", "regression_l1", "huber", "fair", "quantile", "mape")

#: LightGBM's ``kZeroThreshold``: |x| <= this is zero for ``missing_type`` Zero
ZERO_THRESHOLD = float(np.float32(1e-35))


def _require_lightgbm():
    try:
        import lightgbm
    except ImportError:
        raise ImportError('reading LightGBM models needs lightgbm: pip install ".[trees]" in '
                          "the insdel clone (or pip install lightgbm).") from None
    return lightgbm


def load_booster(path: str | Path):
    """A ``lightgbm.Booster`` from a model ``.txt`` file (``Booster.save_model``), with a clear
    error for a file that is not one."""
    lgb = _require_lightgbm()
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


def _dump(model: Any) -> tuple[dict, str]:
    if isinstance(model, dict):
        return model, "LightGBM dump"
    if isinstance(model, (str, os.PathLike)):
        return load_booster(model).dump_model(), f"LightGBM {Path(model).name}"
    name = type(model).__name__
    if hasattr(model, "booster_"):  # the scikit-learn wrapper (fitted)
        try:
            booster = model.booster_
        except Exception:  # sklearn's NotFittedError / LightGBMError
            raise UnsupportedModelError(f"LightGBM {name} is not fitted.") from None
        return booster.dump_model(), f"LightGBM {name}"
    if name == "Booster" and hasattr(model, "dump_model"):
        return model.dump_model(), "LightGBM Booster"
    raise UnsupportedModelError(f"a {name} is not a LightGBM Booster.")


def read_lightgbm(model: Any) -> TreeEnsemble:
    """Read a LightGBM regression booster (``Booster``, ``LGBMRegressor``, a model ``.txt``
    file, or ``Booster.dump_model()``'s dict).

    Raises
    ------
    UnsupportedModelError
        Multi-class, linear trees, a non-identity objective (named), a classifier wrapper, or a
        ``zero_as_missing`` node whose zero region the comparison sends the other way.
    """
    if type(model).__name__ in ("LGBMClassifier", "LGBMRanker"):
        raise UnsupportedModelError(
            f"LightGBM {type(model).__name__}: insdel reads regression boosters; a classifier's or "
            "ranker's prediction is not the sum of its trees.")
    dump, source = _dump(model)
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
    trees = [_tree(t["tree_structure"], scale, source, k) for k, t in enumerate(info)]
    return assemble(trees, base=0.0, rule="le", n_features=n_features,
                    feature_names=dump.get("feature_names"), source=source,
                    extra={"objective": objective})


def _tree(root: dict, scale: float, source: str, index: int) -> Tree:
    t = Tree()
    stack = [(root, None, None)]  # (node, parent, is left child)
    while stack:
        node, parent, is_left = stack.pop()
        if "leaf_value" in node:
            i = t.add(value=float(node["leaf_value"]) * scale,
                      cover=float(node.get("leaf_weight", np.nan)))
        else:
            i = _split(t, node, source, index)
            stack.append((node["right_child"], i, False))
            stack.append((node["left_child"], i, True))
        if parent is not None:
            if is_left:
                t.left[parent] = i
            else:
                t.right[parent] = i
    return t


def _split(t: Tree, node: dict, source: str, index: int) -> int:
    f = int(node["split_feature"])
    cover = float(node.get("internal_weight", np.nan))
    if node["decision_type"] == "==":
        cats = [float(c) for c in str(node["threshold"]).split("||")]
        return t.add(feature=f, missing_left=False, cover=cover, categories=cats)
    if node["decision_type"] != "<=":
        raise UnsupportedModelError(f"{source}: tree {index}: decision type "
                                    f"{node['decision_type']!r}.")
    thr = float(node["threshold"])
    kind = node.get("missing_type", "None")
    default = bool(node.get("default_left", False))
    if kind == "NaN":
        missing = default
    elif kind == "None":
        missing = 0.0 <= thr  # LightGBM reads NaN as 0
    elif kind == "Zero":
        low, high = -ZERO_THRESHOLD <= thr, ZERO_THRESHOLD <= thr  # where +-1e-35 go
        if not (low == high == default):
            raise UnsupportedModelError(
                f"{source}: tree {index}, split {node.get('split_index')} on feature {f} treats "
                f"0 as missing (zero_as_missing) and sends it {'left' if default else 'right'} "
                f"while its threshold {thr!r} sends 0 the other way; insdel's trees have no "
                "zero-as-missing rule. Train without zero_as_missing (0 is then a value).")
        missing = default
    else:
        raise UnsupportedModelError(f"{source}: tree {index}: missing type {kind!r}.")
    return t.add(feature=f, threshold=thr, missing_left=missing, cover=cover)
