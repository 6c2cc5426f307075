"""ε over step counts from one transform (accounting/curve.py, Accountant.epsilon_curve):
the same certified bounds as the point path, and sound against exact values."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from dpcalc.pb.buckets import epsilon_bounds, schedule_phases
from dpcalc.accountants.pb import PrivacyBucketsAccountant
from dpcalc.pb.curve import epsilon_curve, tabulated_slacks
from dpcalc.pld.discretise import discretise
from dpcalc.pld.pld import LOWER, UPPER, ComposedPld
from dpcalc.accountants.rdp_accountants import RdpAccountant
from dpcalc.models.schedule import Schedule
from dpcalc.cli.app import app
from dpcalc.pld.chernoff import rounding_slack
from typer.testing import CliRunner

pytestmark = pytest.mark.deep  # oracle sweeps: `python -m pytest -m deep` (CI runs them)


def _pair(q, sigma, sampling="poisson", adjacency="add-remove"):
    return schedule_phases(Schedule.single(q, sigma, 1, sampling, adjacency))[0][0]


def _assert_same_lower_bound(curve_bounds, point):
    """The curve path's lower bound against the point path's, at a tolerance below the
    rounding slack η it must subtract (η is 1.6e-5 of ε at q = 0.01, σ = 1, T = 100 and
    3e-4 at T = 10 000; the old rel = 2e-3 let a curve without η through). On the same
    grid the two differ only by the tabulated slack (≤ 1% of η + h/20,
    test_tabulated_slack_is_close_to_the_optimised_chernoff_slack): 1e-5 relative. On a
    finer grid (the curve shares its group's finest) both are certified lower bounds with
    their own gaps: each must lie within the larger gap of the other, and the finer grid's
    smaller η may only raise it."""
    if curve_bounds.grid_step == point.grid_step:
        assert curve_bounds.lower == pytest.approx(point.lower, rel=1e-5, abs=1e-9)
    else:
        assert curve_bounds.grid_step < point.grid_step
        gap = max(curve_bounds.upper - curve_bounds.lower, point.upper - point.lower)
        assert point.lower * (1 - 1e-5) <= curve_bounds.lower <= point.lower + gap


CASES = [
    (0.01, 1.0, "poisson", "add-remove", [1, 100, 1000, 5000, 10000], 1e-5),
    (0.004, 0.8, "poisson", "replace-one", [10, 300, 3000], 1e-6),
    (0.02, 2.0, "fixed", "add-remove", [50, 500, 2500], 1e-7),
    (1e-3, 0.9, "poisson", "add-remove", [1000, 100000], 1e-9),
]


@pytest.mark.parametrize("q, sigma, sampling, adjacency, counts, delta", CASES)
def test_curve_matches_the_point_path(q, sigma, sampling, adjacency, counts, delta):
    pair = _pair(q, sigma, sampling, adjacency)
    curve = epsilon_curve(pair, counts, delta)
    for count, bounds in zip(counts, curve):
        point = epsilon_bounds([(pair, count)], delta)
        # both certified: each lower bound below the other's upper bound
        assert bounds.lower <= point.upper * (1 + 1e-12) and point.lower <= bounds.upper * (1 + 1e-12)
        # and the same numbers up to the tabulated windows and slacks
        assert bounds.upper == pytest.approx(point.upper, rel=2e-4, abs=1e-9)
        _assert_same_lower_bound(bounds, point)
        assert bounds.upper - bounds.lower <= max(0.01 * bounds.upper, 1e-6)


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact ε(δ) of the Gaussian mechanism with μ = Δ/σ (Balle & Wang 2018, Thm 8)."""
    def excess(epsilon):
        return norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2) - delta
    return 0.0 if excess(0.0) <= 0 else brentq(excess, 0.0, mu * mu / 2 + 10 * mu + 10, xtol=1e-13)


@pytest.mark.parametrize("sigma, delta", [(2.0, 1e-5), (5.0, 1e-10)])
def test_curve_brackets_the_exact_gaussian_composition_at_q_one(sigma, delta):
    counts = [1, 2, 7, 40, 300]
    curve = epsilon_curve(_pair(1.0, sigma), counts, delta)
    for count, bounds in zip(counts, curve):
        exact = _gaussian_epsilon(math.sqrt(count) / sigma, delta)
        assert bounds.lower <= exact + 1e-9 <= bounds.upper + 2e-9
        assert bounds.upper - bounds.lower <= 0.01 * exact + 1e-6


def test_curve_keeps_the_order_given_and_repeated_counts():
    pair = _pair(0.01, 1.0)
    counts = [3000, 100, 3000, 1000]
    curve = epsilon_curve(pair, counts, 1e-5)
    uppers = [bounds.upper for bounds in curve]
    assert uppers[0] == uppers[2] and uppers[1] < uppers[3] < uppers[0]


