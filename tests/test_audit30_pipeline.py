"""Audit 30 of the pipeline (config, runner, checkpoints, CLI): each test pins one fixed silent
wrong result (a stale model cache key, a chunk reused across models, a coerced seed, an old
manifest above new files, a policy folder outside its place, an unread or swapped setting)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from _runs import small_cfg, small_csv  # noqa: E402

from insdel import config as C  # noqa: E402
from insdel import runner  # noqa: E402


def _csv(path: Path) -> Path:
    return small_csv(path)


def _cfg(csv: Path, **over) -> dict:
    return small_cfg(csv, "a30", **over)


@pytest.fixture
def csv(tmp_path) -> Path:
    return _csv(tmp_path / "t.csv")


def test_model_cache_key_is_not_left_beside_another_model(csv, tmp_path, monkeypatch):
    """A run killed after saving its model.pt but before writing model.key left the previous
    run's key beside the new model: the previous configuration then loaded the wrong model."""
    out = tmp_path / "out"
    a = _cfg(csv)
    b = _cfg(csv, model={"params": {"hidden": [6], "dropout": 0.0, "lr": 3e-3}, "max_epochs": 1})
    sha_a = runner.run_experiment(a, out).manifest["model"]["sha256"]
    write = runner.ck.atomic_write_text

    def killed(path, text):
        if Path(path).name == "model.key":
            raise KeyboardInterrupt
        return write(path, text)

    monkeypatch.setattr(runner.ck, "atomic_write_text", killed)
    with pytest.raises(KeyboardInterrupt):
        runner.run_experiment(b, out)
    monkeypatch.setattr(runner.ck, "atomic_write_text", write)
    again = runner.run_experiment(a, out)
    assert again.manifest["model"]["source"] == "trained"
    assert again.manifest["model"]["sha256"] == sha_a


class _Lin(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 1)

    def forward(self, x):
        return self.lin(x)


class _Squared(_Lin):
    def forward(self, x):
        return self.lin(x) ** 2


def test_chunks_of_a_torchscript_model_are_keyed_by_its_file(csv, tmp_path):
    """Two TorchScript files with the same weights and another forward have the same parameter
    hash: the second run reused the first one's attribution chunks."""
    torch.manual_seed(0)
    a, b = _Lin(), _Squared()
    b.load_state_dict(a.state_dict())
    torch.jit.save(torch.jit.script(a), str(tmp_path / "a.pt"))
    torch.jit.save(torch.jit.script(b), str(tmp_path / "b.pt"))
    out = tmp_path / "out"
    runner.run_experiment(_cfg(csv, model={"path": str(tmp_path / "a.pt")}), out)
    res = runner.run_experiment(_cfg(csv, model={"path": str(tmp_path / "b.pt")}), out)
    assert res.manifest["compute"]["stages"]["median/attributions/vanilla_grad"][
        "chunks_resumed"] == 0
    runner.run_experiment(_cfg(csv, model={"path": str(tmp_path / "b.pt")}), tmp_path / "clean")
    got = np.load(out / "median" / "attributions.npz")["vanilla_grad"]
    want = np.load(tmp_path / "clean" / "median" / "attributions.npz")["vanilla_grad"]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", [2.7, "2", True, -1])
def test_method_seed_is_an_integer_not_coerced(csv, seed):
    """methods.options.<m>.seed = 2.7 ran with seed 2 ("2" too, true with 1)."""
    cfg = _cfg(csv, methods={"names": ["random"], "options": {"random": {"seed": seed}}})
    with pytest.raises(C.ConfigError, match=r"methods\.options\.random\.seed"):
        C.load(cfg)
    with pytest.raises((TypeError, ValueError), match=r"methods\.options\.random\.seed"):
        runner._method_options("random", {"seed": seed}, 5, None)
    assert runner._method_options("random", {"seed": 2}, 5, None)["seed"] \
        == runner._chunk_seed(2, 5)


def test_a_rerun_removes_the_old_manifest_before_rewriting(csv, tmp_path, monkeypatch):
    """A second run on the same folder stopped half-way left the first run's manifest above
    files it had already replaced: load_results (and the leaderboard) read a finished run with
    the first configuration and the second one's numbers."""
    out = tmp_path / "out"
    runner.run_experiment(_cfg(csv), out)
    assert set(runner.load_results(out)) == {"median"}

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    from insdel.runner.stages import metrics as metrics_stage

    monkeypatch.setattr(metrics_stage, "run", stop)  # after the policy's abc.parquet
    with pytest.raises(KeyboardInterrupt):
        runner.run_experiment(_cfg(csv, seed=1), out)
    assert (out / "median" / "abc.parquet").exists()
    with pytest.raises(FileNotFoundError, match="no manifest"):
        runner.load_results(out)


