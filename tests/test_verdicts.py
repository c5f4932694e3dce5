"""insdel.verdicts against independent computations (scipy, statsmodels, brute force), its
calibration on null data and its errors."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from insdel.verdicts import (
    block_verdicts,
    compare,
    equivalence,
    holm,
    plan,
    power_of,
    rank_intervals,
    simulated_power,
    simulated_units,
    unit_means,
    units_needed,
    variance_components,
)

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _block(G=40, K=4, shift=(0.0, 0.0, 0.4, 0.9), seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(G, K)) + np.asarray(shift[:K]) + rng.normal(size=(G, 1))


def test_compare_matches_scipy_ttest_rel_and_statsmodels_holm():
    from statsmodels.stats.multitest import multipletests

    Y = _block()
    c = compare(Y, list("abcd"), n_resamples=200)
    ps = []
    for k, (a, b) in enumerate(c.pairs):
        i, j = "abcd".index(a), "abcd".index(b)
        r = stats.ttest_rel(Y[:, i], Y[:, j])
        assert c.t[k] == pytest.approx(r.statistic, rel=1e-10)
        assert c.p[k] == pytest.approx(r.pvalue, rel=1e-10)
        d = Y[:, i] - Y[:, j]
        assert c.d_z[k] == pytest.approx(d.mean() / d.std(ddof=1))
        lo, hi = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
        assert (c.ci_low[k], c.ci_high[k]) == pytest.approx((lo, hi))
        ps.append(r.pvalue)
    np.testing.assert_allclose(c.p_holm, multipletests(ps, method="holm")[1], rtol=1e-12)
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03, 0.5]),
                               multipletests([0.01, 0.04, 0.03, 0.5], method="holm")[1])
    t = c.table()
    assert list(t.columns[:3]) == ["a", "b", "mean"] and len(t) == 6
    assert (t["sci_low"] <= t["ci_low"]).all() and (t["sci_high"] >= t["ci_high"]).all()


def test_clusters_average_pairs_per_unit():
    Y = _block(G=20)
    V = np.repeat(Y, 2, axis=0) + np.tile([[0.1], [-0.1]], (20, 1))  # a pair and its mirror
    cl = np.repeat(np.arange(20), 2)
    np.testing.assert_allclose(unit_means(V, cl), Y)
    a, b = compare(V, clusters=cl, n_resamples=100), compare(Y, n_resamples=100)
    np.testing.assert_allclose(a.p, b.p)
    assert a.n_units == 20 and a.n_pairs == 40


def _brute_max_t(D):
    """Every sign vector of the centred differences, the largest studentised |t| of each."""
    G = D.shape[0]
    e = D - D.mean(axis=0)
    out = []
    for s in itertools.product([1.0, -1.0], repeat=G):
        x = np.asarray(s)[:, None] * e
        out.append(np.max(np.abs(x.mean(0) / (x.std(0, ddof=1) / np.sqrt(G)))))
    return np.array(out)


def test_max_t_equals_the_brute_force_sign_flip_distribution():
    Y = _block(G=9, K=3, shift=(0.0, 0.8, 1.6), seed=3)
    c = compare(Y, n_resamples=2 ** 9)
    assert c.exact and c.n_resamples == 2 ** 9
    D = np.stack([Y[:, i] - Y[:, j] for i, j in [(0, 1), (0, 2), (1, 2)]], axis=1)
    mx = _brute_max_t(D)
    assert c.crit == pytest.approx(np.quantile(mx, 0.95, method="higher"))
    t = np.abs(D.mean(0) / (D.std(0, ddof=1) / 3.0))
    # step-down by hand: the largest |t| against all three, the next against the other two ...
    order = np.argsort(-t)
    p = []
    for r, k in enumerate(order):
        rest = order[r:]
        G = D.shape[0]
        e = D[:, rest] - D[:, rest].mean(0)
        m = []
        for s in itertools.product([1.0, -1.0], repeat=G):
            x = np.asarray(s)[:, None] * e
            m.append(np.max(np.abs(x.mean(0) / (x.std(0, ddof=1) / 3.0))))
        p.append(np.mean(np.asarray(m) >= t[k] * (1 - 1e-12)))
    p = np.maximum.accumulate(p)
    expect = np.empty(3)
    expect[order] = p
    np.testing.assert_allclose(c.p_maxt, expect)


def test_bootstrap_max_t_intervals_are_wider_than_unadjusted():
    c = compare(_block(), resampling="bootstrap", n_resamples=500)
    assert c.crit > stats.t.ppf(0.975, 39) and not c.exact
    assert (c.p_maxt >= c.p - 1e-12).all()


def test_verdicts_name_the_better_method_and_ties():
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(80, 3)) * 0.2 + [0.0, 0.0, 1.0]
    c = compare(pd.DataFrame(Y, columns=["ig", "ks", "best"]), n_resamples=300)
    v = c.verdicts()
    assert "best > ig (p_holm < 0.001)" in v and "best > ks (p_holm < 0.001)" in v
    assert any(s.startswith("ig and ks cannot be told apart (p_holm = ") for s in v)
    lower = compare(pd.DataFrame(Y, columns=["ig", "ks", "best"]), n_resamples=300,
                    higher_is_better=False)
    assert "ig > best (p_holm < 0.001)" in lower.verdicts()
    assert c.better()[2, 0] and not c.better()[0, 1]


def test_rank_intervals_from_the_simultaneous_intervals():
    rng = np.random.default_rng(1)
    Y = rng.normal(size=(100, 4)) * 0.3 + [2.0, 1.0, 1.0, 0.0]
    c = compare(Y, list("abcd"), n_resamples=500)
    r = rank_intervals(c)
    t = r.table().set_index("method")
    assert (t.loc["a", "rank_low"], t.loc["a", "rank_high"]) == (1, 1)
    assert (t.loc["b", "rank_low"], t.loc["b", "rank_high"]) == (2, 3)
    assert (t.loc["d", "rank_low"], t.loc["d", "rank_high"]) == (4, 4)
    assert r.verdicts()[0] == "a is first with 95 % confidence"
    assert r.top_set(2) == (["a"], ["a", "b", "c"]) or r.top_set(2) == (["a"], ["a", "c", "b"])
    tied = rank_intervals(compare(Y[:, 1:3], ["b", "c"], n_resamples=200))
    assert tied.verdicts()[0].startswith("b and c cannot be told apart")
    with pytest.raises(TypeError, match="Comparisons"):
        rank_intervals(Y)


def test_rank_intervals_by_hand():
    """Neuhof & Benjamini's construction on a fixed set of simultaneous intervals."""
    c = compare(_block(G=10), list("abcd"), n_resamples=64)
    # a > b surely; c, d undecided against all; b < d surely
    c.sci_low = np.array([0.1, -1, -1, -1, -2.0, -1])  # pairs ab ac ad bc bd cd
    c.sci_high = np.array([1.0, 1, 1, 1, -0.1, 1])
    r = rank_intervals(c)
    assert r.low.tolist() == [1, 3, 1, 1] and r.high.tolist() == [3, 4, 4, 3]