def test_tabulated_slack_is_close_to_the_optimised_chernoff_slack():
    pld = discretise(_pair(0.01, 1.0), "remove", 1e-4, 12.0, LOWER)
    counts = np.array([1, 10, 1000, 100000])
    tabulated = tabulated_slacks(pld, counts, 1e-8)
    for count, slack in zip(counts.tolist(), tabulated.tolist()):
        optimised = rounding_slack([(pld, count)], 1e-8)
        # any λ gives a valid slack (the table may even find a better one than the
        # optimiser's 20 points); the two agree within 1% or h/20
        assert abs(slack - optimised) <= 0.01 * abs(optimised) + 0.05 * 1e-4
        # and never above the sure worst case: every rounding error is at most h/2
        assert slack <= count * 0.5e-4 + 1e-15


@pytest.mark.parametrize("seed", range(6))
def test_tail_read_out_equals_the_whole_curve_read_out(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(5000, 40000))
    losses = np.linspace(-3, 6, size)
    pmf = np.exp(-0.5 * ((losses - rng.uniform(0, 2)) / rng.uniform(0.3, 1.0)) ** 2)
    pmf /= pmf.sum()
    for bound in (UPPER, LOWER):
        for delta in (1e-2, 1e-5, 1e-9):
            fresh = ComposedPld(losses[1] - losses[0], int(round(losses[0] / (losses[1] - losses[0]))),
                                pmf, 1e-12, 1e-13, 1e-16)
            tail = fresh.loss_quantile(delta, bound)
            fresh._curve(bound)  # the whole curve, cached: queries read it
            whole = fresh.loss_quantile(delta, bound)
            assert tail == pytest.approx(whole, rel=1e-12, abs=1e-12)


def test_rdp_curve_is_the_point_value():
    schedules = [Schedule.single(0.01, 1.1, steps) for steps in (10, 1000, 20000)]
    curve = RdpAccountant().epsilon_curve(schedules, 1e-5)
    assert [r.epsilon for r in curve] == [RdpAccountant().epsilon(s, 1e-5).epsilon for s in schedules]


def test_mixed_schedules_keep_their_order_and_not_applicable_notes():
    schedules = [Schedule.single(0.01, 1.0, 500), Schedule.single(0.01, 1.0, 50, "fixed"),
                 Schedule.single(0.01, 1.0, 100)]
    results = PrivacyBucketsAccountant().epsilon_curve(schedules, 1e-5)
    single = [PrivacyBucketsAccountant().epsilon(s, 1e-5) for s in schedules]
    assert results[1].epsilon == single[1].epsilon  # alone in its group: the point path
    for curve_result, point in zip(results, single):
        assert curve_result.epsilon_lower <= point.epsilon and point.epsilon_lower <= curve_result.epsilon


