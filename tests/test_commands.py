"""Commands as one declared spec (:mod:`insdel.config.commands`): a verb registered through its
:class:`~insdel.config.Command` reaches the command line, the configuration checker, the schema
and the output folder's kinds without another file changing."""

from __future__ import annotations

import csv
import json
import warnings

import pytest

from insdel import cli
from insdel import config as C
from insdel.config import commands
from insdel.runner import provenance
from insdel.runner.session import loaded, opened

#: The toy verb's table: its schema, as a table of :data:`insdel.config.SCHEMA`.
TOY_SCHEMA = {"greeting": ((str,), "hello"), "repeats": ((int,), 1, {"min_val": 1})}


def _check_toy(cfg, source):
    if not cfg["toy"]["greeting"].strip():
        raise C.ConfigError(f"{source}: toy.greeting is empty; say something.")


class _ToyRun:
    def __init__(self, out, rows):
        self.out, self.rows = out, rows

    def to_markdown(self):
        return "\n".join(f"| {i} | {g} |" for i, g in self.rows)


def run_toy(config, out=None, *, quick=False, progress=None, verbose=False, wait=False):
    """The toy verb's runner: the configuration loaded and checked, the folder opened (locked,
    of kind ``toy``), one data file and the manifest."""
    cfg = loaded(config, quick)
    C.check_sections(cfg, "toy")
    with opened(cfg, out, wait, None, verbose, kind="toy") as (folder, before, _):
        rows = [(i, cfg["toy"]["greeting"]) for i in range(cfg["toy"]["repeats"])]
        with open(folder / "toy.csv", "w", newline="") as fh:
            csv.writer(fh).writerows(rows)
        files = provenance.run_files(folder, before)
        provenance.write_manifest(folder, {**provenance.manifest_head(cfg), "toy": {
            "rows": len(rows)}, "files": provenance.file_hashes(folder, files)})
    return _ToyRun(folder, rows)


TOY = commands.Command(name="toy", title="toy", help="say hello (a toy verb)",
                       description="Writes toy.csv: toy.greeting, toy.repeats times.",
                       run=run_toy, tables={"toy": TOY_SCHEMA}, reads=("name", "data", "model"),
                       check=_check_toy, outputs=("toy.csv", "manifest.json"), serial=True)


@pytest.fixture
def toy():
    commands.register(TOY)
    try:
        yield TOY
    finally:
        commands.unregister("toy")


def _toml(path, body):
    path.write_text('name = "toy"\n[data]\nrecipe = "housing_sim"\n[model]\n'
                    'preset = "quick_housing"\n' + body)
    return path


