"""Run every benchmark in ``bench/`` and collect their tables into ``bench/RESULTS.md``.

Each script runs in its own process (``sys.executable``), one after the other, so they do not compete
for the cores; its printed tables are captured verbatim. The Markdown file starts with the machine
(CPU model, cores, torch threads, library versions, load average, date, git revision) and a summary of
what ran and how long it took; a script that fails is reported with the tail of its stderr and the
others still run (the exit status is then non-zero).

Usage: ``python bench/run_all.py [--tiny] [--only curves peers ...] [--skip ...] [--threads N]
[--output bench/RESULTS.md] [--timeout 900]``

``--tiny`` passes ``--tiny`` to every script (seconds each; the test suite does this). ``--threads``
sets torch's thread count in the scripts that accept ``--threads`` (useful on a shared machine).
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine_info, markdown_table  # noqa: E402

#: (name, script, extra arguments for a full run, accepts --threads, what it measures)
SCRIPTS: list[tuple[str, str, list[str], bool, str]] = [
    ("curves", "curves.py", [], True,
     "insertion + deletion curves: insdel vs per-pair / per-point loops vs bare forward pass"),
    ("peers", "peers.py", [], True,
     "deletion curves: insdel vs Quantus PixelFlipping / RegionPerturbation vs bare forward pass"),
    ("images", "images.py", [], True,
     "grouped image deletion (digits CNN, 1,000 images, step 4) vs Quantus PixelFlipping"),
    ("metrics_suite", "metrics_suite.py", [], True,
     "the faithfulness-metric suite from one engine vs Quantus' metrics one by one"),
    ("scaling", "scaling.py", [], False,
     "curve time against n (8..256) and B (100..100,000) and where it goes"),
    ("decomposition", "decomposition.py", ["--pairs", "20"], False,
     "anchored decomposition overhead at n = 16, best order, exact Shapley vs shap / captum (n=12)"),
    ("interactions", "interactions.py", [], False,
     "interaction indices at |D| = 22 beside the decomposition; shapiq ExactComputer n = 8..14"),
    ("shapley_budget", "shapley_budget.py", [], True,
     "exact Shapley at n = 12 and 16 vs shap exact and captum KernelShap with the same budget"),
    ("attribution", "attribution.py", [], False,
     "integrated gradients (500 steps) vs captum; time per point of every method"),
    ("policies", "policies.py", [], False,
     "counterfactual reference selection on pools of 2,000 and 10,000"),
    ("removal_sampling", "removal_sampling.py", [], False,
     "sampled removals at n = 16, M = 32: sample() vs the model's forward pass over its rows"),
    ("removal_stationary", "removal_stationary.py", [], False,
     "stationary_gaussian curves, 300 windows 48 x 8 over 32 lag x channel blocks, vs baseline"),
    ("cohort", "cohort.py", [], False,
     "observational (cohort) curves on the Bangalore simulator, IGCS, IGCS against cohort Shapley"),
    ("tree_marginal", "tree_marginal.py", [], False,
     "marginal removal of trees, K = 1,000: Shapley + E[ABC] vs woodelf and shap interventional"),
    ("dask_scaling", "dask_scaling.py", [], False,
     "exact Shapley on the CERN MLP: serial vs Dask LocalCluster(1) vs LocalCluster(2)"),
    ("sanity", "sanity.py", [], True,
     "cascading parameter randomisation of the CERN MLP: 7 layers, 7 methods, 200 targets"),
    ("interaction_orders", "interaction_orders.py", ["--pairs", "20"], False,
     "not a timing: the Shapley-to-best gap the interaction-aware orderings close per experiment"),
    ("multi_output", "multi_output.py", [], False,
     "H = 24 outputs vs H = 1 on the same rows; 10,000 series x 48 x 8, H = 12; tint's mse / mae"),
    ("tree_game", "tree_game.py", [], False,
     "the tree game's closed forms (patterns, curves, E[ABC], Shapley) vs predict over the rows"),
    ("trees_scale", "trees_scale.py", ["--pairs", "2000"], False,
     "the tree engine at n = 200, XGBoost 500 trees of depth 8: vs XGBoost predict and shap"),
    ("paper_cost", "paper_cost.py", [], False,
     "the full paper-bangalore run measured whole; paper-cern from per-unit costs and its bound"),
    ("verdicts", "verdicts.py", [], False,
     "not a timing: FWER of Holm / max-T, rank-interval coverage, the planner on 1,000 boards"),
]


def _is_markdown(text: str) -> bool:
    return any(line.lstrip().startswith("| ---") or line.lstrip().startswith("|---")
               for line in text.splitlines())


def normalise_markdown(text: str) -> str:
    """Fit a script's printed Markdown into the document: its headings go one level down, its
    ``# comment`` lines become quoted lines, and every table gets a blank line before it."""
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("#") and line.lstrip("#").startswith(" "):
            level = len(line) - len(line.lstrip("#"))
            line = ("#" * (level + 1) + line[level:]) if level >= 2 else "> " + line[2:]
        is_row = line.lstrip().startswith("|")
        if is_row and out and out[-1].strip() and not out[-1].lstrip().startswith("|"):
            out.append("")
        if not is_row and out and out[-1].lstrip().startswith("|") and line.strip():
            out.append("")
        if line.startswith("> ") and out and out[-1].strip() and not out[-1].startswith("> "):
            out.append("")
        out.append(line)
    return "\n".join(out)


