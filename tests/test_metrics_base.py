"""insdel.metrics: the shared hybrid cache, the registry, evaluate_metrics, runs and leaderboard."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import insdel
from insdel import metrics as M
from insdel.game import as_game
from insdel.groups import Groups
from insdel.hybrids import hybrid
from insdel.metrics.base import HybridCache, MetricContext, rank_of, top_units


class Counting:
    def __init__(self, w):
        self.w = w
        self.rows = 0

    def __call__(self, Z):
        self.rows += Z.shape[0]
        return np.tanh(Z @ self.w) + Z[:, 0] * Z[:, -1]


def _pairs(B=12, n=6, seed=0, same=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(B, n))
    R = X + rng.normal(size=(B, n))
    R[:, :same] = X[:, :same]          # features outside D
    return X, R, rng


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 9), st.integers(1, 12))
def test_cache_values_equal_brute_force_hybrids(seed, n, K):
    X, R, rng = _pairs(B=5, n=n, seed=seed, same=min(2, n - 1))
    f = Counting(rng.normal(size=n))
    ctx = MetricContext(f, X, R)
    masks = rng.random((5, K, n)) < 0.5
    got = ctx.values(masks)
    want = np.array([[f(hybrid(X[b], R[b], masks[b, k])[None])[0] for k in range(K)]
                     for b in range(5)])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    # asking again evaluates nothing new
    before = ctx.stats["evaluated"]
    np.testing.assert_array_equal(ctx.values(masks), got)
    assert ctx.stats["evaluated"] == before


def test_each_distinct_hybrid_is_evaluated_once_across_calls():
    X, R, rng = _pairs(B=8, n=5, same=2)
    f = Counting(rng.normal(size=5))
    ctx = MetricContext(f, X, R)
    a = rng.random((8, 30, 5)) < 0.5
    b = rng.random((8, 30, 5)) < 0.5
    ctx.values(a)
    ctx.values(b)
    # distinct canonical sets (S ∩ D) per pair over both requests
    canon = np.concatenate([a, b], axis=1) & (X != R)[:, None, :]
    distinct = sum(len({tuple(r) for r in canon[i]}) for i in range(8))
    assert f.rows == distinct == ctx.stats["evaluated"]
    assert ctx.stats["requested"] == 8 * 60


def test_groups_move_together_and_fx_fr():
    X, R, rng = _pairs(B=4, n=6, same=0)
    g = Groups.from_labels([0, 0, 1, 2, 2, 2])
    f = Counting(rng.normal(size=6))
    ctx = MetricContext(f, X, R, groups=g)
    unit_mask = np.array([[True, False, True]] * 4)
    col_mask = g.expand(unit_mask)
    np.testing.assert_allclose(ctx.values(unit_mask), f(np.where(col_mask, X, R)), atol=1e-12)
    np.testing.assert_allclose(ctx.fx, f(X), atol=1e-12)
    np.testing.assert_allclose(ctx.fr, f(R), atol=1e-12)
    np.testing.assert_allclose(ctx.removed(unit_mask), f(np.where(col_mask, R, X)), atol=1e-12)


def test_rank_of_and_top_units():
    A = np.array([[0.5, -2.0, 1.0, 0.0]])
    np.testing.assert_array_equal(rank_of(A, order="absolute"), [[1, 2, 0, 3]])
    np.testing.assert_array_equal(rank_of(A, order="signed"), [[2, 0, 3, 1]])
    np.testing.assert_array_equal(rank_of(A, order="ascending"), [[1, 3, 0, 2]])
    np.testing.assert_array_equal(rank_of(A, order="least"), [[3, 0, 2, 1]])
    t = top_units(rank_of(A, order="absolute"), [0, 2, 4])
    np.testing.assert_array_equal(t[0], [[0, 0, 0, 0], [0, 1, 1, 0], [1, 1, 1, 1]])
    with pytest.raises(ValueError, match="order: unknown ordering"):
        rank_of(A, order="morf")


def test_insdel_family_equals_insdel_curves_and_evaluate():
    X, R, rng = _pairs(B=20, n=7, same=1)
    f = Counting(rng.normal(size=7))
    A = rng.normal(size=(20, 7))
    ins = insdel.abc(insdel.curves(f, X, R, A, mode="insertion"), mode="insertion")
    dele = insdel.abc(insdel.curves(f, X, R, A, mode="deletion"), mode="deletion")
    np.testing.assert_allclose(M.build("insertion_abc")(f, X, R, A), ins, atol=1e-12)
    np.testing.assert_allclose(M.build("deletion_abc")(f, X, R, A), dele, atol=1e-12)
    c = insdel.curves(f, X, R, A, mode="insertion", step=3)
    pos = insdel.groups.positions(7, step=3)
    np.testing.assert_allclose(M.build("insertion_abc", step=3)(f, X, R, A),
                               insdel.abc(c, mode="insertion", positions=pos, m=7), atol=1e-12)
    np.testing.assert_allclose(M.build("insertion_auc")(f, X, R, A),
                               insdel.auc(insdel.curves(f, X, R, A), normalize=True), atol=1e-12)


def test_evaluate_metrics_shares_the_cache_and_tabulates():
    X, R, rng = _pairs(B=16, n=6, same=1)
    f = Counting(rng.normal(size=6))
    atts = {"a": rng.normal(size=(16, 6)), "b": rng.normal(size=(16, 6))}
    res = M.evaluate_metrics(f, X, R, atts, metrics=["insertion_abc", "deletion_abc",
                                                     "insertion_auc", "deletion_auc"])
    # AUC and ABC need the same curve points: every model row serves several metrics
    assert res.stats["requested"] > 2 * res.stats["evaluated"]
    assert f.rows == res.stats["evaluated"] == res.stats["model_rows"]
    assert set(res.scores.columns) == {"pair", "method", "metric", "value"}
    assert len(res.scores) == 16 * 2 * 4
    s = res.summary()
    assert {"mean", "std_error", "n", "n_nan", "higher_is_better"} <= set(s.columns)
    md = res.to_markdown()
    assert "insertion_abc ↑" in md and "| a |" in md
    r = res.ranks()
    assert set(r.index) == {"a", "b"} and r.shape[1] == 4
    for name in ("insertion_abc", "deletion_abc"):
        one = M.build(name)(f, X, R, atts["a"])
        np.testing.assert_allclose(
            res.scores.query("metric == @name and method == 'a'")["value"], one, atol=1e-12)


def test_evaluate_metrics_counts_its_own_model_rows_of_a_model_that_counted_before():
    """``stats['model_rows']`` are the rows this call evaluated, not a Model's count so far."""
    X, R, rng = _pairs(B=8, n=4, same=1)
    f = insdel.as_model(Counting(rng.normal(size=4)))
    f(X)  # rows evaluated before the metrics
    res = M.evaluate_metrics(f, X, R, {"a": rng.normal(size=(8, 4))},
                             metrics=["insertion_abc"])
    assert res.stats["model_rows"] == res.stats["evaluated"] == f.n_evals - 8


