"""The attribution methods' ``engine=`` (the game's: ``auto``, ``tree``, ``black_box``) and
``backend=`` (insdel's implementation or captum's): on a tree ensemble the methods that read the
game's values read the trees' closed forms, with the same numbers as the model's rows; the
others refuse ``engine="tree"``; the implementation's names are refused as engines."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor

import insdel
from insdel import removal as RM

TREE = "tree (scikit-learn, 25 trees, depth 3)"


def _gbr(n: int, n_trees: int = 25, depth: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    Xt = rng.normal(size=(300, n))
    y = Xt[:, 0] * Xt[:, 1] + np.sin(Xt[:, 2]) + Xt[:, 3] + 0.3 * Xt[:, 4:].sum(axis=1)
    model = GradientBoostingRegressor(n_estimators=n_trees, max_depth=depth,
                                      random_state=seed).fit(Xt, y)
    return model, Xt


@pytest.fixture(scope="module")
def gbr():
    model, Xt = _gbr(8)
    rng = np.random.default_rng(1)
    X, R = rng.normal(size=(5, 8)), rng.normal(size=(5, 8))
    R[1, :5] = X[1, :5]  # |D| = 3: the exact road of kernel_shap
    return model, Xt, X, R


CASES = [("kernel_shap", {"n_samples": 120, "seed": 3, "exact": "never"}),
         ("kernel_shap", {"n_samples": 64, "seed": 3}),  # pair 1 on the exact road
         ("exact_shapley", {}),
         ("lime", {"n_samples": 150, "seed": 2}),
         ("occlusion", {})]


@pytest.mark.parametrize(("method", "opts"), CASES)
def test_auto_reads_the_trees_and_equals_the_model_rows(gbr, method, opts):
    """``auto`` on a scikit-learn ensemble reads the tree game (no model row: the same sampled
    coalitions, whose values come from the trees) and equals ``black_box`` to 1e-9; ``info``
    names the engine that ran."""
    model, _, X, R = gbr
    A, info = insdel.attribute(model, X, R, method, return_info=True, **opts)
    B, info_b = insdel.attribute(model, X, R, method, engine="black_box", return_info=True,
                                 **opts)
    np.testing.assert_allclose(A, B, rtol=0, atol=1e-9)
    assert info["engine"] == TREE and info_b["engine"] == "black_box"
    assert info["model_evaluations"] == 0 and info_b["model_evaluations"] > 0
    np.testing.assert_allclose(info["completeness_gap"], info_b["completeness_gap"], atol=1e-9)
    T, info_t = insdel.attribute(model, X, R, method, engine="tree", return_info=True, **opts)
    np.testing.assert_array_equal(T, A)


@pytest.mark.parametrize(("method", "opts"), [c for c in CASES if c[0] != "kernel_shap"
                                              or c[1]["n_samples"] == 120])
def test_the_marginal_tree_game_equals_the_model_rows(gbr, method, opts):
    """Under ``marginal`` with references shared by every target the methods read the marginal
    tree game: the values of the black-box engine (the mean over the K references) to 1e-9."""
    model, Xt, X, _ = gbr
    rem = RM.Marginal(Xt[:15], how="all")
    A, info = insdel.attribute(model, X, None, method, removal=rem, return_info=True, **opts)
    B = insdel.attribute(model, X, None, method, removal=rem, engine="black_box", **opts)
    np.testing.assert_allclose(A, B, rtol=0, atol=1e-9)
    assert info["engine"] == TREE


@pytest.mark.parametrize("method", ["kernel_shap", "exact_shapley", "lime", "random"])
def test_chunks_build_the_game_with_the_methods_engine(gbr, method):
    """``pairs_per_chunk`` builds the game once with the method's engine: the values of an
    unchunked call (``random`` reads no value: its game is the model's rows)."""
    model, _, X, R = gbr
    opts = {"n_samples": 100} if method in ("kernel_shap", "lime") else {}
    A, info = insdel.attribute(model, X, R, method, pairs_per_chunk=2, return_info=True, **opts)
    B = insdel.attribute(model, X, R, method, pairs_per_chunk=2, engine="black_box", **opts)
    np.testing.assert_allclose(A, B, rtol=0, atol=1e-9)
    assert info["engine"] == ("black_box" if method == "random" else TREE)


def test_exact_shapley_on_the_tree_engine_at_n_40():
    """``exact_shapley`` on a tree ensemble is exact at any |D| (the trees' closed form): at
    n = |D| = 40 it equals ``tree_shap`` and shap's interventional TreeExplainer (1e-6
    relative) and adds up to f(x) - f(r); the black-box engine refuses 2^40 coalitions."""
    shap = pytest.importorskip("shap")
    model, _ = _gbr(40, n_trees=30, depth=4)
    rng = np.random.default_rng(2)
    X, R = rng.normal(size=(3, 40)), rng.normal(size=(3, 40))
    A, info = insdel.attribute(model, X, R, "exact_shapley", return_info=True)
    assert info["engine"].startswith("tree (") and list(info["d"]) == [40, 40, 40]
    np.testing.assert_allclose(A, insdel.attribute(model, X, R, "tree_shap"), atol=1e-12)
    ref = np.stack([shap.TreeExplainer(model, R[b:b + 1], feature_perturbation="interventional")
                    .shap_values(X[b:b + 1])[0] for b in range(3)])
    np.testing.assert_allclose(A, ref, rtol=1e-6, atol=1e-6 * np.abs(ref).max())
    np.testing.assert_allclose(A.sum(axis=1), model.predict(X) - model.predict(R), atol=1e-12)
    with pytest.raises(ValueError, match="max_d"):
        insdel.attribute(model, X, R, "exact_shapley", engine="black_box")


@pytest.mark.parametrize("name", ["captum", "insdel"])
@pytest.mark.parametrize("method", ["kernel_shap", "lime", "exact_shapley"])
def test_an_implementation_name_as_engine_names_backend(gbr, method, name):
    model, _, X, R = gbr
    with pytest.raises(ValueError, match=rf"{method}: engine='{name}'.*backend='{name}'"):
        insdel.attribute(model, X, R, method, engine=name)
    with pytest.raises(ValueError, match=rf"engine='{name}'.*backend="):
        insdel.attribution.get(method)(model).attribute(X, R, engine=name)


def test_backend_is_validated(gbr):
    model, _, X, R = gbr
    for method in ("kernel_shap", "lime"):
        with pytest.raises(ValueError, match=rf"{method}: backend must be one of"):
            insdel.attribute(model, X, R, method, backend="numpy")
    with pytest.raises(ValueError, match="engine must be one of"):
        insdel.attribute(model, X, R, "kernel_shap", engine="trees")


def test_captum_backend_reads_model_rows(gbr):
    """captum's implementation evaluates model rows: ``auto`` runs it on them (the run's record
    says so) and ``tree`` is an error naming the method and the backend."""
    model, _, X, R = gbr
    _, info = insdel.attribute(model, X[:1], R[:1], "kernel_shap", backend="captum",
                               n_samples=40, return_info=True)
    assert info["engine"] == "black_box" and info["backend"] == "captum"
    with pytest.raises(ValueError, match=r"kernel_shap: engine='tree'.*backend='captum'"):
        insdel.attribute(model, X, R, "kernel_shap", backend="captum", engine="tree")


def test_tree_is_refused_where_there_is_no_tree_game(gbr):
    """``engine="tree"``: an error naming the method and the engine for a method that reads no
    coalition value, a model that is not a tree ensemble, an external method and a removal
    without a tree game; ``tree_shap`` refuses ``black_box``."""
    model, Xt, X, R = gbr
    with pytest.raises(ValueError, match=r"random: engine='tree', but the method cannot use"):
        insdel.attribute(model, X, R, "random", engine="tree")
    with pytest.raises(ValueError, match=r"cohort_shapley: engine='tree'"):
        insdel.attribute(None, X, None, "cohort_shapley", data=Xt, outcome=model.predict(Xt),
                         engine="tree")
    with pytest.raises(ValueError, match=r"kernel_shap: engine='tree': .*not a tree ensemble"):
        insdel.attribute(lambda Z: Z.sum(axis=1), X, R, "kernel_shap", engine="tree")
    with pytest.raises(ValueError, match=r"engine='tree', but an external method"):
        insdel.attribute(model, X, R, lambda X_, R_: X_ - R_, engine="tree")
    with pytest.raises(ValueError, match=r"exact_shapley: engine='tree'.*conditional_gaussian"):
        insdel.attribute(model, X, None, "exact_shapley", engine="tree",
                         removal=RM.ConditionalGaussian(Xt, n_draws=2))
    with pytest.raises(ValueError, match=r"tree_shap: engine='black_box'"):
        insdel.attribute(model, X, R, "tree_shap", engine="black_box")


def test_auto_on_other_models_and_removals_is_the_model_rows(gbr):
    """``auto`` on a model that is not a tree ensemble, or under a removal without a tree game,
    reads model rows and says so."""
    model, Xt, X, R = gbr
    _, info = insdel.attribute(lambda Z: Z.sum(axis=1), X, R, "kernel_shap", n_samples=64,
                               return_info=True)
    assert info["engine"] == "black_box"
    rem = RM.ConditionalGaussian(Xt, n_draws=2)
    A, info = insdel.attribute(model, X, None, "kernel_shap", removal=rem, n_samples=64,
                               return_info=True)
    assert info["engine"] == "black_box" and info["model_evaluations"] > 0
    np.testing.assert_array_equal(A, insdel.attribute(model, X, None, "kernel_shap", removal=rem,
                                                      n_samples=64, engine="black_box"))


def test_every_method_takes_engine():
    """``engine`` is an option of every method (``options_of``), default ``auto``."""
    for name in insdel.attribution.available():
        assert insdel.attribution.options_of(name)["engine"] == "auto", name
    for name in ("kernel_shap", "lime"):
        assert insdel.attribution.options_of(name)["backend"] == "insdel"
