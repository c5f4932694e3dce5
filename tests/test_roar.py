"""ROAR for regression (paper §6, issue 15): a simulator whose answer is known, removal values,
orderings, resume after an interruption, config validation and the CLI."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from _runs import roar_table

from insdel import cli, models, roar, runner
from insdel import config as C
from insdel.datasets import Dataset, Scaler

PARAMS = {"hidden": [16], "dropout": 0.0, "lr": 0.01, "batch_size": 64, "max_epochs": 40,
          "patience": 10, "num_threads": 1}


def _sim(N: int = 600, n: int = 4, seed: int = 0) -> Dataset:
    """y = 3 x_1 + noise; features 2..n are useless; feature 4 is binary."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, n))
    X[:, 3] = (rng.random(N) < 0.3).astype(float)
    y = 3.0 * X[:, 0] + 0.1 * rng.normal(size=N)
    k = int(0.8 * N)
    binary = np.zeros(n, bool)
    binary[3] = True
    levels = np.full((n, 2), np.nan)
    levels[3] = (0.0, 1.0)
    return Dataset("sim", X[:k], X[k:], y[:k], y[k:], [f"x{j + 1}" for j in range(n)], "y",
                   binary, levels, levels.copy(), Scaler(np.zeros(n), np.ones(n)))


def test_removal_values_mean_and_mode():
    ds = _sim()
    v = roar.removal_values(ds)
    np.testing.assert_allclose(v[:3], ds.X_train[:, :3].mean(0))
    assert v[3] == 0.0  # the mode of a 30 % binary feature


def test_orderings_and_removal():
    A = np.array([[0.5, -2.0, 1.0], [3.0, 0.0, -1.0]])
    np.testing.assert_array_equal(roar.removal_orders(A, "absolute"), [[1, 2, 0], [0, 2, 1]])
    np.testing.assert_array_equal(roar.removal_orders(A, "signed"), [[2, 0, 1], [0, 1, 2]])
    np.testing.assert_array_equal(roar.removal_orders(A, "kar_absolute"), [[0, 2, 1], [1, 2, 0]])
    r = roar.removal_orders(None, "random", seed=1, shape=(5, 3))
    assert sorted(r[0]) == [0, 1, 2]
    X = np.arange(6.0).reshape(2, 3)
    out = roar.remove(X, roar.removal_orders(A, "absolute"), 1, np.array([-1.0, -2.0, -3.0]))
    np.testing.assert_array_equal(out, [[0.0, -2.0, 2.0], [-1.0, 4.0, 5.0]])
    assert [roar.n_removed(q, 38) for q in (0.1, 0.5, 1.0)] == [4, 19, 38]
    with pytest.raises(ValueError, match="ordering: unknown ordering .magnitude."):
        roar.removal_orders(A, "magnitude")


def _attributions(ds, first: bool) -> np.ndarray:
    """An attribution that ranks x_1 first (``first``) or last."""
    N = len(ds.X_train) + len(ds.X_test)
    A = np.tile(np.array([1.0, 2.0, 3.0, 4.0]), (N, 1))
    A[:, 0] = 10.0 if first else -10.0
    return A


def test_removing_the_only_useful_feature_first_raises_the_loss_first(tmp_path):
    """y = 3 x_1 + noise: ranking x_1 first raises the loss at the first q (1 of 4 features);
    ranking it last does not; the random ordering lies in between; q = 1 is the same for all."""
    ds = _sim()
    atts = {"good": _attributions(ds, True), "bad": _attributions(ds, False)}
    t = roar.roar(ds, atts, params=PARAMS, orderings=("signed", "random"),
                  fractions=(0.25, 0.5, 1.0), replicates=2, seed=0, store=tmp_path)
    assert list(t.columns) == roar.TABLE_COLUMNS
    m = t.groupby(["method", "ordering", "q"])["loss"].mean()
    base = m[("none", "none", 0.0)]
    good, bad, rnd = (m[("good", "signed", 0.25)], m[("bad", "signed", 0.25)],
                      m[("random", "random", 0.25)])
    assert good > 10 * max(base, bad), (base, good, bad)  # x_1 gone: the model cannot predict
    assert bad < 3 * base + 0.05  # useless features removed: nothing lost
    assert bad < rnd < good
    assert m[("good", "signed", 1.0)] == m[("bad", "signed", 1.0)] == m[("random", "random", 1.0)]
    s = roar.summarize(t)
    area = s[s["q"].isna()].set_index("method")["mean"]
    assert area["good"] > 0 > area["bad"] or area["good"] > area["bad"]
    assert "area vs line" in roar.to_markdown(s)
    # q = 1 removes everything whatever the ordering: trained once per replicate
    assert len(list(tmp_path.glob("unit.*.json"))) == len(t.drop_duplicates(
        ["method", "ordering", "q", "replicate"])) - 2 * 2


