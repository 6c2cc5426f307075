"""Output details of issue 31: one ε shown with one rounding in notes and tables, "sorted by
ε" only where the rows are, `compare --help` whole at 80 columns, and the error for a sampling
rate given twice naming what was given."""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from decimal import ROUND_CEILING, Decimal

import pytest

from dpcalc.accountants.result import lower_text, upper_text
from tests.conftest import run_dpcalc


def _ceiling(value: float, digits: int = 5) -> str:
    """Independent: the exact binary value rounded up in decimal to ``digits`` digits."""
    exact = Decimal(value)
    quantum = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    return f"{exact.quantize(quantum, rounding=ROUND_CEILING).normalize():f}"


@pytest.mark.parametrize("value, up, down", [
    (2.381807145479014, "2.3819", "2.3818"),
    (2.3852394965259673, "2.3853", "2.3852"),
    (10.0, "10", "10"),
    (0.000123456789, "0.00012346", "0.00012345"),
    (9.04251e-05, "9.0426e-05", "9.0425e-05"),
    (float("inf"), "inf", "inf"),
])
def test_note_rounding_is_outward(value, up, down):
    assert upper_text(value) == up
    assert lower_text(value) == down
    if math.isfinite(value):
        assert float(up) == float(_ceiling(value))
        from dpcalc.cli.output.numbers import show_lower, show_upper

        assert (show_upper(value), show_lower(value)) == (up, down)  # the tables' figures


def test_a_notes_poisson_figure_is_the_poisson_tables_figure():
    """balls-in-bins quotes pb's Poisson ε of the same steps in a note: the same digits as
    the Poisson run's table (2.3853: the note read 2.3852, rounded to nearest, before)."""
    run = ["--batch-size", "256", "--dataset-size", "60000", "--sigma", "1.1"]
    allocation = json.loads(run_dpcalc("epsilon", *run, "--epochs", "60", "--sampling",
                                       "balls-in-bins", "-f", "json").stdout)
    steps = allocation["inputs"]["steps"]
    poisson = run_dpcalc("epsilon", *run, "--steps", str(steps), "-f", "json")
    epsilon = json.loads(poisson.stdout)["results"][0]["epsilon"]
    (note,) = [note for note in allocation["results"][0]["notes"] if "Poisson figure" in note]
    figure = re.search(r"Poisson figure (\S+)", note).group(1)
    assert float(figure) == float(_ceiling(epsilon))
    table = _columns_run(120, "epsilon", *run, "--steps", str(steps)).stdout
    (row,) = [line for line in table.splitlines() if line.startswith("│ pb ")]
    assert row.split("│")[2].strip() == figure


def _columns_run(columns: int, *args: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "COLUMNS": str(columns), "TERM": "dumb"}
    return subprocess.run([sys.executable, "-m", "dpcalc", *args], capture_output=True,
                          text=True, timeout=120, env=environment)


def test_compare_help_is_whole_at_80_columns():
    shown = _columns_run(80, "compare", "--help")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in shown.stdout  # nothing cut
    # the long words are folded onto the next line, not lost
    joined = re.sub(r"[│\s]", "", shown.stdout)
    for word in ("'q=0.01,sigma=4,steps=5000'", "q|batch-size[,dataset-size],",
                 "'poisson,shuffle,balls-in-bins'"):
        assert word in joined


def test_sorted_by_epsilon_only_where_rows_are():
    one = _columns_run(160, "compare", "--q", "0.01", "--sigma", "1", "--steps", "50",
                       "-a", "rdp,pb,naive")
    assert "Sorted by ε." in one.stdout
    rows = [line for line in one.stdout.splitlines() if line.startswith("│ ")]
    shown = [float(line.split("│")[2]) for line in rows]
    assert shown == sorted(shown) and len(shown) == 3
    several = _columns_run(160, "compare", "--batch-size", "100", "--dataset-size", "1000",
                           "--sigma", "1", "--epochs", "1", "--sampling", "shuffle,poisson",
                           "-a", "pb,rdp")
    assert several.returncode == 0, several.stderr
    assert "Sorted by ε." not in several.stdout
    assert "grouped by sampler, sorted by ε within each" in several.stdout


@pytest.mark.parametrize("command, extra", [
    ("epsilon", ["--sigma", "1", "--steps", "10"]),
    ("compare", ["--sigma", "1", "--steps", "10"]),
    ("risk", ["--sigma", "1", "--steps", "10"]),
])
def test_rate_given_twice_names_what_was_given(command, extra):
    refused = run_dpcalc(command, "--q", "0.01", "--dataset-size", "60000", *extra)
    assert refused.returncode == 2
    (line,) = refused.stderr.splitlines()
    assert "--q 0.01" in line and "--dataset-size 60000" in line and "not both" in line
    both = run_dpcalc(command, "--q", "0.01", "--batch-size", "256", "--dataset-size", "600",
                      *extra)
    assert "--q 0.01, --batch-size 256 and --dataset-size 600" in both.stderr


def test_rate_given_twice_in_a_phase_names_it():
    refused = run_dpcalc("epsilon", "--phase",
                         "q=0.01,batch-size=256,dataset-size=60000,sigma=1,steps=10")
    assert refused.returncode == 2
    assert ("(--phase q=0.01, --phase batch-size=256 and --phase dataset-size=60000)"
            in refused.stderr)
