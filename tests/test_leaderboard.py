"""The leaderboard: grouping by configuration fingerprint, ranks, seeded bootstrap, outputs, CLI."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from insdel import cli, runner  # noqa: E402
from insdel import leaderboard as L  # noqa: E402

BASE_CONFIG = {
    "name": "hand", "description": "", "seed": 0, "out": None,
    "data": {"recipe": "toy", "options": {"n": 10}},
    "model": {"preset": "quick_cern", "path": None, "trust": False},
    "targets": {"n": 4},
    "compute": {"device": "cpu"},
    "policies": [{"spec": "average"}],
    "methods": {"names": ["a", "b", "c"], "options": {}},
    "evaluation": {"modes": ["insertion", "deletion"], "n_random": 2, "normalize": True,
                   "targets_per_chunk": 50, "order": "signed"},
    "figures": {"enabled": False},
}


def fake_run(path: Path, scores: dict, *, seed: int = 0, config: dict | None = None,
             policy: str = "average", name: str = "hand") -> Path:
    """A run directory as the runner writes it: manifest.json and POLICY/abc.parquet.

    ``scores``: method -> {mode: per-pair scores}."""
    cfg = copy.deepcopy(config or BASE_CONFIG)
    cfg["seed"] = seed
    cfg["name"] = name
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({
        "name": name, "seed": seed, "config": cfg, "policies": [policy],
        "data": {"name": cfg["data"]["recipe"], "file_sha256": None},
        "model": {"file_sha256": None}}))
    rows = []
    for meth, by_mode in scores.items():
        for mode, v in by_mode.items():
            for i, s in enumerate(v):
                rows.append({"pair": i, "method": meth, "mode": mode, "abc": float(s)})
    (path / policy).mkdir()
    pd.DataFrame(rows).to_parquet(path / policy / "abc.parquet", index=False)
    return path


def simple_scores(rng, P=6, shift=(0.3, 0.2, 0.1)):
    return {m: {"insertion": s + 0.01 * rng.normal(size=P),
                "deletion": -s + 0.01 * rng.normal(size=P)}
            for m, s in zip("abc", shift, strict=True)}


def test_rank_means_hand_made():
    np.testing.assert_array_equal(L.rank_means([3.0, 1.0, 2.0]), [1, 3, 2])
    np.testing.assert_array_equal(L.rank_means([2.0, 2.0, 1.0]), [1.5, 1.5, 3])
    np.testing.assert_array_equal(L.rank_means([[1.0, 2.0], [5.0, 0.0]]), [[2, 1], [1, 2]])


def test_ranks_and_means_on_a_hand_made_run(tmp_path):
    ins = {"a": [3.0, 3.0, 3.0], "b": [1.0, 2.0, 3.0], "c": [0.0, 0.0, 0.0]}
    dele = {"a": [0.0, 0.0, 0.0], "b": [1.0, 1.0, 1.0], "c": [2.0, 2.0, 2.0]}
    run = fake_run(tmp_path / "r", {m: {"insertion": ins[m], "deletion": dele[m]} for m in "abc"})
    board = L.leaderboard([run], n_boot=50)
    b = board.blocks.set_index(["metric", "method"])
    assert b.loc[("insertion", "a"), "mean"] == 3.0 and b.loc[("insertion", "b"), "mean"] == 2.0
    assert b.loc[("insertion", "b"), "se"] == pytest.approx(np.std([1, 2, 3], ddof=1) / np.sqrt(3))
    assert list(b.loc["insertion"].loc[["a", "b", "c"], "rank"]) == [1, 2, 3]
    assert list(b.loc["deletion"].loc[["a", "b", "c"], "rank"]) == [3, 2, 1]
    # total = insertion + deletion per pair: a 3, b 3 (2, 3, 4), c 2 -> a and b tie
    assert list(b.loc["total"].loc[["a", "b", "c"], "rank"]) == [1.5, 1.5, 3]
    o = board.overall.set_index(["metric", "method"])
    assert o.loc[("insertion", "a"), "mean_rank"] == 1.0
    assert o.loc[("insertion", "a"), "ci_low"] <= 1.0 <= o.loc[("insertion", "a"), "ci_high"]


def test_same_config_grouped_different_configs_kept_apart(tmp_path):
    rng = np.random.default_rng(0)
    r1 = fake_run(tmp_path / "r1", simple_scores(rng), seed=1, name="first")
    r2 = fake_run(tmp_path / "r2", simple_scores(rng), seed=2, name="second")
    other = copy.deepcopy(BASE_CONFIG)
    other["methods"]["options"] = {"a": {"n_samples": 10}}
    r3 = fake_run(tmp_path / "r3", simple_scores(rng), seed=1, config=other, name="third")
    dup = fake_run(tmp_path / "r4", simple_scores(rng), seed=2, name="again")
    board = L.leaderboard([r1, r2, r3, dup, r1], n_boot=50)
    g = board.groups.set_index("run")
    assert len(g) == 4  # r1 given twice is read once
    assert g.loc["first", "group"] == g.loc["second", "group"] != g.loc["third", "group"]
    assert g.loc["first", "fingerprint"] == g.loc["second", "fingerprint"]
    assert not g.loc["again", "used"] and "same configuration and seed" in g.loc["again", "note"]
    blk = board.blocks
    assert set(blk.loc[blk["group"] == g.loc["first", "group"], "n_pairs"]) == {12}  # pooled
    assert set(blk.loc[blk["group"] == g.loc["third", "group"], "n_pairs"]) == {6}
    assert board.overall["n_blocks"].eq(2).all()
    md = board.to_markdown()
    assert "first" in md and "third" in md and "skipped" in md and "g1/average, g2/average" in md


def test_fingerprint_ignores_seed_name_output_and_compute():
    m = {"config": copy.deepcopy(BASE_CONFIG)}
    fp = L.config_fingerprint(m)
    m2 = copy.deepcopy(m)
    m2["config"].update(seed=9, name="x", out="elsewhere", compute={"device": "cuda"},
                        figures={"enabled": True})
    m2["config"]["evaluation"]["targets_per_chunk"] = 7
    assert L.config_fingerprint(m2) == fp
    m3 = copy.deepcopy(m)
    m3["config"]["evaluation"]["n_random"] = 3
    assert L.config_fingerprint(m3) != fp
    m4 = copy.deepcopy(m)
    m4["model"] = {"file_sha256": "abc"}
    assert L.config_fingerprint(m4) != fp
    with pytest.raises(ValueError, match="config"):
        L.config_fingerprint({})
    # a ROAD run of the same (merged) configuration is another group, not a replicate
    assert L.config_fingerprint({**m, "road": {}}) != fp


def test_methods_missing_from_a_block_are_left_out_with_a_note(tmp_path):
    rng = np.random.default_rng(1)
    s = simple_scores(rng)
    r1 = fake_run(tmp_path / "r1", s)
    other = copy.deepcopy(BASE_CONFIG)
    other["targets"]["n"] = 5
    r2 = fake_run(tmp_path / "r2", {k: v for k, v in s.items() if k != "c"}, config=other)
    board = L.leaderboard([r1, r2], n_boot=20)
    assert set(board.overall["method"]) == {"a", "b"}
    assert any("c left out" in n for n in board.notes)


def test_bootstrap_seeded_and_reproducible(tmp_path):
    rng = np.random.default_rng(2)
    run = fake_run(tmp_path / "r", simple_scores(rng, P=8, shift=(0.2, 0.19, 0.18)))
    a = L.leaderboard([run], n_boot=300, seed=5).overall
    b = L.leaderboard([run], n_boot=300, seed=5).overall
    c = L.leaderboard([run], n_boot=300, seed=6).overall
    pd.testing.assert_frame_equal(a, b)
    assert list(a["method"]) == list(c["method"])
    V = [np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.5]])]
    np.testing.assert_array_equal(L.bootstrap_mean_ranks(V, n_boot=40, seed=1),
                                  L.bootstrap_mean_ranks(V, n_boot=40, seed=1))
    assert not np.array_equal(L.bootstrap_mean_ranks(V, n_boot=40, seed=1),
                              L.bootstrap_mean_ranks(V, n_boot=40, seed=2))
    reps = L.bootstrap_mean_ranks(V, n_boot=400, seed=1)
    assert reps.shape == (400, 2) and np.allclose(reps.sum(axis=1), 3.0)
    assert 0 < (reps[:, 0] == 1).mean() < 1  # resampling changes the winner sometimes


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such folder"):
        L.leaderboard([tmp_path / "missing"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no finished run"):
        L.leaderboard([tmp_path / "empty"])
    run = fake_run(tmp_path / "r", simple_scores(np.random.default_rng(0)))
    with pytest.raises(ValueError, match="n_boot"):
        L.leaderboard([run], n_boot=0)
    with pytest.raises(ValueError, match="level"):
        L.leaderboard([run], level=1.5)
    roar = tmp_path / "roar"
    roar.mkdir()
    (roar / "manifest.json").write_text(json.dumps({"config": BASE_CONFIG, "roar": {}}))
    with pytest.raises(ValueError, match="ROAR"):
        L.leaderboard([roar])


def test_cli_writes_md_csv_png(tmp_path, capsys):
    rng = np.random.default_rng(3)
    parent = tmp_path / "runs"
    parent.mkdir()
    fake_run(parent / "r1", simple_scores(rng), seed=1)
    fake_run(parent / "r2", simple_scores(rng), seed=2)
    out = tmp_path / "lb"
    assert cli.main(["leaderboard", str(parent), "--out", str(out), "--n-boot", "50"]) == 0
    text = capsys.readouterr().out
    assert "## Leaderboard" in text and "| method | insertion ABC" in text
    for f in ("leaderboard.md", "leaderboard_blocks.csv", "leaderboard_overall.csv",
              "leaderboard_runs.csv", "leaderboard.png"):
        assert (out / f).is_file() and (out / f).stat().st_size > 0
    assert (out / "leaderboard.png").read_bytes()[:4] == b"\x89PNG"
    # beside it, each block's critical-difference diagram (the CLI draws it, not leaderboard.py)
    assert (out / "leaderboard_critical_difference.png").read_bytes()[:4] == b"\x89PNG"
    assert "leaderboard_critical_difference.png" in text
    assert set(pd.read_csv(out / "leaderboard_runs.csv")["group"]) == {"g1"}
    assert cli.main(["leaderboard", str(tmp_path / "nope"), "--out", str(out)]) == 1


TINY = """
name = "lb_tiny"
seed = 1

