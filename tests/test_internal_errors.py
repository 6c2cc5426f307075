"""Never wrong, never stuck (issue 30 §2 and §5), through the real entry point.

An internal error is exit 70 (EX_SOFTWARE) with one line on stderr saying where to report
it — never 1 (the budget gate's code), never a traceback unless --debug or DPCALC_DEBUG=1
asks for one. An accountant that fails inside is a row of kind "error": never a number,
never certified, never a plain n/a. Failures are injected by monkeypatching inside a
subprocess (INJECT below), so the real main() and the real streams are exercised."""
from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from dpcalc.cli.app import INTERNAL_ERROR, main

RUN = ["--q", "0.01", "--sigma", "4", "--steps", "100"]

# Runs main() after replacing attributes by a function that raises: argv[1] names them
# ("module:Class.attribute,Class.other" or "module:function"), argv[2:] are dpcalc's arguments.
INJECT = textwrap.dedent("""
    import importlib, sys
    target, args = sys.argv[1], sys.argv[2:]
    module_name, path = target.split(":")
    def broken(*args, **kwargs):
        raise ZeroDivisionError("injected failure")
    for each in path.split(","):
        owner = importlib.import_module(module_name)
        *parents, name = each.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        setattr(owner, name, broken)
    from dpcalc.cli.app import main
    sys.argv = ["dpcalc", *args]
    main()
""")
PB = "dpcalc.accountants.pb:PrivacyBucketsAccountant"


def run(*args, env=None, inject=None, timeout=300, encoding="utf-8", **kwargs):
    """dpcalc in a subprocess (``inject``: the attribute to break first)."""
    command = ([sys.executable, "-c", INJECT, inject] if inject else
               [sys.executable, "-m", "dpcalc"])
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("DPCALC_DEBUG", "PYTHONIOENCODING", "MPLBACKEND")}
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout,
                          env={**environment, **(env or {})}, encoding=encoding, **kwargs)


def one_internal_error_line(completed, what: str) -> str:
    assert completed.returncode == INTERNAL_ERROR == 70, completed.stderr
    lines = completed.stderr.splitlines()
    assert "Traceback" not in completed.stderr, completed.stderr
    line = lines[-1]
    assert line.startswith("dpcalc: internal error: ") and what in line, line
    assert "report it" in line and "--debug" in line and "DPCALC_DEBUG=1" in line
    return line


# --- the internal-error exit code ------------------------------------------------------------
def test_a_crash_is_exit_70_and_one_line_naming_where_to_report_it():
    crashed = run("epsilon", *RUN, inject="dpcalc.cli.epsilon:epsilon_results")
    line = one_internal_error_line(crashed, "ZeroDivisionError: injected failure")
    assert crashed.stderr.count("\n") == 1 and crashed.stdout == ""
    assert "not in your input" in line


@pytest.mark.parametrize("how", [{"args": ["--debug"]}, {"env": {"DPCALC_DEBUG": "1"}},
                                 {"first": ["--debug"]}], ids=["--debug", "DPCALC_DEBUG=1",
                                                               "dpcalc --debug epsilon"])
def test_debug_shows_the_traceback(how):
    args = [*how.get("first", []), "epsilon", *RUN, *how.get("args", [])]
    crashed = run(*args, env=how.get("env"), inject="dpcalc.cli.epsilon:epsilon_results")
    assert crashed.returncode == INTERNAL_ERROR, crashed.stderr
    assert "Traceback (most recent call last)" in crashed.stderr
    assert "\nZeroDivisionError: injected failure\n" in crashed.stderr  # the traceback's last line
    assert crashed.stderr.splitlines()[-1].startswith("dpcalc: internal error: ")


def test_debug_off_values_of_the_variable_show_no_traceback():
    crashed = run("epsilon", *RUN, env={"DPCALC_DEBUG": "0"},
                  inject="dpcalc.cli.epsilon:epsilon_results")
    one_internal_error_line(crashed, "injected failure")


