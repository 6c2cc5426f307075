"""Group privacy (k protected records): pb on the model's mixture (Poisson: binomial
weights, shift j; fixed-size: hypergeometric weights, shift 2j), seed 000's pair under its
own name, the seed's RDP over-approximation, the generic (ε, δ) conversion and the RDP
group property.

Oracles: dp_accounting's Gaussian-mixture PLD with scipy.stats weights (an independent
implementation of the mixture composition), the exact Gaussian composition (B = N puts
every record in every batch), numerical integration, brute-force search, and the values
of accounting-methods.md §6 / reference-values.md.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcalc.accountants.pb import PrivacyBucketsAccountant
from dpcalc.models.gaussian import gdp_epsilon
from dpcalc.group.pairs import (GroupSetting, mixture_specs, pb_epsilon, pb_epsilon_over_steps,
                                seed_epsilon, seed_spec)
from dpcalc.group.bounds import (calibrate_group_sigma, convert_group, group_conversion_epsilon,
                                 group_epsilons, overapprox_parameters, rdp_group_epsilon,
                                 rdp_overapprox_epsilon)
from dpcalc.accountants.rdp import DEFAULT_ORDERS
from dpcalc.accountants.rdp_accountants import RdpAccountant
from dpcalc.models.schedule import Schedule
from dpcalc.models.subsampling import hypergeometric_weights
from dpcalc.errors import DpcalcError

pytestmark = pytest.mark.deep  # oracle sweeps: `python -m pytest -m deep` (CI runs them)


def setting(k, sigma, steps, sampling="poisson", **sizes):
    return GroupSetting(k, sizes.get("batch_size", 256), sizes.get("dataset_size", 60_000),
                        sigma, steps, sampling)


# --- k = 1 is the Poisson-subsampled Gaussian with q = B/N --------------------------------
@pytest.mark.parametrize("batch_size,dataset_size", [(256, 60_000), (1, 2), (999, 1000),
                                                     (4096, 10**9)])
def test_hypergeometric_single_record_weights_are_one_minus_q_and_q(batch_size, dataset_size):
    q = batch_size / dataset_size
    weights = hypergeometric_weights(1, batch_size, dataset_size)
    assert weights == pytest.approx([1 - q, q], rel=2e-15, abs=0)  # a few ulps
    for sampling in ("poisson", "fixed"):
        (spec,) = mixture_specs(GroupSetting(1, batch_size, dataset_size, 1.0, 10, sampling))
        assert spec.weights.tolist() == [1.0 - q, q]
        assert spec.shift == (1.0 if sampling == "poisson" else 2.0)


@pytest.mark.parametrize("sampling", ["fixed", "poisson"])
@pytest.mark.parametrize("sigma,steps", [(1.0, 4096), (1.1, 14_062), (0.7, 500)])
def test_k_one_equals_the_pb_accountant_at_q_equal_b_over_n(sampling, sigma, steps):
    group = pb_epsilon(setting(1, sigma, steps, sampling), 1e-5)
    single = PrivacyBucketsAccountant().epsilon(
        Schedule.single(256 / 60_000, sigma, steps, sampling), 1e-5)
    assert group.epsilon == single.epsilon
    assert group.epsilon_lower == single.epsilon_lower


# --- the mixture composition against an independent implementation ---------------------
def dp_accounting_mixture_epsilon(weights, sigma, steps, delta, interval=1e-3):
    """dp_accounting's PLD of the Gaussian mixture (both directions, connect-the-dots)."""
    pld_module = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    pld = pld_module.from_mixture_gaussian_mechanism(
        sigma, list(range(len(weights))), [float(w) for w in weights],
        value_discretization_interval=interval)
    return pld.self_compose(steps).get_epsilon_for_delta(delta)