def test_tost_matches_statsmodels_ttost_paired():
    from statsmodels.stats.weightstats import ttost_paired

    Y = _block(G=50, shift=(0.0, 0.05, 0, 0))
    e = equivalence(Y, "a", "b", margin=0.5, methods=list("abcd"))
    p, lower, upper = ttost_paired(Y[:, 0], Y[:, 1], -0.5, 0.5)
    assert e.p == pytest.approx(p) and e.p_lower == pytest.approx(lower[1])
    assert e.p_upper == pytest.approx(upper[1])
    assert e.equivalent and e.verdict().startswith("a is equivalent to b within ±0.5 (p = ")
    rel = equivalence(Y, "a", "b", margin=0.1, methods=list("abcd"), relative=True)
    spread = np.sqrt((Y[:, 0].var(ddof=1) + Y[:, 1].var(ddof=1)) / 2)
    assert rel.delta == pytest.approx(0.1 * spread)
    assert "not shown equivalent" in equivalence(Y, "a", "d", margin=0.05,
                                                 methods=list("abcd")).verdict()


def test_planner_matches_statsmodels_ttest_power():
    from statsmodels.stats.power import TTestPower

    for es, pw, a, m in [(0.3, 0.8, 0.05, 1), (0.5, 0.9, 0.05, 6), (0.2, 0.8, 0.01, 1)]:
        n = units_needed(margin=es, sd=1.0, power=pw, alpha=a, n_comparisons=m)
        ref = TTestPower().solve_power(effect_size=es, alpha=a / m, power=pw,
                                       alternative="two-sided")
        assert n == int(np.ceil(ref))
        assert power_of(n, margin=es, sd=1.0, alpha=a, n_comparisons=m) == pytest.approx(
            TTestPower().power(effect_size=es, nobs=n, alpha=a / m), abs=1e-6)
    Y = _block(G=60)
    cl = np.arange(60)
    V = np.repeat(Y, 2, axis=0)
    p = plan(V, "a", "c", margin=0.4, methods=list("abcd"), clusters=np.repeat(cl, 2))
    d = Y[:, 0] - Y[:, 2]
    assert p.sd == pytest.approx(d.std(ddof=1)) and p.n_pairs == 2 * p.n_units
    assert p.n_units == units_needed(margin=0.4, sd=p.sd)
    assert "independent units" in p.text()


