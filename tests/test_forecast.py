"""insdel forecast (insdel.runner.forecast) and its simulator (insdel.forecast_sim)."""

import json

import numpy as np
import pandas as pd
import pytest

from insdel import config as _config
from insdel import forecast_sim as fs
from insdel.runner.forecast import read_series, run_forecast

TINY = {"name": "forecast_tiny", "seed": 0,
        "forecast": {"n_series": 6, "steps": 60, "channels": 3, "lead": 2, "length": 6,
                     "horizon": 2, "lag_block": 3, "hidden": 8, "epochs": 1, "n_pairs": 4,
                     "n_random": 2}}


def test_forecast_run_writes_its_files(tmp_path):
    res = run_forecast(TINY, tmp_path / "out")
    table = pd.read_csv(tmp_path / "out" / "abc_by_horizon.csv")
    assert set(table["output"].astype(str)) == {"0", "1", "weighted"}
    assert set(table["method"]) == {"integrated_gradients", "input_x_gradient", "exact_shapley",
                                    "random"}
    for name in ("abc_by_horizon", "curves_per_horizon", "heatmap_attributions",
                 "heatmap_main_effects"):
        assert (tmp_path / "out" / "figures" / f"{name}.png").exists()
    assert set(json.loads((tmp_path / "out" / "lead.json").read_text())) >= {"found"}
    assert "weighted" in res.to_markdown()


def test_simulated_lead_is_found():
    L, C, lead = 12, 3, 3
    rng = np.random.default_rng(0)
    heat = rng.random((L, C)) * 0.1
    heat[lead - 1, 1] = 1.0
    assert fs.lead_found(heat, lead)["found"]
    heat[0, 2] = 5.0  # a distractor channel dominates
    assert not fs.lead_found(heat, lead)["found"]
    S = fs.simulate(3, 80, channels=C, lead=lead, seed=1)
    y, u = S[:, lead:, 0], S[:, :-lead, 1]
    resid = y - 0.6 * S[:, lead - 1:-1, 0]
    assert np.corrcoef(resid.ravel(), u.ravel())[0, 1] > 0.5  # the covariate leads by `lead`


def test_config_errors_name_the_key():
    bad = {**TINY, "forecast": {**TINY["forecast"], "lag_block": 4}}
    with pytest.raises(_config.ConfigError, match="forecast.lag_block = 4"):
        _config.load(bad)
    bad = {**TINY, "forecast": {**TINY["forecast"], "lead": 9}}
    with pytest.raises(_config.ConfigError, match="forecast.lead = 9"):
        _config.load(bad)


def test_read_series_layouts(tmp_path):
    S = np.arange(24.0).reshape(2, 4, 3)
    np.save(tmp_path / "s.npy", S)
    np.testing.assert_array_equal(read_series(str(tmp_path / "s.npy")), S)
    df = pd.DataFrame(S.reshape(8, 3), columns=["y", "u", "d"])
    df.insert(0, "series", np.repeat(["a", "b"], 4))
    df.to_csv(tmp_path / "s.csv", index=False)
    np.testing.assert_array_equal(read_series(str(tmp_path / "s.csv")), S)
    df.iloc[:5].to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(ValueError, match="same number of steps"):
        read_series(str(tmp_path / "bad.csv"))


def test_forecast_runs_a_users_model_file(tmp_path):
    import torch

    net = fs.Forecaster(6 * 3, 2, hidden=4).eval()
    path = tmp_path / "net.pt"
    torch.jit.save(torch.jit.script(net), str(path))
    cfg = {**TINY, "forecast": {**TINY["forecast"], "model": str(path)}}
    res = run_forecast(cfg, tmp_path / "out")
    assert set(res.table["method"]) >= {"integrated_gradients", "exact_shapley"}
    wrong = {**TINY, "forecast": {**TINY["forecast"], "model": str(path), "horizon": 3}}
    with pytest.raises(ValueError, match="outputs=3"):
        run_forecast(wrong, tmp_path / "out2")


