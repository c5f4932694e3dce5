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


def test_paper_cost_cern_whole_tiny_sizes_are_valid():
    """``--config cern --whole --tiny`` (about 30 s, not run here) uses keys the config accepts,
    and they shrink the run."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import paper_cost
    finally:
        sys.path.remove(str(ROOT / "bench"))
    import insdel

    cfg = insdel.config.load("paper_cern", overrides=paper_cost.CERN_TINY)
    assert cfg["targets"]["n"] == 12 and cfg["decomposition"]["n_pairs"] == 4
    assert cfg["data"]["options"]["n_events"] == 3000
