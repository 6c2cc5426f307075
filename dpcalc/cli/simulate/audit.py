"""`dpcalc simulate --audit`: the flags, their validation into dpcalc.audit.AuditSettings, and how
an audit shows itself (the JSON "audit" block, summary rows, the verdict). The audit itself is in
dpcalc.audit; nothing here computes a bound."""
from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

import typer

from dpcalc.cli.output.render import show_lower, show_upper
from dpcalc.errors import DpcalcError

if TYPE_CHECKING:
    from dpcalc.audit import AuditSettings
    from dpcalc.cli.simulate.model import AuditOutcome


class Canary(str, Enum):
    """dpcalc.audit.canaries.CANARY_KINDS (kept here so start-up does not import NumPy)."""

    gradient = "gradient"
    input = "input"


AUDIT = typer.Option(False, "--audit",
                     help="Also audit the run: m canaries, each included with probability ½, "
                          "then an empirical ε lower bound from guessing which were in (one run, "
                          "Steinke, Nasr, Jagielski 2023), next to pb's certified bounds.")
AUDIT_RUNS = typer.Option(None, "--audit-runs", metavar="INT",
                          help="Monte Carlo audit instead: R small-model runs (20 to 100000) at the "
                               "run's q, σ, C and steps, half with one canary; Clopper-Pearson "
                               "bound from the best threshold test. With --sampling shuffle "
                               "(--adjacency zero-out or replace-one) the runs build Chua et al. "
                               "2024's displacement instance and the Poisson figure is shown "
                               "beside the result.")
CANARY = typer.Option(Canary.gradient, "--canary", case_sensitive=False,
                      help="Audit canary: gradient (a crafted per-example gradient of norm C, "
                           "white-box, the strongest) or input (a mislabelled example, scored "
                           "by the final model's loss).")
CANARIES = typer.Option(None, "--canaries", metavar="INT",
                        help="One-run audit: number of canaries m (2 to 100000; gradient canaries at "
                             "most one per model parameter). Default 1000, or the parameter count.")
AUDIT_CONFIDENCE = typer.Option("0.95", "--audit-confidence", metavar="FLOAT",
                                help="Confidence of the empirical lower bound, in (0, 1).")


def audit_settings(audit: bool, audit_runs: str | None, canary: Canary, canaries: str | None,
                   confidence: str, delta: float, seed: int) -> "AuditSettings | None":
    """The validated audit request, or None without --audit/--audit-runs (then the other audit
    flags are refused, so a typo does not silently skip an audit)."""
    if not audit and audit_runs is None:
        if canaries is not None:
            raise DpcalcError("--canaries sets the size of an audit; give --audit too")
        if Canary(canary) != Canary.gradient or confidence != "0.95":
            raise DpcalcError("--canary and --audit-confidence describe an audit; give --audit "
                              "or --audit-runs too")
        return None
    from dpcalc.audit import AuditSettings
    from dpcalc.audit.experiment import DEFAULT_CANARIES

    if audit_runs is not None and canaries is not None:
        raise DpcalcError("--canaries sets the one-run audit's canaries; a Monte Carlo audit "
                          "(--audit-runs) uses one canary per run")
    return AuditSettings(mode="one-run" if audit_runs is None else "monte-carlo",
                         canary=Canary(canary).value,
                         canaries=DEFAULT_CANARIES if canaries is None else canaries,
                         runs=0 if audit_runs is None else audit_runs, confidence=confidence,
                         delta=delta, seed=seed, canaries_given=canaries is not None)


# ---------------------------------------------------------------- output
def audit_record(outcome: "AuditOutcome | None") -> dict | None:
    """The JSON "audit" block (stable keys; null where a key does not apply to the mode)."""
    if outcome is None:
        return None
    result, certified = outcome.result, outcome.certified
    return {
        "mode": result.mode,
        "canary": result.canary,
        "epsilon_lower": result.epsilon_lower,
        "confidence": result.confidence,
        "delta": result.delta,
        "certified_epsilon_lower": None if certified is None else certified.epsilon_lower,
        "certified_epsilon_upper": None if certified is None else certified.epsilon,
        "consistent": outcome.verdict.consistent,
        "verdict": outcome.verdict.text,
        "q": result.sampling_rate,
        "sigma": result.noise_multiplier,
        "steps": result.steps,
        "canaries": result.canaries,
        "canaries_included": result.included,
        "runs": result.runs,
        "guesses": result.guesses,
        "correct_guesses": result.correct,
        "true_positives": result.true_positives,
        "positives": result.positives,
        "false_positives": result.false_positives,
        "negatives": result.negatives,
        "threshold": result.threshold,
        "threshold_rule": result.threshold_rule,
        "method": result.method,
        "sampling": result.sampling,
        "adjacency": result.adjacency,
        "poisson_epsilon": outcome.poisson_epsilon,
        "exceeds_poisson": outcome.exceeds_poisson,
    }


