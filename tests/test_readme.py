"""The README's examples run exactly as shown."""
from __future__ import annotations

import pathlib
import re
import shlex
import subprocess
import sys

import pytest

README = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()
BLOCKS = re.findall(r"```console\n(.*?)```", README, flags=re.S)
EXPECTED_EXIT = {"--max-epsilon 1 ": 1, "--q 1.5 ": 2, "--epsilon 1e-6 ": 2}


def _examples():
    for block in BLOCKS:
        lines = block.strip("\n").splitlines()
        command, output = lines[0], lines[1:]
        assert command.startswith("$ dpcalc "), command
        yield command[2:], output


@pytest.mark.parametrize("command,output", list(_examples()), ids=lambda v: v if isinstance(v, str) else "")
def test_readme_example(command, output):
    args = shlex.split(command)[1:]
    completed = subprocess.run([sys.executable, "-m", "dpcalc", *args], capture_output=True,
                               text=True, timeout=120, env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"})
    expected_exit = next((code for key, code in EXPECTED_EXIT.items() if key in command + " "), 0)
    assert completed.returncode == expected_exit, completed.stderr
    shown = completed.stdout.splitlines() + completed.stderr.splitlines()
    shown = [line.rstrip() for line in shown]
    # every line the README shows appears in what the command printed, in order
    position = 0
    for line in output:
        assert line.rstrip() in shown[position:], f"{line!r} not printed by: {command}"
        position = shown.index(line.rstrip(), position) + 1


def test_quickstart_is_two_commands_using_the_ci_test_command():
    quickstart = README.split("## Quickstart", 1)[1].split("##", 1)[0]
    commands = re.findall(r"```sh\n(.*?)```", quickstart, flags=re.S)[0].strip().splitlines()
    assert commands == ['pip install . && dpcalc epsilon --q 0.01 --sigma 4 --steps 10000',
                        'pip install ".[test]" && python -m pytest']
    ci = (pathlib.Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    assert commands[1] in ci
