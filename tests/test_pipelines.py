"""Pipelines by name (issue 29): a new user's three questions answered on the first try from
`--help`, the not-applicable rows consistent in every command, units, the price of the
pipeline, and the pipeline table of docs/models.md checked against the registry."""
from __future__ import annotations

import json
import math
import pathlib
import re

import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from dpcalc.cli.app import app
from dpcalc.cli.pipelines.command import markdown_table
from dpcalc.pipelines.names import PIPELINE_NAMES, PIPELINES, get_pipeline
from tests.conftest import cli_runner, run_dpcalc

runner = cli_runner()
MNIST = ["--batch-size", "256", "--dataset-size", "60000", "--sigma", "1.1", "--epochs", "60"]
FEDERATED = ["--batch-size", "50", "--dataset-size", "1000", "--sigma", "1", "--steps", "200"]
SMALL = ["--batch-size", "100", "--dataset-size", "1000", "--sigma", "1", "--epochs", "2"]
RUN_COMMANDS = ("epsilon", "delta", "sigma", "risk", "report", "compare")
MODELS_PAGE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "models.md"


def _invoke(*args):
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def _json(*args):
    return json.loads(_invoke(*args, "--format", "json"))


def _gdp_epsilon(mu: float, delta: float) -> float:
    """ε of μ-GDP at δ: δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) solved by brentq."""
    def excess(epsilon):
        return (norm.cdf(-epsilon / mu + mu / 2)
                - math.exp(epsilon + norm.logcdf(-epsilon / mu - mu / 2)) - delta)
    return brentq(excess, 0.0, 500.0, xtol=1e-12)


# ------------------------------------------------------------------ the three questions
@pytest.mark.parametrize("command", RUN_COMMANDS)
def test_every_run_command_help_names_pipelines_and_client_sampling(command):
    text = " ".join(_invoke(command, "--help").split())
    assert "--pipeline" in text and "torch-shuffle" in text and "flower" in text
    assert "m of M clients" in text and "--unit" in text


def test_pytorch_dataloader_question_first_try():
    """"My PyTorch DataLoader shuffles — what is my ε?": one command from --help gives a
    certified interval and names the pipeline and its model."""
    payload = _json("epsilon", "--pipeline", "torch-shuffle", *MNIST)
    (result,) = payload["results"]
    inputs = payload["inputs"]
    assert result["certified"] is True and result["kind"] == "certified upper bound"
    assert inputs["pipeline"]["name"] == "torch-shuffle"
    assert "DataLoader" in inputs["pipeline"]["what"]
    assert inputs["pipeline"]["model"] == inputs["model"]
    assert "shuffled batches" in inputs["model"] and inputs["adjacency"] == "zero-out"
    assert "zero-out chosen" in inputs["pipeline"]["adjacency_note"]
    # 60 epochs of 235 batches = 14 100 steps, whole epochs: the 60-fold Gaussian exactly
    assert inputs["steps"] == 14_100
    truth = _gdp_epsilon(math.sqrt(60) / 1.1, 1e-5)
    assert truth * (1 - 1e-10) <= result["epsilon"] <= truth * (1 + 1e-8)
    assert 10.0 < result["epsilon_lower"] < result["epsilon"]
    # what the pipeline costs: the same run under Poisson and balls-in-bins
    by_sampling = {item["sampling"]: item for item in payload["alternatives"]}
    assert set(by_sampling) == {"poisson", "balls-in-bins"}
    assert by_sampling["poisson"]["epsilon_upper"] < 3 < result["epsilon_lower"]
    poisson = _json("epsilon", "--sampling", "poisson", "--adjacency", "zero-out", *MNIST)
    assert by_sampling["poisson"]["epsilon_upper"] == poisson["results"][0]["epsilon"]
    text = " ".join(_invoke("epsilon", "--pipeline", "torch-shuffle", *MNIST).split())
    assert "Pipeline: torch-shuffle" in text and "What the pipeline costs" in text


def test_federated_question_first_try():
    """"50 of 1 000 clients per round, 200 rounds, z = 1": --pipeline flower is the server
    drawing exactly m clients (fixed), and the output names the client as the unit."""
    payload = _json("epsilon", "--pipeline", "flower", *FEDERATED)
    fixed = _json("epsilon", "--sampling", "fixed", *FEDERATED)
    poisson = _json("epsilon", *FEDERATED)
    (result,) = payload["results"]
    assert result["epsilon"] == fixed["results"][0]["epsilon"] == pytest.approx(24.74, abs=0.01)
    assert payload["inputs"]["unit"] == "client" and payload["inputs"]["sampling"] == "fixed"
    assert payload["inputs"]["pipeline"]["unit"] == "client"
    assert payload["alternatives"][0]["epsilon_upper"] == poisson["results"][0]["epsilon"]
    text = " ".join(_invoke("epsilon", "--pipeline", "flower", *FEDERATED).split())
    assert "unit of privacy: one client" in text and "m of M clients" in text
    assert "Poisson sampling [4.76" in text  # the price line: the Poisson draw spends 4.77


