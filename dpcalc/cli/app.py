"""The dpcalc Typer app and its entry point, which maps errors to one line and an exit code."""
from __future__ import annotations

import sys
from typing import Optional

import typer

from dpcalc import __version__
from dpcalc.cli.help_text import AliasHelpCommand, prose
from dpcalc.errors import DpcalcError, InvalidResult

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
    version: Optional[bool] = typer.Option(None, "--version", "-V", callback=_show_version,
                                           is_eager=True, help="Show the version and exit."),
    debug: bool = typer.Option(False, "--debug", help="On an internal error (exit 70), print "
                               "the traceback (also: DPCALC_DEBUG=1; works after the command "
                               "name too)."),
) -> None:
    """A privacy calculator for differentially private training (DP-SGD)."""



def build_app(names=None) -> typer.Typer:
    """The Typer app with the commands ``names`` (all by default), each registered with its
    docstring as prose help (Rich wraps it to the terminal)."""
    import importlib

    built = typer.Typer(
        name="dpcalc",
        help="A privacy calculator for differentially private training (DP-SGD).\n\n"
             "Exit codes: 0 ok, 1 the --max-epsilon budget gate failed, 2 bad input (one line "
             "naming the flag), 70 internal error: a bug, one line saying where to report it "
             "(--debug or DPCALC_DEBUG=1 adds the traceback), 130 interrupted.",
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
    words = [arg for arg in args if arg != DEBUG_FLAG]  # `dpcalc --debug epsilon …`
    if words and words[0] in COMMANDS:
        return build_app([words[0]])
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
    extra = re.match(r"Got unexpected extra argument(?:\(s\)|s)? \((.+)\)", message)
    if extra and all(_is_number(word) for word in extra.group(1).split()):
        message += ("; dpcalc's inputs are named options, e.g. dpcalc epsilon --q 0.01 "
                    "--sigma 4 --steps 10000 (--help lists them)")
    return message


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _quiet_broken_pipe() -> None:
    """stdout was closed by the reader (e.g. `| head -1`): leave quietly, exit 0."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(0)


# Exit code of an unexpected internal error (a bug): EX_SOFTWARE of BSD's sysexits.h. Never 1
# (the budget gate's) nor 2 (bad input), so a crash in CI cannot read as "over budget".
INTERNAL_ERROR = 70
DEBUG_FLAG = "--debug"
DEBUG_VARIABLE = "DPCALC_DEBUG"
# Where bugs go (docs/numbers.md, "In scripts and CI": exit codes).
BUG_REPORTS = "the dpcalc issue tracker"


def debug_requested(args: list[str]) -> bool:
    """--debug anywhere before a `--`, or DPCALC_DEBUG set to anything but '' or 0."""
    import os

    words = args[:args.index("--")] if "--" in args else args
    return DEBUG_FLAG in words or os.environ.get(DEBUG_VARIABLE, "").strip() not in ("", "0")


def _internal_error(error: BaseException, debug: bool) -> None:
    """One line on stderr naming the error and where to report it (the traceback first
    with --debug), and exit INTERNAL_ERROR."""
    import traceback

    if debug:
        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
    plain = type(error).__name__ == "AccountantFailed"  # its message names the real error
    what = " ".join((str(error) if plain else f"{type(error).__name__}: {error}").split())
    if len(what) > 200:
        what = what[:150] + " … " + what[-40:]
    how = "" if debug else f"; {DEBUG_FLAG} or {DEBUG_VARIABLE}=1 shows the traceback"
    sys.stderr.write(f"dpcalc: internal error: {what}. This is a bug in dpcalc {__version__}, "
                     f"not in your input: please report it with the command line to "
                     f"{BUG_REPORTS}{how}.\n")
    sys.stderr.flush()
    sys.exit(INTERNAL_ERROR)


def _usable_streams() -> None:
    """A closed stdout or stderr (`>&-`: Python sets it to None) becomes /dev/null, so the
    command still runs and its exit code still tells the verdict; a terminal or pipe whose
    encoding cannot show ε, σ, ≤ or box drawing gets ASCII stand-ins (output/glyphs.py)."""
    import os

    from dpcalc.cli.output.glyphs import ascii_fallback

    closed = sys.stdout is None
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))
    if closed:
        sys.stderr.write("warning: stdout is closed; the output is discarded\n")
    ascii_fallback(sys.stdout)
    ascii_fallback(sys.stderr)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: exit 0 ok, 1 budget exceeded, 2 bad input (one line, no
    traceback), 70 internal error (one line; --debug or DPCALC_DEBUG=1 adds the traceback),
    130 interrupted (docs/numbers.md, "In scripts and CI")."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = debug_requested(args)
    if debug:  # the tracebacks of failures caught inside (accountants/evaluate.py) too
        _log_to_stderr()
    try:
        _main(args, debug)
    except SystemExit:
        raise
    except KeyboardInterrupt:  # Ctrl-C outside Click's own handling (which gives 130 too)
        sys.exit(130)
    except BaseException as error:  # noqa: B902 - whatever escaped: a bug, reported as one
        _internal_error(error, debug)


def _log_to_stderr() -> None:
    """The "dpcalc" logger's DEBUG records (with their tracebacks) on the current stderr."""
    import logging

    class CurrentStderr(logging.Handler):
        def emit(self, record) -> None:
            sys.stderr.write(self.format(record) + "\n")

    logger = logging.getLogger("dpcalc")
    if not any(type(handler).__name__ == "CurrentStderr" for handler in logger.handlers):
        handler = CurrentStderr()
        handler.setFormatter(logging.Formatter("dpcalc: debug: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)


def _main(args: list[str], debug: bool) -> None:
    from dpcalc.cli.allocator import keep_freed_memory
    from dpcalc.cli.argv_checks import check_repeated_options, hyphenate

    _usable_streams()
    keep_freed_memory()  # a one-shot process: reuse freed temporaries (allocator.py)
    command = typer.main.get_command(_app_for(args))
    try:
        if not args:  # `dpcalc` alone: the help, and nothing wrong
            context = command.make_context("dpcalc", ["--help"], resilient_parsing=True)
            typer.echo(command.get_help(context))
            sys.stdout.flush()
            sys.exit(0)
        args = hyphenate(command, args)
        check_repeated_options(command, args)
        code = command.main(args=args, prog_name="dpcalc", standalone_mode=False)
        sys.stdout.flush()
    except SystemExit as stop:
        # Click and Rich turn a closed stdout (EPIPE) into exit 1, the budget gate's code
        if (type(sys.stdout).__name__ == "PacifyFlushWrapper"
                or isinstance(stop.__context__, BrokenPipeError)):
            _quiet_broken_pipe()
        raise
    except InvalidResult as error:  # a value dpcalc computed itself is not a number: a bug
        _internal_error(error, debug)
    except DpcalcError as error:
        _fail(str(error))
    except BrokenPipeError:
        _quiet_broken_pipe()
    except OSError as error:  # a file the user named, a full disk: one line, not a traceback
        where = f" ({error.filename})" if getattr(error, "filename", None) else ""
        _fail(f"{error.strerror or error}{where}")
    except Exception as error:  # Click usage errors; anything else is a real bug
        if _is_usage_error(error):
            _fail(_usage_message(error, command, args))
        if type(error).__name__ == "Abort":
            sys.exit(130)
        _internal_error(error, debug)
    sys.exit(code if isinstance(code, int) else 0)
