"""bench/interaction_orders.py runs on tiny sizes so it never rots (no number is asserted beyond the
§3.4 counterexample's)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_interaction_orders_bench_tiny():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "INSDEL_PROGRESS": "0"}
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "interaction_orders.py"), "--tiny",
                          "--experiments", "counterexample", "synthetic"], capture_output=True,
                         text=True, timeout=600, check=True, env=env).stdout
    assert "| §3.4 counterexample (A = -1.5) | insertion | greedy (k=2) | 0.83333 | 1.000 | 1.000 | 1/1 |" in out
    assert "| §3.4 counterexample (A = -1.5) | insertion | shapley | 0.66667 | 0.000 |" in out
    assert "synthetic (planted products) | deletion | best |" in out
    assert "planted pairs" in out
