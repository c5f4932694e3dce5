"""The tree-game benchmark runs on tiny sizes so it never rots (timings are not asserted)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_tree_game_tiny():
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "tree_game.py"), "--tiny"],
                         capture_output=True, text=True, timeout=300, check=True, cwd=ROOT).stdout
    for needle in ("patterns", "closed form", "forward", "ratio closed form / forward"):
        assert needle in out, needle
