"""The paper's MLP (Appendix A.2/A.4): structure, presets, training, Optuna search, save/load."""

from __future__ import annotations

import json
import time

import matplotlib
import numpy as np
import pytest
import torch
from torch import nn

import insdel
from insdel import as_model, datasets, models, plotting

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def cern_small():
    return datasets.load("dielectron_sim", n_events=5000, seed=0)


@pytest.fixture(scope="module")
def housing_tiny():
    return datasets.load("housing_sim", n_samples=240, seed=1)


@pytest.fixture(scope="module")
def trained(cern_small):
    # a smaller cousin of quick_cern, so the test stays fast on a loaded 2-core machine
    params = {"preset": "quick_cern", "hidden": [64, 64], "batch_size": 64}
    return models.train_mlp(cern_small, params, seed=0, max_epochs=10, num_threads=1)


def test_mlp_structure():
    m = models.MLP(16, [32, 8, 4], dropout=0.2)
    kinds = [type(x) for x in m.net]
    assert kinds == [nn.Linear, nn.PReLU, nn.Dropout] * 3 + [nn.Linear]
    assert all(d.p == 0.2 for d in m.net if isinstance(d, nn.Dropout))
    assert len({id(a) for a in m.net if isinstance(a, nn.PReLU)}) == 3
    assert m(torch.zeros(5, 16)).shape == (5,)
    assert as_model(m)(np.zeros((7, 16))).shape == (7,)


def test_paper_presets():
    b, c = models.get("paper_bangalore"), models.get("paper_cern")
    assert b["hidden"] == [333, 465, 86, 234] and b["dropout"] == 0.10031
    assert b["lr"] == 1.7389e-2 and b["huber_delta"] == 1.0
    assert c["hidden"] == [509, 421, 65, 368, 122, 477] and c["dropout"] == 0.11604
    assert c["lr"] == 1.9163e-4 and c["huber_delta"] == 1.0
    for name in ("quick_cern", "quick_housing"):
        p = models.get(name)
        assert {"hidden", "dropout", "lr", "huber_delta", "batch_size", "max_epochs",
                "patience"} <= set(p)
    models.get("paper_cern")["hidden"].append(1)  # a copy: the preset is unchanged
    assert models.PRESETS["paper_cern"]["hidden"] == [509, 421, 65, 368, 122, 477]
    with pytest.raises(insdel.UnknownNameError, match="unknown model preset 'nope'"):
        models.get("nope")


def test_training_lowers_the_loss_and_fits(trained, cern_small):
    model, met = trained
    hist = met["history"]["val_loss"]
    assert hist[-1] < 0.5 * hist[0]
    assert met["history"]["train_loss"][-1] < met["history"]["train_loss"][0]
    assert met["test"]["r2"] > 0.9, met["test"]
    assert met["best_epoch"] >= 1 and met["epochs"] <= 10
    for split in ("train", "val", "test"):
        assert set(met[split]) == {"huber", "rmse", "r2"}
    # metrics agree with the model's predictions
    pred = as_model(model)(cern_small.X_test)
    np.testing.assert_allclose(models.regression_metrics(cern_small.y_test, pred)["r2"],
                               met["test"]["r2"])
    assert not model.training


def test_training_is_seeded_and_leaves_global_rng_alone(housing_tiny):
    state, threads = torch.get_rng_state(), torch.get_num_threads()
    m1, _ = models.train_mlp(housing_tiny, "quick_housing", seed=3, max_epochs=3, num_threads=1)
    assert torch.equal(state, torch.get_rng_state())
    assert torch.get_num_threads() == threads
    m2, _ = models.train_mlp(housing_tiny, "quick_housing", seed=3, max_epochs=3, num_threads=1)
    m3, _ = models.train_mlp(housing_tiny, "quick_housing", seed=4, max_epochs=3, num_threads=1)
    X = housing_tiny.X_test
    np.testing.assert_array_equal(as_model(m1)(X), as_model(m2)(X))
    assert not np.array_equal(as_model(m1)(X), as_model(m3)(X))


