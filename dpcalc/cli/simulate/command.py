"""`dpcalc simulate`: train a model with DP-SGD in NumPy and watch ε grow while it learns.

The engine (dpcalc.dpsgd) and NumPy are imported inside the command, so the other
commands do not pay for them at start-up.
"""
from __future__ import annotations

from dataclasses import replace
from enum import Enum
from typing import TYPE_CHECKING, Optional

import typer

from dpcalc.cli import options as opt
from dpcalc.cli.simulate import audit as audit_opt
from dpcalc.cli.output.render import OutputFormat, warn
from dpcalc.cli.simulate.accounting import (LiveAccountant, accounted_epoch_numbers,
                                            accounting_model, calibrate_sigma, SHUFFLE_NOTE,
                                            certificate_applies, certified_epsilon,
                                            epsilon_for_steps, group_epsilon_in_background,
                                            group_setting)
from dpcalc.cli.simulate.model import (AuditOutcome, DataChoice, EpochRow, SimulationOutcome,
                                       SimulationRequest)
from dpcalc.cli.simulate.setup import (data_choice_from_options, echoed_inputs, load_splits,
                                       noise_choice)
from dpcalc.errors import DpcalcError
from dpcalc.params import check_count, check_delta, check_open_interval, check_range

if TYPE_CHECKING:
    from dpcalc.dpsgd import EpochRecord, TrainingConfig

DEFAULT_SIGMA = 1.0
SHUFFLE_WARNING = ("--sampling shuffle runs shuffled epochs, but under add/remove adjacency dpcalc "
                   "has no certificate for them: no ε is reported for this run; the Poisson figure "
                   "(q = B/N) is shown for comparison only and does NOT apply to shuffled batches "
                   "(give --adjacency zero-out or replace-one for certified shuffle bounds)")
SHUFFLE_CALIBRATION = ("--target-epsilon cannot be met for --sampling shuffle under add/remove "
                       "adjacency: dpcalc has no certified ε for it to calibrate against; give "
                       "--sigma, or --adjacency zero-out or replace-one")


# ---------------------------------------------------------------- options
class Sampling(str, Enum):
    """dpcalc.dpsgd.train.SAMPLING_MODES (kept here so start-up does not import NumPy)."""

    poisson = "poisson"
    fixed = "fixed"
    shuffle = "shuffle"
    balls_in_bins = "balls-in-bins"


class Activation(str, Enum):
    """dpcalc.dpsgd.models.ACTIVATIONS."""

    tanh = "tanh"
    relu = "relu"


BATCH_SIZE = typer.Option("256", "--batch-size", metavar="INT",
                          help="Expected batch size B; q = B/N_train.")
EPOCHS = typer.Option("5", "--epochs", metavar="FLOAT",
                      help="Epochs > 0; steps = ceil(epochs·N_train/B).")
SIGMA = typer.Option(None, *opt.SIGMA_NAMES, metavar="FLOAT",
                     help="Noise multiplier σ > 0 (noise std / clip norm). Default 1, "
                          "or calibrated by --target-epsilon.")
TARGET_EPSILON = typer.Option(None, *opt.TARGET_EPSILON_NAMES, "-e", metavar="FLOAT",
                              help="Calibrate σ before training: the smallest σ whose certified "
                                   "pb ε over the planned steps is ≤ this.")
CLIP_NORM = typer.Option("1", "--clip-norm", metavar="FLOAT",
                         help="Per-example clipping norm C > 0 (L2 over all parameters).")
LEARNING_RATE = typer.Option("2", "--learning-rate", metavar="FLOAT", help="SGD step size > 0.")
MOMENTUM = typer.Option("0", "--momentum", metavar="FLOAT", help="SGD momentum in [0, 1).")
HIDDEN = typer.Option("0", "--hidden", metavar="INT",
                      help="Hidden units of a one-hidden-layer MLP; 0 = logistic regression.")
ACTIVATION = typer.Option(Activation.tanh, "--activation", case_sensitive=False,
                          help="MLP activation.")
SAMPLING = typer.Option(Sampling.poisson, "--sampling", case_sensitive=False,
                        help="Batches: poisson (rate q = B/N), fixed (B of N without replacement "
                             "each step), shuffle (shuffled epochs of ⌈N/B⌉ batches) or "
                             "balls-in-bins (each example in one random step per epoch), each "
                             "accounted for what it is; shuffle under add/remove adjacency has no "
                             "certificate: ε is shown as n/a, with the Poisson figure labelled as not applying.")
