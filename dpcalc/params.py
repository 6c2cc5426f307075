"""Validated inputs shared by every command: sampling, steps, noise, delta.

Each check raises :class:`DpcalcError` whose message names the flag and its valid
range, so the CLI can print it as is.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from dpcalc.errors import DpcalcError

# Numbers on the command line: plain ASCII decimal literals (and the words inf/nan, which
# then fail the finiteness check with a clear message). Python's float() would also take
# '1_000' and non-ASCII digits; scripts should not depend on that, so both are refused.
_NUMBER_TEXT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(inf|infinity|nan)",
                          re.IGNORECASE)
_SHOWN_CHARACTERS = 60


def _show(value) -> str:
    """An input echoed in an error line, cut to a readable length."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"an integer of {len(str(abs(value))) if value.bit_length() < 14000 else 'over 4000'} digits"
    try:
        text = " ".join(repr(value).split())
    except Exception:  # a user object whose __repr__ fails
        text = f"a {type(value).__name__}"
    if len(text) > _SHOWN_CHARACTERS:
        text = text[:_SHOWN_CHARACTERS - 5] + "…" + text[-4:]
    return text


def shown(value) -> str:
    """``value`` as an error line echoes it (cut to a readable length)."""
    return _show(value)


def float_array(values, flag: str, valid: str):
    """``values`` (a number or a sequence of them) as a float ndarray, else a DpcalcError
    stating ``valid``: no strings, booleans, complex numbers, None, integers beyond the
    float range (10**400) or NaN. numpy is imported here, not at start-up."""
    import numpy as np

    # the engine's own arrays (exactly float64 ndarrays: a masked array hides NaNs from
    # isnan, float32 breaks the float64 rounding allowances; both take the copy below)
    if type(values) is np.ndarray and values.dtype == np.float64:
        if np.isnan(values).any():
            raise DpcalcError(f"{flag} must be {valid}; got NaN")
        return values

    def refused() -> DpcalcError:  # the echo is built only when refusing (a repr costs)
        return DpcalcError(f"{flag} must be {valid}; got {_show(values)}")

    if values is None or isinstance(values, (str, bytes, dict, set, frozenset)):
        raise refused()
    try:
        if isinstance(values, np.ma.MaskedArray):  # a masked entry is no number
            values = np.ma.asarray(values, dtype=float).filled(np.nan)
        array = np.asarray(values)
    except (TypeError, ValueError, OverflowError):  # ragged nesting, odd objects
        raise refused() from None
    if array.dtype.kind not in "iuf":  # b(ool), c(omplex), O(bject: 10**400, None), U, S
        raise refused()
    array = np.array(array, dtype=float)  # a plain float64 copy (masked values exposed)
    if np.isnan(array).any():
        raise DpcalcError(f"{flag} must be {valid}; got NaN")
    return array


def check_callable(value, flag: str, optional: bool = False):
    """A function (or None where ``optional``), else a DpcalcError."""
    if (value is None and optional) or callable(value):
        return value
    raise DpcalcError(f"{flag} must be a function{' or None' if optional else ''}; "
                      f"got {_show(value)}")


def check_items(values, flag: str, what: str, empty: bool = False) -> list:
    """A list or tuple (or other finite iterable that is not text) as a list; non-empty
    unless ``empty``."""
    if values is None or isinstance(values, (str, bytes, dict)):
        raise DpcalcError(f"{flag} must be a non-empty list of {what}; got {_show(values)}")
    try:
        items = list(values)
    except TypeError:
        raise DpcalcError(f"{flag} must be a non-empty list of {what}; got {_show(values)}") from None
    if not items and not empty:
        raise DpcalcError(f"{flag} must be a non-empty list of {what}; got an empty one")
    return items


def _number(value, flag: str, valid: str) -> float:
    """A finite float from ``value`` (str or number), else an error stating ``valid``."""
    if isinstance(value, bool) or value is None:
        raise DpcalcError(f"{flag} must be a number {valid}; got {_show(value)}")
    if isinstance(value, str) and not _NUMBER_TEXT.fullmatch(value.strip()):
        raise DpcalcError(f"{flag} must be a number {valid} (plain decimal digits, e.g. 0.01 "
                          f"or 1e-5); got {_show(value)}")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise DpcalcError(f"{flag} must be a number {valid}; got {_show(value)}") from None
    if not math.isfinite(number):
        raise DpcalcError(f"{flag} must be a finite number {valid}; got {_show(value)}")
    return number


def check_range(value, flag: str, low: float, high: float, *, low_open: bool = True,
                high_open: bool = True, what: str = "") -> float:
    """A number in the interval between ``low`` and ``high`` (ends open or closed)."""
    interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    label = f"{flag} ({what})" if what else flag
    valid = f"in {interval}"
    number = _number(value, label, valid)
    above_low = number > low if low_open else number >= low
    below_high = number < high if high_open else number <= high
    if not (above_low and below_high):
        raise DpcalcError(f"{label} must be {valid}; got {_show(value)}")
    return number