def test_registry_errors_name_the_problem():
    assert {"insertion_abc", "deletion_abc"} <= set(M.available())
    assert M.available("insdel") == ["deletion_abc", "deletion_auc", "insertion_abc",
                                     "insertion_auc"]
    with pytest.raises(ValueError, match="Did you mean 'insertion_abc'"):
        M.build("insertion_abd")
    with pytest.raises(ValueError, match="valid options: "):
        M.build("insertion_abc", nope=1)
    with pytest.raises(ValueError, match="order: unknown ordering"):
        M.build("insertion_abc", order="morf")
    cat = M.catalogue()
    assert {"metric", "family", "source", "higher_is_better", "options"} <= set(cat.columns)
    X, R, rng = _pairs(B=3, n=4)
    with pytest.raises(ValueError, match="non-empty mapping"):
        M.evaluate_metrics(np.sum, X, R, {})
    with pytest.raises(ValueError, match="more than once"):
        M.evaluate_metrics(lambda Z: Z.sum(1), X, R, {"a": X}, metrics=["insertion_abc"] * 2)
    with pytest.raises(ValueError, match=r"attributions\['a'\]"):
        M.evaluate_metrics(lambda Z: Z.sum(1), X, R, {"a": X[:2]}, metrics=["insertion_abc"])


def test_cache_rejects_bad_masks():
    X, R, _ = _pairs(B=3, n=4)
    cache = HybridCache(as_game(lambda Z: Z.sum(1), X, R))
    with pytest.raises(ValueError, match="masks must have shape"):
        cache.values(np.ones((3, 2, 5), bool))


