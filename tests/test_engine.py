"""The engine a game is built with (``insdel.game.as_game(engine=)``): ``auto`` takes the exact
tree game for every library's ensemble and gives the black-box route's numbers (to 1e-9 where
the library predicts in float64, within its float32 rounding otherwise), ``black_box`` forces
the value route, ``tree`` refuses what has no tree game with both names in the message."""

from __future__ import annotations

import numpy as np
import pytest

from insdel import curves, evaluate, trace
from insdel.decomposition import batch_decomposition, shapley_values
from insdel.game import RemovalGame, as_game, engine_text, model_engine
from insdel.metrics.base import MetricContext
from insdel.removal import Marginal, TrainingMean

N_FEATURES = 6


def _data(seed: int = 0, n: int = N_FEATURES, rows: int = 300):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, n))
    y = X[:, 0] * X[:, 1] + np.sin(X[:, 2]) + 0.5 * X[:, 3] - X[:, 4] * (X[:, 5] > 0)
    return X, y


def _models():
    """(name, fitted model, tolerance relative to the values' scale)."""
    from sklearn.ensemble import (
        GradientBoostingRegressor,
        HistGradientBoostingRegressor,
        RandomForestRegressor,
    )

    X, y = _data()
    out = [("sklearn-gb", GradientBoostingRegressor(n_estimators=15, max_depth=3,
                                                   random_state=0).fit(X, y), 1e-9),
           ("sklearn-rf", RandomForestRegressor(n_estimators=5, max_depth=4,
                                                random_state=0).fit(X, y), 1e-9),
           ("sklearn-hgb", HistGradientBoostingRegressor(max_iter=10, max_depth=3,
                                                         random_state=0).fit(X, y), 1e-9)]
    import catboost
    import lightgbm
    import xgboost

    # float32 bound: each booster sums its trees in float32 (XGBoost, LightGBM's thresholds,
    # CatBoost's borders): a relative error of a few 2^-24 per tree over the trees summed
    out.append(("xgboost", xgboost.XGBRegressor(n_estimators=15, max_depth=3,
                                                n_jobs=1).fit(X, y), 1e-5))
    out.append(("lightgbm", lightgbm.LGBMRegressor(n_estimators=15, num_leaves=7, verbose=-1,
                                                   n_jobs=1).fit(X, y), 1e-5))
    out.append(("catboost", catboost.CatBoostRegressor(iterations=15, depth=3, verbose=False,
                                                       thread_count=1, allow_writing_files=False,
                                                       random_seed=0).fit(X, y), 1e-5))
    return out


MODELS = _models()


@pytest.mark.parametrize("name,model,tol", MODELS, ids=[m[0] for m in MODELS])
def test_auto_picks_the_tree_game_and_equals_the_black_box(name, model, tol):
    X, _ = _data(1, rows=8)
    Xt, R = X[:4], X[4:]
    auto = as_game(model, Xt, R)
    box = as_game(model, Xt, R, engine="black_box")
    assert auto.engine == "tree" and isinstance(box, RemovalGame) and box.engine == "black_box"
    assert engine_text(auto).startswith("tree (") and engine_text(box) == "black_box"
    scale = 1.0 + np.abs(box.v_all()).max()
    # the curves of the attribution orderings, the exact Shapley values, the decomposition
    A = np.random.default_rng(2).normal(size=Xt.shape)
    for mode in ("insertion", "deletion"):
        ca = curves(model, Xt, R, A, mode=mode)
        cb = curves(model, Xt, R, A, mode=mode, engine="black_box")
        np.testing.assert_allclose(ca, cb, rtol=0, atol=tol * scale)
    orders = np.argsort(A, axis=1)[:, None, :]
    ta = trace(model, Xt, R, orders)
    tb = trace(model, Xt, R, orders, engine="black_box")
    for mode in ta.curves:
        np.testing.assert_allclose(ta.curves[mode], tb.curves[mode], rtol=0, atol=tol * scale)
    np.testing.assert_allclose(shapley_values(model, Xt, R),
                               shapley_values(model, Xt, R, engine="black_box"),
                               rtol=0, atol=tol * scale)
    da = batch_decomposition(model, Xt, R)
    db = batch_decomposition(model, Xt, R, engine="black_box")
    np.testing.assert_allclose(da.expected_abc(), db.expected_abc(), rtol=0, atol=tol * scale)


def test_evaluate_and_metrics_take_the_engine():
    name, model, tol = MODELS[0]
    X, _ = _data(3, rows=8)
    Xt, R = X[:4], X[4:]
    A = {"a": np.random.default_rng(0).normal(size=Xt.shape)}
    ea = evaluate(model, Xt, R, A, add_random=False)
    eb = evaluate(model, Xt, R, A, add_random=False, engine="black_box")
    np.testing.assert_allclose(ea.abc.select_dtypes("number").to_numpy(float),
                               eb.abc.select_dtypes("number").to_numpy(float),
                               atol=1e-9)
    for mode in ea.curves:
        np.testing.assert_allclose(np.asarray(ea.curves[mode]),
                                   np.asarray(eb.curves[mode]), atol=1e-9)
    ctx = MetricContext(model, Xt, R)
    assert ctx.game.engine == "tree" and ctx.model is not None  # perturbing metrics predict
    assert MetricContext(model, Xt, R, engine="black_box").game.engine == "black_box"


