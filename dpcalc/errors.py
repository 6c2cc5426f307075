"""The exception the CLI turns into a message and exit code 2, and the one it reports as a bug."""


class DpcalcError(ValueError):
    """Bad input or an impossible request.

    The message names the offending input and its valid range, e.g.
    ``--q must be in (0, 1]; got 1.5``.
    """


class InvalidResult(DpcalcError, ArithmeticError):
    """A result that is not one: an EpsilonResult or WorstCase built with NaN, a negative ε
    or the wrong types, or a function handed to calibrate_noise_multiplier that answered
    NaN. Given by a library user it is bad input (a DpcalcError); inside the CLI, where
    dpcalc computed every such value itself, it is a bug: exit 70, not 2 (cli/app.py). An
    ArithmeticError too, as the NaN check of the calibration search always was."""


class InconsistentBounds(ArithmeticError):
    """A certified lower bound came out above the certified upper bound: a bug, surfaced
    (never clamped away)."""
