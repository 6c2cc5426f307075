"""The dpcalc Typer app and its entry point, which maps errors to one line and an exit code."""
from __future__ import annotations

import sys
from typing import Optional

import typer

from dpcalc import __version__
from dpcalc.cli.help_text import AliasHelpCommand, prose
from dpcalc.errors import DpcalcError

# name → (module, function): a command's module is imported only when the app that holds
# it is built, so `dpcalc epsilon` does not pay for compare, simulate, report, … (issue 13).
COMMANDS = {
    "epsilon": ("dpcalc.cli.epsilon", "epsilon_command"),
    "delta": ("dpcalc.cli.delta", "delta_command"),
    "sigma": ("dpcalc.cli.sigma", "sigma_command"),
    "compare": ("dpcalc.cli.compare.command", "compare_command"),
    "simulate": ("dpcalc.cli.simulate.command", "simulate_command"),
    "group": ("dpcalc.cli.group.command", "group_command"),
    "risk": ("dpcalc.cli.risk", "risk_command"),
    "report": ("dpcalc.cli.report", "report_command"),
    "pipelines": ("dpcalc.cli.pipelines.command", "pipelines_command"),
    "completions": ("dpcalc.cli.completions.command", "completions_command"),
}


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"dpcalc {__version__}")
        raise typer.Exit()


def _root(
    version: Optional[bool] = typer.Option(None, "--version", callback=_show_version,
                                           is_eager=True, help="Show the version and exit."),
) -> None:
    """A privacy calculator for differentially private training (DP-SGD)."""



def build_app(names=None) -> typer.Typer:
    """The Typer app with the commands ``names`` (all by default), each registered with its
    docstring as prose help (Rich wraps it to the terminal)."""
    import importlib

    built = typer.Typer(
        name="dpcalc",
        help="A privacy calculator for differentially private training (DP-SGD).",
        add_completion=False,
        no_args_is_help=True,
        context_settings={"help_option_names": ["-h", "--help"]},
        pretty_exceptions_enable=False,
    )
    built.callback()(_root)
    for name in COMMANDS if names is None else names:
        module, attribute = COMMANDS[name]
        function = getattr(importlib.import_module(module), attribute)
        built.command(name, cls=AliasHelpCommand, help=prose(function.__doc__))(function)
    return built


_FULL_APP = None


def __getattr__(name: str):
    """``app``: the whole app, built on first use (PEP 562), for tests and tools."""
    global _FULL_APP
    if name == "app":
        if _FULL_APP is None:
            _FULL_APP = build_app()
        return _FULL_APP
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _app_for(args: list[str]) -> typer.Typer:
    """Only the command being run when the first word names one; else the whole app (root
    help, a mistyped command's suggestions)."""
    if args and args[0] in COMMANDS:
        return build_app([args[0]])
    return __getattr__("app")


def _is_usage_error(error: Exception) -> bool:
    """Click's UsageError/BadParameter, whichever Click (vendored by Typer or not) raised it."""
    return hasattr(error, "format_message") and getattr(error, "exit_code", None) == 2


_LONGEST_MESSAGE = 400


def _fail(message: str) -> None:
    """One line on stderr and exit code 2; an absurdly long message is cut in the middle."""
    message = " ".join(str(message).split())
    if len(message) > _LONGEST_MESSAGE:
        message = message[:_LONGEST_MESSAGE - 60] + " … " + message[-50:]
    sys.stderr.write(f"dpcalc: error: {message}\n")
    sys.exit(2)


def _usage_message(error, command, args: list[str]) -> str:
    """Click's message on one line, with a 'did you mean' for a mistyped option."""
    import re

    from dpcalc.cli.argv_checks import suggest_command, suggest_option

    message = error.format_message().replace("\n", " ").replace("Value error, ", "")
    option = getattr(error, "option_name", None)
    if type(error).__name__ == "NoSuchOption" and option:
        message = f"no such option: {option}{suggest_option(command, args, option)}"
    unknown_command = re.match(r"No such command '(.+)'\.", message)
    if unknown_command:
        message = (f"no such command: {unknown_command.group(1)}"
                   f"{suggest_command(command, unknown_command.group(1))}")
    return message


def _quiet_broken_pipe() -> None:
    """stdout was closed by the reader (e.g. `| head -1`): leave quietly, exit 0."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(0)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: exit 0 ok, 1 budget exceeded, 2 bad input (one line, no traceback)."""
    from dpcalc.cli.allocator import keep_freed_memory
    from dpcalc.cli.argv_checks import check_repeated_options

    keep_freed_memory()  # a one-shot process: reuse freed temporaries (allocator.py)
    args = list(sys.argv[1:] if argv is None else argv)
    command = typer.main.get_command(_app_for(args))
    try:
        if not args:  # `dpcalc` alone: the help, and nothing wrong
            context = command.make_context("dpcalc", ["--help"], resilient_parsing=True)
            typer.echo(command.get_help(context))
            sys.stdout.flush()
            sys.exit(0)
        check_repeated_options(command, args)
        code = command.main(args=args, prog_name="dpcalc", standalone_mode=False)
        sys.stdout.flush()
    except SystemExit as stop:
        # Click and Rich turn a closed stdout (EPIPE) into exit 1, the budget gate's code
        if (type(sys.stdout).__name__ == "PacifyFlushWrapper"
                or isinstance(stop.__context__, BrokenPipeError)):
            _quiet_broken_pipe()
        raise
    except DpcalcError as error:
        _fail(str(error))
    except BrokenPipeError:
        _quiet_broken_pipe()
    except OSError as error:  # a file the user named: one line, not a traceback
        where = f" ({error.filename})" if getattr(error, "filename", None) else ""
        _fail(f"{error.strerror or error}{where}")
    except Exception as error:  # Click usage errors; anything else is a real bug
        if _is_usage_error(error):
            _fail(_usage_message(error, command, args))
        if type(error).__name__ == "Abort":
            sys.exit(130)
        raise
    sys.exit(code if isinstance(code, int) else 0)
