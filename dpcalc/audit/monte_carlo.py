"""The many-run (Monte Carlo) audit: R DP-SGD runs of a small model at the audited run's
sampling rate q, noise multiplier σ, clipping norm C and number of steps, half of them with one
canary and half without; a threshold test on the canary's score; Clopper–Pearson bounds on its
error rates (dpcalc.audit.bounds; Jagielski, Ullman, Oprea 2020; Nasr et al. 2021).

The small model is logistic regression on a synthetic 2-class task of N' examples with
B'/N' = B/N (so the same q and steps). Its features get one extra column that is always 0: the
gradient canary writes C on that column's first weight, a coordinate no training example's
gradient touches, so the auditor's reading there is exactly the canary plus N(0, σ²C²) noise —
the Poisson-subsampled Gaussian pair itself, where an audit can come closest to the certified
lower bound.

The threshold must not depend on the runs it is evaluated on:
- gradient canaries: planned before the runs from a simulation of the subsampled Gaussian pair
  (the mechanism the auditor claims to audit), so all R runs enter the bound;
- input canaries: chosen on the first half of the runs (calibration), bounded on the second.

Shuffled runs (--sampling shuffle, zero-out or replace-one) keep the run's b = ⌈N/B⌉ batches
per epoch and its steps: N' = 2b − 1 examples plus the canary's slot, shuffled into b batches of
2, every example a crafted record whose clipped gradient is −C on the canary's coordinate, so
the audited instance is Chua et al. 2024's displacement pair (dpcalc.audit.shuffle), and the
threshold is planned from that pair.
"""
from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from typing import Callable

import numpy as np

from dpcalc.audit.bounds import (best_threshold, epsilon_lower_from_counts, monte_carlo_bound,
                                 monte_carlo_ceiling)
from dpcalc.audit.canaries import (GradientCanaries, InputCanaries, mislabelled_examples,
                                   parameter_shapes)
from dpcalc.audit.dirac import LAST_MODEL
from dpcalc.audit.experiment import (DEFAULT_AUDIT_STEPS, MAX_AUDIT_STEPS, MONTE_CARLO_METHOD,
                                     AuditResult, AuditSettings, canary_generator)
from dpcalc.errors import DpcalcError

SMALL_FEATURES = 4          # informative synthetic features (plus the zero column)
SMALL_MIN_TRAIN = 100       # N' at least this
SMALL_MAX_TRAIN = 20_000    # beyond, q is approximated by a fraction with this denominator
SMALL_LEARNING_RATE = 0.1   # privacy does not depend on it; small keeps every run finite
PILOT_DRAWS = 2 * 10**7     # normal draws of the threshold-planning simulation
PILOT_OUTCOMES = 200        # simulated audit outcomes per candidate threshold
# shuffled runs: B' = 2, N' = 2b − 1 examples plus the canary's slot = b batches of exactly 2
SHUFFLE_BATCH = 2
# The documented size (AuditSettings.max_steps; the CLI default DEFAULT_AUDIT_STEPS): at most this many
# DP-SGD steps over all runs (runs × steps per run). benchmarks/bench_audit.py measures 0.3-1.3
# ms per step on one core of a shared machine (4-step runs pay more per step: per-run set-up),
# the range the refusal quotes.
SECONDS_PER_STEP = (3e-4, 1.3e-3)


def small_task_size(batch_size: int, n_train: int) -> tuple[int, int]:
    """(B', N') with B'/N' = B/N and N' ≥ SMALL_MIN_TRAIN (N' ≤ SMALL_MAX_TRAIN, where B/N is
    replaced by its closest fraction with that denominator)."""
    rate = Fraction(batch_size, n_train)
    if rate.denominator > SMALL_MAX_TRAIN:
        rate = rate.limit_denominator(SMALL_MAX_TRAIN)
    scale = math.ceil(SMALL_MIN_TRAIN / rate.denominator)
    return max(1, rate.numerator) * scale, rate.denominator * scale


