"""``as_model(net, output=...)`` with the gradient methods: DeepLIFT, IG, vanilla gradient and
input x gradient explain the selected output (the column k, or a function of the outputs), as
captum does with ``target=k`` on the same module."""

import warnings

import numpy as np
import pytest
import torch

import insdel
from insdel.attribution import attribute
from insdel.attribution.deeplift import _prelu_as_nonlinearity


def two_output_mlp(seed=0):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.PReLU(),
                              torch.nn.Linear(8, 2)).double()
    with torch.no_grad():  # a non-trivial PReLU slope
        net[1].weight.fill_(0.3)
    return net.eval()


def pairs(B=6, n=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(B, n)), rng.normal(size=(B, n))


def values(net, X):
    with torch.no_grad():
        return net(torch.from_numpy(X)).numpy()


def captum_deeplift(module, X, R, target, prelu_rescale=True):
    from captum.attr import DeepLift

    with _prelu_as_nonlinearity(module, prelu_rescale), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        a = DeepLift(module, eps=1e-10).attribute(torch.from_numpy(X),
                                                  baselines=torch.from_numpy(R), target=target)
    return a.detach().numpy()


class Head(torch.nn.Module):
    """2 y_1 - y_0: the module equivalent of the callable below."""

    def forward(self, y):
        return 2.0 * y[:, 1] - y[:, 0]


# --------------------------------------------------------------------------------------------------
# DeepLIFT
@pytest.mark.parametrize("k", [0, 1, -1])
def test_deeplift_explains_output_column(k):
    net = two_output_mlp()
    X, R = pairs()
    m = insdel.as_model(net, output=k)
    A, info = attribute(m, X, R, "deeplift", return_info=True)
    np.testing.assert_allclose(A, captum_deeplift(net, X, R, target=k % 2), atol=1e-12)
    # completeness with the PReLU rescale rule (as in test_attribution.py's DeepLIFT test)
    dfx = values(net, X)[:, k] - values(net, R)[:, k]
    np.testing.assert_allclose(A.sum(1), dfx, atol=1e-8)
    assert np.abs(info["completeness_gap"]).max() < 1e-8
    # captum's own behaviour without the PReLU rule, same target
    A0 = attribute(m, X, R, "deeplift", prelu_rescale=False)
    np.testing.assert_allclose(A0, captum_deeplift(net, X, R, target=k % 2, prelu_rescale=False),
                               atol=1e-12)


def test_deeplift_column_1_is_not_column_0():
    net = two_output_mlp()
    X, R = pairs()
    A0 = attribute(insdel.as_model(net, output=0), X, R, "deeplift")
    A1 = attribute(insdel.as_model(net, output=1), X, R, "deeplift")
    assert np.abs(A1 - A0).max() > 1e-3


def test_deeplift_numpy_integer_output():
    net = two_output_mlp()
    X, R = pairs()
    A = attribute(insdel.as_model(net, output=np.int64(1)), X, R, "deeplift")
    np.testing.assert_allclose(A, captum_deeplift(net, X, R, target=1), atol=1e-12)


