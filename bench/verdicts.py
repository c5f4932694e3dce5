"""Calibration of insdel.verdicts on synthetic leaderboards with known truth.

Each leaderboard: G independent units of two pairs each (a pair and its mirror: their scores
correlated), K = 6 methods with true means ``MU`` (three methods truly equal, two more truly equal,
one apart), a unit effect shared by all methods, a unit x method effect correlated across methods
and a skewed pair-level noise. Measured over ``--boards`` leaderboards:

- the family-wise error of Holm's and the step-down max-T adjustment (a rejection of a truly zero
  difference; target 0.035-0.065 at alpha = 0.05), and their directional errors;
- the coverage of the simultaneous rank intervals (every method's interval holds every place the
  truth allows it; target >= 0.94);
- the planner: the units it predicts from a pilot against the units a simulation of the same
  generator needs for the same power (target within ±15 %).

``python bench/verdicts.py`` (1,000 leaderboards), ``--tiny`` (a smoke test).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from insdel.verdicts import compare, plan, rank_intervals

#: True means of the six methods: 0-2 equal, 3-4 equal, 5 apart.
MU = np.array([0.0, 0.0, 0.0, 0.8, 0.8, 1.6])


def board(rng: np.random.Generator, G: int, mu: np.ndarray = MU, *, pair_corr: float = 0.6):
    """One leaderboard's per-pair scores (2G, K) and clusters (2G,): unit effect (sd 1), unit x
    method effect (sd 0.8, correlation 0.5 across methods), pair noise (sd 0.6, a centred gamma:
    skewed) shared within the unit with correlation ``pair_corr``."""
    K = mu.size
    unit = rng.normal(size=(G, 1))
    common = rng.normal(size=(G, 1))
    um = 0.8 * (np.sqrt(0.5) * common + np.sqrt(0.5) * rng.normal(size=(G, K)))
    shared = rng.gamma(2.0, 1.0, size=(G, 1, K)) - 2.0
    own = rng.gamma(2.0, 1.0, size=(G, 2, K)) - 2.0
    noise = 0.6 / np.sqrt(2.0) * (np.sqrt(pair_corr) * shared + np.sqrt(1 - pair_corr) * own)
    Y = mu + unit[:, None, :] + um[:, None, :] + noise  # (G, 2, K)
    return Y.reshape(2 * G, K), np.repeat(np.arange(G), 2)


def true_order(mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per method: the best and worst place the truth allows (ties: any of their places)."""
    better = (mu[None, :] > mu[:, None]).sum(axis=1)
    worse = (mu[None, :] < mu[:, None]).sum(axis=1)
    return 1 + better, mu.size - worse


def calibration(n_boards: int, G: int, *, n_resamples: int = 1000, seed: int = 0,
                mu: np.ndarray = MU, alpha: float = 0.05) -> dict:
    """FWER (and directional errors) of Holm and max-T, rank-interval coverage."""
    rng = np.random.default_rng(seed)
    lo_ok, hi_ok = true_order(mu)
    fw = {"holm": 0, "maxt": 0}
    dirn = {"holm": 0, "maxt": 0}
    covered = 0
    for b in range(n_boards):
        V, cl = board(rng, G, mu)
        c = compare(V, clusters=cl, level=1 - alpha, n_resamples=n_resamples, seed=b)
        i = np.array([int(a[1:]) for a, _ in c.pairs])
        j = np.array([int(b_[1:]) for _, b_ in c.pairs])
        null = mu[i] == mu[j]
        sign = np.sign(mu[i] - mu[j])
        for adj in fw:
            rej = c.adjusted(adj) < alpha
            fw[adj] += bool((rej & null).any())
            dirn[adj] += bool((rej & ~null & (np.sign(c.mean) != sign)).any())
        r = rank_intervals(c)
        covered += bool(((r.low <= lo_ok) & (r.high >= hi_ok)).all())
    return {"boards": n_boards, "units": G, "fwer_holm": fw["holm"] / n_boards,
            "fwer_maxt": fw["maxt"] / n_boards, "directional_holm": dirn["holm"] / n_boards,
            "directional_maxt": dirn["maxt"] / n_boards, "rank_coverage": covered / n_boards}


def planner_check(*, pilot_units: int = 400, n_sim: int = 1000, seed: int = 0, a: int = 0,
                  b: int = 3, power: float = 0.8, alpha: float = 0.05) -> dict:
    """The planner's units from one pilot leaderboard against the smallest G whose simulated
    leaderboards (the same generator) reject a = b (Holm over the block's 15 comparisons
    is at most Bonferroni: ``n_comparisons=1`` here, one planned comparison) with ``power``."""
    from scipy import stats

    rng = np.random.default_rng(seed)
    V, cl = board(rng, pilot_units)
    names = [f"m{k}" for k in range(MU.size)]
    margin = 0.35  # a difference the pilot must plan for: smaller than the truth
    mu = MU.copy()
    mu[b] = mu[a] + margin
    pl = plan(V, names[b], names[a], margin=margin, methods=names, clusters=cl, power=power,
              alpha=alpha)

    def simulated(G: int) -> float:
        r = np.random.default_rng(seed + 1)
        hits = 0
        for _ in range(n_sim):
            W, c = board(r, G, mu)
            U = W.reshape(G, 2, -1).mean(axis=1)
            hits += stats.ttest_rel(U[:, b], U[:, a]).pvalue < alpha
        return hits / n_sim

    lo, hi = 2, 4
    while simulated(hi) < power:
        lo, hi = hi + 1, hi * 2
    while lo < hi:
        mid = (lo + hi) // 2
        if simulated(mid) >= power:
            hi = mid
        else:
            lo = mid + 1
    return {"pilot_units": pilot_units, "predicted_units": pl.n_units,
            "predicted_pairs": pl.n_pairs, "simulated_units": hi, "simulated_pairs": 2 * hi,
            "ratio": pl.n_pairs / (2 * hi)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--boards", type=int, default=1000)
    p.add_argument("--units", type=int, default=60)
    p.add_argument("--resamples", type=int, default=2000)
    p.add_argument("--tiny", action="store_true", help="a smoke test (seconds)")
    a = p.parse_args(argv)
    boards, resamples, sims = (a.boards, a.resamples, 1000)
    if a.tiny:
        boards, resamples, sims = 20, 200, 50
    t0 = time.perf_counter()
    cal = calibration(boards, a.units, n_resamples=resamples)
    pc = planner_check(n_sim=sims, pilot_units=100 if a.tiny else 400)
    print("## bench/verdicts.py: insdel.verdicts on synthetic leaderboards\n")
    print(f"{cal['boards']} leaderboards, {cal['units']} units of 2 pairs each, 6 methods "
          f"(true means {MU.tolist()}), max-T with {resamples} sign flips; α = 0.05.\n")
    print("| measure | value | target |\n|---|---:|---|")
    print(f"| FWER, Holm | {cal['fwer_holm']:.3f} | 0.035-0.065 |")
    print(f"| FWER, max-T (step-down) | {cal['fwer_maxt']:.3f} | 0.035-0.065 |")
    print(f"| directional errors, Holm / max-T | {cal['directional_holm']:.3f} / "
          f"{cal['directional_maxt']:.3f} | ≈ 0 |")
    print(f"| rank-interval coverage | {cal['rank_coverage']:.3f} | >= 0.94 |")
    print(f"| planner: predicted / simulated pairs | {pc['predicted_pairs']} / "
          f"{pc['simulated_pairs']} = {pc['ratio']:.3f} | 0.85-1.15 |")
    print(f"\n{time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
