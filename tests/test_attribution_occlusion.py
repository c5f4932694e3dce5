"""Occlusion (insdel.attribution.occlusion): v(all) - v(all minus one unit), against captum's
FeatureAblation with the groups as feature_mask, per output of a model with H outputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from captum.attr import FeatureAblation

import insdel
from insdel.multi_output import output_views, per_output
from insdel.timeseries import block_groups

L, C, H = 6, 2, 3


class _Forecaster(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(L * C, 8)
        self.b = torch.nn.Linear(8, H)

    def forward(self, x):
        return self.b(torch.tanh(self.a(x)))


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    net = _Forecaster().double().eval()
    rng = np.random.default_rng(0)
    return net, rng.normal(size=(5, L * C)), rng.normal(size=(5, L * C))


def _captum(net, X, R, g, target):
    mask = torch.from_numpy(np.asarray(g.labels, dtype=np.int64))[None, :]
    A = FeatureAblation(net).attribute(torch.from_numpy(X), baselines=torch.from_numpy(R),
                                       feature_mask=mask, target=target).detach().numpy()
    return A[:, g.members[g.starts[:-1]]]  # captum gives each column its group's score


def test_occlusion_over_blocks_equals_captum_feature_ablation_per_output(setup):
    net, X, R = setup
    g = block_groups(L, C, lag_block=2)
    A = per_output(insdel.attribute, insdel.as_model(net, outputs=H), X, R, method="occlusion",
                   groups=g)
    assert A.shape == (5, g.m, H)
    for h in range(H):
        np.testing.assert_allclose(A[..., h], _captum(net, X, R, g, h), rtol=0, atol=1e-6)
    one = insdel.attribute(output_views(net, outputs=H)[1], X, R, method="feature_ablation",
                           groups=g)
    np.testing.assert_allclose(one, A[..., 1], atol=1e-12)


def test_occlusion_of_single_columns_and_a_linear_model_is_w_times_x_minus_r(setup):
    _, X, R = setup
    w = np.arange(1.0, L * C + 1)
    A = insdel.attribute(lambda Z: Z @ w, X, R, method="occlusion")
    np.testing.assert_allclose(A, w * (X - R), atol=1e-12)


def test_occlusion_under_a_window_removal_reads_the_game(setup):
    """Under ``locf`` unit g's score is f(x) - f(x with g's cells carried from kept steps)."""
    _, X, _ = setup
    from insdel import removal

    rem = removal.build("locf", length=L, channels=C)
    w = np.random.default_rng(1).normal(size=L * C)
    A = insdel.attribute(lambda Z: Z @ w, X, None, method="occlusion", removal=rem)
    keep = np.ones((1, L * C), bool)
    keep[0, 4] = False
    row = rem.sample(X[:1], keep, np.array([0]))[0, 0]
    assert A[0, 4] == pytest.approx(X[0] @ w - row @ w, abs=1e-12)
