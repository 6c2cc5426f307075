"""`dpcalc sigma`: the smallest noise multiplier that meets a target ε.

Two modes:
- DP-SGD (with --q or --batch-size/--dataset-size, and --steps or --epochs): per
  accountant, the smallest σ whose ε at δ is ≤ the target (safe side);
- one Gaussian mechanism (without them): the analytic σ (Balle & Wang 2018) next to
  the classic formula (Dwork & Roth 2014 Thm A.1), flagged where ε ≥ 1.
"""
from __future__ import annotations

import math
from typing import List, Optional

import typer

from dpcalc.calibration.certify import SigmaResult
from dpcalc.calibration.dpsgd import dpsgd_sigma
from dpcalc.calibration.gaussian import GaussianSigmas, gaussian_mechanism_sigmas

from dpcalc.cli import options as opt
from dpcalc.cli.run_options import RUN, RunFlags, run_options
from dpcalc.cli.output.budget import check_budget, parse_max_epsilon
from dpcalc.cli.progress import run_size, waiting
from dpcalc.cli.output.records import (APPROXIMATION, CERTIFIED, INPUT_LABELS, KIND_COLUMN,
                                       NOT_APPLICABLE_KIND, kind_of, row_kind)
from dpcalc.cli.output.render import (Column, OutputFormat, Report, emit, plain_upper, show_lower,
                                      show_upper)
from dpcalc.cli.schedule_options import model_footnote
from dpcalc.errors import DpcalcError, InvalidResult
from dpcalc.params import check_delta, check_positive, check_range

DEFAULT_PRECISION = "1e-4"

EPSILON_TARGET = typer.Option(None, "--epsilon", "--target-epsilon", "-e", metavar="FLOAT",
                              help="Target ε > 0.")
PRECISION = typer.Option(DEFAULT_PRECISION, "--precision", metavar="FLOAT",
                         help="Relative precision of σ in (0, 0.1]: the σ returned is within this "
                              "factor of the smallest σ meeting the target.")
SENSITIVITY = typer.Option(None, "--sensitivity", metavar="FLOAT",
                           help="Gaussian mechanism only (no --q/--steps): L2 sensitivity Δ > 0, "
                                "default 1. σ is then the noise standard deviation.")

MAX_TPR = typer.Option(None, "--max-tpr", metavar="FLOAT",
                       help="Risk target instead of ε: the certified TPR of the best membership "
                            "test at --at-fpr must be ≤ this (pb).")
AT_FPR = typer.Option(None, "--at-fpr", metavar="FLOAT",
                      help="The false-positive rate of the --max-tpr target, in [1e-12, 1).")
MAX_ADVANTAGE = typer.Option(None, "--max-advantage", metavar="FLOAT",
                             help="Risk target instead of ε: the certified membership advantage "
                                  "max(TPR − FPR) must be ≤ this (pb).")

_DPSGD_FLAGS = ("--q", "--batch-size", "--dataset-size", "--steps", "--epochs", "--phase")
_UNSAFE = "UNSAFE"


def _sigma_digits(precision: float) -> int:
    """Significant digits of σ worth showing at this relative precision (at least 4)."""
    return max(4, min(8, math.ceil(-math.log10(precision)) + 1))


# ------------------------------------------------------------------ DP-SGD mode
def _dpsgd_record(calibration: SigmaResult, target: float, schedule=None) -> dict:
    result = calibration.result
    notes = list(result.notes)
    scaled = {} if schedule is None else {
        "phase_sigmas": [phase.noise_multiplier * calibration.sigma for phase in schedule.phases]}
    if calibration.at_floor:
        notes.insert(0, f"the target is met even at σ = {calibration.sigma:g}, the smallest "
                        "noise multiplier searched")
    return {
        "accountant": calibration.accountant,
        "sigma": calibration.sigma,
        "epsilon": calibration.epsilon,
        "epsilon_lower": result.epsilon_lower,
        "target_epsilon": target,
        "certified": calibration.certified,
        "kind": kind_of(calibration.certified),
        "evaluations": calibration.evaluations,
        "notes": notes,
        **scaled,
    }


