import numpy as np
import pytest
import torch

from insdel import metrics as M


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).double()


def _expl(net):
    def fn(X, R):
        t = torch.as_tensor(X - R).requires_grad_(True)
        with torch.enable_grad():
            net(t).sum().backward()
        return (t.grad * (t - torch.as_tensor(R))).detach().numpy()
    return fn


def test_sensitivity_auto_radius_one_pair_is_an_error():
    net = _net()
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(3, 4)), np.zeros((3, 4))
    A = _expl(net)(X, R)
    metric = M.get("sensitivity", radius="auto")
    with pytest.raises(ValueError, match=r"radius='auto'.*at least 2 targets.*radius="):
        metric(net, X[:1], R[:1], A[:1], explainer=_expl(net))
    with pytest.raises(ValueError, match=r"identical.*radius="):
        metric(net, np.repeat(X[:1], 3, 0), R, np.repeat(A[:1], 3, 0), explainer=_expl(net))
    # two or more distinct targets: a finite score per pair; a number works for one pair
    assert np.isfinite(np.asarray(metric(net, X, R, A, explainer=_expl(net)))).all()
    one = M.get("sensitivity", radius=0.5)(net, X[:1], R[:1], A[:1], explainer=_expl(net))
    assert np.isfinite(np.asarray(one)).all()
