"""Anchored-decomposition speed: overhead around the model, best order, exact Shapley vs shap/captum.

In one run:

(a) ``insdel.batch_decomposition`` of P pairs (default 50) at n = 16 on the paper-shaped CERN MLP
    (16 inputs, hidden 509-421-65-368-122-477, Linear + PReLU + Dropout(0.116), eval mode, float32,
    random weights): total time, time inside the model, and the share of time spent outside model
    evaluation (hybrid rows, Möbius transform, bookkeeping; target < 10 %). Baseline: one bare forward
    pass over the same 2^16 P rows, pre-built (the physical limit).
(b) ``best_order`` at n = 20 (numba DP over subsets, target < 2 s) against the same DP written with
    NumPy (layer by layer over subset sizes).
(c) exact baseline Shapley values for 20 pairs at n = 12 (insdel ``shapley_values``) against
    ``shap``'s exact explainer (one background row = the pair's reference) and captum's ``KernelShap``
    (2^12 samples, approximate) given the same single reference, and captum's ``ShapleyValues``
    (all n! permutations, so run at a small n, default 6, where insdel is timed again).
(d) the differing subspace at n = 38 (issue 13): P pairs (default 20) on a Bangalore-shaped MLP
    (38 inputs, hidden 333-465-86-234, Linear + PReLU + Dropout(0.100), eval mode, float32, random
    weights) whose references differ from the targets in |D| = 12..16 features (the paper's
    counterfactual policy gives 12 to 16). Exact Shapley values (``shapley_values``, 2^|D|
    evaluations per pair) and the whole decomposition (``batch_decomposition`` + Shapley, E[ABC] and
    both best orders) per pair, against the bare forward pass over the same 2^|D| rows per pair,
    pre-built and measured in the same run, interleaved with insdel's within each repeat
    (ratio = insdel / bare).

Correctness is checked before timing (values against the model on explicitly built hybrids; best
order against the NumPy DP; Shapley values: shap exact to 1e-8, captum ShapleyValues to its float32
accumulation). Times are medians over repeats; numba's first call (compile or cache load) is reported
separately.

Usage: ``python bench/decomposition.py [--pairs 50] [--repeats 3] [--repeats-a 1]
[--sub-pairs 20] [--sub-d 12 16] [--tiny]``
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import bangalore_mlp, cern_mlp, time_call  # noqa: E402

import insdel  # noqa: E402
from insdel._decomposition_kernels import popcounts  # noqa: E402
from insdel.decomposition import (  # noqa: E402
    BatchDecomposition,
    batch_decomposition,
    shapley_values,
)


def row(label: str, value: str, note: str = "") -> None:
    print(f"  {label:<52} {value:>14}  {note}")


# -- (a) ----------------------------------------------------------------------------------------
def part_a(n: int, P: int, repeats: int, rng) -> None:
    net = cern_mlp(n)
    X = rng.normal(size=(P, n))
    R = rng.normal(size=(P, n))
    N = 1 << n
    print(f"(a) decomposition, CERN-shaped MLP (float32), n = {n}, {P} pairs, "
          f"{P * N:,} model evaluations")
    # correctness: values are f on the explicit hybrids; Shapley values sum to f(x) - f(r)
    chk = batch_decomposition(net, X[:2], R[:2])
    u = np.arange(N)
    for b in range(2):
        H = torch.from_numpy(insdel.hybrid(X[b], R[b], u).astype(np.float32))
        with torch.inference_mode():
            ref = net(H)[:, 0].double().numpy()
        assert np.array_equal(chk.values[b], ref), "values differ from the model on the hybrids"
    gap = np.abs(chk.shapley().sum(1) - (chk.fx - chk.fr)).max()
    assert gap < 1e-9, gap

    res = []

    def run():
        d = batch_decomposition(net, X, R)
        res.append(d.timings)
        return d

    t_tot, _ = time_call(run, repeats, warmup=0)
    tm = statistics.median(r["model_s"] for r in res)
    to = statistics.median(r["other_s"] for r in res)
    share = statistics.median(r["other_s"] / r["total_s"] for r in res)
    # baseline: bare forward pass over the same rows, pre-built (not timed)
    rows = insdel.hybrid(X, R, u, outer=True).reshape(-1, n).astype(np.float32)
    rows_t = torch.from_numpy(rows)

    def bare():
        with torch.inference_mode():
            bs = insdel.adapter.DEFAULT_BATCH_SIZE  # the same batches insdel uses
            for s in range(0, rows_t.shape[0], bs):
                net(rows_t[s:s + bs])

    t_bare, _ = time_call(bare, repeats, warmup=0)
    row("insdel batch_decomposition, total", f"{t_tot:.3f} s")
    row("  inside the model (as_model calls)", f"{tm:.3f} s")
    row("  outside the model (rows, Möbius, bookkeeping)", f"{to:.3f} s")
    row("share outside model", f"{100 * share:.2f} %", "target < 10 %")
    row("bare forward pass over the same rows (baseline)", f"{t_bare:.3f} s")
    row("ratio total / bare forward", f"{t_tot / t_bare:.3f}")
    print()


# -- (b) ----------------------------------------------------------------------------------------
def numpy_best(values: np.ndarray, n: int) -> float:
    """The same DP (largest sum of g along a chain ∅ -> full), layer by layer in NumPy."""
    N = 1 << n
    sizes = popcounts(n)
    V = np.full(N, -np.inf)
    V[0] = values[0]
    u_all = np.arange(N, dtype=np.int64)
    by_size = [u_all[sizes == k] for k in range(n + 1)]
    for k in range(1, n + 1):
        U = by_size[k]
        cand = np.full(U.size, -np.inf)
        for j in range(n):
            has = (U >> j) & 1 == 1
            np.maximum.at(cand, np.flatnonzero(has), V[U[has] ^ (1 << j)])
        V[U] = values[U] + cand
    return float(V[N - 1])


def part_b(n: int, repeats: int, rng) -> None:
    N = 1 << n
    print(f"(b) best_order, n = {n} (2^{n} = {N:,} subsets, one pair)")
    values = rng.normal(size=(1, N)).cumsum(axis=1) / np.sqrt(N)
    dec = BatchDecomposition(values, np.zeros_like(values))  # delta unused here
    ref = numpy_best(values[0], n)
    best = dec.best_auc()[0]
    assert abs(best - ref) < 1e-9 * max(1.0, abs(ref)), (best, ref)
    full = BatchDecomposition.from_values(values)
    assert abs(full.abc(full.best_order()) - full.best_abc())[0] < 1e-9

    def kernel():
        dec._best.clear()
        return dec.best_order()

    t_k, _ = time_call(kernel, repeats, warmup=0)
    t_np, _ = time_call(lambda: numpy_best(values[0], n), max(1, min(repeats, 2)), warmup=0)
    row("insdel best_order (numba DP, O(n 2^n))", f"{t_k:.3f} s", "target < 2 s")
    row("same DP in NumPy (baseline)", f"{t_np:.3f} s")
    row("ratio NumPy / insdel", f"{t_np / t_k:.1f}")
    print()


# -- (c) ----------------------------------------------------------------------------------------
def small_mlp(n: int, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(n, 64), torch.nn.PReLU(), torch.nn.Linear(64, 64),
                               torch.nn.PReLU(), torch.nn.Linear(64, 1)).double().eval()


def part_c(n: int, P: int, n_captum: int, repeats: int, rng) -> None:
    print(f"(c) exact baseline Shapley, {P} pairs, n = {n} (float64 MLP 64-64, PReLU); "
          "ratio = their time / insdel's")
    net = small_mlp(n)
    X = rng.normal(size=(P, n))
    R = rng.normal(size=(P, n))
    t_ours, phi = time_call(lambda: shapley_values(net, X, R), repeats, warmup=0)
    row(f"insdel shapley_values (2^{n} evaluations per pair)", f"{t_ours:.3f} s", "1.0")

    def fn(Z):
        with torch.no_grad():
            return net(torch.from_numpy(np.asarray(Z, dtype=np.float64)))[:, 0].numpy()

    if importlib.util.find_spec("shap") is None:
        print("  shap is not installed: its exact-explainer column is skipped "
              "(pip install shap).")
    else:
        import shap

        def run_shap():
            out = np.empty((P, n))
            for b in range(P):
                masker = shap.maskers.Independent(R[b:b + 1], max_samples=1)
                ex = shap.explainers.Exact(fn, masker)
                out[b] = ex(X[b:b + 1]).values[0]
            return out

        err = np.abs(run_shap() - phi).max()
        assert err < 1e-8, f"shap exact differs from insdel by {err:g}"
        t_shap, _ = time_call(run_shap, repeats, warmup=0)
        row(f"shap {shap.__version__} Exact explainer (1 background row)", f"{t_shap:.3f} s",
            f"{t_shap / t_ours:.1f}   max |diff| {err:.1e}")

    from captum.attr import KernelShap, ShapleyValues

    fwd = lambda t: net(t)[:, 0]  # noqa: E731
    ks = KernelShap(fwd)
    ns = 1 << n

    def run_ks():
        torch.manual_seed(0)
        return np.stack([
            ks.attribute(torch.from_numpy(X[b:b + 1]), baselines=torch.from_numpy(R[b:b + 1]),
                         n_samples=ns, perturbations_per_eval=ns).numpy()[0]
            for b in range(P)])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        err_ks = np.abs(run_ks() - phi).max()
        t_ks, _ = time_call(run_ks, repeats, warmup=0)
    row(f"captum KernelShap ({ns} samples, approximate)", f"{t_ks:.3f} s",
        f"{t_ks / t_ours:.1f}   max |diff| {err_ks:.1e} (sampling error)")

    # captum ShapleyValues enumerates all n! permutations: only feasible at small n
    m = n_captum
    net_m = small_mlp(m, seed=1)
    Xm, Rm = X[:, :m].copy(), R[:, :m].copy()
    t_ours_m, phi_m = time_call(lambda: shapley_values(net_m, Xm, Rm), repeats, warmup=0)
    sv = ShapleyValues(lambda t: net_m(t)[:, 0])

    def run_sv():
        return sv.attribute(torch.from_numpy(Xm), baselines=torch.from_numpy(Rm),
                            perturbations_per_eval=256).double().numpy()

    err_sv = np.abs(run_sv() - phi_m).max()
    scale = np.abs(phi_m).max()
    assert err_sv < 1e-5 * max(1.0, scale), err_sv  # captum accumulates in float32
    t_sv, _ = time_call(run_sv, repeats, warmup=0)
    row(f"insdel shapley_values at n = {m}", f"{t_ours_m:.3f} s", "1.0")
    row(f"captum ShapleyValues at n = {m} (all {_fact(m)} orders)", f"{t_sv:.3f} s",
        f"{t_sv / t_ours_m:.1f}   max |diff| {err_sv:.1e} (captum sums in float32)")
    print()


# -- (d) ----------------------------------------------------------------------------------------

def _subspace_rows(x: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The 2^|D| distinct hybrids of one pair, float32 (not timed)."""
    D = np.flatnonzero(x != r)
    m = ((np.arange(1 << D.size)[:, None] >> np.arange(D.size)) & 1).astype(bool)
    rows = np.tile(r, (m.shape[0], 1))
    rows[:, D] = np.where(m, x[D], r[D])
    return rows.astype(np.float32)


