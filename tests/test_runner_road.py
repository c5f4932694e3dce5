"""``insdel road`` and ``insdel reproduce paper-road-bangalore`` (issue 36): the ``[road]`` table's
validation, a run writing its files and naming its removal, and a re-run reusing the trained model
with byte-identical curves.

The removal is test-local (a numpy conditional Gaussian fitted on ``data``, registered for the
test): ROAD's run only needs the registry and the SampledRemoval interface."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from insdel import cli, removal, road, runner
from insdel import config as C
from insdel.removal import SampledRemoval, target_rng


def _entries() -> dict:
    """The removal registry's table, built-ins loaded (a test-local entry set in it is undone by
    monkeypatch)."""
    removal.available()
    return removal._REGISTRY.entries


class NumpyGaussian(SampledRemoval):
    """Removed features drawn from a Gaussian fitted on ``data``, conditioned on the kept ones
    (one solve per distinct keep pattern of a call)."""

    name = "test_road_gaussian"

    def __init__(self, data=None, *, n_draws: int = 32, seed: int = 0):
        D = np.asarray(data, float)
        self.mu = D.mean(axis=0)
        self.S = np.cov(D, rowvar=False) + 1e-6 * np.eye(D.shape[1])
        self.n_draws, self.seed = int(n_draws), int(seed)

    def sample(self, X, keep, targets):
        X, keep = np.asarray(X, float), np.asarray(keep, bool)
        B, n = X.shape
        out = np.repeat(X[:, None, :], self.n_draws, axis=1)
        Z = np.stack([target_rng(self.seed, int(t), self.name).standard_normal((self.n_draws, n))
                      for t in targets])
        patterns, inv = np.unique(keep, axis=0, return_inverse=True)
        for p, u in enumerate(patterns):
            r = ~u
            if not r.any():
                continue
            rows = np.flatnonzero(inv.ravel() == p)
            mean = np.broadcast_to(self.mu[r], (len(rows), int(r.sum()))).copy()
            cov = self.S[np.ix_(r, r)]
            if u.any():
                K = np.linalg.solve(self.S[np.ix_(u, u)], self.S[np.ix_(u, r)]).T
                mean = mean + (X[rows][:, u] - self.mu[u]) @ K.T
                cov = cov - K @ self.S[np.ix_(u, r)]
            L = np.linalg.cholesky(cov + 1e-9 * np.eye(int(r.sum())))
            sub = out[rows]
            sub[:, :, r] = mean[:, None, :] + Z[rows][:, :, r] @ L.T
            out[rows] = sub
        return out


class Fill(SampledRemoval):
    """Removed features set to a constant (no data): the registry builds it without ``data``."""

    name = "test_road_fill"

    def __init__(self, *, value: float = 0.0):
        self.value = float(value)

    def params(self):
        return {**super().params(), "value": self.value}

    def sample(self, X, keep, targets):
        return np.where(keep, np.asarray(X, float), self.value)[:, None, :]


@pytest.fixture
def registered(monkeypatch):
    """The test's removals registered for the test only."""
    monkeypatch.setitem(_entries(), NumpyGaussian.name, NumpyGaussian)
    monkeypatch.setitem(_entries(), Fill.name, Fill)


TINY_ROAD = """
name = "tiny_road"
seed = 1
[data]
recipe = "dielectron_sim"
[data.options]
n_events = 600
[model]
preset = "quick_cern"
max_epochs = 2
[methods]
names = ["integrated_gradients", "vanilla_grad"]
[methods.options.integrated_gradients]
n_steps = 8
[road]
fractions = [0.25, 0.5, 1.0]
n_rows = 60
removal = "test_road_gaussian"
[road.removal_options]
n_draws = 4
[road.leakage_options]
folds = 3
"""


def _fill(tmp_path, value: float = 0.5):
    """TINY_ROAD with the data-free fill removal (its own options: a removal's options are a
    table of that removal's keys)."""
    p = tmp_path / "fill.toml"
    p.write_text(TINY_ROAD.replace('"test_road_gaussian"', '"test_road_fill"')
                 .replace("n_draws = 4", f"value = {value}"))
    return p


