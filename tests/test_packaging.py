"""What a release ships: every package of the source tree is listed, and the sdist and the wheel
build offline, pass ``twine check`` and hold the shipped data (configurations, policy specs, data
recipes) and, for the sdist, the tests' data."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: What the build never reads: version control, caches, earlier builds, run folders.
_NOT_SOURCE = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__",
                                     "*.py[cod]", ".pytest_cache", ".ruff_cache", ".hypothesis",
                                     ".ipynb_checkpoints", "runs", "insdel-demo", ".venv")


def test_every_insdel_package_is_listed_in_pyproject():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for p in (ROOT / "insdel").rglob("__init__.py") if "__pycache__" not in p.parts}
    missing = sorted(found - listed)
    assert not missing, (f"packages missing from [tool.setuptools] packages in pyproject.toml "
                         f"(a non-editable install would lack them): {missing}")


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    """The sdist and the wheel, built as a release builds them (the wheel from the sdist) from a
    copy of the source tree, offline: ``--no-isolation`` uses the build backend installed here
    (the ``test`` extra) instead of downloading one into a fresh environment."""
    src = tmp_path_factory.mktemp("src") / "insdel"
    shutil.copytree(ROOT, src, ignore=_NOT_SOURCE)  # the checkout stays untouched (no egg-info)
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out),
                           str(src)], capture_output=True, text=True, timeout=300)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    # a deprecation of the build backend today is a build that fails after its deadline
    assert "deprecated" not in log.lower(), [ln for ln in log.splitlines() if "deprecat" in ln.lower()]
    sdists, wheels = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, sorted(p.name for p in out.iterdir())
    return {"sdist": sdists[0], "wheel": wheels[0]}


def test_twine_check_passes(dists):
    proc = subprocess.run([sys.executable, "-m", "twine", "check", "--strict",
                           str(dists["sdist"]), str(dists["wheel"])],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("PASSED") == 2, proc.stdout


def _names(folder: str, pattern: str) -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / folder).glob(pattern)}


def test_wheel_ships_the_packages_and_their_data(dists):
    with zipfile.ZipFile(dists["wheel"]) as z:
        names = set(z.namelist())
    want = {f"insdel/shipped/policies/{p.name}" for p in (ROOT / "policies").glob("*.toml")}
    want |= {f"insdel/shipped/data_recipes/{p.name}" for p in (ROOT / "data_recipes").iterdir()
             if p.suffix in (".py", ".toml", ".json")}
    want |= _names("insdel/configs", "*.toml")
    want |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "insdel").rglob("*.py")
             if "__pycache__" not in p.parts}
    assert len([n for n in want if n.startswith("insdel/configs/")]) >= 8
    assert len([n for n in want if n.startswith("insdel/shipped/policies/")]) >= 4
    missing = sorted(want - names)
    assert not missing, f"the wheel lacks {missing}"
    assert not [n for n in names if n.startswith(("tests/", "docs/", "policies/", "data_recipes/"))]
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    with zipfile.ZipFile(dists["wheel"]) as z:
        text = z.read(meta).decode()
    import insdel

    assert f"\nVersion: {insdel.__version__}\n" in text
    for extra in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
            "optional-dependencies"]:
        assert f"Provides-Extra: {extra}" in text


def test_sdist_holds_the_tests_and_their_data(dists):
    with tarfile.open(dists["sdist"]) as t:
        top = dists["sdist"].name[:-len(".tar.gz")]
        names = {n[len(top) + 1:] for n in t.getnames() if n.startswith(top + "/")}
    want = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests" / "data").rglob("*")
            if p.is_file()}
    want |= _names("tests", "*.py") | {"pyproject.toml", "README.md", "MANIFEST.in",
                                       "CONTRIBUTING.md"}
    want |= _names("docs", "*.md") | _names("notebooks", "*.ipynb")
    assert {"tests/data/README.md"} <= want
    missing = sorted(want - names)
    assert not missing, f"the sdist lacks {missing}"
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
