"""σ for one Gaussian mechanism (ε, δ, sensitivity Δ): the classic (Dwork & Roth 2014) and
the analytic (Balle & Wang 2018) calibration side by side, for `dpcalc sigma --mechanism`."""
from __future__ import annotations

from dataclasses import dataclass

from dpcalc.calibration.search import _check_target


@dataclass(frozen=True)
class GaussianSigmas:
    """σ for one Gaussian mechanism (ε, δ, sensitivity Δ), both ways.

    ``analytic_sigma``: Balle & Wang 2018, exact and smallest. ``classic_sigma``:
    Dwork & Roth 2014 Thm A.1, proven only for ε < 1 (``classic_is_valid``);
    ``classic_delta`` is the true δ of the classic σ at ε (above the target where unsafe).
    """

    epsilon: float
    delta: float
    sensitivity: float
    analytic_sigma: float
    classic_sigma: float
    classic_is_valid: bool
    classic_delta: float

    @property
    def classic_is_safe(self) -> bool:
        """The classic σ meets the target δ (whether or not the theorem covers ε)."""
        return self.classic_delta <= self.delta


def gaussian_mechanism_sigmas(epsilon: float, delta: float, sensitivity: float = 1.0) -> GaussianSigmas:
    """Classic and analytic Gaussian-mechanism noise for (ε, δ) at L2 ``sensitivity``."""
    from dpcalc.models.gaussian import gaussian_delta
    from dpcalc.models.gaussian_sigma import analytic_gaussian_sigma, classic_gaussian_is_valid, classic_gaussian_sigma

    epsilon = _check_target(epsilon)
    analytic = analytic_gaussian_sigma(epsilon, delta, sensitivity)
    classic = classic_gaussian_sigma(epsilon, delta, sensitivity)
    true_delta = float(gaussian_delta(epsilon, classic, sensitivity))
    return GaussianSigmas(epsilon, float(delta), float(sensitivity), analytic, classic,
                          classic_gaussian_is_valid(epsilon), true_delta)
