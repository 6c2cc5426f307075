"""completions/ are generated from the Typer app; this fails when they are stale."""
from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

from dpcalc.cli.completions import COMPLETION_FILES, command_specs, render_completion

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("shell", sorted(COMPLETION_FILES))
def test_completion_scripts_are_current(shell):
    path = ROOT / "completions" / COMPLETION_FILES[shell]
    assert path.read_text() == render_completion(shell), (
        f"{path.name} is stale: run python scripts/gen_completions.py")


def test_every_command_and_option_is_completed():
    _, commands = command_specs()
    bash = render_completion("bash")
    for command in commands:
        assert command.name in bash
        for option in command.options:
            assert option.names[0] in bash


@pytest.mark.parametrize("shell,flag", [("bash", "-n"), ("zsh", "-n"), ("fish", "--no-execute")])
def test_scripts_parse_in_their_shell(shell, flag, tmp_path):
    binary = shutil.which(shell)
    if binary is None:
        pytest.skip(f"{shell} not installed")
    path = ROOT / "completions" / COMPLETION_FILES[shell]
    completed = subprocess.run([binary, flag, str(path)], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr


def _bash_complete(words: list[str]) -> list[str]:
    script = (f"source {ROOT / 'completions' / 'dpcalc.bash'}; COMP_WORDS=({' '.join(repr(w) for w in words)}); "
              f"COMP_CWORD={len(words) - 1}; _dpcalc; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    completed = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.split()


def test_bash_completes_commands_options_and_choices():
    assert "epsilon" in _bash_complete(["dpcalc", "eps"])
    assert _bash_complete(["dpcalc", "epsilon", "--format", ""]) == ["table", "json", "plain"]
    assert "pb" in _bash_complete(["dpcalc", "epsilon", "--accountant", ""])
    assert "--max-epsilon" in _bash_complete(["dpcalc", "epsilon", "--max"])
