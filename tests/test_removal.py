"""insdel.removal through the engines: every result is that of the pair's value function v.

Oracles are independent of the engines: v computed by a direct loop over references or
coalitions, all n! orderings for the areas, shap's ExactExplainer with an Independent masker.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _removals import MeanImpute, Shuffled

import insdel
from insdel import removal as RM
from insdel.areas import abc as area_abc
from insdel.decomposition import batch_decomposition, sampled_shapley, shapley_values
from insdel.tracing import trace


def f(Z):
    Z = np.asarray(Z)
    return np.sin(Z).sum(1) + Z[:, 0] * Z[:, 1] * Z[:, 2] - 0.5 * Z[:, 1] * Z[:, 3]


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4, 5))
    bg = rng.normal(size=(6, 5))
    bg[:, 4] = X[0, 4]  # a feature equal to every reference for pair 0: outside its D
    return X, bg


def v_marginal(x, refs, keep):
    rows = np.where(keep, x, refs)
    return f(rows).mean()


def v_sampled(rem, X, b, keep):
    return f(rem.sample(X[b:b + 1], keep[None, :], np.array([b]))[0]).mean()


def brute_curve(v, order, mode):
    n = len(order)
    pts = []
    for k in range(n + 1):
        keep = np.zeros(n, bool)
        keep[list(order[:k])] = True
        pts.append(v(keep if mode == "insertion" else ~keep))
    return np.array(pts)


# -- marginal ---------------------------------------------------------------------------------------
def test_marginal_curves_are_the_mean_of_the_single_reference_curves(data):
    X, bg = data
    rng = np.random.default_rng(0)
    orders = np.stack([[rng.permutation(5) for _ in range(3)] for _ in X])
    got = trace(f, X, None, orders, removal=RM.Marginal(bg, how="all"))
    for mode in ("insertion", "deletion"):
        single = [trace(f, X, np.broadcast_to(b, X.shape), orders).curves[mode] for b in bg]
        np.testing.assert_allclose(got.curves[mode], np.mean(single, axis=0), rtol=0, atol=1e-12)
        for b in range(len(X)):
            for k in range(3):
                want = brute_curve(lambda keep, b=b: v_marginal(X[b], bg, keep), orders[b, k],
                                   mode)
                np.testing.assert_allclose(got.curves[mode][b, k], want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.fr, [f(bg).mean()] * len(X), atol=1e-12)
    np.testing.assert_allclose(got.fx, f(X), atol=1e-12)


def test_marginal_exact_shapley_equals_shap_exact_explainer_with_an_independent_masker(data):
    shap = pytest.importorskip("shap")
    X, bg = data
    ours = shapley_values(f, X, None, removal=RM.Marginal(bg, how="all"))
    masker = shap.maskers.Independent(bg, max_samples=len(bg))
    theirs = shap.ExactExplainer(f, masker)(X).values
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)


def test_marginal_game_theorems_by_brute_force(data):
    """Theorem 1 (ABC from the decomposition), B.1 (ABC + ABC'), E[ABC] over all n! orderings
    and the best order, for the marginal game v, against areas of brute-force curves."""
    X, bg = data
    d = batch_decomposition(f, X, None, removal=RM.Marginal(bg, how="all"))
    assert d.d[0] == 4 and all(d.d[1:] == 5)  # feature 4 equals every reference of pair 0
    perms = np.array(list(itertools.permutations(range(5))))
    for b in range(len(X)):
        def v(keep, b=b):
            return v_marginal(X[b], bg, keep)
        ins = np.array([area_abc(brute_curve(v, p, "insertion")) for p in perms])
        dele = np.array([area_abc(brute_curve(v, p, "deletion"), mode="deletion") for p in perms])
        sel = perms[::17]
        np.testing.assert_allclose(d[b].abc(sel[0]), ins[0], atol=1e-12)
        got = d.abc(np.broadcast_to(sel, (len(X),) + sel.shape), mode="insertion")[b]
        np.testing.assert_allclose(got, ins[::17], atol=1e-12)
        got = d.abc_total(np.broadcast_to(sel, (len(X),) + sel.shape))[b]
        np.testing.assert_allclose(got, (ins + dele)[::17], atol=1e-12)
        np.testing.assert_allclose(d.expected_abc()[b], ins.mean(), atol=1e-12)
        np.testing.assert_allclose(d.best_abc()[b], ins.max(), atol=1e-12)


def test_marginal_evaluate_areas_are_the_mean_of_single_reference_areas(data):
    X, bg = data
    A = {"a": np.random.default_rng(1).normal(size=X.shape)}
    ev = insdel.evaluate(f, X, None, A, removal=RM.Marginal(bg, how="all"), n_random=2)
    one = [insdel.evaluate(f, X, np.broadcast_to(b, X.shape), A, n_random=2) for b in bg]
    got = ev.abc.set_index(["pair", "method", "mode"])["abc"]
    want = np.mean([e.abc.set_index(["pair", "method", "mode"])["abc"] for e in one], axis=0)
    np.testing.assert_allclose(got.to_numpy(), want, atol=1e-12)
    assert ev.removal["name"] == "marginal"


def test_marginal_from_a_policy_s_k_references(data):
    """R of shape (B, K, n): the K references of each target (e.g. a policy's K nearest)."""
    X, bg = data
    R3 = np.stack([bg[:3]] * len(X))
    a = trace(f, X, R3, np.tile(np.arange(5), (len(X), 1)), removal="marginal")
    b = trace(f, X, None, np.tile(np.arange(5), (len(X), 1)),
              removal=RM.Marginal(bg[:3], how="all"))
    np.testing.assert_array_equal(a.curves["insertion"], b.curves["insertion"])


def test_marginal_random_and_nearest_references():
    rng = np.random.default_rng(0)
    X, bg = rng.normal(size=(3, 4)), rng.normal(size=(30, 4))
    r1 = RM.Marginal(bg, n_references=5, seed=2).references(X, None)
    r2 = RM.Marginal(bg, n_references=5, seed=2).references(X, None)
    np.testing.assert_array_equal(r1, r2)  # same seed, same references
    assert not np.array_equal(r1, RM.Marginal(bg, n_references=5, seed=3).references(X, None))
    near = RM.Marginal(bg, n_references=4, how="nearest").references(X, None)
    sd = bg.std(0)
    for b in range(3):
        dist = np.sqrt((((bg - X[b]) / sd) ** 2).sum(1))
        np.testing.assert_array_equal(near[b], bg[np.argsort(dist, kind="stable")[:4]])


def test_marginal_random_references_of_a_chunk_are_the_whole_run_s():
    """Target b's K background rows are drawn with its run index: a game built on the pairs
    k.. with ``offset=k`` holds (and values) what the whole run gives them."""
    rng = np.random.default_rng(4)
    X, bg = rng.normal(size=(6, 5)), rng.normal(size=(40, 5))
    rem = RM.Marginal(bg, n_references=3, seed=1)
    whole = rem.references(X, None)
    for k in (1, 4):
        np.testing.assert_array_equal(rem.references(X[k:], None, offset=k), whole[k:])
        np.testing.assert_array_equal(rem.differing(X[k:], None, offset=k),
                                      rem.differing(X, None)[k:])
        g_all = insdel.game.as_game(f, X, removal=rem)
        g_k = insdel.game.as_game(f, X[k:], removal=rem, offset=k)
        np.testing.assert_array_equal(g_k.references, g_all.references[k:])
        orders = np.tile(np.arange(5), (6, 1))
        c_all, c_k = trace(g_all, None, None, orders), trace(g_k, None, None, orders[k:])
        for mode in ("insertion", "deletion"):
            np.testing.assert_allclose(c_k.curves[mode], c_all.curves[mode][k:], atol=1e-12)


# -- sampled removals -------------------------------------------------------------------------------
def test_sampled_removal_curves_and_decomposition_against_direct_values(data):
    X, bg = data
    rem = Shuffled(bg, n_draws=4, seed=5)
    rng = np.random.default_rng(2)
    orders = np.stack([[rng.permutation(5) for _ in range(2)] for _ in X])
    got = trace(f, X, None, orders, removal=rem)
    for b in range(len(X)):
        for k in range(2):
            for mode in ("insertion", "deletion"):
                want = brute_curve(lambda keep, b=b: v_sampled(rem, X, b, keep), orders[b, k],
                                   mode)
                np.testing.assert_allclose(got.curves[mode][b, k], want, atol=1e-12)
    d = batch_decomposition(f, X, None, removal=rem)
    assert list(d.d) == [5] * len(X)  # every feature is removable
    for b in range(len(X)):
        vals = d.subspace_values(b)
        for s in (0, 5, 17, 31):
            keep = ((s >> np.arange(5)) & 1).astype(bool)
            np.testing.assert_allclose(vals[s], v_sampled(rem, X, b, keep), atol=1e-12)


def test_max_d_error_describes_d_of_the_removal_in_use(data):
    X, bg = data
    with pytest.raises(ValueError) as exc:
        batch_decomposition(f, X, None, removal=Shuffled(bg, n_draws=2), max_d=3)
    msg = str(exc.value)
    assert "x_j != r_j" not in msg and "only D" not in msg
    assert "|D| = 5 removable features (> max_d = 3)" in msg
    assert "every one of its n = 5 features is removable" in msg
    with pytest.raises(ValueError) as exc:
        batch_decomposition(f, X, None, max_d=1,
                            removal=RM.Marginal(bg, n_references=3, seed=0))
    assert "x differs from one of its references" in str(exc.value)
    assert "x_j != r_j" not in str(exc.value)


def test_a_constant_sampled_removal_equals_the_baseline_with_that_reference(data):
    X, bg = data
    mu = bg.mean(0)
    rem = MeanImpute(mu)
    R = np.broadcast_to(mu, X.shape)
    A = {"a": X - mu}
    e1 = insdel.evaluate(f, X, None, A, removal=rem, n_random=3)
    e2 = insdel.evaluate(f, X, R, A, n_random=3)
    np.testing.assert_allclose(e1.abc["abc"], e2.abc["abc"], atol=1e-12)
    d1 = shapley_values(f, X, None, removal=rem)
    d2 = shapley_values(f, X, R)
    np.testing.assert_allclose(d1, d2, atol=1e-12)


def test_sampled_shapley_is_unbiased_and_efficient(data):
    X, bg = data
    rem = RM.Marginal(bg, how="all")
    exact = shapley_values(f, X, None, removal=rem)
    phi, se = sampled_shapley(f, X, None, removal=rem, n_orderings=200, seed=1)
    np.testing.assert_allclose(phi.sum(1), exact.sum(1), atol=1e-12)  # telescoping
    assert np.all(np.abs(phi - exact) <= 4 * se + 1e-9)
    phi2, _ = sampled_shapley(f, X, None, removal=rem, n_orderings=200, seed=1)
    np.testing.assert_array_equal(phi, phi2)


def test_groups_under_a_removal(data):
    X, bg = data
    groups = [[0, 1], [2], [3, 4]]
    d = batch_decomposition(f, X, None, removal=RM.Marginal(bg, how="all"), groups=groups)
    single = [batch_decomposition(f, X, np.broadcast_to(b, X.shape), groups=groups,
                                  dedup=False).shapley() for b in bg]
    np.testing.assert_allclose(d.shapley(), np.mean(single, axis=0), atol=1e-12)
    c = trace(f, X, None, np.tile(np.arange(3), (len(X), 1)), groups=groups,
              removal=MeanImpute(bg.mean(0)))
    c0 = trace(f, X, np.broadcast_to(bg.mean(0), X.shape), np.tile(np.arange(3), (len(X), 1)),
               groups=groups)
    np.testing.assert_allclose(c.curves["insertion"], c0.curves["insertion"], atol=1e-12)


# -- bad input --------------------------------------------------------------------------------------
def test_unknown_removal_names_the_closest():
    with pytest.raises(insdel.UnknownNameError,
                       match=r"unknown removal 'marginl'.*Did you mean 'marginal'"):
        RM.get("marginl")
    with pytest.raises(ValueError, match="unknown removal"):
        trace(f, np.ones((1, 3)), np.zeros(3), [[0, 1, 2]], removal="nope")
    with pytest.raises(TypeError, match="removal must be None, a name"):
        trace(f, np.ones((1, 3)), np.zeros(3), [[0, 1, 2]], removal=3)


def test_marginal_bad_input():
    bg = np.zeros((5, 3))
    with pytest.raises(ValueError, match="n_references must be an integer >= 1"):
        RM.Marginal(bg, n_references=0)
    with pytest.raises(ValueError, match="needs n_references="):
        RM.Marginal(bg)
    with pytest.raises(ValueError, match="more than the background's 5 rows"):
        RM.Marginal(bg, n_references=6)
    with pytest.raises(ValueError, match="background has 3 columns but the targets have n = 4"):
        trace(f, np.ones((1, 4)), None, [[0, 1, 2, 3]], removal=RM.Marginal(bg, how="all"))
    with pytest.raises(ValueError, match=r"R of shape \(B, K, n\)"):
        trace(f, np.ones((1, 3)), None, [[0, 1, 2]], removal="marginal")
    with pytest.raises(ValueError, match="unknown option"):
        RM.build("marginal", K=3)


def test_the_registry_verbs():
    assert {"baseline", "marginal"} <= set(RM.available())
    assert RM.get("marginal") is RM.Marginal
    assert RM.options_of("marginal")["how"] == "random"
    assert isinstance(RM.build("baseline"), RM.Baseline)
    with pytest.raises(ValueError, match="built-in removal"):
        RM.register("marginal", RM.Marginal)
    RM.register("mean_impute_test", MeanImpute)
    try:
        assert RM.get("mean_impute_test") is MeanImpute
        with pytest.raises(ValueError, match="already registered"):
            RM.register("mean_impute_test", MeanImpute)
    finally:
        RM.unregister("mean_impute_test")


def test_evaluation_save_load_keeps_the_removal(tmp_path, data):
    X, bg = data
    ev = insdel.evaluate(f, X, None, {"a": X}, removal=RM.Marginal(bg, how="all"), n_random=1)
    ev.save(tmp_path)
    back = insdel.Evaluation.load(tmp_path)
    assert back.removal == ev.removal and back.removal["background_rows"] == 6
    base = insdel.evaluate(f, X, bg[0], {"a": X}, n_random=1)
    assert base.removal is None


# -- metrics ----------------------------------------------------------------------------------------
def test_metrics_read_the_removal_s_values(data):
    from insdel import metrics as M

    X, bg = data
    mu = bg.mean(0)
    A = {"a": X - mu, "b": np.random.default_rng(4).normal(size=X.shape)}
    names = ["insertion_abc", "deletion_abc", "faithfulness_correlation", "monotonicity_arya",
             "pgi", "pgu"]
    got = M.evaluate_metrics(f, X, None, A, metrics=names, removal=MeanImpute(mu)).scores
    want = M.evaluate_metrics(f, X, np.broadcast_to(mu, X.shape), A, metrics=names).scores
    np.testing.assert_allclose(got["value"], want["value"], atol=1e-12, equal_nan=True)
    # marginal: the insertion ABC is linear in v, so it is the mean of the single-reference ones
    ins = M.build("insertion_abc")
    marg = ins(f, X, None, A["a"], removal=RM.Marginal(bg, how="all"))
    single = np.mean([ins(f, X, np.broadcast_to(b, X.shape), A["a"]) for b in bg], axis=0)
    np.testing.assert_allclose(marg, single, atol=1e-12)


def test_a_metric_that_builds_its_own_points_says_so(data):
    from insdel import metrics as M

    X, bg = data
    with pytest.warns(UserWarning, match=r"do not read removal 'mean_impute'"):
        res = M.evaluate_metrics(f, X, None, {"a": X},
                                 metrics=[M.build("infidelity", perturbation="gaussian")],
                                 removal=MeanImpute(bg.mean(0)))
    assert res.stats["ignores_removal"] == ["infidelity"]
    with pytest.raises(ValueError, match="no single reference per target"):
        M.build("monotonicity_nguyen", noise=0.1)(f, X, None, X, removal=MeanImpute(bg.mean(0)))


@pytest.mark.parametrize("doc", ["removal.md", "metrics.md"])
def test_the_docs_removal_examples_run(doc):
    """The docs' examples that use a removal run as written."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / doc).read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "removal" in b]
    assert blocks
    for code in blocks:
        exec(compile(code, f"docs/{doc}", "exec"), {})


def test_a_game_removal_is_read_off_directly(data):
    """A GameRemoval's v reaches the curves, the decomposition and the metrics unchanged, and no
    model row is evaluated for its coalitions."""
    X, bg = data

    class SumKept(RM.GameRemoval):
        name = "sum_kept"

        def values(self, X, keep, targets):
            return (X * keep).sum(1) + 0.5 * keep[:, 0] * keep[:, 1]

    calls = []

    def model(Z):
        calls.append(len(Z))
        return f(Z)

    orders = np.tile(np.arange(5), (len(X), 1))
    res = trace(model, X, None, orders, removal=SumKept())
    for b in range(len(X)):
        want = brute_curve(lambda keep, b=b: SumKept().values(X[b:b + 1], keep[None], [b])[0],
                           orders[b], "insertion")
        np.testing.assert_allclose(res.curves["insertion"][b, 0], want, atol=1e-12)
    assert sum(calls) == 0 and res.n_unique == 0
    phi = shapley_values(model, X, None, removal=SumKept())
    want = X.copy()
    want[:, :2] += 0.25
    np.testing.assert_allclose(phi, want, atol=1e-12)


def test_a_sampled_removal_on_dask_gives_the_serial_curves(data):
    """Chunks on workers draw what the whole run draws for their targets (seeds by the run's
    target index): the same bytes as the serial call, whatever the chunking."""
    distributed = pytest.importorskip("dask.distributed")
    X, bg = data
    rem = RM.build("conditional_gaussian", data=bg, n_draws=4, seed=2)
    orders = np.stack([[np.random.default_rng(b).permutation(5)] for b in range(len(X))])
    serial = trace(f, X, None, orders, removal=rem)
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1,
                            dashboard_address=None) as client:
        got = trace(f, X, None, orders, removal=rem, client=client, chunk_size=30)
    for mode in serial.curves:
        np.testing.assert_array_equal(got.curves[mode], serial.curves[mode])
    np.testing.assert_array_equal(got.fr, serial.fr)


def test_what_each_kind_of_removal_can_remove(data):
    """D per target: the baseline's differing features, marginal's union over its references,
    every feature for a sampled removal or a game; the metrics' context reads the same D."""
    from insdel.metrics.base import MetricContext

    X, bg = data
    R = X.copy()
    R[:, :2] += 1.0
    base = RM.Baseline()
    np.testing.assert_array_equal(base.references(X, R), R[:, None, :])
    np.testing.assert_array_equal(base.differing(X, R), X != R)
    marg = RM.Marginal(bg, how="all")
    np.testing.assert_array_equal(marg.differing(X, None),
                                  np.any(X[:, None, :] != bg[None], axis=1))
    assert MeanImpute(bg.mean(0)).differing(X, None).all()

    class Game(RM.GameRemoval):
        name = "zero_game"

        def values(self, X, keep, targets):
            return np.zeros(len(X))

    assert Game().differing(X, None).all()
    np.testing.assert_array_equal(MetricContext(f, X, R).diff, X != R)
    np.testing.assert_array_equal(MetricContext(f, X, None, removal=marg).diff,
                                  marg.differing(X, None))
    assert MetricContext(f, X, None, removal=MeanImpute(bg.mean(0))).diff.all()


def test_a_request_past_max_rows_is_refused_with_its_estimate(data):
    X, bg = data
    A = {"a": X}
    huge = RM.build("conditional_gaussian", data=bg, n_draws=10_000_000)
    with pytest.raises(ValueError, match=r"coalition values: [\d,]+ coalition values x n_draws = "
                                         r"10,000,000 of removal 'conditional_gaussian' = [\d,]+ "
                                         r"model rows, about .* of model time on this machine, "
                                         r"more than max_rows = 100,000,000"):
        insdel.evaluate(f, X, None, A, removal=huge, n_random=0)
    small = RM.build("conditional_gaussian", data=bg, n_draws=4, max_rows=10)
    with pytest.raises(ValueError, match=r"more than max_rows = 10\."):
        insdel.evaluate(f, X, None, A, removal=small, n_random=0)
    # the budget refuses; it never changes a value (not in params, the cache key)
    ok = RM.build("conditional_gaussian", data=bg, n_draws=4, max_rows=10**6)
    assert ok.params() == RM.build("conditional_gaussian", data=bg, n_draws=4).params()
    with pytest.raises(ValueError, match="max_rows"):
        RM.build("conditional_knn", data=bg, max_rows=0)


def test_constant_and_training_mean_removals():
    """``constant`` sets removed features to its values, one row per coalition;
    ``training_mean`` to the training mean (the mode on binary features: ROAR's removal value),
    registered, built with data=, and refused without it."""
    X = np.zeros((2, 3))
    keep = np.array([[True, False, True], [False, False, False]])
    rem = RM.build("constant", values=[1.0, 2.0, 3.0])
    assert isinstance(rem, RM.Constant) and rem.n_draws == 1
    Z = rem.sample(X, keep, np.arange(2))
    assert Z.shape == (2, 1, 3)
    np.testing.assert_array_equal(Z[:, 0], [[0, 2, 0], [1, 2, 3]])
    assert RM.Constant(5.0).sample(X, keep, np.arange(2))[1, 0].tolist() == [5] * 3
    assert rem.params()["values"] == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="values has 2 entries"):
        RM.Constant([1.0, 2.0]).sample(X, keep, np.arange(2))
    data = np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 4.0], [1.0, 0.0, 0.0]])
    tm = RM.build("training_mean", data=data, binary=[True, True, False])
    np.testing.assert_array_equal(tm.values, [1.0, 1.0, 2.0])
    np.testing.assert_array_equal(RM.training_mean_values(data), data.mean(axis=0))
    assert tm.params()["binary"] == [0, 1] and tm.params()["data_rows"] == 3
    with pytest.raises(RM.MissingDataError, match="training_mean needs training data"):
        RM.build("training_mean")
    with pytest.raises(ValueError, match="binary must be a bool mask of shape"):
        RM.TrainingMean(data, binary=[True])
    assert {"constant", "training_mean"} <= set(RM.available())
    with pytest.raises(ValueError, match="built-in removal"):
        RM.register("constant", RM.Constant)


