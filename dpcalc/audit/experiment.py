"""What an audit is asked (AuditSettings), what it found (AuditResult), the one-run audit of a
DP-SGD run (Steinke, Nasr, Jagielski 2023) and the verdict against the certified interval.

The one-run audit rides along the run it audits: m canaries, each included with probability ½
(Steinke et al. 2023, §3), are sampled with the run's sampler at every step next to the
training examples. Gradient canaries are Dirac canaries on extra input columns no example
uses (dpcalc.audit.dirac), scored from what the threat model lets the auditor see; the numbers
of "in" and "out" guesses are fixed before training on simulated audits (dpcalc.audit.guesses),
and dpcalc.audit.bounds turns the right guesses into an ε lower bound (Cor. 5.4, arXiv v1).
Under --sampling shuffle (zero-out or replace-one) the canaries take slots in the shuffled
batches, one step per epoch each.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpcalc.audit.bounds import one_run_bound
from dpcalc.audit.canaries import CANARY_KINDS, InputCanaries, mislabelled_examples
from dpcalc.audit.dirac import ALL_ITERATES, LAST_MODEL, THREAT_MODELS, DiracCanaries
from dpcalc.errors import DpcalcError
from dpcalc.params import check_count, check_delta, check_open_interval

AUDIT_MODES = ("one-run", "monte-carlo")
DEFAULT_CANARIES = 1000
MAX_CANARIES = 100_000
DEFAULT_CONFIDENCE = 0.95
MIN_RUNS, MAX_RUNS = 20, 100_000
# The CLI's Monte Carlo audit runs at most DEFAULT_AUDIT_STEPS DP-SGD steps in all (runs × steps
# per run; about 1-4 minutes, benchmarks/bench_audit.py) unless --max-audit-steps raises it, up
# to MAX_AUDIT_STEPS, the library's default (issue 30 §3: each slow command states its size).
DEFAULT_AUDIT_STEPS, MAX_AUDIT_STEPS = 200_000, 10_000_000
# Stream tags: the audit's randomness never touches the training run's own streams, so the
# batches and noise of an audited run are those of the same run without --audit.
_CANARY_STREAM = 0xA0D17
_PLAN_STREAM, _CALIBRATION_STREAM = 4, 5  # sub-streams: the guess planner, the input split

ONE_RUN_METHOD = ("Steinke, Nasr, Jagielski 2023 (one training run), Cor. 5.4 with the δ term; "
                  "guess counts fixed without the audited canaries' scores")
MONTE_CARLO_METHOD = ("Clopper-Pearson bounds on FPR and FNR at (1 - confidence)/2 each, "
                      "Kairouz, Oh, Viswanath 2015 Thm 2.1")


@dataclass(frozen=True)
class AuditSettings:
    """A validated audit request; messages name the CLI flags."""

    mode: str = "one-run"
    canary: str = "gradient"
    canaries: int = DEFAULT_CANARIES   # one-run: m
    runs: int = 0                      # monte-carlo: R
    confidence: float = DEFAULT_CONFIDENCE
    delta: float = 1e-5
    seed: int = 0
    adjacency: str = "add-remove"      # the run's; shuffled runs: zero-out or replace-one
    threat_model: str | None = None    # None: all-iterates (gradient) or last-model (input)
    max_steps: int = MAX_AUDIT_STEPS   # monte-carlo: runs × steps at most this (CLI: 200 000)

    def __post_init__(self) -> None:
        if self.mode not in AUDIT_MODES:
            raise DpcalcError(f"audit mode must be one of {', '.join(AUDIT_MODES)}; "
                              f"got {self.mode!r}")
        if self.canary not in CANARY_KINDS:
            raise DpcalcError(f"--canary must be one of {', '.join(CANARY_KINDS)}; "
                              f"got {self.canary!r}")
        object.__setattr__(self, "canaries", check_count(self.canaries, "--canaries", minimum=2,
                                                         maximum=MAX_CANARIES))
        if self.mode == "monte-carlo":
            object.__setattr__(self, "runs", check_count(self.runs, "--audit-runs",
                                                         minimum=MIN_RUNS, maximum=MAX_RUNS))
        object.__setattr__(self, "max_steps", check_count(self.max_steps, "--max-audit-steps",
                                                          maximum=MAX_AUDIT_STEPS))
        object.__setattr__(self, "confidence", check_open_interval(
            self.confidence, "--audit-confidence", 0.0, 1.0))
        object.__setattr__(self, "delta", check_delta(self.delta))
        object.__setattr__(self, "seed", check_count(self.seed, "--seed", minimum=0))
        default = ALL_ITERATES if self.canary == "gradient" else LAST_MODEL
        threat_model = default if self.threat_model is None else self.threat_model
        if threat_model not in THREAT_MODELS:
            raise DpcalcError(f"--audit-threat-model must be one of {', '.join(THREAT_MODELS)}; "
                              f"got {threat_model!r}")
        if self.canary == "input" and threat_model != LAST_MODEL:
            raise DpcalcError("--canary input is scored on the last model only: give "
                              "--audit-threat-model last-model, or --canary gradient")
        object.__setattr__(self, "threat_model", threat_model)

    @property
    def beta(self) -> float:
        """The chance the bound is wrong: 1 − confidence."""
        return 1.0 - self.confidence


@dataclass(frozen=True)
class AuditResult:
    """An empirical ε lower bound: it holds with probability ≥ ``confidence`` for the run's
    (q, σ, steps) at ``delta``. One-run audits fill guesses/correct; Monte Carlo audits the
    test's counts, its threshold and how the threshold was chosen."""

    mode: str
    canary: str
    epsilon_lower: float
    confidence: float
    delta: float
    sampling_rate: float
    noise_multiplier: float
    steps: int
    canaries: int
    runs: int
    method: str
    guesses: int | None = None
    correct: int | None = None
    included: int | None = None
    true_positives: int | None = None
    positives: int | None = None
    false_positives: int | None = None
    negatives: int | None = None
    threshold: float | None = None
    threshold_rule: str | None = None
    sampling: str = "poisson"
    adjacency: str = "add-remove"
    threat_model: str = ALL_ITERATES
    ceiling: float | None = None      # the most these counts can certify (perfect guesses/test)
    guesses_in: int | None = None
    guesses_out: int | None = None
    guess_rule: str | None = None


