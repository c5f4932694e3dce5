"""Deletion curves: insdel against Quantus (PixelFlipping, RegionPerturbation) and the bare forward pass.

Quantus 0.6 evaluates faithfulness curves on batches of inputs; on tabular data it is driven here the
way a user would, with a per-pair reference reaching its perturbation function:

* ``quantus.PixelFlipping(features_in_step=1, perturb_func=<set the chosen indices to the pair's
  reference>, normalise=False, ...)`` called with ``x_batch`` (B, n), ``a_batch`` the attributions,
  ``y_batch`` zeros and ``softmax=False``. It perturbs features in decreasing *signed* attribution
  (``np.argsort(-a)``, the conventions' ordering when there are no ties) and returns the deletion curve
  after each step, z_1 .. z_n (not z_0 = f(x));
* ``quantus.RegionPerturbation(patch_size=1, order="morf", regions_evaluation=n, ...)`` on
  ``x_batch`` (B, 1, n): the same steps, returned as f(x) - z_k.

Quantus calls the perturbation function with the batch rows and the indices only, so the reference
of each row is found by position: the batches come in order and each makes n calls (one per step);
``RefPerturb`` advances its row offset after n calls. That this is right is checked: before timing,
Quantus's curves must equal insdel's deletion curves (max error printed).

Quantus's curves are checked on the first 100 pairs (that call is also its warm-up); insdel's row
count is checked on all of them. Each configuration times, in one run (medians over repeats, the
methods interleaved within each repeat):
(a) insdel: ``insdel.trace(..., modes=("deletion",))``;
(q64) PixelFlipping with Quantus's default ``batch_size=64``;
(qB) PixelFlipping with one batch of all rows (Quantus's best case);
(r64) RegionPerturbation with ``batch_size=64``;
(c) bare forward pass over exactly the distinct rows of the deletion curves, values into one float64
    array (bench/curves.py explains why not a list of output tensors).
With K orderings per pair Quantus gets the pairs repeated K times (one call over B K rows, the cheapest
way to drive it).

Usage: ``python bench/peers.py [--models cern bangalore cheap] [--orderings 1 27] [--pairs 2000]
[--pairs-many 200] [--repeats 3] [--threads N] [--tiny]``
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
    method_orderings,
    model_by_name,
    model_features,
    orderings_grid,
    pairs,
    print_header,
    time_call,
    time_interleaved,
)
from curves import distinct_rows  # noqa: E402

import insdel  # noqa: E402
from insdel.tracing import trace  # noqa: E402


class RefPerturb:
    """Quantus perturbation function that sets ``arr[i, indices[i]]`` to row i's own reference.

    Quantus passes only ``arr`` (the current batch, (b, n)) and ``indices`` ((b, steps)); the batch's
    rows are located by position: batches arrive in order and each makes ``calls_per_batch`` calls.
    """

    def __init__(self, R: np.ndarray, calls_per_batch: int):
        self.R = np.asarray(R, dtype=np.float32)
        self.calls_per_batch = int(calls_per_batch)
        self.reset()

    def reset(self) -> None:
        self.offset = 0
        self.calls = 0

    def __call__(self, arr: np.ndarray, indices: np.ndarray, **kwargs) -> np.ndarray:
        b = arr.shape[0]
        ref = self.R[self.offset:self.offset + b]
        if ref.shape[0] != b:
            raise RuntimeError("RefPerturb: more rows than references (reset() between runs).")
        out = arr.copy()
        rows = np.arange(b)[:, None]
        out[rows, indices] = ref[rows, indices]
        self.calls += 1
        if self.calls == self.calls_per_batch:
            self.calls = 0
            self.offset += b
        return out


def attributions_for(orders: np.ndarray) -> np.ndarray:
    """Attributions whose decreasing order is ``orders`` (distinct values, so no ties)."""
    B, K, n = orders.shape
    A = np.empty((B, K, n), dtype=np.float32)
    np.put_along_axis(A, orders, np.arange(n, 0, -1, dtype=np.float32)[None, None, :], axis=-1)
    return A


def quantus_pixel_flipping(net, X, R, A, batch_size: int) -> np.ndarray:
    """Deletion curves z_1..z_n by ``quantus.PixelFlipping``; (N, n)."""
    import quantus

    N, n = X.shape
    pf = RefPerturb(R, n)
    metric = quantus.PixelFlipping(features_in_step=1, perturb_func=pf, normalise=False,
                                   return_auc_per_sample=False, disable_warnings=True,
                                   display_progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = metric(model=net, x_batch=X.astype(np.float32), y_batch=np.zeros(N, dtype=int),
                   a_batch=A.astype(np.float32), batch_size=batch_size, softmax=False,
                   channel_first=True)
    return np.asarray(s, dtype=np.float64).reshape(N, n)


def quantus_region_perturbation(net, X, R, A, batch_size: int) -> np.ndarray:
    """f(x) - z_k, k = 1..n, by ``quantus.RegionPerturbation`` (patches of one feature); (N, n)."""
    import quantus

    N, n = X.shape
    pf = RefPerturb(R, n)
    metric = quantus.RegionPerturbation(patch_size=1, order="morf", regions_evaluation=n,
                                        perturb_func=pf, normalise=False, disable_warnings=True,
                                        display_progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = metric(model=net, x_batch=X.astype(np.float32)[:, None, :],
                   y_batch=np.zeros(N, dtype=int), a_batch=A.astype(np.float32)[:, None, :],
                   batch_size=batch_size, softmax=False, channel_first=True)
    return np.asarray(s, dtype=np.float64).reshape(N, n)


def run_config(name: str, K: int, B: int, repeats: int, batch_size: int, check_pairs: int = 100,
               seed: int = 0) -> dict:
    n = model_features(name)
    net = model_by_name(name, n)
    X, R = pairs(B, n, seed)
    orders = (np.argsort(np.random.default_rng(seed + 1).random((B, 1, n)), axis=-1)
              if K == 1 else method_orderings(B, n, 7, K - 7, seed=seed + 1))
    A = attributions_for(orders)
    assert np.array_equal(insdel.orderings(A.astype(np.float64)), orders)
    model = insdel.as_model(net, batch_size=batch_size)
    Xs = np.repeat(X, K, axis=0)  # Quantus: one row per (pair, ordering)
    Rs = np.repeat(R, K, axis=0)
    As = A.reshape(B * K, n)

    # correctness first (also the warm-up)
    res = trace(model, X, R, orders, modes=("deletion",))
    ref = res.curves["deletion"].reshape(B * K, n + 1)
    C = min(B, check_pairs) * K  # Quantus is checked on the first pairs' rows (and warmed up)
    q64 = quantus_pixel_flipping(net, Xs[:C], Rs[:C], As[:C], 64)
    qB = quantus_pixel_flipping(net, Xs[:C], Rs[:C], As[:C], C)
    r64 = quantus_region_perturbation(net, Xs[:C], Rs[:C], As[:C], 64)
    ref = ref[:C]
    errs = {"q64": np.abs(q64 - ref[:, 1:]).max(), "qB": np.abs(qB - ref[:, 1:]).max(),
            "r64": np.abs(r64 - (ref[:, :1] - ref[:, 1:])).max()}
    err = float(max(errs.values()))
    assert err < 1e-4, f"{name}, K={K}: Quantus and insdel deletion curves disagree: {errs}"
    rows = torch.from_numpy(distinct_rows(X, R, orders, modes=("deletion",)))
    assert len(rows) == res.n_unique, (len(rows), res.n_unique)

    vals = np.empty(len(rows))  # the values, as insdel holds them (see bench/curves.py, (c))

    def bare():
        with torch.inference_mode():
            for s in range(0, len(rows), batch_size):
                vals[s:s + batch_size] = net(rows[s:s + batch_size]).numpy()[:, 0]

    bare()
    t = time_interleaved({
        "bare": bare,
        "insdel": lambda: trace(model, X, R, orders, modes=("deletion",)),
        "q64": lambda: quantus_pixel_flipping(net, Xs, Rs, As, 64),
        "qB": lambda: quantus_pixel_flipping(net, Xs, Rs, As, B * K),
        "r64": lambda: quantus_region_perturbation(net, Xs, Rs, As, 64),
    }, repeats)
    return {"model": name, "n": n, "K": K, "B": B, "unique": res.n_unique, "err": err, **t}


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["cern", "bangalore", "cheap"],
                   choices=["cern", "bangalore", "cheap", "tiny"])
    p.add_argument("--orderings", type=int, nargs="+", default=[1, 27])
    p.add_argument("--pairs", type=int, default=2000)
    p.add_argument("--pairs-many", type=int, default=200,
                   help="pairs for K > 1 (Quantus gets B K rows)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=insdel.adapter.DEFAULT_BATCH_SIZE,
                   help="rows per model call (insdel and the bare forward pass)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads for this run (default: torch's own default)")
    p.add_argument("--tiny", action="store_true", help="seconds-long smoke run")
    a = p.parse_args(argv)
    if a.tiny:
        a.models, a.orderings, a.pairs, a.pairs_many, a.repeats = ["tiny"], [8], 20, 10, 1
    if a.threads:
        torch.set_num_threads(a.threads)

    grid = orderings_grid(a.models, a.orderings, a.pairs, a.pairs_many)
    compile_s, _ = time_call(
        lambda: trace(model_by_name("tiny", 16), *pairs(2, 16), np.tile(np.arange(16), (2, 1))),
        1, warmup=0)
    results = [run_config(name, K, B, a.repeats, a.batch_size) for name, K, B in grid]

    print_header("Deletion curves: insdel vs Quantus 0.6 and the bare forward pass",
                 f"deletion only (what Quantus computes), every feature differs, medians of "
                 f"{a.repeats} repeat(s); numba compile + first call {compile_s:.2f} s (excluded)")
    rows = []
    for r in results:
        rows.append([r["model"], r["n"], r["K"], r["B"], r["unique"], fmt_s(r["insdel"]),
                     fmt_s(r["q64"]), fmt_s(r["qB"]), fmt_s(r["r64"]), fmt_s(r["bare"]),
                     f"{r['insdel'] / r['bare']:.2f}", f"{r['q64'] / r['insdel']:.1f}",
                     f"{r['qB'] / r['insdel']:.1f}", f"{r['r64'] / r['insdel']:.1f}",
                     f"{r['err']:.1e}"])
    print(markdown_table(
        ["model", "n", "K", "pairs", "distinct rows", "(a) insdel s", "(q64) PixelFlipping s",
         "(qB) PixelFlipping one batch s", "(r64) RegionPerturbation s", "(c) bare forward s",
         "(a)/(c)", "(q64)/(a)", "(qB)/(a)", "(r64)/(a)", "max err vs insdel"], rows))
    print()
    print("Targets: (a)/(c) <= 1.3 on the cheap model, <= 1.0 on the paper MLPs (issue 13); "
          "Quantus/(a) >= 20.")
    return results


if __name__ == "__main__":
    main()
