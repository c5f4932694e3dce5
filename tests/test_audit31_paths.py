"""Audit 31 of input paths in configuration files: a relative ``data.options.path`` or
``model.path`` was read from the current folder, not the configuration file's folder, so
``insdel run experiments/a.toml`` started elsewhere failed, or silently read another file of the
same name. They are now relative to the file's folder (stored absolute), and a relative path that
the current folder would resolve to another existing file is an error naming both."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from _runs import small_cfg, small_csv, small_toml  # noqa: E402

from insdel import config as C  # noqa: E402
from insdel import datasets, runner  # noqa: E402


def _toml(folder: Path, csv: str, **kw) -> Path:
    return small_toml(folder, csv, run="a31p", **kw)


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


# -- 1. the file next to the configuration is found from any folder -------------------------------
def test_relative_csv_is_read_next_to_the_config_from_another_folder(layout, tmp_path, capsys):
    cfg_path, csv, here = layout
    for given in (cfg_path, "../exp/a.toml", os.path.relpath(cfg_path, here)):
        cfg = C.load(given)
        p = cfg["data"]["options"]["path"]
        assert Path(p).is_absolute() and _same(p, csv), (given, p)
    # the run reads, prints and records that file (before: FileNotFoundError from elsewhere/)
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


# -- 2. a relative path the current folder resolves otherwise is an error naming both ---------------
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


# -- 3. model.path, real_options.path and the [quick] table ---------------------------------------
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


# -- 4. absolute paths, ~, dicts and overrides ----------------------------------------------------
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
    """The run's data record expands ``~`` as the recipe does (it named ./~/t.csv, no hash)."""
    cfg_path, csv, here = layout
    monkeypatch.setenv("HOME", str(tmp_path / "exp"))
    cfg = C.load(small_cfg(Path("~/t.csv"), "h"))
    info = runner._dataset_info(cfg, datasets.get("table", **cfg["data"]["options"]))
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
