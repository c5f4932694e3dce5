"""The command line as a user meets it: --debug on every command, help texts that say what each
command does, and the shipped configurations written out for editing."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from insdel import cli, config, functional

ROOT = Path(__file__).resolve().parents[1]


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
    (["configs", "show", "no_such_config"], FileNotFoundError),
    (["policies", "show", "no_such_policy"], KeyError),
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
    # each TOML experiment's line names the paper's section its configuration says it runs
    for e, name in config.PAPER_CONFIGS.items():
        head = config.shipped_text(name)
        sections = set(re.findall(r"§\d+(?:\.\d+)?", cli.REPRODUCES[e]))
        assert sections <= set(re.findall(r"§\d+(?:\.\d+)?", head)), (e, sections)
        if not sections:
            assert cli.REPRODUCES[e].startswith("beyond the paper"), e
    assert "Figure 13" in cli.REPRODUCES["paper-roar-cern"] and "Figure 13" in config.shipped_text(
        "paper_roar_cern")


def test_functional_help_says_it_grades_every_metric():
    text = _flat(cli.build_parser()._subparsers._group_actions[0].choices["functional"]
                 .format_help())
    assert "every metric of insdel.metrics" in text and "register_metric" in text
    assert "(insertion / deletion ABC and AUC)" not in text
    graded = functional.available_metrics()  # what `insdel functional` grades by default
    assert {"insertion_abc", "pixel_flipping", "comprehensiveness", "pgi", "abc_total"} <= set(
        graded)


@pytest.mark.parametrize("name", ["paper_cern", "paper-cern", "demo", "paper_roar_bangalore"])
def test_configs_show_prints_the_shipped_toml_exactly(name, capsys):
    stem = config.PAPER_CONFIGS.get(name, name)
    shipped = (ROOT / "insdel" / "configs" / f"{stem}.toml").read_text(encoding="utf-8")
    assert cli.main(["configs", "show", name]) == 0
    assert capsys.readouterr().out == shipped


def test_configs_show_out_writes_a_file_that_runs_as_the_shipped_one(tmp_path, capsys):
    out = tmp_path / "mine.toml"
    assert cli.main(["configs", "show", "paper-cern", "--out", str(out)]) == 0
    assert out.read_bytes() == (ROOT / "insdel" / "configs" / "paper_cern.toml").read_bytes()
    assert f"insdel run {out}" in capsys.readouterr().out
    mine, shipped = config.load(out, quick=True), config.load("paper_cern", quick=True)
    assert {k: v for k, v in mine.items() if k != "source"} == {
        k: v for k, v in shipped.items() if k != "source"}
    # an edited copy is never overwritten without --force
    out.write_text("# my edits\n")
    assert cli.main(["configs", "show", "demo", "--out", str(out)]) == 1
    assert "--force" in capsys.readouterr().err and out.read_text() == "# my edits\n"
    assert cli.main(["configs", "show", "demo", "--out", str(out), "--force"]) == 0
    assert out.read_text() == config.shipped_text("demo")
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