def test_exit_codes_are_documented_in_help_and_readme():
    helped = run("--help")
    assert helped.returncode == 0
    text = " ".join(helped.stdout.split())
    assert "70 internal error" in text and "--debug" in text and "DPCALC_DEBUG=1" in text
    # the words, without the help panel's borders (a phrase may wrap across them)
    command_help = " ".join(run("epsilon", "--help").stdout.replace("│", " ").split())
    assert "--debug" in command_help and "exit 70" in command_help
    from pathlib import Path

    page = (Path(__file__).parent.parent / "docs" / "numbers.md").read_text(encoding="utf-8")
    assert "70" in page and "DPCALC_DEBUG=1" in page and "--debug" in page


def test_main_in_process_maps_a_crash_to_70(monkeypatch, capsys):
    import dpcalc.cli.epsilon as command

    monkeypatch.delenv("DPCALC_DEBUG", raising=False)
    monkeypatch.setattr(command, "epsilon_results",
                        lambda *args, **kwargs: [][0])  # an IndexError deep inside
    with pytest.raises(SystemExit) as stop:
        main(["epsilon", *RUN])
    err = capsys.readouterr().err
    assert stop.value.code == INTERNAL_ERROR
    assert err.count("\n") == 1 and "IndexError" in err and "Traceback" not in err


# --- an accountant that fails inside ----------------------------------------------------------
def test_the_answers_accountant_failing_is_an_error_row_and_exit_70():
    table = run("epsilon", *RUN, inject=f"{PB}._epsilon")
    line = one_internal_error_line(table, "accountant pb failed inside: ZeroDivisionError")
    assert "│ pb " in table.stdout and "error" in table.stdout and "certified" not in line
    row = next(row for row in table.stdout.splitlines() if "│ pb " in row)
    assert "n/a" not in row and "certified" not in row and row.count("error") == 2
    as_json = run("epsilon", *RUN, "-f", "json", inject=f"{PB}._epsilon")
    assert as_json.returncode == INTERNAL_ERROR
    (record,) = json.loads(as_json.stdout)["results"]
    assert record["kind"] == "error" and record["certified"] is False
    assert record["epsilon"] is None and record["epsilon_upper"] is None
    assert record["notes"] == ["internal error: ZeroDivisionError: injected failure"]
    plain = run("epsilon", *RUN, "-f", "plain", inject=f"{PB}._epsilon")
    assert plain.returncode == INTERNAL_ERROR and plain.stdout == "error\n"


def test_a_budget_gate_on_a_failed_accountant_is_70_not_1():
    gated = run("epsilon", *RUN, "--max-epsilon", "1", inject=f"{PB}._epsilon")
    one_internal_error_line(gated, "accountant pb failed inside")


def test_another_accountant_failing_is_its_row_and_a_warning():
    both = run("epsilon", *RUN, "-a", "rdp,pb", "-f", "plain", inject=f"{PB}._epsilon")
    assert both.returncode == 0, both.stderr
    rdp, pb = both.stdout.split()
    assert float(rdp) > 0 and pb == "error"
    assert both.stderr.count("\n") == 1 and both.stderr.startswith("warning: pb failed inside")


