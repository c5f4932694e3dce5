"""The experiment runner on a tiny configuration: outputs, manifest, resume, CLI, configs."""

from __future__ import annotations

import inspect
import json
import re
import shutil
import zipfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from _runs import interrupted_chunks, small_cfg  # noqa: E402

import insdel  # noqa: E402
from insdel import _checkpoint as ck  # noqa: E402
from insdel import (
    cli,  # noqa: E402
    runner,  # noqa: E402
)
from insdel import config as C  # noqa: E402

TINY = """
name = "tiny"
seed = 3

[data]
recipe = "dielectron_sim"
[data.options]
n_events = 1000

[model]
preset = "quick_cern"
max_epochs = 2

[targets]
n = 24

[[policies]]
spec = "cern_counterfactual"
label = "counterfactual"
params = { on_unmet = "relax" }

[[policies]]
spec = "average"

[methods]
names = ["kernel_shap", "integrated_gradients", "deeplift", "vanilla_grad", "input_x_gradient", "lime"]
[methods.options.kernel_shap]
n_samples = 64
[methods.options.lime]
n_samples = 64
[methods.options.integrated_gradients]
n_steps = 16

[evaluation]
n_random = 4
targets_per_chunk = 12

[decomposition]
n_pairs = 2
pairs_per_chunk = 1

[figures]
dpi = 40
"""

DATA_SUFFIXES = (".parquet", ".npz", ".csv", ".md", ".png")


@pytest.fixture(scope="module")
def tiny_toml(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("cfg") / "tiny.toml"
    p.write_text(TINY)
    return p


@pytest.fixture(scope="module")
def full_run(tiny_toml, tmp_path_factory):
    out = tmp_path_factory.mktemp("full")
    return runner.run_experiment(tiny_toml, out)


def _data_files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.suffix in DATA_SUFFIXES and "checkpoints" not in p.parts}


# -- configuration ---------------------------------------------------------------------------------
def test_shipped_configs_load():
    names = C.available()
    assert {"demo", "paper_cern", "paper_bangalore"} <= set(names)
    for name in names:
        # demo is already small and has no [quick] table: --quick on it is an error
        for quick in (False, True) if name != "demo" else (False,):
            cfg = C.load(name, quick=quick)
            assert cfg["methods"]["names"] and cfg["policies"]
    with pytest.raises(C.ConfigError, match=r"insdel/shipped/configs/demo\.toml: .*no \[quick\] table"):
        C.load("demo", quick=True)
    full = C.load("paper-cern")
    quick = C.load("paper-cern", quick=True)
    assert full["targets"]["n"] == 2000 and quick["targets"]["n"] < full["targets"]["n"]
    assert full["methods"]["names"][0] == "exact_shapley"
    assert [C.policy_label(p) for p in full["policies"]] == ["counterfactual", "one_to_one",
                                                             "average"]


def test_config_errors(tmp_path):
    with pytest.raises(insdel.UnknownNameError, match="unknown shipped configuration"):
        C.load("no_such_experiment")
    with pytest.raises(ValueError, match="unknown top-level"):
        C.load({"nam": "x", "model": {"preset": "quick_cern"}})
    with pytest.raises(ValueError, match="targets.n"):
        C.load({"model": {"preset": "q"}, "targets": {"n": 0}})
    with pytest.raises(ValueError, match="exactly one"):
        C.load({"model": {"preset": "q", "path": "m.pt"}})
    with pytest.raises(ValueError, match="methods.options.lime"):
        C.load({"model": {"preset": "q"}, "methods": {"names": ["deeplift"],
                                                              "options": {"lime": {}}}})
    with pytest.raises(ValueError, match="label"):
        C.load({"model": {"preset": "q"}, "policies": [{"spec": "average"},
                                                               {"spec": "average"}]})
    with pytest.raises(ValueError, match=r"evaluation.modes names a mode twice"):
        C.load({**_BASE, "evaluation": {"modes": ["deletion", "deletion"]}})
    swapped = C.load({**_BASE, "evaluation": {"modes": ["deletion", "insertion"]}})
    assert swapped["evaluation"]["modes"] == ["deletion", "insertion"]  # any order (trace: tested)
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    with pytest.raises(ValueError, match="invalid TOML"):
        C.load(bad)


