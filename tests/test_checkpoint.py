"""Checkpoints (insdel._checkpoint): configuration hashes, chunk files and their SHA-256 in KEY."""

from __future__ import annotations

import hashlib
import os
import stat
import warnings

import numpy as np
import pytest
from _runs import interrupted_chunks

from insdel import _checkpoint as ck


# -- config_hash of arrays; truncated chunks -------------------------------------------------------
def test_config_hash_keys_arrays_by_their_contents():
    # keyed by the values, not str() (which elides > 1000 values and rounds to 8 digits)
    a = np.zeros(2000)
    b = a.copy()
    b[500] = 1.0
    assert ck.config_hash({"o": a}) != ck.config_hash({"o": b})
    assert (ck.config_hash({"o": np.array([0.1234567891])})
            != ck.config_hash({"o": np.array([0.1234567892])}))
    assert ck.config_hash({"o": a}) != ck.config_hash({"o": a.astype(np.float32)})
    assert ck.config_hash({"o": a}) != ck.config_hash({"o": a.reshape(40, 50)})
    assert ck.config_hash({"o": np.int64(3)}) == ck.config_hash({"o": 3})
    torch = pytest.importorskip("torch")
    t1 = torch.tensor([0.1234567891], dtype=torch.float64)
    t2 = torch.tensor([0.1234567892], dtype=torch.float64)
    assert ck.config_hash({"o": t1}) != ck.config_hash({"o": t2})


@pytest.mark.parametrize("cut", [0, 10, -8])
def test_truncated_chunk_is_an_error_naming_the_file(tmp_path, cut):
    store = ck.ChunkStore(tmp_path, "abc123")
    store.save(0, np.arange(20.0).reshape(4, 5))
    p = store.path(0)
    data = p.read_bytes()
    p.write_bytes(data[:cut])
    with pytest.raises(ValueError, match="chunk_0000"):
        store.run(1, lambda i: np.zeros((4, 5)))


# -- chunk checksums -------------------------------------------------------------------------------
def _data_offset(path) -> int:
    """Where the array's bytes start in a ``.npy`` file (after magic and header)."""
    with open(path, "rb") as fh:
        version = np.lib.format.read_magic(fh)
        read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                       (2, 0): np.lib.format.read_array_header_2_0}[version]
        shape, _, dtype = read_header(fh)
        offset = fh.tell()
    assert offset + int(np.prod(shape)) * dtype.itemsize == os.path.getsize(path)
    return offset


