"""Counterfactual reference selection: insdel's fused numba kernel against a per-target loop.

For pools of N points with 16 features shaped like the CERN data (14 continuous features, 2 charges
in {-1, +1}) and every pool point as a target, in one run:

(a) ``insdel.policies.build("counterfactual", min_diff=..., k_nearest=20).pair(f, pool)``: chunks of
    targets streamed through one numba kernel (differing-feature counts, squared distances and a
    running top-k per target; no (N, N) matrix), f evaluated once on the pool rows needed;
(b) the straightforward implementation: a Python loop over targets, each doing NumPy work over the
    whole pool (count differences, distances, sort, take k, maximise |f(x) - f(x')|), with f(pool)
    precomputed (not timed). For large pools (b) is timed on a sample of targets and scaled to the
    whole pool (its cost per target is constant); ``--full-baseline`` times every target.

Correctness ((a) equals (b) on every target (b) ran on) is checked before timing; times are medians
over repeats, numba compilation excluded (reported separately). Also times ``one_to_one`` and
``average`` on the same pools.

Usage: ``python bench/policies.py [--pools 2000 10000] [--repeats 3] [--min-diff all]
[--baseline-targets 2000] [--full-baseline] [--tiny]``
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

from insdel import policies


def cern_like_pool(N: int, n: int = 16, seed: int = 0) -> np.ndarray:
    """Z-scored continuous features plus two charges in {-1, +1} (columns 7 and 15)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, n))
    for j in (7, 15):
        if j < n:
            X[:, j] = rng.choice([-1.0, 1.0], size=N)
    return X


def model(X: np.ndarray) -> np.ndarray:
    """A cheap smooth non-additive stand-in for the regression model."""
    return np.sin(X).sum(axis=1) + 0.5 * X[:, 0] * X[:, 1] + np.tanh(X[:, 2:5]).prod(axis=1)


def per_target(X, fv, targets, min_diff, k):
    """The straightforward implementation: one NumPy pass over the pool per target."""
    ref = np.empty(len(targets), np.int64)
    for t, i in enumerate(targets):
        diff = (X != X[i]).sum(axis=1)
        d2 = ((X - X[i]) ** 2).sum(axis=1)
        ok = diff >= min_diff
        ok[i] = False
        cand = np.flatnonzero(ok)
        if cand.size == 0:
            raise ValueError(f"target {i} has no candidate")
        top = cand[np.lexsort((cand, d2[cand]))[:k]]
        ref[t] = top[np.argmax(np.abs(fv[i] - fv[top]))]
    return ref


def median_time(fn, repeats):
    ts, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pools", type=int, nargs="+", default=[2000, 10000])
    p.add_argument("--features", type=int, default=16)
    p.add_argument("--min-diff", default="all", help="integer or 'all' (the CERN policy)")
    p.add_argument("--k-nearest", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--baseline-targets", type=int, default=2000,
                   help="targets the per-target baseline runs on for pools larger than this")
    p.add_argument("--full-baseline", action="store_true", help="time the baseline on every target")
    p.add_argument("--tiny", action="store_true", help="seconds-long smoke run")
    a = p.parse_args(argv)
    if a.tiny:
        a.pools, a.repeats, a.baseline_targets = [300, 600], 1, 200
    md = a.min_diff if a.min_diff == "all" else int(a.min_diff)
    n = a.features
    md_n = n if md == "all" else md
    pol = policies.build("counterfactual", min_diff=md, k_nearest=a.k_nearest)

    t0 = time.perf_counter()
    pol.pair(model, cern_like_pool(50, n))  # numba compile (cached on disk after the first run)
    compile_s = time.perf_counter() - t0

    print(f"# counterfactual selection, n = {n} features, min_diff = {md}, k_nearest = {a.k_nearest}")
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPU(s), "
          f"numba threads = {__import__('numba').get_num_threads()}; "
          f"numba compile/load: {compile_s:.2f} s (excluded)")
    header = (f"{'pool':>7} {'insdel (a) s':>13} {'per-target (b) s':>17} {'(b) on':>8} "
              f"{'ratio (b)/(a)':>14} {'one_to_one s':>13} {'average s':>10}")
    print(header)
    print("-" * len(header))
    sampled = False
    for N in a.pools:
        X = cern_like_pool(N, n, seed=N)
        fv = model(X)
        if a.full_baseline or N <= a.baseline_targets:
            sample = np.arange(N)
        else:
            sample = np.sort(np.random.default_rng(1).choice(N, a.baseline_targets, replace=False))
        # correctness first
        res = pol.pair(model, X)
        ref_b = per_target(X, fv, sample, md_n, a.k_nearest)
        mism = np.flatnonzero(res.reference_index[sample] != ref_b)
        if mism.size:
            raise SystemExit(f"MISMATCH on {mism.size} targets (first {sample[mism[:5]]})")
        t_a, _ = median_time(lambda X=X: pol.pair(model, X), a.repeats)
        t_b, _ = median_time(lambda X=X, fv=fv, s=sample: per_target(X, fv, s, md_n, a.k_nearest),
                             a.repeats)
        t_b_full = t_b * N / sample.size
        t_o, _ = median_time(lambda X=X: policies.build("one_to_one").pair(None, X, seed=0), a.repeats)
        t_v, _ = median_time(lambda X=X: policies.build("average").pair(None, X), a.repeats)
        sampled |= sample.size < N
        on = "all" if sample.size == N else f"{sample.size}*"
        print(f"{N:>7} {t_a:>13.3f} {t_b_full:>17.3f} {on:>8} {t_b_full / t_a:>14.1f} "
              f"{t_o:>13.4f} {t_v:>10.4f}")
    if sampled:
        print("* baseline timed on a random sample of targets and scaled to the whole pool "
              "(its cost per target is constant).")
    print("insdel's references equal the baseline's on every target the baseline ran on.")
    print(f"mean differing features of the last pairing: {res.mean_diff():.3f} (of {n})")


if __name__ == "__main__":
    main()