def small_task(n_train: int, seed: int):
    """(train, test) Splits of the synthetic 2-class task, the last feature column all 0."""
    from dpcalc.dpsgd.data import Split, make_synthetic_task

    n_test = max(20, n_train // 4)
    dataset = make_synthetic_task(n_samples=n_train + n_test, n_features=SMALL_FEATURES,
                                  n_classes=2, informative_features=2, seed=seed)
    features = np.hstack([dataset.features, np.zeros((dataset.n_samples, 1))])
    return (Split(features[:n_train], dataset.labels[:n_train], 2),
            Split(features[n_train:], dataset.labels[n_train:], 2))


def planned_threshold(law, delta: float, alpha: float, positives: int, negatives: int,
                      seed: int) -> float:
    """A threshold for the gradient canary's score, fixed before any audit run: simulate the
    score under the pair the run claims (``law``, a dpcalc.audit.guesses.ScoreLaw: Poisson,
    in x_t ~ N(b_t, σ²) with b_t ~ Bernoulli(q), out x_t ~ N(0, σ²); or the epoch pair of
    dpcalc.audit.shuffle) and keep the threshold whose bound, averaged over the outcomes of
    ``positives`` and ``negatives`` runs, is largest."""
    rng = canary_generator(seed, 1)
    draws = int(min(50_000, max(2_000, PILOT_DRAWS // max(law.steps, 1))))

    def scores(member: bool) -> np.ndarray:
        return np.sort(law.simulate(rng, draws, member))

    scores_in, scores_out = scores(True), scores(False)
    false_positive_rates = np.logspace(math.log10(0.5 / negatives), math.log10(0.5), 60)
    thresholds = np.quantile(scores_out, 1.0 - false_positive_rates)
    best_value, best_at = -1.0, float(thresholds[-1])
    for threshold in thresholds:
        true_rate = 1.0 - np.searchsorted(scores_in, threshold) / draws
        false_rate = 1.0 - np.searchsorted(scores_out, threshold) / draws
        # the mean bound over the counts the runs may give, not the bound at the mean counts:
        # thresholds far in the tail look best at the mean but scatter widely
        true_counts = rng.binomial(positives, true_rate, PILOT_OUTCOMES)
        false_counts = rng.binomial(negatives, false_rate, PILOT_OUTCOMES)
        value = float(np.mean(epsilon_lower_from_counts(true_counts, positives, false_counts,
                                                        negatives, delta, alpha)))
        if value > best_value:
            best_value, best_at = value, float(threshold)
    return best_at


def monte_carlo_plan(config, n_train: int):
    """(small config, N', steps) of the audit runs for ``config`` (a TrainingConfig for
    ``n_train`` examples): the run's q (or b batches per epoch), σ, C and steps."""
    from dpcalc.dpsgd import planned_steps

    if config.sampling == "shuffle":
        batches = math.ceil(n_train / config.batch_size)
        batch_size, size = SHUFFLE_BATCH, SHUFFLE_BATCH * batches - 1
    else:
        batch_size, size = small_task_size(config.batch_size, n_train)
    small = replace(config, batch_size=batch_size, hidden_units=0, momentum=0.0,
                    learning_rate=SMALL_LEARNING_RATE,
                    sampling="shuffle" if config.sampling == "shuffle" else "poisson")
    return small, size, planned_steps(small, size)


def check_monte_carlo_size(runs: int, config, n_train: int,
                           limit: int = DEFAULT_AUDIT_STEPS) -> int:
    """The audit's DP-SGD steps (runs × steps per run); past ``limit`` (--max-audit-steps) a
    DpcalcError names the limit and the ways out."""
    steps = monte_carlo_plan(config, n_train)[2]
    total = runs * steps
    if total > limit:
        minutes = "-".join(f"{limit * seconds / 60:.2g}" for seconds in SECONDS_PER_STEP)
        raise_it = (f", or --max-audit-steps {total} to run it" if total <= MAX_AUDIT_STEPS
                    else f" (--max-audit-steps raises the limit up to {MAX_AUDIT_STEPS})")
        raise DpcalcError(
            f"--audit-runs {runs} needs {runs} runs x {steps} steps = {total} DP-SGD steps; a "
            f"Monte Carlo audit runs at most {limit} (about {minutes} min): give --audit-runs "
            f"{max(limit // steps, 1)} or fewer, fewer --epochs, the one-run audit (--audit)"
            f"{raise_it}")
    return total


def monte_carlo_audit(settings: AuditSettings, config, n_train: int,
                      on_run: Callable[[int, int], None] | None = None) -> AuditResult:
    """Run ``settings.runs`` small DP-SGD runs at the (q, σ, C, steps) of ``config`` (a
    dpcalc.dpsgd.TrainingConfig for ``n_train`` examples), even-numbered runs with the canary;
    ``on_run(done, total)`` after each. ``config.sampling == "shuffle"``: the runs shuffle too,
    with the run's b = ⌈N/B⌉ batches per epoch (shuffled_task). Under the last-model threat
    model the gradient canary's score is read from the final weights only: −B·w_T/(ηC), the sum
    of its readings (dpcalc.audit.dirac)."""
    from dpcalc.audit.guesses import ScoreLaw
    from dpcalc.dpsgd import train_dp_sgd

    shuffled = config.sampling == "shuffle"
    small, size, steps = monte_carlo_plan(config, n_train)
    check_monte_carlo_size(settings.runs, config, n_train, settings.max_steps)
    batch_size = small.batch_size
    batches = math.ceil(size / batch_size) if shuffled else 0
    train, test = small_task(size, settings.seed)
    sampling_rate = 1.0 / batches if shuffled else batch_size / size
    shapes = parameter_shapes(train.n_features, 2, 0)
    canary_coordinate = (train.n_features - 1) * 2  # weight of the zero column, class 0
    canary_features, canary_labels = mislabelled_examples(train, 1, canary_generator(
        settings.seed, 2))
    last_model = settings.threat_model == LAST_MODEL
    runs = settings.runs
    scores = np.empty(runs)
    members = np.arange(runs) % 2 == 0
    for run in range(runs):
        rng = canary_generator(settings.seed, 3, run)
        run_config = replace(small, seed=int(rng.integers(0, 2**31 - 1)))
        included = members[run:run + 1]
        if shuffled:
            from dpcalc.audit.shuffle import ShuffledGradientCanaries

            hook = ShuffledGradientCanaries(np.array([canary_coordinate]), shapes, included,
                                            batches, small.noise_multiplier, small.clip_norm,
                                            batch_size, settings.adjacency, crafted_others=True)
        elif settings.canary == "gradient":
            hook = GradientCanaries(np.array([canary_coordinate]), shapes, included,
                                    sampling_rate, small.noise_multiplier, small.clip_norm,
                                    batch_size, rng)
        else:
            hook = InputCanaries(canary_features, canary_labels, included, sampling_rate,
                                 small.clip_norm, rng)
        history = train_dp_sgd(run_config, train, test, canaries=hook)
        if last_model and settings.canary == "gradient":  # the final weights only
            scores[run] = -history.params[0].reshape(-1)[canary_coordinate] * batch_size / (
                small.learning_rate * small.clip_norm)
        else:
            scores[run] = hook.final_scores(_model(train), history.params)[0]
        if on_run is not None:
            on_run(run + 1, runs)
    alpha = settings.beta
    if settings.canary == "gradient":
        law = ScoreLaw(sampling_rate, small.noise_multiplier, steps, settings.threat_model,
                       small.momentum, (batches, hook.shifts) if shuffled else None)
        threshold = planned_threshold(law, settings.delta, alpha, int(members.sum()),
                                      int((~members).sum()), settings.seed)
        rule = f"planned before the runs from the {law.pair}; all runs bounded"
        evaluated = np.ones(runs, dtype=bool)
    else:
        calibration = np.arange(runs) < runs // 2
        threshold = best_threshold(scores[calibration & members],
                                   scores[calibration & ~members], settings.delta, alpha)
        rule = f"chosen on runs 1-{runs // 2} (calibration); bounded on the other {runs - runs // 2}"
        evaluated = ~calibration
    bound = monte_carlo_bound(scores[evaluated & members], scores[evaluated & ~members],
                              threshold, settings.delta, alpha)
    return AuditResult(
        mode="monte-carlo", canary=settings.canary, epsilon_lower=bound.epsilon_lower,
        confidence=settings.confidence, delta=settings.delta, sampling_rate=sampling_rate,
        noise_multiplier=small.noise_multiplier, steps=steps, canaries=1, runs=runs,
        method=MONTE_CARLO_METHOD, true_positives=bound.true_positives,
        positives=bound.positives, false_positives=bound.false_positives,
        negatives=bound.negatives, threshold=bound.threshold, threshold_rule=rule,
        sampling=small.sampling, adjacency=settings.adjacency if shuffled else "add-remove",
        threat_model=settings.threat_model,
        ceiling=monte_carlo_ceiling(bound.positives, bound.negatives, settings.delta, alpha))


def _model(train):
    from dpcalc.dpsgd.models import build_model

    return build_model(train.n_features, 2, 0)