def test_resume_after_interruption_is_identical(tmp_path):
    ds = _sim(N=300)
    atts = {"good": _attributions(ds, True)}
    kw = dict(params={**PARAMS, "max_epochs": 5}, orderings=("absolute",), fractions=(0.5, 1.0),
              replicates=2, seed=3)
    full = roar.roar(ds, atts, store=tmp_path / "a", **kw)

    class Stop(Exception):
        pass

    calls = {"n": 0}

    def interrupt():
        calls["n"] += 1
        if calls["n"] == 3:
            raise Stop

    with pytest.raises(Stop):
        roar.roar(ds, atts, store=tmp_path / "b", _interrupt=interrupt, **kw)
    assert len(list((tmp_path / "b").glob("unit.*.json"))) == 3
    trained = {"n": 0}
    again = roar.roar(ds, atts, store=tmp_path / "b",
                      _interrupt=lambda: trained.__setitem__("n", trained["n"] + 1), **kw)
    assert trained["n"] == len(list((tmp_path / "a").glob("unit.*.json"))) - 3
    pd.testing.assert_frame_equal(full, again)


def test_bad_input_is_named():
    ds = _sim(N=100)
    with pytest.raises(ValueError, match=r"fractions\[1\] must be a number in \(0, 1\]; got 1.5"):
        roar.roar(ds, {}, params=PARAMS, fractions=(0.5, 1.5))
    with pytest.raises(ValueError, match="Did you mean 'absolute'"):
        roar.roar(ds, {}, params=PARAMS, orderings=("absolut",))
    with pytest.raises(ValueError, match=r"attributions\['m'\] has shape \(3, 4\)"):
        roar.roar(ds, {"m": np.zeros((3, 4))}, params=PARAMS)


TINY_ROAR = """
name = "tiny_roar"
seed = 1
[data]
recipe = "dielectron_sim"
[data.options]
n_events = 600
[model]
preset = "quick_cern"
max_epochs = 2
[methods]
names = ["integrated_gradients", "random"]
[methods.options.integrated_gradients]
n_steps = 8
[roar]
orderings = ["absolute", "signed", "random"]
fractions = [0.5, 1.0]
replicates = 1
max_epochs = 2
"""


def test_config_validation(tmp_path):
    p = tmp_path / "r.toml"
    p.write_text(TINY_ROAR)
    with pytest.raises(C.ConfigError, match=r"roar\.replicats.*did you mean 'replicates'"):
        C.load(p, overrides={"roar": {"replicats": 2}})
    with pytest.raises(C.ConfigError, match=r"roar: fractions\[0\] must be a number in \(0, 1\]; got 0\."):
        C.load(p, overrides={"roar": {"fractions": [0, 1.0]}})
    with pytest.raises(C.ConfigError, match=r"roar\.orderings: unknown ordering 'signd'.*'signed'"):
        C.load(p, overrides={"roar": {"orderings": ["signd"]}})
    with pytest.raises(C.ConfigError, match="roar.reference must be 'removal' or a policy"):
        C.load(p, overrides={"roar": {"reference": "nearest_neighbour_policy"}})
    cfg = C.load(p)
    with pytest.raises(C.ConfigError, match="run it with `insdel roar`"):
        runner.run_experiment(cfg, tmp_path / "x")
    with pytest.raises(C.ConfigError, match=r"evaluation: not read by `insdel roar`"):
        runner.run_roar(C.load(p, overrides={"evaluation": {"n_random": 3}}), tmp_path / "y")
    with pytest.raises(C.ConfigError, match=r"needs a \[roar\] table"):
        runner.run_roar("demo", tmp_path / "z")
    for name in ("paper_roar_bangalore", "paper_roar_cern"):
        assert "roar" in C.load(name, quick=True)["sections"]


