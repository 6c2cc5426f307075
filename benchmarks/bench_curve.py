"""ε curves (issue 13): a sweep over steps/epochs against the import floor and against the
point-by-point path. Prints medians and ratios measured in one run; not a test.

    python benchmarks/bench_curve.py [--repeats N]
"""
from __future__ import annotations

import argparse
import importlib.util
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from dpcalc.accountants.pb import PrivacyBucketsAccountant  # noqa: E402
from dpcalc.models.schedule import Schedule  # noqa: E402

FLOOR = [sys.executable, "-c", "import numpy, scipy.fft, scipy.special"]
DPCALC = [sys.executable, "-m", "dpcalc"]


def median_wall(command: list[str], repeats: int) -> float:
    samples = []
    for _ in range(repeats + 1):  # the first run warms the file cache
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples[1:])


def median_call(function, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    repeats = parser.parse_args().repeats
    floor = median_wall(FLOOR, repeats)
    print(f"import floor (numpy + scipy.fft + scipy.special): {floor:.3f} s (median of {repeats})")
    commands = [
        ("epsilon single point", ["epsilon", "--q", "0.01", "--sigma", "4", "--steps", "10000"],
         "≤ 1.2×"),
        ("compare --epochs 1:100:100 -a pb -f csv",
         ["compare", "--q", "0.01", "--sigma", "1", "--epochs", "1:100:100", "-a", "pb", "-f", "csv"],
         "≤ 4×"),
        ("compare --steps 100:100000:1000 -a pb -f csv (1 000 points)",
         ["compare", "--q", "0.01", "--sigma", "1", "--steps", "100:100000:1000", "-a", "pb", "-f", "csv"],
         "≤ 10×"),
    ]
    for label, args, target in commands:
        seconds = median_wall(DPCALC + args, max(1, repeats // 2) if "1 000" in label else repeats)
        print(f"  {label:58s} {seconds:7.3f} s  {seconds / floor:5.1f}× floor (target {target})")

    # In process as in the `dpcalc` command, which keeps freed temporaries for reuse
    # (dpcalc/cli/allocator.py): it applies to the reference and the measured call alike.
    from dpcalc.cli.allocator import keep_freed_memory
    tuned = keep_freed_memory()
    print(f"\nin process (allocator as in the dpcalc command: {'set' if tuned else 'not available'}): "
          "one curve against the point-by-point loop (pb, both bounds per point)")
    accountant = PrivacyBucketsAccountant()
    for label, q, sigma, counts, delta in [
        ("q=0.01 σ=1, epochs 1..100", 0.01, 1.0, [100 * e for e in range(1, 101)], 1e-5),
        ("q=256/60000 σ=1.1, 60 epochs", 256 / 60000, 1.1,
         [-(-e * 60000 // 256) for e in range(1, 61)], 1e-5),
    ]:
        schedules = [Schedule.single(q, sigma, count) for count in counts]
        curve = median_call(lambda: accountant.epsilon_curve(schedules, delta), 3)
        loop = median_call(lambda: [accountant.epsilon(s, delta) for s in schedules], 1)
        curve_results = accountant.epsilon_curve(schedules, delta)
        loop_results = [accountant.epsilon(s, delta) for s in schedules]
        worst = max(abs(a.epsilon - b.epsilon) / b.epsilon for a, b in zip(curve_results, loop_results))
        print(f"  {label:32s} curve {curve:6.3f} s  loop {loop:6.3f} s  ratio {curve / loop:5.2f}  "
              f"max |Δupper|/upper {worst:.1e}")

    print("\nsmall q (issue 13): q=1e-6 σ=0.3 T=1e7 δ=1e-12 against q=0.01 σ=1 T=1e4 δ=1e-5")
    reference = median_call(lambda: accountant.epsilon(Schedule.single(0.01, 1.0, 10_000), 1e-5), repeats)
    small = median_call(lambda: accountant.epsilon(Schedule.single(1e-6, 0.3, 10_000_000), 1e-12), 3)
    print(f"  reference {reference:.3f} s  small-q {small:.3f} s  ratio {small / reference:.1f}× "
          f"(target ≤ 10×)")

    if importlib.util.find_spec("matplotlib") is not None:
        print("\ngroup figures: --plot-kind all against the plain call (target ≤ 2×; ≤ 10 s plain)")
        with tempfile.TemporaryDirectory() as folder:
            for label, args in GROUP_CASES:
                plain = median_wall(DPCALC + args, 3)
                drawn = median_wall(DPCALC + args + ["--plot-kind", "all", "--plot",
                                                     str(pathlib.Path(folder) / "g.png")], 3)
                print(f"  {label:44s} plain {plain:6.2f} s  all {drawn:6.2f} s  "
                      f"ratio {drawn / plain:4.2f}×")

    print("\nsimulate default: time the run waits on the per-epoch accounting "
          "(target ≤ 25% of wall)")
    shares, unaccounted = [], []
    # alternating, so that both see the same machine; at least 12 pairs (runs without
    # accounting spread from 0.43 to 0.67 s on a 2-core VM: 5 pairs moved the share by ±6%)
    for _ in range(max(repeats, 12)):
        shares.append(simulate_share())
        unaccounted.append(simulate_share(accounting=False)[0])
    wall, waited, computed = (statistics.median(s[index] for s in shares) for index in range(3))
    bare = statistics.median(unaccounted)
    print(f"  wall {wall:.3f} s (in process, after start-up)  waiting on accounting "
          f"{waited:.3f} s  share {waited / wall:.0%}  (the accounting itself: {computed:.3f} s, "
          f"on background threads while the model trains)")
    print(f"  the same run without accounting: {bare:.3f} s; the accounting adds "
          f"{wall - bare:.3f} s, {(wall - bare) / wall:.0%} of the wall")


GROUP_CASES = [
    ("README example: --k 1:4, all methods", ["group", "--k", "1:4", "--batch-size", "256",
                                               "--dataset-size", "60000", "--sigma", "1",
                                               "--steps", "1000"]),
    ("issue 13: --k 1:64 --method pb", ["group", "--k", "1:64", "--batch-size", "64",
                                         "--dataset-size", "1000", "--sigma", "1", "--steps",
                                         "100", "--method", "pb"]),
]

SHARE_SCRIPT = """
import contextlib, io, sys, time
started = time.perf_counter()
import dpcalc.cli.simulate.accounting as accounting
waited, computed = [0.0], [0.0]
def timer(method, total):
    def timed(*args, **kwargs):
        begin = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            total[0] += time.perf_counter() - begin
    return timed
Live = accounting.LiveAccountant
# the run waits on accounting only inside row() and settle(); the curve and the final point
# are computed on background threads while the model trains (their own time: computed)
Live.row, Live.settle = timer(Live.row, waited), timer(Live.settle, waited)
Live._precompute = timer(Live._precompute, computed)
point = Live._point
Live._point = timer(point, computed)
if sys.argv[1:] == ["off"]:  # the same run with no accounting at all, for comparison
    Live.start = Live.settle = lambda self, wait=True: None
    Live.row = lambda self, record: accounting.EpochRow(record)
from dpcalc.cli.app import main
sys.argv = ["dpcalc", "simulate"]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit:
        pass
print(time.perf_counter() - started, waited[0], computed[0])
"""


def simulate_share(accounting: bool = True) -> tuple[float, float, float]:
    """(wall after interpreter start-up, seconds the run waited on the epoch-end accounting,
    seconds the accounting itself took, mostly on background threads) of one default
    `dpcalc simulate`, in a fresh process; ``accounting`` False: the run without it."""
    done = subprocess.run([sys.executable, "-c", SHARE_SCRIPT] + ([] if accounting else ["off"]),
                          check=True, capture_output=True, text=True)
    wall, waited, computed = done.stdout.split()
    return float(wall), float(waited), float(computed)


if __name__ == "__main__":
    main()
