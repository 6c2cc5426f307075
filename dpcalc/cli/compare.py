"""`dpcalc compare`: every accountant on one DP-SGD configuration, or over a sweep.

One configuration gives one table sorted by ε with the ratio to the tightest
certified value; a list or range for --steps, --epochs, --sigma or --q gives ε over
the sweep per accountant (table, JSON, CSV, plain, and --plot FILE).
"""
from __future__ import annotations

import csv
import math
import sys
from dataclasses import dataclass
from enum import Enum
from typing import Callable, List, Optional

import typer

from dpcalc.accounting.evaluate import epsilon_results
from dpcalc.accounting.registry import accountant_names, get_accountant, resolve_names
from dpcalc.accounting.result import EpsilonResult
from dpcalc.cli import options as opt
from dpcalc.cli.records import INPUT_LABELS, epsilon_record, result_notes
from dpcalc.cli.render import Column, OutputFormat, Report, emit, plain_upper, show_lower, show_upper
from dpcalc.errors import DpcalcError
from dpcalc.params import (check_count, check_delta, check_noise_multiplier, check_positive,
                           check_sampling_rate, resolve_sampling_rate, resolve_steps)

MAX_SWEEP_POINTS = 200
_SWEEP_SYNTAX = (
    "a value, a list 'a,b,c', or a range 'start:stop:N' (N evenly spaced points, ends included) "
    "or 'start:stop:logN' (N log-spaced points, ends included)"
)
_SWEEP_HELP = " A list or range sweeps it (see above)."


class CompareFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"
    plain = "plain"


Q_SWEEP = typer.Option(None, "--q", metavar="FLOAT|SWEEP",
                       help="Poisson sampling rate q in (0, 1]. Or give --batch-size and "
                            "--dataset-size." + _SWEEP_HELP)
SIGMA_SWEEP = typer.Option(None, "--sigma", metavar="FLOAT|SWEEP",
                           help="Noise multiplier σ > 0." + _SWEEP_HELP)
STEPS_SWEEP = typer.Option(None, "--steps", metavar="INT|SWEEP",
                           help="DP-SGD steps T ≥ 1." + _SWEEP_HELP)
EPOCHS_SWEEP = typer.Option(None, "--epochs", metavar="FLOAT|SWEEP",
                            help="Epochs > 0 instead of --steps: T = ceil(epochs·N/B), or "
                                 "ceil(epochs/q)." + _SWEEP_HELP)
ACCOUNTANTS = typer.Option(None, "--accountant", "-a", metavar="NAME",
                           help=f"Any of {', '.join(accountant_names())} (repeatable or "
                                "comma-separated). Default: all.")
PLOT = typer.Option(None, "--plot", metavar="FILE",
                    help="With a sweep: write ε over the sweep per accountant to FILE (.png or "
                         ".svg; needs matplotlib: pip install 'dpcalc\\[plot]').")
FORMAT = typer.Option(CompareFormat.table, "--format", "-f", case_sensitive=False,
                      help="Output: table, json, csv or plain (bare numbers).")

# One short phrase per accountant for the notes column (the full notes go under the table).
_METHODS = {
    "pb": "tight numeric PLD",
    "rdp": "Rényi DP (improved)",
    "moments": "Abadi et al. moments",
    "abadi": "Abadi et al. Lemma 3",
    "gdp": "CLT / Gaussian DP",
    "strong": "Kairouz et al. 2015",
    "naive": "basic composition",
}
_SHORT_X_LABELS = {"steps": "steps", "epochs": "epochs", "sigma": "σ", "q": "q"}
_SWEEP_DIGITS = 4
_X_LABELS = {"steps": "training steps T", "epochs": "epochs", "sigma": "noise multiplier σ",
             "q": "sampling rate q"}
