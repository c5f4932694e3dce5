"""Functional tests with exact answers: closed forms vs brute force, the §3.4 counterexample,
exact Shapley passing (and random failing) what they should, metric grades, the CLI."""

from __future__ import annotations

import io
import itertools
import re

import numpy as np
import pandas as pd
import pytest

import insdel
from insdel import cli, functional
from insdel import metrics as M
from insdel.functional import cases as FC
from insdel.functional import criteria as CR
from insdel.functional import grading
from insdel.functional.grading import order_scores

CASES = functional.available()


@pytest.fixture(scope="module")
def truths():
    return {name: functional.get(name).truth(seed=0) for name in CASES}


@pytest.fixture(scope="module")
def results():
    return functional.run_catalogue(["exact_shapley", "random", "integrated_gradients",
                                     "ig_interpolate"], seed=0)


@pytest.mark.parametrize("name", CASES)
def test_closed_form_shapley_equals_brute_force(truths, name):
    case, t = functional.get(name), truths[name]
    brute = case.brute_force_shapley(t)
    np.testing.assert_allclose(brute, insdel.shapley_values(t.f, t.X, t.R, progress=False),
                               rtol=0, atol=0)
    np.testing.assert_allclose(t.phi, brute, rtol=0, atol=1e-10)
    np.testing.assert_allclose(t.phi.sum(axis=1), t.fx - t.fr, rtol=0, atol=1e-10)
    if case.closed_form is None:  # enumerated truth: the decomposition's own Shapley values
        np.testing.assert_allclose(t.phi, t.decomposition.shapley(), atol=1e-12)


def test_every_closed_form_case_is_checked():
    with_closed = [n for n in CASES if functional.get(n).closed_form is not None]
    assert len(with_closed) >= 7


@pytest.mark.parametrize("name", CASES)
def test_best_order_equals_brute_force_over_all_orderings(truths, name):
    t = truths[name]
    B, n = t.X.shape
    perms = np.array(list(itertools.permutations(range(n))), dtype=np.int64)
    orders = np.broadcast_to(perms, (B, *perms.shape)).copy()
    res = insdel.trace(t.f, t.X, t.R, orders, progress=False)
    for mode in ("insertion", "deletion"):
        brute = insdel.abc(res.curves[mode], mode=mode).max(axis=1)
        np.testing.assert_allclose(t.decomposition.best_abc(mode=mode), brute, atol=1e-10)
        got = insdel.abc(insdel.trace(t.f, t.X, t.R, t.best_order(mode=mode)[:, None, :],
                                      modes=(mode,), progress=False).curves[mode][:, 0],
                         mode=mode)
        np.testing.assert_allclose(got, brute, atol=1e-10)


def test_counterexample_reproduces_paper_numbers(truths):
    A = functional.COUNTEREXAMPLE_A
    assert -2 < A < -1
    t = truths["shapley_vs_auc"]
    np.testing.assert_allclose(t.phi[0], [3 + A / 2, 2 + A / 2, 1], atol=1e-12)
    d = t.decomposition
    full = d.full_delta()[0]
    expect = np.zeros(8)
    expect[[0b001, 0b010, 0b100, 0b011]] = [3, 2, 1, A]
    np.testing.assert_allclose(full, expect, atol=1e-12)
    for order, auc in (([0, 1, 2], 14 + 2 * A), ([0, 2, 1], 13 + A)):
        c = insdel.curves(t.f, t.X, t.R, functional.order_scores(np.array([order])))
        assert insdel.auc(c)[0] == pytest.approx(auc, abs=1e-12)
        assert d.auc(np.array(order))[0] == pytest.approx(auc, abs=1e-12)
    assert list(t.best_order()[0]) == [0, 2, 1]
    assert list(insdel.orderings(t.phi)[0]) == [0, 1, 2]  # the Shapley order is not the best


