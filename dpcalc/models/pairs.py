"""Dominating pairs for the replace-one neighbouring relation, and the splice they share.

* :class:`ReplaceOnePair` — Poisson sampling at rate q, replace-one:
  P = (1 − q)N(0, σ²) + qN(1, σ²) against Q = (1 − q)N(0, σ²) + qN(−1, σ²).
  With Poisson sampling the rest of the batch is the same for both datasets, and the
  replaced record's clipped gradients a, b (|a|, |b| ≤ 1) enter with probability q,
  independently of the rest; the antipodal choice a = −b is the worst case. Under
  Poisson sampling a replacement is one insertion plus one deletion, and Schuchardt,
  Stoian, Kosmala, Günnemann 2024 ("Unified mechanism-specific amplification by
  subsampling and group privacy amplification", NeurIPS), Thm 3.8 with K₊ = K₋ = 1 gives
  this pair as the tight dominating pair; it is the pair of dp_accounting's REPLACE_ONE.
  Symmetric (swapping P and Q mirrors the output): one instance, "replace".

* :class:`SplicedPair` — the pair whose loss above 0 is distributed as that of a pair U
  (under both P and Q) and below 0 as that of a pair M mirrored (P and Q swapped, loss
  negated), with an atom at 0 holding the rest. The atom has equal mass under P and Q, as
  a loss of 0 needs, exactly when TV(U) = TV(M). Its one-sided profiles are U's and M's:
  H_{e^ε}(P‖Q) = δ_U(ε) and H_{e^ε}(Q‖P) = δ_M(ε) for ε ≥ 0 (only losses beyond ε count).
  The profile on all of ℝ follows from the two one-sided ones, δ(−ε) = 1 − e^{−ε} +
  e^{−ε}δ_{Q‖P}(ε), so a step whose two one-sided profiles are at most U's and M's is
  dominated by the splice (Dong, Roth, Su 2022, Prop. 2.12), and so is every adaptive
  composition of such steps (ibid., Thm 3.2). In closed form, with t = |e|:
      e ≥ 0:  P(L > e) = P_U(L_U > e),     Q(L > e) = Q_U(L_U > e);
      e < 0:  P(L ≤ e) = Q_M(L_M > t),     Q(L ≤ e) = P_M(L_M > t).

* :class:`SymmetrisedPair` — fixed-size batches of B out of N, replace-one: the splice of
  R with itself. Given the other B − 1 batch records U and the record the replaced one
  displaces, one step is (1 − γ)N(c) + γN(a) against (1 − γ)N(c) + γN(b), γ = B/N, a, b, c
  clipped gradients. By the advanced joint convexity of Balle, Barthe, Gaboardi 2018
  (Thm 2) and joint convexity, for ε ≥ 0 the hockey-stick divergence of every such
  configuration is at most γ·H_{e^ε′}(N(2)‖N(0)), which the configuration c = b = −a
  attains: the profile of the remove pair R = ((1 − γ)N(0) + γN(2), N(0)) (Zhu, Dong,
  Wang 2022, Prop. 30, for the base pair (N(2), N(0))). An adversary may use R in one step
  and its reverse in the next (Lebeda, Regehr, Kamath, Steinke 2024), and the relation is
  symmetric, so the tight dominating pair is the symmetrisation of R (Dong, Roth, Su 2022,
  Thm 4.2: C_γ(f) = min{f_γ, f_γ⁻¹}**): R's loss where it is positive, mirrored below
  zero with the two distributions swapped, and an atom at 0 holding the rest. Symmetric:
  one instance, "replace". Fixed-size zero-out splices two different pairs
  (zero_out_pairs.py).
"""
from __future__ import annotations

import math

import numpy as np
from dpcalc.numerics.special_functions import log_ndtr

from dpcalc.models.mixture import ADD, REMOVE, GaussianMixturePair
from dpcalc.errors import DpcalcError

REPLACE = "replace"


def _check_pair_inputs(sampling_rate: float, noise_multiplier: float) -> tuple[float, float]:
    try:
        rate, sigma = float(sampling_rate), float(noise_multiplier)
    except (TypeError, ValueError):
        raise DpcalcError("a pair needs a numeric sampling rate and noise multiplier") from None
    if not 0.0 < rate <= 1.0:
        raise DpcalcError(f"sampling rate must be in (0, 1]; got {sampling_rate!r}")
    if not (math.isfinite(sigma) and sigma > 0.0):
        raise DpcalcError(f"noise multiplier must be a finite number > 0; got {noise_multiplier!r}")
    return rate, sigma


