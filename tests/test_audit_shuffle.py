"""Audits of shuffled DP-SGD (dpcalc.audit.shuffle): canaries take slots in the permutation,
the Monte Carlo audit realises Chua et al. 2024's displacement pair (shifts 2 and 1 under
zero-out), and its empirical lower bound exceeds the Poisson figure while staying below pb's
certified shuffle upper bound."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpcalc import Schedule, get_accountant
from dpcalc.audit import AuditSettings, monte_carlo_audit
from dpcalc.audit.canaries import parameter_shapes
from dpcalc.audit.monte_carlo import small_task
from dpcalc.audit.shuffle import (ShuffledGradientCanaries, epoch_log_ratio, shuffle_shifts,
                                  simulate_shuffle_scores)
from dpcalc.dpsgd import TrainingConfig, train_dp_sgd
from dpcalc.dpsgd.train import placed_epoch_batches
from dpcalc.errors import DpcalcError

pytestmark = pytest.mark.deep  # oracle sweeps: `python -m pytest -m deep` (CI runs them)


def _pb(result):
    return get_accountant("pb", tolerance=0.05).epsilon(
        Schedule.single(result.sampling_rate, result.noise_multiplier, result.steps,
                        result.sampling, result.adjacency), result.delta)


def _shuffled_audit(batches, sigma, runs, seed, adjacency="zero-out"):
    config = TrainingConfig(batch_size=10, epochs=1, noise_multiplier=sigma, seed=seed,
                            sampling="shuffle")
    settings = AuditSettings(mode="monte-carlo", runs=runs, delta=1e-2, seed=seed,
                             adjacency=adjacency)
    return monte_carlo_audit(settings, config, 10 * batches)


def test_the_audit_shows_the_poisson_figure_does_not_hold_for_shuffled_batches():
    """Must-show: b = 100 shuffled batches, σ = 0.7, one epoch, zero-out, δ = 1e-2, 500 runs,
    seed 0: empirical ε ≥ 1.157 (95 %) against pb's Poisson figure 0.474 (which does not
    apply) and pb's certified shuffle interval [3.570, 3.759]: above the Poisson figure,
    below the certified upper bound."""
    result = _shuffled_audit(100, 0.7, 500, seed=0)
    certified = _pb(result)
    poisson = certified.details["epsilon_poisson_not_applicable"]
    assert (result.sampling, result.adjacency, result.steps, result.sampling_rate) == (
        "shuffle", "zero-out", 100, 0.01)
    assert result.epsilon_lower == pytest.approx(1.1574, abs=1e-3)  # seeded: bit for bit
    assert poisson == pytest.approx(0.4737, abs=2e-3)
    assert poisson < result.epsilon_lower <= certified.epsilon
    assert certified.epsilon_lower == pytest.approx(3.570, abs=0.02)


@pytest.mark.parametrize("adjacency", ["zero-out", "replace-one"])
def test_shuffled_audits_never_exceed_the_certified_upper_bound(adjacency):
    """b = 10, σ = 0.7 and 1, two seeds each, 200 runs: never above pb's certified upper."""
    for index, sigma in enumerate((0.7, 1.0, 0.7, 1.0)):
        result = _shuffled_audit(10, sigma, 200, seed=10 + index, adjacency=adjacency)
        assert 0.0 <= result.epsilon_lower <= _pb(result).epsilon, (sigma, result)


class _Recorder(ShuffledGradientCanaries):
    def observe(self, noisy_average):
        flat = noisy_average[self._array_of[0]].reshape(-1)
        self.seen.append(flat[self._index_in[0]] * self.expected_batch_size / self.clip_norm
                         + self._batch_size)
        super().observe(noisy_average)


@pytest.mark.parametrize("adjacency,member,expected", [
    ("zero-out", True, 2.0), ("zero-out", False, 1.0), ("replace-one", True, 2.0),
    ("replace-one", False, 0.0)])
def test_the_crafted_instance_moves_the_canarys_batch_by_the_shuffle_shift(adjacency, member,
                                                                           expected):
    """At σ = 1e-4 the auditor's readings are the shifts themselves: 0 in every batch but the
    canary's, which reads 2 (in) or 1 (zero-out, out) or 0 (replace-one, out)."""
    batches = 5
    train, test = small_task(2 * batches - 1, seed=0)
    config = TrainingConfig(batch_size=2, epochs=2, noise_multiplier=1e-4, learning_rate=0.1,
                            sampling="shuffle", seed=3)
    coordinate = (train.n_features - 1) * 2
    hook = _Recorder(np.array([coordinate]), parameter_shapes(train.n_features, 2, 0),
                     np.array([member]), batches, 1e-4, 1.0, 2, adjacency, crafted_others=True)
    hook.seen = []
    train_dp_sgd(config, train, test, canaries=hook)
    readings = np.round(np.array(hook.seen).reshape(2, batches), 3)
    assert hook.shifts == shuffle_shifts(adjacency, True)
    for epoch in readings:  # one step per epoch holds the canary
        assert sorted(epoch.tolist()) == sorted([expected] + [0.0] * (batches - 1))


def test_placed_batches_hold_every_record_and_canary_once_per_epoch():
    batches = placed_epoch_batches(95, 3, 10, np.random.default_rng(0))
    assert len(batches) == math.ceil(95 / 10)
    assert sorted(np.concatenate(batches).tolist()) == list(range(98))
    sizes = [batch.shape[0] for batch in batches]
    assert max(sizes) - min(sizes) <= 1  # 98 records in 10 batches: sizes 9 and 10


def test_epoch_score_is_the_likelihood_ratio_of_the_pair():
    """One epoch: LR = Σ exp(ℓ_a) / Σ exp(ℓ_c); a partial epoch of r steps adds b − r to both;
    simulated scores of members exceed those of non-members on average."""
    sigma, shifts = 0.7, (2.0, 1.0)
    x = np.array([0.3, 1.9, -0.4])
    terms = [(2 * s * x - s * s) / (2 * sigma ** 2) for s in shifts]
    full = epoch_log_ratio(terms[0], terms[1], 3)
    assert full == pytest.approx(math.log(np.exp(terms[0]).sum() / np.exp(terms[1]).sum()))
    partial = epoch_log_ratio(terms[0], terms[1], 5)
    assert partial == pytest.approx(math.log((np.exp(terms[0]).sum() + 2)
                                             / (np.exp(terms[1]).sum() + 2)))
    rng = np.random.default_rng(1)
    members = simulate_shuffle_scores(rng, 4000, 20, 10, shifts, sigma, True)
    others = simulate_shuffle_scores(rng, 4000, 20, 10, shifts, sigma, False)
    assert members.mean() > others.mean() + 1.0


def test_crafted_records_need_exactly_one_canary():
    with pytest.raises(DpcalcError, match="need one canary"):
        ShuffledGradientCanaries(np.array([0, 1]), [(4, 2), (2,)], np.array([True, False]), 5,
                                 1.0, 1.0, 2, "zero-out", crafted_others=True)
    with pytest.raises(DpcalcError, match="zero-out or replace-one"):
        ShuffledGradientCanaries(np.array([0]), [(4, 2), (2,)], np.array([True]), 5, 1.0, 1.0,
                                 2, "add-remove")
