"""The split pass before any plain composition (grid_passes._split_first): where it runs,
that its bounds are those the plain-first order certifies, and what follows when it does
not settle a direction."""
from __future__ import annotations

import math

import pytest

from dpcalc.pb import buckets
from dpcalc.pb import direction_pass
from dpcalc.pb import grid_passes
from dpcalc.pb.buckets import epsilon_bounds, schedule_phases
from dpcalc.pld.discretise import discretise
from dpcalc.pb.first_grid import initial_grid_step, tail_half_width
from dpcalc.pld.pld import UPPER
from dpcalc.accountants.rdp_accountants import RdpAccountant
from dpcalc.models.schedule import Schedule
from dpcalc.pld.tilt import tilt_onto

pytestmark = pytest.mark.deep  # oracle sweeps: `python -m pytest -m deep` (CI runs them)

# issue 13's small-q point, and a cheaper one of the same regime
SMALL_Q = [(1e-6, 0.3, 10_000_000, 1e-12), (3e-6, 0.35, 3_000_000, 1e-11)]


def _upper_steps(q: float, sigma: float, steps: int, delta: float, direction: str):
    phases = schedule_phases(Schedule.single(q, sigma, steps))
    half_width = tail_half_width(steps, delta)
    step = initial_grid_step(phases, None, half_width, direction)
    return [(discretise(pair, direction, step, half_width, UPPER), count) for pair, count in phases]


def test_a_gaussian_loss_keeps_its_spread_under_any_tilt():
    # q = 1: one step's loss is N(μ, 2μ) with μ = 1/(2σ²); an exponential tilt of a normal
    # law moves its mean only (Λ(θ) = θμ + θ²μ), so the ratio is 1 whatever the target.
    # Its Chernoff rate is then (target − Tμ)²/(4Tμ) (Λ(θ) = T(θμ + θ²μ)).
    upper = _upper_steps(1.0, 1.0, 100, 1e-5, "remove")
    for target in (60.0, 80.0, 120.0):
        ratio, rate = tilt_onto(upper, target)
        assert ratio == pytest.approx(1.0, rel=1e-2)
        assert rate == pytest.approx((target - 50.0) ** 2 / 200.0, rel=1e-2)


@pytest.mark.parametrize("q, sigma, steps, delta, direction, first", [
    (1e-6, 0.3, 10_000_000, 1e-12, "remove", True),   # rare large losses: spread 22, rate 0.95
    (1e-4, 0.6, 1_000_000, 1e-10, "remove", True),    # spread 12.5, rate 0.88
    (1e-6, 0.3, 10_000_000, 1e-12, "add", False),     # losses bounded above: spread < 1
    (0.01, 1.0, 10_000, 1e-12, "remove", False),      # spread 1.3: plain and tilt serve
    (1e-3, 1.0, 100_000, 1e-12, "remove", False),     # spread 4.6
    (1e-6, 1.0, 1_000_000, 1e-12, "remove", False),   # spread 203 but rate 25·ln(1/δ): rdp
    (3.75e-5, 0.924, 9_796_627, 4.1e-12, "remove", False),  # is far above ε; rate 1.24
])
def test_the_split_goes_first_only_in_the_rare_jump_regime_with_a_close_hint(q, sigma, steps,
                                                                            delta, direction,
                                                                            first):
    hint = RdpAccountant().epsilon(Schedule.single(q, sigma, steps), delta).epsilon
    spread, rate = tilt_onto(_upper_steps(q, sigma, steps, delta, direction), hint)
    chosen = (spread >= grid_passes._SPLIT_FIRST_SPREAD
              and rate <= grid_passes._CLOSE_HINT_RATE * math.log(1.0 / delta))
    assert chosen is first


def _bounds(q, sigma, steps, delta):
    schedule = Schedule.single(q, sigma, steps)
    hint = RdpAccountant().epsilon(schedule, delta).epsilon
    return epsilon_bounds(schedule_phases(schedule), delta, epsilon_hint=hint)


def _recording_plain_compositions(monkeypatch) -> list[str]:
    composed = []
    original = direction_pass.direction_bounds

    def recorded(phases, direction, *args, **kwargs):
        composed.append(direction)
        return original(phases, direction, *args, **kwargs)

    monkeypatch.setattr(direction_pass, "direction_bounds", recorded)
    return composed


@pytest.mark.parametrize("q, sigma, steps, delta", SMALL_Q)
def test_split_first_skips_the_plain_composition_and_keeps_the_bounds(monkeypatch, q, sigma,
                                                                      steps, delta):
    composed = _recording_plain_compositions(monkeypatch)
    first = _bounds(q, sigma, steps, delta)
    assert composed == ["add"]  # the remove direction was settled by its split pass alone
    assert buckets.settled(first.by_direction["remove"], buckets.DEFAULT_TOLERANCE)
    # the plain-first order (the split pass never first): both are certified intervals for
    # the same ε, so each lower bound is below the other's upper; the split aims and starts
    # its windows differently (the hint, ε ≥ 0), which moves the bounds by ~1e-9 here
    monkeypatch.setattr(grid_passes, "_SPLIT_FIRST_SPREAD", math.inf)
    composed.clear()
    plain_first = _bounds(q, sigma, steps, delta)
    assert composed == ["remove", "add"]
    assert first.lower <= plain_first.upper and plain_first.lower <= first.upper
    assert first.upper == pytest.approx(plain_first.upper, rel=1e-7)
    assert first.lower == pytest.approx(plain_first.lower, rel=1e-4)
    assert first.by_direction["add"] == plain_first.by_direction["add"]


