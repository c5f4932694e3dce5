"""Exact order-2 interaction indices of an XGBoost regressor at n = 30 and n = 200 (issue 45's
tree target): insdel's tree route (``insdel.interactions`` on ``insdel.trees.tree_game``, read
off the leaf patterns) beside shapiq's ``TreeExplainer``.

shapiq is run two ways per size: on the XGBoost model itself (its own conversion), and on the
same trees converted by ``insdel.interactions.shapiq_io.shapiq_trees`` with covers that follow
each pair's reference (shapiq's path-dependent TreeSHAP-IQ then computes the baseline game's
indices, the game insdel computes). Where both run, the largest absolute difference and the
largest relative to the pair's largest |value| are printed; a crash is printed with its message.
shapiq's exact route (``ExactComputer``) needs 2^n coalition values: 2^30 and 2^200 are out of
its reach, printed as such, not run.

Usage: ``python bench/interactions_trees.py [--pairs 5] [--trees 100] [--depth 6] [--tiny]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this tree's insdel

import insdel  # noqa: E402
from insdel.interactions.shapiq_io import shapiq_trees  # noqa: E402
from insdel.trees.game import tree_game  # noqa: E402

INDICES = ("k-SII", "SII", "STII")


def model_of(n: int, trees: int, depth: int, seed: int = 0):
    import xgboost as xgb

    rng = np.random.default_rng(seed)
    Xt = rng.normal(size=(2000, n))
    y = Xt[:, 0] * Xt[:, 1] + np.sin(Xt[:, 2]) + Xt[:, 3] * Xt[:, 4] * Xt[:, 5] \
        + 0.1 * Xt[:, 6:].sum(axis=1)
    return xgb.XGBRegressor(n_estimators=trees, max_depth=depth, n_jobs=1).fit(Xt, y), rng


def _shapiq_on_model(model, x, index):
    import shapiq

    try:
        shapiq.TreeExplainer(model, max_order=2, min_order=1, index=index).explain(x)
        return "runs"
    except Exception as err:  # noqa: BLE001 - the message is the measurement
        return f"crash: {type(err).__name__}: {str(err).splitlines()[0][:60]}..."


def run(n: int, pairs: int, trees: int, depth: int) -> None:
    import shapiq

    model, rng = model_of(n, trees, depth)
    ens = insdel.trees.read(model)
    X, R = rng.normal(size=(pairs, n)), rng.normal(size=(pairs, n))
    print(f"\n## n = {n}: XGBoost {trees} trees, max_depth {depth}; {pairs} pairs, |D| = {n}")
    print(f"shapiq ExactComputer: no exact answer (2^{n} coalition values per pair)")
    print(f"shapiq TreeExplainer on the XGBRegressor: {_shapiq_on_model(model, X[0], 'k-SII')}")
    for index in INDICES:
        t0 = time.perf_counter()
        res = insdel.interactions(tree_game(ens, X, R), index=index, order=2)
        t_ins = time.perf_counter() - t0
        line = (f"{index:6s} insdel {t_ins:8.3f} s ({t_ins / pairs * 1e3:8.2f} ms/pair, "
                f"{int(np.diff(res._eoff).mean()):6d} subsets/pair)")
        if res.index in ("k-SII", "STII"):
            line += f"  efficiency err {np.abs(res.sums() - (res.v_all - res.v_empty)).max():.1e}"
        t0, err, rel, msg = time.perf_counter(), 0.0, 0.0, None
        for b in range(pairs):
            try:
                iv = shapiq.TreeExplainer(shapiq_trees(ens, R[b]), max_order=2, min_order=1,
                                          index=index).explain(X[b])
            except Exception as e:  # noqa: BLE001 - the message is the measurement
                msg = f"crash: {type(e).__name__}: {str(e).splitlines()[0][:70]}"
                break
            ours = res.to_dict(b)
            d = max(abs(v - ours.get(s, 0.0)) for s, v in iv.dict_values.items() if s)
            err = max(err, d)
            rel = max(rel, d / max(abs(v) for s, v in ours.items() if s))
        t_sh = time.perf_counter() - t0
        line += (f" | shapiq (r's trees) {msg}" if msg else
                 f" | shapiq (r's trees) {t_sh:8.3f} s, max diff {err:.1e} (rel {rel:.1e})")
        print(line)


def stii_check(trees: int, depth: int) -> None:
    """shapiq's own two routes on one n = 8 baseline game: ExactComputer (2^8 coalitions)
    against TreeExplainer on the reference's trees, and insdel's tree route against both."""
    import shapiq

    from insdel.interactions.shapiq_io import shapiq_game

    model, rng = model_of(8, trees, depth)
    ens = insdel.trees.read(model)
    x, r = rng.normal(size=(1, 8)), rng.normal(size=(1, 8))
    game = tree_game(ens, x, r)
    print("\n## n = 8: shapiq ExactComputer vs shapiq TreeExplainer vs insdel (order 2)")
    for index in INDICES:
        ex = shapiq.ExactComputer(game=shapiq_game(game, None), n_players=8)(index, order=2)
        tr = shapiq.TreeExplainer(shapiq_trees(ens, r[0]), max_order=2, min_order=1,
                                  index=index).explain(x[0])
        ours = insdel.interactions(game, index=index, order=2).to_dict(0)
        keys = [s for s in ex.dict_values if s]
        d_tr = max(abs(ex[s] - tr[s]) for s in keys)
        d_in = max(abs(ex[s] - ours.get(tuple(s), 0.0)) for s in keys)
        print(f"{index:6s} |Exact - TreeExplainer| {d_tr:.1e}   |Exact - insdel| {d_in:.1e}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--tiny", action="store_true", help="2 pairs, 10 trees of depth 3")
    a = ap.parse_args(argv)
    pairs, trees, depth = (2, 10, 3) if a.tiny else (a.pairs, a.trees, a.depth)
    from importlib.metadata import version

    print(f"# interactions on tree ensembles (xgboost {version('xgboost')}, shapiq "
          f"{version('shapiq')})")
    for n in (30, 200):
        run(n, pairs, trees, depth)
    stii_check(10, 3)


if __name__ == "__main__":
    main()
