"""`dpcalc compare`: one table of every accountant, sweeps, CSV/JSON/plain, and --plot."""
from __future__ import annotations

import csv
import io
import json
import math
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from dpcalc.accountants.registry import accountant_names
from dpcalc.cli.app import app
from dpcalc.cli.compare.command import MAX_SWEEP_POINTS, build_sweep, parse_sweep
from dpcalc.cli.output.plots import Curve, check_plot_path, epsilon_sweep_figure
from dpcalc.errors import DpcalcError
from dpcalc.params import check_count, check_positive

runner = CliRunner()
ABADI = ["--q", "0.01", "--sigma", "4", "--steps", "10000"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def invoke(*args: str):
    result = runner.invoke(app, ["compare", *args])
    assert result.exit_code == 0, result.output
    return result


def invoke_json(*args: str) -> dict:
    return json.loads(invoke(*args, "--format", "json").stdout)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpcalc", *args], capture_output=True, text=True,
                          timeout=120)


# ----------------------------------------------------------------- one configuration
@pytest.fixture(scope="module")
def abadi_records() -> list[dict]:
    return invoke_json(*ABADI)["results"]


def test_every_accountant_sorted_by_epsilon(abadi_records):
    names = [record["accountant"] for record in abadi_records]
    assert sorted(names) == sorted(accountant_names())
    values = [record["epsilon"] for record in abadi_records if record["epsilon"] is not None]
    assert values == sorted(values)


def test_abadi_et_al_comparison(abadi_records):
    """Abadi et al. 2016 §5 (reference-values.md): moments accountant 1.26 (classic conversion
    1.2586), current RDP 1.0355, tight PLD 0.9470; strong composition done rigorously
    (Kairouz et al.) ≈ 14.18, far above the paper's 9.34, which was not a bound."""
    by_name = {record["accountant"]: record for record in abadi_records}
    assert by_name["moments"]["epsilon"] == pytest.approx(1.2586, rel=2e-3)
    assert by_name["rdp"]["epsilon"] == pytest.approx(1.0355, rel=2e-3)
    assert by_name["pb"]["epsilon"] == pytest.approx(0.9470, rel=5e-3)
    assert by_name["strong"]["epsilon"] == pytest.approx(14.18, rel=5e-3)
    assert by_name["strong"]["epsilon"] > 9.34
    assert any("9.34" in note for note in by_name["strong"]["notes"])


def test_ratios_to_the_tightest_certified_value(abadi_records):
    by_name = {record["accountant"]: record for record in abadi_records}
    tightest = min(record["epsilon"] for record in abadi_records
                   if record["certified"] and record["epsilon"] is not None)
    assert tightest == by_name["pb"]["epsilon"] and by_name["pb"]["ratio_to_tightest"] == 1.0
    for record in abadi_records:
        assert record["ratio_to_tightest"] == pytest.approx(record["epsilon"] / tightest, rel=1e-12)
    # the GDP/CLT approximation lies below the tight bound: a ratio < 1, labelled approximation
    assert by_name["gdp"]["ratio_to_tightest"] < 1.0 and by_name["gdp"]["certified"] is False
    assert by_name["abadi"]["certified"] is False and by_name["abadi"]["kind"] == "approximation"


def test_json_keys(abadi_records):
    keys = {"accountant", "epsilon", "epsilon_upper", "epsilon_lower", "certified", "kind",
            "order", "notes", "details", "ratio_to_tightest", "q", "sigma", "steps", "epochs",
            "method"}
    for record in abadi_records:
        assert keys <= set(record)
        assert record["q"] == 0.01 and record["sigma"] == 4.0 and record["steps"] == 10_000


def test_table_marks_certified_and_approximations():
    text = invoke(*ABADI).stdout
    assert "Accountants compared" in text and "ratio" in text
    assert "approx." in text and "certified" in text
    assert "1.26" in text and "9.34" in text  # the Abadi et al. footnote
    assert text.index("pb ") < text.index("rdp ") < text.index("moments ") < text.index("naive ")


def test_not_applicable_sorts_last():
    # Abadi's Lemma 3 needs σ ≥ 1: at σ = 0.8 it does not apply (ε null, note).
    records = invoke_json("--q", "0.01", "--sigma", "0.8", "--steps", "1000",
                          "-a", "abadi,pb,rdp")["results"]
    assert [r["accountant"] for r in records] == ["pb", "rdp", "abadi"]
    assert records[-1]["epsilon"] is None and records[-1]["ratio_to_tightest"] is None
    assert "not applicable" in records[-1]["notes"][0]


def test_plain_is_one_number_per_accountant():
    lines = invoke(*ABADI, "-a", "pb,rdp", "--format", "plain").stdout.split()
    assert len(lines) == 2 and float(lines[0]) >= 0.9469 and float(lines[1]) >= 1.0354


# ----------------------------------------------------------------- sweeps
def steps_check(value, flag):
    return check_count(value, flag, maximum=10**9)


@pytest.mark.parametrize("text,expected", [
    ("1000", [1000]),
    ("1000,2000,5000", [1000, 2000, 5000]),
    ("1000, 2000 ,1000", [1000, 2000]),              # duplicates dropped
    ("1000:100000:log3", [1000, 10000, 100000]),     # 3 log-spaced points, ends included
    ("1000:100000:LOG5", [1000, 3162, 10000, 31623, 100000]),
    ("100:500:5", [100, 200, 300, 400, 500]),        # N evenly spaced points
    ("1:3:5", [1, 2, 3]),                            # rounded to whole steps, deduplicated
])
def test_parse_sweep_integer(text, expected):
    assert parse_sweep(text, "--steps", steps_check, integer=True) == expected


