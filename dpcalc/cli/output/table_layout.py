"""Fit a table to the terminal without splitting a word or a number: columns shrink only to
their longest word; when even that is too wide, the table is split into several tables
that each repeat the first column. Pure arithmetic on cell texts: Rich then draws each
table with these exact widths."""
from __future__ import annotations

from dataclasses import dataclass

# Rich's default box: one space of padding each side of a cell plus one border per column,
# and one closing border.
_PER_COLUMN = 3
_BORDER = 1


@dataclass(frozen=True)
class ColumnFit:
    """One column's index in the report and the width it is drawn at."""

    index: int
    width: int


def _cell_width(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def _longest_word(text: str) -> int:
    return max((_cell_width(word) for word in text.split()), default=0)


def column_ranges(texts: list[list[str]]) -> list[tuple[int, int]]:
    """(minimum, natural) width of each column: its longest word and its longest line.
    ``texts[i]`` holds column i's header and cells."""
    ranges = []
    for column in texts:
        natural = max((_cell_width(line) for text in column for line in text.splitlines() or [""]),
                      default=1)
        minimum = max((_longest_word(text) for text in column), default=1)
        ranges.append((max(1, minimum), max(1, natural)))
    return ranges


def _table_width(widths: list[int]) -> int:
    return sum(widths) + _PER_COLUMN * len(widths) + _BORDER


def _shrink(ranges: list[tuple[int, int]], available: int) -> list[int]:
    """Widths between minimum and natural whose table fits ``available`` (the widest
    columns give up space first)."""
    widths = [natural for _, natural in ranges]
    excess = _table_width(widths) - available
    while excess > 0:
        slack = [width - minimum for width, (minimum, _) in zip(widths, ranges)]
        if max(slack) <= 0:
            break
        widest = max(range(len(widths)), key=lambda i: (slack[i] > 0, widths[i]))
        widths[widest] -= 1
        excess -= 1
    return widths


def _balanced(groups: list[list[int]], fits) -> list[list[int]]:
    """The same columns in as many tables, each holding about as many columns (the greedy
    split can leave one column alone in the last table), if every table still fits."""
    columns = [index for group in groups for index in group]
    count = len(groups)
    size, extra = divmod(len(columns), count)
    balanced, start = [], 0
    for number in range(count):
        end = start + size + (1 if number < extra else 0)
        balanced.append(columns[start:end])
        start = end
    return balanced if all(fits(group) for group in balanced) else groups


def fit_columns(texts: list[list[str]], available: int) -> list[list[ColumnFit]]:
    """The tables to draw: each a list of columns with widths, all within ``available``
    cells where the words allow it. The first column is repeated in every table."""
    ranges = column_ranges(texts)
    if _table_width([minimum for minimum, _ in ranges]) <= available or len(ranges) < 2:
        return [[ColumnFit(i, width) for i, width in enumerate(_shrink(ranges, available))]]
    key = ranges[0]
    # A single word wider than what is left beside the key column must fold after all.
    room = max(1, available - _table_width([key[0], 0]))
    capped = [key] + [(room, room) if minimum > room else (minimum, natural)
                      for minimum, natural in ranges[1:]]
    def fits(group: list[int]) -> bool:
        return _table_width([capped[0][0]] + [capped[i][0] for i in group]) <= available

    groups: list[list[int]] = [[]]
    for index in range(1, len(capped)):
        if groups[-1] and not fits(groups[-1] + [index]):
            groups.append([])
        groups[-1].append(index)
    groups = _balanced(groups, fits)
    tables = []
    for group in groups:
        members = [0, *group]
        widths = _shrink([capped[i] for i in members], available)
        tables.append([ColumnFit(i, width) for i, width in zip(members, widths)])
    return tables
