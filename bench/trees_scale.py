"""Tree engine at scale: n = 200, an XGBoost regressor of 500 trees of depth 8, P pairs.

In one run, through the front door (``insdel.game.as_game(model, X, R)``, engine ``auto``):

(r) the booster read (``insdel.trees.read``, what ``as_game`` does first) and (g) the game:
    held or streamed leaf patterns (a strided sample of the pairs decides; at this size the game
    streams and stores nothing);
(c) curves: 8 random orderings per pair, insertion and deletion, every step (the streamed
    route: one walk of the trees per pair that also keeps v(∅), v(all), E[AUC] and the Shapley
    values);
(e) E[ABC] (both modes) and (s) exact Shapley values (kept from that walk when streamed).

The floor of any exact algorithm on the same pairs, timed in the same run:

(w) a count-only walk of the trees (``insdel.trees.patterns.pattern_counts``): every exact
    algorithm visits every leaf a pair reaches;
(p) XGBoost's ``inplace_predict`` over just X and R (2 P rows).

Against:

(f) XGBoost's own ``inplace_predict`` over the curves' rows, P 8 2 (n + 1) of them: timed on a
    sample of rows and scaled (the full count is about 3.2e8 rows at P = 100,000; building
    the rows is not counted: the floor of any black-box engine is the model over them);
(t) ``shap.TreeExplainer(model, r[None], feature_perturbation="interventional")`` looped over
    a sample of pairs (one explainer per pair: each pair has its own reference), scaled to P.

Agreement: the tree engine's Shapley values of a few pairs against shap's to 1e-6 relative
(shap accumulates in float32 through the booster's float32 thresholds; the bound is the
relative error the issue sets).

Usage: ``python bench/trees_scale.py [--pairs 100000] [--trees 500] [--depth 8] [--n 200]
[--shap-pairs 20] [--model PATH] [--save-model PATH] [--tiny]`` (``--model``: an XGBoost model
file, e.g. one ``--save-model`` wrote, instead of fitting one: about 40 s saved).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this tree's insdel

from insdel.game import as_game, engine_text  # noqa: E402
from insdel.trees import read  # noqa: E402
from insdel.trees.game import tree_game  # noqa: E402
from insdel.trees.patterns import pattern_counts  # noqa: E402

ORDERINGS = 8


def _model(n: int, trees: int, depth: int, seed: int = 0):
    """An XGBoost regressor fitted on synthetic data (interactions, so the trees use many
    features)."""
    import xgboost

    rng = np.random.default_rng(seed)
    rows = max(2000, 20 * n)
    X = rng.normal(size=(rows, n))
    w = rng.normal(size=n)
    y = X @ w / np.sqrt(n) + np.sin(X[:, 0] * X[:, 1]) + X[:, 2] * (X[:, 3] > 0) \
        + 0.1 * rng.normal(size=rows)
    model = xgboost.XGBRegressor(n_estimators=trees, max_depth=depth, learning_rate=0.05,
                                 colsample_bytree=0.5, n_jobs=2, random_state=seed)
    return model.fit(X, y)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=100_000)
    ap.add_argument("--trees", type=int, default=500)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--shap-pairs", type=int, default=20)
    ap.add_argument("--model", default=None, help="an XGBoost model file to load instead of "
                    "fitting (--n must match its features; --trees and --depth are ignored)")
    ap.add_argument("--save-model", default=None, help="save the fitted model there")
    ap.add_argument("--tiny", action="store_true", help="a few seconds: n 12, 10 trees of "
                    "depth 3, 40 pairs, 4 shap pairs")
    a = ap.parse_args(argv)
    if a.tiny:
        a.n, a.trees, a.depth, a.pairs, a.shap_pairs = 12, 10, 3, 40, 4
    import shap

    t0 = time.perf_counter()
    if a.model is not None:
        import xgboost

        model = xgboost.Booster()
        model.load_model(a.model)
        if model.num_features() != a.n:
            raise SystemExit(f"--model {a.model} takes {model.num_features()} features; "
                             f"--n is {a.n}")
        how = f"loaded from {a.model}"
    else:
        model = _model(a.n, a.trees, a.depth)
        if a.save_model is not None:
            model.get_booster().save_model(a.save_model)
        how = "fitted"
    t_fit = time.perf_counter() - t0
    rng = np.random.default_rng(1)
    P, n = a.pairs, a.n
    X, R = rng.normal(size=(P, n)), rng.normal(size=(P, n))
    orders = np.argsort(rng.random((P, ORDERINGS, n)), axis=2).astype(np.int64)
    # compile every kernel on a tiny call first (numba's compile time is not the engine's)
    small = as_game(model, X[:2], R[:2])
    assert small.engine == "tree"
    small.curves(orders[:2], modes=("insertion", "deletion"))
    small.expected_abc()
    small.shapley()
    small = tree_game(read(model), X[:2], R[:2], max_patterns=1)  # the streamed route's kernels
    assert small.patterns is None
    small.curves(orders[:2], modes=("insertion", "deletion"))

    t = {}
    t0 = time.perf_counter()
    ens = read(model)  # what as_game(model, ...) reads first, timed apart
    t["read the booster"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    game = as_game(ens, X, R)
    t["game: held or streamed"] = time.perf_counter() - t0
    assert game.engine == "tree"
    t0 = time.perf_counter()
    game.curves(orders, modes=("insertion", "deletion"))
    t["curves 8 x 2 modes"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    game.expected_abc(), game.expected_abc(mode="deletion")
    t["E[ABC] 2 modes"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    phi = game.shapley()
    t["Shapley"] = time.perf_counter() - t0
    closed = sum(t.values())
    streamed = game.patterns is None

    # the floor: a count-only walk of the same pairs, and XGBoost's predict over X and R
    t0 = time.perf_counter()
    reached = pattern_counts(ens, X, R)[0]
    t_walk = time.perf_counter() - t0
    booster = model if hasattr(model, "inplace_predict") else model.get_booster()
    booster.inplace_predict(X[:10])
    t0 = time.perf_counter()
    booster.inplace_predict(X)
    booster.inplace_predict(R)
    t_xr = time.perf_counter() - t0

    # XGBoost's predict over the curves' rows: a sample of hybrid rows, scaled
    rows = P * ORDERINGS * 2 * (n + 1)
    block = min(rows, 100_000)
    Z = np.where(rng.random((block, n)) < 0.5, X[rng.integers(0, P, block)],
                 R[rng.integers(0, P, block)]).astype(np.float32)
    booster.inplace_predict(Z[:10])
    t0 = time.perf_counter()
    booster.inplace_predict(Z)
    forward = (time.perf_counter() - t0) * rows / block

    # shap's interventional TreeExplainer, one per pair (its reference), on a sample, scaled
    k = min(P, a.shap_pairs)
    ref = np.empty((k, n))
    t0 = time.perf_counter()
    for b in range(k):
        ex = shap.TreeExplainer(model, R[b][None], feature_perturbation="interventional")
        ref[b] = ex.shap_values(X[b:b + 1], check_additivity=False)[0]
    t_shap = (time.perf_counter() - t0) * P / k
    rel = float(np.abs(phi[:k] - ref).max() / np.abs(ref).max())

    print(f"tree engine ({engine_text(game)}), n = {n}, {P:,} pairs, {ORDERINGS} orderings x "
          f"2 modes; model {how} in {t_fit:.1f} s (not counted); "
          f"{'streamed' if streamed else 'held'} patterns, {reached.mean():,.0f} leaves reached "
          "per pair")
    for name, s in t.items():
        print(f"  {name:<24} {s:9.3f} s  ({s / P * 1e3:.4f} ms per pair)")
    print(f"  {'tree engine total':<24} {closed:9.3f} s  ({closed / P * 1e3:.4f} ms per pair)")
    print(f"  {'floor: count-only walk':<24} {t_walk:9.3f} s  ({t_walk / P * 1e3:.4f} ms per "
          "pair: every exact algorithm visits every leaf reached)")
    print(f"  {'floor: XGBoost on X, R':<24} {t_xr:9.3f} s  (inplace_predict over the {2 * P:,} "
          "rows of X and R)")
    print(f"  {'XGBoost predict':<24} {forward:9.3f} s  (the curves' {rows:,} rows, estimated "
          f"from {block:,} sampled rows)")
    print(f"  {'shap TreeExplainer':<24} {t_shap:9.3f} s  (interventional, r[None] per pair, "
          f"estimated from {k} pairs)")
    print(f"  ratio tree engine / XGBoost predict over the curves' rows  {closed / forward:8.4f}")
    print(f"  ratio tree engine / shap TreeExplainer loop               {closed / t_shap:8.4f}")
    print(f"  ratio Shapley alone / shap TreeExplainer loop             "
          f"{t['Shapley'] / t_shap:8.4f}")
    per_pair = closed / P
    print(f"  projection to 100,000 pairs: tree engine {per_pair * 1e5:.1f} s, XGBoost predict "
          f"{forward / P * 1e5:.1f} s, shap loop {t_shap / P * 1e5:.1f} s")
    print(f"  agreement with shap.TreeExplainer on {k} pairs: max relative difference "
          f"{rel:.2e} (bound 1e-6)")
    assert rel < 1e-6, rel
    print(f"  ratio tree engine / count-only walk                      {closed / t_walk:8.4f}")
    return {"times": t, "closed": closed, "forward": forward, "shap": t_shap, "rel": rel,
            "walk": t_walk, "predict_xr": t_xr, "streamed": streamed}


if __name__ == "__main__":
    main()