def test_an_unsettled_split_first_is_followed_by_the_plain_order(monkeypatch):
    q, sigma, steps, delta = SMALL_Q[1]
    monkeypatch.setattr(grid_passes, "_SPLIT_FIRST_SPREAD", math.inf)
    plain_first = _bounds(q, sigma, steps, delta)
    monkeypatch.undo()
    # the split pass first, treated as not settling: the plain pass follows, then the later
    # passes (aimed from the tighter bounds in hand), and the reported bounds are the
    # tightest of all: certified intervals for the same ε as the plain-first order's
    monkeypatch.setattr(direction_pass, "settled", lambda bounds, tolerance: False)
    composed = _recording_plain_compositions(monkeypatch)
    both = _bounds(q, sigma, steps, delta)
    assert composed == ["remove", "add"]
    assert both.lower <= plain_first.upper and plain_first.lower <= both.upper
    assert both.upper == pytest.approx(plain_first.upper, rel=1e-7)
    assert both.lower == pytest.approx(plain_first.lower, rel=1e-4)


def test_without_a_hint_the_plain_pass_goes_first(monkeypatch):
    q, sigma, steps, delta = SMALL_Q[1]
    composed = _recording_plain_compositions(monkeypatch)
    bounds = epsilon_bounds(schedule_phases(Schedule.single(q, sigma, steps)), delta)
    assert composed[:2] == ["remove", "add"]
    assert math.isfinite(bounds.upper) and bounds.lower > 0


# q = 1e-6, σ = 1, T = 1e7, δ = 1e-12: ε ≈ 0.0247 where rdp's bound (the hint) is 0.899
LOOSE_HINT = (1e-6, 1.0, 10_000_000, 1e-12)


def _split(target: float, loose_aim: float = 0.0):
    from dpcalc.pld import jumps
    from dpcalc.pb.first_grid import TAIL_FRACTION

    q, sigma, steps, delta = LOOSE_HINT
    phases = schedule_phases(Schedule.single(q, sigma, steps))
    half_width = tail_half_width(steps, delta)
    return jumps.split_bounds(phases, "remove", delta, buckets._LOWER_FAILURE * delta,
                              TAIL_FRACTION * delta, half_width,
                              _upper_steps(q, sigma, steps, delta, "remove"), target, 0.0,
                              buckets.DEFAULT_TOLERANCE, loose_aim)


def test_a_loose_aim_is_aimed_again_until_the_lower_bound_is_aimed_where_the_upper_landed():
    """Review finding: aimed at the hint (36× the answer), the upper composition was aimed
    again once (0.091 → 0.026) but the lower one kept the first re-aim's grids, aimed at
    0.091, and gave no lower bound (0.0). The upper is now aimed again while it lands below
    half its aim, and the lower at the last upper."""
    q, sigma, steps, delta = LOOSE_HINT
    hint = RdpAccountant().epsilon(Schedule.single(q, sigma, steps), delta).epsilon
    assert hint > 30 * 0.0247
    aimed_close = _split(0.0247)
    loose = _split(hint)
    assert loose[1] > 0.98 * aimed_close[1] > 0  # a lower bound as good as a close aim's
    assert loose[1] <= aimed_close[0] and aimed_close[1] <= loose[0]
    assert loose[0] <= 1.06 * aimed_close[0]


def test_a_loose_hint_is_left_to_the_plain_first_order(monkeypatch):
    """rdp's 0.899 where ε ≈ 0.0247: the split pass stops after its first upper composition
    when asked to (loose_aim), and the run takes the plain-first order's bounds."""
    q, sigma, steps, delta = LOOSE_HINT
    hint = RdpAccountant().epsilon(Schedule.single(q, sigma, steps), delta).epsilon
    upper, lower = _split(hint, grid_passes._LOOSE_HINT)
    assert lower == 0.0 and upper < grid_passes._LOOSE_HINT * hint  # the first upper, alone
    composed = _recording_plain_compositions(monkeypatch)
    given_up = _bounds(q, sigma, steps, delta)
    assert composed[:2] == ["remove", "add"]  # the plain-first order followed
    monkeypatch.setattr(grid_passes, "_SPLIT_FIRST_SPREAD", math.inf)
    plain_first = _bounds(q, sigma, steps, delta)
    assert (given_up.upper, given_up.lower) == (plain_first.upper, plain_first.lower)


def test_a_lower_composition_that_never_fits_keeps_the_upper_bound(monkeypatch):
    """Review finding: where the lower composition failed (None: its grids never fit), the
    certified upper bound in hand was dropped with it."""
    from dpcalc.pld import jumps
    from dpcalc.pld.pld import LOWER

    q, sigma, steps, delta = LOOSE_HINT
    both = _split(0.0247)
    original = jumps._compose_split
    monkeypatch.setattr(jumps, "_compose_split", lambda phases, direction, bound, *rest: (
        None if bound == LOWER else original(phases, direction, bound, *rest)))
    assert _split(0.0247) == (both[0], 0.0)
