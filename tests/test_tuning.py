"""insdel.tuning and ``insdel tune``: the split by unit, the tuned settings reported on held-out
pairs with the optimism, and every ranking on tuning pairs refused."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from insdel import UnknownOptionError, tuning
from insdel._validation import TuningLeakError
from tests._runs import small_csv


def _problem(B=24, n=4, seed=0):
    torch.manual_seed(seed)
    f = torch.nn.Sequential(torch.nn.Linear(n, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    rng = np.random.default_rng(seed)
    return f, rng.normal(size=(B, n)), rng.normal(size=(B, n)), rng.normal(size=(50, n))


def test_split_keeps_units_together_and_is_seeded():
    clusters = np.repeat(np.arange(10), 2)  # a pair and its mirror
    sp = tuning.split_pairs(20, clusters=clusters, tune_fraction=0.3, seed=4)
    assert np.intersect1d(sp.tuning, sp.held_out).size == 0
    assert np.union1d(sp.tuning, sp.held_out).tolist() == list(range(20))
    assert not set(clusters[sp.tuning]) & set(clusters[sp.held_out])
    assert sp.tuning.size == 6 and sp.n_units == 10
    again = tuning.split_pairs(20, clusters=clusters, tune_fraction=0.3, seed=4)
    assert np.array_equal(again.tuning, sp.tuning)
    assert sp.record()["tuning"] == sp.tuning.tolist()
    with pytest.raises(ValueError, match="at least two units"):
        tuning.split_pairs(4, clusters=[0, 0, 0, 0])
    with pytest.raises(ValueError, match="tune_fraction"):
        tuning.split_pairs(10, tune_fraction=1.0)


def test_overlapping_or_unit_splitting_sets_are_refused():
    with pytest.raises(ValueError, match=r"overlap: pair\(s\) \[2\]"):
        tuning.check_split([0, 1, 2], [2, 3], n_pairs=5)
    with pytest.raises(ValueError, match="unit 1 .* both sides"):
        tuning.check_split([0, 1, 2], [3, 4, 5], n_pairs=6, clusters=[0, 0, 1, 1, 2, 2])
    with pytest.raises(ValueError, match="outside"):
        tuning.check_split([0, 9], [1], n_pairs=5)
    f, X, R, _ = _problem(B=6)
    with pytest.raises(ValueError, match="overlap"):
        tuning.tune(f, X, R, "lime", n_trials=1, split=([0, 1, 2], [2, 3, 4]))


def test_tune_reports_held_out_abc_gain_and_optimism():
    f, X, R, data = _problem()
    res = tuning.tune(f, X, R, "lime", n_trials=3, seed=1, data=data,
                      options={"n_samples": 100})
    assert set(res.params) == {"kernel_width", "n_samples", "alpha"}
    assert res.defaults == {"kernel_width": 1.0, "n_samples": 100, "alpha": 0.01}
    # the first trial is the defaults, so the best tuning ABC is at least theirs
    first = res.trials.iloc[0]
    assert first["kernel_width"] == 1.0 and first["n_samples"] == 100
    assert res.tuning[0] >= first["tuning_abc"] - 1e-12
    assert res.optimism[0] == pytest.approx(res.tuning[0] - res.held_out[0])
    assert res.optimism[1] == pytest.approx(np.hypot(res.tuning[1], res.held_out[1]))
    held = res.held_out_abc
    assert set(held["pair"]) == set(res.split.held_out.tolist())
    assert not set(held["pair"]) & set(res.split.tuning.tolist())
    d = held.pivot(index="pair", columns="setting", values="abc")
    assert res.gain[0] == pytest.approx((d["tuned"] - d["default"]).mean())
    assert res.held_out[0] == pytest.approx(d["tuned"].mean())
    assert res.gain_optimism[0] == pytest.approx(res.tuning_gain[0] - res.gain[0])
    # the defaults were the first trial: the tuning gain is the best trial's lead over them
    assert res.tuning_gain[0] == pytest.approx(res.tuning[0] - first["tuning_abc"])
    again = tuning.tune(f, X, R, "lime", n_trials=3, seed=1, data=data,
                        options={"n_samples": 100})
    assert again.params == res.params and again.held_out == res.held_out
    assert "optimism" in res.to_markdown()


def test_derived_settings_become_the_removal():
    f, X, R, data = _problem(B=12)
    res = tuning.tune(f, X, R, "deeplift", n_trials=3, data=data, seed=0)
    assert res.defaults == {"baseline": "reference"}
    assert res.params["baseline"] in ("reference", "training_mean", "marginal")
    assert list(res.trials["baseline"])[0] == "reference"
    with pytest.raises(ValueError, match="need data="):
        tuning.tune(f, X, R, "deeplift", n_trials=1)
    with pytest.raises(ValueError, match="give data="):
        tuning.tune(f, X, R, "kernel_shap", n_trials=1,
                    space={"background_size": ("int", 1, 4)})


def test_bad_spaces_and_methods_are_refused():
    f, X, R, _ = _problem(B=6)
    with pytest.raises(ValueError, match="no settings to tune"):
        tuning.tune(f, X, R, "vanilla_grad", n_trials=1)
    with pytest.raises(UnknownOptionError, match="kernel_widht"):
        tuning.tune(f, X, R, "lime", n_trials=1, space={"kernel_widht": ("float", 0.1, 1.0)})
    with pytest.raises(ValueError, match="low < high"):
        tuning.tune(f, X, R, "lime", n_trials=1, space={"kernel_width": ("float", 2.0, 1.0)})
    with pytest.raises(ValueError, match="mode"):
        tuning.tune(f, X, R, "lime", n_trials=1, mode="both")


def test_ranking_on_tuning_pairs_is_refused():
    f, X, R, data = _problem(B=12)
    with pytest.raises(TuningLeakError, match="rank_on='tuning'"):
        tuning.tune(f, X, R, "lime", n_trials=1, rank_on="tuning")
    a = tuning.tune(f, X, R, "lime", n_trials=2, options={"n_samples": 50},
                    space={"kernel_width": ("float", 0.1, 2.0, "log")})
    b = tuning.tune(f, X, R, "integrated_gradients", n_trials=2)
    table = tuning.rank([a, b])
    assert list(table.columns) == ["method", "held_out_abc", "held_out_se", "rank"]
    with pytest.raises(TuningLeakError, match="on='tuning'"):
        tuning.rank([a, b], on="tuning")
    c = tuning.tune(f, X, R, "integrated_gradients", n_trials=2, seed=3)
    with pytest.raises(TuningLeakError, match="another split"):
        tuning.rank([a, c])


def _tune_folder(path, held_pairs, tuning_pairs):
    path.mkdir()
    manifest = {"name": "t", "seed": 0, "config": {"data": {"recipe": "x"}, "tune": {}},
                "tune": {"mode": "insertion", "reference": "training_mean",
                         "split": {"tuning": tuning_pairs, "held_out": held_pairs}}}
    (path / "manifest.json").write_text(json.dumps(manifest))
    rows = [{"pair": p, "cluster": p, "method": m, "setting": s, "abc": v + 0.01 * p}
            for p in held_pairs for m, v0 in (("lime", 0.2), ("deeplift", 0.1))
            for s, v in (("tuned", v0 + 0.05), ("default", v0))]
    pd.DataFrame(rows).to_parquet(path / "held_out_abc.parquet")
    return path


def test_leaderboard_ranks_a_tune_run_on_held_out_pairs_and_refuses_tuning_pairs(tmp_path):
    from insdel.leaderboard import leaderboard

    ok = _tune_folder(tmp_path / "ok", [1, 3, 5, 7], [0, 2, 4, 6])
    board = leaderboard([ok], n_boot=50)
    assert set(board.blocks["method"]) == {"lime (tuned)", "lime (default)",
                                           "deeplift (tuned)", "deeplift (default)"}
    assert set(board.blocks["n_pairs"]) == {4}
    bad = _tune_folder(tmp_path / "bad", [1, 2, 3], [0, 2, 4])
    with pytest.raises(TuningLeakError, match=r"pair\(s\) \[2\] are tuning pairs"):
        leaderboard([bad], n_boot=50)


def test_insdel_tune_command_writes_the_split_in_the_manifest(tmp_path):
    from insdel.cli import main

    csv = small_csv(tmp_path / "d.csv")
    (tmp_path / "t.toml").write_text(f"""
