"""The robustness report (issue 36): each method's mean ABC and rank under each removal, the Kendall
τ between the removals' rankings, the figure, and a run with several removals (their folders,
the report, checkpoints keyed by the removal, resume, and a run without [removal] as before)."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from _runs import small_cfg  # noqa: E402
from scipy.stats import kendalltau  # noqa: E402

import insdel  # noqa: E402
from insdel import removal, runner  # noqa: E402
from insdel.robustness import (  # noqa: E402
    KENDALL_COLUMNS,
    TABLE_COLUMNS,
    kendall_between,
    kendall_intervals,
    rank_verdicts,
    robustness_markdown,
    robustness_table,
)

W = np.array([1.0, 2.0, -1.0, 0.5])


def f(Z):
    Z = np.asarray(Z, dtype=float)
    return Z @ W + Z[:, 0] * Z[:, 1]


@pytest.fixture(scope="module")
def two_evaluations():
    """The same 7 pairs and attributions under baseline and marginal (a 12-row background)."""
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(7, 4)), np.zeros((7, 4))
    A = {"good": X * W, "noise": rng.normal(size=(7, 4)), "bad": -X * W}
    bg = rng.normal(size=(12, 4))
    base = insdel.evaluate(f, X, R, A, n_random=2, seed=1)
    marg = insdel.evaluate(f, X, R, A, n_random=2, seed=1,
                           removal=removal.Marginal(bg, n_references=3, seed=2))
    return {"baseline": base, "marginal": marg}


# -- the table -------------------------------------------------------------------------------------
def test_robustness_table_is_the_hand_computed_means_standard_errors_and_ranks(two_evaluations):
    table = robustness_table(two_evaluations)
    assert list(table.columns) == TABLE_COLUMNS
    methods = ["good", "noise", "bad", "random"]
    # nesting: mode, then method, then removal (in the mapping's order)
    assert list(table["mode"].unique()) == ["insertion", "deletion"]
    assert len(table) == 2 * len(methods) * 2
    assert list(table["method"].iloc[:8]) == [m for m in methods for _ in range(2)]
    assert list(table["removal"].iloc[:4]) == ["baseline", "marginal"] * 2
    for (mode, name), ev in ((k, two_evaluations[k[1]]) for k in
                             [(m, r) for m in ("insertion", "deletion")
                              for r in ("baseline", "marginal")]):
        means = {}
        for m in methods:
            v = ev.abc_array(m, mode)
            row = table[(table["mode"] == mode) & (table["method"] == m)
                        & (table["removal"] == name)].iloc[0]
            assert row["mean"] == pytest.approx(v.mean(), abs=1e-14)
            assert row["std_error"] == pytest.approx(v.std(ddof=1) / np.sqrt(len(v)), abs=1e-14)
            assert row["n"] == row["n_units"] == 7
            means[m] = v.mean()
        # rank 1 = the largest mean ABC (larger is better in both modes)
        by_hand = {m: 1 + sum(means[o] > means[m] for o in methods) for m in methods}
        got = table[(table["mode"] == mode) & (table["removal"] == name)].set_index("method")
        assert {m: int(got.loc[m, "rank"]) for m in methods} == by_hand
    # the attributions that order by the model's own weights lead under the baseline
    base = table[(table["removal"] == "baseline")].set_index(["mode", "method"])
    assert base.loc[("insertion", "good"), "rank"] == 1
    assert base.loc[("insertion", "bad"), "rank"] == 4


def test_ties_share_their_average_rank_and_a_missing_method_is_an_error(two_evaluations):
    ev = two_evaluations["baseline"]
    tied = insdel.Evaluation.from_curves(
        methods=["a", "b", "c"], modes=("insertion",),
        curves={"insertion": np.stack([ev.curves["insertion"][:, 0]] * 2
                                      + [ev.curves["insertion"][:, 2]], axis=1)},
        random_curves={"insertion": ev.random_curves["insertion"]}, fx=ev.fx, fr=ev.fr,
        normalize=True)
    t = robustness_table({"x": tied})
    assert list(t["rank"]) == [1.5, 1.5, 3.0]
    with pytest.raises(ValueError, match="no evaluation of"):
        robustness_table({"x": tied, "y": ev})
    with pytest.raises(ValueError, match="non-empty mapping"):
        robustness_table({})


# -- Kendall τ -------------------------------------------------------------------------------------
def _table(rankings: dict[str, list[float]], mode: str = "insertion") -> pd.DataFrame:
    """A robustness table whose means are the given scores (methods m0, m1, ...)."""
    rows = []
    for name, scores in rankings.items():
        for i, s in enumerate(scores):
            rows.append({"mode": mode, "method": f"m{i}", "removal": name, "mean": float(s),
                         "std_error": 0.1, "n": 5, "n_units": 5, "rank": np.nan})
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def test_kendall_between_is_scipys_tau_b_for_every_pair_of_removals():
    scores = {"a": [5.0, 4.0, 3.0, 2.0, 1.0], "b": [4.0, 5.0, 3.0, 1.0, 2.0],
              "c": [1.0, 3.0, 3.0, 5.0, 2.0]}
    k = kendall_between(_table(scores))
    assert list(k.columns) == KENDALL_COLUMNS
    assert [(r.removal_a, r.removal_b) for r in k.itertuples()] == [("a", "b"), ("a", "c"),
                                                                     ("b", "c")]
    for r in k.itertuples():
        want = kendalltau(scores[r.removal_a], scores[r.removal_b])  # tau-b (ties in c)
        assert r.tau == pytest.approx(want.statistic, abs=1e-15)
        assert r.p_value == pytest.approx(want.pvalue, abs=1e-15)
        assert r.n_methods == 5
    # by hand: a and b disagree on 2 of the 10 pairs of methods: (8 - 2) / 10
    assert k["tau"].iloc[0] == pytest.approx(0.6)


def test_identical_rankings_give_one_and_reversed_ones_minus_one():
    k = kendall_between(_table({"a": [3.0, 2.0, 1.0, 0.5], "same": [30.0, 20.0, 10.0, 5.0],
                                "reversed": [0.0, 1.0, 2.0, 3.0]}))
    tau = {(r.removal_a, r.removal_b): r.tau for r in k.itertuples()}
    assert tau[("a", "same")] == 1.0
    assert tau[("a", "reversed")] == -1.0
    assert tau[("same", "reversed")] == -1.0
    # a constant ranking has no τ
    k = kendall_between(_table({"a": [3.0, 2.0, 1.0], "flat": [1.0, 1.0, 1.0]}))
    assert np.isnan(k["tau"].iloc[0])


def test_kendall_between_takes_evaluations_and_keeps_policies(two_evaluations):
    from_evs = kendall_between(two_evaluations)
    table = robustness_table(two_evaluations)
    pd.testing.assert_frame_equal(from_evs, kendall_between(table))
    assert list(from_evs["mode"]) == ["insertion", "deletion"]
    two = pd.concat([table.assign(policy="p"), table.assign(policy="q")], ignore_index=True)
    k = kendall_between(two)
    assert list(k["policy"]) == ["p", "p", "q", "q"]
    np.testing.assert_array_equal(k["tau"].to_numpy()[:2], k["tau"].to_numpy()[2:])


def test_kendall_intervals_resample_units_and_equal_scipys_tau_per_replicate(two_evaluations):
    """τ's interval: each replicate resamples the pairs (the same for both removals), the
    methods' means recomputed and scipy's τ-b between them; the percentiles of those."""
    got = kendall_intervals(two_evaluations, n_boot=60, seed=3)
    assert list(got.columns) == ["mode", "removal_a", "removal_b", "tau_low", "tau_high",
                                 "n_units"]
    rng = np.random.default_rng(3)
    counts = rng.multinomial(7, np.full(7, 1 / 7), size=60)
    ev_a, ev_b = two_evaluations["baseline"], two_evaluations["marginal"]
    for mode in ("insertion", "deletion"):
        taus = []
        for c in counts:
            ma = [np.repeat(ev_a.abc_array(m, mode), c).mean() for m in ev_a.methods]
            mb = [np.repeat(ev_b.abc_array(m, mode), c).mean() for m in ev_a.methods]
            taus.append(kendalltau(ma, mb).statistic)
        taus = np.asarray(taus)
        taus = taus[np.isfinite(taus)]
        row = got[got["mode"] == mode].iloc[0]
        assert (row["tau_low"], row["tau_high"]) == pytest.approx(
            tuple(np.percentile(taus, [2.5, 97.5])))
    same = kendall_intervals({"a": ev_a, "b": ev_a}, n_boot=30)
    assert (same["tau_low"] == 1).all() and (same["tau_high"] == 1).all()
    with pytest.raises(ValueError, match="non-empty mapping"):
        kendall_intervals({})


def test_rank_verdicts_are_each_removal_s_rank_intervals(two_evaluations):
    from insdel.verdicts import compare, rank_intervals

    v = rank_verdicts(two_evaluations, n_resamples=100)
    assert list(v.columns) == ["mode", "removal", "verdict", "ranks"] and len(v) == 4
    ev = two_evaluations["marginal"]
    V = np.stack([ev.abc_array(m, "deletion") for m in ev.methods], axis=1)
    r = rank_intervals(compare(V, ev.methods, n_resamples=100))
    row = v[(v["mode"] == "deletion") & (v["removal"] == "marginal")].iloc[0]
    assert row["verdict"] == "; ".join(r.verdicts())
    md = robustness_markdown(robustness_table(two_evaluations), verdicts=v)
    assert f"- deletion, marginal: {row['verdict']}." in md


def test_markdown_and_figure(two_evaluations, tmp_path):
    table = robustness_table(two_evaluations)
    text = robustness_markdown(table)
    assert "| Test mode | Method | baseline | marginal |" in text
    good = table[(table["mode"] == "insertion") & (table["method"] == "good")
                 & (table["removal"] == "baseline")].iloc[0]
    assert f"{good['mean']:.3f} ± {good['std_error']:.3f} (#{int(good['rank'])})" in text
    assert "| insertion | baseline / marginal |" in text
    from insdel import plotting

    fig = plotting.removal_robustness(table.assign(policy="p"))
    assert len(fig.axes) == 4  # two heat maps and their colour bars
    assert "τ(baseline, marginal)" in fig.axes[0].get_title()
    path = plotting.save_figure(fig, tmp_path / "r.png", dpi=40)
    assert path.stat().st_size > 0


# -- a run with several removals -------------------------------------------------------------------
DATA_SUFFIXES = (".parquet", ".npz", ".csv", ".md", ".png")


def _data_files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.suffix in DATA_SUFFIXES and "checkpoints" not in p.parts}


def _cfg(csv, **over):
    return small_cfg(csv, "rob", **over)


TWO = {"kinds": ["baseline", "marginal"], "marginal": {"n_references": 3}}


@pytest.fixture
def two_removal_run(csv, tmp_path):
    return runner.run_experiment(_cfg(csv, removal=TWO), tmp_path / "two")


def test_a_run_with_two_removals_writes_their_folders_and_the_report(two_removal_run):
    res = two_removal_run
    out = res.out
    for name in ("abc.parquet", "curves.npz", "summary.csv"):
        assert (out / "median" / "removal-marginal" / name).is_file()
    for name in ("removal_robustness.csv", "removal_robustness.md", "removal_kendall.csv"):
        assert (out / name).is_file()
    kendall = pd.read_csv(out / "removal_kendall.csv")
    assert {"tau_low", "tau_high", "n_units"} <= set(kendall.columns)
    assert (kendall["tau_low"] <= kendall["tau_high"]).all()
    assert "τ interval (bootstrap) |" in (out / "removal_robustness.md").read_text()
    assert "Each removal's ranking with its uncertainty" in (out / "removal_robustness.md"
                                                             ).read_text()
    assert res.robustness_verdicts is not None and set(res.robustness_verdicts["removal"]) == \
        {"baseline", "marginal"}
    assert not (out / "median" / "removal-baseline").exists()  # the primary is where it was
    marg = insdel.Evaluation.load(out / "median" / "removal-marginal")
    assert marg.removal["name"] == "marginal" and marg.removal["n_references"] == 3
    assert marg.removal["background_rows"] == res.dataset.X_train.shape[0]  # the training rows
    assert marg.removal["seed"] == 0                                        # the run's seed
    assert insdel.Evaluation.load(out / "median").removal is None           # baseline
    assert set(res.removal_evaluations["median"]) == {"baseline", "marginal"}
    assert res.evaluations["median"] is res.removal_evaluations["median"]["baseline"]
    table = pd.read_csv(out / "removal_robustness.csv")
    assert list(table.columns) == ["policy", *TABLE_COLUMNS]
    pd.testing.assert_frame_equal(
        table.drop(columns="policy"),
        robustness_table(res.removal_evaluations["median"]), check_dtype=False)
    summary = (out / "summary.md").read_text()
    assert summary.endswith((out / "removal_robustness.md").read_text())
    assert "- removal marginal (<policy>/removal-marginal/): revision = 1, how = random" in summary
    assert res.to_markdown() == summary
    m = json.loads((out / "manifest.json").read_text())
    assert [r["name"] for r in m["removals"]] == ["baseline", "marginal"]
    assert m["removals"][1]["folder"] == "removal-marginal" and not m["removals"][1]["primary"]
    assert m["removals"][1]["params"] == marg.removal
    assert "median/removal-marginal/curves.npz" in m["files"]
    assert "median/curves/removal-marginal" in m["compute"]["stages"]


def test_the_removals_never_share_a_checkpoint(two_removal_run):
    ck = two_removal_run.out / "checkpoints" / "median"
    keys = {name: (ck / f"removal-{name}" / "KEY").read_text().splitlines()[0]
            for name in ("baseline", "marginal")}
    assert keys["baseline"] != keys["marginal"]


def test_resume_recomputes_nothing_and_never_mixes_removals(csv, tmp_path, two_removal_run):
    out = tmp_path / "resumed"
    calls = [0]

    def interrupt():  # after each saved chunk: 2 attribution chunks, then baseline's curves
        calls[0] += 1
        if calls[0] == 3:
            raise KeyboardInterrupt

    cfg = _cfg(csv, removal=TWO)
    with pytest.raises(KeyboardInterrupt):
        runner.run_experiment(cfg, out, _interrupt=interrupt)
    assert not (out / "median" / "removal-marginal").exists()
    res = runner.run_experiment(cfg, out)
    st = res.manifest["compute"]["stages"]
    assert st["median/attributions/vanilla_grad"]["chunks_resumed"] == 2
    assert st["median/curves"]["chunks_resumed"] == 1 and st["median/curves"][
        "model_evaluations"] == 0
    assert st["median/curves/removal-marginal"]["chunks_resumed"] == 0
    a, b = _data_files(two_removal_run.out), _data_files(out)
    assert a.keys() == b.keys() and [k for k in a if a[k] != b[k]] == []
    # the same command again: nothing is computed
    again = runner.run_experiment(cfg, out).manifest["compute"]["stages"]
    assert all(v["chunks_resumed"] == 1 and v["model_evaluations"] == 0
               for k, v in again.items() if "/curves" in k)
    # another marginal (K = 2): its curves are recomputed, the baseline's are not
    other = runner.run_experiment(
        _cfg(csv, removal={**TWO, "marginal": {"n_references": 2}}), out)
    st = other.manifest["compute"]["stages"]
    assert st["median/curves"]["chunks_resumed"] == 1
    assert st["median/curves/removal-marginal"]["chunks_resumed"] == 0
    assert other.removal_evaluations["median"]["marginal"].removal["n_references"] == 2


def test_no_removal_table_is_byte_identical_to_baseline_alone(csv, tmp_path):
    plain = runner.run_experiment(_cfg(csv, figures={"enabled": True, "dpi": 30}),
                                  tmp_path / "plain")
    base = runner.run_experiment(_cfg(csv, figures={"enabled": True, "dpi": 30},
                                      removal={"kinds": ["baseline"]}), tmp_path / "base")
    a, b = _data_files(plain.out), _data_files(base.out)
    assert a.keys() == b.keys() and [k for k in a if a[k] != b[k]] == []
    assert not any("removal" in k for k in a)
    assert "- removal" not in (plain.out / "summary.md").read_text()
    assert plain.manifest["removals"] == base.manifest["removals"] == [
        {"name": "baseline", "primary": True, "folder": None,
         "params": {"name": "baseline", "revision": 1}}]
    assert plain.robustness is None and list(plain.removal_evaluations["median"]) == ["baseline"]


class _ColumnMean(removal.SampledRemoval):
    """A test's own fitted removal: a removed feature becomes its training mean."""

    name = "test_column_mean"

    def __init__(self, data, *, seed: int = 0):
        self.data = np.asarray(data, dtype=float)
        self.seed = seed
        self.n_draws = 1

    def params(self):
        from insdel._checkpoint import sha256_arrays

        return {**super().params(), "data_sha256": sha256_arrays(self.data)}

    def sample(self, X, keep, targets):
        return np.where(keep, X, self.data.mean(axis=0))[:, None, :]


