"""The catalogue of functional test cases: data, model, exact answers and pass criteria.

Each :class:`Case` builds its pairs (targets X, references R, from a generator or a policy) and a
small torch model (:mod:`insdel.functional.models`) whose exact baseline Shapley values are known
in closed form (checked against :func:`insdel.shapley_values` by the test suite) or by
enumeration, and whose best orderings come from the anchored decomposition
(:func:`insdel.batch_decomposition`, Theorem 1 and the best-path programme). Its criteria
(:mod:`insdel.functional.criteria`) are what a method must meet.

Ideas from Compare-xAI (functional tests with known answers: dummy features, symmetric and
redundant features, saturation, interactions) and XAI-Bench (Gaussian-mixture data with exact
conditional expectations), plus the paper's §3.4 counterexample and §4 binary features.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from math import factorial

import numpy as np
from torch import nn

from .._registry import Registry, signature_options
from .._validation import check_pairs
from ..adapter import as_model
from ..decomposition import BatchDecomposition, batch_decomposition, shapley_values
from ..ordering import random_permutations
from ..tracing import orderings
from . import criteria as C
from .models import MonotoneAdditive, Quadratic, ReluNet

__all__ = ["Case", "Truth", "available", "get", "options_of", "CASES", "COUNTEREXAMPLE_A"]

#: The interaction Delta_{12} = A of the §3.4 counterexample (any -2 < A < -1 works).
COUNTEREXAMPLE_A = -1.5


@dataclass
class Truth:
    """A built case: its pairs, model and exact answers.

    Attributes
    ----------
    f : torch.nn.Module
    X, R : ndarray (B, n)
    fx, fr : ndarray (B,)
    phi : ndarray (B, n)
        Exact baseline Shapley values (closed form when the case has one, else enumeration).
    decomposition : BatchDecomposition
        Anchored decompositions of the pairs (areas, best orders, expected random areas).
    binary : tuple of int
        Binary features (for integrated gradients' binary modes).
    extra : dict
        Further exact quantities (``conditional_shapley``, named orderings, ...).
    """

    f: nn.Module
    X: np.ndarray
    R: np.ndarray
    fx: np.ndarray
    fr: np.ndarray
    phi: np.ndarray
    decomposition: BatchDecomposition
    binary: tuple[int, ...] = ()
    extra: dict = field(default_factory=dict)

    def best_order(self, *, mode: str = "insertion") -> np.ndarray:
        """The ABC-maximising ordering of each pair, (B, n) (from the decomposition)."""
        return self.decomposition.best_order(mode=mode)

    def ordering(self, name: str, *, seed: int = 0) -> np.ndarray:
        """A named ordering (B, n): ``shapley`` (signed exact Shapley), ``reversed`` (its reverse),
        ``random`` (seeded), ``best_insertion`` / ``best_deletion``, or one the case defines
        (``extra["orderings"]``)."""
        B, n = self.X.shape
        if name == "shapley":
            return orderings(self.phi)
        if name == "reversed":
            return np.ascontiguousarray(orderings(self.phi)[:, ::-1])
        if name == "random":
            return random_permutations(np.random.default_rng(seed), (B, n))
        if name in ("best_insertion", "best_deletion"):
            return self.best_order(mode=name.split("_")[1])
        custom = self.extra.get("orderings", {})
        if name in custom:
            return np.asarray(custom[name](self), dtype=np.int64)
        raise ValueError(f"unknown ordering {name!r}; choose from shapley, reversed, random, "
                         f"best_insertion, best_deletion{''.join(', ' + k for k in custom)}.")


@dataclass(frozen=True)
class Case:
    """One functional test: a builder of (model, X, R), exact answers and pass criteria.

    Parameters
    ----------
    name : str
    description : str
    build : callable seed -> (model, X, R, extra)
    criteria : sequence of Criterion
    closed_form : callable (model, X, R, extra) -> phi, optional
        Closed-form exact Shapley values; otherwise they are enumerated.
    binary : tuple of int
        Binary features, passed to integrated gradients as ``binary=``.
    grading : sequence of (better, worse) or (better, worse, metrics) ordering names
        Pairs of orderings whose ranking is known (for :func:`insdel.functional.grade_metrics`);
        a third item restricts the claim to those metrics (e.g. the §3.4 order is known-better
        for the insertion areas only).
    why : str
        Why the ``grading`` orderings are known-better / known-worse.
    """

    name: str
    description: str
    build: Callable[[int], tuple[nn.Module, np.ndarray, np.ndarray, dict]]
    criteria: Sequence[C.Criterion]
    closed_form: Callable[..., np.ndarray] | None = None
    binary: tuple[int, ...] = ()
    grading: Sequence[tuple] = ()
    why: str = ""

    def truth(self, *, seed: int = 0) -> Truth:
        """Build the pairs and compute the exact answers (cheap: n <= 6, a few pairs)."""
        from .._validation import check_seed

        f, X, R, extra = self.build(check_seed(seed))
        # a 1-D or (1, n) R is every pair's reference; any other shape is an error (check_pairs),
        # never broadcast across features ((B, 1)) -- then writable copies (a Pairing's arrays
        # are read-only)
        X, R = check_pairs(X, R, x_name=f"{self.name}: X", r_name=f"{self.name}: R")
        X, R = np.array(X, dtype=np.float64), np.array(R, dtype=np.float64)
        model = as_model(f)
        fx, fr = model(X), model(R)
        dec = batch_decomposition(f, X, R, progress=False)
        phi = (self.closed_form(f, X, R, extra) if self.closed_form is not None
               else dec.shapley())
        return Truth(f=f, X=X, R=R, fx=fx, fr=fr, phi=np.asarray(phi, dtype=np.float64),
                     decomposition=dec, binary=tuple(self.binary), extra=dict(extra))

    def brute_force_shapley(self, truth: Truth) -> np.ndarray:
        """Exact Shapley values by enumeration (:func:`insdel.shapley_values`), for checks."""
        return shapley_values(truth.f, truth.X, truth.R, progress=False)


def _quadratic_phi(f, X, R, extra):
    return f.shapley(X, R)


# -- builders ------------------------------------------------------------------------------------
def _additive(seed: int):
    from ..policies import build as build_policy

    rng = np.random.default_rng(seed)
    pool = rng.normal(size=(16, 5))
    pairing = build_policy("one_to_one").pair(None, pool, seed=seed, progress=False)
    f = Quadratic([3.0, -2.0, 1.0, 0.5, -1.0])
    return f, pairing.X, pairing.R, {"policy": "one_to_one"}


def _interaction(seed: int):
    rng = np.random.default_rng(seed)
    B = 6
    a, b = rng.normal(size=(B, 1)), rng.normal(size=(B, 1))
    c, d = rng.normal(size=(B, 1)), rng.normal(size=(B, 1))
    X = np.hstack([a, a, c, c])  # x_0 = x_1 and x_2 = x_3: the pairs are symmetric
    R = np.hstack([b, b, d, d])
    C_ = np.zeros((4, 4))
    C_[0, 1] = 1.0
    C_[2, 3] = 2.0
    return Quadratic(np.zeros(4), C_), X, R, {}


def _counterexample(seed: int):
    C_ = np.zeros((3, 3))
    C_[0, 1] = COUNTEREXAMPLE_A
    return Quadratic([3.0, 2.0, 1.0], C_), np.ones((1, 3)), np.zeros((1, 3)), {
        "A": COUNTEREXAMPLE_A}


def _duplicate(seed: int):
    rng = np.random.default_rng(seed)
    P = rng.normal(size=(12, 4))
    P[:, 1] = P[:, 0]  # feature 1 duplicates feature 0 in the data
    f = MonotoneAdditive([1.0, 1.0, 0.5, -1.0])
    return f, P[:6], P[6:], {}


def _dummy(seed: int):
    rng = np.random.default_rng(seed)
    B = 8
    R = rng.uniform(0.0, 0.5, size=(B, 4))
    X = R + rng.uniform(0.5, 1.5, size=(B, 4))  # x > r: features 0-2 have phi > 0
    X[:, 3] = rng.normal(size=B) * 3.0          # the ignored feature moves a lot
    C_ = np.zeros((4, 4))
    C_[0, 1] = 1.0
    return Quadratic([1.0, 2.0, 1.0, 0.0], C_), X, R, {}


def _saturation(seed: int):
    rng = np.random.default_rng(seed)
    B = 6
    X = np.column_stack([rng.uniform(0.6, 0.95, B), rng.uniform(0.6, 0.95, B),
                         rng.normal(size=B)])
    R = np.zeros((B, 3))
    # f = min(z0 + z1, 1) + 0.3 z2 = z0 + z1 + 0.3 z2 - relu(z0 + z1 - 1)
    f = ReluNet(w=[1.0, 1.0, 0.3], V=[[1.0, 1.0, 0.0]], c=[1.0], s=[-1.0])
    return f, X, R, {}


def _saturation_phi(f, X, R, extra):
    # r = 0, x0 + x1 >= 1, x0, x1 < 1: g(0) = x0, g(1) = x1, g(01) = 1
    x0, x1 = X[:, 0], X[:, 1]
    return np.column_stack([(1 + x0 - x1) / 2, (1 + x1 - x0) / 2, 0.3 * (X[:, 2] - R[:, 2])])


TRAP_K, TRAP_EPS = 10.0, 0.05


def _ood_trap(seed: int):
    rng = np.random.default_rng(seed)
    B = 6
    X = np.column_stack([rng.uniform(1, 2, B), rng.uniform(1, 2, B), np.zeros(B), np.zeros(B)])
    R = np.zeros((B, 4))
    t = rng.uniform(0.5, 1.0, B) * rng.choice([-1, 1], B)
    X[:, 2] = X[:, 3] = t  # on the data manifold z_2 = z_3
    # f = z0 + 0.5 z1 + K relu(|z2 - z3| - eps), |d| - eps written as two ReLU units
    f = ReluNet(w=[1.0, 0.5, 0.0, 0.0], V=[[0, 0, 1.0, -1.0], [0, 0, -1.0, 1.0]],
                c=[TRAP_EPS, TRAP_EPS], s=[TRAP_K, TRAP_K])
    return f, X, R, {"orderings": {"trap_first": _trap_first}}


def _trap_first(truth: Truth) -> np.ndarray:
    """The Shapley ordering with feature 2 moved first and feature 3 last: every intermediate
    hybrid is off the manifold z_2 = z_3, where the model jumps by K (|d| - eps)."""
    o = orderings(truth.phi)
    rest = o[(o != 2) & (o != 3)].reshape(o.shape[0], -1)
    B = o.shape[0]
    return np.hstack([np.full((B, 1), 2), rest, np.full((B, 1), 3)])


def _ood_phi(f, X, R, extra):
    d = X - R
    return np.column_stack([d[:, 0], 0.5 * d[:, 1], np.zeros(len(d)), np.zeros(len(d))])


def _binary_and(seed: int):
    rng = np.random.default_rng(seed)
    pts = np.array(list(itertools.product([0.0, 1.0], repeat=3)))
    pairs = [(i, j) for i in range(8) for j in range(8) if i != j]
    sel = rng.choice(len(pairs), size=7, replace=False)
    ii = [pairs[s][0] for s in sel] + [7]
    jj = [pairs[s][1] for s in sel] + [0]
    # f = relu(2 b0 + b1 - 2) + 0.5 b2: on {0,1}^3 it is b0 b1 + 0.5 b2, off it is not multilinear
    f = ReluNet(w=[0.0, 0.0, 0.5], V=[[2.0, 1.0, 0.0]], c=[2.0], s=[1.0])
    return f, pts[ii], pts[jj], {}


def _binary_phi(f, X, R, extra):
    # on binary points f = b0 b1 + 0.5 b2 (Quadratic closed form)
    C_ = np.zeros((3, 3))
    C_[0, 1] = 1.0
    return Quadratic([0.0, 0.0, 0.5], C_).shapley(X, R)


def _monotone(seed: int):
    rng = np.random.default_rng(seed)
    X, R = rng.normal(size=(8, 5)), rng.normal(size=(8, 5))
    return MonotoneAdditive([2.0, -1.0, 0.7, 0.3, -1.5]), X, R, {}


# Two-component Gaussian mixture (XAI-Bench's data) with correlated features.
GM_WEIGHTS = np.array([0.4, 0.6])
GM_MEANS = np.array([[-1.0, 0.5, 0.0, 1.0], [1.0, -0.5, 0.5, -1.0]])
_L = np.array([[1.0, 0, 0, 0], [0.8, 0.6, 0, 0], [0.3, 0.2, 0.9, 0], [0, 0.5, 0.1, 0.8]])
GM_COVS = np.array([_L @ _L.T, np.diag([0.5, 1.0, 1.5, 0.7])])
GM_W = np.array([2.0, -1.0, 1.0, 0.5])


def gaussian_mixture_sample(N: int, *, seed: int = 0) -> np.ndarray:
    """Draw N points of the catalogue's Gaussian mixture (weights, means, covariances above)."""
    rng = np.random.default_rng(seed)
    k = rng.choice(len(GM_WEIGHTS), size=N, p=GM_WEIGHTS)
    out = np.empty((N, GM_MEANS.shape[1]))
    for c in range(len(GM_WEIGHTS)):
        idx = np.flatnonzero(k == c)
        out[idx] = rng.multivariate_normal(GM_MEANS[c], GM_COVS[c], size=idx.size)
    return out


def gaussian_mixture_conditional_mean(x: np.ndarray, S: Sequence[int]) -> np.ndarray:
    """Exact ``E[X | X_S = x_S]`` under the mixture (responsibility-weighted Gaussian
    conditional means; XAI-Bench's exact conditional expectations)."""
    S = list(S)
    mean = GM_WEIGHTS @ GM_MEANS
    if not S:
        return mean
    T = [j for j in range(x.shape[0]) if j not in S]
    logw, cm = [], []
    for pi, mu, Sig in zip(GM_WEIGHTS, GM_MEANS, GM_COVS, strict=True):
        Sss = Sig[np.ix_(S, S)]
        dev = x[S] - mu[S]
        sol = np.linalg.solve(Sss, dev)
        _, logdet = np.linalg.slogdet(Sss)
        logw.append(np.log(pi) - 0.5 * (dev @ sol + logdet))
        m = mu.copy()
        m[S] = x[S]
        if T:
            m[T] = mu[T] + Sig[np.ix_(T, S)] @ sol
        cm.append(m)
    w = np.exp(np.array(logw) - max(logw))
    w /= w.sum()
    out = w @ np.array(cm)
    out[S] = x[S]  # exactly: a weighted mean of equal values can differ in the last bit
    return out


def conditional_shapley_linear(w: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Exact conditional (observational) Shapley values of ``f = w·z`` under the mixture:
    ``v(S) = w·E[X | X_S = x_S]``, enumerated over the 2^n coalitions."""
    B, n = X.shape
    out = np.zeros((B, n))
    for b in range(B):
        v = {}
        for k in range(n + 1):
            for S in itertools.combinations(range(n), k):
                v[S] = w @ gaussian_mixture_conditional_mean(X[b], S)
        for j in range(n):
            for S, vs in v.items():
                if j in S:
                    continue
                wgt = factorial(len(S)) * factorial(n - len(S) - 1) / factorial(n)
                out[b, j] += wgt * (v[tuple(sorted(S + (j,)))] - vs)
    return out


def _gaussian(seed: int):
    X = gaussian_mixture_sample(8, seed=seed)
    mean = GM_WEIGHTS @ GM_MEANS
    R = np.broadcast_to(mean, X.shape).copy()  # the "average" policy at the population mean
    return Quadratic(GM_W), X, R, {"conditional_shapley": conditional_shapley_linear(GM_W, X)}


_MONOTONE_WHY = ("f is a strictly increasing function of an additive one, so moving features in "
                 "decreasing exact-Shapley order maximises every partial sum, pointwise along "
                 "both curves (paper App. B.2); the reversed and random orders cannot do better.")

#: name -> Case, in display order.
CASES: dict[str, Case] = {c.name: c for c in [
    Case("additive", "f = 3 z0 - 2 z1 + z2 + 0.5 z3 - z4; pairs from the one_to_one policy on a "
         "Gaussian pool", _additive,
         [C.MatchesShapley(1e-6), C.Efficiency(1e-6), C.OrderRegret(mode="insertion"),
          C.OrderRegret(mode="deletion")], closed_form=_quadratic_phi,
         grading=[("shapley", "reversed"), ("shapley", "random")], why=_MONOTONE_WHY),
    Case("interaction", "pure pairwise interactions f = z0 z1 + 2 z2 z3 with x0 = x1, x2 = x3, "
         "r0 = r1, r2 = r3 (symmetric pairs)", _interaction,
         [C.MatchesShapley(1e-6), C.Efficiency(1e-6), C.EqualFor(1e-6, features=(0, 1)),
          C.EqualFor(1e-6, features=(2, 3))], closed_form=_quadratic_phi),
    Case("shapley_vs_auc", f"paper §3.4: f = 3 z0 + 2 z1 + z2 + A z0 z1, A = {COUNTEREXAMPLE_A}, "
         "x = 1, r = 0; the Shapley order (0, 1, 2) is not AUC-optimal, (0, 2, 1) is",
         _counterexample,
         [C.MatchesShapley(1e-6), C.Efficiency(1e-6),
          C.OrderRegret(mode="insertion", shapley_passes=False)], closed_form=_quadratic_phi,
         grading=[("best_insertion", "shapley", ("insertion_abc", "insertion_auc"))],
         why="by construction (paper §3.4), AUC(0,2,1) = 13 + A > AUC(0,1,2) = 14 + 2A."),
    Case("duplicate", "f = softplus(z0 + z1 + 0.5 z2 - z3) with feature 1 a copy of feature 0 in "
         "the data", _duplicate,
         [C.MatchesShapley(1e-6), C.EqualFor(1e-6, features=(0, 1)), C.Efficiency(1e-4)],
         grading=[("shapley", "reversed"), ("shapley", "random")], why=_MONOTONE_WHY),
    Case("dummy", "f = z0 + 2 z1 + z2 + z0 z1 ignores z3, which moves the most; x > r",
         _dummy,
         [C.ZeroFor(1e-8, features=(3,)), C.RanksLast(feature=3), C.MatchesShapley(1e-6),
          C.Efficiency(1e-6)], closed_form=_quadratic_phi),
    Case("saturation", "f = min(z0 + z1, 1) + 0.3 z2 at x0 + x1 > 1, r = 0: the gradient of "
         "the saturated part is 0 at x", _saturation,
         [C.Efficiency(1e-2), C.MatchesShapley(1e-3), C.EqualFor(0.6, features=(0, 1))],
         closed_form=_saturation_phi),
    Case("ood_trap", f"f = z0 + 0.5 z1 + {TRAP_K:g} relu(|z2 - z3| - {TRAP_EPS:g}); the data "
         "have z2 = z3, so the trap term is 0 on the data and large on hybrids off it",
         _ood_trap,
         [C.ZeroFor(1e-6, features=(2, 3)), C.MatchesShapley(1e-6), C.Efficiency(1e-6)],
         closed_form=_ood_phi, grading=[("shapley", "trap_first")],
         why="on the data the model is z0 + 0.5 z1; the trap_first ordering earns its area only "
             "from hybrids off the data manifold z2 = z3 (known-worse by design)."),
    Case("binary_and", "all-binary f = relu(2 b0 + b1 - 2) + 0.5 b2 (= b0 b1 + 0.5 b2 on "
         "{0,1}^3, not multilinear between): IG's interpolate and jump modes equal exact Shapley",
         _binary_and,
         [C.MatchesShapley(1e-6), C.Efficiency(1e-6)], closed_form=_binary_phi,
         binary=(0, 1, 2)),
    Case("monotone_additive", "f = softplus(2 z0 - z1 + 0.7 z2 + 0.3 z3 - 1.5 z4) (App. B.2)",
         _monotone,
         [C.OrderRegret(1e-9, mode="insertion"), C.OrderRegret(1e-9, mode="deletion"),
          C.Efficiency(1e-4)],
         grading=[("shapley", "reversed"), ("shapley", "random")], why=_MONOTONE_WHY),
    Case("gaussian_mixture", "XAI-Bench style: two-component correlated Gaussian mixture, "
         "linear f, r = population mean; exact conditional Shapley from the mixture's "
         "conditional expectations", _gaussian,
         [C.MatchesShapley(1e-6), C.Efficiency(1e-6), C.OrderRegret(mode="insertion"),
          C.MatchesValues(0.05, key="conditional_shapley", shapley_passes=False)],
         closed_form=_quadratic_phi,
         grading=[("shapley", "reversed"), ("shapley", "random")], why=_MONOTONE_WHY),
]}


_CASES = Registry("functional test", CASES)


def available() -> list[str]:
    """Names of the functional test cases, sorted."""
    return _CASES.available()


def get(name: str) -> Case:
    """The case registered as ``name`` (nothing built: ``get(name).truth(seed=...)`` builds its
    pairs and exact answers). Raises :class:`insdel.UnknownNameError` (a ``ValueError``)."""
    return _CASES.get(name)


def options_of(name: str) -> dict:
    """The options of :meth:`Case.truth` (what builds the case) with their defaults."""
    return signature_options(get(name).truth, skip=())


def select(cases: Sequence[str] | None) -> list[Case]:
    """The named cases (all when None)."""
    return list(CASES.values()) if cases is None else [get(c) for c in cases]


