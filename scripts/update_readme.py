"""Rerun every ```console example of README.md and docs/*.md and write what it prints back into
the block. Run from anywhere: `python scripts/update_readme.py [FILE ...]` (default: all of them).

Conventions: a block whose last line closes a table (starts with "└") shows only the output up to
the end of the first table (of all its parts, when it was split to fit 80 columns); a block with a
line "[…]" (ELIDED) shows as many leading and trailing lines of the output as it shows before and
after that line (the middle left out); every other block shows the whole output (stdout, then
stderr). Commands run from the repository's root (examples/ paths), at 80 columns.
In JSON output a full-precision number (more than 8 significant digits, whose last places may
differ between machines) is shown by its leading digits and "…"; tests/test_readme.py checks
that every shown line is printed, in order, "…" standing for the digits left out.
"""
from __future__ import annotations

import pathlib
import re
import shlex
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
ELIDED = "[…]"


def documents() -> list[pathlib.Path]:
    """The files whose examples are checked: README.md and every docs/*.md."""
    return [README, *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```console\n(.*?)```", flags=re.S)
# "key": 2.381807141945078, → "key": 2.38180…,
FULL_PRECISION = re.compile(r'^(\s*(?:"[^"]+": )?)(-?\d+\.\d+(?:e[-+]?\d+)?)(,?)$')
STABLE_DIGITS = 6
# Lines whose figures are read where the float-error allowance is a large share of δ (the
# end of Gaussian-DP μ's range, δ ≈ 1e-10): their 4th digit differs between CPUs (NumPy's
# exp/log differ in the last bit; measured 0.59661 here, 0.59672 on another machine, and
# 0.5966–0.5967 when exp/log are perturbed by one ulp). Shown by their first
# NOISY_DIGITS significant digits and "…".
NOISY_LINES = ("Gaussian-DP μ", "Gaussian DP: TPR")
NOISY_DIGITS = 3
# A line that depends on the machine's speed (a long audit's time estimate on stderr, said
# only when the rest takes ≥ 10 s): never shown, so the example holds on a faster machine.
TIMING_LINE = re.compile(r"^note: audit: \d+ of \d+ runs in .* left \(")
DECIMAL = re.compile(r"(?<![\d.e-])(\d+\.\d+)(?![\d.e])")


def stable_digits(line: str) -> str:
    """A JSON line whose number has more than 8 significant digits, cut to its first
    STABLE_DIGITS significant digits and "…"; any other line as it is."""
    match = FULL_PRECISION.match(line)
    if not match or "e" in match.group(2):
        return line
    number = match.group(2)
    digits = number.lstrip("-").replace(".", "").lstrip("0")
    if len(digits) <= 8:
        return line
    kept, seen = "", 0
    for character in number:
        kept += character
        seen += character.isdigit() and (seen > 0 or character != "0")
        if seen == STABLE_DIGITS:
            break
    return f"{match.group(1)}{kept}…{match.group(3)}"


def noisy_digits(line: str) -> str:
    """A NOISY_LINES line with each decimal of more than NOISY_DIGITS significant digits
    cut to NOISY_DIGITS and "…" (tests/test_readme.py matches "…" to the digits left out,
    and the column padding they change); any other line as it is."""
    if not any(marker in line for marker in NOISY_LINES):
        return line
    table = "│" in line

    def cut(match: re.Match) -> str:
        number, kept, seen = match.group(1), "", 0
        if len(number.replace(".", "").lstrip("0")) <= NOISY_DIGITS:
            return number
        for character in number:
            kept += character
            seen += character.isdigit() and (seen > 0 or character != "0")
            if seen == NOISY_DIGITS:  # in a table, as wide as before (numbers align right)
                return " " * (len(number) - len(kept) - 1) * table + kept + "…"
        return number

    return DECIMAL.sub(cut, line)


def _run(command: str) -> list[str]:
    args = shlex.split(command)[1:]
    completed = subprocess.run([sys.executable, "-m", "dpcalc", *args], capture_output=True,
                               text=True, timeout=300, cwd=ROOT,
                               env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"})
    lines = completed.stdout.splitlines() + completed.stderr.splitlines()
    return [line.rstrip() for line in lines if not TIMING_LINE.match(line)]


def _render(match: re.Match) -> str:
    lines = match.group(1).strip("\n").splitlines()
    command = lines[0]
    printed = _run(command[2:])
    if "json" in command:
        printed = [stable_digits(line) for line in printed]
    printed = [noisy_digits(line) for line in printed]
    if ELIDED in lines[1:]:  # the head and the tail, as many lines as the block shows
        marker = lines.index(ELIDED)
        head, tail = marker - 1, len(lines) - marker - 1
        printed = printed[:head] + [ELIDED] + (printed[-tail:] if tail else [])
    elif lines[-1].startswith("└"):  # the first table, with every part of it when split
        ends = [i for i, line in enumerate(printed) if line.startswith("└")]
        parts = re.search(r"\((\d+)/(\d+)\)\s*$", printed[0]) if printed else None
        count = int(parts.group(2)) if parts else 1
        end = ends[count - 1] if len(ends) >= count else len(printed) - 1
        printed = printed[:end + 1]
    return "```console\n" + "\n".join([command, *printed]) + "\n```"


if __name__ == "__main__":
    chosen = [pathlib.Path(name).resolve() for name in sys.argv[1:]] or documents()
    for path in chosen:
        path.write_text(BLOCK.sub(_render, path.read_text()))
        print(f"updated {path.relative_to(ROOT)}")
