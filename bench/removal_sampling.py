"""Sampled removals: the cost of drawing and writing the rows against the model's forward pass.

n = 16 features, M = 32 draws per coalition, ~20,000 coalitions (200 targets x 100 random
coalitions of every size), training data shaped like the CERN data (correlated Gaussian
columns plus two charges in {-1, +1}). Times, medians over repeats after a warm-up call
(numba compilation excluded), the three interleaved round by round; the ratios are medians over
rounds of the round's ratio (a drift in machine load moves both alike):

(s) ``removal.sample(X, keep, targets)`` for ``conditional_gaussian`` (M = 32), ``conditional_mean``
    (M = 1) and ``conditional_knn`` (K = 32, on 2,000 training rows): the rows drawn and written;
(m) the forward pass of a 16 -> 64 -> 64 -> 1 torch MLP (float64, ReLU) over the same rows, one
    call, no gradient;
(c) the CERN-shaped MLP of the paper (float32, hidden 509-421-65-368-122-477), timed on a slice
    of the rows and scaled to all of them (its cost per row is constant).

Prints (s)/(m) and (s)/(c): the share of the model's time the sampling adds (the target for
``conditional_gaussian`` on the CERN MLP: at most 0.25).

Usage: ``python bench/removal_sampling.py [--targets 200] [--per-target 100] [--repeats 5]
[--tiny]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from insdel import removal

try:  # run as a script (bench/ on sys.path) or imported as bench.removal_sampling
    import _common
except ImportError:  # pragma: no cover
    from bench import _common


def training_rows(N: int, n: int = 16, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n)) / np.sqrt(n)
    X = rng.normal(size=(N, n)) @ A + rng.normal(size=n)
    for j in (7, 15):
        X[:, j] = np.where(rng.random(N) < 0.5, -1.0, 1.0)
    return X


def requests(data: np.ndarray, targets: int, per_target: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    n = data.shape[1]
    tx = data[rng.choice(data.shape[0], targets, replace=False)]
    X = np.repeat(tx, per_target, axis=0)
    size = rng.integers(0, n + 1, size=X.shape[0])  # coalitions of every size
    keep = np.argsort(rng.random(X.shape), axis=1) < size[:, None]
    tix = np.repeat(np.arange(targets), per_target)
    return X, keep, tix


def small_mlp(n: int):
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(n, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                              torch.nn.ReLU(), torch.nn.Linear(64, 1)).double().eval()
    return net


def forward(net, rows: np.ndarray, dtype) -> float:
    import torch

    with torch.no_grad():
        t = torch.from_numpy(rows.astype(dtype, copy=False))
        t0 = time.perf_counter()
        net(t)
        return time.perf_counter() - t0


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", type=int, default=200)
    p.add_argument("--per-target", type=int, default=100)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--cern-rows", type=int, default=32768,
                   help="rows the CERN MLP is timed on (scaled to all rows)")
    p.add_argument("--tiny", action="store_true", help="smoke-test sizes")
    a = p.parse_args(argv)
    if a.tiny:
        a.targets, a.per_target, a.repeats, a.cern_rows = 4, 8, 1, 256
    import torch

    print(_common.machine_line())
    print(f"torch threads {torch.get_num_threads()}")
    n, M = 16, 32
    data = training_rows(20_000, n)
    X, keep, tix = requests(data, a.targets, a.per_target)
    N = X.shape[0]
    print(f"n = {n}, coalitions = {N:,} ({a.targets} targets x {a.per_target}), M = {M}")
    builders = {  # a fresh removal per repeat: its per-target draws are timed too
        "conditional_gaussian": lambda: removal.build("conditional_gaussian", data=data,
                                                      n_draws=M),
        "conditional_mean": lambda: removal.build("conditional_mean", data=data),
        "conditional_knn": lambda: removal.build("conditional_knn", data=data[:2000],
                                                 n_neighbors=M),
    }
    net = small_mlp(n)
    cern = _common.cern_mlp(n)
    print()
    print("| removal | rows | (s) sample | (m) 16-64-64-1 f64 | (s)/(m) | (c) CERN f32 "
          "(scaled) | (s)/(c) | (s) per coalition |")
    print("|---|---|---|---|---|---|---|---|")
    for name, build in builders.items():
        rows = build().sample(X, keep, tix)  # numba compilation (serial, parallel), warm-up
        flat = rows.reshape(-1, n)
        part = flat[: a.cern_rows]
        forward(net, flat[:1024], np.float64)
        forward(cern, part[:256], np.float32)
        fresh = iter([build() for _ in range(max(1, a.repeats))])  # cold per-target draws
        samples = _common.interleaved_samples({
            "s": lambda fresh=fresh: next(fresh).sample(X, keep, tix),
            "m": lambda flat=flat: forward(net, flat, np.float64),
            "c": lambda part=part: forward(cern, part, np.float32)}, max(1, a.repeats))
        scale = flat.shape[0] / part.shape[0]
        samples["c"] = [t * scale for t in samples["c"]]
        t_s, t_m, t_c = (float(np.median(samples[k])) for k in "smc")
        r_m = _common.ratio_of_rounds(samples, "s", "m")
        r_c = _common.ratio_of_rounds(samples, "s", "c")
        print(f"| {name} | {flat.shape[0]:,} | {t_s * 1e3:.1f} ms | {t_m * 1e3:.1f} ms | "
              f"{r_m:.3f} | {t_c * 1e3:.0f} ms | {r_c:.3f} | "
              f"{t_s / N * 1e6:.2f} us |")


if __name__ == "__main__":
    main()