def test_params_forms_and_errors(housing_tiny):
    _, met = models.train_mlp(housing_tiny, {"hidden": [8], "dropout": 0.0, "lr": 1e-2},
                              max_epochs=2)
    assert met["params"]["hidden"] == [8] and met["epochs"] == 2
    _, met = models.train_mlp(housing_tiny, {"preset": "quick_housing", "hidden": [4, 4]},
                              max_epochs=1)
    assert met["params"]["hidden"] == [4, 4] and met["params"]["batch_size"] == 64
    with pytest.raises(ValueError, match="unknown key"):
        models.train_mlp(housing_tiny, {"hidden": [8], "dropout": 0, "lr": 1, "lr_rate": 2})
    with pytest.raises(ValueError, match="needs 'lr'"):
        models.train_mlp(housing_tiny, {"hidden": [8], "dropout": 0})
    with pytest.raises(ValueError, match="dropout"):
        models.train_mlp(housing_tiny, {"hidden": [8], "dropout": 1.5, "lr": 1e-3})
    with pytest.raises(TypeError, match="params must be"):
        models.train_mlp(housing_tiny, 3)
    with pytest.raises(TypeError, match="X_train"):
        models.train_mlp(object(), "quick_cern")


def test_save_load_identical_predictions(trained, cern_small, tmp_path):
    model, met = trained
    path = models.save_model(model, tmp_path / "m.pt", dataset=cern_small,
                             params=met["params"], metrics=met)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pt"]  # no temporary file left
    loaded, meta = models.load_model(path, dataset=cern_small)
    X = cern_small.X_test
    np.testing.assert_array_equal(as_model(model)(X), as_model(loaded)(X))
    assert meta["params"]["hidden"] == [64, 64]
    assert meta["metrics"]["test"]["r2"] == met["test"]["r2"]
    assert meta["dataset"]["feature_names"] == cern_small.feature_names
    np.testing.assert_array_equal(meta["dataset"]["scaler"]["mean"], cern_small.scaler.mean_)
    assert meta["dataset"]["binary_mask"] == cern_small.binary_mask.tolist()
    other = datasets.load("dielectron_sim", n_events=3000, seed=9)
    with pytest.raises(ValueError, match="different feature scaling"):
        models.load_model(path, dataset=other)
    from insdel.model_files import load_any

    with pytest.raises(ValueError, match="different feature scaling"):  # [model] path = ...
        load_any(path, dataset=other)
    assert load_any(path, dataset=cern_small)[1]["format"] == "insdel"
    with pytest.raises(FileNotFoundError, match="does not exist"):
        models.load_model(tmp_path / "missing.pt")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a model")
    with pytest.raises(ValueError, match="not a model saved"):
        models.load_model(bad)


def test_plot_predictions(trained, cern_small):
    import matplotlib.pyplot as plt

    model, _ = trained
    ax = plotting.plot_predictions(model, cern_small)
    assert "R²" in ax.get_title() and ax.get_xlabel() == "true M"
    assert len(ax.collections[0].get_offsets()) == len(cern_small.y_test)
    plt.close(ax.figure)


def test_tune_three_trials_interrupted_and_resumed(housing_tiny, tmp_path):
    import optuna

    storage = tmp_path / "search.sqlite3"

    def interrupt(study, trial):
        raise KeyboardInterrupt

    kw = {"storage": storage, "study_name": "t", "seed": 0, "max_layers": 2, "max_units": 16,
          "max_epochs": 3, "patience": 2, "batch_size": 64, "num_threads": 1}
    with pytest.raises(KeyboardInterrupt):
        models.tune_mlp(housing_tiny, 3, callbacks=[interrupt], **kw)
    study = optuna.load_study(study_name="t", storage=f"sqlite:///{storage}")
    assert len(study.trials) == 1
    best = models.tune_mlp(housing_tiny, 3, **kw)
    study = optuna.load_study(study_name="t", storage=f"sqlite:///{storage}")
    assert len(study.trials) == 3 and best["n_trials"] == 3
    # the resumed search did not repeat the first proposal
    assert study.trials[0].params != study.trials[1].params
    assert 1 <= len(best["hidden"]) <= 2 and all(8 <= h <= 16 for h in best["hidden"])
    assert 0 <= best["dropout"] <= 0.5 and 1e-5 <= best["lr"] <= 1e-1
    # nothing left to do: a third call returns the same best params without new trials
    again = models.tune_mlp(housing_tiny, 3, **kw)
    assert again["hidden"] == best["hidden"] and again["n_trials"] == 3
    # the result trains directly
    _, met = models.train_mlp(housing_tiny, best, max_epochs=1, num_threads=1)
    assert np.isfinite(met["test"]["huber"])


