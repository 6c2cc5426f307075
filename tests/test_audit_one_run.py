"""The one-run audit's Dirac canaries (dpcalc.audit.dirac) and guess plan (dpcalc.audit.guesses):
what the auditor reads is what the mechanism released about each canary alone, the simulated
law the plan is made on is the law of the real scores, and the guess counts never depend on the
audited canaries' scores or membership (else the p-value of Steinke et al. 2023 is invalid)."""
from __future__ import annotations

import inspect
import math
from dataclasses import fields

import numpy as np
import pytest
from scipy.stats import ks_2samp

from dpcalc.audit import AuditSettings, finish_one_run, one_run_canaries
from dpcalc.audit.canaries import InputCanaries
from dpcalc.audit.dirac import DiracCanaries
from dpcalc.audit.experiment import audited_canaries, canary_generator
from dpcalc.audit.guesses import ScoreLaw, momentum_weights, plan_guesses
from dpcalc.dpsgd import TrainingConfig, make_synthetic_task, split_and_standardise, train_dp_sgd


@pytest.fixture(scope="module")
def small_task():
    dataset = make_synthetic_task(n_samples=1000, n_features=20, n_classes=10, seed=3)
    return split_and_standardise(dataset, seed=3)  # 800 train


class _Recorder(DiracCanaries):
    """Records the canary gradients sent (in clip norms) and the readings recovered."""

    def extension_gradients(self):
        summed = super().extension_gradients()
        self.sent.append(summed / self.clip_norm)
        return summed

    def readings(self, weights):
        values = super().readings(weights)
        self.read.append(values)
        return values


def _recorder(config, count, rng, threat_model="all-iterates", shuffle=None, rate=0.5):
    hook = _Recorder(rng.random(count) < 0.5, rate, config.noise_multiplier, config.clip_norm,
                     config.batch_size, config.learning_rate, config.momentum, threat_model, rng,
                     shuffle)
    hook.sent, hook.read = [], []
    return hook


def test_readings_from_consecutive_iterates_are_the_canary_gradients(small_task):
    """σ = 1e-4, momentum 0.9, learning rate 0.3: the reading the auditor recovers from two
    released iterates, x_t = B·(v_t − μv_{t−1})/C with v_t = (w_{t−1} − w_t)/η, is the canary's
    own gradient in that step (1 when sampled and in, else 0), to the noise."""
    train, test = small_task
    config = TrainingConfig(batch_size=400, epochs=3, noise_multiplier=1e-4, momentum=0.9,
                            learning_rate=0.3, seed=1)
    hook = _recorder(config, 40, np.random.default_rng(0))
    train_dp_sgd(config, train, test, canaries=hook)
    sent, read = np.array(hook.sent), np.array(hook.read)
    assert sent.shape == read.shape == (6, 40) and sent.sum() > 10
    assert np.abs(read - sent).max() < 1e-3
    assert not sent[:, ~hook.included].any()  # an "out" canary never joins


def test_shuffled_dirac_canaries_read_their_shift_once_per_epoch(small_task):
    """Shuffled batches (b = 8), replace-one: each epoch every canary reads 1 (in) or −1 (out)
    in exactly one step, 0 elsewhere."""
    train, test = small_task
    config = TrainingConfig(batch_size=100, epochs=2, noise_multiplier=1e-4, seed=2,
                            sampling="shuffle")
    hook = _recorder(config, 30, np.random.default_rng(1), shuffle=(8, "replace-one"))
    train_dp_sgd(config, train, test, canaries=hook)
    read = np.round(np.array(hook.read), 2).reshape(2, 8, 30)
    expected = np.where(hook.included, 1.0, -1.0)
    for epoch in read:
        assert (np.count_nonzero(epoch, axis=0) == 1).all()
        assert np.array_equal(epoch.sum(axis=0), expected)


def test_last_model_scores_read_the_final_weights_only(small_task):
    """Last model: nothing is read per step; the score is −B·w_T/(ηC) = Σ_t c_t x_t, the
    momentum-weighted sum of the readings (σ = 1e-4: of the canary gradients)."""
    train, test = small_task
    config = TrainingConfig(batch_size=400, epochs=3, noise_multiplier=1e-4, momentum=0.5,
                            learning_rate=0.7, seed=4)
    hook = _recorder(config, 40, np.random.default_rng(2), threat_model="last-model")
    history = train_dp_sgd(config, train, test, canaries=hook)
    assert hook.read == [] and not hook.scores.any()
    scores = hook.final_scores(history.extension)
    weights = momentum_weights(len(hook.sent), 0.5)
    assert scores == pytest.approx(weights @ np.array(hook.sent), abs=3e-3)
    assert np.array_equal(hook.final_scores(history.extension), scores)  # w_T alone decides