def test_gaussian_mixture_conditional_truth():
    t = functional.get("gaussian_mixture").truth(seed=0)
    cs = t.extra["conditional_shapley"]
    w = FC.GM_W
    mean = FC.GM_WEIGHTS @ FC.GM_MEANS
    np.testing.assert_allclose(cs.sum(axis=1), t.X @ w - mean @ w, atol=1e-10)
    # E[X | X_S = x_S] keeps x_S and, with all features given, is x
    x = t.X[0]
    np.testing.assert_allclose(FC.gaussian_mixture_conditional_mean(x, [0, 1, 2, 3]), x)
    m = FC.gaussian_mixture_conditional_mean(x, [1])
    assert m[1] == x[1]
    # Monte Carlo check of one conditional mean (coarse: a narrow window around x_1)
    P = FC.gaussian_mixture_sample(400_000, seed=1)
    near = np.abs(P[:, 1] - x[1]) < 0.02
    np.testing.assert_allclose(P[near].mean(axis=0), m, atol=0.08)
    assert not np.allclose(cs, t.phi, atol=0.05)  # correlated data: conditional != baseline


def test_exact_shapley_passes_what_it_should(results):
    r = results[results["method"] == "exact_shapley"]
    assert (r["passed"] == r["shapley_passes"]).all(), r[r["passed"] != r["shapley_passes"]]
    assert not r.loc[(r["test"] == "shapley_vs_auc")
                     & (r["criterion"] == "order_regret_insertion"), "passed"].item()


def test_random_fails_what_it_should(results):
    r = results[results["method"] == "random"]
    must_fail = r["criterion"].str.match(r"^(matches_shapley|efficiency|zero_for|ranks_last|"
                                          r"equal_for)")
    must_fail &= ~((r["test"] == "saturation") & (r["criterion"] == "equal_for"))
    assert must_fail.sum() >= 20
    assert not r.loc[must_fail, "passed"].any(), r[must_fail & r["passed"]]
    assert not r["passed"].all()


def test_integrated_gradients_binary_modes(results):
    r = results.set_index(["test", "criterion", "method"])["passed"]
    assert r[("binary_and", "matches_shapley", "ig_interpolate")]
    assert not r[("binary_and", "matches_shapley", "integrated_gradients")]  # cast
    assert r[("additive", "matches_shapley", "integrated_gradients")]
    assert r[("ood_trap", "zero_for", "integrated_gradients")]  # the path stays on z2 = z3


def test_results_table_and_markdown(results):
    assert list(results.columns[:5]) == ["test", "criterion", "method", "passed", "measured"]
    md = functional.to_markdown(results)
    assert md.splitlines()[0].startswith("| test | criterion | pass if | exact_shapley")
    assert "PASS" in md and "fail" in md and "**passed**" in md
    def cells(line):
        return len(re.split(r"(?<!\\)\|", line))

    ncol = cells(md.splitlines()[0])
    for line in md.splitlines()[2:]:  # criterion texts with |a| are escaped: columns line up
        assert cells(line) == ncol, line


def test_metric_grades_and_registration():
    g = functional.grade_metrics(cases=["additive", "ood_trap", "shapley_vs_auc"])
    p = g.set_index(["test", "worse", "metric"])["passed"]
    assert p[("additive", "reversed", "insertion_abc")] and p[("additive", "random", "abc_total")]
    assert not p[("ood_trap", "trap_first", "insertion_abc")]  # gamed off the manifold
    assert p[("ood_trap", "trap_first", "deletion_abc")]
    assert p[("shapley_vs_auc", "shapley", "insertion_auc")]
    assert ("shapley_vs_auc", "shapley", "deletion_abc") not in p.index  # insertion-only claim

    def flat(f, X, R, A):
        return np.zeros(len(X))

    functional.grading.register("flat_test_metric", flat, overwrite=True)
    try:
        g2 = functional.grade_metrics(["flat_test_metric"], cases=["additive"])
        assert not g2["passed"].any() and (g2["ties"] == 16).all()
        with pytest.raises(ValueError, match="already registered"):
            functional.grading.register("flat_test_metric", flat)
    finally:
        functional.grading.unregister("flat_test_metric")
    md = functional.grading_markdown(g)
    assert "n/a" in md and "better > worse" in md


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="methods: unknown attribution method 'shapely'"):
        functional.run_catalogue(["shapely"])
    with pytest.raises(ValueError, match="unknown functional test 'addtive'.*'additive'"):
        functional.run_catalogue(["random"], cases=["addtive"])
    with pytest.raises(ValueError, match="unknown gradable metric 'nope'"):
        functional.grade_metrics(["nope"])
    with pytest.raises(TypeError, match="metric must be callable"):
        functional.grading.register("x", 3)


