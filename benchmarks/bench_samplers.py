"""Wall time of pb on the epoch samplers (plain script, not a test).

One call = pb's certified upper bound, its certified lower bound and the Poisson figure
beside them (what `dpcalc epsilon --sampling …` computes), at δ = 1e-5. Prints the median
of a few runs per configuration next to the target (≤ 1 s at T ≤ 1e5).

Run: python benchmarks/bench_samplers.py [repeats]
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpcalc.accountants.registry import get_accountant  # noqa: E402
from dpcalc.models.schedule import Phase, Schedule  # noqa: E402

TARGET_SECONDS = 1.0
DELTA = 1e-5
# (sampling, adjacency, B, N, σ, T)
CASES = [
    ("shuffle", "zero-out", 256, 60_000, 1.0, 4_688),
    ("shuffle", "replace-one", 256, 60_000, 1.0, 4_688),
    ("shuffle", "zero-out", 256, 60_000, 1.1, 100_000),
    ("shuffle", "zero-out", 1_000, 100_000, 2.0, 100_000),
    ("shuffle-once", "zero-out", 256, 60_000, 1.0, 100_000),
    ("balls-in-bins", "add-remove", 256, 60_000, 1.0, 235),
    ("balls-in-bins", "add-remove", 256, 60_000, 1.0, 4_700),
    ("balls-in-bins", "add-remove", 512, 50_000, 1.1, 100_000),
    ("balls-in-bins", "replace-one", 256, 60_000, 1.0, 100_000),
]


def main(repeats: int = 3) -> None:
    accountant = get_accountant("pb")
    print(f"pb on epoch samplers, δ = {DELTA:g}: median of {repeats} calls (target ≤ "
          f"{TARGET_SECONDS:g} s at T ≤ 1e5)")
    for sampling, adjacency, batch, dataset, sigma, steps in CASES:
        schedule = Schedule((Phase.from_batches(batch, dataset, sigma, steps, sampling,
                                                adjacency),))
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            result = accountant.epsilon(schedule, DELTA)
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        flag = "ok" if median <= TARGET_SECONDS else "SLOW"
        print(f"  {sampling:13s} {adjacency:11s} B={batch:<5d} N={dataset:<6d} σ={sigma:<4g} "
              f"T={steps:<6d} ε ∈ [{result.epsilon_lower:.4g}, {result.epsilon:.4g}]  "
              f"{median:6.3f} s  {flag}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