def test_k_two_agrees_with_an_independent_mixture_composition():
    # reference-values.md: N = 60 000, B = 256, σ = 1, k = 2, T = 4 096, δ = 1e-5 → ≈ 3.176
    # for the seed's hypergeometric pair; Poisson sampling's binomial pair gives 3.1757.
    stats = pytest.importorskip("scipy.stats")
    weights = stats.hypergeom.pmf(np.arange(3), 60_000, 2, 256)  # independent of subsampling.py
    oracle = dp_accounting_mixture_epsilon(weights, 1.0, 4096, 1e-5)
    seed = seed_epsilon(setting(2, 1.0, 4096), 1e-5)
    assert seed.epsilon == pytest.approx(oracle, rel=0.005)
    assert seed.epsilon == pytest.approx(3.176, rel=0.005)
    assert seed.certified is False  # the seed's pair is not the model of any run here
    binomial = stats.binom.pmf(np.arange(3), 2, 256 / 60_000)
    oracle = dp_accounting_mixture_epsilon(binomial, 1.0, 4096, 1e-5)
    result = pb_epsilon(setting(2, 1.0, 4096), 1e-5)
    assert oracle * (1 - 2e-3) <= result.epsilon <= oracle * 1.005
    assert result.epsilon_lower <= oracle * (1 + 1e-3)
    assert result.epsilon - result.epsilon_lower <= 0.01 * result.epsilon


def test_fixed_size_k_two_is_the_shift_two_mixture():
    """Fixed-size batches: hypergeometric weights with shifts 2j, in both neighbour sizes
    (N and N + k); an independent composition of the larger one bounds pb from below."""
    stats = pytest.importorskip("scipy.stats")
    result = pb_epsilon(setting(2, 2.0, 1000, "fixed"), 1e-5)
    oracles = []
    for size in (60_000, 60_002):
        weights = stats.hypergeom.pmf(np.arange(3), size, 2, 256)
        pld_module = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
        pld = pld_module.from_mixture_gaussian_mechanism(
            2.0, [0.0, 2.0, 4.0], [float(w) for w in weights], value_discretization_interval=1e-3)
        oracles.append(pld.self_compose(1000).get_epsilon_for_delta(1e-5))
    assert max(oracles) * (1 - 3e-3) <= result.epsilon <= max(oracles) * 1.005
    assert result.epsilon > seed_epsilon(setting(2, 2.0, 1000, "fixed"), 1e-5).epsilon


def test_poisson_k_three_agrees_with_an_independent_mixture_composition():
    binom = pytest.importorskip("scipy.stats").binom
    q = 0.02
    weights = binom.pmf(np.arange(4), 3, q)
    oracle = dp_accounting_mixture_epsilon(weights, 1.5, 300, 1e-6)
    result = pb_epsilon(GroupSetting(3, 200, 10_000, 1.5, 300, "poisson"), 1e-6)
    assert result.epsilon == pytest.approx(oracle, rel=0.005)


# --- exact case: B = N puts all k records in every batch: a Gaussian with sensitivity k ---
@pytest.mark.parametrize("k,sigma,steps", [(2, 3.0, 100), (4, 20.0, 1000), (3, 1.0, 1)])
def test_full_batch_brackets_the_exact_gaussian_composition(k, sigma, steps):
    exact = gdp_epsilon(1e-5, k * math.sqrt(steps) / sigma)  # μ = k√T/σ
    each = GroupSetting(k, 500, 500, sigma, steps, "poisson")
    result = pb_epsilon(each, 1e-5)
    assert result.epsilon_lower <= exact <= result.epsilon
    assert result.epsilon <= exact * 1.01
    assert rdp_overapprox_epsilon(each, 1e-5).epsilon >= exact


# --- accounting-methods.md §6 --------------------------------------------------------------
SECTION_6 = {2: (5.27, 5.72), 4: (12.15, 15.6), 8: (30.0, None)}


def test_section_six_example_mixture_and_generic_conversion():
    # N = 60 000, B = 256, σ = 1.1, T = 14 062, δ = 1e-5 (accounting-methods.md §6)
    # The note's "exact mixture" is the seed's hypergeometric pair; Poisson's binomial pair
    # gives the same figures to the shown digits (N ≫ k).
    base = setting(1, 1.1, 14_062)
    results = dict(((k, r.accountant), r) for k, r in group_epsilons(
        base, sorted(SECTION_6), 1e-5, ("pb", "seed", "group-conversion")))
    for k, (mixture, conversion) in SECTION_6.items():
        assert results[(k, "seed")].epsilon == pytest.approx(mixture, rel=0.005)
        pb = results[(k, "pb")]
        assert pb.epsilon == pytest.approx(mixture, rel=0.005)
        assert pb.epsilon_lower <= pb.epsilon
        converted = results[(k, "group-conversion")]
        if conversion is None:
            assert converted.epsilon is None and "no certificate" in converted.notes[0]
        else:
            assert converted.epsilon == pytest.approx(conversion, rel=0.005)
            assert converted.epsilon >= pb.epsilon


