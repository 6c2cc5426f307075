"""The 8 first-try tasks of issue 31, each typed as a new user would from `--help` alone
(every flag used is checked to be in that command's --help) and run through the real
command (`python -m dpcalc`), each checked for a sensible answer: exit code, the model named,
and the numbers against an independent value where one exists (published reference values,
the closed form of an (ε, δ) claim, dp_accounting's PLD accountant)."""
from __future__ import annotations

import functools
import json
import math
import os
import re
import subprocess
import sys

import pytest

from tests.reference_values import MNIST_Q, REFERENCES

MNIST = ["--batch-size", "256", "--dataset-size", "60000"]


@functools.lru_cache(maxsize=None)
def _help(command: str) -> str:
    shown = _dpcalc(command, "--help", columns=250)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def _dpcalc(*args: str, columns: int = 120) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("DPCALC_DEBUG", "PYTHONIOENCODING")}
    return subprocess.run([sys.executable, "-m", "dpcalc", *args], capture_output=True,
                          text=True, timeout=300, env={**environment, "COLUMNS": str(columns)})


def typed(command: str, *args: str) -> subprocess.CompletedProcess:
    """``dpcalc command args``, after checking `dpcalc command --help` names every flag."""
    for flag in (arg for arg in args if arg.startswith("--")):
        assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", _help(command)), \
            f"{flag} is not in `dpcalc {command} --help`"
    return _dpcalc(command, *args)


def _json(completed: subprocess.CompletedProcess) -> dict:
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def _reference(source: str):
    return next(reference for reference in REFERENCES if reference.source == source)


# 1 ------------------------------------------------------------------------------------------
def test_opacus_run_epsilon():
    """Opacus's names: sample_rate, noise_multiplier, epochs, target_delta. The TF Privacy
    MNIST run (q = 256/60000, σ = 1.1, 60 epochs: 14063 steps) has the published tight ε."""
    reference = _reference("TF Privacy MNIST σ=1.1, 60 epochs, PLD")
    args = ["--sample-rate", repr(MNIST_Q), "--noise-multiplier", "1.1", "--epochs", "60",
            "--target-delta", "1e-5"]
    table = typed("epsilon", *args)
    assert table.returncode == 0, table.stderr
    assert "Poisson sampling" in table.stdout and "certified" in table.stdout
    assert "Opacus's int(epochs/q)" in " ".join(table.stdout.split())  # the one-step difference is explained
    document = _json(typed("epsilon", *args, "--format", "json"))
    assert document["inputs"]["steps"] == reference.steps == 14_063
    (row,) = document["results"]
    assert row["certified"] and row["kind"] == "certified upper bound"
    assert row["epsilon_lower"] <= reference.epsilon * (1 + reference.relative_tolerance)
    assert row["epsilon"] >= reference.epsilon * (1 - reference.relative_tolerance)
    assert math.isclose(row["epsilon"], reference.epsilon, rel_tol=reference.relative_tolerance)


# 2 ------------------------------------------------------------------------------------------
def test_sigma_for_epsilon_3_at_50_epochs():
    """σ for ε = 3 at 50 epochs of MNIST's batches; dp_accounting's PLD accountant (an
    independent implementation) gives ε ≤ 3 at that σ, and > 3 at 2 % less noise."""
    document = _json(typed("sigma", "--epsilon", "3", "--epochs", "50", *MNIST,
                           "--format", "json"))
    (row,) = document["results"]
    assert row["certified"] and row["epsilon"] <= 3.0 and document["inputs"]["steps"] == 11_719
    assert "Poisson sampling" in document["inputs"]["model"]
    sigma = row["sigma"]
    assert 0.85 < sigma < 1.0
    pld = pytest.importorskip("dp_accounting.pld.pld_privacy_accountant")
    from dp_accounting import dp_event

    def reference_epsilon(noise: float) -> float:
        accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
        accountant.compose(dp_event.SelfComposedDpEvent(
            dp_event.PoissonSampledDpEvent(MNIST_Q, dp_event.GaussianDpEvent(noise)), 11_719))
        return accountant.get_epsilon(1e-5)

    assert reference_epsilon(sigma) <= 3.0 * 1.001
    assert reference_epsilon(0.98 * sigma) > 3.0


