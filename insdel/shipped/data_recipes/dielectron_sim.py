"""Embedded simulator of dielectron events shaped like CERN's ``dielectron.csv`` (paper §5.2).

No download needed: this is the default data set of the README, the tests and CI. Each event is a
dielectron pair generated as follows (all vectorised in NumPy; seeded):

1. **Mass.** A continuum (Drell-Yan pairs and combinatorial background, as selected by the
   triggers of the real file), ``dN/dM ∝ M^(k-1) exp(-M/θ)`` (k = 2, θ = 11 GeV) on
   [1.8, 120] GeV, plus the
   resonances J/ψ (3.0969 GeV, Γ = 92.6 keV), ψ(2S) (3.6861 GeV, Γ = 294 keV), Υ(1S), Υ(2S), Υ(3S)
   (9.4603, 10.0233, 10.3552 GeV; Γ = 54, 32, 20 keV) and Z (91.1876 GeV, Γ = 2.4952 GeV), each a
   Breit-Wigner (Cauchy) line. A share of the continuum is same-sign pairs (combinatorial
   background), as in the real file.
2. **Decay.** Isotropic in the pair's rest frame: each electron carries ``p* = sqrt(M²/4 - m_e²)``
   along a uniformly random direction, the other one the opposite momentum.
3. **Boost.** The pair gets a transverse momentum (Gamma distributed), a rapidity (normal,
   |y| < 3) and a uniform azimuth; the electrons are boosted to the lab frame.
4. **Charges.** Opposite-sign pairs are e⁻e⁺ with charges -1/+1; which electron is listed first is
   random.
5. **Detector.** The transverse momentum is smeared with a calorimeter-like resolution
   ``σ/E = 2.8 %/sqrt(E) ⊕ 0.3 % ⊕ 0.12 GeV/E`` and the directions by 1 mrad in eta and phi.
6. **Derived columns** are computed from the smeared momenta exactly as in the real file:
   ``pt = hypot(px, py)``, ``eta = asinh(pz / pt)``, ``phi = atan2(py, px)``,
   ``E = sqrt(px² + py² + pz² + m_e²)``, and ``M = sqrt((E1 + E2)² - |p1 + p2|²)``.
7. **Acceptance.** |eta| < 2.5 and pt > 1 GeV for both electrons, and 2 <= M <= 110 GeV.

Events are generated in batches until ``n_events`` pass the acceptance; 100,000 events take well
under a second.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from insdel import UnknownOptionError

from ._base import RawData
from .dielectron import CHARGES, COLUMNS, FEATURES, TARGET

NAME = "dielectron_sim"
EMBEDDED = True
#: The options :func:`build` passes on to :func:`simulate` (checked when a configuration is read).
OPTIONS = ("pair_pt_mean", "rapidity_sigma", "continuum_scale", "smear")
SUMMARY = "Simulated dielectron events (Drell-Yan + J/psi, psi(2S), Upsilon, Z), 16 features, target M"

M_E = 0.000510999  # electron mass, GeV
M_MIN, M_MAX = 2.0, 110.0
ETA_MAX, PT_MIN = 2.5, 1.0

#: name -> (mass GeV, width GeV, share of events before acceptance)
RESONANCES: dict[str, tuple[float, float, float]] = {
    "J/psi": (3.0969, 92.6e-6, 0.04),
    "psi(2S)": (3.6861, 294e-6, 0.005),
    "Upsilon(1S)": (9.4603, 54.02e-6, 0.02),
    "Upsilon(2S)": (10.0233, 31.98e-6, 0.006),
    "Upsilon(3S)": (10.3552, 20.32e-6, 0.004),
    "Z": (91.1876, 2.4952, 0.08),
}
#: continuum shape (Gamma: shape k, scale theta in GeV) and share of same-sign pairs within it
CONTINUUM_SHAPE = 2.0
CONTINUUM_SCALE = 11.0
SAME_SIGN_SHARE = 0.5

_GEN_MIN, _GEN_MAX = 1.8, 120.0


def _continuum_mass(rng: np.random.Generator, m: int, scale: float) -> np.ndarray:
    """Gamma(k, scale) truncated to [1.8, 120] GeV (out-of-range draws are drawn again)."""
    M = rng.gamma(CONTINUUM_SHAPE, scale, m)
    bad = np.flatnonzero((M < _GEN_MIN) | (M > _GEN_MAX))
    while len(bad):
        M[bad] = rng.gamma(CONTINUUM_SHAPE, scale, len(bad))
        bad = bad[(M[bad] < _GEN_MIN) | (M[bad] > _GEN_MAX)]
    return M


def _breit_wigner(rng: np.random.Generator, m: int, mass: float, width: float,
                  lo: float, hi: float) -> np.ndarray:
    """Cauchy line truncated to [lo, hi] by inverse CDF."""
    g = width / 2.0
    t_lo, t_hi = np.arctan((lo - mass) / g), np.arctan((hi - mass) / g)
    return mass + g * np.tan(t_lo + (t_hi - t_lo) * rng.random(m))


def _boost(e: np.ndarray, p: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lorentz-boost four-vectors (e, p) (rows) by velocity ``beta`` (rows, |beta| < 1)."""
    b2 = np.einsum("ij,ij->i", beta, beta)
    gamma = 1.0 / np.sqrt(1.0 - b2)
    bp = np.einsum("ij,ij->i", beta, p)
    coef = np.where(b2 > 0, (gamma - 1.0) / np.where(b2 > 0, b2, 1.0), 0.0)
    p_lab = p + (coef * bp + gamma * e)[:, None] * beta
    e_lab = gamma * (e + bp)
    return e_lab, p_lab


