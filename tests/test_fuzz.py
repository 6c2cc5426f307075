"""Fuzzing the CLI grammar and the public library: every input gives a valid result or one
clean error — exit 2 with one line naming the problem on the CLI, DpcalcError in the library
— never a traceback, NaN, silent inf or another exception type."""
from __future__ import annotations

import math

import numpy as np
import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcalc.cli.app import app, main
from dpcalc.errors import DpcalcError

pytestmark = pytest.mark.deep  # oracle sweeps: `python -m pytest -m deep` (CI runs them)

# A valid, cheap run of each command; the fuzzer replaces or adds options.
BASE = {
    "epsilon": {"--q": "0.01", "--sigma": "2", "--steps": "100"},
    "sigma": {"--epsilon": "2", "--q": "0.01", "--steps": "100", "-a": "rdp"},
    "compare": {"--q": "0.01", "--sigma": "2", "--steps": "100", "-a": "rdp,gdp"},
    "group": {"--k": "2", "--batch-size": "10", "--dataset-size": "1000", "--sigma": "2",
              "--steps": "50", "--method": "rdp-overapprox"},
    "simulate": {"--samples": "60", "--features": "2", "--classes": "2", "--epochs": "1",
                 "--batch-size": "20"},
}
SKIP = {"--plot", "--plot-kind", "--data", "--label", "--help", "-h", "--version"}


def _options(command: str) -> list[str]:
    group = typer.main.get_command(app)
    names = []
    for param in group.commands[command].params:
        spellings = [n for n in getattr(param, "opts", []) if n.startswith("--")]
        if spellings and not getattr(param, "is_flag", False) and spellings[0] not in SKIP:
            names.append(spellings[0])
    return names


VALUES = st.one_of(
    st.sampled_from(["0", "-1", "1", "2", "0.5", "1e-5", "1e308", "-1e308", "1e-320", "1e-300",
                     "nan", "inf", "-inf", "", " ", ",", ":", "1:2", "1,2", "1:10:log3", "1_000",
                     "١٢", "0x10", "1e999", "poisson", "fixed", "replace-one", "all", "pb", "x" * 500,
                     "q=0.1,sigma=1,steps=5", "q=,sigma=", "10000000000"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-10**12, 10**12).map(str),
    st.text(max_size=12),
)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_every_command_answers_or_fails_with_one_line(data, capsys):
    command = data.draw(st.sampled_from(sorted(BASE)))
    args = dict(BASE[command])
    for option in data.draw(st.lists(st.sampled_from(_options(command)), min_size=1, max_size=3,
                                     unique=True)):
        args.pop(option, None)
        if data.draw(st.booleans()) or option not in BASE[command]:
            args[option] = data.draw(VALUES)
    argv = [command, *[item for pair in args.items() for item in pair], "--format", "plain"]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    captured = capsys.readouterr()
    code = stop.value.code
    assert code in (0, 1, 2), (argv, captured.err)
    assert "Traceback" not in captured.err
    if code == 2:
        assert captured.out == "", argv
        assert captured.err.count("\n") == 1 and captured.err.startswith("dpcalc: error: "), argv
        assert len(captured.err) < 500
    else:
        for line in captured.out.split():
            assert line == "n/a" or line == "inf" or math.isfinite(float(line)), (argv, line)


# --- the library ------------------------------------------------------------------------
def _finite_or_none(value) -> bool:
    if value is None:
        return True
    if isinstance(value, (list, tuple, np.ndarray)):
        return all(_finite_or_none(item) for item in np.ravel(value))
    return not math.isnan(float(value))


NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**10, 10**10),
                    st.sampled_from([None, True, "1", "x", [], 1e-320, 1e308, 0.0, -0.0]))


def _library_calls():
    import dpcalc
    from dpcalc.pb.buckets import delta_bounds, epsilon_bounds, schedule_phases

    def schedule(q, sigma, steps):
        return dpcalc.Schedule.single(q, sigma, steps)

    return {
        "pb": lambda a, b, c, d: dpcalc.get_accountant("pb").epsilon(schedule(a, b, c), d).epsilon,
        "rdp": lambda a, b, c, d: dpcalc.get_accountant("rdp").epsilon(schedule(a, b, c), d).epsilon,
        "strong.delta": lambda a, b, c, d: dpcalc.get_accountant("strong").delta(schedule(a, b, c), d),
        "epsilon_bounds": lambda a, b, c, d: epsilon_bounds(
            schedule_phases(schedule(0.01, 2.0, 10)), a, grid_step=b).upper,
        "delta_bounds": lambda a, b, c, d: delta_bounds(schedule_phases(schedule(0.01, 2.0, 10)), a,
                                                        grid_step=b).upper,
        "gaussian_delta": lambda a, b, c, d: dpcalc.gaussian_delta(a, b),
        "gaussian_epsilon": lambda a, b, c, d: dpcalc.gaussian_epsilon(a, b),
        "analytic_sigma": lambda a, b, c, d: dpcalc.analytic_gaussian_sigma(a, b),
        "rdp_curve": lambda a, b, c, d: dpcalc.rdp_subsampled_gaussian(a, b, [1.5, 2.0, c]),
        "amplify": lambda a, b, c, d: dpcalc.amplify_poisson(a, b, c),
        "poisson_weights": lambda a, b, c, d: dpcalc.poisson_weights(a, b),
        "hypergeometric": lambda a, b, c, d: dpcalc.hypergeometric_weights(a, b, c),
        "kairouz": lambda a, b, c, d: dpcalc.compose_kairouz(a, b, c, d),
        "mixture": lambda a, b, c, d: dpcalc.GaussianMixturePair([a, b], c).loss(0.0),
        "phase": lambda a, b, c, d: dpcalc.Phase(a, b, c).sampling_rate,
        "dpsgd_sigma": lambda a, b, c, d: dpcalc.dpsgd_sigma("rdp", a, b, c, d).sigma,
        "group": lambda a, b, c, d: dpcalc.GroupSetting(a, 10, 1000, b, c).sampling_rate,
        "adaptive": lambda a, b, c, d: dpcalc.adaptive_clipping_noise_multiplier(a, b),
    }


CALLS = _library_calls()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(CALLS)), a=NUMBERS, b=NUMBERS, c=NUMBERS, d=NUMBERS)
def test_public_functions_raise_dpcalc_error_or_return_finite_values(name, a, b, c, d):
    try:
        value = CALLS[name](a, b, c, d)
    except DpcalcError:
        return
    assert _finite_or_none(value), (name, a, b, c, d, value)
