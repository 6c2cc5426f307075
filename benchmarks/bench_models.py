"""Wall time and gap of pb on every (sampling, adjacency) pair model (plain script, not a test).

One call = pb's certified upper and lower bound at δ = 1e-5 (what `dpcalc epsilon --sampling …
--adjacency …` computes). Prints the median of a few runs per configuration next to the
targets of issue 9: ≤ 1 s per call and gap ≤ 1% at T ≤ 1e5. Truncated Poisson runs with
M = 0.9·B (cut most steps), M = B + 2√B (cut sometimes) and M = 2B (cut rarely).

Run: python benchmarks/bench_models.py [repeats] [sampling]   (e.g. 1 truncated-poisson)
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpcalc.accountants.base import ALL_MODELS  # noqa: E402
from dpcalc.accountants.registry import get_accountant  # noqa: E402
from dpcalc.models.schedule import Phase, Schedule  # noqa: E402

TARGET_SECONDS = 1.0
TARGET_GAP = 0.01
DELTA = 1e-5
# (B, N, σ, T): Abadi-like, MNIST-like, a long run at T = 1e5 and a small-σ one
RUNS = [(600, 60_000, 4.0, 10_000), (256, 60_000, 1.1, 14_063), (256, 60_000, 1.0, 100_000),
        (1_000, 50_000, 0.7, 2_000)]


def main(repeats: int = 3, only: str | None = None) -> None:
    accountant = get_accountant("pb")
    print(f"pb on every pair model, δ = {DELTA:g}: median of {repeats} calls "
          f"(targets ≤ {TARGET_SECONDS:g} s and gap ≤ {TARGET_GAP:.0%} at T ≤ 1e5)")
    slow = loose = 0
    cases = [(sampling, adjacency, run, None) for sampling, adjacency in sorted(ALL_MODELS)
             if sampling != "truncated-poisson" for run in RUNS]
    cases += [("truncated-poisson", adjacency, run, cap(run[0]))
              for adjacency in ("add-remove", "replace-one", "zero-out") for run in RUNS
              for cap in (lambda b: int(0.9 * b), lambda b: int(b + 2 * b**0.5), lambda b: 2 * b)]
    cases = [case for case in cases if only is None or case[0] == only]
    for sampling, adjacency, (batch, dataset, sigma, steps), max_batch in cases:
        schedule = Schedule((Phase(None, sigma, steps, sampling, adjacency, batch, dataset,
                                   max_batch),))
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            result = accountant.epsilon(schedule, DELTA)
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        gap = (result.epsilon - result.epsilon_lower) / result.epsilon
        slow += median > TARGET_SECONDS
        loose += gap > TARGET_GAP
        label = sampling if max_batch is None else f"trunc M={max_batch}"
        print(f"  {label:8s} {adjacency:11s} B={batch:<5d} N={dataset:<6d} σ={sigma:<4g} "
              f"T={steps:<6d} ε ∈ [{result.epsilon_lower:.5g}, {result.epsilon:.5g}] "
              f"gap {gap:6.3%}  {median:6.3f} s  "
              f"{'ok' if median <= TARGET_SECONDS and gap <= TARGET_GAP else 'MISSED'}")
    total = len(cases)
    print(f"over {TARGET_SECONDS:g} s: {slow}/{total}; gap over {TARGET_GAP:.0%}: {loose}/{total}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3, sys.argv[2] if len(sys.argv) > 2 else None)
