"""`dpcalc epsilon`: output contract, exit codes, one-line errors."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dpcalc import __version__
from dpcalc.cli.app import app
from tests.conftest import run_dpcalc, run_json

runner = CliRunner()
ABADI = ["--q", "0.01", "--sigma", "4", "--steps", "10000"]


def test_default_is_pb_with_certified_bounds_in_json():
    payload = run_json("epsilon", *ABADI)
    assert payload["command"] == "epsilon"
    assert payload["inputs"]["q"] == 0.01 and payload["inputs"]["steps"] == 10000
    assert payload["inputs"]["delta"] == 1e-5
    (result,) = payload["results"]
    assert result["accountant"] == "pb"
    assert result["epsilon"] == result["epsilon_upper"]
    assert result["epsilon_lower"] <= 0.9470
    assert result["epsilon_upper"] == pytest.approx(0.9470, rel=5e-3)
    assert result["certified"] is True


def test_all_accountants_reported_with_stable_keys():
    payload = run_json("epsilon", *ABADI, "--accountant", "all")
    names = [r["accountant"] for r in payload["results"]]
    assert names[0] == "pb"
    assert {"pb", "rdp", "moments", "abadi", "strong", "naive"} <= set(names)
    keys = {"accountant", "epsilon", "epsilon_upper", "epsilon_lower", "certified", "kind", "order",
            "notes", "details"}
    for result in payload["results"]:
        assert keys <= set(result)
    by_name = {r["accountant"]: r for r in payload["results"]}
    assert by_name["moments"]["epsilon"] == pytest.approx(1.2586, abs=1e-3)
    assert by_name["rdp"]["epsilon"] == pytest.approx(1.0355, abs=5e-4)
    assert by_name["abadi"]["certified"] is False


def test_plain_prints_bare_numbers_rounded_up():
    completed = run_dpcalc("epsilon", *ABADI, "--accountant", "pb,rdp", "--format", "plain")
    assert completed.returncode == 0
    lines = completed.stdout.strip().splitlines()
    assert len(lines) == 2
    values = [float(line) for line in lines]
    exact = run_json("epsilon", *ABADI, "--accountant", "pb,rdp")["results"]
    for shown, result in zip(values, exact):
        assert shown >= result["epsilon"]  # rounded in the safe direction
        assert shown == pytest.approx(result["epsilon"], rel=1e-5)


def test_table_echoes_inputs_and_shows_lower_bound():
    result = runner.invoke(app, ["epsilon", *ABADI])
    assert result.exit_code == 0
    assert "pb" in result.output and "lower bound" in result.output
    assert "q = 0.01" in result.output and "steps = 10000" in result.output


def test_batch_size_and_epochs_give_q_and_steps():
    payload = run_json("epsilon", "--batch-size", "256", "--dataset-size", "60000", "--sigma", "1.1",
                       "--epochs", "60")
    assert payload["inputs"]["q"] == pytest.approx(256 / 60000)
    assert payload["inputs"]["steps"] == 14063  # ceil(60 · 60000 / 256)
    assert payload["results"][0]["epsilon"] == pytest.approx(2.382, rel=5e-3)


def test_epochs_with_q_only():
    payload = run_json("epsilon", "--q", "0.01", "--sigma", "4", "--epochs", "100")
    assert payload["inputs"]["steps"] == 10000


def test_phases_compose():
    payload = run_json("epsilon", "--phase", "q=0.01,sigma=4,steps=5000",
                       "--phase", "q=0.01,sigma=4,steps=5000")
    single = run_json("epsilon", *ABADI)
    assert payload["inputs"]["steps"] == 10000
    assert payload["results"][0]["epsilon"] == pytest.approx(single["results"][0]["epsilon"], rel=1e-6)


def test_budget_gate_exit_codes():
    over = run_dpcalc("epsilon", *ABADI, "--max-epsilon", "0.5")
    assert over.returncode == 1
    assert "budget exceeded" in over.stderr and over.stderr.count("\n") == 1
    under = run_dpcalc("epsilon", *ABADI, "--max-epsilon", "1.0", "--format", "plain")
    assert under.returncode == 0


def test_large_delta_warns_on_stderr_only():
    completed = run_dpcalc("epsilon", "--batch-size", "100", "--dataset-size", "1000", "--sigma", "1",
                           "--steps", "10", "--delta", "0.01", "--format", "json")
    assert completed.returncode == 0
    assert "warning" in completed.stderr
    json.loads(completed.stdout)  # stdout stays clean JSON


BAD_INPUTS = [
    (["--q", "0", "--sigma", "1", "--steps", "1"], "--q"),
    (["--q", "1.5", "--sigma", "1", "--steps", "1"], "--q"),
    (["--q", "abc", "--sigma", "1", "--steps", "1"], "--q"),
    (["--q", "nan", "--sigma", "1", "--steps", "1"], "--q"),
    (["--q", "inf", "--sigma", "1", "--steps", "1"], "--q"),
    (["--q", "0.1", "--sigma", "0", "--steps", "1"], "--sigma"),
    (["--q", "0.1", "--sigma", "-1", "--steps", "1"], "--sigma"),
    (["--q", "0.1", "--sigma", "1", "--steps", "0"], "--steps"),
    (["--q", "0.1", "--sigma", "1", "--epochs", "0"], "--epochs"),
    (["--q", "0.1", "--sigma", "1", "--steps", "1", "--delta", "0"], "--delta"),
    (["--q", "0.1", "--sigma", "1", "--steps", "1", "--delta", "1"], "--delta"),
    (["--q", "0.1", "--batch-size", "1", "--dataset-size", "10", "--sigma", "1", "--steps", "1"], "--q"),
    (["--sigma", "1", "--steps", "1"], "--q"),
    (["--batch-size", "11", "--dataset-size", "10", "--sigma", "1", "--steps", "1"], "--batch-size"),
    (["--q", "0.1", "--sigma", "1", "--steps", "1", "--accountant", "nope"], "--accountant"),
    (["--q", "0.1", "--sigma", "1", "--steps", "1", "--format", "xml"], "--format"),
    (["--q", "0.1", "--sigma", "1", "--steps", "1", "--max-epsilon", "x"], "--max-epsilon"),
    (["--q", "0.1", "--sigma", "1", "--steps", "1", "--tolerance", "0"], "--tolerance"),
    (["--q", "0.1", "--sigma", "1", "--steps", "1", "--steps-typo", "3"], "--steps-typo"),
    (["--phase", "q=0.1,steps=3"], "--phase"),
    (["--phase", "q=0.1,sigma=1,steps=3,steps=5"], "--phase"),
    (["--q", "0.01", "--sigma", "1e-300", "--steps", "10"], "--sigma"),
    (["--q", "0.01", "--sigma", "1e300", "--steps", "10"], "--sigma"),
    (["--phase", "q=0.1,sigma=1,steps=3", "--q", "0.1"], "--phase"),
]


@pytest.mark.parametrize("args,flag", BAD_INPUTS, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_bad_input_is_one_line_exit_two(args, flag):
    completed = run_dpcalc("epsilon", *args)
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert completed.stderr.count("\n") == 1 and "Traceback" not in completed.stderr
    assert flag in completed.stderr


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_is_single_sourced(flag):
    completed = run_dpcalc(flag)
    assert completed.returncode == 0 and completed.stdout.strip() == f"dpcalc {__version__}"


def test_help_lists_the_command():
    completed = run_dpcalc("--help")
    assert completed.returncode == 0 and "epsilon" in completed.stdout
