"""dpcalc: a privacy calculator for differentially private training."""

__version__ = "0.1.0"