@pytest.mark.parametrize("threat_model", ["all-iterates", "last-model"])
def test_the_planners_law_is_the_law_of_the_real_scores(small_task, threat_model):
    """3000 canaries on a real run (q = 0.5, σ = 0.8, 4 steps, momentum 0.3): their scores,
    in and out, are two-sample indistinguishable (Kolmogorov–Smirnov) from the planner's
    simulation of the claimed pair — and the "in" scores are plainly not the "out" law."""
    train, test = small_task
    config = TrainingConfig(batch_size=400, epochs=2, noise_multiplier=0.8, momentum=0.3,
                            seed=6)
    settings = AuditSettings(canaries=3000, seed=6, threat_model=threat_model)
    canaries = one_run_canaries(settings, config, train)
    history = train_dp_sgd(config, train, test, canaries=canaries)
    scores = canaries.final_scores(history.extension)
    law = ScoreLaw(0.5, 0.8, 4, threat_model, 0.3)
    rng = np.random.default_rng(11)
    simulated_in, simulated_out = law.simulate(rng, 20_000, True), law.simulate(rng, 20_000, False)
    assert ks_2samp(scores[canaries.included], simulated_in).pvalue > 1e-3
    assert ks_2samp(scores[~canaries.included], simulated_out).pvalue > 1e-3
    assert ks_2samp(scores[canaries.included], simulated_out).pvalue < 1e-6


# ---------------------------------------------------------------- the plan never sees the scores
def test_the_planner_takes_nothing_of_the_run_or_its_canaries():
    """Structural: the plan is a function of the canary count, the claimed pair, δ, β and a
    random stream; the pair is (q, σ, T, threat model, momentum, shuffle) — no score, no
    membership, no run."""
    assert list(inspect.signature(plan_guesses).parameters) == ["canaries", "law", "delta",
                                                                 "beta", "rng"]
    assert [f.name for f in fields(ScoreLaw)] == ["sampling_rate", "noise_multiplier", "steps",
                                                  "threat_model", "momentum", "shuffle"]


def test_the_counts_are_fixed_before_training_and_kept_whatever_the_scores(small_task,
                                                                          monkeypatch):
    """The plan is on the canaries before the run starts, equals an independent planning call
    on the planner's own stream, and finish_one_run guesses with it whatever scores come out."""
    train, test = small_task
    config = TrainingConfig(batch_size=400, epochs=2, noise_multiplier=0.7, seed=8)
    settings = AuditSettings(canaries=500, delta=1e-5, seed=8)
    canaries = one_run_canaries(settings, config, train)
    independent = plan_guesses(500, ScoreLaw(0.5, 0.7, 4), 1e-5, 0.05, canary_generator(8, 4))
    assert canaries.plan == independent
    history = train_dp_sgd(config, train, test, canaries=canaries)
    outcomes = []
    for junk in (0, 1):
        rng = np.random.default_rng(junk)
        monkeypatch.setattr(DiracCanaries, "final_scores",
                            lambda self, weights, rng=rng: rng.normal(size=500))
        outcomes.append(finish_one_run(settings, canaries, history))
    for result in outcomes:
        assert (result.guesses_in, result.guesses_out) == (independent.guess_in,
                                                           independent.guess_out)
    assert outcomes[0].correct != outcomes[1].correct  # the scores did change


def test_input_canaries_choose_counts_on_a_calibration_half_only(small_task, monkeypatch):
    """Input canaries: the counts come from the calibration half; whatever the audited half
    scores, the counts are the same, and the bound covers the audited half only."""
    train, test = small_task
    config = TrainingConfig(batch_size=400, epochs=2, noise_multiplier=0.7, seed=9)
    settings = AuditSettings(canary="input", canaries=301, delta=1e-5, seed=9)
    canaries = one_run_canaries(settings, config, train)
    history = train_dp_sgd(config, train, test, canaries=canaries)
    audited = audited_canaries(9, 301)
    assert (~audited).sum() == 150 and audited.sum() == 151
    base = np.random.default_rng(0).normal(size=301)
    results = []
    for junk in (1, 2):
        scores = base.copy()
        scores[audited] = np.random.default_rng(junk).normal(size=151)
        monkeypatch.setattr(InputCanaries, "final_scores",
                            lambda self, model, params, scores=scores: scores)
        results.append(finish_one_run(settings, canaries, history))
    assert [(r.guesses_in, r.guesses_out) for r in results][0] == (
        results[1].guesses_in, results[1].guesses_out)
    assert results[0].canaries == 151 and results[0].threat_model == "last-model"
    assert "150 calibration canaries" in results[0].guess_rule


def test_momentum_weights_are_the_final_weights_coefficients():
    """w_T = −η Σ_t c_t u_t: unrolled by hand for T = 3, μ = 0.5: c = (1.75, 1.5, 1)."""
    assert momentum_weights(3, 0.5) == pytest.approx([1.75, 1.5, 1.0])
    assert momentum_weights(4, 0.0) == pytest.approx([1.0] * 4)
    mu, steps = 0.9, 50
    velocity, weight, updates = 0.0, 0.0, np.random.default_rng(0).normal(size=steps)
    for update in updates:
        velocity = mu * velocity + update
        weight -= velocity
    assert -weight == pytest.approx(momentum_weights(steps, mu) @ updates, rel=1e-12)
    assert math.isclose(momentum_weights(1, 0.3)[0], 1.0)