# -- atomic writes and checkpoints -----------------------------------------------------------------
def test_npz_is_byte_reproducible_and_loadable(tmp_path):
    arrays = {"a": np.arange(6.0).reshape(2, 3), "names": np.array(["x", "yy"])}
    ck.save_npz(tmp_path / "1.npz", arrays)
    ck.save_npz(tmp_path / "2.npz", arrays)
    assert (tmp_path / "1.npz").read_bytes() == (tmp_path / "2.npz").read_bytes()
    z = np.load(tmp_path / "1.npz", allow_pickle=False)
    np.testing.assert_array_equal(z["a"], arrays["a"])
    assert list(z["names"]) == ["x", "yy"]
    assert all(i.date_time == (1980, 1, 1, 0, 0, 0)
               for i in zipfile.ZipFile(tmp_path / "1.npz").infolist())


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "f.txt"
    ck.atomic_write_text(target, "old")
    with pytest.raises(RuntimeError), ck.atomic_write(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_array_keys_are_stable():
    """The arrays' key in every run and ROAR chunk key: dtype, shape and C-order bytes. Pinned, so
    that a change to it (which would orphan every saved chunk) is deliberate."""
    a, b = np.arange(6.0).reshape(2, 3), np.array([1, 2], np.int32)
    assert ck.sha256_arrays(a, b) == (
        "1e3eb8948619b1f02b49a8fafe130bfb7fe88f5d374fdfd1cf274e6b171b7172")
    assert ck.sha256_arrays(a.T) == ck.sha256_arrays(np.ascontiguousarray(a.T))
    assert ck.sha256_arrays(a) != ck.sha256_arrays(a.reshape(3, 2))  # same bytes, other shape
    assert ck.sha256_arrays(a) != ck.sha256_arrays(a.astype(np.float32))


def test_chunk_store_resume_and_key_change(tmp_path):
    calls = []
    compute = interrupted_chunks(calls)

    store = ck.ChunkStore(tmp_path / "s", "k1")
    with pytest.raises(KeyboardInterrupt):
        store.run(4, compute)
    out = ck.ChunkStore(tmp_path / "s", "k1").run(4, compute)
    assert calls == [0, 1, 2, 2, 3]
    np.testing.assert_array_equal(np.concatenate(out), np.repeat(np.arange(4.0), 3))
    calls.clear()
    ck.ChunkStore(tmp_path / "s", "k2").run(2, compute)  # another config: recomputed
    assert calls == [0, 1]


# -- the runner ------------------------------------------------------------------------------------
def test_outputs(full_run):
    out = full_run.out
    labels = ["counterfactual", "average"]
    assert list(full_run.evaluations) == labels
    for lab in labels:
        for name in ("abc.parquet", "curves.npz", "attributions.npz", "summary.csv", "summary.md"):
            assert (out / lab / name).is_file(), (lab, name)
        df = pd.read_parquet(out / lab / "abc.parquet")
        assert {"pair", "method", "mode", "abc", "fx", "fr", "target_index",
                "reference_index"} <= set(df.columns)
        s = pd.read_csv(out / lab / "summary.csv")
        assert list(s.columns) == ["mode", "method", "mean", "std_error", "n", "kind", "n_units"]
        assert "kernel_shap - integrated_gradients" in set(s["method"])
        assert set(s["method"]) >= set(full_run.config["methods"]["names"]) | {"random"}
        assert "| Test mode | Method | Mean | Std. error |" in (out / lab / "summary.md").read_text()
    dec = pd.read_parquet(out / "counterfactual" / "decomposition.parquet")
    assert len(dec) == 2
    assert (dec["best_abc_insertion"] >= dec["abc_insertion_kernel_shap"] - 1e-9).all()
    diag = pd.read_csv(out / "diagnostics.csv", index_col=0)
    assert list(diag.index) == labels
    assert "mean_n_diff" in diag.columns and "corr_integrated_gradients" in diag.columns
    text = (out / "summary.md").read_text()
    assert "Table 4" in text and "Exact decomposition" in text
    figs = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert len(figs) == len(full_run.figures) >= 6 * 2
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in full_run.figures)


def test_manifest_reports_compute(full_run):
    m = json.loads((full_run.out / "manifest.json").read_text())
    assert m["seed"] == 3 and m["name"] == "tiny" and m["policies"] == list(full_run.evaluations)
    assert m["versions"]["numpy"] and m["versions"]["insdel"]
    st = m["compute"]["stages"]
    assert {"data", "model", "counterfactual/pairing", "counterfactual/curves",
            "counterfactual/attributions/kernel_shap", "counterfactual/decomposition"} <= set(st)
    assert all(v["seconds"] >= 0 for v in st.values())
    assert st["counterfactual/attributions/kernel_shap"]["model_evaluations"] > 0
    assert st["counterfactual/decomposition"]["model_evaluations"] > 0
    assert m["compute"]["model_evaluations_total"] == sum(
        v.get("model_evaluations", 0) for v in st.values())
    for rel, digest in m["files"].items():
        assert ck.sha256_file(full_run.out / rel) == digest


def test_run_names_its_inputs_in_summary_and_manifest(full_run):
    m = full_run.manifest
    assert m["data"]["name"] == "dielectron_sim" and m["data"]["features"] == 16
    assert m["model"]["sha256"] and m["model"]["preset"] == "quick_cern"
    assert list(m["policy_specs"]) == ["counterfactual", "average"]
    text = (full_run.out / "summary.md").read_text()
    assert text.startswith("### Inputs")
    assert "- data: dielectron_sim (recipe dielectron_sim)" in text
    assert (f"- model: preset quick_cern, trained by the run, parameters sha256 "
            f"{m['model']['sha256']}") in text and m["model"]["sha256_of"] == "parameters"
    assert "- policy counterfactual: " in text and "- policy average: " in text
    assert full_run.to_markdown() == text


