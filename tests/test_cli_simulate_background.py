"""`dpcalc simulate`'s live accounting on background threads (simulate_accounting.py) and
its one BLAS thread (blas_threads.py): the same numbers as computing them in turn, rows
that do not wait, errors that reach the command, and the user's thread setting kept."""
from __future__ import annotations

import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest

from dpcalc.accountants.evaluate import epsilon_curves
from dpcalc.models.schedule import Schedule
from dpcalc.cli.simulate.accounting import (LIVE_ACCOUNTANTS, PB_TOLERANCE, LiveAccountant,
                                            epsilon_for_steps)
from dpcalc.errors import DpcalcError

pytestmark = pytest.mark.deep  # background threads and BLAS settings in subprocesses: `python -m pytest -m deep`

Q, SIGMA, DELTA = 64 / 2400, 1.1, 1e-6
ENDS = (38, 75, 113)  # three epochs of ceil(2400/64) steps, the last one the total


def _record(epoch: int, steps: int):
    return SimpleNamespace(epoch=epoch, steps_done=steps)


def _live(model=("poisson", "add-remove"), applies=True) -> LiveAccountant:
    return LiveAccountant(Q, SIGMA, DELTA, ENDS[-1], None, model, ENDS, applies)


def _pairs(results) -> list[tuple]:
    return [(r.accountant, r.epsilon, r.epsilon_lower) for r in results]


@pytest.mark.parametrize("model", [("poisson", "add-remove"), ("fixed-size", "replace-one")])
@pytest.mark.parametrize("final_by_point", [False, True])
def test_background_epsilons_are_those_computed_in_turn(model, final_by_point):
    live = LiveAccountant(Q, SIGMA, DELTA, ENDS[-1], None, model, ENDS, True, final_by_point)
    live.start()
    rows = [live.row(_record(epoch, steps)) for epoch, steps in enumerate(ENDS, start=1)]
    live.settle()
    # in turn, as before the threads: one curve over the planned ends (the last one too),
    # or the point path last where σ was calibrated by it
    curved = ENDS[:-1] if final_by_point else ENDS
    schedules = [Schedule.single(Q, SIGMA, steps, *model) for steps in curved]
    expected = epsilon_curves(list(LIVE_ACCOUNTANTS), schedules, DELTA, tolerance=PB_TOLERANCE)
    point = epsilon_for_steps(LIVE_ACCOUNTANTS, Q, SIGMA, ENDS[-1], DELTA, model)
    if final_by_point:
        expected = [*expected, point]
    for row, results in zip(rows, expected):
        assert _pairs([row.epsilon, row.epsilon_rdp]) == _pairs(results)  # equal, not close
        assert row.poisson_reference is None
    # the curve's last epoch and the point path: both certified, and close
    final = rows[-1].epsilon
    assert point[0].epsilon_lower <= final.epsilon and final.epsilon_lower <= point[0].epsilon
    assert final.epsilon == pytest.approx(point[0].epsilon, rel=1e-5)


def test_no_certificate_rows_carry_only_the_poisson_reference():
    live = _live(("poisson", "add-remove"), applies=False)
    rows = [live.row(_record(epoch, steps)) for epoch, steps in enumerate(ENDS, start=1)]
    live.settle()
    curve = epsilon_curves(list(LIVE_ACCOUNTANTS), [Schedule.single(Q, SIGMA, steps) for steps in ENDS],
                           DELTA, tolerance=PB_TOLERANCE)
    assert all(row.epsilon is None and row.epsilon_rdp is None for row in rows)
    assert all(row.poisson_reference is not None for row in rows)
    assert rows[-1].poisson_reference.epsilon == curve[-1][0].epsilon


