"""What a run is, and the worst case of one of its steps: sampler and adjacency names
(samplers.py), Phase/Schedule (schedule.py), the dominating pair of one step per model
(worst_case.py: mixtures, replace-one, symmetrised, zero-out splice, revealed mixture,
truncated Poisson), the explicit lower-bound runs (lower_instances.py), the Gaussian
mechanism's exact profile (gaussian.py), subsampling weights, and the batch samplers that
draw each model's batches and report its Schedule (batch_samplers.py, NumPy only).

Add a sampler here: one dominating pair (and, where the pair is not attained, one lower
instance); every numeric accountant reads it. May import: numerics, params, errors.
"""
