"""Brute force for the order samplers (sequential, shuffle with Prop. 1, once-per-epoch under
a non-uniform and a correlated order law): tiny N, every order of every epoch enumerated,
1-D adversarial gradients, the whole run's release as a Gaussian mixture on R^T.

Oracles (tests/brute_force.py), each a rigorous LOWER bound on the instance's hockey-stick
divergence, hence on the run's δ(ε): exact cell masses of a product grid over all T
outputs, and the joint law of each epoch's largest (recentred) output. Sequential's release
is one Gaussian per dataset, so its δ is computed exactly by integrating the privacy loss
numerically (scipy quad). Checked: every certified upper δ(ε) ≥ the brute-force value of
every instance and record; every certified lower δ(ε) ≤ the brute-force value of the
explicit instance (others at −1, the record at +1 against the null record at 0), for the
record the adversary picks."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.stats import norm

import brute_force as bf
from dpcalc.accountants.epoch_samplers import epoch_delta_bounds
from dpcalc.models.schedule import Phase

pytestmark = pytest.mark.deep  # oracle sweeps: `python -m pytest -m deep` (CI runs them)

EPSILONS = np.array([0.0, 0.5, 1.0, 2.0])
SIGMA = 1.0


def _instances(size: int, record: int):
    """(name, D's gradients, D′'s) of zero-out neighbours at ``record``: the explicit instance
    (others −1, the record +1 vs 0), others at 0, and others drawn in [−1, 1]."""
    rng = np.random.default_rng(7 + record)
    for name, others in (("explicit", [-1.0] * size), ("zeros", [0.0] * size),
                         ("random", list(np.round(rng.uniform(-1, 1, size), 3)))):
        first = list(others)
        first[record] = 1.0
        second = list(others)
        second[record] = 0.0
        yield name, first, second


def _brute(size, batch, steps, run_law, drop_last=False):
    """{record: {instance: δ lower bounds at EPSILONS, both orders}}; the product grid has
    at most ~1e5 cells (T = 3: 46 per axis, T = 4: 17)."""
    cells = int(1e5 ** (1 / steps))
    found = {}
    for record in range(size):
        found[record] = {}
        for name, first, second in _instances(size, record):
            p = bf.run_release(first, run_law, batch, steps, drop_last)
            q = bf.run_release(second, run_law, batch, steps, drop_last)
            value = np.maximum(bf.release_delta_lower(p, q, SIGMA, EPSILONS, cells),
                               bf.release_delta_lower(q, p, SIGMA, EPSILONS, cells))
            if name == "explicit":
                value = np.maximum(value, np.maximum(
                    bf.max_statistic_delta_lower(p, q, SIGMA, size, batch, EPSILONS,
                                                 drop_last=drop_last),
                    bf.max_statistic_delta_lower(q, p, SIGMA, size, batch, EPSILONS,
                                                 drop_last=drop_last)))
            found[record][name] = value
    return found


def _certified(size, batch, steps, sampling, drop_last=False):
    phase = Phase.from_batches(batch, size, SIGMA, steps, sampling, "zero-out", drop_last)
    bounds = [epoch_delta_bounds(phase, float(epsilon)) for epsilon in EPSILONS]
    return np.array([b.upper for b in bounds]), np.array([b.lower for b in bounds])


def _check(found, upper, lower):
    worst = np.max([value for by_name in found.values() for value in by_name.values()], axis=0)
    assert np.all(upper >= worst), (upper, worst)
    explicit = np.max([by_name["explicit"] for by_name in found.values()], axis=0)
    assert np.all(lower <= explicit), (lower, explicit)
    return worst, explicit


# ---------------------------------------------------------------------- sequential
def _exact_gaussian_delta(shift_norm: float, epsilon: float) -> float:
    """H_{e^ε}(N(a, σ²I) ‖ N(b, σ²I)), ‖a − b‖ = shift_norm, by integrating the privacy loss
    L ~ N(η, 2η), η = ‖a − b‖²/(2σ²), under P: E_P[(1 − e^{ε − L})₊] (numerical quad)."""
    eta = shift_norm**2 / (2 * SIGMA**2)
    if eta == 0:
        return 0.0
    scale = math.sqrt(2 * eta)
    value, _ = quad(lambda loss: -math.expm1(epsilon - loss) * norm.pdf(loss, eta, scale),
                    epsilon, eta + 40 * scale, epsabs=1e-14, epsrel=1e-12, limit=200)
    return value


@pytest.mark.parametrize("size, batch, steps", [(4, 2, 3), (5, 2, 7), (3, 1, 4)])
def test_sequential_is_the_worst_position_exactly(size, batch, steps):
    """The one known order every epoch: each record's release differs in its own steps only.
    The exact δ of every record and instance is at most the certified upper δ, and the worst
    (the first batch's record, others at 0 or −1) equals the certified lower δ."""
    order = [(tuple(range(size)), 1.0)]
    per_epoch = len(bf.batch_sizes(size, batch))
    law = list(bf.independent_epochs(order, -(-steps // per_epoch)))
    upper, lower = _certified(size, batch, steps, "sequential")
    worst = np.zeros(EPSILONS.size)
    for record in range(size):
        for _, first, second in _instances(size, record):
            (p_means, _), (q_means, _) = (bf.run_release(first, law, batch, steps),
                                          bf.run_release(second, law, batch, steps))
            shift = float(np.linalg.norm(p_means[0] - q_means[0]))
            exact = np.array([_exact_gaussian_delta(shift, e) for e in EPSILONS])
            worst = np.maximum(worst, exact)
    assert np.all(upper >= worst * (1 - 1e-9)), (upper, worst)
    assert np.all(lower <= worst * (1 + 1e-9)), (lower, worst)
    assert np.allclose(upper, worst, rtol=1e-7) and np.allclose(lower, worst, rtol=1e-7)


# ---------------------------------------------------------------------- shuffle
@pytest.mark.parametrize("size, batch, steps", [
    (4, 2, 3),   # b = 2, E = 2, last epoch r = 1: Prop. 1 with w = 1/2
    (5, 2, 3),   # b = 3 with a partial last batch, one whole epoch
    (3, 1, 4),   # b = 3, E = 2, r = 1: w = 1/3
])
def test_shuffle_bounds_hold_on_every_permutation(size, batch, steps):
    per_epoch = len(bf.batch_sizes(size, batch))
    law = list(bf.independent_epochs(bf.uniform_orders(size), -(-steps // per_epoch)))
    upper, lower = _certified(size, batch, steps, "shuffle")
    _check(_brute(size, batch, steps, law), upper, lower)


def test_shuffle_drop_last_bounds_hold():
    """N = 5, B = 2, drop_last: 2 batches of the first 4 slots, the 5th record unused that
    epoch; T = 3: K ~ Binomial(1, 4/5) + Bernoulli(2/5)."""
    law = list(bf.independent_epochs(bf.uniform_orders(5), 2))
    upper, lower = _certified(5, 2, 3, "shuffle", drop_last=True)
    _check(_brute(5, 2, 3, law, drop_last=True), upper, lower)


# ---------------------------------------------------------------------- once-per-epoch
def test_once_per_epoch_bounds_hold_for_a_buffered_shuffle():
    """tf.data's shuffle with a buffer of 2 over N = 4 records (not a uniform permutation:
    records 0 and 1 are likelier early), B = 2, T = 3 (the second epoch cut after one step):
    the lower bound's weight rB/N = 1/2 is met by the record the adversary picks."""
    orders = bf.buffered_shuffle_orders(4, 2)
    assert len(orders) < 24 and max(p for _, p in orders) > 1 / 24  # genuinely non-uniform
    law = list(bf.independent_epochs(orders, 2))
    upper, lower = _certified(4, 2, 3, "once-per-epoch")
    found = _brute(4, 2, 3, law)
    _check(found, upper, lower)
    # the last epoch's first step favours records 0 and 1: they are the worst records
    explicit = {record: by_name["explicit"][2] for record, by_name in found.items()}
    assert max(explicit, key=explicit.get) in (0, 1)


def test_once_per_epoch_bounds_hold_for_a_partial_batch_and_correlated_epochs():
    """N = 5, B = 2 (a partial last batch), a buffer of 3, and the second epoch's order the
    first one's reversed (epochs not independent): the max statistic's law does not depend
    on where the record sits, so the lower bound still holds."""
    orders = bf.buffered_shuffle_orders(5, 3)
    law = [((order, tuple(reversed(order))), probability) for order, probability in orders]
    upper, lower = _certified(5, 2, 4, "once-per-epoch")
    _check(_brute(5, 2, 4, law), upper, lower)