def test_run_prints_verdicts_beside_each_policy_table(full_run):
    """summary.md holds, under every policy's table, the verdicts read off the pairs' ABCs
    (insdel.verdicts): the significant orderings (Holm), rank intervals and IG's equivalence
    to Kernel SHAP; comparisons.csv holds every pairwise comparison per mode."""
    text = (full_run.out / "summary.md").read_text()
    assert text.count("#### Verdicts") == 2
    assert "- **Insertion.** Significant orderings (Holm-adjusted paired t tests" in text
    assert "- Equivalence (TOST): integrated_gradients is " in text
    assert "kernel_shap within ±" in text
    comp = pd.read_csv(full_run.out / "counterfactual" / "comparisons.csv")
    ev = full_run.evaluations["counterfactual"]
    K = len(ev.methods)
    assert len(comp) == K * (K - 1) and set(comp["mode"]) == {"insertion", "deletion"}
    assert ev.verdicts() in text


def test_evaluation_save_load_round_trip(full_run, tmp_path):
    ev = full_run.evaluations["counterfactual"]
    pairing = full_run.pairings["counterfactual"]
    from insdel import Evaluation

    again = Evaluation.load(ev.save(tmp_path / "ev", pairing=pairing))
    assert again.methods == ev.methods and again.modes == ev.modes
    assert again.normalize == ev.normalize and again.feature_names == ev.feature_names
    for mode in ev.modes:
        np.testing.assert_array_equal(again.curves[mode], ev.curves[mode])
        np.testing.assert_array_equal(again.random_curves[mode], ev.random_curves[mode])
    np.testing.assert_array_equal(again.orders, ev.orders)
    pd.testing.assert_frame_equal(again.abc, ev.abc)
    pd.testing.assert_frame_equal(again.summary(), ev.summary())
    with pytest.raises(FileNotFoundError, match="no saved evaluation"):
        Evaluation.load(tmp_path / "nothing")


def test_load_results_round_trip(full_run):
    evs = runner.load_results(full_run.out)
    for lab, ev in full_run.evaluations.items():
        again = evs[lab]
        assert again.methods == ev.methods
        pd.testing.assert_frame_equal(again.summary(), ev.summary())


def test_resume_after_interruption_is_byte_identical(tiny_toml, full_run, tmp_path):
    from insdel import cli

    count = [0]

    def interrupt():
        count[0] += 1
        if count[0] == 5:  # in the middle of the first policy's attributions
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.run_experiment(tiny_toml, tmp_path, _interrupt=interrupt)
    assert not (tmp_path / "manifest.json").exists()
    assert not list(tmp_path.rglob(".*.tmp"))
    # started again with the same command line: resumes
    assert cli.main(["run", str(tiny_toml), "--out", str(tmp_path), "--no-progress"]) == 0
    a, b = _data_files(full_run.out), _data_files(tmp_path)
    assert a.keys() == b.keys()
    assert [k for k in a if a[k] != b[k]] == []
    m = json.loads((tmp_path / "manifest.json").read_text())
    assert m["compute"]["stages"]["counterfactual/attributions/kernel_shap"]["chunks_resumed"] > 0


def test_cli_parsers():
    p = cli.build_parser()
    a = p.parse_args(["run", "x.toml", "--quick", "--out", "o"])
    assert a.func is cli._cmd_run and a.quick and a.out == "o"
    a = p.parse_args(["reproduce", "paper-cern", "--data", "d.csv", "--quick"])
    assert a.func is cli._cmd_reproduce and a.experiment == "paper-cern" and a.data == "d.csv"
    a = p.parse_args(["demo"])
    assert a.func is cli._cmd_demo and a.out == "insdel-demo"
    with pytest.raises(SystemExit):
        p.parse_args(["reproduce", "paper-mars"])
    assert cli.main(["reproduce", "paper-cern", "--data", "/no/such.csv"]) == 1


# -- strict configuration: every key at every level ------------------------------------------------
_BASE = {"data": {"recipe": "dielectron_sim"}, "model": {"preset": "quick_cern"}}


@pytest.mark.parametrize("over, key, suggestion", [
    ({"methods": {"name": ["lime"]}}, "methods.name", "names"),
    ({"targets": {"m": 5}}, "targets.m", "n"),
    ({"model": {"preset": "quick_cern", "max_epoch": 3}}, "model.max_epoch", "max_epochs"),
    ({"figures": {"enable": False}}, "figures.enable", "enabled"),
    ({"evaluation": {"n_randm": 3}}, "evaluation.n_randm", "n_random"),
    ({"policies": [{"spec": "average", "lable": "a"}]}, "policies[0].lable", "label"),
    ({"quick": {"targets": {"nn": 3}}}, "quick.targets.nn", "n"),
])
def test_config_typo_is_an_error_naming_the_key(over, key, suggestion):
    cfg = {**_BASE, **over}
    with pytest.raises(ValueError, match=rf"unknown key '{re.escape(key)}'; did you mean "
                                         rf"'{suggestion}'"):
        C.load(cfg)