@pytest.mark.parametrize("argv", [
    ["delta", "--epsilon", "1", *RUN],
    ["compare", *RUN, "-a", "pb,rdp"],
    ["compare", "--q", "0.01", "--sigma", "4", "--steps", "100,200", "-a", "pb,rdp"],
    ["compare", "--q", "0.01", "--sigma", "4", "--steps", "100,200", "-a", "pb,rdp", "-f", "csv"],
    ["sigma", "--epsilon", "2", "--q", "0.01", "--steps", "100", "-a", "pb,rdp"],
    ["report", *RUN],
    ["risk", *RUN],
])
def test_every_command_reports_its_failed_answer_as_70(argv):
    """pb is the answer of each; it fails inside (every entry point pb has)."""
    target = {"delta": f"{PB}.delta_bounds", "sigma": "dpcalc.calibration.dpsgd:dpsgd_sigma",
              "risk": "dpcalc.risk.bounds:risk_bounds"}.get(argv[0], f"{PB}._epsilon")
    if argv[0] == "compare" and "100,200" in argv:  # one curve, else point by point
        target = f"{PB}._epsilon_curve,PrivacyBucketsAccountant._epsilon"
    if argv[0] == "sigma":
        target = "dpcalc.cli.sigma:dpsgd_sigma"
    failed = run(*argv, inject=target)
    assert failed.returncode == INTERNAL_ERROR, (argv, failed.stderr)
    assert "Traceback" not in failed.stderr
    assert failed.stderr.splitlines()[-1].startswith("dpcalc: internal error: ")
    if argv[0] in ("compare",) and "-f" not in argv:
        assert "error" in failed.stdout


# --- §2: the cases the robustness run found ---------------------------------------------------
@pytest.mark.deep  # an oracle sweep (CI: python -m pytest -m deep)
def test_a_huge_epsilon_is_a_number_not_na():
    """q = 0.001, σ = 0.05, 1e8 steps: the tilted pass's float-error bound overflowed
    (OverflowError, printed as a certified n/a). Oracle: the bounds bracket each other and
    sit below rdp's certified upper bound (an independent accountant); the ~1e5 included
    steps each lose about (1 − 2·0)/(2σ²)·… ≈ 190 nats, so ε is of order 1e7."""
    completed = run("epsilon", "--q", "0.001", "--sigma", "0.05", "--steps", "100000000",
                    "-a", "pb,rdp", "-f", "json")
    assert completed.returncode == 0, completed.stderr
    pb, rdp = json.loads(completed.stdout)["results"]
    assert pb["kind"] == "certified upper bound"
    assert not any(note.startswith(("failed", "internal error")) for note in pb["notes"])
    assert 1e6 < pb["epsilon_lower"] <= pb["epsilon"] <= rdp["epsilon"]
    report = run("report", "--q", "0.001", "--sigma", "0.05", "--steps", "100000000")
    assert report.returncode == 0 and "Traceback" not in report.stderr


def test_the_sigma_cases():
    tiny = run("sigma", "-e", "1e-300", "--delta", "0.999", "-f", "plain")
    assert tiny.returncode == 0, tiny.stderr
    analytic, classic = map(float, tiny.stdout.split())
    from scipy.special import erfinv  # σ at ε ≈ 0: δ(0) = erf(1/(2√2 σ)) = δ

    exact = 1 / (2 * math.sqrt(2) * erfinv(0.999))
    assert exact <= analytic <= exact * (1 + 1e-5)  # printed to 6 digits, rounded up
    assert classic > analytic
    beyond = run("sigma", "-e", "1e300", "--sensitivity", "1e-300")
    assert beyond.returncode == 2 and beyond.stderr.count("\n") == 1
    assert beyond.stderr.startswith("dpcalc: error: ") and "--sensitivity" in beyond.stderr