# --- the over-approximations are never below the pb upper bound --------------------------
GRID = ([(k, sigma, steps, "poisson") for k in (1, 2, 3, 4) for sigma in (0.8, 2.0)
         for steps in (50, 3000)]
        + [(k, 2.0, steps, "fixed") for k in (1, 2, 4) for steps in (50, 3000)])


@pytest.mark.parametrize("k,sigma,steps,sampling", GRID)
def test_over_approximations_never_below_pb(k, sigma, steps, sampling):
    each = setting(k, sigma, steps, sampling)
    pb = pb_epsilon(each, 1e-5)
    assert 0.0 <= pb.epsilon_lower <= pb.epsilon < math.inf
    others = [rdp_overapprox_epsilon(each, 1e-5), group_conversion_epsilon(each, 1e-5),
              rdp_group_epsilon(each, 1e-5)]
    for other in others:
        if other.epsilon is not None:  # k = 1 conversions read a profile sized for smaller δ:
            assert other.epsilon >= pb.epsilon * (1 - 1e-5), other.accountant  # grid slack
    assert others[0].epsilon is not None  # the seed's method always applies
    assert (others[2].epsilon is None) == (k == 3)  # Mironov Prop. 2: k = 2^c only


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(k=st.integers(1, 6), sigma=st.floats(0.6, 5.0), steps=st.integers(1, 2000),
       batch_size=st.integers(1, 500), extra=st.integers(0, 5000),
       sampling=st.sampled_from(["fixed", "poisson"]))
def test_property_bounds_ordered_and_overapprox_above(k, sigma, steps, batch_size, extra, sampling):
    dataset_size = max(batch_size, k) + extra
    each = GroupSetting(k, batch_size, dataset_size, sigma, steps, sampling)
    pb = pb_epsilon(each, 1e-5)
    assert 0.0 <= pb.epsilon_lower <= pb.epsilon
    assert not math.isnan(pb.epsilon)
    assert rdp_overapprox_epsilon(each, 1e-5).epsilon >= pb.epsilon * (1 - 1e-9)


def test_pb_grows_with_k():
    values = [pb_epsilon(setting(k, 1.0, 1000), 1e-5).epsilon for k in (1, 2, 3, 5)]
    assert values == sorted(values) and len(set(values)) == 4


# --- why the seed's over-approximation is an upper bound (group.py module doc) -----------
def _mixture_density(x, weights, sigma):
    shifts = np.arange(len(weights))
    return sum(w * np.exp(-0.5 * ((x - j) / sigma) ** 2) for j, w in zip(shifts, weights)) / (
        sigma * math.sqrt(2 * math.pi))


def test_kernel_maps_the_overapprox_pair_onto_the_mixture_pair():
    """K: draw J′ with P(J′=j) = p_j/q′ (j ≥ 1), output (J′/k)·x + N(0, σ²(1 − J′²/k²)).
    K(A) = A and K(B′) = B, checked by numerical integration of ∫ K(y|x) dB′(x)."""
    integrate = pytest.importorskip("scipy.integrate")
    k, sigma = 3, 0.8
    weights = hypergeometric_weights(k, 40, 100)
    rate = 1.0 - weights[0]
    overapprox = np.zeros(k + 1)
    overapprox[0], overapprox[k] = 1.0 - rate, rate

    def kernel(y, x):
        total = 0.0
        for j in range(1, k + 1):
            mean, var = j / k * x, sigma**2 * (1 - (j / k) ** 2)
            if var == 0.0:
                continue  # j = k: the identity, integrated separately below
            total += weights[j] / rate * math.exp(-0.5 * (y - mean) ** 2 / var) / math.sqrt(2 * math.pi * var)
        return total

    for y in (-1.5, 0.0, 0.7, 2.0, 3.5):
        smooth, _ = integrate.quad(lambda x: kernel(y, x) * _mixture_density(x, overapprox, sigma),
                                   -12, 15, epsabs=1e-13, limit=200)
        identity = weights[k] / rate * _mixture_density(y, overapprox, sigma)
        assert smooth + identity == pytest.approx(_mixture_density(y, weights, sigma), rel=1e-8)
        from_a, _ = integrate.quad(lambda x: kernel(y, x) * _mixture_density(x, [1.0], sigma),
                                   -12, 15, epsabs=1e-13, limit=200)
        from_a += weights[k] / rate * _mixture_density(y, [1.0], sigma)
        assert from_a == pytest.approx(_mixture_density(y, [1.0], sigma), rel=1e-8)