@pytest.mark.slow
def test_quick_cern_budget_on_20000_events():
    """The README's main job: quick_cern on 20,000 simulated events, test R² > 0.9 in ~30 s."""
    ds = datasets.load("dielectron_sim", n_events=20000)
    t0 = time.perf_counter()
    _, met = models.train_mlp(ds, "quick_cern", num_threads=1)
    seconds = time.perf_counter() - t0
    assert met["test"]["r2"] > 0.9
    assert seconds < 60, seconds


def test_adapter_output_dtypes_and_out():
    """float32 and bfloat16 modules give float64 values equal to their outputs; ``out=`` receives
    them in place and is checked."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    X = np.random.default_rng(0).normal(size=(10, 4))
    m = insdel.as_model(net, batch_size=3)
    with torch.inference_mode():  # the same batches of 3 (a matrix product's rounding can depend
        # on the number of rows on some CPUs: one value in ten moved by a float32 unit on an
        # Intel Xeon when the reference was one batch of 10)
        T = torch.from_numpy(X.astype(np.float32))
        ref = torch.cat([net(T[i:i + 3]) for i in range(0, 10, 3)])[:, 0].double().numpy()
    out = np.full(10, np.nan)
    got = m(X, out=out)
    assert got is out and got.dtype == np.float64
    np.testing.assert_array_equal(got, ref)
    with pytest.raises(ValueError, match="out must be a float64 array of shape"):
        m(X, out=np.empty(9))
    bf = insdel.as_model(net.to(torch.bfloat16))
    with torch.inference_mode():
        ref_bf = net(torch.from_numpy(X.astype(np.float32)).to(torch.bfloat16))[:, 0].double()
    np.testing.assert_array_equal(bf(X), ref_bf.numpy())
    ints = insdel.as_model(lambda Z: (Z[:, 0] > 0).astype(np.int64))
    np.testing.assert_array_equal(ints(X), (X[:, 0] > 0).astype(float))


class _NaNAbove(torch.nn.Module):
    """x -> x.sum(1), NaN where x_0 > 5."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(1, 1)  # a float32 parameter: float32 inputs

    def forward(self, x):
        y = x.sum(1, keepdim=True)
        y[x[:, 0] > 5] = float("nan")
        return y