def part_d(P: int, dlo: int, dhi: int, repeats: int, rng) -> None:
    n = 38
    net = bangalore_mlp(n, seed=1)
    X = rng.normal(size=(P, n))
    R = X.copy()
    for b in range(P):
        k = int(rng.integers(dlo, dhi + 1))
        D = rng.choice(n, size=k, replace=False)
        R[b, D] = rng.normal(size=k)
    d = (X != R).sum(1)
    total = int(np.sum(2 ** d))
    print(f"(d) differing subspace, Bangalore-shaped MLP (float32), n = {n}, {P} pairs, "
          f"|D| = {d.min()}..{d.max()} (mean {d.mean():.1f}), {total:,} model evaluations")
    # correctness: Shapley values sum to f(x) - f(r), zero outside D; the decomposition agrees
    phi = shapley_values(net, X, R)
    dec = batch_decomposition(net, X, R)
    gap = np.abs(phi.sum(1) - (dec.fx - dec.fr)).max()
    assert gap < 1e-9, gap
    assert np.all(phi[X == R] == 0) and np.abs(dec.shapley() - phi).max() < 1e-12
    assert np.all(dec.best_abc() >= dec.abc(insdel.orderings(phi)) - 1e-9)

    def whole():
        dd = batch_decomposition(net, X, R)
        dd.shapley()
        dd.expected_abc()
        dd.best_order(mode="insertion")
        dd.best_order(mode="deletion")
        return dd

    rows_t = [torch.from_numpy(_subspace_rows(X[b], R[b])) for b in range(P)]

    def bare():
        with torch.inference_mode():
            bs = insdel.adapter.DEFAULT_BATCH_SIZE  # the batches insdel uses
            for rt in rows_t:
                for s in range(0, rt.shape[0], bs):
                    net(rt[s:s + bs])

    # interleaved within each repeat, so that a shared machine's load hits all three alike
    times: dict[str, list[float]] = {"bare": [], "shapley": [], "whole": []}
    fns = {"bare": bare, "shapley": lambda: shapley_values(net, X, R), "whole": whole}
    for _ in range(repeats):
        for key, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - t0)
    t_bare, t_sh, t_all = (statistics.median(times[k]) for k in ("bare", "shapley", "whole"))
    row("bare forward pass, 2^|D| rows per pair (baseline)", f"{t_bare / P:.4f} s/pair", "1.00")
    row("insdel shapley_values (exact, in D)", f"{t_sh / P:.4f} s/pair", f"{t_sh / t_bare:.2f}")
    row("insdel batch_decomposition + Shapley, E[ABC], best", f"{t_all / P:.4f} s/pair",
        f"{t_all / t_bare:.2f}")
    print()