@pytest.mark.parametrize("label", ["../x", ".", "..", "a/b", "a\\b", "checkpoints", ""])
def test_policy_label_is_a_plain_folder_name(csv, label):
    """label = "." wrote the policy's files into the run folder (its summary.csv overwritten by
    the run's), "../x" outside it, "checkpoints" among the files safe to delete."""
    with pytest.raises(C.ConfigError, match=r"policies\[0\]\.label"):
        C.load(_cfg(csv, policies=[{"spec": "average", "label": label}]))
    assert C.policy_label(C.load(_cfg(csv, policies=[{"spec": "average", "label": "x.y"}]))[
        "policies"][0]) == "x.y"


def test_model_max_epochs_with_a_model_file_is_an_error(csv):
    """model.max_epochs beside model.path was never read (the file's model is not trained)."""
    with pytest.raises(C.ConfigError, match=r"model\.max_epochs.*model\.path"):
        C.load(_cfg(csv, model={"path": "m.pt", "max_epochs": 3}))


def test_model_params_values_are_not_coerced(csv):
    """model.params.batch_size = 2.7 trained with 2."""
    with pytest.raises(C.ConfigError, match=r"model\.params.*batch_size"):
        C.load(_cfg(csv, model={"params": {"hidden": [4], "dropout": 0.0, "lr": 1e-3,
                                           "batch_size": 2.7}}))


def test_repeated_figures_compare_and_roar_orderings_are_errors(csv):
    with pytest.raises(C.ConfigError, match=r"figures\.compare names a method twice"):
        C.load(_cfg(csv, figures={"compare": ["random", "random"]}))
    roar = {k: v for k, v in _cfg(csv).items()
            if k in ("name", "seed", "data", "model", "methods")}
    C.load({**roar, "roar": {"orderings": ["absolute"]}})
    with pytest.raises(C.ConfigError, match=r"roar\.orderings names an ordering twice"):
        C.load({**roar, "roar": {"orderings": ["absolute", "absolute"]}})
    with pytest.raises(C.ConfigError, match=r"roar\.orderings must name"):
        C.load({**roar, "roar": {"orderings": []}})


def test_a_missing_toml_file_is_not_replaced_by_a_shipped_configuration(tmp_path, monkeypatch):
    """`insdel run demo.toml` in a folder without that file ran the shipped demo."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"'demo\.toml' does not exist.*'demo'"):
        C.load("demo.toml")
    assert C.load("demo")["source"] == "insdel/configs/demo.toml"
    (tmp_path / "demo.toml").write_text(
        'name = "mine"\n[data]\nrecipe = "diabetes"\n[model]\npreset = "quick_housing"\n')
    assert C.load("demo.toml")["name"] == "mine"


def test_a_quick_flag_in_a_dict_is_not_ignored(csv):
    """{"quick": True} in a dict was dropped without a word: the full sizes ran."""
    with pytest.raises(C.ConfigError, match=r"quick = True"):
        C.load({**_cfg(csv), "quick": True})
    # the key 'quick' of a dict is its flag or its [quick] table: a flag leaves no overrides, and
    # quick=True without overrides is an error (full sizes recorded as quick)
    with pytest.raises(C.ConfigError, match=r"no \[quick\] table"):
        C.load({**_cfg(csv), "quick": True}, quick=True)
    assert C.load({**_cfg(csv), "quick": False})["quick"] is False


def test_no_policies_after_the_quick_overrides_is_an_error(csv):
    with pytest.raises(C.ConfigError, match=r"policies must name at least one policy"):
        C.load({**_cfg(csv), "quick": {"policies": []}}, quick=True)


def test_fewer_test_rows_than_targets_n_is_said(csv, tmp_path, capsys):
    """targets.n larger than the test split took every test row without saying so."""
    runner.run_experiment(_cfg(csv, targets={"n": 500}), tmp_path / "out", verbose=True)
    assert "targets: all 12 test rows (targets.n = 500" in capsys.readouterr().err


# -- review fixes (session 30) ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../x", "a/b", ".", ""])
def test_a_run_name_that_is_not_a_folder_name_is_an_error(csv, tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="plain folder name"):
        runner.run_experiment(_cfg(csv, name=name))
    assert not (tmp_path.parent / "x").exists()


def test_recipe_options_of_the_simulator_are_checked_when_read():
    with pytest.raises(C.ConfigError, match="n_events"):
        C.load({"data": {"recipe": "dielectron_sim", "options": {"n_event": 10}},
                "model": {"preset": "cern"}, "policies": [{"spec": "one_to_one"}]})


def test_roar_refuses_repeated_or_no_orderings():
    from insdel.roar import roar

    with pytest.raises(ValueError, match="twice"):
        roar(None, None, params=None, orderings=["random", "random"])
    with pytest.raises(ValueError, match="at least one"):
        roar(None, None, params=None, orderings=[])


@pytest.mark.parametrize("opt", ["--device", "--scheduler"])
def test_an_empty_cli_option_is_an_error(opt, capsys):
    from insdel.cli import main

    assert main(["run", "demo", opt, ""]) == 1
    assert f"{opt} is empty" in capsys.readouterr().err
