"""The order samplers' certificates (dpcalc/models/epoch_orders.py) against independent
closed forms: sequential is exactly the E-fold Gaussian, shuffle's partial last epoch is
Prop. 1's two-term mixture, drop_last's epoch count is binomial. Every reference here is
computed from scipy's normal distribution and brentq, not from dpcalc's Gaussian code."""
from __future__ import annotations

import math

import pytest
from scipy.optimize import brentq
from scipy.stats import binom, norm

from dpcalc.accountants.epoch_samplers import epoch_bounds, epoch_delta_bounds, epoch_delta_upper
from dpcalc.accountants.registry import get_accountant
from dpcalc.errors import DpcalcError
from dpcalc.models import epoch_orders
from dpcalc.models.schedule import Phase, Schedule

PB = get_accountant("pb")


def gdp_delta(epsilon: float, mu: float) -> float:
    """δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle & Wang 2018, Thm 8)."""
    return float(norm.cdf(-epsilon / mu + mu / 2)
                 - math.exp(epsilon + norm.logcdf(-epsilon / mu - mu / 2)))


def epsilon_of(delta_at, delta: float) -> float:
    """The ε where the non-increasing ``delta_at`` crosses ``delta`` (brentq, 1e-13)."""
    return brentq(lambda epsilon: delta_at(epsilon) - delta, 0.0, 2000.0, xtol=1e-13, rtol=1e-14)


# (N, B, σ, steps, adjacency, δ): whole and partial epochs, both relations, several δ
SEQUENTIAL_POINTS = [
    (60_000, 256, 1.1, 14_100, "zero-out", 1e-5),   # 60 epochs of 235
    (60_000, 256, 1.1, 14_063, "zero-out", 1e-5),   # 59 epochs and 198 steps: still E = 60
    (1_000, 100, 2.0, 35, "replace-one", 1e-6),     # 4 epochs, Δ = 2
    (50_000, 512, 0.8, 98, "zero-out", 1e-3),       # one epoch exactly (b = 98)
    (10, 3, 5.0, 9, "replace-one", 1e-8),           # b = 4 with a partial batch, E = 3
]


