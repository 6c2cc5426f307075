"""`report --max-examples-per-user K`: the certified ε of a person's K examples together (the
group pair of K records under the run's model), TF Privacy's user-level statement."""
from __future__ import annotations

import json

import pytest
from conftest import cli_runner

from dpcalc.cli.app import app, main

runner = cli_runner()
RUN = ["--batch-size", "10", "--dataset-size", "1000", "--sigma", "1", "--steps", "20"]


def _json(*argv: str) -> dict:
    result = runner.invoke(app, [*argv, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("sampling", ["poisson", "fixed"])
def test_user_level_is_the_group_bound(sampling):
    report = _json("report", *RUN, "--sampling", sampling, "--max-examples-per-user", "3")
    found = report["results"][0]["user_level"]
    group = _json("group", "--k", "3", *RUN, "--sampling", sampling, "-m", "pb")["results"][0]
    assert found["max_examples_per_user"] == 3 and found["note"] is None
    assert (found["upper"], found["lower"]) == (group["epsilon"], group["epsilon_lower"])
    # K records together are less protected than one (and the statement says so in words)
    assert found["lower"] > report["results"][0]["epsilon_upper"]
    # "up to K" only where K records cover fewer (Poisson: some with a zero gradient)
    words = ("A person with up to 3 examples" if sampling == "poisson"
             else "A person with 3 examples (fewer: `dpcalc group --k 1:3`)")
    assert words in report["results"][0]["markdown"]


def test_one_example_per_user_is_the_example_level_bound():
    report = _json("report", *RUN, "--max-examples-per-user", "1")["results"][0]
    assert (report["user_level"]["upper"], report["user_level"]["lower"]) == (
        report["epsilon_upper"], report["epsilon_lower"])


def test_replace_one_has_no_group_bound_and_says_why():
    report = _json("report", *RUN, "--adjacency", "replace-one", "--max-examples-per-user",
                   "2")["results"][0]
    assert report["user_level"]["upper"] is None and report["user_level"]["lower"] is None
    assert "replace-one" in report["user_level"]["note"]
    assert "no certified bound for 2 records together" in report["markdown"]


@pytest.mark.parametrize("argv,named", [
    (["--q", "0.01", "--sigma", "1", "--steps", "20"], "--batch-size and --dataset-size"),
    ([*RUN, "--unit", "client"], "--unit example"),
    ([*RUN, "--sampling", "shuffle", "--adjacency", "zero-out"], "poisson or fixed"),
    ([*RUN, "--max-examples-per-user", "0"], "--max-examples-per-user"),
    ([*RUN, "--max-examples-per-user", "65"], "--max-examples-per-user"),
])
def test_user_level_refuses_in_one_line(capsys, argv, named):
    if "--max-examples-per-user" not in argv:
        argv = [*argv, "--max-examples-per-user", "2"]
    with pytest.raises(SystemExit) as stop:
        main(["report", *argv])
    captured = capsys.readouterr()
    assert stop.value.code == 2 and captured.out == ""
    assert captured.err.count("\n") == 1 and named in captured.err


def test_user_level_needs_a_run_not_a_claim(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["report", "--epsilon", "8", "--delta", "1e-5", "--max-examples-per-user", "2"])
    assert stop.value.code == 2 and "needs a run" in capsys.readouterr().err
