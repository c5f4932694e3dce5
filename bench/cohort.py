"""The observational cohort game (issue 37): curves read off the data, cohort Shapley and IGCS.

(o) ``insdel.trace(f, X, None, orders, removal=Cohort(data, y))`` on the Bangalore simulator: the
    391 test rows as targets, the 1,951 rows (train and test) as the data, n = 38, K = 1 random
    ordering per target, insertion and deletion. No model row is evaluated (the model is counted:
    0 rows). Target: <= 2 s on 2 cores.
(i) IGCS (``insdel.attribute(None, X, None, "igcs", data=..., y=...)``) on the same targets, with
    its efficiency gap (the rows' sums against ``v(all) - v(∅)``).
(d) On the diabetes data (n = 10, where exact cohort Shapley costs 2^10 coalitions per target):
    IGCS's distance to exact cohort Shapley and its efficiency gap against ``n_steps``, for each
    quadrature rule. IGCS approximates cohort Shapley (Hama, Mase & Owen, 2022); its own limit as
    the steps grow is the path integral, which the table's "to limit" column measures.

Numba's first call (compilation or cache load) is timed apart. Usage:
``python bench/cohort.py [--repeats 3] [--tiny]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fmt_s, machine_line, markdown_table  # noqa: E402

import insdel  # noqa: E402
from insdel.removal import Cohort  # noqa: E402
from insdel.tracing import trace  # noqa: E402


def _data(name: str):
    d = insdel.datasets.load(name)
    return (np.vstack([d.X_train, d.X_test]), np.concatenate([d.y_train, d.y_test]), d.X_test)


def _median_time(fn, repeats: int) -> tuple[float, float]:
    """(first call, median of the next ``repeats``) seconds."""
    t = time.perf_counter()
    fn()
    first = time.perf_counter() - t
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return first, float(np.median(times))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--tiny", action="store_true", help="smoke-test sizes (the timings mean nothing)")
    a = p.parse_args(argv)
    print(machine_line())

    data, y, X = _data("housing_sim")
    if a.tiny:
        X = X[:20]
    game = Cohort(data, y)
    rng = np.random.default_rng(0)
    orders = np.argsort(rng.random((len(X), 1, X.shape[1])), axis=-1)
    model = insdel.as_model(lambda Z: np.zeros(len(Z)))

    res = {}

    def curves():
        res["r"] = trace(model, X, None, orders, removal=game)

    first_o, t_o = _median_time(curves, a.repeats)
    assert model.n_evals == 0, "the cohort game evaluated the model"
    gap = {}

    def igcs():
        A, info = insdel.attribute(None, X, None, "igcs", data=data, y=y, return_info=True)
        gap["igcs"] = float(np.abs(info["completeness_gap"]).max())

    first_i, t_i = _median_time(igcs, a.repeats)
    B, n = X.shape
    print(f"\n## Bangalore simulator: {B} targets, {len(data):,} data rows, n = {n}\n")
    print(markdown_table(
        ["what", "first call (numba)", "median", "note"],
        [["(o) observational curves, K = 1, both modes", fmt_s(first_o), fmt_s(t_o),
          f"{res['r'].n_unique} model rows; target <= 2 s"],
         ["(i) IGCS, 64 Gauss-Legendre nodes", fmt_s(first_i), fmt_s(t_i),
          f"max efficiency gap {gap['igcs']:.1e}"]]))

    data, y, X = _data("diabetes")
    if a.tiny:
        X = X[:10]
    t = time.perf_counter()
    cs = insdel.attribute(None, X, None, "cohort_shapley", data=data, y=y)
    t_cs = time.perf_counter() - t
    scale = float(np.abs(cs).mean())
    steps = (4, 16, 64) if a.tiny else (4, 8, 16, 32, 64, 128, 256, 500, 1024)
    rows = []
    # the path integral's value: 2048 Gauss-Legendre nodes (256 in --tiny: numpy finds 2048
    # nodes from a 2048 x 2048 eigenproblem, seconds of a smoke run)
    limit = insdel.attribute(None, X, None, "igcs", data=data, y=y,
                             n_steps=256 if a.tiny else 2048, rule="gauss")
    for rule in ("gauss", "trapezoid", "authors"):
        for s in steps:
            G, info = insdel.attribute(None, X, None, "igcs", data=data, y=y, n_steps=s,
                                       rule=rule, return_info=True)
            rows.append([rule, s, f"{np.abs(G - cs).max():.4f}",
                         f"{np.abs(G - cs).mean() / scale:.3f}",
                         f"{np.abs(G - limit).max():.1e}",
                         f"{np.abs(info['completeness_gap']).max():.1e}"])
    print(f"\n## Diabetes: IGCS against exact cohort Shapley ({len(X)} targets, n = "
          f"{X.shape[1]}, exact cohort Shapley in {fmt_s(t_cs)}, mean |phi| = {scale:.3f})\n")
    print(markdown_table(["rule", "n_steps", "max abs(IGCS - CS)",
                          "mean abs(IGCS - CS) / mean abs(CS)", "max abs(IGCS - limit)",
                          "max efficiency gap"], rows))


if __name__ == "__main__":
    main()
