"""Sampled interaction indices with standard errors: the route above ``max_d``, where the exact
read-out would enumerate 2^|D_b| coalitions (docs/interactions.md, *Above max_d*).

Every estimator averages, over ``n_samples`` independent draws per pair, an unbiased per-draw
estimate of each subset's value built from discrete derivatives
``Δ_S v(T) = sum_{L ⊆ S} (-1)^{|S| - |L|} v(T ∪ L)``; the standard error is the draws' standard
deviation over sqrt(n_samples). Only D_b's units are sampled (a unit outside D_b is a null
player: its subsets are exactly 0).

* ``permutation`` (SII, k-SII, SV): a uniformly random ordering π of D_b; every window of s
  consecutive units S = π[p:p+s] (s = 0..k) with T = π[:p] gives
  ``c_s Δ_S v(T)``, ``c_s = d! / (s! (d - s + 1)!)`` (d = |D_b|; the probability that S comes
  right after exactly T in π, over the SII weight ``t! (d - t - s)! / (d - s + 1)!``); other
  subsets get 0 from that ordering. For s = 1 this is the classic permutation sampling of
  Shapley values (Castro, Gómez & Tejada 2009); shapiq's ``PermutationSamplingSII`` uses the same
  windows. k-SII is the Bernoulli aggregation (:mod:`insdel.interactions.indices`) of each
  ordering's SII estimate.
* ``taylor`` (STII): the orders below k are the Möbius coefficients ``m(S) = Δ_S v(∅)``, exact
  (every coalition of fewer than k units is evaluated); at order k each ordering gives
  ``Δ_S v(π^{<S})`` for every k-subset S, π^{<S} the units before S's first unit (Sundararajan
  et al. 2020, the permutation form of the Shapley-Taylor index).
* ``coalitions`` (BII, BV): a uniformly random coalition C of D_b (each unit with probability
  1/2); every S gets ``Δ_S v(C ∖ S)`` (C ∖ S is uniform on the subsets of D_b ∖ S).
"""

from __future__ import annotations

import itertools
import time
from math import comb, factorial

import numpy as np

from ..game import Game
from .indices import IndexSpec, _bernoulli
from .result import InteractionResult

__all__ = ["sampled_interactions"]

_MAX_REQUESTS = 1 << 17  # coalition requests built at once (rows of (N, m) bool)


def _entries(d: int, k: int) -> tuple[list[np.ndarray], np.ndarray]:
    """The subsets of 0..d-1 of sizes 0..k by size, each size in colex order (the exact
    route's increasing local bitmask), and each size's first entry."""
    blocks = []
    for s in range(min(k, d) + 1):
        combos = sorted(itertools.combinations(range(d), s), key=lambda c: c[::-1])
        blocks.append(np.array(combos, dtype=np.int64).reshape(len(combos), s))
    first = np.concatenate([[0], np.cumsum([len(b) for b in blocks])]).astype(np.int64)
    return blocks, first


def _rank(S: np.ndarray, first: np.ndarray, binom: np.ndarray) -> np.ndarray:
    """Entry index of sorted local subsets S (R, s): the size's first entry + the colex rank
    ``sum_i C(c_i, i + 1)``."""
    s = S.shape[1]
    r = np.full(S.shape[0], first[s], dtype=np.int64)
    for i in range(s):
        r += binom[S[:, i], i + 1]
    return r


def _derivatives(game: Game, b: int, D: np.ndarray, base: np.ndarray, S: np.ndarray,
                 clock: dict) -> np.ndarray:
    """``Δ_S v(base ∪ ...)`` per row: rows of local coalitions ``base`` (R, d) bool (S excluded)
    and subsets S (R, s) of local units, all of one size s."""
    R, s = S.shape
    m = game.m
    out = np.zeros(R)
    keep_rows, signs, owner = [], [], []
    for pattern in range(1 << s):
        loc = base.copy()
        for i in range(s):
            if pattern >> i & 1:
                loc[np.arange(R), S[:, i]] = True
        keep_rows.append(loc)
        signs.append(np.full(R, (-1.0) ** (s - bin(pattern).count("1"))))
        owner.append(np.arange(R))
    loc = np.concatenate(keep_rows)
    keep = np.zeros((loc.shape[0], m), dtype=bool)
    keep[:, D] = loc
    vals = game.values(np.full(loc.shape[0], b, dtype=np.int64), keep, clock=clock)
    np.add.at(out, np.concatenate(owner), np.concatenate(signs) * vals)
    return out


