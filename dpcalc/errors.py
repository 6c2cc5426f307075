"""The one exception type the CLI turns into a message and exit code 2."""


class DpcalcError(ValueError):
    """Bad input or an impossible request.

    The message names the offending input and its valid range, e.g.
    ``--q must be in (0, 1]; got 1.5``.
    """
