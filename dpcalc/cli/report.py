"""`dpcalc report`: a reviewer-ready privacy statement (Markdown, or JSON with the same
figures): the model, the run, ε with its certified bounds and the δ vs 1/N check, what it
means for an attacker (`dpcalc risk`), and the caveats that apply."""
from __future__ import annotations

import sys
from typing import Optional

import typer

from dpcalc import __version__
from dpcalc.accountants.registry import get_accountant
from dpcalc.cli import options as opt
from dpcalc.cli.run_options import RUN, RunFlags, run_options
from dpcalc.cli.output.render import OutputFormat, json_text, plain_upper
from dpcalc.cli.progress import run_size, waiting
from dpcalc.cli.risk import (BASELINE, CLAIM_EPSILON, FPR, PRIOR, RISK_TOLERANCE, claim_report,
                             nearest_risk, not_applicable_records, parse_fprs, risk_records)
from dpcalc.cli.output.records import row_kind
from dpcalc.cli.pipelines.price import alternatives
from dpcalc.cli.schedule_options import _phase_fields
from dpcalc.cli.output.statement import claim_markdown, statement_markdown
from dpcalc.params import check_delta, check_range


def _command_line(options: dict) -> str:
    words = ["dpcalc", "report"]
    for flag, value in options.items():
        for item in (value if isinstance(value, list) else [value]):
            if item == "":  # a switch (--drop-last)
                words.append(flag)
            elif item is not None:
                words += [flag, str(item)]
    return " ".join(words)


def _phases(run, epochs, phase_specs) -> list[dict]:
    if "phases" in run.inputs and not phase_specs:  # --schedule FILE
        return [{**echo, "epochs": (echo.get("steps_from_epochs") or {}).get("epochs")}
                for echo in run.inputs["phases"]]
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


MAX_EXAMPLES_PER_USER = typer.Option(
    None, "--max-examples-per-user", metavar="K",
    help="TF Privacy's user-level statement: also the certified ε of a person with up to K "
         "examples, all protected together (the group of K records under this model, as "
         "`dpcalc group --k K`); one phase, poisson or fixed batches from --batch-size and "
         "--dataset-size, --unit example.")


def user_level_setting(run, value):
    """The group run `--max-examples-per-user K` asks about (group/pairs.GroupSetting), checked
    before any composition."""
    from dpcalc.errors import DpcalcError
    from dpcalc.group.pairs import MAX_GROUP_SIZE, GroupSetting
    from dpcalc.models.samplers import SIMPLE_SAMPLINGS
    from dpcalc.params import check_count

    k = check_count(value, "--max-examples-per-user", maximum=MAX_GROUP_SIZE)
    if run.inputs.get("unit", "example") != "example":
        raise DpcalcError("--max-examples-per-user is for a run whose records are examples "
                          f"(--unit example); this run's unit is {run.inputs['unit']}")
    phases = run.schedule.phases
    if (len(phases) != 1 or phases[0].sampling not in SIMPLE_SAMPLINGS
            or phases[0].batch_size is None):
        raise DpcalcError("--max-examples-per-user needs one phase of poisson or fixed batches "
                          "given by --batch-size and --dataset-size (`dpcalc group`'s runs)")
    phase = phases[0]
    return GroupSetting(k, phase.batch_size, phase.dataset_size, phase.noise_multiplier,
                        phase.steps, phase.sampling, phase.adjacency)


def user_level(setting, target_delta: float, tolerance: float) -> dict:
    """The statement's ``user_level``: pb's certified ε for K records together (group/pairs.py),
    or no bound with the reason (replace-one has no group pair for K > 1)."""
    from dpcalc.group.pairs import pb_epsilon

    found = pb_epsilon(setting, target_delta, tolerance)
    return {"max_examples_per_user": setting.k, "upper": found.epsilon,
            "lower": found.epsilon_lower,
            "note": "; ".join(found.notes) if found.epsilon is None else None}


def _float_or_none(text):
    return None if text is None else float(text)