def test_unit_changes_the_statement_footer_and_json():
    payload = _json("epsilon", "--unit", "user", *SMALL)
    assert payload["inputs"]["unit"] == "user" and payload["inputs"]["pipeline"] is None
    assert "unit of privacy: one user" in " ".join(_invoke("delta", "--epsilon", "1", "--unit",
                                                           "users", *SMALL).split())
    markdown = _json("report", "--pipeline", "flower", *FEDERATED)["results"][0]["markdown"]
    assert "Unit of privacy: one client" in markdown and "**Per-client.**" in markdown
    result = run_dpcalc("epsilon", "--unit", "household", *SMALL)
    assert result.returncode == 2 and "--unit must be one of example, client, user" in result.stderr


# ------------------------------------------------------------------ --pipeline and flags
def test_explicit_sampling_must_agree_with_the_pipeline():
    result = run_dpcalc("epsilon", "--pipeline", "torch-shuffle", "--sampling", "poisson", *SMALL)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == ("dpcalc: error: --pipeline torch-shuffle is --sampling "
                                     "shuffle; got --sampling poisson (give one of them)")
    same = _json("epsilon", "--pipeline", "torch-shuffle", "--sampling", "shuffling", *SMALL)
    assert same["inputs"]["sampling"] == "shuffle"


def test_an_explicit_adjacency_is_kept_and_said():
    payload = _json("epsilon", "--pipeline", "torch-shuffle", "--adjacency", "replace-one", *SMALL)
    assert payload["inputs"]["adjacency"] == "replace-one"
    assert payload["inputs"]["pipeline"]["adjacency_note"] == (
        "--adjacency replace-one given (the pipeline's default is zero-out)")
    assert payload["results"][0]["certified"] is True


def test_pipeline_names_and_aliases():
    assert get_pipeline("TFF").name == "flower" and get_pipeline("tf_data_shuffle").name == "tf-shuffle"
    result = run_dpcalc("epsilon", "--pipeline", "keras", *SMALL)
    assert result.returncode == 2 and "--pipeline must be one of opacus," in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_drop_last_pipeline_runs_the_full_batches():
    payload = _json("epsilon", "--pipeline", "torch-shuffle-drop-last", *MNIST)
    inputs = payload["inputs"]
    assert inputs["steps"] == 60 * 234 and inputs["drop_last"] is True
    assert "partial batch dropped" in inputs["model"]
    assert payload["results"][0]["details"]["steps_per_epoch"] == 234
    result = run_dpcalc("epsilon", "--drop-last", *SMALL)
    assert result.returncode == 2 and "--drop-last is for --sampling shuffle or sequential" in \
        result.stderr


def test_sequential_pipeline_is_exact():
    (result,) = _json("epsilon", "--pipeline", "torch-sequential", *MNIST)["results"]
    assert result["details"]["upper_source"] == "gaussian-exact"
    assert result["epsilon_lower"] == pytest.approx(result["epsilon"], rel=1e-9)


@pytest.mark.parametrize("name", ["tf-shuffle-buffer", "opacus", "jax-privacy-poisson"])
def test_other_pipelines_give_a_certificate(name):
    extra = ["--max-batch-size", "300"] if name == "jax-privacy-poisson" else []
    (result,) = _json("epsilon", "--pipeline", name, *SMALL, *extra)["results"]
    assert result["certified"] is True and result["epsilon"] > 0


def test_the_price_line_is_for_loader_and_fixed_samplers_only():
    assert _json("epsilon", *SMALL)["alternatives"] == []
    assert len(_json("epsilon", "--sampling", "fixed", *SMALL)["alternatives"]) == 2
    assert len(_json("epsilon", "--pipeline", "tf-shuffle-buffer", *SMALL)["alternatives"]) == 2


# ------------------------------------------------------------------ not applicable
def _run(command: str) -> list[str]:
    return [item for item in SMALL if command != "sigma" or item not in ("--sigma", "1")]


def _zero_out(*args):
    return _json(*args, "--sampling", "shuffle", "--adjacency", "zero-out", *_run(args[0]))


def _add_remove(*args):
    return _json(*args, "--sampling", "shuffle", *_run(args[0]))


