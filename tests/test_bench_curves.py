"""The curves benchmark runs on tiny sizes so it never rots (timings are not asserted)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_curves_tiny():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "curves.py"), "--tiny"],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    for needle in ("(a)/(c)", "(b)/(a)", "(p)/(a)", "(b)/(c) ceiling", "bookkeeping share"):
        assert needle in out, needle