def test_cli_roar_writes_its_outputs(tmp_path):
    p = tmp_path / "r.toml"
    p.write_text(TINY_ROAR)
    out = tmp_path / "out"
    assert cli.main(["roar", str(p), "--out", str(out), "--no-progress"]) == 0
    t = pd.read_csv(out / "roar.csv")
    assert list(t.columns) == roar.TABLE_COLUMNS
    assert set(t["method"]) == {"none", "integrated_gradients", "random"}
    assert (out / "figures" / "roar.png").read_bytes()[:4] == b"\x89PNG"
    assert "ROAR: test Huber loss" in (out / "summary.md").read_text()
    assert (out / "roar_summary.csv").is_file() and (out / "manifest.json").is_file()
    # started again: every unit is resumed, the table is identical
    again = runner.run_roar(str(p), out)
    pd.testing.assert_frame_equal(again.table, t, check_dtype=False)


def test_reference_from_a_policy(tmp_path):
    """roar.reference names a policy: every training and test point gets that policy's
    reference (here the data average), recorded in the manifest."""
    p = tmp_path / "r.toml"
    p.write_text(TINY_ROAR)
    cfg = C.load(p, overrides={"roar": {"reference": "average", "orderings": ["absolute"]},
                               "methods": {"names": ["integrated_gradients"]}})
    res = runner.run_roar(cfg, tmp_path / "out")
    assert res.manifest["roar"]["reference"] == "average"
    atts = np.load(tmp_path / "out" / "attributions.npz")["integrated_gradients"]
    assert atts.shape == (600, 16)
    assert set(res.table["method"]) == {"none", "integrated_gradients"}


def _one_unit_run(store):
    ds = _sim(N=200)
    kw = dict(params={**PARAMS, "max_epochs": 2}, orderings=("absolute",), fractions=(1.0,),
              replicates=1, seed=4)
    return ds, kw, roar.roar(ds, {"good": _attributions(ds, True)}, store=store, **kw)


def test_a_stored_training_carries_its_key_and_checksum_and_a_changed_one_is_refused(tmp_path):
    import json
    import warnings

    ds, kw, first = _one_unit_run(tmp_path)
    files = sorted(tmp_path.glob("unit.*.json"))
    assert files
    rec = json.loads(files[0].read_text())
    assert set(rec) == {"loss", "epochs", "key", "sha256"} and files[0].name == f"unit.{rec['key']}.json"
    trained = {"n": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an untouched store: no warning, nothing trained again
        again = roar.roar(ds, {"good": _attributions(ds, True)}, store=tmp_path,
                          _interrupt=lambda: trained.__setitem__("n", trained["n"] + 1), **kw)
    assert trained["n"] == 0
    pd.testing.assert_frame_equal(first, again)
    files[0].write_text(json.dumps({**rec, "loss": rec["loss"] + 1.0}))  # an edited result
    with pytest.raises(ValueError, match=rf"{files[0].name}.*does not match its checksum"):
        roar.roar(ds, {"good": _attributions(ds, True)}, store=tmp_path, **kw)
    files[0].write_text("{not json")
    with pytest.raises(ValueError, match=rf"{files[0].name}.*cannot be read"):
        roar.roar(ds, {"good": _attributions(ds, True)}, store=tmp_path, **kw)
    # an older insdel's file (no checksum): not trusted, trained again with a warning
    files[0].write_text(json.dumps({"loss": rec["loss"] + 1.0, "epochs": rec["epochs"]}))
    with pytest.warns(UserWarning, match="no checksum"):
        third = roar.roar(ds, {"good": _attributions(ds, True)}, store=tmp_path, **kw)
    pd.testing.assert_frame_equal(first, third)
    assert "sha256" in json.loads(files[0].read_text())


# -- roar(): units keyed by the resolved preset, reserved and repeated names -----------------------
def _ds(name: str = "sim", N: int = 40, n: int = 3) -> Dataset:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, n))
    y = X[:, 0]
    k = int(0.8 * N)
    lv = np.full((n, 2), np.nan)
    return Dataset(name, X[:k], X[k:], y[:k], y[k:], [f"x{j}" for j in range(n)], "y",
                   np.zeros(n, bool), lv, lv.copy(), Scaler(np.zeros(n), np.ones(n)))