def test_a_verb_registered_through_its_spec_runs_from_the_command_line(toy, tmp_path, capsys):
    cfg = _toml(tmp_path / "toy.toml", '[toy]\ngreeting = "hi"\nrepeats = 3\n')
    out = tmp_path / "out"
    assert cli.main(["toy", str(cfg), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| 2 | hi |" in text and f"results: {out} (toy.csv, manifest.json)" in text
    assert (out / "toy.csv").read_text().splitlines() == ["0,hi", "1,hi", "2,hi"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["toy"] == {"rows": 3} and manifest["config"]["toy"]["repeats"] == 3
    assert provenance.folder_kind(out) == "toy"
    # the schema checks its keys and ranges, its own check its values
    for body, match in (('[toy]\ngreting = "x"\n', "did you mean 'greeting'"),
                        ("[toy]\nrepeats = 0\n", "repeats"),
                        ('[toy]\ngreeting = " "\n', "toy.greeting is empty")):
        with pytest.raises(C.ConfigError, match=match):
            C.load(_toml(tmp_path / "bad.toml", body))
    # its sections: a table it does not read is refused; insdel run refuses its table
    assert cli.main(["toy", str(_toml(tmp_path / "x.toml", "[toy]\n[targets]\nn = 3\n")),
                     "--out", str(tmp_path / "x")]) == 1
    assert "targets: not read by `insdel toy`" in capsys.readouterr().err
    with pytest.raises(C.ConfigError, match=r"a toy configuration \(\[toy\] table\): run it "
                                            r"with `insdel toy`"):
        C.check_sections(C.load(cfg), "run")
    # a folder of another kind is refused both ways
    with pytest.raises(provenance.OutputFolderOfAnotherKind, match="insdel toy"):
        provenance.lock_folder(out, kind="run")
    assert "toy" in cli.build_parser().format_help()
    assert "--scheduler" not in cli.build_parser().parse_args(["toy", "c"]).__dict__


def test_unregistering_a_verb_removes_its_table_and_sub_command(tmp_path):
    commands.register(TOY)
    commands.unregister("toy")
    assert "toy" not in C.SCHEMA and "toy" not in commands.available()
    with pytest.raises(C.ConfigError, match="unknown top-level key 'toy'"):
        C.load(_toml(tmp_path / "toy.toml", "[toy]\n"))
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["toy", "c"])


def test_a_spec_cannot_take_another_command_s_table_or_a_built_in_name():
    with pytest.raises(ValueError, match="built-in command"):
        commands.register(commands.get("roar"))
    with pytest.raises(ValueError, match=r"the table \[road\] is already command 'road'"):
        commands.register(commands.Command(name="other", title="o", help="", description="",
                                           run=run_toy, tables={"road": TOY_SCHEMA}))
    with pytest.raises(ValueError, match=r"\[methods\] is already a table of every run"):
        commands.register(commands.Command(name="other", title="o", help="", description="",
                                           run=run_toy, tables={"methods": TOY_SCHEMA}))
    with pytest.raises(TypeError, match="insdel.config.Command"):
        commands.register("toy")


def test_the_built_in_commands_are_specs_the_cli_and_reproduce_read():
    assert commands.available() == ["forecast", "road", "roar", "run", "sanity", "tune"]
    for name in ("roar", "road", "sanity", "tune", "forecast"):
        cmd = commands.get(name)
        assert cmd.runner().__name__ == f"run_{name}"
        assert set(cmd.experiments) <= set(C.PAPER_CONFIGS) <= set(cli.reproduces())
    assert commands.owner(C.load("paper_roar_cern")).name == "roar"
    assert commands.owner(C.load("sanity_cern")).name == "sanity"
    assert commands.owner(C.load("tune_cern")).name == "tune"
    assert commands.owner(C.load("forecast_sim")).name == "forecast"
    assert commands.owner(C.load("paper_cern")).name == "run"
    assert set(provenance.kinds()) == {"run", "roar", "road", "sanity", "tune", "forecast",
                                       "paper-images"}
    assert commands.options_of("sanity") == {"quick": False, "progress": None,
                                             "verbose": False, "wait": False}
    with pytest.raises(ValueError, match=r"unknown command 'roa'. Did you mean 'roar'"):
        commands.get("roa")


def test_a_removal_is_name_and_options_in_every_table(tmp_path):
    """``{name, options}`` wherever a removal is configured, recorded as the older spellings
    were; those keep working with a deprecation message naming the new key."""
    new = {"name": "x", "data": {"recipe": "housing_sim"}, "model": {"preset": "quick_housing"},
           "removal": {"kinds": ["baseline", {"name": "marginal",
                                              "options": {"n_references": 5}}]},
           "road": {"removal": {"name": "conditional_knn", "options": {"n_neighbors": 3}}}}
    old = {"name": "x", "data": {"recipe": "housing_sim"}, "model": {"preset": "quick_housing"},
           "removal": {"kinds": ["baseline", "marginal"], "marginal": {"n_references": 5}},
           "road": {"removal": "conditional_knn", "removal_options": {"n_neighbors": 3}}}
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        a = C.load(new)
    with pytest.warns(DeprecationWarning) as rec:
        b = C.load(old)
    said = [str(w.message) for w in rec]
    assert any("road.removal_options is deprecated: write road.removal = {name" in m
               for m in said)
    assert any('[removal.marginal] is deprecated: write removal.kinds = [..., {name = '
               '"marginal", options' in m for m in said)
    a.pop("sections"), b.pop("sections")
    assert a == b
    assert a["road"]["removal"] == "conditional_knn"
    assert a["road"]["removal_options"] == {"n_neighbors": 3}
    # the same as TOML tables, a [quick] table giving options alone
    toml = _toml(tmp_path / "r.toml", '[road.removal]\nname = "conditional_knn"\n'
                 "[road.removal.options]\nn_neighbors = 3\n[quick.road.removal.options]\n"
                 "n_neighbors = 2\n")
    assert C.load(toml, quick=True)["road"]["removal_options"] == {"n_neighbors": 2}
    # one removal's options given twice, or a key of neither shape: an error naming the keys
    with pytest.raises(C.ConfigError, match="road.removal.options and road.removal_options"):
        C.load({**new, "road": {**new["road"], "removal_options": {}}})
    with pytest.raises(C.ConfigError, match=r"unknown key 'road.removal.option'"):
        C.load({**new, "road": {"removal": {"name": "conditional_knn", "option": {}}}})
    with pytest.raises(C.ConfigError, match=r"removal.kinds\[1\].options and "
                                            r"\[removal.marginal\] both"):
        C.load({**new, "removal": {**new["removal"], "marginal": {}}})
    # an unknown option or removal is named under the key the user wrote
    with pytest.raises(C.ConfigError, match=r"removal.kinds\[1\].options.n_refs"):
        C.load({**new, "removal": {"kinds": ["baseline", {"name": "marginal",
                                                          "options": {"n_refs": 5}}]}})
    with pytest.raises(C.ConfigError, match=r"road.removal.options.n_neighbour"):
        C.load({**new, "road": {"removal": {"name": "conditional_knn",
                                            "options": {"n_neighbour": 3}}}})
    with pytest.raises(C.ConfigError, match=r"road.removal.name: unknown removal 'conditional_kn'"):
        C.load({**new, "road": {"removal": {"name": "conditional_kn", "options": {}}}})
