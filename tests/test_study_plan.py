"""insdel.study_plan and ``insdel plan``: a finished run as the pilot of a study."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_leaderboard import fake_run

from insdel import verdicts
from insdel.cli import main
from insdel.study_plan import plan_run


@pytest.fixture
def run(tmp_path):
    rng = np.random.default_rng(0)
    P = 40
    unit = rng.normal(size=P)
    scores = {m: {"insertion": unit + s + 0.2 * rng.normal(size=P),
                  "deletion": -unit - s + 0.2 * rng.normal(size=P)}
              for m, s in (("kernel_shap", 0.3), ("integrated_gradients", 0.25), ("lime", 0.0))}
    return fake_run(tmp_path / "pilot", scores), scores


def test_plan_run_is_the_planner_on_the_runs_block(run):
    path, scores = run
    rp = plan_run(path, "kernel_shap", "integrated_gradients", margin=0.1)
    S = pd.DataFrame({m: scores[m]["insertion"] for m in ("kernel_shap", "integrated_gradients")})
    ref = verdicts.plan(S, "kernel_shap", "integrated_gradients", margin=0.1)
    assert rp.plan == ref and rp.policy == "average" and rp.metric == "insertion"
    # all of the block's 3 comparisons: tests at alpha / 3, more units
    assert plan_run(path, "kernel_shap", "integrated_gradients", margin=0.1,
                    all_pairs=True).plan.n_units > ref.n_units
    # a relative margin: a fraction of the spread of the two methods' scores
    rel = plan_run(path, "kernel_shap", "integrated_gradients", margin=0.5, relative=True,
                   metric="deletion")
    spread = np.sqrt((np.var(scores["kernel_shap"]["deletion"], ddof=1)
                      + np.var(scores["integrated_gradients"]["deletion"], ddof=1)) / 2)
    assert rel.delta == pytest.approx(0.5 * spread)
    assert "0.5 of the spread" in rel.text() and "independent units" in rel.text()


@pytest.mark.parametrize(("kw", "match"), [
    ({"margin": 0.0}, "margin"), ({"margin": -0.1}, "margin"),
    ({"margin": 0.1, "metric": "insertion@marginal"}, "has no 'insertion@marginal'"),
    ({"margin": 0.1, "policy": "median"}, "no policy 'median'")])
def test_plan_run_bad_input_names_it(run, kw, match):
    with pytest.raises(ValueError, match=match):
        plan_run(run[0], "kernel_shap", "lime", **kw)
    with pytest.raises(ValueError, match="b: method 'limee'"):
        plan_run(run[0], "kernel_shap", "limee", margin=0.1)


def test_cli_plan(run, capsys):
    assert main(["plan", str(run[0]), "--methods", "kernel_shap", "integrated_gradients",
                 "--margin", "0.1", "--all-pairs"]) == 0
    out = capsys.readouterr().out
    assert "Pilot: run" in out and "/ 3 comparisons" in out and "pairs" in out
    assert main(["plan", str(run[0]), "--methods", "kernel_shap", "x", "--margin", "0.1"]) == 1
    assert "method 'x'" in capsys.readouterr().err


def test_plan_run_on_a_multi_output_run_names_the_output(multi_runs, run):
    """A run with model.outputs: the plan is on the named output's scores alone (output h's
    equal a single-output run's of that column), an error naming ``output`` without one; a
    run of one output refuses ``output``."""
    mdir, singles = multi_runs
    with pytest.raises(ValueError, match=r"output: run .* model\.outputs = 2; name one of "
                                         r"\['0', '1', 'weighted'\]"):
        plan_run(mdir, "vanilla_grad", "integrated_gradients", margin=0.05)
    with pytest.raises(ValueError, match=r"output: run .* has one output"):
        plan_run(run[0], "kernel_shap", "lime", margin=0.1, output="0")
    mine = plan_run(mdir, "vanilla_grad", "integrated_gradients", margin=0.05, output="1")
    one = plan_run(singles[1], "vanilla_grad", "integrated_gradients", margin=0.05)
    assert mine.plan.n_units == one.plan.n_units
    assert mine.plan.sd == pytest.approx(one.plan.sd, abs=1e-12)
    assert plan_run(mdir, "vanilla_grad", "integrated_gradients", margin=0.05,
                    output="weighted").plan.n_units >= 2
    assert main(["plan", str(mdir), "--methods", "vanilla_grad", "integrated_gradients",
                 "--margin", "0.05", "--output", "weighted"]) == 0
