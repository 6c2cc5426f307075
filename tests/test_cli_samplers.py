"""The epoch samplers on the command line: JSON contract, side-by-side compare, sigma, errors."""
from __future__ import annotations

import json

import pytest

from dpcalc.cli.app import app
from tests.conftest import cli_runner, run_dpcalc

runner = cli_runner()
RUN = ["--batch-size", "256", "--dataset-size", "60000", "--sigma", "1", "--epochs", "2"]


def _json(*args):
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_shuffle_json_states_upper_lower_and_the_poisson_figure():
    payload = _json("epsilon", "--sampling", "shuffle", "--adjacency", "zero-out", *RUN)
    assert payload["inputs"]["sampling"] == "shuffle"
    assert payload["inputs"]["adjacency"] == "zero-out"
    (result,) = payload["results"]
    assert result["epsilon"] == result["epsilon_upper"] > result["epsilon_lower"] > 0
    details = result["details"]
    assert details["upper_source"] == "gaussian-no-amplification"
    assert details["epsilon_poisson_not_applicable"] < result["epsilon_lower"]
    assert any("does NOT apply" in note for note in result["notes"])


def test_shuffle_under_add_remove_is_not_applicable_with_the_reason():
    payload = _json("epsilon", "--sampling", "shuffle", *RUN, "-a", "pb,rdp")
    for result in payload["results"]:
        assert result["epsilon"] is None and result["notes"][0].startswith("not applicable")
    assert "zero-out" in payload["results"][0]["notes"][0]


def test_compare_lists_samplers_side_by_side():
    payload = _json("compare", "--sampling", "poisson,shuffle,balls-in-bins", "--adjacency",
                    "zero-out", *RUN, "-a", "pb")
    rows = {row["sampling"]: row for row in payload["results"]}
    assert set(rows) == {"poisson", "shuffle", "balls-in-bins"}
    assert rows["poisson"]["epsilon"] < rows["shuffle"]["epsilon_lower"]
    assert rows["balls-in-bins"]["epsilon"] < rows["shuffle"]["epsilon"]
    csv = runner.invoke(app, ["compare", "--sampling", "poisson,shuffle", "--adjacency",
                              "zero-out", *RUN, "-a", "pb", "--format", "csv"])
    assert csv.exit_code == 0 and "shuffle" in csv.stdout


def test_sigma_for_a_shuffled_run_meets_its_certified_upper_bound():
    payload = _json("sigma", "--sampling", "shuffle", "--adjacency", "replace-one",
                    "--batch-size", "256", "--dataset-size", "60000", "--epochs", "2",
                    "--epsilon", "8")
    (result,) = payload["results"]
    assert result["epsilon"] <= 8.0 and result["sigma"] > 0


def test_unknown_sampler_is_one_line_exit_2_naming_the_valid_ones():
    result = run_dpcalc("epsilon", "--sampling", "shufle", *RUN)
    assert result.returncode == 2 and result.stdout == ""
    assert "--sampling must be one of" in result.stderr and "balls-in-bins" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


SIMULATE = ["simulate", "--samples", "1200", "--features", "5", "--classes", "3", "--epochs", "2",
            "--sigma", "1", "--batch-size", "100"]


@pytest.mark.parametrize("sampling,adjacency", [("balls-in-bins", "add-remove"),
                                               ("shuffle", "zero-out")])
def test_simulate_trains_with_the_sampler_and_reports_its_bounds(sampling, adjacency):
    result = runner.invoke(app, [*SIMULATE, "--sampling", sampling, "--adjacency", adjacency,
                                 "--format", "json"])
    assert result.exit_code == 0, result.output
    assert "Poisson" not in result.stderr  # accounted for what it is: no warning
    payload = json.loads(result.stdout)
    assert payload["inputs"]["sampling"] == sampling
    final = payload["final"]
    assert 0 < final["epsilon_lower"] <= final["epsilon"]
    assert final["steps"] == 2 * 10  # ⌈960/100⌉ = 10 steps per epoch


@pytest.mark.parametrize("command", [["risk", "--fpr", "0.01"], ["report"]])
def test_risk_and_report_accept_epoch_samplers(command):
    result = run_dpcalc(*command, "--sampling", "shuffle", "--adjacency", "zero-out", *RUN)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert "shuffle" in result.stdout