@pytest.mark.parametrize("over, key, suggestion", [
    ({"data": {"recipe": "housing_sim", "options": {"n_sample": 50}}}, "data.options.n_sample",
     "n_samples"),
    ({"data": {"recipe": "table", "options": {"targte": "y"}}}, "data.options.targte", "target"),
    ({"model": {"params": {"hiden": [8]}}}, "model.params.hiden", "hidden"),
    ({"policies": [{"spec": "cern_counterfactual", "params": {"min_dif": 2}}]},
     "policies[0].params.min_dif", "min_diff"),
])
def test_config_typo_inside_free_tables_is_an_error_naming_the_key(over, key, suggestion):
    cfg = {**_BASE, **over}
    if "params" in over.get("model", {}):
        cfg["model"] = {"params": over["model"]["params"]}
    with pytest.raises(ValueError, match=rf"unknown key '{re.escape(key)}'; did you mean "
                                         rf"'{suggestion}'"):
        C.load(cfg)


def test_config_unknown_names_are_errors_with_a_suggestion():
    with pytest.raises(ValueError, match=r"data.recipe: unknown data set 'dielectron_sm'; did you "
                                         r"mean 'dielectron_sim'"):
        C.load({**_BASE, "data": {"recipe": "dielectron_sm"}})
    with pytest.raises(ValueError, match=r"model.preset: unknown preset 'quick_cen'; did you mean "
                                         r"'quick_cern'"):
        C.load({**_BASE, "model": {"preset": "quick_cen"}})
    with pytest.raises(ValueError, match=r"policies\[0\].spec: unknown policy or specification"):
        C.load({**_BASE, "policies": [{"spec": "cern_counterfactul"}]})
    with pytest.raises(ValueError, match=r"data.options.seed: the seed is the top-level key"):
        C.load({**_BASE, "data": {"recipe": "dielectron_sim", "options": {"seed": 1}}})
    with pytest.raises(ValueError, match=r"model.params: params\['dropout'\]"):
        C.load({**_BASE, "model": {"params": {"hidden": [4], "dropout": 2.0, "lr": 0.1}}})


def test_config_method_option_typo_and_unknown_method():
    with pytest.raises(ValueError, match=r"methods.options.lime.n_sample'; did you mean 'n_samples'"):
        C.load({**_BASE, "methods": {"names": ["lime"], "options": {"lime": {"n_sample": 5}}}})
    with pytest.raises(ValueError, match=r"unknown attribution method 'integrated_gradient'; did "
                                         r"you mean 'integrated_gradients'"):
        C.load({**_BASE, "methods": {"names": ["integrated_gradient"]}})


def test_config_path_without_recipe_and_missing_recipe_are_errors():
    with pytest.raises(ValueError, match="data.path is not a key.*recipe = \"table\""):
        C.load({"data": {"path": "diabetes.csv"}, "model": {"preset": "quick_cern"}})
    with pytest.raises(ValueError, match="data.recipe is required"):
        C.load({"model": {"preset": "quick_cern"}})


def test_config_renamed_keys_and_types():
    with pytest.raises(ValueError, match="evaluation.chunk_size was renamed to "
                                         "'evaluation.targets_per_chunk'"):
        C.load({**_BASE, "evaluation": {"chunk_size": 5}})
    with pytest.raises(ValueError, match="decomposition.chunk_size was renamed"):
        C.load({**_BASE, "decomposition": {"chunk_size": 5}})
    with pytest.raises(ValueError, match="evaluation.normalize must be true/false"):
        C.load({**_BASE, "evaluation": {"normalize": "yes"}})
    with pytest.raises(ValueError, match="targets.n must be an integer"):
        C.load({**_BASE, "targets": {"n": 2.5}})


def test_second_run_on_the_same_folder_refuses(tmp_path, tiny_toml):
    from filelock import FileLock

    held = FileLock(str(tmp_path / ".insdel.lock"))
    held.acquire()
    try:
        with pytest.raises(runner.OutputFolderBusy, match="in use by another insdel run"):
            runner.run_experiment(tiny_toml, tmp_path)
        assert cli.main(["run", str(tiny_toml), "--out", str(tmp_path), "--no-progress"]) == 1
    finally:
        held.release()


def test_a_run_with_other_inputs_never_reuses_a_chunk(tmp_path, tiny_toml):
    """Same folder, another seed (so other pairs, model and streams): nothing is resumed."""
    out = tmp_path / "same_folder"
    cfg = C.load(tiny_toml, overrides={"figures": {"enabled": False},
                                       "decomposition": {"n_pairs": 0}})
    runner.run_experiment(cfg, out)
    again = runner.run_experiment(cfg, out)  # the same inputs: everything resumes
    stages = again.manifest["compute"]["stages"]
    assert all(v.get("chunks_resumed", 1) > 0 for k, v in stages.items() if "/attributions/" in k)
    other = runner.run_experiment({**cfg, "seed": cfg["seed"] + 1}, out)
    stages = other.manifest["compute"]["stages"]
    assert [k for k, v in stages.items() if "/attributions/" in k and v["chunks_resumed"]] == []


