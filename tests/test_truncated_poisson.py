"""Truncated Poisson sampling (issue 10): Poisson at rate q, cut to at most M records.

Oracle: dp_accounting's PLD accountant on TruncatedSubsampledGaussianDpEvent (n = N − 1
others; its W = 1 branch is the replace-one pair at σ/2, looser than dpcalc's
displacement pair under add/remove), so pb's upper bound must not exceed it (beyond
discretisation) and pb's lower bound must stay below it. The brute-force adversary is in
tests/test_adversary.py.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpcalc.models.gaussian import gaussian_epsilon
from dpcalc.models.mixture import GaussianMixturePair
from dpcalc.accountants.registry import get_accountant
from dpcalc.models.revealed_mixture import RevealedMixturePair
from dpcalc.models.schedule import Phase, Schedule
from dpcalc.models.truncated import truncation
from dpcalc.accountants.rdp_accountants import step_rdp
from dpcalc.models.worst_case import MIXTURE_FAMILY, worst_case
from dpcalc.cli.app import app
from tests.conftest import cli_runner, run_dpcalc

pytestmark = pytest.mark.deep  # oracle sweeps: `python -m pytest -m deep` (CI runs them)

runner = cli_runner()
DELTA = 1e-5


def _schedule(dataset, rate, cap, sigma, steps, adjacency="add-remove"):
    return Schedule((Phase(rate, sigma, steps, "truncated-poisson", adjacency, None, dataset, cap),))


def _pb(schedule, delta=DELTA):
    return get_accountant("pb").epsilon(schedule, delta)


# --- the weights ------------------------------------------------------------------------
@pytest.mark.parametrize("others,rate,cap", [(9, 0.3, 2), (20, 0.5, 7), (5, 0.9, 5), (50, 0.05, 1)])
def test_truncation_weights_match_direct_sums(others, rate, cap):
    from scipy.stats import binom

    cut = truncation(others, rate, cap)
    k = np.arange(cap, others + 1)
    weights = binom.pmf(k, others, rate)
    assert math.isclose(cut.weight, weights.sum(), rel_tol=1e-10)
    direct = rate * np.sum(weights * cap / (k + 1)) / weights.sum()
    assert math.isclose(cut.displaced_rate, direct, rel_tol=1e-9)


def test_revealed_mixture_tails_are_the_weighted_tails():
    first = GaussianMixturePair.subsampled_gaussian(0.1, 1.0)
    second = GaussianMixturePair.subsampled_gaussian(0.05, 0.5)
    mixture = RevealedMixturePair([(0.7, first), (0.3, second)])
    grid = np.linspace(-2, 5, 41)
    for direction in ("remove", "add"):
        mixed = mixture.log_tails(direction, grid)
        for index, (a, b) in enumerate(zip(first.log_tails(direction, grid),
                                           second.log_tails(direction, grid))):
            expected = np.logaddexp(math.log(0.7) + a, math.log(0.3) + b)
            finite = np.isfinite(expected)
            assert np.array_equal(finite, np.isfinite(mixed[index]))
            assert np.allclose(mixed[index][finite], expected[finite], rtol=1e-12)
        low, high = mixture.loss_range(direction, 10.0)
        assert low <= min(first.loss_range(direction, 10.0)[0], second.loss_range(direction, 10.0)[0])
        assert high >= max(first.loss_range(direction, 10.0)[1], second.loss_range(direction, 10.0)[1])


# --- (1) against dp_accounting ----------------------------------------------------------
# (N, q, M, σ, T): M well below, near and well above N·q
ORACLE_CASES = [(10000, 0.01, 50, 1.0, 1000), (10000, 0.01, 100, 1.0, 1000),
                (10000, 0.01, 120, 1.0, 1000), (10000, 0.01, 200, 1.0, 1000),
                (1000, 0.1, 80, 2.0, 500), (1000, 0.1, 120, 2.0, 500),
                (60000, 0.004, 200, 1.1, 3000), (500, 0.05, 10, 3.0, 200),
                (100000, 0.001, 90, 1.0, 5000)]


def _dp_accounting_epsilon(dataset, rate, cap, sigma, steps, relation):
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    neighbours = (dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE if relation == "add-remove"
                  else dp_accounting.NeighboringRelation.REPLACE_ONE)
    accountant = pld_privacy_accountant.PLDAccountant(neighbours,
                                                      value_discretization_interval=1e-3)
    event = dp_accounting.TruncatedSubsampledGaussianDpEvent(dataset, rate, cap, sigma)
    accountant.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    return accountant.get_epsilon(DELTA)


@pytest.mark.parametrize("dataset,rate,cap,sigma,steps", ORACLE_CASES)
def test_pb_is_at_least_as_tight_as_dp_accounting(dataset, rate, cap, sigma, steps):
    oracle = _dp_accounting_epsilon(dataset, rate, cap, sigma, steps, "add-remove")
    result = _pb(_schedule(dataset, rate, cap, sigma, steps))
    print(f"N={dataset} q={rate} M={cap} σ={sigma} T={steps}: pb [{result.epsilon_lower:.4f}, "
          f"{result.epsilon:.4f}], dp_accounting {oracle:.4f}, ratio {result.epsilon / oracle:.4f}")
    assert result.epsilon_lower <= oracle
    assert result.epsilon <= oracle * 1.005


@pytest.mark.parametrize("dataset,rate,cap,sigma,steps", ORACLE_CASES[1:3])
def test_replace_one_is_at_least_as_tight_as_dp_accounting(dataset, rate, cap, sigma, steps):
    oracle = _dp_accounting_epsilon(dataset, rate, cap, sigma, steps, "replace-one")
    result = _pb(_schedule(dataset, rate, cap, sigma, steps, "replace-one"))
    assert result.epsilon_lower <= oracle and result.epsilon <= oracle * 1.005


# --- (2) no truncation possible: exactly Poisson ----------------------------------------
@pytest.mark.parametrize("adjacency", ["add-remove", "replace-one", "zero-out"])
def test_no_truncation_gives_exactly_the_poisson_numbers(adjacency):
    """M = N: under replace-one and zero-out n = N − 1 < M; under add/remove the N + 1
    neighbour could be cut with probability q^N, which underflows at N = 2000."""
    dataset, rate, sigma, steps = 2000, 0.02, 1.0, 300
    truncated = _schedule(dataset, rate, dataset, sigma, steps, adjacency)
    poisson = Schedule.single(rate, sigma, steps, "poisson", adjacency)
    assert worst_case(truncated.phases[0]).family != MIXTURE_FAMILY
    for name in ("pb", "rdp", "moments"):
        ours = get_accountant(name).epsilon(truncated, DELTA)
        theirs = get_accountant(name).epsilon(poisson, DELTA)
        assert (ours.epsilon, ours.epsilon_lower) == (theirs.epsilon, theirs.epsilon_lower)
    assert get_accountant("pb").delta(truncated, 1.0) == get_accountant("pb").delta(poisson, 1.0)


def test_add_remove_at_m_equal_n_differs_from_poisson_only_by_the_tiny_cut():
    dataset, rate = 8, 0.3  # the N + 1 neighbour is cut with probability 0.3**8 ≈ 6.6e-5
    truncated = _pb(_schedule(dataset, rate, dataset, 1.0, 50))
    poisson = _pb(Schedule.single(rate, 1.0, 50))
    assert worst_case(_schedule(dataset, rate, dataset, 1.0, 50).phases[0]).family == MIXTURE_FAMILY
    assert poisson.epsilon_lower <= truncated.epsilon <= poisson.epsilon * 1.05


# --- (4) rdp ----------------------------------------------------------------------------
@pytest.mark.parametrize("dataset,rate,cap,sigma,steps", ORACLE_CASES[:6])
def test_rdp_is_an_upper_bound_above_pbs_lower_bound(dataset, rate, cap, sigma, steps):
    schedule = _schedule(dataset, rate, cap, sigma, steps)
    pb = _pb(schedule)
    for name in ("rdp", "moments"):
        epsilon = get_accountant(name).epsilon(schedule, DELTA).epsilon
        assert epsilon >= pb.epsilon_lower, name


@pytest.mark.parametrize("adjacency", ["add-remove", "replace-one", "zero-out"])
def test_rdp_of_a_run_cut_at_every_step_is_the_cut_branchs(adjacency):
    """Regression: M = B/2 (every step cut: the uncut branch's weight rounds to 0). The
    mixture's ρ took the zero-weight branch as its base, log1p met −1 at large α and
    rdp reported ε = 0 under replace-one ('certified'), which pb then refused as
    inconsistent. ρ is now the cut branch's own, and rdp stays above pb's lower bound."""
    schedule = Schedule((Phase(None, 4.0, 10_000, "truncated-poisson", adjacency, 600, 60_000,
                               300),))
    case = worst_case(schedule.phases[0])
    orders = np.array([2.0, 10.0, 55.0, 256.0])
    cuts = []
    for branches in case.components:  # per neighbouring instance (add/remove: two sizes)
        assert [weight for weight, _ in branches] == [0.0, 1.0]
        cuts.append(step_rdp(branches[-1][1], orders))
    worst_cut = np.max(cuts, axis=0)
    assert np.all(worst_cut <= step_rdp(case, orders))
    assert np.all(step_rdp(case, orders) <= worst_cut * (1 + 1e-9))
    pb = _pb(schedule)
    for name in ("rdp", "moments"):
        epsilon = get_accountant(name).epsilon(schedule, DELTA).epsilon
        assert epsilon >= pb.epsilon_lower > 0.3, name


def test_rdp_and_pb_bracket_the_exact_epsilon_at_q_one():
    """q = 1, M = N: replace-one is never cut (n = N − 1): the Gaussian mechanism with
    sensitivity 2C, exact ε known. q = 1, M = N − 1 under add/remove: always cut, and the
    displacement example attains the pair, so pb's interval holds the exact ε."""
    dataset, sigma, steps = 50, 4.0, 20
    exact = gaussian_epsilon(DELTA, sigma / math.sqrt(steps), sensitivity=2.0)
    schedule = _schedule(dataset, 1.0, dataset, sigma, steps, "replace-one")
    pb = _pb(schedule)
    assert pb.epsilon_lower <= exact * (1 + 1e-9) and exact <= pb.epsilon * (1 + 1e-9)
    assert get_accountant("rdp").epsilon(schedule, DELTA).epsilon >= exact
    cut = _schedule(dataset, 1.0, dataset - 1, sigma, steps)
    case = worst_case(cut.phases[0])
    assert all(weight == 1.0 for instance in case.components for weight, _ in instance[1:])
    assert get_accountant("rdp").epsilon(cut, DELTA).epsilon >= _pb(cut).epsilon_lower


def test_closed_form_accountants_say_not_applicable_with_the_reason():
    schedule = _schedule(10000, 0.01, 100, 1.0, 100)
    for name in ("abadi", "gdp", "strong", "naive"):
        result = get_accountant(name).epsilon(schedule, DELTA)
        assert result.epsilon is None
        assert "not applicable" in result.notes[0] and "mixture" in result.notes[0]
        assert get_accountant(name).delta(schedule, 1.0) is None


def test_mixed_phases_compose_and_the_curve_matches_the_point():
    phases = (Phase(0.01, 1.0, 300, "truncated-poisson", "add-remove", None, 10000, 100),
              Phase(0.01, 1.0, 300))
    mixed = _pb(Schedule(phases))
    alone = _pb(Schedule(phases[:1]))
    assert mixed.epsilon > alone.epsilon
    step = phases[0].with_steps(1)
    points = [Schedule((step.with_steps(count),)) for count in (300, 600)]
    curve = get_accountant("pb").epsilon_curve(points, DELTA)
    assert math.isclose(curve[0].epsilon, alone.epsilon, rel_tol=0.01)


# --- (5) CLI ----------------------------------------------------------------------------
RUN = ["--q", "0.01", "--dataset-size", "10000", "--sigma", "1", "--steps", "1000"]


def _invoke(*args):
    return runner.invoke(app, list(args))


def test_cli_json_carries_the_model_and_m():
    result = _invoke("epsilon", *RUN, "--sampling", "truncated", "--max-batch-size", "120",
                     "--format", "json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    inputs = payload["inputs"]
    assert inputs["sampling"] == "truncated-poisson" and inputs["max_batch_size"] == 120
    assert inputs["dataset_size"] == 10000
    assert "cut to at most M records" in inputs["model"]
    (record,) = payload["results"]
    assert record["epsilon_upper"] >= record["epsilon_lower"] > 0


@pytest.mark.parametrize("alias", ["truncated-poisson", "truncated", "poisson-truncated"])
def test_cli_aliases_and_batch_size_form(alias):
    result = _invoke("epsilon", "--batch-size", "100", "--dataset-size", "10000", "--sigma", "1",
                     "--steps", "200", "--sampling", alias, "--max-batch-size", "120",
                     "--format", "plain")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("args,words", [
    (["--sampling", "truncated-poisson"], "needs --max-batch-size"),
    (["--max-batch-size", "50"], "is for --sampling truncated-poisson only"),
    (["--sampling", "truncated", "--max-batch-size", "20000"], "--max-batch-size must be"),
    (["--sampling", "truncated", "--max-batch-size", "0"], "--max-batch-size must be"),
])
def test_cli_errors_are_one_line_exit_two(args, words):
    completed = run_dpcalc("epsilon", *RUN, *args)
    assert completed.returncode == 2 and completed.stdout == ""
    lines = [line for line in completed.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0], completed.stderr


def test_cli_needs_the_dataset_size():
    completed = run_dpcalc("epsilon", "--q", "0.01", "--sigma", "1", "--steps", "10",
                           "--sampling", "truncated", "--max-batch-size", "5")
    assert completed.returncode == 2 and "--dataset-size" in completed.stderr


def test_cli_phase_key():
    result = _invoke("epsilon", "--phase", "q=0.01,sigma=1,steps=300,sampling=truncated,"
                     "max-batch-size=100", "--phase", "q=0.01,sigma=1,steps=300",
                     "--dataset-size", "10000", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["inputs"]["phases"][0]["max_batch_size"] == 100


@pytest.mark.parametrize("command", [["delta", "--epsilon", "5"], ["risk"], ["report"],
                                     ["sigma", "--epsilon", "8"], ["compare", "-a", "pb,rdp,gdp"]],
                         ids=lambda command: command[0])
def test_cli_other_commands_take_truncated_poisson(command):
    truncated = ["--sampling", "truncated", "--max-batch-size", "100"]
    run = [*RUN[:-1], "200"]  # 200 steps: every command takes the sampler; speed is not tested
    args = run if command[0] != "sigma" else [a for a in run if a not in ("--sigma", "1")]
    result = _invoke(*command, *args, *truncated, "--format", "json")
    assert result.exit_code == 0, (command, result.output)
    assert json.loads(result.stdout)["inputs"]["max_batch_size"] == 100, command


def test_cli_group_refuses_truncated_poisson_in_one_line():
    completed = run_dpcalc("group", "--k", "2", "--batch-size", "100", "--dataset-size", "10000",
                           "--sigma", "1", "--steps", "100", "--sampling", "truncated")
    assert completed.returncode == 2 and len(completed.stderr.strip().splitlines()) == 1


# --- the certified lower bound: an explicit instance of the sampler ---------------------
@pytest.mark.parametrize("size,rate,cap", [(6, 0.5, 1), (6, 0.5, 2), (6, 1 / 3, 2), (9, 0.8, 4),
                                           (6, 1.0, 3), (6, 0.2, 9)])
def test_contained_rate_is_the_enumerated_chance_of_being_in_the_cut_batch(size, rate, cap):
    """q_in = P(x in the cut batch), x one of N records: by enumerating every batch."""
    from dpcalc.models.truncated import contained_rate
    from tests.brute_force import batches_truncated

    exact = sum(probability for indices, probability in batches_truncated(size, rate, cap)
                if size - 1 in indices)
    found = contained_rate(size, rate, cap)
    assert found <= exact  # rounded down: the instance's ε only falls
    assert found == pytest.approx(exact, rel=1e-8)


def _enumerated_instance(size: int, rate: float, cap: int, adjacency: str, others: float):
    """(P, Q) step mixtures of the explicit run with the other records' gradients
    ``others``, the record's +C (replace-one: −C against it; zero-out: the null record),
    by exact enumeration of the batches (tests/brute_force.py)."""
    from tests.brute_force import step_mixture

    gradients = [others] * (size - 1) + [1.0]
    other = {"add-remove": None, "replace-one": -1.0, "zero-out": 0.0}[adjacency]
    p_mix = step_mixture(gradients, "truncated-poisson", rate, cap=cap)
    neighbour = gradients[:-1] if other is None else gradients[:-1] + [other]
    return p_mix, step_mixture(neighbour, "truncated-poisson", rate, cap=cap)


@pytest.mark.parametrize("adjacency", ["add-remove", "replace-one", "zero-out"])
@pytest.mark.parametrize("rate,cap,steps", [(0.5, 1, 1), (0.5, 2, 2), (1 / 3, 2, 2), (0.2, 2, 3)])
def test_lower_bound_is_below_the_enumerated_instance(adjacency, rate, cap, steps):
    """pb's certified lower ε for truncated Poisson is at most the ε of an explicit run of
    the sampler (N = 6): the run with other gradients 0, or, where most batches are cut, the
    displaced run with other gradients −C (the record +C; replace-one: −C against it;
    zero-out: the null record), whose δ is bounded from below by exact enumeration of the
    batches and interval masses (tests/brute_force.py). Before the fix pb reported the
    dominating pair's lower bound, which is not one for the sampler."""
    from dpcalc.models.lower_instances import displaced_run
    from tests.brute_force import hockey_stick_lower

    size, sigma = 6, 1.0
    phase = Phase(rate, sigma, steps, "truncated-poisson", adjacency, None, size, cap)
    result = _pb(Schedule((phase,)), 1e-3)
    reached = 0.0
    for others in (0.0, -1.0):
        p_mix, q_mix = _enumerated_instance(size, rate, cap, adjacency, others)
        reached = max(reached, *(hockey_stick_lower(first, second, sigma, steps,
                                                    [result.epsilon_lower], cells=6000)[0]
                                 for first, second in ((p_mix, q_mix), (q_mix, p_mix))))
    # δ_true(ε_lower) ≥ reached ≥ δ for one of the runs: its ε is at least pb's lower bound
    assert reached >= 1e-3, (result.epsilon_lower, reached)
    assert 0.0 < result.epsilon_lower <= result.epsilon
    assert any("explicit run" in note for note in result.notes)
    # the displaced run is used exactly where most batches are cut (P(K ≥ M) ≥ 1/2)
    cut_share = truncation(size - 1, rate, cap).weight
    assert (displaced_run(Schedule((phase,))) is not None) == (cut_share >= 0.5)


@pytest.mark.parametrize("adjacency", ["add-remove", "replace-one", "zero-out"])
@pytest.mark.parametrize("size,rate,cap", [(6, 0.5, 2), (7, 0.4, 1), (6, 1.0, 3), (8, 0.6, 3)])
def test_displaced_run_mixtures_match_enumeration(size, rate, cap, adjacency):
    """The displaced run's one-step output mixtures (truncated_instance._mixtures, derived
    in its module doc) equal those of exact enumeration of the truncated batches with other
    gradients −C."""
    from dpcalc.models.truncated_instance import _merge, _mixtures

    derived = [_merge(*mixture) for mixture in _mixtures(size - 1, rate, cap, adjacency)]
    enumerated = _enumerated_instance(size, rate, cap, adjacency, -1.0)
    for (positions, log_weights), (means, weights) in zip(derived, enumerated):
        kept = weights > 1e-300
        np.testing.assert_array_equal(positions, means[kept])
        np.testing.assert_allclose(np.exp(log_weights), weights[kept], rtol=1e-12)


@pytest.mark.parametrize("adjacency", ["add-remove", "replace-one", "zero-out"])
def test_displaced_run_raises_the_lower_bound_where_most_batches_are_cut(adjacency):
    """B = 600 of 60 000, M = 540, σ = 4, T = 10 000: the run with other gradients 0 gave
    [0.843, …] under add/remove against an upper bound of 1.92; the displaced run lifts the
    lower bound (measured 1.86 add/remove, 1.87 replace-one, 0.934 zero-out), and it stays
    below the upper bound and below the fixed-size add/remove value (cuts to 540 of ~600)."""
    schedule = Schedule((Phase(None, 4.0, 10_000, "truncated-poisson", adjacency, 600, 60_000,
                               540),))
    result = _pb(schedule)
    before = {"add-remove": 0.8433, "replace-one": 1.772, "zero-out": 0.8433}[adjacency]
    assert result.epsilon_lower > before * 1.05
    assert result.epsilon_lower <= result.epsilon
    fixed = _pb(Schedule((Phase(None, 4.0, 10_000, "fixed", "add-remove", 600, 60_000),)))
    assert result.epsilon_lower <= fixed.epsilon


def test_lower_bound_of_a_rarely_cut_run_is_near_poisson_and_the_gap_is_explained():
    """M = 300 for B = 256 of 60 000: cuts are rare, the instance is Poisson at q_in ≈ q."""
    schedule = Schedule((Phase(None, 1.0, 4096, "truncated-poisson", "add-remove", 256, 60000,
                               300),))
    truncated = _pb(schedule)
    poisson = _pb(Schedule((Phase(None, 1.0, 4096, "poisson", "add-remove", 256, 60000),)))
    assert poisson.epsilon_lower * 0.99 <= truncated.epsilon_lower <= poisson.epsilon
    assert truncated.epsilon >= poisson.epsilon_lower
    assert not any("finer grid" in note and "tolerance" in note for note in truncated.notes[1:])


def test_delta_and_risk_lower_bounds_come_from_the_instance():
    """delta and risk: the lower figures are the explicit instance's, below the upper ones."""
    from dpcalc.risk.bounds import risk_bounds

    schedule = Schedule((Phase(None, 1.0, 60, "truncated-poisson", "add-remove", 20, 100, 22),))
    upper, lower, notes, _ = get_accountant("pb").delta_bounds(schedule, 1.0)
    instance = Schedule((Phase(_contained(100, 0.2, 22), 1.0, 60),))
    _, instance_lower, *_ = get_accountant("pb").delta_bounds(instance, 1.0)
    assert lower == instance_lower <= upper and notes
    risk = risk_bounds(schedule, fprs=[1e-2])
    instance_risk = risk_bounds(instance, fprs=[1e-2])
    # (each on its own grid: the same instance's lower bound to the grids' accuracy)
    assert risk.tpr[0].lower == pytest.approx(instance_risk.tpr[0].lower, rel=2e-3)
    assert risk.tpr[0].lower <= risk.tpr[0].upper
    assert risk.advantage.lower == pytest.approx(instance_risk.advantage.lower, rel=2e-3)
    assert any("explicit run" in source for source in risk.run.sources)


def _contained(size, rate, cap):
    from dpcalc.models.truncated import contained_rate

    return contained_rate(size, rate, cap)


def test_mixed_replace_one_schedule_keeps_one_adjacency_in_its_lower_run():
    """Review regression: a replace-one run mixing fixed-size with Poisson or truncated phases
    raised (the explicit run switched only the fixed phases to an add/remove-shaped pair).
    Such runs take, in the fixed phases, the run with other gradients 0 (Poisson replace-one
    pair at γ): a valid, weaker lower bound, and say so."""
    from dpcalc.models.lower_instances import FIXED_REPLACE_MIXED_NOTE

    schedule = Schedule((Phase(0.4, 1.0, 1, "poisson", "replace-one"),
                         Phase(None, 1.0, 1, "fixed", "replace-one", 2, 5),
                         Phase(0.4, 1.0, 2, "truncated-poisson", "replace-one", None, 5, 1)))
    result = _pb(schedule, 1e-3)
    assert 0.0 < result.epsilon_lower <= result.epsilon
    assert FIXED_REPLACE_MIXED_NOTE in result.notes
    upper, lower, notes, _ = get_accountant("pb").delta_bounds(schedule, 1.0)
    assert 0.0 <= lower <= upper and FIXED_REPLACE_MIXED_NOTE in notes


def test_displaced_run_weights_keep_their_relative_accuracy_at_large_n():
    """The mixture weights at n = 59 999 against mpmath: within 1e-12 relative (scipy's
    binom.logpmf alone was off by ~1e-10 there; an independent review measured it)."""
    import mpmath as mp

    from dpcalc.models.truncated_instance import _mixtures

    others, rate, cap = 59_999, 0.01, 540
    (positions, log_weights), _ = _mixtures(others, rate, cap, "add-remove")
    with mp.workdps(40):
        for count in (400, 500, 539):
            exact = (mp.binomial(others, count) * mp.mpf(rate) ** count
                     * (1 - mp.mpf(rate)) ** (others - count) * (1 - mp.mpf(rate)))
            got = math.exp(log_weights[count])  # x not drawn, K = count: position −count
            assert positions[count] == -count
            assert abs(got - float(exact)) <= 1e-12 * float(exact)


def test_displaced_run_needs_one_dataset_size():
    from dpcalc.models.lower_instances import displaced_run

    first = Phase(0.6, 1.0, 2, "truncated-poisson", "add-remove", None, 6, 2)
    assert displaced_run(Schedule((first, first))) is not None
    other = Phase(0.6, 1.0, 2, "truncated-poisson", "add-remove", None, 50, 20)
    assert displaced_run(Schedule((first, other))) is None


def test_displaced_run_cells_carry_the_binomial_weights_error():
    """scipy's binomial pmf, the displaced run's weights, is up to ~1e-12 relative off
    50-digit values (far beyond the ulp-level model of a cell's log mass): each
    cell carries _BINOMIAL_ERROR (4× the largest measured) plus the log-sums' 4u per
    component, which the pair's bucket_log_error passes on (review lead, stop 26)."""
    import mpmath as mp
    from scipy.stats import binom

    from dpcalc.models.truncated_instance import _BINOMIAL_ERROR, displaced_pair

    worst = 0.0
    with mp.workdps(50):  # with an independent review's worst points (q = 0.3, ±20–30 sd)
        for others, rate in [(59_999, 0.004), (5_999, 0.05), (999, 0.1), (59_999, 0.3),
                             (5_999, 0.5)]:
            mean, spread = others * rate, math.sqrt(others * rate * (1 - rate))
            for count in np.unique(np.clip(np.round(mean + spread * np.linspace(-30, 30, 25)),
                                           0, others).astype(int)).tolist():
                exact = (mp.binomial(others, count) * mp.mpf(rate) ** count
                         * (1 - mp.mpf(rate)) ** (others - count))
                worst = max(worst, abs(float(mp.mpf(binom.pmf(count, others, rate)) / exact - 1)))
    assert 16 * 2.0**-53 < worst <= _BINOMIAL_ERROR / 2  # beyond an ulp; within the margin
    assert worst > 2.6e-13  # the first margin (stop 26) was too small
    pair = displaced_pair(600, 0.1, 50, 1.0, "add-remove")
    edges = np.array([-np.inf, np.inf])
    assert pair.bucket_log_error("remove", edges)[0] >= _BINOMIAL_ERROR