def test_cache_old_spelling_warns_and_gives_the_same_values():
    X, R, rng = _pairs(B=4, n=5)
    f = lambda Z: np.tanh(Z).sum(1)  # noqa: E731
    masks = rng.random((4, 3, 5)) < 0.5
    with pytest.warns(DeprecationWarning, match="HybridCache"):
        old = HybridCache(insdel.as_model(f), X, R, None)
    np.testing.assert_array_equal(old.values(masks),
                                  HybridCache(as_game(f, X, R)).values(masks))
    with pytest.raises(TypeError, match="game only"):
        HybridCache(as_game(f, X, R), R)


def test_context_takes_a_game():
    X, R, rng = _pairs(B=4, n=5)
    f = lambda Z: np.tanh(Z).sum(1)  # noqa: E731
    A = rng.normal(size=(4, 5))
    m = M.build("insertion_abc")
    ctx = MetricContext(as_game(f, X, R), None, None)
    np.testing.assert_array_equal(m.compute(ctx, A), m(f, X, R, A))
    np.testing.assert_array_equal(ctx.R, R)


TOML = """
name = "tiny-metrics"
seed = {seed}
[data]
recipe = "dielectron_sim"
[data.options]
n_events = 800
[model]
preset = "quick_cern"
max_epochs = 1
[targets]
n = 12
[[policies]]
spec = "average"
[methods]
names = ["integrated_gradients", "vanilla_grad"]
[methods.options.integrated_gradients]
n_steps = 8
[metrics]
names = ["insertion_abc", "deletion_auc"]
[metrics.options.insertion_abc]
order = "absolute"
[figures]
enabled = false
"""


def test_run_with_metrics_table_and_leaderboard(tmp_path):
    runs = []
    for seed in (1, 2):
        p = tmp_path / f"m{seed}.toml"
        p.write_text(TOML.format(seed=seed))
        runs.append(insdel.run_experiment(p, tmp_path / f"run{seed}", progress=False,
                                          verbose=False))
    outs = [r.out for r in runs]
    res = runs[0]
    df = pd.read_parquet(outs[0] / "average" / "metrics.parquet")
    assert set(df["metric"]) == {"insertion_abc", "deletion_auc"}
    assert set(df["method"]) == {"integrated_gradients", "vanilla_grad", "random"}
    assert df["higher_is_better"].all()
    # the metric equals the same metric computed directly on the saved pairs
    X, R = res.pairings["average"].X, res.pairings["average"].R
    A = np.load(outs[0] / "average" / "attributions.npz")["integrated_gradients"]
    direct = M.build("insertion_abc", order="absolute")(res.model, X, R, A)
    np.testing.assert_allclose(df.query("metric == 'insertion_abc' and method == "
                                        "'integrated_gradients'")["value"], direct, atol=1e-9)
    assert "## Metrics, policy average" in (outs[0] / "summary.md").read_text()
    # the agreement of the metrics: each tau with its bootstrap interval over the units, in words
    agree = pd.read_csv(outs[0] / "average" / "metric_agreement.csv")
    assert {"tau_low", "tau_high", "n_units"} <= set(agree.columns)
    md = (outs[0] / "average" / "metrics.md").read_text()
    assert "bootstrap interval over the independent units" in md
    assert "insertion_abc (interval" in md or "insertion_abc (95 % bootstrap" in md
    assert res.metrics is not None and "## Metrics" in res.to_markdown()
    from insdel.leaderboard import leaderboard

    lb = leaderboard(outs, n_boot=50)
    assert {"insertion_abc", "deletion_auc", "insertion"} <= set(lb.overall["metric"])
    assert "insertion_abc" in lb.to_markdown()


@pytest.mark.parametrize("patch, match", [
    ({"names": ["insertion_abd"]}, "did you mean 'insertion_abc'"),
    ({"names": ["insertion_abc"], "options": {"insertion_abc": {"ordr": "absolute"}}},
     "metrics.options.insertion_abc.ordr"),
    ({"names": ["insertion_abc"], "options": {"deletion_abc": {}}},
     "metrics.options.deletion_abc is given"),
    ({"names": ["insertion_abc"], "options": {"insertion_abc": {"step": 0}}},
     "metrics.options.insertion_abc"),
])
def test_config_metrics_errors(patch, match):
    from insdel import config as C

    base = {"data": {"recipe": "dielectron_sim"}, "model": {"preset": "quick_cern"},
            "metrics": patch}
    with pytest.raises(C.ConfigError, match=match):
        C.load(base)


