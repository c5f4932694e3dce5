"""The whole faithfulness-metric suite from one engine against Quantus' metrics run one by one
(issue #17).

Same run, same inputs: the CERN-shaped MLP (paper Table 7, 16 inputs, float32), B pairs with the
black reference (R = 0, which is Quantus' ``perturb_baseline=0.0``), one attribution map per pair
without ties, ``normalise=False, abs=False``. The suite is Quantus' faithfulness metrics that
evaluate the model at hybrid points: PixelFlipping, RegionPerturbation (MoRF), Selectivity,
Monotonicity (Arya), MonotonicityCorrelation (Nguyen), FaithfulnessCorrelation,
FaithfulnessEstimate and IROF.

* (a) insdel: :func:`insdel.metrics.evaluate_metrics` with all of them on one shared hybrid cache
  (each distinct hybrid point evaluated once for the whole suite);
* (q) Quantus 0.6: each metric's own call, one after the other, ``batch_size=B`` (one batch);
* (c) the bare forward pass over as many rows as insdel evaluated, in one call (the limit of any
  engine).

The model rows each side asks for are counted (a counting wrapper around the same network). The
script first checks, metric by metric, that insdel's per-pair scores equal Quantus' (to float32
rounding; FaithfulnessCorrelation and MonotonicityCorrelation draw at random in Quantus, so the
same subsets are replayed from numpy's global seed). Usage:
``python bench/metrics_suite.py [--pairs 500] [--repeats 3] [--threads N] [--tiny]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import CERN_HIDDEN, fmt, machine_line, markdown_table, mlp, time_call  # noqa: E402

import insdel.metrics as M  # noqa: E402


class Counting:
    """Wraps a torch module; counts the rows it is called on (both engines use the same one)."""

    def __init__(self, net):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner
                self.rows = 0

            def forward(self, x):
                self.rows += int(x.shape[0])
                return self.inner(x.reshape(x.shape[0], -1))

        self.module = Wrapped(net).eval()


def suite(n: int, fc_runs: int, fc_subset: int):
    """(insdel name, insdel options, quantus constructor) for every metric of the suite."""
    import quantus

    common = dict(normalise=False, abs=False, disable_warnings=True, perturb_baseline=0.0,
                  display_progressbar=False)
    return [
        ("pixel_flipping", {}, lambda: quantus.PixelFlipping(return_auc_per_sample=True,
                                                              **common)),
        ("region_perturbation", {"regions_evaluation": n},
         lambda: quantus.RegionPerturbation(patch_size=1, order="morf", regions_evaluation=n,
                                            **common)),
        ("selectivity", {}, lambda: quantus.Selectivity(patch_size=1, **common)),
        ("faithfulness_estimate", {}, lambda: quantus.FaithfulnessEstimate(**common)),
        ("faithfulness_correlation", {"nr_runs": fc_runs, "subset_size": fc_subset},
         lambda: quantus.FaithfulnessCorrelation(nr_runs=fc_runs, subset_size=fc_subset,
                                                 return_aggregate=False, **common)),
        ("irof", {}, lambda: quantus.IROF(return_aggregate=False, **common)),
    ]


def quantus_scores(ctor, net, X, A, batch):
    import quantus

    n = X.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = ctor()(net, X.reshape(-1, 1, 1, n), np.zeros(len(X), int), A.reshape(-1, 1, 1, n),
                   channel_first=True, softmax=False, device="cpu", batch_size=batch)
    s = np.asarray(s, dtype=np.float64)
    if s.ndim == 2:  # RegionPerturbation and Selectivity return curves: their score is the area
        s = np.array([quantus.helpers.utils.calculate_auc(c) for c in s])
    return s


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=500)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--tiny", action="store_true", help="seconds-long smoke run")
    a = p.parse_args(argv)
    if a.tiny:
        a.pairs, a.repeats = 20, 1
    import torch

    if not hasattr(np, "trapz"):  # Quantus 0.6 calls np.trapz, gone in numpy 2
        np.trapz = np.trapezoid
    if a.threads:
        torch.set_num_threads(a.threads)
    n = 16
    rng = np.random.default_rng(0)
    X = rng.normal(size=(a.pairs, n)).astype(np.float32)
    A = rng.normal(size=(a.pairs, n)).astype(np.float32)
    R = np.zeros(n, np.float32)
    net = Counting(mlp(n, CERN_HIDDEN, 0.11604, seed=0)).module
    fc_runs, fc_subset = 20, 4
    metrics = suite(n, fc_runs, fc_subset)
    names = [m[0] for m in metrics]
    built = [M.build(name, **opts) for name, opts, _ in metrics]

    # correctness first, metric by metric (FaithfulnessCorrelation: the same subsets)
    worst = {}
    for (name, _opts, ctor), metric in zip(metrics, built, strict=True):
        if name == "faithfulness_correlation":
            np.random.seed(0)
            subsets = np.stack([np.stack([np.random.choice(n, fc_subset, replace=False)
                                          for _ in range(a.pairs)]) for _ in range(fc_runs)],
                               axis=1)
            np.random.seed(0)
            theirs = quantus_scores(ctor, net, X, A, a.pairs)
            ours = M.build(name, nr_runs=fc_runs, subset_size=fc_subset)(
                net, X, R, A, subsets=subsets)
        else:
            theirs = quantus_scores(ctor, net, X, A, a.pairs)
            ours = metric(net, X, R, A)
        err = float(np.nanmax(np.abs(ours - theirs.reshape(ours.shape))
                               / np.maximum(1.0, np.abs(theirs.reshape(ours.shape)))))
        worst[name] = err
        if not err < 1e-4:
            raise SystemExit(f"{name}: insdel and Quantus disagree (max rel. diff {err:.2e})")

    def run_insdel():
        return M.evaluate_metrics(net, X, R, {"m": A}, metrics=built, progress=False)

    def run_quantus():
        for _name, _opts, ctor in metrics:
            quantus_scores(ctor, net, X, A, a.pairs)

    net.rows = 0
    res = run_insdel()
    rows_insdel = net.rows
    net.rows = 0
    run_quantus()
    rows_quantus = net.rows
    # the distinct hybrid rows insdel evaluated, rebuilt for the bare forward pass
    keys = res.stats["evaluated"]
    rows_t = torch.as_tensor(np.resize(X, (keys, n)), dtype=torch.float32)

    def bare():
        with torch.no_grad():
            return net.inner(rows_t)

    t_a, _ = time_call(run_insdel, a.repeats)
    t_q, _ = time_call(run_quantus, a.repeats)
    t_c, _ = time_call(bare, a.repeats)
    row = {"pairs": a.pairs, "metrics": len(names), "hybrid points requested":
           res.stats["requested"], "(a) model rows": rows_insdel, "(q) model rows": rows_quantus,
           "(a) insdel s": t_a, "(q) Quantus s": t_q, "(c) bare forward s": t_c,
           "(q)/(a)": t_q / t_a, "(a)/(c)": t_a / t_c,
           "max rel. diff vs Quantus": max(worst.values())}
    print(machine_line())
    print(f"# CERN-shaped MLP (16 inputs), black reference R = 0; suite: {', '.join(names)}")
    print(markdown_table(list(row), [[fmt(v) for v in row.values()]]))
    return [row]


if __name__ == "__main__":
    main()
