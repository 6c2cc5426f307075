"""Wall time of the closed-form composition accountants (`strong`, `naive`): plain script,
not a test (speed targets live in benchmarks/, never in timed tests).

Each case is timed in-process after one warm-up call; the median of the repeats is printed
next to the target (50 ms a call: these accountants are closed forms and a δ-split search).

Run: python benchmarks/bench_strong.py [repeats]
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpcalc.accountants.registry import get_accountant  # noqa: E402
from dpcalc.models.schedule import Phase, Schedule  # noqa: E402

TARGET_SECONDS = 0.05
CASES = [
    ("q=0.01 σ=4 T=1e4", Schedule.single(0.01, 4.0, 10_000)),
    ("q=1e-6 σ=0.3 T=1e7", Schedule.single(1e-6, 0.3, 10_000_000)),
    ("q=1 σ=100 T=1", Schedule.single(1.0, 100.0, 1)),
    ("two phases", Schedule((Phase(0.01, 1.0, 1000), Phase(0.5, 2.0, 10)))),
]


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    for name in ("strong", "naive"):
        accountant = get_accountant(name)
        for label, schedule in CASES:
            accountant.epsilon(schedule, 1e-5)  # warm-up
            timings = []
            for _ in range(repeats):
                start = time.perf_counter()
                accountant.epsilon(schedule, 1e-5)
                timings.append(time.perf_counter() - start)
            median = statistics.median(timings)
            verdict = "ok" if median <= TARGET_SECONDS else "OVER TARGET"
            print(f"{name:7s} {label:22s} median {median * 1e3:7.2f} ms "
                  f"(target ≤ {TARGET_SECONDS * 1e3:.0f} ms)  {verdict}")


if __name__ == "__main__":
    main()
