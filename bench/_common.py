"""Shared helpers for the benchmark scripts in ``bench/``.

* the paper-shaped MLPs (Appendix A.2, Tables 6 and 7): Linear + PReLU + Dropout per hidden layer,
  eval mode, float32, random weights (timings do not depend on trained weights);
* cheap models for the sizes where per-call overhead, not arithmetic, is what is measured;
* timing helpers (median over repeats after a warm-up call) and a machine description.

Importable both as ``bench._common`` (from the test suite) and as ``_common`` (when a script is run
as ``python bench/<script>.py``, which puts ``bench/`` on ``sys.path``).
"""

from __future__ import annotations

import datetime
import os
import platform
import random
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

#: Table 7 (CERN electron collisions, 16 inputs): hidden sizes and dropout ratio.
CERN_HIDDEN = (509, 421, 65, 368, 122, 477)
CERN_DROPOUT = 0.11604
#: Table 6 (Bangalore housing, 38 inputs): hidden sizes and dropout ratio.
BANGALORE_HIDDEN = (333, 465, 86, 234)
BANGALORE_DROPOUT = 0.10031
#: A small MLP whose forward pass is cheap enough that per-call overhead shows.
CHEAP_HIDDEN = (32,)


def mlp(n: int, hidden: Sequence[int], dropout: float = 0.0, seed: int = 0):
    """A float32 MLP ``n -> hidden... -> 1``, each hidden layer Linear + PReLU + Dropout, eval mode.

    Parameters
    ----------
    n : int
        Number of inputs.
    hidden : sequence of int
        Hidden layer widths.
    dropout : float
        Dropout ratio (inactive in eval mode; kept so the module matches the paper's).
    seed : int
        Seed of the random weights.

    Returns
    -------
    torch.nn.Sequential
    """
    import torch

    torch.manual_seed(seed)
    layers: list[torch.nn.Module] = []
    d = n
    for h in hidden:
        layers += [torch.nn.Linear(d, h), torch.nn.PReLU(), torch.nn.Dropout(dropout)]
        d = h
    layers.append(torch.nn.Linear(d, 1))
    return torch.nn.Sequential(*layers).eval()


def cern_mlp(n: int = 16, seed: int = 0):
    """The CERN-shaped MLP (paper Table 7): 16 inputs, hidden 509-421-65-368-122-477."""
    return mlp(n, CERN_HIDDEN, CERN_DROPOUT, seed)


def bangalore_mlp(n: int = 38, seed: int = 0):
    """The Bangalore-shaped MLP (paper Table 6): 38 inputs, hidden 333-465-86-234."""
    return mlp(n, BANGALORE_HIDDEN, BANGALORE_DROPOUT, seed)


def model_by_name(name: str, n: int | None = None, seed: int = 0):
    """``"cern"``, ``"bangalore"``, ``"cheap"`` (n -> 32 -> 1) or ``"tiny"`` (n -> 8 -> 1)."""
    if name == "cern":
        return cern_mlp(16 if n is None else n, seed)
    if name == "bangalore":
        return bangalore_mlp(38 if n is None else n, seed)
    if name == "cheap":
        return mlp(16 if n is None else n, CHEAP_HIDDEN, 0.0, seed)
    if name == "tiny":
        return mlp(16 if n is None else n, (8,), 0.0, seed)
    raise ValueError(f"model must be one of 'cern', 'bangalore', 'cheap', 'tiny'; got {name!r}.")


def model_features(name: str) -> int:
    """The paper's number of inputs for a named model (16 for CERN, 38 for Bangalore)."""
    return 38 if name == "bangalore" else 16


