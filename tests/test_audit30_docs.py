"""Audit of the docs' examples: what they call exists and runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import insdel
from insdel import config, functional

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _blocks(lang: str):
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(rf"^```{lang}\n(.*?)^```", text, re.S | re.M):
            yield f"{path.name}:{text[:m.start()].count(chr(10)) + 1}", m.group(1)


@pytest.mark.parametrize("where,code", list(_blocks("toml")), ids=lambda v: str(v)[:40])
def test_every_toml_example_is_valid_toml(where, code):
    tomllib.loads(code)  # docs/roar.md had `[data]      recipe = ...` on one line


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
                                  "model_files", "digits"])
def test_modules_the_docs_call_as_attributes_of_insdel(name):
    # README: insdel.images.evaluate(...), insdel.functional.run_catalogue(...) after `import insdel`
    code = f"import insdel; m = insdel.{name}; assert m.__name__ == 'insdel.{name}'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    assert name in dir(insdel)


def test_ig_binary_variants_run_on_cases_without_binary_features():
    # ig_jump / ig_interpolate failed every case without binaries (binary_mode without binary=)
    df = functional.run_catalogue(["integrated_gradients", "ig_jump", "ig_interpolate"], seed=0,
                                  cases=["additive", "binary_and"])
    assert (df["error"] == "").all(), df.loc[df["error"] != "", "error"].tolist()
    add = df[df["test"] == "additive"].set_index(["criterion", "method"])["measured"]
    for crit in add.index.get_level_values(0).unique():
        ig = add[(crit, "integrated_gradients")]
        for m in ("ig_jump", "ig_interpolate"):
            np.testing.assert_allclose(add[(crit, m)], ig, atol=1e-12)
    binary = df[(df["test"] == "binary_and") & (df["criterion"] == "matches_shapley")]
    assert binary.set_index("method").loc[["ig_jump", "ig_interpolate"], "passed"].all()
