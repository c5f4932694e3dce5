"""load_any: a user's model file (TorchScript, state_dict + preset, insdel files, trusted pickles)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from insdel import datasets, models


# -- load_any: trust, preset and n_features checked ------------------------------------------------
def test_load_any_refuses_non_bool_trust(tmp_path):
    joblib = pytest.importorskip("joblib")
    from insdel.model_files import load_any

    path = tmp_path / "m.joblib"
    joblib.dump({"not": "a model"}, path)
    with pytest.raises(ValueError, match="trust must be True or False"):
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

    ds = datasets.get("housing_sim", n_samples=240, seed=1)
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
