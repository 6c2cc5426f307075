"""The accountants and their contract: every one answers ε for δ and δ for ε on a
Schedule (base.py, result.py), by name (registry.py, evaluate.py). pb (pb.py, numeric PLD,
certified both sides), the RDP family (rdp*.py: series, conversions, replace-one; the rdp,
moments and abadi accountants), gdp (an approximation), the (ε, δ) composition theorems
(composition.py: strong, naive), and the epoch samplers' certificates (epoch_samplers.py,
allocation*.py: shuffle, shuffle-once, balls-in-bins, the last on the allocation package).

May import: allocation, pb, pld, models, numerics, params, errors.
"""