def check_open_interval(value, flag: str, low: float, high: float) -> float:
    """A number with ``low < value < high``."""
    return check_range(value, flag, low, high)


def check_sampling_rate(value, flag: str = "--q") -> float:
    """Poisson sampling rate q in (0, 1]."""
    return check_range(value, flag, 0.0, 1.0, high_open=False, what="sampling rate")


MIN_NOISE_MULTIPLIER = 1e-4
MAX_NOISE_MULTIPLIER = 1e6


def check_noise_multiplier(value, flag: str = "--sigma") -> float:
    """Noise multiplier σ (noise std divided by the clipping norm) in [1e-4, 1e6].

    Beyond these ends ε is astronomically large (σ → 0) or 0 to every printed digit
    (σ → ∞), and float64 can no longer represent one step's privacy loss."""
    return check_range(value, flag, MIN_NOISE_MULTIPLIER, MAX_NOISE_MULTIPLIER,
                       low_open=False, high_open=False, what="noise multiplier")


def check_positive(value, flag: str, what: str = "") -> float:
    """A finite number > 0."""
    label = f"{flag} ({what})" if what else flag
    number = _number(value, label, "> 0")
    if not number > 0.0:
        raise DpcalcError(f"{label} must be > 0; got {_show(value)}")
    return number


