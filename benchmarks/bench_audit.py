"""Privacy audits behind `dpcalc simulate --audit` (plain script, not a test).

1. Wall time of the default audit and of the README example (one-run audit, 1000 gradient
   canaries, on the default task: 16 000 training examples, 313 steps): median of a few runs of
   the installed command, next to the 30 s target.
2. How close the Monte Carlo audit gets to pb's certified lower bound with the strongest canary
   (a gradient canary on a coordinate no training gradient touches) and small σ:
   q = 0.5, σ = 1, 4 steps, R runs, for a few seeds, at δ = 1e-2 and at δ = 1e-5.
3. The shuffled-batch demonstration (README): wall time of the command, and the Monte Carlo
   audit of shuffled batches (zero-out, Chua et al. 2024's displacement instance) against the
   Poisson figure and pb's certified shuffle interval, b = 100 batches at σ = 0.7 and b = 10 at
   σ = 1, one epoch, δ = 1e-2, a few seeds.
4. The Monte Carlo audit's cost per run and per DP-SGD step, at 4 steps per run (the README
   example) and 313 (the default task): the basis of its size limit (DEFAULT_AUDIT_STEPS
   steps in all, refused beyond with exit 2) and of the SECONDS_PER_STEP the refusal quotes.

The one-run audit against its ceiling: benchmarks/bench_one_run_audit.py.

Run: python benchmarks/bench_audit.py [repeats] [runs]
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpcalc import Schedule, get_accountant  # noqa: E402
from dpcalc.audit import AuditSettings, monte_carlo_audit  # noqa: E402
from dpcalc.audit.experiment import DEFAULT_AUDIT_STEPS  # noqa: E402
from dpcalc.audit.monte_carlo import SECONDS_PER_STEP  # noqa: E402
from dpcalc.dpsgd import TrainingConfig  # noqa: E402

TARGET_SECONDS = 30.0
COMMANDS = {
    "default audit": ["simulate", "--audit", "--format", "json"],
    "README example": ["simulate", "--sigma", "0.6", "--audit"],
    "README shuffle example": ["simulate", "--samples", "1250", "--batch-size", "10", "--epochs",
                               "1", "--learning-rate", "0.5", "--sigma", "0.7", "--sampling",
                               "shuffle", "--adjacency", "zero-out", "--delta", "0.01",
                               "--audit-runs", "500", "--seed", "0"],
}
SHUFFLE_CASES = ((100, 0.7), (10, 1.0))  # (batches per epoch b, σ)


def time_command(args: list[str], repeats: int) -> float:
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "dpcalc", *args], cwd=ROOT, check=True,
                       capture_output=True)
        timings.append(time.perf_counter() - start)
    return statistics.median(timings)


def monte_carlo(runs: int, delta: float, seed: int) -> tuple[float, float, float]:
    """(empirical ε lower bound, certified lower, certified upper) at q = 0.5, σ = 1, 4 steps."""
    n_train, batch_size = 200, 100
    config = TrainingConfig(batch_size=batch_size, epochs=2, noise_multiplier=1.0, seed=seed)
    settings = AuditSettings(mode="monte-carlo", canary="gradient", runs=runs, delta=delta,
                             seed=seed)
    result = monte_carlo_audit(settings, config, n_train)
    certified = get_accountant("pb").epsilon(
        Schedule.single(result.sampling_rate, result.noise_multiplier, result.steps), delta)
    return result.epsilon_lower, certified.epsilon_lower, certified.epsilon


def shuffled(batches: int, sigma: float, runs: int, seed: int) -> tuple[float, ...]:
    """(empirical ε lower bound, Poisson figure, certified lower, certified upper) for one
    epoch of b shuffled batches under zero-out at δ = 1e-2."""
    config = TrainingConfig(batch_size=10, epochs=1, noise_multiplier=sigma, seed=seed,
                            sampling="shuffle")
    settings = AuditSettings(mode="monte-carlo", canary="gradient", runs=runs, delta=1e-2,
                             seed=seed, adjacency="zero-out")
    result = monte_carlo_audit(settings, config, 10 * batches)
    certified = get_accountant("pb").epsilon(
        Schedule.single(result.sampling_rate, sigma, result.steps, "shuffle", "zero-out"), 1e-2)
    return (result.epsilon_lower, certified.details["epsilon_poisson_not_applicable"],
            certified.epsilon_lower, certified.epsilon)


def cost_per_step(n_train: int, batch_size: int, epochs: float, runs: int) -> tuple[float, ...]:
    """(ms per run, ms per DP-SGD step, steps per run) of a Monte Carlo audit, σ = 1."""
    config = TrainingConfig(batch_size=batch_size, epochs=epochs, noise_multiplier=1.0, seed=0)
    settings = AuditSettings(mode="monte-carlo", canary="gradient", runs=runs, delta=1e-5, seed=0)
    start = time.perf_counter()
    result = monte_carlo_audit(settings, config, n_train)
    seconds = time.perf_counter() - start
    return 1e3 * seconds / runs, 1e3 * seconds / (runs * result.steps), result.steps


def main(repeats: int = 3, runs: int = 10_000) -> None:
    for name, args in COMMANDS.items():
        median = time_command(args, repeats)
        print(f"{name}: dpcalc {' '.join(args)}")
        print(f"  median wall time over {repeats} runs: {median:.2f} s "
              f"(target <= {TARGET_SECONDS:g} s)")
    print(f"Monte Carlo audit, gradient canary, q = 0.5, sigma = 1, 4 steps, R = {runs}:")
    for delta in (1e-2, 1e-5):
        for seed in (0, 1, 2):
            start = time.perf_counter()
            empirical, lower, upper = monte_carlo(runs, delta, seed)
            seconds = time.perf_counter() - start
            print(f"  delta {delta:g} seed {seed}: empirical eps >= {empirical:.3f} (95%), "
                  f"certified [{lower:.3f}, {upper:.3f}], {empirical / lower:.0%} of the "
                  f"certified lower bound ({seconds:.1f} s)")
    shuffle_runs = min(runs, 2000)
    print(f"Monte Carlo audit of shuffled batches (zero-out), one epoch, delta 0.01, "
          f"R = {shuffle_runs}:")
    for batches, sigma in SHUFFLE_CASES:
        for seed in (0, 1, 2):
            start = time.perf_counter()
            empirical, poisson, lower, upper = shuffled(batches, sigma, shuffle_runs, seed)
            seconds = time.perf_counter() - start
            print(f"  b {batches} sigma {sigma:g} seed {seed}: empirical eps >= {empirical:.3f} "
                  f"(95%), Poisson figure {poisson:.3f} ({empirical / poisson:.1f}x), certified "
                  f"[{lower:.3f}, {upper:.3f}] ({seconds:.1f} s)")
    print(f"Monte Carlo cost (limit {DEFAULT_AUDIT_STEPS} steps in all, quoted at "
          f"{1e3 * SECONDS_PER_STEP[0]:.1f}-{1e3 * SECONDS_PER_STEP[1]:.1f} ms per step):")
    for n_train, batch_size, epochs, count in ((200, 100, 2, 1000), (16_000, 256, 5, 40)):
        per_run, per_step, steps = cost_per_step(n_train, batch_size, epochs, count)
        print(f"  {steps} steps per run: {per_run:.1f} ms per run, {per_step:.2f} ms per step; "
              f"50 000 runs: {50_000 * per_run / 1e3:.0f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3,
         int(sys.argv[2]) if len(sys.argv) > 2 else 10_000)
