"""BEExAI's faithfulness table (insdel.metrics.beexai_family) against BEExAI 0.0.6's own classes.

BEExAI runs with ``task="regression"`` and ``baseline="zero"``; insdel with ``R = 0`` (the same
hybrid points). BEExAI returns data-set means; insdel's per-pair scores are averaged, or, for the
metrics BEExAI pools before its last step, compared one pair at a time. Random draws (subsets,
noise) are fed to both sides. ``beexai.evaluate.metrics.auc_tp`` imports ``beexai.training``,
which imports xgboost (not a dependency): the test puts an empty stand-in module in its place.
"""

from __future__ import annotations

import importlib
import sys
import types

import numpy as np
import pytest
import torch
from beexai.evaluate.metrics.complexity import Complexity as BComplexity
from beexai.evaluate.metrics.comprehensiveness import Comprehensiveness as BComp
from beexai.evaluate.metrics.faithfulnesscorr import FaithfulnessCorrelation as BFaith
from beexai.evaluate.metrics.infidelity import Infidelity as BInf
from beexai.evaluate.metrics.monotonicity import Monotonicity as BMono
from beexai.evaluate.metrics.sensitivity import Sensitivity as BSens
from beexai.evaluate.metrics.sparseness import Sparseness as BSpars
from beexai.evaluate.metrics.sufficiency import Sufficiency as BSuff
from hypothesis import given, settings
from hypothesis import strategies as st

import insdel.metrics as M
from insdel.metrics.base import MetricContext

TOL = dict(rtol=1e-6, atol=1e-8)
N_FEAT = 8


