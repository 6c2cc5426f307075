"""Independent values for the audit tests: the one-run theorem's bound with every guess right,
written out from its definition and solved numerically (no code of dpcalc.audit)."""
from __future__ import annotations

import math

import numpy as np


def perfect_guesses_p_value(epsilon: float, delta: float, canaries: int, guesses: int) -> float:
    """Cor. 5.4 (Steinke, Nasr, Jagielski 2023, arXiv:2305.08846v1) at v = r, from its
    definition: f(r) = P[Binomial(r, p) ≥ r] = p^r and f(r − i) − f(r) =
    Σ_{j=1..i} C(r, j) p^{r−j} (1 − p)^j, p = e^ε/(1 + e^ε); the p-value is
    f(r) + 2mδ·max_{i=1..r} (f(r − i) − f(r))/i. Binomial coefficients from log-gamma
    (independent of the code under test and of scipy's binomial)."""
    from scipy.special import gammaln

    log_p = -math.log1p(math.exp(-epsilon))
    log_q = -epsilon + log_p
    j = np.arange(1, guesses + 1)
    terms = np.exp(gammaln(guesses + 1) - gammaln(j + 1) - gammaln(guesses - j + 1)
                   + (guesses - j) * log_p + j * log_q)
    window = np.max(np.cumsum(terms) / j)
    return math.exp(guesses * log_p) + 2 * canaries * delta * window


def independent_ceiling(canaries: int, guesses: int, delta: float, beta: float) -> float:
    """The LARGEST ε with p-value ≤ β when all r guesses are right: the last point of a 0.01
    grid on [0, 40) at or below β, then brentq between it and the next grid point (0 when even
    ε = 0 is not rejected)."""
    from scipy.optimize import brentq

    def gap(epsilon: float) -> float:
        return perfect_guesses_p_value(epsilon, delta, canaries, guesses) - beta

    below = [e for e in np.arange(0.0, 40.0, 0.01) if gap(e) <= 0]
    if not below:
        return 0.0
    return brentq(gap, below[-1], below[-1] + 0.01, xtol=1e-12)
