"""Provenance of a run folder: its lock, its manifest, and the fingerprints the checkpoints use.

Every command that writes an output folder (``insdel run``, ``roar``, ``road``, ``sanity``,
``insdel reproduce paper-images``) holds the folder's lock (:func:`lock_folder`), which refuses a
folder holding another kind of run (:func:`folder_kind`), first removes an earlier run's
manifest (:func:`unfinish`) and writes its own manifest last (:func:`write_manifest`), listing only
the files it wrote (:func:`snapshot` before, :func:`run_files` after) with their SHA-256.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from collections.abc import Mapping
from pathlib import Path

from .. import _checkpoint as ck
from .._checkpoint import is_plain_folder_name, to_jsonable

__all__ = ["OutputFolderBusy", "OutputFolderOfAnotherKind", "KINDS", "folder_kind", "lock_folder",
           "unfinish", "default_out", "snapshot", "run_files",
           "versions", "model_hash", "Stages", "manifest_head", "file_hashes",
           "write_manifest", "run_manifest", "pairs_key", "kinds"]


class OutputFolderBusy(RuntimeError):
    """Another insdel run holds the output folder's lock."""


class OutputFolderOfAnotherKind(ValueError):
    """The output folder holds another kind of run (``insdel run`` output given to ``insdel road``,
    ...): writing there would replace that run's ``summary.md`` and ``manifest.json``."""


def kinds() -> dict[str, str]:
    """The kinds of run folder and the command that writes each: every registered command
    (:mod:`insdel.config.commands`) and ``paper-images``."""
    from ..config import commands

    return {**{c: f"insdel {c}" for c in commands.available()},
            "paper-images": "insdel reproduce paper-images"}


#: The kinds of run folder of the built-in commands (:func:`kinds` holds the registered ones too).
KINDS = kinds()

#: The hidden file naming the kind of run a folder holds, written when the folder is locked: it
#: outlives :func:`unfinish`, so a run stopped half-way still marks its folder.
KIND_FILE = ".insdel.kind"


def _manifest_kind(manifest: Mapping) -> str | None:
    """The kind of run a manifest describes (its ``kind``, else the command's own entry)."""
    known = kinds()
    if manifest.get("kind") in known:
        return str(manifest["kind"])
    if manifest.get("experiment") == "paper-images":
        return "paper-images"
    for kind in (k for k in known if k not in ("run", "paper-images")):
        if kind in manifest and not manifest.get("policies"):
            return kind
    return "run" if "policies" in manifest else None


def folder_kind(out: str | os.PathLike) -> str | None:
    """The kind of run an output folder holds (a key of :data:`KINDS`): from its
    ``manifest.json`` when finished, else from the mark a started run left (:data:`KIND_FILE`);
    None for a folder no insdel run has written."""
    out = Path(out)
    try:
        manifest = json.loads((out / "manifest.json").read_text())
    except (OSError, ValueError):
        manifest = None
    if isinstance(manifest, dict):
        kind = _manifest_kind(manifest)
        if kind is not None:
            return kind
    try:
        kind = (out / KIND_FILE).read_text().strip()
    except OSError:
        return None
    return kind if kind in kinds() else None


def _claim(out: Path, kind: str) -> None:
    """Refuse a folder holding another kind of run; mark it as ``kind``'s."""
    known = kinds()
    if kind not in known:
        raise ValueError(f"kind must be one of {sorted(known)}; got {kind!r}.")
    held = folder_kind(out)
    if held is not None and held != kind:
        raise OutputFolderOfAnotherKind(
            f"output folder {out} holds an `{known[held]}` run ({held}); `{known[kind]}` writes "
            f"a {kind} run and would replace its summary.md and manifest.json: choose another "
            "--out (or out = PATH), or remove the folder.")
    if held is None:
        ck.atomic_write_text(out / KIND_FILE, kind + "\n")


def lock_folder(out: str | os.PathLike, wait: bool = False, *, kind: str | None = None):
    """Take the exclusive lock of an output folder (``OUT/.insdel.lock``, a ``filelock.FileLock``).

    Every command that writes an output folder holds it for the whole run, so that two runs never
    mix their files in one folder; with ``kind``, a folder holding another kind of run is refused
    before anything in it changes.

    Parameters
    ----------
    out : path
        The output folder; it must exist.
    wait : bool
        If another run holds the lock, wait for it to be released instead of refusing.
    kind : str, optional
        The kind of run about to write (a key of :data:`KINDS`: ``"run"``, ``"roar"``,
        ``"road"``, ``"sanity"``, ``"paper-images"``); the folder is then marked as that kind's.

    Returns
    -------
    filelock.FileLock
        The acquired lock; call its ``release()`` when the run is over.

    Raises
    ------
    OutputFolderBusy
        Another insdel run holds the lock and ``wait`` is False.
    OutputFolderOfAnotherKind
        The folder holds another kind of run (:func:`folder_kind`); the message names both.
    """
    from filelock import FileLock, Timeout

    out = Path(out)
    lock = FileLock(str(out / ".insdel.lock"))
    try:
        lock.acquire(timeout=-1 if wait else 0)
    except Timeout:
        raise OutputFolderBusy(
            f"output folder {out} is in use by another insdel run (lock {out / '.insdel.lock'}); "
            "wait for it to finish, or choose another --out.") from None
    if kind is not None:
        try:
            _claim(out, kind)
        except BaseException:
            lock.release()
            raise
    return lock


