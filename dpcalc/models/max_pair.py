"""Lower-bound pairs for epoch samplers: the law of the largest of an epoch's outputs.

An explicit instance (1-D gradients, the differing record at +C, the others fixed) makes
one epoch of r observed steps release Y = m·e_t + Z, Z ~ N(0, σ²I_r), with t the record's
step (w: the chance it is among the r observed) and m its shift under each dataset (m = 0
when it is not observed). The adversary keeps only M = max_t Y_t (Chua et al. 2024, "How
Private are DP-SGD Implementations?", ICML, §4: the max-of-coordinates test), whose CDF is
    F_m(c) = w·Φ((c − m)/σ)·Φ(c/σ)^{r−1} + (1 − w)·Φ(c/σ)^r
whatever the law of t over the r steps. M is a post-processing of the epoch's release, and
the cells of a partition of the c axis are a post-processing of M, so the pair of cell
masses (P, Q) has a smaller hockey-stick divergence than the true epoch: every certified
LOWER bound computed from it (pb's, buckets.epsilon_bounds) is a certified lower bound of
the run. Epochs with independent randomness compose as a product, which post-processes
the product of the true epochs alike.

:class:`DiscretePair` holds such a pair of finite distributions and offers the interface
buckets.py composes (``directions``, ``log_tails``, ``loss_range``, ``loss_moments``).
"""
from __future__ import annotations

import math

import numpy as np
from dpcalc.numerics.special_functions import log_ndtr, ndtri

from dpcalc.models.mixture import ADD, REMOVE
from dpcalc.errors import DpcalcError
from dpcalc.numerics.log_masses import log_diff

CELLS = 1 << 14
_U = 2.0**-53  # unit roundoff
# Cells whose mass (a difference of two close tails) may be this far off are merged with
# a neighbour (none at the measured settings: the largest error there was 1.6e-11).
_MERGE_ABOVE = 1e-6


