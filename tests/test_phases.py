"""Runs of many distinct phases (issue 32): the composition without a full-circle transform
per phase (pld/compact.py, phase_batch.py, phase_spectra.py), the incremental accountant
(pb/incremental.py), --schedule files and the multiplier calibration.

Oracles: the phase-by-phase path (fft_compose.compose over dense one-step PLDs, pb before
issue 32: forced here with MIN_PHASES), the exact DTFT of each pmf in long double, the plain
sums over the dense pmf, and dp_accounting's PLD composition of the same events.
"""
from __future__ import annotations

import json
import math
import os
import random

import numpy as np
import pytest

from dpcalc import DpcalcError, PrivacyAccountant
from dpcalc.accountants.pb import PrivacyBucketsAccountant
from dpcalc.calibration.dpsgd import dpsgd_sigma
from dpcalc.cli.output.numbers import show_lower, show_upper
from dpcalc.models.schedule import Phase, Schedule
from dpcalc.pipelines.schedule_file import schedule_from_file
from dpcalc.numerics import fourier
from dpcalc.pb import direction_pass
from dpcalc.pb.buckets import schedule_phases
from dpcalc.pb.incremental import RunningBounds
from dpcalc.pld.compact import discretise_compact
from dpcalc.pld.phase_batch import PhaseBatch
from dpcalc.pld.phase_spectra import _series_terms, low_spectra
from dpcalc.pld.pld import LOWER, UPPER

from conftest import run_dpcalc

DELTA = 1e-5


def _schedule(seed: int, most: int = 200, costly: int = 6) -> Schedule:
    """A seeded random run: 2–``most`` phases (log-uniform), one sampler and adjacency
    drawn from all that compose per step; fixed and truncated Poisson (pairs without the
    batched path, and a second composition for their explicit lower-bound run) at most
    ``costly`` phases."""
    rng = random.Random(seed)
    sampling = rng.choice(["poisson", "poisson", "fixed", "truncated-poisson"])
    adjacency = rng.choice(["add-remove", "replace-one", "zero-out"])
    top = most if sampling == "poisson" else costly
    count = int(round(math.exp(rng.uniform(math.log(2), math.log(top)))))
    phases = []
    for _ in range(count):
        q, sigma, steps = rng.uniform(0.002, 0.03), rng.uniform(1.2, 3.5), rng.randint(5, 100)
        if sampling == "truncated-poisson":
            batch = max(2, round(q * 20_000))
            phases.append(Phase(None, sigma, steps, sampling, adjacency, batch, 20_000,
                                max_batch_size=int(batch * 1.3)))
        else:
            phases.append(Phase(q, sigma, steps, sampling, adjacency))
    return Schedule(tuple(phases))


def _printed(result) -> tuple[str, str]:
    return show_upper(result.epsilon), show_lower(result.epsilon_lower)


def _phase_by_phase(schedule: Schedule, monkeypatch):
    """pb as before issue 32: dense one-step PLDs, each transformed on the whole circle."""
    with monkeypatch.context() as patch:
        patch.setattr(direction_pass, "MIN_PHASES", 10**9)
        return PrivacyBucketsAccountant().epsilon(schedule, DELTA)


