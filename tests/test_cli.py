"""The command line as a user meets it: --debug on every command, help texts that say what each
command does, and the shipped configurations written out for editing."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from _runs import small_toml

import insdel
from insdel import cli, config, functional, runner

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "insdel" / "shipped" / "configs"  # the shipped configurations


def _commands(parser: argparse.ArgumentParser, path=()):
    """(path, parser) of the parser and every sub-command under it, at every depth."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_every_command_takes_debug():
    commands = list(_commands(cli.build_parser()))
    assert {p[0] for p, _ in commands if p} >= {"run", "reproduce", "roar", "demo", "configs",
                                                 "datasets", "policies", "functional",
                                                 "leaderboard"}
    lacking = [" ".join(p) or "insdel" for p, parser in commands
               if "--debug" not in parser._option_string_actions]
    assert not lacking, f"commands without --debug: {lacking}"


@pytest.mark.parametrize("argv,exc", [
    (["functional", "--tests", "no_such_test", "--no-metrics"], ValueError),
    (["leaderboard", "no/such/run"], FileNotFoundError),
    (["configs", "show", "no_such_config"], insdel.UnknownNameError),
    (["policies", "show", "no_such_policy"], insdel.UnknownNameError),
])
def test_debug_raises_where_the_message_was_printed(argv, exc, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # leaderboard's default --out is written nowhere it matters
    assert cli.main(argv) == 1
    assert capsys.readouterr().err.startswith("insdel: error: ")
    with pytest.raises(exc):
        cli.main([*argv, "--debug"])           # after the sub-command
    with pytest.raises(exc):
        cli.main(["--debug", *argv])           # before it, as before


def test_reproduce_help_says_what_each_experiment_reproduces():
    text = _flat(cli.build_parser()._subparsers._group_actions[0].choices["reproduce"]
                 .format_help())
    experiments = sorted(config.PAPER_CONFIGS) + list(config.PAPER_EXPERIMENTS)
    assert set(cli.REPRODUCES) == set(experiments)
    for e in experiments:
        assert _flat(f"{e} {cli.REPRODUCES[e]}") in text, e
    assert "Tables 1-4, Figures 4-12" not in text  # what paper-cern and paper-bangalore do together
    # the --out default --quick writes to
    assert "(default: runs/<experiment>, or runs/<experiment>-quick with --quick)" in text
    # each TOML experiment's line names the paper's section its configuration says it runs
    for e, name in config.PAPER_CONFIGS.items():
        head = config.get(name)
        sections = set(re.findall(r"§\d+(?:\.\d+)?", cli.REPRODUCES[e]))
        assert sections <= set(re.findall(r"§\d+(?:\.\d+)?", head)), (e, sections)
        if not sections:
            assert cli.REPRODUCES[e].startswith("beyond the paper"), e
    assert "Figure 13" in cli.REPRODUCES["paper-roar-cern"] and "Figure 13" in config.get(
        "paper_roar_cern")


def test_functional_help_says_it_grades_every_metric():
    text = _flat(cli.build_parser()._subparsers._group_actions[0].choices["functional"]
                 .format_help())
    assert "every metric of insdel.metrics" in text and "grading.register" in text
    assert "(insertion / deletion ABC and AUC)" not in text
    graded = functional.grading.available()  # what `insdel functional` grades by default
    assert {"insertion_abc", "pixel_flipping", "comprehensiveness", "pgi", "abc_total"} <= set(
        graded)


@pytest.mark.parametrize("name", ["paper_cern", "paper-cern", "demo", "paper_roar_bangalore"])
def test_configs_show_prints_the_shipped_toml_exactly(name, capsys):
    stem = config.PAPER_CONFIGS.get(name, name)
    shipped = (CONFIGS / f"{stem}.toml").read_text(encoding="utf-8")
    assert cli.main(["configs", "show", name]) == 0
    assert capsys.readouterr().out == shipped


def test_configs_show_out_writes_a_file_that_runs_as_the_shipped_one(tmp_path, capsys):
    out = tmp_path / "mine.toml"
    assert cli.main(["configs", "show", "paper-cern", "--out", str(out)]) == 0
    assert out.read_bytes() == (CONFIGS / "paper_cern.toml").read_bytes()
    assert f"insdel run {out}" in capsys.readouterr().out
    mine, shipped = config.load(out, quick=True), config.load("paper_cern", quick=True)
    assert {k: v for k, v in mine.items() if k != "source"} == {
        k: v for k, v in shipped.items() if k != "source"}
    # an edited copy is never overwritten without --force
    out.write_text("# my edits\n")
    assert cli.main(["configs", "show", "demo", "--out", str(out)]) == 1
    assert "--force" in capsys.readouterr().err and out.read_text() == "# my edits\n"
    assert cli.main(["configs", "show", "demo", "--out", str(out), "--force"]) == 0
    assert out.read_text() == config.get("demo")
    assert cli.main(["configs", "show", "demo", "--out", str(tmp_path)]) == 1


def test_configs_list_names_every_shipped_configuration(capsys):
    assert cli.main(["configs", "list"]) == 0
    out = capsys.readouterr().out
    for name in config.available():
        assert f"\n  {name}" in out
    for alias in config.PAPER_CONFIGS:
        assert f"insdel reproduce {alias})" in out
    assert cli.main(["configs"]) == 0 and capsys.readouterr().out == out


def test_configs_show_is_documented():
    assert "insdel configs show" in (ROOT / "docs" / "experiments.md").read_text()
    assert "insdel configs show" in (ROOT / "README.md").read_text()


# -- empty and conflicting options -----------------------------------------------------------------
def test_cli_functional_no_metrics_with_metrics_is_an_error(capsys):
    rc = cli.main(["functional", "--methods", "random", "--tests", "additive", "--no-metrics",
                   "--metrics", "insertion_abc"])
    assert rc == 1
    assert "--no-metrics" in capsys.readouterr().err


def test_cli_empty_name_list_is_an_error(capsys):
    # --tests "" names no test: an error that says so, not an empty table or a KeyError
    with pytest.raises(SystemExit) as exc:
        cli.main(["functional", "--tests", "", "--no-metrics"])
    assert exc.value.code == 2
    assert "names nothing" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["functional", "--methods", "random", "--tests", "additive", "--no-metrics", "--out", ""],
    ["leaderboard", "somewhere", "--out", " "],
    ["run", "demo", "--out", ""],
])
def test_cli_empty_out_is_an_error(capsys, argv):
    # --out "" is an error: nothing is written without a word, nothing into the current folder
    assert cli.main(argv) == 1
    assert "--out is empty" in capsys.readouterr().err


