"""``stationary_gaussian`` at the forecasting size: insertion + deletion curves of B windows of
48 steps x 8 channels (n = 384 cells) over the 32 lag x channel blocks of
``block_groups(48, 8, lag_block=12)``, a small torch forecaster (``multi_output.forecaster``,
one output: a removal that draws its rows tests an H-output model one output at a time), against
the
``baseline`` removal (each window's per-channel mean) on the same pairs and orderings.

(s) ``insdel.trace(model, X, None, orders, groups=groups, removal=stationary_gaussian)``: the
    removed cells set to their conditional mean given the kept cells (one row per coalition),
    the block-Toeplitz covariance estimated from one training series of a VAR(1) process;
(b) ``insdel.trace(model, X, R, orders, groups=groups)``: the baseline R on the same pairs;
(d) the direct path on the first ``--direct-pairs`` pairs beside (s) on the same pairs: the same
    removal with :func:`insdel.removal.gaussian.conditional_rows` (the regression matrix
    ``S_RK S_KK^-1`` per coalition) as its ``sample()``, and the largest difference of the curves.

(s) and (b) are timed interleaved round by round (medians over rounds, after a warm-up round on
every pair, which compiles); prints the time per pair and per coalition of each, the share of
(s) spent in ``sample()`` (the engine's ``sampling_s``) and the ratio (s) / (b) of the same
rounds; (d) and (s) once each on their pairs (after a warm-up on two of them).

Usage: ``python bench/removal_stationary.py [--pairs 300] [--direct-pairs 6] [--repeats 3]
[--quick | --tiny]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved_samples, ratio_of_rounds  # noqa: E402
from multi_output import forecaster  # noqa: E402

import insdel  # noqa: E402
from insdel import removal as RM  # noqa: E402
from insdel.removal.gaussian import conditional_rows  # noqa: E402
from insdel.removal.stationary import StationaryGaussian  # noqa: E402
from insdel.timeseries import block_groups  # noqa: E402


class DirectStationary(StationaryGaussian):
    """``stationary_gaussian`` with the regression-matrix rows of ``conditional_rows``."""

    def sample(self, X, keep, targets):
        Z, tix = self._Z, np.zeros(len(X), dtype=np.int64)
        return conditional_rows(np.asarray(X, dtype=np.float64), np.asarray(keep, dtype=bool),
                                tix, Z, self.cov_)


def var1_series(T: int, C: int, phi: float = 0.7, seed: int = 0) -> np.ndarray:
    """A (T, C) VAR(1) series ``z[t] = phi A z[t-1] + e[t]`` with channels coupled through A
    (spectral radius 1 before phi): lag and cross-channel structure for the conditional."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(C, C))
    A /= np.max(np.abs(np.linalg.eigvals(A)))
    z = np.zeros((T + 100, C))
    e = rng.normal(size=z.shape)
    for t in range(1, T + 100):
        z[t] = phi * A @ z[t - 1] + e[t]
    return z[100:]


