"""Fixtures shared by the test files. Every file a test reads lives in the repository."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

#: The repository's test data (see tests/data/README.md for provenance and licences).
DATA_DIR = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def samples() -> Path:
    """Folder with the 60-row samples of the paper's two real data sets."""
    return DATA_DIR


@pytest.fixture
def csv(tmp_path) -> Path:
    """The small CSV of the configuration, runner and CLI tests (``_runs.small_csv``) as
    ``tmp_path/t.csv``."""
    from _runs import small_csv

    return small_csv(tmp_path / "t.csv")


@pytest.fixture(scope="session")
def multi_runs(tmp_path_factory) -> tuple[Path, list[Path]]:
    """A run with ``model.outputs = 2`` (weights 1 : 3, ``[metrics]`` insertion_abc) and a
    single-output run on each output's column alone (``_runs.multi_output_runs``), shared by the
    leaderboard, study-plan and report tests."""
    from _runs import multi_output_runs

    return multi_output_runs(tmp_path_factory.mktemp("multi"), weights=[1.0, 3.0],
                             metrics=["insertion_abc"])


@pytest.fixture
def umask022():
    """The umask set to 022 for the test (file modes are then 0644 and 0755)."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


#: Environment variables that name the temp folder (tempfile reads them in this order).
_TEMP_VARS = ("TMPDIR", "TEMP", "TMP")


@pytest.fixture(scope="session", autouse=True)
def session_tempdir(tmp_path_factory) -> Path:
    """The temp folder of this session: ``tempfile`` here and every process the tests start
    (notebook kernels, Dask workers, the CLI) write there instead of the system's temp folder.
    An ``insdel-*`` entry left in it when the session ends fails the session (a test or notebook
    that leaves results behind in the temp folder), whichever process made it; other sessions'
    files never count. The folder is removed at the end."""
    tmp_path_factory.getbasetemp()  # pytest's own tmp_path folders stay in the system temp folder
    root = Path(tempfile.mkdtemp(prefix="pytest-insdel-temp-")).resolve()
    saved = {k: os.environ.get(k) for k in _TEMP_VARS}
    saved_default = tempfile.tempdir
    os.environ.update(dict.fromkeys(_TEMP_VARS, str(root)))
    tempfile.tempdir = None  # tempfile.gettempdir() reads the variables again
    try:
        yield root
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        tempfile.tempdir = saved_default
        left = sorted(p.name for p in root.glob("insdel-*"))
        shutil.rmtree(root, ignore_errors=True)
    assert not left, (f"the tests left {left} in the temp folder: a test or notebook that writes "
                      "there must remove what it wrote (or use tmp_path)")
