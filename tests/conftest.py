"""Fixtures shared by the test files. Every file a test reads lives in the repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: The repository's test data (see tests/data/README.md for provenance and licences).
DATA_DIR = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def samples() -> Path:
    """Folder with the 60-row samples of the paper's two real data sets."""
    return DATA_DIR


@pytest.fixture
def umask022():
    """The umask set to 022 for the test (file modes are then 0644 and 0755)."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)