@pytest.mark.parametrize("epsilon", [0.0, 0.5, 2.0, 5.0])
def test_overapprox_pair_dominates_the_mixture_pair_in_both_directions(epsilon):
    """One step: H_{e^ε}(B‖A) ≤ H_{e^ε}(B′‖A) and H_{e^ε}(A‖B) ≤ H_{e^ε}(A‖B′)."""
    k, sigma = 4, 0.9
    weights = hypergeometric_weights(k, 30, 100)
    overapprox = np.zeros(k + 1)
    overapprox[0], overapprox[k] = weights[0], 1.0 - weights[0]
    x = np.linspace(-15, 20, 400_001)
    a = _mixture_density(x, [1.0], sigma)

    def hockey(p, q):
        return np.trapezoid(np.maximum(p - math.exp(epsilon) * q, 0.0), x)

    b, b_prime = _mixture_density(x, weights, sigma), _mixture_density(x, overapprox, sigma)
    assert hockey(b, a) <= hockey(b_prime, a) + 1e-12
    assert hockey(a, b) <= hockey(a, b_prime) + 1e-12
    assert hockey(b, a) < hockey(b_prime, a)  # and strictly: the seed's method is loose


def test_overapprox_parameters_are_the_seeds_and_on_the_safe_side():
    each = setting(4, 1.2, 100)
    rate, sigma = overapprox_parameters(each)
    p0 = (1 - 256 / 60_000) ** 4  # Poisson: J ~ Binomial(4, q)
    assert rate >= 1 - p0 and rate == pytest.approx(1 - p0, rel=1e-12)
    assert sigma <= 1.2 / 4 and sigma == pytest.approx(0.3, rel=1e-15)
    fixed_rate, fixed_sigma = overapprox_parameters(setting(4, 1.2, 100, "fixed"))
    p0 = min(hypergeometric_weights(4, 256, n)[0] for n in (60_000, 60_004))
    assert fixed_rate >= 1 - p0 and fixed_sigma <= 1.2 / 8
    rdp = RdpAccountant().epsilon(Schedule.single(rate, sigma, 100), 1e-5).epsilon
    assert rdp_overapprox_epsilon(each, 1e-5).epsilon == pytest.approx(rdp, rel=1e-9)


# --- the RDP group property -------------------------------------------------------------
def test_rdp_group_k_one_is_the_rdp_accountant_on_orders_from_two():
    orders = DEFAULT_ORDERS[DEFAULT_ORDERS >= 2]
    expected = RdpAccountant(orders).epsilon(Schedule.single(256 / 60_000, 1.0, 2000), 1e-5).epsilon
    assert rdp_group_epsilon(setting(1, 1.0, 2000), 1e-5).epsilon == pytest.approx(expected, rel=1e-12)


def test_rdp_group_k_two_is_three_times_rdp_at_twice_the_order():
    from dpcalc.accountants.rdp import rdp_subsampled_gaussian, rdp_to_epsilon_improved

    orders = np.array([2.0, 3.0, 5.0, 8.0])
    rho = 3.0 * 500 * rdp_subsampled_gaussian(256 / 60_000, 1.3, 2 * orders)
    expected = rdp_to_epsilon_improved(orders, rho, 1e-5)[0]
    assert rdp_group_epsilon(setting(2, 1.3, 500), 1e-5, orders).epsilon == pytest.approx(expected, rel=1e-12)


