"""Balls-in-bins (random allocation): the numerics of one epoch's certified bounds, below
the accountants that combine them (accountants/allocation*.py). The centred Laplace
transform ψ of one step's likelihood ratio (laplace.py); the exact Rényi divergences of one
epoch, add (add_rdp.py, real orders) and remove (remove_rdp.py, integer orders); Poisson
compositions read as profiles and the ε search over a profile (poisson.py); the
decomposition bound (decomposition.py) and the recursive bound (recursive.py).

May import: pb, pld, models, numerics, params, errors.
"""
