"""The README as a user reads it: every Python block runs as written, and it starts with the two
commands CI runs."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks() -> list[tuple[int, str]]:
    """(line, code) of every ```python block of the README."""
    text = README.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1))
            for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M)]


BLOCKS = _python_blocks()

#: What each block prints, by its first line in README.md's order: the block ran to its end.
PRINTS = [("integrated_gradients", "std_error"),          # In Python
          ("baseline", "marginal", "conditional_gaussian"),       # beyond one reference
          ("True",),                                      # interactions, exactly
          ("tree (scikit-learn, 50 trees", "tree_shap", "random"),  # tree ensembles, exactly
          ("exact_shapley", "difference", "auc", "grad_x_input"),   # groups, steps and images
          ("greedy_exact_insertion", "best_insertion"),             # interactions
          ("pixel_flipping", "insertion_abc", "(40,)"),   # the field's metrics
          ("deeplift > ig", "first with 95 % confidence", "independent units")]  # verdicts


def test_every_python_block_is_checked():
    assert len(BLOCKS) == len(PRINTS), (
        f"README.md has {len(BLOCKS)} python blocks; PRINTS names what {len(PRINTS)} print")


@pytest.mark.parametrize("i", range(len(BLOCKS)), ids=[f"README.md:{ln}" for ln, _ in BLOCKS])
def test_readme_python_block_runs_as_written(i, capsys):
    line, code = BLOCKS[i]
    # each block on its own, in a fresh namespace: a block may not lean on an earlier one
    exec(compile("\n" * (line) + code, str(README), "exec"), {"__name__": "__readme__"})
    out = capsys.readouterr().out
    missing = [w for w in PRINTS[i] if w not in out]
    assert not missing, f"README.md:{line}: the output lacks {missing}:\n{out}"


def test_readme_starts_with_the_two_commands():
    text = README.read_text()
    first_block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    cmds = [ln for ln in first_block.splitlines() if ln.strip() and not ln.startswith("#")]
    assert cmds[0].endswith("insdel demo")
    assert "pytest" in cmds[1]
    ci = (README.parent / ".ci" / "run").read_text()
    assert "python3 -m venv" in ci and "system-site-packages" not in ci
    # .ci/run reads the command from this block (second command line), so the two cannot drift
    assert "sed -n 2p" in ci and "README.md" in ci