def _check_parity(seeds, most, monkeypatch, costly: int = 6) -> None:
    equal = 0
    for seed in seeds:
        schedule = _schedule(seed, most, costly)
        new, old = PrivacyBucketsAccountant().epsilon(schedule, DELTA), _phase_by_phase(schedule, monkeypatch)
        (new_upper, new_lower), (old_upper, old_lower) = _printed(new), _printed(old)
        where = f"seed {seed}: {len(schedule.phases)} phases, {schedule.phases[0].model}"
        # same or tighter, to the printed digit: upper never above, lower never below
        assert float(new_upper) <= float(old_upper), (where, new_upper, old_upper)
        assert float(new_lower) >= float(old_lower), (where, new_lower, old_lower)
        # and within float noise of the old bounds (the digits differ only at a rounding edge)
        assert new.epsilon == pytest.approx(old.epsilon, rel=1e-6), where
        assert new.epsilon_lower == pytest.approx(old.epsilon_lower, rel=1e-6), where
        equal += (new_upper, new_lower) == (old_upper, old_lower)
    assert equal >= len(seeds) - max(1, len(seeds) // 20)  # tighter by a digit: rare


@pytest.mark.parametrize("first", range(0, 30, 5))
@pytest.mark.deep  # an oracle sweep (CI: python -m pytest -m deep)
def test_many_phases_give_the_phase_by_phase_digits(first, monkeypatch):
    """30 seeded runs (6 × 5) of 2–200 phases over every per-step sampler and adjacency
    (short, wide-noise phases: the old path's cost keeps the 30 at ~1 min of CPU): the
    printed bounds (5 significant digits, rounded outward) are the phase-by-phase path's,
    or tighter."""
    _check_parity(range(first, first + 5), 200, monkeypatch)


@pytest.mark.skipif(not os.environ.get("DPCALC_SLOW"), reason="long sweep: DPCALC_SLOW=1")
def test_many_phases_give_the_phase_by_phase_digits_long_sweep(monkeypatch):
    """The same on 100 more seeds, fixed and truncated Poisson up to 40 phases (about half an
    hour: set DPCALC_SLOW=1)."""
    _check_parity(range(100, 200), 200, monkeypatch, costly=40)


def _dp_accounting_epsilon(schedule: Schedule, pessimistic: bool) -> float:
    from dp_accounting.pld import privacy_loss_distribution

    composed = None
    for phase in schedule.phases:
        pld = privacy_loss_distribution.from_gaussian_mechanism(
            standard_deviation=phase.noise_multiplier, sampling_prob=phase.sampling_rate,
            pessimistic_estimate=pessimistic, value_discretization_interval=1e-4,
            use_connect_dots=pessimistic).self_compose(phase.steps)
        composed = pld if composed is None else composed.compose(pld)
    return composed.get_epsilon_for_delta(DELTA)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.deep  # an oracle sweep (CI: python -m pytest -m deep)
def test_both_bounds_bracket_dp_accountings_composition(seed):
    """Poisson, add/remove, 3–25 distinct phases: dp_accounting's pessimistic (connect-the-
    dots) ε ≥ our certified lower bound, its optimistic one ≤ our certified upper bound."""
    rng = random.Random(seed)
    schedule = Schedule(tuple(Phase(rng.uniform(0.003, 0.02), rng.uniform(0.9, 2.0),
                                    rng.randint(50, 400)) for _ in range(rng.randint(3, 8))))
    result = PrivacyBucketsAccountant().epsilon(schedule, DELTA)
    assert _dp_accounting_epsilon(schedule, pessimistic=True) >= result.epsilon_lower
    assert _dp_accounting_epsilon(schedule, pessimistic=False) <= result.epsilon
    assert result.epsilon - result.epsilon_lower <= 0.01 * result.epsilon


# ------------------------------------------------------------------ the pieces
def _pld(seed: int, bound: str):
    rng = random.Random(seed)
    pair = schedule_phases(Schedule((Phase(rng.uniform(0.001, 0.05), rng.uniform(0.6, 3), 100),)))[0][0]
    direction = rng.choice(["remove", "add"])
    return discretise_compact(pair, direction, rng.choice([5e-5, 1e-4, 3e-4]), 9.0, bound,
                              1e-6, rng.uniform(0, 5))


@pytest.mark.parametrize("seed", range(6))
def test_low_spectra_are_within_their_bound_of_the_exact_dtft(seed):
    """Every coefficient from the block moments against the pmf's DFT in long double."""
    pld = _pld(seed, UPPER if seed % 2 else LOWER)
    size = fourier.next_fast_len(max(2 * pld.size, 20_000 + 40_000 * seed))
    count = 64
    values, errors = low_spectra(PhaseBatch([(pld, 1)]), size, count,
                                 _series_terms(math.pi * 64 * count / size))
    exact = fourier.rfft_long(pld.pmf, size)[:count]
    error = np.abs(values[0].astype(np.clongdouble) - exact).astype(float)
    assert np.all(error <= errors[0])
    assert errors[0][1] < 4e-16  # the lowest frequencies: within a few u


@pytest.mark.parametrize("seed", range(4))
def test_batched_cumulants_bound_the_plain_sums_from_above(seed):
    """The windows' and the slack's cumulants (phase_batch) against sums over the dense pmf."""
    upper, lower = _pld(seed, UPPER), _pld(seed, LOWER)
    lambdas = np.geomspace(0.1, 3000.0, 12)
    keep = upper.pmf > 0
    log_pmf, losses = np.log(upper.pmf[keep]), upper.losses[keep]
    for sign in (1.0, -1.0):
        exact = np.array([np.logaddexp.reduce(log_pmf + sign * lam * losses) for lam in lambdas])
        found = PhaseBatch([(upper, 1)]).cumulant(sign * lambdas)
        # above, up to the reference's own rounding; and close
        assert np.all(found >= exact - 1e-12 * (1.0 + np.abs(exact)))
        assert np.allclose(found, exact, rtol=1e-9, atol=1e-9)
    slack_lambdas = np.geomspace(1e2, 1e8, 15) / lower.grid_step
    with np.errstate(divide="ignore"):
        log_masses = np.log(lower.rounding_masses)
    exact = np.array([np.logaddexp.reduce(log_masses + lam * lower.rounding_errors)
                      for lam in slack_lambdas])
    found = PhaseBatch([(lower, 1)]).rounding_cumulant(slack_lambdas)
    finite = np.isfinite(exact)
    assert np.all(found[finite] >= exact[finite] - 1e-12 * (1.0 + np.abs(exact[finite])))
    assert np.allclose(found[finite], exact[finite], rtol=1e-8, atol=1e-10)


def test_compact_buckets_keep_the_mass_and_stay_on_the_grid():
    pair = schedule_phases(Schedule((Phase(0.01, 0.8, 100),)))[0][0]
    pld = discretise_compact(pair, "remove", 1e-4, 9.0, UPPER, 1e-6, 1.0)
    assert pld.index.min() >= 0 and pld.index.max() < pld.size
    assert pld.values.sum() + pld.infinity_mass == pytest.approx(1.0, abs=1e-12)
    assert np.count_nonzero(pld.pmf) < pld.size  # the light tails in few buckets


# ------------------------------------------------------------------ the incremental accountant
def test_running_bounds_meet_the_tolerance_and_bracket_a_fresh_pb():
    """A run growing by one phase a query: every answer certified within 1%, and its
    interval overlapping a fresh pb's (both hold the true ε)."""
    running, phases = RunningBounds(DELTA), []
    rng = random.Random(5)
    for epoch in range(12):
        phases.append(Phase(256 / 60_000, 1.4 - 0.03 * epoch + rng.uniform(-0.02, 0.02), 235))
        bounds = running.bounds(schedule_phases(Schedule(tuple(phases))))
        assert bounds.upper - bounds.lower <= 0.01 * bounds.upper
    fresh = PrivacyBucketsAccountant().epsilon(Schedule(tuple(phases)), DELTA)
    assert bounds.lower <= fresh.epsilon and fresh.epsilon_lower <= bounds.upper
    assert bounds.upper == pytest.approx(fresh.epsilon, rel=1e-5)


def test_the_accountant_answer_does_not_depend_on_when_it_was_asked():
    often, once = PrivacyAccountant(), PrivacyAccountant()
    for epoch in range(6):
        for accountant in (often, once):
            accountant.step(noise_multiplier=1.3 - 0.05 * epoch, sample_rate=0.004, steps=200)
        often.bounds(DELTA)
    assert often.bounds(DELTA) == once.bounds(DELTA)
    assert often.compositions == 6 and once.compositions == 1


def test_history_round_trips_through_a_schedule_file(tmp_path):
    accountant = PrivacyAccountant(sampling="fixed", adjacency="replace-one")
    for sigma in (1.2, 1.0, 0.9):
        accountant.step(noise_multiplier=sigma, sample_rate=1 / 300, steps=150)
    path = tmp_path / "run.csv"
    accountant.to_schedule_file(path)
    restored = PrivacyAccountant.from_schedule_file(path)
    assert restored.history == accountant.history
    assert (restored.sampling, restored.adjacency) == ("fixed", "replace-one")
    assert restored.bounds(DELTA) == accountant.bounds(DELTA)


# ------------------------------------------------------------------ --schedule files
def test_csv_and_json_files_read_to_the_same_phases_as_phase_flags(tmp_path):
    (tmp_path / "run.csv").write_text("# warm-up then decay\nsigma,q,steps\n1.5,0.01,100\n"
                                      "1.1,0.02,300\n\n")
    (tmp_path / "run.json").write_text(json.dumps(
        {"phases": [{"noise_multiplier": 1.5, "sample_rate": 0.01, "steps": 100},
                    {"sigma": 1.1, "batch_size": 200, "dataset_size": 10_000, "steps": 300}]},
        indent=2))
    from_csv = schedule_from_file(tmp_path / "run.csv")[0]
    from_json = schedule_from_file(tmp_path / "run.json")[0]
    expected = Schedule((Phase(0.01, 1.5, 100), Phase(0.02, 1.1, 300)))
    assert [(p.sampling_rate, p.noise_multiplier, p.steps) for p in from_csv.phases] == \
        [(p.sampling_rate, p.noise_multiplier, p.steps) for p in expected.phases] == \
        [(p.sampling_rate, p.noise_multiplier, p.steps) for p in from_json.phases]
    by_file = run_dpcalc("epsilon", "--schedule", str(tmp_path / "run.csv"), "--format", "plain")
    by_flags = run_dpcalc("epsilon", "--phase", "sigma=1.5,q=0.01,steps=100",
                          "--phase", "sigma=1.1,q=0.02,steps=300", "--format", "plain")
    assert by_file.returncode == 0 and by_file.stdout == by_flags.stdout


def test_an_opacus_accountant_history_is_a_schedule_file(tmp_path):
    """json.dump(accountant.history) and json.dump(accountant.state_dict()) of an Opacus
    accountant: rows (noise_multiplier, sample_rate, num_steps), read as phases."""
    history = [(1.1, 0.004, 1000), (0.9, 0.004, 500)]
    (tmp_path / "history.json").write_text(json.dumps(history))
    (tmp_path / "state.json").write_text(json.dumps({"history": history, "mechanism": "prv"},
                                                    indent=2))
    (tmp_path / "named.json").write_text(json.dumps(
        [{"noise_multiplier": s, "sample_rate": q, "num_steps": t} for s, q, t in history]))
    expected = [(q, s, t) for s, q, t in history]
    for name in ("history.json", "state.json", "named.json"):
        read = schedule_from_file(tmp_path / name)[0]
        assert [(p.sampling_rate, p.noise_multiplier, p.steps) for p in read.phases] == expected
    by_file = run_dpcalc("epsilon", "--schedule", str(tmp_path / "state.json"), "--format", "plain")
    by_flags = run_dpcalc("epsilon", "--phase", "sigma=1.1,q=0.004,steps=1000",
                          "--phase", "sigma=0.9,q=0.004,steps=500", "--format", "plain")
    assert by_file.returncode == 0 and by_file.stdout == by_flags.stdout
    # dpcalc's own accountant keeps the same layout: its history reads back too
    accountant = PrivacyAccountant()
    for sigma, rate, steps in history:
        accountant.step(noise_multiplier=sigma, sample_rate=rate, steps=steps)
    (tmp_path / "ours.json").write_text(json.dumps(accountant.history))
    assert schedule_from_file(tmp_path / "ours.json")[0].phases == \
        schedule_from_file(tmp_path / "history.json")[0].phases


@pytest.mark.parametrize("content,line,needle", [
    ("sigma,q,steps\n1.1,0.01,100\n1.0,1.5,100\n", 3, "q (sampling rate) must be in (0, 1]"),
    ("sigma,q,steps\n1.1,0.01,100\n# note\n0.9,0.01,ten\n", 4, "steps"),
    ("sigma,q,steps,colour\n1.1,0.01,100\n", 1, "unknown column 'colour'"),
    ("sigma,q\n1.1,0.01\n", 2, "steps"),
    ('[\n  {"sigma": 1.1, "q": 0.01, "steps": 100},\n  {"sigma": 1.1, "steps": 100}\n]', 3,
     "needs q=… or batch-size=…"),
    ('[{"sigma": 1.1, "q": 0.01, "steps": 100}, ]', 1, "not valid JSON"),
    ('{"history": [\n  [1.1, 0.01, 100],\n  [1.1, 0.01]\n], "mechanism": "rdp"}', 3,
     "or an Opacus history row [noise_multiplier, sample_rate, steps]"),
    ('{"history": [\n  [1.1, 0.01, 100],\n  [0.9, 0.01, -5]\n]}', 3, "steps"),
])
def test_a_malformed_row_is_one_line_naming_the_file_and_line(tmp_path, content, line, needle):
    path = tmp_path / "rows.csv"
    path.write_text(content)
    completed = run_dpcalc("epsilon", "--schedule", str(path))
    assert completed.returncode == 2
    message = completed.stderr.strip()
    assert len(message.splitlines()) == 1
    assert f"--schedule {path} line {line}: " in message and needle in message


@pytest.mark.parametrize("content,needle", [
    ("[" * 100_000 + "]" * 100_000, "JSON nested too deeply"),  # exit 70 (RecursionError) before
    ("null\n", "JSON must be a list of phases"),  # read as CSV before: "unknown column 'null'"
    ("42", "JSON must be a list of phases"),
])
def test_a_json_file_that_is_no_schedule_is_one_line(tmp_path, content, needle):
    path = tmp_path / "rows.json"
    path.write_text(content)
    completed = run_dpcalc("epsilon", "--schedule", str(path))
    assert completed.returncode == 2 and completed.stdout == ""
    assert len(completed.stderr.strip().splitlines()) == 1 and needle in completed.stderr


def test_schedule_is_exclusive_with_the_single_run_flags_and_phases(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("sigma,q,steps\n1.1,0.01,100\n")
    for extra in (["--q", "0.01"], ["--sigma", "2"], ["--phase", "sigma=1,q=0.1,steps=5"]):
        completed = run_dpcalc("epsilon", "--schedule", str(path), *extra)
        assert completed.returncode == 2 and "--schedule" in completed.stderr
    missing = run_dpcalc("epsilon", "--schedule", str(tmp_path / "absent.csv"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_sigma_calibrates_a_common_multiplier_of_the_phases_sigma():
    """The multiplier's ε meets the target, and 1% less noise does not (its own oracle: pb)."""
    schedule = Schedule((Phase(0.01, 1.5, 300), Phase(0.02, 1.0, 200), Phase(0.01, 2.0, 500)))
    found = dpsgd_sigma("pb", 2.0, DELTA, schedule=schedule, scale=True, precision=1e-3)
    accountant = PrivacyBucketsAccountant()
    assert accountant.epsilon(schedule.with_noise_scale(found.sigma), DELTA).epsilon <= 2.0
    assert accountant.epsilon(schedule.with_noise_scale(found.sigma * 0.99), DELTA).epsilon_lower > 2.0
    with pytest.raises(DpcalcError, match="every --phase"):
        from dpcalc.cli.schedule_options import build_schedule
        build_schedule(None, None, None, None, None, None,
                       ["sigma=1,q=0.01,steps=10", "q=0.01,steps=10"], with_sigma=False)


def test_group_pairs_compose_as_phase_by_phase(monkeypatch):
    """Phases of k = 2 protected records (binomial mixture pairs, group privacy): the
    epsilon_bounds of the new path within float noise of the phase-by-phase one."""
    from dpcalc.models.mixture import GaussianMixturePair
    from dpcalc.pb.buckets import epsilon_bounds

    rng = random.Random(11)
    phases = []
    for _ in range(6):
        q, sigma = rng.uniform(0.003, 0.02), rng.uniform(1.0, 2.5)
        phases.append((GaussianMixturePair([(1 - q) ** 2, 2 * q * (1 - q), q * q], sigma),
                       rng.randint(50, 200)))
    new = epsilon_bounds(phases, DELTA)
    with monkeypatch.context() as patch:
        patch.setattr(direction_pass, "MIN_PHASES", 10**9)
        old = epsilon_bounds(phases, DELTA)
    assert new.upper <= old.upper * (1 + 1e-8) and new.lower >= old.lower * (1 - 1e-8)
    assert new.upper == pytest.approx(old.upper, rel=1e-6)
    assert new.lower == pytest.approx(old.lower, rel=1e-6)
