"""What a simulation will cost, checked before it starts: memory of the data and of one
batch's per-example gradients, and the arithmetic of the whole run. Beyond the limits the
run is refused with one line naming the flag to change (no out-of-memory, no hour-long run).
"""
from __future__ import annotations

from dpcalc.errors import DpcalcError

BYTES = 8  # float64
MAX_DATA_BYTES = 1 << 30            # features in memory (several copies are made)
MAX_BATCH_GRADIENT_BYTES = 1 << 30  # per-example gradients of one batch
MAX_WORK = 2e10                     # multiply-adds of the whole run (~1 minute here)
MAX_SYNTHETIC_FEATURES = 2000       # the synthetic task draws a d × d rotation
MAX_SAMPLES = 10**7


def _gib(count: float) -> str:
    return f"{count / (1 << 30):.3g} GiB"


def parameter_count(n_features: int, n_classes: int, hidden_units: int) -> int:
    """Weights and biases of logistic regression (hidden 0) or a one-hidden-layer MLP."""
    if hidden_units == 0:
        return (n_features + 1) * n_classes
    return (n_features + 1) * hidden_units + (hidden_units + 1) * n_classes


def check_synthetic(samples: int, features: int) -> None:
    """The synthetic task's size, before it is drawn."""
    if features > MAX_SYNTHETIC_FEATURES:
        raise DpcalcError(f"--features must be at most {MAX_SYNTHETIC_FEATURES} for the synthetic "
                          f"task (it draws a features × features rotation); got {features}")
    if samples * features * BYTES * 3 > MAX_DATA_BYTES:
        raise DpcalcError(f"--samples {samples} × --features {features} needs about "
                          f"{_gib(samples * features * BYTES * 3)} (limit {_gib(MAX_DATA_BYTES)}); "
                          "lower --samples or --features")


def check_run(batch_size: int, steps: int, n_features: int, n_classes: int,
              hidden_units: int) -> None:
    """Per-example gradient memory of one batch and the work of the whole run."""
    params = parameter_count(n_features, n_classes, hidden_units)
    batch_bytes = batch_size * params * BYTES * 2
    if batch_bytes > MAX_BATCH_GRADIENT_BYTES:
        raise DpcalcError(f"per-example gradients of a batch need about {_gib(batch_bytes)} "
                          f"(--batch-size {batch_size} × {params} parameters; limit "
                          f"{_gib(MAX_BATCH_GRADIENT_BYTES)}): lower --batch-size or --hidden")
    work = 6.0 * steps * batch_size * params
    if work > MAX_WORK:
        raise DpcalcError(f"this run needs about {work:.2g} multiply-adds ({steps} steps × "
                          f"--batch-size {batch_size} × {params} parameters; limit "
                          f"{MAX_WORK:.0e}): lower --epochs, --batch-size or --hidden")
