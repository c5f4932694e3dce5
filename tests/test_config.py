"""Experiment configurations (insdel.config): values checked when read, [quick], model.trust, and
relative paths read from the configuration file's folder."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from _runs import SMALL_MODEL, small_cfg, small_csv, small_toml

from insdel import config as C
from insdel import datasets, runner


def _cfg(csv: Path, **over) -> dict:
    return small_cfg(csv, "small", **over)


def _toml(folder: Path, csv: str | Path, **kw) -> Path:
    """The small run as ``folder/a.toml`` (or ``name=``); ``csv`` is data.options.path as written
    (a Path is written with forward slashes)."""
    return small_toml(folder, csv.as_posix() if isinstance(csv, Path) else csv, run="small", **kw)


# -- values checked when read ----------------------------------------------------------------------
@pytest.mark.parametrize("seed", [2.7, "2", True, -1])
def test_method_seed_is_an_integer_not_coerced(csv, seed):
    """methods.options.<m>.seed is an integer >= 0: 2.7, "2", true and -1 are errors, not coerced."""
    cfg = _cfg(csv, methods={"names": ["random"], "options": {"random": {"seed": seed}}})
    with pytest.raises(C.ConfigError, match=r"methods\.options\.random\.seed"):
        C.load(cfg)
    with pytest.raises((TypeError, ValueError), match=r"methods\.options\.random\.seed"):
        runner._method_options("random", {"seed": seed}, 5, None)
    assert runner._method_options("random", {"seed": 2}, 5, None)["seed"] \
        == runner._chunk_seed(2, 5)


@pytest.mark.parametrize("name", ["insdel", "captum"])
def test_method_engine_naming_an_implementation_is_its_backend(csv, name):
    """``[methods.options.kernel_shap] engine = "captum"`` (the implementation's former key) is
    read as ``backend``; beside ``backend`` it is an error, as are another per-method engine
    (the game's engine is [model] engine) and an unknown backend, each naming the key."""
    def cfg(opts):
        return _cfg(csv, methods={"names": ["kernel_shap"], "options": {"kernel_shap": opts}})

    loaded = C.load(cfg({"engine": name, "n_samples": 64}))
    assert loaded["methods"]["options"]["kernel_shap"] == {"backend": name, "n_samples": 64}
    assert runner._method_options("kernel_shap", loaded["methods"]["options"]["kernel_shap"],
                                  5, None)["backend"] == name
    with pytest.raises(C.ConfigError, match=r"methods\.options\.kernel_shap: engine = .*keep "
                                            "backend"):
        C.load(cfg({"engine": name, "backend": name}))
    with pytest.raises(C.ConfigError, match=r"methods\.options\.kernel_shap\.engine = 'tree'"
                                            r".*\[model\] engine"):
        C.load(cfg({"engine": "tree"}))
    with pytest.raises(C.ConfigError, match=r"methods\.options\.kernel_shap\.backend: 'numpy'"):
        C.load(cfg({"backend": "numpy"}))


def test_model_engine_reaches_the_methods_that_read_the_game(csv):
    """[model] engine is the engine= of the methods that read the game's values (absent at the
    default auto); the others (gradients, random) keep auto, where tree would refuse them; a
    captum backend keeps auto too."""
    opts = runner._method_options
    assert "engine" not in opts("kernel_shap", {}, 5, None)
    assert opts("kernel_shap", {}, 5, None, "tree")["engine"] == "tree"
    assert opts("exact_shapley", {}, 5, None, "black_box")["engine"] == "black_box"
    assert "engine" not in opts("random", {}, 5, None, "tree")
    assert "engine" not in opts("integrated_gradients", {}, 5, None, "tree")
    assert "engine" not in opts("kernel_shap", {"backend": "captum"}, 5, None, "tree")
    with pytest.raises(C.ConfigError, match="model.engine: 'trees'"):
        C.load(_cfg(csv, model={"params": {"hidden": [4], "dropout": 0.0, "lr": 3e-3},
                                "max_epochs": 1, "engine": "trees"}))


@pytest.mark.parametrize("label", ["../x", ".", "..", "a/b", "a\\b", "checkpoints", ""])
def test_policy_label_is_a_plain_folder_name(csv, label):
    """A policy's label names one folder in the run folder: not "." (its summary.csv would
    overwrite the run's), not "../x" (outside it), not "checkpoints" (files safe to delete)."""
    with pytest.raises(C.ConfigError, match=r"policies\[0\]\.label"):
        C.load(_cfg(csv, policies=[{"spec": "average", "label": label}]))
    assert C.policy_label(C.load(_cfg(csv, policies=[{"spec": "average", "label": "x.y"}]))[
        "policies"][0]) == "x.y"


def test_model_max_epochs_with_a_model_file_is_an_error(csv):
    """model.max_epochs beside model.path is an error (the file's model is not trained)."""
    with pytest.raises(C.ConfigError, match=r"model\.max_epochs.*model\.path"):
        C.load(_cfg(csv, model={"path": "m.pt", "max_epochs": 3}))


def test_model_params_values_are_not_coerced(csv):
    """model.params.batch_size = 2.7 is an error, not 2."""
    with pytest.raises(C.ConfigError, match=r"model\.params.*batch_size"):
        C.load(_cfg(csv, model={"params": {"hidden": [4], "dropout": 0.0, "lr": 1e-3,
                                           "batch_size": 2.7}}))


@pytest.mark.parametrize(("verdicts", "match"), [
    ({"margin": -0.1}, r"verdicts\.margin"), ({"margin": 0}, r"verdicts\.margin"),
    ({"level": 1.0}, r"verdicts\.level"), ({"adjust": "hlm"}, r"verdicts\.adjust.*holm"),
    ({"adjust": "none"}, r"verdicts\.adjust"), ({"relative": "yes"}, r"verdicts\.relative"),
    ({"n_resamples": 0}, r"verdicts\.n_resamples"), ({"margn": 0.2}, r"margn")])
def test_verdicts_table_is_checked(csv, verdicts, match):
    """[verdicts] (the margin of the equivalence test, its scale, the level, the adjustment):
    a margin of the wrong sign, a level of 1, an unknown adjustment or key are errors naming
    the key; the defaults are what the docs say, and they stay out of the leaderboard's
    configuration fingerprint (they change no ABC)."""
    with pytest.raises(C.ConfigError, match=match):
        C.load(_cfg(csv, verdicts=verdicts))
    cfg = C.load(_cfg(csv))
    assert cfg["verdicts"] == {"margin": 0.1, "relative": True, "level": 0.95, "adjust": "holm",
                               "n_resamples": 2000}
    from insdel.leaderboard_runs import config_fingerprint

    other = C.load(_cfg(csv, verdicts={"margin": 0.3, "relative": False, "adjust": "maxt"}))
    assert other["verdicts"]["margin"] == 0.3
    assert config_fingerprint({"config": cfg}) == config_fingerprint({"config": other})


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


def test_recipe_options_of_the_simulator_are_checked_when_read():
    with pytest.raises(C.ConfigError, match="n_events"):
        C.load({"data": {"recipe": "dielectron_sim", "options": {"n_event": 10}},
                "model": {"preset": "cern"}, "policies": [{"spec": "one_to_one"}]})


# -- a file name is not a shipped name; quick ------------------------------------------------------
def test_a_missing_toml_file_is_not_replaced_by_a_shipped_configuration(tmp_path, monkeypatch):
    """`insdel run demo.toml` in a folder without that file is an error, not the shipped demo."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"'demo\.toml' does not exist.*'demo'"):
        C.load("demo.toml")
    assert C.load("demo")["source"] == "insdel/shipped/configs/demo.toml"
    (tmp_path / "demo.toml").write_text(
        'name = "mine"\n[data]\nrecipe = "diabetes"\n[model]\npreset = "quick_housing"\n')
    assert C.load("demo.toml")["name"] == "mine"


def test_a_quick_flag_in_a_dict_is_not_ignored(csv):
    """{"quick": True} in a dict is read, not dropped: without a [quick] table it is an error."""
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


def test_quick_without_a_quick_table_is_an_error_naming_the_source(csv, tmp_path):
    """quick=True on a configuration without [quick] (or an empty one) is an error naming the
    source, not a full-size run recorded as quick."""
    with pytest.raises(C.ConfigError, match=r"^<dict>: quick=True .*has no \[quick\] table.*"
                                            r"without --quick"):
        C.load(_cfg(csv), quick=True)
    path = _toml(tmp_path, csv)
    with pytest.raises(C.ConfigError, match=rf"^{re.escape(str(path))}: .*no \[quick\] table"):
        C.load(path, quick=True)
    # an empty table applies nothing either
    empty = _toml(tmp_path, csv, quick="[quick]", name="empty.toml")
    with pytest.raises(C.ConfigError,
                       match=rf"^{re.escape(str(empty))}: .*an empty \[quick\] table"):
        C.load(empty, quick=True)
    with pytest.raises(C.ConfigError, match=r"^<dict>: .*an empty \[quick\] table"):
        C.load(_cfg(csv, quick={}), quick=True)
    # without quick both load; with a table quick applies it and says so
    assert C.load(path)["quick"] is False and C.load(empty)["quick"] is False
    cfg = C.load(_cfg(csv, quick={"targets": {"n": 4}}), quick=True)
    assert cfg["quick"] is True and cfg["targets"]["n"] == 4


def test_shipped_configurations_and_quick(tmp_path):
    """Every shipped configuration but demo (already small) has a [quick] table that changes
    something; demo with --quick is an error naming its file."""
    for name in C.available():
        if name == "demo":
            with pytest.raises(C.ConfigError,
                               match=r"^insdel/shipped/configs/demo\.toml: .*no \[quick\] table"):
                C.load(name, quick=True)
            continue
        full, quick = C.load(name), C.load(name, quick=True)
        assert quick["quick"] is True
        strip = {"quick", "sections"}
        assert {k: v for k, v in full.items() if k not in strip} != \
            {k: v for k, v in quick.items() if k not in strip}, name


# -- model.trust only with model.path --------------------------------------------------------------
def test_model_trust_without_a_path_is_an_error_naming_the_key(csv, tmp_path):
    """model.trust is read only with model.path: with a preset or params it is an error."""
    with pytest.raises(C.ConfigError, match=r"^<dict>: model\.trust = true .*model\.params "
                                            r"\(no path\).*remove model\.trust"):
        C.load(_cfg(csv, model={**_cfg(csv)["model"], "trust": True}))
    with pytest.raises(C.ConfigError, match=r"model\.trust = true .*model\.preset"):
        C.load(_cfg(csv, model={"preset": "quick_housing", "trust": True}))
    path = _toml(tmp_path, csv, model=SMALL_MODEL + "\ntrust = true")
    with pytest.raises(C.ConfigError, match=rf"^{re.escape(str(path))}: model\.trust"):
        C.load(path)
    # through the [quick] table or overrides, too
    with pytest.raises(C.ConfigError, match=r"model\.trust"):
        C.load(_cfg(csv, quick={"model": {"trust": True}}), quick=True)
    with pytest.raises(C.ConfigError, match=r"model\.trust"):
        C.load(_cfg(csv), overrides={"model": {"trust": True}})
    # false is what not giving it means; with a path it is read
    cfg = C.load(_cfg(csv, model={**_cfg(csv)["model"], "trust": False}))
    assert cfg["model"]["trust"] is False
    cfg = C.load(_cfg(csv, model={"path": str(tmp_path / "m.joblib"), "trust": True}))
    assert cfg["model"]["trust"] is True


# -- relative paths are relative to the configuration file's folder --------------------------------
@pytest.fixture
def layout(tmp_path, monkeypatch):
    """``tmp/exp/a.toml`` with ``path = "t.csv"`` and ``tmp/exp/t.csv``; the current folder is
    ``tmp/elsewhere`` (empty)."""
    exp = tmp_path / "exp"
    exp.mkdir()
    csv = small_csv(exp / "t.csv")
    cfg = _toml(exp, "t.csv")
    here = tmp_path / "elsewhere"
    here.mkdir()
    monkeypatch.chdir(here)
    return cfg, csv, here


def _same(a, b) -> bool:
    return os.path.samefile(a, b)


def test_relative_csv_is_read_next_to_the_config_from_another_folder(layout, tmp_path, capsys):
    cfg_path, csv, here = layout
    for given in (cfg_path, "../exp/a.toml", os.path.relpath(cfg_path, here)):
        cfg = C.load(given)
        p = cfg["data"]["options"]["path"]
        assert Path(p).is_absolute() and _same(p, csv), (given, p)
    # the run reads, prints and records that file (from elsewhere/ too)
    res = runner.run_experiment("../exp/a.toml", tmp_path / "out", verbose=True)
    m = json.loads((res.out / "manifest.json").read_text())
    assert _same(m["data"]["file"], csv) and m["data"]["file"] == str(csv.resolve())
    assert m["config"]["data"]["options"]["path"] == cfg["data"]["options"]["path"]
    assert str(csv.resolve()) in capsys.readouterr().err
    assert not (here / "t.csv").exists()


def test_run_from_the_config_folder_is_unchanged(layout, monkeypatch):
    """The docs' examples run from the configuration's own folder: both readings are one file."""
    cfg_path, csv, _ = layout
    monkeypatch.chdir(cfg_path.parent)
    cfg = C.load("a.toml")
    assert cfg["data"]["options"]["path"] == str(cfg_path.parent.resolve() / "t.csv")
    assert _same(cfg["data"]["options"]["path"], csv)


def test_subfolder_and_parent_relative_paths(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    csv = small_csv(data / "t.csv")
    cfg_path = _toml(tmp_path / "exp", "../data/t.csv")
    monkeypatch.chdir(tmp_path / "exp")  # "../data/t.csv" from here is the same file: no error
    assert _same(C.load(cfg_path)["data"]["options"]["path"], csv)
    monkeypatch.chdir(tmp_path)  # "../data/t.csv" from here does not exist: the config's is read
    cfg = C.load("exp/a.toml")
    assert cfg["data"]["options"]["path"] == str(tmp_path.resolve() / "exp" / ".." / "data" / "t.csv")
    assert _same(cfg["data"]["options"]["path"], csv)


def test_missing_next_to_the_config_but_present_in_cwd_is_an_error(tmp_path, monkeypatch):
    cfg_path = _toml(tmp_path / "exp", "t.csv")  # no exp/t.csv
    here = tmp_path / "elsewhere"
    here.mkdir()
    small_csv(here / "t.csv")
    monkeypatch.chdir(here)
    mine, cwd = cfg_path.parent.resolve() / "t.csv", Path.cwd() / "t.csv"
    with pytest.raises(C.ConfigError) as err:
        C.load(cfg_path)
    msg = str(err.value)
    assert msg.startswith(f"{cfg_path}: data.options.path = 't.csv'")
    assert str(mine) in msg and str(cwd) in msg and "does not exist" in msg
    assert "relative to the configuration file's folder" in msg and "absolute path" in msg


def test_two_different_files_of_that_name_is_an_error(layout):
    cfg_path, csv, here = layout
    (here / "t.csv").write_text("a,flag,y,b\n1,0,2,3\n")  # another file of the same name
    with pytest.raises(C.ConfigError,
                       match=rf"data\.options\.path = 't\.csv' names two different files: "
                             rf"{re.escape(str(csv.parent.resolve() / 't.csv'))} .*"
                             rf"{re.escape(str(Path.cwd() / 't.csv'))} .*absolute path"):
        C.load(cfg_path)


def test_the_same_file_from_both_folders_is_not_an_error(layout):
    cfg_path, csv, here = layout
    (here / "t.csv").symlink_to(csv)
    assert _same(C.load(cfg_path)["data"]["options"]["path"], csv)
    assert Path(C.load(cfg_path)["data"]["options"]["path"]).parent == csv.parent.resolve()


def test_neither_exists_keeps_the_config_relative_path(tmp_path, monkeypatch):
    """Nothing to switch to: the path is stored next to the configuration, and the recipe's error
    names that file when the run reads it."""
    cfg_path = _toml(tmp_path / "exp", "gone.csv")
    monkeypatch.chdir(tmp_path)
    cfg = C.load(cfg_path)
    want = str(cfg_path.parent.resolve() / "gone.csv")
    assert cfg["data"]["options"]["path"] == want
    with pytest.raises(FileNotFoundError, match=re.escape(want)):
        runner._load_dataset(cfg)


def test_model_path_is_relative_to_the_config(layout):
    cfg_path, csv, here = layout
    (cfg_path.parent / "m.pt").write_bytes(b"next to the config")
    cfg_path = _toml(cfg_path.parent, "t.csv", model='path = "m.pt"', name="m.toml")
    assert C.load(cfg_path)["model"]["path"] == str(cfg_path.parent.resolve() / "m.pt")
    (here / "m.pt").write_bytes(b"another model")
    with pytest.raises(C.ConfigError, match=r"model\.path = 'm\.pt' names two different files: "
                                            rf"{re.escape(str(cfg_path.parent.resolve()))}.*"
                                            rf"{re.escape(str(here))}"):
        C.load(cfg_path)
    (cfg_path.parent / "m.pt").unlink()
    with pytest.raises(C.ConfigError, match=r"model\.path = 'm\.pt': .*does not exist, but "
                                            rf"{re.escape(str(here / 'm.pt'))} .*does"):
        C.load(cfg_path)


def test_real_options_path_is_relative_to_the_config(layout):
    cfg_path, csv, here = layout
    real = 'real_recipe = "dielectron"\nreal_options = {path = "real.csv"}'
    cfg_path = _toml(cfg_path.parent, "t.csv", real=real, name="r.toml")
    cfg = C.load(cfg_path)
    assert cfg["data"]["real_options"]["path"] == str(cfg_path.parent.resolve() / "real.csv")
    (here / "real.csv").write_text("x\n")
    with pytest.raises(C.ConfigError, match=r"data\.real_options\.path = 'real\.csv'"):
        C.load(cfg_path)


def test_quick_table_paths_are_relative_to_the_config(layout):
    cfg_path, csv, here = layout
    folder = cfg_path.parent.resolve()
    small_csv(folder / "small.csv")
    (folder / "m.pt").write_bytes(b"m")
    (folder / "q.pt").write_bytes(b"q")
    quick = '[quick.data.options]\npath = "small.csv"\n[quick.model]\npath = "q.pt"'
    cfg_path = _toml(folder, "t.csv", model='path = "m.pt"', quick=quick, name="q.toml")
    cfg = C.load(cfg_path, quick=True)
    assert cfg["data"]["options"]["path"] == str(folder / "small.csv")
    assert cfg["model"]["path"] == str(folder / "q.pt")
    full = C.load(cfg_path)
    assert full["data"]["options"]["path"] == str(folder / "t.csv")
    assert full["model"]["path"] == str(folder / "m.pt")
    (here / "small.csv").write_text("other\n")
    C.load(cfg_path)  # the [quick] table is read only with quick=True
    with pytest.raises(C.ConfigError, match=r"quick\.data\.options\.path = 'small\.csv' names "
                                            r"two different files"):
        C.load(cfg_path, quick=True)


def test_only_the_path_that_is_read_is_checked(layout):
    """A file path replaced by the [quick] table or by overrides is not read: no error for it."""
    cfg_path, csv, here = layout
    folder = cfg_path.parent.resolve()
    (here / "t.csv").write_text("another file of that name\n")
    with pytest.raises(C.ConfigError, match=r"^\S+a\.toml: data\.options\.path = 't\.csv'"):
        C.load(cfg_path)
    small_csv(folder / "small.csv")
    quick = '[quick.data.options]\npath = "small.csv"'
    q = _toml(folder, "t.csv", quick=quick, name="q2.toml")
    assert C.load(q, quick=True)["data"]["options"]["path"] == str(folder / "small.csv")
    over = C.load(cfg_path, overrides={"data": {"options": {"path": str(csv)}}})
    assert over["data"]["options"]["path"] == str(csv)


def test_absolute_path_is_unchanged(layout):
    cfg_path, csv, here = layout
    (here / "t.csv").write_text("another file of that name\n")
    p = _toml(cfg_path.parent, csv.as_posix(), name="abs.toml")
    assert C.load(p)["data"]["options"]["path"] == str(csv)


def test_home_is_expanded(layout, monkeypatch, tmp_path):
    cfg_path, csv, here = layout
    monkeypatch.setenv("HOME", str(tmp_path / "exp"))
    p = _toml(cfg_path.parent, "~/t.csv", name="home.toml")
    assert C.load(p)["data"]["options"]["path"] == str(tmp_path / "exp" / "t.csv")


def test_dict_configs_and_overrides_stay_relative_to_the_current_folder(layout, tmp_path):
    cfg_path, csv, here = layout
    mine = small_csv(here / "mine.csv")
    cfg = C.load(small_cfg(Path("mine.csv"), "d"))
    assert cfg["data"]["options"]["path"] == "mine.csv"  # as given: read from the current folder
    info = runner._dataset_info(cfg, runner._load_dataset(cfg))
    assert info["file"] == str(mine.resolve())
    over = C.load(cfg_path, overrides={"data": {"options": {"path": "mine.csv"}}})
    assert over["data"]["options"]["path"] == "mine.csv"
    # the file's own other keys are still resolved against its folder
    over = C.load(cfg_path, overrides={"model": {"params": None, "max_epochs": None,
                                                 "path": "m.pt"}})
    assert over["model"]["path"] == "m.pt" and _same(over["data"]["options"]["path"], csv)


def test_dict_config_home_path_is_reported_with_its_file_and_hash(layout, monkeypatch, tmp_path):
    """The run's data record expands ``~`` as the recipe does: the file and its hash, not ./~/t.csv."""
    cfg_path, csv, here = layout
    monkeypatch.setenv("HOME", str(tmp_path / "exp"))
    cfg = C.load(small_cfg(Path("~/t.csv"), "h"))
    info = runner._dataset_info(cfg, datasets.load("table", **cfg["data"]["options"]))
    assert info["file"] == str(csv.resolve()) and len(info["file_sha256"]) == 64


def _with_policy(path: Path, spec: str) -> Path:
    text = path.read_text(encoding="utf-8").replace('spec = {policy = "median"}', f'spec = "{spec}"')
    path.write_text(text, encoding="utf-8")
    return path


def test_a_policy_spec_file_is_relative_to_the_config_too(tmp_path, monkeypatch):
    exp, elsewhere = tmp_path / "exp", tmp_path / "elsewhere"
    small_csv(exp.parent / "t.csv")
    cfg_path = _with_policy(_toml(exp, "../t.csv"), "mine.toml")
    (exp / "mine.toml").write_text('policy = "median"\nname = "mine"\n', encoding="utf-8")
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    cfg = C.load(cfg_path)
    assert cfg["policies"][0]["spec"] == str(exp / "mine.toml")
    assert C.policy_label(cfg["policies"][0]) == "mine"
    (elsewhere / "mine.toml").write_text('policy = "average"\n', encoding="utf-8")
    with pytest.raises(C.ConfigError, match=r"policies\[0\]\.spec.*two different files"):
        C.load(cfg_path)


@pytest.mark.parametrize("spec", ["average", "cern_counterfactual", "cern_counterfactual.toml"])
def test_policy_names_stay_names(tmp_path, monkeypatch, spec):
    exp = tmp_path / "exp"
    cfg_path = _with_policy(_toml(exp, "t.csv"), spec)
    small_csv(exp / "t.csv")
    monkeypatch.chdir(tmp_path)
    assert C.load(cfg_path)["policies"][0]["spec"] == spec


# -- [removal] -------------------------------------------------------------------------------------
def test_removal_defaults_to_the_baseline_alone(csv):
    assert C.load(_cfg(csv))["removal"] == {"kinds": ["baseline"], "n_random": None,
                                            "attributions": "baseline"}
    cfg = C.load(_cfg(csv, removal={"kinds": ["baseline", "marginal"],
                                    "marginal": {"n_references": 5, "how": "nearest"}}))
    assert cfg["removal"]["kinds"] == ["baseline", "marginal"]
    assert cfg["removal"]["marginal"] == {"n_references": 5, "how": "nearest"}


@pytest.mark.parametrize("removal,match", [
    ({"kinds": ["baseline", "marginl"]},
     r"removal\.kinds: unknown removal 'marginl'; did you mean 'marginal'\?"),
    ({"kinds": "marginal"}, r"removal\.kinds must be a list; got 'marginal'"),
    ({"kinds": []}, r"removal\.kinds must name at least one removal"),
    ({"kinds": ["marginal", "marginal"]}, r"removal\.kinds names a removal twice"),
    ({"kinds": [3]}, r"removal\.kinds must be a list of removal names; got 3"),
    ({"kinds": ["marginal"], "marginal": {"n_refs": 3}},
     r"unknown key 'removal\.marginal\.n_refs'; did you mean 'n_references'\?"),
    ({"kinds": ["baseline"], "marginal": {"n_refs": 3}},  # checked even when not used
     r"unknown key 'removal\.marginal\.n_refs'"),
    ({"kinds": ["marginal"], "marginal": {"background": [[0.0]]}},
     r"removal\.marginal\.background: the run gives marginal its training rows"),
    ({"kinds": ["marginal"], "marginal": {"how": "rand"}}, r"removal\.marginal: .*how"),
    ({"kinds": ["marginal"], "marginal": {"n_references": 0}},
     r"removal\.marginal: .*n_references"),
    ({"kinds": ["marginal"], "marginl": {"n_references": 3}},
     r"\[removal\.marginl\]: unknown removal 'marginl'; did you mean 'marginal'\?"),
    ({"kinds": ["baseline"], "kind": 3}, r"unknown key 'removal\.kind'; did you mean 'kinds'\?"),
    ({"kinds": ["baseline"], "baseline": {"x": 1}},
     r"unknown key 'removal\.baseline\.x' \(valid keys: none\)"),
])
def test_removal_errors_name_the_key(csv, removal, match):
    with pytest.raises(C.ConfigError, match=match):
        C.load(_cfg(csv, removal=removal))


def test_removal_in_a_toml_file_and_its_quick_table(tmp_path, csv):
    path = _toml(tmp_path, csv, quick='[quick.removal.marginal]\nn_references = 2\n')
    path.write_text(path.read_text() + '\n[removal]\nkinds = ["baseline", "marginal"]\n'
                    '[removal.marginal]\nn_references = 4\nhow = "random"\n')
    assert C.load(path)["removal"]["marginal"] == {"n_references": 4, "how": "random"}
    assert C.load(path, quick=True)["removal"]["marginal"] == {"n_references": 2,
                                                                "how": "random"}
    bad = tmp_path / "bad.toml"
    bad.write_text(path.read_text().replace("how = ", "hw = "))
    with pytest.raises(C.ConfigError, match=r"bad\.toml: unknown key 'removal\.marginal\.hw'; "
                                            r"did you mean 'how'\?"):
        C.load(bad)
    # `insdel roar` reads no [removal]
    with pytest.raises(C.ConfigError, match="removal"):
        C.check_sections(C.load(path), "roar")


def test_the_shipped_removal_variants_load_and_take_a_subset(csv):
    for name in ("paper_cern_removals", "paper_bangalore_removals"):
        cfg = C.load(name, quick=True)
        assert cfg["removal"]["kinds"] == ["baseline", "marginal", "conditional_gaussian"]
        assert cfg["removal"]["marginal"]["n_references"] == 20
        sub = C.load(name, quick=True, overrides={"removal": {"kinds": ["baseline", "marginal"]}})
        assert sub["removal"]["kinds"] == ["baseline", "marginal"]
        plain = C.load(name.replace("_removals", ""), quick=True)
        strip = ("name", "description", "removal", "source", "sections")
        assert {k: v for k, v in cfg.items() if k not in strip} == \
            {k: v for k, v in plain.items() if k not in strip}, name
    assert C.PAPER_CONFIGS["paper-cern-removals"] == "paper_cern_removals"
    assert C.PAPER_CONFIGS["paper-bangalore-removals"] == "paper_bangalore_removals"