class Net(torch.nn.Module):
    """A small float64 regression net with the ``.predict`` BEExAI calls."""

    def __init__(self, n: int = N_FEAT, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.body = torch.nn.Sequential(torch.nn.Linear(n, 16), torch.nn.Tanh(),
                                        torch.nn.Linear(16, 1)).double()

    def forward(self, x):
        return self.body(x)

    def predict(self, x):
        with torch.no_grad():
            return self(torch.as_tensor(x, dtype=torch.float64))


@pytest.fixture(autouse=True)
def _float64():
    """BEExAI builds its baseline rows with torch's default dtype: make it float64."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    B = 12
    X = rng.normal(size=(B, N_FEAT))
    A = rng.normal(size=(B, N_FEAT))  # continuous: no ties
    return Net(), X, np.zeros_like(X), A


def _orders(A):
    return torch.as_tensor(np.argsort(-np.abs(A), axis=1, kind="stable"))


@pytest.mark.parametrize("ratio", [0.3, [0.2, 0.5, 1.0]])
def test_comprehensiveness_sufficiency_match_beexai(data, ratio):
    net, X, R, A = data
    Xt = torch.as_tensor(X)
    b_comp = BComp(net, "regression").get_comp(Xt, _orders(A), ratio, baseline="zero")
    b_suff = BSuff(net, "regression").get_sufficiency(Xt, _orders(A), ratio, baseline="zero")
    ours_c = M.build("comprehensiveness", ratio=ratio)(net, X, R, A)
    ours_s = M.build("sufficiency", ratio=ratio)(net, X, R, A)
    assert ours_c.shape == ours_s.shape == (X.shape[0],)
    np.testing.assert_allclose(ours_c.mean(), b_comp, **TOL)
    np.testing.assert_allclose(ours_s.mean(), b_suff, **TOL)


def test_monotonicity_matches_beexai_per_pair(data):
    net, X, R, A = data
    ours = M.build("monotonicity_beexai", first_point="beexai")(net, X, R, A)
    for i in range(X.shape[0]):
        b = BMono(net, "regression").get_mono(torch.as_tensor(X[i:i + 1]), _orders(A[i:i + 1]),
                                              baseline="zero")
        assert ours[i] == pytest.approx(b, rel=1e-6)  # BEExAI: a float32 mean


def test_monotonicity_gap_form_transcription(data):
    net, X, R, A = data
    ours = M.build("monotonicity_beexai")(net, X, R, A)
    f = lambda Z: net.predict(Z).numpy().ravel()  # noqa: E731
    order = np.argsort(-np.abs(A), axis=1, kind="stable")
    for i in range(X.shape[0]):
        c = []
        for k in range(N_FEAT + 1):
            z = np.zeros(N_FEAT)
            z[order[i, :k]] = X[i, order[i, :k]]
            c.append(abs(f(z[None])[0] - f(X[i:i + 1])[0]))
        d = np.diff(c)
        assert ours[i] == pytest.approx(np.mean(d[:-1] <= d[1:]), abs=1e-12)


def _no_repeat_subsets(n_repeats, size, n):
    """A torch seed whose BEExAI subsets repeat no feature, and those subsets."""
    for seed in range(1000):
        torch.manual_seed(seed)
        s = torch.randint(n, size=(n_repeats, size))
        if all(len(set(row.tolist())) == size for row in s):
            return seed, s
    raise AssertionError("no seed found")


def test_faithfulness_correlation_matches_beexai_one_pair(data):
    net, X, R, A = data
    metric = M.build("faithfulness_correlation_beexai", subset_fraction=0.25, n_repeats=20)
    size = int(0.25 * N_FEAT)
    for i in range(4):
        seed, subs = _no_repeat_subsets(20, size, N_FEAT)
        torch.manual_seed(seed)
        b = BFaith(net, "regression").get_faithfulness(
            torch.as_tensor(X[i:i + 1]), torch.as_tensor(np.abs(A[i:i + 1])), size,
            n_repeats=20, baseline="zero")
        masks = np.zeros((1, 20, N_FEAT), bool)
        for j, row in enumerate(subs.numpy()):
            masks[0, j, row] = True
        metric.subsets = lambda ctx, method=None, _m=masks: _m
        ours = metric(net, X[i:i + 1], R[i:i + 1], A[i:i + 1])
        np.testing.assert_allclose(ours[0], b, **TOL)


def test_faithfulness_correlation_subsets_have_fixed_size(data):
    net, X, R, A = data
    metric = M.build("faithfulness_correlation_beexai", subset_fraction=0.4)
    ctx = MetricContext(net, X, R, seed=5)
    S = metric.subsets(ctx, "m")
    assert S.shape == (X.shape[0], 20, N_FEAT)
    assert (S.sum(-1) == int(0.4 * N_FEAT)).all()
    np.testing.assert_array_equal(S, metric.subsets(ctx, "m"))  # seeded by (name, method)
    assert not np.array_equal(S, metric.subsets(ctx, "other"))


def test_infidelity_gaussian_matches_beexai(data):
    net, X, R, A = data
    metric = M.build("infidelity", perturbation="gaussian", sigma=0.3, absolute=True)
    ctx = MetricContext(net, X, R, seed=1)
    eps = metric.perturbations(ctx, "m")  # (K, B, n)
    ours = metric.compute(ctx, ctx.unit_attributions(A), method="m")
    b = BInf(net, "regression", std=0.3)
    b.__get_noises__ = lambda x_in, k=5: torch.as_tensor(eps)  # the same I on both sides
    ref = b.get_inf(torch.as_tensor(X), torch.as_tensor(np.abs(A)))
    np.testing.assert_allclose(ours.mean(), ref, **TOL)


def test_infidelity_reference_matches_captum(data):
    from captum.metrics import infidelity, infidelity_perturb_func_decorator

    net, X, _, A = data
    rng = np.random.default_rng(0)
    R = X + rng.normal(size=X.shape)  # x != r everywhere: captum divides by x - r
    metric = M.build("infidelity", n_samples=7)
    ctx = MetricContext(net, X, R, seed=2)
    S = metric.perturbations(ctx, "m")  # (B, K, m), True: from r
    ours = metric.compute(ctx, ctx.unit_attributions(A), method="m")
    K = S.shape[1]
    flat = torch.as_tensor(S.reshape(-1, N_FEAT))  # captum repeats each input K times in a row

    @infidelity_perturb_func_decorator(True)
    def perturb(inputs, baselines):
        return torch.where(flat, baselines, inputs)

    ref = infidelity(net, perturb, torch.as_tensor(X), torch.as_tensor(A),
                     baselines=torch.as_tensor(R), n_perturb_samples=K)
    np.testing.assert_allclose(ours, ref.numpy(), **TOL)


def test_infidelity_reference_of_exact_additive_attributions_is_zero():
    rng = np.random.default_rng(4)
    w = rng.normal(size=5)
    X, R = rng.normal(size=(6, 5)), rng.normal(size=(6, 5))
    f = lambda Z: Z @ w  # noqa: E731
    A = (X - R) * w  # exact for a linear model
    assert np.allclose(M.build("infidelity", n_samples=9)(f, X, R, A), 0, atol=1e-20)
    with pytest.raises(ValueError, match="groups"):
        M.build("infidelity", perturbation="gaussian")(f, X, R, A, groups=[[0, 1], [2, 3, 4]])
    with pytest.raises(ValueError, match="sigma"):
        M.build("infidelity", perturbation="gaussian")(f, X[:1], R[:1], A[:1])


class _Explainer:
    """BEExAI's explainer interface around a callable (X, R) -> A with R = 0."""

    def __init__(self, fn):
        self.fn = fn

    def explain(self, x, label=None):
        x = x.numpy()
        return torch.as_tensor(self.fn(x, np.zeros_like(x)))


def _grad_x_input(net):
    def fn(X, R):
        t = torch.as_tensor(X - R).requires_grad_(True)
        with torch.enable_grad():
            net(t).sum().backward()
        return (t.grad * (t - torch.as_tensor(R))).detach().numpy()
    return fn


def test_sensitivity_matches_beexai_one_pair(data):
    net, X, R, A = data
    expl = _grad_x_input(net)
    A0 = expl(X, R)
    metric = M.build("sensitivity", radius=0.2)
    for i in range(3):
        ctx = MetricContext(net, X[i:i + 1], R[i:i + 1], seed=i)
        d = metric.noise(ctx, "m")
        ours = metric.compute(ctx, ctx.unit_attributions(A0[i:i + 1]), explainer=expl, method="m")
        b = BSens(net, "regression", "cpu", _Explainer(expl), radius=0.2)
        b.__get_noises__ = lambda x_in, k=5, _d=d: torch.as_tensor(_d)
        ref = b.get_sens(torch.as_tensor(X[i:i + 1]), attributions=torch.as_tensor(A0[i:i + 1]))
        np.testing.assert_allclose(100 * ours[0], ref, **TOL)


def test_sensitivity_explanation_norm_matches_captum(data):
    from captum.metrics import sensitivity_max

    net, X, R, A = data
    expl = _grad_x_input(net)
    metric = M.build("sensitivity", normalize="explanation", n_samples=4)
    ctx = MetricContext(net, X, R, seed=0)
    d = metric.noise(ctx, "m")  # (K, B, n)
    ours = metric.compute(ctx, ctx.unit_attributions(expl(X, R)), explainer=expl, method="m")
    flat = torch.as_tensor(np.transpose(d, (1, 0, 2)).reshape(-1, N_FEAT))  # pair-major

    def perturb(inputs, perturb_radius=None):
        return inputs - flat

    def explanation(inputs):
        x = inputs[0] if isinstance(inputs, tuple) else inputs
        out = torch.as_tensor(expl(x.detach().numpy(), np.zeros(x.shape)))
        return (out,) if isinstance(inputs, tuple) else out  # captum's format in, format out

    ref = sensitivity_max(explanation, torch.as_tensor(X), perturb_func=perturb,
                          n_perturb_samples=4)
    np.testing.assert_allclose(ours, ref.numpy(), **TOL)


def test_sensitivity_needs_an_explainer(data):
    net, X, R, A = data
    with pytest.raises(ValueError, match="explainer"):
        M.build("sensitivity")(net, X, R, A)
    res = M.evaluate_metrics(net, X, R, {"gxi": A}, metrics=["sensitivity"],
                             explainers={"gxi": _grad_x_input(net)})
    assert res.scores["value"].notna().all()


@pytest.fixture(scope="module")
def auc_tp_class():
    """BEExAI's AucTp, imported with an empty stand-in for xgboost (not installed)."""
    saved = sys.modules.get("xgboost")
    stub = types.ModuleType("xgboost")
    stub.XGBClassifier = stub.XGBRegressor = type("XGBStub", (), {})
    sys.modules["xgboost"] = stub
    try:
        mod = importlib.import_module("beexai.evaluate.metrics.auc_tp")
    finally:
        if saved is None:
            sys.modules.pop("xgboost", None)
        else:
            sys.modules["xgboost"] = saved
    return mod.AucTp


def _mse(a, b):
    return torch.mean((a - b) ** 2)


def test_auc_tp_matches_beexai(data, auc_tp_class):
    net, X, R, A = data
    _, ref = auc_tp_class(net, "regression").get_auctp(torch.as_tensor(X), _orders(A), _mse,
                                                       baseline="zero")
    ours = M.build("auc_tp", level="dataset")(net, X, R, A)
    np.testing.assert_allclose(ours, np.full(X.shape[0], ref.item()), **TOL)
    per_pair = M.build("auc_tp")(net, X, R, A)
    for i in range(X.shape[0]):
        _, r1 = auc_tp_class(net, "regression").get_auctp(
            torch.as_tensor(X[i:i + 1]), _orders(A[i:i + 1]), _mse, baseline="zero")
        np.testing.assert_allclose(per_pair[i], r1.item(), **TOL)


def test_auc_tp_flat_model_is_nan():
    X = np.ones((3, 5))
    out = M.build("auc_tp")(lambda Z: np.zeros(len(Z)), X, np.zeros_like(X), np.arange(15.).reshape(3, 5))
    assert np.isnan(out).all()


def test_sparseness_complexity_match_beexai(data):
    net, X, R, A = data
    At = torch.as_tensor(A)
    spars = BSpars(net, "regression").get_sparsity(torch.sort(torch.abs(At), axis=1)[0]).item()
    compl = BComplexity(net, "regression").get_cmpl(At).item()
    np.testing.assert_allclose(M.build("sparseness")(net, X, R, A).mean(), spars, rtol=1e-6)
    np.testing.assert_allclose(M.build("complexity")(net, X, R, A).mean(), compl, rtol=1e-6)
    Z = np.zeros_like(A)
    assert np.isnan(M.build("sparseness")(net, X, R, Z)).all()
    assert np.isnan(M.build("complexity")(net, X, R, Z)).all()
    one_hot = np.eye(N_FEAT)[:X.shape[0] % N_FEAT + 1].repeat(1, 0)
    B1 = one_hot.shape[0]
    assert np.allclose(M.build("sparseness")(net, X[:B1], R[:B1], one_hot), 1 - 1 / N_FEAT)
    assert np.allclose(M.build("complexity")(net, X[:B1], R[:B1], one_hot), 0)


# ---- properties --------------------------------------------------------------------------------

def _pairs(seed, B, n):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(B, n)), rng.normal(size=(B, n)), rng.normal(size=(B, n))


