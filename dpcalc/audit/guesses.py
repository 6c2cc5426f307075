"""The one-run audit's guesses, fixed before any audited score exists.

Steinke, Nasr, Jagielski 2023 (§3, Thm 3.1; (ε, δ): Cor. 5.4 in arXiv v1) bound the number of
right guesses of any guesser whose guesses are a post-processing of the run's output. The
auditor guesses "in" for the k_in highest scores and "out" for the k_out lowest. Choosing
(k_in, k_out) after seeing the audited canaries' scores and membership would make the p-value
invalid (keeping the best of K tries needs a Bonferroni factor K), so the counts are fixed
without them:

- Dirac gradient canaries: on simulated audits of the pair the run claims — the law of one
  canary's score when in and when out under (q, σ, T) and the threat model (ScoreLaw) —
  drawn on a random stream of their own before training. The counts with the largest mean
  bound over the simulated audits are kept. If the run is what it claims, the real scores
  have exactly that law, so the plan is the best fixed-count policy up to simulation error;
  if it is not, the plan is merely suboptimal, never invalid.
- input canaries (no pair to simulate): on a calibration half of the canaries, whose
  membership the auditor then uses; those are not audited (canaries whose membership the
  auditor knows are part of the fixed training data), and the bound is for the other half.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcalc.audit.bounds import one_run_epsilon_lower, pure_epsilon_lower
from dpcalc.audit.canaries import subsampled_gaussian_log_ratio
from dpcalc.audit.dirac import ALL_ITERATES, THREAT_MODELS
from dpcalc.errors import DpcalcError

PLAN_NORMALS = 4_000_000           # normal draws per pool of simulated scores (~0.3 s)
PLAN_MIN_DRAWS, PLAN_MAX_DRAWS = 400, 20_000
PLAN_CANARIES = 200_000            # simulated canaries over all simulated audits
PLAN_MIN_AUDITS, PLAN_MAX_AUDITS = 20, 200
PLAN_FINALISTS = 6                 # counts re-ranked with the exact (ε, δ) bound
PLAN_TOLERANCE = 1e-3              # bisection width of those exact bounds


def momentum_weights(steps: int, momentum: float) -> np.ndarray:
    """c_t = (1 − μ^{T−t+1})/(1 − μ), t = 1..T: the weight of step t's update in the final
    weights, w_T = w_0 − η·Σ_t c_t·u_t (SGD with momentum μ; all 1 without momentum)."""
    if momentum == 0.0:
        return np.ones(steps)
    return (1.0 - momentum ** np.arange(steps, 0, -1)) / (1.0 - momentum)


@dataclass(frozen=True)
class ScoreLaw:
    """The law of a Dirac canary's score under the pair the run claims (dpcalc.audit.dirac):
    Poisson, readings x_t = b_t + N(0, σ²) with b_t ~ Bernoulli(q) when in, b_t = 0 when out;
    ``shuffle`` = (b, (a, c)): the epoch pair of dpcalc.audit.shuffle (all iterates only)."""

    sampling_rate: float
    noise_multiplier: float
    steps: int
    threat_model: str = ALL_ITERATES
    momentum: float = 0.0
    shuffle: tuple[int, tuple[float, float]] | None = None

    def __post_init__(self) -> None:
        if self.threat_model not in THREAT_MODELS:
            raise DpcalcError(f"--audit-threat-model must be one of {', '.join(THREAT_MODELS)}; "
                              f"got {self.threat_model!r}")
        if self.shuffle is not None and self.threat_model != ALL_ITERATES:
            raise DpcalcError("shuffled audits read every iterate: give --audit-threat-model "
                              "all-iterates with --sampling shuffle")

    @property
    def pair(self) -> str:
        if self.shuffle is None:
            return "subsampled Gaussian pair"
        return f"shuffle pair, shifts {self.shuffle[1][0]:g} and {self.shuffle[1][1]:g}"

    def simulate(self, rng: np.random.Generator, draws: int, member: bool) -> np.ndarray:
        """Scores of ``draws`` simulated canaries, in (``member``) or out: the summed
        log-likelihood ratios (all iterates) or Σ_t c_t·x_t (last model)."""
        if self.shuffle is not None:
            from dpcalc.audit.shuffle import simulate_shuffle_scores

            return simulate_shuffle_scores(rng, draws, self.steps, self.shuffle[0],
                                           self.shuffle[1], self.noise_multiplier, member)
        weights = momentum_weights(self.steps, self.momentum)
        total = np.zeros(draws)
        for step in range(self.steps):  # step by step: memory stays ~draws
            shift = (rng.random(draws) < self.sampling_rate) if member else 0.0
            reading = shift + rng.normal(0.0, self.noise_multiplier, draws)
            if self.threat_model == ALL_ITERATES:
                total += subsampled_gaussian_log_ratio(reading, self.sampling_rate,
                                                       self.noise_multiplier)
            else:
                total += weights[step] * reading
        return total


@dataclass(frozen=True)
class GuessPlan:
    """Guess "in" for the ``guess_in`` highest scores, "out" for the ``guess_out`` lowest."""

    guess_in: int
    guess_out: int
    expected_epsilon: float   # mean bound over the simulated (or calibration) audits
    rule: str                 # how the counts were fixed, for the output

    @property
    def guesses(self) -> int:
        return self.guess_in + self.guess_out


def count_grid(canaries: int) -> np.ndarray:
    """Counts tried for each side: 0 and 1, 1.5, 2, 3, 5, 7 × 10^k up to m, and m."""
    values = {0, canaries}
    for decade in range(7):
        for mantissa in (1.0, 1.5, 2.0, 3.0, 5.0, 7.0):
            value = int(round(mantissa * 10 ** decade))
            if value <= canaries:
                values.add(value)
    return np.array(sorted(values), dtype=np.int64)


def _side_counts(scores: np.ndarray, included: np.ndarray,
                 grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each k of ``grid``: "in" canaries among the k highest scores, "out" canaries among
    the k lowest."""
    ranked = included[np.argsort(scores, kind="stable")]  # lowest score first
    from_top = np.concatenate([[0], np.cumsum(ranked[::-1])])
    from_bottom = np.concatenate([[0], np.cumsum(~ranked)])
    return from_top[grid], from_bottom[grid]