@pytest.mark.parametrize("target", [["--max-tpr", "0.05", "--at-fpr", "0.01"],
                                    ["--max-advantage", "0.2"]])
def test_risk_calibration_refuses_epoch_samplers_in_one_line(target):
    result = run_dpcalc("sigma", *target, "--sampling", "shuffle", "--adjacency", "zero-out",
                        *RUN[:4], "--epochs", "2")
    assert result.returncode == 2 and result.stdout == ""
    assert "needs a dominating pair per step" in result.stderr and "dpcalc risk" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("sampling,adjacency,sigma,epochs,delta", [
    ("shuffle", "zero-out", "1", "2", "1e-5"),
    ("shuffle", "zero-out", "0.8", "5", "1e-6"),
    ("balls-in-bins", "add-remove", "1", "2", "1e-5"),
    ("balls-in-bins", "add-remove", "0.7", "3", "1e-5"),
    ("balls-in-bins", "zero-out", "2", "1", "1e-6"),
])
@pytest.mark.deep  # an oracle sweep (CI: python -m pytest -m deep)
def test_delta_for_epoch_samplers_inverts_epsilon(sampling, adjacency, sigma, epochs, delta):
    """Regression (review): `dpcalc delta --sampling shuffle|balls-in-bins` exited 2 (it
    asked for a dominating pair per step) although other commands' errors recommend it. At
    ε = the upper ε `epsilon` gives at δ₀, pb's certified δ is ≤ δ₀; at ε = the lower ε it is
    ≥ δ₀; the lower δ is ≤ δ₀; the labels are those of `epsilon`."""
    run = ["--sampling", sampling, "--adjacency", adjacency, "--batch-size", "256",
           "--dataset-size", "60000", "--sigma", sigma, "--epochs", epochs]
    target = float(delta)
    (eps,) = _json("epsilon", *run, "--delta", delta)["results"]
    (at_upper,) = _json("delta", *run, "--epsilon", repr(eps["epsilon"]))["results"]
    assert at_upper["delta"] == at_upper["delta_upper"] <= target * (1 + 1e-6)
    assert 0.0 <= at_upper["delta_lower"] <= at_upper["delta"]
    assert at_upper["upper_source"] == eps["details"]["upper_source"]
    assert at_upper["delta_poisson_not_applicable"] < at_upper["delta"]
    assert any("does NOT apply" in note for note in at_upper["notes"])
    assert at_upper["notes"][:2] == eps["notes"][:2]  # the same upper and lower methods
    (at_lower,) = _json("delta", *run, "--epsilon", repr(eps["epsilon_lower"]))["results"]
    assert at_lower["delta"] >= target * (1 - 1e-6)
    plain = run_dpcalc("delta", *run, "--epsilon", "2", "--format", "plain")
    assert plain.returncode == 0 and float(plain.stdout) > 0


def test_delta_for_shuffle_under_add_remove_is_not_applicable():
    (result,) = _json("delta", "--sampling", "shuffle", *RUN, "--epsilon", "2")["results"]
    assert result["delta"] is None and result["notes"][0].startswith("not applicable")


@pytest.mark.parametrize("sampling,adjacency", [("balls-in-bins", "add-remove"),
                                                ("shuffle", "zero-out")])
def test_every_accountant_answers_or_says_why_not_for_epoch_samplers(sampling, adjacency):
    """`epsilon -a all` on an epoch sampler: pb certifies; every per-step accountant (rdp
    included) says "not applicable" with the reason, none crashes or gives a number for
    another model."""
    payload = _json("epsilon", "--sampling", sampling, "--adjacency", adjacency,
                    "--batch-size", "256", "--dataset-size", "60000", "--epochs", "3",
                    "--sigma", "1", "-a", "all")
    results = {result["accountant"]: result for result in payload["results"]}
    assert "rdp" in results and results["pb"]["epsilon"] > results["pb"]["epsilon_lower"] > 0
    for name, result in results.items():
        if name == "pb":
            continue
        assert result["epsilon"] is None, name
        reason = result["notes"][0]
        assert reason.startswith(f"not applicable: {name} has no bound for"), name
        assert "one worst-case pair per step" in reason and "pb gives" in reason
