"""The dpcalc Typer app and its entry point, which maps errors to one line and an exit code."""
from __future__ import annotations

import sys
from typing import Optional

import typer

from dpcalc import __version__
from dpcalc.cli.compare import compare_command
from dpcalc.cli.epsilon import epsilon_command
from dpcalc.cli.group import group_command
from dpcalc.cli.sigma import sigma_command
from dpcalc.cli.simulate import simulate_command
from dpcalc.errors import DpcalcError

app = typer.Typer(
    name="dpcalc",
    help="A privacy calculator for differentially private training (DP-SGD).",
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"dpcalc {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Optional[bool] = typer.Option(None, "--version", callback=_show_version,
                                           is_eager=True, help="Show the version and exit."),
) -> None:
    """A privacy calculator for differentially private training (DP-SGD)."""


app.command("epsilon")(epsilon_command)
app.command("sigma")(sigma_command)
app.command("compare")(compare_command)
app.command("simulate")(simulate_command)
app.command("group")(group_command)


def _is_usage_error(error: Exception) -> bool:
    """Click's UsageError/BadParameter, whichever Click (vendored by Typer or not) raised it."""
    return hasattr(error, "format_message") and getattr(error, "exit_code", None) == 2


def _fail(message: str) -> None:
    sys.stderr.write(f"dpcalc: error: {message}\n")
    sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: exit 0 ok, 1 budget exceeded, 2 bad input (one line, no traceback)."""
    command = typer.main.get_command(app)
    try:
        code = command.main(args=argv, prog_name="dpcalc", standalone_mode=False)
    except DpcalcError as error:
        _fail(str(error))
    except Exception as error:  # Click usage errors; anything else is a real bug
        if _is_usage_error(error):
            _fail(error.format_message().replace("\n", " ").replace("Value error, ", ""))
        if type(error).__name__ == "Abort":
            sys.exit(130)
        raise
    sys.exit(code if isinstance(code, int) else 0)