@pytest.fixture
def column_mean():
    removal.register(_ColumnMean.name, _ColumnMean, overwrite=True)
    try:
        yield _ColumnMean
    finally:
        if _ColumnMean.name in removal.available():
            removal.unregister(_ColumnMean.name)


def test_a_registered_sampled_removal_gets_the_training_rows_and_a_primary_one_decomposes(
        csv, tmp_path, column_mean):
    kinds = {"kinds": ["test_column_mean", "baseline"]}
    res = runner.run_experiment(_cfg(csv, removal=kinds, decomposition={"n_pairs": 2}),
                                tmp_path / "own")
    ev = res.evaluations["median"]
    assert ev.removal["name"] == "test_column_mean" and ev.removal["seed"] == 0
    X_train = np.asarray(res.dataset.X_train, dtype=float)
    from insdel._checkpoint import sha256_arrays

    assert ev.removal["data_sha256"] == sha256_arrays(X_train)
    assert (res.out / "median" / "removal-baseline" / "curves.npz").is_file()
    # at the empty coalition every removed feature is its training mean
    np.testing.assert_allclose(ev.curves["insertion"][:, 0, 0],
                               insdel.as_model(res.model)(np.tile(X_train.mean(0), (1, 1)))[0],
                               rtol=1e-6)
    # the decomposition is of the primary removal's game, keyed by it
    direct = insdel.batch_decomposition(res.model, res.pairings["median"].X[:2],
                                        res.pairings["median"].R[:2],
                                        removal=column_mean(X_train))
    np.testing.assert_allclose(res.decompositions["median"]["best_abc_insertion"],
                               direct.best_abc(mode="insertion", normalize=True), rtol=1e-12)


def test_removal_n_random_sets_the_further_removals_random_orderings():
    """``[removal] n_random``: the further removals trace that many random orderings (the primary
    keeps evaluation.n_random), and it is part of their curves' checkpoint key."""
    from types import SimpleNamespace

    from insdel.runner.stages import curves as stage

    cfg = {"evaluation": {"n_random": 20}, "removal": {"kinds": ["baseline", "marginal"],
                                                       "n_random": 0}}
    p = SimpleNamespace(cfg=cfg)
    primary, other = SimpleNamespace(primary=True), SimpleNamespace(primary=False)
    assert stage.n_random(p, primary) == 20 and stage.n_random(p, other) == 0
    cfg["removal"]["n_random"] = None
    assert stage.n_random(p, other) == 20
