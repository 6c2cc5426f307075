"""Results as the stable JSON records of the output contract, and the shared table columns."""
from __future__ import annotations

from dpcalc.accountants.result import EpsilonResult
from dpcalc.cli.output.render import (ERROR, Column, plain_upper, show_lower, show_number,
                                      show_upper)

CERTIFIED = "certified upper bound"
APPROXIMATION = "approximation"
# kind → the kind column's word; ERROR: the accountant failed inside (a bug, no answer)
SHORT_KINDS = {CERTIFIED: "certified", APPROXIMATION: "approximation", ERROR: ERROR}


def kind_of(certified: bool, failed: bool = False) -> str:
    """A record's "kind": certified upper bound, approximation, or error."""
    return ERROR if failed else CERTIFIED if certified else APPROXIMATION


def short_kind(kind) -> str:
    return SHORT_KINDS.get(kind, "" if kind is None else str(kind))


KIND_COLUMN = Column("kind", "kind", short_kind, justify="left")


def result_notes(results: list[EpsilonResult]) -> list[str]:
    """Each accountant's notes as 'name: note' lines under the table."""
    return [f"{result.accountant}: {note}" for result in results for note in result.notes]


def epsilon_record(result: EpsilonResult) -> dict:
    """{"accountant", "epsilon", "epsilon_upper", "epsilon_lower", "certified", "kind",
    "order", "notes", "details"}: the same keys for every accountant."""
    return {
        "accountant": result.accountant,
        "epsilon": result.epsilon,
        "epsilon_upper": result.epsilon_upper,
        "epsilon_lower": result.epsilon_lower,
        "certified": result.certified,
        "kind": kind_of(result.certified, result.failed),
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
                "model": None}

__all__ = ["EPSILON_COLUMNS", "EPSILON_PLAIN", "INPUT_LABELS", "KIND_COLUMN", "epsilon_record",
           "kind_of", "result_notes", "short_kind", "show_number"]
