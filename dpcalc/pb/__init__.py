"""pb, the certified numeric method, on top of the pld engine: for a schedule, choose the
first grid (first_grid.py), run the passes of one grid per direction (direction_pass.py,
grid_passes.py), refine until the gap meets the tolerance (buckets.py: epsilon_bounds,
delta_bounds), and the views built on the same compositions: ε over many step counts
(curve.py), ε(δ) profiles (profiles.py) and the two-sided profiles risk reads (composed.py).

May import: pld, models, numerics, params, errors.
"""