def _model(n, seed=0):
    rng = np.random.default_rng(seed + 100)
    W, v = rng.normal(size=(n, 5)), rng.normal(size=5)
    return lambda Z: np.tanh(Z @ W) @ v + 0.1 * (Z ** 2).sum(-1)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 7), B=st.integers(1, 4))
def test_full_removal_and_full_keep(seed, n, B):
    X, R, A = _pairs(seed, B, n)
    f = _model(n, seed)
    gap = np.abs(f(X) - f(R))
    np.testing.assert_allclose(M.build("comprehensiveness", ratio=1.0)(f, X, R, A), gap, atol=1e-12)
    np.testing.assert_allclose(M.build("sufficiency", ratio=1.0)(f, X, R, A), 0, atol=1e-12)
    np.testing.assert_allclose(M.build("comprehensiveness", ratio=0.0)(f, X, R, A), 0, atol=1e-12)
    np.testing.assert_allclose(M.build("sufficiency", ratio=0.0)(f, X, R, A), gap, atol=1e-12)


MODEL_METRICS = ["comprehensiveness", "sufficiency", "auc_tp", "monotonicity_beexai",
                 "faithfulness_correlation_beexai", "infidelity", "sparseness", "complexity"]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 7))
def test_singleton_groups_equal_ungrouped(seed, n):
    X, R, A = _pairs(seed, 3, n)
    f = _model(n, seed)
    groups = [[j] for j in range(n)]
    for name in MODEL_METRICS:
        a = M.build(name)(f, X, R, A, seed=seed)
        b = M.build(name)(f, X, R, A, groups=groups, seed=seed)
        np.testing.assert_array_equal(a, b, err_msg=name)