def test_planner_agrees_with_its_simulation():
    rng = np.random.default_rng(2)
    d = rng.normal(size=400)
    n = units_needed(margin=0.3, sd=d.std(ddof=1))
    assert simulated_power(d, n, margin=0.3, n_sim=2000) == pytest.approx(0.8, abs=0.04)
    sim = simulated_units(d, margin=0.3, n_sim=1000, start=n)
    assert abs(sim - n) <= 0.15 * n


def test_variance_components_match_statsmodels_anova():
    import statsmodels.api as sm
    from statsmodels.formula.api import ols

    rng = np.random.default_rng(3)
    P, R, S = 30, 4, 5
    a = rng.normal(size=(P, 1, 1)) * 1.0
    b = rng.normal(size=(1, R, 1)) * 0.3
    c = rng.normal(size=(1, 1, S)) * 0.6
    y = a + b + c + rng.normal(size=(P, R, S)) * 0.5
    idx = np.indices((P, R, S)).reshape(3, -1)
    df = pd.DataFrame({"pair": idx[0], "reference_draw": idx[1], "seed": idx[2],
                       "score": y.reshape(-1)})
    vc = variance_components(df)
    aov = sm.stats.anova_lm(ols("score ~ C(pair) + C(reference_draw) + C(seed)", df).fit())
    ms = aov["sum_sq"] / aov["df"]
    comp = vc.components.set_index("factor")
    assert comp.loc["residual", "variance"] == pytest.approx(ms["Residual"])
    for f, n_f, key in [("pair", P, "C(pair)"), ("seed", S, "C(seed)")]:
        expect = max(0.0, (ms[key] - ms["Residual"]) / (P * R * S / n_f))
        assert comp.loc[f, "variance"] == pytest.approx(expect)
    assert comp["share"].sum() == pytest.approx(1.0)
    assert "Increase" in vc.advice() and vc.se > 0
    with pytest.raises(ValueError, match="has no score"):
        variance_components(df.iloc[1:])
    with pytest.raises(ValueError, match="holds 2 scores"):
        variance_components(pd.concat([df, df.iloc[:1]]))
    with pytest.raises(ValueError, match="at least 2 crossed"):
        variance_components(df, factors=["pair"])


def test_block_verdicts_markdown():
    Y = _block(G=60, shift=(0.0, 0.02, 0.5, 1.0))
    text = block_verdicts(Y, ["integrated_gradients", "kernel_shap", "lime", "best"],
                          n_resamples=200, title="Insertion")
    assert text.startswith("- **Insertion.** Significant orderings (Holm")
    assert "Equivalence (TOST): integrated_gradients " in text
    assert "Ranks (95 % simultaneous intervals" in text
    assert "No verdicts: scores: 1 independent unit" in block_verdicts(Y[:1], list("abcd"))


