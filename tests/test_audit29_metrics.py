"""Audit 29: metrics, leaderboard and metric grading; each test failed before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from insdel import leaderboard as L
from insdel import metrics as M
from insdel.functional import grading

W = np.array([1.0, -2.0, 3.0, 0.5])


def _f(X):
    return np.tanh(np.asarray(X) @ W)


@pytest.fixture
def pairs():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, 4))
    R = np.zeros((5, 4))
    return X, R, (X - R) * W


# ------------------------------------------------------------------ Metric.__call__ arguments
@pytest.mark.parametrize("name, kwargs", [("pgi", {"k": 1}), ("insertion_abc", {"order": "absolute"}),
                                          ("faithfulness_correlation", {"subset": 2})])
def test_metric_call_refuses_arguments_it_would_ignore(pairs, name, kwargs):
    """An option given to the call (instead of to get) used to be swallowed by **kwargs."""
    X, R, A = pairs
    with pytest.raises(ValueError, match=f"unknown argument.*{next(iter(kwargs))}"):
        M.get(name)(_f, X, R, A, **kwargs)


def test_metric_call_still_takes_the_arguments_compute_reads(pairs):
    X, R, A = pairs
    M.get("pgi")(_f, X, R, A, method="m")
    M.get("feature_agreement")(_f, X, R, A, ground_truth=A)
    sub = np.zeros((5, 100, 4), bool)
    sub[:, :, 0] = True
    sub[:, ::2, 1] = True
    M.get("faithfulness_correlation")(_f, X, R, A, subsets=sub)
    assert M.get("sensitivity").call_arguments() >= {"explainer", "method"}


# ------------------------------------------------------------- Sufficiency (Dasgupta), seuclidean
def test_sufficiency_seuclidean_ignores_a_unit_constant_over_pairs():
    """A unit with the same attribution on every pair (x_j = r_j everywhere) made every
    seuclidean distance 0/0 = NaN, so every pair scored NaN."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(8, 4))
    R = X.copy()
    R[:, :3] = 0.0  # feature 3 never differs: its attribution is 0 on every pair
    A = (X - R) * W

    def f3(Z):
        return np.asarray(Z)[:, :3] @ W[:3]

    got = M.get("sufficiency_dasgupta")(lambda Z: f3(Z), X, R, A)
    want = M.get("sufficiency_dasgupta")(f3, X[:, :3], R[:, :3], A[:, :3])
    assert np.isfinite(got).sum() >= 6
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)])


# ------------------------------------------------------------------------------- leaderboard
def _run(path: Path, scores: dict) -> Path:
    cfg = {"name": "r", "seed": 0, "data": {"recipe": "toy"}, "methods": {"names": list(scores)}}
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({
        "name": "r", "seed": 0, "config": cfg, "policies": ["average"],
        "data": {"name": "toy"}, "model": {}}))
    rows = [{"pair": i, "method": m, "mode": mode, "abc": float(s)}
            for m, by in scores.items() for mode, v in by.items() for i, s in enumerate(v)]
    (path / "average").mkdir()
    pd.DataFrame(rows).to_parquet(path / "average" / "abc.parquet", index=False)
    return path


def test_leaderboard_says_when_a_method_is_left_out_of_a_block(tmp_path):
    """A method with a NaN (or missing) score on one pair vanished from the block, the overall
    ranks and the Markdown without a word (and the best method could be the one dropped)."""
    ins = {"a": [3.0, np.nan, 3.0], "b": [1.0, 2.0, 3.0], "c": [0.0, 0.0, 0.0]}
    run = _run(tmp_path / "r", {m: {"insertion": ins[m], "deletion": [0.0, 0.0, 0.0]}
                                for m in "abc"})
    board = L.leaderboard([run], n_boot=20)
    assert any("insertion ABC" in n and "a (no score or NaN on 1 of 3 pairs)" in n
               for n in board.notes)
    md = board.to_markdown()
    assert "| a | n/a | " in md  # listed in the overall table, n/a where left out
    assert md.count("| a |") == 2  # and in the block table


def test_leaderboard_markdown_lists_a_method_missing_from_the_first_metric(tmp_path):
    """A method with deletion scores only was left out of the tables (or crashed them)."""
    scores = {"a": {"insertion": [1.0, 2.0], "deletion": [0.5, 0.1]},
              "b": {"insertion": [0.0, 1.0], "deletion": [0.2, 0.3]},
              "c": {"deletion": [0.9, 0.9]}}
    board = L.leaderboard([_run(tmp_path / "r", scores)], n_boot=20)
    md = board.to_markdown()
    assert md.count("| c |") == 2


def test_leaderboard_pair_without_any_score_does_not_drop_methods(tmp_path):
    ins = {"a": [3.0, np.nan, 3.0], "b": [1.0, np.nan, 3.0]}
    run = _run(tmp_path / "r", {m: {"insertion": ins[m]} for m in "ab"})
    board = L.leaderboard([run], n_boot=20)
    b = board.blocks.set_index("method")
    assert set(b.index) == {"a", "b"} and (b["n_pairs"] == 2).all()
    assert not board.notes


# ----------------------------------------------------------------------------------- grading
def test_grading_does_not_pass_a_metric_that_is_nan_on_some_pairs():
    """NaN scores were neither wins nor losses, so a metric undefined on most pairs passed."""

    def mostly_nan(f, X, R, A):
        s = M.get("insertion_abc")(f, X, R, A)
        s[1:] = np.nan
        return s

    g = grading.grade_metrics([mostly_nan], cases=["monotone_additive"])
    row = g[g["worse"] == "reversed"].iloc[0]
    assert row["wins"] == 1 and row["losses"] == 0  # what used to pass
    assert row["undefined"] == 7
    assert not row["passed"]
    assert "NaN" in grading.grading_markdown(g)


def test_grading_refuses_a_metric_without_one_score_per_pair():
    """A callable returning one aggregate number was counted as a single pair."""

    def aggregate(f, X, R, A):
        return np.float64(np.mean(A[:, 0]))

    with pytest.raises(ValueError, match="one score per pair"):
        grading.grade_metrics([aggregate], cases=["monotone_additive"])
