"""Memory and time bounds on every accepted input (issue 30 §3).

The held-out cases each run in a subprocess with its peak resident set measured
(tests/memory_probe.py): under 2 GiB, a certified answer (finite upper ≥ lower ≥ 0), never
the internal-error exit 70 or a MemoryError."""
from __future__ import annotations

import json
import math
import random
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcalc import Schedule, worst_case
from dpcalc.pld.jump_step import COARSE_POINTS, CoarseTooLarge, SplitGrids, split_step
from dpcalc.pld.pld import UPPER
from tests.memory_probe import PEAK_LIMIT, measure_dpcalc, measure_python, random_invocation

pytestmark = pytest.mark.deep  # oracle sweeps: `python -m pytest -m deep` (CI runs them)


def test_a_jump_grid_beyond_the_coarse_window_is_refused_before_it_is_built():
    # q = 1e-8, σ = 0.1: one step's loss reaches ~332; at a coarse step of 1e-6 its jump grid
    # would be 3.3e8 points (2.5 GiB per array) — refused at the size, nothing allocated
    pair = worst_case(Schedule.single(1e-8, 0.1, 1000).phases[0]).pair
    tracemalloc.start()
    try:
        with pytest.raises(CoarseTooLarge) as refused:
            split_step(pair, "remove", UPPER, SplitGrids(1e-6, 1, 1), 30.0, 1000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refused.value.points_needed > COARSE_POINTS
    assert abs(refused.value.points_needed - 331.58 / 1e-6) < 0.01 * 331.58 / 1e-6
    assert peak < 1 << 20


def _certified(row: dict) -> tuple[float, float]:
    upper, lower = row["epsilon"], row["epsilon_lower"]
    assert upper is not None and math.isfinite(upper), row
    assert 0.0 <= lower <= upper, row
    return upper, lower


# (argv, the largest ε upper bound the answer may have): the split pass (jumps.py) used to
# build a jump grid of ~2e9 points at these q (14 GiB; MemoryError, exit 70)
# (--delta 1e-6: at δ = 1e-5 the record is drawn with probability ≤ δ and ε = 0 needs no grid)
SMALL_Q_EPSILON = [
    (["--q", "1e-8", "--sigma", "0.1", "--steps", "1000", "--delta", "1e-6"], math.inf),
    # tight before the fix when memory allowed (0.0031972 / 0.0031672)
    (["--q", "3e-9", "--sigma", "0.3", "--steps", "1000000"], 0.0033),
]


@pytest.mark.parametrize("args,at_most", SMALL_Q_EPSILON)
def test_small_q_epsilon_answers_within_the_memory_goal(args, at_most):
    run = measure_dpcalc("epsilon", *args, "-a", "pb", "--format", "json")
    assert run["code"] == 0, run["stderr"]
    assert run["peak"] < PEAK_LIMIT, run["peak"]
    (row,) = json.loads(run["stdout"])["results"]
    upper, _ = _certified(row)
    assert upper <= at_most


# the pb evaluations the σ searches of the held-out `sigma` cases make (sigma -e 1 --q 1e-8
# --steps 1000: MemoryError; --q 1e-9 --steps 1000000: 2.8 GB; --q 1e-7 --steps 1000: 1.1 GB)
@pytest.mark.parametrize("q,sigma,steps", [(1e-8, 0.1, 1000), (1e-8, 0.03, 1000),
                                           (1e-9, 0.1, 1_000_000), (1e-7, 0.1, 1000)])
def test_small_q_epsilon_from_the_library_within_the_memory_goal(q, sigma, steps):
    code = ("import json; from dpcalc import Schedule, get_accountant\n"
            f"r = get_accountant('pb').epsilon(Schedule.single({q!r}, {sigma!r}, {steps!r}), 1e-6)\n"
            "print(json.dumps([r.epsilon, r.epsilon_lower]))")
    run = measure_python(code)
    assert run["code"] == 0, run["stderr"]
    assert run["peak"] < PEAK_LIMIT, run["peak"]
    upper, lower = json.loads(run["stdout"])
    assert math.isfinite(upper) and 0.0 <= lower <= upper


# --- sweeps beyond the documented size: a stated refusal, before any work -------------
@pytest.mark.parametrize("argv,flag,work", [
    # held-out: > 120 s with no refusal
    (["--q", "0.01", "--sigma", "0.5:4:1000", "--steps", "10000", "-a", "pb"], "--sigma", 1000),
    # held-out: 55 s (strong composition's 1000 searches, pb's 1000 read-outs)
    (["--q", "0.01", "--sigma", "4", "--steps", "1:1000000:1000"], "--steps", 2000),
    (["--q", "1e-4:0.1:log201", "--sigma", "1", "--steps", "100", "-a", "strong"], "--q", 201),
])
def test_a_sweep_beyond_the_limit_is_refused_in_one_line_saying_how_to_raise_it(argv, flag, work):
    from tests.conftest import run_dpcalc

    done = run_dpcalc("compare", *argv, timeout=30)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and done.stdout == ""
    assert line.startswith(f"dpcalc: error: {flag} sweeps")
    assert "--max-sweep-points 200" in line and f"--max-sweep-points {work} to run it" in line


def test_the_sweep_limit_counts_slow_accountants_only_and_can_be_raised():
    from dpcalc.cli.compare.sweep import SLOW_SWEEP_POINTS, build_sweep, check_sweep_work
    from dpcalc.errors import DpcalcError

    sweep = build_sweep("0.01", None, None, "4", "1:1000000:1000", None)
    assert check_sweep_work(sweep, ["rdp", "gdp", "naive"], None) == 0  # cheap: no limit
    with pytest.raises(DpcalcError, match="--max-sweep-points 200"):
        check_sweep_work(sweep, ["pb", "rdp"], None)
    assert check_sweep_work(sweep, ["pb", "rdp"], "1000") == 1000
    small = build_sweep("0.01", None, None, "4", f"1:1000:{SLOW_SWEEP_POINTS // 2}", None)
    assert check_sweep_work(small, ["pb", "strong"], None) == SLOW_SWEEP_POINTS  # at the limit
    with pytest.raises(DpcalcError, match="--max-sweep-points must be a whole number from 1"):
        check_sweep_work(small, ["pb"], "0")


# --- the property: any valid input, peak RSS < 2 GiB and never the internal-error exit ---
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_random_valid_inputs_stay_within_memory_and_never_exit_70(seed):
    # each run is stopped after _PROPERTY_SECONDS (its peak so far still counts): time is
    # bench_slowest.py's measure, memory and the exit code this test's
    argv = random_invocation(random.Random(seed))
    run = measure_dpcalc(*argv, stop_after=_PROPERTY_SECONDS)
    assert run["peak"] < PEAK_LIMIT, (argv, run["peak"])
    assert run["code"] in (0, 1, 2, "timeout"), (argv, run["code"], run["stderr"][-500:])
    assert "Traceback" not in run["stderr"] and "MemoryError" not in run["stderr"], argv


_PROPERTY_SECONDS = 12.0


def test_one_step_wider_than_the_fft_cap_is_refused_at_its_size_and_compose_fitting_coarsens():
    from dpcalc.pb.direction_pass import compose_fitting
    from dpcalc.pld.discretise import discretise
    from dpcalc.pld.pld import MAX_FFT_POINTS, GridTooLarge

    pair = worst_case(Schedule.single(0.01, 1.0, 10).phases[0]).pair
    low, high = pair.loss_range("remove", 10.0)
    fine = (high - low) / (4 * MAX_FFT_POINTS)  # 4 × the cap: 16 Mi points, 128 MiB an array
    tracemalloc.start()
    try:
        with pytest.raises(GridTooLarge) as refused:
            discretise(pair, "remove", fine, 10.0, UPPER)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refused.value.points_needed > 3 * MAX_FFT_POINTS and peak < 1 << 20
    composed, plds, step = compose_fitting([(pair, 10)], "remove", fine, UPPER, 10.0, 1e-14)
    assert step > 3 * fine and plds[0][0].points <= MAX_FFT_POINTS
    # the coarser grid's bound is still an upper bound: at least the certified lower bound
    # of the same direction on pb's own grids
    from dpcalc.pb.buckets import epsilon_bounds

    lower = epsilon_bounds([(pair, 10)], 1e-5).by_direction["remove"][1]
    assert composed.epsilon(1e-5, UPPER) >= lower > 0
