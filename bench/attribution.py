"""Attribution speed: time per point of every method, and insdel's IG against captum's.

In one run, on the paper-shaped CERN MLP (16 inputs, hidden 509-421-65-368-122-477, Linear + PReLU
+ Dropout(0.116), eval mode, float32, random weights) and P points (default 200) whose features all
differ from their references:

(a) integrated gradients with 500 steps (midpoint Riemann rule) for the P points:
    insdel (``insdel.attribute(..., "integrated_gradients")``, chunks of 16,384 rows) against
    captum's ``IntegratedGradients`` called point by point (one call per point, the usual script),
    and called once on all P points with its internal batching (``internal_batch_size`` 4,096,
    16,384 and unlimited; the fastest counts as "captum's best").
    Printed ratios: captum / insdel (> 1 means insdel is faster).
(b) time per point of every method with its default options (``kernel_shap`` 2,000 samples,
    ``lime`` 1,000 samples, ``exact_shapley`` 2^16 evaluations per pair on the slow subset of
    ``--slow-points`` points), with model evaluations per point; plus Kernel SHAP with
    ``backend="insdel"`` (vectorised over points) and IG with 4 binary features in the jump and
    interpolate modes (on a tenth of the points).

Correctness is checked before timing (insdel IG against captum, same rule, float32 tolerance; IG
and DeepLIFT completeness gaps printed). Times are medians over repeats; the first call (numba
compile or cache load) is timed separately and excluded.

Usage: ``python bench/attribution.py [--points 200] [--steps 500] [--repeats 3] [--slow-points 5]
[--tiny]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    cern_mlp,
    fmt_s,
    machine_line,
    markdown_table,
    model_by_name,
    pairs,
    time_call,
)

import insdel  # noqa: E402
from insdel.attribution import METHODS, attribute, supported  # noqa: E402


def captum_ig_point_by_point(net, X, R, steps):
    from captum.attr import IntegratedGradients

    ig = IntegratedGradients(net)
    Xt, Rt = torch.from_numpy(X).float(), torch.from_numpy(R).float()
    out = [ig.attribute(Xt[b:b + 1], baselines=Rt[b:b + 1], target=0, n_steps=steps,
                        method="riemann_middle") for b in range(X.shape[0])]
    return torch.cat(out).detach().double().numpy()


def captum_ig_batched(net, X, R, steps, internal_batch_size):
    from captum.attr import IntegratedGradients

    ig = IntegratedGradients(net)
    Xt, Rt = torch.from_numpy(X).float(), torch.from_numpy(R).float()
    a = ig.attribute(Xt, baselines=Rt, target=0, n_steps=steps, method="riemann_middle",
                     internal_batch_size=internal_batch_size)
    return a.detach().double().numpy()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--points", type=int, default=200)
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--slow-points", type=int, default=5,
                   help="points for kernel_shap, lime and exact_shapley (per-point cost)")
    p.add_argument("--tiny", action="store_true", help="seconds-long smoke run (test suite)")
    a = p.parse_args(argv)
    if a.tiny:
        a.points, a.steps, a.repeats, a.slow_points = 4, 20, 1, 1
        net = model_by_name("tiny")
        ks_opts = {"n_samples": 100}
        lime_opts = {"n_samples": 100}
        model_desc = "tiny MLP 16-8-1"
    else:
        net = cern_mlp()
        ks_opts, lime_opts = {}, {}
        model_desc = "CERN MLP 16-509-421-65-368-122-477-1 (PReLU, dropout, eval, float32)"
    n = 16
    X, R = pairs(a.points, n, seed=0)
    Xb, Rb = X.copy(), R.copy()  # features 0-3 binary (levels 0, 1), all differing
    Xb[:, :4] = (X[:, :4] > 0).astype(float)
    Rb[:, :4] = 1.0 - Xb[:, :4]
    print(machine_line())
    print(f"# model: {model_desc}; {a.points} points, IG {a.steps} steps (riemann_middle); "
          f"medians over {a.repeats} repeat(s)")

    # ---- first call (numba compile / cache load), excluded from timings
    t0 = time.perf_counter()
    attribute(net, X[:2], R[:2], "integrated_gradients", n_steps=4)
    for mode in ("jump", "interpolate"):
        attribute(net, Xb[:2], Rb[:2], "integrated_gradients", n_steps=4, binary=[0, 1, 2, 3],
                  binary_mode=mode)
    print(f"# first call (numba compile or cache load): {fmt_s(time.perf_counter() - t0)} s")

    # ---- (a) IG: correctness first
    ours = attribute(net, X, R, "integrated_gradients", n_steps=a.steps)
    ref = captum_ig_batched(net, X, R, a.steps, 16384)
    err = np.abs(ours - ref).max() / max(1e-12, np.abs(ref).max())
    assert err < 1e-3, f"insdel IG differs from captum's: relative max error {err:.2e}"
    ig_obj = insdel.attribution.IntegratedGradients(net)
    ig_obj.attribute(X, R, n_steps=a.steps)
    dl_obj = insdel.attribution.DeepLift(net)
    dl_obj.attribute(X, R)
    print(f"# check: insdel IG vs captum IG relative max difference {err:.1e}; completeness gap "
          f"max |sum a - (f(x) - f(r))|: IG {ig_obj.info_['max_abs_delta']:.1e}, "
          f"DeepLIFT {dl_obj.info_['max_abs_delta']:.1e}")

    t_ins, _ = time_call(lambda: attribute(net, X, R, "integrated_gradients", n_steps=a.steps),
                         a.repeats, warmup=0)
    t_pp, _ = time_call(lambda: captum_ig_point_by_point(net, X, R, a.steps), a.repeats,
                        warmup=0)
    batched = {}
    for ibs in (4096, 16384, None):
        batched[ibs], _ = time_call(lambda ibs=ibs: captum_ig_batched(net, X, R, a.steps, ibs),
                                    a.repeats, warmup=0)
    best_ibs = min(batched, key=batched.get)
    t_best = batched[best_ibs]
    rows = [["insdel integrated_gradients", fmt_s(t_ins), f"{1e3 * t_ins / a.points:.3g}", "1.00"],
            ["captum IG, point by point", fmt_s(t_pp), f"{1e3 * t_pp / a.points:.3g}",
             f"{t_pp / t_ins:.2f}"]]
    for ibs, t in batched.items():
        rows.append([f"captum IG, batched (internal_batch_size={ibs})", fmt_s(t),
                     f"{1e3 * t / a.points:.3g}", f"{t / t_ins:.2f}"])
    print(f"\n## (a) integrated gradients, {a.points} points x {a.steps} steps\n")
    print(markdown_table(["implementation", "seconds", "ms / point", "ratio captum / insdel"],
                         rows))
    print(f"\nratio captum point-by-point / insdel: {t_pp / t_ins:.2f}")
    print(f"ratio captum best batched (internal_batch_size={best_ibs}) / insdel: "
          f"{t_best / t_ins:.2f}")

    # ---- (b) every method, time per point
    slow = {"kernel_shap", "lime", "exact_shapley"}
    # the cohort methods read the observed points and their outcome (here the model's values)
    with torch.no_grad():
        y_obs = net(torch.as_tensor(X, dtype=torch.float32))[:, 0].double().numpy()
    cohort = {"data": X, "outcome": y_obs}
    opts = {"kernel_shap": ks_opts, "lime": lime_opts,
            "integrated_gradients": {"n_steps": a.steps}, "cohort_shapley": cohort,
            "igcs": cohort}
    rows = []
    ig_jump_labels = {"kernel_shap (backend='insdel')": {
        "method": "kernel_shap", "backend": "insdel", **ks_opts},
        "integrated_gradients (jump, 4 binaries)": {
        "method": "integrated_gradients", "binary": [0, 1, 2, 3], "binary_mode": "jump",
        "n_steps": a.steps},
        "integrated_gradients (interpolate, 4 binaries)": {
        "method": "integrated_gradients", "binary": [0, 1, 2, 3], "binary_mode": "interpolate",
        "n_steps": a.steps}}
    # every method the MLP supports (tree_shap reads tree ensembles only: bench/trees_scale.py)
    for name in [m for m in METHODS if m in supported(net)]:
        P = a.slow_points if name in slow else a.points
        secs = []
        info = None
        for _ in range(a.repeats):
            _, info = attribute(net, X[:P], R[:P], name, return_info=True, **opts.get(name, {}))
            secs.append(info["seconds"])
        t = float(np.median(secs))
        rows.append([name, P, f"{1e3 * t / P:.3g}", f"{info['model_evaluations'] / P:,.0f}"])
    # the binary modes cost up to 2^4 times more: they run on a tenth of the points
    for label, spec in ig_jump_labels.items():
        P = a.points if spec["method"] == "kernel_shap" else max(1, a.points // 10)
        secs = []
        kw = {k: v for k, v in spec.items() if k != "method"}
        for _ in range(a.repeats):
            _, info = attribute(net, Xb[:P], Rb[:P], spec["method"], return_info=True, **kw)
            secs.append(info["seconds"])
        t = float(np.median(secs))
        rows.append([label, P, f"{1e3 * t / P:.3g}", f"{info['model_evaluations'] / P:,.0f}"])
    print("\n## (b) time per point, default options\n")
    print(markdown_table(["method", "points", "ms / point", "model rows / point"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