@run_options
def report_command(
    given: RunFlags = RUN,
    delta: str = opt.DELTA,
    fpr: str = FPR,
    prior: str = PRIOR,
    baseline: Optional[str] = BASELINE,
    tolerance: str = RISK_TOLERANCE,
    epsilon: Optional[str] = CLAIM_EPSILON,
    max_examples_per_user: Optional[str] = MAX_EXAMPLES_PER_USER,
    output_format: OutputFormat = opt.FORMAT,
) -> None:
    """A reviewer-ready privacy statement in Markdown (--format json: the same figures and
    the Markdown; plain: ε): model, unit of privacy, run, certified ε at δ with the 1/N
    check, attack-risk bounds, what the data pipeline costs (shuffle, sequential,
    once-per-epoch or fixed batches against Poisson and balls-in-bins) and the caveats
    that apply. --pipeline names your loader (`dpcalc pipelines`); clients: --pipeline
    flower (m of M clients per round, --unit client). Where the model has no certificate
    (shuffled batches under add/remove) the statement says so and gives the nearest
    certified model's figures, labelled as such. A paper's (ε, δ) alone: --epsilon E --delta D
    (no run flags) gives what the claim allows an attacker. --max-examples-per-user K adds
    the certified ε of a person's K examples together (group privacy)."""
    from dpcalc.risk.bounds import risk_bounds

    if epsilon is not None:
        if max_examples_per_user is not None:
            from dpcalc.errors import DpcalcError

            raise DpcalcError("--max-examples-per-user needs a run (its flags), not a claim "
                              "--epsilon E")
        _claim_report(given, epsilon, delta, fpr, prior, baseline, output_format)
        return
    run = given.schedule()
    target_delta = check_delta(delta)
    fprs = parse_fprs(fpr)
    prior_value = check_range(prior, "--prior", 0.0, 1.0, what="probability")
    kappa = None if baseline is None else check_range(baseline, "--baseline", 1e-12, 1.0,
                                                      low_open=False, what="probability κ")
    tol = check_range(tolerance, "--tolerance", 0.0, 1.0)
    group = (None if max_examples_per_user is None
             else user_level_setting(run, max_examples_per_user))
    opt.warn_large_delta(target_delta, run.dataset_size)
    with waiting(f"report: composing {run_size(run.schedule, ['pb'])}"):
        result = get_accountant("pb", tolerance=tol).epsilon(run.schedule, target_delta)
        found = nearest_risk(run.schedule, lambda schedule: risk_bounds(
            schedule, fprs, prior_value, kappa, tolerance=tol))
        if found is None:
            risk = risk_records(risk_bounds(run.schedule, fprs, prior_value, kappa,
                                            tolerance=tol))
        else:
            risk = not_applicable_records(risk_records(found[2]), found[0], found[1])
        priced = alternatives(given, run, target_delta, result, tol)
        users = None if group is None else user_level(group, target_delta, tol)
    options = {"--q": given.q, "--batch-size": given.batch_size,
               "--dataset-size": given.dataset_size, "--sigma": given.sigma,
               "--steps": given.steps, "--epochs": given.epochs, "--phase": given.phase or None,
               "--schedule": given.schedule_file,
               "--pipeline": given.pipeline,
               "--sampling": (run.schedule.samplings[0]
                              if not (given.phase or given.schedule_file) else None),
               "--drop-last": "" if run.inputs.get("drop_last") else None,
               "--max-batch-size": given.max_batch_size,
               "--adjacency": run.schedule.adjacency, "--unit": run.inputs["unit"],
               "--delta": f"{target_delta:g}",
               "--fpr": ",".join(f"{value:g}" for value in fprs), "--prior": f"{prior_value:g}",
               "--baseline": None if kappa is None else f"{kappa:g}",
               "--max-examples-per-user": None if users is None else users["max_examples_per_user"]}
    certified = result.epsilon is not None
    statement = {
        "epsilon": {"upper": result.epsilon, "lower": result.epsilon_lower},
        "certified": certified,
        "not_applicable": None if certified else result.notes[0],
        "nearest_model": result.details.get("nearest_model"),
        "unit": run.inputs["unit"],
        "pipeline": run.inputs.get("pipeline"),
        "drop_last": run.inputs.get("drop_last", False),
        "alternatives": priced,
        "user_level": users,
        "delta": target_delta,
        "dataset_size": run.dataset_size,
        "steps": run.schedule.total_steps,
        "adjacency": run.schedule.adjacency,
        "samplings": list(run.schedule.samplings),
        "phases": _phases(run, given.epochs, given.phase),
        "accountant": _accountant_words(result),
        "risk": risk,
        "version": __version__,
        "command_line": _command_line(options),
    }
    markdown = statement_markdown(statement)
    if output_format == OutputFormat.json:
        record = {"accountant": "pb", "epsilon": result.epsilon, "epsilon_upper": result.epsilon,
                  "epsilon_lower": result.epsilon_lower, "delta": target_delta,
                  "certified": certified,
                  "kind": row_kind(True, result.epsilon, result.notes), "risk": risk,
                  "notes": list(result.notes), "markdown": markdown}
        if not certified and statement["nearest_model"] is not None:
            record["nearest_model"] = statement["nearest_model"]
        if users is not None:
            record["user_level"] = users
        inputs = {**run.inputs, "delta": target_delta, "fpr": fprs, "prior": prior_value,
                  "baseline": kappa}
        sys.stdout.write(json_text({"command": "report", "inputs": inputs,
                                    "results": [record], "alternatives": priced}) + "\n")
    elif output_format == OutputFormat.plain:
        sys.stdout.write(plain_upper(result.epsilon) + "\n")
    else:
        sys.stdout.write(markdown)


def _claim_report(given: RunFlags, epsilon, delta, fpr, prior, baseline,
                  output_format: OutputFormat) -> None:
    """`report --epsilon E --delta D`: the statement of an (ε, δ) claim without a run."""
    fprs = parse_fprs(fpr)
    prior_value = check_range(prior, "--prior", 0.0, 1.0, what="probability")
    kappa = None if baseline is None else check_range(baseline, "--baseline", 1e-12, 1.0,
                                                      low_open=False, what="probability κ")
    table = claim_report(given, epsilon, delta, fprs, prior_value, kappa)
    claim = table.inputs["claim"]
    command_line = _command_line({"--epsilon": f"{claim['epsilon']:g}",
                                  "--delta": f"{claim['delta']:g}",
                                  "--fpr": ",".join(f"{value:g}" for value in fprs),
                                  "--prior": f"{prior_value:g}",
                                  "--baseline": None if kappa is None else f"{kappa:g}"})
    markdown = claim_markdown(claim["epsilon"], claim["delta"], table.results, __version__,
                              command_line)
    if output_format == OutputFormat.json:
        record = {"accountant": "claim", "epsilon": claim["epsilon"], "delta": claim["delta"],
                  "certified": True, "kind": "bound for the claim", "risk": table.results,
                  "notes": [], "markdown": markdown}
        sys.stdout.write(json_text({"command": "report", "inputs": table.inputs,
                                    "results": [record]}) + "\n")
    elif output_format == OutputFormat.plain:
        sys.stdout.write(f"{claim['epsilon']:g}\n")
    else:
        sys.stdout.write(markdown)


__all__ = ["report_command"]
