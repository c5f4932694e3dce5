"""Data recipes: the paper's two data sets (on the samples in tests/data), the simulators, bad input."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import insdel
from insdel import datasets
from insdel.cli import main as cli_main
from insdel.shipped.data_recipes import bangalore as bang_recipe
from insdel.shipped.data_recipes import dielectron_sim as sim
from insdel.shipped.data_recipes import housing_sim


@pytest.fixture(scope="module")
def sim_df() -> pd.DataFrame:
    return sim.simulate(30_000, seed=3)


# ---------------------------------------------------------------- the real recipes on samples


def test_bangalore_sample(samples):
    path = samples / "bangalore_head60.csv"
    raw = pd.read_csv(path)
    ds = datasets.load("bangalore", path=path, seed=1)
    assert ds.n_features == 38 and ds.feature_names == bang_recipe.FEATURES
    assert "Location" not in ds.feature_names
    assert ds.X_train.shape == (48, 38) and ds.X_test.shape == (12, 38)
    assert ds.X_train.dtype == np.float64 and ds.y_train.dtype == np.float64
    assert ds.binary_mask.tolist() == [False, False] + [True] * 36
    # continuous features standardised on the training split; binaries stay 0/1
    np.testing.assert_allclose(ds.X_train[:, :2].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(ds.X_train[:, :2].std(axis=0), 1.0, atol=1e-12)
    assert set(np.unique(ds.X_train[:, 2:])) <= {0.0, 1.0}
    np.testing.assert_array_equal(ds.raw_binary_levels[2:], [[0.0, 1.0]] * 36)
    np.testing.assert_array_equal(ds.binary_levels[2:], [[0.0, 1.0]] * 36)
    assert np.isnan(ds.binary_levels[:2]).all()
    # target Price / 1e7, and rows map back to the file
    np.testing.assert_allclose(ds.y_train, raw["Price"].to_numpy()[ds.train_index] / 1e7)
    np.testing.assert_allclose(ds.raw_features("test")[:, 0], raw["Area"].to_numpy()[ds.test_index])
    assert ds.target_scale == 1e7 and ds.target_name == "Price"
    assert "1e7" in ds.description


def test_bangalore_missing_code_rows_are_dropped(samples, tmp_path):
    df = pd.read_csv(samples / "bangalore_head60.csv")
    df.loc[[3, 10, 11], bang_recipe.AMENITIES] = 9
    df.loc[20, "Gymnasium"] = 9
    p = tmp_path / "b.csv"
    df.to_csv(p, index=False)
    ds = datasets.load("bangalore", path=p)
    assert ds.X_train.shape[0] + ds.X_test.shape[0] == 56
    assert ds.info["n_dropped_missing"] == 4 and ds.info["n_kept"] == 56
    assert "4 with missing values dropped" in ds.description


def test_dielectron_sample(samples):
    path = samples / "dielectron_head60.csv"
    assert "px1 " in path.read_text().splitlines()[0]  # the real header's quirk
    raw = pd.read_csv(path)
    ds = datasets.load("dielectron", path=path)
    assert ds.feature_names == ["E1", "px1", "py1", "pz1", "pt1", "eta1", "phi1", "Q1",
                                "E2", "px2", "py2", "pz2", "pt2", "eta2", "phi2", "Q2"]
    assert ds.X_train.shape == (48, 16) and ds.X_test.shape == (12, 16)
    assert ds.target_name == "M" and ds.target_scale is None
    np.testing.assert_allclose(ds.y_test, raw["M"].to_numpy()[ds.test_index])
    # every feature z-scored (train split), charges included
    np.testing.assert_allclose(ds.X_train.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(ds.X_train.std(axis=0), 1.0, atol=1e-10)
    assert ds.binary_mask.sum() == 2
    q = [ds.feature_names.index("Q1"), ds.feature_names.index("Q2")]
    assert np.flatnonzero(ds.binary_mask).tolist() == q
    np.testing.assert_array_equal(ds.raw_binary_levels[q], [[-1.0, 1.0], [-1.0, 1.0]])
    expect = (np.array([-1.0, 1.0]) - ds.scaler.mean_[q][:, None]) / ds.scaler.scale_[q][:, None]
    np.testing.assert_allclose(ds.binary_levels[q], expect)
    # the scaled charges take exactly the two scaled levels
    for k, j in enumerate(q):
        assert set(np.round(ds.X_test[:, j], 12)) <= set(np.round(expect[k], 12))
    # scaling round trip
    np.testing.assert_allclose(ds.raw_features("test")[:, 1],
                               raw["px1 "].to_numpy()[ds.test_index], rtol=1e-12)
    np.testing.assert_allclose(ds.scaler.transform(ds.scaler.inverse_transform(ds.X_test)),
                               ds.X_test, atol=1e-12)


def test_dielectron_drops_and_reports_missing(samples, tmp_path):
    text = (samples / "dielectron_head60.csv").read_text().splitlines()
    for i in (5, 9):  # blank one cell in two data rows
        cells = text[i].split(",")
        cells[4] = ""
        text[i] = ",".join(cells)
    p = tmp_path / "d.csv"
    p.write_text("\n".join(text) + "\n")
    ds = datasets.load("dielectron", path=p)
    assert ds.info["n_dropped_missing"] == 2
    assert len(ds.y_train) + len(ds.y_test) == 58
    assert "2 with missing values dropped" in ds.description


# ---------------------------------------------------------------- bad input


def _edited(samples, tmp_path, name, edit) -> Path:
    df = pd.read_csv(samples / name, dtype=str, keep_default_na=False)
    df = edit(df)
    p = tmp_path / ("edited_" + name)
    df.to_csv(p, index=False)
    return p


def test_missing_and_renamed_columns(samples, tmp_path):
    p = _edited(samples, tmp_path, "bangalore_head60.csv", lambda d: d.drop(columns=["Area"]))
    with pytest.raises(ValueError, match=r"lacks 1 required column\(s\): 'Area'"):
        datasets.load("bangalore", path=p)
    p = _edited(samples, tmp_path, "dielectron_head60.csv",
                lambda d: d.rename(columns={"eta2": "eta_2", "Q1": "charge1"}))
    with pytest.raises(ValueError, match=r"'eta2' \(renamed to 'eta_2'\?\)") as err:
        datasets.load("dielectron", path=p)
    assert "'Q1'" in str(err.value)


def test_non_numeric_cell_names_row_and_column(samples, tmp_path):
    def edit(d):
        d.loc[6, "pz2"] = "abc"
        return d

    p = _edited(samples, tmp_path, "dielectron_head60.csv", edit)
    with pytest.raises(ValueError, match=r"column 'pz2' has non-numeric cell.*data row\(s\) 7 "
                                         r"\(line 8\).*'abc'"):
        datasets.load("dielectron", path=p)


def test_binary_column_with_a_third_value(samples, tmp_path):
    def edit(d):
        d.loc[12, "SwimmingPool"] = "2"
        return d

    p = _edited(samples, tmp_path, "bangalore_head60.csv", edit)
    with pytest.raises(ValueError, match=r"binary column 'SwimmingPool' has a third value 2 at "
                                         r"data row\(s\) 13"):
        datasets.load("bangalore", path=p)

    def edit_q(d):
        d.loc[0, "Q2"] = "0"
        return d

    p = _edited(samples, tmp_path, "dielectron_head60.csv", edit_q)
    with pytest.raises(ValueError, match=r"binary column 'Q2' has a third value 0.*allowed "
                                         r"values are -1 and 1"):
        datasets.load("dielectron", path=p)


def test_empty_missing_and_header_only_files(tmp_path, samples):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match="is empty"):
        datasets.load("dielectron", path=empty)
    blank = tmp_path / "blank.csv"
    blank.write_text("\n\n  \n")
    with pytest.raises(ValueError, match="is empty"):
        datasets.load("bangalore", path=blank)
    header = tmp_path / "header.csv"
    header.write_text((samples / "dielectron_head60.csv").read_text().splitlines()[0] + "\n")
    with pytest.raises(ValueError, match="no data rows"):
        datasets.load("dielectron", path=header)
    with pytest.raises(FileNotFoundError, match="does-not-exist.csv"):
        datasets.load("bangalore", path=tmp_path / "does-not-exist.csv")
    with pytest.raises(ValueError, match="needs path="):
        datasets.load("dielectron")
    with pytest.raises(ValueError, match="is not a file"):
        datasets.load("dielectron", path=tmp_path)


def test_unknown_names_and_options():
    with pytest.raises(insdel.UnknownNameError, match="unknown data set 'cern'.*dielectron_sim"):
        datasets.load("cern")
    with pytest.raises(TypeError, match="unknown option"):
        datasets.load("dielectron_sim", n_events=100, n_samples=3)
    with pytest.raises(ValueError, match="n_events must be an integer"):
        datasets.load("dielectron_sim", n_events=0)


# ---------------------------------------------------------------- the dielectron simulator


def test_dielectron_sim_dataset(samples):
    ds = datasets.load("dielectron_sim", n_events=5000, seed=2)
    assert ds.X_train.shape == (4000, 16) and ds.X_test.shape == (1000, 16)
    assert ds.feature_names == datasets.load("dielectron", path=samples
                                             / "dielectron_head60.csv").feature_names
    np.testing.assert_allclose(ds.X_train.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(ds.X_train.std(axis=0), 1.0, atol=1e-10)
    assert ds.binary_mask.sum() == 2
    np.testing.assert_array_equal(ds.raw_binary_levels[ds.binary_mask], [[-1, 1], [-1, 1]])
    assert ((ds.y_train >= 2) & (ds.y_train <= 110)).all()
    again = datasets.load("dielectron_sim", n_events=5000, seed=2)
    np.testing.assert_array_equal(ds.X_train, again.X_train)
    np.testing.assert_array_equal(ds.y_test, again.y_test)
    other = datasets.load("dielectron_sim", n_events=5000, seed=3)
    assert not np.array_equal(ds.y_test, other.y_test)


def test_simulator_columns_and_derived_quantities(sim_df):
    d = sim_df
    assert list(d.columns) == ["Run", "Event", "E1", "px1", "py1", "pz1", "pt1", "eta1", "phi1",
                               "Q1", "E2", "px2", "py2", "pz2", "pt2", "eta2", "phi2", "Q2", "M"]
    E = d.E1 + d.E2
    P2 = (d.px1 + d.px2) ** 2 + (d.py1 + d.py2) ** 2 + (d.pz1 + d.pz2) ** 2
    np.testing.assert_allclose(np.sqrt(E ** 2 - P2), d.M, atol=1e-6, rtol=0)
    for t in ("1", "2"):
        px, py, pz, pt = d["px" + t], d["py" + t], d["pz" + t], d["pt" + t]
        np.testing.assert_allclose(pt, np.hypot(px, py), rtol=1e-12)
        np.testing.assert_allclose(d["eta" + t], np.arcsinh(pz / pt), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(d["phi" + t], np.arctan2(py, px), rtol=1e-12, atol=1e-12)
        p = np.sqrt(px ** 2 + py ** 2 + pz ** 2)
        assert (d["E" + t] >= p).all()
        np.testing.assert_allclose(d["E" + t], p, rtol=1e-6)  # electron mass negligible
        assert set(np.unique(d["Q" + t])) == {-1.0, 1.0}
        assert (np.abs(d["eta" + t]) < 2.5).all() and (pt > 1.0).all()
        assert (np.abs(d["phi" + t]) <= np.pi).all()
    assert ((d.M >= 2.0) & (d.M <= 110.0)).all()
    opposite = (d.Q1 != d.Q2).mean()
    assert 0.5 < opposite < 0.8  # e-e+ pairs plus same-sign background, as in the real file


@pytest.mark.parametrize("name, lo, hi, below_band, above_band", [
    ("J/psi", 3.0, 3.2, (2.6, 2.9), (3.3, 3.6)),
    ("Upsilon(1S)", 9.3, 9.6, (8.6, 9.1), (10.7, 11.2)),
    ("Z", 86.0, 96.0, (70.0, 80.0), (100.0, 110.0)),
])
def test_resonance_peaks(sim_df, name, lo, hi, below_band, above_band):
    M = sim_df.M.to_numpy()

    def density(a, b):
        return ((M >= a) & (M < b)).sum() / (b - a)

    inside = density(lo, hi)
    below, above = density(*below_band), density(*above_band)
    assert inside > 2.5 * max(below, above), (name, inside, below, above)
    mass = sim.RESONANCES[name][0]
    sel = M[(M >= lo) & (M < hi)]
    assert abs(np.median(sel) - mass) < 0.02 * mass


def test_z_peak_position(sim_df):
    M = sim_df.M.to_numpy()
    h, e = np.histogram(M[(M > 70) & (M < 110)], bins=np.arange(70, 110.5, 1.0))
    centre = 0.5 * (e[:-1] + e[1:])[np.argmax(h)]
    assert abs(centre - 91.19) <= 1.0


def test_simulator_speed_and_seeding():
    t0 = time.perf_counter()
    a = sim.simulate(100_000, seed=11)
    elapsed = time.perf_counter() - t0
    assert len(a) == 100_000
    assert elapsed < 20.0, f"100,000 events took {elapsed:.1f} s"
    b = sim.simulate(1000, seed=11)
    c = sim.simulate(1000, seed=11)
    pd.testing.assert_frame_equal(b, c)


def test_simulated_csv_reads_back_through_the_real_recipe(tmp_path):
    p = tmp_path / "dielectron.csv"
    sim.write_csv(sim.simulate(500, seed=4), p)
    assert p.read_text().splitlines()[0].split(",")[3] == "px1 "
    real = datasets.load("dielectron", path=p, seed=4)
    simd = datasets.load("dielectron_sim", n_events=500, seed=4)
    np.testing.assert_allclose(real.X_train, simd.X_train, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(real.y_test, simd.y_test, rtol=1e-12)


# ---------------------------------------------------------------- housing simulator, diabetes


def test_housing_sim():
    ds = datasets.load("housing_sim", n_samples=1000, seed=5)
    assert ds.X_train.shape == (800, 38) and ds.X_test.shape == (200, 38)
    assert ds.feature_names == bang_recipe.FEATURES
    assert ds.binary_mask.tolist() == [False, False] + [True] * 36
    assert set(np.unique(ds.X_train[:, 2:])) == {0.0, 1.0}
    np.testing.assert_allclose(ds.X_train[:, :2].mean(axis=0), 0.0, atol=1e-12)
    y = np.concatenate([ds.y_train, ds.y_test])
    assert (y > 0).all()
    skew = ((y - y.mean()) ** 3).mean() / y.std() ** 3
    assert skew > 1.0  # right-skewed price
    B = np.concatenate([ds.X_train, ds.X_test])[:, 2:]
    C = np.corrcoef(B[:, B.std(axis=0) > 0].T)
    assert C[np.triu_indices_from(C, 1)].mean() > 0.05  # correlated amenities
    df = housing_sim.simulate(1000, seed=5)
    np.testing.assert_allclose(y, np.concatenate([df.Price.to_numpy()[ds.train_index],
                                                  df.Price.to_numpy()[ds.test_index]]) / 1e7)


def test_diabetes_real_data_with_a_binary_column():
    ds = datasets.load("diabetes")
    assert ds.n_features == 10 and len(ds.y_train) + len(ds.y_test) == 442
    j = ds.feature_names.index("sex")
    assert ds.binary_mask.tolist() == [f == "sex" for f in ds.feature_names]
    np.testing.assert_array_equal(ds.raw_binary_levels[j], [1.0, 2.0])
    np.testing.assert_allclose(np.unique(np.round(ds.X_test[:, j], 12)),
                               np.round(ds.binary_levels[j], 12))


def test_split_is_80_20_disjoint_and_seeded():
    a = datasets.load("housing_sim", n_samples=1951, seed=0)
    assert len(a.train_index) == 1560 and len(a.test_index) == 391  # the paper's 391 held out
    assert not set(a.train_index) & set(a.test_index)
    b = datasets.load("housing_sim", n_samples=1951, seed=0)
    np.testing.assert_array_equal(a.test_index, b.test_index)


# ---------------------------------------------------------------- command line


def test_cli_list_and_prepare(tmp_path, capsys, samples):
    assert cli_main(["datasets", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("dielectron_sim", "housing_sim", "dielectron", "bangalore", "diabetes"):
        assert name in out
    assert datasets.available() == sorted(datasets.available())
    dest = tmp_path / "prep"
    assert cli_main(["datasets", "prepare", "dielectron_sim", "--out", str(dest), "--seed", "3",
                     "--option", "n_events=1000"]) == 0
    meta = json.loads((dest / "metadata.json").read_text())
    assert meta["n_train"] == 800 and meta["n_test"] == 200 and meta["n_features"] == 16
    assert meta["binary_levels"][7] is not None and meta["binary_levels"][0] is None
    back = datasets.load_prepared(dest)
    ref = datasets.load("dielectron_sim", n_events=1000, seed=3)
    np.testing.assert_array_equal(back.X_test, ref.X_test)
    np.testing.assert_array_equal(back.y_train, ref.y_train)
    np.testing.assert_array_equal(back.binary_levels, ref.binary_levels)
    np.testing.assert_array_equal(back.scaler.scale_, ref.scaler.scale_)
    dest2 = tmp_path / "bang"
    assert cli_main(["datasets", "prepare", "bangalore", "--out", str(dest2), "--path",
                     str(samples / "bangalore_head60.csv")]) == 0
    assert pd.read_parquet(dest2 / "train.parquet").shape == (48, 39)
    # errors come back as exit code 1 with a message, not a traceback
    assert cli_main(["datasets", "prepare", "bangalore", "--out", str(dest2), "--path",
                     str(tmp_path / "nope.csv")]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_table_data_set_is_labelled_by_its_file(tmp_path):
    """Every CSV was called "table" (the recipe) wherever the data set was named; its label is
    the file's name now, the recipe's name stays in ``name`` (it chooses presets)."""
    from _runs import small_csv

    csv = small_csv(tmp_path / "small.csv")
    ds = datasets.load("table", path=str(csv), target="y")
    assert ds.name == "table" and ds.label == "small.csv"
    assert "label='small.csv'" in repr(ds) and ds.metadata()["label"] == "small.csv"
    back = datasets.load_prepared(datasets.prepare("table", tmp_path / "prep", path=str(csv),
                                                   target="y"))
    assert back.label == "small.csv" and back.name == "table"
    sim = datasets.load("housing_sim", n_samples=50)
    assert sim.label == sim.name == "housing_sim"


# -- a prepared folder is one preparation ----------------------------------------------------------
def test_load_prepared_detects_mixed_files(tmp_path):
    a = datasets.prepare("housing_sim", tmp_path / "a", n_samples=60, seed=0)
    b = datasets.prepare("housing_sim", tmp_path / "b", n_samples=60, seed=1)
    datasets.load_prepared(a)
    (a / "test.parquet").write_bytes((b / "test.parquet").read_bytes())
    with pytest.raises(ValueError, match="test.parquet is not the file"):
        datasets.load_prepared(a)


def test_prepare_drops_old_metadata_first(tmp_path, monkeypatch):
    out = datasets.prepare("housing_sim", tmp_path / "p", n_samples=60, seed=0)

    def boom(*a, **k):
        raise RuntimeError("killed")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", boom)
    with pytest.raises(RuntimeError, match="killed"):
        datasets.prepare("housing_sim", out, n_samples=80, seed=1)
    monkeypatch.undo()
    with pytest.raises(FileNotFoundError, match="metadata.json"):
        datasets.load_prepared(out)


def test_binary_indices_are_the_binary_mask_s_columns():
    ds = datasets.load("housing_sim", n_samples=200)
    np.testing.assert_array_equal(ds.binary_indices, np.flatnonzero(ds.binary_mask))
    assert len(ds.binary_indices) > 0
