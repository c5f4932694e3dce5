"""Tree ensembles read exactly: one representation (:class:`TreeEnsemble`) written by each
library's parser and read by the tree game.

:func:`read` is the front door: it recognises the library by the model's type and reads the
ensemble (``read_sklearn``, ``read_xgboost``, ``read_lightgbm``, ``read_catboost``, each
imported when needed: importing insdel never imports XGBoost, LightGBM or CatBoost).
:func:`recognise` says, without importing anything, whether a model is of a type :func:`read`
reads; :func:`check_feature_names` checks the names an ensemble recorded against the data's.
:class:`ModelWithTrees` holds a model with its trees read once, for a caller that builds many
games of one model (a run's stages and chunks).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ._build import UnsupportedModelError
from .ensemble import RULES, TreeEnsemble, check_ensemble, goes_left

__all__ = ["RULES", "TreeEnsemble", "check_ensemble", "goes_left", "read", "recognise",
           "check_feature_names", "UnsupportedModelError", "LIBRARIES", "ModelWithTrees"]

#: the types :func:`read` reads, by the top-level module of the type
LIBRARIES = {
    "sklearn": ("DecisionTreeRegressor", "ExtraTreeRegressor", "RandomForestRegressor",
                "ExtraTreesRegressor", "GradientBoostingRegressor",
                "HistGradientBoostingRegressor"),
    "xgboost": ("Booster", "XGBRegressor", "XGBRFRegressor"),
    "lightgbm": ("Booster", "LGBMRegressor"),
    "catboost": ("CatBoost", "CatBoostRegressor"),
}


def _library(model: Any) -> str | None:
    """The library of ``model``'s type (by its module's name; nothing imported)."""
    t = type(model)
    top = (t.__module__ or "").split(".")[0]
    if top == "insdel" and hasattr(model, "tree_library"):  # a model file's booster wrapper
        return str(model.tree_library)
    return top if top in LIBRARIES else None


def recognise(model: Any) -> bool:
    """Whether ``model`` is of a type :func:`read` reads: a scikit-learn regression tree,
    forest or boosting, an XGBoost, LightGBM or CatBoost booster or regressor, or a booster
    loaded from a model file (:func:`insdel.model_files.load_any`). Cheap (the type's module
    and name; nothing is imported). :func:`read` may still refuse the instance (a
    non-identity objective, a multi-output booster), with the reason."""
    lib = _library(model)
    if lib is None:
        return False
    if type(model).__module__.startswith("insdel"):
        return True
    return type(model).__name__ in LIBRARIES[lib]


def read(model: Any) -> TreeEnsemble:
    """The model's trees as a :class:`TreeEnsemble` whose ``predict`` is the model's own.

    Parameters
    ----------
    model : a fitted tree ensemble
        scikit-learn (``DecisionTreeRegressor``, ``ExtraTreeRegressor``,
        ``RandomForestRegressor``, ``ExtraTreesRegressor``, ``GradientBoostingRegressor``,
        ``HistGradientBoostingRegressor``), XGBoost (``Booster``, ``XGBRegressor``,
        ``XGBRFRegressor``), LightGBM (``Booster``, ``LGBMRegressor``), CatBoost
        (``CatBoostRegressor``, ``CatBoost``), or a booster loaded by
        :func:`insdel.model_files.load_any`. docs/trees.md says what each library's split rule,
        missing-value direction and base value are.

    Raises
    ------
    UnsupportedModelError
        (a ``ValueError``) a model of another type (a classifier, an ``IsolationForest``, a
        neural network), a multi-output model, or an objective whose prediction is not the
        trees' sum; the message names the model and the reason.
    ImportError
        The library of the model is not installed (``pip install ".[trees]"``).
    """
    if isinstance(model, ModelWithTrees):
        return model.trees
    lib = _library(model)
    if lib is None or not recognise(model):
        known = "; ".join(f"{k}: {', '.join(v)}" for k, v in LIBRARIES.items())
        raise UnsupportedModelError(
            f"insdel.trees.read: a {type(model).__module__}.{type(model).__name__} is not a tree "
            f"ensemble insdel reads ({known}).")
    inner = getattr(model, "booster", model) if type(model).__module__.startswith("insdel") \
        else model
    if lib == "sklearn":
        from .read_sklearn import read_sklearn

        return read_sklearn(inner)
    if lib == "xgboost":
        from .read_xgboost import read_xgboost

        return read_xgboost(inner)
    if lib == "lightgbm":
        from .read_lightgbm import read_lightgbm

        return read_lightgbm(inner)
    from .read_catboost import read_catboost

    return read_catboost(inner)


class ModelWithTrees:
    """A fitted tree model and its trees, read once (:func:`read`).

    It predicts as the model (:func:`insdel.as_model` calls the model's own ``predict``), and
    the tree engine (:func:`insdel.game.as_game`, ``tree_shap``, ``path_dependent``) takes its
    :attr:`trees` instead of reading the model again: a caller that builds many games of one
    model (a run's stages and attribution chunks) pays for one read. It is a snapshot of the
    model as it was when read: build it after the model is fitted, and build another one after
    refitting the model (this one would keep the old trees).

    Parameters
    ----------
    model : a fitted tree ensemble
        Anything :func:`read` reads.
    trees : TreeEnsemble, optional
        ``read(model)``, when the caller read it already; default: read here.

    Attributes
    ----------
    model : object
        The model.
    trees : TreeEnsemble
        Its trees.
    tree_library : str
        The model's library (:data:`LIBRARIES`' keys).
    """

    def __init__(self, model: Any, trees: TreeEnsemble | None = None):
        if isinstance(model, ModelWithTrees):
            raise TypeError("ModelWithTrees: the model holds its trees already; give the model "
                            "it wraps (.model).")
        if trees is not None and not isinstance(trees, TreeEnsemble):
            raise TypeError(f"ModelWithTrees: trees must be the TreeEnsemble that "
                            f"insdel.trees.read(model) returns; got {type(trees).__name__}.")
        self.trees = read(model) if trees is None else trees
        self.model = model
        self.tree_library = _library(model)

    def predict(self, X):
        """The model's own prediction."""
        return self.model.predict(X)

    def __repr__(self) -> str:
        return f"ModelWithTrees({self.model!r}, {self.trees.n_trees} trees)"


#: the names a library writes when the data had none (LightGBM's Column_0, XGBoost's f0,
#: CatBoost's and scikit-learn's column numbers): no names to check
_DEFAULT_NAME = re.compile(r"(?:Column_|f)?(\d+)")


def _unnamed(names: Sequence[str]) -> bool:
    for j, s in enumerate(names):
        m = _DEFAULT_NAME.fullmatch(str(s))
        if m is None or int(m.group(1)) != j:
            return False
    return True


def check_feature_names(ens: TreeEnsemble, names: Sequence[str] | None) -> None:
    """Check that the data's columns are the ones the ensemble was trained on.

    The width must match; when both the ensemble and the data have names (a library's default
    names, ``Column_0`` / ``f0`` / ``0``, count as none), they must be the same names in the
    same order.

    Raises
    ------
    ValueError
        The widths differ, names are missing or extra, or the same names come in another order;
        the message names the columns.
    """
    if names is None:
        return
    names = [str(c) for c in names]
    if len(names) != ens.n_features:
        raise ValueError(f"the data have {len(names)} features but the model ({ens.source}) "
                         f"takes {ens.n_features}.")
    have = ens.feature_names
    if have is None or _unnamed(have) or _unnamed(names) or list(have) == names:
        return
    lack = [c for c in have if c not in names]
    extra = [c for c in names if c not in have]
    if lack or extra:
        raise ValueError(f"the data's feature names do not match the model's ({ens.source}): "
                         + (f"the data lack {lack[:5]}" if lack else "")
                         + ("; " if lack and extra else "")
                         + (f"the data have {extra[:5]} the model was not trained on"
                            if extra else "") + ".")
    moved = [c for j, c in enumerate(names) if have[j] != c]
    raise ValueError(f"the data's features come in another order than the model's "
                     f"({ens.source}): {moved[:5]} are at other positions; reorder the columns "
                     f"as the model's: {list(have)[:8]}{'...' if len(have) > 8 else ''}.")
