"""bench/paper_cost.py runs on tiny sizes so it never rots (no timing is asserted)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_paper_cost_tiny():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "paper_cost.py"), "--tiny"],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    assert "full paper-bangalore reproduce" in out and "| **total (wall)** |" in out
    assert "| **total** |" in out and "exact decomposition + exact Shapley" in out
    assert "model-arithmetic bound" in out
