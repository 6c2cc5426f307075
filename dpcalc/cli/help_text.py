"""How command help is shown: prose paragraphs without hard line breaks, so Rich wraps them
to the terminal, and option aliases listed in the option's help text instead of widening
the name column (where Rich would cut them to "--epsilon,--target-eps…")."""
from __future__ import annotations

import inspect
from contextlib import contextmanager

from typer.core import TyperCommand


def prose(docstring: str | None) -> str:
    """A docstring's paragraphs, each joined onto one line (blank lines separate them)."""
    text = inspect.cleandoc(docstring or "")
    paragraphs = [" ".join(line.strip() for line in block.splitlines() if line.strip())
                  for block in text.split("\n\n")]
    return "\n\n".join(paragraph for paragraph in paragraphs if paragraph)


def _aliases_shown_in_help(param) -> tuple[list[str], str | None]:
    """(the spellings to show, help text naming the other long spellings)."""
    long_names = [name for name in param.opts if name.startswith("--")]
    if len(long_names) < 2:
        return list(param.opts), param.help
    shown = [long_names[0]] + [name for name in param.opts if not name.startswith("--")]
    also = ", ".join(long_names[1:])
    help_text = f"{param.help or ''} Also: {also}.".strip()
    return shown, help_text


DEBUG_HELP = ("On an internal error (exit 70: a bug, not your input), print the traceback "
              "(also: DPCALC_DEBUG=1).")


def _debug_option():
    """The --debug flag as the installed typer builds it (from a one-option probe command:
    typer's parameter classes change their constructors between releases, its public
    decorators do not); not passed to the command's function."""
    global _DEBUG_OPTION
    if _DEBUG_OPTION is None:
        import typer
        from typer.main import get_command

        probe = typer.Typer()

        @probe.command()
        def _probe(debug: bool = typer.Option(False, "--debug", help=DEBUG_HELP)) -> None:
            pass

        option = next(param for param in get_command(probe).params if "--debug" in param.opts)
        option.expose_value = False
        _DEBUG_OPTION = option
    return _DEBUG_OPTION


_DEBUG_OPTION = None


@contextmanager
def _folding_tables():
    """Typer's help tables fold a word longer than its column onto the next line instead of
    cutting it with "…" (at 80 columns `compare --help` lost the ends of
    'q=0.01,sigma=4,steps=5000' and of its sampler list). Typer builds them with the Table its
    rich_utils module imported: that name is swapped for the help's duration only (left alone
    where a Typer keeps its tables elsewhere)."""
    import typer.rich_utils as rich_utils
    from rich.text import Text

    original = getattr(rich_utils, "Table", None)
    if original is None:
        yield
        return

    class FoldingTable(original):
        def add_row(self, *renderables, **kwargs):
            while len(self.columns) < len(renderables):
                self.add_column()
            for column in self.columns:
                column.overflow = "fold"
            for renderable in renderables:  # an option's help: Columns of Text
                for item in [renderable, *getattr(renderable, "renderables", ())]:
                    if isinstance(item, Text):
                        item.overflow = "fold"
            return super().add_row(*renderables, **kwargs)

    rich_utils.Table = FoldingTable
    try:
        yield
    finally:
        rich_utils.Table = original


class AliasHelpCommand(TyperCommand):
    """A Typer command whose help lists each option under its first long name; the
    aliases (e.g. --noise-multiplier for --sigma) are named in its help text. Every command
    takes --debug (read by cli/app.py main, which prints the traceback of an internal error)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not any("--debug" in getattr(param, "opts", ()) for param in self.params):
            self.params.append(_debug_option())

    def format_help(self, ctx, formatter):
        saved = [(param, param.opts, getattr(param, "help", None)) for param in self.params]
        try:
            for param in self.params:
                if getattr(param, "param_type_name", "") != "option":
                    continue
                param.opts, param.help = _aliases_shown_in_help(param)
            with _folding_tables():
                return super().format_help(ctx, formatter)
        finally:
            for param, opts, help_text in saved:
                param.opts = opts
                if help_text is not None or hasattr(param, "help"):
                    param.help = help_text