def choose_counts(tops: np.ndarray, bottoms: np.ndarray, grid: np.ndarray, canaries: int,
                  delta: float, beta: float) -> tuple[int, int, float]:
    """The (k_in, k_out) of ``grid`` × ``grid`` with the largest mean bound over the audits
    whose per-side right counts are ``tops`` and ``bottoms`` (audits × grid): ranked by the
    δ = 0 bound (pure_epsilon_lower), then the best PLAN_FINALISTS by the (ε, δ) bound.
    Returns (k_in, k_out, mean (ε, δ) bound)."""
    k_in, k_out = grid[:, None], grid[None, :]
    guesses = k_in + k_out
    valid = (guesses >= 1) & (guesses <= canaries)
    correct = tops[:, :, None] + bottoms[:, None, :]
    screen = pure_epsilon_lower(np.broadcast_to(guesses, correct.shape), correct, beta).mean(0)
    with np.errstate(divide="ignore", invalid="ignore"):
        margin = ((correct - guesses / 2.0) / np.sqrt(np.maximum(guesses, 1))).mean(0)
    cells = [(float(screen[i, j]), float(margin[i, j]), i, j) for i, j in zip(*np.nonzero(valid))]
    cells.sort(reverse=True)
    best = None
    for screened, margin_mean, i, j in cells[:PLAN_FINALISTS]:
        guessed = int(guesses[i, j])
        found: dict[int, float] = {}
        for right in correct[:, i, j]:
            if int(right) not in found:
                found[int(right)] = one_run_epsilon_lower(canaries, guessed, int(right), delta,
                                                          beta, tolerance=PLAN_TOLERANCE)
        exact = float(np.mean([found[int(right)] for right in correct[:, i, j]]))
        key = (exact, screened, margin_mean)
        if best is None or key > best[0]:
            best = (key, int(grid[i]), int(grid[j]))
    if best is None:
        raise DpcalcError("an audit needs at least one canary to guess")
    return best[1], best[2], best[0][0]


def plan_guesses(canaries: int, law: ScoreLaw, delta: float, beta: float,
                 rng: np.random.Generator) -> GuessPlan:
    """Fix the counts before training from simulated audits of ``canaries`` canaries (each in
    with probability ½) whose scores follow ``law``; ``rng`` is a stream of the planner's own.
    Nothing of the run or its canaries enters: the guesses made with the plan are a
    post-processing of the run's output."""
    draws = int(min(PLAN_MAX_DRAWS, max(PLAN_MIN_DRAWS, PLAN_NORMALS // max(law.steps, 1))))
    pool_in, pool_out = law.simulate(rng, draws, True), law.simulate(rng, draws, False)
    audits = int(min(PLAN_MAX_AUDITS, max(PLAN_MIN_AUDITS, PLAN_CANARIES // canaries)))
    grid = count_grid(canaries)
    tops = np.empty((audits, grid.shape[0]), dtype=np.int64)
    bottoms = np.empty_like(tops)
    for audit in range(audits):
        included = rng.random(canaries) < 0.5
        scores = np.where(included, rng.choice(pool_in, canaries), rng.choice(pool_out, canaries))
        tops[audit], bottoms[audit] = _side_counts(scores, included, grid)
    guess_in, guess_out, expected = choose_counts(tops, bottoms, grid, canaries, delta, beta)
    rule = (f"counts fixed before training on {audits} simulated audits of the {law.pair} "
            f"(a random stream of their own; mean bound there {math.floor(expected * 1e3) / 1e3:g})")
    return GuessPlan(guess_in, guess_out, expected, rule)


def plan_from_calibration(scores: np.ndarray, included: np.ndarray, evaluated: int,
                          delta: float, beta: float) -> GuessPlan:
    """Counts for ``evaluated`` audited canaries chosen on other, calibration canaries (their
    scores and membership): the best counts on the calibration canaries, scaled to the
    audited ones."""
    scores = np.asarray(scores, dtype=float)
    included = np.asarray(included, dtype=bool)
    calibration = int(scores.shape[0])
    if calibration < 1 or evaluated < 1:
        raise DpcalcError("an input-canary audit needs at least 2 canaries (--canaries)")
    grid = count_grid(calibration)
    top, bottom = _side_counts(scores, included, grid)
    guess_in, guess_out, expected = choose_counts(top[None], bottom[None], grid, calibration,
                                                  delta, beta)
    scale = evaluated / calibration
    guess_in, guess_out = int(round(guess_in * scale)), int(round(guess_out * scale))
    if guess_in + guess_out > evaluated:
        guess_out = evaluated - guess_in
    if guess_in + guess_out == 0:
        guess_in = 1
    rule = (f"counts chosen on {calibration} calibration canaries (not audited); bounded on "
            f"the other {evaluated}")
    return GuessPlan(guess_in, guess_out, expected, rule)
