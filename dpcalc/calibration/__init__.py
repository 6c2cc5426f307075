"""Noise calibration: the smallest σ whose certified ε meets a target. The bracketed
search (search.py), its final certified check (certify.py), DP-SGD runs for any accountant
(dpsgd.py), the epoch samplers (epochs.py) and one Gaussian mechanism (gaussian.py).

May import: accountants, pb, models, numerics, params, errors.
"""
