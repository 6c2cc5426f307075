"""Group privacy: k protected records. The dominating pairs per model and pb on them
(pairs.py), and the other methods, their dispatch and σ calibration (bounds.py).

May import: calibration, accountants, pb, models, numerics, params, errors.
"""
