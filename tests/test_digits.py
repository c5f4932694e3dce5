"""The digits example: scikit-learn's 8 x 8 digits as images and the small CNN."""

from __future__ import annotations

import numpy as np
import pytest

from insdel import digits


# -- integer options of the digits example ---------------------------------------------------------
@pytest.mark.parametrize("bad, err", [(2.7, TypeError), (2.0, TypeError), ("3", TypeError),
                                      (True, TypeError), (0, ValueError), (-1, ValueError)])
def test_train_cnn_epochs_must_be_a_positive_integer(bad, err):
    data = digits.load()
    with pytest.raises(err, match="epochs"):
        digits.train_cnn(data, epochs=bad)


@pytest.mark.parametrize("bad, err", [(1.5, TypeError), (-1, ValueError), (True, TypeError)])
def test_digits_seed_must_be_an_integer(bad, err):
    with pytest.raises(err, match="seed"):
        digits.load(seed=bad)
    with pytest.raises(err, match="seed"):
        digits.train_cnn(digits.load(), seed=bad, epochs=1)


@pytest.mark.parametrize("bad", [0.0, 1.0, 1.5, float("nan")])
def test_digits_test_fraction_in_the_open_interval(bad):
    with pytest.raises((ValueError, TypeError), match="test_fraction"):
        digits.load(test_fraction=bad)


def test_train_cnn_integral_epochs_accepted():
    data = digits.load()
    _, info = digits.train_cnn(data, epochs=np.int64(1))
    assert info["epochs"] == 1 and isinstance(info["epochs"], int)


def test_digits_cnn_is_the_presets_untrained_module():
    import torch

    torch.manual_seed(0)
    net = digits.DigitsCNN()
    p = digits.get("digits_cnn")
    convs = [m for m in net if isinstance(m, torch.nn.Conv2d)]
    linears = [m for m in net if isinstance(m, torch.nn.Linear)]
    assert [c.out_channels for c in convs] == list(p["channels"])
    assert linears[0].out_features == p["hidden"] and linears[-1].out_features == 10
    out = net(torch.zeros(2, 1, 8, 8))  # 8 x 8 digit images -> 10 class scores (logits)
    assert out.shape == (2, 10) and out.dtype == torch.float32
    with pytest.raises(ValueError, match="no_such_preset"):
        digits.DigitsCNN("no_such_preset")