def _table_numbers(text: str, rule: str) -> list[str]:
    """The numbers in the table rows (lines holding the column rule ``rule``)."""
    rows = [line for line in text.splitlines() if rule in line]
    return re.findall(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?", "\n".join(rows))


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
@pytest.mark.parametrize("argv", [
    ["epsilon", *RUN, "-a", "all"],
    ["delta", "--epsilon", "1", *RUN],
    ["compare", "--q", "0.01", "--sigma", "4", "--steps", "100,200", "-a", "pb,rdp"],
    ["sigma", "--epsilon", "1"],
    ["risk", *RUN],
    ["epsilon", "--help"],
])
def test_a_narrow_encoding_gets_ascii_stand_ins_and_the_same_numbers(encoding, argv):
    wide = run(*argv, env={"COLUMNS": "200"})
    narrow = run(*argv, env={"PYTHONIOENCODING": encoding, "COLUMNS": "200"}, encoding=encoding)
    assert narrow.returncode == wide.returncode == 0, narrow.stderr
    assert "Traceback" not in narrow.stderr
    if argv[-1] == "--help":
        return
    narrow.stdout.encode("ascii")  # tables: every glyph has an ASCII stand-in
    numbers = _table_numbers(narrow.stdout, "|")
    assert numbers and numbers == _table_numbers(wide.stdout, "│")
    if argv[0] == "epsilon":
        assert "eps" in narrow.stdout and "delta = 1e-05" in narrow.stdout


def test_glyph_stand_ins():
    from dpcalc.cli.output.glyphs import to_ascii

    assert to_ascii("ε ≤ 1.2 · σ² — δ = 1e-05 … ┃━┓ ∞") == "eps <= 1.2 * sigma^2 -- delta = 1e-05 ... |-+ inf"
    assert to_ascii("0.947001") == "0.947001"


@pytest.mark.parametrize("redirect, code, warned", [
    (">&-", 0, True), ("--max-epsilon 0.01 >&-", 1, True), (">&- 2>&-", 0, False)])
def test_a_closed_stdout_is_not_a_crash(redirect, code, warned):
    completed = subprocess.run(
        f"{sys.executable} -m dpcalc epsilon {' '.join(RUN)} {redirect}", shell=True,
        capture_output=False, stderr=subprocess.PIPE, text=True, executable="/bin/bash",
        env={k: v for k, v in os.environ.items() if k != "DPCALC_DEBUG"})
    assert completed.returncode == code, completed.stderr
    assert "Traceback" not in completed.stderr
    assert ("stdout is closed" in completed.stderr) == warned


def test_an_invalid_mplbackend_does_not_stop_a_plot(tmp_path):
    target = tmp_path / "sweep.png"
    completed = run("compare", "--q", "0.01", "--sigma", "4", "--steps", "10,100", "-a", "rdp",
                    "--plot", str(target), "-f", "plain", env={"MPLBACKEND": "bogus"})
    assert completed.returncode == 0, completed.stderr
    assert target.stat().st_size > 1000 and "Traceback" not in completed.stderr


# --- §5 ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["epsilon", "--q", "5e-324", "--sigma", "1", "--steps", "100", "-a", "all"],
    ["compare", "--q", "5e-324", "--sigma", "1", "--steps", "100"],
    ["delta", "--epsilon", "1", "--q", "5e-324", "--sigma", "1", "--steps", "100", "-a", "all"],
    ["risk", "--q", "5e-324", "--sigma", "1", "--steps", "100"],
    ["report", "--q", "5e-324", "--sigma", "1", "--steps", "100"],
    ["sigma", "--epsilon", "1", "--q", "5e-324", "--steps", "100", "-a", "all"],
])
def test_a_subnormal_q_prints_no_runtime_warnings(argv):
    """Warnings become errors here: any RuntimeWarning would be an internal error (70)."""
    completed = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", "dpcalc",
                                *argv, "-f", "plain"], capture_output=True, text=True,
                               timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert "Warning" not in completed.stderr and "error" not in completed.stdout


def test_abadi_at_a_subnormal_q_answers():
    """1/(qσ) overflowed (OverflowError, an 'error' row now); λ's range is taken in logs."""
    import dpcalc

    result = dpcalc.get_accountant("abadi").epsilon(dpcalc.Schedule.single(5e-324, 1.0, 100), 1e-5)
    assert result.epsilon is not None and not result.failed and result.epsilon > 0


