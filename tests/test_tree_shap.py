"""The ``tree_shap`` attribution method: exact Shapley values of a tree ensemble against
``shap.TreeExplainer`` (interventional with the pair's reference r[None] and with a background;
tree_path_dependent) to 1e-6 relative, the same numbers as ``exact_shapley``, and a clear
error on a model that is not a tree ensemble."""

from __future__ import annotations

import numpy as np
import pytest

from insdel import attribute
from insdel.attribution import supported


def _fit(kind: str):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 10))
    y = X[:, 0] * X[:, 1] + np.sin(X[:, 2]) + X[:, 3] * (X[:, 4] > 0)
    if kind == "xgboost":
        import xgboost

        model = xgboost.XGBRegressor(n_estimators=25, max_depth=4, n_jobs=1)
    else:
        from sklearn.ensemble import GradientBoostingRegressor

        model = GradientBoostingRegressor(n_estimators=25, max_depth=3, random_state=0)
    return model.fit(X, y), X


def _rel(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


@pytest.mark.parametrize("kind", ["xgboost", "sklearn"])
def test_tree_shap_equals_shap_tree_explainer(kind):
    import shap

    model, X = _fit(kind)
    Xt, R = X[:4], X[4:8]
    A, info = attribute(model, Xt, R, "tree_shap", return_info=True)
    assert info["game"] == "baseline" and info["engine"].startswith("tree (")
    assert info["model_evaluations"] == 0 and np.abs(info["completeness_gap"]).max() < 1e-9
    ref = np.array([shap.TreeExplainer(model, R[b][None], feature_perturbation="interventional")
                    .shap_values(Xt[b:b + 1])[0] for b in range(len(Xt))])
    assert _rel(A, ref) < 1e-6
    if kind == "sklearn":  # the value route's exact Shapley values, to 1e-9
        np.testing.assert_allclose(A, attribute(model, Xt, R, "exact_shapley"), atol=1e-9)
    bg = X[20:60]
    A2, info2 = attribute(model, Xt, None, "tree_shap", background=bg, return_info=True)
    assert info2["game"] == "marginal"
    ref2 = shap.TreeExplainer(model, bg, feature_perturbation="interventional").shap_values(Xt)
    assert _rel(A2, ref2) < 1e-6
    A3, info3 = attribute(model, Xt, None, "tree_shap", path_dependent=True, return_info=True)
    assert info3["game"] == "path_dependent"
    ref3 = shap.TreeExplainer(model, feature_perturbation="tree_path_dependent").shap_values(Xt)
    assert _rel(A3, ref3) < 1e-6
    np.testing.assert_allclose(A3, attribute(model, Xt, None, "tree_shap",
                                             removal="path_dependent"), atol=1e-12)


def test_tree_shap_is_listed_for_trees_only_and_refuses_other_models():
    from sklearn.linear_model import LinearRegression

    model, X = _fit("sklearn")
    assert "tree_shap" in supported(model)
    lin = LinearRegression().fit(X, X[:, 0])
    assert "tree_shap" not in supported(lin)
    with pytest.raises(TypeError, match=r"\['tree_shap'\] need a tree ensemble.*LinearRegression"):
        attribute(lin, X[:2], X[2:4], "tree_shap")
    with pytest.raises(ValueError, match="one of background=, path_dependent=True"):
        attribute(model, X[:2], None, "tree_shap", background=X[5:9], path_dependent=True)
