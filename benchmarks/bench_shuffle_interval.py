"""The certified interval of shuffled DP-SGD on MNIST, before and after issue 29 (plain
script, not a test).

B = 256 of N = 60 000 (b = 235 batches per epoch), δ = 1e-5, σ ∈ {0.7, 1.1, 1.3}, epochs
∈ {1, 15, 45, 60}, zero-out (and replace-one at σ = 1.1):

- before: `--epochs E` gave T = ⌈E·N/B⌉ steps (60 epochs: 14 063, 37 short of the loader's
  14 100) and the upper bound was the E-fold Gaussian (E = ⌈T/b⌉);
- Prop. 1 at the same T: the upper bound mixes the E- and (E−1)-fold Gaussians with
  w = rB/N (notes/shuffle-bounds.md; dpcalc/models/epoch_orders.py);
- after: T = E·b (the loader's whole epochs), where Prop. 1 gives nothing and the lower
  bound counts the last epoch in full.

Prints upper, lower and upper/lower per setting and the median ratio of each column, then
the price of the pipeline at σ = 1.1, 60 epochs: the same run under Poisson and
balls-in-bins (what `dpcalc epsilon --pipeline torch-shuffle` prints).

Run: python benchmarks/bench_shuffle_interval.py
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpcalc.accountants.epoch_samplers import epoch_bounds, lower_epsilon, upper_mu  # noqa: E402
from dpcalc.accountants.registry import get_accountant  # noqa: E402
from dpcalc.models.gaussian import gdp_epsilon  # noqa: E402
from dpcalc.models.schedule import Phase, Schedule  # noqa: E402

B, N, DELTA = 256, 60_000, 1e-5
PER_EPOCH = -(-N // B)
SETTINGS = [(adjacency, sigma, epochs) for adjacency, sigmas in (("zero-out", (0.7, 1.1, 1.3)),
                                                                 ("replace-one", (1.1,)))
            for sigma in sigmas for epochs in (1, 15, 45, 60)]


def _phase(sigma: float, steps: int, adjacency: str) -> Phase:
    return Phase.from_batches(B, N, sigma, steps, "shuffle", adjacency)


def main() -> None:
    started = time.perf_counter()
    print(f"shuffled batches, B = {B} of N = {N} (b = {PER_EPOCH}), δ = {DELTA:g}")
    print(f"{'adjacency':<12}{'σ':>5}{'E':>4} | {'T before':>8}{'upper':>10}{'lower':>9}"
          f"{'ratio':>7} | {'Prop.1':>9}{'ratio':>7} | {'T after':>8}{'upper':>10}{'lower':>9}"
          f"{'ratio':>7}")
    ratios = {"before": [], "prop1": [], "after": []}
    for adjacency, sigma, epochs in SETTINGS:
        old_steps = -(-epochs * N // B)
        old = _phase(sigma, old_steps, adjacency)
        old_upper = gdp_epsilon(DELTA, upper_mu(old)[0])  # the E-fold Gaussian alone
        old_lower = lower_epsilon(old, DELTA, 0.01)
        prop1 = epoch_bounds(old, DELTA).upper
        new = epoch_bounds(_phase(sigma, epochs * PER_EPOCH, adjacency), DELTA)
        row = {"before": old_upper / old_lower, "prop1": prop1 / old_lower,
               "after": new.upper / new.lower}
        for key, value in row.items():
            ratios[key].append(value)
        print(f"{adjacency:<12}{sigma:>5}{epochs:>4} | {old_steps:>8}{old_upper:>10.4f}"
              f"{old_lower:>9.4f}{row['before']:>7.3f} | {prop1:>9.4f}{row['prop1']:>7.3f} | "
              f"{epochs * PER_EPOCH:>8}{new.upper:>10.4f}{new.lower:>9.4f}{row['after']:>7.3f}")
    print("median upper/lower: " + ", ".join(f"{key} {statistics.median(values):.3f}"
                                             for key, values in ratios.items()))
    pb = get_accountant("pb")
    run = {"sigma": 1.1, "epochs": 60, "batch_size": B, "dataset_size": N}
    print("price of the pipeline at σ = 1.1, 60 epochs (zero-out; each its sampler's certificate):")
    for sampling in ("shuffle", "balls-in-bins", "poisson"):
        schedule = Schedule.from_epochs(run["sigma"], run["epochs"], batch_size=B, dataset_size=N,
                                        sampling=sampling, adjacency="zero-out")
        result = pb.epsilon(schedule, DELTA)
        print(f"  {sampling:<14} T = {schedule.total_steps:>6}: ε ∈ [{result.epsilon_lower:.5g}, "
              f"{result.epsilon:.5g}]  upper/lower {result.epsilon / result.epsilon_lower:.3f}")
    print(f"total {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
