"""Boosters loaded from model files, as models the black-box route takes.

A raw XGBoost or LightGBM ``Booster`` and a CatBoost model loaded from a file predict from the
library's own inputs (a ``DMatrix``, categorical columns as strings); these wrappers give them
the ``predict(X) -> (B,) float64`` of a numpy 2-D array that :func:`insdel.as_model` calls, the
prediction being the library's own (not :meth:`TreeEnsemble.predict`). Each names its library
(``tree_library``) and holds the booster (``booster``), so :func:`insdel.trees.read` reads its
trees.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["XGBoostModel", "LightGBMModel", "CatBoostModel"]


def _rows(X) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (rows x features); got shape {X.shape}.")
    return X


class _Wrapped:
    tree_library = ""

    def __init__(self, booster: Any, n_features: int, feature_names=None):
        self.booster = booster
        self.n_features_in_ = int(n_features)
        self.feature_names = None if feature_names is None else [str(c) for c in feature_names]

    def _check(self, X) -> np.ndarray:
        X = _rows(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features but the {self.tree_library} model "
                             f"takes {self.n_features_in_}.")
        return X

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.n_features_in_} features)"


class XGBoostModel(_Wrapped):
    """An ``xgboost.Booster``: rows go in a ``DMatrix`` (NaN missing), the prediction of all
    its trees comes back as float64."""

    tree_library = "xgboost"

    def __init__(self, booster: Any):
        super().__init__(booster, booster.num_features(), booster.feature_names)

    def predict(self, X) -> np.ndarray:
        import xgboost as xgb

        X = self._check(X)
        d = xgb.DMatrix(X, missing=np.nan, feature_names=self.booster.feature_names,
                        feature_types=self.booster.feature_types,
                        enable_categorical=self.booster.feature_types is not None)
        return np.asarray(self.booster.predict(d), dtype=np.float64).reshape(X.shape[0])


class LightGBMModel(_Wrapped):
    """A ``lightgbm.Booster``: ``Booster.predict`` of the rows (its best iteration, if any)."""

    tree_library = "lightgbm"

    def __init__(self, booster: Any):
        super().__init__(booster, booster.num_feature(), booster.feature_name())

    def predict(self, X) -> np.ndarray:
        X = self._check(X)
        return np.asarray(self.booster.predict(X), dtype=np.float64).reshape(X.shape[0])


class CatBoostModel(_Wrapped):
    """A CatBoost model: its categorical columns, integer codes in the rows, go to CatBoost as
    the codes' strings (``3.0`` -> ``"3"``; NaN -> ``"nan"``), as insdel's rows hold them."""

    tree_library = "catboost"

    def __init__(self, booster: Any):
        super().__init__(booster, len(booster.feature_names_), booster.feature_names_)
        self.cat_features = list(booster.get_cat_feature_indices())

    def predict(self, X) -> np.ndarray:
        X = self._check(X)
        if not self.cat_features:
            rows: Any = X
        else:
            import pandas as pd

            rows = pd.DataFrame(X, columns=self.feature_names)
            for j in self.cat_features:
                col = X[:, j]
                rows[self.feature_names[j]] = [
                    "nan" if np.isnan(v) else str(int(v)) if float(v).is_integer() else str(v)
                    for v in col]
        return np.asarray(self.booster.predict(rows), dtype=np.float64).reshape(X.shape[0])