def _resolution(e: np.ndarray) -> np.ndarray:
    return np.sqrt((0.028 / np.sqrt(e)) ** 2 + 0.003 ** 2 + (0.12 / e) ** 2)


def _batch(rng: np.random.Generator, m: int, *, pair_pt_mean: float, rapidity_sigma: float,
           continuum_scale: float, smear: bool) -> dict[str, np.ndarray]:
    names = list(RESONANCES)
    shares = np.array([RESONANCES[k][2] for k in names])
    probs = np.concatenate([shares, [1.0 - shares.sum()]])
    comp = rng.choice(len(probs), size=m, p=probs)
    M = np.empty(m)
    cont = comp == len(names)
    M[cont] = _continuum_mass(rng, int(cont.sum()), continuum_scale)
    for i, k in enumerate(names):
        sel = comp == i
        mass, width, _ = RESONANCES[k]
        lo, hi = (60.0, 120.0) if k == "Z" else (mass - 0.5, mass + 0.5)
        M[sel] = _breit_wigner(rng, int(sel.sum()), mass, width, lo, hi)
    same_sign = cont & (rng.random(m) < SAME_SIGN_SHARE)

    # decay in the rest frame, isotropic
    pstar = np.sqrt(np.maximum(M ** 2 / 4.0 - M_E ** 2, 0.0))
    cos_t = rng.uniform(-1.0, 1.0, m)
    sin_t = np.sqrt(1.0 - cos_t ** 2)
    phi_s = rng.uniform(-np.pi, np.pi, m)
    n = np.stack([sin_t * np.cos(phi_s), sin_t * np.sin(phi_s), cos_t], axis=1)
    estar = np.sqrt(pstar ** 2 + M_E ** 2)

    # pair kinematics in the lab
    pt_pair = rng.gamma(2.0, pair_pt_mean / 2.0, m)
    y = rng.normal(0.0, rapidity_sigma, m)
    y = np.clip(y, -3.0, 3.0)
    phi_pair = rng.uniform(-np.pi, np.pi, m)
    mt = np.sqrt(M ** 2 + pt_pair ** 2)
    P = np.stack([pt_pair * np.cos(phi_pair), pt_pair * np.sin(phi_pair), mt * np.sinh(y)], axis=1)
    E = mt * np.cosh(y)
    beta = P / E[:, None]
    e1, p1 = _boost(estar, pstar[:, None] * n, beta)
    e2, p2 = _boost(estar, -pstar[:, None] * n, beta)

    # charges: e-e+ (or same sign); random order
    q1 = rng.choice(np.array([-1.0, 1.0]), size=m)
    q2 = np.where(same_sign, q1, -q1)
    swap = rng.random(m) < 0.5
    p1, p2 = np.where(swap[:, None], p2, p1), np.where(swap[:, None], p1, p2)

    out: dict[str, np.ndarray] = {}
    for tag, p, q in (("1", p1, q1), ("2", p2, q2)):
        pt = np.hypot(p[:, 0], p[:, 1])
        eta = np.arcsinh(p[:, 2] / pt)
        phi = np.arctan2(p[:, 1], p[:, 0])
        if smear:
            e_true = np.sqrt(np.einsum("ij,ij->i", p, p) + M_E ** 2)
            pt = pt * np.abs(1.0 + _resolution(e_true) * rng.standard_normal(m))
            eta = eta + 0.001 * rng.standard_normal(m)
            phi = np.mod(phi + 0.001 * rng.standard_normal(m) + np.pi, 2 * np.pi) - np.pi
        px, py, pz = pt * np.cos(phi), pt * np.sin(phi), pt * np.sinh(eta)
        out["px" + tag], out["py" + tag], out["pz" + tag] = px, py, pz
        out["Q" + tag] = q
    _derive(out)
    return out


def _derive(cols: dict[str, np.ndarray]) -> None:
    """Fill E, pt, eta, phi of both electrons and M from the momenta (as the real file defines
    them)."""
    for tag in ("1", "2"):
        px, py, pz = cols["px" + tag], cols["py" + tag], cols["pz" + tag]
        pt = np.hypot(px, py)
        cols["pt" + tag] = pt
        cols["eta" + tag] = np.arcsinh(pz / pt)
        cols["phi" + tag] = np.arctan2(py, px)
        cols["E" + tag] = np.sqrt(px ** 2 + py ** 2 + pz ** 2 + M_E ** 2)
    cols["M"] = invariant_mass(cols)