def test_noisy_linear_removal():
    """``noisy_linear``: Rong et al.'s interpolation from kept neighbours (noise 0: the metrics'
    imputation of the same rows), the noise drawn per target (common random numbers), and a
    coalition with nothing kept refused."""
    from insdel.removal.noisy_linear import noisy_linear_imputation

    rng = np.random.default_rng(0)
    X = rng.normal(size=(4, 6))
    keep = rng.random((4, 6)) < 0.5
    keep[:, 0] = True
    rem = RM.build("noisy_linear", noise=0.0, image_shape=(2, 3))
    np.testing.assert_allclose(rem.sample(X, keep, np.arange(4))[:, 0],
                               noisy_linear_imputation(X, ~keep, (2, 3), noise=0.0), atol=1e-12)
    noisy = RM.NoisyLinear(noise=0.5, seed=3)
    a = noisy.sample(X, keep, np.arange(4))[:, 0]
    b = noisy.sample(X[2:], keep[2:], np.arange(2, 4))[:, 0]
    np.testing.assert_array_equal(a[2:], b)
    np.testing.assert_array_equal(a[keep], X[keep])
    assert noisy.params()["noise"] == 0.5
    with pytest.raises(ValueError, match="keeps none"):
        noisy.sample(X, np.zeros_like(keep), np.arange(4))
    with pytest.raises(ValueError, match="does not hold n = 6"):
        RM.NoisyLinear(image_shape=(4, 4)).sample(X, keep, np.arange(4))
