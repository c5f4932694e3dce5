"""``insdel sanity`` and ``insdel reproduce sanity-cern`` (issue 38's wiring): the ``[sanity]`` and
``[meta]`` tables' validation, a run writing its files, a re-run reusing the trained model with
byte-identical tables, and the leaderboard marking a method that fails a randomisation check and a
metric below the reliability threshold."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from insdel import cli, runner  # noqa: E402
from insdel import config as C  # noqa: E402
from insdel import leaderboard as L  # noqa: E402

TINY_SANITY = """
name = "tiny_sanity"
seed = 1
[data]
recipe = "dielectron_sim"
[data.options]
n_events = 600
[model]
preset = "quick_cern"
max_epochs = 2
[methods]
names = ["integrated_gradients", "vanilla_grad", "random"]
[methods.options.integrated_gradients]
n_steps = 8
[sanity]
similarity = ["spearman", "sign_agreement"]
n_targets = 12
data_randomisation = true
data_max_epochs = 1
[meta]
metrics = ["insertion_abc", "sparseness"]
n_perturbations = 2
"""

FILES = ("sanity.csv", "sanity_flags.csv", "reliability.csv", "reliability_tests.csv")


@pytest.fixture
def tiny(tmp_path):
    p = tmp_path / "sanity.toml"
    p.write_text(TINY_SANITY)
    return p


@pytest.mark.parametrize("over,match", [
    ({"sanity": {"order": ["cascading"]}}, r"unknown key 'sanity\.order'; did you mean "
                                           r"'orders'"),
    ({"sanity": {"treshold": 0.4}}, r"unknown key 'sanity\.treshold'; did you mean "
                                    r"'threshold'"),
    ({"meta": {"n_perturbation": 2}}, r"unknown key 'meta\.n_perturbations?'; did you mean "
                                      r"'n_perturbations'"),
    ({"meta": {"metric": ["insertion_abc"]}}, r"unknown key 'meta\.metric'; did you mean "
                                              r"'metrics'"),
    ({"sanity": {"threshold": 1.5}}, r"sanity\.threshold"),
    ({"sanity": {"abc_tolerance": -0.1}}, r"sanity\.abc_tolerance"),
    ({"sanity": {"n_targets": 1}}, r"sanity\.n_targets.*>= 2"),
    ({"sanity": {"data_max_epochs": 0}}, r"sanity\.data_max_epochs"),
    ({"sanity": {"data_randomisation": "yes"}}, r"sanity\.data_randomisation must be "
                                                r"true/false"),
    ({"meta": {"noise": 0.0}}, r"meta\.noise"),
    ({"meta": {"n_perturbations": 0}}, r"meta\.n_perturbations.*>= 1"),
    ({"meta": {"tolerance": -1.0}}, r"meta\.tolerance"),
    ({"sanity": {"orders": ["cascadin"]}}, r"sanity\.orders: unknown value 'cascadin'; did you "
                                           r"mean 'cascading'"),
    ({"sanity": {"orders": ["cascading", "cascading"]}}, r"sanity\.orders names a value twice"),
    ({"sanity": {"similarity": ["spearmann"]}}, r"sanity\.similarity: unknown value "
                                                r"'spearmann'; did you mean 'spearman'"),
    ({"sanity": {"layers": ["net.0", "net.0"]}}, r"sanity\.layers must be distinct"),
    ({"sanity": {"reference": "no_such_policy_xyz"}}, r"sanity\.reference must be "
                                                      r"'training_mean' or a policy spec"),
    ({"sanity": {"data_randomisation": False}}, r"sanity\.data_max_epochs caps the retraining"),
    ({"meta": {"metrics": ["insertion_abd"]}}, r"meta\.metrics: unknown value 'insertion_abd'; "
                                               r"did you mean 'insertion_abc'"),
    ({"meta": {"metrics": []}}, r"meta\.metrics must name at least one"),
    ({"meta": {"metrics": ["rank_agreement"]}}, r"meta\.metrics: 'rank_agreement' compares "
                                                r"with a known ground-truth"),
    ({"meta": {"tests": ["model_nois"]}}, r"meta\.tests: unknown value 'model_nois'; did you "
                                          r"mean 'model_noise'"),
    ({"methods": {"names": ["vanilla_grad"]}}, r"\[meta\] compares the rankings of the methods"),
    ({"methods": {"names": ["vanila_grad", "random"]}}, r"methods\.names: unknown attribution "
                                                        r"method 'vanila_grad'; did you mean "
                                                        r"'vanilla_grad'"),
])
def test_config_validation_names_the_key(tiny, over, match):
    with pytest.raises(C.ConfigError, match=match):
        C.load(tiny, overrides=over)


def test_sections_defaults_and_the_shipped_config(tiny, tmp_path):
    cfg = C.load(tiny)
    s = cfg["sanity"]
    assert s["orders"] == ["cascading"] and s["threshold"] == 0.5 and s["abc_tolerance"] == 0.1
    assert s["reference"] == "training_mean" and s["layers"] == []
    assert cfg["meta"]["tests"] == ["model_noise", "input_noise", "model_randomisation",
                                    "attribution_shuffle"]
    with pytest.raises(C.ConfigError, match=r"run it with `insdel sanity`, not `insdel run`"):
        runner.run_experiment(cfg, tmp_path / "x")
    with pytest.raises(C.ConfigError, match=r"meta, sanity: not read by `insdel road`"):
        C.check_sections(C.load(tiny, overrides={"road": {"random": False}}), "road")
    with pytest.raises(C.ConfigError, match=r"targets: not read by `insdel sanity`"):
        runner.run_sanity(C.load(tiny, overrides={"targets": {"n": 3}}), tmp_path / "y")
    with pytest.raises(C.ConfigError, match=r"`insdel sanity` needs a \[sanity\] or a \[meta\] "
                                            r"table"):
        runner.run_sanity("demo", tmp_path / "z")
    # [meta] alone in an experiment is refused too: `insdel run` would not read it
    plain = C.load("demo", overrides={"meta": {"n_perturbations": 2}})
    with pytest.raises(C.ConfigError, match=r"\(\[meta\] table\): run it with `insdel sanity`"):
        C.check_sections(plain, "run")
    for quick in (False, True):
        c = C.load("sanity-cern", quick=quick)
        C.check_sections(c, "sanity")
        assert c["data"]["recipe"] == "dielectron_sim" and "random" in c["methods"]["names"]
    assert C.load("sanity_cern", quick=True)["model"]["preset"] == "quick_cern"
    assert C.load("sanity_cern")["model"]["preset"] == "paper_cern"
    assert "sanity_cern  (insdel reproduce sanity-cern)" in C.format_list()


def test_cli_sanity_writes_its_files_and_a_rerun_is_identical(tiny, tmp_path, capsys,
                                                              monkeypatch):
    from _plots import overlaps_of_legends, overlaps_of_texts

    from insdel import plotting

    clashes = {}
    save = plotting.save_figure

    def checked(fig, path, dpi=110):  # every figure the run writes, as drawn at its dpi
        fig.set_dpi(dpi)
        clashes[Path(path).name] = overlaps_of_texts(fig) + overlaps_of_legends(fig)
        return save(fig, path, dpi)

    monkeypatch.setattr(plotting, "save_figure", checked)
    out = tmp_path / "out"
    assert cli.main(["sanity", str(tiny), "--out", str(out), "--no-progress"]) == 0
    assert clashes == {"sanity.png": [], "reliability.png": []}
    monkeypatch.setattr(plotting, "save_figure", save)
    printed = capsys.readouterr().out
    assert "#### Parameter randomisation (cascading)" in printed
    assert "#### Data randomisation (labels)" in printed
    assert "### Metric reliability" in printed and "| sparseness |" in printed
    assert "methods failing a randomisation check: " in printed
    for f in (*FILES, "summary.md", "manifest.json", "attributions.npz"):
        assert (out / f).is_file(), f
    for f in ("sanity.png", "reliability.png"):
        assert (out / "figures" / f).read_bytes()[:4] == b"\x89PNG"
    table = pd.read_csv(out / "sanity.csv")
    assert list(table.columns[:4]) == ["kind", "order", "method", "step"]
    assert set(table["kind"]) == {"parameters", "data"}
    assert set(table["method"]) == {"integrated_gradients", "vanilla_grad", "random"}
    flags = pd.read_csv(out / "sanity_flags.csv")
    assert list(flags.columns) == ["kind", "order", "method", "check", "value", "reference",
                                   "threshold", "flagged", "std_error", "ci_low", "ci_high",
                                   "verdict"]
    # random ignores the model: its attributions are the same on every randomised model
    sim = flags[flags["check"].str.startswith("similarity")].set_index(["kind", "method"])
    assert sim.loc[("parameters", "random"), "flagged"]
    assert sim.loc[("data", "random"), "flagged"]
    rel = pd.read_csv(out / "reliability.csv")
    assert list(rel["metric"]) == ["insertion_abc", "sparseness"]
    assert rel.set_index("metric").loc["sparseness", "reactivity"] == 0.0  # ignores the model
    m = json.loads((out / "manifest.json").read_text())
    assert m["model"]["source"] == "trained" and m["sanity"]["pairs"] == 12
    assert "random" in m["sanity"]["flagged"]
    assert set(FILES) | {"summary.md", "figures/sanity.png"} <= set(m["files"])
    first = {f: (out / f).read_bytes() for f in FILES}
    # started again: the cached model is reused, the tables' bytes are the same
    again = runner.run_sanity(str(tiny), out)
    assert again.manifest["model"]["source"] == "cache"
    assert {f: (out / f).read_bytes() for f in first} == first
    # without [meta], an earlier run's reliability tables do not stay behind
    cfg = C.load(tiny)
    cfg["sections"] = [s for s in cfg["sections"] if s != "meta"]
    res = runner.run_sanity(cfg, out)
    assert res.reliability is None and not (out / "reliability.csv").exists()
    assert not (out / "figures" / "reliability.png").exists()
    assert (out / "sanity.csv").read_bytes() == first["sanity.csv"]


def test_a_policy_reference_and_the_independent_order(tiny, tmp_path):
    cfg = C.load(tiny, overrides={"sanity": {"reference": "average",
                                             "orders": ["independent"],
                                             "data_randomisation": False,
                                             "data_max_epochs": None, "abc": False}})
    cfg["sections"] = [s for s in cfg["sections"] if s != "meta"]
    res = runner.run_sanity(cfg, tmp_path / "out")
    assert list(res.results) == ["parameters/independent"]
    assert set(res.flags["check"]) == {"similarity (spearman)"}
    assert "against policy average" in res.to_markdown()


# -- the leaderboard -----------------------------------------------------------------------------

EVAL_CONFIG = {
    "name": "hand", "seed": 0, "data": {"recipe": "toy"}, "model": {"preset": "quick_cern"},
    "policies": [{"spec": "average"}], "methods": {"names": ["a", "b", "random"]},
    "evaluation": {"modes": ["insertion", "deletion"]},
}


def _eval_run(path: Path) -> Path:
    """An evaluation run folder as the runner writes it (manifest.json and average/abc.parquet)."""
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({
        "name": "hand", "seed": 0, "config": EVAL_CONFIG, "policies": ["average"],
        "data": {"name": "toy", "file_sha256": None}, "model": {"file_sha256": None}}))
    rng = np.random.default_rng(0)
    rows = [{"pair": i, "method": m, "mode": mode, "abc": s + 0.01 * rng.normal()}
            for m, s in (("a", 0.3), ("b", 0.2), ("random", 0.0))
            for mode in ("insertion", "deletion") for i in range(6)]
    (path / "average").mkdir()
    pd.DataFrame(rows).to_parquet(path / "average" / "abc.parquet", index=False)
    return path


def _sanity_run(path: Path) -> Path:
    """A finished `insdel sanity` folder: method b fails the similarity check, deletion_abc is
    below the reliability threshold."""
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({"name": "s", "seed": 0, "config": {},
                                                    "sanity": {"flagged": ["b"]}}))
    pd.DataFrame([
        {"kind": "parameters", "order": "cascading", "method": m, "check": "similarity (spearman)",
         "value": v, "reference": 1.0, "threshold": 0.5, "flagged": v > 0.5}
        for m, v in (("a", 0.0), ("b", 0.9), ("random", 0.1))]).to_csv(
        path / "sanity_flags.csv", index=False)
    pd.DataFrame([{"metric": "insertion_abc", "resilience": 0.8, "reactivity": 0.9, "mc": 0.85},
                  {"metric": "deletion_abc", "resilience": 1.0, "reactivity": 0.0, "mc": 0.5}]
                 ).to_csv(path / "reliability.csv", index=False)
    return path


def test_leaderboard_marks_failing_methods_and_unreliable_metrics(tmp_path, capsys):
    ev = _eval_run(tmp_path / "runs" / "eval")
    before = L.leaderboard([ev], n_boot=20)
    assert before.sanity.empty and before.reliability.empty  # an old folder: as before
    assert "randomisation" not in before.to_markdown()
    _sanity_run(tmp_path / "runs" / "sanity")
    board = L.leaderboard([tmp_path / "runs"], n_boot=20)
    assert list(board.groups["run"]) == ["hand"]  # the sanity folder is not ranked
    assert board.overall.equals(before.overall)
    text = board.to_markdown()
    assert "| randomisation |" in text
    row_b = next(line for line in text.splitlines() if line.startswith("| b |"))
    assert "**fails** (parameters/cascading: similarity (spearman))" in row_b
    assert next(line for line in text.splitlines() if line.startswith("| a |")).endswith(
        "| passes |")
    assert "deletion ABC' [unreliable: MC 0.50 < 0.6]" in text
    assert "insertion ABC [unreliable" not in text
    assert "ABC + ABC' [unreliable: MC 0.50 < 0.6]" in text  # deletion is half of it
    assert list(board.reliability["reliable"]) == [True, False]
    # a stricter threshold marks insertion_abc too
    strict = L.leaderboard([tmp_path / "runs"], n_boot=20, min_reliability=0.9)
    assert "insertion ABC [unreliable: MC 0.85 < 0.9]" in strict.to_markdown()
    paths = board.save(tmp_path / "lb")
    assert {p.name for p in paths} >= {"leaderboard_sanity.csv", "leaderboard_reliability.csv"}
    with pytest.raises(ValueError, match="min_reliability"):
        L.leaderboard([tmp_path / "runs"], min_reliability=1.5)
    with pytest.raises(ValueError, match="only sanity-check runs"):
        L.leaderboard([tmp_path / "runs" / "sanity"])
    # the command line
    assert cli.main(["leaderboard", str(tmp_path / "runs"), "--out", str(tmp_path / "lb2"),
                     "--n-boot", "20", "--min-reliability", "0.9"]) == 0
    assert "insertion ABC [unreliable: MC 0.85 < 0.9]" in capsys.readouterr().out


def test_leaderboard_marks_a_method_flagged_by_a_real_run(tiny, tmp_path):
    """A tiny `insdel sanity` run beside an evaluation run: random (which ignores the model) is
    marked as failing."""
    runner.run_sanity(str(tiny), tmp_path / "runs" / "sanity")
    _eval_run(tmp_path / "runs" / "eval")
    board = L.leaderboard([tmp_path / "runs"], n_boot=10)
    assert board.sanity.set_index("method").loc["random", "randomisation"] == "fails"
    row = next(line for line in board.to_markdown().splitlines()
               if line.startswith("| random |"))
    assert "**fails**" in row
    assert next(line for line in board.to_markdown().splitlines()
                if line.startswith("| a |")).endswith("| not checked |")


def test_sanity_offers_no_scheduler_and_reproduce_refuses_one_plainly(tiny, tmp_path, capsys):
    """The checks run serially: `insdel sanity --help` offers no --scheduler, and `reproduce
    sanity-cern --scheduler local` names the option (not config keys the user never wrote)."""
    with pytest.raises(SystemExit):
        cli.main(["sanity", "--help"])
    assert "--scheduler" not in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["sanity", str(tiny), "--scheduler", "local"])
    assert "unrecognized arguments: --scheduler" in capsys.readouterr().err
    out = tmp_path / "never"
    assert cli.main(["reproduce", "sanity-cern", "--quick", "--scheduler", "local", "--out",
                     str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "--scheduler local: `insdel sanity` runs serially" in err
    assert "compute.backend" not in err and not out.exists()


# -- any model, grouped data ---------------------------------------------------------------------
TABLE = """
name = "clinic"
seed = 0
[data]
recipe = "table"
[data.options]
path = "{csv}"
target = "target"
categorical = ["site"]
[model]
path = "{model}"
trust = {trust}
[methods]
names = ["kernel_shap", "random"]
[methods.options.kernel_shap]
n_samples = 64
backend = "insdel"
{tables}
"""

SANITY_TABLE = """
[sanity]
n_targets = 6
data_randomisation = {data}
"""

META_TABLE = """
[meta]
metrics = ["insertion_abc", "sparseness"]
n_perturbations = 2
"""


@pytest.fixture(scope="module")
def clinic(tmp_path_factory):
    """A CSV with a three-level categorical column (one-hot group ``site``), its data set, a
    scikit-learn model (joblib) and an ONNX MLP fitted to / shaped for its 13 columns."""
    import warnings

    import joblib
    import torch
    from sklearn.datasets import load_diabetes
    from sklearn.ensemble import GradientBoostingRegressor

    from insdel import datasets

    folder = tmp_path_factory.mktemp("clinic")
    df = load_diabetes(as_frame=True, scaled=False).frame
    df["site"] = np.array(["a", "b", "c"])[np.arange(len(df)) % 3]
    csv = folder / "clinic.csv"
    df.to_csv(csv, index=False)
    ds = datasets.load("table", path=str(csv), target="target", categorical=["site"])
    est = GradientBoostingRegressor(n_estimators=20, max_depth=2, subsample=0.8)  # no seed
    est.fit(ds.X_train, ds.y_train)
    joblib.dump(est, folder / "gbr.joblib")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(13, 8), torch.nn.Tanh(),
                              torch.nn.Linear(8, 1)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.zeros(2, 13),), str(folder / "mlp.onnx"),
                          input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "b"}, "y": {0: "b"}}, dynamo=False)
    return folder, csv, ds


def _clinic_config(clinic, model: str, tables: str) -> Path:
    folder, csv, _ = clinic
    p = folder / f"{model}-{abs(hash(tables))}.toml"
    p.write_text(TABLE.format(csv=csv.as_posix(), model=(folder / model).as_posix(),
                              trust="true" if model.endswith(".joblib") else "false",
                              tables=tables))
    return p


def test_sanity_on_a_scikit_learn_model_and_a_one_hot_group(clinic, tmp_path, capsys):
    """A joblib GradientBoostingRegressor on a table with a categorical column: the parameter
    randomisation is left out with one note, the data randomisation refits a clone of the
    estimator on permuted labels, the reliability runs its model-free tests, and every check
    works on the 11 units (10 columns and the one-hot ``site``)."""
    cfg = _clinic_config(clinic, "gbr.joblib", SANITY_TABLE.format(data="true") + META_TABLE)
    out = tmp_path / "out"
    assert cli.main(["sanity", str(cfg), "--out", str(out), "--no-progress"]) == 0
    cap = capsys.readouterr()
    assert cap.err.count("parameter randomisation not run") == 1
    assert "GradientBoostingRegressor (joblib file)" in cap.err
    assert "data randomisation: refitting a clone of GradientBoostingRegressor" in cap.err
    assert "location = 'drop'" not in cap.out + cap.err
    summary = (out / "summary.md").read_text()
    assert "Not run: parameter randomisation (it re-initialises the layers of an eager " \
           "torch.nn.Module" in summary
    assert "#### Data randomisation (labels)" in summary and "Not run: model_noise" in summary
    flags = pd.read_csv(out / "sanity_flags.csv")
    assert set(flags["kind"]) == {"data"}
    assert flags.set_index(["method", "check"]).loc[("random", "similarity (spearman)"),
                                                    "flagged"]
    atts = np.load(out / "attributions.npz")
    assert atts["kernel_shap"].shape == (6, 11)  # one column per unit
    m = json.loads((out / "manifest.json").read_text())
    assert m["sanity"]["groups"] == {"site": [10, 11, 12]}
    assert list(m["sanity"]["skipped"]) == ["parameter randomisation"]
    assert set(m["sanity"]["reliability"]["skipped"]) == {"model_noise", "model_randomisation"}
    # the same seed refits the same clone (random_state was None): identical tables on a re-run
    first = {n: (out / n).read_bytes() for n in ("sanity.csv", "sanity_flags.csv",
                                                  "reliability.csv")}
    assert cli.main(["sanity", str(cfg), "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert first == {n: (out / n).read_bytes() for n in first}


def test_training_mean_reference_takes_a_one_hot_groups_most_common_level(clinic):
    from insdel.runner.sanity import _reference_values
    from insdel.runner.stages.data import groups_of

    _, _, ds = clinic
    v = _reference_values(ds, groups_of(ds))
    site = v[10:13]
    assert sorted(site.tolist()) == [0.0, 0.0, 1.0]  # one level set, not the columns' modes (0)
    assert np.array_equal(v[:10], runner.sanity._reference_values(ds, None)[:10])


def test_meta_alone_on_an_onnx_model_and_what_cannot_run(clinic, tmp_path, capsys):
    """[meta] without [sanity] runs the metrics' reliability only; data randomisation of an ONNX
    model is refused saying what can run, and a [sanity] that can run nothing on it points at
    [meta] (whose advice works)."""
    cfg = _clinic_config(clinic, "mlp.onnx", META_TABLE)
    out = tmp_path / "meta"
    assert cli.main(["sanity", str(cfg), "--out", str(out), "--no-progress"]) == 0
    cap = capsys.readouterr()
    assert "### Metric reliability" in cap.out and "randomisation check" not in cap.out
    assert (out / "reliability.csv").is_file() and not (out / "sanity.csv").exists()
    assert (out / "figures" / "reliability.png").is_file()
    assert not (out / "figures" / "sanity.png").exists()

    cfg = _clinic_config(clinic, "mlp.onnx", SANITY_TABLE.format(data="true"))
    assert cli.main(["sanity", str(cfg), "--out", str(tmp_path / "d"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "sanity.data_randomisation retrains the model" in err and "OnnxModel" in err
    assert "Set sanity.data_randomisation = false; add a [meta] table too" in err

    cfg = _clinic_config(clinic, "mlp.onnx", SANITY_TABLE.format(data="false"))
    assert cli.main(["sanity", str(cfg), "--out", str(tmp_path / "p"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "no sanity check can run on this model" in err and "Add a [meta] table" in err


def test_a_sanity_table_that_runs_nothing_is_refused(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(TINY_SANITY.split("[meta]")[0])
    with pytest.raises(C.ConfigError, match=r"\[sanity\] runs nothing: sanity\.orders is empty"):
        C.load(p, overrides={"sanity": {"orders": [], "data_randomisation": False,
                                        "data_max_epochs": None}})


def test_refusal_of_groups_advises_the_recipes_own_option(clinic):
    """The refusal ROAR (and any command without groups) gives names the option that made the
    groups in the user's own recipe, not the Bangalore recipe's location = 'drop'."""
    from insdel.runner.stages.data import refuse_groups

    _, csv, ds = clinic
    cfg = {"data": {"recipe": "table", "options": {"path": str(csv), "categorical": ["site"]}}}
    with pytest.raises(ValueError, match=r"ROAR removes single features") as exc:
        refuse_groups(cfg, ds, "ROAR removes single features")
    assert "location" not in str(exc.value)
    assert "remove data.options.categorical and add them to data.options.drop" in str(exc.value)
    cfg = {"data": {"recipe": "bangalore", "options": {"location": "onehot"}}}
    with pytest.raises(ValueError, match=r"data\.options\.location = 'drop'"):
        refuse_groups(cfg, ds, "ROAR removes single features")
