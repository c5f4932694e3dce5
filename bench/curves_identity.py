"""Byte-identity of the curve engine between two source trees of insdel.

Runs the same small computations with each tree's ``insdel`` (a fresh interpreter per tree, the
tree first on ``PYTHONPATH``) and compares every array byte for byte: ``insdel.trace`` on the
shipped simulators (``dielectron_sim``, ``housing_sim``) with the paper MLP presets (float32,
seeded random weights), one ordering and 27 per pair, both modes and each alone, with groups,
steps, fractions and partial curves, small chunks and batches, a float64 model, and more than 64
units (n = 80). Not a timing: it checks that a change to the engine leaves every curve, f(x),
f(r) and the number of distinct rows unchanged.

Usage: ``python bench/curves_identity.py OLD_TREE NEW_TREE [--pairs 300] [--tiny]``
(e.g. ``python bench/curves_identity.py /path/to/main .``). Exit status 1 when anything differs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def _cases(pairs: int):
    """(name, f, X, R, orders, trace options) of every computation compared."""
    import torch

    import insdel
    from insdel import datasets, models

    rng = np.random.default_rng(0)
    out = []
    for data, preset in (("dielectron_sim", "paper_cern"), ("housing_sim", "paper_bangalore")):
        ds = datasets.load(data, seed=0)
        n = ds.n_features
        torch.manual_seed(0)
        p = models.get(preset)
        net = models.MLP(n, p["hidden"], p["dropout"]).eval()
        Xt = ds.X_test
        B = min(pairs, Xt.shape[0] // 2)
        X, R = Xt[:B], Xt[B:2 * B]  # pairs of test rows: binary features often equal
        A = rng.normal(size=(B, n))
        o1 = insdel.orderings(A)
        B27 = max(2, B // 5)
        o27 = insdel.orderings(A[:B27, None, :] + 0.3 * rng.normal(size=(B27, 27, n)))
        g = np.arange(n) // 3  # groups of three columns
        m = int(g.max()) + 1
        og = insdel.orderings(rng.normal(size=(B, m)))
        og3 = insdel.orderings(rng.normal(size=(B27, 3, m)))
        for K, o in ((1, o1), (27, o27)):
            b = o.shape[0]
            out += [
                (f"{data} K={K}", net, X[:b], R[:b], o, {}),
                (f"{data} K={K} insertion", net, X[:b], R[:b], o, {"modes": ("insertion",)}),
                (f"{data} K={K} deletion", net, X[:b], R[:b], o, {"modes": ("deletion",)}),
                (f"{data} K={K} step 3", net, X[:b], R[:b], o,
                 {"positions": insdel.groups.positions(n, step=3)}),
                (f"{data} K={K} max_fraction 0.5", net, X[:b], R[:b], o,
                 {"positions": insdel.groups.positions(n, max_fraction=0.5)}),
                (f"{data} K={K} small chunks and batches", net, X[:b], R[:b], o,
                 {"chunk_size": 50 * n, "batch_size": 97}),
            ]
        out += [
            (f"{data} groups K=1", net, X, R, og, {"groups": g}),
            (f"{data} groups K=3", net, X[:B27], R[:B27], og3, {"groups": g}),
            (f"{data} groups K=1 fractions", net, X, R, og,
             {"groups": g, "positions": insdel.groups.positions(m, fractions=[0.1, 0.5, 0.9])}),
            (f"{data} groups K=3 step 2 deletion", net, X[:B27], R[:B27], og3,
             {"groups": g, "positions": insdel.groups.positions(m, step=2),
              "modes": ("deletion",)}),
            (f"{data} float64 K=27", models.MLP(n, [64, 32]).double().eval(), X[:B27], R[:B27],
             o27, {}),
        ]
    n = 80  # more than 64 units
    torch.manual_seed(1)
    wide = models.MLP(n, [64, 32]).eval()
    X = np.round(rng.normal(size=(40, n)), 1)
    R = np.where(rng.random((40, n)) < 0.3, X, np.round(rng.normal(size=(40, n)), 1))
    out += [("n=80 K=1", wide, X, R, insdel.orderings(rng.normal(size=(40, n))), {}),
            ("n=80 K=4", wide, X, R, insdel.orderings(rng.normal(size=(40, 4, n))), {})]
    return out


def compute(path: Path, pairs: int) -> None:
    """Every case's arrays (curves per mode, f(x), f(r), n_unique) into the npz ``path``."""
    import insdel

    arrays = {}
    for name, f, X, R, o, opts in _cases(pairs):
        res = insdel.trace(f, X, R, o, progress=False, **opts)
        for mode, c in res.curves.items():
            arrays[f"{name} | {mode}"] = c
        arrays[f"{name} | fx"], arrays[f"{name} | fr"] = res.fx, res.fr
        arrays[f"{name} | n_unique"] = np.array([res.n_unique])
    np.savez(path, **arrays)
    print(f"{insdel.__file__}: {len(arrays)} arrays")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trees", nargs="*", type=Path, help="OLD_TREE NEW_TREE")
    p.add_argument("--pairs", type=int, default=300)
    p.add_argument("--tiny", action="store_true", help="a few pairs (a smoke test)")
    p.add_argument("--compute", type=Path, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    pairs = 12 if a.tiny else a.pairs
    if a.compute:
        compute(a.compute, pairs)
        return 0
    if len(a.trees) != 2:
        p.error("give two source trees: OLD_TREE NEW_TREE")
    got = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, tree in enumerate(a.trees):
            out = Path(tmp) / f"{i}.npz"
            env = {**os.environ, "PYTHONPATH": str(tree.resolve()), "INSDEL_PROGRESS": "0"}
            subprocess.run([sys.executable, __file__, "--compute", str(out), "--pairs", str(pairs)],
                           env=env, check=True)
            with np.load(out) as z:
                got.append({k: z[k] for k in z.files})
    old, new = got
    bad = sorted(set(old) ^ set(new))
    for k in sorted(set(old) & set(new)):
        if old[k].dtype != new[k].dtype or old[k].shape != new[k].shape or \
                old[k].tobytes() != new[k].tobytes():
            bad.append(k)
    for k in bad:
        if k in old and k in new and old[k].shape == new[k].shape:
            d = np.abs(old[k].astype(float) - new[k].astype(float))
            print(f"DIFFERS {k}: {int((d > 0).sum())} of {d.size} values, max |diff| {d.max():.3g}")
        else:
            print(f"DIFFERS {k}: present in one tree only, or another shape")
    print(f"{len(old)} arrays compared, {len(bad)} differ: "
          f"{'identical' if not bad else 'NOT identical'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