def test_marginal_and_path_dependent_routes():
    name, model, tol = MODELS[0]
    X, _ = _data(4, rows=12)
    Xt, bg = X[:3], X[3:10]
    shared = as_game(model, Xt, removal=Marginal(bg, how="all"))
    box = as_game(model, Xt, removal=Marginal(bg, how="all"), engine="black_box")
    assert shared.engine == "tree" and box.engine == "black_box"
    np.testing.assert_allclose(shared.shapley(), shapley_values(box, None, None), atol=1e-9)
    # references drawn per target: the tree game over (target, reference) pairs, both engines
    drawn = Marginal(bg, n_references=3, how="random")
    for engine in ("auto", "tree"):
        game = as_game(model, Xt, removal=drawn, engine=engine)
        assert game.engine == "tree" and "(target, reference) pairs" in engine_text(game)
    np.testing.assert_allclose(game.shapley(),
                               shapley_values(model, Xt, None, removal=drawn, engine="black_box"),
                               atol=1e-9)
    with pytest.raises(ValueError, match="engine='tree'.*marginal without background"):
        as_game(model, Xt, Xt, removal="marginal", engine="tree")
    assert as_game(model, Xt, removal="path_dependent").engine == "tree"
    with pytest.raises(ValueError, match="black_box.*path_dependent"):
        as_game(model, Xt, removal="path_dependent", engine="black_box")


def test_errors_name_the_model_and_the_removal():
    from sklearn.linear_model import LinearRegression

    X, y = _data(5)
    lin = LinearRegression().fit(X, y)
    assert as_game(lin, X[:2], X[2:4]).engine == "black_box"
    with pytest.raises(ValueError, match=r"engine='tree'.*baseline.*sklearn\.LinearRegression"
                                         r".*not a tree ensemble"):
        as_game(lin, X[:2], X[2:4], engine="tree")
    gb = MODELS[0][1]
    with pytest.raises(ValueError, match="engine='tree'.*training_mean.*has no tree game"):
        as_game(gb, X[:2], None, removal=TrainingMean(X), engine="tree")
    with pytest.raises(ValueError, match="engine"):
        as_game(gb, X[:2], X[2:4], engine="trees")
    with pytest.raises(TypeError, match="path_dependent.*LinearRegression"):
        as_game(lin, X[:2], removal="path_dependent")
    game = as_game(gb, X[:2], X[2:4])
    with pytest.raises(ValueError, match="built with the 'tree' engine"):
        as_game(game, engine="black_box")
    # what a run prints before it builds a game
    assert model_engine(gb) == "tree (scikit-learn, 15 trees, depth 3)"
    assert model_engine(gb, "black_box") == model_engine(lin) == "black_box"
    with pytest.raises(ValueError, match="engine='tree'.*LinearRegression is not a tree"):
        model_engine(lin, "tree")


_RUN_TOML = """
name = "trees_cli"
[data]
recipe = "housing_sim"
[model]
preset = "paper_bangalore"
[targets]
n = 6
[[policies]]
spec = "bangalore_counterfactual"
label = "counterfactual"
[methods]
names = ["lime"]
[methods.options.lime]
n_samples = 50
[evaluation]
n_random = 2
[decomposition]
n_pairs = 0
"""


def test_run_takes_a_model_file_and_names_the_engine(tmp_path, capsys):
    """``insdel run CONFIG --model FILE`` with an XGBoost file on the housing simulator: the
    run takes the tree engine, prints it, and the manifest records it."""
    import json

    import xgboost

    from insdel import datasets
    from insdel.cli import main

    ds = datasets.load("housing_sim")
    model = xgboost.XGBRegressor(n_estimators=10, max_depth=3, n_jobs=1)
    model.fit(np.asarray(ds.X_train), np.asarray(ds.y_train))
    path = tmp_path / "housing.json"
    model.save_model(path)
    cfg = tmp_path / "run.toml"
    cfg.write_text(_RUN_TOML)
    assert main(["run", str(cfg), "--model", str(path), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "- engine: tree (xgboost, 10 trees, depth 3)" in printed
    man = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert man["model"]["engine"] == "tree (xgboost, 10 trees, depth 3)"
    assert man["model"]["format"] == "xgboost"
    # black_box forced: the same file on rows
    assert main(["run", str(cfg), "--model", str(path), "--engine", "black_box", "--out",
                 str(tmp_path / "box")]) == 0
    assert json.loads((tmp_path / "box" / "manifest.json").read_text()
                      )["model"]["engine"] == "black_box"


def test_config_engine_is_checked(tmp_path):
    from insdel import config

    cfg = tmp_path / "bad.toml"
    cfg.write_text(_RUN_TOML.replace('preset = "paper_bangalore"',
                                     'preset = "paper_bangalore"\nengine = "trees"'))
    with pytest.raises(config.ConfigError, match="model.engine.*'trees'"):
        config.load(cfg)


def test_an_adapted_estimator_takes_the_tree_engine():
    """``as_model(estimator)`` keeps the estimator: the tree engine reads it."""
    import insdel

    name, model, tol = MODELS[0]
    X, _ = _data(6, rows=6)
    adapted = insdel.as_model(model)
    assert "trees" in adapted.capabilities
    game = as_game(adapted, X[:3], X[3:])
    assert game.engine == "tree" and model_engine(adapted).startswith("tree (scikit-learn")
    np.testing.assert_allclose(game.v_all(), model.predict(X[:3]), atol=1e-9)
