"""Attribution methods with the policy's reference and IG with binary features (issue #5)."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import insdel
from insdel.attribution import (
    METHODS,
    MODEL_AGNOSTIC,
    DeepLift,
    InputXGradient,
    IntegratedGradients,
    VanillaGrad,
    attribute,
)

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------------------------------
# helpers
def brute_shapley(f, x, r):
    """Exact baseline Shapley values by the subset formula (2^n evaluations, n small)."""
    n = x.shape[0]
    masks = np.array(list(itertools.product([0, 1], repeat=n)), bool)
    vals = f(np.where(masks, x, r))
    v = {tuple(m): y for m, y in zip(masks, vals, strict=True)}
    phi = np.zeros(n)
    for m in masks:
        s = int(m.sum())
        for j in np.flatnonzero(~m):
            w = math.factorial(s) * math.factorial(n - s - 1) / math.factorial(n)
            m2 = m.copy()
            m2[j] = True
            phi[j] += w * (v[tuple(m2)] - v[tuple(m)])
    return phi


def mlp(n, act=torch.nn.PReLU, hidden=(24, 16), dropout=0.2, seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    layers, d = [], n
    for h in hidden:
        layers += [torch.nn.Linear(d, h), act(), torch.nn.Dropout(dropout)]
        d = h
    layers.append(torch.nn.Linear(d, 1))
    net = torch.nn.Sequential(*layers).to(dtype)
    with torch.no_grad():  # non-trivial PReLU slopes
        for mod in net.modules():
            if isinstance(mod, torch.nn.PReLU):
                mod.weight.fill_(0.3)
    return net


def f_np(net):
    def f(A):
        with torch.no_grad():
            return net(torch.from_numpy(np.asarray(A, np.float64)))[:, 0].numpy()
    return f


def pairs(B, n, binary=(), seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(B, n))
    R = rng.normal(size=(B, n))
    b = list(binary)
    if b:
        X[:, b] = rng.integers(0, 2, (B, len(b)))
        R[:, b] = 1 - X[:, b]  # every binary differs
    return X, R


class Quad(torch.nn.Module):
    """f(x1, x2) = x1 * x2 + x1^2 (hand computations)."""

    def __init__(self):
        super().__init__()
        self.dummy = torch.nn.Parameter(torch.zeros((), dtype=torch.float64))

    def forward(self, z):
        return z[:, 0] * z[:, 1] + z[:, 0] ** 2 + self.dummy


# --------------------------------------------------------------------------------------------------
# exact Shapley
def test_exact_shapley_matches_brute_force_and_is_complete():
    n = 5
    net = mlp(n).eval()
    X, R = pairs(4, n)
    A = attribute(net, X, R, "exact_shapley")
    f = f_np(net)
    for b in range(4):
        np.testing.assert_allclose(A[b], brute_shapley(f, X[b], R[b]), atol=1e-12)
    np.testing.assert_allclose(A.sum(1), f(X) - f(R), atol=1e-12)


# --------------------------------------------------------------------------------------------------
# completeness
@pytest.mark.parametrize("mode", ["cast", "interpolate", "jump"])
def test_ig_completeness_all_modes(mode):
    """IG (every binary mode) sums to f(x) - f(r): within 1e-3 (1 + |f(x) - f(r)|) at 500 midpoint
    steps on a PReLU net (kinks make the Riemann error O(1/K)); 1e-6 on a smooth (tanh) net."""
    n, binary = 6, [0, 2, 3]
    X, R = pairs(5, n, binary)
    for act, tol in ((torch.nn.PReLU, 1e-3), (torch.nn.Tanh, 1e-6)):
        net = mlp(n, act=act).eval()
        f = f_np(net)
        ig = IntegratedGradients(net)
        A = ig.attribute(X, R, binary=binary, binary_mode=mode, n_steps=500)
        gap = A.sum(1) - (f(X) - f(R))
        assert np.all(np.abs(gap) <= tol * (1 + np.abs(f(X) - f(R)))), (act, gap)
        np.testing.assert_allclose(ig.info_["delta"], gap, atol=1e-12)


def test_deeplift_completeness_and_prelu_rescale():
    n = 6
    net = mlp(n).eval()
    X, R = pairs(8, n)
    f = f_np(net)
    dl = DeepLift(net)
    A = dl.attribute(X, R)
    np.testing.assert_allclose(A.sum(1), f(X) - f(R), atol=1e-8)
    assert dl.info_["max_abs_delta"] < 1e-8
    # captum alone passes gradients through PReLU: completeness is then lost
    A0 = attribute(net, X, R, "deeplift", prelu_rescale=False)
    assert np.abs(A0.sum(1) - (f(X) - f(R))).max() > 1e-6
    from captum.attr._core import deep_lift as dl_mod
    assert torch.nn.PReLU not in dl_mod.SUPPORTED_NON_LINEAR  # registry restored


def test_deeplift_on_one_module_from_several_threads_at_once():
    """captum's DeepLift hooks the module it explains; calls from several threads on one module
    (the threads of a Dask worker share the scattered model), with and without the PReLU rescale
    rule, each give the values of a call made alone."""
    import threading

    n = 6
    net = mlp(n).eval()
    X, R = pairs(40, n)
    refs = {rescale: attribute(net, X, R, "deeplift", chunk_rows=2, prelu_rescale=rescale)
            for rescale in (True, False)}
    got, errors = [], []

    def run(rescale: bool) -> None:
        try:
            for _ in range(3):
                got.append((rescale, attribute(net, X, R, "deeplift", chunk_rows=2,
                                               prelu_rescale=rescale)))
        except Exception as exc:  # reported below, with the thread's error
            errors.append(repr(exc))

    threads = [threading.Thread(target=run, args=(k % 2 == 0,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(got) == 12
    for rescale, A in got:
        np.testing.assert_array_equal(A, refs[rescale])
    assert {type(m) for m in net.modules() if isinstance(m, torch.nn.PReLU)} == {torch.nn.PReLU}


# --------------------------------------------------------------------------------------------------
# binary features: interpolate and jump equal Shapley when every feature is binary
def test_all_binary_interpolate_and_jump_equal_exact_shapley():
    n = 5
    net = mlp(n, act=torch.nn.Tanh).eval()
    rng = np.random.default_rng(3)
    X = rng.integers(0, 2, (6, n)).astype(float)
    R = rng.integers(0, 2, (6, n)).astype(float)
    X[0], R[0] = 1.0, 0.0  # one pair with all five differing
    ex = attribute(net, X, R, "exact_shapley")
    f = f_np(net)
    np.testing.assert_allclose(ex[0], brute_shapley(f, X[0], R[0]), atol=1e-12)
    all_bin = np.ones(n, bool)
    a_int = attribute(net, X, R, "ig", binary=all_bin, binary_mode="interpolate", n_steps=500)
    np.testing.assert_allclose(a_int, ex, atol=1e-6)
    a_gl = attribute(net, X, R, "ig", binary=all_bin, binary_mode="interpolate", n_steps=8,
                     rule="gausslegendre")  # polynomial of degree m - 1 in t: exact
    np.testing.assert_allclose(a_gl, ex, atol=1e-12)
    a_jump = attribute(net, X, R, "ig", binary=all_bin, binary_mode="jump", n_steps=10)
    np.testing.assert_allclose(a_jump, ex, atol=1e-12)
    # sampled orders: seeded, and close to the exact average with many orders
    kw = dict(binary=all_bin, binary_mode="jump", all_orders_max_m=0, n_steps=10)
    s1 = attribute(net, X, R, "ig", n_orders=3000, seed=1, **kw)
    s2 = attribute(net, X, R, "ig", n_orders=3000, seed=1, **kw)
    np.testing.assert_array_equal(s1, s2)
    scale = np.abs(ex).max()
    assert np.abs(s1 - ex).max() < 0.05 * scale
    np.testing.assert_allclose(s1.sum(1), ex.sum(1), atol=1e-10)  # every order is complete


def test_binary_options_need_binary():
    """``binary_mode`` other than cast, or ``binary_levels``, without ``binary=`` is an error (it
    used to return plain IG, every feature continuous)."""
    net = mlp(3, act=torch.nn.Tanh).eval()
    X, R = np.ones((2, 3)), np.zeros((2, 3))
    for kw, what in (({"binary_mode": "jump"}, "binary_mode='jump'"),
                     ({"binary_mode": "interpolate"}, "binary_mode='interpolate'"),
                     ({"binary_levels": "infer"}, "binary_levels")):
        with pytest.raises(ValueError, match=f"{what} needs binary="):
            attribute(net, X, R, "ig", **kw)
    np.testing.assert_array_equal(  # an explicit empty set of binaries is plain IG, as asked
        attribute(net, X, R, "ig", binary=np.zeros(3, bool), binary_mode="jump", n_steps=8),
        attribute(net, X, R, "ig", n_steps=8))


def test_jump_one_binary_hand_computation():
    """f = x1 x2 + x1^2, x2 binary. r = (0, 0), x = (2, 1): continuous x1 gets
    2 [int_0^1/2 4t dt + int_1/2^1 (4t + 1) dt] = 5, the jump credits x2 with f(1, 1) - f(1, 0) = 1.
    With levels (-1, 1): r = (0, -1), x = (2, 1) gives (4, 2)."""
    net = Quad()
    for rule in ("riemann_middle", "gausslegendre"):
        a = attribute(net, [[2.0, 1.0]], [[0.0, 0.0]], "ig", binary=[1], binary_mode="jump",
                      n_steps=100, rule=rule)
        np.testing.assert_allclose(a, [[5.0, 1.0]], atol=1e-12)
    a = attribute(net, [[2.0, 1.0]], [[0.0, -1.0]], "ig", binary=[1], binary_mode="jump",
                  binary_levels={1: (-1, 1)}, n_steps=100)
    np.testing.assert_allclose(a, [[4.0, 2.0]], atol=1e-12)
    # interpolate: g = x1 (s) + x1^2 along the path with s = t: a2 = int 2t dt = 1, a1 = 5 - ...
    a = attribute(net, [[2.0, 1.0]], [[0.0, 0.0]], "ig", binary=[1], binary_mode="interpolate",
                  n_steps=8, rule="gausslegendre")
    # g(t) = (2t)(t) + (2t)^2: d/dx1 part = 2 * int (t + 4t) dt = 5; binary: int 2t * 1 dt = 1
    np.testing.assert_allclose(a, [[5.0, 1.0]], atol=1e-12)


def test_binary_validation_errors():
    net = mlp(4).eval()
    X, R = pairs(3, 4, [1])
    X[2, 1] = 0.5
    with pytest.raises(ValueError, match=r"X row 2, feature 1"):
        attribute(net, X, R, "ig", binary=[1], binary_mode="jump")
    X, R = pairs(3, 4, [1])
    Xl, Rl = X.copy(), R.copy()
    Xl[:, 1] = np.where(X[:, 1] > 0, 1.7, -0.4)
    Rl[:, 1] = np.where(R[:, 1] > 0, 1.7, -0.4)
    with pytest.raises(ValueError, match="binary_levels"):
        attribute(net, Xl, Rl, "ig", binary=[1])
    levels = np.zeros((4, 2))
    levels[1] = (-0.4, 1.7)
    a1 = attribute(net, Xl, Rl, "ig", binary=[1], binary_levels=levels, binary_mode="jump")
    a2 = attribute(net, Xl, Rl, "ig", binary=[1], binary_levels="infer", binary_mode="jump")
    np.testing.assert_allclose(a1, a2)
    with pytest.raises(ValueError, match="lo < hi"):
        attribute(net, X, R, "ig", binary=[1], binary_levels={1: (1, 0)})
    Xb, Rb = pairs(2, 6, range(6))
    with pytest.raises(ValueError, match=r"m = 6 .*2\^6"):
        attribute(mlp(6).eval(), Xb, Rb, "ig", binary=range(6), binary_mode="interpolate",
                  max_interpolate=5)
    with pytest.raises(ValueError, match="binary_mode"):
        attribute(net, X, R, "ig", binary=[1], binary_mode="teleport")


# --------------------------------------------------------------------------------------------------
# kernel shap converges to exact Shapley
@pytest.mark.parametrize("backend", ["captum", "insdel"])
def test_kernel_shap_approaches_exact_shapley(backend):
    """Mean absolute error against exact Shapley shrinks with n_samples and is below 5 % of the
    mean |phi| at 3,000 samples (n = 5)."""
    n = 5
    net = mlp(n).eval()
    X, R = pairs(2 if backend == "captum" else 20, n, seed=4)
    ex = attribute(net, X, R, "exact_shapley")
    errs = {}
    for ns in (64, 3000):
        a = attribute(net, X, R, "kernel_shap", n_samples=ns, seed=0, backend=backend,
                      exact="never")  # the sampler itself (2^5 <= 64 would take the exact road)
        errs[ns] = np.abs(a - ex).mean()
    assert errs[3000] < errs[64]
    assert errs[3000] < 0.05 * np.abs(ex).mean()
    a1 = attribute(net, X, R, "kernel_shap", n_samples=64, seed=5, backend=backend, exact="never")
    a2 = attribute(net, X, R, "kernel_shap", n_samples=64, seed=5, backend=backend, exact="never")
    np.testing.assert_array_equal(a1, a2)


# --------------------------------------------------------------------------------------------------
# sign convention on a linear model
def test_sign_convention_linear_model():
    n = 5
    w = np.array([2.0, -1.0, 0.5, 3.0, -2.5])
    lin = torch.nn.Linear(n, 1, bias=True).double()
    with torch.no_grad():
        lin.weight[:] = torch.from_numpy(w)[None]
        lin.bias.fill_(0.7)
    x = np.array([1.0, 3.0, 1.0, 0.0, 1.0])
    r = np.array([0.0, 0.5, 5.0, 1.0, 0.4])
    X, R = np.stack([x, r]), np.stack([r, x])  # both directions
    truth = w * (X - R)  # distinct values
    want = np.argsort(-truth, axis=1, kind="stable")
    numpy_f = lambda A: A @ w + 0.7  # noqa: E731
    for method in ("kernel_shap", "exact_shapley", "lime", "integrated_gradients", "deeplift"):
        for model in ([lin] if method in ("integrated_gradients", "deeplift") else [lin, numpy_f]):
            opts = {"n_samples": 300} if method in ("kernel_shap", "lime") else {}
            A = attribute(model, X, R, method, **opts)
            np.testing.assert_array_equal(insdel.orderings(A), want, err_msg=method)
            if method == "kernel_shap":
                np.testing.assert_allclose(attribute(model, X, R, method, backend="insdel"),
                                           truth, atol=1e-6)
            if method != "lime":  # lime is a penalised (lasso) fit: ordering only
                tol = 1e-4 if method == "kernel_shap" else 1e-9  # captum fits in float32
                np.testing.assert_allclose(A, truth, atol=tol, err_msg=method)
    for mode in ("cast", "interpolate", "jump"):
        A = attribute(lin, X, R, "ig", binary=[0, 3, 4], binary_mode=mode,
                      binary_levels={4: (0.4, 1.0)})
        np.testing.assert_allclose(A, truth, atol=1e-9)
    # methods that ignore r: vanilla grad = w * scale, input x gradient = x * w
    s = np.array([1.0, 2.0, 0.5, 1.0, 3.0])
    np.testing.assert_allclose(attribute(lin, X, R, "vanilla_grad", scale=s), np.tile(w * s, (2, 1)))
    np.testing.assert_allclose(attribute(lin, X, R, "vanilla_grad", abs=True),
                               np.tile(np.abs(w), (2, 1)))
    np.testing.assert_allclose(attribute(lin, X, R, "vanilla_grad", scale="std"),
                               np.tile(w * X.std(0), (2, 1)))
    np.testing.assert_allclose(attribute(lin, X, R, "input_x_gradient"), X * w)
    Xz = np.where(X == 0, -1e-4, X)
    Xz[:, [1, 2]] = X[:, [1, 2]]  # only binaries (0, 3, 4) are replaced
    np.testing.assert_allclose(
        attribute(lin, X, R, "input_x_gradient", binary=[0, 3, 4], binary_zero=-1e-4), Xz * w)
    # random: a seeded random ordering, reproducible, different across seeds
    a1 = attribute(lin, X, R, "random", seed=3)
    np.testing.assert_array_equal(a1, attribute(numpy_f, X, R, "random", seed=3))
    assert not np.array_equal(a1, attribute(lin, X, R, "random", seed=4))


# --------------------------------------------------------------------------------------------------
# every method on a PReLU + dropout MLP; agnostic ones on a numpy callable
def test_every_method_runs_on_prelu_dropout_mlp_in_eval_mode():
    n = 6
    net = mlp(n, dropout=0.5).float()
    net.train()  # the user's module in train mode: attributions switch it to eval
    X, R = pairs(4, n, [0, 1])
    opts = {"kernel_shap": {"n_samples": 200}, "lime": {"n_samples": 200},
            "integrated_gradients": {"n_steps": 50}}
    cohort = {"data": np.vstack([X, R]), "y": np.arange(8.0)}  # the model-free methods' game
    opts.update({"cohort_shapley": cohort, "igcs": cohort})
    res, info = {}, {}
    on_net = [k for k in METHODS if METHODS[k].requires != "trees"]  # tree_shap: tree models
    for k in on_net:
        res[k], info[k] = attribute(net, X, R, k, return_info=True, **opts.get(k, {}))
    assert set(res) == set(on_net) and set(METHODS) - set(on_net) == {"tree_shap"}
    assert not net.training
    assert all(p.grad is None for p in net.parameters())
    for k, A in res.items():
        assert A.shape == (4, n) and A.dtype == np.float64 and np.isfinite(A).all(), k
        assert info[k]["seconds"] >= 0 and info[k]["model_evaluations"] >= 0
        assert info[k]["completeness_gap"].shape == (4,)
    assert info["exact_shapley"]["model_evaluations"] == 4 * 2 ** n
    assert info["random"]["model_evaluations"] == 0
    again = {k: attribute(net, X, R, k, **opts.get(k, {}))
             for k in ["integrated_gradients", "deeplift"]}
    np.testing.assert_array_equal(again["integrated_gradients"], res["integrated_gradients"])
    # one method with its own options under two labels
    lab = {"ig_jump": attribute(net, X, R, "ig", return_info=True, binary=[0, 1],
                                binary_mode="jump", n_steps=20),
           "ig_cast": attribute(net, X, R, "integrated_gradients", return_info=True, n_steps=20)}
    assert set(lab) == {"ig_jump", "ig_cast"} and lab["ig_jump"][1]["binary_mode"] == "jump"
    assert lab["ig_cast"][1]["binary_mode"] == "cast"

    f = f_np(mlp(n))
    res2 = {k: attribute(f, X, R, k, **{"kernel_shap": {"n_samples": 100},
                                        "lime": {"n_samples": 100}}.get(k, {}))
            for k in MODEL_AGNOSTIC}
    assert set(res2) == set(MODEL_AGNOSTIC)
    with pytest.raises(TypeError, match="torch.nn.Module"):
        attribute(f, X, R, "integrated_gradients")
    with pytest.raises(ValueError, match="unknown attribution method"):
        attribute(f, X, R, "gradcam")
    with pytest.raises(TypeError, match="unknown option"):
        attribute(f, X, R, "kernel_shap", n_sample=10)


# --------------------------------------------------------------------------------------------------
# agreement with captum
@pytest.mark.parametrize("rule", ["riemann_middle", "riemann_right", "riemann_left",
                                  "gausslegendre"])
def test_ig_matches_captum(rule):
    from captum.attr import IntegratedGradients as CIG

    n = 5
    net = mlp(n).eval()
    X, R = pairs(3, n)
    ours = attribute(net, X, R, "ig", n_steps=40, rule=rule, chunk_rows=7)  # odd chunks
    ref = CIG(net).attribute(torch.from_numpy(X), baselines=torch.from_numpy(R), target=0,
                             n_steps=40, method=rule).numpy()
    np.testing.assert_allclose(ours, ref, atol=1e-10)


@pytest.mark.filterwarnings("ignore:Input Tensor 0 did not already require gradients")
def test_gradient_methods_match_captum():
    from captum.attr import InputXGradient, Saliency

    n = 5
    net = mlp(n).eval()
    X, R = pairs(3, n)
    Xt = torch.from_numpy(X)
    sal = Saliency(net).attribute(Xt, target=0, abs=False).numpy()
    np.testing.assert_allclose(attribute(net, X, R, "vanilla_grad"), sal, atol=1e-12)
    ixg = InputXGradient(net).attribute(Xt, target=0).detach().numpy()
    np.testing.assert_allclose(attribute(net, X, R, "input_x_gradient"), ixg, atol=1e-12)


def test_float32_model_and_chunking():
    n = 6
    net = mlp(n, dtype=torch.float32).eval()
    X, R = pairs(5, n, [2])
    for mode in ("cast", "interpolate", "jump"):
        a = attribute(net, X, R, "ig", binary=[2], binary_mode=mode, n_steps=30)
        b = attribute(net, X, R, "ig", binary=[2], binary_mode=mode, n_steps=30, chunk_rows=11)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_bench_attribution_tiny():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "attribution.py"), "--tiny"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    assert "ratio" in out and "integrated_gradients" in out


# -- seeds, boolean and finite options of the methods; non-finite attributions ---------------------
def _f(Z):
    return Z[:, 0] + 2.0 * Z[:, 1] * Z[:, 2]


@pytest.fixture(scope="module")
def four_pairs():
    rng = np.random.default_rng(0)
    return rng.normal(size=(4, 3)), rng.normal(size=(4, 3))


@pytest.fixture(scope="module")
def net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.PReLU(),
                               torch.nn.Linear(8, 1)).double()


@pytest.mark.parametrize("method,opts", [("kernel_shap", {"exact": "never", "n_samples": 20}),
                                         ("lime", {"n_samples": 20})])
@pytest.mark.parametrize("seed", [None, 2.7, True])
def test_sampled_methods_refuse_unrepeatable_seed(four_pairs, method, opts, seed):
    X, R = four_pairs
    with pytest.raises(TypeError, match="seed"):
        attribute(_f, X, R, method, seed=seed, **opts)


def test_chunked_attribute_refuses_float_seed(four_pairs):
    X, R = four_pairs
    with pytest.raises(TypeError, match="seed"):
        attribute(_f, X, R, "lime", n_samples=20, seed=2.7, pairs_per_chunk=2)


def test_ig_refuses_none_seed(net, four_pairs):
    X, R = four_pairs
    with pytest.raises(TypeError, match="seed"):
        attribute(net, X, R, "ig", n_steps=4, seed=None)


def test_vanilla_grad_abs_must_be_bool(net, four_pairs):
    with pytest.raises(TypeError, match="abs"):
        attribute(net, *four_pairs, "vanilla_grad", abs="no")


def test_deeplift_prelu_rescale_must_be_bool(net, four_pairs):
    with pytest.raises(TypeError, match="prelu_rescale"):
        attribute(net, *four_pairs, "deeplift", prelu_rescale="no")
    with pytest.raises(ValueError, match="eps"):
        attribute(net, *four_pairs, "deeplift", eps=float("nan"))


def test_attribute_return_info_must_be_bool(four_pairs):
    with pytest.raises(TypeError, match="return_info"):
        attribute(_f, *four_pairs, "random", return_info="no")


@pytest.mark.parametrize("alpha", [float("nan"), float("inf")])
def test_lime_alpha_must_be_finite(four_pairs, alpha):
    with pytest.raises(ValueError, match="alpha"):
        attribute(_f, *four_pairs, "lime", n_samples=20, alpha=alpha)


def test_vanilla_grad_nan_scale_is_an_error(net, four_pairs):
    with pytest.raises(ValueError, match="scale"):
        attribute(net, *four_pairs, "vanilla_grad", scale=[1.0, np.nan, 1.0])


def test_input_x_gradient_nan_binary_zero_is_an_error(net, four_pairs):
    X, R = four_pairs
    X = X.copy()
    X[:, 0] = [0, 1, 0, 1]
    with pytest.raises(ValueError, match="binary_zero"):
        attribute(net, X, R, "ixg", binary=[0], binary_zero=float("nan"))


def test_non_finite_attributions_are_an_error(four_pairs):
    def bad(X, R):
        A = np.ones(X.shape)
        A[2, 1] = np.nan
        return A

    with pytest.raises(ValueError, match="row.*2"):
        attribute(_f, *four_pairs, bad)


# -- integrated gradients' binary spec; chunked attribute with an array scale ----------------------
def test_ig_binary_int_mask_not_read_as_indices(net):
    rng = np.random.default_rng(1)
    X = rng.integers(0, 2, size=(3, 3)).astype(float)
    R = 1.0 - X
    with pytest.raises(ValueError, match="repeats"):  # [1, 0, 1] as indices is {0, 1}
        attribute(net, X, R, "ig", binary=[1, 0, 1], binary_mode="jump", n_steps=4)
    a = attribute(net, X, R, "ig", binary=[True, False, True], binary_mode="jump", n_steps=4)
    b = attribute(net, X, R, "ig", binary=[0, 2], binary_mode="jump", n_steps=4)
    np.testing.assert_array_equal(a, b)


def test_ig_binary_levels_keys_not_truncated(net):
    X = np.array([[-1.0, 0.3, 0.1]])
    R = np.array([[1.0, -0.2, 0.5]])
    with pytest.raises(TypeError, match="keys"):
        attribute(net, X, R, "ig", binary=[0], binary_levels={0.5: (-1, 1)}, binary_mode="jump")
    with pytest.raises(ValueError, match="pair"):
        attribute(net, X, R, "ig", binary=[0], binary_levels={0: 1}, binary_mode="jump")
    a = attribute(net, X, R, "ig", binary=[0], binary_levels={"0": (-1, 1)}, binary_mode="jump",
                  n_steps=4)
    b = attribute(net, X, R, "ig", binary=[0], binary_levels={0: (-1, 1)}, binary_mode="jump",
                  n_steps=4)
    np.testing.assert_array_equal(a, b)


def test_chunked_vanilla_grad_with_array_scale(net, four_pairs):
    s = np.array([1.0, 2.0, 3.0])
    a = attribute(net, *four_pairs, "vanilla_grad", scale=s, pairs_per_chunk=2)
    np.testing.assert_allclose(a, attribute(net, *four_pairs, "vanilla_grad", scale=s))


# -- progress= of the gradient methods (they make no progress bar) ---------------------------------
@pytest.fixture(scope="module")
def lin():
    import torch

    torch.manual_seed(0)
    return torch.nn.Linear(3, 1).double()


def _xr():
    rng = np.random.default_rng(3)
    return rng.normal(size=(4, 3)), rng.normal(size=(4, 3))


@pytest.mark.parametrize("cls", [VanillaGrad, InputXGradient])
@pytest.mark.parametrize("ok", [None, True, False, np.True_, np.False_])
def test_gradient_methods_accept_none_true_false(lin, cls, ok):
    X, R = _xr()
    np.testing.assert_array_equal(cls(lin).attribute(X, R, progress=ok),
                                  cls(lin).attribute(X, R))
