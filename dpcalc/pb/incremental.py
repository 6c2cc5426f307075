"""Certified ε of a run that grows phase by phase, recomposed from what earlier answers
computed (training.accountant.PrivacyAccountant asks after every epoch).

buckets.epsilon_bounds chooses its grid, tails and window for the whole run, so asking
again after one more phase redoes every phase. Here everything a phase contributes is kept
per phase and per direction, on choices that change rarely and only as functions of the
run itself (the answer never depends on when it was asked before):

* the grid: h = 1e-4·2^j, the largest such step at or below buckets' first-grid rule
  without its "composed spread / 5000" term (which only coarsens): finer or equal, so no
  looser; it changes only when a phase of narrower loss arrives (then every phase is
  discretised again);
* the tails: K sized for 1e9 steps (pb's limit), valid for every shorter run (mass beyond
  ±Kσ ≤ τ/10^9 per step: the +∞ atom and the windows stay within τ);
* the one-step PLDs (compact.py, all their buckets), their block moments, and tables of
  their cumulants at fixed λ (the Chernoff windows and the lower bound's rounding slack
  are minima over those tables: every λ gives a valid bound, curve_compose.py does the
  same);
* the circle: the smallest of a fixed ladder of sizes that holds the window and its pad,
  and each phase's low-frequency spectrum and high-frequency bound on it
  (phase_spectra.py), recomputed only when the circle or the number of coefficients
  changes.

A new phase costs its four discretisations and tables; an answer costs the sums over the
phases (Σ T ln M̄, a (phases × circle) sum, kept but for its last phase's term:
_OrderedSum), the product of their spectra and one read-out per composition. Where the bounds
miss the tolerance on this grid, the answer comes from buckets.epsilon_bounds (fresh, not
kept). Every bound is pb's: the same constructions and error terms on other, fixed
choices, so the digits may differ from a fresh pb call (never looser by more than its
grid: the grid here is at least as fine).
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.numerics import fourier
from dpcalc.pb.buckets import (_LOWER_FAILURE, DEFAULT_TOLERANCE, PldBounds, _open_directions,
                               check_consistent, epsilon_bounds, phase_directions)
from dpcalc.pb.curve import _NOISE_SHARE, _noise_mass
from dpcalc.pb.direction_pass import _LIGHT, lower_allowance, saddle_estimate
from dpcalc.pb.first_grid import (_MAX_STEP_POINTS, DEFAULT_GRID_STEP, TAIL_FRACTION,
                                  tail_half_width)
from dpcalc.models.schedule import MAX_STEPS
from dpcalc.pld.compact import discretise_many
from dpcalc.pld.fft_compose import _power, infinity_upper, read_back
from dpcalc.pld.fft_error import widened_window
from dpcalc.pld.spectral_readout import SpectralTail
from dpcalc.pld.phase_batch import PhaseBatch
from dpcalc.pld.phase_spectra import (_DROPPED, _FOLD, _K_LADDER, BLOCK, StackedErrorBound,
                                      _series_terms, compact_input_error, dropped_bound,
                                      high_bound, low_spectra)
from dpcalc.pld.pld import LOWER, MAX_FFT_POINTS, UPPER

# λ tables of the windows and of the rounding slack: about the optimum of the first phase
# alone (the optimum falls like 1/√T: the tables reach down to a run 10^8 times longer).
_WINDOW_SPAN = (1e-4, 2.0)
_WINDOW_POINTS = 90
_SLACK_SPAN = (1e-4, 10.0)
_SLACK_POINTS = 160
# The circle sizes: next_fast_len of 1024·1.5^j (a new size recomputes every phase's
# spectrum: a coarse ladder keeps that rare as the run grows).
_LADDER = sorted({fourier.next_fast_len(int(1024 * 1.5**j)) for j in range(50)})


def grid_step(phases, direction: str, half_width: float, spans: list | None = None) -> float:
    """The grid of this module doc: 1e-4·2^j at or below min(1e-4, one step's smallest loss
    spread / 8), and never finer than one step's loss range in _MAX_STEP_POINTS points.
    ``spans``: (pair, spread, range width) of the phases already seen, kept by the caller
    (extended here; entries from a pair that changed are dropped)."""
    spans = [] if spans is None else spans
    seen = 0
    while seen < min(len(spans), len(phases)) and spans[seen][0] is phases[seen][0]:
        seen += 1
    del spans[seen:]
    for pair, _ in phases[seen:]:
        low, high = pair.loss_range(direction, half_width)
        spans.append((pair, pair.loss_moments(direction)[1], high - low))
    single = min(spread for _, spread, _ in spans)
    widest = max(width for _, _, width in spans)
    step = max(min(DEFAULT_GRID_STEP, single / 8.0), widest / _MAX_STEP_POINTS, 1e-12)
    return DEFAULT_GRID_STEP * 2.0 ** math.floor(math.log2(step / DEFAULT_GRID_STEP) + 1e-9)


class _Phase:
    """One phase's one-step PLD (direction, bound) on the current grid, and what it adds:
    its block moments, cumulant tables at ``lambdas``, spectra per circle."""

    def __init__(self, pld, steps: int, lambdas: np.ndarray):
        self.pld, self.steps = pld, steps
        self.batch = PhaseBatch([(pld, 1)])
        self.above = self.batch.cumulant(lambdas)
        self.below = self.batch.cumulant(-lambdas)
        self.input_error = compact_input_error(pld)
        self.infinity = infinity_upper(pld)
        self.rounding = None
        self.high: dict[int, np.ndarray] = {}
        self.spectra: dict[tuple, tuple] = {}
        self.powered = None

    def high_bound(self, circle: int) -> np.ndarray:
        if circle not in self.high:
            if len(self.high) > 2:
                self.high.clear()
            self.high[circle] = high_bound(self.batch, circle, [0])
        return self.high[circle]

    def spectrum(self, size: int, count: int, terms: int):
        key = (size, count, terms)
        if key not in self.spectra:
            values, errors = low_spectra(self.batch, size, count, terms)
            value, error = values[0], errors[0]
            modulus = np.abs(value)
            with np.errstate(divide="ignore"):
                log_bound = np.log(np.maximum(modulus, np.minimum(1.0, modulus + error)))
                log_modulus = np.log(modulus)
            log_size = np.sqrt(np.where(np.isfinite(log_modulus), log_modulus, 0.0) ** 2
                               + np.angle(value) ** 2)
            self.spectra = {key: (value, (error, 0.0, log_bound, log_size))}
            self.powered = None
        return self.spectra[key]

    def power(self, size: int, count: int, terms: int, steps: int) -> np.ndarray:
        """spectrum(...)[0] raised to ``steps`` (fft_compose._power), kept."""
        key = (size, count, terms, steps)
        if self.powered is None or self.powered[0] != key:
            self.powered = (key, _power(self.spectrum(size, count, terms)[0], steps))
        return self.powered[1]


class _OrderedSum:
    """Σ_i T_i·row(kept_i) over the kept phases, added in their order from 0 (the same float
    sums whenever it is asked, so answers do not depend on when they were asked), keeping
    the sum over all but the last phase: a later call adds only the phases after those (a
    new phase, or the last one grown: only the last kept phase is ever replaced). ``key``
    (the circle): a new one starts again."""

    def __init__(self):
        self.key, self.terms, self.partial = None, [], None

    def total(self, key, kept: list, steps: list, row) -> np.ndarray:
        terms = list(zip(kept, steps))
        if (key != self.key or len(self.terms) >= len(terms)
                or any(mine[0] is not theirs[0] or mine[1] != theirs[1]
                       for mine, theirs in zip(self.terms, terms))):
            self.key, self.terms, self.partial = key, [], None
        for phase, count in terms[len(self.terms):-1]:
            value = float(count) * row(phase)
            self.partial = (np.zeros_like(value) if self.partial is None else self.partial) + value
            self.terms.append((phase, count))
        phase, count = terms[-1]
        last = float(count) * row(phase)
        return (np.zeros_like(last) if self.partial is None else self.partial) + last


class RunningBounds:
    """pb's certified ε bounds at ``delta`` for a run given as its phases (pairs with
    steps), reusing every phase already seen (module doc)."""

    def __init__(self, delta: float, tolerance: float = DEFAULT_TOLERANCE):
        self.delta, self.tolerance = delta, tolerance
        self.tail_mass = TAIL_FRACTION * delta
        self.failure = _LOWER_FAILURE * delta
        self.half_width = tail_half_width(MAX_STEPS, delta)
        self._steps: dict[str, float] = {}  # grid per direction
        self._hints: dict[tuple, float] = {}  # the last answers: where the read-outs start
        self._counts: dict[tuple, tuple] = {}  # (size, K, terms) of the last composition
        self._points = 0
        self._kept: dict[tuple, list[_Phase]] = {}  # (direction, bound) -> per phase
        self._spans: dict[str, list] = {}  # per direction: grid_step's per-phase terms
        self._high_sums: dict[tuple, _OrderedSum] = {}  # (direction, bound): Σ T ln M̄

    def bounds(self, phases) -> PldBounds:
        """Certified (upper, lower) ε for ``phases`` (a list of (pair, steps) whose first
        ones are the phases of the previous call, in order)."""
        directions = phase_directions(phases)
        uppers, lowers, points = {}, {}, 0
        for direction in directions:
            self._prepare(phases, direction, UPPER)
            value = self._quantile(phases, direction, UPPER, self.delta)
            if value is None:
                return self._fresh(phases)
            uppers[direction] = max(0.0, value)
            points = max(points, self._points)
        order = sorted(directions, key=lambda d: -uppers[d])
        for direction in order:  # the leading direction's lower bound first
            best_lower = max(lowers.values(), default=0.0)
            if lowers and uppers[direction] <= best_lower:
                lowers[direction] = 0.0  # settled: its lower bound cannot matter
                continue
            self._prepare(phases, direction, LOWER)
            read = (self.delta + self.failure  # pruned pairs leave an allowance (direction_pass)
                    + lower_allowance(phases, direction)(uppers[direction]))
            raw = self._quantile(phases, direction, LOWER, read) if read < 1.0 else -math.inf
            if raw is None:
                return self._fresh(phases)
            lowers[direction] = max(0.0, raw - self._slack(phases, direction))
        best = {d: (uppers[d], lowers[d]) for d in directions}
        for direction in directions:
            check_consistent(*best[direction], f"ε ({direction})")
        if _open_directions(best, self.tolerance):
            return self._fresh(phases)
        step = max(self._steps.values())
        return PldBounds(max(uppers.values()), max(lowers.values()), best, step, step, points)

    def _fresh(self, phases) -> PldBounds:
        return epsilon_bounds(phases, self.delta, self.tolerance)

    def _prepare(self, phases, direction: str, bound: str) -> None:
        """Discretise the phases not yet kept (all of them when the grid changes); a
        direction's lower bound only once it is asked for (the leading direction's)."""
        step = grid_step(phases, direction, self.half_width,
                         self._spans.setdefault(direction, []))
        if self._steps.get(direction) != step:
            self._steps[direction] = step
            for each in (UPPER, LOWER):
                self._kept[(direction, each)] = []
            self._kept.pop(("window", direction, step), None)
        if True:
            kept = self._kept[(direction, bound)]
            # a kept phase that has grown since (the run's last) was tilted for fewer steps
            while kept and kept[-1].steps != phases[len(kept) - 1][1]:
                kept.pop()
            first = len(kept)
            if first < len(phases):
                # each phase's tails weighted by the tilt of the run up to it (a function of
                # the run, not of when it was asked)
                tilts = [saddle_estimate(phases[:i + 1], direction, self.delta)
                         for i in range(first, len(phases))]
                light, margin = _LIGHT[bound]
                plds = discretise_many([pair for pair, _ in phases[first:]], direction, step,
                                       self.half_width, bound, light, tilts, margin)
                lambdas = self._window_lambdas(phases, direction)
                kept.extend(_Phase(pld, count, lambdas)
                            for pld, (_, count) in zip(plds, phases[first:]))

    def _window_lambdas(self, phases, direction: str) -> np.ndarray:
        """The windows' λ table: about λ* = √(2 ln(1/τ))/s of the first phase alone (s its
        composed spread), kept with the grid."""
        key = ("window", direction, self._steps[direction])
        if key not in self._kept:
            pair, count = phases[0]
            spread = math.sqrt(count) * max(pair.loss_moments(direction)[1], 1e-300)
            star = math.sqrt(-2.0 * math.log(self.tail_mass)) / spread
            self._kept[key] = np.geomspace(star * _WINDOW_SPAN[0], star * _WINDOW_SPAN[1],
                                           _WINDOW_POINTS)
        return self._kept[key]

    def _window(self, phases, kept) -> tuple[int, int, int, bool]:
        """fft_compose._window from the cumulant tables."""
        steps = np.array([count for _, count in phases], dtype=float)
        log_tau = math.log(self.tail_mass)
        above = steps @ np.array([phase.above for phase in kept])
        below = steps @ np.array([phase.below for phase in kept])
        with np.errstate(invalid="ignore"):
            lambdas = self._window_lambdas(phases, self._direction)
        with np.errstate(invalid="ignore"):
            hi = np.nanmin(np.where(np.isfinite(above), (above - log_tau) / lambdas, np.inf))
            lo = -np.nanmin(np.where(np.isfinite(below), (below - log_tau) / lambdas, np.inf))
        step = kept[0].pld.grid_step
        support_lo = sum(count * phase.pld.offset for (_, count), phase in zip(phases, kept))
        support_hi = sum(count * (phase.pld.offset + phase.pld.points - 1)
                         for (_, count), phase in zip(phases, kept))
        lo_index = max(support_lo, math.floor(lo / step)) if math.isfinite(lo) else support_lo
        hi_index = min(support_hi, math.ceil(hi / step)) if math.isfinite(hi) else support_hi
        return (support_lo, lo_index, hi_index - lo_index + 1,
                lo_index == support_lo and hi_index == support_hi)

    def _quantile(self, phases, direction: str, bound: str, delta: float) -> float | None:
        """The composition's unclamped loss quantile at ``delta`` on the side ``bound``
        (ComposedPld.loss_quantile), read from its spectrum (spectral_readout.py) where it
        can be, else by the inverse transform; None where the composition does not fit,
        its spectrum is not certified, or float noise is too large for this path."""
        found = self._compose(phases, direction, bound)
        if found is None:
            return None
        tail, inverse = found
        self._points = tail.points
        hint = self._hints.get((direction, bound))
        value = None
        if tail.noise_mass() <= _NOISE_SHARE * self.delta:
            value = tail.quantile(delta, bound, hint)
        if value is None:
            composed = read_back(*inverse)
            if _noise_mass(composed) > _NOISE_SHARE * self.delta:
                return None
            value = composed.loss_quantile(delta, bound)
        if math.isfinite(value):
            self._hints[(direction, bound)] = value
        return value

    def _compose(self, phases, direction: str, bound: str):
        """The composition of the kept phases (phase_spectra.compose_many's steps on the
        kept tables and spectra) as (SpectralTail, read_back's arguments), or None where it
        does not fit or certify its spectrum."""
        kept = self._kept[(direction, bound)]
        self._direction = direction
        support_lo, lo_index, needed, whole = self._window(phases, kept)
        if needed > MAX_FFT_POINTS:
            return None
        size = next(n for n in _LADDER + [fourier.next_fast_len(2 * needed + 64)]
                    if n >= needed + max(64, needed // 32))
        circle = max(64, 1 << max(0, (size // _FOLD).bit_length() - 1))
        steps = [count for _, count in phases]
        # Σ_i T_i ln M̄_i, summed phase by phase in order (kept but for the last phase's term)
        total = self._high_sums.setdefault((direction, bound), _OrderedSum()).total(
            circle, kept, steps, lambda phase: phase.high_bound(circle))
        chosen = None
        for count in _K_LADDER:
            if count > size // 2:
                break
            dropped = dropped_bound(total, circle, size, count)
            if dropped <= _DROPPED:
                terms = _series_terms(math.pi * BLOCK * count / size)
                chosen = None if terms is None else (count, terms, dropped)
                break
        if chosen is None:
            return None
        count, terms, dropped = chosen
        # as many coefficients as last time on this circle, if that was more (enough, and
        # every phase's spectrum is kept at that count)
        last = self._counts.get((direction, bound))
        if last is not None and last[0] == size and last[1] > count:
            count, terms = last[1], last[2]
            dropped = dropped_bound(total, circle, size, count)
        self._counts[(direction, bound)] = (size, count, terms)
        spectra = [phase.spectrum(size, count, terms) for phase in kept]
        error_bound = StackedErrorBound(
            size, count, dropped, np.array(steps, dtype=float),
            np.array([terms[0] for _, terms in spectra]),
            np.array([terms[2] for _, terms in spectra]),
            np.array([terms[3] for _, terms in spectra]), [phase.input_error for phase in kept])
        powered = np.array([phase.power(size, count, terms, steps_i)
                            for steps_i, phase in zip(steps, kept)])
        product = np.prod(powered, axis=0)  # in order, as fft_compose.compose multiplies
        infinities = np.array([phase.infinity for phase in kept])
        with np.errstate(divide="ignore"):
            log_finite_mass = float(np.dot(steps, np.log1p(-np.minimum(infinities, 1.0))))
        spectrum = np.zeros(size // 2 + 1, dtype=complex)
        spectrum[:count] = product
        step = kept[0].pld.grid_step
        window_mass = 0.0 if whole else 2 * self.tail_mass
        infinity = -math.expm1(log_finite_mass)
        relative, input_absolute = error_bound.input_terms()
        tail = SpectralTail(product, error_bound.index, size, (lo_index - support_lo) % size,
                            needed, lo_index, step, infinity,
                            widened_window(window_mass, relative, input_absolute),
                            error_bound.absolute(spectrum, include_inverse=False), relative)
        return tail, (spectrum, error_bound, step, support_lo, lo_index, needed, self.tail_mass,
                      window_mass, infinity)

    def _slack(self, phases, direction: str) -> float:
        """chernoff.rounding_slack over λ tables: min (Σ T K(λ) + ln(1/f))/λ, each phase's
        table about the optimum for the run up to it (_slack_table); the tables of the
        phases are summed on the first one's λ where they share it: all phases get the
        same table (the first's)."""
        kept = self._kept[(direction, LOWER)]
        steps = np.array([count for _, count in phases], dtype=float)
        lambdas = self._slack_lambdas(phases, kept)
        for phase in kept:
            if phase.rounding is None or phase.rounding[0] is not lambdas:
                phase.rounding = (lambdas, phase.batch.rounding_cumulant(lambdas))
        cumulant = steps @ np.array([phase.rounding[1] for phase in kept])
        values = (cumulant - math.log(self.failure)) / lambdas
        values = np.where(np.isfinite(values), values, np.inf)
        return float(values.min())

    def _slack_lambdas(self, phases, kept) -> np.ndarray:
        """The slack's λ table: about λ* = √(2 ln(1/f)/(T·Var E)) of the first phase alone
        (chernoff.rounding_slack's optimum for Gaussian-like errors), from _SLACK_SPAN[0]
        of it (a run 10^8 times longer) to _SLACK_SPAN[1] times it; kept while the first
        phase is."""
        first = kept[0]
        if getattr(first, "slack_lambdas", None) is None:
            masses, errors = first.pld.rounding_masses, first.pld.rounding_errors
            variance = max(float(np.sum(masses * errors**2)), 1e-300)
            star = math.sqrt(2.0 * math.log(1.0 / self.failure) / (phases[0][1] * variance))
            first.slack_lambdas = np.geomspace(star * _SLACK_SPAN[0], star * _SLACK_SPAN[1],
                                               _SLACK_POINTS)
        return first.slack_lambdas
