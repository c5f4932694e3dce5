"""as_model: the one adapter's options and the outputs it accepts."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from insdel import as_model


# -- as_model: batch_size, output and the output's dtype checked -----------------------------------
def _f(Z):
    return Z[:, 0] + 2.0 * Z[:, 1] * Z[:, 2]


@pytest.fixture(scope="module")
def pairs():
    rng = np.random.default_rng(0)
    return rng.normal(size=(4, 3)), rng.normal(size=(4, 3))


@pytest.mark.parametrize("bs", [2.7, True, "3", 0])
def test_as_model_batch_size_not_coerced(bs):
    with pytest.raises(ValueError, match="batch_size"):
        as_model(_f, batch_size=bs)
    assert as_model(_f, batch_size=4.0).batch_size == 4


@pytest.mark.parametrize("out", [True, 1.0, "a"])
def test_as_model_output_must_be_int_or_callable(out):
    with pytest.raises(TypeError, match="output"):
        as_model(lambda Z: Z[:, :2], output=out)


@pytest.mark.parametrize("fn", [lambda Z: Z[:, 0] + 1j, lambda Z: np.array(["1"] * len(Z))])
def test_as_model_refuses_complex_or_string_outputs(pairs, fn):
    with pytest.raises(TypeError, match="dtype"):
        as_model(fn)(pairs[0])


def test_torch_module_complex_output_refused(pairs):
    """A torch module's complex output is an error on the whole-call path too (never copied into
    float64 values as its real part)."""

    class Cplx(torch.nn.Module):
        def forward(self, z):
            return torch.complex(z[:, 0], z[:, 1])

    m = as_model(Cplx().double())
    with pytest.raises(TypeError, match="dtype"):
        m(pairs[0])
    with pytest.raises(TypeError, match="dtype"):
        as_model(Cplx().double(), output=lambda y: y)(pairs[0])
