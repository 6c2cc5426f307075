"""What an (ε, δ) claim alone means for an attacker: bounds that hold for EVERY (ε, δ)-DP
mechanism, for a reviewer who has a paper's (ε, δ) and no run.

(ε, δ)-DP is the trade-off f_{ε,δ}(α) = max{0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)}
(Kairouz, Oh, Viswanath 2015, Thm 2.1; Dong, Roth, Su 2022, Prop. 2.5): a test at FPR α has
    TPR ≤ min{1, e^ε α + δ, 1 − e^{−ε}(1 − δ − α)}.
The randomized response with an atom of mass δ attains it — P = (δ, (1−δ)e^ε/(1+e^ε),
(1−δ)/(1+e^ε), 0), Q the mirror image (Kairouz et al. 2015, the proof of Thm 2.1) — so every
figure below is the least upper bound the claim allows: some (ε, δ)-DP mechanism reaches it.
Its privacy profile is δ(ε′) = δ + (1 − δ)·max(0, e^ε − e^{ε′})/(1 + e^ε) for ε′ ≥ 0, whence
    advantage = max(TPR − FPR) = δ(0) = (e^ε − 1 + 2δ)/(e^ε + 1),
    posterior success at prior π = max(π, 1−π) + min(π, 1−π)·δ(|ln(π/(1−π))|)
(the sup of a linear functional of (TPR, FPR), as risk/bounds.py), reconstruction at baseline
κ = TPR at FPR κ (Hayes, Mahloujifar, Balle 2023). δ > 0 allows an outright failure with
probability δ (f(0) = 1 − δ < 1), so no Gaussian-DP μ follows from the claim.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from dpcalc.params import check_delta, check_nonnegative
from dpcalc.risk.tradeoff import check_probability

# Widening of each figure for float round-off (as risk/bounds.py's _ROUNDOFF).
_ROUNDOFF = 1e-12


@dataclass(frozen=True)
class ClaimFigure:
    """``name`` at ``at`` (FPR, prior or κ): the largest value any (ε, δ)-DP mechanism allows
    (``upper``, attained), and what the same attack gets without the record (``no_leak``)."""

    name: str
    at: float | None
    upper: float
    no_leak: float


def _up(value: float) -> float:
    return min(1.0, value * (1.0 + _ROUNDOFF))


def claim_tpr(epsilon: float, delta: float, fpr: float) -> float:
    """min{1, e^ε α + δ, 1 − e^{−ε}(1 − δ − α)} (module doc), overflow-free at large ε."""
    first = 1.0 if epsilon > 700.0 else math.exp(epsilon) * fpr + delta
    # 1 − e^{−ε}(1 − δ − α) written without its cancellation near ε = 0 (independent review:
    # at ε = 0, δ = α = 1e-12 the plain form gave 1.99996e-12 for the exact 2e-12)
    second = delta + fpr - math.expm1(-epsilon) * (1.0 - delta - fpr)
    return min(1.0, first, second)


def claim_profile(epsilon: float, delta: float, at: float) -> float:
    """δ(ε′) of the (ε, δ) randomized response at ε′ = ``at`` ≥ 0 (module doc), written as
    δ + (1 − δ)·max(0, 1 − e^{ε′−ε})/(1 + e^{−ε}) so that no e^ε overflows."""
    gap = max(0.0, -math.expm1(at - epsilon))
    return min(1.0, delta + (1.0 - delta) * gap / (1.0 + math.exp(-epsilon)))


def claim_figures(epsilon, delta, fprs, prior: float = 0.5,
                  baseline: float | None = None) -> list[ClaimFigure]:
    """TPR at each FPR, the advantage, the posterior success at ``prior`` and, with a
    ``baseline`` κ, reconstruction success: the bounds of an (ε, δ) claim (module doc)."""
    epsilon = check_nonnegative(epsilon, "--epsilon")
    delta = check_delta(delta)
    figures = [ClaimFigure("tpr", alpha, _up(claim_tpr(epsilon, delta, alpha)), alpha)
               for alpha in (check_probability(value, "--fpr") for value in fprs)]
    figures.append(ClaimFigure("advantage", None, _up(claim_profile(epsilon, delta, 0.0)), 0.0))
    base, weight = max(prior, 1.0 - prior), min(prior, 1.0 - prior)
    threshold = abs(math.log(prior) - math.log1p(-prior))
    figures.append(ClaimFigure("posterior_success", prior,
                               _up(base + weight * claim_profile(epsilon, delta, threshold)), base))
    if baseline is not None:
        kappa = check_probability(baseline, "--baseline")
        figures.append(ClaimFigure("reconstruction", kappa,
                                   _up(claim_tpr(epsilon, delta, kappa)), kappa))
    return figures
