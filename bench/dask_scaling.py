"""Exact Shapley on the CERN-shaped MLP: serial against Dask LocalClusters of 1 and 2 workers.

``insdel.shapley_values(f, X, R, client=...)`` sends each streamed chunk of pairs (``max_rows``
subsets) to a worker; the values are checked identical to the serial call before anything is
timed. Every pair differs in all 16 features (the CERN counterfactual policy's situation), so each
costs 2^16 = 65,536 model rows.

Columns: **(s)** serial in this process (torch with its default threads), **(s1)** serial with
torch on one thread, **(d1)** a LocalCluster of one worker process, **(d2)** two worker processes;
each worker runs torch, numba and BLAS on one thread (``insdel.distributed.local_cluster``). Cluster
start-up and the workers' first call (numba compilation or cache load, the model's transfer) are
excluded and printed separately. On a machine with C cores the best (d_k) can do is about
min(k, C) times (s1); against (s), which already uses every core through torch's own threads,
the gain is bounded by how much of (s)'s time is not spread over the cores (numba's kernels, the
Python between model calls) minus what Dask costs (pickling each chunk's result, scheduling).

Usage: ``python bench/dask_scaling.py [--pairs 16] [--max-rows 131072] [--repeats 3] [--tiny]``
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

try:
    from bench import _common as c
except ImportError:  # run as a script: bench/ is on sys.path
    import _common as c


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=16)
    p.add_argument("--max-rows", type=int, default=1 << 17,
                   help="subsets per chunk (2 pairs of |D| = 16 by default)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--tiny", action="store_true", help="smoke-test sizes (timings mean nothing)")
    a = p.parse_args(argv)
    import torch
    from dask.distributed import Client

    import insdel
    from insdel.distributed import local_cluster, set_torch_threads

    n = 8 if a.tiny else 16
    B = 4 if a.tiny else a.pairs
    max_rows = (1 << 9) if a.tiny else a.max_rows
    repeats = 1 if a.tiny else a.repeats
    net = c.cern_mlp(n)
    X, R = c.pairs(B, n, seed=1)
    n_chunks = -(-B * (1 << n) // max_rows)
    threads0 = torch.get_num_threads()

    def run(client=None):
        return insdel.shapley_values(net, X, R, max_rows=max_rows, client=client)

    ref = run()  # also the warm-up (numba compile / cache load)
    times: dict[str, float] = {}
    extra: dict[str, str] = {}
    times["(s)"], _ = c.time_call(run, repeats, warmup=0)
    torch.set_num_threads(1)
    times["(s1)"], _ = c.time_call(run, repeats, warmup=0)
    torch.set_num_threads(threads0)
    for k in (1, 2):
        t0 = time.perf_counter()
        with local_cluster(k, 1, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            client.run(set_torch_threads, 1)
            start = time.perf_counter() - t0
            t0 = time.perf_counter()
            got = run(client)  # first call: numba in the workers, the model's transfer
            first = time.perf_counter() - t0
            if not np.array_equal(got, ref):
                raise AssertionError(f"LocalCluster({k}): values differ from the serial call")
            times[f"(d{k})"], _ = c.time_call(lambda client=client: run(client), repeats,
                                              warmup=0)
            extra[f"(d{k})"] = f"start-up {start:.1f} s, first call {first:.1f} s"
    print(f"# exact Shapley, CERN-shaped MLP (n = {n}, hidden {'-'.join(map(str, c.CERN_HIDDEN))}),"
          f" B = {B} pairs, |D| = {n} ({B * (1 << n):,} model rows), {n_chunks} chunks of "
          f"max_rows = {max_rows:,}; median of {repeats}{' (TINY sizes: numbers meaningless)' if a.tiny else ''}")
    print(f"# {os.cpu_count()} logical cores; torch threads in this process: {threads0}; "
          "Dask workers: 1 thread each (torch, numba, BLAS)")
    print("| run | seconds | pairs / s | (s)/this | (s1)/this | notes |")
    print("|---|---:|---:|---:|---:|---|")
    labels = {"(s)": f"serial, torch {threads0} threads", "(s1)": "serial, torch 1 thread",
              "(d1)": "LocalCluster, 1 worker x 1 thread",
              "(d2)": "LocalCluster, 2 workers x 1 thread"}
    for k, v in times.items():
        print(f"| {k} {labels[k]} | {v:.2f} | {B / v:.1f} | {times['(s)'] / v:.2f} | "
              f"{times['(s1)'] / v:.2f} | {extra.get(k, '')} |")
    print("# values identical to the serial call on every cluster (checked before timing)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
