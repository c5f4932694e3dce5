"""The README's Python example runs as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs(capsys):
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    exec(compile(code, str(README), "exec"), {})
    out = capsys.readouterr().out
    assert "integrated_gradients" in out and "std_error" in out


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