DATA = typer.Option(None, "--data", metavar="FILE",
                    help="A .csv (header, numeric features, a label column) or .npz (arrays X, y) "
                         "file. Default: a seeded synthetic task.")
LABEL = typer.Option(None, "--label", metavar="COLUMN",
                     help="With --data: the label column (.csv, default 'label' or the last "
                          "column) or array (.npz, default 'y').")
SAMPLES = typer.Option(None, "--samples", metavar="INT",
                       help="Synthetic task: number of samples (default 20000).")
FEATURES = typer.Option(None, "--features", metavar="INT",
                        help="Synthetic task: number of features (default 50).")
CLASSES = typer.Option(None, "--classes", metavar="INT",
                       help="Synthetic task: number of classes (default 20).")
TEST_FRACTION = typer.Option("0.2", "--test-fraction", metavar="FLOAT",
                             help="Share of the data held out for testing, in (0, 1).")
SEED = typer.Option("0", "--seed", metavar="INT",
                    help="Seed of the synthetic task, the split and training: same seed, "
                         "same output, bit for bit.")
BASELINE = typer.Option(False, "--baseline",
                        help="Also train the same model without clipping or noise.")
GROUP_SIZE = typer.Option(None, "--k", metavar="INT",
                          help="Also report the certified ε protecting any k records together "
                               "(group privacy, 1 ≤ k ≤ 64).")
FORMAT = typer.Option(OutputFormat.table, "--format", "-f", case_sensitive=False,
                      help="Output: table, json, or plain (the final ε only).")


# ---------------------------------------------------------------- the command
def simulate_command(
    batch_size: str = BATCH_SIZE,
    epochs: str = EPOCHS,
    sigma: Optional[str] = SIGMA,
    target_epsilon: Optional[str] = TARGET_EPSILON,
    delta: str = opt.DELTA,
    clip_norm: str = CLIP_NORM,
    learning_rate: str = LEARNING_RATE,
    momentum: str = MOMENTUM,
    hidden: str = HIDDEN,
    activation: Activation = ACTIVATION,
    sampling: Sampling = SAMPLING,
    adjacency: str = opt.ADJACENCY,
    data: Optional[str] = DATA,
    label: Optional[str] = LABEL,
    samples: Optional[str] = SAMPLES,
    features: Optional[str] = FEATURES,
    classes: Optional[str] = CLASSES,
    test_fraction: str = TEST_FRACTION,
    seed: str = SEED,
    baseline: bool = BASELINE,
    group_size: Optional[str] = GROUP_SIZE,
    audit: bool = audit_opt.AUDIT,
    audit_runs: Optional[str] = audit_opt.AUDIT_RUNS,
    canary: audit_opt.Canary = audit_opt.CANARY,
    canaries: Optional[str] = audit_opt.CANARIES,
    audit_threat_model: Optional[audit_opt.ThreatModel] = audit_opt.AUDIT_THREAT_MODEL,
    audit_confidence: str = audit_opt.AUDIT_CONFIDENCE,
    max_audit_steps: Optional[str] = audit_opt.MAX_AUDIT_STEPS,
    max_epsilon: Optional[str] = opt.MAX_EPSILON,
    output_format: OutputFormat = FORMAT,
) -> None:
    """Train a model with DP-SGD (NumPy) and watch ε grow while it learns.

    Batches drawn by --sampling (Poisson at q = B/N_train by default), per-example
    clipping to C, Gaussian noise of std σC. After every epoch ε is computed for the steps
    run so far under the sampler actually used and --adjacency (pb: certified upper and
    lower bound; rdp beside it). --baseline trains the same model without clipping or
    noise to show what privacy costs in accuracy. --audit (one run) or --audit-runs R
    (Monte Carlo) adds an empirical ε lower bound from canaries next to pb's certified bounds.

    Example: dpcalc simulate --epochs 3 --sigma 1 --baseline

    Example: dpcalc simulate --sigma 0.6 --audit

    Example: dpcalc simulate --epochs 5 --target-epsilon 2 --max-epsilon 2 --format json
    """
    from dpcalc.cli.blas_threads import single_blas_thread

    single_blas_thread()  # before NumPy loads (blas_threads.py)
    from dpcalc.models.samplers import parse_adjacency
    from dpcalc.cli.simulate.output import emit_simulation

    from dpcalc.cli.output.budget import check_budget, parse_max_epsilon

    relation = parse_adjacency(adjacency)
    noise, target = noise_choice(sigma, target_epsilon)
    gate = parse_max_epsilon(max_epsilon)
    target_delta = check_delta(delta)
    group = None
    if group_size is not None:
        from dpcalc.group.pairs import MAX_GROUP_SIZE

        group = check_count(group_size, "--k", maximum=MAX_GROUP_SIZE)
    hidden_units = check_count(hidden, "--hidden", minimum=0, maximum=10_000)
    data_choice = data_choice_from_options(data, label, samples, features, classes)
    random_seed = check_count(seed, "--seed", minimum=0)
    fraction = check_open_interval(test_fraction, "--test-fraction", 0.0, 1.0)
    audit_settings = audit_opt.audit_settings(audit, audit_runs, canary, canaries,
                                              audit_confidence, target_delta, random_seed,
                                              audit_threat_model, max_audit_steps)
    request = SimulationRequest(
        data=data_choice, test_fraction=fraction, seed=random_seed, with_baseline=baseline,
        group_size=group, delta=target_delta, noise_multiplier=noise, target_epsilon=target,
        training=dict(batch_size=batch_size, epochs=epochs, clip_norm=clip_norm,
                      learning_rate=learning_rate, momentum=momentum,
                      hidden_units=hidden_units, activation=Activation(activation).value,
                      sampling=Sampling(sampling).value),
        adjacency=relation, audit=audit_settings)
    outcome = run_simulation(request)
    if outcome.audit is not None and not outcome.audit.verdict.consistent:
        warn(outcome.audit.verdict.text)
    final = outcome.final.epsilon
    budget = check_budget(gate, "pb", [None if final is None else final.epsilon])
    emit_simulation(outcome, output_format, budget)


