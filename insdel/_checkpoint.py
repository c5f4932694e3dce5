"""Atomic, deterministic file writes and chunked checkpoints for long experiment stages.

* Every file is written to a temporary file in the destination folder and moved into place with
  ``os.replace``, so a killed run never leaves a half-written file under the final name.
* ``.npz`` archives are written with a fixed zip timestamp, so the same arrays give the same bytes
  (``numpy.savez`` stamps the current time).
* :class:`ChunkStore` keeps one ``chunk_XXXX.<key>.npy`` per finished chunk of targets, named by
  the configuration hash; a run started again with the same configuration skips finished chunks.
* The store's ``KEY`` file holds the full configuration hash on its first line and then, for each
  chunk, the SHA-256 of the chunk file's bytes as written (``<sha256>  <file name>``, the format of
  ``sha256sum``). A chunk is verified against it whenever it is loaded: a chunk whose bytes changed
  after it was written (a disk error, an edit) is an error naming the file, like a chunk that
  cannot be read at all -- its numbers are never used; delete it and run again to recompute it.
* A chunk with no checksum in ``KEY`` (written by an insdel older than the checksums, or left
  after ``KEY`` was deleted) is not trusted: it counts as not done and is recomputed, with one
  warning per store naming the files. Recomputing costs a resumed run that chunk's time once;
  accepting it would use numbers nothing vouches for.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import tempfile
import warnings
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

__all__ = ["atomic_write", "atomic_write_bytes", "atomic_write_text", "save_npy", "save_npz",
           "config_hash", "ChunkStore", "sha256_file", "to_jsonable", "is_plain_folder_name"]

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


#: Temporary files are named ``.NAME.insdel-tmp-PID-RANDOM<suffix>`` in the target's folder.
_TMP_TAG = ".insdel-tmp-"


def _proc_umask() -> int | None:
    """The umask from ``/proc/self/status`` (Linux >= 4.7), read without changing it; else None."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return None


def _read_umask_once() -> int:
    mask = _proc_umask()
    if mask is None:  # no /proc: set and restore it, once, while the module is imported
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


#: The umask when this module was imported (used where /proc cannot say the current one).
_UMASK_AT_IMPORT = _read_umask_once()


def _umask() -> int:
    """The process umask now; never changes it (toggling it races with other threads' files)."""
    mask = _proc_umask()
    return _UMASK_AT_IMPORT if mask is None else mask


