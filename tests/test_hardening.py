"""Regressions for every case of the hardening issue: one clean line and exit 2 (or a valid
answer), never a traceback, NaN, silent inf, hang or runaway memory."""
from __future__ import annotations

import math
import os
import zipfile

import numpy as np
import pytest

from dpcalc.cli.app import main
from dpcalc.errors import DpcalcError

pytestmark = pytest.mark.deep  # oracle sweeps: `python -m pytest -m deep` (CI runs them)

MNIST = ["--batch-size", "256", "--dataset-size", "60000"]
TINY = ["--samples", "60", "--features", "2", "--classes", "2", "--epochs", "1", "--batch-size", "20"]


def run(capsys, *argv):
    with pytest.raises(SystemExit) as stop:
        main(list(argv))
    captured = capsys.readouterr()
    return stop.value.code, captured.out, captured.err


def fails(capsys, needle, *argv):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "", (argv, out, err)
    assert err.count("\n") == 1 and err.startswith("dpcalc: error: "), err
    assert "Traceback" not in err and needle in err, err
    return err


# --- steps from absurd epochs --------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["epsilon", "--q", "0.01", "--sigma", "4", "--epochs", "1e308"],
    ["epsilon", "--q", "0.5", "--sigma", "4", "--epochs", "1e300"],
    ["epsilon", "--phase", "q=0.01,sigma=4,epochs=1e308"],
    ["sigma", "--epsilon", "1", "--q", "0.01", "--epochs", "1e308"],
    ["compare", "--q", "0.01", "--sigma", "4", "--epochs", "1e308"],
    ["group", "--k", "2", *MNIST, "--sigma", "1", "--epochs", "1e308"],
    ["simulate", *TINY[:-4], "--batch-size", "20", "--epochs", "1e308"],
])
def test_huge_epochs_are_one_line_naming_the_flag(capsys, argv):
    err = fails(capsys, "epochs", *argv)
    assert "more than 1e9 steps" in err or "must be" in err
    assert len(err) < 300  # no 300-digit step count


# --- files -------------------------------------------------------------------------------
def test_plot_file_name_too_long(capsys, tmp_path):
    fails(capsys, "--plot", "compare", "--q", "0.01", "--sigma", "4", "--steps", "10,20", "-a", "rdp",
          "--plot", str(tmp_path / ("a" * 300 + ".png")))


def test_npz_with_members_that_are_not_arrays(capsys, tmp_path):
    path = tmp_path / "bad.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("X", b"not an array")
        archive.writestr("y", b"nor this")
    fails(capsys, "bad.npz", "simulate", "--data", str(path))


def test_data_naming_a_fifo_is_refused_not_blocking(capsys, tmp_path):
    fifo = tmp_path / "data.csv"
    os.mkfifo(fifo)
    fails(capsys, "not a regular file", "simulate", "--data", str(fifo))


def test_csv_of_huge_values_is_refused_before_training(capsys, tmp_path):
    path = tmp_path / "huge.csv"
    rows = ["a,b,label"] + [f"{1e308 * (i % 2 or -1)},{i},{i % 2}" for i in range(40)]
    path.write_text("\n".join(rows) + "\n")
    fails(capsys, "too large to standardise", "simulate", "--data", str(path), "--epochs", "1")


def test_csv_is_parsed_in_bounded_memory(tmp_path):
    """A CSV is read in chunks: peak memory is the numbers, not Python strings of every cell."""
    import tracemalloc

    from dpcalc.dpsgd import load_dataset

    path = tmp_path / "wide.csv"
    rng = np.random.default_rng(0)
    values = rng.normal(size=(60_000, 10))
    with open(path, "w") as handle:
        handle.write(",".join(f"x{j}" for j in range(10)) + ",label\n")
        for index, row in enumerate(values):
            handle.write(",".join(f"{v:.12f}" for v in row) + f",{index % 3}\n")
    size = os.path.getsize(path)
    tracemalloc.start()
    dataset = load_dataset(str(path))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert dataset.features.shape == (60_000, 10)
    assert peak < 3 * size  # the text is never held whole (all cells as strings: ~16× the file)


# --- absurd sizes are refused before any work --------------------------------------------------
@pytest.mark.parametrize("argv,needle", [
    (["--samples", "1e9"], "--samples"),
    (["--features", "1e5"], "--features"),
    (["--hidden", "1e5"], "--hidden"),
    (["--epochs", "1e6"], "lower --epochs"),
    (["--samples", "1e7", "--features", "2000"], "--samples"),
    (["--hidden", "10000", "--batch-size", "20000", "--samples", "40000"], "--batch-size or --hidden"),
    (["--clip-norm", "1e308"], "--clip-norm"),
    (["--learning-rate", "1e200"], "--learning-rate"),
])
def test_simulate_refuses_runaway_sizes(capsys, argv, needle):
    fails(capsys, needle, "simulate", *argv)


def test_group_bounds_the_work_of_many_k(capsys):
    fails(capsys, "work limit", "group", "--k", "1:64", "--batch-size", "64", "--dataset-size",
          "1000", "--sigma", "1", "--steps", "1e9", "--method", "pb")
    fails(capsys, "work limit", "group", "--k", "4", *MNIST, "--target-epsilon", "0.01",
          "--steps", "1e9")
    code, out, _ = run(capsys, "group", "--k", "1:64", "--batch-size", "64", "--dataset-size",
                       "1000", "--sigma", "1", "--steps", "1e9", "--method", "rdp-overapprox",
                       "-f", "plain")
    assert code == 0 and len(out.split()) == 64