def test_compare_epoch_sweep_reports_the_curve():
    import json

    result = CliRunner().invoke(app, ["compare", "--q", "0.01", "--sigma", "1", "--epochs", "1:20:5",
                                      "-a", "pb", "-f", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["results"]
    steps = [row["steps"] for row in rows]
    assert steps == sorted(steps) and len(steps) == 5
    for row in rows:
        point = PrivacyBucketsAccountant().epsilon(Schedule.single(0.01, 1.0, row["steps"]), 1e-5)
        assert row["epsilon_lower"] <= point.epsilon and point.epsilon_lower <= row["epsilon"]
        assert row["epsilon"] == pytest.approx(point.epsilon, rel=2e-4)


def test_an_inconsistency_on_the_curve_path_is_shown_not_recomputed(monkeypatch):
    from dpcalc.accountants import pb as pb_module
    from dpcalc.pb.buckets import InconsistentBounds
    from dpcalc.accountants.evaluate import epsilon_curves

    def broken(self, step, counts, delta):
        raise InconsistentBounds("lower above upper")

    monkeypatch.setattr(pb_module.PrivacyBucketsAccountant, "_epsilon_curve", broken)
    rows = epsilon_curves(["pb"], [Schedule.single(0.01, 1.0, n) for n in (100, 200)], 1e-5)
    for (result,) in rows:
        assert result.epsilon is None and "InconsistentBounds" in result.notes[0]


# --- the fast curve path (issue 13): per-T transform lengths, spectral and tail read-outs,
# the other direction's upper bounds from few step counts


AGREEMENT_CASES = [
    # q, σ, adjacency, step counts, δ
    (0.01, 1.0, "add-remove", [100, 700, 2500, 6000, 10000], 1e-5),
    (2e-3, 0.7, "add-remove", [500, 5000, 40000], 1e-8),  # small q, small δ: mostly the curve
    (2e-3, 0.7, "add-remove", [500, 5000, 40000], 1e-10),  # tiny δ: float noise, the point path
    (0.05, 1.5, "replace-one", [20, 400, 3000], 1e-7),
]


@pytest.mark.parametrize("q, sigma, adjacency, counts, delta", AGREEMENT_CASES)
def test_curve_agrees_with_the_point_path_on_both_bounds(q, sigma, adjacency, counts, delta):
    pair = _pair(q, sigma, "poisson", adjacency)
    curve = epsilon_curve(pair, counts, delta)
    for count, bounds in zip(counts, curve):
        point = epsilon_bounds([(pair, count)], delta)
        # certified both ways: neither lower bound above the other path's upper bound
        assert bounds.upper >= point.lower * (1 - 1e-12)
        assert bounds.lower <= point.upper * (1 + 1e-12)
        assert bounds.upper == pytest.approx(point.upper, rel=2e-4, abs=1e-9)
        _assert_same_lower_bound(bounds, point)
        assert bounds.upper - bounds.lower <= max(0.01 * bounds.upper, 1e-6)
        for direction, (upper, lower) in bounds.by_direction.items():
            point_upper, point_lower = point.by_direction[direction]
            assert upper >= point_lower * (1 - 1e-12) and lower <= point_upper * (1 + 1e-12)


def test_curve_lower_bound_stays_below_a_fine_grid_upper_bound():
    """A coarse grid, where the rounding slack η matters (issue 35): q = 0.1, σ = 1, the
    losses spread over ~900 nats at T = 1e5, so the curve's grid is h ≈ 8e-3 and η ≈ 0.92
    (the Chernoff bound of Gopi, Lee, Wutschitz 2021 on the summed mean-preserving
    rounding errors; accounting-methods.md §2). Its certified lower bound must stay below
    an independent certified upper bound: the point path's with tolerance 1e-3 (tilted
    and split passes), 899.727. Without η the curve's 'lower bound' was 899.944 (the
    `dpcalc compare --q 0.1 --sigma 1 --steps 25000,50000,100000 -a pb` of the issue)."""
    pair = _pair(0.1, 1.0)
    curve = epsilon_curve(pair, [25000, 50000, 100000], 1e-5)
    fine = epsilon_bounds([(pair, 100000)], 1e-5, tolerance=1e-3)
    assert fine.upper - fine.lower <= 1e-3 * fine.upper  # the reference is tight
    assert fine.upper == pytest.approx(899.727, abs=1e-3)
    assert curve[-1].lower <= fine.upper  # both sides: each lower below the other's upper
    assert fine.lower <= curve[-1].upper
    assert curve[-1].upper - curve[-1].lower <= 0.01 * curve[-1].upper  # not vacuous


def test_the_other_direction_is_certified_by_a_larger_step_count():
    """ε is non-decreasing in T: the add direction's upper bound may come from a T' ≥ T;
    it is then at most the remove direction's (so ε is unchanged) and still certified."""
    pair = _pair(0.01, 1.0)
    counts = [1000 + 100 * i for i in range(30)]
    curve = epsilon_curve(pair, counts, 1e-5)
    adds = [bounds.by_direction["add"][0] for bounds in curve]
    assert len(set(adds)) < len(adds)  # some points reuse a larger T's bound
    for count, bounds, add in zip(counts, curve, adds):
        assert add <= bounds.by_direction["remove"][0]
        if count in (1000, 2000, 3900):
            exact = epsilon_bounds([(pair, count)], 1e-5).by_direction["add"]
            assert add >= exact[1] * (1 - 1e-12)


def _compositions(q, sigma, bound, counts, step=1e-4, delta=1e-12):
    from dpcalc.pb.buckets import tail_half_width
    from dpcalc.pld.curve_compose import composed_powers

    pair = _pair(q, sigma)
    pld = discretise(pair, "remove", step, tail_half_width(max(counts), delta), bound)
    return list(composed_powers(pld, np.array(counts), 1e-9 * delta))


@pytest.mark.parametrize("q, sigma", [(0.01, 1.0), (0.2, 2.0), (1e-3, 0.8)])
@pytest.mark.parametrize("bound", [UPPER, LOWER])
def test_spectral_read_out_brackets_the_inverse_transform(q, sigma, bound):
    """Read from the sparse spectrum, ε is on the safe side of the plain read-out of the
    inverted spectrum (float noise ignored) and agrees with the certified read-out of the
    inverse transform."""
    from dpcalc.pld.curve_compose import Spectral
    from dpcalc.pld.tail_readout import tail_quantile

    used = 0
    for _, item in _compositions(q, sigma, bound, [300, 3000, 20000]):
        if not isinstance(item, Spectral):
            continue
        composed = item.composed()
        bare = ComposedPld(composed.grid_step, composed.offset, composed.pmf,
                           composed.infinity_mass, 0.0, 0.0)
        for delta in (1e-3, 1e-6, 1e-9):
            value = item.tail.quantile(delta, bound)
            if value is None or item.tail.noise_mass() > 0.01 * delta:
                continue
            used += 1
            plain = bare.loss_quantile(delta, bound)
            assert value >= plain - 1e-12 if bound == UPPER else value <= plain + 1e-12
            assert value == pytest.approx(tail_quantile(composed, delta, bound), rel=2e-5, abs=1e-9)
    assert used >= 3


@pytest.mark.parametrize("bound", [UPPER, LOWER])
def test_spectral_read_out_does_not_depend_on_its_hint(bound):
    """The hint only says where the search starts: none, exact, a few grid points off
    either side (the one-evaluation window around it), far off or outside the window all
    give the same ε, and the window is used where the hint is close."""
    from dpcalc.pld.curve_compose import Spectral

    checked, near_found = 0, 0
    for _, item in _compositions(0.01, 1.0, bound, [300, 3000, 20000]):
        if not isinstance(item, Spectral):
            continue
        tail = item.tail
        for delta in (1e-3, 1e-6, 1e-9):
            plain = tail.quantile(delta, bound)
            if plain is None or not math.isfinite(plain):
                continue
            step = tail.step
            for offset in (0, 1, -1, 3, -4, 5, -9, 60, -300, 1e6, -1e6):
                hinted = tail.quantile(delta, bound, plain + offset * step)
                assert hinted == plain, (delta, offset, hinted, plain)
                checked += 1
            searched = delta + tail.window_mass if bound == LOWER else delta  # as quantile
            near_found += tail._near_hint(searched, bound, plain, tail.points - 2) is not None
    assert checked >= 3 * 11
    assert near_found >= 3  # the window found the crossing next to an exact hint


@pytest.mark.parametrize("bound", [UPPER, LOWER])
def test_spectral_read_out_never_trusts_a_nan_bound(bound):
    """Review finding: where no candidate of a narrowing round was shown ≤ δ, the search
    took the last candidate as shown > δ without looking; a NaN there gave an answer no
    bound supports. With every point but the bracket's ends NaN, it now declines (the caller
    inverts the spectrum)."""
    from dpcalc.pld.curve_compose import Spectral

    declined = 0
    for _, item in _compositions(0.01, 1.0, bound, [300, 3000]):
        if not isinstance(item, Spectral):
            continue
        tail = item.tail
        real = type(tail)._at_grid
        ends = {0, tail.points - 2}

        def poisoned(grid, bound_, with_error=False, real=real, tail=tail):
            found = list(real(tail, grid, bound_, with_error))
            found[0] = np.where(np.isin(grid, list(ends)), found[0], np.nan)
            return tuple(found)

        tail._at_grid = poisoned
        for delta in (1e-3, 1e-6):
            assert tail.quantile(delta, bound) is None
            declined += 1
    assert declined >= 2


@pytest.mark.parametrize("bound", [UPPER, LOWER])
def test_tail_quantile_equals_loss_quantile(bound):
    from dpcalc.pld.tail_readout import tail_quantile

    for _, item in _compositions(0.02, 1.2, bound, [2, 50, 800], step=2e-4, delta=1e-8):
        composed = item.composed() if hasattr(item, "composed") else item
        for delta in (1e-2, 1e-5, 1e-8):
            fresh = ComposedPld(composed.grid_step, composed.offset, composed.pmf,
                                composed.infinity_mass, composed.window_mass, composed.noise_floor)
            assert tail_quantile(composed, delta, bound) == pytest.approx(
                fresh.loss_quantile(delta, bound), rel=1e-10, abs=1e-12)


def test_shorter_transforms_compose_as_the_point_path():
    """A T read on N/2^i points of one length-N transform is the composition fft_compose
    computes on its own transform (same masses up to the float-error floors)."""
    from dpcalc.pld.curve_compose import Spectral
    from dpcalc.pld.fft_compose import compose

    pair = _pair(0.01, 1.0)
    pld = discretise(pair, "remove", 1e-4, 12.0, UPPER)
    from dpcalc.pld.curve_compose import composed_powers

    counts = [2, 40, 400, 4000]
    for position, item in composed_powers(pld, np.array(counts), 1e-14):
        curve_pld = item.composed() if isinstance(item, Spectral) else item
        point_pld = compose([(pld, counts[position])], 1e-14)
        shift = curve_pld.offset - point_pld.offset
        lo, hi = max(0, -shift), min(curve_pld.pmf.size, point_pld.pmf.size - shift)
        ours, theirs = curve_pld.pmf[lo:hi], point_pld.pmf[lo + shift:hi + shift]
        floors = np.max(curve_pld.noise_floor) + np.max(point_pld.noise_floor)
        assert np.max(np.abs(ours - theirs)) <= floors
