"""Marginal removal of a tree ensemble with K = 1,000 references: Shapley values and E[ABC].

A scaled-down copy of woodelf-explainer's published setting (its README: an XGBoost regressor of
100 trees of depth 6 on 127 features, trained on the background; 3,000,000 rows explained
against a 5,000,000-row background): the same model shape, B targets against K references.

(a) insdel ``insdel.trees.marginal.marginal_game(ens, X, background)``: the references' tables,
    then exact Shapley values (``shapley``) and E[ABC] over uniform orderings, both modes
    (``expected_abc``), timed together and apart;
(b) ``woodelf.WoodelfExplainer(model, background).shap_values(X)`` on the CPU (Shapley only);
(c) ``shap.TreeExplainer(model, background, feature_perturbation="interventional")`` on a
    subset of the targets (its cost is B x K x leaves), scaled to B linearly. The background is
    passed as ``shap.maskers.Independent(background, max_samples=K)``: given as a bare array,
    shap wraps it in an ``Independent`` masker whose default ``max_samples=100`` silently keeps
    100 of the K rows.

The values are checked equal first: insdel against the mean of brute-force single-reference
games on a few pairs, against woodelf and shap to their float32 accumulators' rounding (both
accumulate in float32). Then time against B + K at two sizes: linear in targets + references
means the time per (B + K) stays flat while B x K quadruples. Numba's first call (compilation
or cache load) is timed apart.

Usage: ``python bench/tree_marginal.py [--targets 2000] [--references 1000] [--tiny]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fmt_s, machine_line, markdown_table  # noqa: E402

from insdel.trees import read  # noqa: E402
from insdel.trees.marginal import marginal_game  # noqa: E402


def _model(n: int, trees: int, depth: int, rows: int, seed: int = 0):
    import xgboost as xgb

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, n)).astype(np.float32).astype(np.float64)
    w = rng.normal(size=n)
    y = X @ w + X[:, 0] * X[:, 1] + np.sin(3 * X[:, 2]) + 0.1 * rng.normal(size=rows)
    model = xgb.XGBRegressor(n_estimators=trees, max_depth=depth, learning_rate=0.1,
                             tree_method="hist", n_jobs=2, random_state=seed).fit(X, y)
    return model, X


def _insdel(ens, X, bg):
    """Tables, Shapley values and E[ABC] (both modes); the seconds of each part."""
    t0 = time.perf_counter()
    game = marginal_game(ens, X, bg)
    game.tables()
    t1 = time.perf_counter()
    phi = game.shapley()
    t2 = time.perf_counter()
    e_ins = game.expected_abc(mode="insertion")
    e_del = game.expected_abc(mode="deletion")
    t3 = time.perf_counter()
    return phi, (e_ins, e_del), {"tables": t1 - t0, "shapley": t2 - t1, "e_abc": t3 - t2,
                                 "total": t3 - t0}


def _woodelf(model, X, bg):
    import pandas as pd
    import woodelf

    cols = [f"f{i}" for i in range(X.shape[1])]
    t = time.perf_counter()
    ex = woodelf.WoodelfExplainer(model, pd.DataFrame(bg, columns=cols),
                                  feature_perturbation="interventional")
    phi = np.asarray(ex.shap_values(pd.DataFrame(X, columns=cols), verbose=False))
    return phi, time.perf_counter() - t


def _shap(model, X, bg):
    """shap's interventional values, their time and shap's own efficiency gap (its values'
    sum against f(x) - its expected value, both in the model's float32)."""
    import shap

    t = time.perf_counter()
    # a bare array becomes shap.maskers.Independent(bg), whose default max_samples = 100
    # silently keeps 100 of the K rows: the masker is given all K
    masker = shap.maskers.Independent(bg, max_samples=len(bg))
    ex = shap.TreeExplainer(model, masker, feature_perturbation="interventional")
    phi = np.asarray(ex.shap_values(X))
    secs = time.perf_counter() - t
    gap = float(np.abs(phi.sum(1) + ex.expected_value - model.predict(X)).max())
    return phi, secs, gap


def _brute_check(ens, X, bg, game_phi, n_pairs: int = 2, n_coalitions: int = 64, seed: int = 1):
    """Values and the efficiency of insdel's Shapley values against brute force."""
    rng = np.random.default_rng(seed)
    game = marginal_game(ens, X[:n_pairs], bg)
    keep = rng.random((n_pairs * n_coalitions, X.shape[1])) < 0.5
    pairs = np.repeat(np.arange(n_pairs), n_coalitions)
    want = np.array([ens.predict(np.where(k, X[p], bg)).mean()
                     for p, k in zip(pairs, keep, strict=True)])
    err_v = float(np.abs(game.values(pairs, keep) - want).max())
    gap = float(np.abs(game_phi[:n_pairs].sum(1)
                       - (ens.predict(X[:n_pairs]) - ens.predict(bg).mean())).max())
    return err_v, gap


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", type=int, default=2000)
    p.add_argument("--references", type=int, default=1000)
    p.add_argument("--features", type=int, default=127)
    p.add_argument("--trees", type=int, default=100)
    p.add_argument("--depth", type=int, default=6)
    p.add_argument("--shap-targets", type=int, default=20,
                   help="targets shap explains (its time is scaled to all targets)")
    p.add_argument("--tiny", action="store_true", help="smoke-test sizes (the timings mean nothing)")
    a = p.parse_args(argv)
    if a.tiny:
        a.targets, a.references, a.features, a.trees, a.depth, a.shap_targets = 40, 30, 10, 5, 3, 5
    print(machine_line())
    B, K = a.targets, a.references
    model, Xtrain = _model(a.features, a.trees, a.depth, rows=max(4 * (B + K), 2000))
    ens = read(model)
    rng = np.random.default_rng(2)
    X = Xtrain[rng.choice(len(Xtrain), B, replace=False)]
    bg = Xtrain[rng.choice(len(Xtrain), K, replace=False)]
    print(f"# XGBoost regressor: {a.trees} trees of depth {a.depth}, n = {a.features}; "
          f"B = {B:,} targets, K = {K:,} references (woodelf's setting: 100 trees, depth 6, "
          "n = 127, 3,000,000 targets, 5,000,000 references)")

    t = time.perf_counter()
    _insdel(ens, X[:2], bg[:3])  # numba's first call
    print(f"# numba first call (compilation or cache load): {fmt_s(time.perf_counter() - t)}")

    phi, (e_ins, e_del), secs = _insdel(ens, X, bg)
    err_v, gap = _brute_check(ens, X, bg, phi)
    wphi, t_wood = _woodelf(model, X, bg)
    S = min(a.shap_targets, B)
    sphi, t_shap_part, shap_gap = _shap(model, X[:S], bg)
    t_shap = t_shap_part * B / S
    scale = max(1.0, float(np.abs(phi).max()))
    print("\n## Equal values\n")
    print(markdown_table(
        ["check", "max abs difference"],
        [["insdel values vs brute force (mean of K hybrids), 2 pairs x 64 coalitions",
          f"{err_v:.1e}"],
         ["insdel Shapley efficiency: sum phi vs f(x) - mean_k f(r_k)", f"{gap:.1e}"],
         ["insdel vs woodelf Shapley (woodelf accumulates in float32)",
          f"{np.abs(phi - wphi).max():.1e} (scale {scale:.2g})"],
         [f"insdel vs shap interventional Shapley, {S} targets (shap accumulates in float32)",
          f"{np.abs(phi[:S] - sphi).max():.1e}"],
         ["shap's own efficiency gap: sum phi + expected value vs the model's predict",
          f"{shap_gap:.1e}"],
         ["E[ABC] insertion + deletion (exactly 0)", f"{np.abs(e_ins + e_del).max():.1e}"]]))

    print("\n## Time (Shapley values of every target; insdel adds E[ABC])\n")
    rows = [["insdel: references' tables", fmt_s(secs["tables"]), ""],
            ["insdel: Shapley values", fmt_s(secs["shapley"]), ""],
            ["insdel: E[ABC], both modes", fmt_s(secs["e_abc"]), ""],
            ["insdel: total (tables + Shapley + E[ABC])", fmt_s(secs["total"]), "1.00"],
            ["woodelf CPU: Shapley values", fmt_s(t_wood), f"{t_wood / secs['total']:.2f}"],
            [f"shap interventional: Shapley values ({S} targets, x {B / S:.0f})", fmt_s(t_shap),
             f"{t_shap / secs['total']:.1f}"]]
    print(markdown_table(["route", "seconds", "its time / insdel's total"], rows))

    print("\n## Linear in targets + references\n")
    lin = []
    for f in (1, 2):
        Xf = Xtrain[rng.choice(len(Xtrain), f * B, replace=f * B > len(Xtrain))]
        bgf = Xtrain[rng.choice(len(Xtrain), f * K, replace=f * K > len(Xtrain))]
        _, _, s = _insdel(ens, Xf, bgf)
        lin.append([f"{f * B:,}", f"{f * K:,}", fmt_s(s["tables"]), fmt_s(s["shapley"]),
                    fmt_s(s["total"]), f"{1e6 * s['total'] / (f * B + f * K):.1f}",
                    f"{1e9 * s['total'] / (f * B * f * K):.2f}"])
    print(markdown_table(["B", "K", "tables", "Shapley", "total", "us per (B + K)",
                          "ns per B x K"], lin))
    print("\n# doubling B and K doubles the time (flat per B + K), not quadruples it "
          "(per B x K halves)")


if __name__ == "__main__":
    main()
