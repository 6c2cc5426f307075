"""The displaced run of truncated Poisson sampling: a second explicit instance for pb's
certified lower bound, for runs whose batches are cut at most steps (M at or below B).

The instance of lower_instances.py (other gradients 0) sees a cut batch only as a lower
chance q_in that the record is in it. Where cuts are the rule, a stronger adversary gives
every other record the gradient −C and the record x +C: when x is kept in a cut batch it
displaces a record at −C, and the sum moves by 2C. In units of C, with K ~ Binomial(n, q)
the number of the n = N − 1 others drawn, t = P(K ≥ M) and q′ = q·E[M/(K + 1) | K ≥ M]
(truncated.truncation: the rate at which x is drawn and kept in a cut batch), one step's
sum is
    x not drawn (or absent):  −min(K, M)
    x drawn, K < M:           −K + g
    x drawn, K ≥ M:           −(M − 1) + g with probability M/(K + 1) (kept), else −M,
g = +1 for x, −1 for a replacing x′ at −C (replace-one), 0 for the null record (zero-out).
So each dataset's output is a Gaussian mixture N(μ, σ²) over integer μ:
    K < M:  (1 − q)·b(K) at −K and q·b(K) at −K + g,     the cut lump:  t(1 − q′) at −M
    and t·q′ at −M + 1 + g;
under add/remove the dataset without x has b(K) at −K (K < M) and t at −M.

pb composes the pair of cell masses of the two mixtures over a partition of the output
line (a post-processing of the true step, so its certified lower bound is one for the
run; max_pair.DiscretePair). Each component's mass in a cell is its standardised
interval's normal mass (gauss_intervals.log_interval_mass, ≤ ~1e-14 relative, as
max_pair's cells); components are taken within ±45σ of each cell (the mass left out is
below Φ̄(45) ≈ 1e-442 per component and cell) and none is dropped for a small weight
(binomial log-weights do not underflow).
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.numerics.gauss_intervals import log_interval_mass
from dpcalc.models.max_pair import DiscretePair
from dpcalc.models.samplers import ADD_REMOVE, REPLACE_ONE, ZERO_OUT
from dpcalc.numerics.special_functions import log_ndtr
from dpcalc.models.truncated import truncation

# Computed only where at least this share of steps is cut: elsewhere the run with other
# gradients 0 is the stronger instance (measured: M = B + 2·sd gives 0.29 against 2.38).
CUT_SHARE = 0.5
_CELLS_PER_SIGMA = 100
_MAX_CELLS = 1 << 15
_MAX_WORK = 20_000_000  # component × cell log-additions
_REACH = 45.0  # a component's cells lie within ±_REACH·σ of its mean

_RECORD_SHIFT = {ADD_REMOVE: 1, REPLACE_ONE: -1, ZERO_OUT: 0}
# The relative error allowed scipy's binomial pmf and tails in the cells' weights: 4× the
# largest measured against 40–50-digit mpmath (an independent review: 1.3e-12 at n = 6e4,
# q = 0.3, mean + 30 sd; 7.8e-13 below the cap at q = 0.05; tests/test_truncated_poisson.py).
# A measured margin, not a proof, as fft_error's FFT one. Weights below 1e-290 come from
# logpmf (~1e-10 off): cells that small get _TINY_CELL_ERROR.
_BINOMIAL_ERROR = 5.2e-12
_TINY_CELL_LOG = -600.0
_TINY_CELL_ERROR = 1e-9


def _mixtures(others: int, rate: float, cap: int, adjacency: str):
    """((positions, log weights) with x, the same for its neighbour) of one step."""
    from scipy.stats import binom

    cut = truncation(others, rate, cap)
    counts = np.arange(min(cap, others + 1))
    # ln b(K): scipy's pmf keeps ~1e-14 relative where its logpmf loses ~1e-10 at n ~ 6e4
    # (gammaln differences; an independent review measured it, mpmath); logpmf only where
    # the pmf underflows (weights below 1e-290, far below any δ)
    with np.errstate(divide="ignore"):
        log_binomial = np.log(binom.pmf(counts, others, rate))
    tiny = ~(log_binomial > math.log(1e-290))
    log_binomial[tiny] = binom.logpmf(counts[tiny], others, rate)
    log_kept = (math.log(cap) + float(binom.logsf(cap, others + 1, rate)) - math.log(others + 1)
                if cut.weight > 0.0 else -math.inf)
    log_lump = float(binom.logsf(cap - 1, others, rate)) if cut.weight > 0.0 else -math.inf
    not_kept_share = -math.expm1(log_kept - log_lump) if cut.weight > 0.0 else 0.0
    log_not_kept = math.log(not_kept_share) + log_lump if not_kept_share > 0.0 else -math.inf

    def with_record(shift: int):
        positions = np.concatenate([-counts, -counts + shift, [-cap, -cap + 1 + shift]])
        with np.errstate(divide="ignore"):
            weights = np.concatenate([np.log1p(-rate) + log_binomial,  # −∞ at q = 1
                                      math.log(rate) + log_binomial, [log_not_kept, log_kept]])
        return positions.astype(float), weights

    if adjacency == ADD_REMOVE:
        without = (np.append(-counts, -cap).astype(float), np.append(log_binomial, log_lump))
        return with_record(1), without
    return with_record(1), with_record(_RECORD_SHIFT[adjacency])


def _merge(positions: np.ndarray, log_weights: np.ndarray):
    """Equal positions merged (log-sum of their weights); −∞ weights dropped."""
    keep = np.isfinite(log_weights)
    positions, log_weights = positions[keep], log_weights[keep]
    unique, index = np.unique(positions, return_inverse=True)
    merged = np.full(unique.size, -np.inf)
    np.logaddexp.at(merged, index, log_weights)
    return unique, merged


def _log_cells(positions, log_weights, first_edge: float, per_unit: int, count: int,
               sigma: float) -> np.ndarray:
    """log masses of (−∞, e_0], (e_0, e_1], …, (e_last, ∞) of Σ_j w_j N(μ_j, σ²), with the
    edges e_i = first_edge + i/per_unit (first_edge·per_unit an integer) and integer μ_j:
    every component's interior masses are one kernel shifted by (μ_j − e_0)·per_unit cells."""
    reach = int(math.ceil(_REACH * sigma * per_unit))
    relative = np.arange(-reach, reach)  # cell (μ + r/k, μ + (r + 1)/k]
    kernel = log_interval_mass(relative / (per_unit * sigma),
                               np.full(relative.size, 1.0 / (per_unit * sigma)))
    last_edge = first_edge + (count - 1) / per_unit
    out = np.full(count + 1, -np.inf)
    for mean, log_weight in zip(positions.tolist(), log_weights.tolist()):
        centre = int(round((mean - first_edge) * per_unit))
        low, high = max(0, centre - reach), min(count - 1, centre + reach)
        if low < high:  # interior cells (e_i, e_{i+1}], i in [low, high)
            masses = log_weight + kernel[low - centre + reach:high - centre + reach]
            out[low + 1:high + 1] = np.logaddexp(out[low + 1:high + 1], masses)
        if low == 0:
            out[0] = np.logaddexp(out[0], log_weight + float(log_ndtr((first_edge - mean) / sigma)))
        if high == count - 1:
            out[-1] = np.logaddexp(out[-1], log_weight + float(log_ndtr((mean - last_edge) / sigma)))
    return out


