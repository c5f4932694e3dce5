"""The tree interactions benchmark runs on tiny sizes so it never rots (timings not asserted)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_interactions_trees_tiny():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "interactions_trees.py"),
                          "--tiny"], capture_output=True, text=True, timeout=300, check=True,
                         cwd=ROOT).stdout
    for needle in ("n = 30", "n = 200", "k-SII", "STII", "efficiency err", "no exact answer", "ExactComputer vs"):
        assert needle in out, needle