@pytest.mark.parametrize("call, match", [
    (lambda Y: compare(Y[:1]), "at least 2 units"),
    (lambda Y: compare(Y[:, :1]), "at least 2"),
    (lambda Y: compare(np.where(np.arange(4) == 2, np.nan, Y)), "NaN"),
    (lambda Y: compare(Y, list("abc")), "3 names for the 4 columns"),
    (lambda Y: compare(Y, list("aabc")), "repeated"),
    (lambda Y: compare(Y, clusters=np.zeros(3)), "one unit id per pair"),
    (lambda Y: compare(np.repeat(Y[:1], 4, axis=0), clusters=np.zeros(4)), "at least 2 units"),
    (lambda Y: equivalence(Y, "m0", "m1", margin=-0.1), "margin must be > 0"),
    (lambda Y: equivalence(Y, "m0", "m1", margin=0.0), "margin must be > 0"),
    (lambda Y: equivalence(Y, "m0", "zz", margin=0.1), "b: unknown method 'zz'"),
    (lambda Y: equivalence(Y, "m0", "m0", margin=0.1), "same method"),
    (lambda Y: equivalence(Y[:1], "m0", "m1", margin=0.1), "at least 2 units"),
    (lambda Y: plan(Y, "m0", "m1", margin=0.0), "margin must be > 0"),
])
def test_bad_input_is_a_clear_error(call, match):
    with pytest.raises(ValueError, match=match):
        call(_block(G=12))


def test_bad_options_are_errors():
    Y = _block(G=12)
    with pytest.raises(ValueError, match="resampling must be one of"):
        compare(Y, resampling="permute")
    with pytest.raises(ValueError, match="level"):
        compare(Y, level=1.0)
    with pytest.raises(TypeError, match="n_resamples"):
        compare(Y, n_resamples=1.5)
    with pytest.raises(ValueError, match="adjust must be one of"):
        compare(Y, n_resamples=10).verdicts("bonferroni")


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))
    try:
        import verdicts as bench_verdicts

        yield bench_verdicts
    finally:
        sys.path.remove(str(BENCH))


def test_calibration_on_synthetic_leaderboards(bench):
    """300 leaderboards (the bench runs 1,000): FWER of Holm and max-T near alpha (a loose band:
    the sampling error of 300 is about 0.013), rank intervals cover."""
    cal = bench.calibration(300, 40, n_resamples=300, seed=1)
    assert 0.01 <= cal["fwer_holm"] <= 0.09
    assert 0.015 <= cal["fwer_maxt"] <= 0.09
    assert cal["rank_coverage"] >= 0.9


def test_complete_null_fwer():
    rng = np.random.default_rng(5)
    hits = {"holm": 0, "maxt": 0}
    for b in range(300):
        Y = rng.normal(size=(30, 3)) + rng.normal(size=(30, 1))
        c = compare(Y, n_resamples=300, seed=b)
        for k in hits:
            hits[k] += bool((c.adjusted(k) < 0.05).any())
    assert 0.01 <= hits["holm"] / 300 <= 0.09 and 0.015 <= hits["maxt"] / 300 <= 0.09