def test_kendall_tau_matrix_equals_scipy_per_pair_with_ties():
    from scipy.stats import kendalltau

    from insdel.metrics.agreement import kendall_tau_matrix, metric_agreement

    rng = np.random.default_rng(1)
    S = rng.normal(size=(30, 3, 6))
    S[:, 2] = np.round(S[:, 2])                      # ties
    mean, se, count = kendall_tau_matrix(S)
    ref = np.array([[np.mean([kendalltau(S[p, a], S[p, b]).statistic for p in range(30)])
                     for b in range(3)] for a in range(3)])
    np.testing.assert_allclose(mean, ref, atol=1e-12)
    assert (count == 30).all() and np.allclose(np.diag(mean), 1.0)
    # a lower-is-better metric is flipped before ranking
    rows = [{"pair": p, "method": f"m{k}", "metric": q, "value": v}
            for p in range(30) for k in range(6)
            for q, v in (("up", S[p, 0, k]), ("down", -S[p, 0, k]))]
    agree = metric_agreement(pd.DataFrame(rows), {"up": True, "down": False})
    t = agree.set_index(["metric_a", "metric_b"])["tau"]
    assert t[("up", "down")] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="no direction"):
        metric_agreement(pd.DataFrame(rows), {"up": True})


def test_metric_agreement_bootstrap_interval_over_units_and_its_verdicts():
    """tau_intervals against a direct loop over the same resampled units; mirrored pairs (one
    unit) widen nothing spuriously: duplicating every pair as its own mirror gives the same
    interval as the pairs alone; the verdicts name the metric that agrees, the one reversed and
    the one that cannot be told from no agreement."""
    from insdel.metrics.agreement import (
        _pair_taus,
        agreement_markdown,
        agreement_verdicts,
        kendall_tau_matrix,
        metric_agreement,
        tau_intervals,
    )

    rng = np.random.default_rng(4)
    P, M = 40, 5
    base = rng.normal(size=(P, M))
    S = np.stack([base, base + 0.3 * rng.normal(size=(P, M)), -base + 0.3 * rng.normal(
        size=(P, M)), rng.normal(size=(P, M))], axis=1)
    low, high, G = tau_intervals(S, n_boot=300, seed=7)
    tau = _pair_taus(S)
    W = np.random.default_rng(7).multinomial(P, np.full(P, 1.0 / P), size=300)
    reps = np.array([np.nanmean(np.repeat(tau, w, axis=0), axis=0) for w in W])
    np.testing.assert_allclose(low, np.percentile(reps, 2.5, axis=0), atol=1e-12)
    np.testing.assert_allclose(high, np.percentile(reps, 97.5, axis=0), atol=1e-12)
    assert G == P
    mean, _, _ = kendall_tau_matrix(S)
    assert (low <= mean + 1e-12).all() and (mean <= high + 1e-12).all()
    low2, high2, G2 = tau_intervals(np.repeat(S, 2, axis=0), clusters=np.repeat(np.arange(P), 2),
                                    n_boot=300, seed=7)
    assert G2 == P
    np.testing.assert_allclose(low2, low, atol=1e-12)
    names = ["insertion_abc", "close", "reversed", "noise"]
    rows = [{"pair": p, "method": f"m{k}", "metric": q, "value": S[p, i, k]}
            for p in range(P) for k in range(M) for i, q in enumerate(names)]
    agree = metric_agreement(pd.DataFrame(rows), dict.fromkeys(names, True), n_boot=300)
    assert {"tau_low", "tau_high", "n_units"} <= set(agree.columns)
    lines = agreement_verdicts(agree)
    assert lines[0].startswith("Rank the methods like insertion_abc") and "close" in lines[0]
    assert "opposite order" in lines[1] and "reversed" in lines[1]
    assert "no agreement" in lines[2] and "noise" in lines[2]
    assert "Cannot be told from no agreement with insertion_abc" in agreement_markdown(agree)
    with pytest.raises(ValueError, match="clusters"):
        metric_agreement(pd.DataFrame(rows), dict.fromkeys(names, True), clusters=[0, 1])