def _log_tails_of_shift(x: np.ndarray, shift: float, sigma: float):
    """(log Φ̄((x − s)/σ), log Φ((x − s)/σ)), each from the smaller tail (as mixture.py)."""
    z = (x - shift) / sigma
    with np.errstate(invalid="ignore"):
        smaller = log_ndtr(-np.abs(z))
        larger = np.log1p(-np.exp(smaller))
    positive = z > 0
    return np.where(positive, smaller, larger), np.where(positive, larger, smaller)


class ReplaceOnePair:
    """P = (1 − q)N(0, σ²) + qN(1, σ²) vs Q = (1 − q)N(0, σ²) + qN(−1, σ²).

    With u = x/σ², α = 1 − q and β = q·e^{−1/(2σ²)} the privacy loss is
    L(u) = ln(α + βe^u) − ln(α + βe^{−u}): odd and increasing. Its inverse solves
    βt² − α(e^L − 1)t − βe^L = 0 for t = e^u, taken in a form without cancellation.
    """

    directions = (REPLACE,)

    def __init__(self, sampling_rate: float, noise_multiplier: float):
        self.sampling_rate, self.noise_multiplier = _check_pair_inputs(sampling_rate,
                                                                       noise_multiplier)
        sigma2 = self.noise_multiplier**2
        self._log_alpha = math.log1p(-self.sampling_rate) if self.sampling_rate < 1 else -math.inf
        self._log_beta = math.log(self.sampling_rate) - 0.5 / sigma2

    @property
    def gaussian_mu(self) -> float | None:
        """2/σ at q = 1, where the pair is exactly (N(1, σ²), N(−1, σ²)), μ-GDP with
        μ = 2/σ and no better (Dong, Roth, Su 2022, Def. 2.7); None otherwise."""
        return 2.0 / self.noise_multiplier if self.sampling_rate == 1.0 else None

    def loss(self, x) -> np.ndarray:
        u = np.atleast_1d(np.asarray(x, dtype=float)) / self.noise_multiplier**2
        return (np.logaddexp(self._log_alpha, self._log_beta + u)
                - np.logaddexp(self._log_alpha, self._log_beta - u))

    def inverse_loss(self, loss_values) -> np.ndarray:
        """x with L(x) = e, exactly up to rounding (closed form)."""
        e = np.atleast_1d(np.asarray(loss_values, dtype=float))
        t = np.abs(e)
        kept = -np.expm1(-t)  # 1 − e^{−t} in [0, 1)
        with np.errstate(divide="ignore"):
            log_alpha_kept = self._log_alpha + np.log(kept)
        # ln(e^u) = t + ln(α(1 − e^{−t}) + sqrt(α²(1 − e^{−t})² + 4β²e^{−t})) − ln 2β, in logs
        log_root = 0.5 * np.logaddexp(2.0 * log_alpha_kept, math.log(4.0) + 2.0 * self._log_beta - t)
        log_t = t + np.logaddexp(log_alpha_kept, log_root) - math.log(2.0) - self._log_beta
        return np.sign(e) * log_t * self.noise_multiplier**2

    def log_tails(self, direction: str, grid) -> tuple:
        """log P(L > e), log P(L ≤ e), log Q(L > e), log Q(L ≤ e) for each e in ``grid``."""
        if direction != REPLACE:
            raise DpcalcError(f"direction must be {REPLACE!r}")
        x = self.inverse_loss(grid)
        sigma = self.noise_multiplier
        log_rate = math.log(self.sampling_rate)
        zero_above, zero_below = _log_tails_of_shift(x, 0.0, sigma)
        tails = []
        for shift in (1.0, -1.0):  # P: the record's gradient at +1; Q: at −1
            above, below = _log_tails_of_shift(x, shift, sigma)
            tails.append(np.logaddexp(self._log_alpha + zero_above, log_rate + above))
            tails.append(np.logaddexp(self._log_alpha + zero_below, log_rate + below))
        return tuple(tails)

    def log_bucket_masses(self, direction: str, edges) -> tuple:
        """log P_k, log Q_k of the loss buckets (edges[k], edges[k+1]] (L is increasing in
        x: the output interval between neighbouring roots, gauss_intervals.py) and the end
        tails log P(L ≤ e_0), log P(L > e_last)."""
        from dpcalc.numerics.gauss_intervals import log_normal_masses

        if direction != REPLACE:
            raise DpcalcError(f"direction must be {REPLACE!r}")
        edges = np.asarray(edges, dtype=float)
        roots = self.inverse_loss(edges)
        sigma, rate = self.noise_multiplier, self.sampling_rate
        centre = log_normal_masses(roots[:-1], roots[1:], 0.0, sigma)
        masses = []
        for shift in (1.0, -1.0):  # P: the record's gradient at +1; Q: at −1
            own = log_normal_masses(roots[:-1], roots[1:], shift, sigma)
            masses.append(np.logaddexp(self._log_alpha + centre, math.log(rate) + own))
        tails = self.log_tails(REPLACE, edges[[0, -1]])
        return masses[0], masses[1], float(tails[1][0]), float(tails[0][1])

    def loss_range(self, direction: str, half_width: float) -> tuple[float, float]:
        top = float(self.loss(1.0 + half_width * self.noise_multiplier)[0])
        return -top, top

    def loss_moments(self, direction: str) -> tuple[float, float]:
        sigma = self.noise_multiplier
        x = np.linspace(-1.0 - 12.0 * sigma, 1.0 + 12.0 * sigma, 801)
        density = ((1.0 - self.sampling_rate) * np.exp(-0.5 * (x / sigma) ** 2)
                   + self.sampling_rate * np.exp(-0.5 * ((x - 1.0) / sigma) ** 2))
        weights = density / density.sum()
        losses = self.loss(x)
        mean = float(np.sum(weights * losses))
        return mean, float(math.sqrt(max(float(np.sum(weights * (losses - mean) ** 2)), 0.0)))