class LinearTanh:
    """A NumPy model ``f(x) = tanh(x @ w + b) + 0.1 x @ v``: cheap, smooth and non-additive.

    Used for the large scaling sizes, where a torch MLP would make every row cost the same and hide
    where the engine's own time goes. The products use ``np.einsum`` (no BLAS): multithreaded
    OpenBLAS leaves worker threads spinning after each call, and on a small machine they slow the
    next parallel numba kernel several-fold, which would measure that contention, not insdel.
    """

    def __init__(self, n: int, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.w = rng.normal(size=n) / np.sqrt(n)
        self.v = rng.normal(size=n) / np.sqrt(n)
        self.b = 0.1
        self.__name__ = f"LinearTanh(n={n})"

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return np.tanh(np.einsum("ij,j->i", X, self.w) + self.b) + 0.1 * np.einsum("ij,j->i", X, self.v)


def pairs(B: int, n: int, seed: int = 0, all_differ: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """B targets and references (float64); with ``all_differ`` every feature of every pair differs
    (the CERN counterfactual policy's situation, ``min_diff = n``)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(B, n))
    R = X + rng.normal(size=(B, n))
    if not all_differ:
        same = rng.random((B, n)) < 0.25
        R[same] = X[same]
    return X, R


def method_orderings(B: int, n: int, n_methods: int = 7, n_random: int = 20, noise: float = 0.5,
                     seed: int = 0) -> np.ndarray:
    """Orderings shaped like the paper's experiment: ``n_methods`` attribution methods that largely
    agree (a shared signal plus independent noise of relative size ``noise``) and ``n_random``
    uniformly random orderings, per pair. Returns int64 (B, n_methods + n_random, n)."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(B, 1, n))
    A = base + noise * rng.normal(size=(B, n_methods, n))
    o_methods = np.argsort(-A, axis=-1, kind="stable")
    o_random = np.argsort(rng.random((B, n_random, n)), axis=-1)
    return np.concatenate([o_methods, o_random], axis=1).astype(np.int64)


def orderings_grid(models: Sequence[str], orderings: Sequence[int], n_pairs: int,
                   n_pairs_many: int, *, all_pairs: Sequence[str] = ()) -> list[tuple[str, int, int]]:
    """The ``(model, K, B)`` configurations of a curves benchmark, every model with every K.

    K is 1 (one ordering per pair) or at least 8 (:func:`method_orderings`' 7 methods + random);
    B is ``n_pairs`` for K = 1 or a model named in ``all_pairs``, else ``n_pairs_many``.
    """
    grid = []
    for name in models:
        for K in orderings:
            if K < 1 or (K > 1 and K < 8):
                raise SystemExit(f"--orderings: K must be 1 or >= 8 (7 methods + random); got {K}.")
            grid.append((name, K, n_pairs if (K == 1 or name in all_pairs) else n_pairs_many))
    return grid


def time_call(fn: Callable[[], Any], repeats: int, warmup: int = 1) -> tuple[float, Any]:
    """Median wall time of ``fn()`` over ``repeats`` calls after ``warmup`` untimed calls.

    Returns ``(median_seconds, last_result)``.
    """
    out = None
    for _ in range(warmup):
        out = fn()
    ts = []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def interleaved_samples(fns: dict[str, Callable[[], Any]], repeats: int,
                        seed: int = 0) -> dict[str, list]:
    """Wall times of each ``fns[name]()`` over ``repeats`` rounds, the calls interleaved (round r
    times every function once, in an order drawn anew each round from ``seed``), so that drifts
    in machine load hit all of them alike and no function always runs right after the same other
    one (measured on the cheap model: the call before can move a timing by 5-10 %, through the
    caches and the thread pools it leaves behind). No warm-up: call each once before."""
    ts: dict[str, list[float]] = {k: [] for k in fns}
    rng = random.Random(seed)
    names = list(fns)
    for _ in range(max(1, repeats)):
        rng.shuffle(names)
        for k in names:
            t0 = time.perf_counter()
            fns[k]()
            ts[k].append(time.perf_counter() - t0)
    return ts


def time_interleaved(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Median wall time of each function of :func:`interleaved_samples`."""
    return {k: statistics.median(v) for k, v in interleaved_samples(fns, repeats).items()}


def ratio_of_rounds(samples: dict[str, list], num: str, den: str) -> float:
    """Median over rounds of ``samples[num][r] / samples[den][r]``: the ratio of two interleaved
    timings that a drift in machine speed between rounds does not move."""
    return statistics.median(a / b for a, b in zip(samples[num], samples[den], strict=True))


def cpu_model() -> str:
    """The CPU model name (``/proc/cpuinfo`` on Linux, else ``platform.processor()``)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> str:
    """The 1/5/15-minute load averages, or ``"n/a"``."""
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except (OSError, AttributeError):
        return "n/a"


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


def git_revision(root: str | None = None) -> str:
    """The short git revision of the working tree (with ``+dirty`` when it has changes)."""
    try:
        cwd = root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=cwd, capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return (rev or "unknown") + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine_info() -> dict[str, str]:
    """CPU model, cores, torch threads, library versions, load average and date."""
    info = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": cpu_model(),
        "logical cores": str(os.cpu_count()),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    try:
        import torch

        info["torch"] = f"{torch.__version__} ({torch.get_num_threads()} threads)"
    except ImportError:  # pragma: no cover
        info["torch"] = "not installed"
    for mod in ("numpy", "numba", "insdel", "captum", "shap", "quantus"):
        info[mod] = _version(mod)
    try:
        import numba

        info["numba threads"] = str(numba.config.NUMBA_NUM_THREADS)
    except ImportError:  # pragma: no cover
        pass
    info["load average (1/5/15 min)"] = load_average()
    info["git"] = git_revision()
    return info


def print_header(title: str, note: str) -> None:
    """A results table's header: ``## title``, the machine line and ``# note``."""
    print(f"## {title}")
    print(machine_line())
    print(f"# {note}")


def machine_line() -> str:
    """One-line machine summary for a script's table header."""
    m = machine_info()
    return (f"# {m['cpu']}, {m['logical cores']} logical cores, torch {m['torch']}, "
            f"numba threads {m.get('numba threads', '?')}, load {m['load average (1/5/15 min)']}")


def fmt_s(t: float) -> str:
    """Seconds with 3 significant figures."""
    if t >= 100:
        return f"{t:.0f}"
    if t >= 10:
        return f"{t:.1f}"
    if t >= 1:
        return f"{t:.2f}"
    return f"{t:.3g}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]],
                   align: Sequence[str] | None = None) -> str:
    """A GitHub Markdown table (``align`` entries ``"l"`` or ``"r"``; numbers right by default)."""
    if align is None:
        align = ["l"] + ["r"] * (len(header) - 1)
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(str(h) for h in header) + " |", "| " + " | ".join(sep) + " |"]
    for r in rows:
        lines.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(lines)


def fmt(v: Any) -> str:
    """A table cell: 3 significant digits for floats (scientific below 1e-3), str otherwise."""
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.1e}"
    return str(v)
