"""The docs as a user reads them: every install line works from a clone of the repository."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import insdel
from insdel import config

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


def _printed_rows(name: str) -> list[str]:
    """The Method column, top to bottom within one mode, of the tables `insdel reproduce` / `run`
    prints for the shipped configuration ``name`` (evaluation.summarize's rows)."""
    from insdel import config
    from insdel.evaluation import AUTO_DIFFERENCES

    names = [*config.load(name, quick=True)["methods"]["names"], "random"]
    diff = [f"{a} - {b}" for a, b in AUTO_DIFFERENCES if a in names and b in names][:1]
    return names + diff


def _method_tables(path: Path) -> list[tuple[int, list[str], list[list[str]]]]:
    """(line, [header, separator], rows as cells) of every `Test mode | Method` table in path."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    for i, ln in enumerate(lines):
        if ln.startswith("| Test mode | Method |"):
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            out.append((i + 1, lines[i:i + 2], rows))
    return out


def test_experiments_md_tables_have_the_rows_the_cli_prints():
    import pandas as pd

    from insdel.evaluation import to_markdown

    one = pd.DataFrame({"mode": ["insertion"], "method": ["m"], "mean": [0.0], "std_error": [0.0],
                        "n": [2]})
    printed_head = "\n".join(to_markdown(one).splitlines()[:2])  # header and separator
    tables = _method_tables(ROOT / "docs" / "experiments.md")
    assert tables, "docs/experiments.md shows no printed table"
    want = _printed_rows("paper_cern")  # the quick table is `insdel reproduce paper-cern --quick`
    for line, header, rows in tables:
        assert "\n".join(header) == printed_head, f"experiments.md:{line}"
        modes = [r[0] for r in rows if r[0]]
        assert modes == ["Insertion", "Deletion"], f"experiments.md:{line}: {modes}"
        half = len(rows) // 2
        for block in (rows[:half], rows[half:]):
            got = [r[1] for r in block]
            assert got == want, f"experiments.md:{line}: rows {got}, printed {want}"


# -- the docs' TOML examples and the modules they call ---------------------------------------------
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _blocks(lang: str):
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(rf"^```{lang}\n(.*?)^```", text, re.S | re.M):
            yield f"{path.name}:{text[:m.start()].count(chr(10)) + 1}", m.group(1)


@pytest.mark.parametrize("where,code", list(_blocks("toml")), ids=lambda v: str(v)[:40])
def test_every_toml_example_is_valid_toml(where, code):
    tomllib.loads(code)  # e.g. no `[data]      recipe = ...` (a table and a key on one line)


def test_roar_example_config_loads_for_insdel_roar(tmp_path):
    code = dict(_blocks("toml"))
    roar_block = next(c for w, c in code.items() if w.startswith("roar.md"))
    path = tmp_path / "my_roar.toml"
    path.write_text(roar_block, encoding="utf-8")
    cfg = config.load(path)
    config.check_sections(cfg, "roar")
    assert cfg["roar"]["orderings"] == ["absolute", "signed", "random"]
    assert cfg["model"]["preset"] == "paper_bangalore"


@pytest.mark.parametrize("name", ["images", "metrics", "functional", "leaderboard", "roar",
                                  "road", "model_files", "digits", "sanity", "tuning",
                                  "report_page", "verdicts"])
def test_modules_the_docs_call_as_attributes_of_insdel(name):
    # README: insdel.images.evaluate(...), insdel.functional.run_catalogue(...) after `import insdel`
    code = f"import insdel; m = insdel.{name}; assert m.__name__ == 'insdel.{name}'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    assert name in dir(insdel)


# -- the docs' Python blocks -------------------------------------------------------------------------
#: The marker of a block the tests do not run, on the line above its fence, with the reason: only
#: for a block that needs what the repository does not ship (the real data files) or hours.
SKIP_MARKER = re.compile(r"<!-- docs-test: skip \((?P<why>[^)]+)\) -->\n$")


def _python_blocks(path: Path) -> list[tuple[int, str, str | None]]:
    """(line of the fence, code, the skip marker's reason or None) of every ```python block."""
    text = path.read_text(encoding="utf-8")
    out = []
    for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
        before = text[max(0, text.rfind("\n", 0, m.start() - 1) + 1):m.start()]
        skip = SKIP_MARKER.search(before)
        out.append((_line(text, m.start()), m.group(1), skip.group("why") if skip else None))
    return out


PY_DOCS = [p for p in sorted((ROOT / "docs").glob("*.md")) if _python_blocks(p)]


@pytest.mark.parametrize("path", PY_DOCS, ids=lambda p: p.name)
def test_docs_python_blocks_run_as_written(path, tmp_path, monkeypatch):
    """Every ```python block of docs/*.md runs, in order, in one namespace per file (a page reads
    top to bottom: a block may use what an earlier block of the same page made), in a fresh
    folder (the files a block writes go there)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from insdel import datasets, functional, metrics, policies, removal

    registries = (policies, metrics, datasets, functional.grading, removal)
    before = [set(r.available()) for r in registries]
    monkeypatch.chdir(tmp_path)
    ns = {"__name__": "__docs__"}
    try:
        for line, code, skip in _python_blocks(path):
            if skip is None:
                exec(compile("\n" * line + code, str(path), "exec"), ns)
    finally:
        plt.close("all")
        for reg, names in zip(registries, before, strict=True):  # what a page registered goes
            for name in set(reg.available()) - names:
                reg.unregister(name)


def test_docs_skip_markers_say_why_and_are_few():
    skipped = [f"{p.name}:{line} ({why})" for p in PY_DOCS
               for line, _, why in _python_blocks(p) if why is not None]
    for p in PY_DOCS:  # a marker that is not right above a block's fence skips nothing: refused
        text = p.read_text(encoding="utf-8")
        for m in re.finditer(r"<!-- docs-test: skip", text):
            nxt = text[m.start():].split("\n", 2)
            assert len(nxt) > 1 and nxt[1] == "```python", f"{p.name}:{_line(text, m.start())}"
    assert len(skipped) <= 4, skipped


def test_sanity_md_printed_tables_have_the_columns_the_checks_print():
    """The tables docs/sanity.md shows as printed by ``insdel reproduce sanity-cern --quick``
    have the header rows the checks print now (a flag's interval and verdict included)."""
    import numpy as np
    import torch

    from insdel.sanity import metric_reliability, parameter_randomisation

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(),
                              torch.nn.Linear(4, 1)).double().eval()
    X, R = np.random.default_rng(0).normal(size=(4, 3)), np.zeros(3)
    res = parameter_randomisation(net, X, R, {"x": lambda X, R: X - R}, abc=False,
                                  progress=False)
    rel = metric_reliability(net, X, R, {"x": X - R, "y": X}, metrics=["insertion_abc"],
                             n_perturbations=1)
    printed = {line for text in (res.to_markdown(), rel.to_markdown())
               for line in text.splitlines() if line.startswith("| method |")
               or line.startswith("| metric |")}
    doc = (ROOT / "docs" / "sanity.md").read_text(encoding="utf-8").splitlines()
    shown = [(i + 1, line) for i, line in enumerate(doc) if doc[i + 1:i + 2]
             and doc[i + 1].startswith("|---") and (line.startswith("| method | check |")
                                                   or line.startswith("| metric | resilience"))]
    assert len(shown) == 3, shown  # two checks' flags and the reliability table
    for line, header in shown:
        assert header in printed, f"sanity.md:{line}: {header} is not printed; {printed}"