class DiscretePair:
    """P and Q on the same finite set of cells: remove compares (P, Q), add (Q, P)."""

    directions = (REMOVE, ADD)

    def __init__(self, log_p: np.ndarray, log_q: np.ndarray, cell_log_error=None):
        """``cell_log_error``: a bound on the absolute error of each cell's ln P and ln Q
        beyond an ulp (None: the cells are within an ulp)."""
        with np.errstate(invalid="ignore"):
            loss = log_p - log_q  # +inf where only P has mass, −inf where only Q has
        keep = ~(np.isneginf(log_p) & np.isneginf(log_q))
        self._log_p, self._log_q, self._loss = log_p[keep], log_q[keep], loss[keep]
        self._cell_error = (np.zeros(self._loss.size) if cell_log_error is None
                            else np.asarray(cell_log_error, dtype=float)[keep])

    def _order(self, direction: str) -> np.ndarray:
        """The cells in increasing order of the loss in ``direction``."""
        if direction not in self.directions:
            raise DpcalcError(f"direction must be one of {self.directions}")
        return np.argsort(self._loss if direction == REMOVE else -self._loss, kind="stable")

    def _sorted(self, direction: str):
        order = self._order(direction)
        if direction == REMOVE:
            return self._log_p[order], self._log_q[order], self._loss[order]
        return self._log_q[order], self._log_p[order], -self._loss[order]

    @staticmethod
    def _log_cumulative(log_masses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """log of the masses from index i on (suffix) and before i (prefix), accumulated in
        log space: far-tail masses (e^{−1800} say) keep their relative accuracy."""
        empty = np.array([-np.inf])
        prefix = np.concatenate([empty, np.logaddexp.accumulate(log_masses)])
        suffix = np.concatenate([np.logaddexp.accumulate(log_masses[::-1])[::-1], empty])
        return suffix, prefix

    def log_tails(self, direction: str, grid) -> tuple:
        """log P(L > e), log P(L ≤ e), log Q(L > e), log Q(L ≤ e) for each e in ``grid``."""
        log_p, log_q, loss = self._sorted(direction)
        grid = np.atleast_1d(np.asarray(grid, dtype=float))
        split = np.searchsorted(loss, grid, side="right")  # cells with loss ≤ e: [0, split)
        p_suffix, p_prefix = self._log_cumulative(log_p)
        q_suffix, q_prefix = self._log_cumulative(log_q)
        return p_suffix[split], p_prefix[split], q_suffix[split], q_prefix[split]

    def log_bucket_masses(self, direction: str, edges) -> tuple:
        """log P_k, log Q_k of the loss buckets (edges[k], edges[k+1]] as log-sums of their
        own cells (no differences of tails), and the end tails."""
        log_p, log_q, loss = self._sorted(direction)
        edges = np.asarray(edges, dtype=float)
        split = np.searchsorted(loss, edges, side="right")  # cells with loss ≤ e: [0, split)
        starts, ends = split[:-1], split[1:]
        held = np.flatnonzero(ends > starts)  # buckets holding cells: adjacent in the order
        out = [np.full(starts.size, -np.inf), np.full(starts.size, -np.inf)]
        if held.size:
            bounds = np.append(starts[held], ends[held[-1]])
            for target, masses in zip(out, (log_p, log_q)):
                padded = np.append(masses, -np.inf)  # reduceat needs an index past the end
                target[held] = np.logaddexp.reduceat(padded, bounds)[:-1]
        tails = self.log_tails(direction, edges[[0, -1]])
        return out[0], out[1], float(tails[1][0]), float(tails[0][1])

    def bucket_log_error(self, direction: str, edges) -> np.ndarray:
        """A bound on the error of log_bucket_masses' ln P_k and ln Q_k beyond an ulp: each
        is a running logaddexp over the bucket's n cells, ≤ 4u per step (n − 1 steps), of
        cells each within its own cell_log_error (a sum of positives keeps the largest)."""
        _, _, loss = self._sorted(direction)
        split = np.searchsorted(loss, np.asarray(edges, dtype=float), side="right")
        cells = np.maximum(split[1:] - split[:-1], 1)
        summed = 4.0 * _U * (cells - 1)
        if not np.any(self._cell_error):
            return summed
        errors = np.append(self._cell_error[self._order(direction)], 0.0)  # pad: ends ≤ size
        starts, ends = split[:-1], split[1:]
        held = np.flatnonzero(ends > starts)
        own = np.zeros(starts.size)
        if held.size:  # max over each held bucket's cells [start, end)
            pairs = np.stack([starts[held], ends[held]], axis=1).ravel()
            own[held] = np.maximum.reduceat(errors, pairs)[::2]
        return summed + own

    def loss_range(self, direction: str, half_width: float = 0.0) -> tuple[float, float]:
        """The smallest and largest finite losses (±∞ cells fall outside, as tails)."""
        loss = self._loss if direction == REMOVE else -self._loss
        finite = loss[np.isfinite(loss)]
        return float(finite.min()), float(finite.max())

    def loss_moments(self, direction: str) -> tuple[float, float]:
        log_p, _, loss = self._sorted(direction)
        finite = np.isfinite(loss)
        weights = np.exp(log_p[finite])
        weights = weights / weights.sum()
        mean = float(np.sum(weights * loss[finite]))
        return mean, math.sqrt(max(float(np.sum(weights * (loss[finite] - mean) ** 2)), 1e-24))


# Below this log, −ln(1 − x) and 1 − e^{−x} are x to within x/2 < 1e-304 relative; above
# it, log1p and expm1 keep their relative accuracy (at −30, the approximation's x/2 was
# 4.7e-14, 200 ulps, in every cell difference beyond it).
_APPROXIMATE_BELOW = -700.0


def _log_neg_log_cdf(z: np.ndarray) -> np.ndarray:
    """ln(−ln Φ(z)), accurate where Φ(z) rounds to 1: −ln Φ = −log1p(−Φ̄)."""
    log_sf = log_ndtr(-z)
    with np.errstate(divide="ignore", invalid="ignore"):
        exact = np.log(-np.log1p(-np.exp(log_sf)))
    return np.where(log_sf < _APPROXIMATE_BELOW, log_sf, exact)


def _log_one_minus_exp_neg(log_u: np.ndarray) -> np.ndarray:
    """ln(1 − e^{−u}) from ln u (expm1: relative accuracy however small u is)."""
    with np.errstate(divide="ignore", over="ignore"):
        exact = np.log(-np.expm1(-np.exp(log_u)))
    return np.where(log_u < _APPROXIMATE_BELOW, log_u, exact)


def _log_max_tails(c: np.ndarray, shift: float, observed: int, weight: float, sigma: float):
    """(ln F_m(c), ln(1 − F_m(c))) of the module doc, each accurate in its small tail: the
    upper tail from the normal upper tails (never as 1 − F, which underflows to 0)."""
    rest_log, rest_neg = log_ndtr(c / sigma), _log_neg_log_cdf(c / sigma)
    own_log, own_neg = log_ndtr((c - shift) / sigma), _log_neg_log_cdf((c - shift) / sigma)
    log_cdf = own_log + (observed - 1) * rest_log  # ln A, A = Φ((c − m)/σ)Φ(c/σ)^{r−1}
    log_u = own_neg if observed == 1 else np.logaddexp(own_neg, math.log(observed - 1) + rest_neg)
    log_survival = _log_one_minus_exp_neg(log_u)  # ln(1 − A) = ln(1 − e^{−u}), u = −ln A
    if weight >= 1.0:
        return log_cdf, log_survival
    # the record outside the observed steps: B = Φ(c/σ)^r
    log_b = observed * rest_log
    log_not_b = _log_one_minus_exp_neg(math.log(observed) + rest_neg)
    return (np.logaddexp(math.log(weight) + log_cdf, math.log1p(-weight) + log_b),
            np.logaddexp(math.log(weight) + log_survival, math.log1p(-weight) + log_not_b))


def _log_cell_masses(log_cdf: np.ndarray, log_survival: np.ndarray):
    """(log masses of (−∞, c_0], (c_0, c_1], …, (c_last, ∞), a bound on each one's error)
    from ln F and ln(1 − F) at the edges, each a difference of the smaller tail (F below ½,
    1 − F above). The difference e^a − e^b (b < a) of two logs within E(a), E(b) is within
    (E(a) + E(b))/(1 − e^{b−a}) relative: u·|ln F|·F/cell, up to ~5e4 u (an independent
    review, against 80-digit cells), far beyond an ulp."""
    log_cdf = np.concatenate([[-np.inf], np.minimum(log_cdf, 0.0), [0.0]])
    log_survival = np.concatenate([[0.0], np.minimum(log_survival, 0.0), [-np.inf]])
    use_cdf = log_cdf[1:] <= math.log(0.5)
    high = np.where(use_cdf, log_cdf[1:], log_survival[:-1])
    low = np.where(use_cdf, log_cdf[:-1], log_survival[1:])
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        spread = np.abs(np.expm1(np.minimum(low - high, 0.0)))  # (+0 where equal, not −0)
        relative = (_tail_log_error(high) + _tail_log_error(low)) / spread
        # a relative error r is a log error up to −ln(1 − r) ≤ r/(1 − r); ∞ from r ≥ 1
        error = np.where(relative < 1.0, relative / (1.0 - relative), np.inf) + 4.0 * _U
    return log_diff(high, low), np.where(np.isneginf(high), 0.0, error)  # 0 − 0: exact


def _tail_log_error(log_tail: np.ndarray) -> np.ndarray:
    """A bound on the error of _log_max_tails' logs: each a sum, or log-sum, of log_ndtr
    values (a few ulps of each) and their multiples, so 8u·(|ln F| + 2); 0 at ±∞ (exact)."""
    return np.where(np.isfinite(log_tail), 8.0 * _U * (np.abs(log_tail) + 2.0), 0.0)


def max_statistic_pair(noise_multiplier: float, observed: int, shift_p: float, shift_q: float,
                       weight: float = 1.0, cells: int = CELLS) -> DiscretePair:
    """The cell pair of M = max of ``observed`` outputs (module doc) under P (shift_p) and
    Q (shift_q). The cells span where either CDF moves; the two end cells hold the rest."""
    sigma = float(noise_multiplier)
    # F_m(c) ≤ Φ((c − b)/σ)^r with b = min(m, 0): below c_low both CDFs are under 1e-30;
    # above c_high both tails are under (r + 1)·Φ̄(12). The end cells keep that mass.
    bottom = min(shift_p, shift_q, 0.0)
    c_low = bottom + sigma * max(float(ndtri(math.exp(math.log(1e-30) / observed))), -12.0)
    c_high = max(shift_p, shift_q, 0.0) + sigma * (12.0 + math.sqrt(2.0 * math.log(observed + 1)))
    edges = np.linspace(c_low, c_high, cells)
    tails_p = _log_max_tails(edges, shift_p, observed, weight, sigma)
    tails_q = _log_max_tails(edges, shift_q, observed, weight, sigma)
    keep = np.ones(edges.size, dtype=bool)
    for _ in range(64):
        log_p, error_p = _log_cell_masses(*(tail[keep] for tail in tails_p))
        log_q, error_q = _log_cell_masses(*(tail[keep] for tail in tails_q))
        error = np.maximum(error_p, error_q)
        ill = np.flatnonzero(error >= _MERGE_ABOVE)
        if ill.size == 0:
            return DiscretePair(log_p, log_q, error)
        # merge each ill-conditioned cell with a neighbour: a coarser partition is still a
        # post-processing of M (module doc), and its cell a wider difference of tails
        kept = np.flatnonzero(keep)
        keep[kept[np.minimum(ill, kept.size - 1)]] = False
    raise RuntimeError("max-statistic cells stay ill-conditioned (report this)")
