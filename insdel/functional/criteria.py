"""Pass criteria of the functional tests: each one a method's attributions either meet or fail.

A criterion is called as ``criterion(truth, A) -> (passed, measured)`` where ``truth`` is the
case's :class:`~insdel.functional.cases.Truth` (pairs, exact Shapley values, anchored
decomposition) and ``A`` the method's attributions (B, n). ``measured`` is the number compared
with the tolerance (printed in the tables). ``shapley_passes`` records what exact Shapley values
must do on the criterion (the catalogue's own check; the §3.4 counterexample is built so that
they fail the AUC-optimality criterion).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..tracing import orderings

if TYPE_CHECKING:  # pragma: no cover
    from .cases import Truth

__all__ = ["Criterion", "MatchesShapley", "Efficiency", "ZeroFor", "RanksLast", "EqualFor",
           "OrderRegret", "MatchesValues"]


def _scale(truth: Truth) -> np.ndarray:
    """Per-pair scale of the attributions: max(|f(x) - f(r)|, max_j |phi_j|), at least 1e-12."""
    s = np.maximum(np.abs(truth.fx - truth.fr), np.abs(truth.phi).max(axis=1))
    return np.maximum(s, 1e-12)


@dataclass(frozen=True)
class Criterion:
    """Base class: ``name``, ``tol`` and what exact Shapley values do (``shapley_passes``)."""

    tol: float = 1e-6
    shapley_passes: bool = True

    name = "criterion"

    @property
    def text(self) -> str:  # pragma: no cover - overridden
        return self.name

    def __call__(self, truth: Truth, A: np.ndarray) -> tuple[bool, float]:
        A = np.asarray(A, dtype=np.float64)
        if A.shape != truth.X.shape:  # a (B, 1) or (n,) array would broadcast against phi
            raise ValueError(f"{self.name}: attributions must have shape (B, n) = "
                             f"{truth.X.shape}; got {A.shape}.")
        m = float(self.measure(truth, A))
        return bool(m <= self.tol), m

    def measure(self, truth: Truth, A: np.ndarray) -> float:  # pragma: no cover - overridden
        raise NotImplementedError


@dataclass(frozen=True)
class MatchesShapley(Criterion):
    """Attributions equal the exact baseline Shapley values: max relative error <= tol."""

    name = "matches_shapley"

    @property
    def text(self) -> str:
        return f"max |a - phi| / scale <= {self.tol:g}"

    def measure(self, truth, A):
        return np.max(np.abs(A - truth.phi).max(axis=1) / _scale(truth))


@dataclass(frozen=True)
class MatchesValues(Criterion):
    """Attributions equal other reference values ``truth.extra[key]`` (e.g. conditional Shapley)."""

    key: str = "conditional_shapley"
    name = "matches_values"

    @property
    def text(self) -> str:
        return f"max |a - {self.key}| / scale <= {self.tol:g}"

    def measure(self, truth, A):
        return np.max(np.abs(A - truth.extra[self.key]).max(axis=1) / _scale(truth))


@dataclass(frozen=True)
class Efficiency(Criterion):
    """Completeness: ``|sum_j a_j - (f(x) - f(r))| / scale <= tol`` on every pair."""

    name = "efficiency"

    @property
    def text(self) -> str:
        return f"|sum a - (f(x) - f(r))| / scale <= {self.tol:g}"

    def measure(self, truth, A):
        return np.max(np.abs(A.sum(axis=1) - (truth.fx - truth.fr)) / _scale(truth))


@dataclass(frozen=True)
class ZeroFor(Criterion):
    """Features the model ignores (on the data) get attribution 0: max |a_j| / scale <= tol."""

    features: tuple[int, ...] = ()
    name = "zero_for"

    @property
    def text(self) -> str:
        return f"max |a_j|, j in {list(self.features)}, / scale <= {self.tol:g}"

    def measure(self, truth, A):
        return np.max(np.abs(A[:, list(self.features)]).max(axis=1) / _scale(truth))


@dataclass(frozen=True)
class EqualFor(Criterion):
    """Two symmetric features get equal attributions: max |a_i - a_j| / scale <= tol."""

    features: tuple[int, int] = (0, 1)
    name = "equal_for"

    @property
    def text(self) -> str:
        i, j = self.features
        return f"max |a_{i} - a_{j}| / scale <= {self.tol:g}"

    def measure(self, truth, A):
        i, j = self.features
        return np.max(np.abs(A[:, i] - A[:, j]) / _scale(truth))


@dataclass(frozen=True)
class RanksLast(Criterion):
    """The signed ordering puts ``feature`` last on every pair; measured: share of pairs that do
    not (pass at 0)."""

    feature: int = 0
    tol: float = 0.0
    name = "ranks_last"

    @property
    def text(self) -> str:
        return f"feature {self.feature} ordered last on every pair"

    def measure(self, truth, A):
        return float(np.mean(orderings(A)[:, -1] != self.feature))


@dataclass(frozen=True)
class OrderRegret(Criterion):
    """The method's signed ordering reaches the best achievable area.

    ``regret = (best - ABC) / (best - E_random[ABC])`` per pair (0: the best ordering; 1: as good
    as a random ordering on average; Theorem 1 and the best-path dynamic programme of the
    anchored decomposition, so exact), averaged over the pairs; pass at ``<= tol``.
    """

    mode: str = "insertion"
    tol: float = 0.01
    name = "order_regret"

    @property
    def text(self) -> str:
        what = "ABC" if self.mode == "insertion" else "ABC'"
        return f"{self.mode} {what} regret vs best <= {self.tol:g}"

    def measure(self, truth, A):
        dec = truth.decomposition
        got = dec.abc(orderings(A), mode=self.mode)
        best = dec.best_abc(mode=self.mode)
        base = dec.expected_abc(mode=self.mode)
        span = best - base
        ok = span > 1e-12 * np.maximum(1.0, np.abs(best))
        reg = np.where(ok, (best - got) / np.where(ok, span, 1.0), np.maximum(best - got, 0.0))
        return float(np.mean(reg))


def criteria_names(criteria: Sequence[Criterion]) -> list[str]:
    """Distinct display names of the criteria (suffixes when a name repeats)."""
    out: list[str] = []
    for c in criteria:
        base = c.name
        if isinstance(c, OrderRegret):
            base = f"{c.name}_{c.mode}"
        name, k = base, 2
        while name in out:
            name, k = f"{base}_{k}", k + 1
        out.append(name)
    return out