def test_critical_difference_bars_join_the_methods_that_cannot_be_told_apart():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from insdel.plotting import cannot_tell_apart, critical_difference

    methods = list("abcde")
    better = np.zeros((5, 5), dtype=bool)
    better[0, 2:] = True   # a better than c, d, e
    better[1, 3:] = True   # b better than d, e
    better[2, 4] = True    # c better than e
    assert cannot_tell_apart(methods, better, methods) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    better[2, 4] = False
    assert cannot_tell_apart(methods, better, methods) == [(0, 1), (1, 2), (2, 4)]
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(60, 4)) * 0.3 + [0.0, 0.02, 1.0, 1.0]
    c = compare(Y, ["ig", "ks", "dl", "ex"], n_resamples=200)
    assert [v for v in c.verdicts() if "cannot" in v] == [
        "dl and ex cannot be told apart (p_holm = 0.094)",
        "ig and ks cannot be told apart (p_holm = 0.269)"]
    ax = critical_difference(c)
    bars = [ln for ln in ax.collections if ln.get_linewidth()[0] == 3]
    assert len(bars) == 2  # {dl, ex} and {ig, ks}
    assert {"ex (1)", "dl (2)", "ks (3)", "ig (4)"} <= {t.get_text() for t in ax.texts}
    plt.close(ax.figure)


