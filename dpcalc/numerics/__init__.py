"""Numerics with no privacy in them: special functions in NumPy alone (log Φ, erfcx and
their differences, kept free of scipy at start-up), normal masses of short intervals,
real FFTs, bucket masses in log space, and the tails of many Gaussian mixtures at once.

May import: nothing of dpcalc but errors/params. Imported by every package above it.
"""