def _ksii_map(blocks: list[np.ndarray], first: np.ndarray, binom: np.ndarray, k: int):
    """The sparse (E, E) map from SII to k-SII: ``Phi(S) = sum_{U ⊇ S, |U| <= k} B_{|U|-|S|}
    SII(U)`` (B_1 = -1/2); the empty set's row is dropped (k-SII(∅) = v(∅))."""
    from scipy.sparse import csr_matrix

    bern = [float(x) for x in _bernoulli(k)]
    rows, cols, w = [], [], []
    for s, U in enumerate(blocks):
        if s == 0:
            continue
        ju = first[s] + np.arange(len(U))
        for r in range(1, s + 1):  # S ⊆ U, |S| = r >= 1
            for pos in itertools.combinations(range(s), r):
                Ssub = U[:, list(pos)]
                rows.append(_rank(Ssub, first, binom))
                cols.append(ju)
                w.append(np.full(len(U), bern[s - r]))
    E = int(first[-1])
    if not rows:
        return csr_matrix((E, E))
    return csr_matrix((np.concatenate(w), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(E, E))


def _pair_estimates(game: Game, b: int, D: np.ndarray, spec: IndexSpec, k: int,
                    n_samples: int, rng: np.random.Generator, clock: dict):
    d = D.size
    blocks, first = _entries(d, k)
    E = int(first[-1])
    binom = np.array([[comb(c, i) for i in range(k + 2)] for c in range(max(d, 1) + 1)],
                     dtype=np.int64)
    kmap = _ksii_map(blocks, first, binom, k) if spec.name == "k-SII" else None
    est = spec.estimator
    total, total2 = np.zeros(E), np.zeros(E)
    exact = np.zeros(E, dtype=bool)
    exact_vals = np.zeros(E)
    if est == "taylor":  # orders below k: Möbius coefficients, exact
        for s in range(min(k, d + 1)):
            if s == k or s >= len(blocks):
                break
            S = blocks[s]
            sel = first[s] + np.arange(len(S))
            exact[sel] = True
            exact_vals[sel] = _derivatives(game, b, D, np.zeros((len(S), d), bool), S, clock)
    per_sample = {"permutation": sum((d - s + 1) * 2 ** s for s in range(min(k, d) + 1)),
                  "taylor": (len(blocks[k]) if k < len(blocks) else 0) * 2 ** k,
                  "coalitions": E * 2 ** k}[est]
    chunk = max(1, _MAX_REQUESTS // max(per_sample, 1))
    done = 0
    while done < n_samples:
        P = min(chunk, n_samples - done)
        X = np.zeros((P, E))
        if est in ("permutation", "taylor"):
            perms = np.argsort(rng.random((P, d)), axis=1)
            rank = np.argsort(perms, axis=1)
        if est == "permutation":
            for s in range(min(k, d) + 1):
                c_s = factorial(d) / (factorial(s) * factorial(d - s + 1))
                for p in range(d - s + 1):
                    S = np.sort(perms[:, p:p + s], axis=1)
                    base = rank < p
                    delta = _derivatives(game, b, D, base, S, clock)
                    X[np.arange(P), _rank(S, first, binom)] += c_s * delta
            if kmap is not None:
                X = np.asarray((kmap @ X.T).T)
        elif est == "taylor" and k < len(blocks):
            S = blocks[k]
            ent = first[k] + np.arange(len(S))
            pmin = rank[:, S].min(axis=2)  # (P, E_k): the position of S's first unit
            base = rank[:, None, :] < pmin[:, :, None]
            X[:, ent] = _derivatives(game, b, D, base.reshape(-1, d),
                                     np.tile(S, (P, 1)), clock).reshape(P, len(S))
        elif est == "coalitions":
            C = rng.random((P, d)) < 0.5
            for s in range(min(k, d) + 1):
                S = blocks[s]
                ent = first[s] + np.arange(len(S))
                base = np.repeat(C[:, None, :], len(S), axis=1)  # (P, E_s, d)
                base[:, np.arange(len(S))[:, None], S] = False
                X[:, ent] = _derivatives(game, b, D, base.reshape(-1, d),
                                         np.tile(S, (P, 1)), clock).reshape(P, len(S))
        total += X.sum(axis=0)
        total2 += (X * X).sum(axis=0)
        done += P
    mean = total / n_samples
    var = np.maximum(total2 / n_samples - mean * mean, 0.0) * n_samples / (n_samples - 1)
    se = np.sqrt(var / n_samples)
    mean[exact], se[exact] = exact_vals[exact], 0.0
    sizes = np.concatenate([np.full(len(B_), s) for s, B_ in enumerate(blocks)])
    members = np.full((E, k), -1, dtype=np.int64)
    for s, B_ in enumerate(blocks):
        if s:
            members[first[s]:first[s + 1], :s] = D[B_]
    return mean, se, sizes, members


def sampled_interactions(game: Game, spec: IndexSpec, k: int, *, n_samples: int, seed: int,
                         units: list[str], t0: float | None = None) -> InteractionResult:
    """The sampled estimate of ``spec`` at order k for every pair of a checked game (the module's
    estimators), with standard errors; seeded per pair from ``seed`` and the pair's index."""
    t0 = time.perf_counter() if t0 is None else t0
    if spec.estimator is None:
        raise ValueError(f"index {spec.name!r} has no sampled estimator (SII, k-SII, STII, BII, "
                         "SV, BV have); raise max_d to compute it exactly.")
    diff = game.differing()
    B = game.B
    v_empty, v_all = game.v_empty(), game.v_all()
    clock: dict = {}
    parts = []
    for b in range(B):
        rng = np.random.default_rng([seed, game.offset + b])
        D = np.flatnonzero(diff[b]).astype(np.int64)
        parts.append(_pair_estimates(game, b, D, spec, k, n_samples, rng, clock))
    counts = np.array([p[0].size for p in parts], dtype=np.int64)
    eoff = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    values = np.concatenate([p[0] for p in parts]) if B else np.zeros(0)
    se = np.concatenate([p[1] for p in parts]) if B else np.zeros(0)
    if spec.empty_is_baseline and B:
        values[eoff[:-1]], se[eoff[:-1]] = v_empty, 0.0
    dsz = diff.sum(axis=1).astype(np.int64)
    doff = np.concatenate([[0], np.cumsum(dsz)]).astype(np.int64)
    return InteractionResult(
        index=spec.name, order=k, units=units, dsz=dsz,
        Dflat=np.nonzero(diff)[1].astype(np.int64), doff=doff, eoff=eoff,
        members=np.concatenate([p[3] for p in parts]) if B else np.zeros((0, k), np.int64),
        sizes=np.concatenate([p[2] for p in parts]) if B else np.zeros(0, np.int64),
        values=values, se=se, v_empty=v_empty, v_all=v_all, exact=False, method=spec.estimator,
        n_samples=n_samples, removal=game.name,
        n_evals=int(clock.get("coalitions", 0)) * max(int(game.n_draws), 1),
        timings={"total_s": time.perf_counter() - t0})
