"""pb at the edges (issue 16 "Tight at the edges"): tightness, soundness checks and cost on 36
log-uniform points q ∈ [1e-7, 1e-2], σ ∈ [0.4, 2], T ∈ [1e4, 1e7], δ ∈ [1e-14, 1e-8]. Not a test
(tests/test_edges.py asserts on a fast subset; timing is never asserted).

    python benchmarks/bench_edges.py            # all 36 points (~5 min with the references)
    python benchmarks/bench_edges.py --quick    # 6 fast points
    python benchmarks/bench_edges.py --count 100 --seed 7 --no-dpa   # a held-out sample

Columns: pb's certified lower and reported upper (``epsilon`` = min(pb's numeric upper, rdp)),
gap = (upper − lower)/upper, dpcalc's rdp ε, and two independent LOWER references (both
directions, max):
- "count": the threshold-count test of tests/edge_references.py (certified, no dpcalc code);
- "dpa-opt": dp_accounting's optimistic PLD estimate at discretisation
  Δ = max(lower/T, rdp/1e5, L₁/1e5) with L₁ the one-step loss at x = 1 + 10σ (so one step has
  ≤ 1e5 buckets and the composition ≲ 1e5·few; its T·Δ rounding drift makes it 0 wherever
  Δ > ε/T). dp_accounting composes by float64 FFT with no round-off allowance, so at tiny δ
  its value can be round-off; a dpa-opt above the certified rdp ε is marked "!" (proof that
  dp_accounting's figure is wrong there, not pb's).
seconds: pb's wall time (median of 3 when one run is < 0.5 s), after one warm-up call.
"""
from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dpcalc.accountants.pb import PrivacyBucketsAccountant
from dpcalc.accountants.rdp_accountants import RdpAccountant
from dpcalc.models.schedule import Schedule
from tests.edge_references import (
    counting_lower,
    dp_accounting_epsilon,
    edge_points,
    largest_step_loss,
)

TARGET_SECONDS = 1.0
QUICK = (2, 7, 16, 19, 28, 31)
RDP_SLACK = 1e-9  # relative float slack for upper ≤ rdp


def timed_pb(schedule: Schedule, delta: float):
    accountant = PrivacyBucketsAccountant()
    started = time.perf_counter()
    result = accountant.epsilon(schedule, delta)
    samples = [time.perf_counter() - started]
    if samples[0] < 0.5:
        for _ in range(2):
            started = time.perf_counter()
            accountant.epsilon(schedule, delta)
            samples.append(time.perf_counter() - started)
    return result, statistics.median(samples)


def dp_accounting_lower(q, sigma, steps, delta, lower, rdp):
    try:
        import dp_accounting  # noqa: F401
    except ImportError:
        return None, None
    import logging
    logging.getLogger().setLevel(logging.ERROR)  # its "connect-the-dots unsupported" warning
    interval = max(lower / steps, rdp / 1e5, largest_step_loss(q, sigma) / 1e5)
    by_direction = dp_accounting_epsilon(q, sigma, steps, delta, interval, pessimistic=False)
    return max(by_direction.values()), interval


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"only points {QUICK}")
    parser.add_argument("--count", type=int, default=36, help="points to draw (default 36)")
    parser.add_argument("--seed", type=int, default=16,
                        help="seed of the draw (default 16: the issue's grid; others: held out)")
    parser.add_argument("--no-dpa", action="store_true",
                        help="skip the dp_accounting reference (slow at large T)")
    arguments = parser.parse_args()
    points = list(enumerate(edge_points(arguments.count, arguments.seed)))
    if arguments.quick:
        points = [points[i] for i in QUICK]

    PrivacyBucketsAccountant().epsilon(Schedule.single(1e-3, 1.0, 1000), 1e-8)  # warm-up
    print(f"{'i':>2} {'q':>8} {'σ':>5} {'T':>8} {'δ':>7} {'lower':>11} {'upper':>11} {'gap %':>6} "
          f"{'rdp':>10} {'count':>11} {'dpa-opt':>11} {'dpa Δ':>7} {'src':>3} {'seconds':>7}")
    rows = []
    for i, (q, sigma, steps, delta) in points:
        schedule = Schedule.single(q, sigma, steps)
        result, seconds = timed_pb(schedule, delta)
        upper, lower = result.epsilon, result.epsilon_lower
        gap = (upper - lower) / upper if upper > 0 else 0.0
        rdp = RdpAccountant().epsilon(schedule, delta).epsilon
        count = max(counting_lower(q, sigma, steps, delta).values())
        dpa, interval = ((None, None) if arguments.no_dpa else
                         dp_accounting_lower(q, sigma, steps, delta, lower, rdp))
        dpa_wrong = dpa is not None and dpa > rdp * (1 + RDP_SLACK)
        rows.append({"i": i, "upper": upper, "lower": lower, "gap": gap, "rdp": rdp,
                     "count": count, "dpa": dpa, "dpa_wrong": dpa_wrong, "seconds": seconds})
        dpa_text = "n/a" if dpa is None else f"{dpa:.5g}" + ("!" if dpa_wrong else "")
        interval_text = "" if interval is None else f"{interval:.0e}"
        print(f"{i:2d} {q:8.2e} {sigma:5.3f} {steps:8d} {delta:7.1e} {lower:11.5g} {upper:11.5g} "
              f"{100 * gap:6.3f} {rdp:10.5g} {count:11.5g} {dpa_text:>11} {interval_text:>7} "
              f"{result.details['upper_source']:>3} {seconds:7.2f}", flush=True)

    gaps = [row["gap"] for row in rows]
    seconds = [row["seconds"] for row in rows]
    within_one = sum(gap <= 0.01 for gap in gaps)
    upper_le_rdp = all(row["upper"] <= row["rdp"] * (1 + RDP_SLACK) for row in rows)
    above_count = [row["i"] for row in rows if row["upper"] < row["count"]]
    checked = [row for row in rows if row["dpa"] is not None]
    below_dpa = [row["i"] for row in checked if row["upper"] < row["dpa"]]
    dpa_wrong = [row["i"] for row in checked if row["dpa_wrong"]]
    lower_above_rdp = [row["i"] for row in rows if row["lower"] > row["rdp"] * (1 + RDP_SLACK)]
    print()
    print(f"points: {len(rows)}; gap ≤ 1%: {within_one}/{len(rows)} "
          f"({100 * within_one / len(rows):.0f}%); gap ≤ 5%: {sum(g <= 0.05 for g in gaps)}/{len(rows)}; "
          f"max gap {100 * max(gaps):.3f}%")
    print(f"upper ≤ rdp everywhere: {'yes' if upper_le_rdp else 'no'}; lower ≤ rdp everywhere: "
          f"{'yes' if not lower_above_rdp else 'no ' + str(lower_above_rdp)}")
    print(f"upper ≥ count lower everywhere: {'yes' if not above_count else 'no ' + str(above_count)}; "
          f"upper ≥ dp_accounting optimistic everywhere: "
          + ("n/a (dp_accounting not installed)" if not checked else
             ("yes" if not below_dpa else f"no {below_dpa}"))
          + (f" (dpa-opt above certified rdp, i.e. dp_accounting round-off, at {dpa_wrong})"
             if dpa_wrong else ""))
    over = [(row["i"], round(row["seconds"], 2)) for row in rows if row["seconds"] > TARGET_SECONDS]
    print(f"pb seconds: median {statistics.median(seconds):.2f}, max {max(seconds):.2f}; "
          f"≤ {TARGET_SECONDS:g} s: {len(rows) - len(over)}/{len(rows)}; over: {over}")


if __name__ == "__main__":
    main()
