"""Are the shipped experiments' outputs byte-identical between two source trees?

A refactor that moves code must not move results. This script runs the shipped experiments (the
``--quick`` versions by default, ``insdel demo`` included) once with each tree's ``insdel`` on the
Python path, in separate processes with the same environment, and compares every file the runs
wrote, byte for byte, by SHA-256.

Run records that carry wall times, thread counts or paths (``manifest.json``, the runner's
progress logs) differ between any two runs and are compared with those fields removed. A torch file
(``model.pt``) holds the random ``serialization_id`` that ``torch.save`` writes into every archive,
and insdel's model file its training's wall time: it is compared by its tensors and the rest of
its metadata. A manifest or a torch file that only gains keys (a new version records more about a
run) counts as agreeing, and the keys it gains are printed. Every other file must be identical. Exit status 0
when every file agrees.

Usage::

    python bench/outputs_identity.py --old /path/to/old/checkout --new .
    python bench/outputs_identity.py --old ../main --new . --experiments demo paper-cern

Each tree is a checkout's root (the folder holding ``insdel/``). The runs go to a temporary
folder (``--keep DIR`` keeps them).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUICK = ["demo", "paper-cern", "paper-bangalore", "paper-bangalore-location", "paper-images",
         "metrics-cern", "metrics-housing", "paper-roar-bangalore"]
# fields of manifest.json that describe the run, not its results
VOLATILE = {"seconds", "wall_seconds", "started", "finished", "time", "timings", "python",
            "platform", "threads", "driver_threads", "host", "hostname", "pid", "out", "path",
            "folder", "versions", "elapsed", "duration", "cpu", "user", "created", "stale",
            "files", "insdel_file", "command", "argv", "cwd"}
# top-level fields of manifest.json that name where the run's configuration was read from (a
# shipped configuration's path inside the package), not what it computed
SOURCE = {"source"}


def _command(experiment: str, out: Path) -> list[str]:
    if experiment == "demo":
        return [sys.executable, "-m", "insdel", "demo", "--out", str(out), "--no-progress"]
    return [sys.executable, "-m", "insdel", "reproduce", experiment, "--quick", "--out", str(out),
            "--no-progress"]


def _run(tree: Path, experiment: str, out: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree), "MPLBACKEND": "Agg", "INSDEL_PROGRESS": "0"}
    t0 = time.perf_counter()
    done = subprocess.run(_command(experiment, out), env=env, capture_output=True, text=True,
                          cwd=out.parent)
    if done.returncode != 0:
        raise SystemExit(f"{experiment} failed with the tree {tree} (exit {done.returncode}):\n"
                         f"{done.stderr[-3000:]}")
    return time.perf_counter() - t0


def _strip(obj, top: bool = True):
    """A manifest without the fields that describe the run rather than its results."""
    if isinstance(obj, dict):
        return {k: _strip(v, False) for k, v in obj.items()
                if k not in VOLATILE and not (top and k in SOURCE) and "seconds" not in k
                and not k.endswith(("_time", "sha256"))}
    if isinstance(obj, list):
        return [_strip(v, False) for v in obj]
    return obj


def _canonical(obj):
    """A torch file's content with tensors as digests and JSON metadata without run fields."""
    if isinstance(obj, dict):
        return {k: _canonical(v) for k, v in sorted(obj.items())}
    if isinstance(obj, list | tuple):
        return [_canonical(v) for v in obj]
    if hasattr(obj, "detach"):
        a = obj.detach().cpu().contiguous().numpy()
        return f"{a.dtype}{a.shape}:{hashlib.sha256(a.tobytes()).hexdigest()}"
    if isinstance(obj, str) and obj.startswith("{"):
        try:
            return _strip(json.loads(obj))
        except ValueError:
            return obj
    return obj


def _digest(path: Path) -> str:
    if path.suffix == ".pt":
        # torch.save writes a random serialization_id into every archive, and insdel's model file
        # carries its training's wall time: compare the tensors and the rest of the metadata
        import torch

        obj = torch.load(path, map_location="cpu", weights_only=True)
        return "torch:" + hashlib.sha256(repr(_canonical(obj)).encode()).hexdigest()
    if path.name == "manifest.json":
        text = json.dumps(_strip(json.loads(path.read_text())), sort_keys=True)
        return "manifest:" + hashlib.sha256(text.encode()).hexdigest()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _paths(obj, prefix: str = "") -> dict[str, str]:
    """Dotted key -> JSON of every leaf of a (stripped) manifest."""
    if isinstance(obj, dict):
        out: dict[str, str] = {}
        for k, v in obj.items():
            out.update(_paths(v, f"{prefix}{k}."))
        return out or {prefix.rstrip("."): "{}"}
    return {prefix.rstrip("."): json.dumps(obj, sort_keys=True)}