def _failed_record(name: str, target: float, error: Exception) -> dict:
    """The row of an accountant that cannot calibrate (a DpcalcError: its note says why) or
    failed inside (kind "error", never certified: accountants/evaluate.py)."""
    from dpcalc.accountants.evaluate import failed_result

    inside = not isinstance(error, DpcalcError) or isinstance(error, InvalidResult)
    notes = list(failed_result(name, error).notes) if inside else [str(error)]
    # no σ: never certified; "error" where it failed inside, else "not applicable"
    return {"accountant": name, "sigma": None, "epsilon": None, "epsilon_lower": None,
            "target_epsilon": target, "certified": False,
            "kind": row_kind(False, None, notes, failed=inside), "evaluations": None,
            "notes": notes}


def _not_applicable_record(name: str, target: float, delta: float, schedule, reason: str,
                           precision: float, tolerance: float) -> dict:
    """A row without σ (kind "not applicable", not certified); pb adds the σ the nearest
    model with a certificate needs for the same run ("nearest_model", a note)."""
    from dpcalc.accountants.epoch_samplers import nearest_note, nearest_schedule

    record = {"accountant": name, "sigma": None, "epsilon": None, "epsilon_lower": None,
              "target_epsilon": target, "certified": False, "kind": NOT_APPLICABLE_KIND,
              "evaluations": None, "notes": [reason]}
    nearest = nearest_schedule(schedule) if name == "pb" else None
    if nearest is not None:
        found = dpsgd_sigma("pb", target, delta, schedule=nearest, precision=precision,
                            tolerance=tolerance)
        record["nearest_model"] = {"sampling": nearest.phases[0].sampling,
                                   "adjacency": nearest.adjacency,
                                   "model": nearest.phases[0].model, "sigma": found.sigma,
                                   "epsilon_upper": found.epsilon,
                                   "epsilon_lower": found.result.epsilon_lower}
        record["notes"].append(nearest_note(nearest.adjacency, f"σ = {show_upper(found.sigma)} "
                                            f"(certified ε ≤ {target:g} at δ = {delta:g})"))
    return record


def _calibrate_all(names: list[str], target: float, delta: float, schedule,
                   precision: float, tolerance: float, scale: bool = False,
                   say=None) -> list[dict]:
    """One record per accountant. A single accountant's failure is the command's error
    (exit 2 for bad input, 70 for a failure inside); with several, a failing one is
    reported in its row (kind "error" for a failure inside, and exit 70 if it is the first
    named: the answer) unless all fail. An accountant that does not apply to the model gets
    a not-applicable row (exit 0). ``scale``: the phases keep their σ and a common
    multiplier is calibrated. ``say``: the spinner's text (the accountant's trial count)."""
    from dpcalc.accountants.evaluate import make_accountant

    records, errors = [], []
    for name in names:
        reason = make_accountant(name).not_applicable(schedule)
        if reason is not None:
            records.append(_not_applicable_record(name, target, delta, schedule, reason,
                                                  precision, tolerance))
            continue
        options = {"tolerance": tolerance} if name == "pb" else {}
        try:
            on_trial = None if say is None else (
                lambda count, sigma, name=name: say(f"{name}: trial {count}, σ = {sigma:.4g}"))
            calibration = dpsgd_sigma(name, target, delta, schedule=schedule,
                                      precision=precision, scale=scale, on_trial=on_trial,
                                      **options)
        except Exception as error:
            if len(names) == 1:
                raise
            errors.append(error)
            records.append(_failed_record(name, target, error))
            continue
        records.append(_dpsgd_record(calibration, target, schedule if scale else None))
    if errors and len(errors) == len(records):
        raise errors[0]
    return records