def test_simulate_k_for_a_sampler_without_a_group_pair_is_one_line():
    completed = run("simulate", "--sampling", "shuffle", "--adjacency", "add-remove", "--k", "3",
                    "--samples", "60", "--features", "2", "--classes", "2", "--epochs", "1",
                    "--batch-size", "20")
    assert completed.returncode == 2 and completed.stdout == ""
    assert completed.stderr.count("\n") == 1, completed.stderr
    assert completed.stderr.startswith("dpcalc: error: --k (group privacy) needs --sampling")


@pytest.mark.deep  # an oracle sweep (CI: python -m pytest -m deep)
def test_group_pb_at_a_tiny_delta_is_finite_and_equals_epsilon():
    """δ = 1e-300: pb's own composition cannot certify (float round-off): its upper bound was
    a bare inf in `group` while `epsilon` reports rdp's certified bound. Both now report the
    tightest certificate in hand, digit for digit at k = 1."""
    common = ["--batch-size", "256", "--dataset-size", "60000", "--sigma", "1.1", "--steps",
              "1000", "--delta", "1e-300", "-f", "json"]
    group = run("group", "--k", "1,2", "-m", "pb", *common)
    epsilon = run("epsilon", *common)
    assert group.returncode == epsilon.returncode == 0, group.stderr
    one, two = json.loads(group.stdout)["results"]
    (single,) = json.loads(epsilon.stdout)["results"]
    assert one["epsilon"] == single["epsilon"] and math.isfinite(one["epsilon"])
    assert one["details"]["upper_source"] == "rdp"
    assert one["epsilon_lower"] <= one["epsilon"] <= two["epsilon"] < math.inf


@pytest.mark.parametrize("argv, option", [
    (["compare", "--q", "0.01", "--sigma", "4", "--steps", "10,100", "-a", "rdp"],
     ["--x-scale", "log"]),
    (["risk", *RUN], ["--log-axes"]),
    (["group", "--k", "2", "--batch-size", "10", "--dataset-size", "1000", "--sigma", "2",
      "--steps", "50", "-m", "rdp-overapprox"], ["--plot-kind", "k"]),
])
def test_plot_options_without_plot_warn(argv, option):
    plain = run(*argv, "-f", "plain")
    warned = run(*argv, *option, "-f", "plain")
    assert warned.returncode == plain.returncode == 0
    assert warned.stdout == plain.stdout and plain.stderr == ""
    assert warned.stderr == (f"warning: {option[0]} only shapes the --plot figure; it is "
                             "ignored without --plot\n")


@pytest.mark.parametrize("argv", [
    ["compare", "--q", "0.01", "--sigma", "4", "--steps", "10,100", "-a", "rdp"],
    ["risk", *RUN],
    ["group", "--k", "2", "--batch-size", "10", "--dataset-size", "1000", "--sigma", "2",
     "--steps", "50"],
    ["group", "--k", "2", "--batch-size", "10", "--dataset-size", "1000", "--sigma", "2",
     "--steps", "50", "--plot-kind", "all"],
])
def test_an_unwritable_plot_path_is_refused_before_computing(monkeypatch, capsys, argv):
    """/proc takes no new files, even from root (os.access says it may): the write is tried
    first. The accounting entry points are broken here: reaching one would fail the test."""
    import dpcalc.accountants.base as base
    import dpcalc.risk.bounds as risk

    def never(*args, **kwargs):
        raise AssertionError("computed before checking --plot")

    monkeypatch.setattr(base.Accountant, "epsilon_curve", never)
    monkeypatch.setattr(base.Accountant, "epsilon", never)
    monkeypatch.setattr(risk, "risk_bounds", never)
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--plot", "/proc/dpcalc-test.png"])
    err = capsys.readouterr().err
    assert stop.value.code == 2, err
    assert err.startswith("dpcalc: error: --plot FILE cannot be written") and err.count("\n") == 1


