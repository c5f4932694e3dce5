"""Audit 29: silent wrong results at the edges (policies, ROAR, images, model files, data sets,
Dask chunks, diagnostics). Each test failed before its fix."""

from __future__ import annotations

import dataclasses
import operator

import numpy as np
import pandas as pd
import pytest

from insdel import datasets, distributed, images, models, policies, roar
from insdel.datasets import Dataset, Scaler
from insdel.diagnostics import abc_correlation


def _ds(name: str = "sim", N: int = 40, n: int = 3) -> Dataset:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, n))
    y = X[:, 0]
    k = int(0.8 * N)
    lv = np.full((n, 2), np.nan)
    return Dataset(name, X[:k], X[k:], y[:k], y[k:], [f"x{j}" for j in range(n)], "y",
                   np.zeros(n, bool), lv, lv.copy(), Scaler(np.zeros(n), np.ones(n)))


# -- ROAR: a training unit is keyed by the hyper-parameters actually used ------------------------

def test_roar_unit_key_uses_the_resolved_preset(tmp_path, monkeypatch):
    """params=None picks the preset from the data set's name; two data sets with equal arrays but
    other default presets must not share a checkpointed training."""
    used = []

    def fake_train(ds, params, *, seed, **kw):
        p = models._resolve_params(params, ds)
        used.append(p["hidden"])
        return None, {"test": {"huber": float(sum(p["hidden"]))}, "epochs": 1}

    monkeypatch.setattr(models, "train_mlp", fake_train)
    a = _ds("dielectron_sim")  # -> quick_cern
    b = dataclasses.replace(a, name="housing_sim")  # same arrays -> quick_housing
    assert models.default_preset(a) != models.default_preset(b)
    assert models.get("quick_cern")["hidden"] != models.get("quick_housing")["hidden"]
    kw = dict(params=None, orderings=("random",), fractions=(1.0,), replicates=1,
              store=tmp_path)
    ta = roar.roar(a, {}, **kw)
    tb = roar.roar(b, {}, **kw)
    assert len(used) == 4  # every unit of b trained with b's preset, none reused from a
    assert not np.allclose(ta["loss"], tb["loss"])


def test_roar_method_named_none_is_refused():
    ds = _ds()
    A = np.zeros((len(ds.X_train) + len(ds.X_test), 3))
    with pytest.raises(ValueError, match="'none' is reserved"):
        roar.roar(ds, {"none": A}, params=None, store=None)


# -- model files: trust is a bool, preset only for a bare state_dict ----------------------------

def test_load_any_refuses_non_bool_trust(tmp_path):
    joblib = pytest.importorskip("joblib")
    from insdel.model_files import load_any

    path = tmp_path / "m.joblib"
    joblib.dump({"not": "a model"}, path)
    with pytest.raises(TypeError, match="trust must be True or False"):
        load_any(path, trust="no")  # a truthy string used to load the pickle


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


# -- images: shapes and kernel sizes are integers, class indices in range ------------------------

@pytest.mark.parametrize("shape, err", [((1, 2.5, 2), TypeError), ((1, 2, 2, 1), ValueError),
                                        ((True, 2, 2), TypeError), ((1.0, 2, 2), TypeError),
                                        ((1, 0, 2), ValueError)])
def test_check_shape_refuses_non_integers(shape, err):
    with pytest.raises(err, match="three integers"):
        images.check_shape(shape)


def test_image_policies_refuse_truncated_options():
    X = np.random.default_rng(0).random((2, 4))
    with pytest.raises(TypeError, match="shape"):
        policies.get("black", shape=(1, 2.7, 2))  # used to become (1, 2, 2) and pass
    with pytest.raises(TypeError, match="klen"):
        policies.get("blurred", shape=(1, 2, 2), klen=3.9)  # used to become 3
    with pytest.raises(ValueError, match="klen"):
        policies.get("blurred", shape=(1, 2, 2), klen=4)  # RISE's kernel has a centre pixel
    assert policies.get("black", shape=(1, 2, 2)).pair(None, X).R.shape == (2, 4)


def test_image_evaluate_class_index_in_range():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 3)
    rng = np.random.default_rng(0)
    X = rng.random((3, 4))
    A = {"a": rng.normal(size=(3, 4))}
    for out in (-1, 3):
        with pytest.raises(ValueError, match=f"output = {out} is not a class index"):
            images.evaluate(net, X, np.zeros_like(X), A, shape=(1, 2, 2), output=out)
    res = images.evaluate(net, X, np.zeros_like(X), A, shape=(1, 2, 2), output=2)
    assert (res.classes == 2).all()


# -- distributed: distinct chunk ids, cluster options not ignored ---------------------------------

def test_map_chunks_refuses_repeated_ids():
    """Equal ids gave equal task keys, and Dask returned the first chunk's result for both."""
    dd = pytest.importorskip("dask.distributed")
    with dd.Client(processes=False, n_workers=1, threads_per_worker=1,
                   dashboard_address=None) as client:
        with pytest.raises(ValueError, match="ids must be distinct"):
            list(distributed.map_chunks(client, operator.add, [(1, 1), (10, 10)], ids=[0, 0]))
        got = dict(distributed.map_chunks(client, operator.add, [(1, 1), (10, 10)], ids=[4, 7]))
        assert got == {4: 2, 7: 20}


@pytest.mark.parametrize("compute, match", [
    ({"backend": "serial", "n_workers": 4}, "backend = 'serial' ignores"),
    ({"backend": "dask", "address": "tcp://h:1", "n_workers": 2}, "give one or the other"),
    ({"backend": "dask", "threads_per_worker": 0}, "threads_per_worker must be an integer"),
])
def test_make_client_refuses_ignored_options(compute, match):
    with pytest.raises(ValueError, match=match):
        with distributed.make_client(compute):
            pass


# -- diagnostics: repeated rows are not averaged -------------------------------------------------

def test_abc_correlation_refuses_repeated_rows():
    rng = np.random.default_rng(0)
    one = pd.DataFrame({"pair": np.repeat(np.arange(4), 2), "method": "a",
                        "mode": ["insertion", "deletion"] * 4, "abc": rng.normal(size=8)})
    assert np.isfinite(abc_correlation(one)["a"])
    two = pd.concat([one, one.assign(abc=rng.normal(size=8))], ignore_index=True)
    with pytest.raises(ValueError, match="repeated"):
        abc_correlation(two)


# -- datasets: a prepared folder is one preparation ----------------------------------------------

def test_load_prepared_detects_mixed_files(tmp_path):
    a = datasets.prepare("housing_sim", tmp_path / "a", n_samples=60, seed=0)
    b = datasets.prepare("housing_sim", tmp_path / "b", n_samples=60, seed=1)
    datasets.load_prepared(a)
    (a / "test.parquet").write_bytes((b / "test.parquet").read_bytes())
    with pytest.raises(ValueError, match="test.parquet is not the file"):
        datasets.load_prepared(a)


def test_prepare_drops_old_metadata_first(tmp_path, monkeypatch):
    out = datasets.prepare("housing_sim", tmp_path / "p", n_samples=60, seed=0)

    def boom(*a, **k):
        raise RuntimeError("killed")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", boom)
    with pytest.raises(RuntimeError, match="killed"):
        datasets.prepare("housing_sim", out, n_samples=80, seed=1)
    monkeypatch.undo()
    with pytest.raises(FileNotFoundError, match="metadata.json"):
        datasets.load_prepared(out)