# 3 ------------------------------------------------------------------------------------------
def test_my_dataloader_shuffles():
    """`--pipeline torch-shuffle`: the shuffled loader's own model, a certified interval,
    and the Poisson figure labelled as not applying (the Poisson run's own ε, rounded the
    same way, is the lower end of what shuffling cannot beat here)."""
    args = ["--pipeline", "torch-shuffle", *MNIST, "--sigma", "1.1", "--epochs", "60"]
    table = typed("epsilon", *args)
    assert table.returncode == 0, table.stderr
    assert "shuffled batches" in table.stdout and "torch-shuffle" in table.stdout
    assert "does NOT apply" in table.stdout
    document = _json(typed("epsilon", *args, "--format", "json"))
    (row,) = document["results"]
    assert document["inputs"]["sampling"] == "shuffle"
    assert document["inputs"]["steps"] == 60 * math.ceil(60_000 / 256)  # 235 batches an epoch
    assert row["certified"] and 0 < row["epsilon_lower"] <= row["epsilon"] < math.inf
    # each record is in one batch per epoch: 60 unamplified Gaussian steps bound it above,
    # ε of the 60-fold Gaussian μ = √60/σ (Dong, Roth, Su 2022 Cor. 3.3), computed here
    from dpcalc.models.gaussian import gdp_epsilon

    assert row["epsilon"] <= gdp_epsilon(1e-5, math.sqrt(60) / 1.1) * (1 + 1e-4)


# 4 ------------------------------------------------------------------------------------------
def test_what_epsilon_8_means_for_membership_inference():
    """`risk --epsilon 8 --delta 1e-5`: TPR ≤ min(e^ε·FPR + δ, 1 − e^−ε·(1 − δ − FPR))
    (Kairouz, Oh, Viswanath 2015), labelled as the claim's bound."""
    table = typed("risk", "--epsilon", "8", "--delta", "1e-5")
    assert table.returncode == 0, table.stderr
    assert "claim" in table.stdout and "TPR" in table.stdout
    document = _json(typed("risk", "--epsilon", "8", "--delta", "1e-5", "--format", "json"))
    tpr = [row for row in document["results"] if row["measure"] == "tpr"]
    assert [row["at"] for row in tpr] == [1e-3, 1e-2, 0.1]
    for row in tpr:
        alpha = row["at"]
        closed = min(math.exp(8) * alpha + 1e-5, 1 - math.exp(-8) * (1 - 1e-5 - alpha))
        assert math.isclose(row["upper"], closed, rel_tol=1e-9)
        assert row["kind"] == "bound for the claim"


# 5 ------------------------------------------------------------------------------------------
def test_a_privacy_statement():
    """`report`: Markdown naming ε (the epsilon command's figure), δ, the unit, the
    neighbouring relation and the sampler."""
    args = [*MNIST, "--sigma", "1.1", "--epochs", "60"]
    statement = typed("report", *args)
    assert statement.returncode == 0, statement.stderr
    text = statement.stdout
    assert text.startswith("# Differential privacy statement")
    assert "**ε = 2.3819** at **δ = 1e-05**" in text  # the table's figure, rounded up
    assert "one training example" in text and "add/remove" in text and "Poisson" in text
    reference = _reference("TF Privacy MNIST σ=1.1, 60 epochs, PLD")
    assert math.isclose(2.3819, reference.epsilon, rel_tol=reference.relative_tolerance)