def _flip_byte(path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def _compute(calls):
    def compute(i):
        calls.append(i)
        return np.arange(12.0).reshape(3, 4) + 100 * i
    return compute


def test_key_file_records_each_chunks_sha256(tmp_path):
    store = ck.ChunkStore(tmp_path, "abc123")
    store.run(3, _compute([]))
    lines = (tmp_path / "KEY").read_text().splitlines()
    assert lines[0] == "abc123"
    recorded = dict(reversed(line.split("  ")) for line in lines[1:])
    assert sorted(recorded) == [store.path(i).name for i in range(3)]
    for i in range(3):
        assert recorded[store.path(i).name] == ck.sha256_file(store.path(i))


def test_discard_removes_a_chunk_and_its_checksum(tmp_path):
    store = ck.ChunkStore(tmp_path, "abc123")
    store.run(2, _compute([]))
    store.discard(0)
    assert not store.path(0).exists() and not store.done(0) and store.done(1)
    lines = (tmp_path / "KEY").read_text().splitlines()
    assert lines[0] == "abc123" and [ln.split("  ")[1] for ln in lines[1:]] == [
        store.path(1).name]
    store.discard(0)  # already gone: nothing to do
    again = ck.ChunkStore(tmp_path, "abc123")
    assert not again.done(0) and again.done(1)


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_a_flipped_data_byte_is_an_error_naming_the_file_not_used(tmp_path, where):
    calls = []
    ck.ChunkStore(tmp_path, "abc123").run(3, _compute(calls))
    store = ck.ChunkStore(tmp_path, "abc123")
    p = store.path(1)
    lo, size = _data_offset(p), p.stat().st_size
    _flip_byte(p, {"first": lo, "middle": (lo + size) // 2, "last": size - 1}[where])
    assert np.load(p).shape == (3, 4)  # still a complete, loadable .npy: only the checksum sees it
    calls.clear()
    with pytest.raises(ValueError, match=r"chunk_0001\..*does not match the SHA-256") as exc:
        store.run(3, _compute(calls))
    assert str(p) in str(exc.value) and "delete it and run again" in str(exc.value)
    with pytest.raises(ValueError, match="chunk_0001"):
        store.load(1)
    assert calls == []
    # as the message says: delete it and run again -> recomputed, the others resumed
    p.unlink()
    out = ck.ChunkStore(tmp_path, "abc123").run(3, _compute(calls))
    assert calls == [1]
    np.testing.assert_array_equal(out[1], np.arange(12.0).reshape(3, 4) + 100)


def test_an_edited_key_file_checksum_is_also_an_error(tmp_path):
    store = ck.ChunkStore(tmp_path, "abc123")
    store.run(2, _compute([]))
    key = tmp_path / "KEY"
    name = store.path(0).name
    text = key.read_text()
    digest = ck.sha256_file(store.path(0))
    key.write_text(text.replace(digest, hashlib.sha256(b"other").hexdigest()))
    with pytest.raises(ValueError, match="chunk_0000"):
        ck.ChunkStore(tmp_path, "abc123").run(2, _compute([]))
    assert name in text


def test_untouched_store_resumes_exactly_as_before(tmp_path, umask022):
    calls = []
    compute = interrupted_chunks(calls)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about
        store = ck.ChunkStore(tmp_path / "s", "k1")
        with pytest.raises(KeyboardInterrupt):
            store.run(4, compute)
        before = {p.name: p.read_bytes() for p in (tmp_path / "s").glob("chunk_*.npy")}
        resumed = []
        out = ck.ChunkStore(tmp_path / "s", "k1").run(4, compute,
                                                      on_chunk=lambda i, c: resumed.append(c))
        assert calls == [0, 1, 2, 2, 3]
        assert resumed == [False, False, True, True]
        np.testing.assert_array_equal(np.concatenate(out), np.repeat(np.arange(4.0), 3))
        for name, data in before.items():  # resumed chunks are read, never rewritten
            assert (tmp_path / "s" / name).read_bytes() == data
        calls.clear()
        again = ck.ChunkStore(tmp_path / "s", "k1").run(4, compute)
        assert calls == []
        for a, b in zip(out, again, strict=True):
            np.testing.assert_array_equal(a, b)
    files = sorted(p.name for p in (tmp_path / "s").iterdir())
    assert len(files) == 5 and files[0] == "KEY"  # no extra file, no temporary left
    for p in (tmp_path / "s").iterdir():
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o644, p


def test_chunk_without_checksum_from_an_older_version_is_recomputed_with_a_warning(tmp_path):
    folder = tmp_path / "s"
    store = ck.ChunkStore(folder, "abc123")
    legacy = store.path(0)
    ck.save_npy(legacy, np.full(3, -1.0))  # as an older insdel wrote it: no checksum in KEY
    ck.atomic_write_text(folder / "KEY", "abc123\n")
    with pytest.warns(UserWarning, match=r"no checksum.*chunk_0000\.abc123\.npy.*recomputed"):
        store = ck.ChunkStore(folder, "abc123")
    assert not store.done(0)
    with pytest.raises(ValueError, match="chunk_0000.*no checksum"):
        store.load(0)  # never its numbers
    calls = []
    out = store.run(1, lambda i: calls.append(i) or np.full(3, 7.0))
    assert calls == [0]
    np.testing.assert_array_equal(out[0], np.full(3, 7.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(ck.ChunkStore(folder, "abc123").load(0), np.full(3, 7.0))


def test_run_killed_while_saving_never_pairs_a_chunk_with_another_checksum(tmp_path, monkeypatch):
    folder = tmp_path / "s"
    store = ck.ChunkStore(folder, "abc123")
    ck.save_npy(store.path(0), np.full(3, -1.0))  # an unverified chunk, recomputed below
    real = ck.atomic_write_bytes

    def killed(path, data):
        if str(path).endswith(".npy"):
            raise KeyboardInterrupt  # killed after KEY was written, before the chunk moved in
        real(path, data)

    monkeypatch.setattr(ck, "atomic_write_bytes", killed)
    with pytest.raises(KeyboardInterrupt):
        store.save(0, np.full(3, 7.0))
    monkeypatch.setattr(ck, "atomic_write_bytes", real)
    store = ck.ChunkStore(folder, "abc123")
    assert not store.done(0)  # missing, not "corrupted"
    calls = []
    np.testing.assert_array_equal(store.run(1, lambda i: calls.append(i) or np.full(3, 7.0))[0],
                                  np.full(3, 7.0))
    assert calls == [0]


def test_two_keys_sharing_a_folder_keep_each_others_checksums(tmp_path):
    a = ck.ChunkStore(tmp_path / "s", "seed0")
    b = ck.ChunkStore(tmp_path / "s", "seed1")
    a.save(0, np.zeros(3))
    b.save(0, np.ones(3))
    a.save(1, np.full(3, 2.0))
    np.testing.assert_array_equal(a.load(0), np.zeros(3))
    np.testing.assert_array_equal(b.load(0), np.ones(3))
    np.testing.assert_array_equal(a.load(1), np.full(3, 2.0))
    assert b.done(0) and a.done(0) and a.done(1) and not b.done(1)
