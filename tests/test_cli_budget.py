"""--max-epsilon on every command that reports ε: the JSON "budget" record, exit 1 only for
a failed gate, and the gate still decides when the reader closes stdout early."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import cli_runner

from dpcalc.cli.app import app

runner = cli_runner()

COMMANDS = {
    "epsilon": ["epsilon", "--q", "0.01", "--sigma", "2", "--steps", "100", "-a", "rdp"],
    "sigma": ["sigma", "--epsilon", "2", "--q", "0.01", "--steps", "100", "-a", "rdp"],
    "sigma-gaussian": ["sigma", "--epsilon", "2"],
    "compare": ["compare", "--q", "0.01", "--sigma", "2", "--steps", "100,200", "-a", "rdp,naive"],
    "group": ["group", "--k", "1,2", "--batch-size", "100", "--dataset-size", "10000", "--sigma",
              "2", "--steps", "100", "-m", "rdp-group"],
    "simulate": ["simulate", "--samples", "100", "--features", "2", "--classes", "2", "--epochs",
                 "1", "--batch-size", "20", "--sigma", "2"],
}


def _payload(argv: list[str], budget: str) -> tuple[int, dict]:
    result = runner.invoke(app, [*argv, "--max-epsilon", budget, "--format", "json"])
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_budget_gate_on_every_command(name):
    code, payload = _payload(COMMANDS[name], "1000")
    assert code == 0
    budget = payload["budget"]
    assert budget["passed"] is True and budget["max_epsilon"] == 1000.0
    assert 0 < budget["epsilon"] <= 1000
    code, payload = _payload(COMMANDS[name], "0.001")
    assert code == 1
    assert payload["budget"]["passed"] is False and payload["budget"]["epsilon"] > 0.001


def test_the_gate_checks_every_row_of_the_first_accountant():
    """compare: the worst ε of the first accountant named over the sweep decides."""
    _, payload = _payload(COMMANDS["compare"], "1000")
    rdp = [row["epsilon"] for row in payload["results"] if row["accountant"] == "rdp"]
    assert len(rdp) == 2 and payload["budget"]["epsilon"] == max(rdp)
    assert payload["budget"]["accountant"] == "rdp"
    _, group = _payload(COMMANDS["group"], "1000")
    assert group["budget"]["epsilon"] == max(row["epsilon"] for row in group["results"])


def test_without_a_budget_json_has_no_budget_and_the_table_says_nothing():
    result = runner.invoke(app, [*COMMANDS["epsilon"], "--format", "json"])
    assert "budget" not in json.loads(result.stdout)
    table = runner.invoke(app, [*COMMANDS["epsilon"], "--max-epsilon", "1000"],
                          env={"COLUMNS": "120"})
    assert "Budget: ε = " in table.stdout and "passed" in table.stdout


def test_a_failed_gate_is_one_line_on_stderr_and_plain_output_stays_a_number():
    result = subprocess.run([sys.executable, "-m", "dpcalc", *COMMANDS["sigma"], "--max-epsilon",
                             "1", "-f", "plain"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    float(result.stdout)
    assert result.stderr.startswith("budget exceeded: ε = 1.99") and result.stderr.count("\n") == 1


@pytest.mark.parametrize("budget,code", [("0.001", 1), ("1000", 0)])
def test_a_closed_stdout_does_not_hide_the_verdict(budget, code):
    """`| true` closes the pipe before dpcalc writes: the gate still decides the exit code."""
    command = " ".join([sys.executable, "-m", "dpcalc", *COMMANDS["compare"], "--max-epsilon",
                        budget, "-f", "csv"])
    piped = subprocess.run(["bash", "-c", f"{command} | true; echo ${{PIPESTATUS[0]}}"],
                           capture_output=True, text=True, timeout=60)
    assert piped.stdout.split()[-1] == str(code)
    assert "dpcalc: error" not in piped.stderr and "Traceback" not in piped.stderr


# --- a gate is a guarantee: never on an approximation -------------------------------------

APPROXIMATE_GATES = {
    "epsilon": ["epsilon", "--q", "0.01", "--sigma", "4", "--steps", "10000", "-a", "gdp"],
    "compare": ["compare", "--q", "0.01", "--sigma", "4", "--steps", "1000,10000", "-a",
                "abadi,pb"],
    "sigma": ["sigma", "--epsilon", "1", "--q", "0.01", "--steps", "10000", "-a", "gdp"],
}


@pytest.mark.parametrize("name", sorted(APPROXIMATE_GATES))
def test_a_gate_on_an_approximation_is_refused(capfd, name):
    """gdp gives ε = 0.94244 at q = 0.01, σ = 4, T = 10 000, below pb's certified lower
    bound 0.94663: a gate at 0.945 would pass a run whose true ε exceeds it. Exit 2, one
    line naming the flag, nothing on stdout."""
    from dpcalc.cli.app import main

    with pytest.raises(SystemExit) as stop:
        main([*APPROXIMATE_GATES[name], "--max-epsilon", "0.945", "--format", "plain"])
    captured = capfd.readouterr()
    assert stop.value.code == 2 and captured.out == ""
    assert captured.err.count("\n") == 1 and "--max-epsilon gates a certified bound" in captured.err
    # the same command without the gate answers (with the plain output's warning)
    with pytest.raises(SystemExit) as stop:
        main([*APPROXIMATE_GATES[name], "--format", "plain"])
    captured = capfd.readouterr()
    assert stop.value.code == 0 and captured.out.strip()
    assert "not a bound" in captured.err or "not bounds" in captured.err


def test_the_gdp_figure_is_below_the_certified_lower_bound_there():
    """Why the refusal matters: the gated number would be below the truth."""
    from dpcalc import epsilon_results, Phase, Schedule

    run = Schedule((Phase(0.01, 4.0, 10_000),))
    gdp, pb = epsilon_results(["gdp", "pb"], run, 1e-5)
    assert not gdp.certified and pb.certified
    assert gdp.epsilon < 0.945 < pb.epsilon_lower <= pb.epsilon


def test_plain_output_names_approximations_on_stderr_and_nothing_else(capfd):
    from dpcalc.cli.app import main

    with pytest.raises(SystemExit) as stop:
        main(["compare", "--q", "0.01", "--sigma", "4", "--steps", "10000", "--format", "plain"])
    captured = capfd.readouterr()
    assert stop.value.code == 0 and len(captured.out.split()) == 7
    warnings = [line for line in captured.err.splitlines() if line.startswith("warning: ")]
    assert warnings == ["warning: abadi, gdp: approximations, not bounds (not a guarantee to "
                        "report)"] or warnings == ["warning: gdp, abadi: approximations, not "
                                                   "bounds (not a guarantee to report)"]
    with pytest.raises(SystemExit) as stop:  # certified rows only: no warning
        main(["epsilon", "--q", "0.01", "--sigma", "4", "--steps", "10000", "-a", "pb,rdp",
              "--format", "plain"])
    captured = capfd.readouterr()
    assert stop.value.code == 0 and captured.err == ""


@pytest.mark.parametrize("argv", [
    # another tool's name for an approximation: refused before its alias warning
    ["epsilon", "--q", "0.01", "--sigma", "4", "--steps", "10000", "-a", "clt"],
    ["compare", "--q", "0.01", "--sigma", "1", "--steps", "100", "-a", "clt,pld"],
    # an approximation that does not apply to the model is refused too (not "cannot be checked")
    ["epsilon", "--sampling", "shuffle", "--batch-size", "256", "--dataset-size", "60000",
     "--sigma", "1.1", "--epochs", "2", "-a", "gdp"],
    # group's seed pair is labelled "not a certificate for this run": no gate on it
    ["group", "--k", "2", "--batch-size", "10", "--dataset-size", "1000", "--sigma", "1",
     "--steps", "20", "-m", "seed"],
])
def test_a_gate_on_a_number_that_is_no_certificate_is_one_line_exit_2(capfd, argv):
    from dpcalc.cli.app import main

    with pytest.raises(SystemExit) as stop:
        main([*argv, "--max-epsilon", "100", "--format", "json"])
    captured = capfd.readouterr()
    assert stop.value.code == 2 and captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("dpcalc: error: --max-epsilon")
