"""One page with the answer: ``insdel report RUN [RUN ...]`` (docs/report.md).

:func:`build_report` reads finished run folders (through :mod:`insdel.leaderboard` and the files
:mod:`insdel.leaderboard_runs` reads) and lays out, in order: the question, the **verdict** (which
methods are best, which cannot be told apart, under which removals the answer holds:
:func:`verdict_section`), then the evidence the folders hold: ABC with intervals per block, the
mean ranks, robustness across removals, ROAD, tuning (held-out pairs only), sanity flags, metric
reliability and every figure of every run. Each section names the files its numbers come from
(paths relative to the page). :meth:`Report.save` writes ``report.html`` (self-contained: inline
CSS, figures as base64 PNG, no script, no network) and ``report.md`` (the same sections, figures
written beside it in ``report_files/``).

Over runs with ``model.outputs`` (the leaderboard's :attr:`~insdel.leaderboard.Leaderboard.outputs`)
every per-block part is per (group, policy, output): a verdict, a critical-difference figure and
ABC tables for each output and for ``weighted``, titled ``data set / policy / output h`` (or
``/ weighted``), one table of overall ranks per output, and the weights stated; every number is
the leaderboard's own block, nothing is weighted again here.

The verdict is built on :mod:`insdel.verdicts` from each block's per-unit scores (the
leaderboard's comparisons): simultaneous rank intervals ("A is first with 95 % confidence", "A, B
and C cannot be told apart for first place"), Holm-adjusted orderings, the equivalence of
integrated gradients and Kernel SHAP, a critical-difference diagram per block;
:func:`verdict_section` is the one function that turns the runs into the verdict.
"""

from __future__ import annotations

import base64
import html
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import _checkpoint as ck
from ._validation import check_choice
from .leaderboard import Leaderboard, leaderboard, output_name
from .leaderboard_runs import KINDS, find_runs_noted, read_manifest, run_kind
from .verdicts import rank_intervals

__all__ = ["Section", "Report", "build_report", "verdict_section", "QUESTION"]

#: The question every report answers.
QUESTION = ("Which attribution method orders the features best, i.e. gives the largest area "
            "between the insertion (or deletion) curve and its straight line (ABC), and is the "
            "difference larger than the noise?")

#: Figures of one run embedded at most (the first, by path).
MAX_FIGURES_PER_RUN = 12


@dataclass
class Section:
    """One section of the page: a title, paragraphs, tables, figures and the files (absolute
    paths) its numbers come from."""

    title: str
    paragraphs: list = field(default_factory=list)
    tables: list = field(default_factory=list)     # (caption, DataFrame)
    figures: list = field(default_factory=list)    # (caption, PNG bytes)
    sources: list = field(default_factory=list)    # Path


def _score_files(board: Leaderboard) -> list[Path]:
    """The files the leaderboard's scores come from, per run used: every policy's
    ``abc.parquet`` (and ``metrics.parquet``), ROAD's ``road_summary.csv``, a tune run's
    ``held_out_abc.parquet``, a multi-output run's ``<policy>/output_<h>/abc.parquet``; the
    manifest when none is found."""
    out = []
    for p in board.groups.loc[board.groups["used"], "path"]:
        p = Path(p)
        files = sorted([*p.glob("*/abc.parquet"), *p.glob("*/output_*/abc.parquet"),
                        *p.glob("*/metrics.parquet"),
                        *p.glob("road_summary.csv"), *p.glob("held_out_abc.parquet")])
        out += files or [p / "manifest.json"]
    return out


def _png(fig) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _places(lo, hi) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "n/a"
    return f"{int(lo)}" if lo == hi else f"{int(lo)}–{int(hi)}"


def _primary(metrics) -> str | None:
    for m in ("total", "insertion", "deletion"):
        if m in metrics:
            return m
    return next(iter(metrics), None)


