"""What a terminal shows: help prose that Rich wraps, tables fitted to COLUMNS without split
words, a closed stdout that ends quietly, CSV rows with every input, and sweep plots."""
from __future__ import annotations

import csv
import io
import re
import subprocess
import sys

import pytest
import typer
from conftest import cli_runner
from rich.cells import cell_len

from dpcalc.cli.app import app
from dpcalc.cli.output.table_layout import fit_columns

runner = cli_runner()
COMMAND_NAMES = ["epsilon", "sigma", "compare", "group", "simulate", "completions"]


# --- help ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", COMMAND_NAMES)
def test_help_paragraphs_have_no_hard_line_breaks_and_end_with_examples(name):
    command = typer.main.get_command(app).commands[name]
    paragraphs = command.help.split("\n\n")
    assert all("\n" not in paragraph for paragraph in paragraphs), command.help
    assert paragraphs[-1].startswith(f"Example: dpcalc {name}")


@pytest.mark.parametrize("columns", [80, 120])
def test_help_wraps_at_the_terminal_not_at_84_columns(columns):
    shown = runner.invoke(app, ["epsilon", "--help"], env={"COLUMNS": str(columns)}).stdout
    prose = shown.split("╭")[0]
    lines = [line.strip() for line in prose.splitlines() if line.strip()]
    assert all(cell_len(line) <= columns for line in lines)
    # a hard-wrapped docstring left one-word orphans ("lower") at 80 columns
    assert not any(re.fullmatch(r"\S+", line) for line in lines[1:]), lines
    assert any("Example: dpcalc epsilon --q 0.01 --sigma 4 --steps 10000" in line for line in lines)


def test_help_lists_an_option_once_and_names_its_aliases():
    shown = runner.invoke(app, ["sigma", "--help"], env={"COLUMNS": "100"}).stdout
    assert "Also: --target-epsilon." in shown and "--epsilon,--target" not in shown
    assert "…" not in shown.split("--epsilon", 1)[1].splitlines()[0]


# --- tables fit the terminal -----------------------------------------------------------------
def _table_tokens(text: str) -> list[str]:
    """Every word inside the table rows (between the vertical borders)."""
    tokens = []
    for line in text.splitlines():
        if line[:1] in "│┃":
            for cell in re.split("[│┃]", line):
                tokens += cell.split()
    return tokens


SWEEP = ["compare", "--q", "0.01", "--sigma", "4", "--steps", "1000,2000"]
SINGLE = ["compare", "--q", "0.01", "--sigma", "4", "--steps", "1000"]


@pytest.mark.parametrize("argv", [SWEEP, SINGLE], ids=["sweep", "single"])
def test_compare_tables_fit_60_80_120_columns_without_splitting_words(argv):
    wide = runner.invoke(app, argv, env={"COLUMNS": "250"}).stdout
    words = set(_table_tokens(wide))
    widths = {}
    for columns in (60, 80, 120):
        shown = runner.invoke(app, argv, env={"COLUMNS": str(columns)}).stdout
        assert max(cell_len(line) for line in shown.splitlines()) <= columns
        assert set(_table_tokens(shown)) == words, columns  # nothing split, nothing lost
        widths[columns] = shown.count("┏")
    assert widths[120] == 1 and widths[60] >= 2  # folded only where it does not fit


def test_fit_columns_repeats_the_first_column_and_balances_tables():
    texts = [["steps", "1000"]] + [[f"acct{i}", "0.12345"] for i in range(8)]
    tables = fit_columns(texts, 60)
    assert len(tables) == 2 and all(table[0].index == 0 for table in tables)
    assert abs(len(tables[0]) - len(tables[1])) <= 1
    assert [fit.index for table in tables for fit in table[1:]] == list(range(1, 9))
    assert fit_columns(texts, 200) == [[fit for fit in fit_columns(texts, 200)[0]]]


# --- a closed stdout -------------------------------------------------------------------------
PIPED = [  # (command, reader): `true` closes the pipe before dpcalc writes (EPIPE for sure);
    # tests/test_hardening.py pipes a large CSV into head -1
    ("compare --q 0.01 --sigma 4 --steps 1:1000:200 -a rdp,naive", "head -1"),
    ("epsilon --q 0.01 --sigma 4 --steps 100 -a rdp,naive", "true"),
    ("sigma --epsilon 1 -f json", "true"),
    ("epsilon --help", "true"),
]


