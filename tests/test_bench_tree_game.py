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


def test_bench_trees_scale_tiny(tmp_path):
    bench = str(ROOT / "bench" / "trees_scale.py")
    saved = tmp_path / "model.json"
    out = subprocess.run([sys.executable, bench, "--tiny", "--save-model", str(saved)],
                         capture_output=True, text=True, timeout=300, check=True, cwd=ROOT).stdout
    for needle in ("tree engine total", "XGBoost predict", "shap TreeExplainer",
                   "projection to 100,000 pairs", "agreement with shap.TreeExplainer",
                   "floor: count-only walk", "floor: XGBoost on X, R", "model fitted"):
        assert needle in out, needle
    # the saved model, loaded instead of fitted: the same game
    again = subprocess.run([sys.executable, bench, "--tiny", "--model", str(saved)],
                           capture_output=True, text=True, timeout=300, check=True,
                           cwd=ROOT).stdout
    assert f"model loaded from {saved}" in again
    leaves = [line.split("patterns, ")[1] for line in (out, again)]
    assert leaves[0].split("\n")[0] == leaves[1].split("\n")[0]