def displaced_pair(dataset_size: int, rate: float, cap: int, noise_multiplier: float,
                   adjacency: str) -> DiscretePair | None:
    """The cell pair (with x, its neighbour) of one step of the displaced run, or None where
    fewer than CUT_SHARE of the steps are cut (module doc)."""
    others, sigma = int(dataset_size) - 1, float(noise_multiplier)
    if cap > others or truncation(others, rate, cap).weight < CUT_SHARE:
        return None
    first, second = (_merge(*mixture) for mixture in _mixtures(others, rate, cap, adjacency))
    low = min(first[0].min(), second[0].min()) - 12.0 * sigma
    high = max(first[0].max(), second[0].max()) + 12.0 * sigma
    components = first[0].size + second[0].size
    # cells per unit of C: ~_CELLS_PER_SIGMA per σ, within the cell and work limits
    per_unit = min(math.ceil(_CELLS_PER_SIGMA / sigma), _MAX_CELLS / (high - low),
                   _MAX_WORK / (2.0 * _REACH * sigma * components))
    per_unit = max(1, int(per_unit))
    first_edge = math.floor(low * per_unit) / per_unit
    count = int(math.ceil((high - first_edge) * per_unit)) + 1
    cells = [_log_cells(*mixture, first_edge, per_unit, count, sigma) for mixture in (first, second)]
    # each cell: log-sums of components (≤ 4u per addition) of binomial weights within
    # _BINOMIAL_ERROR, beyond the kernel's own ulps (max_pair.DiscretePair's model)
    error = np.where((cells[0] < _TINY_CELL_LOG) | (cells[1] < _TINY_CELL_LOG), _TINY_CELL_ERROR,
                     _BINOMIAL_ERROR) + 4.0 * 2.0**-53 * components
    return DiscretePair(*cells, error)
