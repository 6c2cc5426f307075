"""Wall time of noise calibration behind `dpcalc sigma` (plain script, not a test).

Setting (Abadi et al. 2016's example, accounting-methods.md §5): target ε = 1, δ = 1e-5,
q = 0.01, T = 10 000 steps → σ ≈ 3.813. Times dpsgd_sigma("pb", ...) in-process (after
one warm-up call that pays the imports) and prints the median next to the target
(< 1 s). Also prints the rdp calibration and the Opacus calibration setting for scale.

Run: python benchmarks/bench_sigma.py [repeats]
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpcalc.calibration.dpsgd import dpsgd_sigma  # noqa: E402

TARGET_SECONDS = 1.0
CASES = [
    # (label, accountant, target ε, δ, q, steps, precision)
    ("pb, T = 1e4 (Abadi setting), precision 1e-3", "pb", 1.0, 1e-5, 0.01, 10_000, 1e-3),
    ("pb, T = 1e4 (Abadi setting), precision 1e-4 (CLI default)", "pb", 1.0, 1e-5, 0.01, 10_000, 1e-4),
    ("rdp, T = 1e4 (Abadi setting)", "rdp", 1.0, 1e-5, 0.01, 10_000, 1e-4),
    ("pb, Opacus setting (ε = 8, q = 0.04, T = 2250)", "pb", 8.0, 1e-5, 0.04, 2_250, 1e-4),
    ("pb, T = 1e5 (ε = 2, q = 0.004)", "pb", 2.0, 1e-5, 0.004, 100_000, 1e-4),
]


def time_case(name, epsilon, delta, q, steps, precision, repeats):
    timings, result = [], None
    dpsgd_sigma(name, epsilon, delta, q, steps, precision=precision)  # warm-up
    for _ in range(repeats):
        start = time.perf_counter()
        result = dpsgd_sigma(name, epsilon, delta, q, steps, precision=precision)
        timings.append(time.perf_counter() - start)
    return statistics.median(timings), min(timings), max(timings), result


def main(repeats: int = 7) -> None:
    for index, (label, name, epsilon, delta, q, steps, precision) in enumerate(CASES):
        median, fastest, slowest, result = time_case(name, epsilon, delta, q, steps, precision, repeats)
        target = f" (target < {TARGET_SECONDS:g} s)" if index == 0 else ""
        print(f"{label}: σ = {result.sigma:.6f}, ε(σ) = {result.epsilon:.6f}, "
              f"{result.evaluations} evaluations")
        print(f"  median {median:.3f} s{target}; min {fastest:.3f} s, max {slowest:.3f} s "
              f"over {repeats} runs")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
