"""Balls-in-bins, tight (issue 29 item 4): values and wall time (plain script, not a test).

For the held-out configurations (σ, t steps per epoch, E epochs; δ = 1e-5) prints, for
add/remove (= zero-out) and replace-one:
* before: what dpcalc printed before this work (recorded at 6d271d8: decomposition and
  Jensen Rényi DP composed by RDP or Kairouz et al.; replace-one the Δ = 2 Gaussian);
* after: what it prints now (epoch_upper), and which bound won per direction;
* RA: random-allocation 1.0.5's best VALID bound (tests/test_balls_in_bins_bounds.py's
  table, scripts/random_allocation_bib_values.py; replace-one: its valid bounds chained
  through D∖{x}), and after/RA;
* exact: the exact pair's ε, computed numerically (not certified; the oracle of
  tests/test_balls_in_bins_bounds.py, σ ≥ 1 only), and after/exact;
* the wall time per answer: the median of ``repeats`` cold calls (the per-(t, σ) caches
  cleared before each), after a first call that pays scipy.special's import (printed).
Then the cost of the parts for one (t, σ).

Run: python benchmarks/bench_balls_in_bins.py [repeats]
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpcalc.accountants import allocation_rdp  # noqa: E402
from dpcalc.accountants.allocation import AllocationBound  # noqa: E402
from dpcalc.accountants.epoch_samplers import epoch_upper  # noqa: E402
from dpcalc.allocation import laplace  # noqa: E402
from dpcalc.models.schedule import Phase  # noqa: E402
from tests.test_balls_in_bins_bounds import RANDOM_ALLOCATION_VALID  # noqa: E402

DELTA = 1e-5
# (σ, t, E) → (add/remove, replace-one) printed at 6d271d8
BEFORE = {
    (3.0, 2000, 20): (0.881283, 16.542), (0.7, 1000, 3): (3.34611, 32.6318),
    (2.0, 1000, 1): (0.0816617, 4.37718), (5.0, 2000, 1): (0.0187789, 1.55498),
    (1.0, 100, 1): (1.02978, 9.99726), (1.0, 100, 3): (2.16476, 20.125),
    (0.7, 10, 1): (4.90021, 15.6581), (1.0, 10, 20): (16.0879, 77.3301),
    (2.0, 100, 20): (3.37196, 28.3735), (5.0, 1000, 20): (0.495405, 8.72076),
    (0.7, 2000, 20): (20.8507, 135.265), (3.0, 10, 3): (0.869674, 5.17481),
    (2.0, 2000, 3): (0.185119, 8.38542), (1.0, 1000, 20): (6.21118, 77.3301),
    (5.0, 100, 3): (0.178737, 2.87593), (0.8, 50, 2): (2.90343, 20.6755),
    (1.5, 500, 10): (2.10591, 26.1829), (4.0, 5000, 1): (0.0145066, 1.99309),
    (1.5, 50, 1): (0.584083, 6.12924), (4.0, 500, 2): (0.112802, 2.94323),
    (0.8, 5000, 10): (2.12363, 64.1688),
}
# the exact pair's ε (max over directions), tests/test_balls_in_bins_bounds.py's oracle
EXACT = {
    (3.0, 2000, 20): 0.10597, (2.0, 1000, 1): 0.048671, (5.0, 2000, 1): 0.011159,
    (1.0, 100, 1): 0.62094, (1.0, 100, 3): 0.95399, (1.0, 10, 20): 8.9916,
    (2.0, 100, 20): 0.8803, (5.0, 1000, 20): 0.086807, (3.0, 10, 3): 0.6781,
    (2.0, 2000, 3): 0.060774, (1.0, 1000, 20): 0.67454, (5.0, 100, 3): 0.10838,
    (1.5, 500, 10): 0.36345, (4.0, 5000, 1): 0.0085979, (1.5, 50, 1): 0.38154,
    (4.0, 500, 2): 0.046053,
}


def _cold():
    laplace.laplace_table.cache_clear()
    allocation_rdp.rdp_curves.cache_clear()


def _timed(function, repeats):
    times = []
    for _ in range(repeats):
        _cold()
        start = time.perf_counter()
        value = function()
        times.append(time.perf_counter() - start)
    return value, statistics.median(times)


def main(repeats: int = 3) -> None:
    start = time.perf_counter()
    epoch_upper(Phase(1.0 / 100, 1.0, 100, "balls-in-bins", "add-remove"), DELTA)
    print(f"first call (imports scipy.special): {time.perf_counter() - start:.2f} s")
    print(f"balls-in-bins, δ = {DELTA:g}; time: median of {repeats} cold calls per answer")
    header = (f"{'σ':>4} {'t':>5} {'E':>3}  {'before':>8} {'after':>8} {'RA best':>8} "
              f"{'after/RA':>8} {'exact':>8} {'after/ex':>8} {'time':>6}  won (remove/add)")
    for adjacency in ("add-remove", "replace-one"):
        print(f"\n{adjacency}" + (" (= zero-out)" if adjacency == "add-remove" else
                                  " (RA: its valid bounds chained through D∖{x})"))
        print(header)
        ratios = []
        for sigma, steps, epochs, remove, add, replace in RANDOM_ALLOCATION_VALID:
            if adjacency == "replace-one" and replace is None:
                continue
            phase = Phase(1.0 / steps, sigma, steps * epochs, "balls-in-bins", adjacency)
            (upper, _, _), seconds = _timed(lambda: epoch_upper(phase, DELTA), repeats)
            reference = max(remove[1], add[1]) if adjacency == "add-remove" else replace[0]
            before = BEFORE[(sigma, steps, epochs)][adjacency == "replace-one"]
            bound = AllocationBound(steps, sigma, epochs, DELTA, adjacency)
            bound.epsilon(DELTA)
            won = bound.sources(DELTA)
            exact = EXACT.get((sigma, steps, epochs)) if adjacency == "add-remove" else None
            exact_text = (f"{exact:8.4g} {upper / exact:8.3f}" if exact else f"{'—':>8} {'—':>8}")
            ratios.append(upper / reference)
            print(f"{sigma:4g} {steps:5d} {epochs:3d}  {before:8.4g} {upper:8.4g} {reference:8.4g} "
                  f"{upper / reference:8.3f} {exact_text} {seconds:6.2f}  "
                  f"{won['remove']}/{won['add']}")
        print(f"after/RA: max {max(ratios):.3f}, median {statistics.median(ratios):.3f}")
    _parts(repeats)


def _parts(repeats):
    from dpcalc.allocation.add_rdp import add_rdp
    from dpcalc.allocation.recursive import RecursiveBound
    from dpcalc.allocation.remove_rdp import remove_rdp

    print("\nparts, per (t, σ) (median of cold calls):")
    for steps, sigma in ((100, 1.0), (2000, 3.0), (100_000, 2.0)):
        _, table = _timed(lambda: laplace.laplace_table(steps, sigma), repeats)
        _cold()
        laplace.laplace_table(steps, sigma)
        adds = []
        for _ in range(repeats):
            start = time.perf_counter()
            add_rdp(allocation_rdp.ADD_ORDERS, steps, sigma)
            adds.append(time.perf_counter() - start)
        _, removes = _timed(lambda: remove_rdp(allocation_rdp.REMOVE_ORDERS, steps, sigma),
                            repeats)

        def recursive():
            bound = RecursiveBound(steps, sigma, 1)
            bound.prepare(DELTA)
            return bound
        _, prepared = _timed(recursive, repeats)
        print(f"  t = {steps:6d}, σ = {sigma:g}: ψ table {table:.3f} s, add RDP "
              f"({allocation_rdp.ADD_ORDERS.size} orders) {statistics.median(adds):.3f} s, "
              f"remove RDP ({allocation_rdp.REMOVE_ORDERS.size} orders) {removes:.3f} s, "
              f"recursive thresholds + Poisson compositions {prepared:.3f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