# --- the generic conversion's search ----------------------------------------------------
@pytest.mark.parametrize("k,mu", [(2, 0.5), (3, 1.0), (5, 0.3)])
def test_conversion_search_meets_the_constraint_and_matches_brute_force(k, mu):
    """On the exact profile of a μ-GDP mechanism: feasible, and within 1e-4 of the best
    kε₁ over a dense grid of δ₁."""
    profile = lambda d: gdp_epsilon(d, mu)  # noqa: E731
    delta = 1e-5
    found = convert_group(profile, k, delta, delta * 1e-12)
    assert found.epsilon == pytest.approx(k * found.record_epsilon, rel=1e-15)
    assert k * math.exp((k - 1) * found.record_epsilon) * found.record_delta <= delta
    assert found.record_epsilon >= profile(found.record_delta) - 1e-12
    grid = np.exp(np.linspace(math.log(delta * 1e-12), math.log(delta / k), 4000))
    feasible = [k * profile(d) for d in grid if k * math.exp((k - 1) * profile(d)) * d <= delta]
    assert found.epsilon <= min(feasible) + 1e-4
    assert found.epsilon >= min(feasible) - 1e-3  # brute force on a grid is not far off


def test_conversion_reports_no_certificate_when_nothing_works():
    # ε₁(δ₁) flat at 5: k e^{(k−1)·5} δ₁ ≤ 1e-5 needs δ₁ ≤ 2.3e-14 at k = 4 — below the range.
    found = convert_group(lambda d: 5.0, 4, 1e-5, 1e-12)
    assert found.epsilon is None
    found = convert_group(lambda d: 5.0, 4, 1e-5, 1e-15)
    assert found.epsilon == pytest.approx(20.0)


# --- sweeps, calibration, inputs ------------------------------------------------------------
def test_epsilon_over_steps_is_certified_and_close_to_pb():
    each = setting(3, 1.0, 1)
    steps = [1, 16, 1024]
    values = pb_epsilon_over_steps(each, steps, 1e-5)
    for value, count in zip(values, steps):
        reference = pb_epsilon(each.with_steps(count), 1e-5)
        assert reference.epsilon_lower <= value <= reference.epsilon * 1.01


def test_calibrated_sigma_meets_the_target_and_is_nearly_smallest():
    each = setting(2, 1.0, 1000)
    found = calibrate_group_sigma(each, 2.0, 1e-5, precision=1e-3)
    assert found.result.epsilon <= 2.0
    assert pb_epsilon(each.with_sigma(found.sigma), 1e-5).epsilon <= 2.0
    assert pb_epsilon(each.with_sigma(found.sigma * 0.99), 1e-5).epsilon > 2.0
    # the search runs pb at a 10% gap from a coarse grid: the σ stays within 3× the precision
    assert pb_epsilon(each.with_sigma(found.sigma * (1 - 3e-3)), 1e-5).epsilon > 2.0


def test_calibration_at_k_64_searches_the_pruned_pair_and_stays_nearly_smallest():
    """The search's pair drops the components lighter than 1e-15·δ/T into a +∞ atom (a
    dominating pair: its upper bound is certified); it found σ in 37 s at k = 64, now ~1 s.
    The σ must still be certified by pb_epsilon (the pruned pair, as `group` reports it) and
    within a few precisions of the smallest: pb's lower bound exceeds the target 1% below it."""
    each = GroupSetting(64, 64, 60_000, 1.0, 1000)
    found = calibrate_group_sigma(each, 3.0, 1e-5, precision=1e-3)
    assert found.result.epsilon <= 3.0
    assert pb_epsilon(each.with_sigma(found.sigma), 1e-5).epsilon <= 3.0
    assert pb_epsilon(each.with_sigma(found.sigma * 0.99), 1e-5).epsilon_lower > 3.0


def test_huge_dataset_and_tiny_or_huge_noise_give_finite_answers():
    big = GroupSetting(2, 1000, 10**9, 1.0, 10**5)
    pb = pb_epsilon(big, 1e-5)
    assert 0 < pb.epsilon_lower <= pb.epsilon < 0.01
    assert overapprox_parameters(big)[0] == pytest.approx(2e-6, rel=1e-5)
    for each in (setting(3, 0.2, 5), setting(8, 30.0, 10_000)):
        result = pb_epsilon(each, 1e-5)
        assert math.isfinite(result.epsilon) and result.epsilon_lower <= result.epsilon


