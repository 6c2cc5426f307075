"""`dpcalc risk`, `sigma --max-tpr/--max-advantage`, `dpcalc delta` and `dpcalc report`:
output contract (JSON keys, plain, model footer), exit codes, deterministic statement."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dpcalc.cli.app import app, main

runner = CliRunner()
RUN = ["--q", "0.01", "--sigma", "4", "--steps", "10000"]
KEYS = {"accountant", "measure", "at", "value", "upper", "lower", "no_leak", "certified", "kind",
        "notes"}


def run_main(capsys, *args):
    """The real entry point in-process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as stop:
        main(list(args))
    captured = capsys.readouterr()
    return stop.value.code, captured.out, captured.err


def _json(*args):
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_risk_json_has_every_figure_with_stable_keys():
    payload = _json("risk", *RUN, "--baseline", "0.001", "--fpr", "0.1,1e-3")
    assert payload["command"] == "risk"
    assert payload["inputs"]["sampling"] == "poisson" and payload["inputs"]["adjacency"] == "add-remove"
    assert payload["inputs"]["fpr"] == [0.001, 0.1]
    measures = [record["measure"] for record in payload["results"]]
    assert measures == ["tpr", "tpr", "advantage", "posterior_success", "reconstruction", "gdp_mu"]
    for record in payload["results"]:
        assert KEYS <= set(record)
        assert record["value"] == record["upper"] >= record["lower"]
    tpr = payload["results"][0]
    assert tpr["at"] == 0.001 and tpr["lower"] >= 0.001
    assert tpr["upper"] == pytest.approx(0.0022884, rel=5e-3)


def test_risk_table_names_the_model_and_plain_prints_safe_values():
    result = runner.invoke(app, ["risk", "--batch-size", "600", "--dataset-size", "60000",
                                 "--sigma", "4", "--steps", "1000", "--sampling", "fixed"])
    assert result.exit_code == 0, result.output
    assert "Model: fixed-size batches" in result.output and "safe value" in result.output
    plain = runner.invoke(app, ["risk", *RUN, "--format", "plain"])
    values = [float(line) for line in plain.stdout.split()]
    exact = _json("risk", *RUN)["results"]
    assert len(values) == len(exact)
    for shown, record in zip(values, exact):
        assert shown >= record["upper"]  # rounded up


@pytest.mark.parametrize("args,flag", [(["--fpr", "0"], "--fpr"), (["--fpr", "1e-3,x"], "--fpr"),
                                      (["--prior", "1"], "--prior"),
                                      (["--baseline", "2"], "--baseline")])
def test_risk_bad_input_is_one_line_and_exit_2(capsys, args, flag):
    code, _, err = run_main(capsys, "risk", *RUN, *args)
    assert code == 2
    assert err.count("\n") == 1 and flag in err


def test_risk_plot_writes_the_tradeoff_curve(tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "curve.png"
    result = runner.invoke(app, ["risk", *RUN, "--plot", str(target), "--log-axes"])
    assert result.exit_code == 0, result.output
    assert target.stat().st_size > 10_000


def test_sigma_for_a_risk_target(capsys):
    payload = _json("sigma", "--max-tpr", "0.01", "--at-fpr", "1e-3", "--q", "0.01",
                    "--steps", "1000")
    (record,) = payload["results"]
    assert record["tpr"] <= 0.01 and record["tpr_lower"] <= record["tpr"]
    assert record["advantage_lower"] <= record["advantage"]
    assert record["sigma"] == pytest.approx(0.7534, rel=2e-3)
    for args in (["--max-tpr", "0.01"], ["--max-tpr", "0.001", "--at-fpr", "0.001"],
                 ["--max-advantage", "0.1", "--epsilon", "1"],
                 ["--max-advantage", "0.1", "-a", "rdp"]):
        code, _, err = run_main(capsys, "sigma", *args, "--q", "0.01", "--steps", "1000")
        assert code == 2 and err.count("\n") == 1


def test_delta_reports_pb_bounds_and_other_accountants():
    payload = _json("delta", "--epsilon", "1", *RUN, "-a", "pb,rdp,gdp")
    by_name = {record["accountant"]: record for record in payload["results"]}
    pb = by_name["pb"]
    assert pb["delta"] == pb["delta_upper"] >= pb["delta_lower"] > 0
    assert pb["delta"] == pytest.approx(4.2533e-6, rel=5e-3)
    assert by_name["rdp"]["delta"] >= pb["delta_lower"]
    assert by_name["gdp"]["kind"] == "approximation" and by_name["gdp"]["delta_upper"] is None
    replace = _json("delta", "--epsilon", "1", *RUN, "--adjacency", "replace-one", "-a", "gdp")
    assert replace["results"][0]["delta"] is None and replace["results"][0]["notes"]


def test_delta_needs_epsilon(capsys):
    code, _, err = run_main(capsys, "delta", *RUN)
    assert code == 2 and "--epsilon" in err


REPORT = ["report", "--batch-size", "256", "--dataset-size", "60000", "--sigma", "1.1",
          "--epochs", "60"]


def test_report_is_deterministic_markdown_with_every_section():
    first = runner.invoke(app, REPORT)
    second = runner.invoke(app, REPORT)
    assert first.exit_code == 0, first.output
    assert first.stdout == second.stdout
    text = first.stdout
    for line in ("# Differential privacy statement", "## Model of the guarantee",
                 "- Unit of privacy: one training example (example-level DP).",
                 "T = ⌈epochs·N/B⌉ = ⌈60·60000/256⌉ = 14063 steps",
                 "δ = 1e-05 < 1/N = 1.67e-05 (N = 60000): δ passes the 1/N check.",
                 "- Membership inference at FPR 0.001: TPR ≤", "**Shuffling is not Poisson",
                 "**Hyper-parameter tuning is not covered.**", "**Per-example, not per-user.**"):
        assert line in text
    payload = _json(*REPORT)
    (record,) = payload["results"]
    assert record["markdown"] == text
    assert record["epsilon_lower"] <= record["epsilon"] == record["epsilon_upper"]
    assert [r["measure"] for r in record["risk"]][0] == "tpr"


def test_report_warns_when_delta_is_not_below_one_over_n():
    result = runner.invoke(app, ["report", "--batch-size", "10", "--dataset-size", "1000",
                                 "--sigma", "2", "--steps", "100", "--delta", "1e-3",
                                 "--sampling", "fixed", "--adjacency", "replace-one"])
    assert result.exit_code == 0, result.output
    assert "**Warning: δ = 0.001 ≥ 1/N = 0.001.**" in result.stdout
    assert "replace-one — two training sets of the same size" in result.stdout
    assert "**Shuffling is not independent fixed-size sampling.**" in result.stdout
    plain = runner.invoke(app, ["report", *RUN, "--format", "plain"])
    assert float(plain.stdout) == pytest.approx(0.947, rel=5e-3)
