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


#: The shipped data: insdel/shipped/F is the package insdel.shipped.F; its data files by pattern.
SHIPPED = {"configs": ("*.toml",), "policies": ("*.toml",),
           "data_recipes": ("*.py", "*.toml", "*.json")}
#: Where shipped data lived before it moved under insdel/shipped/: nothing may be left there.
OLD_PLACES = ("policies/", "data_recipes/", "insdel/configs/")


def _shipped_files() -> set[str]:
    """Every data file of every shipped folder, as a path relative to the repository."""
    return {n for f, patterns in SHIPPED.items() for pat in patterns
            for n in _names(f"insdel/shipped/{f}", pat)}


def test_shipped_data_lives_in_one_place():
    """Every shipped folder is a plain package under insdel/shipped/: listed with its data in
    pyproject.toml, mapped to no other folder, and nothing is left at the old places."""
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "package-dir" not in cfg, cfg.get("package-dir")
    assert set(SHIPPED) == {p.name for p in (ROOT / "insdel" / "shipped").iterdir()
                            if p.is_dir() and p.name != "__pycache__"}
    for f, patterns in SHIPPED.items():
        assert (ROOT / "insdel" / "shipped" / f / "__init__.py").is_file(), f
        assert f"insdel.shipped.{f}" in cfg["packages"]
        assert tuple(cfg["package-data"][f"insdel.shipped.{f}"]) == patterns
    assert not [p for p in OLD_PLACES if (ROOT / p).exists()]
    import insdel.shipped

    assert len(insdel.shipped.__path__) == 1  # the package's own folder and nothing else
    assert len([n for n in _shipped_files() if n.startswith("insdel/shipped/configs/")]) >= 8
    assert len([n for n in _shipped_files() if n.startswith("insdel/shipped/policies/")]) >= 4


def test_wheel_ships_the_packages_and_their_data(dists):
    with zipfile.ZipFile(dists["wheel"]) as z:
        names = set(z.namelist())
    want = _shipped_files()
    want |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "insdel").rglob("*.py")
             if "__pycache__" not in p.parts}
    missing = sorted(want - names)
    assert not missing, f"the wheel lacks {missing}"
    assert not [n for n in names if n.startswith(("tests/", "docs/") + OLD_PLACES)]
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
    want |= _names("docs", "*.md") | _names("notebooks", "*.ipynb") | _shipped_files()
    assert {"tests/data/README.md"} <= want
    missing = sorted(want - names)
    assert not missing, f"the sdist lacks {missing}"
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert not [n for n in names if n.startswith(OLD_PLACES)]
