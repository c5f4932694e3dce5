"""A small run on the user's own CSV (the ``table`` recipe), shared by the configuration, runner and
CLI tests: 60 rows, a binary feature, a model trained for one epoch; and a small ROAR table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def small_csv(path: Path, *, empty: dict[str, list[int]] | None = None) -> Path:
    """Write the CSV (columns a, flag, y, b; target y) to ``path`` and return it; ``empty``:
    column -> data rows (0-based) whose cell is left empty."""
    rng = np.random.default_rng(1)
    N = 60
    a, flag, b = rng.normal(size=N), rng.integers(0, 2, N), rng.normal(size=N)
    y = 2 * a + 3 * flag - b + 0.1 * rng.normal(size=N)
    rows = [[f"{a[i]:.6f}", f"{flag[i]}", f"{y[i]:.6f}", f"{b[i]:.6f}"] for i in range(N)]
    for col, idx in (empty or {}).items():
        for i in idx:
            rows[i]["a,flag,y,b".split(",").index(col)] = ""
    path.write_text("a,flag,y,b\n" + "\n".join(",".join(r) for r in rows) + "\n")
    return path


def small_cfg(csv: Path, name: str, /, **over) -> dict:
    """A run configuration on ``csv`` (6 targets, the median policy, vanilla gradients), top-level
    keys replaced by ``over`` (``name`` too)."""
    cfg = {"name": name, "seed": 0,
           "data": {"recipe": "table", "options": {"path": str(csv), "target": "y",
                                                   "scale": "none"}},
           "model": {"params": {"hidden": [4], "dropout": 0.0, "lr": 3e-3}, "max_epochs": 1},
           "targets": {"n": 6}, "policies": [{"spec": {"policy": "median"}}],
           "methods": {"names": ["vanilla_grad"]},
           "evaluation": {"n_random": 1, "targets_per_chunk": 3}, "figures": {"enabled": False}}
    cfg.update(over)
    return cfg


#: The small run as a TOML file (placeholders: run, real, csv, model, quick).
SMALL_TOML = """
name = "{run}"
seed = 0
[data]
recipe = "table"
{real}
[data.options]
path = "{csv}"
target = "y"
scale = "none"
[model]
{model}
[targets]
n = 6
[[policies]]
spec = {{policy = "median"}}
[methods]
names = ["vanilla_grad"]
[evaluation]
n_random = 1
targets_per_chunk = 3
[figures]
enabled = false
{quick}
"""

#: The small run's [model] table: an MLP trained for one epoch.
SMALL_MODEL = 'params = {hidden = [4], dropout = 0.0, lr = 3e-3}\nmax_epochs = 1'


def small_toml(folder: Path, csv: str, *, run: str, model: str = SMALL_MODEL, quick: str = "",
               real: str = "", name: str = "a.toml") -> Path:
    """Write the small run as a TOML file ``folder/name`` (``csv``: its data.options.path as
    written; ``model``, ``quick``, ``real``: extra TOML lines) and return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(SMALL_TOML.format(csv=csv, model=model, quick=quick, real=real, run=run),
                    encoding="utf-8")
    return path


def interrupted_chunks(calls: list):
    """A chunk computation for :class:`insdel._checkpoint.ChunkStore.run` (chunk i is
    ``[i, i, i]``) that records each chunk it computes in ``calls`` and is interrupted
    (KeyboardInterrupt) the first time it reaches chunk 2."""

    def compute(i):
        calls.append(i)
        if i == 2 and len(calls) == 3:
            raise KeyboardInterrupt
        return np.full(3, float(i))

    return compute


def roar_table(replicates: int) -> pd.DataFrame:
    """A :func:`insdel.roar.roar` table (``roar.TABLE_COLUMNS``) for two methods (``good`` with the
    signed ordering, ``random`` with the random one) at q = 0.5 and 1, ``replicates`` replicates."""
    from insdel import roar

    rng = np.random.default_rng(0)
    rows = []
    for r in range(replicates):
        rows.append(("none", "none", 0.0, r, 1.0 + 0.1 * rng.random(), 10))
        for m, o in (("good", "signed"), ("random", "random")):
            for q in (0.5, 1.0):
                rows.append((m, o, q, r, 2.0 + q + 0.1 * rng.random(), 10))
    return pd.DataFrame(rows, columns=roar.TABLE_COLUMNS)


def categorical_csv(path: Path) -> Path:
    """Write a CSV with a text column ``region`` (three levels; one-hot encoded by
    ``categorical = ["region"]``) beside two numeric columns (columns a, region, b, y; target y)
    to ``path`` and return it."""
    rng = np.random.default_rng(2)
    N = 60
    a, b = rng.normal(size=N), rng.normal(size=N)
    region = rng.choice(["north", "south", "west"], N)
    y = 2 * a - b + np.select([region == "north", region == "south"], [1.0, -1.0], 0.0)
    rows = [f"{a[i]:.6f},{region[i]},{b[i]:.6f},{y[i]:.6f}" for i in range(N)]
    path.write_text("a,region,b,y\n" + "\n".join(rows) + "\n")
    return path


def multi_output_runs(d: Path, *, weights: list[float], metrics: list[str] | None = None
                      ) -> tuple[Path, list[Path]]:
    """A small run with ``model.outputs = H`` (H = ``len(weights)``; a float64 torch module,
    two gradient methods, the median policy, ``[metrics]`` ``metrics``) in ``d / "multi"``, and
    per output h a single-output run of the same configuration on a model file of output h
    alone in ``d / "single_<h>"``: the same pairs, output h's numbers."""
    import torch

    from insdel import runner
    from tests.test_runner_multi_output import _Column as Column
    from tests.test_runner_multi_output import _TwoOut as Net

    csv = small_csv(d / "small.csv")
    torch.manual_seed(0)
    H = len(weights)
    net = Net(H).double()
    torch.jit.save(torch.jit.script(net), str(d / "multi.pt"))

    def cfg(path, **model):
        c = small_cfg(csv, "multi", model={"path": str(path), **model},
                      methods={"names": ["vanilla_grad", "integrated_gradients"]})
        if metrics:
            c["metrics"] = {"names": list(metrics)}
        return c

    runner.run_experiment(cfg(d / "multi.pt", outputs=H, output_weights=list(weights)),
                          d / "multi")
    out = []
    for h in range(H):
        torch.jit.save(torch.jit.script(Column(net, h)), str(d / f"column_{h}.pt"))
        out.append(d / f"single_{h}")
        runner.run_experiment(cfg(d / f"column_{h}.pt"), out[-1])
    return d / "multi", out