def check_nonnegative_or_inf(value, flag: str) -> float:
    """A number >= 0, where +inf is allowed (e.g. "no finite ε")."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == math.inf:
        return math.inf
    if isinstance(value, str) and value.strip().lower() in ("inf", "+inf", "infinity"):
        return math.inf
    number = _number(value, flag, ">= 0 (or inf)")
    if not number >= 0.0:
        raise DpcalcError(f"{flag} must be >= 0 (or inf); got {_show(value)}")
    return number


def check_nonnegative(value, flag: str) -> float:
    """A finite number >= 0."""
    number = _number(value, flag, ">= 0")
    if not number >= 0.0:
        raise DpcalcError(f"{flag} must be >= 0; got {_show(value)}")
    return number


SMALLEST_DELTA = 1e-300


def check_delta(value, flag: str = "--delta") -> float:
    """Target δ in [1e-300, 1): below, float64 cannot hold the tail masses (denormals)."""
    return check_range(value, flag, SMALLEST_DELTA, 1.0, low_open=False)


MAX_STEPS = 10**9


def check_count(value, flag: str, minimum: int = 1, maximum: int = 10**12) -> int:
    """A whole number in [minimum, maximum]."""
    top = f"1e{round(math.log10(maximum))}" if maximum >= 10**6 else str(maximum)
    valid = f"(a whole number from {minimum} to {top})"
    number = _number(value, flag, valid)
    if number != math.floor(number) or not minimum <= number <= maximum:
        raise DpcalcError(f"{flag} must be a whole number from {minimum} to {top}; "
                          f"got {_show(value)}")
    return int(number)


def rate_conflict(sampling_rate, batch_size, dataset_size,
                  flags: tuple[str, str, str] = ("--q", "--batch-size", "--dataset-size")) -> str:
    """The error line for a sampling rate given twice: names the flags and values given."""
    q_flag, batch_flag, dataset_flag = flags
    given = [f"{flag}{'=' if ' ' in flag else ' '}"  # "--phase q=0.01", "--q 0.01"
             f"{value if isinstance(value, str) else _show(value)}"
             for flag, value in zip(flags, (sampling_rate, batch_size, dataset_size))
             if value is not None]
    shown = given[0] if len(given) == 1 else f"{', '.join(given[:-1])} and {given[-1]}"
    return (f"the sampling rate is given twice ({shown}): give either {q_flag} "
            f"or {batch_flag} with {dataset_flag} (q = B/N), not both")


def resolve_sampling_rate(
    sampling_rate: float | None,
    batch_size: int | None,
    dataset_size: int | None,
    flags: tuple[str, str, str] = ("--q", "--batch-size", "--dataset-size"),
) -> float:
    """q from --q, or from --batch-size/--dataset-size (q = B/N); exactly one form."""
    q_flag, batch_flag, dataset_flag = flags
    has_batch = batch_size is not None or dataset_size is not None
    if sampling_rate is not None and has_batch:
        raise DpcalcError(rate_conflict(sampling_rate, batch_size, dataset_size, flags))
    if sampling_rate is not None:
        return check_sampling_rate(sampling_rate, q_flag)
    if batch_size is None or dataset_size is None:
        raise DpcalcError(f"give {q_flag}, or both {batch_flag} and {dataset_flag}")
    batch = check_count(batch_size, batch_flag)
    dataset = check_count(dataset_size, dataset_flag)
    if batch > dataset:
        raise DpcalcError(f"{batch_flag} must be <= {dataset_flag} ({dataset}); got {batch}")
    return batch / dataset


@dataclass(frozen=True)
class EpochSteps:
    """Steps from epochs, and how they were derived.

    dpcalc rounds up: a partial last epoch counts as a full step, and more steps only
    raise ε, so the reported ε is never too small. Opacus derives ``int(epochs / q)``
    (``get_noise_multiplier``), one step fewer whenever epochs/q is not whole: 30 epochs
    of B = 512 out of N = 50 000 are 2929.6875 exact steps, 2930 here and 2929 there."""

    epochs: float
    per_epoch: float  # N/B, or 1/q; a loader's whole batches per epoch (``batches``)
    exact: float
    steps: int  # rounded up: the safe side
    opacus_steps: int  # int(epochs / q), rounded down
    formula: str  # "30·50000/512" (epochs·N/B) or "30/0.01" (epochs/q)
    batches: int | None = None  # an epoch sampler's steps per epoch b (None: N/B or 1/q)
    batches_rule: str = ""  # how b was counted, e.g. "⌈N/B⌉, the last batch partial"

    @property
    def note(self) -> str:
        """One line naming the derivation, for the output."""
        if self.batches is not None:
            return (f"steps from epochs: ⌈{self.epochs:g} epochs × {self.batches} batches per "
                    f"epoch ({self.batches_rule})⌉ = {self.steps}: a loader's epoch is all of "
                    "its batches (rounded up: the safe side)")
        if self.steps == self.opacus_steps:
            return f"steps from epochs: {self.formula} = {self.steps} (as Opacus counts them too)"
        return (f"steps from epochs: ⌈{self.formula}⌉ = ⌈{self.exact:.6g}⌉ = {self.steps}, "
                f"rounded up: the safe side (more steps, larger ε); Opacus's int(epochs/q) "
                f"gives {self.opacus_steps}")


def batches_per_epoch(sampling_rate: float, batch_size: int | None = None,
                      dataset_size: int | None = None, drop_last: bool = False) -> int:
    """An epoch sampler's steps per epoch b: ⌈N/B⌉ (every record once, the last batch
    partial when B ∤ N), ⌊N/B⌋ when the partial batch is dropped, or ⌈1/q⌉ from q alone
    (a relative 1e-9 absorbs float error in q = B/N)."""
    if batch_size is not None and dataset_size is not None:
        whole, rest = divmod(int(dataset_size), int(batch_size))
        return max(1, whole if drop_last else whole + (rest > 0))
    return max(1, math.ceil(1.0 / sampling_rate * (1.0 - 1e-9)))


def epoch_steps(epochs, sampling_rate: float, batch_size: int | None = None,
                dataset_size: int | None = None, epochs_flag: str = "--epochs",
                batches: int | None = None, batches_rule: str = "") -> EpochSteps:
    """Steps for ``epochs`` passes: ceil(epochs·N/B) with B and N, else ceil(epochs/q).
    ``batches``: an epoch sampler's (a data loader's) b steps per epoch, every one of them
    run (⌈N/B⌉ with the last batch partial): ceil(epochs·b)."""
    epochs = check_positive(epochs, epochs_flag)
    if batches is not None:
        exact = epochs * batches
        if not exact <= MAX_STEPS:
            raise DpcalcError(f"{epochs_flag} {epochs:g} gives more than 1e9 steps "
                              f"({batches} per epoch); at most 1e9 are supported")
        steps = max(1, math.ceil(exact - 1e-9 * batches))
        return EpochSteps(epochs, float(batches), exact, steps, int(epochs / sampling_rate),
                          f"{epochs:g}·{batches}", batches, batches_rule)
    if batch_size is not None and dataset_size is not None:
        per_epoch, formula = dataset_size / batch_size, f"{epochs:g}·{dataset_size}/{batch_size}"
    else:
        per_epoch, formula = 1.0 / sampling_rate, f"{epochs:g}/{sampling_rate:g}"
    exact = epochs * per_epoch  # may be inf for absurd epochs: checked before rounding
    if not exact <= MAX_STEPS:
        raise DpcalcError(f"{epochs_flag} {epochs:g} gives more than 1e9 steps "
                          f"({per_epoch:.6g} per epoch); at most 1e9 are supported")
    # A relative 1e-9 of an epoch absorbs float error (60·60000/256 must not round up).
    slack = 1e-9 * per_epoch
    steps = max(1, math.ceil(exact - slack))
    opacus_steps = int(epochs / sampling_rate)  # as Opacus computes it, float and all
    return EpochSteps(epochs, per_epoch, exact, steps, opacus_steps, formula)


def resolve_steps(steps: int | None, epochs: float | None, sampling_rate: float,
                  batch_size: int | None = None, dataset_size: int | None = None,
                  steps_flag: str = "--steps", epochs_flag: str = "--epochs") -> int:
    """Steps from --steps, or from --epochs (see :func:`epoch_steps`: rounded up, the safe
    side; Opacus takes ⌊epochs/q⌋, one step fewer when epochs/q is not whole)."""
    if steps is not None and epochs is not None:
        raise DpcalcError(f"give either {steps_flag} or {epochs_flag}, not both")
    if steps is not None:
        return check_count(steps, steps_flag, maximum=MAX_STEPS)
    if epochs is None:
        raise DpcalcError(f"give {steps_flag} or {epochs_flag}")
    return epoch_steps(epochs, sampling_rate, batch_size, dataset_size, epochs_flag).steps