# Abadi et al. 2016 §5: q = 0.01, σ = 4, T = 10 000, δ = 1e-5.
_ABADI_EXAMPLE = (0.01, 4.0, 10_000, 1e-5)
_ABADI_FOOTNOTE = ("This is Abadi et al. 2016 §5's example: they reported ε ≈ 1.26 (moments "
                   "accountant) against 9.34 ('strong composition', not a bound: see strong's note).")


# ------------------------------------------------------------------ sweeps
def _dedupe(values: list) -> list:
    seen, kept = set(), []
    for value in values:
        if value not in seen:
            seen.add(value)
            kept.append(value)
    return kept


def _range_values(text: str, flag: str, check: Callable, integer: bool) -> list:
    parts = text.split(":")
    if len(parts) != 3:
        raise DpcalcError(f"{flag} takes {_SWEEP_SYNTAX}; got {text!r}")
    start, stop = check(parts[0].strip(), flag), check(parts[1].strip(), flag)
    spec = parts[2].strip().lower()
    log_spaced = spec.startswith("log")
    count = check_count(spec[3:] if log_spaced else spec, f"{flag} (number of points in the range)",
                        minimum=2, maximum=MAX_SWEEP_POINTS)
    import numpy as np  # only when a range is given: numpy costs start-up time

    points = np.geomspace(start, stop, count) if log_spaced else np.linspace(start, stop, count)
    points[0], points[-1] = start, stop  # exact ends
    if integer:
        return [check(int(round(value)), flag) for value in points]
    return [check(float(value), flag) for value in points]


def parse_sweep(text: str, flag: str, check: Callable, integer: bool = False) -> list:
    """A value, a list 'a,b,c' or a range 'start:stop:N' / 'start:stop:logN' → values
    (each validated by ``check(value, flag)``; integers rounded; duplicates dropped)."""
    text = str(text).strip()
    if ":" in text:
        values = _range_values(text, flag, check, integer)
    else:
        items = [item.strip() for item in text.split(",")]
        if not all(items):
            raise DpcalcError(f"{flag} takes {_SWEEP_SYNTAX}; got {text!r}")
        values = [check(item, flag) for item in items]
    values = _dedupe(values)
    if len(values) > MAX_SWEEP_POINTS:
        raise DpcalcError(f"{flag} sweeps at most {MAX_SWEEP_POINTS} points; got {len(values)}")
    return values


def _steps_check(value, flag):
    return check_count(value, flag, maximum=10**9)


def _positive_check(value, flag):
    return check_positive(value, flag)


@dataclass(frozen=True)
class Point:
    """One configuration of the sweep."""

    q: float
    sigma: float
    steps: int
    epochs: float | None


@dataclass
class Sweep:
    points: list[Point]
    swept: str | None  # "steps", "epochs", "sigma", "q" or None (one configuration)
    inputs: dict

    def x_values(self) -> list[float]:
        return [getattr(point, self.swept) for point in self.points] if self.swept else []


