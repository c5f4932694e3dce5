"""Audit 30: silent wrong results in attribution/, adapter, models, curves() and functional/."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import insdel
from insdel import as_model, attribute
from insdel.functional import criteria as C
from insdel.functional.grading import order_scores


def _f(Z):
    return Z[:, 0] + 2.0 * Z[:, 1] * Z[:, 2]


@pytest.fixture(scope="module")
def pairs():
    rng = np.random.default_rng(0)
    return rng.normal(size=(4, 3)), rng.normal(size=(4, 3))


@pytest.fixture(scope="module")
def net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.PReLU(),
                               torch.nn.Linear(8, 1)).double()


# --- seeds: None (not repeatable) or 2.7 (truncated by chunk_seed) -------------------------------
@pytest.mark.parametrize("method,opts", [("kernel_shap", {"exact": "never", "n_samples": 20}),
                                         ("lime", {"n_samples": 20})])
@pytest.mark.parametrize("seed", [None, 2.7, True])
def test_sampled_methods_refuse_unrepeatable_seed(pairs, method, opts, seed):
    X, R = pairs
    with pytest.raises(TypeError, match="seed"):
        attribute(_f, X, R, method, seed=seed, **opts)


def test_chunked_attribute_refuses_float_seed(pairs):
    X, R = pairs
    with pytest.raises(TypeError, match="seed"):
        attribute(_f, X, R, "lime", n_samples=20, seed=2.7, pairs_per_chunk=2)


def test_ig_refuses_none_seed(net, pairs):
    X, R = pairs
    with pytest.raises(TypeError, match="seed"):
        attribute(net, X, R, "ig", n_steps=4, seed=None)


# --- coerced or ignored options -----------------------------------------------------------------
@pytest.mark.parametrize("bs, err", [(2.7, TypeError), (4.0, TypeError), (True, TypeError),
                                     ("3", TypeError), (0, ValueError)])
def test_as_model_batch_size_not_coerced(bs, err):
    with pytest.raises(err, match="batch_size"):
        as_model(_f, batch_size=bs)
    assert as_model(_f, batch_size=np.int64(4)).batch_size == 4


@pytest.mark.parametrize("out", [True, 1.0, "a"])
def test_as_model_output_must_be_int_or_callable(out):
    with pytest.raises(TypeError, match="output"):
        as_model(lambda Z: Z[:, :2], output=out)


@pytest.mark.parametrize("fn", [lambda Z: Z[:, 0] + 1j, lambda Z: np.array(["1"] * len(Z))])
def test_as_model_refuses_complex_or_string_outputs(pairs, fn):
    with pytest.raises(TypeError, match="dtype"):
        as_model(fn)(pairs[0])


def test_vanilla_grad_abs_must_be_bool(net, pairs):
    with pytest.raises(TypeError, match="abs"):
        attribute(net, *pairs, "vanilla_grad", abs="no")


def test_deeplift_prelu_rescale_must_be_bool(net, pairs):
    with pytest.raises(TypeError, match="prelu_rescale"):
        attribute(net, *pairs, "deeplift", prelu_rescale="no")
    with pytest.raises(ValueError, match="eps"):
        attribute(net, *pairs, "deeplift", eps=float("nan"))


def test_attribute_return_info_must_be_bool(pairs):
    with pytest.raises(TypeError, match="return_info"):
        attribute(_f, *pairs, "random", return_info="no")


@pytest.mark.parametrize("alpha", [float("nan"), float("inf")])
def test_lime_alpha_must_be_finite(pairs, alpha):
    with pytest.raises(ValueError, match="alpha"):
        attribute(_f, *pairs, "lime", n_samples=20, alpha=alpha)


# --- NaN attributions ---------------------------------------------------------------------------
def test_vanilla_grad_nan_scale_is_an_error(net, pairs):
    with pytest.raises(ValueError, match="scale"):
        attribute(net, *pairs, "vanilla_grad", scale=[1.0, np.nan, 1.0])


def test_input_x_gradient_nan_binary_zero_is_an_error(net, pairs):
    X, R = pairs
    X = X.copy()
    X[:, 0] = [0, 1, 0, 1]
    with pytest.raises(ValueError, match="binary_zero"):
        attribute(net, X, R, "ixg", binary=[0], binary_zero=float("nan"))


def test_non_finite_attributions_are_an_error(pairs):
    def bad(X, R):
        A = np.ones(X.shape)
        A[2, 1] = np.nan
        return A

    with pytest.raises(ValueError, match="row.*2"):
        attribute(_f, *pairs, bad)


# --- integrated gradients' binary spec ----------------------------------------------------------
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


# --- chunked attribute with an array scale ------------------------------------------------------
def test_chunked_vanilla_grad_with_array_scale(net, pairs):
    s = np.array([1.0, 2.0, 3.0])
    a = attribute(net, *pairs, "vanilla_grad", scale=s, pairs_per_chunk=2)
    np.testing.assert_allclose(a, attribute(net, *pairs, "vanilla_grad", scale=s))


# --- curves(): a labelled A is matched by name, as in evaluate ----------------------------------
def test_curves_aligns_dataframe_attributions(pairs):
    X, R = pairs
    cols = ["a", "b", "c"]
    Xd, Rd = pd.DataFrame(X, columns=cols), pd.DataFrame(R, columns=cols)
    A = np.array([[3.0, 2.0, 1.0], [1.0, 3.0, 2.0], [2.0, 1.0, 3.0], [0.0, 1.0, 2.0]])
    Ad = pd.DataFrame(A, columns=cols)[["c", "a", "b"]]
    np.testing.assert_array_equal(insdel.curves(_f, Xd, Rd, Ad), insdel.curves(_f, X, R, A))
    with pytest.raises(ValueError, match="labelled"):
        insdel.curves(_f, Xd, Rd, pd.DataFrame(A, columns=["a", "b", "z"]))


# --- models: hyperparameters not coerced --------------------------------------------------------
@pytest.mark.parametrize("bad, err", [
    ({"hidden": "64"}, TypeError), ({"hidden": [64.7]}, TypeError), ({"hidden": [4.0]}, TypeError),
    ({"hidden": [True]}, TypeError), ({"hidden": [0]}, ValueError), ({"batch_size": 2.5}, TypeError),
    ({"batch_size": 8.0}, TypeError), ({"max_epochs": "3"}, TypeError),
    ({"val_fraction": 1.5}, ValueError), ({"val_fraction": 0.0}, ValueError), ({"lr": True}, TypeError),
    ({"dropout": float("nan")}, ValueError), ({"huber_delta": -1.0}, ValueError)])
def test_mlp_params_not_coerced(bad, err):
    from insdel.models import _resolve_params

    params = {"hidden": [4], "dropout": 0.0, "lr": 1e-3, **bad}
    with pytest.raises(err, match=next(iter(bad))):
        _resolve_params(params, None)
    assert _resolve_params({"hidden": [np.int64(4)], "dropout": 0, "lr": 1e-3,
                            "batch_size": 8}, None)["hidden"] == [4]


def test_train_mlp_max_epochs_and_seed_not_coerced():
    from insdel.models import train_mlp

    rng = np.random.default_rng(0)
    ds = type("DS", (), {"X_train": rng.normal(size=(20, 2)), "y_train": rng.normal(size=20),
                         "X_test": rng.normal(size=(5, 2)), "y_test": rng.normal(size=5)})()
    with pytest.raises(TypeError, match="max_epochs"):
        train_mlp(ds, {"hidden": [4], "dropout": 0.0, "lr": 1e-3}, max_epochs=1.5,
                  progress=False)
    with pytest.raises(ValueError, match="max_epochs"):
        train_mlp(ds, {"hidden": [4], "dropout": 0.0, "lr": 1e-3}, max_epochs=0,
                  progress=False)
    with pytest.raises(TypeError, match="seed"):
        train_mlp(ds, {"hidden": [4], "dropout": 0.0, "lr": 1e-3}, seed=None, progress=False)


# --- functional: criteria and order_scores ------------------------------------------------------
def test_criteria_refuse_wrong_shape():
    truth = insdel.functional.get("additive").truth(seed=0)
    B, n = truth.X.shape
    ok, m = C.MatchesShapley()(truth, truth.phi)
    assert ok and m < 1e-12
    for bad in (truth.phi[:, :1], truth.phi[0]):
        with pytest.raises(ValueError, match="shape"):
            C.MatchesShapley()(truth, bad)


def test_order_scores_refuses_non_permutations():
    np.testing.assert_array_equal(order_scores([[2, 0, 1]]), [[2.0, 1.0, 3.0]])
    with pytest.raises(ValueError, match="permutation"):
        order_scores([[0, 0, 1]])


def test_case_reference_not_broadcast_across_features():
    from insdel.functional import Case
    from insdel.functional.models import Quadratic

    def build(seed):
        X = np.random.default_rng(seed).normal(size=(3, 2))
        return Quadratic([1.0, 2.0]), X, np.zeros((3, 1)), {}  # (B, 1): not a reference

    case = Case("bad_r", "R of shape (B, 1)", build, criteria=[C.Efficiency()])
    with pytest.raises(ValueError, match="R"):
        case.truth(seed=0)
    ok = Case("ok_r", "1-D R", lambda s: (*build(s)[:2], np.zeros(2), {}), criteria=[])
    np.testing.assert_array_equal(ok.truth(seed=0).R, np.zeros((3, 2)))


def test_integer_labelled_attributions_are_matched_by_name():
    """A DataFrame X with columns 0, 1, 2 and attributions labelled 2, 1, 0 (session 30 review:
    the names were compared as text, then looked up as text, a KeyError)."""
    import pandas as pd

    from insdel._validation import align_attributions, align_columns

    A = pd.DataFrame(np.arange(6.0).reshape(2, 3), columns=[2, 0, 1])
    got = align_attributions("A", A, ["0", "1", "2"])
    assert list(got.columns) == [0, 1, 2]
    np.testing.assert_array_equal(got.to_numpy(), A[[0, 1, 2]].to_numpy())
    s = pd.Series([1.0, 2.0, 3.0], index=["b", "c", "a"])
    like = pd.DataFrame(np.zeros((1, 3)), columns=["a", "b", "c"])
    assert align_columns("R", s, like).tolist() == [3.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="repeated names"):
        align_attributions("A", pd.DataFrame(np.zeros((1, 2)), columns=[0, "0"]), ["0", "1"])
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    X = pd.DataFrame(np.random.default_rng(0).normal(size=(5, 3)))
    A = insdel.attribute(net, X.to_numpy(), np.zeros(3), "input_x_gradient")
    named = insdel.evaluate(net, X, np.zeros(3), {"m": pd.DataFrame(A[:, ::-1], columns=[2, 1, 0])})
    plain = insdel.evaluate(net, X, np.zeros(3), {"m": A})
    np.testing.assert_allclose(named.summary()["mean"], plain.summary()["mean"])


def test_torch_module_complex_output_refused(pairs):
    """A torch module's complex output is an error on the whole-call path too (its copy into the
    float64 values kept only the real part, with a NumPy warning)."""
    import torch

    class Cplx(torch.nn.Module):
        def forward(self, z):
            return torch.complex(z[:, 0], z[:, 1])

    m = as_model(Cplx().double())
    with pytest.raises(TypeError, match="dtype"):
        m(pairs[0])
    with pytest.raises(TypeError, match="dtype"):
        as_model(Cplx().double(), output=lambda y: y)(pairs[0])