def _total_variation(pair) -> tuple[float, float]:
    """(P(L > 0) − Q(L > 0), P(L > 0) + Q(L > 0)) of a remove-direction pair: its total
    variation distance, and the scale of that difference's rounding."""
    p_above, _, q_above, _ = pair.log_tails(REMOVE, np.zeros(1))
    p_mass, q_mass = math.exp(float(p_above[0])), math.exp(float(q_above[0]))
    return p_mass - q_mass, p_mass + q_mass


class SplicedPair:
    """Loss above 0 from ``upper``, below 0 from ``mirrored`` reflected, an atom at 0 (module
    doc). 'remove' compares (P, Q), 'add' (Q, P). Both halves are remove-direction pairs
    with the same total variation distance, so the atom has equal mass under P and Q."""

    directions = (REMOVE, ADD)

    def __init__(self, upper, mirrored):
        if getattr(upper, "dropped", 0.0) or getattr(mirrored, "dropped", 0.0):
            # pb's lower bounds leave a pruned pair's allowance by its own directions
            # (pb/direction_pass.lower_allowance), which a splice would hide
            raise DpcalcError("a spliced pair needs unpruned halves (prune = 0)")
        self.upper, self.mirrored = upper, mirrored
        self.noise_multiplier = upper.noise_multiplier
        self._checked = mirrored is upper  # the halves' TV, checked on first use

    def _check_halves(self) -> None:
        (tv_upper, scale_upper), (tv_mirrored, scale_mirrored) = (
            _total_variation(self.upper), _total_variation(self.mirrored))
        if not abs(tv_upper - tv_mirrored) <= 1e-12 * (scale_upper + scale_mirrored):
            raise DpcalcError(f"a spliced pair needs halves of equal total variation; got "
                              f"{tv_upper!r} and {tv_mirrored!r} (report this)")
        self._checked = True

    def _halves(self, direction: str) -> tuple:
        """(the pair whose loss above 0 is this direction's, the one mirrored below 0)."""
        if direction == REMOVE:
            return self.upper, self.mirrored
        if direction == ADD:
            return self.mirrored, self.upper
        raise DpcalcError(f"direction must be one of {(REMOVE, ADD)}")

    def log_tails(self, direction: str, grid) -> tuple:
        """log P(L > e), log P(L ≤ e), log Q(L > e), log Q(L ≤ e) for each e in ``grid``."""
        top, bottom = self._halves(direction)
        if not self._checked:
            self._check_halves()
        grid = np.atleast_1d(np.asarray(grid, dtype=float))
        negative = grid < 0
        # e < 0, t = −e: P(L > e) = Q_m(L_m ≤ t), P(L ≤ e) = Q_m(L_m > t); Q's with P_m, Q_m
        # swapped (the mirrored half has no atom at t > 0, so ≥ t and > t agree).
        if top is bottom:  # one evaluation serves both halves
            p_above, p_below, q_above, q_below = top.log_tails(REMOVE, np.abs(grid))
            return (np.where(negative, q_below, p_above), np.where(negative, q_above, p_below),
                    np.where(negative, p_below, q_above), np.where(negative, p_above, q_below))
        tails = [np.empty(grid.size) for _ in range(4)]
        above = top.log_tails(REMOVE, grid[~negative])
        below = bottom.log_tails(REMOVE, -grid[negative])
        for out, own, mirrored in zip(tails, above, (below[3], below[2], below[1], below[0])):
            out[~negative] = own
            out[negative] = mirrored
        return tuple(tails)

    def log_bucket_masses(self, direction: str, edges) -> tuple:
        """Bucket masses from the halves' own (log_masses.bucket_masses): buckets above 0
        are the upper half's, buckets below 0 the mirrored half's reflected (P and Q
        swapped); a bucket holding 0 (the atom) comes from the tails, where the atom keeps
        its mass large against the tails' rounding."""
        from dpcalc.numerics.log_masses import bucket_masses, masses_from_tails

        top, bottom = self._halves(direction)
        edges = np.asarray(edges, dtype=float)
        log_p, log_q, below, above = masses_from_tails(
            *SplicedPair.log_tails(self, direction, edges))
        upper = edges[:-1] >= 0  # buckets (e_k, e_{k+1}] with e_k ≥ 0
        if np.count_nonzero(upper):
            first = int(np.flatnonzero(upper)[0])
            own_p, own_q, _, _ = bucket_masses(top, REMOVE, edges[first:])
            log_p[first:], log_q[first:] = own_p, own_q
        # buckets with e_{k+1} < 0 (a bucket ending at 0 holds the atom): the mirrored half's
        lower = edges[1:] < 0
        if np.count_nonzero(lower):
            last = int(np.flatnonzero(lower)[-1]) + 2  # edges[:last] end below 0
            mirrored_p, mirrored_q, _, _ = bucket_masses(bottom, REMOVE, -edges[:last][::-1])
            log_p[:last - 1], log_q[:last - 1] = mirrored_q[::-1], mirrored_p[::-1]
        return log_p, log_q, below, above

    def loss_range(self, direction: str, half_width: float) -> tuple[float, float]:
        top, bottom = self._halves(direction)
        return -bottom.loss_range(REMOVE, half_width)[1], top.loss_range(REMOVE, half_width)[1]

    def loss_moments(self, direction: str) -> tuple[float, float]:
        """Mean and standard deviation of the loss under P, from its tails on a grid (used
        to pick a grid)."""
        low, high = self.loss_range(direction, 12.0)
        edges = np.linspace(low - 1.0, high + 1.0, 4001)
        above = np.exp(self.log_tails(direction, edges)[0])
        mass = np.maximum(np.concatenate(([1.0 - above[0]], -np.diff(above), [above[-1]])), 0.0)
        values = np.concatenate(([edges[0]], 0.5 * (edges[1:] + edges[:-1]), [edges[-1]]))
        mass = mass / max(mass.sum(), 1e-300)
        mean = float(np.sum(mass * values))
        return mean, math.sqrt(max(float(np.sum(mass * (values - mean) ** 2)), 0.0))


