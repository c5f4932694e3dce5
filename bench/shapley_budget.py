"""Exact baseline Shapley values at n = 12 and 16: insdel against shap and captum, same budget.

For each n, on the paper-shaped CERN MLP with n inputs (hidden 509-421-65-368-122-477, Linear + PReLU
+ Dropout, eval mode, float32, random weights) and P pairs whose features all differ, in one run:

(a) insdel: ``insdel.decomposition.shapley_values`` (2^n evaluations per pair, fast Möbius transform,
    ``phi_j = sum_{u ∋ j} Delta_u / |u|``; conventions *Anchored decomposition*);
(s) ``shap``'s exact explainer with the pair's reference as the single background row (the same
    numbers, a different algorithm), one explainer per pair;
(k) captum's ``KernelShap`` with the same evaluation budget, ``n_samples = 2^n`` per pair (sampled
    coalitions, so approximate), ``perturbations_per_eval = 2^n``;
(c) the bare forward pass over the 2^n P hybrid rows, pre-built (the limit for any exact method).

Printed per method: median time ((a) and (c) interleaved within each repeat), ratio to insdel, and
the error against insdel's exact values (max and mean absolute difference, relative to the mean
|phi|). Correctness first: shap's exact values must agree
with insdel's to float32 accuracy before anything is timed. bench/decomposition.py covers n = 12 on a
small float64 MLP, the overhead share at n = 16 and captum's ShapleyValues; this script adds n = 16
and the paper's model for the three-way comparison.

Usage: ``python bench/shapley_budget.py [--ns 12 16] [--pairs 10 2] [--repeats 3] [--threads N]
[--tiny]``
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    fmt_s,
    markdown_table,
    model_by_name,
    pairs,
    print_header,
    time_call,
    time_interleaved,
)

import insdel  # noqa: E402
from insdel.decomposition import shapley_values  # noqa: E402


def _all_subsets(X: np.ndarray, R: np.ndarray) -> np.ndarray:
    """All 2^n hybrids of every pair, float32 (P 2^n, n); not timed."""
    P, n = X.shape
    m = ((np.arange(1 << n)[:, None] >> np.arange(n)) & 1).astype(bool)
    return np.where(m[None], X[:, None, :], R[:, None, :]).astype(np.float32).reshape(-1, n)


def run_n(name: str, n: int, P: int, repeats: int, seed: int = 0) -> dict:
    import shap
    from captum.attr import KernelShap

    net = model_by_name(name, n)
    X, R = pairs(P, n, seed)

    def fn(Z):
        with torch.inference_mode():
            return net(torch.from_numpy(np.asarray(Z, dtype=np.float32)))[:, 0].double().numpy()

    def run_insdel():
        return shapley_values(net, X, R)

    def run_shap():
        out = np.empty((P, n))
        for b in range(P):
            masker = shap.maskers.Independent(R[b:b + 1], max_samples=1)
            out[b] = shap.explainers.Exact(fn, masker)(X[b:b + 1], silent=True).values[0]
        return out

    ks = KernelShap(lambda t: net(t)[:, 0])
    budget = 1 << n
    Xt, Rt = torch.from_numpy(X.astype(np.float32)), torch.from_numpy(R.astype(np.float32))

    def run_ks():
        torch.manual_seed(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.stack([
                ks.attribute(Xt[b:b + 1], baselines=Rt[b:b + 1], n_samples=budget,
                             perturbations_per_eval=budget).double().numpy()[0]
                for b in range(P)])

    rows = torch.from_numpy(_all_subsets(X, R))

    def bare():
        with torch.inference_mode():
            bs = insdel.adapter.DEFAULT_BATCH_SIZE  # the same batches insdel uses
            return [net(rows[s:s + bs]).numpy() for s in range(0, len(rows), bs)]

    # correctness (and warm-up)
    phi = run_insdel()
    scale = float(np.abs(phi).mean())
    gap = np.abs(phi.sum(1) - (fn(X) - fn(R))).max()
    assert gap < 1e-3 * max(1.0, scale * n), f"n={n}: insdel efficiency gap {gap}"
    phi_s = run_shap()
    err_s = float(np.abs(phi_s - phi).max())
    assert err_s < 1e-4 * max(1.0, scale), f"n={n}: shap exact and insdel differ by {err_s}"
    bare()

    t = time_interleaved({"bare": bare, "insdel": run_insdel}, repeats)
    t["shap"], _ = time_call(run_shap, repeats, warmup=0)
    t["ks"], phi_k = time_call(run_ks, repeats, warmup=0)  # seeded: every repeat gives phi_k
    return {"model": name, "n": n, "P": P, "budget": budget, "scale": scale,
            "err_shap": err_s, "mean_err_shap": float(np.abs(phi_s - phi).mean()),
            "err_ks": float(np.abs(phi_k - phi).max()),
            "mean_err_ks": float(np.abs(phi_k - phi).mean()), **t}


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ns", type=int, nargs="+", default=[12, 16])
    p.add_argument("--pairs", type=int, nargs="+", default=[10, 2],
                   help="pairs per n (one value, or one per --ns entry)")
    p.add_argument("--model", default="cern", choices=["cern", "cheap", "tiny"])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads for this run (default: torch's own default)")
    p.add_argument("--tiny", action="store_true", help="seconds-long smoke run")
    a = p.parse_args(argv)
    if a.tiny:
        a.ns, a.pairs, a.model, a.repeats = [6], [2], "tiny", 1
    if a.threads:
        torch.set_num_threads(a.threads)
    P = a.pairs * len(a.ns) if len(a.pairs) == 1 else a.pairs
    if len(P) != len(a.ns):
        raise SystemExit(f"--pairs: give one value or one per n ({len(a.ns)}); got {a.pairs}.")

    compile_s, _ = time_call(lambda: shapley_values(model_by_name("tiny", 4), *pairs(1, 4)), 1,
                             warmup=0)

    results = [run_n(a.model, n, Pn, a.repeats) for n, Pn in zip(a.ns, P, strict=True)]

    print_header("Exact Shapley values: insdel vs shap exact vs captum KernelShap (same budget)",
                 f"model {a.model}-shaped MLP with n inputs; medians of {a.repeats} repeat(s); "
                 f"numba first call {compile_s:.2f} s (excluded); errors against insdel's exact "
                 "values")
    rows = []
    for r in results:
        rows.append([r["n"], r["P"], r["budget"], fmt_s(r["insdel"]), fmt_s(r["shap"]),
                     fmt_s(r["ks"]), fmt_s(r["bare"]), f"{r['insdel'] / r['bare']:.2f}",
                     f"{r['shap'] / r['insdel']:.1f}", f"{r['ks'] / r['insdel']:.1f}",
                     f"{r['err_shap']:.1e}",
                     f"{r['err_ks']:.2e} ({r['mean_err_ks'] / r['scale']:.1%})"])
    print(markdown_table(
        ["n", "pairs", "evals per pair", "(a) insdel s", "(s) shap Exact s",
         "(k) captum KernelShap s", "(c) bare forward s", "(a)/(c)", "(s)/(a)", "(k)/(a)",
         "shap max err", "KernelShap max err (mean err / mean abs phi)"], rows))
    print()
    print("Targets: insdel's overhead over the bare forward pass under 10% at n = 16 ((a)/(c) < 1.1); "
          "no peer faster than insdel.")
    return results


if __name__ == "__main__":
    main()
