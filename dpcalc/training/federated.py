"""Federated learning helpers: the noise multiplier to account with under adaptive clipping.

Client-level DP-FedAvg (McMahan et al. 2018) is DP-SGD with clients as records
and rounds as steps: each round samples clients (Poisson at rate q, or exactly m of the N
clients: ``--sampling fixed``), clips each client's update to S and adds N(0, z²S²) to the
sum. Adaptive clipping (Andrew, Thakkar, McMahan, Ramaswamy 2021, "Differentially private
learning with adaptive clipping", NeurIPS, §3) also releases a noisy count of unclipped
updates, with noise std σ_b; each client changes that count by at most 1/2 in their
centred form, so the round is a Gaussian mechanism on the pair (sum, count) whose noise
multiplier is

    z = (z_Δ⁻² + (2σ_b)⁻²)^(−1/2),

z_Δ being the noise multiplier of the update sum. Conversely, to account with a target z
the update sum needs z_Δ = (z⁻² − (2σ_b)⁻²)^(−1/2), which exists only when z < 2σ_b.
"""
from __future__ import annotations

import math

from dpcalc.errors import DpcalcError
from dpcalc.params import check_noise_multiplier, check_range


def _count_stddev(value) -> float:
    return check_range(value, "clipped_count_stddev", 1e-6, 1e12, low_open=False, high_open=False)


def adaptive_clipping_noise_multiplier(update_noise_multiplier: float,
                                       clipped_count_stddev: float) -> float:
    """The noise multiplier z to account a round with: (z_Δ⁻² + (2σ_b)⁻²)^(−1/2)."""
    z_update = check_noise_multiplier(update_noise_multiplier, "update_noise_multiplier")
    sigma_count = _count_stddev(clipped_count_stddev)
    return 1.0 / math.hypot(1.0 / z_update, 0.5 / sigma_count)


def update_noise_multiplier(target_noise_multiplier: float, clipped_count_stddev: float) -> float:
    """z_Δ for the update sum so that the round accounts as ``target_noise_multiplier``."""
    target = check_noise_multiplier(target_noise_multiplier, "target_noise_multiplier")
    sigma_count = _count_stddev(clipped_count_stddev)
    ratio = target / (2.0 * sigma_count)  # z_Δ = z / sqrt(1 − (z/2σ_b)²)
    if not ratio < 1.0:
        raise DpcalcError(f"clipped_count_stddev must exceed target_noise_multiplier/2 "
                          f"({target / 2:g}); got {sigma_count:g}")
    return target / math.sqrt((1.0 - ratio) * (1.0 + ratio))