@dataclass(frozen=True)
class Verdict:
    consistent: bool
    text: str


def verdict(epsilon_lower: float, certified_upper: float | None, confidence: float) -> Verdict:
    """Empirical ≤ certified upper: consistent. Above: with probability ≥ confidence the run is
    less private than certified, so the accounting or the implementation is wrong."""
    if certified_upper is None or math.isnan(certified_upper):
        return Verdict(True, "no certified upper bound to compare with")
    if epsilon_lower <= certified_upper:
        return Verdict(True, "consistent (empirical lower bound ≤ certified upper bound)")
    return Verdict(False, f"INCONSISTENT: empirical lower bound > certified upper bound at "
                          f"{confidence:.0%} confidence: the accounting or the implementation "
                          f"is wrong")


def check_auditable(sampling: str, adjacency: str, canary: str = "gradient",
                    threat_model: str | None = None) -> None:
    """Audits cover the models pb certifies and the canaries can realise: Poisson sampling with
    add/remove adjacency (canaries added or removed, Poisson-sampled), and shuffled batches under
    zero-out or replace-one (gradient canaries placed in the permutation, dpcalc.audit.shuffle).
    Shuffling under add/remove has no certificate in dpcalc, so there is nothing to audit."""
    if sampling == "poisson" and adjacency == "add-remove":
        return
    if sampling == "shuffle" and adjacency in ("zero-out", "replace-one"):
        if canary != "gradient":
            raise DpcalcError(f"--sampling shuffle audits need --canary gradient (canaries placed "
                              f"in the shuffled batches); got --canary {canary}")
        if threat_model not in (None, ALL_ITERATES):
            raise DpcalcError("shuffled audits read every iterate: give --audit-threat-model "
                              "all-iterates with --sampling shuffle")
        return
    raise DpcalcError(f"--audit needs --sampling poisson with --adjacency add-remove, or --sampling "
                      f"shuffle with --adjacency zero-out or replace-one; got --sampling "
                      f"{sampling} --adjacency {adjacency}")


