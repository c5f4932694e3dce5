"""Written outputs: readable permissions, no stray temporary files, checkpoints keyed by content."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys

import numpy as np
import pytest

from insdel import _checkpoint as ck


def _readable(path) -> bool:
    mode = stat.S_IMODE(os.stat(path).st_mode)
    return mode & 0o044 == 0o044


def test_outputs_are_group_and_world_readable_under_umask_022(tmp_path, umask022):
    ck.atomic_write_text(tmp_path / "manifest.json", "{}")
    ck.save_npz(tmp_path / "curves.npz", {"a": np.arange(3)})
    ck.save_npy(tmp_path / "a.npy", np.arange(3))
    with ck.atomic_write(tmp_path / "fig.png", suffix=".png") as tmp:
        tmp.write_bytes(b"png")
    store = ck.ChunkStore(tmp_path / "chunks", "k1")
    store.run(2, lambda i: np.full(2, float(i)))
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 7, files
    for p in files:
        assert _readable(p), (p, oct(os.stat(p).st_mode))
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o644


def test_umask_is_respected_not_widened(tmp_path):
    old = os.umask(0o077)
    try:
        ck.atomic_write_text(tmp_path / "private.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "private.txt").st_mode) == 0o600


def test_stray_temporary_file_of_a_killed_writer_is_swept(tmp_path):
    target = tmp_path / "fig.png"
    # a writer killed by SIGKILL leaves its temporary file; its pid is gone
    dead = 2**22 + 12345
    while True:
        try:
            os.kill(dead, 0)
            dead += 1
        except ProcessLookupError:
            break
    stray = tmp_path / f".fig.png{ck._TMP_TAG}{dead}-abcd.png"
    stray.write_bytes(b"half")
    other = tmp_path / f".other.png{ck._TMP_TAG}{dead}-abcd.png"  # another target: left alone
    other.write_bytes(b"half")
    with ck.atomic_write(target, suffix=".png") as tmp:
        tmp.write_bytes(b"png")
    assert target.read_bytes() == b"png"
    assert not stray.exists()
    assert other.exists()


_KILLED_WRITER = """
import importlib.util, os, signal, sys
spec = importlib.util.spec_from_file_location("ck", sys.argv[1])
ck = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ck)
with ck.atomic_write(sys.argv[2], suffix=".png") as tmp:
    tmp.write_bytes(b"half a figure")
    print(tmp.name, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_writer_killed_by_sigkill_leaves_a_file_the_next_write_sweeps(tmp_path, umask022):
    target = tmp_path / "figures" / "fig.png"
    p = subprocess.run([sys.executable, "-c", _KILLED_WRITER, ck.__file__, str(target)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == -signal.SIGKILL, p.stderr
    stray = target.parent / p.stdout.strip()
    assert stray.exists() and not target.exists()  # what a SIGKILL leaves behind
    with ck.atomic_write(target, suffix=".png") as tmp:
        tmp.write_bytes(b"png")
    assert [q.name for q in target.parent.iterdir()] == ["fig.png"]
    assert target.read_bytes() == b"png" and _readable(target)


def test_stray_of_a_reused_pid_is_swept_but_a_live_writers_file_is_kept(tmp_path):
    """A killed run's pid can come back (containers restart at small pids): a temporary file older
    than the process now holding its pid is stale; one written since may be a live writer's."""
    target = tmp_path / "chunk_0000.k.npy"
    mine = f".{target.name}{ck._TMP_TAG}{os.getpid()}"
    old = tmp_path / f"{mine}-old1.tmp"
    old.write_bytes(b"half")
    os.utime(old, (1e9, 1e9))  # 2001: before this process started, so not this process's file
    live = tmp_path / f"{mine}-live.tmp"  # written now by this process (another thread, say)
    live.write_bytes(b"half")
    ck.save_npy(target, np.arange(3))
    assert not old.exists()
    assert live.exists()
    np.testing.assert_array_equal(np.load(target), np.arange(3))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, live.name])


def test_temporary_files_are_named_after_their_target(tmp_path):
    seen = []
    with ck.atomic_write(tmp_path / "fig.png", suffix=".png") as tmp:
        seen.append(tmp.name)
        assert tmp.parent == tmp_path
    assert seen[0].startswith(f".fig.png{ck._TMP_TAG}{os.getpid()}-") and seen[0].endswith(".png")


def test_failed_write_leaves_no_temporary_file(tmp_path):
    with pytest.raises(RuntimeError):
        with ck.atomic_write(tmp_path / "x.txt") as tmp:
            tmp.write_text("half")
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_chunks_of_another_key_are_never_loaded(tmp_path):
    """Two runs that share a folder at the same time never read each other's chunks."""
    a = ck.ChunkStore(tmp_path / "s", "seed0")
    a.save(0, np.zeros(3))
    b = ck.ChunkStore(tmp_path / "s", "seed1")
    assert not b.done(0)
    b.save(0, np.ones(3))
    np.testing.assert_array_equal(b.load(0), np.ones(3))
    a2 = ck.ChunkStore(tmp_path / "s", "seed0")   # resumes: its own chunk or none, never b's
    assert not a2.done(0)
    a2.save(0, np.zeros(3))
    np.testing.assert_array_equal(a2.load(0), np.zeros(3))
    with pytest.raises(ValueError, match="key"):
        ck.ChunkStore(tmp_path / "s", "../evil")


TINY_RUN = {
    "name": "perm", "seed": 1,
    "data": {"recipe": "dielectron_sim", "options": {"n_events": 300}},
    "model": {"preset": "quick_cern", "max_epochs": 1},
    "targets": {"n": 6},
    "policies": [{"spec": "average"}],
    "methods": {"names": ["integrated_gradients", "input_x_gradient"],
                "options": {"integrated_gradients": {"n_steps": 8}}},
    "evaluation": {"n_random": 2, "targets_per_chunk": 3},
    "decomposition": {"n_pairs": 1, "pairs_per_chunk": 1},
    "figures": {"dpi": 30},
}


def test_every_file_of_a_run_is_readable_and_no_temporary_file_is_left(tmp_path, umask022):
    """A whole (tiny) experiment: results, figures, checkpoints and manifest, all 0644."""
    from insdel import runner

    out = tmp_path / "run"
    runner.run_experiment(TINY_RUN, out, progress=False)
    files = [q for q in out.rglob("*") if q.is_file()]
    suffixes = {q.suffix for q in files}
    assert {".png", ".json", ".csv", ".npy"} <= suffixes, suffixes  # figures, manifest, tables, chunks
    bad = {str(q.relative_to(out)): oct(stat.S_IMODE(q.stat().st_mode)) for q in files
           if not _readable(q)}
    assert not bad, bad
    assert not [q for q in out.rglob("*") if ck._TMP_TAG in q.name]

