"""Every Shapley interaction index as a linear read-out of the Möbius transform (the anchored
decomposition's effects Delta_T; conventions: *Anchored decomposition*, docs/interactions.md).

For a game v on the units N (n = |N|) with Möbius transform (Harsanyi dividends)
``m(T) = sum_{L ⊆ T} (-1)^{|T| - |L|} v(L)``, every index below is, for |S| <= k,

    I(S) = sum_{T ⊇ S} W_k[|S|, |T|] m(T),

a weight that depends on |S|, |T| and the order k only (never on n: a unit outside D_b is a
null player, m(T) = 0 for T ⊄ D_b, so the sums run over the subsets of D_b and a pair costs
O(2^|D_b|) whatever n is). The weights, with their sources (each checked against the defining
formula by brute force in tests/test_interactions.py and against shapiq's ExactComputer):

* ``Moebius``: ``W[s, t] = [t = s]`` (Harsanyi 1963; Grabisch 1997; the anchored
  decomposition's effects, paper §3.3).
* ``SII``, Shapley interaction index (Grabisch & Roubens 1999, eq. (8) in Möbius form
  [Grabisch 1997, Table 3]): ``W[s, t] = 1 / (t - s + 1)``. Order 1 is the Shapley value.
* ``BII``, Banzhaf interaction index (Grabisch & Roubens 1999): ``W[s, t] = 2^{-(t - s)}``. Order 1
  is the Banzhaf value ``BV``.
* ``STII``, Shapley-Taylor interaction index of order k (Sundararajan, Dhamdhere & Agarwal 2020,
  Prop. 3 in Möbius form): ``m(S)`` for |S| < k, and ``W[k, t] = 1 / C(t, k)`` at |S| = k (each
  m(T), |T| >= k, shared equally by its C(|T|, k) subsets of size k).
* ``k-SII``, k-Shapley values (Bordt & von Luxburg 2023, *From Shapley values to generalized
  additive models and back*, their n-Shapley values; shapiq's k-SII): the Bernoulli
  aggregation ``Phi_k(S) = sum_{l=0}^{k-|S|} B_l sum_{W ⊆ N∖S, |W| = l} SII(S ∪ W)`` (B_l the
  Bernoulli numbers, B_1 = -1/2), i.e.
  ``W[s, t] = sum_{l=0}^{min(k - s, t - s)} B_l C(t - s, l) / (t - s - l + 1)``, which is
  ``[t = s]`` for t <= k (each m(T) of order <= k goes to T itself). ``n-SV`` is its alias.
* ``FSII``, Faith-Shap (Tsai, Yeh & Ravikumar 2023, JMLR 24(94), Theorem 19):
  ``W[s, t] = [t = s] + [t > k] (-1)^{k - s} s / (k + s) C(k, s) C(t - 1, k) / C(t + k - 1, k + s)``.
* ``FBII``, Faith-Banzhaf (Tsai, Yeh & Ravikumar 2023, Theorem 17 with p = 1/2):
  ``W[s, t] = [t = s] + [t > k] (-1)^{k - s} 2^{-(t - s)} C(t - s - 1, k - s)``.
* ``SV`` / ``BV``: the Shapley / Banzhaf values, SII / BII of order 1.

**The empty set.** Every result holds S = ∅ too, as shapiq does: ``v(∅)`` for the efficient
indices (``Moebius``, ``SV``, ``k-SII``, ``STII``, ``FSII``, where their weights give it or by
definition), and the formula's value for ``SII`` and ``BII`` / ``BV`` (``BII(∅)`` is the mean of v
over all coalitions) and ``FBII`` (its least-squares intercept).

**Efficiency.** ``sum_{0 < |S| <= k} I(S) = v(N) - v(∅)`` for ``k-SII``, ``STII``, ``FSII``, ``SV``
and ``Moebius`` of order n (tested); not for ``SII`` (k > 1), ``BII``, ``BV``, ``FBII``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import comb

import numpy as np

from .._registry import UnknownNameError

__all__ = ["INDICES", "ALIASES", "IndexSpec", "check_index", "weights", "index_names"]


@dataclass(frozen=True)
class IndexSpec:
    """One interaction index: its canonical name, what it is, whether order 1 is fixed, whether
    S = ∅ holds v(∅), whether its sum over 0 < |S| <= k is v(N) - v(∅), its shapiq name and the
    sampled estimator of :mod:`insdel.interactions.sampled` (None: exact only)."""

    name: str
    title: str
    source: str
    fixed_order: int | None
    empty_is_baseline: bool
    efficient: bool
    shapiq: str
    estimator: str | None


INDICES: dict[str, IndexSpec] = {s.name: s for s in (
    IndexSpec("Moebius", "Möbius transform (the anchored decomposition's effects Delta_S)",
              "Harsanyi (1963); Grabisch (1997)", None, True, False, "Moebius", None),
    IndexSpec("SII", "Shapley interaction index", "Grabisch & Roubens (1999)", None, False, False,
              "SII", "permutation"),
    IndexSpec("k-SII", "k-Shapley interaction index (n-Shapley values)",
              "Bordt & von Luxburg (2023)", None, True, True, "k-SII", "permutation"),
    IndexSpec("STII", "Shapley-Taylor interaction index",
              "Sundararajan, Dhamdhere & Agarwal (2020)", None, True, True, "STII", "taylor"),
    IndexSpec("FSII", "Faith-Shap (faithful Shapley interaction index)",
              "Tsai, Yeh & Ravikumar (2023)", None, True, True, "FSII", None),
    IndexSpec("FBII", "Faith-Banzhaf (faithful Banzhaf interaction index)",
              "Tsai, Yeh & Ravikumar (2023)", None, False, False, "FBII", None),
    IndexSpec("BII", "Banzhaf interaction index", "Grabisch & Roubens (1999)", None, False, False,
              "BII", "coalitions"),
    IndexSpec("SV", "Shapley values (SII of order 1)", "Shapley (1953)", 1, True, True, "SV",
              "permutation"),
    IndexSpec("BV", "Banzhaf values (BII of order 1)", "Banzhaf (1965)", 1, False, False, "BV",
              "coalitions"),
)}

#: Other spellings of the canonical names (lower-cased look-up).
ALIASES = {"n-sv": "k-SII", "n-shapley": "k-SII", "ksii": "k-SII", "mobius": "Moebius",
           "möbius": "Moebius", "shapley": "SV", "banzhaf": "BV", "shapley-taylor": "STII",
           "faith-shap": "FSII", "faith-banzhaf": "FBII"}


def index_names() -> list[str]:
    """The canonical index names."""
    return list(INDICES)


def check_index(index, name: str = "index") -> IndexSpec:
    """The spec of an index name (any case, or an alias of :data:`ALIASES`); an unknown name is an
    :class:`insdel.UnknownNameError` with "did you mean"."""
    if not isinstance(index, str):
        raise TypeError(f"{name} must be an index name (str); got {type(index).__name__}.")
    lookup = {k.lower(): k for k in INDICES} | ALIASES
    key = lookup.get(index.strip().lower())
    if key is None:
        raise UnknownNameError.of(f"interaction index ({name}=)", index, list(INDICES),
                                  candidates=[*INDICES, *ALIASES],
                                  note=f"Aliases: {', '.join(sorted(ALIASES))}.")
    return INDICES[key]


def _bernoulli(n: int) -> list[Fraction]:
    """B_0 .. B_n (B_1 = -1/2), by the recurrence ``sum_{j<=m} C(m+1, j) B_j = 0``."""
    B = [Fraction(1)]
    for m in range(1, n + 1):
        B.append(-sum(comb(m + 1, j) * B[j] for j in range(m)) / (m + 1))
    return B


def weights(spec: IndexSpec, order: int, dmax: int) -> np.ndarray:
    """``W[s, t]`` for s = 0..order and t = 0..dmax (zero for t < s): ``I(S) = sum_{T ⊇ S}
    W[|S|, |T|] m(T)`` (the module's table), computed in exact rational arithmetic."""
    k = int(order)
    T = max(int(dmax), k)
    W = np.zeros((k + 1, T + 1))
    bern = _bernoulli(k + 1) if spec.name == "k-SII" else None
    for s in range(k + 1):
        for t in range(s, T + 1):
            W[s, t] = float(_weight(spec.name, s, t, k, bern))
    return W


def _weight(name: str, s: int, t: int, k: int, bern) -> Fraction:
    same = Fraction(int(t == s))
    if name == "Moebius":
        return same
    if name in ("SII", "SV"):
        return Fraction(1, t - s + 1)
    if name in ("BII", "BV"):
        return Fraction(1, 2 ** (t - s))
    if name == "STII":
        return same if s < k else Fraction(1, comb(t, k))
    if name == "k-SII":
        return sum((bern[j] * comb(t - s, j) / (t - s - j + 1)
                    for j in range(min(k - s, t - s) + 1)), Fraction(0))
    if name == "FSII":
        if t <= k or s == 0:
            return same
        return same + Fraction((-1) ** (k - s) * s * comb(k, s) * comb(t - 1, k),
                               (k + s) * comb(t + k - 1, k + s))
    if name == "FBII":
        if t <= k:
            return same
        return same + Fraction((-1) ** (k - s) * comb(t - s - 1, k - s), 2 ** (t - s))
    raise AssertionError(name)  # pragma: no cover - INDICES is closed