@pytest.fixture
def tiny(tmp_path, registered):
    p = tmp_path / "road.toml"
    p.write_text(TINY_ROAD)
    return p


@pytest.mark.parametrize("over,match", [
    ({"road": {"removal_optons": {}}}, r"unknown key 'road\.removal_optons'; did you mean "
                                       r"'removal_options'"),
    ({"road": {"leakage_options": {"fold": 3}}},
     r"unknown key 'road\.leakage_options\.fold'; did you mean 'folds'"),
    ({"road": {"leakage_options": {"folds": 1}}}, r"road\.leakage_options\.folds.*>= 2"),
    ({"road": {"leakage_options": {"fraction": 1.0}}}, r"road\.leakage_options\.fraction"),
    ({"road": {"leakage_options": {"classifier": "forrest"}}},
     r"road\.leakage_options\.classifier: unknown value 'forrest'; did you mean 'forest'"),
    ({"road": {"n_rows": 0}}, r"road\.n_rows"),
    ({"road": {"fractions": [0, 1.0]}}, r"road: fractions\[0\] must be a number in \(0, 1\]"),
    ({"road": {"orders": ["morf", "lerff"]}}, r"road\.orders: unknown ordering 'lerff'\. Did you "
                                               r"mean 'lerf'"),
    ({"road": {"orders": []}}, r"road\.orders must name at least one"),
    ({"road": {"orders": ["morf", "morf"]}}, r"road\.orders names an order twice"),
    ({"road": {"ranking": "signd"}}, r"road\.ranking: unknown value 'signd'; did you mean "
                                     r"'signed'"),
    ({"road": {"loss": "rmes"}}, r"road\.loss: unknown value 'rmes'; did you mean 'rmse'"),
    ({"road": {"random": "yes"}}, r"road\.random must be true/false"),
    ({"road": {"removal": "test_road_gausian"}}, r"road\.removal: unknown removal "
                                                 r"'test_road_gausian'; did you mean "
                                                 r"'test_road_gaussian'"),
    ({"road": {"removal": "marginal"}}, r"road\.removal = 'marginal' sets removed features to "
                                        r"reference rows' values; ROAD imputes"),
    ({"road": {"removal": "cohort"}}, r"road\.removal = 'cohort' reads a coalition's value off "
                                      r"the data's cohort \(a game, no imputed row\); ROAD "
                                      r"imputes"),
    ({"road": {"removal_options": {"n_draw": 4}}},
     r"unknown key 'road\.removal_options\.n_draw'; did you mean 'n_draws'"),
    ({"road": {"removal_options": {"data": [[0.0]]}}}, r"road\.removal_options\.data: the "
                                                        r"removal is fitted"),
    ({"road": {"reference": "no_such_policy_xyz"}}, r"road\.reference must be 'training_mean' "
                                                    r"or a policy spec"),
    ({"methods": {"names": ["integrated_gradients", "random"]}},
     r"methods\.names lists 'random', and road\.random = true"),
])
def test_config_validation_names_the_key(tiny, over, match):
    with pytest.raises(C.ConfigError, match=match):
        C.load(tiny, overrides=over)