def _dpsgd_report(records: list[dict], inputs: dict, digits: int,
                  notes: list[str] = (), scale: bool = False) -> Report:
    columns = [
        Column("accountant", "accountant", justify="left"),
        Column("σ multiplier" if scale else "σ", "sigma", lambda value: show_upper(value, digits)),
        Column("ε at σ", "epsilon", show_upper),
        Column("lower bound", "epsilon_lower", show_lower),
        KIND_COLUMN,
        Column("evals", "evaluations", lambda value: "" if value is None else str(value)),
    ]
    footnotes = [model_footnote(inputs), *notes,
                 "σ is rounded up (a larger σ is the safe side); ε is the accountant's value at "
                 "that σ, ≤ the target (pb: certified upper bound, with its certified lower "
                 "bound); evals = ε evaluations."]
    if scale:
        footnotes.insert(1, "σ multiplier m: every phase keeps its own σ_i, times m (phase_sigmas "
                            "in JSON); the smallest common m meeting the target.")
    if any(record["kind"] == APPROXIMATION for record in records):
        footnotes.append("An approximation is not a bound: a σ calibrated with it may not meet "
                         "the target.")
    footnotes += [f"{record['accountant']}: {note}" for record in records for note in record["notes"]]
    return Report(command="sigma", title="Noise multiplier for DP-SGD", inputs=inputs,
                  results=records, columns=columns,
                  plain_columns=[Column("σ", "sigma", plain_upper)], footnotes=footnotes,
                  input_labels=INPUT_LABELS)


# ------------------------------------------------------------------ Gaussian mechanism mode
def _gaussian_records(sigmas: GaussianSigmas) -> list[dict]:
    from dpcalc.models.gaussian import gaussian_delta

    analytic = {
        "accountant": "analytic",
        "mechanism": "gaussian",
        "sigma": sigmas.analytic_sigma,
        "epsilon": sigmas.epsilon,
        "delta_achieved": float(gaussian_delta(sigmas.epsilon, sigmas.analytic_sigma,
                                               sigmas.sensitivity)),
        "safe": True,
        "certified": True,
        "kind": kind_of(True),
        "source": "Balle & Wang 2018",
        "notes": ["smallest σ with δ(ε) ≤ target (analytic Gaussian mechanism, Balle & Wang "
                  "2018 Thm 8)"],
    }
    if sigmas.classic_is_valid:
        classic_note = ("σ = Δ√(2 ln(1.25/δ))/ε, Dwork & Roth 2014 Thm A.1 (valid for ε < 1); "
                        "larger than needed")
    elif sigmas.classic_is_safe:
        classic_note = (f"{_UNSAFE}: Dwork & Roth 2014 Thm A.1 is proven only for ε < 1 "
                        f"(here it happens to give δ = {sigmas.classic_delta:.3g}); use the "
                        "analytic σ")
    else:
        classic_note = (f"{_UNSAFE}: Dwork & Roth 2014 Thm A.1 is proven only for ε < 1; this σ "
                        f"gives δ = {sigmas.classic_delta:.3g} > target {sigmas.delta:g}")
    classic = {
        "accountant": "classic",
        "mechanism": "gaussian",
        "sigma": sigmas.classic_sigma,
        "epsilon": sigmas.epsilon,
        "delta_achieved": sigmas.classic_delta,
        "safe": sigmas.classic_is_valid,
        "certified": sigmas.classic_is_valid,
        "kind": kind_of(sigmas.classic_is_valid),
        "source": "Dwork & Roth Thm A.1",
        "notes": [classic_note],
    }
    return [analytic, classic]


def _gaussian_report(records: list[dict], inputs: dict) -> Report:
    columns = [
        Column("method", "accountant", justify="left"),
        Column("σ", "sigma", lambda value: show_upper(value, 6)),
        Column("true δ at ε", "delta_achieved", lambda value: f"{value:.3g}"),
        Column("status", "safe", lambda value: "ok" if value else f"{_UNSAFE} (ε ≥ 1)",
               justify="left"),
        Column("source", "source", justify="left"),
    ]
    footnotes = ["σ is the noise standard deviation for L2 sensitivity Δ, rounded up."]
    footnotes += [f"{record['accountant']}: {note}" for record in records for note in record["notes"]]
    return Report(command="sigma", title="Noise for one Gaussian mechanism", inputs=inputs,
                  results=records, columns=columns,
                  plain_columns=[Column("σ", "sigma", plain_upper)], footnotes=footnotes,
                  input_labels={**INPUT_LABELS, "sensitivity": "Δ"})