name = "tune_small"
seed = 0
[data]
recipe = "table"
[data.options]
path = "{csv}"
target = "y"
scale = "none"
[model]
params = {{hidden = [4], dropout = 0.0, lr = 3e-3}}
max_epochs = 1
[methods]
names = ["lime"]
[methods.options.lime]
n_samples = 50
[tune]
n_trials = 2
n_targets = 8
""")
    out = tmp_path / "run"
    assert main(["tune", str(tmp_path / "t.toml"), "--out", str(out), "--no-progress"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    split = manifest["tune"]["split"]
    assert sorted(split["tuning"] + split["held_out"]) == list(range(8))
    held = pd.read_parquet(out / "held_out_abc.parquet")
    assert set(held["pair"]) == set(split["held_out"])
    summary = pd.read_csv(out / "tune_summary.csv")
    assert {"optimism", "gain", "held_out_abc", "tuning_abc"} <= set(summary.columns)
    for name in ("tune.csv", "trials.csv", "summary.md", "figures/tune.png"):
        assert (out / name).is_file()
    # insdel run refuses a [tune] table
    assert main(["run", str(tmp_path / "t.toml"), "--out", str(tmp_path / "r")]) == 1


def test_the_tune_table_is_checked_when_the_configuration_is_read(tmp_path):
    from insdel import config as C

    quick = C.load("tune_cern", quick=True)
    assert quick["tune"]["n_trials"] == 8 and quick["model"]["preset"] == "quick_cern"
    assert C.load("tune-cern")["tune"]["n_trials"] == 30
    base = {"name": "t", "data": {"recipe": "housing_sim"}, "model": {"preset": "quick_housing"},
            "methods": {"names": ["lime", "vanilla_grad"]}}
    for tune, match in (({"methods": ["vanilla_grad"]}, "no settings to tune"),
                        ({"methods": ["deeplift"]}, "not in methods.names"),
                        ({"mode": "both"}, "tune.mode"),
                        ({"reference": "no_such_policy"}, "tune.reference"),
                        ({"n_trials": 0}, "n_trials")):
        with pytest.raises(C.ConfigError, match=match):
            C.load({**base, "tune": tune})
    with pytest.raises(C.ConfigError, match="nothing to tune"):
        C.load({**base, "methods": {"names": ["vanilla_grad"]}, "tune": {}})


def test_space_of_keeps_the_settings_the_options_and_data_allow():
    ig = tuning.space_of("integrated_gradients")
    assert ig == {"n_steps": tuning.SPACES["integrated_gradients"]["n_steps"]}
    with_binary = tuning.space_of("integrated_gradients", options={"binary": [0]})
    assert set(with_binary) == {"n_steps", "binary_mode"}
    assert set(tuning.space_of("kernel_shap")) == {"n_samples"}  # background_size needs data
    assert set(tuning.space_of("kernel_shap", data=np.zeros((4, 2)))) == {"n_samples",
                                                                          "background_size"}
    with pytest.raises(ValueError, match=r"'occlusion' has no settings to tune.*deeplift"):
        tuning.space_of("occlusion")
    with pytest.raises(ValueError, match=r"deeplift's settings \(baseline\) need data="):
        tuning.space_of("deeplift")


def test_tune_result_row_is_the_summary_tables_row():
    split = tuning.Split(np.array([0, 2]), np.array([1, 3, 4]), 7, 0.5, 5)
    res = tuning.TuneResult(method="lime", mode="insertion", params={"n_samples": 100},
                            defaults={}, tuning=(0.4, 0.01), held_out=(0.3, 0.02),
                            default_held_out=(0.25, 0.02), gain=(0.05, 0.01),
                            optimism=(0.1, 0.03), split=split, trials=pd.DataFrame(),
                            held_out_abc=pd.DataFrame(), n_trials=3)
    row = res.row()
    assert row["method"] == "lime" and row["mode"] == "insertion" and row["n_trials"] == 3
    assert (row["tuning_abc"], row["tuning_se"]) == (0.4, 0.01)
    assert (row["held_out_abc"], row["held_out_se"]) == (0.3, 0.02)
    assert (row["default_held_out_abc"], row["gain"], row["optimism_se"]) == (0.25, 0.05, 0.03)
    assert np.isnan(row["tuning_gain"]) and np.isnan(row["gain_optimism_se"])  # not measured
    assert (row["tuning_pairs"], row["held_out_pairs"]) == (2, 3)
    assert split.record() == {"seed": 7, "tune_fraction": 0.5, "n_units": 5,
                              "tuning": [0, 2], "held_out": [1, 3, 4]}