def canary_generator(seed: int, *more: int) -> np.random.Generator:
    """The audit's own random stream (canary choice, membership, sampling)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([_CANARY_STREAM, seed,
                                                                       *more])))


# ---------------------------------------------------------------- one run
def audited_canaries(seed: int, count: int) -> np.ndarray:
    """Input canaries: True for the audited half, False for the ⌊m/2⌋ calibration canaries
    (drawn on a stream of their own), on which the guess counts are chosen."""
    audited = np.ones(count, dtype=bool)
    audited[canary_generator(seed, _CALIBRATION_STREAM).permutation(count)[:count // 2]] = False
    return audited


def one_run_canaries(settings: AuditSettings, config, train) -> DiracCanaries | InputCanaries:
    """The m canaries of a one-run audit of ``config`` (a dpcalc.dpsgd.TrainingConfig) on
    ``train``, each included with probability ½; pass them to train_dp_sgd(canaries=...).
    Gradient canaries carry their guess plan (``.plan``), fixed here, before training."""
    from dpcalc.audit.guesses import ScoreLaw, plan_guesses
    from dpcalc.dpsgd import planned_steps

    rng = canary_generator(settings.seed)
    count = settings.canaries
    included = rng.random(count) < 0.5
    sampling_rate = config.batch_size / train.n_samples
    if settings.canary == "input":
        features, labels = mislabelled_examples(train, count, rng)
        return InputCanaries(features, labels, included, sampling_rate, config.clip_norm, rng)
    steps = planned_steps(config, train.n_samples)
    law_shuffle = None
    if config.sampling == "shuffle":
        batches = math.ceil(train.n_samples / config.batch_size)
        canaries = DiracCanaries(included, 1.0 / batches, config.noise_multiplier,
                                 config.clip_norm, config.batch_size, config.learning_rate,
                                 config.momentum, settings.threat_model, rng,
                                 (batches, settings.adjacency))
        law_shuffle = (batches, canaries.shifts)
        sampling_rate = 1.0 / batches
    else:
        canaries = DiracCanaries(included, sampling_rate, config.noise_multiplier,
                                 config.clip_norm, config.batch_size, config.learning_rate,
                                 config.momentum, settings.threat_model, rng)
    law = ScoreLaw(sampling_rate, config.noise_multiplier, steps, settings.threat_model,
                   config.momentum, law_shuffle)
    canaries.plan = plan_guesses(count, law, settings.delta, settings.beta,
                                 canary_generator(settings.seed, _PLAN_STREAM))
    return canaries


def finish_one_run(settings: AuditSettings, canaries: DiracCanaries | InputCanaries,
                   history) -> AuditResult:
    """Score the canaries on the finished run (a dpcalc.dpsgd.TrainingHistory) and bound ε
    with the counts fixed before (gradient) or on a calibration half (input canaries)."""
    config = history.config
    included = canaries.included
    if getattr(canaries, "extension_size", 0):
        scores = canaries.final_scores(history.extension)
        plan = canaries.plan
    else:
        from dpcalc.audit.guesses import plan_from_calibration
        from dpcalc.dpsgd.models import build_model

        n_features, n_classes = history.params[0].shape[0], history.params[-1].shape[0]
        model = build_model(n_features, n_classes, config.hidden_units, config.activation)
        scores = canaries.final_scores(model, history.params)
        audited = audited_canaries(settings.seed, included.shape[0])
        plan = plan_from_calibration(scores[~audited], included[~audited], int(audited.sum()),
                                     settings.delta, settings.beta)
        scores, included = scores[audited], included[audited]
    bound = one_run_bound(scores, included, plan.guess_in, plan.guess_out, settings.delta,
                          settings.beta)
    return AuditResult(
        mode="one-run", canary=settings.canary, epsilon_lower=bound.epsilon_lower,
        confidence=settings.confidence, delta=settings.delta,
        sampling_rate=history.sampling_rate, noise_multiplier=config.noise_multiplier,
        steps=history.steps, canaries=bound.canaries, runs=1, method=ONE_RUN_METHOD,
        guesses=bound.guesses, correct=bound.correct,
        included=int(np.count_nonzero(included)), sampling=config.sampling,
        adjacency=settings.adjacency, threat_model=settings.threat_model,
        ceiling=bound.ceiling, guesses_in=plan.guess_in, guesses_out=plan.guess_out,
        guess_rule=plan.rule)