def run(B: int, L: int, C: int, lag_block: int, repeats: int, direct: int) -> None:
    series = var1_series(200 * L, C)
    starts = np.random.default_rng(1).integers(0, series.shape[0] - L, size=B)
    X = np.stack([series[s:s + L] for s in starts]).reshape(B, L * C)
    R = np.repeat(X.reshape(B, L, C).mean(axis=1, keepdims=True), L, axis=1).reshape(B, L * C)
    groups = block_groups(L, C, lag_block=lag_block)
    orders = np.stack([np.random.default_rng(b).permutation(groups.m) for b in range(B)])
    model = insdel.as_model(forecaster(L * C, 1))
    stat = RM.build("stationary_gaussian", length=L, channels=C, series=series)
    last = {}

    def traced(name, R=None, removal=None):
        def call():
            last[name] = insdel.trace(model, X, R, orders, groups=groups, removal=removal)
        return call

    traced("stationary", removal=stat)()  # warm-up round: compiles every path it takes
    traced("baseline", R=R)()
    ts = interleaved_samples({"stationary": traced("stationary", removal=stat),
                              "baseline": traced("baseline", R=R)}, repeats)
    med = {k: statistics.median(v) for k, v in ts.items()}
    s, b = last["stationary"], last["baseline"]
    assert np.all(np.isfinite(s.curves["insertion"])) and np.all(np.isfinite(s.curves["deletion"]))
    coal_s, coal_b = s.n_unique, b.n_unique
    print(f"stationary_gaussian, {B} windows {L}x{C} (n = {L * C}), {groups.m} lag x channel "
          f"blocks (lag_block={lag_block}), one-output forecaster, insertion + deletion, one ordering "
          f"per pair, {repeats} interleaved round(s), torch threads {torch.get_num_threads()}")
    print(f"(s) stationary_gaussian (conditional mean): {med['stationary']:.3f} s, "
          f"{1e3 * med['stationary'] / B:.1f} ms per pair, {coal_s} coalitions, "
          f"{1e3 * med['stationary'] / coal_s:.3f} ms per coalition; of the last round: "
          f"sample() {s.timings['sampling_s']:.3f} s, model {s.timings['model_s']:.3f} s")
    print(f"(b) baseline (per-window channel mean): {med['baseline']:.3f} s, "
          f"{1e3 * med['baseline'] / B:.2f} ms per pair, {coal_b} distinct rows, "
          f"{1e3 * med['baseline'] / coal_b:.4f} ms per row")
    print(f"(s) / (b) = {ratio_of_rounds(ts, 'stationary', 'baseline'):.1f} (median over rounds)")
    D = min(B, direct)
    old = DirectStationary(length=L, channels=C, series=series)
    w = min(D, 2)
    insdel.trace(model, X[:w], None, orders[:w], groups=groups, removal=old)  # compile
    times, curves = {}, {}
    for name, rem in (("direct", old), ("stationary", stat)):
        t = time.perf_counter()
        res = insdel.trace(model, X[:D], None, orders[:D], groups=groups, removal=rem)
        times[name] = time.perf_counter() - t
        curves[name] = np.stack([res.curves["insertion"], res.curves["deletion"]])
    diff = float(np.max(np.abs(curves["direct"] - curves["stationary"])))
    rank = np.argsort(orders[0])  # pair 0's coalitions, both curves: the rows in float64
    ins = groups.expand(rank[None, :] < np.arange(groups.m + 1)[:, None])
    keep = np.concatenate([ins, ~ins])
    Xk = np.repeat(X[:1], len(keep), axis=0)
    tk = np.zeros(len(keep), dtype=np.int64)
    row_diff = float(np.max(np.abs(stat.sample(Xk, keep, tk) - old.sample(Xk, keep, tk))))
    print(f"(d) direct path (conditional_rows: S_RK S_KK^-1 per coalition) on the first {D} "
          f"pairs: {1e3 * times['direct'] / D:.1f} ms per pair; (s) on them "
          f"{1e3 * times['stationary'] / D:.1f} ms per pair; (d) / (s) = "
          f"{times['direct'] / times['stationary']:.1f}; largest difference of the curves (float32 "
          f"model) {diff:.2g}, of pair 0's rows (float64) {row_diff:.2g}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=None, help="B windows (default by size)")
    p.add_argument("--direct-pairs", type=int, default=None,
                   help="pairs the direct path (d) runs on (default by size)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="small B (a smoke run at full n)")
    p.add_argument("--tiny", action="store_true", help="smoke-test sizes (run_all --tiny)")
    a = p.parse_args(argv)
    if a.tiny:
        run(a.pairs or 4, L=8, C=2, lag_block=4, repeats=1, direct=a.direct_pairs or 4)
    elif a.quick:
        run(a.pairs or 20, L=48, C=8, lag_block=12, repeats=1, direct=a.direct_pairs or 2)
    else:
        run(a.pairs or 300, L=48, C=8, lag_block=12, repeats=a.repeats,
            direct=a.direct_pairs or 6)


if __name__ == "__main__":
    main()