def build_sweep(q, batch_size, dataset_size, sigma, steps, epochs) -> Sweep:
    """Validate the flags into the configurations to evaluate (at most one flag swept)."""
    if q is not None:
        if batch_size is not None or dataset_size is not None:
            raise DpcalcError("give either --q or --batch-size with --dataset-size, not both")
        rates = parse_sweep(q, "--q", lambda value, flag: check_sampling_rate(value, flag))
    else:
        rates = [resolve_sampling_rate(None, batch_size, dataset_size)]
    batch = None if batch_size is None else check_count(batch_size, "--batch-size")
    dataset = None if dataset_size is None else check_count(dataset_size, "--dataset-size")
    if sigma is None:
        raise DpcalcError("give --sigma (noise multiplier, > 0)")
    sigmas = parse_sweep(sigma, "--sigma", lambda value, flag: check_noise_multiplier(value, flag))
    if steps is not None and epochs is not None:
        raise DpcalcError("give either --steps or --epochs, not both")
    if steps is None and epochs is None:
        raise DpcalcError("give --steps or --epochs")
    step_values = None if steps is None else parse_sweep(steps, "--steps", _steps_check, integer=True)
    epoch_values = None if epochs is None else parse_sweep(epochs, "--epochs", _positive_check)
    lengths = {"q": len(rates), "sigma": len(sigmas),
               "steps": len(step_values or []), "epochs": len(epoch_values or [])}
    swept = [name for name, length in lengths.items() if length > 1]
    if len(swept) > 1:
        flags = " and ".join(f"--{name}" for name in swept)
        raise DpcalcError(f"sweep one of --q, --sigma, --steps/--epochs at a time; got lists for {flags}")
    points = []
    for rate in rates:
        for noise in sigmas:
            for step_count, epoch_count in _step_choices(step_values, epoch_values, rate, batch, dataset):
                points.append(Point(rate, noise, step_count, epoch_count))
    inputs = {"q": rates[0] if len(rates) == 1 else rates, "batch_size": batch,
              "dataset_size": dataset, "sigma": sigmas[0] if len(sigmas) == 1 else sigmas}
    if epoch_values is not None:
        inputs["epochs"] = epoch_values[0] if len(epoch_values) == 1 else epoch_values
    inputs["steps"] = (points[0].steps if len({p.steps for p in points}) == 1
                       else [point.steps for point in points])
    return Sweep(points, swept[0] if swept else None, inputs)


def _step_choices(step_values, epoch_values, rate, batch, dataset):
    if step_values is not None:
        return [(count, None) for count in step_values]
    return [(resolve_steps(None, epochs, rate, batch, dataset), epochs) for epochs in epoch_values]


# ------------------------------------------------------------------ evaluation
def _sort_key(result: EpsilonResult):
    value = result.epsilon
    return (value is None, math.inf if value is None else value)


def _tightest(results: list[EpsilonResult]) -> float | None:
    certified = [r.epsilon for r in results
                 if r.certified and r.epsilon is not None and math.isfinite(r.epsilon)]
    return min(certified) if certified else None


def _ratio(value: float | None, tightest: float | None) -> float | None:
    if value is None or tightest is None:
        return None
    if tightest == 0.0:
        return 1.0 if value == 0.0 else math.inf
    return value / tightest


def _records(point: Point, results: list[EpsilonResult]) -> list[dict]:
    """Flat records (one per accountant, sorted by ε) with the configuration and the ratio."""
    tightest = _tightest(results)
    records = []
    for result in sorted(results, key=_sort_key):
        record = epsilon_record(result)
        record.update({"q": point.q, "sigma": point.sigma, "steps": point.steps,
                       "epochs": point.epochs, "ratio_to_tightest": _ratio(result.epsilon, tightest),
                       "method": _METHODS.get(result.accountant) or
                       get_accountant(result.accountant).summary})
        records.append(record)
    return records


def _is_abadi_example(point: Point, delta: float) -> bool:
    q, sigma, steps, target_delta = _ABADI_EXAMPLE
    return (math.isclose(point.q, q) and math.isclose(point.sigma, sigma) and point.steps == steps
            and math.isclose(delta, target_delta))


# ------------------------------------------------------------------ reports
def _show_ratio(value: float | None) -> str:
    if value is None:
        return "—"
    if math.isinf(value):
        return "inf"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _kind(value: bool) -> str:
    return "certified" if value else "approx."


def _single_report(records: list[dict], results: list[EpsilonResult], inputs: dict,
                   footnotes: list[str]) -> Report:
    columns = [
        Column("accountant", "accountant", justify="left"),
        Column("ε", "epsilon", show_upper),
        Column("lower", "epsilon_lower", show_lower),
        Column("ratio", "ratio_to_tightest", _show_ratio),
        Column("kind", "certified", _kind, justify="left"),
        Column("notes", "method", justify="left"),
    ]
    lines = ["Sorted by ε. ratio: ε / the tightest certified ε. Certified values are upper "
             "bounds (rounded up), pb's lower bound is certified too (rounded down); approx. "
             "(approximation) values are not bounds."]
    return Report(command="compare", title="Accountants compared", inputs=inputs, results=records,
                  columns=columns, plain_columns=[Column("ε", "epsilon", plain_upper)],
                  footnotes=lines + footnotes + result_notes(sorted(results, key=_sort_key)),
                  input_labels=INPUT_LABELS)