# 6 ------------------------------------------------------------------------------------------
def test_a_ci_gate_at_epsilon_8():
    """`--max-epsilon 8`: exit 0 under the budget, 1 over it (with one line saying so)."""
    under = typed("epsilon", *MNIST, "--sigma", "1.1", "--epochs", "60", "--max-epsilon", "8")
    assert under.returncode == 0, under.stderr
    assert "Budget" in under.stdout and "passed" in under.stdout
    over = typed("epsilon", *MNIST, "--sigma", "0.7", "--epochs", "45", "--max-epsilon", "5")
    assert over.returncode == 1
    assert "budget exceeded" in over.stderr and "> --max-epsilon 5" in over.stderr
    # the over-budget run is TF Privacy's σ = 0.7, 45 epochs: published ε 5.640 > 5
    assert _reference("TF Privacy MNIST σ=0.7, 45 epochs, PLD").epsilon > 5
    leaky = typed("epsilon", *MNIST, "--sigma", "0.5", "--epochs", "60", "--max-epsilon", "8",
                  "--format", "plain")
    assert leaky.returncode == 1 and float(leaky.stdout) > 8


# 7 ------------------------------------------------------------------------------------------
def test_rdp_vs_pld_side_by_side():
    """`compare --accountant rdp,pld` (pld is pb, with a note): Abadi et al.'s example
    against its published RDP and tight PLD values."""
    run = ["--q", "0.01", "--sigma", "4", "--steps", "10000"]
    table = typed("compare", *run, "--accountant", "rdp,pld")
    assert table.returncode == 0, table.stderr
    assert "pld is pb" in table.stderr
    rows = [line for line in table.stdout.splitlines() if line.startswith("│ ")]
    assert [row.split("│")[1].strip() for row in rows] == ["pb", "rdp"]  # sorted by ε
    document = _json(typed("compare", *run, "--accountant", "rdp,pld", "--format", "json"))
    by_name = {row["accountant"]: row for row in document["results"]}
    for name, source in [("rdp", "Abadi et al. 2016 example, current RDP"),
                         ("pb", "Abadi et al. 2016 example, tight PLD")]:
        reference = _reference(source)
        assert math.isclose(by_name[name]["epsilon"], reference.epsilon,
                            rel_tol=reference.relative_tolerance)
        assert by_name[name]["certified"]
    assert by_name["rdp"]["ratio_to_tightest"] > 1.0


# 8 ------------------------------------------------------------------------------------------
def test_federated_50_of_1000_clients_for_200_rounds():
    """The help's recipe: fixed m of M clients is --sampling fixed --batch-size m
    --dataset-size M --unit client, rounds are --steps. The answer names the draw (clients
    per round of clients, rounds) and the unit; `--pipeline flower` is the same run."""
    args = ["--sampling", "fixed", "--batch-size", "50", "--dataset-size", "1000",
            "--unit", "client", "--sigma", "1", "--steps", "200"]
    assert "client" in _help("epsilon")
    table = typed("epsilon", *args)
    assert table.returncode == 0, table.stderr
    words = " ".join(table.stdout.split())
    assert "clients per round = 50 · clients = 1000" in words and "rounds = 200" in words
    assert "fixed-size batches" in words and "unit of privacy: one client" in words
    document = _json(typed("epsilon", *args, "--format", "json"))
    assert (document["inputs"]["unit"], document["inputs"]["sampling"]) == ("client", "fixed")
    (row,) = document["results"]
    assert row["certified"] and 0 < row["epsilon_lower"] <= row["epsilon"] < math.inf
    flower = _json(typed("epsilon", "--pipeline", "flower", "--batch-size", "50",
                         "--dataset-size", "1000", "--sigma", "1", "--steps", "200",
                         "--format", "json"))
    assert flower["results"][0]["epsilon"] == row["epsilon"]
    assert flower["inputs"]["unit"] == "client"
    # without amplification the 200 rounds are the 200-fold Gaussian: a bound the sampled
    # run must not exceed (μ = √200/σ, Dong, Roth, Su 2022 Cor. 3.3)
    from dpcalc.models.gaussian import gdp_epsilon

    assert row["epsilon"] <= gdp_epsilon(1e-5, math.sqrt(200)) * (1 + 1e-4)
