"""What `pip install .` (not editable) ships: every package of the source tree is listed."""
from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_insdel_package_is_listed_in_pyproject():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for p in (ROOT / "insdel").rglob("__init__.py") if "__pycache__" not in p.parts}
    missing = sorted(found - listed)
    assert not missing, (f"packages missing from [tool.setuptools] packages in pyproject.toml "
                         f"(a non-editable install would lack them): {missing}")