@pytest.mark.parametrize("args,flag", [
    ((0, 256, 60_000, 1.0, 10), "--k"),
    ((65, 256, 60_000, 1.0, 10), "--k"),
    ((6, 2, 5, 1.0, 10), "--k must be <= --dataset-size (5)"),
    ((2, 600, 500, 1.0, 10), "--batch-size must be <= --dataset-size (500)"),
    ((2, 256, 60_000, 0.0, 10), "--sigma"),
    ((2, 256, 60_000, 1.0, 0), "--steps"),
])
def test_bad_settings_name_the_flag(args, flag):
    with pytest.raises(DpcalcError, match=flag.replace("(", r"\(").replace(")", r"\)")):
        GroupSetting(*args)


def test_unknown_sampling_is_rejected():
    with pytest.raises(DpcalcError, match="--sampling must be one of poisson, fixed"):
        GroupSetting(2, 256, 60_000, 1.0, 10, "stratified")


def test_seed_pair_is_the_hypergeometric_mixture_with_shift_one():
    spec = seed_spec(setting(3, 0.5, 10, "fixed"))
    assert spec.weights == pytest.approx(hypergeometric_weights(3, 256, 60_000), rel=1e-15)
    assert spec.noise_multiplier == 0.5 and spec.shift == 1.0
    full_batch = seed_spec(GroupSetting(1, 7, 7, 2.0, 1))  # q = 1: the Gaussian
    assert full_batch.weights.tolist() == [0.0, 1.0]


# --- mixture.inverse_loss for k > 1 (Newton on ln(e^g − p_0), rewritten for speed) -------
@pytest.mark.parametrize("k,batch_size,dataset_size,sigma", [
    (2, 256, 60_000, 1.0), (8, 256, 60_000, 0.3), (5, 50, 52, 2.0), (16, 256, 60_000, 1.0),
    (4, 1000, 2000, 4.0)])
def test_mixture_inverse_loss_matches_high_precision_roots(k, batch_size, dataset_size, sigma):
    mpmath = pytest.importorskip("mpmath")
    pair = seed_spec(GroupSetting(k, batch_size, dataset_size, sigma, 1)).pair()
    low, high = pair.loss_range("remove", 9.0)
    floor = pair.loss_floor
    losses = np.concatenate([np.linspace(max(low, floor + 1e-6), high, 25),
                             floor + np.array([1e-12, 1e-9, 1e-4]) if np.isfinite(floor) else []])
    roots = pair.inverse_loss(losses)
    with mpmath.workdps(40):
        log_w = [mpmath.mpf(float(w)) for w in pair.log_weights]  # the floats the engine uses
        s2 = mpmath.mpf(sigma) ** 2

        def g(x):
            return mpmath.log(sum(mpmath.exp(lw + (2 * j * x - j * j) / (2 * s2))
                                  for j, lw in enumerate(log_w) if lw != -mpmath.inf))

        for loss, root in zip(losses, roots):
            exact = mpmath.findroot(lambda x: g(x) - mpmath.mpf(float(loss)), mpmath.mpf(float(root)))
            assert float(root) == pytest.approx(float(exact), rel=1e-12, abs=1e-12)
    # ε ≤ ln p_0: no output has that loss
    if np.isfinite(floor):
        assert np.all(np.isneginf(pair.inverse_loss([floor, floor - 1.0])))


def test_conversion_curve_matches_the_table_path_where_it_tilts_lazily():
    """The figure's group-conversion curve (plain profiles, tilted only where the search
    reads below their float noise) gives the table's value at each T to 1e-3, including
    T where the tilts are needed (k = 4, T = 8192: the plain profile alone is 0.5% looser)."""
    from dpcalc.group.bounds import conversion_over_steps
    from dpcalc.pb.profiles import upper_profiles
    from dpcalc.models.worst_case import worst_case

    setting = GroupSetting(1, 256, 60000, 1.0, 100)
    steps = [64, 1024, 8192]
    curve = conversion_over_steps(setting, [2, 4], steps, 1e-5)
    for k in (2, 4):
        for index, count in enumerate(steps):
            table = group_conversion_epsilon(GroupSetting(k, 256, 60000, 1.0, count), 1e-5)
            assert curve[k][index] == pytest.approx(table.epsilon, rel=1e-3)
    plain = upper_profiles(worst_case(setting.record_phase()).pair, [8192], 1e-17)[0]
    untilted = convert_group(plain.epsilon, 4, 1e-5, 1e-17).epsilon
    assert untilted > 1.003 * curve[4][2]  # the tilts were needed there, and were made