def _start_time(pid: int) -> float | None:
    """Wall-clock start time of process ``pid`` from /proc (Linux), or None where unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat", encoding="ascii") as fh:
            btime = next(int(ln.split()[1]) for ln in fh if ln.startswith("btime"))
        return btime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _writer_gone(pid: int, mtime: float) -> bool:
    """True when the process that wrote a temporary file at ``mtime`` cannot still be writing it.

    Its pid is not alive, or the process now holding that pid started after the file was last
    written (the pid was reused, e.g. by a new run in a container).
    """
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # no such process (or no such pid at all)
        return True
    except OSError:  # alive, owned by someone else
        pass
    start = _start_time(pid)
    return start is not None and start > mtime + 2.0  # btime has one-second resolution


def _sweep_stale(path: Path) -> None:
    """Remove temporary files of ``path`` left by writers that were killed (see _writer_gone)."""
    head = f".{path.name}{_TMP_TAG}"
    for tmp in path.parent.glob(f"{glob_escape(head)}*"):
        pid = tmp.name[len(head):].split("-", 1)[0]
        if not pid.isdigit():
            continue
        try:
            mtime = tmp.stat().st_mtime
        except FileNotFoundError:
            continue
        if _writer_gone(int(pid), mtime):
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()


def glob_escape(name: str) -> str:
    """Escape glob metacharacters in a file name."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, suffix: str | None = None):
    """Yield a temporary path in ``path``'s folder; on success move it onto ``path``.

    Parameters
    ----------
    path : path
        Final file name.
    suffix : str, optional
        Suffix of the temporary file (some writers insist on one, e.g. ``.parquet``, ``.png``).

    Yields
    ------
    pathlib.Path
        The temporary file (already created, empty) to write to.

    Raises
    ------
    BaseException
        Whatever the caller's block raises; the temporary file is removed and ``path`` is left
        as it was.

    Notes
    -----
    * The file gets the permissions a plain ``open`` would give it (``0o666`` less the process
      umask, e.g. 0644 under umask 022), not ``mkstemp``'s 0600.
    * The temporary file is named ``.NAME.insdel-tmp-PID-RANDOM<suffix>`` next to ``path``. One
      left behind by a writer that was killed (SIGKILL, power loss) is removed by the next write
      of the same ``path``: its pid is not alive, or the pid now belongs to a process that started
      after the file was written. Temporary files of live writers and of other targets are kept.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _sweep_stale(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{_TMP_TAG}{os.getpid()}-",
                               suffix=suffix or ".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_write(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def _npy_bytes(arr: np.ndarray) -> bytes:
    """The bytes of ``arr`` as a ``.npy`` file."""
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def save_npy(path: str | os.PathLike, arr: np.ndarray) -> None:
    """Save one array as ``.npy`` atomically."""
    atomic_write_bytes(path, _npy_bytes(arr))


def save_npz(path: str | os.PathLike, arrays: Mapping[str, np.ndarray]) -> None:
    """Save arrays as an (uncompressed) ``.npz`` readable by ``numpy.load``, byte-reproducibly."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            a = io.BytesIO()
            np.lib.format.write_array(a, np.ascontiguousarray(np.asarray(arr)), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            info.external_attr = 0o644 << 16
            zf.writestr(info, a.getvalue())
    atomic_write_bytes(path, buf.getvalue())


def to_jsonable(obj):
    """Convert numpy scalars/arrays, paths, tuples and nested mappings to plain JSON types (for
    the metadata files a run and a prepared data set write).

    Anything else that JSON cannot hold is turned into its ``str``.
    """
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return str(obj)


def is_plain_folder_name(name: str) -> bool:
    """``name`` names one folder inside another (a run's folder under ``runs/``, a policy's folder
    in a run): not empty, ``.`` or ``..``, no path separator."""
    return name not in ("", ".", "..") and "/" not in name and "\\" not in name


def _json_default(o):
    """JSON form of what :func:`json.dumps` cannot write: numpy arrays (and torch tensors) by
    dtype, shape and the SHA-256 of their bytes (``str`` of an array rounds and elides its
    values), numpy scalars as Python numbers, anything else as ``str``."""
    if isinstance(o, np.ndarray):
        if o.dtype.hasobject:  # the elements go through this function again
            return {"ndarray_object": o.tolist(), "shape": list(o.shape)}
        return {"ndarray": sha256_arrays(o)}
    if isinstance(o, np.generic):
        return o.item()
    if type(o).__module__.split(".")[0] == "torch" and hasattr(o, "detach"):  # a tensor
        return {"tensor": sha256_arrays(o.detach().cpu().numpy())}
    return str(o)


def config_hash(obj) -> str:
    """SHA-256 of the canonical JSON form of ``obj`` (sorted keys), as hex; numpy arrays enter by
    their dtype, shape and bytes."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_json_default)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_arrays(*arrays: np.ndarray) -> str:
    """SHA-256 of arrays' dtypes, shapes and bytes (C order), as hex: the key of data in a run."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes, as hex."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextlib.contextmanager
def _folder_lock(folder: Path):
    """Hold an exclusive ``flock`` on ``folder`` (POSIX), so that processes sharing a chunk folder
    update its ``KEY`` file one at a time; where locking is not available, no lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        with contextlib.suppress(OSError):  # a file system without flock: go on unlocked
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


class ChunkStore:
    """Chunked results of one stage, saved as ``chunk_XXXX.<key>.npy`` under ``folder``.

    Every chunk file carries the stage's configuration hash in its name, so a chunk written by a
    run with another configuration, seed, data set or model (another key) is never loaded, even
    when two runs share the folder at the same time.

    The ``KEY`` file in ``folder`` records the key (first line) and the SHA-256 of every chunk
    file as written (``<sha256>  chunk_XXXX.<key>.npy`` lines). :meth:`load` verifies a chunk's
    bytes against it: a mismatch is an error naming the file (its numbers are never used), as for
    a chunk that cannot be read. A chunk without a recorded checksum (an older insdel's) is not
    :meth:`done`, so :meth:`run` recomputes it; the store warns once, naming such files.

    Parameters
    ----------
    folder : path
        Where the chunks live (created on first write).
    key : str
        Configuration hash of the stage: everything that determines the chunks' content. Chunks
        written under another key are ignored; they are removed when this store starts.
    """

    def __init__(self, folder: str | os.PathLike, key: str):
        if not isinstance(key, str) or not key or any(c in key for c in "/\\. "):
            raise ValueError(f"ChunkStore key must be a non-empty hash string; got {key!r}.")
        self.folder = Path(folder)
        self.key = key
        self._tag = key[:32]
        self.keyfile = self.folder / "KEY"
        own = f".{self._tag}.npy"
        for p in self.folder.glob("chunk_*.npy"):
            if not p.name.endswith(own):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
        self.folder.mkdir(parents=True, exist_ok=True)
        with _folder_lock(self.folder):
            first, sums = self._read_keyfile()
            mine = {name: h for name, h in sums.items() if name.endswith(own)}
            if first != key or mine != sums:
                self._write_keyfile(mine)
        self._sums = mine
        unchecked = sorted(p.name for p in self.folder.glob(f"chunk_*{glob_escape(own)}")
                           if p.name not in mine)
        if unchecked:
            shown = ", ".join(unchecked[:3]) + (f" and {len(unchecked) - 3} more"
                                                if len(unchecked) > 3 else "")
            warnings.warn(f"checkpoint chunks in {self.folder} have no checksum in "
                          f"{self.keyfile.name} (written by an older insdel, or {self.keyfile.name}"
                          f" was removed): {shown}; they are not trusted and are recomputed.",
                          UserWarning, stacklevel=2)

    # -- the KEY file: key, then "<sha256>  <chunk file name>" per chunk ------------------------
    def _read_keyfile(self) -> tuple[str | None, dict[str, str]]:
        try:
            lines = self.keyfile.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return None, {}
        sums = {}
        for line in lines[1:]:
            digest, _, name = line.partition("  ")
            if len(digest) == 64 and name.startswith("chunk_"):
                sums[name] = digest.lower()
        return (lines[0].strip() if lines else None), sums

    def _write_keyfile(self, sums: Mapping[str, str]) -> None:
        atomic_write_text(self.keyfile, "".join([self.key + "\n"] + [
            f"{sums[name]}  {name}\n" for name in sorted(sums)]))

    def _recorded(self, name: str, refresh: bool = False) -> str | None:
        """The SHA-256 recorded for chunk file ``name`` (re-read from disk when asked or when
        unknown here: a run sharing the folder may have written it), or None."""
        if refresh or name not in self._sums:
            self._sums = self._read_keyfile()[1]
        return self._sums.get(name)

    def path(self, i: int) -> Path:
        return self.folder / f"chunk_{i:04d}.{self._tag}.npy"

    def done(self, i: int) -> bool:
        """Whether chunk ``i`` is on disk with a recorded checksum (its bytes are checked when it
        is loaded)."""
        path = self.path(i)
        return path.exists() and self._recorded(path.name) is not None

    def load(self, i: int) -> np.ndarray:
        """Chunk ``i``, after checking its bytes against the SHA-256 recorded when it was saved.

        A file that cannot be read (truncated, not a ``.npy``), has no recorded checksum or whose
        bytes differ from the ones written (a disk error, an edit) is an error naming it, never
        an array.
        """
        path = self.path(i)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ValueError(f"checkpoint chunk {path} cannot be read ({type(exc).__name__}: "
                             f"{exc}); delete it and run again to recompute it.") from exc
        got = hashlib.sha256(data).hexdigest()
        want = self._recorded(path.name)
        if want != got:
            want = self._recorded(path.name, refresh=True)  # rewritten by a run beside this one?
        if want is None:
            raise ValueError(f"checkpoint chunk {path} has no checksum in {self.keyfile} (written "
                             "by an older insdel?), so it cannot be verified; run again to "
                             "recompute it.")
        if want != got:
            raise ValueError(f"checkpoint chunk {path} does not match the SHA-256 recorded in "
                             f"{self.keyfile} when it was written (sha256 {got[:16]}..., recorded "
                             f"{want[:16]}...): it was corrupted or changed since (a disk error, "
                             "an edit), so its numbers are not used; delete it and run again to "
                             "recompute it.")
        try:
            return np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, EOFError, OSError) as exc:
            raise ValueError(f"checkpoint chunk {path} cannot be read ({type(exc).__name__}: "
                             f"{exc}); delete it and run again to recompute it.") from exc

    def save(self, i: int, arr: np.ndarray) -> None:
        """Save chunk ``i`` (atomically) and record its SHA-256 in ``KEY``.

        The order keeps every interruption safe: an older file of the chunk is removed first, then
        the checksum is recorded, then the chunk is moved into place; a run killed in between
        leaves the chunk missing (recomputed), never a chunk beside another one's checksum.
        """
        path = self.path(i)
        data = _npy_bytes(arr)
        digest = hashlib.sha256(data).hexdigest()
        path.parent.mkdir(parents=True, exist_ok=True)
        with _folder_lock(self.folder):
            _, sums = self._read_keyfile()  # a run of another key beside this one keeps its own
            if sums.get(path.name) != digest:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                sums[path.name] = digest
                self._write_keyfile(sums)
            atomic_write_bytes(path, data)
            self._sums = sums

    def discard(self, i: int) -> None:
        """Remove chunk ``i`` and its checksum (a stage that keeps only its latest chunk).

        The file goes first: a run killed in between leaves a checksum of no file, which nothing
        reads, never a file without its checksum.
        """
        path = self.path(i)
        with _folder_lock(self.folder):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            _, sums = self._read_keyfile()
            if sums.pop(path.name, None) is not None:
                self._write_keyfile(sums)
            self._sums = sums

    def run(self, n_chunks: int, compute: Callable[[int], np.ndarray],
            on_chunk: Callable[[int, bool], None] | None = None) -> list[np.ndarray]:
        """Load finished chunks and compute (then save) the others, in order.

        ``on_chunk(i, computed)`` is called after each chunk (for progress bars).
        """
        out = []
        for i in range(n_chunks):
            if self.done(i):
                out.append(self.load(i))
                computed = False
            else:
                arr = np.asarray(compute(i))
                self.save(i, arr)
                out.append(arr)
                computed = True
            if on_chunk is not None:
                on_chunk(i, computed)
        return out