def test_config_defaults_sections_and_shipped(tiny, tmp_path, monkeypatch):
    cfg = C.load(tiny)
    r = cfg["road"]
    assert r["orders"] == ["morf", "lerf"] and r["ranking"] == "absolute" and r["loss"] == "mse"
    assert r["leakage"] is True and r["leakage_options"] == {
        "fraction": 0.5, "n_rows": 2000, "classifier": "forest", "folds": 3}
    assert C.load(_fill(tmp_path), overrides={"road": {"random": False}})
    with pytest.raises(C.ConfigError, match=r"unknown key 'road\.removal_options\.n_draws'"):
        C.load(tiny, overrides={"road": {"removal": "test_road_fill"}})  # the Gaussian's option
    with pytest.raises(C.ConfigError, match="run it with `insdel road`"):
        runner.run_experiment(cfg, tmp_path / "x")
    with pytest.raises(C.ConfigError, match=r"evaluation: not read by `insdel road`"):
        runner.run_road(C.load(tiny, overrides={"evaluation": {"n_random": 3}}), tmp_path / "y")
    with pytest.raises(C.ConfigError, match=r"targets: not read by `insdel road`"):
        runner.run_road(C.load(tiny, overrides={"targets": {"n": 3}}), tmp_path / "y")
    with pytest.raises(C.ConfigError, match=r"road: not read by `insdel roar`"):
        runner.run_roar(C.load(tiny, overrides={"roar": {"replicates": 1}}), tmp_path / "y")
    with pytest.raises(C.ConfigError, match=r"`insdel road` needs a \[road\] table"):
        runner.run_road("demo", tmp_path / "z")
    # the shipped configuration, whether or not conditional_gaussian is registered yet
    for quick in (False, True):
        c = C.load("paper-road-bangalore", quick=quick)
        assert "road" in c["sections"] and c["road"]["removal"] == "conditional_gaussian"
        assert c["model"]["preset"] == C.load("paper_roar_bangalore")["model"]["preset"]
        C.check_sections(c, "road")
    assert C.load("paper_road_bangalore", quick=True)["road"]["removal_options"]["n_draws"] < \
        C.load("paper_road_bangalore")["road"]["removal_options"]["n_draws"]


def test_a_removal_that_is_not_registered_is_named_when_the_config_is_read(tmp_path):
    p = tmp_path / "r.toml"
    p.write_text(TINY_ROAD.replace('"test_road_gaussian"', '"conditional_gausian"'))
    with pytest.raises(C.ConfigError, match=r"road\.removal: unknown removal "
                                            r"'conditional_gausian'.*conditional_gaussian"):
        C.load(p)