def test_adapter_torch_whole_call_path():
    """A module wrapped by as_model is run over one tensor view of the rows, batch by batch: the
    same values as the per-batch path, module calls and rows counted, a NaN named by its row of the
    call (not of its batch), a tuple or a wrong shape refused; a custom fn beside a module, or an
    output selection, keeps the per-batch path."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    X = np.random.default_rng(0).normal(size=(10, 4))
    m = insdel.as_model(net, batch_size=3)
    assert m._batches is not None
    generic = insdel.Model(m._fn, dtype=np.float32, batch_size=3)  # the per-batch path
    assert generic._batches is None
    np.testing.assert_array_equal(m(X), generic(X))
    assert (m.n_calls, m.n_evals) == (4, 10)
    Z = np.ones((7, 1))
    Z[4] = Z[6] = 10.0  # rows of the second and third batches of three
    with pytest.raises(ValueError, match=r"non-finite values for 2 input row\(s\) \(rows 4, 6 of "):
        insdel.as_model(_NaNAbove(), batch_size=3)(Z, out=np.empty(7))
    unchecked = insdel.as_model(_NaNAbove(), batch_size=3)(Z, check_finite=False)
    assert np.isnan(unchecked[[4, 6]]).all() and np.isfinite(np.delete(unchecked, [4, 6])).all()

    class Pair(torch.nn.Module):
        def forward(self, x):
            return x[:, :1], x[:, 1:]

    for call in ("__call__", "value_and_grad"):  # the forward pass and the gradient's checks
        with pytest.raises(ValueError, match="must return one tensor"):
            getattr(insdel.as_model(Pair()), call)(X)
        with pytest.raises(ValueError, match=r"shape \(B,\) or \(B, 1\) for B = 3 input rows; "
                                             r"got shape \(3, 2\)"):
            getattr(insdel.as_model(torch.nn.Linear(4, 2), batch_size=3), call)(X)
    doubled = insdel.Model(lambda Z: 2 * m._fn(Z), dtype=np.float32, torch_module=net,
                           batch_size=3)  # m's batches: the same rounding on every CPU
    assert doubled._batches is None  # its fn is not the module's forward
    np.testing.assert_allclose(doubled(X), 2 * m(X))
    second = insdel.as_model(torch.nn.Linear(4, 2), output=1)
    assert second._batches is None
    assert second(X).shape == (10,)


# -- hyperparameters, max_epochs and seed not coerced ---------------------------------------------
@pytest.mark.parametrize("bad, err", [
    ({"hidden": "64"}, TypeError), ({"hidden": [64.7]}, TypeError), ({"hidden": [4.0]}, TypeError),
    ({"hidden": [True]}, TypeError), ({"hidden": [0]}, ValueError), ({"batch_size": 2.5}, TypeError),
    ({"batch_size": 8.0}, TypeError), ({"max_epochs": "3"}, TypeError),
    ({"val_fraction": 1.5}, ValueError), ({"val_fraction": 0.0}, ValueError), ({"lr": True}, TypeError),
    ({"dropout": float("nan")}, ValueError), ({"huber_delta": -1.0}, ValueError)])
def test_mlp_params_not_coerced(bad, err):
    from insdel.models import _resolve_params

    params = {"hidden": [4], "dropout": 0.0, "lr": 1e-3, **bad}
    with pytest.raises(err, match=next(iter(bad))):
        _resolve_params(params, None)
    assert _resolve_params({"hidden": [np.int64(4)], "dropout": 0, "lr": 1e-3,
                            "batch_size": 8}, None)["hidden"] == [4]


def test_train_mlp_max_epochs_and_seed_not_coerced():
    from insdel.models import train_mlp

    rng = np.random.default_rng(0)
    ds = type("DS", (), {"X_train": rng.normal(size=(20, 2)), "y_train": rng.normal(size=20),
                         "X_test": rng.normal(size=(5, 2)), "y_test": rng.normal(size=5)})()
    with pytest.raises(TypeError, match="max_epochs"):
        train_mlp(ds, {"hidden": [4], "dropout": 0.0, "lr": 1e-3}, max_epochs=1.5,
                  progress=False)
    with pytest.raises(ValueError, match="max_epochs"):
        train_mlp(ds, {"hidden": [4], "dropout": 0.0, "lr": 1e-3}, max_epochs=0,
                  progress=False)
    with pytest.raises(TypeError, match="seed"):
        train_mlp(ds, {"hidden": [4], "dropout": 0.0, "lr": 1e-3}, seed=None, progress=False)


# -- model files with dataset metadata but no scaling ----------------------------------------------
def test_dataset_metadata_without_scaling_is_an_error_naming_the_file(tmp_path):
    torch = pytest.importorskip("torch")
    from insdel import datasets, models

    ds = datasets.load("housing_sim", n_samples=240, seed=1)
    net = models.MLP(ds.n_features, [4], 0.0)
    path = models.save_model(net, tmp_path / "m.pt", dataset=ds)
    blob = torch.load(path, weights_only=True)
    meta = json.loads(blob["metadata"])
    del meta["dataset"]["scaler"]
    blob["metadata"] = json.dumps(meta)
    torch.save(blob, path)
    with pytest.raises(ValueError, match=r"m\.pt.*no feature scaling"):
        models.load_model(path, dataset=ds)
