"""Pruned mixture pairs (mixture.GaussianMixturePair ``prune``, what group's pb composes):
the upper bound from the pruned pair must stay above the true pair's ε and the lower bound
below it. Checked against the true pair's exact δ(ε) by quadrature (T = 1) with a pruned
weight far above δ, where reading the lower composition at δ + f alone overshoots."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from dpcalc.models.mixture import GaussianMixturePair
from dpcalc.pb import direction_pass
from dpcalc.pb.buckets import delta_bounds, epsilon_bounds
from dpcalc.pb.curve import epsilon_curve

Q, SIGMA, DELTA = 0.1, 0.7, 1e-3
WEIGHTS = [(1 - Q) ** 2, 2 * Q * (1 - Q), Q * Q]  # k = 2 records, Poisson q = 0.1


def _density(weights, x):
    return sum(w * stats.norm.pdf(x, j, SIGMA) for j, w in enumerate(weights))


def _true_delta(direction: str, epsilon: float) -> float:
    """∫ (p − e^ε q)_+ for the true (unpruned) pair, by adaptive quadrature."""
    mixture = lambda x: _density(WEIGHTS, x)  # noqa: E731
    gauss = lambda x: stats.norm.pdf(x, 0.0, SIGMA)  # noqa: E731
    p, q = (mixture, gauss) if direction == "remove" else (gauss, mixture)
    return integrate.quad(lambda x: max(p(x) - math.exp(epsilon) * q(x), 0.0), -12.0, 14.0,
                          points=[0.0, 1.0, 2.0], limit=500, epsabs=1e-14, epsrel=1e-11)[0]


def _true_epsilon(direction: str) -> float:
    return optimize.brentq(lambda e: _true_delta(direction, e) - DELTA, 0.0, 20.0, xtol=1e-13)


@pytest.fixture(scope="module")
def pruned():
    pair = GaussianMixturePair(WEIGHTS, SIGMA, prune=0.02)
    assert pair.weights.size == 2 and pair.dropped == pytest.approx(Q * Q)
    return pair


def test_pruned_two_component_inverse_is_the_pruned_loss(pruned):
    # the closed form assumed p_0 = 1 − q; a pruned pair's weights sum to 1 − w
    x = np.linspace(-2.0, 4.0, 13)
    losses = pruned.loss(x)
    assert np.allclose(pruned.inverse_loss(losses), x, rtol=0, atol=1e-9)


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_pruned_bounds_hold_for_the_true_pair(pruned, direction):
    truth = _true_epsilon(direction)
    upper, lower = epsilon_bounds([(pruned, 1)], DELTA).by_direction[direction]
    assert lower <= truth <= upper
    # the true pair's own pb bounds bracket the same value (the quadrature is right)
    true_upper, true_lower = epsilon_bounds([(GaussianMixturePair(WEIGHTS, SIGMA), 1)],
                                            DELTA).by_direction[direction]
    assert true_lower <= truth <= true_upper


def test_the_allowance_is_what_keeps_the_lower_bound_sound(pruned, monkeypatch):
    truth = _true_epsilon("remove")
    monkeypatch.setattr(direction_pass, "lower_allowance", lambda phases, d: (lambda e: 0.0))
    unshifted = epsilon_bounds([(pruned, 1)], DELTA).by_direction["remove"][1]
    assert unshifted > truth  # the pruned atom (w = 0.01 ≫ δ) read as the true pair's mass


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.18, 1.0])
def test_pruned_delta_bounds_bracket_the_true_delta(pruned, epsilon):
    found = delta_bounds([(pruned, 1)], epsilon)
    for direction, (upper, lower) in found.by_direction.items():
        truth = _true_delta(direction, epsilon)
        assert lower <= truth * (1 + 1e-9) + 1e-15
        assert upper >= truth * (1 - 1e-9)


def test_pruned_composition_lower_below_the_true_pairs_upper():
    """T = 10, k = 3 with q³ = 1e-3 pruned: the true ε lies in the true pair's certified
    bounds; the pruned pair's lower bound (read 10·w higher in the remove direction,
    e^ε·10·w in the add one) stays below their upper one, its upper bound above their
    lower one."""
    weights = [(1 - Q) ** 3, 3 * Q * (1 - Q) ** 2, 3 * Q * Q * (1 - Q), Q**3]
    pruned, true_pair = GaussianMixturePair(weights, SIGMA, 2e-3), GaussianMixturePair(weights, SIGMA)
    assert pruned.dropped == pytest.approx(1e-3)
    for delta in (0.02, 0.05, 0.2):
        shifted = epsilon_bounds([(pruned, 10)], delta)
        truth = epsilon_bounds([(true_pair, 10)], delta)
        for direction in ("remove", "add"):
            (upper, lower), (true_upper, true_lower) = (shifted.by_direction[direction],
                                                        truth.by_direction[direction])
            assert 0.0 < lower <= true_upper and upper >= true_lower


def test_lower_allowance_values(pruned):
    phases = [(pruned, 3), (pruned, 4)]
    remove = direction_pass.lower_allowance(phases, "remove")
    add = direction_pass.lower_allowance(phases, "add")
    assert remove(5.0) >= 7 * pruned.dropped and remove(5.0) == pytest.approx(7 * pruned.dropped)
    assert add(2.0) >= math.exp(2.0) * 7 * pruned.dropped
    assert add(2.0) == pytest.approx(math.exp(2.0) * 7 * pruned.dropped)
    unpruned = [(GaussianMixturePair.subsampled_gaussian(0.01, 1.0), 100)]
    assert direction_pass.lower_allowance(unpruned, "add")(50.0) == 0.0


def test_curve_of_a_pruned_pair_is_its_points(pruned):
    curve = epsilon_curve(pruned, [4, 2], 0.5)
    for bounds, steps in zip(curve, [4, 2]):
        point = epsilon_bounds([(pruned, steps)], 0.5)
        assert (bounds.upper, bounds.lower) == (point.upper, point.lower)


def test_add_allowance_past_the_float_range_of_exp(pruned):
    # e^ε·Σ T·w was math.exp(min(ε, 1e3))·Σ T·w: OverflowError (an internal error) from
    # ε ≈ 709.78, e.g. an add-direction upper bound of 717 or a pass with none (∞)
    add = direction_pass.lower_allowance([(pruned, 1)], "add")
    assert add(710.0) == math.inf and add(1e3) == math.inf and add(math.inf) == math.inf
    tiny = GaussianMixturePair([1.0, 1e-3, 1e-310], SIGMA, prune=1e-300)
    assert tiny.dropped > 0.0
    value = direction_pass.lower_allowance([(tiny, 1)], "add")(700.0)
    assert value >= tiny.dropped * math.exp(700.0)
    assert value == pytest.approx(tiny.dropped * math.exp(700.0), rel=1e-11)


def test_pruned_pair_with_add_epsilon_past_709():
    """k = 3, q = 0.3, σ = 0.1, q³ pruned, T = 670: the add direction's ε is ~717 (each
    step's add loss is nearly its ceiling −ln p_0 = 1.07); this raised OverflowError. The
    pruned bounds must bracket the same ε as the true pair's own (716.91, 717.01)."""
    q = 0.3
    weights = [(1 - q) ** 3, 3 * q * (1 - q) ** 2, 3 * q * q * (1 - q), q**3]
    pruned = GaussianMixturePair(weights, 0.1, prune=0.03)
    assert pruned.dropped == pytest.approx(q**3)
    upper, lower = epsilon_bounds([(pruned, 670)], 1e-5).by_direction["add"]
    true_upper, true_lower = epsilon_bounds([(GaussianMixturePair(weights, 0.1), 670)],
                                            1e-5).by_direction["add"]
    assert 709.79 < true_lower <= true_upper < 720.0
    assert lower <= true_upper and upper >= true_lower


def test_group_with_add_epsilon_past_709_does_not_overflow():
    # `dpcalc group --k 20 --batch-size 50 --dataset-size 1000 --sigma 0.3 --steps 800`
    # exited 70 (OverflowError): production pruning (1e-15·δ/T, 3.6e-24 dropped here) and
    # an add-direction upper bound of 770
    from dpcalc.group.pairs import GroupSetting, pb_epsilon

    setting = GroupSetting(k=20, batch_size=50, dataset_size=1000, noise_multiplier=0.3,
                           steps=800)
    result = pb_epsilon(setting, 1e-5)
    assert result.details["epsilon_add"] > 709.79
    assert 0.0 < result.epsilon_lower <= result.epsilon < math.inf


def test_a_spliced_pair_refuses_pruned_halves(pruned):
    from dpcalc.errors import DpcalcError
    from dpcalc.models.pairs import SplicedPair

    with pytest.raises(DpcalcError, match="unpruned halves"):
        SplicedPair(pruned, pruned)
    plain = GaussianMixturePair(WEIGHTS, SIGMA)
    assert SplicedPair(plain, plain).upper is plain
