"""`dpcalc report`: a reviewer-ready privacy statement (Markdown, or JSON with the same
figures): the model, the run, ε with its certified bounds and the δ vs 1/N check, what it
means for an attacker (`dpcalc risk`), and the caveats that apply."""
from __future__ import annotations

import sys
from typing import List, Optional

from dpcalc import __version__
from dpcalc.accounting.registry import get_accountant
from dpcalc.cli import options as opt
from dpcalc.cli.render import OutputFormat, json_text, plain_upper
from dpcalc.cli.progress import waiting
from dpcalc.cli.risk import BASELINE, FPR, PRIOR, RISK_TOLERANCE, parse_fprs, risk_records
from dpcalc.cli.schedule_options import _phase_fields, build_schedule
from dpcalc.cli.statement import statement_markdown
from dpcalc.params import check_delta, check_range


def _command_line(options: dict) -> str:
    words = ["dpcalc", "report"]
    for flag, value in options.items():
        for item in (value if isinstance(value, list) else [value]):
            if item is not None:
                words += [flag, str(item)]
    return " ".join(words)


def _phases(run, epochs, phase_specs) -> list[dict]:
    if phase_specs:
        echoes = run.inputs["phases"]
        return [{**echo, "epochs": _float_or_none(_phase_fields(spec).get("epochs"))}
                for echo, spec in zip(echoes, phase_specs)]
    inputs = run.inputs
    return [{"q": inputs["q"], "batch_size": inputs["batch_size"],
             "dataset_size": inputs["dataset_size"], "sigma": inputs["sigma"],
             "steps": inputs["steps"], "sampling": inputs["sampling"],
             "epochs": _float_or_none(epochs)}]


def _accountant_words(result) -> str:
    """How pb bounded this run: one dominating pair per step, or an epoch sampler's bounds."""
    if "upper_method" in result.details and "lower_method" in result.details:  # epoch samplers
        return (f"pb for an epoch sampler — {result.details['upper_method']}; "
                f"{result.details['lower_method']}")
    return ("pb (numeric composition of the privacy loss distribution of the model's dominating "
            "pair)")


def _float_or_none(text):
    return None if text is None else float(text)


def report_command(
    q: Optional[str] = opt.Q,
    batch_size: Optional[str] = opt.BATCH_SIZE,
    dataset_size: Optional[str] = opt.DATASET_SIZE,
    sigma: Optional[str] = opt.SIGMA,
    steps: Optional[str] = opt.STEPS,
    epochs: Optional[str] = opt.EPOCHS,
    phase: Optional[List[str]] = opt.PHASE,
    sampling: str = opt.SAMPLING,
    adjacency: str = opt.ADJACENCY,
    max_batch_size: Optional[str] = opt.MAX_BATCH_SIZE,
    delta: str = opt.DELTA,
    fpr: str = FPR,
    prior: str = PRIOR,
    baseline: Optional[str] = BASELINE,
    tolerance: str = RISK_TOLERANCE,
    output_format: OutputFormat = opt.FORMAT,
) -> None:
    """A reviewer-ready privacy statement in Markdown (--format json: the same figures and
    the Markdown; plain: ε): model, run, certified ε at δ with the 1/N check, attack-risk
    bounds and the caveats that apply."""
    from dpcalc.accounting.risk import risk_bounds

    run = build_schedule(q, batch_size, dataset_size, sigma, steps, epochs, phase, sampling,
                         adjacency, max_batch_size=max_batch_size)
    target_delta = check_delta(delta)
    fprs = parse_fprs(fpr)
    prior_value = check_range(prior, "--prior", 0.0, 1.0, what="probability")
    kappa = None if baseline is None else check_range(baseline, "--baseline", 1e-12, 1.0,
                                                      low_open=False, what="probability κ")
    tol = check_range(tolerance, "--tolerance", 0.0, 1.0)
    opt.warn_large_delta(target_delta, run.dataset_size)
    with waiting("report: composing"):
        result = get_accountant("pb", tolerance=tol).epsilon(run.schedule, target_delta)
        risk = risk_records(risk_bounds(run.schedule, fprs, prior_value, kappa, tolerance=tol))
    options = {"--q": q, "--batch-size": batch_size, "--dataset-size": dataset_size,
               "--sigma": sigma, "--steps": steps, "--epochs": epochs, "--phase": phase or None,
               "--sampling": run.schedule.samplings[0] if not phase else None,
               "--adjacency": run.schedule.adjacency, "--delta": f"{target_delta:g}",
               "--fpr": ",".join(f"{value:g}" for value in fprs), "--prior": f"{prior_value:g}",
               "--baseline": None if kappa is None else f"{kappa:g}"}
    statement = {
        "epsilon": {"upper": result.epsilon, "lower": result.epsilon_lower},
        "delta": target_delta,
        "dataset_size": run.dataset_size,
        "steps": run.schedule.total_steps,
        "adjacency": run.schedule.adjacency,
        "samplings": list(run.schedule.samplings),
        "phases": _phases(run, epochs, phase),
        "accountant": _accountant_words(result),
        "risk": risk,
        "version": __version__,
        "command_line": _command_line(options),
    }
    markdown = statement_markdown(statement)
    if output_format == OutputFormat.json:
        record = {"accountant": "pb", "epsilon": result.epsilon, "epsilon_upper": result.epsilon,
                  "epsilon_lower": result.epsilon_lower, "delta": target_delta,
                  "certified": True, "risk": risk, "notes": list(result.notes),
                  "markdown": markdown}
        inputs = {**run.inputs, "delta": target_delta, "fpr": fprs, "prior": prior_value,
                  "baseline": kappa}
        sys.stdout.write(json_text({"command": "report", "inputs": inputs,
                                    "results": [record]}) + "\n")
    elif output_format == OutputFormat.plain:
        sys.stdout.write(plain_upper(result.epsilon) + "\n")
    else:
        sys.stdout.write(markdown)


__all__ = ["report_command"]