def invariant_mass(cols) -> np.ndarray:
    """``M = sqrt((E1 + E2)² - |p1 + p2|²)`` from the columns of a dielectron table (GeV)."""
    e = np.asarray(cols["E1"], dtype=np.float64) + np.asarray(cols["E2"], dtype=np.float64)
    px = np.asarray(cols["px1"], dtype=np.float64) + np.asarray(cols["px2"], dtype=np.float64)
    py = np.asarray(cols["py1"], dtype=np.float64) + np.asarray(cols["py2"], dtype=np.float64)
    pz = np.asarray(cols["pz1"], dtype=np.float64) + np.asarray(cols["pz2"], dtype=np.float64)
    return np.sqrt(np.maximum(e ** 2 - px ** 2 - py ** 2 - pz ** 2, 0.0))


def simulate(n_events: int = 100_000, *, seed: int = 0, pair_pt_mean: float = 12.0,
             rapidity_sigma: float = 1.8, continuum_scale: float = CONTINUUM_SCALE,
             smear: bool = True) -> pd.DataFrame:
    """Simulate ``n_events`` accepted dielectron events with the 19 columns of the real file.

    Parameters
    ----------
    n_events : int
        Number of events after the acceptance cuts.
    seed : int
        Seed of the generator (same seed, same events).
    pair_pt_mean : float
        Mean transverse momentum of the pair (GeV; Gamma distribution with shape 2).
    rapidity_sigma : float
        Standard deviation of the pair's rapidity (truncated at |y| = 3).
    continuum_scale : float
        Scale θ (GeV) of the continuum's Gamma shape (mean 2θ before the cuts).
    smear : bool
        Apply the detector smearing.

    Returns
    -------
    pandas.DataFrame
        Columns Run, Event, E1, px1, py1, pz1, pt1, eta1, phi1, Q1, E2, ..., Q2, M (names without
        the real header's trailing blank; see :func:`write_csv` for a file that has it).
    """
    if isinstance(n_events, bool) or not isinstance(n_events, (int, np.integer)) or n_events < 1:
        raise ValueError(f"n_events must be an integer >= 1; got {n_events!r}.")
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 304]))
    parts: list[dict[str, np.ndarray]] = []
    have = 0
    while have < n_events:
        m = max(int(1.6 * (n_events - have)) + 64, 1024)
        b = _batch(rng, m, pair_pt_mean=pair_pt_mean, rapidity_sigma=rapidity_sigma,
                   continuum_scale=continuum_scale, smear=smear)
        ok = ((np.abs(b["eta1"]) < ETA_MAX) & (np.abs(b["eta2"]) < ETA_MAX)
              & (b["pt1"] > PT_MIN) & (b["pt2"] > PT_MIN)
              & (b["M"] >= M_MIN) & (b["M"] <= M_MAX))
        b = {k: v[ok] for k, v in b.items()}
        parts.append(b)
        have += int(ok.sum())
    cols = {k: np.concatenate([p[k] for p in parts])[:n_events] for k in parts[0]}
    runs = np.array([146511, 146644, 147115, 147450, 148031, 148864, 149011, 149181])
    run = np.sort(rng.choice(runs, size=n_events))
    event = rng.integers(1_000_000, 900_000_000, size=n_events)
    data = {"Run": run, "Event": event}
    data.update({c: cols[c] for c in COLUMNS[2:]})
    return pd.DataFrame(data, columns=COLUMNS)


def write_csv(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write a simulated table as a CSV with the real file's header (``px1 `` included)."""
    out = df.rename(columns={"px1": "px1 "})
    out.to_csv(path, index=False)


def build(*, seed: int = 0, n_events: int = 100_000, **options) -> RawData:
    """Simulate events and return them as the ``dielectron`` recipe would (16 features, target M).

    Parameters
    ----------
    seed : int
        Seed of the simulation (the split uses its own stream of the same seed).
    n_events : int
        Number of accepted events (default 100,000, the size of the real file).
    **options
        Passed to :func:`simulate` (``pair_pt_mean``, ``rapidity_sigma``, ``continuum_scale``,
        ``smear``).
    """
    unknown = [k for k in options if k not in OPTIONS]
    if unknown:
        raise UnknownOptionError.of(f"recipe {NAME!r}", unknown, OPTIONS)
    df = simulate(n_events, seed=seed, **options)
    desc = (
        f"Simulated dielectron events ({n_events} after acceptance, seed {seed}): continuum "
        f"(Drell-Yan + combinatorial) + J/psi, psi(2S), Upsilon(1S-3S), Z; isotropic decays, boosted pairs, detector "
        f"smearing, |eta| < {ETA_MAX}, pt > {PT_MIN} GeV, {M_MIN:g} <= M <= {M_MAX:g} GeV. "
        f"Target M (GeV); 16 features z-scored; Q1, Q2 binary with raw levels -1/+1."
    )
    return RawData(
        features=df[FEATURES].astype(np.float64),
        target=df[TARGET].to_numpy(dtype=np.float64),
        target_name=TARGET,
        binary_levels={c: (-1.0, 1.0) for c in CHARGES},
        standardize=list(FEATURES),
        target_scale=None,
        description=desc,
        info={"simulator": NAME, "n_events": int(n_events), **options},
    )