def test_deeplift_linear_callable_output_matches_captum_on_equivalent_module():
    net = two_output_mlp()
    X, R = pairs()
    m = insdel.as_model(net, output=lambda y: 2.0 * y[:, 1] - y[:, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # complete: no warning
        A, info = attribute(m, X, R, "deeplift", return_info=True)
    equivalent = torch.nn.Sequential(net, Head())
    np.testing.assert_allclose(A, captum_deeplift(equivalent, X, R, target=None), atol=1e-12)
    Y, YR = values(net, X), values(net, R)
    dfx = (2 * Y[:, 1] - Y[:, 0]) - (2 * YR[:, 1] - YR[:, 0])
    np.testing.assert_allclose(A.sum(1), dfx, atol=1e-8)
    assert np.abs(info["completeness_gap"]).max() < 1e-8
    # the wrapper did not leave the PReLU rule off, nor hooks behind
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # completeness not expected: no warning
        A0 = attribute(m, X, R, "deeplift", prelu_rescale=False)
    assert np.abs(A0.sum(1) - dfx).max() > 1e-6
    for mod in net.modules():
        assert not mod._forward_hooks and not mod._forward_pre_hooks


def test_deeplift_module_callable_output():
    """A callable that is a torch module is registered inside the wrapper: (B, 1) outputs too."""
    net = two_output_mlp()
    X, R = pairs()

    class Col1(torch.nn.Module):
        def forward(self, y):
            return y[:, 1:2]

    A = attribute(insdel.as_model(net, output=Col1()), X, R, "deeplift")
    np.testing.assert_allclose(A, captum_deeplift(net, X, R, target=1), atol=1e-12)


def test_deeplift_nonlinear_callable_output_warns_about_the_gap():
    net = two_output_mlp()
    X, R = pairs()
    # the forward pass gives the callable a NumPy array, the gradient passes a tensor
    m = insdel.as_model(net, output=lambda y: y[:, 1] ** 2)
    with pytest.warns(RuntimeWarning, match="output="):
        A, info = attribute(m, X, R, "deeplift", return_info=True)

    class Square(torch.nn.Module):
        def forward(self, y):
            return y[:, 1] ** 2

    np.testing.assert_allclose(A, captum_deeplift(torch.nn.Sequential(net, Square()), X, R, None),
                               atol=1e-12)
    assert np.abs(info["completeness_gap"]).max() > 1e-6


def test_deeplift_output_errors():
    net = two_output_mlp()
    X, R = pairs()
    with pytest.raises(ValueError, match="out of range"):
        attribute(insdel.as_model(net, output=2), X, R, "deeplift")
    with pytest.raises(ValueError, match="output="):  # two outputs, none selected
        attribute(net, X, R, "deeplift")
    with pytest.raises(ValueError, match="one value per row"):
        attribute(insdel.as_model(net, output=lambda y: y), X, R, "deeplift")
    with pytest.raises(TypeError, match="returns a tensor"):
        attribute(insdel.as_model(net, output=lambda y: np.asarray(y[:, 1].tolist())), X, R,
                  "deeplift")
    one = torch.nn.Sequential(torch.nn.Linear(4, 1), torch.nn.Flatten(0)).double().eval()
    with pytest.raises(ValueError, match="selects a column"):
        attribute(insdel.as_model(one, output=0), X, R, "deeplift")


# --------------------------------------------------------------------------------------------------
# the other gradient methods
def test_integrated_gradients_honours_output():
    from captum.attr import IntegratedGradients

    net = two_output_mlp()
    X, R = pairs()
    A = attribute(insdel.as_model(net, output=1), X, R, "integrated_gradients", n_steps=64,
                  rule="riemann_middle")
    ref = IntegratedGradients(net).attribute(torch.from_numpy(X), baselines=torch.from_numpy(R),
                                             target=1, n_steps=64, method="riemann_middle")
    np.testing.assert_allclose(A, ref.detach().numpy(), atol=1e-10)


def test_vanilla_grad_honours_output():
    from captum.attr import Saliency

    net = two_output_mlp()
    X, R = pairs()
    A = attribute(insdel.as_model(net, output=1), X, R, "vanilla_grad")
    ref = Saliency(net).attribute(torch.from_numpy(X), target=1, abs=False)
    np.testing.assert_allclose(A, ref.detach().numpy(), atol=1e-12)


def test_input_x_gradient_honours_output():
    from captum.attr import InputXGradient

    net = two_output_mlp()
    X, R = pairs()
    A = attribute(insdel.as_model(net, output=1), X, R, "input_x_gradient")
    ref = InputXGradient(net).attribute(torch.from_numpy(X), target=1)
    np.testing.assert_allclose(A, ref.detach().numpy(), atol=1e-12)


def test_callable_output_gets_the_tensor_in_the_forward_pass():
    """A torch module's ``output=`` callable receives the output tensor in the forward pass as in
    the gradient pass (``torch.sigmoid`` raised TypeError on the NumPy array it was given)."""
    net = two_output_mlp()
    X, _ = pairs()
    m = insdel.as_model(net, output=lambda y: torch.sigmoid(y[:, 1]))
    with torch.no_grad():
        want = torch.sigmoid(net(torch.from_numpy(X))[:, 1]).numpy()
    np.testing.assert_allclose(m(X), want, rtol=1e-6)
    np.testing.assert_allclose(m.value_and_grad(X)[0], m(X), rtol=1e-6)
    A = attribute(m, X, np.zeros_like(X), "integrated_gradients", n_steps=1000)
    np.testing.assert_allclose(A.sum(1), m(X) - m(np.zeros_like(X)), atol=1e-3)  # quadrature
