"""Turn a finished report into a Rich table, JSON or bare numbers. Never computes."""
from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

from dpcalc.cli.output.numbers import (  # noqa: F401 (re-exported)
    APPROXIMATION, NOT_APPLICABLE, plain_lower, plain_upper, show_lower, show_number, show_upper)


# The kind of a result row whose accountant failed inside (a bug): never an answer.
ERROR = "error"

# The "schema" key of every JSON document: the version of its keys (docs/json-schema.md;
# dpcalc/cli/output/schema.json, written by scripts/gen_json_schema.py). A new number when a
# key is removed, renamed or changes meaning.
JSON_SCHEMA_ID = "dpcalc/1"


class OutputFormat(str, Enum):
    table = "table"
    json = "json"
    plain = "plain"


@dataclass
class Column:
    """A table column: header, the result key it shows, and how to show it."""

    header: str
    key: str
    show: Callable[[Any], str] = lambda value: "" if value is None else str(value)
    justify: str = "right"


@dataclass
class Report:
    """What a command found: the inputs it used and one result per row."""

    command: str
    title: str
    inputs: dict
    results: list[dict]
    columns: list[Column]
    plain_columns: list[Column]
    footnotes: list[str] = field(default_factory=list)
    input_labels: dict = field(default_factory=dict)
    budget: Any = None  # dpcalc.cli.output.budget.Budget when --max-epsilon was given
    extra: dict = field(default_factory=dict)  # more top-level JSON keys (e.g. "alternatives")
    # The accountant (or method) whose ε is the command's answer, the one --max-epsilon
    # gates: its failure is the command's (exit 70). Default: the budget's, else the first row's.
    answer: str | None = None


class AccountantFailed(RuntimeError):
    """The accountant whose ε the command reports failed inside (a bug): cli/app.py prints
    one line and exits with its internal-error code, after the output showed the row."""


# --- JSON ---------------------------------------------------------------------------------
def _jsonable(value: Any) -> Any:
    """inf → "inf" (never the invalid token Infinity); NaN → null; tuples → lists."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, Enum):
        return value.value
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _jsonable(value.item())
    return value


def json_text(payload: dict) -> str:
    """Any payload under the JSON rules of the output contract (inf as "inf"); a command's
    document (a payload with "command") starts with "schema" and "dpcalc_version"."""
    if "command" in payload:
        from dpcalc import __version__

        payload = {"schema": JSON_SCHEMA_ID, "dpcalc_version": __version__, **payload}
    return json.dumps(_jsonable(payload), indent=2, allow_nan=False)


def to_json(report: Report) -> str:
    payload = {"command": report.command, "inputs": report.inputs, "results": report.results,
               **report.extra}
    if report.budget is not None:
        payload["budget"] = report.budget.record()
    return json_text(payload)


# --- plain --------------------------------------------------------------------------------
def to_plain(report: Report) -> str:
    """The bare numbers: one line per result and plain column ("error" where an accountant
    failed inside: never n/a, which means "does not apply")."""
    return "\n".join(_cell(column, result)
                     for result in report.results for column in report.plain_columns)


def _cell(column: Column, result: dict) -> str:
    """What ``column`` shows for ``result``: a row of an accountant that failed inside
    (kind "error") reads "error" where it would read n/a."""
    shown = column.show(result.get(column.key))
    if shown == NOT_APPLICABLE and ERROR in (result.get("kind"), result.get(f"{column.key} kind")):
        return ERROR
    return shown


# --- table --------------------------------------------------------------------------------
# The inputs line names B, N and T as what they are for a federated or user-level run: a
# server drawing 50 of 1000 clients for 200 rounds reads "clients per round = 50 · clients =
# 1000 · rounds = 200", not "B = 50 · N = 1000 · steps = 200".
UNIT_INPUT_LABELS = {
    "client": {"batch_size": "clients per round", "dataset_size": "clients", "steps": "rounds"},
    "user": {"batch_size": "users per step", "dataset_size": "users"},
}


def _inputs_line(report: Report) -> str:
    parts = []
    unit_labels = UNIT_INPUT_LABELS.get(report.inputs.get("unit"), {})
    for key, value in report.inputs.items():
        if value is None or isinstance(value, (list, dict)):
            continue
        label = unit_labels.get(key) or report.input_labels.get(key, key)
        if label is None:  # shown elsewhere (e.g. the model, in the footer)
            continue
        if isinstance(value, float):
            value = f"{value:.6g}"
        parts.append(f"{label} = {value}")
    return " · ".join(parts)


def print_table(report: Report, console=None) -> None:
    """The report as Rich table(s) fitted to the console: words and numbers are never split;
    a table too wide even so is split into several that repeat the first column."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from dpcalc.cli.output.table_layout import fit_columns

    from dpcalc.cli.output.glyphs import cannot_show_glyphs, to_ascii

    console = console or Console()
    plain = cannot_show_glyphs(console.file)  # e.g. PYTHONIOENCODING=ascii: ASCII stand-ins
    text = to_ascii if plain else (lambda words: words)
    cells = [[text(column.header)] + [text(_cell(column, result)) for result in report.results]
             for column in report.columns]
    tables = fit_columns(cells, console.width)
    for number, fitted in enumerate(tables):
        last = number == len(tables) - 1
        title = report.title if len(tables) == 1 else f"{report.title} ({number + 1}/{len(tables)})"
        title = text(title)
        caption = escape(text(_inputs_line(report))) if last and len(tables) == 1 else None
        table = Table(title=escape(title), caption=caption, caption_justify="left",
                      show_lines=False)
        for fit in fitted:
            column = report.columns[fit.index]
            table.add_column(escape(cells[fit.index][0]), justify=column.justify, overflow="fold",
                             width=fit.width)
        for row in range(len(report.results)):
            table.add_row(*(escape(cells[fit.index][row + 1]) for fit in fitted))
        console.print(table)
    if len(tables) > 1:  # the inputs line, wrapped to the console rather than one table
        console.print(escape(text(_inputs_line(report))), highlight=False)
    for note in report.footnotes:
        console.print(f"[dim]{escape(text(note))}[/dim]", highlight=False)
    if report.budget is not None:
        console.print(escape(text(report.budget.line())), highlight=False)


