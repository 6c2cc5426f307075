"""`dpcalc completions SHELL`: print the completion script shipped inside the package, so
pip and pipx users can install it without a clone of the repository."""
from __future__ import annotations

import sys
from enum import Enum

import typer

from dpcalc.errors import DpcalcError

# The scripts live in dpcalc/completions/ (package data); completions/ at the top of the
# repository holds the same files (tests/test_completions.py keeps them identical).
SCRIPT_FILES = {"bash": "dpcalc.bash", "zsh": "_dpcalc", "fish": "dpcalc.fish"}


class Shell(str, Enum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


def completion_script(shell: str) -> str:
    """The shipped completion script for ``shell`` (bash, zsh or fish)."""
    from importlib.resources import files

    if shell not in SCRIPT_FILES:
        raise DpcalcError(f"SHELL must be one of {', '.join(SCRIPT_FILES)}; got {shell!r}")
    return files("dpcalc").joinpath("completions", SCRIPT_FILES[shell]).read_text(encoding="utf-8")


SHELL = typer.Argument(..., case_sensitive=False, help="bash, zsh or fish.")


def completions_command(shell: Shell = SHELL) -> None:
    """Print the completion script for SHELL (bash, zsh or fish) on stdout.

    Install it once: bash, add `eval "$(dpcalc completions bash)"` to ~/.bashrc; zsh, write
    it as _dpcalc into a folder of your $fpath (e.g. `dpcalc completions zsh >
    ~/.zfunc/_dpcalc` after `mkdir -p ~/.zfunc`, with `fpath=(~/.zfunc $fpath)` before compinit in
    ~/.zshrc); fish, `mkdir -p ~/.config/fish/completions` then
    `dpcalc completions fish > ~/.config/fish/completions/dpcalc.fish`.

    Example: dpcalc completions bash > ~/.local/share/bash-completion/completions/dpcalc
    """
    sys.stdout.write(completion_script(Shell(shell).value))


__all__ = ["SCRIPT_FILES", "completion_script", "completions_command"]
