"""Quantus' faithfulness metrics (insdel.metrics.quantus_family) against Quantus itself, plus
properties and option checks.

Quantus sees the same float32 torch model with inputs shaped (B, 1, 1, n) (an image of one row,
channel first), ``y_batch = 0`` (its one output column), ``softmax=False``, ``normalise=False,
abs=False`` (unless a test says otherwise) and ``perturb_baseline=0.0``: a constant 0 (Quantus'
``"black"`` is the sample's minimum, not 0). insdel gets ``R = 0``, so its "removed" units take
the same value. Quantus 0.6 calls ``np.trapz``, gone in numpy 2: the fixture restores it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import quantus
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import insdel.metrics as M
from insdel.metrics import quantus_family as qf
from insdel.removal import NoisyLinear

B, N = 7, 6
TOL = dict(rtol=1e-5, atol=1e-6)


@pytest.fixture(autouse=True)
def _quantus_env(monkeypatch):
    if not hasattr(np, "trapz"):
        monkeypatch.setattr(np, "trapz", np.trapezoid, raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def make_net(n=N, seed=0, bias=2.0):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(n, 8), torch.nn.Tanh(),
                              torch.nn.Linear(8, 1))
    with torch.no_grad():
        net[3].bias.fill_(bias)  # outputs away from 0 (IROF divides by f(x))
    return net.eval()


@pytest.fixture
def setup():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(B, N)).astype(np.float32)
    A = rng.normal(size=(B, N)).astype(np.float32)
    return make_net(), X, A


def q(metric, net, X, A, **kw):
    """Run a Quantus metric on (B, 1, 1, n) inputs."""
    n = X.shape[1]
    return metric(net, X.reshape(-1, 1, 1, n), np.zeros(len(X), int), A.reshape(-1, 1, 1, n),
                  channel_first=True, softmax=False, device="cpu", **kw)


def ours(name, net, X, A, groups=None, **options):
    return M.build(name, **options)(net, X, np.zeros(X.shape[1], np.float32), A, groups=groups)


COMMON = dict(normalise=False, abs=False, disable_warnings=True, perturb_baseline=0.0)


# ------------------------------------------------------------------------- against Quantus
@pytest.mark.parametrize("step", [1, 2, 3])
def test_pixel_flipping_matches_quantus(setup, step):
    net, X, A = setup
    ref = q(quantus.PixelFlipping(features_in_step=step, return_auc_per_sample=True, **COMMON),
            net, X, A)
    np.testing.assert_allclose(ours("pixel_flipping", net, X, A, features_in_step=step), ref,
                               **TOL)


@pytest.mark.parametrize("order", ["morf", "lerf"])
@pytest.mark.parametrize("regions", [3, 100])
def test_region_perturbation_matches_quantus(setup, order, regions):
    net, X, A = setup
    curves = q(quantus.RegionPerturbation(patch_size=1, order=order, regions_evaluation=regions,
                                          **COMMON), net, X, A)
    ref = [quantus.helpers.utils.calculate_auc(np.asarray(c)) for c in curves]
    got = ours("region_perturbation", net, X, A, order=order, regions_evaluation=regions)
    np.testing.assert_allclose(got, ref, **TOL)
    aopc = ours("region_perturbation", net, X, A, order=order, regions_evaluation=regions,
                score="aopc")
    L = min(regions, N)
    np.testing.assert_allclose(aopc, [np.sum(c) / (L + 1) for c in curves], **TOL)


def test_selectivity_matches_quantus(setup):
    net, X, A = setup
    curves = q(quantus.Selectivity(patch_size=1, **COMMON), net, X, A)
    ref = [quantus.helpers.utils.calculate_auc(np.asarray(c)) for c in curves]
    np.testing.assert_allclose(ours("selectivity", net, X, A), ref, **TOL)


@pytest.mark.parametrize("step", [1, 2])
@pytest.mark.parametrize("use_abs", [True, False])
def test_monotonicity_arya_matches_quantus_loop_with_insertion(setup, step, use_abs):
    _, X, _ = setup
    # A linear model, increasing in every feature but the last: the curve rises at every step
    # iff that feature enters first (its step is not compared with f(r)). Half of the pairs
    # rank it first, half last, so both outcomes occur.
    X = np.abs(X)
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0, -0.1], np.float32)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(N, 1)).eval()
    with torch.no_grad():
        net[1].weight.copy_(torch.from_numpy(w)[None])
        net[1].bias.fill_(0.5)
    A = (w * X).astype(np.float32)
    A[::2, -1] = 50.0
    Xf = X.reshape(len(X), -1)

    def insert_x(arr, indices, **kw):  # the intended step: units of x enter the baseline
        out = arr.copy()
        rows = np.arange(arr.shape[0])[:, None]
        out[rows, indices] = Xf[rows, indices]
        return out

    kw = {**COMMON, "abs": use_abs}
    ref = q(quantus.Monotonicity(features_in_step=step, perturb_func=insert_x, **kw), net, X, A)
    got = ours("monotonicity_arya", net, X, A, features_in_step=step, abs=use_abs)
    np.testing.assert_array_equal(got, np.asarray(ref, float))
    if step == 1:
        assert set(got) == {0.0, 1.0}
    # Quantus 0.6 as shipped re-writes the baseline, so its curve is flat and all are True.
    shipped = q(quantus.Monotonicity(features_in_step=step, **kw), net, X, A)
    assert all(shipped)


@pytest.mark.parametrize("step", [1, 2])
@pytest.mark.parametrize("use_abs", [True, False])
def test_monotonicity_nguyen_matches_quantus(setup, step, use_abs):
    net, X, A = setup
    # With a constant baseline every draw is the same point: nr_samples does not matter.
    ref = q(quantus.MonotonicityCorrelation(features_in_step=step, nr_samples=3,
                                            **{**COMMON, "abs": use_abs}), net, X, A)
    got = ours("monotonicity_nguyen", net, X, A, features_in_step=step, abs=use_abs)
    np.testing.assert_allclose(got, ref, **TOL)


@pytest.mark.parametrize("k", [1, 3])
def test_faithfulness_correlation_matches_quantus_same_subsets(setup, k):
    net, X, A = setup
    runs = 20
    np.random.seed(123)  # Quantus draws run by run, sample by sample, from the global RNG
    subsets = np.array([[np.random.choice(N, k, replace=False) for _ in range(B)]
                        for _ in range(runs)]).transpose(1, 0, 2)
    np.random.seed(123)
    ref = q(quantus.FaithfulnessCorrelation(nr_runs=runs, subset_size=k, return_aggregate=False,
                                            **COMMON), net, X, A)
    m = M.build("faithfulness_correlation", nr_runs=runs, subset_size=k)
    got = m(net, X, np.zeros(N, np.float32), A, subsets=subsets)
    np.testing.assert_allclose(got, ref, **TOL)
    masks = np.zeros((B, runs, N), bool)
    np.put_along_axis(masks, subsets, True, axis=-1)
    np.testing.assert_allclose(m(net, X, np.zeros(N, np.float32), A, subsets=masks), got)


@pytest.mark.parametrize("step", [1, 2, 3])
def test_faithfulness_estimate_matches_quantus(setup, step):
    net, X, A = setup
    ref = q(quantus.FaithfulnessEstimate(features_in_step=step, **COMMON), net, X, A)
    np.testing.assert_allclose(ours("faithfulness_estimate", net, X, A, features_in_step=step),
                               ref, **TOL)


class _Recorder(torch.nn.Module):
    """The model, recording every batch it is called on."""

    def __init__(self, net):
        super().__init__()
        self.net, self.seen = net, []

    def forward(self, x):
        self.seen.append(x.detach().numpy().reshape(len(x), -1).copy())
        return self.net(x)


def test_road_evaluates_quantus_points(setup):
    """Quantus' ROAD scores accuracy (argmax == y), which is constant for one output: replay the
    very points it evaluates (with a 0-fill instead of its image-grid imputation) and check the
    mean drop of f over them."""
    net, X, A = setup
    pct = [10, 30, 50, 70, 90]

    def zero_fill(arr, indices, **kw):
        out = arr.copy().reshape(-1)
        out[indices] = 0.0
        return out.reshape(arr.shape)

    rec = _Recorder(net).eval()
    q(quantus.ROAD(percentages=pct, perturb_func=zero_fill, normalise=False, abs=False,
                   disable_warnings=True), rec, X, A)
    pts = [s for s in rec.seen if len(s) == B][-len(pct):]
    with torch.no_grad():
        fx = net(torch.from_numpy(X)).numpy().ravel()
        drops = np.stack([fx - net(torch.from_numpy(p)).numpy().ravel() for p in pts], 1)
    got = ours("road", net, X, A, percentages=pct)
    np.testing.assert_allclose(got, drops.mean(1), **TOL)


@pytest.mark.parametrize("shape", [(1, N), (2, 3)])
def test_road_noisy_linear_matches_quantus_imputation(setup, shape):
    """Quantus' own noisy linear imputation (noise 0: deterministic) on a (1, H, W) image."""
    net, X, A = setup
    pct = [10, 30, 50, 70, 90]
    rec = _Recorder(net).eval()
    Xi, Ai = X.reshape(B, 1, *shape), A.reshape(B, 1, *shape)
    quantus.ROAD(percentages=pct, noise=0.0, normalise=False, abs=False, disable_warnings=True)(
        rec, Xi, np.zeros(B, int), Ai, channel_first=True, softmax=False, device="cpu")
    pts = [s for s in rec.seen if len(s) == B][-len(pct):]
    with torch.no_grad():
        fx = net(torch.from_numpy(X)).numpy().ravel()
        drops = np.stack([fx - net(torch.from_numpy(p)).numpy().ravel() for p in pts], 1)
    with pytest.warns(DeprecationWarning, match="removal=insdel.removal.NoisyLinear"):
        got = ours("road", net, X, A, percentages=pct, imputation="noisy_linear", noise=0.0,
                   image_shape=shape)
    np.testing.assert_allclose(got, drops.mean(1), rtol=1e-4, atol=1e-5)
    # the removal noisy_linear gives the metric the same points
    by_removal = M.build("road", percentages=pct)(
        net, X, None, A, removal=NoisyLinear(noise=0.0, image_shape=shape))
    np.testing.assert_allclose(by_removal, drops.mean(1), rtol=1e-4, atol=1e-5)
    # The imputed rows themselves.
    k = [int(N * p / 100) for p in pct]
    order = np.argsort(-A, axis=1, kind="stable")
    removed = np.zeros((B, len(pct), N), bool)
    for j, kk in enumerate(k):
        np.put_along_axis(removed[:, j], order[:, :kk], True, axis=1)
    rows = qf.noisy_linear_imputation(np.repeat(X, len(pct), 0), removed.reshape(-1, N), shape,
                                      noise=0.0)
    np.testing.assert_allclose(rows.reshape(B, len(pct), N), np.stack(pts, 1), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.filterwarnings("ignore:road. imputation='noisy_linear' is deprecated")
def test_road_noisy_linear_is_seeded_and_checked():
    rng = np.random.default_rng(0)
    X, R, A = rng.normal(size=(3, 6)), rng.normal(size=(3, 6)), rng.normal(size=(3, 6))
    f = _lin(np.arange(1.0, 7.0))
    m = M.build("road", imputation="noisy_linear")
    np.testing.assert_array_equal(m(f, X, R, A), m(f, X, R, A))
    # r is not used by the imputation.
    np.testing.assert_array_equal(m(f, X, R, A), m(f, X, 0 * R + 5, A))
    with pytest.raises(ValueError, match="image_shape"):
        M.build("road", imputation="noisy_linear", image_shape=(4, 4))(f, X, R, A)
    with pytest.raises(ValueError, match="groups"):
        m(f, X, R, A, groups=[0, 0, 1, 1, 2, 2])
    with pytest.raises(ValueError, match="keep at least"):
        M.build("road", imputation="noisy_linear", percentages=[100])(f, X, R, A)


@pytest.mark.parametrize("labels", [np.arange(N), np.array([0, 0, 1, 2, 2, 3])])
def test_irof_matches_quantus_with_units_as_segments(setup, monkeypatch, labels):
    net, X, A = setup
    monkeypatch.setattr(quantus.helpers.utils, "get_superpixel_segments",
                        lambda img, segmentation_method, **kw: labels.reshape(1, -1))
    ref = q(quantus.IROF(return_aggregate=False, **COMMON), net, X, A)
    got = ours("irof", net, X, A, groups=None if labels.max() == N - 1 else labels)
    np.testing.assert_allclose(got, ref, **TOL)


class _Rounded(torch.nn.Module):
    """g(x) = round(2 tanh(w.x)) in {-2..2}; ``classes=True`` gives logits peaking at g."""

    def __init__(self, classes):
        super().__init__()
        torch.manual_seed(3)
        self.lin = torch.nn.Linear(N, 1)
        self.classes = classes

    def forward(self, x):
        g = torch.round(2 * torch.tanh(self.lin(x.reshape(len(x), -1))))
        if not self.classes:
            return g
        return -(g - torch.arange(-2, 3, dtype=g.dtype)[None, :]) ** 2


@pytest.mark.parametrize("threshold", [0.3, 0.6])
def test_sufficiency_matches_quantus_on_discrete_outputs(threshold):
    rng = np.random.default_rng(5)
    n_pairs = 16
    X = rng.normal(size=(n_pairs, N)).astype(np.float32)
    A = rng.normal(size=(n_pairs, N)).astype(np.float32)
    ref = np.asarray(q(quantus.Sufficiency(threshold=threshold, normalise=False, abs=True,
                                           disable_warnings=True), _Rounded(True).eval(), X, A))
    got = ours("sufficiency_dasgupta", _Rounded(False).eval(), X, A, threshold=threshold,
               tol=0.5)
    has = ~np.isnan(got)
    assert has.any()
    np.testing.assert_allclose(got[has], ref[has], **TOL)
    np.testing.assert_array_equal(ref[~has], 0.0)  # Quantus: 0 without neighbours; insdel: NaN


# ------------------------------------------------------------------------------ properties
def _lin(w):
    return lambda Z: np.asarray(Z, np.float64) @ w


pairs = st.integers(0, 10_000).map(lambda s: np.random.default_rng(s))


@settings(max_examples=8, deadline=None)
@given(rng=pairs, n=st.integers(3, 7))
def test_reference_equal_to_target_gives_flat_curves_and_nan_correlations(rng, n):
    X = rng.normal(size=(4, n))
    A = rng.normal(size=(4, n))
    f = lambda Z: np.tanh(Z).sum(1) + Z[:, 0] * Z[:, 1]  # noqa: E731
    ctx = M.MetricContext(f, X, X)
    pf = qf.PixelFlipping()
    np.testing.assert_allclose(pf.curve(ctx, A), np.repeat(ctx.fx[:, None], n, 1))
    np.testing.assert_allclose(pf.compute(ctx, A), (n - 1) * ctx.fx)
    for name in ["faithfulness_correlation", "faithfulness_estimate", "monotonicity_nguyen"]:
        assert np.isnan(M.build(name).compute(ctx, A, method="m")).all(), name
    assert np.allclose(M.build("road").compute(ctx, A), 0.0)


ALL = M.available("quantus")


@settings(max_examples=5, deadline=None)
@given(rng=pairs, scale=st.floats(0.01, 100.0))
def test_invariant_to_positive_scaling(rng, scale):
    X = rng.normal(size=(6, 5))
    R = rng.normal(size=(6, 5))
    A = rng.normal(size=(6, 5))
    f = lambda Z: np.tanh(Z @ np.arange(1.0, 6.0)) + Z[:, 0] * Z[:, 2]  # noqa: E731
    for name in ALL:
        m = M.build(name)
        np.testing.assert_allclose(m(f, X, R, scale * A), m(f, X, R, A), rtol=1e-9, atol=1e-12,
                                   equal_nan=True, err_msg=name)


@settings(max_examples=5, deadline=None)
@given(rng=pairs)
def test_singleton_groups_equal_ungrouped(rng):
    X = rng.normal(size=(5, 4))
    R = rng.normal(size=(5, 4))
    A = rng.normal(size=(5, 4))
    f = lambda Z: np.sin(Z).sum(1) * Z[:, 3]  # noqa: E731
    for name in ALL:
        m = M.build(name)
        np.testing.assert_array_equal(m(f, X, R, A, groups=[[j] for j in range(4)]),
                                      m(f, X, R, A), err_msg=name)


@settings(max_examples=6, deadline=None)
@given(rng=pairs, n=st.integers(3, 8))
def test_linear_model_exact_attributions_are_perfectly_correlated(rng, n):
    w = rng.uniform(0.5, 2.0, n) * rng.choice([-1, 1], n)
    X = rng.normal(size=(5, n))
    R = rng.normal(size=(5, n))
    A = w * (X - R)
    f = _lin(w)
    np.testing.assert_allclose(M.build("faithfulness_correlation", nr_runs=30)(f, X, R, A), 1.0)
    np.testing.assert_allclose(M.build("faithfulness_estimate")(f, X, R, A), 1.0)
    # Removing the top units in signed order lowers f by their attributions.
    road = M.build("road", percentages=[50])(f, X, R, A)
    top = np.sort(A, 1)[:, ::-1][:, : n // 2].sum(1)
    np.testing.assert_allclose(road, top)


def test_grouped_units_move_together():
    X = np.array([[1.0, 2.0, 3.0, 4.0]])
    R = np.zeros((1, 4))
    A = np.array([[4.0, 3.0, 2.0, 1.0]])
    seen = []

    def f(Z):
        seen.append(np.asarray(Z).copy())
        return Z.sum(1)

    M.build("pixel_flipping")(f, X, R, A, groups=[0, 0, 1, 1])
    rows = np.concatenate(seen)
    # Every evaluated row keeps or removes each group whole.
    assert np.all((rows[:, 0] == 0) == (rows[:, 1] == 0))
    assert np.all((rows[:, 2] == 0) == (rows[:, 3] == 0))


def test_random_streams_per_method_independent_of_other_metrics():
    rng = np.random.default_rng(0)
    X, R, A = rng.normal(size=(4, 6)), rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    f = lambda Z: np.tanh(Z).sum(1) * Z[:, 0]  # noqa: E731
    alone = M.evaluate_metrics(f, X, R, {"a": A}, metrics=["faithfulness_correlation"],
                               progress=False).scores
    many = M.evaluate_metrics(f, X, R, {"b": -A, "a": A},
                              metrics=["road", "faithfulness_correlation",
                                       M.build("region_perturbation", order="random")],
                              progress=False).scores
    pick = lambda s: s[(s.metric == "faithfulness_correlation") & (s.method == "a")]  # noqa: E731
    np.testing.assert_array_equal(pick(alone)["value"].to_numpy(), pick(many)["value"].to_numpy())


def test_monotonicity_nguyen_noise_option():
    rng = np.random.default_rng(0)
    X, R, A = rng.normal(size=(4, 5)), np.zeros((4, 5)), rng.normal(size=(4, 5))
    f = lambda Z: np.tanh(Z).sum(1) + Z[:, 1] ** 2  # noqa: E731
    m = M.build("monotonicity_nguyen", noise=0.3, nr_samples=4)
    a, b = m(f, X, R, A), m(f, X, R, A)
    np.testing.assert_array_equal(a, b)  # seeded
    assert np.all(np.abs(a) <= 1)
    tiny = M.build("monotonicity_nguyen", noise=1e-9, nr_samples=2)(f, X, R, A)
    np.testing.assert_allclose(tiny, M.build("monotonicity_nguyen")(f, X, R, A))
    g = [0, 0, 1, 2, 2]
    tiny_g = M.build("monotonicity_nguyen", noise=1e-9, nr_samples=2)(f, X, R, A, groups=g)
    np.testing.assert_allclose(tiny_g, M.build("monotonicity_nguyen")(f, X, R, A, groups=g))


def test_metrics_share_the_hybrid_cache():
    rng = np.random.default_rng(0)
    X, R, A = rng.normal(size=(4, 5)), rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    res = M.evaluate_metrics(_lin(np.ones(5)), X, R, {"a": A},
                             metrics=["pixel_flipping", "selectivity", "irof"], progress=False)
    # Selectivity and IROF (singletons) remove the same units as pixel flipping: no new points.
    assert res.stats["evaluated"] == 4 * 5 + 4


def test_region_perturbation_direction_and_random():
    assert M.build("region_perturbation").higher_is_better
    assert not M.build("region_perturbation", order="lerf").higher_is_better
    rng = np.random.default_rng(0)
    X, R, A = rng.normal(size=(4, 5)), rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    m = M.build("region_perturbation", order="random")
    np.testing.assert_array_equal(m(f := _lin(np.ones(5)), X, R, A), m(f, X, R, A))
    # Random order ignores the attributions.
    np.testing.assert_array_equal(m(f, X, R, A), m(f, X, R, -A))


# ------------------------------------------------------------------------------- options
@pytest.mark.parametrize("name, options, match", [
    ("pixel_flipping", {"features_in_step": 0}, "features_in_step"),
    ("region_perturbation", {"order": "best"}, "order"),
    ("region_perturbation", {"regions_evaluation": -1}, "regions_evaluation"),
    ("region_perturbation", {"score": "area"}, "score"),
    ("monotonicity_nguyen", {"nr_samples": 0}, "nr_samples"),
    ("monotonicity_nguyen", {"noise": -1.0}, "noise"),
    ("faithfulness_correlation", {"nr_runs": 0}, "nr_runs"),
    ("faithfulness_correlation", {"subset_size": 0}, "subset_size"),
    ("road", {"percentages": [10, 120]}, "percentages"),
    ("road", {"percentages": "abc"}, "percentages"),
    ("road", {"noise": -0.1}, "noise"),
    ("road", {"image_shape": (2, 0)}, "image_shape"),
    ("road", {"imputation": "mean"}, "imputation"),
    ("sufficiency_dasgupta", {"threshold": -0.1}, "threshold"),
    ("sufficiency_dasgupta", {"distance_func": "nope"}, "distance_func"),
    ("sufficiency_dasgupta", {"tol": -1.0}, "tol"),
    ("irof", {"segments": 3}, "segments"),
])
def test_bad_options(name, options, match):
    with pytest.raises(ValueError, match=match):
        M.build(name, **options)


def test_an_option_of_the_wrong_type_is_a_type_error_naming_metric_and_option():
    with pytest.raises(TypeError, match=r"metric 'pixel_flipping': abs must be True or False"):
        M.build("pixel_flipping", abs="yes")


def test_bad_runtime_arguments():
    rng = np.random.default_rng(0)
    X, R, A = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    f = _lin(np.ones(4))
    with pytest.raises(ValueError, match="subset_size"):
        M.build("faithfulness_correlation", subset_size=4)(f, X, R, A)
    fc = M.build("faithfulness_correlation")
    with pytest.raises(ValueError, match="subsets"):
        fc(f, X, R, A, subsets=np.zeros((2, 5, 1), int))
    with pytest.raises(ValueError, match="subsets"):
        fc(f, X, R, A, subsets=np.full((3, 5, 1), 7))
    with pytest.raises(ValueError, match="subsets"):
        fc(f, X, R, A, subsets=np.zeros((3, 5, 3), bool))


def test_registry_and_docs():
    assert set(ALL) == {"pixel_flipping", "region_perturbation", "selectivity",
                        "monotonicity_arya", "monotonicity_nguyen", "faithfulness_correlation",
                        "faithfulness_estimate", "road", "irof", "sufficiency_dasgupta"}
    for name in ALL:
        cls = type(M.build(name))
        assert cls.family == "quantus" and "quantus." in cls.source
        assert "Parameters" in cls.__doc__ and "quantus." in cls.__doc__


# -- sufficiency_dasgupta with a unit constant over pairs ------------------------------------------
W = np.array([1.0, -2.0, 3.0, 0.5])


def test_sufficiency_seuclidean_ignores_a_unit_constant_over_pairs():
    """A unit with the same attribution on every pair (x_j = r_j everywhere) is left out of the
    seuclidean distance (0/0): the scores are those without that unit, not NaN on every pair."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(8, 4))
    R = X.copy()
    R[:, :3] = 0.0  # feature 3 never differs: its attribution is 0 on every pair
    A = (X - R) * W

    def f3(Z):
        return np.asarray(Z)[:, :3] @ W[:3]

    got = M.build("sufficiency_dasgupta")(lambda Z: f3(Z), X, R, A)
    want = M.build("sufficiency_dasgupta")(f3, X[:, :3], R[:, :3], A[:, :3])
    assert np.isfinite(got).sum() >= 6
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)])