[data]
recipe = "dielectron_sim"
[data.options]
n_events = 400

[model]
preset = "quick_cern"
max_epochs = 1

[targets]
n = 6

[[policies]]
spec = "average"

[methods]
names = ["vanilla_grad", "input_x_gradient"]

[evaluation]
n_random = 2

[figures]
enabled = false
"""


def test_real_runs_grouped_by_fingerprint(tmp_path):
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(TINY)
    runner.run_experiment(cfg, tmp_path / "s1", progress=False)
    cfg.write_text(TINY.replace("seed = 1", "seed = 2"))
    runner.run_experiment(cfg, tmp_path / "s2", progress=False)
    board = L.leaderboard([tmp_path / "s1", tmp_path / "s2"], n_boot=50)
    assert board.groups["group"].nunique() == 1 and board.groups["used"].all()
    assert set(board.blocks["n_pairs"]) == {12}
    assert set(board.blocks["method"]) == {"vanilla_grad", "input_x_gradient", "random"}
    assert set(board.blocks["metric"]) == {"insertion", "deletion", "total"}


def test_pairs_of_one_cluster_are_one_unit_for_the_se_and_the_bootstrap(tmp_path):
    """A one_to_one run holds every couple in both directions (equal ABCs for sign-changing
    attributions); the leaderboard's standard errors and bootstrap resampled the pairs, as if the
    couples were twice as many. With the run's cluster column they are over the couples: the
    standard errors and rank intervals equal those of the couples counted once."""
    rng = np.random.default_rng(4)
    once = {m: {"insertion": s + rng.normal(size=10), "deletion": -s + rng.normal(size=10)}
            for m, s in zip("abc", (0.3, 0.2, 0.1), strict=True)}
    twice = {m: {mo: np.repeat(v, 2) for mo, v in d.items()} for m, d in once.items()}
    a = fake_run(tmp_path / "once", once)
    b = fake_run(tmp_path / "twice", twice)
    f = b / "average" / "abc.parquet"
    pd.read_parquet(f).assign(cluster=lambda d: d["pair"] // 2).to_parquet(f, index=False)
    la, lb = L.leaderboard([a], n_boot=200), L.leaderboard([b], n_boot=200)
    cols = ["metric", "method", "mean", "se", "rank", "rank_low", "rank_high"]
    pd.testing.assert_frame_equal(la.blocks[cols], lb.blocks[cols], rtol=1e-12)
    pd.testing.assert_frame_equal(la.overall, lb.overall, rtol=1e-12)
    assert set(lb.blocks["n_pairs"]) == {20} and set(lb.blocks["n_units"]) == {10}
    assert "20 pairs, 10 units" in lb.to_markdown()
    # without the column every pair is a unit: the duplicated pairs shrink the standard error
    c = fake_run(tmp_path / "plain", twice)
    lc = L.leaderboard([c], n_boot=200)
    assert (lc.blocks["se"] < la.blocks["se"]).all() and set(lc.blocks["n_units"]) == {20}


# -- methods without a score on some pairs ---------------------------------------------------------
def _run(path: Path, scores: dict) -> Path:
    cfg = {"name": "r", "seed": 0, "data": {"recipe": "toy"}, "methods": {"names": list(scores)}}
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({
        "name": "r", "seed": 0, "config": cfg, "policies": ["average"],
        "data": {"name": "toy"}, "model": {}}))
    rows = [{"pair": i, "method": m, "mode": mode, "abc": float(s)}
            for m, by in scores.items() for mode, v in by.items() for i, s in enumerate(v)]
    (path / "average").mkdir()
    pd.DataFrame(rows).to_parquet(path / "average" / "abc.parquet", index=False)
    return path


def test_leaderboard_says_when_a_method_is_left_out_of_a_block(tmp_path):
    """A method with a NaN (or missing) score on one pair is left out of that block with a note
    naming it, and still listed (n/a) in the overall table and the block table."""
    ins = {"a": [3.0, np.nan, 3.0], "b": [1.0, 2.0, 3.0], "c": [0.0, 0.0, 0.0]}
    run = _run(tmp_path / "r", {m: {"insertion": ins[m], "deletion": [0.0, 0.0, 0.0]}
                                for m in "abc"})
    board = L.leaderboard([run], n_boot=20)
    assert any("insertion ABC" in n and "a (no score or NaN on 1 of 3 pairs)" in n
               for n in board.notes)
    md = board.to_markdown()
    assert "| a | n/a | " in md  # listed in the overall table, n/a where left out
    assert md.count("| a |") == 2  # and in the block table


def test_leaderboard_markdown_lists_a_method_missing_from_the_first_metric(tmp_path):
    """A method with deletion scores only is listed in both tables."""
    scores = {"a": {"insertion": [1.0, 2.0], "deletion": [0.5, 0.1]},
              "b": {"insertion": [0.0, 1.0], "deletion": [0.2, 0.3]},
              "c": {"deletion": [0.9, 0.9]}}
    board = L.leaderboard([_run(tmp_path / "r", scores)], n_boot=20)
    md = board.to_markdown()
    assert md.count("| c |") == 2


def test_leaderboard_pair_without_any_score_does_not_drop_methods(tmp_path):
    ins = {"a": [3.0, np.nan, 3.0], "b": [1.0, np.nan, 3.0]}
    run = _run(tmp_path / "r", {m: {"insertion": ins[m]} for m in "ab"})
    board = L.leaderboard([run], n_boot=20)
    b = board.blocks.set_index("method")
    assert set(b.index) == {"a", "b"} and (b["n_pairs"] == 2).all()
    assert not board.notes


def test_a_run_s_further_removals_join_as_their_own_metrics(tmp_path):
    """<policy>/removal-<name>/abc.parquet (a run with several removals): its ABCs join as
    insertion@<name>, deletion@<name>, total@<name>, ranked like the primary ones."""
    ins = {"a": [3.0, 3.0], "b": [1.0, 2.0]}
    run = fake_run(tmp_path / "r", {m: {"insertion": ins[m], "deletion": [0.0, 0.0]} for m in "ab"})
    rows = [{"pair": i, "method": m, "mode": mode, "abc": v}
            for m, vals in {"a": [0.0, 1.0], "b": [2.0, 2.0]}.items()
            for mode in ("insertion", "deletion") for i, v in enumerate(vals)]
    (run / "average" / "removal-marginal").mkdir()
    pd.DataFrame(rows).to_parquet(run / "average" / "removal-marginal" / "abc.parquet",
                                  index=False)
    b = L.leaderboard([run], n_boot=20).blocks.set_index(["metric", "method"])
    assert b.loc[("insertion", "a"), "rank"] == 1 and b.loc[("insertion", "b"), "rank"] == 2
    assert b.loc[("insertion@marginal", "a"), "mean"] == 0.5
    assert b.loc[("insertion@marginal", "b"), "rank"] == 1
    assert b.loc[("total@marginal", "b"), "mean"] == 4.0


# -- the figure ------------------------------------------------------------------------------------
def _many_metrics_run(path: Path, n_extra: int) -> Path:
    """A run whose methods differ between metrics: ``c`` has deletion scores only, ``d`` has the
    [metrics] only; ``n_extra`` metrics of metrics.parquet (the last one lower-is-better)."""
    rng = np.random.default_rng(7)
    scores = {"a": {"insertion": rng.normal(1, 0.1, 6), "deletion": rng.normal(1, 0.1, 6)},
              "exact_shapley": {"insertion": rng.normal(0, 0.1, 6),
                                "deletion": rng.normal(0, 0.1, 6)},
              "cohort_shapley_long_name": {"deletion": rng.normal(2, 0.1, 6)}}
    run = _run(path, scores)
    rows = [{"pair": i, "method": m, "metric": f"metric_{k}", "value": float(rng.normal()),
             "higher_is_better": k != n_extra - 1}
            for k in range(n_extra) for m in ("a", "exact_shapley", "kernel_shap", "lime")
            for i in range(6)]
    pd.DataFrame(rows).to_parquet(run / "average" / "metrics.parquet", index=False)
    return run


def test_figure_shows_every_method_of_each_metric_in_a_grid_without_overlaps(tmp_path):
    """Each panel lists the methods ranked under its own metric (the figure took the first
    metric's methods for every panel: methods missing there vanished), and 15 metrics wrap
    into a grid instead of one row 6,930 px wide; no text is drawn over another."""
    from _plots import overlaps_of_texts

    board = L.leaderboard([_many_metrics_run(tmp_path / "r", 12)], n_boot=30)
    metrics = [m for m in board.labels if m in set(board.overall["metric"])]
    assert len(metrics) == 15
    fig = board.figure()
    try:
        panels = [ax for ax in fig.axes if ax.get_visible()]
        assert len(panels) == 15
        for ax, m in zip(panels, metrics, strict=True):
            shown = {t.get_text() for t in ax.get_yticklabels()}
            assert shown == set(board.overall.loc[board.overall["metric"] == m, "method"]), m
        assert {t.get_text() for t in panels[1].get_yticklabels()} >= {
            "cohort_shapley_long_name", "a", "exact_shapley"}  # deletion: one more than insertion
        assert {t.get_text() for t in panels[3].get_yticklabels()} >= {"kernel_shap", "lime"}
        width, height = fig.get_size_inches() * 110
        assert width <= 2000 and height <= 2200, (width, height)
        assert len({round(ax.get_position().y0, 3) for ax in panels}) == 5  # 5 rows of 3
        assert overlaps_of_texts(fig) == []
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)
    # a single metric and long labels: still no overlap
    one = L.leaderboard([_run(tmp_path / "s", {"a" * 40: {"insertion": [1.0, 2.0]},
                                                "b": {"insertion": [0.0, 1.0]}})], n_boot=20)
    fig = one.figure()
    assert overlaps_of_texts(fig) == [] and len(fig.axes) == 1


# -- identical results counted once ----------------------------------------------------------------
def test_identical_results_under_another_fingerprint_are_counted_once(tmp_path):
    """The same configuration run with and without ``--removal baseline`` (the default) gets
    another fingerprint, but its abc.parquet is byte-identical: its blocks counted twice in the
    overall ranks. They are counted once, with a note naming both runs; a run with further
    removals keeps the metrics only it has."""
    rng = np.random.default_rng(8)
    s = simple_scores(rng)
    plain = fake_run(tmp_path / "plain", s, name="plain")
    spelled = copy.deepcopy(BASE_CONFIG)
    spelled["removal"] = {"kinds": ["baseline"]}
    again = fake_run(tmp_path / "again", s, config=spelled, name="again")
    board = L.leaderboard([plain, again], n_boot=30)
    g = board.groups.set_index("run")
    assert g.loc["plain", "group"] != g.loc["again", "group"]  # fingerprints differ
    assert not g.loc["again", "used"] and "identical" in g.loc["again", "note"]
    assert board.overall["n_blocks"].eq(1).all()
    assert set(board.blocks["group"]) == {g.loc["plain", "group"]}
    assert any(n.startswith("duplicates merged") and str(again) in n and str(plain) in n
               for n in board.notes)
    assert "duplicates merged" in board.to_markdown()
    # a run with a further removal: its plain metrics merged, its removal's kept
    more = copy.deepcopy(BASE_CONFIG)
    more["removal"] = {"kinds": ["baseline", "marginal"]}
    both = fake_run(tmp_path / "both", s, config=more, name="both")
    rows = [{"pair": i, "method": m, "mode": mode, "abc": float(v)}
            for m, by in simple_scores(rng).items() for mode, vals in by.items()
            for i, v in enumerate(vals)]
    (both / "average" / "removal-marginal").mkdir()
    pd.DataFrame(rows).to_parquet(both / "average" / "removal-marginal" / "abc.parquet")
    board = L.leaderboard([plain, again, both], n_boot=30)
    nb = board.overall.groupby("metric")["n_blocks"].first()
    assert nb["insertion"] == 1 and nb["insertion@marginal"] == 1
    g = board.groups.set_index("run")
    assert g.loc["both", "used"] and "some numbers identical" in g.loc["both", "note"]
    assert set(board.blocks.loc[board.blocks["group"] == g.loc["both", "group"], "metric"]) == {
        "insertion@marginal", "deletion@marginal", "total@marginal"}


# -- near ties -------------------------------------------------------------------------------------
def test_near_tied_methods_point_rank_inside_its_interval_and_shown_tied(tmp_path):
    """Three methods whose means differ by 0.001 with a spread of 1 (12.816 / 12.814 / 12.810 at
    s.e. 0.65 in the trial) rank 1, 2, 3 on the means in every block: the point mean rank was
    1.00 while the bootstrap interval sat near 2 (1.27 [1.53, 2.07]). The point is now the
    bootstrap's median, inside its interval, and the three are shown as tied (places 1-3); a
    method clearly apart keeps one place."""
    rng = np.random.default_rng(9)
    runs = []
    for k in range(4):
        e = rng.normal(size=(40, 3))
        V = e - e.mean(axis=0) + np.array([0.002, 0.001, 0.0])  # means ordered a > b > c
        cfg = copy.deepcopy(BASE_CONFIG)
        cfg["targets"]["n"] = 10 + k  # four configurations: four blocks
        scores = {m: {"insertion": V[:, j]} for j, m in enumerate("abc")}
        scores["worst"] = {"insertion": V[:, 2] - 5.0}
        runs.append(fake_run(tmp_path / f"r{k}", scores, config=cfg))
    board = L.leaderboard(runs, n_boot=400)
    o = board.overall.set_index("method")
    assert (o["ci_low"] <= o["mean_rank"]).all() and (o["mean_rank"] <= o["ci_high"]).all()
    assert o.loc["a", "mean_rank"] > 1.2  # not the means' rank 1.00
    assert list(o.loc[["a", "b", "c"], "place_low"]) == [1, 1, 1]
    assert list(o.loc[["a", "b", "c"], "place_high"]) == [3, 3, 3]
    assert o.loc["worst", "place_low"] == o.loc["worst", "place_high"] == 4
    b = board.blocks
    assert ((b["rank_low"] <= b["rank"]) & (b["rank"] <= b["rank_high"])).all()
    md = board.to_markdown()
    assert "(1–3)" in md and "(4)" in md and "tied: places 1–3" in md


def test_rank_places_hand_made():
    reps = np.array([[1.0, 2.0, 3.0]] * 50 + [[2.0, 1.0, 3.0]] * 50)
    low, high = L.rank_places(reps)
    np.testing.assert_array_equal(low, [1, 1, 3])
    np.testing.assert_array_equal(high, [2, 2, 3])


# -- ROAD runs and folders of other kinds ----------------------------------------------------------
def _road_run(tmp_path: Path) -> Path:
    """A small ``insdel road`` run (the small CSV, a one-epoch MLP, 10 test rows)."""
    from _runs import small_cfg, small_csv

    cfg = small_cfg(small_csv(tmp_path / "d.csv"), "road_small")
    for k in ("targets", "policies", "evaluation", "figures"):
        cfg.pop(k)
    cfg["road"] = {"fractions": [0.5, 1.0], "n_rows": 10, "removal": "conditional_gaussian",
                   "removal_options": {"n_draws": 2}, "leakage": False}
    return runner.run_road(cfg, tmp_path / "runs" / "road0", progress=False).out


def test_road_runs_on_the_leaderboard_and_other_kinds_skipped_with_a_note(tmp_path, capsys):
    """``insdel leaderboard runs/`` over a folder holding an evaluation run, ROAD runs, a ROAR
    run, an image run, an unfinished run and a broken one: the ROAD runs are ranked (a block per
    ROAD configuration, its SRG and MoRF / LeRF areas as metrics, a run as the unit), every other
    folder is skipped with one note naming what it is."""
    road0 = _road_run(tmp_path)
    runs = road0.parent
    summary = pd.read_csv(road0 / "road_summary.csv")
    # a replicate of the ROAD configuration (another seed): the block's second unit
    road1 = runs / "road1"
    road1.mkdir()
    m = json.loads((road0 / "manifest.json").read_text())
    m["seed"] = m["config"]["seed"] = 1
    (road1 / "manifest.json").write_text(json.dumps(m))
    summary.assign(srg=summary["srg"] + 0.01, morf_area=summary["morf_area"] + 0.02,
                   lerf_area=summary["lerf_area"] + 0.01).to_csv(road1 / "road_summary.csv",
                                                                 index=False)
    fake_run(runs / "eval", simple_scores(np.random.default_rng(10)))
    for name, man in (("roar", {"config": BASE_CONFIG, "roar": {}}),
                      ("images", {"experiment": "paper-images", "seed": 0})):
        (runs / name).mkdir()
        (runs / name / "manifest.json").write_text(json.dumps(man))
    (runs / "images" / "sanity_flags.csv").write_text("a,b\n1,2\n")  # not insdel sanity's
    (runs / "unfinished").mkdir()
    (runs / "broken").mkdir()
    (runs / "broken" / "manifest.json").write_text("{not json")
    out = tmp_path / "lb"
    assert cli.main(["leaderboard", str(runs), "--out", str(out), "--n-boot", "40"]) == 0
    text = capsys.readouterr().out
    for name, what in (("roar", "a ROAR run"), ("images", "an image run"),
                       ("unfinished", "no manifest.json"), ("broken", "cannot be read")):
        lines = [ln for ln in text.splitlines() if f"{runs / name} skipped" in ln]
        assert len(lines) == 1 and what in lines[0], (name, lines)
    assert f"{runs / 'images'}: its sanity_flags.csv / reliability.csv cannot be read" in text
    board = L.leaderboard([runs], n_boot=40)
    blk = board.blocks[board.blocks["policy"] == "road:training_mean"]
    assert set(blk["metric"]) == {"road_srg_mse", "road_morf_mse", "road_lerf_mse"}
    assert set(blk["method"]) == set(summary["method"])
    assert set(blk["unit"]) == {"run"} and set(blk["n_units"]) == {2}
    srg = blk[blk["metric"] == "road_srg_mse"].set_index("method")
    np.testing.assert_allclose(srg.loc[summary["method"], "mean"],
                               summary["srg"] + 0.005, rtol=1e-12)
    best = summary.sort_values("srg", ascending=False)["method"].iloc[0]
    assert srg.loc[best, "rank"] == 1
    assert board.directions["road_lerf_mse"] is False and board.directions["road_srg_mse"]
    assert "ROAD SRG (mse)" in board.to_markdown() and "one unit each" in board.to_markdown()
    assert {"insertion", "road_srg_mse"} <= set(board.overall["metric"])
    # one ROAD run alone: ranked, without an interval, and said so
    solo = L.leaderboard([road0], n_boot=20)
    assert solo.overall["ci_low"].isna().all()
    assert any("no interval" in n for n in solo.notes)
    # nothing rankable: refused, naming what was found
    with pytest.raises(ValueError, match="a ROAR run"):
        L.leaderboard([runs / "roar", runs / "images"])


def test_block_verdicts_and_comparisons_beside_each_block(tmp_path):
    """Each block's table is followed by its verdicts (insdel.verdicts over the block's units, by
    the metric's direction); the comparisons are a table of their own, and the units are the
    clusters (a pair and its mirror counted once)."""
    rng = np.random.default_rng(4)
    once = {m: {"insertion": s + 0.2 * rng.normal(size=12),
                "deletion": -s + 0.2 * rng.normal(size=12)}
            for m, s in zip("abc", (1.0, 0.0, 0.02), strict=True)}
    twice = {m: {mo: np.repeat(v, 2) for mo, v in d.items()} for m, d in once.items()}
    run = fake_run(tmp_path / "r", twice)
    f = run / "average" / "abc.parquet"
    pd.read_parquet(f).assign(cluster=lambda d: d["pair"] // 2).to_parquet(f, index=False)
    board = L.leaderboard([run], n_boot=200)
    md = board.to_markdown()
    assert "Verdicts (paired over the block's independent units" in md
    assert "a > b (p_holm < 0.001)" in md and "a is first with 95 % confidence" in md
    assert "- Cannot be told apart: b and c (p_holm = " in md
    c = board.comparisons
    assert set(c["metric"]) == {"insertion", "deletion", "total"} and set(c["n_units"]) == {12}
    ins = c[(c["metric"] == "insertion") & (c["a"] == "a") & (c["b"] == "b")].iloc[0]
    from scipy.stats import ttest_rel

    assert ins["p"] == pytest.approx(ttest_rel(once["a"]["insertion"],
                                               once["b"]["insertion"]).pvalue)
    # deletion is higher-is-better too (ABC'): a's -1 is worst there
    dele = c[(c["metric"] == "deletion") & (c["a"] == "a") & (c["b"] == "b")].iloc[0]
    assert dele["mean"] < 0 and dele["p_holm"] < 0.05
    paths = board.save(tmp_path / "out")
    assert tmp_path / "out" / "leaderboard_comparisons.csv" in paths
    comp = board.compared[("g1", "average", "insertion")]
    assert comp.n_units == 12 and comp.verdicts()[0].startswith("a > ")


def test_find_runs_and_is_checks_run(tmp_path):
    from insdel.leaderboard_runs import find_runs, is_checks_run

    a, b, empty = tmp_path / "runs" / "a", tmp_path / "runs" / "b", tmp_path / "runs" / "c"
    for d in (a, b, empty):
        d.mkdir(parents=True)
    (a / "manifest.json").write_text(json.dumps({"policies": ["one_to_one"]}))
    (b / "manifest.json").write_text(json.dumps({"sanity": {}, "experiment": "x"}))
    # a run given itself; a folder searched one level down (c holds no run: skipped); a run given
    # twice is kept once
    assert find_runs([a]) == [a]
    assert find_runs(str(tmp_path / "runs")) == [a, b]
    assert find_runs([a, tmp_path / "runs", a]) == [a, b]
    with pytest.raises(FileNotFoundError, match="no such folder"):
        find_runs([tmp_path / "nowhere"])
    with pytest.raises(FileNotFoundError, match="holds no finished run"):
        find_runs([empty])
    with pytest.raises(ValueError, match="at least one run directory"):
        find_runs([])
    assert is_checks_run(b) and not is_checks_run(a)
    assert not is_checks_run(empty)  # no manifest: not a checks run, no error
    (empty / "manifest.json").write_text("[1, 2]")  # not a JSON object
    assert not is_checks_run(empty)


_SAME = ["policy", "metric", "method", "n_pairs", "n_units", "n_runs", "unit", "rank",
         "rank_low", "rank_high", "place_low", "place_high"]


def test_multi_output_run_ranked_per_output_as_a_run_of_that_output_alone(multi_runs, tmp_path):
    """Each output's blocks and overall ranks equal a leaderboard over a single-output run on
    that output's column (the same pairs): means and standard errors to 1e-12, ranks, intervals
    and places exactly; ``metrics.parquet`` is read per output (its ``output`` column)."""
    mdir, singles = multi_runs
    board = L.leaderboard([mdir], n_boot=200, seed=3)
    assert board.outputs == ["0", "1", "weighted"]
    assert list(board.blocks.columns[:5]) == ["group", "fingerprint", "dataset", "policy",
                                              "output"]
    assert set(board.blocks["output"]) == {"0", "1", "weighted"}
    assert list(board.overall.columns[:2]) == ["output", "metric"]
    assert set(board.blocks["metric"]) == {"insertion", "deletion", "total", "insertion_abc"}
    for h, sdir in enumerate(singles):
        one = L.leaderboard([sdir], n_boot=200, seed=3)
        assert "output" not in one.blocks.columns and not one.outputs
        mine = board.blocks[board.blocks["output"] == str(h)].reset_index(drop=True)
        theirs = one.blocks.reset_index(drop=True)
        pd.testing.assert_frame_equal(mine[_SAME], theirs[_SAME])
        for c in ("mean", "se"):
            np.testing.assert_allclose(mine[c], theirs[c], rtol=0, atol=1e-12)
        ov = board.overall[board.overall["output"] == str(h)].drop(columns="output")
        pd.testing.assert_frame_equal(ov.reset_index(drop=True), one.overall)
        for m in ("insertion", "insertion_abc"):
            a, b = board.compared[("g1", "median", str(h), m)], one.compared[("g1", "median", m)]
            np.testing.assert_allclose(a.table()["p_holm"], b.table()["p_holm"], atol=1e-9)


def test_multi_output_weighted_block_uses_the_runs_output_weights(multi_runs, tmp_path):
    """The ``weighted`` block's means are the run's own weighted summaries (summary.csv,
    metrics_summary.csv) and w @ the outputs' means with w = (1, 3) / 4; ``total`` is the
    weighted insertion plus the weighted deletion. Text, CSV and figure name the output."""
    mdir, _ = multi_runs
    board = L.leaderboard([mdir], n_boot=100)
    assert board.output_weights == [0.25, 0.75]
    b = board.blocks.set_index(["output", "metric", "method"])
    summ = pd.read_csv(mdir / "summary.csv").astype({"output": str})
    msumm = pd.read_csv(mdir / "median" / "metrics_summary.csv").astype({"output": str})
    for meth in ("vanilla_grad", "integrated_gradients"):
        per = [b.loc[(str(h), "insertion", meth), "mean"] for h in range(2)]
        got = b.loc[("weighted", "insertion", meth), "mean"]
        assert got == pytest.approx(0.25 * per[0] + 0.75 * per[1], abs=1e-12)
        for mode in ("insertion", "deletion"):
            row = summ[(summ["output"] == "weighted") & (summ["mode"] == mode)
                       & (summ["method"] == meth)].iloc[0]
            assert b.loc[("weighted", mode, meth), "mean"] == pytest.approx(row["mean"],
                                                                            abs=1e-12)
            assert b.loc[("weighted", mode, meth), "se"] == pytest.approx(row["std_error"],
                                                                          abs=1e-12)
        assert b.loc[("weighted", "total", meth), "mean"] == pytest.approx(
            b.loc[("weighted", "insertion", meth), "mean"]
            + b.loc[("weighted", "deletion", meth), "mean"], abs=1e-12)
        row = msumm[(msumm["output"] == "weighted") & (msumm["metric"] == "insertion_abc")
                    & (msumm["method"] == meth)].iloc[0]
        assert b.loc[("weighted", "insertion_abc", meth), "mean"] == pytest.approx(
            row["mean"], abs=1e-12)
    md = board.to_markdown()
    assert "#### output 0" in md and "#### weighted" in md and "w = [0.25, 0.75]" in md
    assert "### small.csv / median / weighted (group g1" in md
    paths = board.save(tmp_path / "lb")
    assert set(pd.read_csv(tmp_path / "lb" / "leaderboard_overall.csv")["output"].astype(str)) \
        == {"0", "1", "weighted"}
    assert "output" in pd.read_csv(tmp_path / "lb" / "leaderboard_comparisons.csv").columns
    assert tmp_path / "lb" / "leaderboard.png" in paths
    fig = board.figure()
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert len(titles) == 3 * 4 and "output 0: insertion ABC" in titles
    assert any(t.startswith("weighted: ABC + ABC'") for t in titles)


def test_runs_of_other_outputs_or_weights_are_refused_naming_the_folder(multi_runs, tmp_path):
    """A multi-output run beside a single-output run, or beside a run with another H or other
    output weights, is an error naming the run folder (never a silent mix of outputs)."""
    import shutil

    mdir, singles = multi_runs
    with pytest.raises(ValueError, match=rf"run {singles[0]}: the runs of one leaderboard must "
                                         r"have the same outputs.*has one output"):
        L.leaderboard([mdir, singles[0]], n_boot=50)

    def variant(name: str, outputs: int, weights: list | None) -> Path:
        d = tmp_path / name
        shutil.copytree(mdir, d, ignore=shutil.ignore_patterns("checkpoints", "metrics.parquet"))
        man = json.loads((d / "manifest.json").read_text())
        man["outputs"] = outputs
        man["config"]["model"]["outputs"] = outputs
        man["config"]["model"]["output_weights"] = weights
        man["output_weights"] = (np.asarray(weights) / sum(weights)).tolist() if weights \
            else [1.0 / outputs] * outputs
        (d / "manifest.json").write_text(json.dumps(man))
        return d

    for d in (variant("equal", 2, None), variant("one", 1, None)):
        with pytest.raises(ValueError, match=rf"run {d}: .*model\.outputs = 2, weighted with "
                                             r"\[0\.25, 0\.75\]"):
            L.leaderboard([mdir, d], n_boot=50)
    bad = variant("bad", 2, [1.0, 1.0])
    man = json.loads((bad / "manifest.json").read_text())
    man["output_weights"] = [0.9, 0.1]
    (bad / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(ValueError, match=r"manifest 'output_weights'"):
        L.read_run(bad)