def test_a_closed_stdout_exits_quietly():
    """A real pipe: exit 0 or 141 (SIGPIPE), never 1 or 2, no error line, no traceback."""
    script = "; ".join(f"{sys.executable} -m dpcalc {args} | {reader} >/dev/null; "
                       f"echo status=${{PIPESTATUS[0]}}" for args, reader in PIPED)
    completed = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    statuses = re.findall(r"status=(\d+)", completed.stdout)
    assert len(statuses) == len(PIPED)
    assert all(status in ("0", "141") for status in statuses), (statuses, completed.stderr)
    assert "dpcalc: error" not in completed.stderr and "Traceback" not in completed.stderr


# --- CSV and plots ---------------------------------------------------------------------------
def test_csv_rows_carry_every_input():
    result = runner.invoke(app, ["compare", "--batch-size", "256", "--dataset-size", "60000",
                                 "--sigma", "1,2", "--epochs", "3", "-a", "rdp", "--delta", "1e-6",
                                 "--adjacency", "replace-one", "-f", "csv"])
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 2
    for row in rows:
        assert (row["batch_size"], row["dataset_size"], row["delta"]) == ("256", "60000", "1e-06")
        assert (row["sampling"], row["adjacency"], row["epochs"]) == ("poisson", "replace-one", "3.0")
        assert row["steps"] == "704" and float(row["q"]) == 256 / 60000
    phased = runner.invoke(app, ["compare", "--phase", "q=0.01,sigma=2,steps=100", "--phase",
                                 "q=0.02,sigma=3,steps=50", "-a", "rdp", "-f", "csv"])
    (row,) = csv.DictReader(io.StringIO(phased.stdout))
    assert (row["q"], row["sigma"], row["steps"]) == ("0.01; 0.02", "2.0; 3.0", "150")
    assert row["sampling"] == "poisson" and row["delta"] == "1e-05"


@pytest.mark.parametrize("steps,flags,scale", [
    ("1000,2000,50000", [], "linear"),
    ("1000:100000:log5", [], "log"),
    ("1000,2000,50000", ["--x-scale", "log"], "log"),
    ("1000:100000:log5", ["--x-scale", "linear"], "linear"),
])
def test_sweep_plot_x_scale_and_title(tmp_path, monkeypatch, steps, flags, scale):
    pytest.importorskip("matplotlib")
    from dpcalc.cli.output import plots

    drawn = {}

    def record(path, x_label, x_values, curves, title, y_label="ε", x_scale="linear"):
        drawn.update(x_label=x_label, title=title, x_scale=x_scale)

    monkeypatch.setattr(plots, "epsilon_sweep_figure", record)
    result = runner.invoke(app, ["compare", "--batch-size", "600", "--dataset-size", "60000",
                                 "--sigma", "4", "--steps", steps, "-a", "rdp",
                                 "--plot", str(tmp_path / "eps.png"), *flags])
    assert result.exit_code == 0, result.output
    assert drawn["x_scale"] == scale
    assert "N = 60000, B = 600" in drawn["title"] and "q = 0.01" in drawn["title"]


def test_epochs_sweep_plot_names_its_steps(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from dpcalc.cli.output import plots

    drawn = {}
    monkeypatch.setattr(plots, "epsilon_sweep_figure",
                        lambda path, x_label, *args, **kwargs: drawn.update(x_label=x_label))
    runner.invoke(app, ["compare", "--q", "0.01", "--sigma", "4", "--epochs", "1,2", "-a", "rdp",
                        "--plot", str(tmp_path / "eps.png")])
    assert drawn["x_label"] == "epochs (steps: 100, 200)"


def test_plot_draws_a_linear_axis_for_a_linear_sweep(tmp_path):
    pytest.importorskip("matplotlib")
    from dpcalc.cli.output.plots import Curve, epsilon_sweep_figure

    path = tmp_path / "eps.svg"
    epsilon_sweep_figure(str(path), "steps", [1, 10, 1000], [Curve("pb", [0.1, 0.5, 2.0])],
                         "title N = 1, B = 1")
    svg = path.read_text()
    assert "title N = 1, B = 1" in svg
    assert "10^{3}" not in svg and "10^3" not in svg  # no log-axis tick labels
