"""Audit 31: roar_figure without a standard error, ``insdel functional --strict``, and
``progress=`` validated wherever a progress bar is made."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from _plots import error_segments  # noqa: E402

import insdel  # noqa: E402
from insdel import cli, functional, plotting, roar  # noqa: E402
from insdel._progress import _NULL, progress_bar  # noqa: E402
from insdel._validation import check_progress  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


# --- 1. roar_figure: no zero-length error bar for a NaN standard error -----------------------------
def _roar_table(replicates: int) -> pd.DataFrame:
    """A roar() table (TABLE_COLUMNS) for two methods, one ordering, q = 0.5 and 1."""
    rng = np.random.default_rng(0)
    rows = []
    for r in range(replicates):
        rows.append(("none", "none", 0.0, r, 1.0 + 0.1 * rng.random(), 10))
        for m in ("good", "random"):
            o = "random" if m == "random" else "signed"
            for q in (0.5, 1.0):
                rows.append((m, o, q, r, 2.0 + q + 0.1 * rng.random(), 10))
    return pd.DataFrame(rows, columns=roar.TABLE_COLUMNS)




def _texts(ax) -> str:
    legend = ax.get_legend()
    return " | ".join([t.get_text() for t in ax.texts]
                      + ([t.get_text() for t in legend.get_texts()] if legend else []))


def test_roar_figure_one_replicate_draws_no_error_bars_and_says_so():
    s = roar.summarize(_roar_table(1))
    assert s["std_error"].isna().all() and (s["n"] == 1).all()  # the case being tested
    fig = plotting.roar_figure(s)
    ax = fig.axes[0]
    segs = error_segments(ax)
    assert not [g for g in segs if not np.all(np.isfinite(g)) or np.allclose(g[0], g[1])]
    assert segs == []  # no error bar at all: there is no standard error anywhere
    assert "1 replicate: no standard error" in _texts(ax)
    assert "± s.e." not in ax.get_ylabel()
    # the curves are still drawn, through every point (q = 0, 0.5, 1)
    lines = [ln for ln in ax.get_lines() if ln.get_label().startswith(("good", "random"))]
    assert len(lines) == 2 and all(len(ln.get_xdata()) == 3 for ln in lines)


def test_roar_figure_two_replicates_keeps_its_error_bars_and_no_note():
    s = roar.summarize(_roar_table(2))
    assert s["std_error"].notna().all()
    ax = plotting.roar_figure(s).axes[0]
    segs = error_segments(ax)
    assert len(segs) == 2 * 3  # two curves, three points each
    assert all(np.all(np.isfinite(g)) and not np.allclose(g[0], g[1]) for g in segs)
    assert "no standard error" not in _texts(ax)
    assert "± s.e." in ax.get_ylabel()


def test_roar_figure_some_points_without_standard_error_are_named():
    s = roar.summarize(_roar_table(2))
    s.loc[(s["method"] == "good") & s["q"].notna(), "std_error"] = np.nan
    ax = plotting.roar_figure(s).axes[0]
    segs = error_segments(ax)
    assert len(segs) == 3  # the random curve's only
    assert all(np.all(np.isfinite(g)) and not np.allclose(g[0], g[1]) for g in segs)
    text = _texts(ax)
    assert "no standard error" in text and "no s.e." in text
    assert "1 replicate" not in text  # n = 2 there: the NaN is not from one replicate


# --- 2. insdel functional --strict -------------------------------------------------------------------
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


def test_cli_functional_strict(capsys):
    args = ["functional", "--methods", "exact_shapley,random", "--tests", "additive",
            "--no-metrics"]
    assert cli.main(args) == 0
    capsys.readouterr()
    assert cli.main([*args, "--strict"]) == 1
    err = capsys.readouterr().err
    assert "insdel functional --strict:" in err and "random" in err
    assert cli.main(["functional", "--methods", "exact_shapley", "--tests", "additive",
                     "--no-metrics", "--strict"]) == 0


# --- 3. progress= is None, True or False -------------------------------------------------------------
def _pairs():
    rng = np.random.default_rng(0)
    X, R = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    orders = np.tile(np.arange(3), (4, 1))
    return X, R, orders


def _f(X):
    return X.sum(axis=1)


@pytest.mark.parametrize("bad", ["no", "False", 0, 1, 0.0, [], np.int64(1)])
def test_trace_refuses_a_progress_that_is_not_a_bool(bad):
    X, R, orders = _pairs()
    with pytest.raises(TypeError, match="progress") as e:
        insdel.trace(_f, X, R, orders, progress=bad)
    assert repr(bad) in str(e.value)


@pytest.mark.parametrize("ok", [None, True, False, np.True_, np.False_])
def test_trace_accepts_none_true_false(ok):
    X, R, orders = _pairs()
    res = insdel.trace(_f, X, R, orders, progress=ok)
    ref = insdel.trace(_f, X, R, orders, progress=False)
    for mode in res.curves:
        np.testing.assert_array_equal(res.curves[mode], ref.curves[mode])


def test_progress_is_checked_before_the_environment(monkeypatch):
    monkeypatch.setenv("INSDEL_PROGRESS", "0")
    with pytest.raises(TypeError, match="progress"):
        progress_bar(1, "x", enable="no")
    assert progress_bar(1, "x", enable=True) is _NULL  # the environment still wins for a bool


def test_check_progress():
    assert check_progress(None) is None
    assert check_progress(True) is True and check_progress(False) is False
    assert check_progress(np.True_) is True and check_progress(np.False_) is False
    with pytest.raises(TypeError, match=r"progress must be None, True or False; got 'no' \(str\)"):
        check_progress("no")


def test_other_public_functions_get_the_check():
    X, R, _ = _pairs()
    A = X - R
    with pytest.raises(TypeError, match="progress"):
        insdel.curves(_f, X, R, A, progress="no")
    with pytest.raises(TypeError, match="progress"):
        insdel.evaluate(_f, X, R, {"a": A}, progress="yes")
