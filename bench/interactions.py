"""Shapley interaction indices (insdel.interactions): their cost beside the decomposition, and
shapiq's ExactComputer on the same games.

In one run:

(a) |D| = 22 (beyond shapiq's exact range): P pairs (default 2) of a cheap MLP (24 inputs, hidden
    32, float32, random weights) whose references differ from the targets in 22 features.
    ``insdel.batch_decomposition`` (2^22 coalition values per pair and their Möbius transform)
    against ``insdel.interactions`` (the same decomposition, then the index read from its
    effects) for k-SII at order 2, interleaved, medians over repeats; then every other index
    read from the same decomposition (``from_decomposition``), each as (decomposition + read-out)
    / decomposition. Target: <= 1.2.
(b) shapiq's ``ExactComputer`` on the same game (insdel's value function of the pair wrapped as
    a ``shapiq.Game``, ``insdel.interactions.shapiq_io.shapiq_game``) at n = 8 .. 14, every
    index shapiq names at order 2: time of each (shapiq's includes its 2^n game evaluations, as
    insdel's includes its own) and the largest absolute difference over all subsets up to order 2
    (target 1e-10; FSII: shapiq's penalty of 1e8 on the constraints leaves its own values about
    1e-9 off the constrained least-squares solution, which insdel's equal to 1e-12).

numba's first call (compile or cache load) is excluded: every function runs once before timing.

Usage: ``python bench/interactions.py [--pairs 2] [--d 22] [--repeats 3] [--n 8 10 12 14]
[--parts a b] [--tiny]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    fmt,
    fmt_s,
    interleaved_samples,
    machine_line,
    markdown_table,
    mlp,
    ratio_of_rounds,
)

import insdel  # noqa: E402
from insdel.interactions import from_decomposition  # noqa: E402

INDICES = ["k-SII", "SII", "STII", "FSII", "FBII", "BII", "Moebius"]


def model_fn(n: int):
    """The cheap MLP as a NumPy-in, NumPy-out function (through insdel's adapter)."""
    return insdel.as_model(mlp(n, (32,), 0.0, seed=0))


def part_a(P: int, d: int, repeats: int) -> None:
    n = d + 2
    f = model_fn(n)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(P, n))
    R = X + rng.normal(size=(P, n))
    R[:, :n - d] = X[:, :n - d]  # the first n - d features do not differ: |D| = d
    dec_fn = lambda: insdel.batch_decomposition(f, X, R, max_d=d, progress=False)  # noqa: E731
    int_fn = lambda: insdel.interactions(f, X, R, index="k-SII", order=2, max_d=d)  # noqa: E731
    dec = dec_fn()
    res = int_fn()  # numba's first calls
    assert res.d.tolist() == [d] * P
    np.testing.assert_allclose(res.sums(), res.v_all - res.v_empty, atol=1e-9)
    s = interleaved_samples({"decomposition": dec_fn, "interactions": int_fn}, repeats)
    t_dec, t_int = statistics.median(s["decomposition"]), statistics.median(s["interactions"])
    print(f"(a) |D| = {d}, P = {P} pairs, n = {n}, cheap MLP; medians of {repeats} interleaved "
          "rounds")
    rows = [["insdel.batch_decomposition", fmt_s(t_dec), "1.00"],
            ["insdel.interactions (k-SII, order 2)", fmt_s(t_int),
             f"{ratio_of_rounds(s, 'interactions', 'decomposition'):.3f}"]]
    for name in INDICES:
        for k in ((2, 3) if name == "k-SII" else (2,)):
            from_decomposition(dec, index=name, order=k)
            ts = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                from_decomposition(dec, index=name, order=k)
                ts.append(time.perf_counter() - t0)
            t_read = statistics.median(ts)
            rows.append([f"read-out {name}, order {k} (from the decomposition)", fmt_s(t_read),
                         f"{(t_dec + t_read) / t_dec:.3f}"])
    print(markdown_table(["what", "seconds", "/ decomposition"], rows))
    print(f"target: interactions / decomposition <= 1.2 (got "
          f"{ratio_of_rounds(s, 'interactions', 'decomposition'):.3f})\n")


def part_b(ns: list[int], repeats: int) -> None:
    import shapiq

    from insdel.interactions.shapiq_io import shapiq_game

    print("(b) shapiq ExactComputer vs insdel.interactions on the same game (one pair, cheap "
          "MLP, every feature differs), order 2")
    rows = []
    for n in ns:
        f = model_fn(n)
        rng = np.random.default_rng(n)
        X = rng.normal(size=(1, n))
        R = X + rng.normal(size=(1, n))
        for name in ["k-SII", "SII", "STII", "FSII", "FBII", "BII", "Moebius"]:
            def ours(name=name, f=f, X=X, R=R):
                return insdel.interactions(f, X, R, index=name, order=2)

            def theirs(name=name, f=f, X=X, R=R):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ec = shapiq.ExactComputer(shapiq_game(f, X, R))
                    return ec(name, 2) if name != "Moebius" else ec("Moebius")

            res = ours()
            iv = theirs()
            err = max(abs(res.get(0, S) - iv[S]) for S in iv.interactions if len(S) <= 2)
            t_ours = statistics.median(_times(ours, repeats))
            t_theirs = statistics.median(_times(theirs, max(1, repeats if n <= 12 else 1)))
            rows.append([n, name, fmt_s(t_theirs), fmt_s(t_ours), f"{t_theirs / t_ours:.1f}",
                         fmt(float(err))])
    print(markdown_table(["n", "index", "shapiq s", "insdel s", "shapiq / insdel",
                          "max |difference|"], rows))
    print("FSII: shapiq solves the constrained least squares with a penalty of 1e8, so its own "
          "values are about 1e-9 off.\n")


def _times(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=2)
    p.add_argument("--d", type=int, default=22)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--n", type=int, nargs="+", default=[8, 10, 12, 14])
    p.add_argument("--parts", nargs="+", choices=["a", "b"], default=["a", "b"])
    p.add_argument("--tiny", action="store_true", help="seconds: a smoke test")
    a = p.parse_args(argv)
    if a.tiny:
        a.pairs, a.d, a.repeats, a.n = 1, 10, 1, [6]
    print(machine_line())
    if "a" in a.parts:
        part_a(a.pairs, a.d, a.repeats)
    if "b" in a.parts:
        part_b(a.n, a.repeats)


if __name__ == "__main__":
    main()
