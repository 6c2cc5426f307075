"""completions/ are generated from the Typer app and shipped in the package; each shell's
script is driven by the real shell where it is installed (zsh through a pseudo-terminal)."""
from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest
from conftest import cli_runner

from dpcalc.cli.app import app
from dpcalc.cli.completions.script import COMPLETION_FILES, command_specs, render_completion
from dpcalc.cli.completions.command import SCRIPT_FILES, completion_script
from shell_driver import bash_complete, fish_complete, zsh_complete

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOP_LEVEL = ROOT / "completions"
SHIPPED = ROOT / "dpcalc" / "completions"


@pytest.mark.parametrize("shell", sorted(COMPLETION_FILES))
def test_completion_scripts_are_current(shell):
    path = TOP_LEVEL / COMPLETION_FILES[shell]
    assert path.read_text() == render_completion(shell), (
        f"{path.name} is stale: run python scripts/gen_completions.py")


@pytest.mark.parametrize("shell", sorted(COMPLETION_FILES))
def test_shipped_scripts_are_identical_to_completions_folder(shell):
    assert SCRIPT_FILES == COMPLETION_FILES
    shipped = (SHIPPED / COMPLETION_FILES[shell]).read_bytes()
    assert shipped == (TOP_LEVEL / COMPLETION_FILES[shell]).read_bytes(), (
        "dpcalc/completions/ differs from completions/: run python scripts/gen_completions.py")


@pytest.mark.parametrize("shell", sorted(COMPLETION_FILES))
def test_completions_command_prints_the_shipped_script(shell):
    result = cli_runner().invoke(app, ["completions", shell])
    assert result.exit_code == 0, result.output
    assert result.output == completion_script(shell) == render_completion(shell)


def test_completions_command_rejects_an_unknown_shell():
    result = cli_runner().invoke(app, ["completions", "tcsh"])
    assert result.exit_code == 2


def test_pyproject_ships_the_scripts_as_package_data():
    text = (ROOT / "pyproject.toml").read_text()
    assert '"completions/*"' in text.split("[tool.setuptools.package-data]", 1)[1]


def test_every_command_and_option_is_completed():
    _, commands = command_specs()
    bash = render_completion("bash")
    for command in commands:
        assert command.name in bash
        for option in command.options:
            for name in option.names:
                assert name in bash


@pytest.mark.parametrize("shell,flag", [("bash", "-n"), ("zsh", "-n"), ("fish", "--no-execute")])
def test_scripts_parse_in_their_shell(shell, flag):
    binary = shutil.which(shell)
    if binary is None:
        pytest.skip(f"{shell} not installed")
    path = TOP_LEVEL / COMPLETION_FILES[shell]
    completed = subprocess.run([binary, flag, str(path)], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr


# --- what each shell offers ----------------------------------------------------------------
METHODS = ["pb", "seed", "rdp-overapprox", "group-conversion", "rdp-group", "all"]


def test_bash_completes_commands_options_and_choices():
    script = TOP_LEVEL / "dpcalc.bash"
    assert "epsilon" in bash_complete(script, ["dpcalc", "eps"])
    assert bash_complete(script, ["dpcalc", "epsilon", "--format", ""]) == ["table", "json", "plain"]
    assert "pb" in bash_complete(script, ["dpcalc", "epsilon", "--accountant", ""])
    assert "--max-epsilon" in bash_complete(script, ["dpcalc", "epsilon", "--max"])


def test_bash_completes_methods_comma_lists_aliases_and_shells():
    script = TOP_LEVEL / "dpcalc.bash"
    assert bash_complete(script, ["dpcalc", "group", "--method", ""]) == METHODS
    assert bash_complete(script, ["dpcalc", "group", "-m", "pb,rdp-"]) == [
        "pb,rdp-overapprox", "pb,rdp-group"]
    assert bash_complete(script, ["dpcalc", "epsilon", "-a", "pb,r"]) == ["pb,rdp"]
    assert bash_complete(script, ["dpcalc", "compare", "--sampling", "poisson,f"]) == [
        "poisson,fixed"]
    assert bash_complete(script, ["dpcalc", "epsilon", "--noise"]) == ["--noise-multiplier"]
    assert bash_complete(script, ["dpcalc", "completions", "z"]) == ["zsh"]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh not installed")
def test_zsh_completes_options_after_the_subcommand():
    """A real interactive zsh: `dpcalc epsilon --acc<Tab>` and friends."""
    lines = ["dpcalc epsilon --acc", "dpcalc group --method ", "dpcalc epsilon -a pb,r",
             "dpcalc comp", "dpcalc completions ", "dpcalc sigma --target-e",
             "dpcalc epsilon --format "]
    offered = zsh_complete(TOP_LEVEL, lines)
    assert offered[0] == ["--accountant"]
    assert offered[1] == METHODS
    assert offered[2] == ["rdp"]
    assert sorted(offered[3]) == ["compare", "completions"]
    assert offered[4] == ["bash", "zsh", "fish"]
    assert offered[5] == ["--target-epsilon"]
    assert offered[6] == ["table", "json", "plain"]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish not installed")
def test_fish_completes_options_methods_and_comma_lists():
    script = TOP_LEVEL / "dpcalc.fish"
    assert fish_complete(script, "dpcalc epsilon --acc") == ["--accountant"]
    assert sorted(fish_complete(script, "dpcalc group --method ")) == sorted(METHODS)
    assert fish_complete(script, "dpcalc epsilon --accountant pb,r") == ["pb,rdp"]
    assert fish_complete(script, "dpcalc completions ") == ["bash", "fish", "zsh"]
