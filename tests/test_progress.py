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


def test_a_stage_without_a_bar_logs_one_plain_line(monkeypatch):
    lines = []
    monkeypatch.setenv("INSDEL_PROGRESS", "0")
    with progress_bar(20, "attributions [median]", unit="chunk", log=lines.append) as bar:
        bar.update(1)
    assert lines == ["attributions [median]: started (20 chunks)"]
    monkeypatch.delenv("INSDEL_PROGRESS")
    with progress_bar(1, "curves", unit="pair", enable=False, log=lines.append):
        pass
    assert lines[-1] == "curves: started (1 pair)"