def test_exact_shapley_from_the_decomposition_and_sampled_vs_exact(tiny_toml, tmp_path):
    """With every pair decomposed, exact Shapley is read from the decomposition (no second 2^|D|
    pass, same numbers as the method); the run pairs sampled Kernel SHAP with it and draws the
    decomposition figure; each method's gap to the best is >= 0 pair by pair (issue 13)."""
    cfg = C.load(tiny_toml, overrides={
        "methods": {"names": ["kernel_shap", "exact_shapley", "integrated_gradients", "lime"],
                    "options": {"kernel_shap": {"n_samples": 64, "exact": "never"},
                                "integrated_gradients": {"n_steps": 16}}},
        "policies": [{"spec": "cern_counterfactual", "label": "cf",
                      "params": {"on_unmet": "relax"}}],
        "decomposition": {"n_pairs": 24, "pairs_per_chunk": 8}})
    res = runner.run_experiment(cfg, tmp_path, progress=False)
    pairing = res.pairings["cf"]
    atts = np.load(tmp_path / "cf" / "attributions.npz")
    direct = insdel.attribute(res.model, pairing.X, pairing.R, "exact_shapley")
    np.testing.assert_allclose(atts["exact_shapley"], direct, rtol=1e-9, atol=1e-9)
    assert not (tmp_path / "checkpoints" / "cf" / "exact_shapley").exists()
    sve = pd.read_csv(tmp_path / "sampled_vs_exact.csv")
    assert list(sve["mode"]) == ["insertion", "deletion"] and (sve["n"] == 24).all()
    ev = res.evaluations["cf"]
    d = ev.abc_array("kernel_shap", "insertion") - ev.abc_array("exact_shapley", "insertion")
    assert sve["difference"].iloc[0] == pytest.approx(d.mean())
    text = (tmp_path / "summary.md").read_text()
    assert "Sampled Kernel SHAP against exact Shapley" in text and "gap: exact_shapley" in text
    dec = res.decompositions["cf"]
    for m in ("kernel_shap", "exact_shapley", "integrated_gradients", "random"):
        for mode in ("insertion", "deletion"):
            assert (dec[f"best_abc_{mode}"] >= dec[f"abc_{mode}_{m}"] - 1e-9).all(), (m, mode)
    assert (tmp_path / "figures" / "cf_decomposition.png").read_bytes()[:4] == b"\x89PNG"


def test_compute_device_is_validated_and_keys_the_run(tiny_toml):
    with pytest.raises(C.ConfigError, match=r"compute\.device: 'cdua' is not a torch device"):
        C.load(tiny_toml, overrides={"compute": {"device": "cdua"}})
    if not torch.cuda.is_available():
        with pytest.raises(C.ConfigError, match=r"compute\.device = 'cuda', but torch sees no CUDA"):
            C.load(tiny_toml, overrides={"compute": {"device": "cuda"}})
    with pytest.raises(C.ConfigError, match=r"compute\.devcie.*did you mean 'device'"):
        C.load(tiny_toml, overrides={"compute": {"devcie": "cpu"}})
    assert C.load(tiny_toml)["compute"]["device"] == "cpu"
    assert cli.build_parser().parse_args(["demo", "--device", "cpu"]).device == "cpu"


# -- what determines a chunk (auditor's findings, 2026-11-25) ----------------------------------------
def _table_csv(path: Path) -> Path:
    """A small table with two two-level columns (binary features under ``binary = "auto"``)."""
    rng = np.random.default_rng(1)
    N = 120
    a, flag, b, sign = rng.normal(size=N), rng.integers(0, 2, N), rng.normal(size=N), \
        rng.choice([-1, 1], N)
    y = 2 * a + 3 * flag - b + a * sign + 0.1 * rng.normal(size=N)
    path.write_text("a,flag,y,b,sign\n" + "\n".join(
        f"{a[i]:.6f},{flag[i]},{y[i]:.6f},{b[i]:.6f},{sign[i]}" for i in range(N)) + "\n")
    return path


def _table_cfg(csv: Path, **over) -> dict:
    cfg = {"name": "chunks", "seed": 0,
           "data": {"recipe": "table", "options": {"path": str(csv), "target": "y",
                                                   "scale": "none", "binary": "auto"}},
           "model": {"params": {"hidden": [8], "dropout": 0.0, "lr": 3e-3}, "max_epochs": 2},
           "targets": {"n": 12}, "policies": [{"spec": {"policy": "median"}}],
           "methods": {"names": ["integrated_gradients"], "options": {"integrated_gradients": {
               "binary": "dataset", "binary_levels": "dataset", "binary_mode": "jump",
               "n_steps": 8}}},
           "evaluation": {"n_random": 2, "targets_per_chunk": 6}, "figures": {"enabled": False}}
    for k, v in over.items():
        cfg[k] = {**cfg[k], **v} if isinstance(v, dict) else v
    return cfg


def test_chunks_keyed_by_what_dataset_valued_options_stand_for(tmp_path):
    """``binary = "dataset"`` stands for the data set's binary features: changing them (here
    ``data.options.binary``, with the same arrays) recomputes the chunks, as a clean run would."""
    csv = _table_csv(tmp_path / "t.csv")
    out = tmp_path / "out"
    a = insdel.run_experiment(_table_cfg(csv), out, verbose=False)
    no_bin = _table_cfg(csv, data={"recipe": "table", "options": {
        "path": str(csv), "target": "y", "scale": "none", "binary": []}})
    b = insdel.run_experiment(no_bin, out, verbose=False)
    assert a.dataset.binary_mask.any() and not b.dataset.binary_mask.any()
    insdel.run_experiment(no_bin, tmp_path / "clean", verbose=False)
    got = np.load(out / "median" / "attributions.npz")["integrated_gradients"]
    want = np.load(tmp_path / "clean" / "median" / "attributions.npz")["integrated_gradients"]
    np.testing.assert_array_equal(got, want)


