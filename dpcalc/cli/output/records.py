"""Results as the stable JSON records of the output contract, and the shared table columns."""
from __future__ import annotations

from dpcalc.accountants.result import EpsilonResult
from dpcalc.cli.output.render import (APPROXIMATION, ERROR, Column, plain_upper, show_lower,
                                      show_number, show_upper)

CERTIFIED = "certified upper bound"
NOT_APPLICABLE_KIND = "not applicable"
# kind → the kind column's word; ERROR: the accountant failed inside (a bug, no answer)
KIND_WORDS = {CERTIFIED: "certified", APPROXIMATION: "approximation",
              NOT_APPLICABLE_KIND: "not applicable", ERROR: ERROR}


def row_kind(certified: bool, value, notes=(), failed: bool = False) -> str:
    """A row's kind: "error" where the accountant failed inside (a bug: no answer); a
    certificate or an approximation where it has a value; else "not applicable" (its first
    note says why, and a nearest certified model's figure may follow)."""
    if failed:
        return ERROR
    if value is not None:
        return CERTIFIED if certified else APPROXIMATION
    return NOT_APPLICABLE_KIND


def kind_of(certified: bool, failed: bool = False) -> str:
    """The kind of a record that holds a value (or failed inside): certified upper bound,
    approximation, or error."""
    return ERROR if failed else CERTIFIED if certified else APPROXIMATION


def show_kind(kind) -> str:
    return KIND_WORDS.get(kind, "" if kind is None else str(kind))


short_kind = show_kind
KIND_COLUMN = Column("kind", "kind", show_kind, justify="left")


def result_notes(results: list[EpsilonResult]) -> list[str]:
    """Each accountant's notes as 'name: note' lines under the table."""
    return [f"{result.accountant}: {note}" for result in results for note in result.notes]


def epsilon_record(result: EpsilonResult) -> dict:
    """{"accountant", "epsilon", "epsilon_upper", "epsilon_lower", "certified", "kind",
    "order", "notes", "details"}: the same keys for every accountant. "certified" is true
    only for a row that holds a certificate: a not-applicable row (no value) has false, kind
    "not applicable", and pb's ``details["nearest_model"]`` where a nearby model has one."""
    return {
        "accountant": result.accountant,
        "epsilon": result.epsilon,
        "epsilon_upper": result.epsilon_upper,
        "epsilon_lower": result.epsilon_lower,
        "certified": result.certified and result.epsilon is not None and not result.failed,
        "kind": row_kind(result.certified, result.epsilon, result.notes, result.failed),
        "order": result.order,
        "notes": list(result.notes),
        "details": dict(result.details),
    }


def _order(value) -> str:
    return "" if value is None else f"{value:g}"


EPSILON_COLUMNS = [
    Column("accountant", "accountant", justify="left"),
    Column("ε", "epsilon", show_upper),
    Column("lower bound", "epsilon_lower", show_lower),
    KIND_COLUMN,
    Column("order α", "order", _order),
]

EPSILON_PLAIN = [Column("ε", "epsilon", plain_upper)]

INPUT_LABELS = {"q": "q", "batch_size": "B", "dataset_size": "N", "sigma": "σ",
                "steps": "steps", "delta": "δ", "epsilon": "ε", "k": "k", "max_batch_size": "M",
                "model": None, "unit": None, "drop_last": None}

__all__ = ["EPSILON_COLUMNS", "EPSILON_PLAIN", "INPUT_LABELS", "KIND_COLUMN", "epsilon_record",
           "kind_of", "result_notes", "short_kind", "show_number"]
