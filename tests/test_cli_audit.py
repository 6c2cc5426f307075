"""`dpcalc simulate --audit` / `--audit-runs`: the JSON "audit" block, the table, reproducibility
and bad input (one line naming the flag, exit 2)."""
from __future__ import annotations

import json

import pytest

from dpcalc.cli.app import main
from tests.audit_oracles import independent_ceiling

# 800 training examples, 20 features, 10 classes (210 parameters), q = 0.5, 4 steps.
SMALL = ["simulate", "--samples", "1000", "--features", "20", "--classes", "10",
         "--batch-size", "400", "--epochs", "2"]
AUDIT_KEYS = {"mode", "canary", "epsilon_lower", "confidence", "delta", "certified_epsilon_lower",
              "certified_epsilon_upper", "consistent", "verdict", "q", "sigma", "steps",
              "canaries", "canaries_included", "runs", "guesses", "correct_guesses",
              "true_positives", "positives", "false_positives", "negatives", "threshold",
              "threshold_rule", "method", "sampling", "adjacency", "poisson_epsilon",
              "exceeds_poisson", "threat_model", "ceiling_epsilon", "guesses_in", "guesses_out",
              "guess_rule"}


def _run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as stop:
        main(list(args))
        raise SystemExit(0)
    captured = capsys.readouterr()
    return stop.value.code or 0, captured.out, captured.err