def run_script(script: Path, args: list[str], timeout: float) -> dict:
    """Run one script; returns its stdout, stderr, exit status and wall time."""
    cmd = [sys.executable, str(script), *args]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=HERE.parent)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc = "timeout"
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
    return {"cmd": cmd, "rc": rc, "stdout": out, "stderr": err, "wall": time.perf_counter() - t0}


def render(results: list[dict], info: dict, argv: list[str], tiny: bool) -> str:
    """The Markdown document."""
    lines = ["# insdel benchmark results", ""]
    lines.append("Generated by `python bench/run_all.py" + ("" if not argv else " " + shlex.join(argv))
                 + "`; do not edit by hand. How to read the ratios: bench/README.md.")
    if tiny:
        lines += ["", "**`--tiny` run: smoke-test sizes, the timings mean nothing.**"]
    lines += ["", "## Machine", ""]
    lines.append(markdown_table(["", ""], [[k, v] for k, v in info.items()], align=["l", "l"]))
    lines += ["", "## What ran", ""]
    rows = []
    for r in results:
        status = "ok" if r["rc"] == 0 else f"FAILED ({r['rc']})"
        rows.append([f"`bench/{r['script']}`", r["what"], status, f"{r['wall']:.0f}"])
    lines.append(markdown_table(["script", "measures", "status", "wall s"], rows,
                                align=["l", "l", "l", "r"]))
    for r in results:
        lines += ["", f"## bench/{r['script']}", ""]
        lines.append(f"Command: `{shlex.join(['python', 'bench/' + r['script'], *r['args']])}` "
                     f"(wall {r['wall']:.0f} s)")
        lines.append("")
        out = r["stdout"].rstrip()
        if out:
            lines.append(normalise_markdown(out) if _is_markdown(out)
                         else "```text\n" + out + "\n```")
        if r["rc"] != 0:
            tail = "\n".join(r["stderr"].rstrip().splitlines()[-25:])
            lines += ["", f"**Failed ({r['rc']}).** Last lines of stderr:", "",
                      "```text", tail, "```"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = [s[0] for s in SCRIPTS]
    p.add_argument("--tiny", action="store_true", help="pass --tiny to every script")
    p.add_argument("--only", nargs="+", choices=names, help="run only these")
    p.add_argument("--skip", nargs="+", choices=names, default=[], help="do not run these")
    p.add_argument("--threads", type=int, default=None,
                   help="torch threads in the scripts that accept --threads")
    p.add_argument("--output", type=Path, default=HERE / "RESULTS.md")
    p.add_argument("--timeout", type=float, default=900, help="seconds per script")
    a = p.parse_args(argv)

    info = machine_info()
    if a.threads:
        info["torch"] += f"; scripts with --threads ran with {a.threads}"
    results = []
    for name, script, full_args, threads_ok, what in SCRIPTS:
        if (a.only and name not in a.only) or name in a.skip:
            continue
        path = HERE / script
        if not path.exists():
            results.append({"name": name, "script": script, "args": [], "what": what,
                            "rc": "missing", "stdout": "", "stderr": f"{path} does not exist",
                            "wall": 0.0})
            continue
        args = ["--tiny"] if a.tiny else list(full_args)
        if a.threads and threads_ok:
            args += ["--threads", str(a.threads)]
        print(f"running bench/{script} {' '.join(args)} ...", flush=True)
        r = run_script(path, args, a.timeout)
        r.update(name=name, script=script, args=args, what=what)
        print(f"  {'ok' if r['rc'] == 0 else 'FAILED (' + str(r['rc']) + ')'} in {r['wall']:.1f} s",
              flush=True)
        if r["rc"] != 0:
            print("\n".join(r["stderr"].rstrip().splitlines()[-10:]), file=sys.stderr)
        results.append(r)

    info["load average after (1/5/15 min)"] = machine_info()["load average (1/5/15 min)"]
    a.output.write_text(render(results, info, argv, a.tiny))
    print(f"wrote {a.output}")
    return 0 if all(r["rc"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
