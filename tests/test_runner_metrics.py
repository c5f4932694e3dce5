"""The run's ``[metrics]`` stage (insdel.runner.stages.metrics): single-output and per output."""

from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from insdel.runner.provenance import Stages  # noqa: E402
from insdel.runner.stages.metrics import metrics_per_output, metrics_stage  # noqa: E402

#: hybrids (insertion_abc), the model's own points (infidelity) and re-explanations of
#: perturbed inputs (sensitivity, whose gradient methods take input gradients)
_NAMES = ["insertion_abc", "infidelity", "sensitivity"]


class _Counting(torch.nn.Module):
    """A float64 MLP with ``outputs`` outputs (one: shape (B,)) that counts the rows of every
    forward pass, with or without a backward one: every model evaluation."""

    def __init__(self, n: int, outputs: int = 1):
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.Linear(n, 5), torch.nn.Tanh(),
                                       torch.nn.Linear(5, outputs)).double()
        self.outputs = outputs
        self.rows = 0

    def forward(self, x):
        self.rows += int(x.shape[0])
        y = self.net(x)
        return y[:, 0] if self.outputs == 1 else y


def _cfg() -> dict:
    return {"seed": 0, "metrics": {"names": list(_NAMES), "options": {}},
            "methods": {"names": ["vanilla_grad", "integrated_gradients"], "options": {}},
            "model": {"engine": "auto"}, "figures": {"enabled": False}}


def _pairs(B: int = 4, n: int = 3):
    rng = np.random.default_rng(0)
    return rng.normal(size=(B, n)), rng.normal(size=(B, n))


def test_metrics_stage_counts_every_model_evaluation(tmp_path):
    """The single-output stage's ``model_evaluations`` are the rows the model evaluated during
    the stage (the explainers' forward and gradient rows included); ``gradient_evaluations``
    are positive (sensitivity re-explains with the gradient methods)."""
    X, R = _pairs()
    net = _Counting(X.shape[1])
    rng = np.random.default_rng(1)
    atts = {m: rng.normal(size=X.shape) for m in ("vanilla_grad", "integrated_gradients")}
    stages = Stages()
    before = net.rows
    metrics_stage(_cfg(), net, None, X, R, atts, "median", tmp_path, stages, lambda s: None,
                  False)
    st = stages.stages["median/metrics"]
    assert st["model_evaluations"] == net.rows - before > 0
    assert 0 < st["gradient_evaluations"] < st["model_evaluations"]


def test_metrics_per_output_counts_every_model_evaluation(tmp_path):
    """Per output, ``model_evaluations`` are the rows the model evaluated for that output (the
    views share the forward rows; each takes its own gradients); their sum is the model's."""
    from insdel import as_model
    from insdel.multi_output import output_views

    X, R = _pairs()
    H = 2
    net = _Counting(X.shape[1], outputs=H)
    model = as_model(net, outputs=H)
    rng = np.random.default_rng(1)
    atts = {m: rng.normal(size=(X.shape[0], H, X.shape[1]))
            for m in ("vanilla_grad", "integrated_gradients")}
    stages = Stages()
    p = SimpleNamespace(cfg=_cfg(), label="median", removals=[], base_key={"run": "t"},
                        progress=False, log=lambda s: None, model=model, stages=stages,
                        pairing=SimpleNamespace(cluster=None), folder=tmp_path / "median",
                        out=tmp_path, X=X, R=R, dataset=None, interrupt=None, attributions=atts)
    before = net.rows
    metrics_per_output(p, output_views(model), np.full(H, 1.0 / H))
    st = [stages.stages[f"median/output_{h}/metrics"] for h in range(H)]
    assert sum(s["model_evaluations"] for s in st) == net.rows - before
    assert all(0 < s["gradient_evaluations"] < s["model_evaluations"] for s in st)
