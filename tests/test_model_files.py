"""Models from files (``insdel.model_files.load_any``): torch.export programs (``.pt2``, the torch
format that needs no trust), TorchScript, and what each format offers attribution methods,
checked when the model is loaded, before any work.

load_any: a user's model file (TorchScript, state_dict + preset, insdel files, trusted pickles)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from _runs import small_csv

import insdel
from insdel import datasets, models
from insdel.cli import main as cli_main
from insdel.model_files import load_any

N = 3  # the small CSV's features: a, flag, b


def _net(n: int = N) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(n, 8), torch.nn.PReLU(),
                               torch.nn.Linear(8, 1)).eval()


def _save(net: torch.nn.Module, path: Path, fmt: str) -> Path:
    if fmt == "pt2":
        ep = torch.export.export(net, (torch.zeros(3, N),),
                                 dynamic_shapes=({0: torch.export.Dim("batch")},))
        torch.export.save(ep, path)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # torch 2.13 deprecates torch.jit
            torch.jit.save(torch.jit.script(net), path)
    return path


def _load(path: Path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return load_any(path, **kw)


def test_load_any_reads_a_torch_export_program_and_its_curves_equal_the_modules(tmp_path):
    net = _net()
    path = _save(net, tmp_path / "m.pt2", "pt2")
    model, info = load_any(path)  # no trust needed: no pickle in a .pt2 archive
    assert info["format"] == "torch_export" and not info["trusted"]
    assert info["gradients"] and info["capabilities"] == ["values", "gradients"]
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(7, N)), rng.normal(size=(7, N))
    np.testing.assert_array_equal(insdel.as_model(model)(X), insdel.as_model(net)(X))
    A = {m: insdel.attribute(model, X, R, m, n_steps=16) if m == "integrated_gradients"
         else insdel.attribute(model, X, R, m) for m in ("integrated_gradients", "vanilla_grad",
                                                          "input_x_gradient")}
    for m in A:  # gradients through the exported graph are the module's
        kw = {"n_steps": 16} if m == "integrated_gradients" else {}
        np.testing.assert_allclose(A[m], insdel.attribute(net, X, R, m, **kw), rtol=1e-6,
                                   atol=1e-7)
    a, b = insdel.evaluate(model, X, R, A, n_random=2), insdel.evaluate(net, X, R, A, n_random=2)
    for mode in a.modes:
        np.testing.assert_array_equal(a.curves[mode], b.curves[mode])
    with pytest.raises(ValueError, match="takes 3 inputs but the data have 5 features"):
        load_any(path, n_features=5)


@pytest.mark.parametrize("fmt", ["pt2", "torchscript"])
def test_deeplift_is_refused_when_the_model_is_loaded(tmp_path, fmt):
    model, info = _load(_save(_net(), tmp_path / f"m.{fmt}", fmt))
    assert "hooks" not in info["capabilities"] and info["gradients"]
    X = np.zeros((2, N))
    with pytest.raises(TypeError, match=r"\['deeplift'\] need an eager torch.nn.Module"):
        insdel.attribute(model, X, X + 1, "deeplift")


def _config(folder: Path, model: Path, methods: list[str]) -> Path:
    csv = small_csv(folder / "small.csv")
    path = folder / "run.toml"
    path.write_text(f"""