def test_groups_move_together():
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    f = _model(6)
    groups = [[0, 1], [2, 3], [4, 5]]
    A = rng.normal(size=(4, 3))
    ours = M.build("comprehensiveness", ratio=0.34)(f, X, R, A, groups=groups)  # int(3 * .34) = 1
    top = np.argmax(np.abs(A), axis=1)
    Z = X.copy()
    for i, g in enumerate(top):
        Z[i, groups[g]] = R[i, groups[g]]
    np.testing.assert_allclose(ours, np.abs(f(X) - f(Z)), atol=1e-12)


def test_evaluate_metrics_shares_the_cache():
    X, R, A = _pairs(1, 5, 6)
    f = _model(6)
    res = M.evaluate_metrics(f, X, R, {"a": A, "b": -A}, metrics=MODEL_METRICS)
    assert set(res.scores["metric"]) == set(MODEL_METRICS)
    assert res.stats["evaluated"] < res.stats["requested"]
    # removal by |a| and by |-a| is the same: comprehensiveness agrees for both methods
    w = res.wide()
    np.testing.assert_allclose(w.xs("a", level="method")["comprehensiveness"],
                               w.xs("b", level="method")["comprehensiveness"])


def test_names_family_and_options():
    names = M.available("beexai")
    assert set(names) == {"comprehensiveness", "sufficiency", "auc_tp", "monotonicity_beexai",
                          "faithfulness_correlation_beexai", "infidelity", "sensitivity",
                          "sparseness", "complexity"}
    for bad, match in [(dict(ratio=1.5), "ratio"), (dict(ratio=[]), "ratio"),
                       (dict(order="up"), "order")]:
        with pytest.raises((ValueError, TypeError), match=match):
            M.build("comprehensiveness", **bad)
    with pytest.raises(TypeError, match="n_repeats"):
        M.build("faithfulness_correlation_beexai", n_repeats=2.5)
    with pytest.raises(ValueError, match="perturbation"):
        M.build("infidelity", perturbation="uniform")
    with pytest.raises(ValueError, match="sigma"):
        M.build("infidelity", sigma="big")
    with pytest.raises(ValueError, match="level"):
        M.build("auc_tp", level="batch")
    with pytest.raises(ValueError, match="normalize"):
        M.build("sensitivity", normalize="max")
    with pytest.raises(ValueError, match="first_point"):
        M.build("monotonicity_beexai", first_point="zero")


def test_sensitivity_auto_radius_one_pair_is_an_error():
    """radius='auto' is a mean over pairs of targets: one target, or identical ones, would give
    radius 0 and a NaN score; it is an error saying to give radius= a number."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                              torch.nn.Linear(8, 1)).double()
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(3, 4)), np.zeros((3, 4))
    A = _grad_x_input(net)(X, R)
    metric = M.build("sensitivity", radius="auto")
    with pytest.raises(ValueError, match=r"radius='auto'.*at least 2 targets.*radius="):
        metric(net, X[:1], R[:1], A[:1], explainer=_grad_x_input(net))
    with pytest.raises(ValueError, match=r"identical.*radius="):
        metric(net, np.repeat(X[:1], 3, 0), R, np.repeat(A[:1], 3, 0), explainer=_grad_x_input(net))
    # two or more distinct targets: a finite score per pair; a number works for one pair
    assert np.isfinite(np.asarray(metric(net, X, R, A, explainer=_grad_x_input(net)))).all()
    one = M.build("sensitivity", radius=0.5)(net, X[:1], R[:1], A[:1], explainer=_grad_x_input(net))
    assert np.isfinite(np.asarray(one)).all()