def test_rows_do_not_wait_for_the_accounting(monkeypatch):
    release = threading.Event()
    for name in ("_precompute", "_point"):
        method = getattr(LiveAccountant, name)

        def gated(self, *args, _method=method):
            assert release.wait(60), "the test never released the accounting"
            return _method(self, *args)

        monkeypatch.setattr(LiveAccountant, name, gated)
    live = _live()
    live.start()
    rows = [live.row(_record(epoch, steps)) for epoch, steps in enumerate(ENDS, start=1)]
    assert all(not row.accounted for row in rows)  # training went on without them
    release.set()
    live.settle()
    assert all(row.accounted and row.epsilon.epsilon_lower > 0 for row in rows)


def test_an_unplanned_step_count_is_accounted_at_once():
    live = _live()
    live.start()
    row = live.row(_record(2, 50))  # not an epoch end of the plan
    assert row.epsilon is not None
    expected = epsilon_for_steps(LIVE_ACCOUNTANTS, Q, SIGMA, 50, DELTA)
    assert _pairs([row.epsilon, row.epsilon_rdp]) == _pairs(expected)
    live.settle()


def test_an_error_on_the_background_thread_reaches_the_command(monkeypatch, capsys):
    def failing(self):
        raise DpcalcError("--sigma: accounting failed (test)")

    monkeypatch.setattr(LiveAccountant, "_precompute", failing)
    live = _live()
    live.start()
    with pytest.raises(DpcalcError, match="accounting failed"):  # at the row it is known, or
        for epoch, steps in enumerate(ENDS, start=1):           # when the run settles
            live.row(_record(epoch, steps))
        live.settle()
    # through the command: one line, exit 2, no traceback
    from dpcalc.cli.app import main

    with pytest.raises(SystemExit) as stop:
        main(["simulate", "--samples", "3000", "--batch-size", "64", "--epochs", "3",
              "--format", "json"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "accounting failed (test)" in err and "Traceback" not in err


BLAS_PROBE = """
import os, sys
{before}
from dpcalc.cli.blas_threads import single_blas_thread

print(single_blas_thread(), os.environ.get("OPENBLAS_NUM_THREADS"), os.environ.get("MKL_NUM_THREADS"))
"""


@pytest.mark.parametrize("before, environment, expected", [
    ("", {}, "True 1 1"),                                         # a fresh command: one thread
    ("", {"OPENBLAS_NUM_THREADS": "4"}, "False 4 None"),          # the user's choice stands
    ("", {"OMP_NUM_THREADS": "3"}, "False None None"),
    ("import numpy", {}, "False None None"),                      # too late: left alone
])
def test_one_blas_thread_unless_the_user_chose(before, environment, expected):
    import os

    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", BLAS_PROBE.format(before=before)],
                          capture_output=True, text=True, env={**env, **environment}, check=True)
    assert done.stdout.split() == expected.split()


def test_the_simulate_command_loads_numpy_with_one_blas_thread():
    probe = ("import sys, os\nfrom dpcalc.cli.app import main\n"
             "try:\n    main(['simulate', '--samples', '600', '--epochs', '1', '-f', 'plain'])\n"
             "except SystemExit:\n    pass\n"
             "print(os.environ.get('OPENBLAS_NUM_THREADS'))\n")
    import os

    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                          check=True)
    assert done.stdout.split()[-1] == "1"


def test_the_group_figure_is_computed_in_the_background_with_the_same_number():
    from dpcalc.cli.simulate.accounting import (group_epsilon, group_epsilon_in_background,
                                                group_setting)

    setting = group_setting(2, 64, 2400, SIGMA, ENDS[-1], ("poisson", "add-remove"))
    job = group_epsilon_in_background(setting, DELTA)
    expected = group_epsilon(setting, DELTA)
    found = job.result()
    assert (found.epsilon, found.epsilon_lower) == (expected.epsilon, expected.epsilon_lower)
    # and through the command: the JSON's group figure is that number
    from tests.conftest import run_json

    payload = run_json("simulate", "--samples", "3000", "--batch-size", "64", "--epochs", "3",
                       "--sigma", repr(SIGMA), "--delta", repr(DELTA), "--k", "2")
    assert payload["group"]["epsilon"] == expected.epsilon