def test_critical_difference_from_the_saved_table_matches_the_comparisons():
    """comparisons_from_table (a run's comparisons.csv) gives the same ranks, decisions and
    level as the Comparisons it was written from; a table missing a pair or mixing blocks is a
    ValueError."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from insdel.plotting import (
        comparisons_from_table,
        critical_difference,
        critical_difference_figure,
    )

    rng = np.random.default_rng(0)
    Y = rng.normal(size=(60, 4)) * 0.3 + [0.0, 0.02, 1.0, 1.0]
    c = compare(Y, ["ig", "ks", "dl", "ex"], n_resamples=200, level=0.9)
    t = comparisons_from_table(c.table())
    assert t.methods == c.methods and t.level == pytest.approx(0.9) and t.n_units == 60
    np.testing.assert_allclose(t.means - t.means.mean(), c.means - c.means.mean(), atol=1e-12)
    for adjust in ("none", "holm", "maxt"):
        np.testing.assert_array_equal(t.better(adjust), c.better(adjust))
    bars = []
    for src in (c, c.table()):
        ax = critical_difference(src)
        bars.append(len([ln for ln in ax.collections if ln.get_linewidth()[0] == 3]))
        plt.close(ax.figure)
    assert bars == [1, 1]  # at α = 0.1 only ig and ks cannot be told apart
    fig = critical_difference_figure({"one": c, "two": c.table()})
    assert len(fig.axes) == 2 and fig.axes[0].get_title().startswith("one\n")
    plt.close(fig)
    with pytest.raises(ValueError, match="each of the 6 pairs"):
        comparisons_from_table(c.table().iloc[:5])
    with pytest.raises(ValueError, match="mixes blocks"):
        comparisons_from_table(c.table().assign(n_units=[60, 61, 60, 60, 60, 60]))
    with pytest.raises(ValueError, match="lacks columns"):
        comparisons_from_table(c.table().drop(columns="p_holm"))
    with pytest.raises(ValueError, match="empty"):
        critical_difference_figure({})


def test_planner_against_simulated_leaderboards(bench):
    """The bench's planner check, smaller: the pairs planned from a pilot leaderboard against the
    pairs whose simulated leaderboards (same generator) reach the power (target ±15 %)."""
    pc = bench.planner_check(n_sim=300, pilot_units=400)
    assert 0.85 <= pc["ratio"] <= 1.15


def test_bench_script_runs_tiny(bench, capsys):
    assert bench.main(["--tiny"]) == 0
    assert "| FWER, Holm |" in capsys.readouterr().out


def test_a_run_prints_the_verdicts_with_the_configured_margin(samples, tmp_path):
    """[verdicts] reaches the run: on the real Bangalore file's 60-row sample the summary
    under the table holds the Holm orderings, the rank intervals and IG's equivalence to Kernel
    SHAP within the absolute margin given (±0.5), and the manifest records the table."""
    import json

    from insdel import runner

    cfg = {"name": "v", "seed": 0,
           "data": {"recipe": "bangalore", "options": {"path": str(samples /
                                                                  "bangalore_head60.csv")}},
           "model": {"params": {"hidden": [8], "dropout": 0.0, "lr": 3e-3}, "max_epochs": 2},
           "targets": {"n": 12}, "policies": [{"spec": {"policy": "median"}}],
           "methods": {"names": ["kernel_shap", "integrated_gradients", "vanilla_grad"],
                       "options": {"kernel_shap": {"n_samples": 200},
                                   "integrated_gradients": {"n_steps": 16}}},
           "evaluation": {"n_random": 1, "targets_per_chunk": 6},
           "verdicts": {"margin": 0.5, "relative": False, "adjust": "maxt",
                        "n_resamples": 200},
           "figures": {"enabled": False}}
    res = runner.run_experiment(cfg, tmp_path / "run", progress=False)
    md = (res.out / "median" / "summary.md").read_text()
    assert "Significant orderings (max-T" in md and "simultaneous intervals" in md
    assert "integrated_gradients is" in md and "kernel_shap within ±0.5 (p" in md
    assert "spread" not in md.split("Equivalence (TOST)")[1].split("\n")[0]
    man = json.loads((res.out / "manifest.json").read_text())
    assert man["config"]["verdicts"] == {"margin": 0.5, "relative": False, "level": 0.95,
                                         "adjust": "maxt", "n_resamples": 200}
    assert (res.out / "median" / "comparisons.csv").is_file()


def test_surely_better_by_hand_and_by_the_adjusted_tests():
    from insdel.verdicts.ranks import surely_better

    c = compare(_block(G=10), list("abcd"), n_resamples=64)
    c.sci_low = np.array([0.1, -1, -1, -1, -2.0, -1])  # pairs ab ac ad bc bd cd
    c.sci_high = np.array([1.0, 1, 1, 1, -0.1, 1])
    S = surely_better(c)
    assert {(int(i), int(j)) for i, j in np.argwhere(S)} == {(0, 1), (3, 1)}  # a > b, d > b
    for adjust in ("holm", "none"):
        np.testing.assert_array_equal(surely_better(c, adjust), c.better(adjust))
    with pytest.raises(ValueError, match="adjust"):
        surely_better(c, "bonferroni")


def test_summary_text_and_equivalence_as_dict():
    Y = _block()
    c = compare(Y, list("abcd"), n_resamples=200)
    text = c.summary_text()
    assert text.startswith(f"Verdicts at α = {c.alpha:g} (paired t tests, Holm-adjusted; 6 "
                           "comparisons over 40 independent units): ")
    assert all(v in text for v in c.verdicts("holm"))
    assert "max-T (" in c.summary_text("maxt") and "unadjusted" in c.summary_text("none")
    e = equivalence(_block(G=50, shift=(0.0, 0.05, 0, 0)), "a", "b", margin=0.5,
                    methods=list("abcd"))
    d = e.as_dict()
    assert d["a"] == "a" and d["b"] == "b" and d["p"] == e.p
    assert d["equivalent"] == e.equivalent and d["verdict"] == e.verdict()


def test_as_block_checks_and_averages_units():
    from insdel.verdicts._block import as_block

    V = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]])
    blk = as_block(pd.DataFrame(V, columns=["ig", "ks"]), clusters=[0, 0, 1])
    assert blk.methods == ["ig", "ks"] and blk.n_pairs == 3 and blk.n_units == 2
    np.testing.assert_array_equal(blk.Y, [[2.0, 3.0], [5.0, 7.0]])  # a unit's mean
    assert blk.index("ks") == 1
    with pytest.raises(ValueError, match=r"baseline: unknown method 'x'; the block holds"):
        blk.index("x", "baseline")
    assert as_block(V).methods == ["m0", "m1"]
    np.testing.assert_array_equal(as_block(V, higher_is_better=False).Y, -V)
    bad = {"3 names for the 2 columns": dict(methods=["a", "b", "c"]),
           "repeated names": dict(methods=["a", "a"]),
           "a comparison needs at least 3": dict(min_methods=3),
           r"one unit id per pair, shape \(3,\)": dict(clusters=[0, 1]),
           "1 independent unit": dict(clusters=[4, 4, 4])}
    for why, kw in bad.items():
        with pytest.raises(ValueError, match=why):
            as_block(V, **kw)
