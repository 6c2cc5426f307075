"""The 20 slowest accepted inputs of a seeded random grid of dpcalc command lines (issue 30 §3).
Not a test.

Every command line of the grid (tests/memory_probe.random_invocation, seed given) runs in its
own process under a 6 GiB address-space cap with a timeout; its wall time and peak RSS are
measured (tests/memory_probe.measure). Refused inputs (exit 2) are counted apart; the accepted
ones (exit 0 or 1, the budget gate) are listed slowest first, with every timeout, internal
error (exit 70) and run over 2 GiB flagged.

    python benchmarks/bench_slowest.py [count] [seed] [timeout seconds]
    (default 40 0 120; results: benchmarks/results/bench_slowest.txt)
"""
from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.memory_probe import GIB, PEAK_LIMIT, measure_dpcalc, random_invocation  # noqa: E402

SHOWN = 20


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 120.0
    rng = random.Random(seed)
    rows, refused = [], 0
    for index in range(count):
        argv = random_invocation(rng)
        try:
            run = measure_dpcalc(*argv, timeout=timeout)
        except subprocess.TimeoutExpired:
            run = {"code": "timeout", "seconds": timeout, "peak": float("nan"), "stderr": ""}
        if run["code"] == 2:
            refused += 1
        else:
            rows.append((run["seconds"], run["peak"] / GIB, run["code"], " ".join(argv)))
        print(f"{index + 1}/{count} {run['code']} {run['seconds']:.1f} s {' '.join(argv)}",
              file=sys.stderr, flush=True)
    rows.sort(reverse=True)
    load = os.getloadavg()[0]  # shared machine: the times scale with it
    lines = [f"bench_slowest: {count} random command lines (seed {seed}, timeout {timeout:g} s): "
             f"{len(rows)} accepted, {refused} refused (exit 2); load average at the end "
             f"{load:.1f} on {os.cpu_count()} cores",
             f"median wall time of the accepted: {statistics.median(r[0] for r in rows):.2f} s; "
             f"over 2 s: {sum(r[0] > 2 for r in rows)}; over 2 GiB: "
             f"{sum(r[1] * GIB >= PEAK_LIMIT for r in rows)}; exit 70: "
             f"{sum(r[2] == 70 for r in rows)}; timeouts: {sum(r[2] == 'timeout' for r in rows)}",
             "", f"the {min(SHOWN, len(rows))} slowest:", "   time s   peak GiB  exit  command"]
    lines += [f"{seconds:9.2f} {peak:10.3f} {code!s:>5}  dpcalc {text}"
              for seconds, peak, code, text in rows[:SHOWN]]
    text = "\n".join(lines)
    print(text)
    out = ROOT / "benchmarks" / "results" / "bench_slowest.txt"
    out.write_text(text + "\n")


if __name__ == "__main__":
    main()
