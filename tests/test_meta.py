"""Metric reliability (issue 38, MetaQuantus): noise resilience and adversarial reactivity."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _plots import overlaps_of_texts

from insdel.metrics import Metric
from insdel.metrics.base import rank_of
from insdel.sanity import ReliabilityResult, metric_reliability

N = 6


class TopUnit(Metric):
    """A deterministic function of the ranking alone: the index of the most important unit."""

    name = "top_unit"
    family = "test"
    higher_is_better = True

    def compute(self, ctx, A, **kwargs):
        return rank_of(A)[:, 0].astype(np.float64)


class Constant(Metric):
    """A metric replaced by a constant."""

    name = "constant"
    family = "test"
    higher_is_better = True

    def compute(self, ctx, A, **kwargs):
        return np.full(A.shape[0], 0.5)


@pytest.fixture(scope="module")
def problem():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(N, 16), torch.nn.Tanh(),
                              torch.nn.Linear(16, 1)).double().eval()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(25, N))
    R = np.zeros(N)
    from insdel.attribution import attribute

    A = {"ig": attribute(net, X, R, "integrated_gradients"),
         "vg": attribute(net, X, R, "vanilla_grad"),
         "random": rng.normal(size=X.shape)}
    return net, X, R, A


@pytest.fixture(scope="module")
def result(problem):
    net, X, R, A = problem
    return metric_reliability(net, X, R, A, metrics=[TopUnit(), Constant(), "insertion_abc"],
                              n_perturbations=3, seed=0)


def test_ranking_metric_is_exactly_resilient(result):
    assert isinstance(result, ReliabilityResult)
    t = result.table.set_index("metric")
    assert t.loc["top_unit", "IAC_NR"] == 1.0
    assert t.loc["top_unit", "IEC_NR"] == 1.0
    assert t.loc["top_unit", "resilience"] == 1.0
    # the shuffled attributions move its top unit: it reacts to the explanation's disruption
    tests = result.tests.set_index(["metric", "test"])
    assert tests.loc[("top_unit", "attribution_shuffle"), "iac"] > 0.5


def test_constant_metric_does_not_react(result):
    t = result.table.set_index("metric")
    assert t.loc["constant", "reactivity"] == 0.0
    assert t.loc["constant", "resilience"] == 1.0
    assert t.loc["insertion_abc", "reactivity"] > 0.5
    assert t.loc["insertion_abc", "reactivity"] > t.loc["constant", "reactivity"]


def test_one_shared_cache_per_problem(result, problem):
    # one evaluate_metrics call for the unperturbed problem (the shuffles ride on its cache) and
    # one per perturbed model or input, every metric and method together
    assert result.stats["calls"] == 1 + 3 * 3
    s = result.scores
    assert set(s["test"]) == {"none", "model_noise", "input_noise", "model_randomisation",
                              "attribution_shuffle"}
    assert (result.tests["kept"] > 0.5).all()


def test_same_seed_same_bytes(problem):
    net, X, R, A = problem
    kw = dict(metrics=["insertion_abc", "deletion_abc"], n_perturbations=2)
    a = metric_reliability(net, X, R, A, **kw)
    b = metric_reliability(net, X, R, A, **kw)
    c = metric_reliability(net, X, R, A, seed=1, **kw)
    va, vb, vc = (r.scores["value"].to_numpy() for r in (a, b, c))
    assert va.tobytes() == vb.tobytes()
    assert a.table.equals(b.table)
    assert va.tobytes() != vc.tobytes()


def test_explainers_recompute_and_non_torch_models_skip_the_model_tests(problem):
    net, X, R, A = problem
    res = metric_reliability(net, X, R, A, metrics=["insertion_abc"], n_perturbations=1,
                             tests=("model_noise",), explainers={"ig": "integrated_gradients"})
    assert res.tests["test"].tolist() == ["model_noise"]
    w = np.random.default_rng(1).normal(size=N)

    def f(Z):
        return np.tanh(Z @ w)

    res = metric_reliability(f, X, R, A, metrics=["insertion_abc"], n_perturbations=1)
    assert set(res.stats["skipped"]) == {"model_noise", "model_randomisation"}
    assert set(res.tests["test"]) == {"input_noise", "attribution_shuffle"}
    assert "Not run" in res.to_markdown()


def test_bad_inputs(problem):
    net, X, R, A = problem
    with pytest.raises(ValueError, match="at least two methods"):
        metric_reliability(net, X, R, {"ig": A["ig"]}, metrics=["insertion_abc"])
    with pytest.raises(ValueError, match="tests must be among"):
        metric_reliability(net, X, R, A, metrics=["insertion_abc"], tests=("bogus",))
    with pytest.raises(ValueError, match="noise must be"):
        metric_reliability(net, X, R, A, metrics=["insertion_abc"], noise=0.0)
    with pytest.raises(TypeError, match="n_perturbations"):
        metric_reliability(net, X, R, A, metrics=["insertion_abc"], n_perturbations=2.0)
    with pytest.raises(ValueError, match="explainers names"):
        metric_reliability(net, X, R, A, metrics=["insertion_abc"], explainers={"x": "ig"})


def test_reliability_figure(result):
    import matplotlib

    matplotlib.use("Agg")
    from insdel.plotting import plot_reliability

    ax = plot_reliability(result)
    assert {t.get_text() for t in ax.texts} >= {"top_unit", "constant", "insertion_abc"}
    assert ax.get_legend() is None  # the ideal point is named beside its star, at (1, 1)
    ideal = next(t for t in ax.texts if t.get_text() == "ideal (1, 1)")
    assert ideal.xy == (1.0, 1.0)
    assert overlaps_of_texts(ax.figure) == []
    matplotlib.pyplot.close("all")


def test_reliability_figure_names_crowded_metrics_apart():
    """Metrics at nearly the same place (the shipped run's three ABC-type metrics) get names that
    do not overlap one another, the points or the axes' labels."""
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    from insdel.plotting import plot_reliability

    names = ["insertion_abc", "deletion_abc", "faithfulness_correlation", "sparseness",
             "monotonicity_correlation", "complexity"]
    table = pd.DataFrame({"metric": names,
                          "resilience": [0.562, 0.571, 0.575, 1.0, 0.99, 0.995],
                          "reactivity": [0.853, 0.856, 0.852, 0.0, 0.01, 0.005]})
    ax = plot_reliability(ReliabilityResult(table=table, tests=pd.DataFrame(),
                                            scores=pd.DataFrame()))
    assert overlaps_of_texts(ax.figure) == []
    matplotlib.pyplot.close("all")
