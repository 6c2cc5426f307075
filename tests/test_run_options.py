"""The run's options are declared once (dpcalc/cli/run_options.py) and every command that
reads a run shows the same ones, in the same order, with the same help."""
from __future__ import annotations

import dataclasses

import pytest
import typer

from dpcalc.cli.app import build_app
from dpcalc.cli.run_options import RUN_OPTIONS, RunFlags, run_options

RUN_COMMANDS = ("epsilon", "delta", "risk", "report")


def _options(command: str) -> list[tuple[str, tuple[str, ...], str]]:
    click_command = typer.main.get_command(build_app([command])).commands[command]
    return [(param.name, tuple(param.opts), param.help) for param in click_command.params]


def test_run_flags_and_the_declared_options_agree():
    assert list(RUN_OPTIONS) == [field.name for field in dataclasses.fields(RunFlags)]


def test_every_run_command_shows_the_same_run_options_in_order():
    shown = {command: [option for option in _options(command) if option[0] in RUN_OPTIONS]
             for command in RUN_COMMANDS}
    first = shown[RUN_COMMANDS[0]]
    assert [name for name, _, _ in first] == list(RUN_OPTIONS)
    for command in RUN_COMMANDS[1:]:
        assert shown[command] == first, command


def test_sigma_leaves_out_sigma_and_compare_takes_its_sweep_variants():
    sigma_names = [name for name, _, _ in _options("sigma")]
    assert "sigma" not in sigma_names
    assert [n for n in sigma_names if n in RUN_OPTIONS] == [n for n in RUN_OPTIONS if n != "sigma"]
    compare = {name: help_text for name, _, help_text in _options("compare")}
    epsilon = {name: help_text for name, _, help_text in _options("epsilon")}
    assert compare["steps"] != epsilon["steps"]  # a list or range there
    assert compare["adjacency"] == epsilon["adjacency"]


def test_the_command_gets_one_run_flags_with_what_was_typed():
    seen = {}

    @run_options(omit=("max_batch_size",))
    def command(before: str = "a", given: RunFlags = RunFlags(), after: int = 1):
        seen.update(before=before, given=given, after=after)

    command(before="b", q="0.5", batch_size=None, dataset_size=None, sigma="2", steps="10",
            epochs=None, phase=None, pipeline=None, sampling="fixed", adjacency="zero-out",
            drop_last=False, unit=None, after=3)
    assert seen["given"] == RunFlags(q="0.5", sigma="2", steps="10", sampling="fixed",
                                     adjacency="zero-out")
    assert (seen["before"], seen["after"]) == ("b", 3)


def test_a_command_without_a_run_parameter_is_refused():
    with pytest.raises(TypeError, match="RunFlags"):
        run_options(lambda delta="1e-5": None)