def _column_order(records: list[dict], names: list[str]) -> list[str]:
    """Accountants ordered by ε at the last sweep point (not applicable last)."""
    last = {record["accountant"]: record["epsilon"] for record in records}
    return sorted(names, key=lambda name: (last.get(name) is None,
                                           math.inf if last.get(name) is None else last[name]))


def _sweep_table(sweep: Sweep, per_point: list[list[dict]], names: list[str], inputs: dict,
                 delta: float) -> Report:
    order = _column_order(per_point[-1], names)
    certified = {record["accountant"]: record["certified"] for record in per_point[0]}
    columns = [Column(_SHORT_X_LABELS[sweep.swept], "x", lambda value: f"{value:g}")]
    rows = []
    for point, records in zip(sweep.points, per_point):
        row = {"x": getattr(point, sweep.swept), "steps": point.steps}
        for record in records:
            row[record["accountant"]] = record["epsilon"]
            if record["accountant"] == "pb":
                row["pb_lower"] = record["epsilon_lower"]
        rows.append(row)
    if sweep.swept != "steps" and len({point.steps for point in sweep.points}) > 1:
        columns.append(Column("steps", "steps", lambda value: str(value)))
    for name in order:
        header = name if certified.get(name, True) else f"{name}≈"
        columns.append(Column(header, name, lambda value: show_upper(value, _SWEEP_DIGITS)))
        if name == "pb":
            columns.append(Column("pb low", "pb_lower", lambda value: show_lower(value, _SWEEP_DIGITS)))
    footnotes = [f"ε at δ = {delta:g}. Certified upper bounds are rounded up, pb's certified lower "
                 "bound (pb low) down; ≈ marks an approximation, not a bound; n/a: does not apply."]
    return Report(command="compare", title=f"ε over {_X_LABELS[sweep.swept]}", inputs=inputs,
                  results=rows, columns=columns, plain_columns=[], footnotes=footnotes,
                  input_labels=INPUT_LABELS)


def print_wide_table(report: Report) -> None:
    """A Rich table never narrower than its cells: numbers are not folded mid-digit when
    the terminal (or the 80-column default of a pipe) is narrower than the table."""
    from rich.console import Console

    from dpcalc.cli.render import print_table

    widths = [max([len(column.header)] + [len(column.show(row.get(column.key)))
                                          for row in report.results])
              for column in report.columns]
    needed = sum(width + 3 for width in widths) + 1
    console = Console()
    if console.width < needed:
        console = Console(width=needed)
    print_table(report, console)


_CSV_KEYS = ("accountant", "q", "sigma", "steps", "epochs", "epsilon", "epsilon_lower", "certified",
             "kind", "ratio_to_tightest", "order", "notes")


