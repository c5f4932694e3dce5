"""Run attribution methods through the functional-test catalogue: one pass/fail row per criterion.

Methods are run through :func:`insdel.attribute` with the case's pairs. A method is named by an
attribution method of :mod:`insdel.attribution` (or an alias) or by a variant defined here
(``ig_interpolate``, ``ig_jump``: integrated gradients with that binary mode). Gradient methods
run on the cases' torch models directly; every case passes its binary features to integrated
gradients as ``binary=``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import attribution
from .._validation import check_bool, check_seed
from .cases import Truth, select
from .criteria import criteria_names

__all__ = ["MethodSpec", "VARIANTS", "DEFAULT_METHODS", "resolve_methods", "run_catalogue",
           "to_markdown", "attributions_of", "failure_summary", "exit_code"]


@dataclass(frozen=True)
class MethodSpec:
    """A named attribution method with fixed options.

    Parameters
    ----------
    label : str
        Name in the tables.
    method : str
        A method of :func:`insdel.attribution.available`.
    options : dict
        Keyword options for :func:`insdel.attribute`.
    """

    label: str
    method: str
    options: dict = field(default_factory=dict)


#: Variants of the registered methods, by label.
VARIANTS: dict[str, MethodSpec] = {
    "ig_cast": MethodSpec("ig_cast", "integrated_gradients", {"binary_mode": "cast"}),
    "ig_interpolate": MethodSpec("ig_interpolate", "integrated_gradients",
                                 {"binary_mode": "interpolate"}),
    "ig_jump": MethodSpec("ig_jump", "integrated_gradients", {"binary_mode": "jump"}),
}

#: The methods ``insdel functional`` runs by default.
DEFAULT_METHODS = ("exact_shapley", "kernel_shap", "integrated_gradients", "ig_interpolate",
                   "ig_jump", "deeplift", "vanilla_grad", "input_x_gradient", "lime", "random")


def resolve_methods(methods: Sequence[str | MethodSpec] | str | None) -> list[MethodSpec]:
    """MethodSpecs from names (a comma-separated string, a list, or None for the defaults).

    Raises
    ------
    ValueError
        An unknown name (with the closest valid one).
    """
    if methods is None:
        methods = DEFAULT_METHODS
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    if not methods:
        raise ValueError("methods: name at least one method.")
    out = []
    for m in methods:
        if isinstance(m, MethodSpec):
            out.append(m)
        elif m in VARIANTS:
            out.append(VARIANTS[m])
        else:
            try:
                name = attribution.get(m).name
            except ValueError as exc:
                raise ValueError(f"methods: {exc} Functional-test variants: "
                                 f"{sorted(VARIANTS)}.") from None
            out.append(MethodSpec(m, name))
    return out


def attributions_of(spec: MethodSpec, truth: Truth, *, seed: int = 0) -> np.ndarray:
    """Attributions (B, n) of one method on one built case (seeded methods get ``seed``)."""
    valid = attribution.options_of(spec.method)
    opts: dict[str, Any] = dict(spec.options)
    if "seed" in valid:
        opts.setdefault("seed", seed)
    if "progress" in valid:
        opts.setdefault("progress", False)
    if spec.method == "integrated_gradients" and (truth.binary or "binary_mode" in opts):
        # a case without binary features gets binary=[]: ig_jump / ig_interpolate are plain IG
        # there (IG refuses a binary_mode without binary=, which failed every such case)
        opts.setdefault("binary", list(truth.binary))
    return attribution.attribute(truth.f, truth.X, truth.R, spec.method, **opts)


def run_catalogue(methods: Sequence[str | MethodSpec] | str | None = None, *, seed: int = 0,
                  cases: Sequence[str] | None = None) -> pd.DataFrame:
    """Run methods through the functional tests; one row per (test, criterion, method).

    Parameters
    ----------
    methods : list of str or MethodSpec, or comma-separated str, optional
        Attribution methods (:func:`insdel.attribution.available`, aliases, or the variants
        ``ig_cast``, ``ig_interpolate``, ``ig_jump``); default :data:`DEFAULT_METHODS`.
    seed : int, default 0
        Seed of the cases' data and of seeded methods.
    cases : list of str, optional
        Which tests (:func:`insdel.functional.available`); all by default.

    Returns
    -------
    pandas.DataFrame
        Columns ``test, criterion, method, passed, measured, tol, criterion_text,
        shapley_passes, seconds, error``. A method that cannot run on a case (e.g. an error
        from the method) fails all its criteria there with the error recorded.
    """
    seed = check_seed(seed)
    specs = resolve_methods(methods)
    rows = []
    for case in select(cases):
        truth = case.truth(seed=seed)
        names = criteria_names(case.criteria)
        for spec in specs:
            t0 = time.perf_counter()
            err = ""
            try:
                A = attributions_of(spec, truth, seed=seed)
            except (ValueError, TypeError, RuntimeError) as exc:
                A, err = None, f"{type(exc).__name__}: {exc}"
            secs = time.perf_counter() - t0
            for name, crit in zip(names, case.criteria, strict=True):
                ok, m = (False, float("nan")) if A is None else crit(truth, A)
                rows.append({"test": case.name, "criterion": name, "method": spec.label,
                             "passed": ok, "measured": m, "tol": crit.tol,
                             "criterion_text": crit.text,
                             "shapley_passes": crit.shapley_passes, "seconds": secs,
                             "error": err})
    return pd.DataFrame(rows)


def _fmt(v: float) -> str:
    if not np.isfinite(v):
        return "n/a"
    return f"{v:.2g}" if v != 0 else "0"


def to_markdown(results: pd.DataFrame) -> str:
    """Pass/fail table as Markdown: one row per (test, criterion), one column per method;
    cells ``PASS 3e-16`` / ``fail 0.42`` with the measured value, then a per-method tally."""
    methods = list(dict.fromkeys(results["method"]))
    head = ["test", "criterion", "pass if", *methods]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    keys = list(dict.fromkeys(zip(results["test"], results["criterion"], strict=True)))
    idx = results.set_index(["test", "criterion", "method"])
    for test, crit in keys:
        text = str(idx.loc[(test, crit, methods[0]), "criterion_text"]).replace("|", "\\|")
        cells = []
        for m in methods:
            r = idx.loc[(test, crit, m)]
            cells.append(("PASS " if r["passed"] else "fail ") + _fmt(r["measured"]))
        lines.append("| " + " | ".join([test, crit, text, *cells]) + " |")
    tally = results.groupby("method", sort=False)["passed"].agg(["sum", "count"])
    lines.append("| **passed** | | | " + " | ".join(
        f"**{int(tally.loc[m, 'sum'])}/{int(tally.loc[m, 'count'])}**" for m in methods) + " |")
    return "\n".join(lines)




_LISTED = 3  # failures named per method in the one-line summary


def _passed(results: pd.DataFrame) -> np.ndarray:
    """``results["passed"]`` as a bool array; anything but booleans (e.g. the strings of a CSV
    read back) is refused, since its truthiness would count every "False" as a pass."""
    need = {"test", "criterion", "method", "passed"}
    if not isinstance(results, pd.DataFrame) or not need <= set(results.columns):
        cols = list(results.columns) if isinstance(results, pd.DataFrame) else type(results).__name__
        raise ValueError(f"results must be a run_catalogue table with columns {sorted(need)}; "
                         f"got {cols}.")
    col = results["passed"]
    if col.dtype != bool and not all(isinstance(v, (bool, np.bool_)) for v in col):
        bad = next(v for v in col if not isinstance(v, (bool, np.bool_)))
        raise ValueError(f"results['passed'] must hold True / False; got {bad!r} "
                         f"({type(bad).__name__}).")
    return col.to_numpy(dtype=bool)


def failure_summary(results: pd.DataFrame) -> str:
    """One line naming each method's failed criteria (``test/criterion``; a case where the method
    raised is named once, with the exception type); ``""`` when every criterion passed.

    Example: ``"3 of 20 criteria failed: lime 2 (additive/matches_shapley, additive/efficiency),
    random 1 (additive/ranks_last)"``.
    """
    ok = _passed(results)
    if ok.all():
        return ""
    failed = results.loc[~ok]
    errors = failed["error"] if "error" in failed.columns else pd.Series("", index=failed.index)
    parts = []
    for method, g in failed.groupby("method", sort=False):
        names: list[str] = []
        for (test, crit), err in zip(zip(g["test"], g["criterion"], strict=True),
                                     errors.loc[g.index], strict=True):
            if isinstance(err, str) and err:
                name = f"{test} (raised {err.split(':', 1)[0]})"
                if name not in names:
                    names.append(name)
            else:
                names.append(f"{test}/{crit}")
        shown = ", ".join(names[:_LISTED])
        if len(names) > _LISTED:
            shown += f", +{len(names) - _LISTED} more"
        parts.append(f"{method} {len(g)} ({shown})")
    return (f"{int((~ok).sum())} of {len(ok)} criteria failed: " + ", ".join(parts))


def exit_code(results: pd.DataFrame, *, strict: bool = False, file=None) -> int:
    """Exit status of ``insdel functional`` for a :func:`run_catalogue` table.

    A failed criterion is a result, not a crash: 0 by default. With ``strict=True``
    (``--strict``), 1 when any method fails any criterion (an exception in the method included),
    after printing :func:`failure_summary` as one line to ``file`` (default ``sys.stderr``).
    The metric grades are not counted.
    """
    strict = check_bool(strict, "strict")
    ok = _passed(results)  # validated whatever strict is
    if not strict or ok.all():
        return 0
    print(f"insdel functional --strict: {failure_summary(results)}",
          file=sys.stderr if file is None else file)
    return 1
