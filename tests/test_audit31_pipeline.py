"""Audit 31 of the pipeline (config, runner, CLI): each test pins one fixed silent wrong result:
--quick on a configuration without [quick] ran at full size recorded as quick, model.trust /
--trust-model were silently unread without model.path, a rerun's manifest hashed an earlier
run's policy folders as its own; and the CLI's lock / unfinish are public runner functions."""

from __future__ import annotations

import inspect
import json
import re
import shutil
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from _runs import SMALL_MODEL, small_cfg, small_csv, small_toml  # noqa: E402

import insdel  # noqa: E402
from insdel import _checkpoint as ck  # noqa: E402
from insdel import cli, runner  # noqa: E402
from insdel import config as C  # noqa: E402


def _csv(path: Path) -> Path:
    return small_csv(path)


def _cfg(csv: Path, **over) -> dict:
    return small_cfg(csv, "a31", **over)


def _toml(tmp_path: Path, csv: Path, *, name: str = "a31.toml", **kw) -> Path:
    return small_toml(tmp_path, csv.as_posix(), run="a31", name=name, **kw)


@pytest.fixture
def csv(tmp_path) -> Path:
    return _csv(tmp_path / "t.csv")


def _files(out: Path) -> set[str]:
    return set(json.loads((out / "manifest.json").read_text())["files"])


# -- 1. --quick without a [quick] table ---------------------------------------------------------
def test_quick_without_a_quick_table_is_an_error_naming_the_source(csv, tmp_path):
    """quick=True on a configuration without [quick] ran at full size and recorded quick: true."""
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