def _first_place(comp, adjust: str) -> tuple[list, bool, object]:
    """(methods that may be first, whether the first of them is first with the comparisons'
    confidence, the :class:`insdel.verdicts.RankIntervals`): simultaneous rank intervals
    (``adjust``: "maxt" or "holm") whose lower end is 1, best observed rank first."""
    ranks = rank_intervals(comp, adjust=adjust)
    order = np.argsort(ranks.rank, kind="stable")
    first = [ranks.methods[i] for i in order if ranks.low[i] == 1]
    sure = len(first) == 1 and ranks.high[ranks.methods.index(first[0])] == 1
    return first, sure, ranks


def _and(names: list) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def _point_best(blk: pd.DataFrame) -> list:
    return list(blk.loc[blk["rank"] == blk["rank"].min(), "method"])


def _equivalence_lines(board: Leaderboard, key: tuple) -> list[str]:
    """The block's equivalence verdicts (TOST) among its leaderboard verdict lines."""
    text = board.verdicts.get(key, "")
    return [ln[2:].strip().rstrip(".") for ln in text.splitlines()
            if ln.startswith("- Equivalence")]


def _block_keys(board: Leaderboard) -> list[str]:
    """The columns of :attr:`Leaderboard.blocks` one block is keyed by: (group, policy), and
    the output over multi-output runs (:attr:`Leaderboard.outputs`)."""
    return ["group", "policy"] + (["output"] if board.outputs else [])


def _where(blk: pd.DataFrame, key: tuple) -> str:
    """``data set / policy``, ``/ output h`` or ``/ weighted`` after it for a multi-output
    run's block (``key``: :func:`_block_keys`' values)."""
    return f"{blk['dataset'].iloc[0]} / {key[1]}" + "".join(f" / {output_name(o)}"
                                                             for o in key[2:])


def _outputs_paragraph(board: Leaderboard) -> list[str]:
    """The leaderboard's sentence on how multi-output runs are ranked and the weights of
    ``weighted`` (none for runs of one output)."""
    return [board.outputs_text().replace("`", "\"")] if board.outputs else []