def emit(report: Report, output_format: OutputFormat) -> None:
    """Write the report to stdout in the chosen format, then apply its budget gate (exit 1
    when it failed, even if the reader closed stdout early)."""
    from dpcalc.cli.output.budget import enforce, output_may_close

    with output_may_close():
        if output_format == OutputFormat.json:
            sys.stdout.write(to_json(report) + "\n")
        elif output_format == OutputFormat.plain:
            text = to_plain(report)
            sys.stdout.write(text + ("\n" if text else ""))
            warn_approximations(report.results)
        else:
            print_table(report)
    check_failures(report)
    enforce(report.budget)


def warn_approximations(records: list[dict]) -> None:
    """Plain output shows bare numbers: one stderr line naming the rows whose ε is an
    approximation, not a bound (the table's kind column and JSON's "kind" say it there)."""
    names = [str(_row_name(record)) for record in records
             if record.get("kind") == APPROXIMATION]
    names = list(dict.fromkeys(names))
    if names:
        what = "an approximation, not a bound" if len(names) == 1 else "approximations, not bounds"
        warn(f"{', '.join(names)}: {what} (not a guarantee to report)")


def _row_name(record: dict):
    return record.get("accountant", record.get("method"))


def check_failures(report: Report) -> None:
    """Rows of kind "error" (an accountant failed inside): AccountantFailed when one is the
    command's answer (``report.answer``), else one warning line per failed accountant."""
    answer = report.answer
    if answer is None and report.results:
        answer = report.budget.accountant if report.budget is not None else _row_name(report.results[0])
    check_failed_records(report.results, answer)


def check_failed_records(records: list[dict], answer: str | None) -> None:
    """check_failures on bare records: ``answer`` names the accountant whose ε is the answer."""
    failed = [record for record in records if record.get("kind") == ERROR]
    for record in failed:
        if _row_name(record) == answer:
            raise AccountantFailed(f"accountant {answer} failed inside: {_error_text(record)}")
    for name in dict.fromkeys(_row_name(record) for record in failed):
        record = next(record for record in failed if _row_name(record) == name)
        warn(f"{name} failed inside (a dpcalc bug; its rows read 'error'): {_error_text(record)}")


def _error_text(record: dict) -> str:
    notes = [note for note in record.get("notes", ()) if str(note).startswith("internal error: ")]
    return notes[0][len("internal error: "):] if notes else "no detail"


def warn(message: str) -> None:
    """A warning on stderr, so stdout stays machine-readable."""
    sys.stderr.write(f"warning: {message}\n")
