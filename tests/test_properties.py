"""Property tests: monotonicity, finiteness, and bad input → exit 2 with one line."""
from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcalc.accountants.registry import accountant_names, get_accountant
from dpcalc.models.schedule import Schedule
from dpcalc.cli.app import main

FAST = [name for name in accountant_names() if name != "pb"]
# q and δ on log scales: a uniform draw would almost never reach small values.
rates = st.floats(-5.0, 0.0).map(lambda exponent: 10.0**exponent)
sigmas = st.floats(0.5, 50.0)
step_counts = st.integers(1, 100_000)
deltas = st.floats(-10.0, -1.0).map(lambda exponent: 10.0**exponent)
SLACK = 1e-9


def eps(name, q, sigma, steps, delta):
    return get_accountant(name).epsilon(Schedule.single(q, sigma, steps), delta).epsilon


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(FAST), q=rates, sigma=sigmas, steps=step_counts, delta=deltas)
def test_every_accountant_finite_and_nonnegative(name, q, sigma, steps, delta):
    value = eps(name, q, sigma, steps, delta)
    assert value is None or (value >= 0 and not math.isnan(value))


@settings(max_examples=15, deadline=None)
@given(q=st.floats(-4.0, 0.0).map(lambda e: 10.0**e), sigma=st.floats(0.6, 20.0),
       steps=st.integers(1, 20_000), delta=st.floats(-9.0, -1.3).map(lambda e: 10.0**e))
def test_pb_finite_nonnegative_and_bracketed(q, sigma, steps, delta):
    result = get_accountant("pb").epsilon(Schedule.single(q, sigma, steps), delta)
    assert math.isfinite(result.epsilon) and 0 <= result.epsilon_lower <= result.epsilon


def _monotone(name, q, sigma, steps, delta, factor, field):
    base = dict(q=q, sigma=sigma, steps=steps, delta=delta)
    bigger = dict(base)
    bigger[field] = min(base[field] * factor, 1.0) if field == "q" else base[field] * factor
    if field == "steps":
        bigger[field] = int(math.ceil(bigger[field]))
    return eps(name, **base), eps(name, **bigger)


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(["pb", "rdp", "moments", "strong"]),
       q=st.floats(-3.0, math.log10(0.5)).map(lambda e: 10.0**e),
       sigma=st.floats(0.7, 10.0), steps=st.integers(1, 5_000),
       delta=st.floats(-8.0, -3.0).map(lambda e: 10.0**e),
       field=st.sampled_from(["steps", "q", "sigma", "delta"]))
def test_epsilon_rises_with_steps_and_q_and_falls_with_sigma_and_delta(name, q, sigma, steps, delta, field):
    low, high = _monotone(name, q, sigma, steps, delta, 2.0, field)
    tolerance = SLACK * max(1.0, abs(low)) + (2e-3 * abs(low) if name == "pb" else 0.0)
    if field in ("steps", "q"):
        assert high >= low - tolerance
    else:
        assert high <= low + tolerance


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # capsys is drained per example
@given(flag=st.sampled_from(["--q", "--sigma", "--steps", "--delta", "--epochs", "--tolerance",
                             "--max-epsilon"]),
       value=st.one_of(st.text(max_size=8), st.sampled_from(["nan", "inf", "-inf", "-1", "0", "1e999",
                                                            "2", "-0", "1e-400"])))
def test_bad_values_exit_two_with_one_line(flag, value, capsys):
    args = {"--q": "0.01", "--sigma": "4", "--steps": "100", "--delta": "1e-5"}
    if flag == "--epochs":
        args.pop("--steps")
    args[flag] = value
    argv = ["epsilon", *[item for pair in args.items() for item in pair], "--format", "plain"]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    captured = capsys.readouterr()
    if exit_info.value.code == 0:  # the value happened to be valid for that flag
        return
    assert exit_info.value.code in (1, 2)
    if exit_info.value.code == 2:
        assert captured.err.count("\n") == 1 and captured.err.startswith("dpcalc: error:")
        assert captured.out == ""