def test_roar_unit_key_uses_the_resolved_preset(tmp_path, monkeypatch):
    """params=None picks the preset from the data set's name; two data sets with equal arrays but
    other default presets must not share a checkpointed training."""
    used = []

    def fake_train(ds, params, *, seed, **kw):
        p = models._resolve_params(params, ds)
        used.append(p["hidden"])
        return None, {"test": {"huber": float(sum(p["hidden"]))}, "epochs": 1}

    monkeypatch.setattr(models, "train_mlp", fake_train)
    a = _ds("dielectron_sim")  # -> quick_cern
    b = dataclasses.replace(a, name="housing_sim")  # same arrays -> quick_housing
    assert models.default_preset(a) != models.default_preset(b)
    assert models.get("quick_cern")["hidden"] != models.get("quick_housing")["hidden"]
    kw = dict(params=None, orderings=("random",), fractions=(1.0,), replicates=1,
              store=tmp_path)
    ta = roar.roar(a, {}, **kw)
    tb = roar.roar(b, {}, **kw)
    assert len(used) == 4  # every unit of b trained with b's preset, none reused from a
    assert not np.allclose(ta["loss"], tb["loss"])


def test_roar_method_named_none_is_refused():
    ds = _ds()
    A = np.zeros((len(ds.X_train) + len(ds.X_test), 3))
    with pytest.raises(ValueError, match="'none' is reserved"):
        roar.roar(ds, {"none": A}, params=None, store=None)


def test_roar_refuses_repeated_or_no_orderings():
    from insdel.roar import roar

    with pytest.raises(ValueError, match="twice"):
        roar(None, None, params=None, orderings=["random", "random"])
    with pytest.raises(ValueError, match="at least one"):
        roar(None, None, params=None, orderings=[])


# -- roar.to_markdown: cells without a standard error, a missing area row --------------------------
def test_roar_to_markdown_one_replicate_has_no_plus_minus_nan():
    s = roar.summarize(roar_table(1))
    assert s["std_error"].isna().all()
    md = roar.to_markdown(s)
    assert "nan" not in md.lower() and "±" not in md.split("\n\n")[1]  # the table
    row = next(ln for ln in md.splitlines() if ln.startswith("| good | signed |"))
    cells = [c.strip() for c in row.strip("|").split("|")][2:]
    g = s[s["method"] == "good"]
    want = [f"{v:.4f}" for v in g.dropna(subset=["q"]).sort_values("q")["mean"]]
    assert cells == [*want, f"{g[g['q'].isna()]['mean'].iloc[0]:+.4f}"]
    assert ("Cells without ± s.e. come from one replicate: the standard error needs at least "
            "two replicates") in md
    assert "area vs line" in md and "Area = ∫" in md


def test_roar_to_markdown_two_replicates_is_unchanged():
    s = roar.summarize(roar_table(2))
    md = roar.to_markdown(s, digits=3)
    assert "Cells without" not in md and "nan" not in md.lower()
    g = s[s["method"] == "good"]
    pts = g.dropna(subset=["q"]).sort_values("q")
    area = g[g["q"].isna()].iloc[0]
    want = ("| good | signed | "
            + " | ".join(f"{r['mean']:.3f} ± {r['std_error']:.3f}" for _, r in pts.iterrows())
            + f" | {area['mean']:+.3f} ± {area['std_error']:.3f} |")
    assert want in md.splitlines()


def test_roar_to_markdown_only_the_nan_cells_lose_their_se():
    s = roar.summarize(roar_table(2))
    s.loc[(s["method"] == "good") & (s["q"] == 0.5), "std_error"] = np.nan
    md = roar.to_markdown(s)
    row = next(ln for ln in md.splitlines() if ln.startswith("| good | signed |"))
    cells = [c.strip() for c in row.strip("|").split("|")][2:]
    assert "±" in cells[0] and "±" not in cells[1] and "±" in cells[2] and "±" in cells[3]
    assert "± nan" not in md and "nan" not in md.split("\n\n")[1]  # the table
    assert "Cells without ± s.e.: the standard error is NaN there" in md  # n = 2: not one


def test_roar_markdown_names_a_missing_area_row():
    import pandas as pd

    from insdel import roar

    summary = pd.DataFrame({"method": ["m"], "ordering": ["signed"], "q": [0.5], "mean": [1.0],
                            "std_error": [0.1], "n": [2]})
    with pytest.raises(ValueError, match="no area row.*'m'.*'signed'"):
        roar.to_markdown(summary)


