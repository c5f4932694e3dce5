"""Curve-engine speed: insdel against the per-pair loop and against the bare forward pass.

In one run, on the paper-shaped CERN MLP (16 inputs, hidden 509-421-65-368-122-477, PReLU, dropout,
eval mode, float32) and B pairs whose features all differ (the counterfactual policy's situation):

(a) insdel insertion + deletion curves (``insdel.trace`` with both modes),
(b) the naive way: a Python loop over pairs that builds each pair's 2 (n + 1) points and calls the
    model once per pair,
(c) one bare forward pass of the model over a pre-built array holding exactly the distinct rows the
    curves need (the physical limit: f must be evaluated there).

Prints the ratios (a)/(c) and (b)/(a). Correctness ((a) equals (b)) is checked before timing; times are
medians over repeats, with numba compilation excluded (reported separately).

Usage: ``python bench/curves.py [--pairs 2000] [--repeats 3] [--orderings 1] [--tiny]``
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np
import torch

import insdel
from insdel.curves import trace

CERN_HIDDEN = [509, 421, 65, 368, 122, 477]


def cern_mlp(n: int = 16, hidden=CERN_HIDDEN, dropout: float = 0.11604, seed: int = 0):
    torch.manual_seed(seed)
    layers: list[torch.nn.Module] = []
    d = n
    for h in hidden:
        layers += [torch.nn.Linear(d, h), torch.nn.PReLU(), torch.nn.Dropout(dropout)]
        d = h
    layers.append(torch.nn.Linear(d, 1))
    return torch.nn.Sequential(*layers).eval()


def naive_curves(net, X, R, orders):
    """One model call per pair, its 2 (n + 1) points built in a Python loop (the usual script)."""
    B, K, n = orders.shape
    ins = np.empty((B, K, n + 1))
    dele = np.empty((B, K, n + 1))
    for b in range(B):
        pts = []
        for k in range(K):
            for mode in ("insertion", "deletion"):
                S = np.zeros(n, bool)
                pts.append(np.where(S if mode == "insertion" else ~S, X[b], R[b]))
                for s in range(n):
                    S[orders[b, k, s]] = True
                    pts.append(np.where(S if mode == "insertion" else ~S, X[b], R[b]))
        with torch.no_grad():
            y = net(torch.from_numpy(np.array(pts, dtype=np.float32)))[:, 0].double().numpy()
        y = y.reshape(K, 2, n + 1)
        ins[b], dele[b] = y[:, 0], y[:, 1]
    return ins, dele


def distinct_rows(X, R, orders):
    """The distinct hybrid rows the curves need, pre-built (not timed)."""
    B, K, n = orders.shape
    rows = []
    for b in range(B):
        seen = set()
        for k in range(K):
            S = np.zeros(n, bool)
            sets = [S.copy(), ~S]
            for s in range(n):
                S[orders[b, k, s]] = True
                sets += [S.copy(), ~S]
            for u in sets:
                key = (u & (X[b] != R[b])).tobytes()
                if key not in seen:
                    seen.add(key)
                    rows.append(np.where(u, X[b], R[b]))
    return np.array(rows, dtype=np.float32)


def median_time(fn, repeats):
    ts = []
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=2000)
    p.add_argument("--features", type=int, default=16)
    p.add_argument("--orderings", type=int, default=1, help="orderings per pair (K)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=65536)
    p.add_argument("--tiny", action="store_true", help="seconds-long smoke run")
    a = p.parse_args(argv)
    if a.tiny:
        a.pairs, a.repeats = 20, 1
        hidden = [32, 16]
    else:
        hidden = CERN_HIDDEN
    n, B, K = a.features, a.pairs, a.orderings
    net = cern_mlp(n, hidden)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(B, n))
    R = X + rng.normal(size=(B, n))  # every feature differs
    orders = np.argsort(rng.random((B, K, n)), axis=-1)

    t0 = time.perf_counter()
    trace(net, X[:2], R[:2], orders[:2])  # numba compile (cached on disk after the first run)
    compile_s = time.perf_counter() - t0

    model = insdel.as_model(net, batch_size=a.batch_size)
    res = trace(model, X, R, orders)
    ins_ref, del_ref = naive_curves(net, X, R, orders)
    err = max(np.abs(res.curves["insertion"] - ins_ref).max(),
              np.abs(res.curves["deletion"] - del_ref).max())
    assert err < 1e-4, f"insdel and the naive loop disagree by {err}"
    rows = distinct_rows(X, R, orders)
    assert len(rows) == res.n_unique, (len(rows), res.n_unique)
    rows_t = torch.from_numpy(rows)

    def bare():
        with torch.inference_mode():
            for s in range(0, len(rows_t), a.batch_size):
                net(rows_t[s:s + a.batch_size])

    t_bare, _ = median_time(bare, a.repeats)
    t_insdel, _ = median_time(lambda: trace(model, X, R, orders), a.repeats)
    t_naive, _ = median_time(lambda: naive_curves(net, X, R, orders), a.repeats)

    print(f"# curves bench: {platform.processor() or platform.machine()}, "
          f"torch {torch.__version__}, threads {torch.get_num_threads()}")
    print(f"pairs B = {B}, features n = {n}, orderings K = {K}, modes = insertion + deletion, "
          f"MLP hidden = {hidden}")
    print(f"curve points = {res.n_points}, distinct rows evaluated = {res.n_unique}, "
          f"max |insdel - naive| = {err:.2e}, numba compile (first call) = {compile_s:.2f} s")
    print("| what | median seconds |")
    print("|---|---:|")
    print(f"| (a) insdel trace | {t_insdel:.3f} |")
    print(f"| (b) naive per-pair loop | {t_naive:.3f} |")
    print(f"| (c) bare forward pass over distinct rows | {t_bare:.3f} |")
    print(f"ratio (a)/(c) = {t_insdel / t_bare:.3f}   (target <= 1.25)")
    print(f"ratio (b)/(a) = {t_naive / t_insdel:.2f}   (target >= 20)")
    return {"insdel": t_insdel, "naive": t_naive, "bare": t_bare}


if __name__ == "__main__":
    main()