def test_an_interrupted_forecast_run_resumes_and_reuses_only_its_own_chunks(tmp_path):
    """Interrupted after its first checkpointed stage, the run started again loads it and writes
    the tables of an uninterrupted run; another discount reuses every stage (it weighs the
    aggregate alone); another n_random recomputes the curves, not the attributions."""
    full = run_forecast(TINY, tmp_path / "full")
    calls = []

    def interrupt():
        calls.append(1)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_forecast(TINY, tmp_path / "cut", _interrupt=interrupt)
    assert len(calls) == 1 and not (tmp_path / "cut" / "abc_by_horizon.csv").exists()
    seen = []
    again = run_forecast(TINY, tmp_path / "cut", _interrupt=lambda: seen.append(1))
    # the forecaster's one epoch, resumed; five stages (two gradient methods, exact Shapley,
    # curves, decomposition) computed
    assert len(seen) == 5
    for name in ("abc_by_horizon.csv", "lead.json"):
        assert (tmp_path / "full" / name).read_bytes() == (tmp_path / "cut" / name).read_bytes()
    pd.testing.assert_frame_equal(full.table, again.table)

    seen.clear()
    other = {**TINY, "forecast": {**TINY["forecast"], "discount": 0.5}}
    res = run_forecast(other, tmp_path / "cut", _interrupt=lambda: seen.append(1))
    assert seen == []
    per = res.table[res.table["output"].astype(str) != "weighted"].reset_index(drop=True)
    was = full.table[full.table["output"].astype(str) != "weighted"].reset_index(drop=True)
    pd.testing.assert_frame_equal(per, was)
    more = {**TINY, "forecast": {**TINY["forecast"], "n_random": 3}}
    seen.clear()
    run_forecast(more, tmp_path / "cut", _interrupt=lambda: seen.append(1))
    assert seen == [1]  # the curves alone


def test_windowed_cuts_every_series():
    series = np.arange(2 * 6 * 2, dtype=float).reshape(2, 6, 2)  # 2 series, T = 6, C = 2
    X, Y = fs.windowed(series, 3, 2)
    assert X.shape == (2 * 2, 3 * 2) and Y.shape == (4, 2)  # T - L - H + 1 = 2 windows a series
    np.testing.assert_array_equal(X[0], series[0, :3].ravel())
    np.testing.assert_array_equal(Y[0], series[0, 3:5, 0])  # the next H values of channel 0
    np.testing.assert_array_equal(X[2], series[1, :3].ravel())
    X2, _ = fs.windowed(series, 3, 2, stride=2)
    assert len(X2) == 2


def test_train_forecaster_is_seeded_and_fits():
    import torch

    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 4)).astype(np.float32)
    Y = X[:, :2] * 0.5
    a = fs.train_forecaster(X, Y, hidden=8, epochs=40, batch_size=32, seed=1)
    b = fs.train_forecaster(X, Y, hidden=8, epochs=40, batch_size=32, seed=1)
    assert not a.training
    with torch.no_grad():
        pa, pb = a(torch.from_numpy(X)).numpy(), b(torch.from_numpy(X)).numpy()
    assert pa.shape == (64, 2)
    np.testing.assert_array_equal(pa, pb)
    assert np.mean((pa - Y) ** 2) < np.mean(Y ** 2)  # better than predicting zero


def _count_adam_steps(monkeypatch) -> list:
    """Count the optimiser steps of every training from here on (the training actually done)."""
    import torch

    steps, step = [], torch.optim.Adam.step

    def counted(self, *args, **kwargs):
        steps.append(1)
        return step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", counted)
    return steps


def test_train_forecaster_resumed_after_an_epoch_gives_the_same_bytes():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(70, 4)).astype(np.float32)
    Y = X[:, :2] * 0.5
    kw = {"hidden": 8, "epochs": 4, "batch_size": 32, "seed": 1}
    states, again = {}, {}
    full = fs.train_forecaster(X, Y, **kw, on_epoch=lambda k, st: states.__setitem__(k, st))
    assert sorted(states) == [1, 2, 3, 4] and all(v.dtype == np.float32 for v in states.values())
    resumed = fs.train_forecaster(X, Y, **kw, start=(2, states[2]),
                                  on_epoch=lambda k, st: again.__setitem__(k, st))
    assert sorted(again) == [3, 4]
    for k in (3, 4):
        assert again[k].tobytes() == states[k].tobytes()
    loaded = fs.train_forecaster(X, Y, **kw, start=(4, states[4]))
    for net in (resumed, loaded):
        assert not net.training
        for a, b in zip(full.state_dict().values(), net.state_dict().values(), strict=True):
            assert a.numpy().tobytes() == b.numpy().tobytes()
    with pytest.raises(ValueError, match="float32 of shape"):
        fs.train_forecaster(X, Y, **kw, start=(2, states[2][:-1]))
    with pytest.raises(ValueError, match="between 0 and epochs = 4"):
        fs.train_forecaster(X, Y, **kw, start=(5, states[4]))