def _training_settings(settings: dict) -> dict:
    """Option text for TrainingConfig, which validates ranges under the same flag names."""
    return {**settings,
            "momentum": check_range(settings["momentum"], "--momentum", 0.0, 1.0,
                                    low_open=False)}


def run_simulation(request: SimulationRequest, show_progress: bool = True,
                   console=None) -> SimulationOutcome:
    """Load, (calibrate,) train with live accounting, (baseline,) and collect the outcome.

    ``console``: where the progress bar goes (default stderr, drawn only on a terminal).
    """
    from dpcalc.cli.simulate.output import open_progress
    from dpcalc.dpsgd import (TrainingConfig, epoch_end_steps, planned_steps, train_baseline,
                              train_dp_sgd)
    from dpcalc.dpsgd.budget import check_run

    delta, group_size = request.delta, request.group_size
    sigma = DEFAULT_SIGMA if request.noise_multiplier is None else request.noise_multiplier
    config = TrainingConfig(noise_multiplier=sigma,
                            seed=request.seed, **_training_settings(request.training))
    train, test, source = load_splits(request.data, request.test_fraction, request.seed)
    n_train = train.n_samples
    total_steps = planned_steps(config, n_train)
    check_run(config.batch_size, total_steps, train.n_features, train.n_classes,
              config.hidden_units)
    sampling_rate = config.batch_size / n_train
    if request.audit is not None:  # before any warning: a refused audit is one line
        from dpcalc.audit import check_auditable, check_monte_carlo_size

        check_auditable(config.sampling, request.adjacency, request.audit.canary,
                        request.audit.threat_model)
        request = replace(request, audit=replace(request.audit, adjacency=request.adjacency))
        if request.audit.mode == "monte-carlo":
            check_monte_carlo_size(request.audit.runs, config, n_train, request.audit.max_steps)
    model = accounting_model(config.sampling, request.adjacency)
    run_model = (config.sampling, request.adjacency)
    applies = certificate_applies(*run_model)
    notes = []
    if group_size is not None:  # a bad --k fails before training, and before any warning
        group_setting(group_size, config.batch_size, n_train, config.noise_multiplier,
                      total_steps, run_model)
    if not applies:
        if request.target_epsilon is not None:
            raise DpcalcError(SHUFFLE_CALIBRATION)
        warn(SHUFFLE_WARNING)
        notes.append(SHUFFLE_NOTE)
    opt.warn_large_delta(delta, n_train)
    calibration = None
    if request.target_epsilon is not None:
        sigma, calibrated_epsilon, evaluations = calibrate_sigma(
            request.target_epsilon, sampling_rate, total_steps, delta, model)
        config = replace(config, noise_multiplier=sigma)
        calibration = {"target_epsilon": request.target_epsilon, "epsilon": calibrated_epsilon,
                       "evaluations": evaluations}
    expected_epochs = len(epoch_end_steps(config, n_train))
    accounted = accounted_epoch_numbers(expected_epochs)
    if accounted is not None:
        notes.append(f"ε computed at {len(accounted | {expected_epochs})} of {expected_epochs} "
                     f"epochs (evenly spaced, and the last) to keep accounting cheap; the others "
                     f"show no ε")
    live = LiveAccountant(sampling_rate, config.noise_multiplier, delta, total_steps, accounted,
                          model, tuple(epoch_end_steps(config, n_train)), applies,
                          final_by_point=calibration is not None)
    live.start()  # ε of the planned epochs, computed while the model trains
    group_job = None
    if group_size is not None:  # for the planned steps, also while the model trains
        group_job = group_epsilon_in_background(
            group_setting(group_size, config.batch_size, n_train, config.noise_multiplier,
                          total_steps, run_model), delta)
    inputs = echoed_inputs(config, train, test, source, request, sampling_rate, total_steps,
                     calibration, run_model, applies)
    canaries = None
    if request.audit is not None and request.audit.mode == "one-run":
        from dpcalc.audit import one_run_canaries

        canaries = one_run_canaries(request.audit, config, train)
    rows: list[EpochRow] = []
    baseline_record = audit = None
    with open_progress(enabled=show_progress, console=console) as progress:
        progress.start("DP-SGD", total_steps)

        def on_epoch(record: "EpochRecord") -> None:
            rows.append(live.row(record))
            progress.epoch_done(rows[-1], expected_epochs)

        history = train_dp_sgd(config, train, test, on_step=progress.step, on_epoch=on_epoch,
                               canaries=canaries)
        if request.with_baseline:
            progress.start("baseline", total_steps)
            baseline_record = train_baseline(config, train, test, on_step=progress.step).final
        live.settle()
        progress.epoch_settled()
        if request.audit is not None:
            audit = run_audit(request, config, n_train, canaries, history, rows[-1], progress)
    # every run ends after the planned steps (epoch_end_steps ends there)
    group = None if group_job is None else group_job.result()
    return SimulationOutcome(inputs, rows, total_steps, baseline_record, group, notes, audit)


