"""The sums a composition of many CompactPld phases needs, over all phases at once.

A :class:`PhaseBatch` holds every phase's non-zero entries side by side and their block
moments (blocks of BLOCK grid points, centre c_β = βB + (B − 1)/2, t = (l − c_β)/(B/2),
μ_{β,n} = Σ_{l∈β} p_l tⁿ): any sum of the pmf against a kernel smooth on the scale of a block
is a short series in them (Taylor: Σ_l p_l f(l) = Σ_β Σ_n f⁽ⁿ⁾(c_β)(B/2)ⁿ/n!·μ_{β,n}). From
them, with one NumPy pass over all phases where a per-phase loop would pay NumPy's per-call
cost thousands of times:

* :meth:`cumulant` — Σ_i T_i ln E_i[e^{λL}] (Chernoff windows, chernoff._chernoff_window):
  the series with y = λhB/2, plus its remainder |y|^M/M!·e^{|y|} per unit mass and the
  float error of the sums; the entries themselves where |y| > _SERIES_REACH.
* :meth:`rounding_cumulant` — Σ_i T_i ln E_i[e^{λE}] of the lower bound's rounding errors
  (chernoff.rounding_slack): the buckets with |E| ≤ _SMALL_ERROR·h by the Taylor series of
  e^{λE} to order _ROUNDING_ORDER over power sums of E (remainder ≤ y^{N+1}e^{|y|}/(N+1)!,
  y = |λ|·_SMALL_ERROR·h ≤ _REACH), the others summed directly; every bucket directly
  for larger λ.

Each is an upper bound (Chernoff stays valid); tests/test_phases.py checks them against
the plain sums over the dense pmf. The spectra of phase_spectra.py read the same moments.

Float error of the moments: t is exact (a half-integer over a power of two), tⁿ exact up to
n = 6 and within (n − 6)u beyond, each product within u, each block sum of ≤ B terms within
γ_B·Σ|terms| (Higham 2002, eq. (4.4), whatever the order): |μ̂ − μ| ≤ (B + n + 1)u·m_β,
m_β the block's mass (|t| < 1).
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.pld.fft_error import UNIT_ROUNDOFF

BLOCK = 64
# Powers of t computed at first (the MGFs' series; the spectra ask for more where needed,
# up to MAX_TERMS).
TERMS = 14
MAX_TERMS = 40
# ... and summed in long double too (phase_spectra.low_spectrum).
LONG_TERMS = 3
# The MGF series is used where |λ|·h·B/2 is at most this (else: the entries).
_SERIES_REACH = 1.0
# Relative margin on MGFs summed in float (their rounding, far below any other term).
_MGF_MARGIN = 1e-12
# Rounding errors up to _SMALL_ERROR·h by the Taylor series of order _ROUNDING_ORDER, for λ
# with |λ|·_SMALL_ERROR·h ≤ _REACH (beyond: every bucket one by one).
_SMALL_ERROR = 0.005
_REACH = 1.0
_ROUNDING_ORDER = 14
# The block moments are summed over chunks of about this many entries (cache-sized).
_CHUNK_ENTRIES = 1 << 15


# OpenBLAS multiplies on every core above ~2^18 multiply-adds, and its idle threads spin: a
# tall (blocks × 14) by (14 × 5) product cost 20× the CPU time of the same product in row
# chunks under it on a shared 2-core machine (measured: 24 ms against 0.6 ms).
_SINGLE_THREAD_WORK = 1 << 17


def rows_product(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """left @ right for a tall ``left`` (rows × k) and a small ``right`` (k × m), in row
    chunks small enough for one BLAS thread (the same sums, row by row)."""
    rows = max(1, _SINGLE_THREAD_WORK // max(1, left.shape[1] * right.shape[1]))
    if left.shape[0] <= rows:
        return left @ right
    out = np.empty((left.shape[0], right.shape[1]), dtype=np.result_type(left, right))
    for start in range(0, left.shape[0], rows):
        np.matmul(left[start:start + rows], right, out=out[start:start + rows])
    return out


def _segment_logsumexp(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """ln Σ e^{values} over the row segments beginning at ``starts`` (axis 0), per column;
    −inf for a segment of −inf only."""
    top = np.maximum.reduceat(values, starts, axis=0)
    safe = np.where(np.isfinite(top), top, 0.0)
    counts = np.diff(np.r_[starts, values.shape[0]])
    with np.errstate(divide="ignore", invalid="ignore"):
        total = np.add.reduceat(np.exp(values - np.repeat(safe, counts, axis=0)), starts, axis=0)
        return safe + np.log(total)


class PhaseBatch:
    """Every phase of ``plds_with_steps`` (CompactPld, steps) side by side (module doc)."""

    def __init__(self, plds_with_steps):
        self.plds = [pld for pld, _ in plds_with_steps]
        self.steps = np.array([steps for _, steps in plds_with_steps], dtype=float)
        self.step = self.plds[0].grid_step
        self.offsets = np.array([pld.offset for pld in self.plds], dtype=float)
        sizes = np.array([pld.index.size for pld in self.plds])
        self.index = np.concatenate([pld.index for pld in self.plds])
        self.values = np.concatenate([pld.values for pld in self.plds])
        self.phase_of_entry = np.repeat(np.arange(len(self.plds)), sizes)
        self.entry_starts = np.r_[0, np.cumsum(sizes)[:-1]]
        self.mass = np.add.reduceat(self.values, self.entry_starts) if self.values.size else 0.0
        self._moments()
        self._rounding = None

    # ------------------------------------------------------------------ block moments
    def _moments(self) -> None:
        block = self.index // BLOCK
        new = np.r_[True, (np.diff(block) != 0) | (np.diff(self.phase_of_entry) != 0)]
        self._starts = starts = np.flatnonzero(new)
        self.blocks = block[starts]
        self.phase_of_block = self.phase_of_entry[starts]
        self.block_starts = np.flatnonzero(np.r_[True, np.diff(self.phase_of_block) != 0])
        self.centres = self.blocks * BLOCK + (BLOCK - 1) / 2.0
        counts = np.diff(np.r_[starts, self.index.size])
        self._t = (self.index - np.repeat(self.centres, counts)) / (BLOCK / 2.0)
        self.mu = np.empty((starts.size, 0))
        self._power = self.values.copy()  # values·tⁿ for the next n
        self.ensure_terms(TERMS)
        self.mu_long = np.empty((starts.size, LONG_TERMS), dtype=np.longdouble)
        for rows, entries, local in self._chunks():
            long_power = self.values[entries].astype(np.longdouble)
            long_t = self._t[entries].astype(np.longdouble)  # exact (t has a few bits)
            for n in range(LONG_TERMS):
                self.mu_long[rows, n] = np.add.reduceat(long_power, local)
                if n + 1 < LONG_TERMS:
                    long_power *= long_t
        self.block_mass = self.mu[:, 0].copy()

    def _chunks(self) -> list:
        """(block rows, entries, the rows' first entries within the chunk) of consecutive
        blocks of about _CHUNK_ENTRIES entries: the moments' sums per chunk, whose
        temporaries stay in cache (each block's sum is the same whatever the chunks)."""
        found = self.__dict__.get("_chunk_list")
        if found is None:
            found = _contiguous_chunks(self._starts, self.index.size, _CHUNK_ENTRIES)
            self.__dict__["_chunk_list"] = found
        return found

    def ensure_terms(self, terms: int) -> None:
        """Block moments up to tⁿ, n < ``terms`` (more are computed on demand)."""
        have = self.mu.shape[1]
        if terms <= have:
            return
        extra = np.zeros((self.mu.shape[0], terms - have))
        for rows, entries, local in self._chunks():
            power, t = self._power[entries], self._t[entries]  # views: the powers advance
            for column in range(terms - have):
                extra[rows, column] = np.add.reduceat(power, local)
                power *= t
        self.mu = np.concatenate([self.mu, extra], axis=1)

    def phase_blocks(self, phase: int) -> slice:
        """The rows of the block arrays that belong to ``phase``."""
        ends = self.__dict__.get("_block_ends")
        if ends is None:
            ends = self.__dict__["_block_ends"] = np.r_[self.block_starts[1:], self.blocks.size]
        return slice(int(self.block_starts[phase]), int(ends[phase]))

    # ------------------------------------------------------------------ cumulants
    def cumulant(self, lambdas: np.ndarray) -> np.ndarray:
        """Upper bounds on Σ_i T_i ln Σ_l p_{i,l} e^{λ ℓ_{i,l}} per λ (module doc)."""
        lambdas = np.atleast_1d(np.asarray(lambdas, dtype=float))
        scaled = lambdas * self.step  # per grid point
        y = scaled * (BLOCK / 2.0)
        near = np.abs(y) <= _SERIES_REACH
        out = np.empty(lambdas.size)
        if np.any(near):
            out[near] = self._series_cumulant(scaled[near])
        if not np.all(near):
            with np.errstate(divide="ignore"):
                exponents = (np.log(self.values)[:, None]
                             + scaled[None, ~near] * self.index[:, None].astype(float))
            per_phase = _segment_logsumexp(exponents, self.entry_starts) + _MGF_MARGIN
            out[~near] = self.steps @ (per_phase + scaled[None, ~near] * self.offsets[:, None])
        return out

    def _series_cumulant(self, scaled: np.ndarray) -> np.ndarray:
        y = scaled * (BLOCK / 2.0)
        n = np.arange(TERMS)
        factorial = np.cumprod(np.r_[1.0, np.arange(1, TERMS)])
        coefficients = y[None, :] ** n[:, None] / factorial[:, None]
        magnitude = np.abs(y)
        slack = (magnitude**TERMS / (factorial[-1] * TERMS)
                 + (BLOCK + 2 * TERMS + 8) * UNIT_ROUNDOFF) * np.exp(magnitude)
        per_phase = np.empty((len(self.plds), y.size))
        for phases, rows, local in self.phase_chunks(max(1, _CHUNK_ENTRIES // y.size)):
            series = rows_product(self.mu[rows, :TERMS], coefficients)
            mass = self.block_mass[rows, None]
            series += mass * slack[None, :]
            with np.errstate(divide="ignore", invalid="ignore"):
                exponents = (scaled[None, :] * self.centres[rows, None]
                             + np.log(np.maximum(series, 0.0)))
            exponents = np.where(mass > 0, exponents, -np.inf)
            per_phase[phases] = _segment_logsumexp(exponents, local) + _MGF_MARGIN
        return self.steps @ (per_phase + scaled[None, :] * self.offsets[:, None])

    def phase_chunks(self, blocks: int) -> list:
        """(phases, their block rows, the phases' first rows within them) of consecutive
        phases of about ``blocks`` blocks in all (whole phases: cache-sized temporaries for
        the per-phase sums, which do not depend on the chunks)."""
        key = ("_phase_chunks", blocks)
        found = self.__dict__.get(key)
        if found is None:
            found = _contiguous_chunks(self.block_starts, self.blocks.size, blocks)
            self.__dict__[key] = found
        return found

    @property
    def phase_variance(self) -> np.ndarray:
        """loss_variance of every phase (DiscretePld.loss_variance: Σ p(ℓ − Σpℓ)²)."""
        found = self.__dict__.get("_variance")
        if found is None:
            losses = (self.offsets[self.phase_of_entry] + self.index) * self.step
            means = np.add.reduceat(self.values * losses, self.entry_starts)
            found = np.add.reduceat(self.values * (losses - means[self.phase_of_entry]) ** 2,
                                    self.entry_starts)
            self.__dict__["_variance"] = found
        return found

    def variance(self) -> float:
        """Σ_i T_i·loss_variance_i."""
        return float(self.steps @ self.phase_variance)

    def phase_entries(self, phases: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(position of the phase in ``phases``, grid index, mass) of their entries."""
        ends = np.r_[self.entry_starts[1:], self.index.size]
        pieces = [slice(int(self.entry_starts[p]), int(ends[p])) for p in phases.tolist()]
        owner = np.concatenate([np.full(piece.stop - piece.start, position)
                                for position, piece in enumerate(pieces)])
        return (owner, np.concatenate([self.index[piece] for piece in pieces]),
                np.concatenate([self.values[piece] for piece in pieces]))

    def rounding_cumulant(self, lambdas: np.ndarray) -> np.ndarray:
        """Upper bounds on Σ_i T_i ln E_i[e^{λE}] per λ, E the rounding errors (module doc)."""
        if self._rounding is None:
            self._rounding = _RoundingSums(self.plds, self.step)
        return self.steps @ self._rounding.log_mgf(np.atleast_1d(np.asarray(lambdas, dtype=float)))


class _RoundingSums:
    """Per phase: the power sums Σ m·Eⁿ (n ≤ _ROUNDING_ORDER) and Σ m|E|^{N+1} of its
    buckets with |E| ≤ c = _SMALL_ERROR·h, and its other buckets as they are: for λ with
    |λ|c ≤ _REACH the former by the Taylor series of e^{λE} (remainder ≤ y^{N+1}e^y/(N+1)!,
    y = |λ|c), the latter one by one; beyond, every bucket one by one."""

    def __init__(self, plds, step: float):
        masses = [pld.rounding_masses for pld in plds]
        sizes = np.array([mass.size for mass in masses])
        mass = np.concatenate(masses)
        error = np.concatenate([pld.rounding_errors for pld in plds])
        self.phase = np.repeat(np.arange(len(plds)), sizes)
        self.count = len(plds)
        self.cut = _SMALL_ERROR * step
        small = np.abs(error) <= self.cut
        n = _ROUNDING_ORDER
        self.sums = np.empty((n + 2, self.count))
        # every phase's buckets are contiguous: its sums are a reduceat over them, the
        # buckets not small entering as exact zeros (the same sums, in the same order)
        self.sums[:] = 0.0
        filled = np.flatnonzero(sizes > 0)
        starts = (np.cumsum(sizes) - sizes)[filled]
        # phase by phase in chunks of about _CHUNK_ENTRIES buckets (cache-sized temporaries)
        cuts = np.unique(np.r_[np.searchsorted(starts, np.arange(0, mass.size, _CHUNK_ENTRIES)),
                               starts.size]).tolist() if mass.size else []
        for first, last in zip(cuts[:-1], cuts[1:]):
            begin = int(starts[first])
            end = int(starts[last]) if last < starts.size else mass.size
            local, rows = starts[first:last] - begin, filled[first:last]
            chosen = small[begin:end]
            power = np.where(chosen, mass[begin:end], 0.0)
            values = np.where(chosen, error[begin:end], 0.0)
            for k in range(n + 1):
                self.sums[k, rows] = np.add.reduceat(power, local)
                power *= values
            self.sums[n + 1, rows] = np.add.reduceat(np.abs(power, out=power), local)
        # float error of the sums: ≤ γ_m Σ|terms| (m the most buckets of a phase)
        largest = int(np.max(sizes)) if sizes.size else 0
        self.slack = 2.0 * (largest + n + 4) * UNIT_ROUNDOFF
        with np.errstate(divide="ignore"):
            self.log_mass = np.log(mass)
        self.error, self.small = error, small

    def log_mgf(self, lambdas: np.ndarray) -> np.ndarray:
        """(phases, λ) upper bounds on ln Σ_k m_k e^{λE_k}."""
        lambdas = np.asarray(lambdas, dtype=float)
        out = np.empty((self.count, lambdas.size))
        near = np.abs(lambdas) * self.cut <= _REACH
        if np.any(near):
            out[:, near] = self._near(lambdas[near])
        if not np.all(near):
            far = lambdas[~near]
            out[:, ~near] = self._direct(far, np.ones(self.error.size, dtype=bool),
                                         np.full((self.count, far.size), -np.inf))
        return out + _MGF_MARGIN

    def _near(self, lambdas: np.ndarray) -> np.ndarray:
        n = _ROUNDING_ORDER
        powers = lambdas[None, :] ** np.arange(n + 1)[:, None] / np.array(
            [math.factorial(k) for k in range(n + 1)])[:, None]  # (n + 1, L)
        series = self.sums[:n + 1].T @ powers  # (P, L)
        series += (np.abs(lambdas)[None, :] ** (n + 1) / math.factorial(n + 1) * math.exp(_REACH)
                   * self.sums[n + 1][:, None]
                   + self.slack * math.exp(_REACH) * self.sums[0][:, None])
        with np.errstate(divide="ignore"):
            log_series = np.log(np.maximum(series, 0.0))
        return self._direct(lambdas, ~self.small, log_series)

    def _direct(self, lambdas: np.ndarray, chosen: np.ndarray, log_series: np.ndarray
                ) -> np.ndarray:
        """(phases, λ): ln(e^{log_series} + Σ_{chosen} m e^{λE}) per phase, all λ at once
        (the chosen buckets of a phase are contiguous: segment sums, in column chunks)."""
        owner = self.phase[chosen]
        if not owner.size:
            return log_series
        starts = np.flatnonzero(np.r_[True, np.diff(owner) != 0])
        present = owner[starts]
        counts = np.diff(np.r_[starts, owner.size])
        log_mass, error = self.log_mass[chosen][:, None], self.error[chosen][:, None]
        out = np.array(log_series, dtype=float, copy=True)
        width = max(1, (1 << 15) // owner.size)  # temporaries that stay in cache
        for first in range(0, lambdas.size, width):
            columns = slice(first, first + width)
            exponents = log_mass + error * lambdas[None, columns]
            top = out[:, columns].copy()
            top[present] = np.maximum(top[present], np.maximum.reduceat(exponents, starts, axis=0))
            safe = np.where(np.isfinite(top), top, 0.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                total = np.exp(out[:, columns] - safe)
                total[present] += np.add.reduceat(
                    np.exp(exponents - np.repeat(safe[present], counts, axis=0)), starts, axis=0)
                out[:, columns] = safe + np.log(total)
        return out


class PhasePlds(list):
    """A list of (CompactPld, steps), with their PhaseBatch built on first use (``batch``):
    chernoff.py and phase_spectra.py read the batch instead of looping over the phases."""

    @property
    def batch(self) -> PhaseBatch:
        found = self.__dict__.get("_batch")
        if found is None:
            found = self.__dict__["_batch"] = PhaseBatch(self)
        return found


def _contiguous_chunks(starts: np.ndarray, total: int, size: int) -> list:
    """(groups, their entries, the groups' first entries within the chunk) of consecutive
    groups (starting at ``starts`` in ``total`` entries) of about ``size`` entries each,
    never splitting a group."""
    if not total:
        return []
    cuts = np.unique(np.r_[np.searchsorted(starts, np.arange(0, total, size)),
                           starts.size]).tolist()
    found = []
    for first, last in zip(cuts[:-1], cuts[1:]):
        begin = int(starts[first])
        end = int(starts[last]) if last < starts.size else total
        found.append((slice(first, last), slice(begin, end), starts[first:last] - begin))
    return found
