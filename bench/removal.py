"""Removal costs (issue 36): the engine's overhead under ``marginal`` and sampled removals against
the bare forward pass over the rows each removal needs, measured side by side in one run.

(m) ``insdel.trace(..., removal=Marginal(background, n_references=K))`` on the CERN-shaped MLP: the K
    single-reference games traced with the curve engine's exact deduplication and averaged;
(c) the bare forward pass over exactly the distinct rows (m) evaluates (built beforehand, not timed),
    batch by batch into one float64 array: the limit. Target (m)/(c) <= 1.1.
(b) the same for the baseline (one reference per pair), today's path, for comparison.
(g) ``conditional_gaussian`` with M = 32 draws (when registered): the split the engine reports,
    sampling and row writing against the model's time. Target sampling / model <= 0.25.

Usage: ``python bench/removal.py [--pairs 200] [--references 10] [--orderings 1] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cern_mlp, interleaved_samples, method_orderings, ratio_of_rounds  # noqa: E402

import insdel  # noqa: E402
from insdel import removal as RM  # noqa: E402
from insdel.tracing import trace  # noqa: E402

MODES = ("insertion", "deletion")


def distinct_rows(X, R, orders) -> np.ndarray:
    """The distinct hybrid rows of the curves of pairs (X, R) (canonical sets S ∩ D), float32."""
    B, K, n = orders.shape
    rank = np.empty_like(orders)
    np.put_along_axis(rank, orders, np.arange(n), axis=2)
    ins = rank[:, :, None, :] < np.arange(n + 1)[None, None, :, None]  # (B, K, n + 1, n)
    sets = np.concatenate([ins, ~ins], axis=1) & (X != R)[:, None, None, :]
    keys = (sets.astype(np.int64) << np.arange(n, dtype=np.int64)).sum(-1).reshape(B, -1)
    pair = np.repeat(np.arange(B, dtype=np.int64), keys.shape[1])
    uniq = np.unique(np.stack([pair, keys.ravel()], 1), axis=0)
    mask = ((uniq[:, 1:2] >> np.arange(n, dtype=np.int64)) & 1).astype(bool)
    return np.where(mask, X[uniq[:, 0]], R[uniq[:, 0]]).astype(np.float32)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=200)
    p.add_argument("--references", type=int, default=10)
    p.add_argument("--orderings", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=4096)
    a = p.parse_args(argv)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    n, B, K, bs = 16, a.pairs, a.references, a.batch_size
    net = cern_mlp(n)
    model = insdel.as_model(net, batch_size=bs)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(B, n))
    background = rng.normal(size=(2000, n))
    orders = (np.argsort(rng.random((B, 1, n)), axis=-1) if a.orderings == 1
              else method_orderings(B, n, 7, a.orderings - 7, seed=1))
    rem = RM.Marginal(background, n_references=K, seed=0)
    refs = rem.references(X, None)
    R1 = refs[:, 0, :]

    rows_m = torch.from_numpy(distinct_rows(np.repeat(X, K, 0), refs.reshape(B * K, n),
                                            np.repeat(orders, K, 0)))
    rows_b = torch.from_numpy(distinct_rows(X, R1, orders))
    res_m = trace(model, X, None, orders, removal=rem)  # warm-up and counts
    res_b = trace(model, X, R1, orders)
    assert res_m.n_unique == len(rows_m), (res_m.n_unique, len(rows_m))
    assert res_b.n_unique == len(rows_b), (res_b.n_unique, len(rows_b))

    def bare(rows):
        vals = np.empty(len(rows))
        with torch.inference_mode():
            for s in range(0, len(rows), bs):
                vals[s:s + bs] = net(rows[s:s + bs]).numpy()[:, 0]

    ts = interleaved_samples({
        "marginal": lambda: trace(model, X, None, orders, removal=rem),
        "bare_marginal": lambda: bare(rows_m),
        "baseline": lambda: trace(model, X, R1, orders),
        "bare_baseline": lambda: bare(rows_b)}, a.repeats)
    med = {k: statistics.median(v) for k, v in ts.items()}
    print(f"CERN-shaped MLP, n = {n}, B = {B} pairs, {orders.shape[1]} ordering(s) per pair, "
          f"batch {bs}, torch threads {torch.get_num_threads()}")
    print(f"(m) marginal, K = {K}: {res_m.n_unique:,} distinct rows, {med['marginal']:.3f} s; "
          f"(c) bare forward over them {med['bare_marginal']:.3f} s; "
          f"(m)/(c) = {ratio_of_rounds(ts, 'marginal', 'bare_marginal'):.3f} (target <= 1.1)")
    print(f"(b) baseline: {res_b.n_unique:,} distinct rows, {med['baseline']:.3f} s; bare "
          f"{med['bare_baseline']:.3f} s; ratio {ratio_of_rounds(ts, 'baseline', 'bare_baseline'):.3f}")
    if "conditional_gaussian" in RM.available():
        g = RM.build("conditional_gaussian", data=background, n_draws=32, seed=0)
        trace(model, X[:8], None, orders[:8], removal=g)  # compile
        splits = [trace(model, X, None, orders, removal=g).timings for _ in range(a.repeats)]
        samp = statistics.median(s["sampling_s"] for s in splits)
        mod = statistics.median(s["model_s"] for s in splits)
        print(f"(g) conditional_gaussian, M = 32: sampling and row writing {samp:.3f} s, model "
              f"{mod:.3f} s, sampling / model = {samp / mod:.3f} (target <= 0.25)")
    else:
        print("(g) conditional_gaussian is not registered in this tree: skipped")


if __name__ == "__main__":
    main()