def run_audit(request: SimulationRequest, config: "TrainingConfig", n_train: int, canaries,
              history, final: EpochRow, progress) -> AuditOutcome:
    """Finish the one-run audit (or run the Monte Carlo one) and set it beside pb's certified
    bounds for the same q, σ, steps and δ."""
    from dpcalc.audit import finish_one_run, monte_carlo_audit, verdict
    from dpcalc.dpsgd import StepRecord

    settings = request.audit
    if settings.mode == "one-run":
        result = finish_one_run(settings, canaries, history)
    else:
        progress.start("audit runs", settings.runs)
        clock = audit_opt.RunClock(settings.runs, progress.note)

        def on_run(done: int, total: int) -> None:
            progress.step(StepRecord(done, total, 0))
            clock.run_done(done)

        result = monte_carlo_audit(settings, config, n_train, on_run=on_run)
    certified = final.epsilon
    audited = (result.sampling_rate, result.steps, result.sampling)
    if audited != (history.sampling_rate, final.record.steps_done, config.sampling):
        certified = epsilon_for_steps(("pb",), result.sampling_rate, result.noise_multiplier,
                                      result.steps, settings.delta,
                                      (result.sampling, result.adjacency))[0]
    upper = None if certified is None else certified.epsilon
    # shuffled runs: pb's Poisson figure for the same q and steps, which does NOT apply to them
    poisson = None if certified is None else certified.details.get(
        "epsilon_poisson_not_applicable")
    return AuditOutcome(result, certified, verdict(result.epsilon_lower, upper,
                                                   result.confidence), poisson)


__all__ = ["simulate_command", "run_simulation", "SimulationRequest", "SimulationOutcome",
           "EpochRow", "DataChoice", "data_choice_from_options", "accounted_epoch_numbers",
           "certified_epsilon", "SHUFFLE_WARNING"]