def _record_threads(monkeypatch) -> list:
    """torch's thread count at every optimiser step from here on."""
    import torch

    seen, step = [], torch.optim.Adam.step

    def recorded(self, *args, **kwargs):
        seen.append(torch.get_num_threads())
        return step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", recorded)
    return seen


def test_train_forecaster_trains_under_its_own_thread_count(monkeypatch):
    """The trained floats can depend on torch's thread count: training runs under
    ``num_threads`` (1 by default) whatever the caller's setting, which is restored after."""
    import torch

    from insdel._threads import torch_threads

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 4)).astype(np.float32)
    Y = X[:, :2] * 0.5
    seen = _record_threads(monkeypatch)
    with torch_threads(2):
        a = fs.train_forecaster(X, Y, hidden=8, epochs=2, batch_size=16, seed=1)
        assert set(seen) == {1} and torch.get_num_threads() == 2
        seen.clear()
        fs.train_forecaster(X, Y, hidden=8, epochs=1, batch_size=16, seed=1, num_threads=None)
        assert set(seen) == {2}
    with torch_threads(1):
        b = fs.train_forecaster(X, Y, hidden=8, epochs=2, batch_size=16, seed=1)
    for u, v in zip(a.state_dict().values(), b.state_dict().values(), strict=True):
        assert u.numpy().tobytes() == v.numpy().tobytes()
    with pytest.raises(ValueError, match="num_threads"):
        fs.train_forecaster(X, Y, epochs=1, num_threads=0)


def test_a_forecaster_checkpoint_is_keyed_by_the_training_thread_count(tmp_path, monkeypatch):
    """A forecaster checkpointed under another training thread count is trained afresh, not
    reused; the manifest records the count."""
    from insdel.runner import forecast as rf

    steps = _count_adam_steps(monkeypatch)
    monkeypatch.setitem(rf._TRAINING, "num_threads", 2)
    run_forecast(TINY, tmp_path / "out")
    trained = len(steps)
    assert trained > 0
    monkeypatch.setitem(rf._TRAINING, "num_threads", 1)
    steps.clear()
    run_forecast(TINY, tmp_path / "out")
    assert len(steps) == trained  # trained again under 1 thread
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["forecaster_training"]["num_threads"] == 1
    steps.clear()
    run_forecast(TINY, tmp_path / "out")
    assert steps == []  # the same count: loaded


def test_a_resumed_forecast_run_reloads_its_trained_forecaster(tmp_path, monkeypatch):
    """Interrupted after the forecaster's first epoch, the run started again trains the second
    epoch alone and writes the bytes of an uninterrupted run; started once more, it trains
    nothing; another seed or epoch count trains afresh."""
    cfg = {**TINY, "forecast": {**TINY["forecast"], "epochs": 2}}
    steps = _count_adam_steps(monkeypatch)
    run_forecast(cfg, tmp_path / "full")
    per_epoch = len(steps) // 2
    assert per_epoch > 0 and len(steps) == 2 * per_epoch

    def interrupt():
        raise KeyboardInterrupt

    steps.clear()
    with pytest.raises(KeyboardInterrupt):
        run_forecast(cfg, tmp_path / "cut", _interrupt=interrupt)
    assert len(steps) == per_epoch
    assert len(list((tmp_path / "cut" / "checkpoints" / "forecaster").glob("chunk_*"))) == 1
    steps.clear()
    run_forecast(cfg, tmp_path / "cut")
    assert len(steps) == per_epoch  # the second epoch alone
    # the latest epoch's state alone is kept
    assert [p.name[:10] for p in (tmp_path / "cut" / "checkpoints" / "forecaster").glob(
        "chunk_*")] == ["chunk_0001"]
    for name in ("abc_by_horizon.csv", "lead.json", "summary.md"):
        assert (tmp_path / "full" / name).read_bytes() == (tmp_path / "cut" / name).read_bytes()
    steps.clear()
    run_forecast(cfg, tmp_path / "cut")
    assert steps == []  # loaded: no training at all
    for name in ("abc_by_horizon.csv", "lead.json"):
        assert (tmp_path / "full" / name).read_bytes() == (tmp_path / "cut" / name).read_bytes()
    for changed in ({**cfg, "seed": 1}, {**cfg, "forecast": {**cfg["forecast"], "epochs": 3}}):
        steps.clear()
        run_forecast(changed, tmp_path / "cut")
        assert len(steps) == changed["forecast"]["epochs"] * per_epoch