class SymmetrisedPair(SplicedPair):
    """The symmetrisation of a remove-direction pair R = (P_R, Q_R) (module doc): R spliced
    with itself, one neighbouring instance ('replace') since it is symmetric."""

    directions = (REPLACE,)

    def __init__(self, base: GaussianMixturePair):
        super().__init__(base, base)
        self.base = base

    def log_tails(self, direction: str, grid) -> tuple:
        if direction != REPLACE:
            raise DpcalcError(f"direction must be {REPLACE!r}")
        return super().log_tails(REMOVE, grid)

    def loss_range(self, direction: str, half_width: float) -> tuple[float, float]:
        return super().loss_range(REMOVE, half_width)

    def log_bucket_masses(self, direction: str, edges) -> tuple:
        if direction != REPLACE:
            raise DpcalcError(f"direction must be {REPLACE!r}")
        return super().log_bucket_masses(REMOVE, edges)

    def loss_moments(self, direction: str) -> tuple[float, float]:
        """Mean and standard deviation of the symmetrised loss under P (trapezoid rule)."""
        sigma = self.noise_multiplier
        x = np.linspace(-12.0 * sigma, self.base.max_shift + 12.0 * sigma, 1601)
        log_q = -0.5 * (x / sigma) ** 2
        loss = self.base.loss(x)
        positive = loss > 0
        p_density = np.exp(log_q + loss) * positive   # P_R on L_R > 0: loss +L_R
        q_density = np.exp(log_q) * positive          # Q_R on L_R > 0: loss −L_R (mirror)
        total = np.exp(log_q).sum()
        atom = max(0.0, 1.0 - (p_density.sum() + q_density.sum()) / total)
        mean = float((np.sum(p_density * loss) - np.sum(q_density * loss)) / total)
        second = float((np.sum(p_density * loss**2) + np.sum(q_density * loss**2)) / total)
        variance = max(second - mean**2, 0.0) if atom < 1.0 else 0.0
        return mean, math.sqrt(variance)