def test_impute_under_a_removal_against_a_direct_fill():
    """``impute``: marginal takes the row's first reference, a sampled removal its first draw
    given the kept features (targets offset by the split), and kept features are untouched."""
    from insdel.removal import Marginal, SampledRemoval, target_rng

    class Draw(SampledRemoval):
        name, n_draws = "draw", 2

        def sample(self, X, keep, targets):
            out = np.empty((len(X), 2, X.shape[1]))
            for i, t in enumerate(targets):
                z = target_rng(0, int(t), "draw").normal(size=(2, X.shape[1]))
                out[i] = np.where(keep[i], X[i], z)
            return out

    rng = np.random.default_rng(0)
    X, bg = rng.normal(size=(5, 4)), rng.normal(size=(3, 4))
    orders = np.stack([rng.permutation(4) for _ in range(5)])
    got = roar.impute(X, orders, 2, Marginal(bg, how="all"))
    removed = np.zeros(X.shape, bool)
    np.put_along_axis(removed, orders[:, :2], True, axis=1)
    np.testing.assert_array_equal(got, np.where(removed, bg[0], X))
    got = roar.impute(X, orders, 2, Draw(), offset=7)
    for i in range(5):
        z = target_rng(0, 7 + i, "draw").normal(size=(2, 4))[0]
        np.testing.assert_array_equal(got[i], np.where(removed[i], z, X[i]))


def test_roar_under_a_removal_keys_its_trainings_apart(tmp_path):
    """The same run under a removal retrains (its units' data differ) and records the removal's
    fill: under marginal with the training mean as the one reference it equals the paper's
    removal for the continuous features."""
    from insdel.removal import Marginal

    ds = _sim(N=200)
    atts = {"good": _attributions(ds, True)}
    kw = dict(params={**PARAMS, "max_epochs": 3}, orderings=("signed",), fractions=(0.5,),
              replicates=1, seed=0, store=tmp_path)
    t0 = roar.roar(ds, atts, **kw)
    n0 = len(list(tmp_path.glob("unit.*.json")))
    with pytest.raises(ValueError, match="removal='baseline' needs one reference"):
        roar.roar(ds, atts, removal="baseline", **kw)
    mean = np.asarray(ds.X_train).mean(0, keepdims=True)
    t1 = roar.roar(ds, atts, removal=Marginal(mean, how="all"), **kw)
    assert len(list(tmp_path.glob("unit.*.json"))) > n0  # the binary feature's fill differs
    assert t1.shape == t0.shape


def test_roar_removal_in_a_config(tmp_path):
    """[roar] removal: the retrainings' removed features take the removal's value per row; named
    in the summary and the manifest; a removal with nothing to impute and stray options are
    refused when the file is read."""
    import json

    p = tmp_path / "r.toml"
    p.write_text(TINY_ROAR + 'removal = "conditional_mean"\n')
    for over, match in (({"removal": "baseline"}, "gives no value to put"),
                        ({"removal": "cohort"}, "gives no value to put"),
                        ({"removal": "conditional_man"}, "did you mean 'conditional_mean'"),
                        ({"removal_options": {"data": 1}}, "the run gives conditional_mean"),
                        ({"removal_options": {"ridg": 1.0}}, "did you mean 'ridge'"),
                        ({"removal": None, "removal_options": {"ridge": 1.0}},
                         "roar.removal is not set")):
        with pytest.raises(C.ConfigError, match=match):
            C.load(p, overrides={"roar": over})
    out = tmp_path / "out"
    assert cli.main(["roar", str(p), "--out", str(out), "--no-progress"]) == 0
    assert "removal conditional_mean" in (out / "summary.md").read_text()
    record = json.loads((out / "manifest.json").read_text())["roar"]["removal"]
    assert record["name"] == "conditional_mean" and record["data_rows"] > 0
    plain = tmp_path / "plain"
    q = tmp_path / "q.toml"
    q.write_text(TINY_ROAR)
    assert cli.main(["roar", str(q), "--out", str(plain), "--no-progress"]) == 0
    a, b = pd.read_csv(out / "roar.csv"), pd.read_csv(plain / "roar.csv")
    assert len(a) == len(b) and not a["loss"].equals(b["loss"])  # other data, other trainings