def test_method_seed_and_std_scale_do_not_depend_on_chunks(tmp_path):
    """A method's own ``seed`` gives each chunk its own stream (not the first chunk's draws
    repeated), and ``scale = "std"`` is the standard deviation over all targets, whatever the
    chunk size."""
    csv = _table_csv(tmp_path / "t.csv")
    runs = {}
    for cs in (3, 12):
        cfg = _table_cfg(csv, methods={"names": ["random", "vanilla_grad"], "options": {
            "random": {"seed": 3}, "vanilla_grad": {"scale": "std"}}},
            evaluation={"n_random": 2, "targets_per_chunk": cs})
        insdel.run_experiment(cfg, tmp_path / f"cs{cs}", verbose=False)
        runs[cs] = np.load(tmp_path / f"cs{cs}" / "median" / "attributions.npz")
    rnd = runs[3]["random"]
    assert not np.array_equal(rnd[0:3], rnd[3:6])  # chunk 1 draws its own stream
    np.testing.assert_allclose(runs[3]["vanilla_grad"], runs[12]["vanilla_grad"], rtol=1e-5,
                               atol=1e-7)
    X = np.random.default_rng(0).normal(size=(10, 3))
    f = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).double()
    one = insdel.attribute(f, X, X[::-1], "vanilla_grad", scale="std")
    chunked = insdel.attribute(f, X, X[::-1], "vanilla_grad", scale="std", pairs_per_chunk=3)
    np.testing.assert_allclose(chunked, one, rtol=1e-12)
    with pytest.raises(ValueError, match="scale='std'.*at least 2"):
        insdel.attribute(f, X[:1], X[:1], "vanilla_grad", scale="std")


def test_figures_compare_names_and_quick_on_a_loaded_config():
    """A typo in figures.compare is an error with a suggestion (the figures would silently compare
    other methods); quick=True on an already loaded configuration is an error, not ignored."""
    with pytest.raises(C.ConfigError, match=r"figures.compare: unknown method "
                                            r"'integrated_gradient'; did you mean "
                                            r"'integrated_gradients'"):
        C.load({**_BASE, "figures": {"compare": ["kernel_shap", "integrated_gradient"]}})
    assert C.load({**_BASE, "figures": {"compare": ["random", "lime"]}})["figures"]["compare"] \
        == ["random", "lime"]
    cfg = C.load(_BASE)
    with pytest.raises(ValueError, match=r"quick=True, but the configuration is already loaded"):
        insdel.run_experiment(cfg, quick=True)
    with pytest.raises(ValueError, match=r"quick=True, but the configuration is already loaded"):
        runner.run_roar(cfg, quick=True)