def test_cli_datasets_prepare_conflicting_options(tmp_path, capsys):
    rc = cli.main(["datasets", "prepare", "housing_sim", "--out", str(tmp_path / "d"),
                   "--option", "n=1", "--option", "n=2"])
    assert rc == 1 and "more than once" in capsys.readouterr().err
    rc = cli.main(["datasets", "prepare", "bangalore", "--out", str(tmp_path / "d"),
                   "--path", "a.csv", "--option", "path=b.csv"])
    assert rc == 1 and "--path and --option path" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_cli_paper_images_locks_its_output_folder(tmp_path, capsys):
    # one paper-images run at a time per folder (say --seed 1 and --seed 2 into one folder): never
    # table5.csv of one beside the manifest of the other
    from filelock import FileLock

    out = tmp_path / "imgs"
    out.mkdir()
    (out / "manifest.json").write_text("{}\n")
    lock = FileLock(str(out / ".insdel.lock"))
    lock.acquire()
    try:
        rc = cli.main(["reproduce", "paper-images", "--quick", "--out", str(out),
                       "--no-progress"])
    finally:
        lock.release()
    assert rc == 1
    assert "in use by another insdel run" in capsys.readouterr().err
    assert (out / "manifest.json").exists()  # the other run's files are left alone


@pytest.mark.parametrize("opt", ["--device", "--scheduler"])
def test_an_empty_cli_option_is_an_error(opt, capsys):
    from insdel.cli import main

    assert main(["run", "demo", opt, ""]) == 1
    assert f"{opt} is empty" in capsys.readouterr().err


