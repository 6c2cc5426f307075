"""Wall time of the DP-SGD engine behind `dpcalc simulate` (plain script, not a test).

Setting: 60 000 training examples × 50 features (synthetic task, 75 000 samples
split 80/20), expected batch 256, 10 epochs (2 344 steps), logistic regression,
σ = 1, Poisson sampling. Prints the median of a few runs next to the target.

Run: python benchmarks/bench_simulate.py [repeats]
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpcalc.dpsgd import (TrainingConfig, make_synthetic_task, split_and_standardise,  # noqa: E402
                          train_baseline, train_dp_sgd)

TARGET_SECONDS = 30.0


def main(repeats: int = 5) -> None:
    dataset = make_synthetic_task(n_samples=75_000, n_features=50, seed=0)
    train, test = split_and_standardise(dataset, test_fraction=0.2, seed=0)
    config = TrainingConfig(batch_size=256, epochs=10, noise_multiplier=1.0, seed=0)
    timings = []
    for repeat in range(repeats):
        start = time.perf_counter()
        history = train_dp_sgd(config, train, test)
        timings.append(time.perf_counter() - start)
    start = time.perf_counter()
    baseline = train_baseline(config, train, test)
    baseline_seconds = time.perf_counter() - start
    print(f"DP-SGD, logistic regression: {train.n_samples} train × {train.n_features} features, "
          f"batch {config.batch_size}, {config.epochs:g} epochs = {history.steps} steps")
    print(f"median wall time over {repeats} runs: {statistics.median(timings):.3f} s "
          f"(target < {TARGET_SECONDS:g} s); min {min(timings):.3f} s, max {max(timings):.3f} s")
    print(f"baseline (no clipping/noise), one run: {baseline_seconds:.3f} s")
    print(f"test accuracy: DP {history.final.test_accuracy:.3f}, "
          f"baseline {baseline.final.test_accuracy:.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
