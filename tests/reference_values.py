"""Published reference values (q, σ, T, δ → ε), with source and tolerance, in one table.

Source: ../shared/notes/reference-values.md, which cites Abadi et al. 2016, the TF Privacy
tutorial README and the Opacus accountant tests; "pld" is the tight numeric value.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reference:
    source: str
    sampling_rate: float
    noise_multiplier: float
    steps: int
    delta: float
    accountant: str
    epsilon: float
    relative_tolerance: float
    # True: the value is the tight ε to its last digit (a certified upper bound must not be
    # below it); False: an estimate with its own error (PRV's eps_error)
    tight: bool = True


MNIST_Q = 256 / 60000

REFERENCES = [
    Reference("Abadi et al. 2016 §5 (moments accountant, classic conversion)", 0.01, 4.0, 10_000, 1e-5, "moments", 1.2586, 0.002),
    Reference("Abadi et al. 2016 example, current RDP", 0.01, 4.0, 10_000, 1e-5, "rdp", 1.0355, 0.002),
    Reference("Abadi et al. 2016 example, tight PLD", 0.01, 4.0, 10_000, 1e-5, "pb", 0.9470, 0.005),
    Reference("Abadi et al. 2016, 400 epochs, tight PLD", 0.01, 4.0, 40_000, 1e-5, "pb", 2.033, 0.005),
    Reference("TF Privacy MNIST σ=1.1, 60 epochs, PLD", MNIST_Q, 1.1, 14_063, 1e-5, "pb", 2.382, 0.005),
    Reference("TF Privacy MNIST σ=1.3, 15 epochs, PLD", MNIST_Q, 1.3, 3_516, 1e-5, "pb", 0.865, 0.005),
    Reference("TF Privacy MNIST σ=0.7, 45 epochs, PLD", MNIST_Q, 0.7, 10_547, 1e-5, "pb", 5.640, 0.005),
    Reference("Opacus accountant tests, PRV", 0.04, 1.5, 2_250, 1e-5, "pb", 6.7774, 0.005, tight=False),
]