name = "from_file"
[data]
recipe = "table"
[data.options]
path = "{csv.as_posix()}"
target = "y"
scale = "none"
[model]
path = "{model.as_posix()}"
[targets]
n = 6
[[policies]]
spec = {{policy = "median"}}
[methods]
names = {json.dumps(methods)}
[methods.options.integrated_gradients]
n_steps = 8
[evaluation]
n_random = 1
[figures]
enabled = false
""")
    return path


@pytest.mark.parametrize("fmt", ["pt2", "torchscript"])
def test_a_run_refuses_deeplift_on_the_file_before_any_work_and_runs_ig(tmp_path, fmt, capsys):
    model = _save(_net(), tmp_path / f"m.{fmt}", fmt)
    out = tmp_path / "out"
    cfg = _config(tmp_path, model, ["integrated_gradients", "deeplift"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert cli_main(["run", str(cfg), "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err
    kind = "a torch.export program" if fmt == "pt2" else "a TorchScript module"
    assert "methods ['deeplift'] need an eager torch.nn.Module" in err and kind in err
    assert "Methods that work with it: cohort_shapley, exact_shapley, igcs, input_x_gradient, integrated_gradients" in err
    assert "(of yours: ['integrated_gradients'])" in err
    assert not (out / "checkpoints").exists()  # refused when the model was loaded
    cfg = _config(tmp_path, model, ["integrated_gradients"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert cli_main(["run", str(cfg), "--out", str(out), "--no-progress"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["model"]["format"] == ("torch_export" if fmt == "pt2" else "torchscript")
    assert manifest["model"]["capabilities"] == ["values", "gradients"]
    assert "deeplift" not in manifest["model"]["methods"]
    assert "integrated_gradients" in manifest["model"]["methods"]


def test_load_any_returns_the_model_and_its_record():
    doc = load_any.__doc__
    assert "(model, info) : tuple" in doc and "capabilities" in doc
    text = (Path(__file__).resolve().parents[1] / "docs" / "your_own_data.md").read_text()
    assert "returns `(model, info)`" in text and ".pt2" in text


# -- load_any: trust, preset and n_features checked ------------------------------------------------
def test_load_any_refuses_non_bool_trust(tmp_path):
    joblib = pytest.importorskip("joblib")
    from insdel.model_files import load_any

    path = tmp_path / "m.joblib"
    joblib.dump({"not": "a model"}, path)
    with pytest.raises(TypeError, match="trust must be True or False"):
        load_any(path, trust="no")  # a truthy string is not True


def test_load_any_refuses_a_preset_it_would_ignore(tmp_path):
    torch = pytest.importorskip("torch")
    from insdel.model_files import load_any

    path = tmp_path / "m.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(3, 1)), str(path))
    assert load_any(path)[1]["format"] == "torchscript"
    with pytest.raises(ValueError, match="preset='quick_cern'"):
        load_any(path, preset="quick_cern")


def test_load_any_state_dict_width_names_n_features(tmp_path):
    torch = pytest.importorskip("torch")
    from insdel.model_files import load_any

    net = models.MLP(3, models.get("quick_cern")["hidden"], 0.0)
    path = tmp_path / "sd.pt"
    torch.save(net.state_dict(), path)
    assert load_any(path, preset="quick_cern", n_features=3)[1]["format"] == "state_dict"
    with pytest.raises(ValueError, match="n_features = 5"):
        load_any(path, preset="quick_cern", n_features=5)


# -- insdel model files without dataset metadata ---------------------------------------------------
def test_insdel_model_file_without_dataset_metadata_warns_that_nothing_was_checked(tmp_path):
    torch = pytest.importorskip("torch")
    from insdel import models
    from insdel.model_files import load_any

    ds = datasets.load("housing_sim", n_samples=240, seed=1)
    net = models.MLP(ds.n_features, [4], 0.0)
    bare = models.save_model(net, tmp_path / "bare.pt")  # no dataset=: no features recorded
    with pytest.warns(UserWarning, match=r"bare\.pt.*without dataset metadata.*could not be "
                                         r"checked against the dataset") as rec:
        model, info = load_any(bare, dataset=ds)
    assert info["format"] == "insdel" and callable(model)
    assert len([w for w in rec if "bare.pt" in str(w.message)]) == 1
    with pytest.warns(UserWarning, match=r"bare\.pt.*without dataset metadata") as rec:
        models.load_model(bare, dataset=ds)  # the check lives in load_model itself
    assert rec[0].filename == __file__  # points at the caller of load_model
    X = np.asarray(ds.X_test[:5], dtype=np.float32)
    with torch.no_grad():
        np.testing.assert_array_equal(model(torch.from_numpy(X)).numpy(),
                                      net(torch.from_numpy(X)).numpy())
    full = models.save_model(net, tmp_path / "full.pt", dataset=ds)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # checked: nothing to warn about
        assert load_any(full, dataset=ds)[1]["format"] == "insdel"
        assert load_any(bare)[1]["format"] == "insdel"  # no dataset asked to be checked


# -- tree ensembles' model files (XGBoost, LightGBM, CatBoost; scikit-learn by joblib) ----------


def _booster_files(tmp_path: Path) -> tuple[np.ndarray, dict[str, tuple[Path, object]]]:
    import catboost as cb
    import lightgbm as lgb
    import xgboost as xgb

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = X[:, 0] + np.sin(X[:, 1])
    X[rng.random(X.shape) < 0.1] = np.nan
    xm = xgb.XGBRegressor(n_estimators=5, max_depth=3).fit(X, y)
    lm = lgb.LGBMRegressor(n_estimators=5, num_leaves=4, verbose=-1).fit(X, y)
    cm = cb.CatBoostRegressor(iterations=5, allow_writing_files=False, depth=3, verbose=0).fit(X, y)
    files = {"m.json": xm, "m.ubj": xm, "m.txt": lm, "m.cbm": cm, "c.json": cm}
    out = {}
    for name, m in files.items():
        p = tmp_path / name
        if name == "m.txt":
            m.booster_.save_model(p)
        elif name == "c.json":
            m.save_model(p, format="json")
        else:
            m.save_model(p)
        out[name] = (p, m)
    return X, out


def test_load_any_reads_booster_files_by_content_and_predicts_as_the_library(tmp_path):
    from insdel import trees

    X, files = _booster_files(tmp_path)
    want = {"m.json": "xgboost", "m.ubj": "xgboost", "m.txt": "lightgbm", "m.cbm": "catboost",
            "c.json": "catboost"}
    for name, (path, est) in files.items():
        model, info = load_any(path, n_features=4)
        assert info["format"] == want[name] and not info["trusted"]
        assert info["capabilities"] == ["values", "trees"]  # tree_shap and the tree engine
        got = insdel.as_model(model)(X)
        assert got.dtype == np.float64 and got.shape == (X.shape[0],)
        np.testing.assert_allclose(got, est.predict(X), rtol=1e-6, atol=1e-6)
        assert trees.recognise(model)
        ens = trees.read(model)
        assert (np.abs(ens.predict(X) - got) <= 1e-5 * (1 + np.abs(got))).all()


def test_load_any_refuses_a_json_of_no_library_and_names_a_wrong_library(tmp_path):
    from insdel.trees.read_lightgbm import read_lightgbm
    from insdel.trees.read_xgboost import read_xgboost

    (tmp_path / "o.json").write_text('{"weights": [1, 2]}')
    with pytest.raises(ValueError, match="not a model file of XGBoost .*or CatBoost"):
        load_any(tmp_path / "o.json")
    _, files = _booster_files(tmp_path)
    with pytest.raises(ValueError, match="holds a model of lightgbm"):
        read_xgboost(files["m.txt"][0])
    with pytest.raises(ValueError, match="holds a model of xgboost"):
        read_lightgbm(files["m.json"][0])
    with pytest.raises(ValueError, match="fitted on 4 features but the data set gives 5"):
        load_any(files["m.ubj"][0], n_features=5)


def test_load_any_sklearn_trees_by_joblib_need_trust_and_read_as_trees(tmp_path):
    import joblib
    from sklearn.ensemble import HistGradientBoostingRegressor

    from insdel import trees

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    est = HistGradientBoostingRegressor(max_iter=5).fit(X, X[:, 0])
    joblib.dump(est, tmp_path / "m.joblib")
    with pytest.raises(PermissionError, match="trust"):
        load_any(tmp_path / "m.joblib")
    model, info = load_any(tmp_path / "m.joblib", trust=True)
    assert info["format"] == "joblib" and info["trusted"]
    np.testing.assert_allclose(trees.read(model).predict(X), est.predict(X), rtol=1e-12)


def test_a_run_takes_an_xgboost_model_file_and_records_its_format(tmp_path):
    import xgboost as xgb

    from insdel import datasets

    csv = small_csv(tmp_path / "small.csv")
    ds = datasets.load("table", path=str(csv), target="y", scale="none")
    m = xgb.XGBRegressor(n_estimators=5, max_depth=2).fit(ds.X_train, ds.y_train)
    m.save_model(tmp_path / "m.json")
    out = tmp_path / "out"
    cfg = _config(tmp_path, tmp_path / "m.json", ["exact_shapley"])
    # a model with values only: no integrated-gradients options
    cfg.write_text(cfg.read_text().replace(
        "[methods.options.integrated_gradients]\nn_steps = 8\n", ""))
    assert cli_main(["run", str(cfg), "--out", str(out), "--no-progress"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["model"]["format"] == "xgboost"
    assert manifest["model"]["capabilities"] == ["values", "trees"]
    assert manifest["model"]["engine"].startswith("tree (xgboost")
