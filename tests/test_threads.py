"""torch's thread count for a model's work, chosen by the model's size (insdel._threads): one
thread for a small MLP's training and evaluation, torch's own setting for a big model, and the
user's setting back afterwards."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

import insdel
from insdel import _threads, models


@pytest.fixture
def two_threads():
    """torch on 2 threads, as on a 2-core machine by default (the quick presets pin 1 for
    training, which would hide the rule); the caller's count back afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield 2
    torch.set_num_threads(before)


def _data(n=64, p=4):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, p))
    y = X.sum(1)
    return SimpleNamespace(name="t", X_train=X, y_train=y, X_test=X[:8], y_test=y[:8])


def test_the_rule_picks_one_thread_for_a_small_mlp_and_torchs_for_a_big_one():
    bangalore = models.mlp_parameters(30, models.get("paper_bangalore")["hidden"])
    assert bangalore == sum(p.numel() for p in models.MLP(30, models.get(
        "paper_bangalore")["hidden"]).parameters())
    assert _threads.torch_threads_for(bangalore, 64) == 1       # its training batches
    cern = models.mlp_parameters(16, models.get("paper_cern")["hidden"])
    assert _threads.torch_threads_for(cern, 8192) is None        # its evaluation calls
    assert _threads.torch_threads_for(10 ** 6, 10 ** 4) is None


def test_training_a_small_mlp_uses_one_thread_and_restores_torchs(two_threads, monkeypatch):
    seen = []
    forward = models.MLP.forward

    def spy(self, x):
        seen.append(torch.get_num_threads())
        return forward(self, x)

    monkeypatch.setattr(models.MLP, "forward", spy)
    params = {"hidden": [8], "dropout": 0.0, "lr": 1e-2, "max_epochs": 2, "batch_size": 16}
    _, metrics = models.train_mlp(_data(), params, progress=False)
    assert set(seen) == {1} and metrics["num_threads"] == 1
    assert torch.get_num_threads() == two_threads
    seen.clear()
    monkeypatch.setattr(_threads, "SMALL_WORK", 1)  # every model is big: torch's setting
    _, metrics = models.train_mlp(_data(), params, progress=False)
    assert set(seen) == {two_threads} and metrics["num_threads"] == two_threads
    seen.clear()
    _, metrics = models.train_mlp(_data(), params, progress=False, num_threads=1)  # the user's
    assert set(seen) == {1} and torch.get_num_threads() == two_threads


class _Spy(torch.nn.Module):
    """A linear model of ``width`` inputs that records torch's thread count at every call."""

    def __init__(self, width):
        super().__init__()
        self.lin = torch.nn.Linear(width, 1)
        self.seen = []

    def forward(self, x):
        self.seen.append(torch.get_num_threads())
        return self.lin(x).squeeze(-1)


@pytest.mark.parametrize("width,threads", [(8, 1), (200_000, None)])
def test_evaluation_threads_by_the_models_size(two_threads, width, threads):
    """A small module evaluates on one thread, one of 200,001 parameters x 8,192 rows per call
    on torch's setting; values and gradients alike, and torch's count is back after each call."""
    net = _Spy(width)
    f = insdel.as_model(net)
    assert f.threads == threads
    X = np.random.default_rng(1).normal(size=(3, width)).astype(np.float32)
    f(X)
    f.value_and_grad(X)
    assert net.seen == [threads or two_threads] * 2
    assert torch.get_num_threads() == two_threads
