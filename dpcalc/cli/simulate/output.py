"""How `dpcalc simulate` shows itself: a progress bar on stderr while training, then a
per-epoch table and a summary (or JSON, or the bare final ε) on stdout. Never computes.

Same rules as dpcalc.cli.output.render: ε upper bounds rounded up, lower bounds rounded down,
infinite values as "inf" in JSON, warnings and progress on stderr only.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from dpcalc.cli.output.render import (Column, OutputFormat, Report, json_text, plain_upper,
                                      print_table, show_lower, show_upper)
from dpcalc.cli.simulate.audit import audit_notes, audit_record, print_audit

if TYPE_CHECKING:
    from dpcalc.accountants.result import EpsilonResult
    from dpcalc.cli.simulate.model import EpochRow, SimulationOutcome
    from dpcalc.dpsgd import EpochRecord, StepRecord

NOT_ACCOUNTED = "—"


# ---------------------------------------------------------------- JSON records
def _epsilon(result: "EpsilonResult | None") -> float | None:
    return None if result is None else result.epsilon


def _epsilon_lower(result: "EpsilonResult | None") -> float | None:
    return None if result is None else result.epsilon_lower


def epoch_record(row: "EpochRow", applies: bool = True) -> dict:
    """{"epoch", "steps", "epochs_done", "loss", "train_accuracy", "test_accuracy",
    "clipped_fraction", "epsilon", "epsilon_lower", "epsilon_rdp"}; ε keys are null for
    an epoch that was not accounted, and where the accountant does not apply. ``applies``
    False (shuffle under add/remove): ε keys null, plus "epsilon_poisson_not_applicable"
    (pb's Poisson figure at q = B/N, which does not apply to the run)."""
    record = row.record
    fields = {
        "epoch": record.epoch,
        "steps": record.steps_done,
        "epochs_done": record.epochs_done,
        "loss": record.loss,
        "train_accuracy": record.train_accuracy,
        "test_accuracy": record.test_accuracy,
        "clipped_fraction": record.clipped_fraction,
        "epsilon": _epsilon(row.epsilon),
        "epsilon_lower": _epsilon_lower(row.epsilon),
        "epsilon_rdp": _epsilon(row.epsilon_rdp),
    }
    if not applies:
        fields["epsilon_poisson_not_applicable"] = _epsilon(row.poisson_reference)
    return fields


def applies(outcome: "SimulationOutcome") -> bool:
    """Whether a certified ε exists for the run's model (not for shuffle under add/remove)."""
    return outcome.inputs.get("epsilon_applies", True)


def poisson_note(outcome: "SimulationOutcome") -> str | None:
    """The label of the Poisson figure of a run it does not apply to."""
    reference = outcome.final.poisson_reference
    if applies(outcome) or reference is None or reference.epsilon is None:
        return None
    return (f"Poisson figure {show_upper(reference.epsilon)} (q = B/N, same steps) does NOT apply to "
            f"{outcome.inputs['sampling']} batches: shown for comparison only")


def rdp_notes(row: "EpochRow") -> list[str]:
    """Why rdp gives no ε for this row's model (empty when it does)."""
    result = row.epsilon_rdp
    if result is None or result.epsilon is not None:
        return []
    return [f"rdp: {note}" for note in result.notes]


def final_record(outcome: "SimulationOutcome") -> dict:
    """The last epoch plus what the numbers are: ε is pb's certified upper bound (null,
    with "epsilon_poisson_not_applicable" and a note, where no certificate applies)."""
    record = epoch_record(outcome.final, applies(outcome))
    notes = [] if outcome.final.epsilon is None else list(outcome.final.epsilon.notes)
    notes += rdp_notes(outcome.final)
    extra = {}
    if not applies(outcome):
        notes = [note for note in (outcome.notes[0], poisson_note(outcome)) if note]
        extra = {"epsilon_poisson_not_applicable": record["epsilon_poisson_not_applicable"]}
    return {
        "epoch": record["epoch"],
        "steps": record["steps"],
        "loss": record["loss"],
        "train_accuracy": record["train_accuracy"],
        "test_accuracy": record["test_accuracy"],
        "epsilon": record["epsilon"],
        "epsilon_lower": record["epsilon_lower"],
        "epsilon_rdp": record["epsilon_rdp"],
        **extra,
        "accountant": "pb",
        "delta": outcome.inputs["delta"],
        "notes": notes,
    }


def baseline_record(outcome: "SimulationOutcome") -> dict | None:
    """{"test_accuracy", "train_accuracy", "loss", "accuracy_ratio"} or None without --baseline.
    accuracy_ratio = DP test accuracy / baseline test accuracy."""
    baseline = outcome.baseline
    if baseline is None:
        return None
    private = outcome.final.record.test_accuracy
    ratio = private / baseline.test_accuracy if baseline.test_accuracy > 0 else None
    return {"test_accuracy": baseline.test_accuracy, "train_accuracy": baseline.train_accuracy,
            "loss": baseline.loss, "accuracy_ratio": ratio}


def group_record(outcome: "SimulationOutcome") -> dict | None:
    """{"k", "epsilon", "epsilon_lower", "accountant", "certified", "notes"} or None without --k."""
    group = outcome.group
    if group is None:
        return None
    return {"k": outcome.inputs["k"], "epsilon": group.epsilon,
            "epsilon_lower": group.epsilon_lower, "accountant": group.accountant,
            "certified": group.certified, "notes": list(group.notes)}


def simulation_payload(outcome: "SimulationOutcome") -> dict:
    """The JSON object: command, inputs, epochs[], final, baseline, group, audit, notes."""
    return {
        "command": "simulate",
        "inputs": outcome.inputs,
        "epochs": [epoch_record(row, applies(outcome)) for row in outcome.rows],
        "final": final_record(outcome),
        "baseline": baseline_record(outcome),
        "group": group_record(outcome),
        "audit": audit_record(outcome.audit),
        "notes": list(outcome.notes),
    }


# ---------------------------------------------------------------- table
def _accuracy(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def _upper_or_dash(value: float | str | None) -> str:
    if isinstance(value, str):  # "n/a": accounted, but the accountant does not apply
        return value
    return NOT_ACCOUNTED if value is None else show_upper(value)


def _lower_or_dash(value: float | None) -> str:
    return NOT_ACCOUNTED if value is None else show_lower(value)


EPOCH_COLUMNS = [
    Column("epoch", "epoch"),
    Column("steps", "steps"),
    Column("loss", "loss", lambda value: f"{value:.4g}"),
    Column("train", "train_accuracy", _accuracy),
    Column("test", "test_accuracy", _accuracy),
    Column("ε (pb)", "epsilon", _upper_or_dash),
    Column("ε lower", "epsilon_lower", _lower_or_dash),
    Column("ε (rdp)", "epsilon_rdp", _upper_or_dash),
]

CAPTION_KEYS = ("data", "n_train", "n_test", "n_features", "n_classes", "hidden",
                "sampling", "adjacency", "batch_size", "q", "sigma", "clip_norm", "learning_rate",
                "momentum", "epochs", "steps", "delta", "seed")
CAPTION_LABELS = {"n_train": "N_train", "n_test": "N_test", "n_features": "features",
                  "n_classes": "classes", "batch_size": "B", "sigma": "σ", "clip_norm": "C",
                  "learning_rate": "lr", "delta": "δ"}

FOOTNOTES = [
    "ε (pb): certified upper bound for the steps run so far, rounded up; ε lower: certified "
    "lower bound, rounded down; ε (rdp): RDP upper bound (improved conversion).",
    "loss, train, test: training loss and accuracies on the full splits (monitoring values, "
    "not privatised).",
]


# shuffle under add/remove: no certified ε; pb's Poisson figure, labelled as not applying
NOT_APPLYING_COLUMNS = [
    *EPOCH_COLUMNS[:5],
    Column("Poisson ε (does not apply)", "epsilon_poisson_not_applicable", _upper_or_dash),
]

NOT_APPLYING_FOOTNOTES = [
    "Poisson ε (does not apply): pb's certified ε for Poisson sampling at q = B/N over the steps "
    "run so far, rounded up. It does NOT apply to shuffled batches and is shown for comparison "
    "only: do not report it as this run's ε.",
    FOOTNOTES[1],
]


GROUP_NOTE = ("group privacy: the worst case for any k records under the run's model (Poisson: "
              "N(0, σ²) vs Σ_j Binomial(k, q)_j N(j, σ²); fixed-size: shifts 2j), composed over "
              "the steps run")


def _caption_inputs(inputs: dict) -> dict:
    shown = {key: inputs[key] for key in CAPTION_KEYS if key in inputs}
    if not shown.get("hidden"):
        shown.pop("hidden", None)
    return shown


def _epochs(count: float) -> str:
    return f"{count:g} epoch" + ("" if count == 1 else "s")


def _summary_rows(outcome: "SimulationOutcome") -> list[tuple[str, str]]:
    final = outcome.final
    delta = outcome.inputs["delta"]
    rows = [("DP-SGD test accuracy",
             f"{final.record.test_accuracy:.4f} after {_epochs(outcome.inputs['epochs'])} "
             f"({final.record.steps_done} steps)")]
    if not applies(outcome):
        rows.append((f"ε at δ = {delta:g} (pb)",
                     "n/a: no certificate for shuffled batches under add/remove adjacency"))
        if final.poisson_reference is not None:
            rows.append(("Poisson figure, does not apply to shuffled batches",
                         f"{_upper_or_dash(final.poisson_reference.epsilon)}  (q = B/N, same "
                         "steps; for comparison only)"))
    elif final.epsilon is not None:
        rows.append((f"ε at δ = {delta:g} (pb)",
                     f"≤ {show_upper(final.epsilon.epsilon)}  "
                     f"(certified; true ε ≥ {show_lower(final.epsilon.epsilon_lower)})"))
    if final.epsilon_rdp is not None:
        rows.append(("ε (rdp)", "n/a (see the rdp note)" if final.epsilon_rdp.epsilon is None
                     else f"≤ {show_upper(final.epsilon_rdp.epsilon)}"))
    calibration = outcome.inputs.get("calibration")
    if calibration:
        rows.append(("σ calibrated", f"{outcome.inputs['sigma']:.6g} for ε ≤ "
                     f"{calibration['target_epsilon']:g} over {outcome.inputs['steps']} steps "
                     f"(ε {show_upper(calibration['epsilon'])}, "
                     f"{calibration['evaluations']} evaluations)"))
    baseline = baseline_record(outcome)
    if baseline is not None:
        kept = "" if baseline["accuracy_ratio"] is None else \
            f"; DP: {baseline['accuracy_ratio']:.1%} of it"
        rows.append(("baseline test accuracy",
                     f"{baseline['test_accuracy']:.4f}  (no clipping/noise{kept})"))
    group = outcome.group
    if group is not None:
        lower = "" if group.epsilon_lower is None else \
            f"; true ε ≥ {show_lower(group.epsilon_lower)}"
        rows.append((f"ε for any k = {outcome.inputs['k']} records",
                     f"≤ {_upper_or_dash(group.epsilon)}  (certified, {group.accountant}{lower})"))
    return rows


def print_simulation(outcome: "SimulationOutcome", console=None) -> None:
    """Per-epoch table, then the summary and notes."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    model = outcome.inputs['privacy_model']
    if applies(outcome):
        columns = EPOCH_COLUMNS
        footnotes = [f"Privacy model: {model}. The ε columns hold for this model only.",
                     *FOOTNOTES]
    else:
        columns = NOT_APPLYING_COLUMNS
        footnotes = [f"Privacy model: {model}. dpcalc has no certificate for it: no ε is "
                     "reported for this run.", *NOT_APPLYING_FOOTNOTES]
    results = []
    for row in outcome.rows:
        record = epoch_record(row, applies(outcome))
        if rdp_notes(row) and row.epsilon is not None:
            record["epsilon_rdp"] = "n/a"  # accounted; rdp does not apply (note below)
        results.append(record)
    report = Report(command="simulate", title="DP-SGD simulation: ε grows as the model learns",
                    inputs=_caption_inputs(outcome.inputs), results=results,
                    columns=columns, plain_columns=[], footnotes=footnotes,
                    input_labels=CAPTION_LABELS)
    print_table(report, console)
    summary = Table(title="Summary", show_header=False, title_justify="left")
    summary.add_column("what", justify="left")
    summary.add_column("value", justify="left")
    for what, value in _summary_rows(outcome):
        summary.add_row(what, value)
    console.print(summary)
    print_audit(outcome.audit, console)
    group_notes = [] if outcome.group is None else [GROUP_NOTE, *(
        f"group ({outcome.group.accountant}): {note}" for note in outcome.group.notes)]
    extra_notes = [note for note in (poisson_note(outcome),) if note] + rdp_notes(outcome.final)
    for note in [*outcome.notes, *extra_notes, *group_notes, *audit_notes(outcome.audit)]:
        console.print(f"[dim]note: {note}[/dim]", highlight=False)


def emit_simulation(outcome: "SimulationOutcome", output_format: OutputFormat,
                    budget=None) -> None:
    """Write the outcome to stdout in the chosen format, then apply the --max-epsilon gate
    (``budget``, a dpcalc.cli.output.budget.Budget) to the final pb ε."""
    from dpcalc.cli.output.budget import enforce, output_may_close

    with output_may_close():
        if output_format == OutputFormat.json:
            payload = simulation_payload(outcome)
            if budget is not None:
                payload["budget"] = budget.record()
            sys.stdout.write(json_text(payload) + "\n")
        elif output_format == OutputFormat.plain:
            sys.stdout.write(plain_upper(_epsilon(outcome.final.epsilon)) + "\n")
        else:
            print_simulation(outcome)
            if budget is not None:
                print(budget.line())
    enforce(budget)


# ---------------------------------------------------------------- progress on stderr
class SilentProgress:
    """Used when stderr is not a terminal (nothing is drawn; ``note`` lines still go to
    stderr) or when progress is off (``notes=False``: nothing at all)."""

    def __init__(self, notes: bool = False) -> None:
        self._notes = notes

    def note(self, text: str) -> None:
        if self._notes:
            sys.stderr.write(f"note: {text}\n")

    def start(self, description: str, total_steps: int) -> None:
        pass

    def step(self, record: "StepRecord") -> None:
        pass

    def epoch_done(self, row: "EpochRow", expected_epochs: int) -> None:
        pass

    def epoch_settled(self) -> None:
        pass


class BarProgress:
    """A Rich progress bar over steps; its status shows the latest epoch and ε."""

    def __init__(self, progress) -> None:
        self._progress = progress
        self._task = None
        self._last_epoch = None  # (task, row, expected epochs) of the latest epoch_done

    def note(self, text: str) -> None:
        """A line above the bar (it stays when the bar is erased)."""
        self._progress.console.print(f"note: {text}", highlight=False)

    def start(self, description: str, total_steps: int) -> None:
        self._task = self._progress.add_task(description, total=total_steps, status="")

    def step(self, record: "StepRecord") -> None:
        self._progress.update(self._task, completed=record.step)

    def epoch_done(self, row: "EpochRow", expected_epochs: int) -> None:
        self._last_epoch = (self._task, row, expected_epochs)
        self._progress.update(self._task, status=epoch_status(row, expected_epochs))

    def epoch_settled(self) -> None:
        """The latest epoch's status again, now that its ε (computed in the background,
        simulate_accounting.LiveAccountant) is in."""
        if self._last_epoch is not None:
            task, row, expected_epochs = self._last_epoch
            self._progress.update(task, status=epoch_status(row, expected_epochs))


def epoch_status(row: "EpochRow", expected_epochs: int) -> str:
    """'epoch 3/5 · test acc 0.8123 · ε ≤ 1.4410' for the progress line."""
    record: "EpochRecord" = row.record
    text = f"epoch {record.epoch}/{expected_epochs} · test acc {record.test_accuracy:.4f}"
    if row.epsilon is not None:
        text += f" · ε ≤ {_upper_or_dash(row.epsilon.epsilon)}"
    elif row.poisson_reference is not None:
        text += (f" · Poisson ε {_upper_or_dash(row.poisson_reference.epsilon)} "
                 "(does not apply)")
    return text


@contextmanager
def open_progress(enabled: bool = True, console=None) -> Iterator[SilentProgress | BarProgress]:
    """A progress bar on stderr when it is a terminal (stdout stays clean), else silence."""
    if not enabled:
        yield SilentProgress()
        return
    from rich.console import Console

    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield SilentProgress(notes=True)
        return
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TimeRemainingColumn(), TextColumn("{task.fields[status]}"),
                  console=console, transient=True) as progress:
        yield BarProgress(progress)
