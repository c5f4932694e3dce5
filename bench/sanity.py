"""The model parameter randomisation test (issue 38) at the paper's size: cascading
randomisation of the CERN-shaped MLP (7 Linear layers, 16 inputs), 7 attribution methods, 200
targets, with the insertion / deletion ABCs at every step.

(s) ``insdel.sanity.parameter_randomisation`` over the 7 Linear layers: 8 models (trained + 7
    steps), each method's attributions and both ABCs on each;
(b) the baseline: the same attributions and ABCs on the trained model alone, measured in the same
    run; (s) / (8 x b) is the overhead of the randomisation itself (deep copies,
    re-initialisation, similarities, the tables). Target (s) <= 3 minutes on 2 cores.
(m) ``insdel.sanity.metric_reliability`` on 6 metrics (insertion / deletion ABC, faithfulness
    correlation and estimate, monotonicity (Arya), PGI) and the 7 methods' attributions of the same
    targets, the default perturbations. Target (m) <= 5 minutes on 2 cores.

Usage: ``python bench/sanity.py [--pairs 200] [--threads N] [--tiny]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cern_mlp, markdown_table, pairs  # noqa: E402

from insdel.attribution import attribute  # noqa: E402
from insdel.evaluation import evaluate  # noqa: E402
from insdel.sanity import metric_reliability, parameter_randomisation  # noqa: E402

METHODS = ("kernel_shap", "lime", "random", "integrated_gradients", "deeplift", "vanilla_grad",
           "input_x_gradient")
METRICS = ("insertion_abc", "deletion_abc", "faithfulness_correlation", "faithfulness_estimate",
           "monotonicity_arya", "pgi")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=200)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--tiny", action="store_true", help="smoke-test sizes (5 pairs)")
    a = p.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    B = 5 if a.tiny else a.pairs
    net = cern_mlp()
    X, R = pairs(B, 16, seed=0)
    X, R = X.astype(np.float32), R.astype(np.float32)
    linear = [n for n, m in net.named_modules() if isinstance(m, torch.nn.Linear)]

    for m in METHODS:  # warm-up: imports and numba compilation are not the baseline's
        attribute(net, X[:2], R[:2], m)
    evaluate(net, X[:2], R[:2], {"w": X[:2] - R[:2]}, n_random=0, add_random=False)
    t0 = time.perf_counter()
    As = {m: attribute(net, X, R, m) for m in METHODS}
    evaluate(net, X, R, As, n_random=0, add_random=False)
    base = time.perf_counter() - t0

    t0 = time.perf_counter()
    res = parameter_randomisation(net, X, R, list(METHODS), layers=linear)
    total = time.perf_counter() - t0
    steps = len(res.layers) + 1
    t0 = time.perf_counter()
    rel = metric_reliability(net, X, R, As, metrics=list(METRICS), seed=0, progress=False)
    t_rel = time.perf_counter() - t0
    print(f"## bench/sanity.py: cascading randomisation, CERN-shaped MLP, {len(linear)} Linear "
          f"layers, {len(METHODS)} methods, {B} targets, torch threads {torch.get_num_threads()}")
    print()
    print(markdown_table(
        ["what", "seconds", "model rows", "ratio"],
        [["(b) trained model only", f"{base:.1f}", "", ""],
         ["(s) parameter_randomisation", f"{total:.1f}", f"{res.stats['model_rows']:,}",
          f"(s)/({steps} x b) = {total / (steps * base):.2f}"],
         [f"(m) metric_reliability, {len(METRICS)} metrics", f"{t_rel:.1f}",
          f"{rel.stats.get('model_rows', 0):,}", ""]]))
    print()
    print(res.to_markdown(digits=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
