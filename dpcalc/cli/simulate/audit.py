"""`dpcalc simulate --audit`: the flags, their validation into dpcalc.audit.AuditSettings, and how
an audit shows itself (the JSON "audit" block, summary rows, the verdict). The audit itself is in
dpcalc.audit; nothing here computes a bound."""
from __future__ import annotations

import time
from enum import Enum
from typing import TYPE_CHECKING, Callable

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


class ThreatModel(str, Enum):
    """dpcalc.audit.dirac.THREAT_MODELS."""

    all_iterates = "all-iterates"
    last_model = "last-model"


AUDIT = typer.Option(False, "--audit",
                     help="Also audit the run: m canaries, each included with probability ½, "
                          "then an empirical ε lower bound from guessing which were in (one run, "
                          "Steinke, Nasr, Jagielski 2023), next to pb's certified bounds.")
AUDIT_RUNS = typer.Option(None, "--audit-runs", metavar="INT",
                          help="Monte Carlo audit instead: R small-model runs (20 to 100000, and "
                               "at most --max-audit-steps DP-SGD steps in all) at the run's q, σ, C and "
                               "steps, half with one canary; Clopper-Pearson bound from a "
                               "threshold test planned before the runs. With --sampling shuffle "
                               "(--adjacency zero-out or replace-one) the runs build Chua et al. "
                               "2024's displacement instance and the Poisson figure is shown "
                               "beside the result.")
MAX_AUDIT_STEPS = typer.Option(
    None, "--max-audit-steps", metavar="INT",
    help="The most DP-SGD steps a Monte Carlo audit may run in all (runs × steps per run; "
         "default 200000, about 1-4 min; up to 10000000); a larger audit is refused (exit 2) "
         "unless this raises the limit.")
CANARY = typer.Option(Canary.gradient, "--canary", case_sensitive=False,
                      help="Audit canary: gradient (a Dirac gradient of norm C on a weight of its "
                           "own: an extra input column no example uses; the strongest) or input "
                           "(a mislabelled example, scored by the final model's loss).")
CANARIES = typer.Option(None, "--canaries", metavar="INT",
                        help="One-run audit: number of canaries m (2 to 100000; default 1000). "
                             "More canaries allow more guesses, so a higher ceiling.")
AUDIT_THREAT_MODEL = typer.Option(
    None, "--audit-threat-model", case_sensitive=False,
    help="What the auditor sees: all-iterates (every released update, white-box: the release "
         "DP-SGD's accounting certifies; default for gradient canaries) or last-model (the "
         "final weights only; input canaries always). Poisson sampling for last-model.")
AUDIT_CONFIDENCE = typer.Option("0.95", "--audit-confidence", metavar="FLOAT",
                                help="Confidence of the empirical lower bound, in (0, 1).")


def audit_settings(audit: bool, audit_runs: str | None, canary: Canary, canaries: str | None,
                   confidence: str, delta: float, seed: int,
                   threat_model: ThreatModel | None = None,
                   max_steps: str | None = None) -> "AuditSettings | None":
    """The validated audit request, or None without --audit/--audit-runs (then the other audit
    flags are refused, so a typo does not silently skip an audit)."""
    if audit_runs is None and max_steps is not None:
        raise DpcalcError("--max-audit-steps limits a Monte Carlo audit; give --audit-runs too")
    if not audit and audit_runs is None:
        if canaries is not None:
            raise DpcalcError("--canaries sets the size of an audit; give --audit too")
        if (Canary(canary) != Canary.gradient or confidence != "0.95"
                or threat_model is not None):
            raise DpcalcError("--canary, --audit-threat-model and --audit-confidence describe an "
                              "audit; give --audit or --audit-runs too")
        return None
    from dpcalc.audit import DEFAULT_AUDIT_STEPS, AuditSettings
    from dpcalc.audit.experiment import DEFAULT_CANARIES

    if audit_runs is not None and canaries is not None:
        raise DpcalcError("--canaries sets the one-run audit's canaries; a Monte Carlo audit "
                          "(--audit-runs) uses one canary per run")
    return AuditSettings(mode="one-run" if audit_runs is None else "monte-carlo",
                         canary=Canary(canary).value,
                         canaries=DEFAULT_CANARIES if canaries is None else canaries,
                         runs=0 if audit_runs is None else audit_runs, confidence=confidence,
                         delta=delta, seed=seed,
                         threat_model=None if threat_model is None else
                         ThreatModel(threat_model).value,
                         max_steps=DEFAULT_AUDIT_STEPS if max_steps is None else max_steps)


ESTIMATE_AFTER_SECONDS = 2.0   # a Monte Carlo audit's time is estimated once it has run this long
ESTIMATE_MIN_SECONDS = 10.0    # and said only when at least this much is left