def test_a_plot_path_checked_first_is_left_as_it_was(tmp_path):
    from dpcalc.cli.output.plots import check_plot_path

    fresh = tmp_path / "new.png"
    check_plot_path(str(fresh))
    assert not fresh.exists()
    kept = tmp_path / "old.png"
    kept.write_bytes(b"figure")
    check_plot_path(str(kept))
    assert kept.read_bytes() == b"figure"


# --- Ctrl-C with the pool ---------------------------------------------------------------------
def _slow(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_aborting_a_pool_stops_its_workers_at_once(monkeypatch):
    from dpcalc.cli import parallel

    monkeypatch.setattr(parallel, "_cores", lambda: 2)
    seen = {}
    with pytest.raises(KeyboardInterrupt):
        with parallel.points_map(min_items=2) as map_points:
            answers = map_points(_slow, [30.0] * 4)
            seen["processes"] = list(map_points._executor._processes.values())
            assert seen["processes"]
            raise KeyboardInterrupt  # as Ctrl-C would, while the workers are busy
    # close(abort=True) terminated and joined them: none is left to finish its 30 s point
    assert all(not process.is_alive() for process in seen["processes"])
    del answers


@pytest.mark.skipif(not hasattr(os, "killpg") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs process groups and two cores (a pool)")
def test_ctrl_c_during_a_pooled_sweep_leaves_nothing_behind():
    """SIGINT to the whole foreground group, as a terminal sends it: exit 130, no traceback
    from the workers or the fork server, and no process of the group outlives dpcalc."""
    process = subprocess.Popen(
        [sys.executable, "-m", "dpcalc", "compare", "--q", "0.01", "--sigma", "0.5:2:16",
         "--steps", "2000000", "-a", "pb", "-f", "plain"], start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    group = os.getpgid(process.pid)

    def members() -> list[int]:
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group and fields[0] != "Z":
                found.append(int(pid))
        return found

    deadline = time.monotonic() + 60
    while len(members()) < 4 and time.monotonic() < deadline:  # dpcalc, server, workers
        time.sleep(0.05)
    time.sleep(0.5)
    os.killpg(group, signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    deadline = time.monotonic() + 5
    while members() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert members() == []


def test_a_nan_computed_inside_is_an_internal_error_not_bad_input():
    """EpsilonResult refuses NaN with InvalidResult, a DpcalcError for library users; in the
    CLI every result is dpcalc's own, so it is a bug: an error row and exit 70, not exit 2."""
    code = textwrap.dedent("""
        import sys
        from dpcalc.accountants.rdp_accountants import RdpAccountant
        from dpcalc.accountants.result import EpsilonResult
        RdpAccountant._epsilon = lambda self, schedule, delta: EpsilonResult("rdp", float("nan"), True)
        from dpcalc.cli.app import main
        sys.argv = ["dpcalc", *sys.argv[1:]]
        main()
    """)
    completed = subprocess.run([sys.executable, "-c", code, "epsilon", *RUN, "-a", "rdp", "-f",
                                "plain"], capture_output=True, text=True, timeout=120)
    line = one_internal_error_line(completed, "accountant rdp failed inside: InvalidResult")
    assert completed.stdout == "error\n" and "got nan" in line


def test_a_split_pass_whose_tilt_overflows_is_skipped_not_a_crash():
    """bench_slowest seed 1: `sigma --q 1.22e-08 --steps 3114294 --epsilon 533 --delta 2.5e-06`
    exited 70 (the split pass aimed with a saddle tilt θ ≈ 6.7e7: its body moments were NaN).
    The pass is now not tried there; the other passes' bounds stay certified."""
    from dpcalc import Schedule
    from dpcalc.accountants.pb import PrivacyBucketsAccountant

    schedule = Schedule.single(1.22e-08, 0.051319517715279726, 3114294)
    result = PrivacyBucketsAccountant(tolerance=0.1).epsilon(schedule, 2.5e-06)
    assert 0.0 < result.epsilon_lower <= result.epsilon < float("inf")