def unfinish(out: str | os.PathLike) -> None:
    """Mark an output folder as not finished: remove its ``manifest.json`` before a run rewrites it.

    A run stopped half-way must not leave an earlier run's manifest (what
    :func:`insdel.runner.load_results` and the leaderboard read as "finished, with this
    configuration") above files it has already replaced; the run writes its own manifest last.
    Call it while holding :func:`lock_folder`.

    Parameters
    ----------
    out : path
        The output folder (a missing ``manifest.json`` is not an error).
    """
    (Path(out) / "manifest.json").unlink(missing_ok=True)


def default_out(name: str) -> Path:
    """``runs/NAME``, the output folder when neither ``out=`` nor the configuration's ``out`` is
    given: ``name`` must then be a plain folder name (``"../x"`` would write outside ``runs/``)."""
    if not is_plain_folder_name(name):
        raise ValueError(f"name = {name!r} names the run's folder under runs/ (neither out= nor "
                         "the configuration's out is given): it must be a plain folder name (no "
                         "'/', '\\', not '.' or '..'); or give out = PATH.")
    return Path("runs") / name


# --------------------------------------------------------------------------------------------------
# the files a manifest lists
# --------------------------------------------------------------------------------------------------
def _listable(out: Path) -> list[Path]:
    """The files of ``out`` a manifest may list: not under ``checkpoints/``, not the manifest, not
    hidden (the lock, temporary files)."""
    return sorted(p for p in out.rglob("*") if p.is_file()
                  and "checkpoints" not in p.relative_to(out).parts
                  and p.name != "manifest.json" and not p.name.startswith("."))