class RunClock:
    """Counts finished audit runs; once ESTIMATE_AFTER_SECONDS have passed, says once how long
    the rest will take (when at least ESTIMATE_MIN_SECONDS), through ``say``."""

    def __init__(self, total: int, say: Callable[[str], None], clock=time.monotonic):
        self.total, self._say, self._clock = total, say, clock
        self._started = clock()
        self.estimate: float | None = None

    def run_done(self, done: int) -> None:
        if self.estimate is not None or done >= self.total:
            return
        elapsed = self._clock() - self._started
        if elapsed < ESTIMATE_AFTER_SECONDS:
            return
        self.estimate = elapsed / done * (self.total - done)
        if self.estimate >= ESTIMATE_MIN_SECONDS:
            self._say(f"audit: {done} of {self.total} runs in {elapsed:.0f} s; about "
                      f"{duration(self.estimate)} left ({1e3 * elapsed / done:.1f} ms per run)")


def duration(seconds: float) -> str:
    """'45 s', '3 min 20 s', '1 h 05 min'."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


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
        "threat_model": result.threat_model,
        "ceiling_epsilon": result.ceiling,
        "guesses_in": result.guesses_in,
        "guesses_out": result.guesses_out,
        "guess_rule": result.guess_rule,
    }


def audit_title(outcome: "AuditOutcome") -> str:
    result = outcome.result
    seen = "all iterates" if result.threat_model == "all-iterates" else "last model"
    if result.mode == "one-run":
        kind = "Dirac gradient" if result.canary == "gradient" else "input"
        return (f"Audit: one run, {result.canaries} {kind} canaries, {seen}, "
                f"δ = {result.delta:g}")
    return f"Audit: {result.runs} runs, {result.canary} canary, {seen}, δ = {result.delta:g}"


def audit_evidence(outcome: "AuditOutcome") -> str:
    """What the attack got right: the data behind the empirical bound."""
    result = outcome.result
    if result.mode == "one-run":
        return (f"{result.correct} of {result.guesses} guesses right: \"in\" for the "
                f"{result.guesses_in} highest scores, \"out\" for the {result.guesses_out} lowest "
                f"({result.included} of {result.canaries} canaries in)")
    return (f"threshold test: {result.true_positives} of {result.positives} runs with the canary "
            f"flagged, {result.false_positives} of {result.negatives} without "
            f"(q {result.sampling_rate:.4g}, σ {result.noise_multiplier:g}, {result.steps} steps)")


def ceiling_line(outcome: "AuditOutcome") -> str:
    """What the ceiling column means for these counts."""
    result = outcome.result
    if result.mode == "one-run":
        return (f"ceiling: the bound if all {result.guesses} guesses were right, the most "
                f"{result.canaries} canaries guessed this way can show at "
                f"{result.confidence:.0%}")
    return (f"ceiling: the bound if every run were called right ({result.positives} flagged, "
            f"none of {result.negatives} without), the most {result.runs} runs can show at "
            f"{result.confidence:.0%}")


def print_audit(outcome: "AuditOutcome | None", console) -> None:
    """The empirical bound beside its ceiling and the certified interval, the evidence, the
    threat model and the verdict."""
    if outcome is None:
        return
    from rich.table import Table

    from dpcalc.audit.dirac import THREAT_MODEL_TEXT

    result, certified = outcome.result, outcome.certified
    table = Table(title=audit_title(outcome), title_justify="left")
    table.add_column(f"empirical ε ≥ ({result.confidence:.0%})", justify="right")
    table.add_column("ceiling", justify="right")
    table.add_column("certified ε ≥ (pb)", justify="right")
    table.add_column("certified ε ≤ (pb)", justify="right")
    table.add_row(show_lower(result.epsilon_lower), show_lower(result.ceiling),
                  show_lower(None if certified is None else certified.epsilon_lower),
                  show_upper(None if certified is None else certified.epsilon))
    console.print(table)
    console.print(audit_evidence(outcome), highlight=False)
    console.print(ceiling_line(outcome), highlight=False)
    console.print(f"threat model: {THREAT_MODEL_TEXT[result.threat_model]}", highlight=False)
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
        notes.append(f"audit: {result.guess_rule}")
        if result.canary == "gradient":
            where = ("take slots in the shuffled batches (one step per epoch each)"
                     if result.sampling == "shuffle" else "are sampled at rate q like every "
                     "example")
            notes.append(f"audit: canary i writes C on the weight of extra input column i (0 in "
                         f"every example, so no example's gradient reaches it); the canaries "
                         f"{where}, and the model trained exactly as without the audit")
        else:
            notes.append("audit: the canaries trained with the model (sampled at rate q like "
                         "every example); the accuracies above are those of the audited run")
    elif result.sampling == "shuffle":
        notes.append(f"audit: threshold {result.threshold_rule}; runs shuffle the run's "
                     f"{round(1 / result.sampling_rate)} batches per epoch at the same σ, C and "
                     f"steps, every other record crafted at -C on the canary's coordinate (the "
                     f"displacement instance of Chua et al. 2024)")
    else:
        notes.append(f"audit: threshold {result.threshold_rule}; runs use a small logistic "
                     f"regression at the same q, σ, C and steps")
    return notes
