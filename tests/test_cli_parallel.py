"""Sweeps over σ or q on a process pool (dpcalc/cli/parallel.py): the same answers in the
same order as in one process, errors raised as there, and a pool that cannot start or
breaks falls back to this process."""
from __future__ import annotations

import importlib.util
from concurrent.futures import BrokenExecutor, Future

import pytest

from dpcalc.cli import parallel
from dpcalc.cli.app import app
from dpcalc.errors import DpcalcError
from dpcalc.params import check_noise_multiplier
from tests.conftest import cli_runner

SWEEP = ["compare", "--q", "0.01", "--sigma", "0.6:2:5", "--steps", "3000", "-a", "pb,rdp",
         "-f", "json"]


def count_pool_starts(monkeypatch) -> list:
    """Two cores, and a record of every pool started."""
    started = []
    real_start = parallel._PoolMap._start

    def counting_start(self, workers):
        started.append(workers)
        return real_start(self, workers)

    monkeypatch.setattr(parallel, "_cores", lambda: 2)
    monkeypatch.setattr(parallel._PoolMap, "_start", counting_start)
    return started


@pytest.mark.parametrize("argv", [
    SWEEP,
    ["group", "--k", "1:4", "--batch-size", "64", "--dataset-size", "1000", "--sigma", "1",
     "--steps", "30", "--method", "pb,rdp-group", "-f", "json"],
    ["group", "--k", "1:3", "--batch-size", "64", "--dataset-size", "1000", "--steps", "10",
     "--target-epsilon", "8", "-f", "json"],
], ids=["compare --sigma", "group", "group --target-epsilon"])
def test_a_sweep_on_the_pool_prints_what_one_process_prints(monkeypatch, argv):
    started = count_pool_starts(monkeypatch)
    monkeypatch.setattr(parallel, "MIN_POINTS", 3)  # small runs, on the pool all the same
    runner = cli_runner()
    pooled = runner.invoke(app, argv)
    assert pooled.exit_code == 0, pooled.output
    assert started  # ≥ MIN_POINTS answers: the pool ran
    monkeypatch.setattr(parallel, "MIN_POINTS", 10**9)
    alone = runner.invoke(app, argv)
    assert alone.exit_code == 0, alone.output
    assert pooled.stdout == alone.stdout


def test_errors_in_a_worker_are_raised_as_in_one_process(monkeypatch):
    started = count_pool_starts(monkeypatch)
    items = [1.0] * parallel.MIN_POINTS + [-1.0]
    with parallel.points_map() as map_points:
        with pytest.raises(DpcalcError, match="--sigma"):
            list(map_points(check_noise_multiplier, items))
    assert started == [2]


def test_few_points_or_one_core_stay_in_this_process(monkeypatch):
    def no_pool(self, workers):
        raise AssertionError("no pool wanted here")

    monkeypatch.setattr(parallel._PoolMap, "_start", no_pool)
    with parallel.points_map() as map_points:
        monkeypatch.setattr(parallel, "_cores", lambda: 2)
        assert list(map_points(abs, range(-3, 3))) == [3, 2, 1, 0, 1, 2]
        monkeypatch.setattr(parallel, "_cores", lambda: 1)
        assert list(map_points(abs, range(-20, 0))) == list(range(20, 0, -1))


class HalfBroken:
    """An executor whose workers die after ``good`` answers."""

    def __init__(self, good: int, at_submit: bool = False):
        self.good, self.submitted, self.at_submit = good, 0, at_submit

    def submit(self, function, item):
        if self.at_submit:
            raise BrokenExecutor("the workers could not start")
        future: Future = Future()
        if self.submitted < self.good:
            future.set_result(function(item))
        else:
            future.set_exception(BrokenExecutor("a worker died"))
        self.submitted += 1
        return future


@pytest.mark.parametrize("failure", ["cannot start", "broken before any answer",
                                     "breaks midway"])
def test_a_pool_that_cannot_start_or_breaks_falls_back(monkeypatch, failure):
    """Found by hand: with __main__ read from stdin the workers cannot load it, and the
    pool broke at submit, outside the fallback."""
    def start(self, workers):
        if failure == "cannot start":
            raise OSError("no fork server here")
        return HalfBroken(good=0 if failure == "broken before any answer" else 5,
                          at_submit=failure == "broken before any answer")

    monkeypatch.setattr(parallel, "_cores", lambda: 4)
    monkeypatch.setattr(parallel._PoolMap, "_start", start)
    items = list(range(-10, 10))
    with parallel.points_map() as map_points:
        assert list(map_points(abs, items)) == [abs(item) for item in items]


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs matplotlib")
def test_group_figures_from_the_pool_are_the_same_bytes(monkeypatch, tmp_path):
    from dpcalc.cli.group import plots as group_plots

    started = count_pool_starts(monkeypatch)
    argv = ["group", "--k", "1:4", "--batch-size", "64", "--dataset-size", "1000", "--sigma",
            "1", "--steps", "30", "--method", "pb", "--plot-kind", "k", "-f", "plain", "--plot"]
    runner = cli_runner()
    assert runner.invoke(app, [*argv, str(tmp_path / "pooled.png")]).exit_code == 0
    assert started  # 8 compositions at 2σ and 4σ ≥ MIN_CURVES_POOLED
    monkeypatch.setattr(group_plots, "MIN_CURVES_POOLED", 10**9)
    assert runner.invoke(app, [*argv, str(tmp_path / "alone.png")]).exit_code == 0
    assert (tmp_path / "pooled.png").read_bytes() == (tmp_path / "alone.png").read_bytes()