def _fact(m: int) -> int:
    out = 1
    for k in range(2, m + 1):
        out *= k
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="seconds-long smoke run")
    ap.add_argument("--pairs", type=int, default=50, help="pairs for (a)")
    ap.add_argument("--n", type=int, default=16, help="features for (a)")
    ap.add_argument("--best-n", type=int, default=20, help="features for (b)")
    ap.add_argument("--shap-pairs", type=int, default=20)
    ap.add_argument("--shap-n", type=int, default=12)
    ap.add_argument("--captum-n", type=int, default=6)
    ap.add_argument("--sub-pairs", type=int, default=20, help="pairs for (d)")
    ap.add_argument("--sub-d", type=int, nargs=2, default=[12, 16], metavar=("LO", "HI"),
                    help="range of |D| for (d)")
    ap.add_argument("--repeats", type=int, default=3, help="repeats for (b), (c), (d)")
    ap.add_argument("--repeats-a", type=int, default=1,
                    help="repeats for (a) (one run at n = 16, 50 pairs is ~1-2 minutes on 2 cores)")
    args = ap.parse_args()
    if args.tiny:
        args.pairs, args.n, args.best_n = 2, 8, 12
        args.shap_pairs, args.shap_n, args.captum_n = 2, 6, 4
        args.repeats = args.repeats_a = 1
        args.sub_pairs, args.sub_d = 2, [5, 7]
    print(f"insdel decomposition benchmark — {platform.processor() or platform.machine()}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    rng = np.random.default_rng(0)
    # numba: first calls compile (or load the cache); excluded from every timing below
    t0 = time.perf_counter()
    d = batch_decomposition(lambda Z: Z.sum(1) + Z[:, 0] * Z[:, 1], rng.normal(size=(2, 3)),
                            np.zeros(3))
    d.shapley()
    d.best_order()
    d.best_order(mode="deletion")
    d.abc(np.array([0, 1, 2]))
    d.expected_abc()
    shapley_values(lambda Z: Z.sum(1), np.ones((1, 3)), np.zeros(3))
    batch_decomposition(insdel.as_model(lambda Z: Z.sum(1), dtype=np.float32), np.ones((1, 3)),
                        np.zeros(3))
    print(f"numba first calls (compile or cache load, excluded): {time.perf_counter() - t0:.2f} s\n")
    part_a(args.n, args.pairs, args.repeats_a, rng)
    part_b(args.best_n, args.repeats, rng)
    part_c(args.shap_n, args.shap_pairs, args.captum_n, args.repeats, rng)
    part_d(args.sub_pairs, args.sub_d[0], args.sub_d[1], args.repeats, rng)


if __name__ == "__main__":
    main()
