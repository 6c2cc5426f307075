"""What is being accounted: DP-SGD with Poisson subsampling, in one or more phases.

The mechanism is described separately from the accountants that bound it (as in
dp_accounting): every accountant takes a :class:`Schedule` and a target.
"""
from __future__ import annotations

from dataclasses import dataclass

from dpcalc.params import check_count, check_noise_multiplier, check_sampling_rate


@dataclass(frozen=True)
class Phase:
    """``steps`` DP-SGD steps, each the Gaussian mechanism with noise multiplier
    ``noise_multiplier`` on a Poisson subsample drawn at rate ``sampling_rate``."""

    sampling_rate: float
    noise_multiplier: float
    steps: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "sampling_rate", check_sampling_rate(self.sampling_rate))
        object.__setattr__(self, "noise_multiplier", check_noise_multiplier(self.noise_multiplier))
        object.__setattr__(self, "steps", check_count(self.steps, "--steps"))


@dataclass(frozen=True)
class Schedule:
    """A training run: phases composed one after the other."""

    phases: tuple[Phase, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "phases", tuple(self.phases))
        if not self.phases:
            raise ValueError("a schedule needs at least one phase")

    @classmethod
    def single(cls, sampling_rate: float, noise_multiplier: float, steps: int) -> "Schedule":
        """One phase: the usual DP-SGD run."""
        return cls((Phase(sampling_rate, noise_multiplier, steps),))

    @property
    def total_steps(self) -> int:
        return sum(phase.steps for phase in self.phases)

    @property
    def is_single_phase(self) -> bool:
        return len(self.phases) == 1