def verdict_section(runs: Sequence[str | os.PathLike], *, board: Leaderboard | None = None,
                    n_boot: int = 1000, seed: int = 0, level: float = 0.95,
                    adjust: str = "maxt") -> Section:
    """The verdict: per block (data set x policy) which methods are best, which cannot be told
    apart from them, which orderings are significant and under which removals the answer holds.

    Built on :mod:`insdel.verdicts` from each block's per-unit scores (the leaderboard's
    :attr:`~insdel.leaderboard.Leaderboard.compared`: paired t tests of every pair of methods
    over the independent units, by the metric's direction): the simultaneous rank intervals
    (Neuhof & Benjamini; ``adjust="maxt"``: the max-T simultaneous intervals, ``"holm"``:
    Holm's directional decisions) say "A is first with 95 % confidence" or "A, B and C cannot
    be told apart for first place"; the significant orderings are Holm-adjusted; the
    equivalence of integrated gradients and Kernel SHAP (TOST, 0.1 of the spread of ABC) when
    both ran. A removal's answer holds when a method that may be first under the primary
    removal may be first under it too. Each block's critical-difference diagram
    (:func:`insdel.plotting.critical_difference`) is one figure.

    Parameters
    ----------
    runs : sequence of paths
        Run folders (as :func:`insdel.leaderboard.leaderboard` takes them).
    board : Leaderboard, optional
        Already built from ``runs`` (so the page's evidence and verdict share one resampling).
    n_boot, seed, level
        The leaderboard's settings when ``board`` is not given (``n_boot``: also the max-T's
        sign flips; ``level``: the confidence of the rank intervals and tests).
    adjust : {"maxt", "holm"}, default "maxt"
        The pairwise decisions the rank intervals rest on.

    Returns
    -------
    Section
        Paragraphs in plain words, a table ``block, metric, best, cannot be told apart from
        the best, significant orderings, holds under removals`` and one critical-difference
        figure per block.
    """
    check_choice("adjust", adjust, ("maxt", "holm"))
    if board is None:
        board = leaderboard(runs, n_boot=n_boot, seed=seed, level=level)
    sec = Section("Verdict", paragraphs=_outputs_paragraph(board))
    pct = f"{100 * board.level:g} %"
    rows = []
    for key, blk in board.blocks.groupby(_block_keys(board), sort=False):
        metrics = list(dict.fromkeys(blk["metric"]))
        m0 = _primary([m for m in metrics if "@" not in m])
        if m0 is None:
            continue
        b0 = blk[blk["metric"] == m0]
        label = board.labels.get(m0, m0)
        where = _where(b0, key)
        comp = board.compared.get((*key, m0))
        removals = [m.split("@", 1)[1] for m in metrics if m.startswith(m0 + "@")]
        if comp is None:  # one unit or one method: no test, the point rank only
            best, tied, sig = _point_best(b0), [], []
            text = (f"**{where}** ({label}): best {', '.join(best)} by its point rank only "
                    "(fewer than 2 units or methods: nothing can be tested)")
        else:
            first, sure, _ = _first_place(comp, adjust)
            best, tied = (first, []) if sure else (first[:1], first[1:])
            sig = [v for v in comp.verdicts("holm") if " > " in v]
            if sure:
                text = f"**{where}** ({label}): {best[0]} is first with {pct} confidence"
            else:
                text = (f"**{where}** ({label}): {_and(first)} cannot be told apart for first "
                        f"place ({pct} simultaneous rank intervals)")
            text += (f"; significant orderings (Holm, {len(comp.pairs)} comparisons over "
                     f"{comp.n_units} units): " + ("; ".join(sig) if sig else "none"))
        holds, fails = [], []
        for r in removals:
            cr = board.compared.get((*key, f"{m0}@{r}"))
            br = (_first_place(cr, adjust)[0] if cr is not None else
                  _point_best(blk[blk["metric"] == f"{m0}@{r}"]))
            (holds if set(best + tied) & set(br) else fails).append(
                f"{r} (may be first: {', '.join(br)})")
        if removals:
            text += ("; the answer holds under every other removal (" if not fails
                     else "; the answer changes under ") + "; ".join(fails or holds) + (
                ")" if not fails else ("" if not holds else f"; it holds under {'; '.join(holds)}"))
        sec.paragraphs.append(text + ".")
        sec.paragraphs += [f"{where} ({label}): {e}." for e in _equivalence_lines(
            board, (*key, m0))]
        rows.append({"block": where, "metric": label, "best": ", ".join(best),
                     "cannot be told apart from the best": ", ".join(tied) or "none",
                     "significant orderings (Holm)": "; ".join(
                         s.split(" (p")[0] for s in sig) or "none",
                     "holds under removals": ("n/a (one removal)" if not removals else
                                              ", ".join(h.split(" (")[0] for h in holds)
                                              or "none")})
        if comp is not None:
            from .plotting import critical_difference

            ax = critical_difference(comp, adjust="holm")
            ax.set_title(f"{where}: {label}\n{ax.get_title()}", fontsize=9)
            sec.figures.append((f"{where}, {label}: critical-difference diagram (bars join "
                                "methods that cannot be told apart, Holm)", _png(ax.figure)))
    if rows:
        sec.tables.append((f"Verdict per block ({pct} simultaneous rank intervals over "
                           f"independent units ({'max-T' if adjust == 'maxt' else 'Holm'}); "
                           "orderings Holm-adjusted)", pd.DataFrame(rows)))
    else:
        sec.paragraphs.append("No run among these ranks methods (insertion/deletion, ROAD or "
                              "tuning runs); the evidence below is what the folders hold.")
    sec.sources += _score_files(board)
    return sec