# --- tiny δ ------------------------------------------------------------------------------
def test_tiny_delta_gives_a_finite_certificate_not_a_bare_inf(capsys):
    code, out, _ = run(capsys, "epsilon", "--q", "0.01", "--sigma", "4", "--steps", "1000",
                       "--delta", "1e-300", "-a", "pb,rdp", "-f", "json")
    import json

    pb, rdp = json.loads(out)["results"]
    assert code == 0 and math.isfinite(pb["epsilon"]) and pb["epsilon"] <= rdp["epsilon"]
    assert pb["details"]["upper_source"] == "rdp" and "rdp" in pb["notes"][0]
    code, out, _ = run(capsys, "sigma", "--epsilon", "6", "--q", "0.01", "--steps", "1000",
                       "--delta", "1e-300", "-f", "plain")
    assert code == 0 and float(out) < 4.5  # reachable: rdp reaches it, so pb does
    fails(capsys, "--delta must be in [1e-300, 1)", "epsilon", "--q", "0.01", "--sigma", "4",
          "--steps", "10", "--delta", "1e-320")


# --- lists, phases, messages ------------------------------------------------------------------
@pytest.mark.parametrize("argv,needle", [
    (["epsilon", "--q", "0.01", "--sigma", "4", "--steps", "10", "--accountant", ""], "--accountant"),
    (["epsilon", "--q", "0.01", "--sigma", "4", "--steps", "10", "--accountant", ","], "--accountant"),
    (["group", "--k", "2", *MNIST, "--sigma", "1", "--steps", "10", "--method", ""], "--method"),
    (["epsilon", "--phase", ""], "--phase takes"),
    (["epsilon", "--phase", "sigma=4"], "--phase needs q="),
    (["epsilon", "--phase", "q=0.01,sigma=4"], "--phase steps or --phase epochs"),
    (["sigma", "--epsilon", "1", "--sensitivity", "1e308"], "--sensitivity"),
    (["epsilon", "--q", "0.01", "--sigma", "4", "--sigma", "5", "--steps", "10"], "given more than once"),
    (["epsilon", "--q", "1_000", "--sigma", "4", "--steps", "10"], "plain decimal digits"),
    (["epsilon", "--q", "0.01", "--sigma", "٤", "--steps", "10"], "plain decimal digits"),
    (["epsilon", "--sigm", "4"], "did you mean --sigma?"),
])
def test_bad_input_names_the_flag_the_user_typed(capsys, argv, needle):
    fails(capsys, needle, *argv)


def test_error_lines_never_echo_huge_inputs(capsys):
    err = fails(capsys, "--q", "epsilon", "--q", "9" * 100_000, "--sigma", "4", "--steps", "10")
    assert len(err) < 300


def test_dpcalc_alone_prints_help_and_exits_zero(capsys):
    code, out, err = run(capsys)
    assert code == 0 and "Usage" in out and err == ""


def test_plain_not_applicable_is_n_a_which_no_number_parser_accepts(capsys):
    code, out, _ = run(capsys, "epsilon", "--q", "0.01", "--sigma", "0.8", "--steps", "100",
                       "-a", "abadi,pb", "-f", "plain")
    first, second = out.split()
    assert code == 0 and first == "n/a" and float(second) > 0
    with pytest.raises(ValueError):
        float(first)


def test_closed_stdout_exits_quietly():
    import subprocess
    import sys

    completed = subprocess.run(
        f"{sys.executable} -m dpcalc epsilon --q 0.01 --sigma 4 --steps 100 -a all | head -1",
        shell=True, capture_output=True, text=True, executable="/bin/bash",
        env={**os.environ, "PIPESTATUS_CHECK": "1"})
    assert completed.stderr == ""
    piped = subprocess.run(
        ["bash", "-c", f"{sys.executable} -m dpcalc compare --q 0.01 --sigma 4 --steps 1:1000:100 "
                       "-f csv | head -1; echo ${PIPESTATUS[0]}"], capture_output=True, text=True)
    assert piped.stdout.splitlines()[-1] == "0" and "error" not in piped.stderr


# --- the library validates at its boundary ---------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda d: d.epsilon_bounds([], 1e-5),
    lambda d: d.epsilon_bounds(_phases(d), 1e-5, grid_step=0),
    lambda d: d.epsilon_bounds(_phases(d), 1e-5, grid_step=-1),
    lambda d: d.epsilon_bounds(_phases(d), 1e-5, grid_step=1e-12),
    lambda d: d.epsilon_bounds(_phases(d), float("nan")),
    lambda d: d.epsilon_bounds(_phases(d), 2.0),
    lambda d: d.epsilon_bounds([(_phases(d)[0][0], 0)], 1e-5),
    lambda d: d.poisson_weights(10**9, 0.1),
    lambda d: d.get_accountant("pb").epsilon(d.Schedule.single(0.01, 4, 10), 1e-320),
    lambda d: d.get_accountant("pb").epsilon(None, 1e-5),
    lambda d: d.get_accountant("strong").delta(d.Schedule.single(0.01, 4, 10), float("nan")),
    lambda d: d.GaussianMixturePair([0.5, 0.5], 0.0),
    lambda d: d.GaussianMixturePair([0.5, 0.5], float("nan")),
    lambda d: d.GaussianMixturePair([1.0, 0.0], 1.0),
    lambda d: d.GaussianMixturePair([float("nan"), 1.0], 1.0),
    lambda d: d.Phase(True, 4, 100),
    lambda d: d.Schedule(()),
    lambda d: d.dpsgd_sigma("rdp", 1.0, 1e-5, 0.01, 100, bogus=1),
])
def test_library_raises_dpcalc_error(call):
    import dpcalc

    with pytest.raises(DpcalcError):
        call(dpcalc)


def _phases(dpcalc):
    from dpcalc.pb.buckets import schedule_phases

    return schedule_phases(dpcalc.Schedule.single(0.01, 2.0, 10))
