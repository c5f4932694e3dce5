"""The cost of the robustness report (issue 36): ``paper-bangalore`` with three removals (baseline,
marginal, conditional Gaussian) against the same run with the baseline alone, each in a fresh
output folder, one after the other, in this process's machine state. Target: <= 3x.

Usage: ``python bench/removal_runs.py [--quick] [--config paper-bangalore]``
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import insdel
from insdel import config as C


def run(name: str, quick: bool, out: Path) -> float:
    cfg = C.load(C.PAPER_CONFIGS[name], quick=quick)
    t0 = time.perf_counter()
    insdel.run_experiment(cfg, out, progress=False, verbose=False)
    return time.perf_counter() - t0


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--config", default="paper-bangalore",
                   choices=["paper-bangalore", "paper-cern"])
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        single = run(a.config, a.quick, Path(tmp) / "single")
        triple = run(f"{a.config}-removals", a.quick, Path(tmp) / "triple")
    kinds = C.load(C.PAPER_CONFIGS[f"{a.config}-removals"])["removal"]["kinds"]
    print(f"{a.config}{' --quick' if a.quick else ''}: baseline alone {single:.1f} s; "
          f"{', '.join(kinds)}: {triple:.1f} s; ratio {triple / single:.2f} (target <= 3)")


if __name__ == "__main__":
    sys.exit(main())