def test_metric_summary_standard_errors_over_clusters():
    """A metric summary's standard errors were over pairs also when pairs come as a pair and its
    mirror (one_to_one); given the pairs' clusters they are over the units (NaN scores left out),
    the means still over the pairs."""
    scores = pd.DataFrame({"pair": np.arange(6), "method": "a", "metric": "m",
                           "value": [1.0, 1.2, 3.0, 2.8, 5.0, np.nan]})
    res = M.MetricResults(scores=scores, directions={"m": True})
    cl = np.array([0, 0, 1, 1, 2, 2])
    s = res.summary(cl).iloc[0]
    assert s["n_units"] == 3 and s["n"] == 5 and s["mean"] == pytest.approx(13.0 / 5)
    v = np.array([1.0, 1.2, 3.0, 2.8, 5.0])  # unequal unit sizes: the cluster-robust form
    dev = np.bincount([0, 0, 1, 1, 2], v - v.mean())
    assert s["std_error"] == pytest.approx(np.sqrt(3 / 2 * (dev ** 2).sum()) / 5, rel=1e-12)
    plain = res.summary().iloc[0]
    assert plain["n_units"] == 5 and plain["std_error"] == pytest.approx(
        v.std(ddof=1) / np.sqrt(5), rel=1e-12)


# -- Metric.__call__: the arguments compute reads, no others ---------------------------------------
W = np.array([1.0, -2.0, 3.0, 0.5])


def _f(X):
    return np.tanh(np.asarray(X) @ W)


@pytest.fixture
def pairs():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, 4))
    R = np.zeros((5, 4))
    return X, R, (X - R) * W


@pytest.mark.parametrize("name, kwargs", [("pgi", {"k": 1}), ("insertion_abc", {"order": "absolute"}),
                                          ("faithfulness_correlation", {"subset": 2})])
def test_metric_call_refuses_arguments_it_would_ignore(pairs, name, kwargs):
    """An option given to the call (instead of to get) is an error naming it, not ignored."""
    X, R, A = pairs
    with pytest.raises(ValueError, match=f"unknown argument.*{next(iter(kwargs))}"):
        M.build(name)(_f, X, R, A, **kwargs)


def test_metric_call_still_takes_the_arguments_compute_reads(pairs):
    X, R, A = pairs
    M.build("pgi")(_f, X, R, A, method="m")
    M.build("feature_agreement")(_f, X, R, A, ground_truth=A)
    sub = np.zeros((5, 100, 4), bool)
    sub[:, :, 0] = True
    sub[:, ::2, 1] = True
    M.build("faithfulness_correlation")(_f, X, R, A, subsets=sub)
    assert M.build("sensitivity").call_arguments() >= {"explainer", "method"}


@pytest.mark.parametrize("module", ["base.py", "__init__.py", "insertion_deletion.py",
                                    "quantus_family.py", "beexai_family.py", "openxai_family.py",
                                    "xaibench_family.py", "ground_truth.py", "agreement.py"])
def test_metrics_never_ask_a_removals_kind(module):
    """The context builds the game once (insdel.game.as_game); the metrics read it."""
    src = (Path(insdel.__file__).parent / "metrics" / module).read_text(encoding="utf-8")
    assert not re.findall(r"isinstance\(.*(Removal|Baseline|Marginal|Cohort)", src)
    assert "resolve(" not in src and "check_targets(" not in src


def test_agreement_figure_draws_the_tau_matrix():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from insdel.metrics.agreement import agreement_figure

    agree = pd.DataFrame([{"metric_a": a, "metric_b": b, "tau": t} for a, b, t in
                          [("ins", "ins", 1.0), ("ins", "del", -0.75), ("del", "ins", -0.75),
                           ("del", "del", np.nan)]])
    fig = agreement_figure(agree, title="my title")
    ax = fig.axes[0]
    assert ax.get_title() == "my title"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["ins", "del"]
    np.testing.assert_array_equal(ax.images[0].get_array().filled(np.nan),
                                  [[1.0, -0.75], [-0.75, np.nan]])
    assert sorted(t.get_text() for t in ax.texts) == ["-0.75", "-0.75", "1.00"]  # NaN: no label
    plt.close(fig)
