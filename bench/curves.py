"""Curve-engine speed: insdel against per-pair and per-point loops and against the bare forward pass.

For each model and number of orderings K per pair, in one run, on B pairs whose features all differ
(the CERN counterfactual policy's situation, paper §5.2), insertion and deletion curves:

(a) insdel: ``insdel.trace`` with both modes (one numba indexing pass, distinct rows only);
(b) per-pair loop: a Python loop over pairs; for each pair all its 2 K (n + 1) curve points are built
    with vectorised NumPy and the model is called once (what a careful user writes by hand);
(p) per-point loop: one model call per curve point (the literal reading of the definition, conventions
    *Curves*); timed on a subset of pairs and scaled to B (its cost per pair is constant);
(c) bare forward pass: the model over a pre-built array of exactly the distinct rows the curves need,
    batch by batch, each batch's values copied into one preallocated float64 array (the physical
    limit: f must be evaluated there and its values kept, and nothing else is done). Keeping the
    batches' output tensors in a list instead made glibc return and re-fault the heap on some runs
    (about 1,000 page faults per call, measured with ``getrusage``), slowing the baseline by up to
    2x in those processes: a weaker, noisier baseline.

K = 1 is one attribution method; K = 27 is the paper's experiment per pair: 7 attribution methods that
largely agree (correlated orderings, so curves share prefixes) plus 20 random orderings. insdel evaluates
each distinct point once (shared end points, shared prefixes); the loops do not.

(w) write + forward: the distinct rows copied (parallel numba) into a buffer, then the bare forward
    pass over that buffer: the least that any engine which must write the rows pays ((w)/(c) is that
    floor; what (a) spends beyond (w) is indexing, validation and the adapter).

Ratios: (a)/(c) is insdel's overhead over the limit (targets: <= 2.0 on the cheap model, issue
35, whose memory speed this CPU decides; <= 1.0 on the paper MLPs, issue 13); (b)/(a) and (p)/(a) are speed-ups
over the loops (target >= 20); (b)/(c) is the ceiling on *any* engine's speed-up over the per-pair loop
(when the model's arithmetic dominates, no engine can beat (b) by more than (b)/(c)).

Correctness ((a) equals (b) on the first 200 pairs and (p) on its subset; the number of distinct rows
equals insdel's ``n_unique``) is checked before timing; the correctness calls double as the warm-up;
times are medians over repeats in which (a), (c) and (w) are interleaved (in an order drawn anew each
repeat), and their ratios medians of
the per-repeat ratios (a drift in machine speed between repeats does not move them); (b) is timed
on its own; numba compilation is timed separately on a first tiny call.

On a shared VM a whole process can run memory-bound work several times slower than the next one
(bench/RESULTS.md, "the process states"), which moves (a)/(c) on the cheap model by up to 0.2.
``--processes N`` runs the whole measurement in N fresh processes, one after the other, prints
each configuration's (a)/(c) and (w)/(c) in every process, and reports the process with the median
(a)/(c) in the main tables.

Usage: ``python bench/curves.py [--models cern bangalore cheap] [--orderings 1 27] [--pairs 2000]
[--pairs-many 200] [--repeats 3] [--threads N] [--processes N] [--tiny]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    fmt_s,
    interleaved_samples,
    machine_line,
    markdown_table,
    method_orderings,
    model_by_name,
    model_features,
    orderings_grid,
    pairs,
    print_header,
    ratio_of_rounds,
    time_call,
)

import insdel  # noqa: E402
from insdel.tracing import trace  # noqa: E402

MODES = ("insertion", "deletion")


def _forward(net, rows: np.ndarray) -> np.ndarray:
    with torch.inference_mode():
        return net(torch.from_numpy(rows))[:, 0].double().numpy()


def _step_masks(order_b: np.ndarray) -> np.ndarray:
    """Insertion masks S_k (k = 0..n) of K orderings of one pair: bool (K, n + 1, n)."""
    K, n = order_b.shape
    rank = np.argsort(order_b, axis=-1)  # rank[k, j] = position of feature j (0-based)
    return rank[:, None, :] < np.arange(n + 1)[None, :, None]


def per_pair_loop(net, X, R, orders, modes=MODES):
    """(b) One model call per pair over all its curve points, built with vectorised NumPy."""
    B, K, n = orders.shape
    out = {m: np.empty((B, K, n + 1)) for m in modes}
    for b in range(B):
        S = _step_masks(orders[b])
        masks = np.stack([S if m == "insertion" else ~S for m in modes], axis=1)  # (K, M, n+1, n)
        pts = np.where(masks, X[b], R[b]).astype(np.float32).reshape(-1, n)
        y = _forward(net, pts).reshape(K, len(modes), n + 1)
        for mi, m in enumerate(modes):
            out[m][b] = y[:, mi]
    return out


def per_point_loop(net, X, R, orders, modes=MODES):
    """(p) One model call per curve point."""
    B, K, n = orders.shape
    out = {m: np.empty((B, K, n + 1)) for m in modes}
    for b in range(B):
        x, r = X[b].astype(np.float32), R[b].astype(np.float32)
        for k in range(K):
            for m in modes:
                S = np.zeros(n, bool)
                for s in range(n + 1):
                    if s:
                        S[orders[b, k, s - 1]] = True
                    pt = np.where(S if m == "insertion" else ~S, x, r)
                    with torch.inference_mode():
                        out[m][b, k, s] = float(net(torch.from_numpy(pt[None, :]))[0, 0])
    return out


def distinct_rows(X, R, orders, modes=MODES) -> np.ndarray:
    """The distinct hybrid rows the curves need (canonical sets S ∩ D per pair), float32, not timed."""
    B, K, n = orders.shape
    if n > 62:
        raise ValueError("distinct_rows packs a set into one int64; n must be <= 62.")
    D = X != R
    S = np.stack([_step_masks(orders[b]) for b in range(B)])  # (B, K, n+1, n)
    sets = np.concatenate([S if m == "insertion" else ~S for m in modes], axis=1)
    sets &= D[:, None, None, :]
    keys = (sets.astype(np.int64) << np.arange(n, dtype=np.int64)).sum(-1).reshape(B, -1)
    pair = np.repeat(np.arange(B, dtype=np.int64), keys.shape[1])
    uniq = np.unique(np.stack([pair, keys.ravel()], 1), axis=0)
    mask = (uniq[:, 1:2] >> np.arange(n, dtype=np.int64)) & 1
    return np.where(mask.astype(bool), X[uniq[:, 0]], R[uniq[:, 0]]).astype(np.float32)


@numba.njit(parallel=True, cache=True)
def _copy_rows(dst, src, nblk):  # pragma: no cover - numba
    """dst[:] = src in ``nblk`` parallel blocks of rows (the row writing of the (w) floor)."""
    N = src.shape[0]
    for i in numba.prange(nblk):
        for r in range(i * N // nblk, (i + 1) * N // nblk):
            for j in range(src.shape[1]):
                dst[r, j] = src[r, j]


def run_config(name: str, K: int, B: int, repeats: int, batch_size: int, point_budget: int,
               check_pairs: int = 200, seed: int = 0) -> dict:
    """Measure (a), (b), (p), (c) for one model and K; returns a dict of timings and counts."""
    n = model_features(name)
    net = model_by_name(name, n)
    X, R = pairs(B, n, seed)
    orders = (np.argsort(np.random.default_rng(seed + 1).random((B, 1, n)), axis=-1)
              if K == 1 else method_orderings(B, n, 7, K - 7, seed=seed + 1))
    model = insdel.as_model(net, batch_size=batch_size)

    # correctness first (these calls are also the warm-up)
    res = trace(model, X, R, orders)
    C = min(B, check_pairs)
    loop = per_pair_loop(net, X[:C], R[:C], orders[:C])
    err = max(float(np.abs(res.curves[m][:C] - loop[m]).max()) for m in MODES)
    assert err < 1e-4, f"{name}, K={K}: insdel and the per-pair loop disagree by {err}"
    P = max(1, min(B, math.ceil(point_budget / (K * 2 * (n + 1)))))
    t0 = time.perf_counter()
    pts = per_point_loop(net, X[:P], R[:P], orders[:P])
    t_point = (time.perf_counter() - t0) * B / P
    err_p = max(float(np.abs(res.curves[m][:P] - pts[m]).max()) for m in MODES)
    assert err_p < 1e-4, f"{name}, K={K}: insdel and the per-point loop disagree by {err_p}"
    rows = torch.from_numpy(distinct_rows(X, R, orders))
    assert len(rows) == res.n_unique, (len(rows), res.n_unique)

    vals = np.empty(len(rows))  # the values, as insdel holds them (float64, one array)

    def forward(x):
        with torch.inference_mode():
            for s in range(0, len(x), batch_size):
                vals[s:s + batch_size] = net(x[s:s + batch_size]).numpy()[:, 0]

    def bare():
        forward(rows)

    src = rows.numpy()
    buf = np.empty_like(src)
    buf_t = torch.from_numpy(buf)

    def written():
        _copy_rows(buf, src, max(1, 4 * numba.get_num_threads()))
        forward(buf_t)

    bare()  # warm-up
    written()
    # (a), (c) and (w) interleaved, ratios as medians of per-round ratios; the loop on its own
    # (its ratio to (a) is large, and running it between them would churn their caches)
    ts = interleaved_samples({"bare": bare, "written": written,
                              "insdel": lambda: trace(model, X, R, orders)}, repeats)
    t = {k: statistics.median(v) for k, v in ts.items()}
    t_bare, t_ins = t["bare"], t["insdel"]
    t_loop, _ = time_call(lambda: per_pair_loop(net, X, R, orders), repeats)
    t_abc, _ = time_call(lambda: [insdel.abc(res.curves[m], mode=m) for m in MODES], repeats)
    split = trace(model, X, R, orders).timings  # a warm call's split (the first one compiled)
    return {"model": name, "n": n, "K": K, "B": B, "points": res.n_points, "unique": res.n_unique,
            "err": max(err, err_p), "insdel": t_ins, "loop": t_loop, "point": t_point,
            "point_pairs": P, "bare": t_bare, "written": t["written"], "abc": t_abc,
            "a_over_c": ratio_of_rounds(ts, "insdel", "bare"),
            "w_over_c": ratio_of_rounds(ts, "written", "bare"),
            "bookkeeping": split.get("bookkeeping_s", float("nan")),
            "model_s": split.get("model_s", float("nan"))}


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["cern", "bangalore", "cheap"],
                   choices=["cern", "bangalore", "cheap", "tiny"])
    p.add_argument("--orderings", type=int, nargs="+", default=[1, 27],
                   help="orderings per pair K (K > 1: 7 correlated 'methods' + K - 7 random)")
    p.add_argument("--pairs", type=int, default=2000)
    p.add_argument("--pairs-many", type=int, default=200,
                   help="pairs for K > 1 on the paper-sized MLPs (their arithmetic dominates; "
                        "the ratios do not depend on B)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=insdel.adapter.DEFAULT_BATCH_SIZE)
    p.add_argument("--point-budget", type=int, default=3000,
                   help="curve points the per-point loop evaluates (subset of pairs, scaled to B)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads for this run (default: torch's own default)")
    p.add_argument("--processes", type=int, default=1,
                   help="run the measurement in this many fresh processes and report each "
                        "one's ratios (the main tables: the process with the median (a)/(c))")
    p.add_argument("--json", default=None, help=argparse.SUPPRESS)  # a child's results
    p.add_argument("--tiny", action="store_true", help="seconds-long smoke run")
    a = p.parse_args(argv)
    if a.processes < 1:
        p.error(f"--processes must be >= 1; got {a.processes}.")
    if a.processes > 1:
        return _in_processes(a)
    if a.tiny:
        a.models, a.orderings, a.pairs, a.pairs_many = ["tiny"], [1, 8], 20, 10
        a.repeats, a.point_budget = 1, 200
    if a.threads:
        torch.set_num_threads(a.threads)

    grid = orderings_grid(a.models, a.orderings, a.pairs, a.pairs_many, all_pairs=("cheap", "tiny"))
    compile_s, _ = time_call(
        lambda: trace(model_by_name("tiny", 16), *pairs(2, 16), np.tile(np.arange(16), (2, 1))),
        1, warmup=0)
    results = [run_config(name, K, B, a.repeats, a.batch_size, a.point_budget)
               for name, K, B in grid]
    if a.json:
        Path(a.json).write_text(json.dumps({"results": results, "compile_s": compile_s},
                                           default=lambda o: o.item()))
        return results
    _report(results, a.repeats, compile_s)
    return results


def _in_processes(a) -> list[dict]:
    """The measurement in ``a.processes`` fresh processes (this script with the same options);
    prints every process's ratios, then the main tables for the process with the median (a)/(c)
    of each configuration."""
    args = ["--models", *a.models, "--orderings", *map(str, a.orderings), "--pairs", str(a.pairs),
            "--pairs-many", str(a.pairs_many), "--repeats", str(a.repeats), "--batch-size",
            str(a.batch_size), "--point-budget", str(a.point_budget)]
    args += ["--threads", str(a.threads)] if a.threads else []
    args += ["--tiny"] if a.tiny else []
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.processes):
            path = os.path.join(tmp, f"run{i}.json")
            subprocess.run([sys.executable, __file__, *args, "--json", path], check=True)
            runs.append(json.loads(Path(path).read_text()))
    per_config = list(zip(*(r["results"] for r in runs), strict=True))
    rows, median_runs = [], []
    for rs in per_config:
        ac = [r["a_over_c"] for r in rs]
        median_runs.append(sorted(rs, key=lambda r: r["a_over_c"])[(len(rs) - 1) // 2])
        rows.append([rs[0]["model"], rs[0]["K"], rs[0]["B"],
                     " ".join(f"{v:.2f}" for v in ac), f"{statistics.median(ac):.2f}",
                     f"{min(ac):.2f}-{max(ac):.2f}",
                     " ".join(f"{r['w_over_c']:.2f}" for r in rs),
                     " ".join(fmt_s(r["bare"]) for r in rs)])
    print(f"## Curves in {a.processes} fresh processes: (a)/(c) and (w)/(c) of each")
    print(machine_line())
    print(markdown_table(["model", "K", "pairs", "(a)/(c) per process", "median", "range",
                          "(w)/(c) per process", "(c) bare forward s per process"], rows))
    print()
    _report(median_runs, a.repeats, statistics.median(r["compile_s"] for r in runs),
            note=f" (per configuration, the process with the median (a)/(c) of {a.processes}; "
                 "the lower middle one of an even number)")
    return median_runs


def _report(results: list[dict], repeats: int, compile_s: float, note: str = "") -> None:
    """The main tables: times and ratios, and where insdel's time goes."""
    print_header("Curves: insdel vs per-pair loop, per-point loop and the bare forward pass" + note,
                 f"insertion + deletion, every feature differs, medians of {repeats} repeat(s); "
                 f"numba compile + first call {compile_s:.2f} s (excluded)")
    rows = []
    for r in results:
        rows.append([r["model"], r["n"], r["K"], r["B"], r["points"], r["unique"],
                     fmt_s(r["insdel"]), fmt_s(r["loop"]), fmt_s(r["point"]) + "*",
                     fmt_s(r["bare"]), f"{r['a_over_c']:.2f}", f"{r['w_over_c']:.2f}",
                     f"{r['loop'] / r['insdel']:.2f}", f"{r['point'] / r['insdel']:.0f}",
                     f"{r['loop'] / r['bare']:.2f}", f"{r['err']:.1e}"])
    print(markdown_table(
        ["model", "n", "K", "pairs", "curve points", "distinct rows", "(a) insdel s",
         "(b) per-pair loop s", "(p) per-point loop s", "(c) bare forward s", "(a)/(c)",
         "(w)/(c) floor", "(b)/(a)", "(p)/(a)", "(b)/(c) ceiling", "max err"], rows))
    print("\\* (p) timed on the first pairs only (see below) and scaled to all pairs.")
    print()
    print("Where insdel's time goes (same runs; `trace` timings, areas by `insdel.abc`):")
    rows = []
    for r in results:
        rows.append([r["model"], r["K"], r["B"], r["point_pairs"], fmt_s(r["bookkeeping"]),
                     fmt_s(r["model_s"]), fmt_s(r["abc"]),
                     f"{r['bookkeeping'] / max(r['bookkeeping'] + r['model_s'], 1e-12):.1%}"])
    print(markdown_table(["model", "K", "pairs", "(p) pairs timed", "bookkeeping s", "model s",
                          "abc (both modes) s", "bookkeeping share"], rows))
    print()
    print("Targets: (a)/(c) <= 2.0 on the cheap model (issue 35) and <= 1.0 on the paper MLPs "
          "(issue 13); "
          "(b)/(a) >= 20 and (p)/(a) >= 20. (b)/(c) bounds what any engine can gain over the "
          "per-pair loop.")


if __name__ == "__main__":
    main()