@pytest.mark.parametrize("dataset, batch, sigma, steps, adjacency, delta", SEQUENTIAL_POINTS)
def test_sequential_upper_and_lower_are_the_closed_form_gaussian(dataset, batch, sigma, steps,
                                                                 adjacency, delta):
    phase = Phase.from_batches(batch, dataset, sigma, steps, "sequential", adjacency)
    per_epoch = -(-dataset // batch)
    epochs = -(-steps // per_epoch)
    mu = (2.0 if adjacency == "replace-one" else 1.0) * math.sqrt(epochs) / sigma
    truth = epsilon_of(lambda epsilon: gdp_delta(epsilon, mu), delta)
    result = PB.epsilon(Schedule((phase,)), delta)
    assert result.certified and result.details["upper_source"] == "gaussian-exact"
    assert truth * (1 - 1e-10) <= result.epsilon <= truth * (1 + 1e-8)
    assert truth * (1 - 1e-8) <= result.epsilon_lower <= truth * (1 + 1e-10)
    # and δ at a fixed ε, both sides
    bounds = epoch_delta_bounds(phase, truth)
    assert bounds.lower <= delta * (1 + 1e-9) <= bounds.upper * (1 + 2e-9)
    assert bounds.upper <= delta * (1 + 1e-6) and bounds.lower >= delta * (1 - 1e-6)


def test_sequential_is_not_applicable_under_add_remove():
    phase = Phase.from_batches(256, 60_000, 1.1, 14_100, "sequential")
    result = PB.epsilon(Schedule((phase,)), 1e-5)
    assert result.epsilon is None and result.notes[0].startswith("not applicable")
    nearest = result.details["nearest_model"]
    zero_out = PB.epsilon(Schedule((Phase.from_batches(256, 60_000, 1.1, 14_100, "sequential",
                                                        "zero-out"),)), 1e-5)
    assert nearest["adjacency"] == "zero-out"
    assert (nearest["epsilon_upper"], nearest["epsilon_lower"]) == (zero_out.epsilon,
                                                                    zero_out.epsilon_lower)


# (N, B, σ, steps, adjacency): the last epoch partial (Prop. 1) or whole (no gain)
PROP1_POINTS = [
    (60_000, 256, 1.1, 14_063, "zero-out"),   # r = 198 of 235: w = 0.8448
    (60_000, 256, 1.1, 3_516, "replace-one"),  # r = 226: w = 0.96427
    (1_000, 100, 1.0, 25, "zero-out"),         # r = 5 of 10: w = 1/2
    (1_000, 300, 1.5, 6, "zero-out"),          # b = 4 (last batch 100), r = 2: w = 0.6
]


@pytest.mark.parametrize("dataset, batch, sigma, steps, adjacency", PROP1_POINTS)
def test_shuffle_partial_epoch_is_prop1_mixture(dataset, batch, sigma, steps, adjacency):
    """ε at δ = 1e-5 solves w·δ_{μ_E}(ε) + (1 − w)·δ_{μ_{E−1}}(ε) = δ (notes/shuffle-bounds.md,
    Prop. 1), w = rB/N: certified (δ there ≤ target) and tight; below the E-fold bound."""
    phase = Phase.from_batches(batch, dataset, sigma, steps, "shuffle", adjacency)
    per_epoch = -(-dataset // batch)
    epochs = -(-steps // per_epoch)
    rest = steps - (epochs - 1) * per_epoch
    weight = rest * batch / dataset
    unit = (2.0 if adjacency == "replace-one" else 1.0) / sigma

    def mixture(epsilon):
        low = gdp_delta(epsilon, unit * math.sqrt(epochs - 1)) if epochs > 1 else 0.0
        return weight * gdp_delta(epsilon, unit * math.sqrt(epochs)) + (1 - weight) * low

    truth = epsilon_of(mixture, 1e-5)
    whole = epsilon_of(lambda epsilon: gdp_delta(epsilon, unit * math.sqrt(epochs)), 1e-5)
    bounds = epoch_bounds(phase, 1e-5)
    assert truth * (1 - 1e-10) <= bounds.upper <= truth * (1 + 1e-8)
    assert bounds.upper < whole and bounds.upper_source == "gaussian-epoch-mixture"
    assert mixture(bounds.upper) <= 1e-5 * (1 + 1e-9)
    # δ at ε: the mixture itself, from above
    assert mixture(truth) <= epoch_delta_upper(phase, truth) <= mixture(truth) * (1 + 1e-9)


def test_shuffle_once_has_the_same_epoch_law():
    shuffle = Phase.from_batches(100, 1_000, 1.0, 25, "shuffle", "zero-out")
    once = Phase.from_batches(100, 1_000, 1.0, 25, "shuffle-once", "zero-out")
    assert epoch_orders.epoch_count_law(once) == epoch_orders.epoch_count_law(shuffle) == (
        (2, 0.5), (3, 0.5))
    assert epoch_bounds(once, 1e-5).upper == epoch_bounds(shuffle, 1e-5).upper


def test_once_per_epoch_gets_no_mixture():
    """Its order law is unknown: the worst record may be in the last epoch's first r steps
    for sure, so the upper bound is the E-fold Gaussian."""
    phase = Phase.from_batches(100, 1_000, 1.0, 25, "once-per-epoch", "zero-out")
    assert epoch_orders.epoch_count_law(phase) == ((3, 1.0),)
    gaussian = epsilon_of(lambda epsilon: gdp_delta(epsilon, math.sqrt(3)), 1e-5)
    assert gaussian * (1 - 1e-10) <= epoch_bounds(phase, 1e-5).upper <= gaussian * (1 + 1e-8)


def test_drop_last_epoch_count_is_binomial():
    """drop_last: b = ⌊N/B⌋; each full epoch holds the record with probability bB/N,
    independently; the last r steps with probability rB/N."""
    phase = Phase.from_batches(3, 10, 1.0, 7, "shuffle", "zero-out", drop_last=True)
    assert epoch_orders.steps_per_epoch(phase) == 3
    assert epoch_orders.epochs_touched(phase) == (3, 1)
    law = dict(epoch_orders.epoch_count_law(phase))
    full, last = 0.9, 0.3
    for k in range(4):
        expected = ((binom.pmf(k, 2, full) * (1 - last) if k <= 2 else 0.0)
                    + (binom.pmf(k - 1, 2, full) * last if k >= 1 else 0.0))
        assert law.get(k, 0.0) == pytest.approx(expected, rel=1e-12, abs=1e-15)
    # the bound mixes over that law and sits below the 3-fold Gaussian
    def mixture(epsilon):
        return sum(w * (gdp_delta(epsilon, math.sqrt(k)) if k else 0.0) for k, w in law.items())
    truth = epsilon_of(mixture, 1e-5)
    upper = epoch_bounds(phase, 1e-5).upper
    assert truth * (1 - 1e-10) <= upper <= truth * (1 + 1e-8)


def test_drop_last_needs_batches_and_a_loader_sampler():
    with pytest.raises(DpcalcError, match="--drop-last is for --sampling shuffle or sequential"):
        Phase.from_batches(3, 10, 1.0, 7, "poisson", drop_last=True)
    with pytest.raises(DpcalcError, match="needs --batch-size"):
        Phase(0.1, 1.0, 7, "shuffle", "zero-out", drop_last=True)


def test_epochs_count_every_batch_of_a_loader():
    """`--epochs 60` of a loader with b = 235 batches is 14 100 steps (not ⌈60·N/B⌉ = 14 063:
    Prop. 1 would then credit a partial epoch the loader never ran)."""
    shuffle = Schedule.from_epochs(1.1, 60, batch_size=256, dataset_size=60_000,
                                   sampling="shuffle", adjacency="zero-out")
    dropped = Schedule.from_epochs(1.1, 60, batch_size=256, dataset_size=60_000,
                                   sampling="shuffle", adjacency="zero-out", drop_last=True)
    poisson = Schedule.from_epochs(1.1, 60, batch_size=256, dataset_size=60_000)
    assert (shuffle.total_steps, dropped.total_steps, poisson.total_steps) == (14_100, 14_040,
                                                                                14_063)


def test_gdp_epsilon_lower_is_below_and_close():
    for mu in (0.1, 1.0, 7.04, 30.0):
        for delta in (1e-12, 1e-5, 0.3):
            lower = epoch_orders.gdp_epsilon_lower(delta, mu)
            truth = epsilon_of(lambda epsilon: gdp_delta(epsilon, mu), delta) if gdp_delta(
                0.0, mu) > delta else 0.0
            assert lower <= truth * (1 + 1e-10) + 1e-12
            assert lower >= truth * (1 - 1e-8) - 1e-12


def test_berry_esseen_note_states_the_regime_and_the_floor():
    phase = Phase.from_batches(256, 60_000, 1.1, 14_100, "shuffle", "zero-out")
    note = epoch_orders.berry_esseen_note(phase)
    threshold = math.sqrt(3 / math.log(235))
    assert f"{threshold:.4g}" in note and "is met" in note
    assert f"{60 * 0.40973 / math.sqrt(235):.3g}" in note  # E·C₀/√b = 1.60
    low = Phase.from_batches(256, 60_000, 0.7, 14_100, "shuffle", "zero-out")
    assert "is not met" in epoch_orders.berry_esseen_note(low)


def test_risk_reads_the_same_mixture():
    """`risk` on a shuffled run that ends inside an epoch: its advantage (= δ(0)) is Prop. 1's
    mixture at ε = 0, from above and tight; TPR at FPR stays within the E-fold Gaussian's."""
    from dpcalc.risk.bounds import risk_bounds

    phase = Phase.from_batches(100, 1_000, 1.0, 25, "shuffle", "zero-out")  # E = 3, w = 1/2
    bounds = risk_bounds(Schedule((phase,)), [1e-3])
    mixture = 0.5 * gdp_delta(0.0, math.sqrt(3)) + 0.5 * gdp_delta(0.0, math.sqrt(2))
    assert mixture <= bounds.advantage.upper <= mixture * (1 + 1e-9)
    gaussian_tpr = float(norm.cdf(norm.ppf(1e-3) + math.sqrt(3)))
    assert bounds.tpr[0].upper <= gaussian_tpr * (1 + 1e-9)


@pytest.mark.parametrize("n,b,steps,sigma", [(30, 4, 7 * 30, 2.0), (1003, 10, 100 * 5000 + 7, 120.0)])
def test_binomial_law_and_mixture_are_above_the_exact_ones(n, b, steps, sigma):
    """drop_last with B ∤ N: K = Binom(E−1, bB/N) + Bern(rB/N). Every weight of the law is
    ≥ its exact value (mpmath, 40 digits; lgamma's error made it 6e-10 low at E ≈ 2e4 before
    the allowance), so every tail sum and the mixture δ(ε) are ≥ the exact mixture."""
    import mpmath as mp

    mp.mp.dps = 40
    phase = Phase.from_batches(b, n, sigma, steps, "shuffle", "zero-out", drop_last=True)
    law = epoch_orders.epoch_count_law(phase)
    per_epoch = phase.batches_per_epoch
    epochs = -(-steps // per_epoch)
    rest = steps - (epochs - 1) * per_epoch
    p = mp.mpf(per_epoch * b) / n
    w = mp.mpf(rest * b) / n if rest < per_epoch else p
    trials = epochs - 1

    def exact(k):
        total = mp.mpf(0)
        if k <= trials:
            total += mp.binomial(trials, k) * p**k * (1 - p)**(trials - k) * (1 - w)
        if k >= 1:
            total += mp.binomial(trials, k - 1) * p**(k - 1) * (1 - p)**(trials - k + 1) * w
        return total

    exact_weights = {k: exact(k) for k, _ in law}
    # subnormal weights (< 1e-307) lose relative precision: the tail sums add 1e-300 for them
    assert all(mp.mpf(weight) + mp.mpf(1e-300) >= exact_weights[k] for k, weight in law)
    assert all(mp.mpf(weight) >= exact_weights[k] for k, weight in law if weight > 1e-300)
    assert len(law) > 20  # a real binomial, not a point mass

    def gdp_delta_exact(epsilon, mu):
        epsilon, mu = mp.mpf(epsilon), mp.mpf(mu)
        return mp.ncdf(-epsilon / mu + mu / 2) - mp.e**epsilon * mp.ncdf(-epsilon / mu - mu / 2)

    for epsilon in (0.5, 1.0, 2.0):
        mixture = sum(exact(k) * gdp_delta_exact(epsilon, mp.sqrt(k) / sigma)
                      for k in range(max(1, law[0][0] - 60), trials + 2))
        assert epoch_orders.mixture_delta_upper(epsilon, law, 1.0 / sigma) >= mixture


@pytest.mark.parametrize("adjacency,sigma,steps", [("zero-out", 1.0, 25), ("replace-one", 0.8, 15)])
def test_shuffle_once_lower_is_at_least_the_once_per_epoch_instance(adjacency, sigma, steps):
    """The per-epoch max-of-outputs instance does not depend on the record's position, so it
    is an instance of shuffle-once too: its lower bound is at least once-per-epoch's (it was
    6.57 against 7.56 at N = 1000, B = 100, T = 25, σ = 1, zero-out) and still below the
    certified upper."""
    once = epoch_bounds(Phase.from_batches(100, 1000, sigma, steps, "shuffle-once", adjacency), 1e-5)
    any_order = epoch_bounds(Phase.from_batches(100, 1000, sigma, steps, "once-per-epoch",
                                                adjacency), 1e-5)
    assert once.lower >= any_order.lower > 0.0
    assert once.lower <= once.upper