def _stamp(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


def snapshot(out: Path) -> dict[Path, tuple[int, int, int]]:
    """(inode, mtime, size) of every listable file before a run writes: every file a run writes
    is moved into place (a new inode), so one with the same stamp afterwards was not written."""
    return {p.relative_to(out): _stamp(p) for p in _listable(out)}


def run_files(out: Path, before: Mapping[Path, tuple], used: tuple[str, ...] = ()
              ) -> list[Path]:
    """The files of this run, for the manifest: those written since ``before``
    (:func:`snapshot`), plus ``used`` (names relative to ``out``: the cached model the run
    loaded). Anything else (an earlier run's policy folders, figures or tables) is left in place,
    kept out of the manifest, and named in one line on stderr."""
    mine, stale = [], []
    for p in _listable(out):
        rel = p.relative_to(out)
        if before.get(rel) != _stamp(p) or rel.as_posix() in used:
            mine.append(p)
        else:
            stale.append(rel)
    if stale:
        touched = {p.relative_to(out).parts[0] for p in mine}
        names: list[str] = []
        for rel in stale:
            top = rel.parts[0]
            if len(rel.parts) > 1 and top not in touched:  # a folder this run did not write at all
                name = f"{top}/"
                if name not in names:
                    names.append(name)
            else:
                names.append(rel.as_posix())
        shown = names if len(names) <= 8 else names[:8] + [f"and {len(names) - 8} more"]
        print(f"note: {out} holds {len(stale)} file(s) this run did not write (left by an earlier "
              f"run or added by hand; not in manifest.json, left in place): {', '.join(shown)}",
              file=sys.stderr, flush=True)
    return mine


# --------------------------------------------------------------------------------------------------
# fingerprints and the manifest
# --------------------------------------------------------------------------------------------------
def versions() -> dict:
    """insdel's, Python's and the main dependencies' versions, and the platform."""
    import importlib.metadata as md

    from .. import __version__

    out = {"insdel": __version__, "python": platform.python_version(),
           "platform": platform.platform()}
    for pkg in ("numpy", "numba", "pandas", "torch", "captum", "matplotlib", "scikit-learn",
                "pyarrow"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    return out


def model_hash_of(model) -> str:
    """What :func:`model_hash` hashes for ``model``: ``"parameters"`` (a torch module's parameters
    and buffers, whatever file it came from) or ``"file"`` (the file another model was loaded
    from); printed beside the hash so that a torch file's hash is not read as the file's."""
    torch = sys.modules.get("torch")
    return "parameters" if torch is not None and isinstance(model, torch.nn.Module) else "file"


def model_hash(model, file_sha256: str | None = None) -> str:
    """SHA-256 of a torch module's parameters and buffers (names, dtypes, shapes, bytes); for
    other models, the SHA-256 of the file they were loaded from."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        torch = None
    h = hashlib.sha256()
    if torch is not None and isinstance(model, torch.nn.Module):
        for name, t in model.state_dict().items():
            a = t.detach().cpu().contiguous().numpy()
            h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
            h.update(a.tobytes())
        return h.hexdigest()
    if file_sha256 is None:
        raise ValueError(f"cannot fingerprint a {type(model).__name__} model that was not loaded "
                         "from a file; checkpoints must be keyed by the model.")
    return file_sha256


class Stages:
    """Seconds and model evaluations per stage, kept in memory for the manifest."""

    def __init__(self):
        self.stages: dict[str, dict] = {}

    def add(self, name: str, seconds: float, **extra) -> None:
        """Add ``seconds`` to stage ``name``; numbers in ``extra`` are summed, others replaced."""
        d = self.stages.setdefault(name, {"seconds": 0.0})
        d["seconds"] += float(seconds)
        for k, v in extra.items():
            d[k] = d.get(k, 0) + v if isinstance(v, (int, float)) and not isinstance(v, bool) else v


def manifest_head(cfg: Mapping) -> dict:
    """The manifest's first entries, the same for every configured run: name, source, quick,
    seed, the configuration (without its ``source``) and the versions."""
    return {"name": cfg["name"], "source": cfg["source"], "quick": cfg["quick"],
            "seed": cfg["seed"],
            "config": to_jsonable({k: v for k, v in cfg.items() if k != "source"}),
            "versions": versions()}


def file_hashes(out: Path, files: list[Path]) -> dict[str, str]:
    """The manifest's ``files``: each file's path relative to ``out`` -> its SHA-256."""
    return {str(p.relative_to(out)): ck.sha256_file(p) for p in files}


def write_manifest(out: Path, manifest: Mapping) -> None:
    """Write ``OUT/manifest.json`` (indented JSON, atomically): the last file of a run, the mark
    that it finished."""
    ck.atomic_write_text(Path(out) / "manifest.json", json.dumps(manifest, indent=2) + "\n")


def pairs_key(cfg: Mapping, data_info: Mapping, model_info: Mapping, X, R, **extra) -> dict:
    """The key every checkpoint chunk of a run's pairs starts from: the data's and the model's
    fingerprints, the seed, ``extra`` (``reference=``: what the references are), the pairs' own
    SHA-256 and the device."""
    return {"data": data_info["arrays_sha256"], "model": model_info["sha256"],
            "seed": cfg["seed"], **extra, "pairs": ck.sha256_arrays(X, R),
            "device": cfg["compute"]["device"]}


def run_manifest(cfg: Mapping, out: Path, before: Mapping[Path, tuple] | None, *,
                 data_info: Mapping, model_info: Mapping, model_metrics: Mapping,
                 stages: Stages, compute: Mapping, before_model: Mapping | None = None,
                 after_model: Mapping | None = None, used: tuple[str, ...] = ()) -> dict:
    """Build and write (last, :func:`write_manifest`) the manifest of a configured run; every
    command's one route to its ``manifest.json``.

    Its entries, in order: :func:`manifest_head`, ``data``, ``before_model``'s entries,
    ``model`` (its metrics and fingerprints), ``after_model``'s (the command's own record),
    ``compute`` (``compute``'s entries, then ``cpu_count`` and the seconds and evaluations per
    stage) and ``files``: the files written since ``before`` (:func:`snapshot`) and ``used``
    (the cached model the run loaded), each with its SHA-256.

    Returns
    -------
    dict
        The manifest written.
    """
    files = run_files(out, {} if before is None else before, used)
    manifest = {
        **manifest_head(cfg),
        "data": to_jsonable(data_info),
        **dict(before_model or {}),
        "model": {"metrics": to_jsonable(model_metrics), **to_jsonable(model_info)},
        **{k: to_jsonable(v) for k, v in (after_model or {}).items()},
        "compute": {**compute, "cpu_count": os.cpu_count(),
                    "stages": to_jsonable(stages.stages)},
        "files": file_hashes(out, files),
    }
    write_manifest(out, manifest)
    return manifest
