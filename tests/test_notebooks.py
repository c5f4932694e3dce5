"""Execute the notebooks in notebooks/ on small sizes (INSDEL_NOTEBOOK_SMALL=1)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_the_notebooks_exist():
    assert {p.stem for p in NOTEBOOKS} >= {"policy_comparison", "anchored_decomposition",
                                           "binary_ig", "which_removal", "interactions"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, monkeypatch, tmp_path, session_tempdir):
    monkeypatch.setenv("INSDEL_NOTEBOOK_SMALL", "1")
    monkeypatch.setenv("INSDEL_PROGRESS", "0")
    before = set(session_tempdir.iterdir())  # the kernel's temp folder (conftest.session_tempdir)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError naming the failing cell
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    # a notebook removes what it wrote into the temp folder (a user's runs pile up there too)
    left = sorted(p.name for p in set(session_tempdir.iterdir()) - before
                  if p.name.startswith("insdel-"))
    assert not left, f"{path.name} left {left} in the temp folder"