def manifest_changes(old: Path, new: Path) -> tuple[list[str], list[str], list[str]]:
    """Keys of two manifests (their run fields stripped) only in the new one, only in the old one,
    and with different values."""
    a = _paths(_strip(json.loads(old.read_text())))
    b = _paths(_strip(json.loads(new.read_text())))
    return (sorted(set(b) - set(a)), sorted(set(a) - set(b)),
            sorted(k for k in set(a) & set(b) if a[k] != b[k]))


def torch_changes(old: Path, new: Path) -> tuple[list[str], list[str], list[str]]:
    """Keys of two torch files' content (tensors as digests, metadata without run fields) only in
    the new one, only in the old one, and with different values (a tensor's key when its values
    differ)."""
    import torch

    def flat(path: Path) -> dict[str, str]:
        return _paths(_canonical(torch.load(path, map_location="cpu", weights_only=True)))

    a, b = flat(old), flat(new)
    return (sorted(set(b) - set(a)), sorted(set(a) - set(b)),
            sorted(k for k in set(a) & set(b) if a[k] != b[k]))


def _files(root: Path) -> dict[str, str]:
    skip = {".lock", "KEY"}
    return {str(p.relative_to(root)): _digest(p) for p in sorted(root.rglob("*"))
            if p.is_file() and p.name not in skip and not p.name.endswith((".lock", ".log"))
            and "checkpoints" not in p.relative_to(root).parts}


def compare(old: Path, new: Path, experiments: list[str], work: Path) -> int:
    bad = 0
    for exp in experiments:
        outs = {}
        for side, tree in (("old", old), ("new", new)):
            out = work / side / exp
            out.parent.mkdir(parents=True, exist_ok=True)
            secs = _run(tree, exp, out)
            outs[side] = _files(out)
            print(f"{exp:26s} {side}: {len(outs[side]):3d} files in {secs:6.1f} s", flush=True)
        a, b = outs["old"], outs["new"]
        only = sorted(set(a) ^ set(b))
        differ = sorted(k for k in set(a) & set(b) if a[k] != b[k])
        for k in only:
            print(f"  only in {'old' if k in a else 'new'}: {k}")
        added_only = []
        for k in differ:
            if Path(k).name == "manifest.json" or Path(k).suffix == ".pt":
                changes = manifest_changes if Path(k).suffix == ".json" else torch_changes
                added, removed, changed = changes(work / "old" / exp / k, work / "new" / exp / k)
                if not removed and not changed:  # the new version records more, nothing else
                    added_only.append(k)
                    what = "record" if Path(k).suffix == ".json" else "tensors and metadata"
                    print(f"  {k}: the same {what} plus {len(added)} new key(s): "
                          f"{', '.join(added[:8])}{' ...' if len(added) > 8 else ''}")
                    continue
                print(f"  differs: {k} (removed {removed[:5]}, changed {changed[:5]})")
            else:
                print(f"  differs: {k}")
        differ = [k for k in differ if k not in added_only]
        ok = not only and not differ
        bad += not ok
        print(f"{exp:26s} {'identical' if ok else 'DIFFERENT'} ({len(set(a) & set(b))} files "
              "compared)", flush=True)
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--old", type=Path, required=True, help="the reference checkout's root")
    p.add_argument("--new", type=Path, default=Path("."), help="the checkout under test")
    p.add_argument("--experiments", nargs="+", default=QUICK,
                   help=f"which to run (default: {' '.join(QUICK)})")
    p.add_argument("--keep", type=Path, help="write the runs here and keep them")
    a = p.parse_args(argv)
    for tree in (a.old, a.new):
        if not (tree / "insdel" / "__init__.py").is_file():
            p.error(f"{tree} is not a checkout's root (no insdel/__init__.py)")
    unknown = [e for e in a.experiments if e not in QUICK and e != "paper-roar-cern"]
    if unknown:
        p.error(f"unknown experiment(s) {unknown}; choose from {QUICK + ['paper-roar-cern']}")
    old, new = a.old.resolve(), a.new.resolve()
    if a.keep:
        a.keep.mkdir(parents=True, exist_ok=True)
        return compare(old, new, a.experiments, a.keep.resolve())
    with tempfile.TemporaryDirectory(prefix="insdel-identity-") as tmp:
        return compare(old, new, a.experiments, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