def _blocks_section(board: Leaderboard) -> Section:
    sec = Section("Evidence: ABC with intervals")
    sec.paragraphs.append("Per block: mean ± standard error over independent units, the rank "
                          "(median of the bootstrap replicates) with its interval, and the "
                          "places (a range: tied within the noise).")
    sec.paragraphs += _outputs_paragraph(board)
    for key, blk in board.blocks.groupby(_block_keys(board), sort=False):
        base = blk[~blk["metric"].str.contains("@")]
        for m, d in base.groupby("metric", sort=False):
            d = d.sort_values("rank", kind="stable")
            t = pd.DataFrame({
                "method": d["method"],
                "mean ± s.e.": [f"{a:.4f} ± {b:.4f}" if np.isfinite(b) else f"{a:.4f}"
                                for a, b in zip(d["mean"], d["se"], strict=True)],
                "rank [interval]": [f"{r:g} [{lo:g}, {hi:g}]" if np.isfinite(lo) else f"{r:g}"
                                    for r, lo, hi in zip(d["rank"], d["rank_low"],
                                                         d["rank_high"], strict=True)],
                "places": [_places(a, b) for a, b in zip(d["place_low"], d["place_high"],
                                                         strict=True)],
                "pairs": d["n_pairs"], "units": d["n_units"]})
            sec.tables.append((f"{_where(d, key)}: {board.labels.get(m, m)} (group {key[0]})",
                               t))
    sec.tables += _overall_tables(board)
    sec.sources += _score_files(board)
    if len(board.overall):
        sec.figures.append(("Mean rank over blocks with its bootstrap interval (leaderboard"
                            + ("; one panel per output and metric)" if board.outputs else ")"),
                            _png(board.figure())))
    return sec


def _overall_tables(board: Leaderboard) -> list[tuple[str, pd.DataFrame]]:
    """Over multi-output runs, one table per output (``output 0`` .. ``weighted``) of the
    leaderboard's overall ranks (:attr:`Leaderboard.overall`): per method and metric the mean
    rank [interval] (places); none for runs of one output (the figure shows them)."""
    out = []
    for o in board.outputs:
        ov = board.overall[board.overall["output"] == o]
        if ov.empty:
            continue
        t = {}
        for m, d in ov.groupby("metric", sort=False):
            t[board.labels.get(m, m)] = {
                r.method: (f"{r.mean_rank:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}]"
                           if np.isfinite(r.ci_low) else f"{r.mean_rank:.2f}")
                + f" ({_places(r.place_low, r.place_high)})" for r in d.itertuples()}
        first = ov[ov["metric"] == ov["metric"].iloc[0]].sort_values("mean_rank", kind="stable")
        order = [*first["method"], *(m for m in dict.fromkeys(ov["method"])
                                     if m not in set(first["method"]))]
        out.append((f"Overall ranks, {output_name(o)}: mean rank over the {output_name(o)} "
                    f"blocks [{100 * board.level:g} % bootstrap interval] (places); 1 = best", pd.DataFrame(t).reindex(order).fillna("n/a")
                    .rename_axis("method").reset_index()))
    return out


def _removals_section(board: Leaderboard) -> Section | None:
    at = board.blocks[board.blocks["metric"].str.contains("@")]
    if at.empty:
        return None
    sec = Section("Evidence: robustness across removals")
    sec.paragraphs.append("Each method's rank (places) under each removal of a run: the primary "
                          "removal's ABC, then each further removal's (<policy>/removal-NAME/).")
    for key, blk in board.blocks.groupby(_block_keys(board), sort=False):
        for m0 in ("insertion", "deletion", "total"):
            ms = [m0] + sorted(m for m in set(blk["metric"]) if m.startswith(m0 + "@"))
            if len(ms) < 2:
                continue
            t = {}
            for m in ms:
                d = blk[blk["metric"] == m].set_index("method")
                t["primary" if m == m0 else m.split("@", 1)[1]] = {
                    k: f"{r['rank']:g} ({_places(r['place_low'], r['place_high'])})"
                    for k, r in d.iterrows()}
            sec.tables.append((f"{_where(blk, key)}: rank (places) of "
                               f"{board.labels.get(m0, m0)} per removal",
                               pd.DataFrame(t).rename_axis("method").reset_index()))
        for p in board.groups.loc[board.groups["used"] & (board.groups["group"] == key[0]),
                                  "path"]:
            sec.sources += sorted([*Path(p).glob("*/removal-*/abc.parquet"),
                                   *Path(p).glob("*/removal-*/output_*/abc.parquet")])
    return sec


