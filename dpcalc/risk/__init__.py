"""What a run's privacy means for an attacker, certified on both sides: trade-off curves
and TPR at FPR (tradeoff.py), the Gaussian-DP μ (gdp_mu.py), every figure at once
(bounds.py), the epoch samplers' profiles (epoch.py) and σ for a risk target
(calibration.py).

May import: calibration, accountants, pb, models, numerics, params, errors.
"""
