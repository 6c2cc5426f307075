"""Numerics with no privacy in them: special functions in NumPy alone (log Φ, erfcx and
their differences, kept free of scipy at start-up), normal masses of short intervals,
real FFTs, and bucket masses in log space.

May import: nothing of dpcalc but errors/params. Imported by every package above it.
"""