def _csv_section(title: str, text: str, files: list[Path], columns: list | None = None
                 ) -> Section | None:
    if not files:
        return None
    sec = Section(title, paragraphs=[text])
    for f in files:
        df = pd.read_csv(f)
        if columns is not None:
            df = df[[c for c in columns if c in df.columns]]
        sec.tables.append((f.parent.name, df))
        sec.sources.append(f)
    return sec


def _checks_section(board: Leaderboard | None, found: list[Path]) -> list[Section]:
    out = []
    flags = [p / "sanity_flags.csv" for p in found if (p / "sanity_flags.csv").is_file()]
    sec = _csv_section("Evidence: sanity flags",
                       "Randomisation checks (insdel sanity): a flagged method's attributions "
                       "barely change when the model (or its labels) are randomised; its rank "
                       "says little about the model.", flags)
    if sec is not None:
        for i, (cap, df) in enumerate(sec.tables):
            if "flagged" in df.columns:
                df = df.assign(flagged=df["flagged"].map(
                    lambda v: "FLAGGED" if str(v).lower() in ("true", "1") else "passes"))
            sec.tables[i] = (cap, df)
        if board is not None and not board.sanity.empty:
            bad = list(board.sanity.loc[board.sanity["randomisation"] == "fails", "method"])
            sec.paragraphs.append("Methods failing a check: " + (", ".join(bad) or "none") + ".")
        out.append(sec)
    rel = [p / "reliability.csv" for p in found if (p / "reliability.csv").is_file()]
    sec = _csv_section("Evidence: metric reliability",
                       "MetaQuantus-style reliability of the metrics: resilience (stable under "
                       "perturbations that should not matter), reactivity (moves under those "
                       "that should), their meta-consistency MC; below "
                       f"{board.min_reliability if board is not None else 0.6:g} is unreliable.",
                       rel, ["metric", "resilience", "reactivity", "mc"])
    if sec is not None:
        out.append(sec)
    return out


def _figures_section(found: list[Path]) -> Section | None:
    sec = Section("Evidence: curves and figures of the runs")
    for p in found:
        pngs = sorted(p.rglob("figures/*.png"))[:MAX_FIGURES_PER_RUN]
        for f in pngs:
            sec.figures.append((f"{p.name}: {f.relative_to(p)}", f.read_bytes()))
            sec.sources.append(f)
    return sec if sec.figures else None


def _runs_section(found: list[Path], notes: list[str]) -> Section:
    rows = []
    for p in found:
        try:
            kind = run_kind(read_manifest(p))
        except (OSError, ValueError) as exc:
            kind = f"unreadable ({exc})"
        rows.append({"run": p.name, "kind": KINDS.get(kind, kind), "folder": p})
    sec = Section("Runs read", tables=[("Run folders", pd.DataFrame(rows))],
                  sources=[p / "manifest.json" for p in found])
    sec.paragraphs += list(notes)
    return sec