# -- insdel functional --strict --------------------------------------------------------------------
def test_cli_functional_strict(capsys):
    args = ["functional", "--methods", "exact_shapley,random", "--tests", "additive",
            "--no-metrics"]
    assert cli.main(args) == 0
    capsys.readouterr()
    assert cli.main([*args, "--strict"]) == 1
    err = capsys.readouterr().err
    assert "insdel functional --strict:" in err and "random" in err
    assert cli.main(["functional", "--methods", "exact_shapley", "--tests", "additive",
                     "--no-metrics", "--strict"]) == 0


# -- --quick and --trust-model where the configuration cannot use them -----------------------------
def _toml(folder: Path, csv: Path, **kw) -> Path:
    """The small run on ``csv`` as ``folder/a.toml`` (or ``name=``)."""
    return small_toml(folder, csv.as_posix(), run="small", **kw)


def test_cli_quick_without_a_quick_table(csv, tmp_path, capsys):
    path = _toml(tmp_path, csv)
    out = tmp_path / "out"
    assert cli.main(["run", str(path), "--quick", "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"insdel: error: {path}: quick=True (--quick)")
    assert "no [quick] table" in err and not out.exists()
    assert cli.main(["run", "demo", "--quick", "--out", str(out), "--no-progress"]) == 1
    assert "insdel/shipped/configs/demo.toml" in capsys.readouterr().err and not out.exists()


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


# -- --removal -------------------------------------------------------------------------------------
def test_cli_removal_overrides_the_kinds_and_says_what_was_used(csv, tmp_path, capsys):
    path = _toml(tmp_path, csv)
    path.write_text(path.read_text() + "\n[removal.marginal]\nn_references = 3\n")
    out = tmp_path / "out"
    assert cli.main(["run", str(path), "--removal", "baseline,marginal", "--out", str(out),
                     "--no-progress"]) == 0
    cap = capsys.readouterr()
    assert "removal marginal: revision=1, how=random, n_references=3, seed=0" in cap.err
    assert "removals: baseline (primary); marginal in <policy>/removal-marginal/; robustness " \
           "report: removal_robustness.md" in cap.out
    assert "### Robustness to the removal" in cap.out
    assert (out / "median" / "removal-marginal" / "curves.npz").is_file()
    assert (out / "removal_robustness.md").is_file()
    # a typo is an error naming the closest removal, before anything runs
    assert cli.main(["run", str(path), "--removal", "baseline,marginl", "--out",
                     str(tmp_path / "typo"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "removal.kinds: unknown removal 'marginl'; did you mean 'marginal'?" in err
    assert not (tmp_path / "typo").exists()
    with pytest.raises(SystemExit) as exc:  # names nothing
        cli.main(["run", str(path), "--removal", ",", "--no-progress"])
    assert exc.value.code == 2 and "',' names nothing" in capsys.readouterr().err


def test_cli_removal_on_reproduce(monkeypatch, capsys, tmp_path):
    seen = []

    def fake_run(cfg, *a, **k):
        seen.append(cfg)
        raise _Stop

    monkeypatch.setattr(runner, "run_experiment", fake_run)
    with pytest.raises(_Stop):
        cli.main(["reproduce", "paper-cern-removals", "--quick", "--removal",
                  "baseline,marginal", "--out", str(tmp_path / "o"), "--no-progress"])
    assert seen[-1]["removal"]["kinds"] == ["baseline", "marginal"]
    assert seen[-1]["removal"]["marginal"]["n_references"] == 20
    with pytest.raises(_Stop):
        cli.main(["reproduce", "paper-cern", "--quick", "--out", str(tmp_path / "o"),
                  "--no-progress"])
    assert seen[-1]["removal"]["kinds"] == ["baseline"]
    assert cli.main(["reproduce", "paper-images", "--removal", "marginal"]) == 1
    assert "takes no --removal" in capsys.readouterr().err
    for command in ("run", "reproduce"):
        text = _flat(cli.build_parser()._subparsers._group_actions[0].choices[command]
                     .format_help())
        assert "--removal NAME[,NAME...]" in text and "overrides [removal] kinds" in text