def _csv_value(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "; ".join(str(item) for item in value)
    return str(value)


def write_csv(records: list[dict]) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(_CSV_KEYS)
    for record in records:
        writer.writerow([_csv_value(record.get(key)) for key in _CSV_KEYS])


def _plot(path: str, sweep: Sweep, per_point: list[list[dict]], names: list[str], delta: float) -> None:
    from dpcalc.cli.plots import Curve, epsilon_sweep_figure

    by_name = {name: [] for name in names}
    lower = []
    certified = {}
    for records in per_point:
        for record in records:
            by_name[record["accountant"]].append(record["epsilon"])
            certified[record["accountant"]] = record["certified"]
            if record["accountant"] == "pb":
                lower.append(record["epsilon_lower"])
    curves = [Curve(name, by_name[name], lower if name == "pb" else None, certified[name])
              for name in reversed(_column_order(per_point[-1], names))]  # legend top-down
    first = sweep.points[0]
    fixed = []
    if sweep.swept != "q":
        fixed.append(f"q = {first.q:g}")
    if sweep.swept != "sigma":
        fixed.append(f"σ = {first.sigma:g}")
    if sweep.swept not in ("steps", "epochs"):
        fixed.append(f"T = {first.steps}" if first.epochs is None else f"epochs = {first.epochs:g}")
    title = f"ε at δ = {delta:g}; " + ", ".join(fixed)
    x_values = sweep.x_values()
    epsilon_sweep_figure(path, _X_LABELS[sweep.swept], x_values, curves, title)
    sys.stderr.write(f"plot written to {path}\n")


# ------------------------------------------------------------------ command
def compare_command(
    q: Optional[str] = Q_SWEEP,
    batch_size: Optional[str] = opt.BATCH_SIZE,
    dataset_size: Optional[str] = opt.DATASET_SIZE,
    sigma: Optional[str] = SIGMA_SWEEP,
    steps: Optional[str] = STEPS_SWEEP,
    epochs: Optional[str] = EPOCHS_SWEEP,
    delta: str = opt.DELTA,
    accountant: Optional[List[str]] = ACCOUNTANTS,
    tolerance: str = opt.TOLERANCE,
    plot: Optional[str] = PLOT,
    output_format: CompareFormat = FORMAT,
) -> None:
    """Every accountant side by side on one DP-SGD configuration, or over a sweep.

    One configuration: a table sorted by ε with each value's ratio to the tightest
    certified ε; certified bounds and approximations are marked.

    Sweep: give ONE of --steps, --epochs, --sigma or --q as a list (1000,2000,5000) or a
    range START:STOP:N (N evenly spaced points) or START:STOP:logN (N log-spaced points),
    both ends included: 1000:100000:log10 is 10 points from 1e3 to 1e5 (at most 200).
    The result is ε over the sweep per accountant; --plot FILE draws it.
    """
    sweep = build_sweep(q, batch_size, dataset_size, sigma, steps, epochs)
    target_delta = check_delta(delta)
    pb_tolerance = check_positive(tolerance, "--tolerance")
    names = accountant_names() if not accountant else resolve_names(accountant)
    if plot is not None:
        from dpcalc.cli.plots import check_plot_path

        check_plot_path(plot)
        if sweep.swept is None:
            raise DpcalcError("--plot needs a sweep: give --steps, --epochs, --sigma or --q as a "
                              "list 'a,b,c' or a range 'start:stop:logN'")
    opt.warn_large_delta(target_delta, sweep.inputs.get("dataset_size"))
    from dpcalc.accounting.schedule import Schedule

    per_point, all_results = [], []
    for point in sweep.points:
        schedule = Schedule.single(point.q, point.sigma, point.steps)
        results = epsilon_results(names, schedule, target_delta, tolerance=pb_tolerance)
        all_results.append(results)
        per_point.append(_records(point, results))
    inputs = {**sweep.inputs, "delta": target_delta, "accountants": names, "sweep": sweep.swept}
    flat = [record for records in per_point for record in records]
    if plot is not None:  # draw first: a failing plot leaves stdout empty (exit 2)
        _plot(plot, sweep, per_point, names, target_delta)
    if output_format == CompareFormat.csv:
        write_csv(flat)
    elif sweep.swept is None or output_format != CompareFormat.table:
        footnotes = []
        if sweep.swept is None and _is_abadi_example(sweep.points[0], target_delta):
            footnotes.append(_ABADI_FOOTNOTE)
        report = _single_report(flat, all_results[0], inputs, footnotes)
        emit(report, OutputFormat(output_format.value))
    else:
        print_wide_table(_sweep_table(sweep, per_point, names, inputs, target_delta))


__all__ = ["compare_command", "parse_sweep", "build_sweep", "CompareFormat", "MAX_SWEEP_POINTS"]
