"""The docs as a user reads them: every install line works from a clone of the repository."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The extras pyproject.toml defines (`pip install ".[dask]"`).
EXTRAS = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
    "optional-dependencies"])


def _texts() -> list[tuple[str, str]]:
    """(file, text) of what a user reads: README, CONTRIBUTING, docs, bench's README, the notebooks'
    cells, and the package's sources (error messages, CLI help)."""
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "bench" / "README.md",
             *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "insdel").rglob("*.py"))]
    out = [(p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8")) for p in files]
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        out.append((nb.relative_to(ROOT).as_posix(),
                    "\n".join("".join(c["source"]) for c in cells)))
    return out


TEXTS = _texts()


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def test_install_lines_work_from_a_clone():
    bad = []
    for where, text in TEXTS:
        # insdel is not on a package registry: `pip install 'insdel[dask]'` fails for a user who
        # cloned the repository; `pip install ".[dask]"` (in the clone) works
        bad += [f"{where}:{_line(text, m.start())}: {m.group(0)}"
                for m in re.finditer(r"insdel\[[^\]]*\]", text)]
        # an extra of the clone is quoted (an unquoted .[x] is a glob in zsh) and defined
        for m in re.finditer(r"(.)\.\[([^\]]*)\]", text):
            quote, names = m.group(1), m.group(2).split(",")
            if quote not in "\"'" or not set(names) <= EXTRAS:
                bad.append(f"{where}:{_line(text, m.start())}: {m.group(0)[1:]} (extras: "
                           f"{sorted(EXTRAS)}, quoted)")
    assert not bad, "install lines that do not work from a clone:\n" + "\n".join(bad)


def test_install_lines_are_found():
    # the check above reads the files that hold install lines
    joined = "\n".join(t for _, t in TEXTS)
    assert 'pip install ".[dask]"' in joined and 'pip install -e ".[test]"' in joined