@dataclass
class Report:
    """The page's sections (:func:`build_report`); :meth:`to_html`, :meth:`to_markdown`,
    :meth:`save`."""

    title: str
    sections: list
    runs: list

    def _rel(self, p: Path, base: Path | None) -> str:
        if base is None:
            return str(p)
        return os.path.relpath(Path(p).resolve(), Path(base).resolve())

    def to_markdown(self, base: str | os.PathLike | None = None, *,
                    figure_dir: str | os.PathLike | None = None) -> str:
        """The page as Markdown; paths relative to ``base``; figures written into
        ``figure_dir`` (relative to ``base``) and linked, or left out without one."""
        lines = [f"# {self.title}", "", f"**The question.** {QUESTION}", ""]
        k = 0
        for sec in self.sections:
            lines += [f"## {sec.title}", ""]
            for para in sec.paragraphs:
                lines += [para, ""]
            for cap, df in sec.tables:
                lines += [f"*{cap}*", "", _md_table(df, lambda p: self._rel(p, base)), ""]
            for cap, png in sec.figures:
                if figure_dir is None:
                    continue
                k += 1
                f = Path(base or ".") / figure_dir / f"figure-{k:02d}.png"
                f.parent.mkdir(parents=True, exist_ok=True)
                ck.atomic_write_bytes(f, png)
                lines += [f"![{cap}]({Path(figure_dir).as_posix()}/{f.name})", "", f"*{cap}*",
                          ""]
            if sec.sources:
                lines += ["Source: " + ", ".join(f"[{self._rel(s, base)}]({self._rel(s, base)})"
                                                 for s in dict.fromkeys(sec.sources)), ""]
        return "\n".join(lines)

    def to_html(self, base: str | os.PathLike | None = None) -> str:
        """The page as one self-contained HTML document (inline CSS, base64 figures, no script);
        paths relative to ``base``."""
        e = html.escape
        body = [f"<h1>{e(self.title)}</h1>",
                f'<p class="question"><strong>The question.</strong> {e(QUESTION)}</p>',
                '<nav><ul>' + "".join(f'<li><a href="#s{i}">{e(s.title)}</a></li>'
                                      for i, s in enumerate(self.sections)) + "</ul></nav>"]
        for i, sec in enumerate(self.sections):
            body.append(f'<section id="s{i}"><h2>{e(sec.title)}</h2>')
            for para in sec.paragraphs:
                body.append(f"<p>{_inline(para)}</p>")
            for cap, df in sec.tables:
                body.append(f'<div class="scroll"><table><caption>{e(cap)}</caption>'
                            + _html_table(df, lambda p: self._rel(p, base)) + "</table></div>")
            for cap, png in sec.figures:
                data = base64.b64encode(png).decode("ascii")
                body.append(f'<figure><img src="data:image/png;base64,{data}" alt="{e(cap)}">'
                            f"<figcaption>{e(cap)}</figcaption></figure>")
            if sec.sources:
                links = ", ".join(f'<a href="{e(self._rel(s, base))}">{e(self._rel(s, base))}'
                                  "</a>" for s in dict.fromkeys(sec.sources))
                body.append(f'<p class="source">Source: {links}</p>')
            body.append("</section>")
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                f"<title>{e(self.title)}</title><style>{_CSS}</style></head><body><main>"
                + "\n".join(body) + "</main></body></html>\n")

    def save(self, out: str | os.PathLike) -> list[Path]:
        """Write ``report.html`` and ``report.md`` (figures in ``report_files/``) into ``out``;
        returns their paths."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        ck.atomic_write_text(out / "report.html", self.to_html(out))
        ck.atomic_write_text(out / "report.md", self.to_markdown(out, figure_dir="report_files"))
        return [out / "report.html", out / "report.md"]


_CSS = """
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1b1b;
background:#fafafa}
main{max-width:1100px;margin:0 auto;padding:1rem 1.25rem 3rem;background:#fff}
h1{font-size:1.6rem;margin:.5rem 0 1rem}h2{font-size:1.25rem;border-bottom:1px solid #ddd;
padding-bottom:.2rem;margin-top:2rem}
p,li,figcaption,caption,a{overflow-wrap:anywhere}
.question{background:#eef4fb;border-left:4px solid #3b7dd8;padding:.6rem .8rem}
nav ul{display:flex;flex-wrap:wrap;gap:.3rem 1rem;padding:0;list-style:none}
.scroll{overflow-x:auto;max-width:100%;margin:.8rem 0}
table{border-collapse:collapse;font-size:.88rem}
caption{text-align:left;font-weight:600;padding:.3rem 0;caption-side:top}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:1rem 0}img{max-width:100%;height:auto;display:block}
figcaption{font-size:.85rem;color:#555}
.source{font-size:.8rem;color:#555}
"""


def _inline(text: str) -> str:
    """Escape ``text``; ``**bold**`` becomes <strong>."""
    parts = html.escape(text).split("**")
    return "".join(f"<strong>{p}</strong>" if i % 2 else p for i, p in enumerate(parts))


def _cell(v, rel) -> str:
    if isinstance(v, Path):
        return rel(v)
    if isinstance(v, float):
        return f"{v:.4g}" if np.isfinite(v) else "n/a"
    return str(v)


def _html_table(df: pd.DataFrame, rel) -> str:
    e = html.escape
    head = "<thead><tr>" + "".join(f"<th>{e(str(c))}</th>" for c in df.columns) + "</tr></thead>"
    rows = []
    for r in df.itertuples(index=False):
        cells = []
        for v in r:
            if isinstance(v, Path):
                cells.append(f'<td><a href="{e(rel(v))}">{e(rel(v))}</a></td>')
            else:
                num = isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
                cls = ' class="num"' if num else ""
                cells.append(f"<td{cls}>{e(_cell(v, rel))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return head + "<tbody>" + "".join(rows) + "</tbody>"


def _md_table(df: pd.DataFrame, rel) -> str:
    def esc(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    out = ["| " + " | ".join(esc(str(c)) for c in df.columns) + " |",
           "|" + "---|" * len(df.columns)]
    for r in df.itertuples(index=False):
        out.append("| " + " | ".join(esc(_cell(v, rel)) for v in r) + " |")
    return "\n".join(out)


def build_report(run_dirs: Sequence[str | os.PathLike], *, n_boot: int = 1000, seed: int = 0,
                 level: float = 0.95, title: str | None = None) -> Report:
    """The report of finished run folders: the question, the verdict, then the evidence.

    Parameters
    ----------
    run_dirs : sequence of paths
        Run folders (or folders holding them one level down): insertion/deletion, ROAD and
        tuning runs are ranked (:func:`insdel.leaderboard.leaderboard`); sanity runs give the
        flags and the metrics' reliability; every run's ``figures/*.png`` are embedded. Runs
        with ``model.outputs`` (all with the same outputs and weights, as the leaderboard
        requires) get every block per output and ``weighted``, and the overall ranks per
        output.
    n_boot, seed, level
        The leaderboard's bootstrap (rank intervals and places).
    title : str, optional

    Returns
    -------
    Report

    Raises
    ------
    FileNotFoundError
        A path without a finished run.
    """
    found, notes = find_runs_noted(run_dirs)
    kinds = {}
    for p in found:
        try:
            kinds[p] = run_kind(read_manifest(p))
        except (OSError, ValueError):
            kinds[p] = "unknown"
    ranked = [p for p in found if kinds[p] in ("evaluation", "road", "tune")]
    board = None
    if ranked:
        board = leaderboard(found, n_boot=n_boot, seed=seed, level=level)
        notes = notes + list(board.notes)
    sections = [verdict_section(found, board=board) if board is not None else Section(
        "Verdict", paragraphs=["No run among these ranks methods (insertion/deletion, ROAD or "
                               "tuning runs): there is no verdict on which method is best; the "
                               "evidence below is what the folders hold."])]
    if board is not None:
        sections.append(_blocks_section(board))
        rem = _removals_section(board)
        if rem is not None:
            sections.append(rem)
    for title_, text, name, cols in (
            ("Evidence: ROAD", "ROAD (remove and debias, insdel road): SRG and the MoRF / LeRF "
             "areas per method, with SRG's standard error over rows.",
             "road_summary.csv", None),
            ("Evidence: tuning (held-out pairs)", "insdel tune: each method's tuned settings "
             "scored on held-out pairs, the gain over its defaults there and the optimism "
             "(tuning minus held-out ABC); only held-out numbers are ranked.",
             "tune_summary.csv", None)):
        sec = _csv_section(title_, text, [p / name for p in found if (p / name).is_file()],
                           cols)
        if sec is not None:
            sections.append(sec)
    sections += _checks_section(board, found)
    figs = _figures_section(found)
    if figs is not None:
        sections.append(figs)
    sections.append(_runs_section(found, notes))
    return Report(title=title or "insdel report: " + ", ".join(p.name for p in found),
                  sections=sections, runs=found)
