"""Cost of the full ``insdel reproduce paper-cern`` run, from measured per-unit costs.

The full run (2,000 targets x 3 policies, the paper's Table 7 MLP, exact Kernel SHAP with 2^16
coalitions per pair) takes hours on 2 cores, so this script measures each stage's cost per unit on the
real configuration (per pair, per epoch) and multiplies by the run's sizes. Every number it prints
is measured in this run except the number of training epochs (early stopping decides it; the script
prints the range 50 to 300 = the preset's max_epochs).

Usage: ``python bench/paper_cost.py [--tiny]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import insdel
from insdel import datasets, models
from insdel.attribution import attribute


def per_pair(fn, B: int) -> float:
    t0 = time.perf_counter()
    fn(B)
    return (time.perf_counter() - t0) / B


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tiny", action="store_true", help="seconds-long smoke run (numbers meaningless)")
    a = p.parse_args(argv)
    n_events, preset = (3000, "quick_cern") if a.tiny else (100_000, "paper_cern")
    sizes = {"ks": 2 if a.tiny else 4, "ig": 4 if a.tiny else 40, "lime": 2 if a.tiny else 10}
    cfg = insdel.config.load("paper_cern")
    targets = 2000
    policies = len(cfg["policies"])
    dec_pairs = int(cfg.get("decomposition", {}).get("n_pairs", 0))
    lime_samples = 1000

    ds = datasets.get("dielectron_sim", n_events=n_events)
    t0 = time.perf_counter()
    net, _ = models.train_mlp(ds, preset, max_epochs=1, progress=False)
    epoch_s = time.perf_counter() - t0
    X, R = ds.X_test[:40], ds.X_test[40:80]
    attribute(net, X[:2], R[:2], "integrated_gradients", n_steps=10)  # warm-up / numba compile

    ks = per_pair(lambda B: attribute(net, X[:B], R[:B], "exact_shapley"), sizes["ks"])
    ig = per_pair(lambda B: attribute(net, X[:B], R[:B], "integrated_gradients", n_steps=500),
                  sizes["ig"])
    dl = per_pair(lambda B: attribute(net, X[:B], R[:B], "deeplift"), sizes["ig"])
    lime = per_pair(lambda B: attribute(net, X[:B], R[:B], "lime", n_samples=lime_samples),
                    sizes["lime"])
    rng = np.random.default_rng(0)
    attrs = {f"m{i}": rng.normal(size=(sizes["ig"], 16)) for i in range(6)}
    curves = per_pair(lambda B: insdel.evaluate(net, X[:B], R[:B], attrs, n_random=20),
                      sizes["ig"])

    pairs = targets * policies
    rows = [
        ("train, per epoch (80,000 rows)", epoch_s, "50-300 epochs", 50 * epoch_s, 300 * epoch_s),
        ("exact Kernel SHAP, per pair (65,536 evals)", ks, f"{pairs} pairs", ks * pairs, ks * pairs),
        ("integrated gradients 500 steps, per pair", ig, f"{pairs} pairs", ig * pairs, ig * pairs),
        ("DeepLIFT, per pair", dl, f"{pairs} pairs", dl * pairs, dl * pairs),
        (f"LIME ({lime_samples} samples), per pair", lime, f"{pairs} pairs", lime * pairs,
         lime * pairs),
        ("curves: 7 methods + 20 random, both modes, per pair", curves, f"{pairs} pairs",
         curves * pairs, curves * pairs),
        ("exact decomposition, per pair", ks, f"{dec_pairs * policies} pairs",
         ks * dec_pairs * policies, ks * dec_pairs * policies),
    ]
    print(f"# full paper-cern cost from per-unit costs measured now (model preset {preset}"
          f"{', TINY: numbers meaningless' if a.tiny else ''})")
    print("| stage | measured per unit s | units in the full run | total s (low) | total s (high) |")
    print("|---|---:|---|---:|---:|")
    lo = hi = 0.0
    for name, unit, count, t_lo, t_hi in rows:
        lo, hi = lo + t_lo, hi + t_hi
        print(f"| {name} | {unit:.4f} | {count} | {t_lo:.0f} | {t_hi:.0f} |")
    print(f"| **total** |  |  | **{lo:.0f} ({lo / 3600:.1f} h)** | **{hi:.0f} ({hi / 3600:.1f} h)** |")
    print("One-to-one pairs whose charges coincide need fewer exact-Shapley evaluations (distinct rows"
          " only), so the exact-Shapley rows are an upper bound.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