# ------------------------------------------------------------------ risk targets
def _risk_report(calibration, inputs: dict, digits: int) -> Report:
    record = {
        "accountant": "pb",
        "sigma": calibration.sigma,
        "tpr": None if calibration.tpr is None else calibration.tpr.upper,
        "tpr_lower": None if calibration.tpr is None else calibration.tpr.lower,
        "at_fpr": inputs.get("at_fpr"),
        "advantage": calibration.advantage.upper,
        "advantage_lower": calibration.advantage.lower,
        "certified": True,
        "kind": CERTIFIED,
        "evaluations": calibration.evaluations,
        "notes": ([f"the target is met even at σ = {calibration.sigma:g}, the smallest noise "
                   "multiplier searched"] if calibration.at_floor else []),
    }
    columns = [Column("σ", "sigma", lambda value: show_upper(value, digits))]
    if calibration.tpr is not None:
        columns += [Column(f"TPR at FPR {inputs['at_fpr']:g}", "tpr", show_upper),
                    Column("lower bound", "tpr_lower", show_lower)]
    columns += [Column("advantage", "advantage", show_upper),
                Column("lower bound", "advantage_lower", show_lower),
                Column("evals", "evaluations", lambda value: str(value))]
    footnotes = [model_footnote(inputs),
                 "σ is rounded up (a larger σ is the safe side); the figures at that σ are pb's "
                 "certified upper bounds (≤ the targets) with certified lower bounds (`dpcalc "
                 "risk` explains them)."] + record["notes"]
    return Report(command="sigma", title="Noise multiplier for a risk target", inputs=inputs,
                  results=[record], columns=columns,
                  plain_columns=[Column("σ", "sigma", plain_upper)], footnotes=footnotes,
                  input_labels={**INPUT_LABELS, "max_tpr": "max TPR", "at_fpr": "at FPR",
                                "max_advantage": "max advantage"})


def _risk_mode(max_tpr, at_fpr, max_advantage, run, precision: float, tolerance,
               output_format) -> None:
    from dpcalc.risk.calibration import risk_sigma

    tol = check_range(tolerance, "--tolerance", 0.0, 1.0)
    with waiting(f"sigma: calibrating σ (each trial {run_size(run.schedule, ['pb'])})"):
        calibration = risk_sigma(run.schedule, max_tpr=max_tpr, at_fpr=at_fpr,
                                 max_advantage=max_advantage, precision=precision, tolerance=tol)
    targets = {"max_tpr": None if max_tpr is None else float(max_tpr),
               "at_fpr": None if at_fpr is None else float(at_fpr),
               "max_advantage": None if max_advantage is None else float(max_advantage)}
    inputs = {**targets, **{key: value for key, value in run.inputs.items() if key != "sigma"},
              "precision": precision, "accountants": ["pb"]}
    emit(_risk_report(calibration, inputs, _sigma_digits(precision)), output_format)


