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


def test_bench_curves_in_fresh_processes():
    """--processes N: every process's ratios, then the main tables for the median process."""
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "curves.py"), "--tiny",
                          "--processes", "3"],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    assert "in 3 fresh processes" in out and "(a)/(c) per process" in out
    per_process = [line for line in out.splitlines() if line.startswith("| tiny | 1 | 20 |")]
    assert len(per_process[0].split("|")[4].split()) == 3  # three processes' (a)/(c)
    assert "the process with the median (a)/(c) of 3" in out and "bookkeeping share" in out


def test_bench_curves_identity_tiny():
    """bench/curves_identity.py compares two trees' curves byte for byte; a tree against itself
    is identical."""
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "curves_identity.py"), str(ROOT),
                        str(ROOT), "--tiny"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "arrays compared, 0 differ: identical" in p.stdout