def _json(capsys, *args: str) -> dict:
    code, out, err = _run(capsys, *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_one_run_audit_json_block_and_reproducibility(capsys):
    args = [*SMALL, "--sigma", "0.5", "--audit", "--canaries", "200", "--seed", "4"]
    payload = _json(capsys, *args)
    audit, final = payload["audit"], payload["final"]
    assert set(audit) == AUDIT_KEYS
    assert (audit["mode"], audit["canary"], audit["canaries"], audit["runs"]) == (
        "one-run", "gradient", 200, 1)
    assert audit["certified_epsilon_upper"] == final["epsilon"]
    assert audit["certified_epsilon_lower"] == final["epsilon_lower"]
    assert (audit["q"], audit["steps"], audit["delta"], audit["confidence"]) == (0.5, 4, 1e-5,
                                                                                 0.95)
    assert 0 <= audit["epsilon_lower"] <= audit["certified_epsilon_upper"]
    assert audit["consistent"] is True and audit["verdict"].startswith("consistent")
    assert audit["true_positives"] is None and audit["guesses"] >= 1
    assert audit["guesses"] == audit["guesses_in"] + audit["guesses_out"]
    assert audit["threat_model"] == "all-iterates"
    assert audit["epsilon_lower"] <= audit["ceiling_epsilon"]
    assert audit["guess_rule"].startswith("counts fixed before training on 200 simulated audits")
    # the printed ceiling is the theorem's bound for these counts, solved independently
    assert audit["ceiling_epsilon"] == pytest.approx(independent_ceiling(
        200, audit["guesses"], 1e-5, 0.05), abs=1e-8)
    assert (audit["sampling"], audit["adjacency"]) == ("poisson", "add-remove")
    assert audit["poisson_epsilon"] is None and audit["exceeds_poisson"] is None
    assert _json(capsys, *args)["audit"] == audit  # --seed: the same audit, bit for bit


def test_monte_carlo_audit_json_block_has_the_same_keys(capsys):
    payload = _json(capsys, *SMALL, "--sigma", "0.7", "--audit-runs", "40", "--canary", "input")
    audit = payload["audit"]
    assert set(audit) == AUDIT_KEYS
    assert (audit["mode"], audit["canary"], audit["runs"], audit["canaries"]) == (
        "monte-carlo", "input", 40, 1)
    assert audit["positives"] + audit["negatives"] == 20  # half the runs calibrate the threshold
    assert audit["threat_model"] == "last-model" and audit["guesses_in"] is None
    assert audit["epsilon_lower"] <= audit["ceiling_epsilon"]
    assert audit["epsilon_lower"] <= audit["certified_epsilon_upper"]
    assert _json(capsys, *SMALL, "--sigma", "0.7")["audit"] is None


def test_table_shows_the_interval_and_the_verdict(capsys):
    code, out, _ = _run(capsys, *SMALL, "--sigma", "0.5", "--audit", "--canary", "input",
                        "--canaries", "100")
    assert code == 0
    assert "Audit: one run, 50 input canaries, last model, δ = 1e-05" in out
    assert "empirical ε ≥ (95%)" in out and "certified ε ≤ (pb)" in out and "ceiling" in out
    assert "threat model: last model only (the final weights)" in out
    assert "counts chosen on 50 calibration canaries (not audited)" in out
    assert "verdict: consistent" in out


def test_one_run_table_shows_the_ceiling_and_the_threat_model(capsys):
    code, out, _ = _run(capsys, *SMALL, "--sigma", "0.5", "--audit", "--canaries", "300",
                        "--audit-threat-model", "last-model", "--seed", "1")
    assert code == 0
    assert "Audit: one run, 300 Dirac gradient canaries, last model, δ = 1e-05" in out
    assert "threat model: last model only" in out
    assert "ceiling: the bound if all" in out and "the most 300 canaries guessed" in out
    assert "canary i writes C on the weight of extra input column i" in out


@pytest.mark.parametrize("args,needle", [
    (["--audit-runs", "5"], "--audit-runs must be a whole number from 20 to 100000"),
    (["--audit", "--canaries", "1"], "--canaries must be a whole number from 2"),
    (["--audit", "--audit-confidence", "1.5"], "--audit-confidence"),
    (["--canaries", "10"], "give --audit too"),
    (["--canary", "input"], "give --audit or --audit-runs too"),
    (["--audit-threat-model", "last-model"], "give --audit or --audit-runs too"),
    (["--audit", "--audit-threat-model", "glass"], "glass"),
    (["--audit", "--canary", "input", "--audit-threat-model", "all-iterates"],
     "--canary input is scored on the last model only"),
    (["--audit-runs", "40", "--canaries", "10"], "--canaries"),
    (["--audit", "--canaries", "100001"], "--canaries must be a whole number from 2 to 100000"),
    (["--audit", "--sampling", "fixed"], "--audit needs --sampling poisson"),
    (["--audit", "--adjacency", "replace-one"], "--adjacency add-remove"),
    (["--audit", "--sampling", "shuffle"], "--sampling shuffle with --adjacency zero-out or "
                                           "replace-one; got --sampling shuffle --adjacency "
                                           "add-remove"),
    (["--audit-runs", "40", "--sampling", "shuffle", "--adjacency", "zero-out", "--canary",
      "input"], "--sampling shuffle audits need --canary gradient"),
    (["--audit", "--sampling", "shuffle", "--adjacency", "zero-out", "--audit-threat-model",
      "last-model"], "shuffled audits read every iterate"),
])
def test_bad_audit_options_exit_2_with_one_line(capsys, args, needle):
    code, out, err = _run(capsys, *SMALL, *args)
    lines = err.strip().splitlines()
    assert code == 2 and out == ""
    assert len(lines) == 1 and lines[0].startswith("dpcalc: error: ") and needle in lines[0]


# 800 training examples in batches of 80: b = 10 shuffled batches, one epoch.
SHUFFLED = ["simulate", "--samples", "1000", "--features", "20", "--classes", "10",
            "--batch-size", "80", "--epochs", "1", "--sampling", "shuffle", "--sigma", "1",
            "--delta", "0.01", "--seed", "2"]


def test_shuffled_monte_carlo_audit_json_shows_the_poisson_figure(capsys):
    payload = _json(capsys, *SHUFFLED, "--adjacency", "zero-out", "--audit-runs", "200")
    audit, final = payload["audit"], payload["final"]
    assert set(audit) == AUDIT_KEYS
    assert (audit["sampling"], audit["adjacency"], audit["steps"], audit["q"]) == (
        "shuffle", "zero-out", 10, 0.1)
    # the audited model is the run's: pb's shuffle bounds, and its Poisson figure beside them
    assert audit["certified_epsilon_upper"] == final["epsilon"]
    assert audit["poisson_epsilon"] == pytest.approx(0.887, abs=2e-3)
    assert audit["exceeds_poisson"] == (audit["epsilon_lower"] > audit["poisson_epsilon"])
    assert audit["epsilon_lower"] <= audit["certified_epsilon_upper"]
    assert "shuffle pair, shifts 2 and 1" in audit["threshold_rule"]


def test_shuffled_one_run_audit_places_canaries_and_says_so(capsys):
    code, out, _ = _run(capsys, *SHUFFLED, "--adjacency", "replace-one", "--audit",
                        "--canaries", "100")
    assert code == 0
    assert "Audit: one run, 100 Dirac gradient canaries, all iterates" in out
    assert "Poisson figure ε ≤" in out and "take slots in the" in out


def test_the_monte_carlo_refusal_names_the_limit_and_the_ways_out(capsys):
    """Past 200 000 DP-SGD steps in all (--max-audit-steps) the audit is refused before
    training, in one line saying how to raise the limit; past 1e7 it cannot be raised."""
    code, out, err = _run(capsys, *SMALL, "--audit-runs", "100000")
    assert code == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and line.startswith("dpcalc: error: --audit-runs 100000 needs 100000 "
                                                "runs x 4 steps = 400000 DP-SGD steps; a "
                                                "Monte Carlo audit runs at most 200000 (about 1-4.3 min)")
    assert line.endswith("give --audit-runs 50000 or fewer, fewer --epochs, the one-run audit "
                         "(--audit), or --max-audit-steps 400000 to run it")
    code, out, err = _run(capsys, *SMALL[:-2], "--epochs", "60", "--audit-runs", "100000",
                          "--max-audit-steps", "10000000")
    assert code == 2 and out == ""
    assert "12000000 DP-SGD steps; a Monte Carlo audit runs at most 10000000" in err
    assert err.strip().endswith("(--max-audit-steps raises the limit up to 10000000)")


def test_max_audit_steps_lowers_or_raises_the_limit_and_needs_audit_runs(capsys):
    code, _, err = _run(capsys, *SMALL, "--audit-runs", "20", "--max-audit-steps", "79")
    assert code == 2 and "20 runs x 4 steps = 80 DP-SGD steps; a Monte Carlo audit runs at most 79" in err
    code, out, err = _run(capsys, *SMALL, "--audit-runs", "20", "--max-audit-steps", "80",
                          "--format", "json")
    assert code == 0, err
    assert json.loads(out)["audit"]["runs"] == 20
    code, _, err = _run(capsys, *SMALL, "--max-audit-steps", "100")
    assert code == 2 and "--max-audit-steps limits a Monte Carlo audit; give --audit-runs too" in err


def test_run_clock_says_once_how_long_the_rest_takes():
    """Fake clock: nothing before 2 s; at 2.5 s after 50 of 1000 runs, about 48 s left (once);
    a short audit says nothing."""
    from dpcalc.cli.simulate.audit import RunClock, duration

    now, said = [0.0], []
    clock = RunClock(1000, said.append, clock=lambda: now[0])
    now[0] = 1.0
    clock.run_done(20)
    assert said == []
    now[0] = 2.5
    clock.run_done(50)
    now[0] = 3.0
    clock.run_done(60)
    assert said == ["audit: 50 of 1000 runs in 2 s; about 48 s left (50.0 ms per run)"]
    quick, short = RunClock(100, said.append, clock=lambda: now[0]), len(said)
    now[0] += 2.5
    quick.run_done(90)  # 0.3 s left
    assert len(said) == short
    assert [duration(x) for x in (45, 200, 3900)] == ["45 s", "3 min 20 s", "1 h 05 min"]