def test_criteria_on_hand_made_attributions(truths):
    t = truths["dummy"]
    ok, m = CR.ZeroFor(1e-8, features=(3,))(t, t.phi)
    assert ok and m == 0
    A = t.phi.copy()
    A[:, 3] = 10.0
    assert not CR.RanksLast(feature=3)(t, A)[0]
    assert CR.OrderRegret()(t, t.phi)[1] <= CR.OrderRegret()(t, A)[1]
    assert CR.Efficiency()(t, t.phi)[0] and not CR.Efficiency()(t, A)[0]


def test_cli_smoke(tmp_path, capsys):
    rc = cli.main(["functional", "--methods", "exact_shapley,random", "--tests",
                   "additive,dummy,ood_trap", "--out", str(tmp_path)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "| additive | matches_shapley |" in out and "Metric grades" in out
    df = pd.read_csv(tmp_path / "functional.csv")
    assert set(df["method"]) == {"exact_shapley", "random"}
    assert (tmp_path / "metric_grades.csv").is_file()
    assert cli.main(["functional", "--methods", "nope"]) == 1


# -- grade_metrics: NaN scores and one score per pair ----------------------------------------------
def test_grading_does_not_pass_a_metric_that_is_nan_on_some_pairs():
    """NaN scores count as undefined pairs: a metric undefined on most pairs does not pass."""

    def mostly_nan(f, X, R, A):
        s = M.build("insertion_abc")(f, X, R, A)
        s[1:] = np.nan
        return s

    g = grading.grade_metrics([mostly_nan], cases=["monotone_additive"])
    row = g[g["worse"] == "reversed"].iloc[0]
    assert row["wins"] == 1 and row["losses"] == 0  # no loss among the defined pairs
    assert row["undefined"] == 7
    assert not row["passed"]
    assert "NaN" in grading.grading_markdown(g)


def test_grading_refuses_a_metric_without_one_score_per_pair():
    """A callable returning one aggregate number, not one score per pair, is an error."""

    def aggregate(f, X, R, A):
        return np.float64(np.mean(A[:, 0]))

    with pytest.raises(ValueError, match="one score per pair"):
        grading.grade_metrics([aggregate], cases=["monotone_additive"])


# -- criteria, order_scores and Case references checked --------------------------------------------
def test_criteria_refuse_wrong_shape():
    truth = insdel.functional.get("additive").truth(seed=0)
    B, n = truth.X.shape
    ok, m = CR.MatchesShapley()(truth, truth.phi)
    assert ok and m < 1e-12
    for bad in (truth.phi[:, :1], truth.phi[0]):
        with pytest.raises(ValueError, match="shape"):
            CR.MatchesShapley()(truth, bad)


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

    case = Case("bad_r", "R of shape (B, 1)", build, criteria=[CR.Efficiency()])
    with pytest.raises(ValueError, match="R"):
        case.truth(seed=0)
    ok = Case("ok_r", "1-D R", lambda s: (*build(s)[:2], np.zeros(2), {}), criteria=[])
    np.testing.assert_array_equal(ok.truth(seed=0).R, np.zeros((3, 2)))


# -- IG's binary variants on cases without binary features -----------------------------------------
def test_ig_binary_variants_run_on_cases_without_binary_features():
    # ig_jump / ig_interpolate run the cases without binaries too (binary_mode without binary=)
    df = functional.run_catalogue(["integrated_gradients", "ig_jump", "ig_interpolate"], seed=0,
                                  cases=["additive", "binary_and"])
    assert (df["error"] == "").all(), df.loc[df["error"] != "", "error"].tolist()
    add = df[df["test"] == "additive"].set_index(["criterion", "method"])["measured"]
    for crit in add.index.get_level_values(0).unique():
        ig = add[(crit, "integrated_gradients")]
        for m in ("ig_jump", "ig_interpolate"):
            np.testing.assert_allclose(add[(crit, m)], ig, atol=1e-12)
    binary = df[(df["test"] == "binary_and") & (df["criterion"] == "matches_shapley")]
    assert binary.set_index("method").loc[["ig_jump", "ig_interpolate"], "passed"].all()


# -- exit_code and failure_summary (insdel functional --strict) ------------------------------------
@pytest.fixture(scope="module")
def mixed():
    """exact_shapley passes the additive case; random fails it."""
    return functional.run_catalogue(["exact_shapley", "random"], seed=0, cases=["additive"])


def test_exit_code_default_is_zero_even_when_a_method_fails(mixed):
    assert not mixed["passed"].all()
    err = io.StringIO()
    assert functional.exit_code(mixed, file=err) == 0
    assert functional.exit_code(mixed, strict=False, file=err) == 0
    assert err.getvalue() == ""


def test_exit_code_strict_is_one_with_a_one_line_summary(mixed):
    err = io.StringIO()
    assert functional.exit_code(mixed, strict=True, file=err) == 1
    out = err.getvalue()
    assert out.count("\n") == 1 and out.startswith("insdel functional --strict: ")
    n_fail = int((~mixed["passed"]).sum())
    assert f"{n_fail} of {len(mixed)} criteria failed" in out
    assert "random" in out and "exact_shapley" not in out
    assert "additive/" in out


def test_exit_code_strict_is_zero_when_everything_passes():
    ok = functional.run_catalogue(["exact_shapley"], seed=0, cases=["additive"])
    assert ok["passed"].all()
    err = io.StringIO()
    assert functional.exit_code(ok, strict=True, file=err) == 0
    assert err.getvalue() == "" and functional.failure_summary(ok) == ""


def test_failure_summary_names_a_raising_method_once_and_caps_the_list(mixed):
    df = mixed.copy()
    rnd = df["method"] == "random"
    df.loc[rnd, "error"] = "ValueError: boom"
    line = functional.failure_summary(df)
    assert line.count("additive (raised ValueError)") == 1
    many = pd.DataFrame({"test": [f"t{i}" for i in range(6)], "criterion": "c",
                         "method": "m", "passed": False})
    assert "+3 more" in functional.failure_summary(many)


def test_exit_code_bad_input_is_named(mixed):
    with pytest.raises(TypeError, match="strict"):
        functional.exit_code(mixed, strict="yes")
    with pytest.raises(ValueError, match="results"):
        functional.exit_code(mixed.drop(columns="passed"), strict=True)
    as_csv = mixed.assign(passed=mixed["passed"].map(str))  # "False" is truthy: refused
    with pytest.raises(ValueError, match=r"results\['passed'\]"):
        functional.exit_code(as_csv, strict=True)


def test_criterion_base_class_text_and_measure():
    from dataclasses import dataclass

    truth = insdel.functional.get("additive").truth(seed=0)

    @dataclass(frozen=True)
    class Bare(CR.Criterion):
        name = "bare"

    assert Bare().text == "bare"  # the base text is the name
    with pytest.raises(NotImplementedError):
        Bare()(truth, truth.phi)  # the base measure is for subclasses to define
    m = CR.MatchesShapley(tol=1e-3)
    assert m.text == "max |a - phi| / scale <= 0.001"
    assert m.measure(truth, truth.phi) == 0.0
    assert m.measure(truth, truth.phi + 1.0) > 0.0