# ------------------------------------------------------------------ command
@run_options(omit=("sigma",), own={"phase": opt.PHASE_NO_SIGMA})
def sigma_command(
    epsilon: Optional[str] = EPSILON_TARGET,
    max_tpr: Optional[str] = MAX_TPR,
    at_fpr: Optional[str] = AT_FPR,
    max_advantage: Optional[str] = MAX_ADVANTAGE,
    delta: str = opt.DELTA,
    given: RunFlags = RUN,
    accountant: Optional[List[str]] = opt.ACCOUNTANT,
    precision: str = PRECISION,
    tolerance: str = opt.TOLERANCE,
    sensitivity: Optional[str] = SENSITIVITY,
    max_epsilon: Optional[str] = opt.MAX_EPSILON,
    output_format: OutputFormat = opt.FORMAT,
) -> None:
    """Smallest noise multiplier σ whose ε at δ meets a target ε (safe side), or whose
    certified attack risk meets a target (--max-tpr with --at-fpr, --max-advantage).

    With --q (or --batch-size/--dataset-size) and --steps (or --epochs), or --phase, or
    --schedule FILE: DP-SGD under --sampling/--adjacency, per accountant (default pb), one σ
    for every phase; where every phase gives its own σ (sigma=… in each --phase, a sigma
    column in the file), the smallest common multiplier of those σ instead.
    Without them: one Gaussian mechanism, analytic and classic σ side by side (the classic
    formula is flagged where ε ≥ 1). The target may be given as --epsilon or
    --target-epsilon.

    Example: dpcalc sigma --epsilon 3 --q 0.01 --steps 10000

    Example: dpcalc sigma --target-epsilon 1 --target-delta 1e-6 (one Gaussian mechanism)
    """
    relative_precision = check_range(precision, "--precision", 0.0, 0.1, high_open=False)
    if any(value is not None for value in (max_tpr, at_fpr, max_advantage)):
        if epsilon is not None:
            raise DpcalcError("give either --epsilon or a risk target (--max-tpr/--at-fpr, "
                              "--max-advantage), not both")
        if max_epsilon is not None:
            raise DpcalcError("--max-epsilon gates a target ε; a risk target has none (drop it)")
        if accountant or sensitivity is not None:
            raise DpcalcError("a risk target calibrates DP-SGD with pb: drop --accountant and "
                              "--sensitivity")
        run = given.schedule(with_sigma=False)
        _risk_mode(max_tpr, at_fpr, max_advantage, run, relative_precision, tolerance,
                   output_format)
        return
    if epsilon is None:
        raise DpcalcError("give --epsilon (the target ε, > 0), or a risk target (--max-tpr "
                          "with --at-fpr, --max-advantage)")
    target = check_positive(epsilon, "--epsilon", what="target ε")
    target_delta = check_delta(delta)
    gate = parse_max_epsilon(max_epsilon)
    dpsgd_mode = (any(value is not None for value in (given.q, given.batch_size, given.dataset_size,
                                                      given.steps, given.epochs))
                  or bool(given.phase) or given.schedule_file is not None)
    if not dpsgd_mode:
        if accountant:
            raise DpcalcError("--accountant applies to DP-SGD calibration: give --q (or "
                              "--batch-size/--dataset-size) and --steps (or --epochs)")
        scale = 1.0 if sensitivity is None else check_range(sensitivity, "--sensitivity", 0.0, 1e12,
                                                             high_open=False)
        sigmas = gaussian_mechanism_sigmas(target, target_delta, scale)
        inputs = {"epsilon": target, "delta": target_delta, "sensitivity": scale,
                  "mechanism": "gaussian"}
        report = _gaussian_report(_gaussian_records(sigmas), inputs)
        report.budget = check_budget(gate, "analytic", [sigmas.epsilon])
        emit(report, output_format)
        return
    if sensitivity is not None:
        raise DpcalcError("--sensitivity applies to the Gaussian mechanism only (without "
                          f"{'/'.join(_DPSGD_FLAGS)}); DP-SGD's σ is relative to the clipping norm")
    run = given.schedule(with_sigma=False)
    names = opt.accountants(accountant, gate)
    opt.warn_large_delta(target_delta, run.dataset_size)
    tolerance = check_positive(tolerance, "--tolerance")
    with waiting(f"sigma: calibrating σ (each trial {run_size(run.schedule, names)})") as say:
        records = _calibrate_all(names, target, target_delta, run.schedule, relative_precision,
                                 tolerance, run.scaled, say)
    inputs = {"epsilon": target, "delta": target_delta,
              **{key: value for key, value in run.inputs.items() if key != "sigma"},
              "precision": relative_precision, "accountants": names,
              **({"calibrates": "common multiplier of the phases' σ"} if run.scaled else {})}
    report = _dpsgd_report(records, inputs, _sigma_digits(relative_precision), run.notes,
                           run.scaled)
    report.budget = check_budget(gate, records[0]["accountant"], [records[0]["epsilon"]],
                                 records[:1])
    emit(report, output_format)


__all__ = ["sigma_command"]
