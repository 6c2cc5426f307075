"""Runs whose parameters change as they train (issue 32). Prints medians and ratios; not a test.

    python benchmarks/bench_phases.py            # the targets
    python benchmarks/bench_phases.py --compare  # also the phase-by-phase path (minutes)
    python benchmarks/bench_phases.py --cli      # also whole `dpcalc epsilon` commands

Phases of 100 steps with σ ∈ [0.8, 1.5] and q ∈ [0.002, 0.01] drawn uniformly (seeded),
δ = 1e-5, in process (imports warm). Targets: 200 phases ≤ 2 s (≤ 5× one single-phase
point of the same total steps), 1 000 phases ≤ 6 s, a 100-epoch PrivacyAccountant loop
(σ changing every epoch, ε asked every epoch) ≤ 5 s in all. Wall-clock medians, with the
process's CPU time beside them (the machine may be shared).
"""
from __future__ import annotations

import pathlib
import random
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from dpcalc import PrivacyAccountant  # noqa: E402
from dpcalc.accountants.pb import PrivacyBucketsAccountant  # noqa: E402
from dpcalc.models.schedule import Phase, Schedule  # noqa: E402
from dpcalc.pb import direction_pass  # noqa: E402

DELTA = 1e-5


def schedule(count: int, seed: int = 1) -> Schedule:
    rng = random.Random(seed)
    return Schedule(tuple(Phase(rng.uniform(0.002, 0.01), rng.uniform(0.8, 1.5), 100)
                          for _ in range(count)))


def timed(function, repeats: int) -> tuple[float, float, object]:
    """(median wall seconds, median CPU seconds, last result)."""
    walls, cpus, result = [], [], None
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        result = function()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), result


def point(run: Schedule) -> PrivacyBucketsAccountant:
    return PrivacyBucketsAccountant().epsilon(run, DELTA)


def phase_by_phase(run: Schedule):
    """pb before issue 32: dense one-step PLDs, each transformed on the whole circle."""
    saved = direction_pass.MIN_PHASES
    direction_pass.MIN_PHASES = 10**9
    try:
        return point(run)
    finally:
        direction_pass.MIN_PHASES = saved


def accountant_loop(epochs: int = 100, seed: int = 0) -> tuple[float, float, PrivacyAccountant]:
    """A 100-epoch run (N = 60 000, B = 256, 235 steps an epoch), σ changing every epoch,
    ε asked after every epoch: the wall and CPU seconds spent asking."""
    rng = random.Random(seed)
    accountant, wall, cpu = PrivacyAccountant(), 0.0, 0.0
    for epoch in range(epochs):
        sigma = 1.5 - 0.5 * epoch / epochs + rng.uniform(-0.02, 0.02)
        accountant.step(noise_multiplier=sigma, sample_rate=256 / 60_000, steps=235)
        started, started_cpu = time.perf_counter(), time.process_time()
        accountant.bounds(DELTA)
        wall += time.perf_counter() - started
        cpu += time.process_time() - started_cpu
    return wall, cpu, accountant


def cli_rows(repeats: int = 5) -> None:
    """What a user waits for: `dpcalc epsilon --schedule FILE` (the 200 phases as CSV rows)
    against `dpcalc epsilon` on one phase of the same total steps, whole processes
    (start-up included), median wall seconds of ``repeats`` runs, interleaved."""
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "schedule.csv"
        path.write_text("q,sigma,steps\n" + "".join(
            f"{phase.sampling_rate!r},{phase.noise_multiplier!r},{phase.steps}\n"
            for phase in schedule(200).phases))
        commands = {"200 phases (--schedule)": ["--schedule", str(path)],
                    "1 phase × 20 000 steps": ["--q", "0.006", "--sigma", "1.15", "--steps", "20000"]}
        times: dict = {label: [] for label in commands}
        for _ in range(repeats):
            for label, flags in commands.items():
                started = time.perf_counter()
                subprocess.run([sys.executable, "-m", "dpcalc", "epsilon", *flags, "--format",
                                "plain"], check=True, capture_output=True)
                times[label].append(time.perf_counter() - started)
    medians = {label: statistics.median(values) for label, values in times.items()}
    for label, value in medians.items():
        print(f"dpcalc epsilon, {label:<26}{value:8.2f} s (median of {repeats}, whole process)")
    first, second = medians.values()
    print(f"ratio as a user waits for it: {first / second:.1f}×")


def main() -> None:
    compare = "--compare" in sys.argv
    point(schedule(3))  # warm the imports and tables
    print("pb, δ = 1e-5, phases of 100 steps (σ ∈ [0.8, 1.5], q ∈ [0.002, 0.01])")
    print(f"{'run':<34}{'wall s':>8}{'cpu s':>8}  {'ε upper':>9} {'ε lower':>9}  target")
    rows = {}
    for label, run, repeats, target in [
            ("200 phases × 100 steps", schedule(200), 3, 2.0),
            ("1 000 phases × 100 steps", schedule(1000), 3, 6.0)]:
        wall, cpu, result = timed(lambda run=run: point(run), repeats)
        rows[label] = wall
        print(f"{label:<34}{wall:8.2f}{cpu:8.2f}  {result.epsilon:9.5f} {result.epsilon_lower:9.5f}"
              f"  ≤ {target:g} s: {'met' if wall <= target else 'MISSED'}")
    single = Schedule.single(0.006, 1.15, 20_000)  # the phases' central q, σ: same total steps
    wall, cpu, result = timed(lambda: point(single), 5)
    print(f"{'1 phase × 20 000 steps':<34}{wall:8.2f}{cpu:8.2f}  {result.epsilon:9.5f} "
          f"{result.epsilon_lower:9.5f}")
    ratio = rows["200 phases × 100 steps"] / wall
    print(f"ratio 200 phases / one point of 20 000 steps: {ratio:.1f}× (target ≤ 5×: "
          f"{'met' if ratio <= 5 else 'MISSED'})")
    walls, cpus = [], []
    for seed in range(3):
        wall, cpu, accountant = accountant_loop(seed=seed)
        walls.append(wall)
        cpus.append(cpu)
    upper, lower = accountant.bounds(DELTA)
    total = statistics.median(walls)
    print(f"PrivacyAccountant, 100 epochs, ε every epoch: {total:.2f} s wall, "
          f"{statistics.median(cpus):.2f} s CPU in all (median of 3; target ≤ 5 s: "
          f"{'met' if total <= 5 else 'MISSED'}), final ε ∈ [{lower:.5f}, {upper:.5f}]")
    if "--cli" in sys.argv:
        cli_rows()
    if compare:
        for label, run in [("phase by phase, 200 phases", schedule(200))]:
            wall, cpu, result = timed(lambda run=run: phase_by_phase(run), 1)
            print(f"{label:<34}{wall:8.2f}{cpu:8.2f}  {result.epsilon:9.5f} "
                  f"{result.epsilon_lower:9.5f}  (speed-up {wall / rows['200 phases × 100 steps']:.1f}×)")


if __name__ == "__main__":
    main()
