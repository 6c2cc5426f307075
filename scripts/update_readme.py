"""Rerun every ```console example of README.md and write what it prints back into the block.

Convention: a block whose last line closes a table (starts with "└") shows only the output up to
the end of the first table; every other block shows the whole output (stdout, then stderr).
tests/test_readme.py checks that every shown line is printed, in order.
"""
from __future__ import annotations

import pathlib
import re
import shlex
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BLOCK = re.compile(r"```console\n(.*?)```", flags=re.S)


def _run(command: str) -> list[str]:
    args = shlex.split(command)[1:]
    completed = subprocess.run([sys.executable, "-m", "dpcalc", *args], capture_output=True,
                               text=True, timeout=300, cwd=ROOT,
                               env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"})
    lines = completed.stdout.splitlines() + completed.stderr.splitlines()
    return [line.rstrip() for line in lines]


def _render(match: re.Match) -> str:
    lines = match.group(1).strip("\n").splitlines()
    command = lines[0]
    printed = _run(command[2:])
    if lines[-1].startswith("└"):
        end = next((i for i, line in enumerate(printed) if line.startswith("└")), len(printed) - 1)
        printed = printed[:end + 1]
    return "```console\n" + "\n".join([command, *printed]) + "\n```"


if __name__ == "__main__":
    text = README.read_text()
    README.write_text(BLOCK.sub(_render, text))
    print(f"updated {README.relative_to(ROOT)}")
