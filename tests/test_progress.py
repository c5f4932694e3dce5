"""Progress bars (insdel._progress): progress= is checked before the environment is read."""

from __future__ import annotations

import pytest

from insdel._progress import _NULL, progress_bar


# -- progress_bar checks progress= before reading the environment ----------------------------------
def test_progress_is_checked_before_the_environment(monkeypatch):
    monkeypatch.setenv("INSDEL_PROGRESS", "0")
    with pytest.raises(TypeError, match="progress"):
        progress_bar(1, "x", enable="no")
    assert progress_bar(1, "x", enable=True) is _NULL  # the environment still wins for a bool
