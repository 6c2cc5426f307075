"""Wall time of `dpcalc group`'s pb bound for k = 8 (plain script, not a test).

Setting (issue 5): k = 8 protected records, batches of B = 256 drawn without replacement
from N = 60 000, σ = 1, T = 2^14 steps, δ = 1e-5. Times the certified pb bounds (both
directions, upper and lower, default tolerance) and prints the median of a few runs next
to the target, then where one run spends its time, and the other methods for k = 8.

Run: python benchmarks/bench_group.py [repeats]
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dpcalc.pb.buckets as buckets  # noqa: E402
import dpcalc.pld.pld as pld  # noqa: E402
from dpcalc.group.bounds import (group_conversion_epsilon, rdp_group_epsilon,  # noqa: E402
                                 rdp_overapprox_epsilon)
from dpcalc.group.pairs import GroupSetting, pb_epsilon  # noqa: E402
from dpcalc.models.mixture import GaussianMixturePair  # noqa: E402

TARGET_SECONDS = 1.0
SETTING = GroupSetting(k=8, batch_size=256, dataset_size=60_000, noise_multiplier=1.0, steps=2**14)
DELTA = 1e-5


def _timed(seconds: dict, name: str, function):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - start
    return wrapper


def breakdown() -> dict:
    """Seconds of one pb run inside the engine's stages (wrapping them for one run)."""
    seconds: dict = {}
    originals = {
        (GaussianMixturePair, "inverse_loss"): GaussianMixturePair.inverse_loss,
        (GaussianMixturePair, "log_tails"): GaussianMixturePair.log_tails,
        (buckets, "discretise"): buckets.discretise,
        (buckets, "compose"): buckets.compose,
        (buckets, "rounding_slack"): buckets.rounding_slack,
        (pld.ComposedPld, "epsilon"): pld.ComposedPld.epsilon,
    }
    labels = {"inverse_loss": "mixture.inverse_loss (in log_tails)",
              "log_tails": "mixture.log_tails (in discretise)",
              "discretise": "discretise.discretise", "compose": "fft_compose.compose (FFT)",
              "rounding_slack": "chernoff.rounding_slack", "epsilon": "ComposedPld.epsilon"}
    try:
        for (owner, name), function in originals.items():
            setattr(owner, name, _timed(seconds, labels[name], function))
        start = time.perf_counter()
        pb_epsilon(SETTING, DELTA)
        seconds["total"] = time.perf_counter() - start
    finally:
        for (owner, name), function in originals.items():
            setattr(owner, name, function)
    return seconds


def main(repeats: int = 7) -> None:
    pb_epsilon(SETTING, DELTA)  # warm-up (imports, FFT plans)
    timings, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = pb_epsilon(SETTING, DELTA)
        timings.append(time.perf_counter() - start)
    print(f"dpcalc group pb: k={SETTING.k}, B={SETTING.batch_size}, N={SETTING.dataset_size}, "
          f"σ={SETTING.noise_multiplier:g}, T={SETTING.steps}, δ={DELTA:g}")
    print(f"ε in [{result.epsilon_lower:.4f}, {result.epsilon:.4f}] (grid step "
          f"{result.details['grid_step']:.3g})")
    median = statistics.median(timings)
    print(f"median wall time over {repeats} runs: {median:.3f} s (target < {TARGET_SECONDS:g} s: "
          f"{'met' if median < TARGET_SECONDS else 'NOT met'}); min {min(timings):.3f} s, "
          f"max {max(timings):.3f} s")
    print("one run, by stage (nested stages are included in their parents):")
    for name, seconds in breakdown().items():
        print(f"  {name:40s} {seconds:7.3f} s")
    for function in (rdp_overapprox_epsilon, group_conversion_epsilon, rdp_group_epsilon):
        start = time.perf_counter()
        other = function(SETTING, DELTA)
        value = "no certificate" if other.epsilon is None else f"{other.epsilon:.4g}"
        print(f"{other.accountant:17s} ε = {value:>14s}   {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
