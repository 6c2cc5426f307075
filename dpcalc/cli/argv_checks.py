"""Checks on the raw command line that Click does not make: an option that takes one value
given twice (Click would silently keep the last), and a closer "did you mean" for a
mistyped option."""
from __future__ import annotations

import difflib

from dpcalc.errors import DpcalcError


def _subcommand(root, args: list[str]):
    """The Click subcommand named by the first non-option word, and the words after it."""
    for index, word in enumerate(args):
        if word == "--":
            return None, []
        if not word.startswith("-"):
            return root.commands.get(word), args[index + 1:]
    return None, []


def _single_valued(command) -> dict[str, str]:
    """option spelling → canonical name, for options that take exactly one value."""
    names = {}
    for param in command.params:
        spellings = [name for name in getattr(param, "opts", []) if name.startswith("-")]
        if not spellings or getattr(param, "multiple", False) or getattr(param, "is_flag", False):
            continue
        canonical = max(spellings, key=len)
        names.update({spelling: canonical for spelling in spellings})
    return names


def check_repeated_options(root, args: list[str]) -> None:
    """DpcalcError when an option that takes one value appears more than once."""
    command, rest = _subcommand(root, args)
    if command is None:
        return
    single = _single_valued(command)
    seen: dict[str, int] = {}
    for word in rest:
        if word == "--":
            break
        spelling = word.split("=", 1)[0] if word.startswith("--") else word
        canonical = single.get(spelling)
        if canonical is not None:
            seen[canonical] = seen.get(canonical, 0) + 1
            if seen[canonical] > 1:
                raise DpcalcError(f"{canonical} is given more than once; it takes one value: "
                                  "give it once")


def suggest_option(root, args: list[str], unknown: str) -> str:
    """' (did you mean --sigma?)' for a mistyped option of the subcommand, or ''."""
    command, _ = _subcommand(root, args)
    if command is None:
        return ""
    spellings = [name for param in command.params for name in getattr(param, "opts", [])
                 if name.startswith("--")]
    close = difflib.get_close_matches(unknown, spellings, n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""