def test_quick_without_a_quick_table_stops_run_and_roar_before_writing(csv, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(C.ConfigError, match=r"no \[quick\] table"):
        insdel.run_experiment(_cfg(csv), out, quick=True)
    roar_cfg = {k: v for k, v in _cfg(csv).items()
                if k in C.ROAR_SECTIONS} | {"roar": {"orderings": ["random"]}}
    with pytest.raises(C.ConfigError, match=r"no \[quick\] table"):
        runner.run_roar(roar_cfg, out, quick=True)
    assert not out.exists()


def test_shipped_configurations_and_quick(tmp_path):
    """Every shipped configuration but demo (already small) has a [quick] table that changes
    something; demo with --quick is an error naming its file."""
    for name in C.available():
        if name == "demo":
            with pytest.raises(C.ConfigError,
                               match=r"^insdel/configs/demo\.toml: .*no \[quick\] table"):
                C.load(name, quick=True)
            continue
        full, quick = C.load(name), C.load(name, quick=True)
        assert quick["quick"] is True
        strip = {"quick", "sections"}
        assert {k: v for k, v in full.items() if k not in strip} != \
            {k: v for k, v in quick.items() if k not in strip}, name


def test_cli_quick_without_a_quick_table(csv, tmp_path, capsys):
    path = _toml(tmp_path, csv)
    out = tmp_path / "out"
    assert cli.main(["run", str(path), "--quick", "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"insdel: error: {path}: quick=True (--quick)")
    assert "no [quick] table" in err and not out.exists()
    assert cli.main(["run", "demo", "--quick", "--out", str(out), "--no-progress"]) == 1
    assert "insdel/configs/demo.toml" in capsys.readouterr().err and not out.exists()


# -- 2. model.trust / --trust-model without model.path ------------------------------------------
def test_model_trust_without_a_path_is_an_error_naming_the_key(csv, tmp_path):
    """model.trust was read only with model.path: with a preset or params it was ignored."""
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


class _Stop(Exception):
    """Raised by the stand-in runner: the configuration it was given is what the test reads."""


def test_cli_trust_model_without_a_path_is_an_error_naming_the_flag(csv, tmp_path, capsys,
                                                                   monkeypatch):
    path = _toml(tmp_path, csv)
    out = tmp_path / "out"
    assert cli.main(["run", str(path), "--trust-model", "--out", str(out),
                     "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("insdel: error: --trust-model ")
    assert f"{path} has no model.path" in err and "model.params" in err and not out.exists()
    assert cli.main(["run", "demo", "--trust-model", "--out", str(out), "--no-progress"]) == 1
    assert "--trust-model" in (err := capsys.readouterr().err) and "model.preset" in err

    # with a path, the flag reaches the configuration (and only then)
    seen = []

    def fake_run(cfg, *a, **k):
        seen.append(cfg)
        raise _Stop

    monkeypatch.setattr(runner, "run_experiment", fake_run)
    with_path = _toml(tmp_path, csv, model=f'path = "{(tmp_path / "m.joblib").as_posix()}"',
                      name="p.toml")
    for flag, trusted in ((["--trust-model"], True), ([], False)):
        with pytest.raises(_Stop):
            cli.main(["run", str(with_path), *flag, "--out", str(out), "--no-progress",
                      "--device", "cpu"])
        assert seen[-1]["model"]["trust"] is trusted
        assert seen[-1]["compute"]["device"] == "cpu"


# -- 3. the manifest lists this run's files only ------------------------------------------------
def test_rerun_with_fewer_policies_leaves_the_old_folder_out_of_the_manifest(csv, tmp_path,
                                                                             capsys):
    """A rerun with fewer policies hashed the earlier run's policy folders into its manifest."""
    out = tmp_path / "out"
    two = _cfg(csv, policies=[{"spec": {"policy": "median"}},
                              {"spec": {"policy": "median"}, "label": "second"}])
    first = runner.run_experiment(two, out)
    assert {"median/abc.parquet", "second/abc.parquet"} <= set(first.manifest["files"])
    assert "note:" not in capsys.readouterr().err  # a fresh folder: nothing stale
    (out / "notes.txt").write_text("mine\n")  # a user's file: never deleted, never hashed
    before = {p: p.read_bytes() for p in (out / "second").iterdir()}

    again = runner.run_experiment(_cfg(csv), out)
    err = capsys.readouterr().err
    files = _files(out)
    assert files == set(again.manifest["files"])
    assert not any(f.startswith("second/") for f in files) and "notes.txt" not in files
    assert {"median/abc.parquet", "median/curves.npz", "summary.csv", "summary.md",
            "diagnostics.csv"} <= files
    # the cached model the rerun loaded is this run's model
    assert again.manifest["model"]["source"] == "cache" and {"model.pt", "model.key"} <= files
    for rel, digest in again.manifest["files"].items():
        assert ck.sha256_file(out / rel) == digest
    # the earlier run's folder and the user's file are left as they were, and named in one line
    assert {p: p.read_bytes() for p in (out / "second").iterdir()} == before
    assert (out / "notes.txt").read_text() == "mine\n"
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1
    assert f"{out} holds {len(before) + 1} file(s) this run did not write" in notes[0]
    assert notes[0].endswith("left in place): notes.txt, second/")
    assert runner.load_results(out).keys() == {"median"}


def test_stale_files_inside_folders_this_run_writes_are_named_one_by_one(csv, tmp_path,
                                                                        capsys):
    """Figures and tables of a switched-off stage (here: a file a rerun does not rewrite in a
    folder it writes) stay out of the manifest, named by path."""
    out = tmp_path / "out"
    runner.run_experiment(_cfg(csv), out)
    capsys.readouterr()
    (out / "median" / "metrics_summary.csv").write_text("old\n")  # as an earlier [metrics] run
    runner.run_experiment(_cfg(csv), out)
    files = _files(out)
    assert "median/metrics_summary.csv" not in files and "median/abc.parquet" in files
    note = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("note:")]
    assert len(note) == 1 and note[0].endswith(": median/metrics_summary.csv")


def test_a_model_file_run_does_not_list_an_earlier_cached_model(csv, tmp_path, capsys):
    """model.pt of an earlier preset run is not the model a model.path run used."""
    out = tmp_path / "out"
    first = runner.run_experiment(_cfg(csv), out)
    assert "model.pt" in first.manifest["files"]
    mine = tmp_path / "mine.pt"
    shutil.copy(out / "model.pt", mine)  # an insdel model file given by path
    capsys.readouterr()
    res = runner.run_experiment(_cfg(csv, model={"path": str(mine)}), out)
    assert res.manifest["model"]["source"] == "path"
    files = _files(out)
    assert "model.pt" not in files and "model.key" not in files and "median/abc.parquet" in files
    note = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("note:")]
    assert len(note) == 1 and "model.key" in note[0] and "model.pt" in note[0]


def test_manifest_lists_files_when_the_output_folder_is_under_a_checkpoints_folder(csv,
                                                                                   tmp_path):
    """Files were dropped when any folder of the absolute path was named 'checkpoints'."""
    out = tmp_path / "checkpoints" / "out"
    res = runner.run_experiment(_cfg(csv), out)
    assert {"median/abc.parquet", "summary.csv", "model.pt"} <= set(res.manifest["files"])
    assert not any(f.startswith("checkpoints/") for f in res.manifest["files"])


def test_roar_manifest_leaves_out_an_earlier_run(csv, tmp_path, capsys):
    out = tmp_path / "out"
    runner.run_experiment(_cfg(csv), out)
    capsys.readouterr()
    roar_cfg = {k: v for k, v in _cfg(csv).items() if k in C.ROAR_SECTIONS}
    roar_cfg["roar"] = {"orderings": ["random"], "fractions": [1.0], "replicates": 1,
                        "max_epochs": 1}
    res = runner.run_roar(roar_cfg, out)
    files = set(res.manifest["files"])
    assert {"roar.csv", "roar_summary.csv", "summary.md", "attributions.npz"} <= files
    assert not any(f.startswith("median/") for f in files)
    assert "summary.csv" not in files and "diagnostics.csv" not in files
    assert res.manifest["model"]["source"] == "cache" and "model.pt" in files
    note = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("note:")]
    assert len(note) == 1 and "median/" in note[0] and "diagnostics.csv" in note[0]


# -- 4. the CLI uses public runner functions ----------------------------------------------------
def test_lock_folder_and_unfinish_are_public(tmp_path):
    assert not hasattr(runner, "_lock") and not hasattr(runner, "_unfinish")
    assert {"lock_folder", "unfinish"} <= set(runner.__all__)
    for f in (runner.lock_folder, runner.unfinish):
        doc = inspect.getdoc(f)
        assert "Parameters\n----------" in doc, f.__name__
    assert "Raises\n------" in inspect.getdoc(runner.lock_folder)
    root = Path(insdel.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"(?<![A-Za-z0-9])_(lock|unfinish)\b", text), path

    out = tmp_path / "o"
    out.mkdir()
    lock = runner.lock_folder(str(out))  # a str is a path too
    try:
        with pytest.raises(runner.OutputFolderBusy,
                           match=rf"output folder {re.escape(str(out))} is in use"):
            runner.lock_folder(out, False)
    finally:
        lock.release()
    runner.lock_folder(out).release()  # free again
    (out / "manifest.json").write_text("{}\n")
    runner.unfinish(str(out))
    assert not (out / "manifest.json").exists()
    runner.unfinish(out)  # nothing to remove is not an error