def audit_title(outcome: "AuditOutcome") -> str:
    result = outcome.result
    if result.mode == "one-run":
        return (f"Audit: one run, {result.canaries} {result.canary} canaries, "
                f"δ = {result.delta:g}")
    return f"Audit: {result.runs} runs, {result.canary} canary, δ = {result.delta:g}"


def audit_evidence(outcome: "AuditOutcome") -> str:
    """What the attack got right: the data behind the empirical bound."""
    result = outcome.result
    if result.mode == "one-run":
        return (f"{result.correct} of {result.guesses} guesses right ({result.included} of "
                f"{result.canaries} canaries in)")
    return (f"threshold test: {result.true_positives} of {result.positives} runs with the canary "
            f"flagged, {result.false_positives} of {result.negatives} without "
            f"(q {result.sampling_rate:.4g}, σ {result.noise_multiplier:g}, {result.steps} steps)")


def print_audit(outcome: "AuditOutcome | None", console) -> None:
    """The empirical bound beside the certified interval, the evidence and the verdict."""
    if outcome is None:
        return
    from rich.table import Table

    result, certified = outcome.result, outcome.certified
    table = Table(title=audit_title(outcome), title_justify="left")
    table.add_column(f"empirical ε ≥ ({result.confidence:.0%})", justify="right")
    table.add_column("certified ε ≥ (pb)", justify="right")
    table.add_column("certified ε ≤ (pb)", justify="right")
    table.add_row(show_lower(result.epsilon_lower),
                  show_lower(None if certified is None else certified.epsilon_lower),
                  show_upper(None if certified is None else certified.epsilon))
    console.print(table)
    console.print(audit_evidence(outcome), highlight=False)
    style = "" if outcome.verdict.consistent else "bold red"
    console.print(f"verdict: {outcome.verdict.text}", style=style or None, highlight=False)
    line = poisson_line(outcome)
    if line is not None:
        console.print(line, style="bold" if outcome.exceeds_poisson else None, highlight=False)


def poisson_line(outcome: "AuditOutcome") -> str | None:
    """Shuffled runs: the empirical bound against pb's Poisson figure (which does not apply)."""
    if outcome.poisson_epsilon is None:
        return None
    figure = (f"Poisson figure ε ≤ {show_upper(outcome.poisson_epsilon)} (q "
              f"{outcome.result.sampling_rate:.4g}, same steps)")
    if outcome.exceeds_poisson:
        return f"{figure}: exceeded by the empirical lower bound: the Poisson ε does not hold for this run"
    return f"{figure}: not exceeded by this audit (it cannot tell here)"


def audit_notes(outcome: "AuditOutcome | None") -> list[str]:
    if outcome is None:
        return []
    result = outcome.result
    notes = [f"audit method: {result.method}"]
    if result.mode == "one-run":
        notes.append("audit: the canaries trained with the model (sampled at rate q like every "
                     "example); the accuracies above are those of the audited run")
    elif result.sampling == "shuffle":
        notes.append(f"audit: threshold {result.threshold_rule}; runs shuffle the run's "
                     f"{round(1 / result.sampling_rate)} batches per epoch at the same σ, C and "
                     f"steps, every other record crafted at -C on the canary's coordinate (the "
                     f"displacement instance of Chua et al. 2024)")
    else:
        notes.append(f"audit: threshold {result.threshold_rule}; runs use a small logistic "
                     f"regression at the same q, σ, C and steps")
    if result.mode == "one-run" and result.sampling == "shuffle":
        notes[-1] = ("audit: the canaries took slots in the shuffled batches (one step per "
                     "epoch each); the accuracies above are those of the audited run")
    return notes