def test_cli_road_writes_its_files_and_a_rerun_is_identical(tiny, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["road", str(tiny), "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "test_road_gaussian" in printed and "road.csv" in printed
    curves = pd.read_csv(out / "road.csv")
    assert list(curves.columns) == road.CURVE_COLUMNS
    assert set(curves["method"]) == {"integrated_gradients", "vanilla_grad", "random"}
    assert sorted(curves["q"].unique()) == [0.0, 0.25, 0.5, 1.0]
    summary = pd.read_csv(out / "road_summary.csv")
    assert list(summary.columns) == road.SUMMARY_COLUMNS and len(summary) == 3
    leak = pd.read_csv(out / "leakage.csv")
    assert list(leak.columns) == road.LEAKAGE_COLUMNS and len(leak) == 16
    text = (out / "summary.md").read_text()
    assert "removal: test_road_gaussian (revision = 1, n_draws = 4, seed = 0)" in text
    assert "### ROAD: mse under imputation (test_road_gaussian)" in text
    assert "### Leakage of the removal (forest classifier, 60 rows" in text
    assert (out / "figures" / "road.png").read_bytes()[:4] == b"\x89PNG"
    m = json.loads((out / "manifest.json").read_text())
    assert m["road"]["removal"] == {"name": "test_road_gaussian", "revision": 1, "n_draws": 4,
                                    "seed": 0}
    assert m["road"]["rows"] == 60 and m["model"]["source"] == "trained"
    assert {"road.csv", "road_summary.csv", "leakage.csv", "summary.md", "figures/road.png",
            "attributions.npz"} <= set(m["files"])
    first = {f: (out / f).read_bytes() for f in ("road.csv", "road_summary.csv", "leakage.csv",
                                                 "attributions.npz")}
    # started again: the cached model and the attribution chunks are reused, the bytes the same
    again = runner.run_road(str(tiny), out)
    assert again.manifest["model"]["source"] == "cache"
    assert all(v["chunks_resumed"] == v["chunks"] for k, v in
               again.manifest["compute"]["stages"].items() if k.startswith("attributions/"))
    assert {f: (out / f).read_bytes() for f in first} == first
    # without the leakage diagnostic, an earlier run's leakage.csv does not stay behind
    res = runner.run_road(C.load(tiny, overrides={"road": {"leakage": False}}), out)
    assert res.leakage is None and not (out / "leakage.csv").exists()
    assert "leakage.csv" not in res.manifest["files"] and "### Leakage" not in res.to_markdown()
    assert (out / "road.csv").read_bytes() == first["road.csv"]


def test_a_removal_without_data_and_a_policy_reference(tiny, tmp_path):
    """A registered removal that takes no ``data`` is built without it; ``road.reference`` names
    a policy whose references every evaluated row gets."""
    cfg = C.load(_fill(tmp_path), overrides={"road": {"leakage": False, "reference": "average",
                                                       "orders": ["morf"]}})
    res = runner.run_road(cfg, tmp_path / "out")
    assert res.removal == {"name": "test_road_fill", "revision": 1, "n_draws": 1, "seed": 0,
                           "value": 0.5}
    assert res.manifest["road"]["reference"] == "average"
    assert set(res.curves["order"]) == {"morf"}
    assert "removal: test_road_fill (revision = 1, n_draws = 1, seed = 0, value = 0.5)" in (
        tmp_path / "out" / "summary.md").read_text()


def test_reproduce_paper_road_bangalore_quick(tmp_path, monkeypatch, capsys):
    """The shipped experiment end to end at its quick sizes, its conditional_gaussian being the
    test's numpy one (registered under that name for the test)."""
    monkeypatch.setitem(_entries(), "conditional_gaussian", NumpyGaussian)
    out = tmp_path / "q"
    assert cli.main(["reproduce", "paper-road-bangalore", "--quick", "--out", str(out),
                     "--no-progress"]) == 0
    printed = capsys.readouterr()
    assert "ROAD: mse under imputation" in printed.out
    # the default leakage n_rows (at most 2000) is no request: 120 test rows are used unnoted
    assert "leakage_options.n_rows" not in printed.err
    assert "leakage_options.n_rows" not in (out / "summary.md").read_text()
    summary = pd.read_csv(out / "road_summary.csv")
    assert set(summary["method"]) == {*C.ALL_METHODS, "random"}
    assert "removal: test_road_gaussian (revision = 1, n_draws = 8, seed = 0)" in (
        out / "summary.md").read_text()
    m = json.loads((out / "manifest.json").read_text())
    assert m["quick"] is True and m["road"]["rows"] == 120 and m["data"]["features"] == 38
    for f in ("road.csv", "leakage.csv", "figures/road.png"):
        assert (out / f).is_file()


def test_the_docs_example_loads_for_insdel_road(tmp_path):
    """docs/road.md's configuration is what `insdel road` reads (its removal, conditional_gaussian,
    is accepted before or after its module is registered)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "road.md").read_text()
    block = text.split("```toml\n", 1)[1].split("```", 1)[0]
    p = tmp_path / "my_road.toml"
    p.write_text(block)
    cfg = C.load(p)
    C.check_sections(cfg, "road")
    assert cfg["road"]["n_rows"] == 200 and cfg["road"]["removal_options"]["n_draws"] == 32


def test_road_into_a_finished_run_folder_is_refused_and_nothing_changes(tiny, tmp_path, capsys):
    """`insdel road --wait` into an `insdel run` folder would replace its summary.md and
    manifest.json: refused, naming both kinds, before anything there is written."""
    from _runs import small_cfg, small_csv

    out = tmp_path / "run"
    runner.run_experiment(small_cfg(small_csv(tmp_path / "d.csv"), "small"), out, progress=False)
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert cli.main(["road", str(tiny), "--out", str(out), "--wait", "--no-progress"]) != 0
    err = capsys.readouterr().err
    assert "holds an `insdel run` run" in err and "`insdel road` writes a road run" in err
    assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before
    with pytest.raises(runner.OutputFolderOfAnotherKind):
        runner.run_road(str(tiny), out)


def test_road_on_a_table_with_a_categorical_column_uses_groups_and_names_capped_options(
        tmp_path, capsys):
    """A one-hot categorical column is one unit of ROAD (ranked, removed and imputed as a whole;
    the removal gets the block as one_hot); the draws are repeated road.n_seeds times; an n_rows
    beyond the rows there are is capped with one line naming the key, the requested and the used
    value; the leakage verdict says when its rows are too few."""
    rng = np.random.default_rng(0)
    N = 120
    a, b = rng.normal(size=N), rng.normal(size=N)
    region = rng.choice(["north", "south", "east"], N)
    y = 2 * a - b + (region == "north") * 1.5
    csv = tmp_path / "clinic.csv"
    pd.DataFrame({"a": a, "region": region, "b": b, "y": y}).to_csv(csv, index=False)
    cfg = {"name": "road_cat", "seed": 0,
           "data": {"recipe": "table", "options": {"path": str(csv), "target": "y",
                                                   "categorical": ["region"], "scale": "none"}},
           "model": {"params": {"hidden": [4], "dropout": 0.0, "lr": 3e-3}, "max_epochs": 1},
           "methods": {"names": ["vanilla_grad"]},
           "road": {"fractions": [0.5, 1.0], "n_rows": 5000, "n_seeds": 2,
                    "removal": "conditional_gaussian", "removal_options": {"n_draws": 2},
                    "leakage_options": {"folds": 2, "n_rows": 300}}}
    out = tmp_path / "out"
    res = runner.run_road(cfg, out, progress=False)
    err = capsys.readouterr().err
    rows = res.manifest["road"]["rows"]
    assert f"note: road.n_rows = 5000 asks for more rows than the {rows} test rows: used {rows}" \
        in err
    assert (f"note: road.leakage_options.n_rows = 300 asks for more rows than the {rows} "
            f"evaluated test rows: used {rows}") in err
    assert res.manifest["road"]["units"] is not None and len(res.manifest["road"]["units"]) == 3
    assert sorted(res.curves["k"].unique()) == [0, 2, 3]  # ⌈0.5 · 3⌉ units, not of 5 columns
    assert set(res.leakage["feature"]) == set(res.manifest["road"]["units"])
    onehot = res.removal["one_hot"]
    assert len(onehot) == 1 and len(onehot[0]) == 3
    assert (out / "road_repeats.csv").is_file() and (res.summary["n_seeds"] == 2).all()
    lk = res.manifest["road"]["leakage"]
    assert lk["n_rows"] == rows and lk["n_rows_requested"] == 300
    assert lk["verdict"] == "too few rows"  # a handful of test rows cannot rule leakage out
    text = (out / "summary.md").read_text()
    assert "- units: 3 units: region" in text and "too few rows to tell" in text
    assert "road.leakage_options.n_rows = 300 asks for more rows" in text
    assert "| SE | SD over seeds | Within noise of |" in text


def test_road_s_removal_gets_the_one_hot_groups_or_names_them():
    from types import SimpleNamespace

    from insdel.groups import check_groups
    from insdel.runner.removals import build_removal

    rng = np.random.default_rng(0)
    d = rng.normal(size=(200, 5))
    d[:, 2:] = np.eye(3)[rng.integers(0, 3, 200)]
    data = SimpleNamespace(X_train=d, groups=check_groups({"region": [2, 3, 4]}, 5))
    cfg = {"seed": 7, "source": "<dict>"}

    def road(name, options):  # ROAD's rule: a sampled removal, its own default seed
        return build_removal(cfg, name, options, data, where="road.removal_options",
                             run_seed=False, sampled=True)

    assert road("conditional_gaussian", {}).one_hot == [[2, 3, 4]]
    assert road("conditional_knn", {"one_hot": ["region"]}).one_hot == [[2, 3, 4]]
    assert road("conditional_gaussian", {"one_hot": []}).one_hot == []
    with pytest.raises(C.ConfigError, match=r"road.removal_options: one_hot: 'town' is not a "
                                            r"feature group of the data set \(its groups: "
                                            r"region\)"):
        road("conditional_gaussian", {"one_hot": ["town"]})
    # the seed rule is the caller's: ROAD keeps the removal's default 0, a run gives its seed
    assert road("conditional_knn", {}).seed == 0
    assert build_removal(cfg, "conditional_knn", {}, data).seed == 7
    assert road("conditional_knn", {"seed": 3}).seed == 3
    with pytest.raises(C.ConfigError, match=r"road.removal_options: 'marginal' \(Marginal\) is "
                                            r"not a SampledRemoval"):
        road("marginal", {})
