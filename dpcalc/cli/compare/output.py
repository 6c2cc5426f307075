"""`dpcalc compare` sweep output: the ε-over-sweep table, CSV rows and the plot. Never computes."""
from __future__ import annotations

import csv
import math
import sys
from enum import Enum

from dpcalc.cli.compare.sweep import Sweep
from dpcalc.cli.output.records import APPROXIMATION, INPUT_LABELS
from dpcalc.cli.output.render import Column, Report, show_lower, show_upper

class XScale(str, Enum):
    """The x axis of a sweep plot."""

    linear = "linear"
    log = "log"


_SHORT_X_LABELS = {"steps": "steps", "epochs": "epochs", "sigma": "σ", "q": "q"}
_SWEEP_DIGITS = 4
X_LABELS = {"steps": "training steps T", "epochs": "epochs", "sigma": "noise multiplier σ",
            "q": "sampling rate q"}


def series_key(record: dict, several_samplers: bool) -> str:
    """The column / curve name of an accountant (and its sampler when several are compared)."""
    name = record["accountant"]
    return f"{name} ({record['sampling']})" if several_samplers else name


def _column_order(records: list[dict], several: bool) -> list[str]:
    """Series ordered by ε at the last sweep point (not applicable last)."""
    last = {series_key(record, several): record["epsilon"] for record in records}
    return sorted(last, key=lambda name: (last[name] is None,
                                          math.inf if last[name] is None else last[name]))


def _rows_by_x(sweep: Sweep, per_point: list[list[dict]]) -> list[dict]:
    """One row per swept value, holding every series' ε (and each pb lower bound)."""
    several = len(sweep.samplings) > 1
    rows: dict = {}
    for point, records in zip(sweep.points, per_point):
        row = rows.setdefault(getattr(point, sweep.swept), {"x": getattr(point, sweep.swept),
                                                            "steps": point.steps})
        for record in records:
            key = series_key(record, several)
            row[key], row[f"{key} kind"] = record["epsilon"], record["kind"]
            if record["accountant"] == "pb":
                row[f"{key} low"] = record["epsilon_lower"]
                row[f"{key} low kind"] = record["kind"]
    return list(rows.values())


def _last_records(sweep: Sweep, per_point: list[list[dict]]) -> list[dict]:
    """The records of the last sweep point of every sampler."""
    last = {point.sampling: records for point, records in zip(sweep.points, per_point)}
    return [record for records in last.values() for record in records]


def _certified_series(per_point: list[list[dict]], several: bool) -> dict:
    """Per series: False where any point is an approximation (a not-applicable point says
    nothing about the accountant)."""
    certified: dict = {}
    for records in per_point:
        for record in records:
            key = series_key(record, several)
            certified[key] = certified.get(key, True) and record["kind"] != APPROXIMATION
    return certified


def sweep_table(sweep: Sweep, per_point: list[list[dict]], inputs: dict, delta: float,
                footnotes: list[str]) -> Report:
    several = len(sweep.samplings) > 1
    order = _column_order(_last_records(sweep, per_point), several)
    certified = _certified_series(per_point, several)
    columns = [Column(_SHORT_X_LABELS[sweep.swept], "x", lambda value: f"{value:g}")]
    rows = _rows_by_x(sweep, per_point)
    if sweep.swept != "steps" and len({row["steps"] for row in rows}) > 1:
        columns.append(Column("steps", "steps", lambda value: str(value)))
    for name in order:
        header = name if certified.get(name, True) else f"{name}≈"
        columns.append(Column(header, name, lambda value: show_upper(value, _SWEEP_DIGITS)))
        if name.split(" ")[0] == "pb":
            columns.append(Column(name.replace("pb", "pb low", 1), f"{name} low",
                                  lambda value: show_lower(value, _SWEEP_DIGITS)))
    notes = [f"ε at δ = {delta:g}. Certified upper bounds are rounded up, pb's certified lower "
             "bound (pb low) down; ≈ marks an approximation, not a bound; n/a: does not apply."]
    return Report(command="compare", title=f"ε over {X_LABELS[sweep.swept]}", inputs=inputs,
                  results=rows, columns=columns, plain_columns=[], footnotes=notes + footnotes,
                  input_labels=INPUT_LABELS)


def print_wide_table(report: Report) -> None:
    """The sweep table, fitted to the terminal: split into several tables that repeat the
    swept column when it is too wide (numbers are never folded mid-digit)."""
    from dpcalc.cli.output.render import print_table

    print_table(report)


CSV_KEYS = ("accountant", "sampling", "adjacency", "q", "batch_size", "dataset_size", "sigma",
            "steps", "epochs", "delta", "epsilon", "epsilon_lower", "certified", "kind",
            "ratio_to_tightest", "order", "notes")


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
    writer.writerow(CSV_KEYS)
    for record in records:
        writer.writerow([_csv_value(record.get(key)) for key in CSV_KEYS])


def _fixed_inputs(sweep: Sweep) -> list[str]:
    """What the plot holds fixed: N and B (when given), q, σ, steps or epochs."""
    first = sweep.points[0]
    fixed = []
    if sweep.inputs.get("dataset_size") is not None:
        fixed.append(f"N = {sweep.inputs['dataset_size']}, B = {sweep.inputs['batch_size']}")
    if sweep.swept != "q":
        fixed.append(f"q = {first.q:g}")
    if sweep.swept != "sigma":
        fixed.append(f"σ = {first.sigma:g}")
    if sweep.swept not in ("steps", "epochs"):
        fixed.append(f"T = {first.steps} steps" if first.epochs is None
                     else f"{first.epochs:g} epochs = {first.steps} steps")
    return fixed


def plot_sweep(path: str, sweep: Sweep, per_point: list[list[dict]], delta: float,
               x_scale: XScale | None = None) -> None:
    from dpcalc.cli.output.plots import Curve, epsilon_sweep_figure

    several = len(sweep.samplings) > 1
    rows = _rows_by_x(sweep, per_point)
    certified = _certified_series(per_point, several)
    curves = []
    for name in reversed(_column_order(_last_records(sweep, per_point), several)):  # legend
        lower = [row.get(f"{name} low") for row in rows] if name.split(" ")[0] == "pb" else None
        curves.append(Curve(name, [row.get(name) for row in rows], lower, certified[name]))
    title = f"ε at δ = {delta:g}; " + ", ".join(_fixed_inputs(sweep))
    x_values = [row["x"] for row in rows]
    x_label = X_LABELS[sweep.swept]
    if sweep.swept == "epochs":  # the steps each epoch count gives, on the axis label
        x_label += " (steps: " + ", ".join(str(row["steps"]) for row in rows[:4]) + \
            (", …)" if len(rows) > 4 else ")")
    scale = x_scale.value if x_scale is not None else ("log" if sweep.log_spaced else "linear")
    epsilon_sweep_figure(path, x_label, x_values, curves, title, x_scale=scale)
    sys.stderr.write(f"plot written to {path}\n")