def test_not_applicable_is_the_same_in_every_command():
    """Shuffled batches under add/remove: in every command the row has no value, kind "not
    applicable", certified false, exit 0 — and the nearest model's (zero-out) figures beside
    it, equal to what the command gives under zero-out."""
    (row,) = _add_remove("epsilon")["results"]
    (reference,) = _zero_out("epsilon")["results"]
    assert (row["epsilon"], row["certified"], row["kind"]) == (None, False, "not applicable")
    nearest = row["details"]["nearest_model"]
    assert (nearest["epsilon_upper"], nearest["epsilon_lower"]) == (reference["epsilon"],
                                                                    reference["epsilon_lower"])
    assert any("nearest model with a certificate: zero-out" in note for note in row["notes"])

    (row,) = _add_remove("delta", "--epsilon", "2")["results"]
    (reference,) = _zero_out("delta", "--epsilon", "2")["results"]
    assert (row["delta"], row["certified"], row["kind"]) == (None, False, "not applicable")
    assert row["nearest_model"]["delta_upper"] == reference["delta"]
    assert row["nearest_model"]["delta_lower"] == reference["delta_lower"]

    (row,) = _add_remove("sigma", "--epsilon", "8")["results"]
    (reference,) = _zero_out("sigma", "--epsilon", "8")["results"]
    assert (row["sigma"], row["certified"], row["kind"]) == (None, False, "not applicable")
    assert row["nearest_model"]["sigma"] == reference["sigma"]

    rows = _add_remove("risk")["results"]
    references = _zero_out("risk")["results"]
    for row, reference in zip(rows, references, strict=True):
        assert (row["upper"], row["certified"], row["kind"]) == (None, False, "not applicable")
        assert row["nearest_model"]["upper"] == reference["upper"]

    (row,) = _add_remove("report")["results"]
    assert (row["epsilon"], row["certified"], row["kind"]) == (None, False, "not applicable")
    assert row["nearest_model"]["epsilon_upper"] == reference_epsilon()

    rows = _add_remove("compare", "-a", "pb,rdp")["results"]
    assert all(r["certified"] is False and r["kind"] == "not applicable" for r in rows)


def reference_epsilon():
    return _zero_out("epsilon")["results"][0]["epsilon"]


def test_not_applicable_table_says_so():
    text = " ".join(_invoke("epsilon", "--sampling", "shuffle", *SMALL).split())
    assert "not applicable" in text.split("q = ")[0]  # the row's kind, in the table
    assert "nearest model with a certificate: zero-out adjacency, ε ∈ [" in text


def test_report_never_calls_a_not_applicable_row_certified():
    markdown = _add_remove("report")["results"][0]["markdown"]
    assert "**No certificate exists for this model**" in markdown
    assert "It satisfies" not in markdown and "Certificate: none for this model" in markdown
    upper = reference_epsilon()
    assert re.search(r"ε ≤ [0-9.]+ at δ = 1e-05 \(certified upper bound for zero-out", markdown)
    assert f"{upper:.3f}"[:4] in markdown


def test_report_caveats_fit_the_sampler():
    poisson = _json("report", *SMALL)["results"][0]["markdown"]
    assert "no certificate here covers it" not in poisson
    assert "`--pipeline torch-shuffle`" in poisson
    sequential = _json("report", "--pipeline", "torch-sequential", *SMALL)["results"][0]["markdown"]
    assert "**No shuffling, no amplification.**" in sequential
    assert "Data pipeline: `torch-sequential`" in sequential
    buffered = _json("report", "--pipeline", "tf-shuffle-buffer", *SMALL)["results"][0]["markdown"]
    assert "**A buffered shuffle is not a uniform permutation.**" in buffered
    assert "## What the data pipeline costs" in buffered


# ------------------------------------------------------------------ the table itself
def test_pipelines_command_lists_every_pipeline():
    payload = _json("pipelines")
    assert [record["name"] for record in payload["results"]] == list(PIPELINE_NAMES)
    assert {record["name"]: record["sampling"] for record in payload["results"]}["flower"] == "fixed"
    plain = _invoke("pipelines", "--format", "plain").splitlines()
    assert plain[2].split("\t") == ["torch-shuffle", "shuffle", "zero-out", "example", "-"]
    table = _invoke("pipelines")
    assert all(name in table for name in PIPELINE_NAMES)


def test_documented_pipeline_table_is_the_registry():
    text = MODELS_PAGE.read_text(encoding="utf-8")
    found = re.search(r"<!-- pipelines -->\n(.*?)<!-- /pipelines -->", text, re.S)
    assert found, "docs/models.md lacks the generated pipelines table"
    assert found.group(1) == markdown_table()


def test_every_pipeline_maps_to_a_certified_model():
    """Each pipeline's default model has a certificate (never a not-applicable default)."""
    from dpcalc.models.samplers import EPOCH_MODELS, EPOCH_SAMPLINGS

    for pipeline in PIPELINES:
        if pipeline.sampling in EPOCH_SAMPLINGS:
            assert (pipeline.sampling, pipeline.adjacency) in EPOCH_MODELS, pipeline.name


def test_compare_sweep_says_why_and_gives_the_nearest_intervals():
    text = " ".join(_invoke("compare", "--sampling", "shuffle", "--batch-size", "100",
                            "--dataset-size", "1000", "--sigma", "1", "--epochs", "1,2",
                            "-a", "pb").split())
    epsilon = _zero_out("epsilon")["results"][0]  # 2 epochs under zero-out
    assert "pb: not applicable: shuffled batches under add/remove-one" in text
    from dpcalc.accountants.result import interval_text

    assert f"2: {interval_text(epsilon['epsilon_lower'], epsilon['epsilon'])}" in text