def test_parse_sweep_float():
    values = parse_sweep("0.5:8:log5", "--sigma", lambda v, f: check_positive(v, f))
    assert values == pytest.approx([0.5, 1.0, 2.0, 4.0, 8.0], rel=1e-12)
    assert values[0] == 0.5 and values[-1] == 8.0
    assert parse_sweep("1:2:3", "--epochs", lambda v, f: check_positive(v, f)) == [1.0, 1.5, 2.0]


@pytest.mark.parametrize("text,needle", [
    ("1000:x:log10", "--steps must be"),
    ("1000:100", "start:stop:N"),
    ("1:2:3:4", "start:stop:N"),
    ("1,,2", "a list"),
    ("10:1000:log1", "number of points in the range"),
    (f"1:1e6:log{MAX_SWEEP_POINTS + 1}", f"from 2 to {MAX_SWEEP_POINTS}"),
    ("1.5", "whole number"),
    ("0:100:5", "--steps must be a whole number from 1"),
])
def test_bad_sweeps_raise_clear_errors(text, needle):
    with pytest.raises(DpcalcError, match=needle.replace("(", r"\(")):
        parse_sweep(text, "--steps", steps_check, integer=True)


def test_only_one_flag_swept():
    with pytest.raises(DpcalcError, match="sweep one of"):
        build_sweep("0.01", None, None, "1,2", "10,20", None)
    sweep = build_sweep("0.001:0.1:log3", None, None, "1", None, "10")
    assert sweep.swept == "q"
    assert [point.steps for point in sweep.points] == [10_000, 1_000, 100]  # T = epochs/q


def test_steps_sweep_json_csv_and_monotone():
    args = ["--q", "0.01", "--sigma", "4", "--steps", "1000:100000:log3", "-a", "pb,rdp,gdp"]
    payload = invoke_json(*args)
    assert payload["inputs"]["sweep"] == "steps" and payload["inputs"]["steps"] == [1000, 10000, 100000]
    records = payload["results"]
    assert len(records) == 3 * 3
    for name in ("pb", "rdp", "gdp"):
        series = [r["epsilon"] for r in records if r["accountant"] == name]
        assert len(series) == 3 and series == sorted(series)  # ε grows with T
    rows = list(csv.DictReader(io.StringIO(invoke(*args, "--format", "csv").stdout)))
    assert len(rows) == 9 and rows[0]["accountant"] and float(rows[0]["epsilon"]) > 0
    assert {row["certified"] for row in rows} == {"true", "false"}
    by_key = {(r["accountant"], r["steps"]): r["epsilon"] for r in records}
    for row in rows:
        assert float(row["epsilon"]) == by_key[(row["accountant"], int(row["steps"]))]


def test_sweep_table_has_one_row_per_point():
    text = invoke("--q", "0.01", "--sigma", "0.5:8:log5", "--steps", "10000", "-a", "pb,abadi").stdout
    assert "ε over noise multiplier σ" in text and "pb low" in text and "abadi≈" in text
    assert "n/a" in text  # Lemma 3 does not apply at σ = 0.5 or σ = 8 (q ≥ 1/(16σ))
    for value in ("0.5", "1", "2", "4", "8"):
        assert f"│ {value:>3} │" in text


@pytest.mark.parametrize("args,needle", [
    (["--steps", "1000:x:log10"], "--steps"),
    (["--steps", "10,20", "--sigma", "1,2"], "sweep one of"),
    (["--steps", "100", "--plot", "figure.png"], "--plot needs a sweep"),
    (["--steps", "100,200", "--plot", "figure.jpg"], ".png or .svg"),
    (["--steps", "1:10:log1001"], "number of points"),
])
def test_bad_compare_input_exits_2_with_one_line(args, needle):
    base = [] if "--sigma" in args else ["--sigma", "4"]
    completed = run_cli("compare", "--q", "0.01", *base, *args)
    assert completed.returncode == 2 and completed.stdout == ""
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpcalc: error:") and needle in lines[0]


# ----------------------------------------------------------------- plots
def test_plot_writes_a_valid_png(tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "sweep.png"
    result = runner.invoke(app, ["compare", "--q", "0.01", "--sigma", "4",
                                 "--steps", "1000:100000:log4", "--plot", str(target)])
    assert result.exit_code == 0, result.output
    data = target.read_bytes()
    assert data[:8] == PNG_SIGNATURE and len(data) > 10_000
    # IHDR width and height (big-endian) are those of a real figure
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width > 500 and height > 300


def test_plot_svg_has_labels_legend_and_band(tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "sweep.svg"
    curves = [Curve("pb", [0.27, 0.95, 3.4], lower=[0.26, 0.94, 3.3]),
              Curve("naive", [18.7, 223.5, 2608.0]),
              Curve("gdp", [0.26, None, math.inf], certified=False)]
    epsilon_sweep_figure(str(target), "training steps T", [1000, 10000, 100000], curves,
                         "ε at δ = 1e-05")
    text = target.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    for needle in ("pb: certified band", "gdp (approximation)", "naive"):
        assert needle in text
    assert "training steps T" in text  # matplotlib keeps each text as a comment next to its glyphs


def test_missing_matplotlib_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(DpcalcError, match=r"--plot needs matplotlib: pip install 'dpcalc-privacy\[plot\]'"):
        epsilon_sweep_figure(str(tmp_path / "x.png"), "steps", [1, 2], [Curve("pb", [1, 2])], "t")


def test_plot_path_checks(tmp_path):
    assert check_plot_path(str(tmp_path / "a.PNG")).suffix == ".PNG"
    with pytest.raises(DpcalcError, match=".png or .svg"):
        check_plot_path(str(tmp_path / "a.pdf"))
    with pytest.raises(DpcalcError, match="folder does not exist"):
        check_plot_path(str(tmp_path / "missing" / "a.png"))