def test_rows_dropped_for_missing_values_reach_the_inputs_summary_and_manifest(tmp_path, capsys):
    """Rows the table recipe dropped for missing values were counted in the data set's info but
    shown nowhere in a run (65 of 1,500 in a user's trial): the printed inputs, summary.md and
    manifest.json give the count and the rows missing per column; above 5 % it is a warning."""
    from _runs import small_cfg, small_csv

    csv = small_csv(tmp_path / "holes.csv", empty={"b": [1, 4, 9], "a": [4, 20]})
    with pytest.warns(UserWarning, match=r"holes.csv: 4 of 60 rows \(6.7 %, more than 5 %\) are "
                                         r"dropped for missing values \(by column: b 3, a 2\)"):
        res = runner.run_experiment(small_cfg(csv, "holes"), tmp_path / "out", progress=False,
                                    verbose=True)
    line = "- rows: 60 read, 4 dropped for missing values (6.7 %; by column: b 3, a 2)"
    assert line in res.to_markdown()
    assert line in (tmp_path / "out" / "summary.md").read_text()
    assert "data: 60 read, 4 dropped for missing values" in capsys.readouterr().err
    data = json.loads((tmp_path / "out" / "manifest.json").read_text())["data"]
    assert data["rows_read"] == 60 and data["rows_dropped_missing"] == 4
    assert data["missing_by_column"] == {"a": 2, "b": 3}
    # below the threshold: counted and shown, no warning
    import warnings

    csv2 = small_csv(tmp_path / "one.csv", empty={"b": [3]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res2 = runner.run_experiment(small_cfg(csv2, "one"), tmp_path / "out2", progress=False)
    assert "- rows: 60 read, 1 dropped for missing values (1.7 %; by column: b 1)" in \
        res2.to_markdown()


def test_a_csv_run_is_named_by_its_file_not_the_recipe(tmp_path, monkeypatch):
    """Titles, the run's inputs, the leaderboard's data-set column and ROAR said "table" for every
    CSV; they give the file's name, and the recipe where the recipe is meant."""
    from _runs import small_cfg, small_csv

    from insdel import leaderboard, plotting

    csv = small_csv(tmp_path / "small.csv")
    res = runner.run_experiment(small_cfg(csv, "named"), tmp_path / "out", progress=False)
    assert "- data: small.csv (recipe table, file" in res.to_markdown()
    assert res.manifest["data"]["name"] == "small.csv"
    assert res.manifest["data"]["recipe"] == "table"
    ax = plotting.plot_predictions(res.model, res.dataset)
    assert ax.get_title().startswith("small.csv test:")
    board = leaderboard.leaderboard([tmp_path / "out"], n_boot=20)
    assert set(board.blocks["dataset"]) == {"small.csv"}
    assert "### small.csv / median" in board.to_markdown()
    titles = []
    real = plotting.roar_figure
    monkeypatch.setattr(plotting, "roar_figure",
                        lambda s, *, title=None, ax=None: titles.append(title) or real(s, title=title))
    cfg = small_cfg(csv, "roar", roar={"orderings": ["absolute"], "fractions": [1.0],
                                       "replicates": 1, "max_epochs": 1})
    for k in ("targets", "policies", "evaluation", "figures"):
        cfg.pop(k)
    run = runner.run_roar(cfg, tmp_path / "roar", progress=False)
    assert titles == ["ROAR on small.csv"]
    assert "- data: small.csv (recipe table" in (tmp_path / "roar" / "summary.md").read_text()
    assert run.manifest["data"]["name"] == "small.csv"


def test_a_one_to_one_run_gives_standard_errors_over_couples(tmp_path):
    """A run's one_to_one tables gave standard errors over pairs, each couple counted in both
    directions; summary.csv, summary.md and metrics_summary.csv are over the couples now and say
    so, the decomposition table too, and abc.parquet records each pair's couple."""
    from _runs import small_cfg, small_csv

    csv = small_csv(tmp_path / "small.csv")
    cfg = small_cfg(csv, "couples", targets={"n": 12},
                    policies=[{"spec": {"policy": "one_to_one"}}],
                    methods={"names": ["vanilla_grad", "integrated_gradients"]},
                    decomposition={"n_pairs": 4}, metrics={"names": ["insertion_abc"]})
    res = runner.run_experiment(cfg, tmp_path / "out", progress=False)
    out = tmp_path / "out" / "one_to_one"
    s = pd.read_csv(out / "summary.csv")
    assert set(s["n"]) == {12} and set(s["n_units"]) == {6}
    abc = pd.read_parquet(out / "abc.parquet")
    ins = abc[(abc["mode"] == "insertion") & (abc["method"] == "integrated_gradients")]
    means = ins.groupby("cluster")["abc"].mean()
    row = s[(s["mode"] == "insertion") & (s["method"] == "integrated_gradients")].iloc[0]
    assert row["std_error"] == pytest.approx(means.std(ddof=1) / np.sqrt(6), rel=1e-9)
    assert row["mean"] == pytest.approx(ins["abc"].mean(), rel=1e-12)
    text = (tmp_path / "out" / "summary.md").read_text()
    assert "### Policy: one_to_one (12 pairs, 6 independent units)" in text
    assert "Std. error over the 6 independent units, not the 12 pairs" in text
    m = pd.read_csv(out / "metrics_summary.csv")
    assert set(m["n_units"]) == {6}
    dec = pd.read_parquet(out / "decomposition.parquet")
    assert "cluster" in dec.columns and len(dec) == 4
    assert res.evaluations["one_to_one"].clusters.tolist() == \
        res.pairings["one_to_one"].cluster.tolist()


def _cfg(csv: Path, **over) -> dict:
    return small_cfg(csv, "small", **over)


# -- model cache, chunk keys, manifests and run names ----------------------------------------------
def test_model_cache_key_is_not_left_beside_another_model(csv, tmp_path, monkeypatch):
    """A run killed after saving its model.pt but before writing model.key leaves no other run's
    key beside the new model: the previous configuration trains its own model again."""
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
    hash: their chunks are keyed by the file, so the second run reuses none of the first's."""
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


def test_a_rerun_removes_the_old_manifest_before_rewriting(csv, tmp_path, monkeypatch):
    """A second run on the same folder removes the first run's manifest before it replaces files:
    stopped half-way, the folder is no finished run (load_results and the leaderboard must not read
    the first configuration with the second one's numbers)."""
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


def test_fewer_test_rows_than_targets_n_is_said(csv, tmp_path, capsys):
    """targets.n larger than the test split takes every test row and says so."""
    runner.run_experiment(_cfg(csv, targets={"n": 500}), tmp_path / "out", verbose=True)
    assert "targets: all 12 test rows (targets.n = 500" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["../x", "a/b", ".", ""])
def test_a_run_name_that_is_not_a_folder_name_is_an_error(csv, tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="plain folder name"):
        runner.run_experiment(_cfg(csv, name=name))
    assert not (tmp_path.parent / "x").exists()


# -- quick=True without a [quick] table is refused before any work --------------------------------
def test_quick_without_a_quick_table_stops_run_and_roar_before_writing(csv, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(C.ConfigError, match=r"no \[quick\] table"):
        insdel.run_experiment(_cfg(csv), out, quick=True)
    roar_cfg = {k: v for k, v in _cfg(csv).items()
                if k in C.ROAR_SECTIONS} | {"roar": {"orderings": ["random"]}}
    with pytest.raises(C.ConfigError, match=r"no \[quick\] table"):
        runner.run_roar(roar_cfg, out, quick=True)
    assert not out.exists()


# -- the manifest lists this run's files only ------------------------------------------------------
def _files(out: Path) -> set[str]:
    return set(json.loads((out / "manifest.json").read_text())["files"])


def test_rerun_with_fewer_policies_leaves_the_old_folder_out_of_the_manifest(csv, tmp_path,
                                                                             capsys):
    """A rerun with fewer policies leaves the earlier run's policy folders out of its manifest."""
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
    """Every file is listed, whatever the folders of the absolute path are named ('checkpoints')."""
    out = tmp_path / "checkpoints" / "out"
    res = runner.run_experiment(_cfg(csv), out)
    assert {"median/abc.parquet", "summary.csv", "model.pt"} <= set(res.manifest["files"])
    assert not any(f.startswith("checkpoints/") for f in res.manifest["files"])


def test_roar_refuses_a_run_folder_and_its_manifest_leaves_out_files_it_did_not_write(
        csv, tmp_path, capsys):
    out = tmp_path / "out"
    runner.run_experiment(_cfg(csv), out)
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    roar_cfg = {k: v for k, v in _cfg(csv).items() if k in C.ROAR_SECTIONS}
    roar_cfg["roar"] = {"orderings": ["random"], "fractions": [1.0], "replicates": 1,
                        "max_epochs": 1}
    with pytest.raises(runner.OutputFolderOfAnotherKind,
                       match=r"holds an `insdel run` run.*`insdel roar` writes a roar run"):
        runner.run_roar(roar_cfg, out)
    assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before
    # files in a ROAR folder that this ROAR run did not write: left in place, out of its manifest
    mine = tmp_path / "roar"
    (mine / "median").mkdir(parents=True)
    (mine / "median" / "abc.parquet").write_bytes(b"x")
    (mine / "diagnostics.csv").write_text("x\n")
    capsys.readouterr()
    res = runner.run_roar(roar_cfg, mine)
    files = set(res.manifest["files"])
    assert {"roar.csv", "roar_summary.csv", "summary.md", "attributions.npz"} <= files
    assert not any(f.startswith("median/") for f in files) and "diagnostics.csv" not in files
    note = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("note:")]
    assert len(note) == 1 and "median/" in note[0] and "diagnostics.csv" in note[0]


# -- lock_folder and unfinish ----------------------------------------------------------------------
def test_lock_folder_refuses_a_folder_of_another_kind_and_names_both(tmp_path):
    """Every command's kind is read from a finished folder's manifest (or a started run's mark);
    a folder of another kind is refused with the lock released and nothing in it changed."""
    from insdel.runner import provenance

    manifests = {"run": {"policies": ["median"]}, "roar": {"roar": {}}, "road": {"road": {}},
                 "sanity": {"sanity": {}}, "tune": {"tune": {}}, "forecast": {"forecast": {}},
                 "paper-images": {"experiment": "paper-images"}}
    assert set(manifests) == set(provenance.KINDS)
    for kind, manifest in manifests.items():
        out = tmp_path / kind
        out.mkdir()
        (out / "manifest.json").write_text(json.dumps(manifest))
        assert runner.folder_kind(out) == kind
        runner.lock_folder(out, kind=kind).release()  # its own kind: accepted
        other = "road" if kind != "road" else "run"
        before = {p.name: p.read_bytes() for p in out.iterdir()}
        with pytest.raises(runner.OutputFolderOfAnotherKind,
                           match=rf"holds an `{re.escape(provenance.KINDS[kind])}` run.*"
                                 rf"`{re.escape(provenance.KINDS[other])}` writes"):
            runner.lock_folder(out, kind=other)
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
        runner.lock_folder(out).release()  # the refused call released the lock
    # a run stopped before its manifest still marks the folder
    out = tmp_path / "started"
    out.mkdir()
    runner.lock_folder(out, kind="roar").release()
    assert runner.folder_kind(out) == "roar" and runner.folder_kind(tmp_path / "none") is None
    with pytest.raises(runner.OutputFolderOfAnotherKind, match="`insdel roar` run"):
        runner.lock_folder(out, kind="sanity")


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


def test_attribution_chunks_of_another_method_revision_are_recomputed(tmp_path, monkeypatch):
    """A method whose numbers changed (its ``revision``) never reuses the chunks an earlier
    revision checkpointed in the same folder: the revision is part of every chunk's key."""
    from _runs import small_cfg, small_csv

    from insdel.attribution.gradients import VanillaGrad

    csv = small_csv(tmp_path / "small.csv")
    out = tmp_path / "out"
    cfg = small_cfg(csv, "revision")

    def chunk_names():
        return sorted(p.name for p in out.rglob("chunk_*.npy") if "vanilla_grad" in p.parts)

    runner.run_experiment(cfg, out, progress=False)
    first = chunk_names()
    assert first
    runner.run_experiment(cfg, out, progress=False)
    assert chunk_names() == first  # the same revision: the chunks are reused
    monkeypatch.setattr(VanillaGrad, "revision", VanillaGrad.revision + 1)
    runner.run_experiment(cfg, out, progress=False)
    again = chunk_names()
    assert len(again) == len(first) and not set(again) & set(first)
