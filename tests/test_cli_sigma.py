"""`dpcalc sigma`: DP-SGD calibration per accountant and the Gaussian-mechanism mode."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from dpcalc.models.gaussian import gaussian_delta
from dpcalc.models.gaussian_sigma import analytic_gaussian_sigma
from dpcalc.accountants.registry import accountant_names, get_accountant
from dpcalc.models.schedule import Schedule
from dpcalc.cli.app import app

runner = CliRunner()
ABADI = ["--q", "0.01", "--steps", "10000"]


def invoke_json(*args: str) -> dict:
    result = runner.invoke(app, ["sigma", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpcalc", *args], capture_output=True, text=True,
                          timeout=120)


def test_json_keys_and_safe_side():
    payload = invoke_json("--epsilon", "1", *ABADI)
    assert payload["command"] == "sigma"
    assert payload["inputs"]["steps"] == 10_000 and payload["inputs"]["q"] == 0.01
    (record,) = payload["results"]
    assert {"accountant", "sigma", "epsilon", "epsilon_lower", "certified", "kind",
            "target_epsilon", "evaluations", "notes"} <= set(record)
    assert record["accountant"] == "pb" and record["certified"] is True
    # accounting-methods.md §5: σ = 3.81324 for ε = 1 on Abadi et al.'s setting
    assert record["sigma"] == pytest.approx(3.81324, rel=1e-4)
    assert record["epsilon_lower"] <= record["epsilon"] <= 1.0
    again = get_accountant("pb").epsilon(Schedule.single(0.01, record["sigma"], 10_000), 1e-5)
    assert again.epsilon <= 1.0


def test_plain_prints_sigma_rounded_up():
    exact = invoke_json("--epsilon", "1", *ABADI)["results"][0]["sigma"]
    result = runner.invoke(app, ["sigma", "--epsilon", "1", *ABADI, "--format", "plain"])
    assert result.exit_code == 0
    shown = float(result.stdout.strip())
    assert result.stdout.strip().count("\n") == 0
    assert exact <= shown <= exact * (1 + 1e-5)


def test_table_shows_sigma_and_note():
    result = runner.invoke(app, ["sigma", "--epsilon", "1", *ABADI])
    assert result.exit_code == 0
    assert "Noise multiplier for DP-SGD" in result.stdout and "3.813" in result.stdout
    assert "rounded up" in result.stdout


def test_all_accountants_report_each_and_order_by_looseness():
    payload = invoke_json("--epsilon", "1", *ABADI, "--accountant", "all")
    records = {record["accountant"]: record for record in payload["results"]}
    assert list(records) == accountant_names()
    # abadi's Lemma 3 needs q < 1/(16σ), i.e. σ < 6.25 here: not applicable, explained
    assert records["abadi"]["sigma"] is None and "q < 1/(16σ)" in records["abadi"]["notes"][0]
    assert records["gdp"]["certified"] is False
    certified = [records[name]["sigma"] for name in ("pb", "rdp", "moments", "strong", "naive")]
    assert certified == sorted(certified)
    for record in records.values():
        if record["sigma"] is not None:
            assert record["epsilon"] <= 1.0


def test_batch_size_and_epochs():
    # Opacus calibration tests (reference-values.md): ε = 8, δ = 1e-5, q = 0.04, 90 epochs
    # → PRV σ 1.348; batch 2400 of 60 000 is q = 0.04, T = 90·60000/2400 = 2250.
    payload = invoke_json("--epsilon", "8", "--batch-size", "2400", "--dataset-size", "60000",
                          "--epochs", "90", "--precision", "1e-3")
    assert payload["inputs"]["steps"] == 2250
    assert payload["results"][0]["sigma"] == pytest.approx(1.348, rel=3e-3)


def test_gaussian_mechanism_mode_side_by_side():
    payload = invoke_json("--epsilon", "2", "--delta", "1e-6")
    analytic, classic = payload["results"]
    assert (analytic["accountant"], classic["accountant"]) == ("analytic", "classic")
    assert analytic["sigma"] == pytest.approx(analytic_gaussian_sigma(2.0, 1e-6), rel=1e-12)
    assert classic["sigma"] == pytest.approx(math.sqrt(2 * math.log(1.25 / 1e-6)) / 2.0, rel=1e-12)
    assert analytic["safe"] is True and classic["safe"] is False  # ε ≥ 1: outside Thm A.1
    assert classic["delta_achieved"] == pytest.approx(gaussian_delta(2.0, classic["sigma"]))
    assert payload["inputs"]["sensitivity"] == 1.0


def test_gaussian_mode_flags_the_unsafe_classic_formula():
    small = runner.invoke(app, ["sigma", "--epsilon", "0.5"])
    large = runner.invoke(app, ["sigma", "--epsilon", "10"])
    assert small.exit_code == large.exit_code == 0
    assert "UNSAFE" not in small.stdout
    assert "UNSAFE" in large.stdout and "2.27e-05" in large.stdout  # true δ > 1e-5


def test_gaussian_mode_sensitivity_and_plain():
    one = runner.invoke(app, ["sigma", "--epsilon", "0.5", "--format", "plain"]).stdout.split()
    two = runner.invoke(app, ["sigma", "--epsilon", "0.5", "--sensitivity", "2",
                              "--format", "plain"]).stdout.split()
    assert len(one) == len(two) == 2
    assert float(two[0]) == pytest.approx(2 * float(one[0]), rel=1e-5)
    assert float(one[0]) >= analytic_gaussian_sigma(0.5, 1e-5)


@pytest.mark.parametrize("args,needle", [
    (["--epsilon", "1e-6", *ABADI], "--epsilon 1e-06 cannot be reached"),
    (["--epsilon", "0", *ABADI], "--epsilon"),
    (["--q", "0.01", "--steps", "100"], "--epsilon"),
    (["--epsilon", "1", "--q", "0.01"], "--steps"),
    (["--epsilon", "1", *ABADI, "--precision", "0.5"], "--precision"),
    (["--epsilon", "1", *ABADI, "--sensitivity", "2"], "--sensitivity"),
    (["--epsilon", "1", "--accountant", "rdp"], "--accountant"),
    (["--epsilon", "1", *ABADI, "--accountant", "nope"], "--accountant"),
])
def test_bad_input_exits_2_with_one_line(args, needle):
    completed = run_cli("sigma", *args)
    assert completed.returncode == 2
    assert completed.stdout == ""
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpcalc: error:") and needle in lines[0]
