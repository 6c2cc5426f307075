"""Sweep syntax of `dpcalc compare`: a value, a list 'a,b,c' or a range 'start:stop:N' /
'start:stop:logN', for one of --q, --sigma, --steps/--epochs; and lists of samplers."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from dpcalc.cli.schedule_options import loader_batches
from dpcalc.models.samplers import parse_sampling
from dpcalc.errors import DpcalcError
from dpcalc.params import (check_count, check_noise_multiplier, check_positive, check_sampling_rate,
                           epoch_steps, rate_conflict, resolve_sampling_rate)

MAX_SWEEP_POINTS = 1000
# Accountants whose every sweep point is a computation of ~0.05-1 s on this machine (pb's
# composition, strong composition's search over the split of δ): a sweep computes at most
# SLOW_SWEEP_POINTS of their points (points × such accountants) unless --max-sweep-points
# raises it, so a sweep of the documented size stays within about a minute (issue 30 §3).
SLOW_ACCOUNTANTS = ("pb", "strong")
SLOW_SWEEP_POINTS = 200
_SWEEP_SYNTAX = (
    "a value, a list 'a,b,c', or a range 'start:stop:N' (N evenly spaced points, ends included) "
    "or 'start:stop:logN' (N log-spaced points, ends included)"
)


def _dedupe(values: list) -> list:
    seen, kept = set(), []
    for value in values:
        if value not in seen:
            seen.add(value)
            kept.append(value)
    return kept


def _range_values(text: str, flag: str, check: Callable, integer: bool) -> list:
    parts = text.split(":")
    if len(parts) != 3:
        raise DpcalcError(f"{flag} takes {_SWEEP_SYNTAX}; got {text!r}")
    start, stop = check(parts[0].strip(), flag), check(parts[1].strip(), flag)
    spec = parts[2].strip().lower()
    log_spaced = spec.startswith("log")
    count = check_count(spec[3:] if log_spaced else spec, f"{flag} (number of points in the range)",
                        minimum=2, maximum=MAX_SWEEP_POINTS)
    import numpy as np  # only when a range is given: numpy costs start-up time

    points = np.geomspace(start, stop, count) if log_spaced else np.linspace(start, stop, count)
    points[0], points[-1] = start, stop  # exact ends
    if integer:
        return [check(int(round(value)), flag) for value in points]
    return [check(float(value), flag) for value in points]


def parse_sweep(text: str, flag: str, check: Callable, integer: bool = False) -> list:
    """A value, a list 'a,b,c' or a range 'start:stop:N' / 'start:stop:logN' → values
    (each validated by ``check(value, flag)``; integers rounded; duplicates dropped)."""
    text = str(text).strip()
    if ":" in text:
        values = _range_values(text, flag, check, integer)
    else:
        items = [item.strip() for item in text.split(",")]
        if not all(items):
            raise DpcalcError(f"{flag} takes {_SWEEP_SYNTAX}; got {text!r}")
        values = [check(item, flag) for item in items]
    values = _dedupe(values)
    if len(values) > MAX_SWEEP_POINTS:
        raise DpcalcError(f"{flag} sweeps at most {MAX_SWEEP_POINTS} points; got {len(values)}")
    return values


def _steps_check(value, flag):
    return check_count(value, flag, maximum=10**9)


def _positive_check(value, flag):
    return check_positive(value, flag)


@dataclass(frozen=True)
class Point:
    """One configuration of the sweep."""

    q: float
    sigma: float
    steps: int
    epochs: float | None
    sampling: str = "poisson"


@dataclass
class Sweep:
    points: list[Point]
    swept: str | None  # "steps", "epochs", "sigma", "q" or None (one configuration)
    inputs: dict
    samplings: tuple[str, ...] = ("poisson",)
    log_spaced: bool = False  # the swept values came from a 'start:stop:logN' range

    def x_values(self) -> list[float]:
        return [getattr(point, self.swept) for point in self.points] if self.swept else []


def parse_samplings(text) -> tuple[str, ...]:
    """'poisson' or a list 'poisson,fixed' → distinct sampler names, in order."""
    items = [item.strip() for item in str(text).split(",")]
    if not all(items):
        raise DpcalcError(f"--sampling takes a sampler name or a list 'poisson,fixed'; got {text!r}")
    return tuple(dict.fromkeys(parse_sampling(item) for item in items))


def build_sweep(q, batch_size, dataset_size, sigma, steps, epochs,
                sampling: str = "poisson", drop_last: bool = False) -> Sweep:
    """Validate the flags into the configurations to evaluate (at most one numeric flag
    swept; each configuration for every sampler listed). An epoch sampler's epoch is its
    b batches (schedule_options.loader_batches)."""
    samplings = parse_samplings(sampling)
    if q is not None:
        # truncated Poisson takes N beside --q (the cut depends on it)
        if batch_size is not None or (dataset_size is not None
                                      and "truncated-poisson" not in samplings):
            raise DpcalcError(rate_conflict(q, batch_size, dataset_size))
        rates = parse_sweep(q, "--q", lambda value, flag: check_sampling_rate(value, flag))
    else:
        rates = [resolve_sampling_rate(None, batch_size, dataset_size)]
    batch = None if batch_size is None else check_count(batch_size, "--batch-size")
    dataset = None if dataset_size is None else check_count(dataset_size, "--dataset-size")
    if sigma is None:
        raise DpcalcError("give --sigma (noise multiplier, > 0)")
    sigmas = parse_sweep(sigma, "--sigma", lambda value, flag: check_noise_multiplier(value, flag))
    if steps is not None and epochs is not None:
        raise DpcalcError("give either --steps or --epochs, not both")
    if steps is None and epochs is None:
        raise DpcalcError("give --steps or --epochs")
    step_values = None if steps is None else parse_sweep(steps, "--steps", _steps_check, integer=True)
    epoch_values = None if epochs is None else parse_sweep(epochs, "--epochs", _positive_check)
    lengths = {"q": len(rates), "sigma": len(sigmas),
               "steps": len(step_values or []), "epochs": len(epoch_values or [])}
    swept = [name for name, length in lengths.items() if length > 1]
    if len(swept) > 1:
        flags = " and ".join(f"--{name}" for name in swept)
        raise DpcalcError(f"sweep one of --q, --sigma, --steps/--epochs at a time; got lists for {flags}")
    points = []
    for chosen in samplings:
        for rate in rates:
            for noise in sigmas:
                for step_count, epoch_count in _step_choices(step_values, epoch_values, rate, batch,
                                                             dataset, chosen, drop_last):
                    points.append(Point(rate, noise, step_count, epoch_count, chosen))
    inputs = {"q": rates[0] if len(rates) == 1 else rates, "batch_size": batch,
              "dataset_size": dataset, "sigma": sigmas[0] if len(sigmas) == 1 else sigmas}
    if epoch_values is not None:
        inputs["epochs"] = epoch_values[0] if len(epoch_values) == 1 else epoch_values
    first = [point for point in points if point.sampling == samplings[0]]
    inputs["steps"] = (first[0].steps if len({p.steps for p in first}) == 1
                       else [point.steps for point in first])
    inputs["sampling"] = samplings[0] if len(samplings) == 1 else list(samplings)
    texts = {"q": q, "sigma": sigma, "steps": steps, "epochs": epochs}
    log_spaced = bool(swept) and ":log" in str(texts[swept[0]]).replace(" ", "").lower()
    if epoch_values is not None and len(points) == 1:
        derived = epoch_steps(epoch_values[0], rates[0], batch, dataset, "--epochs",
                              *loader_batches(samplings[0], rates[0], batch, dataset, drop_last))
        inputs["steps_from_epochs"] = {"exact": derived.exact, "steps": derived.steps,
                                       "opacus_steps": derived.opacus_steps, "note": derived.note}
    return Sweep(points, swept[0] if swept else None, inputs, samplings, log_spaced)


def check_sweep_work(sweep: Sweep, names: list[str], limit_text) -> int:
    """Refuse a sweep whose points × slow accountants (SLOW_ACCOUNTANTS) exceed the limit
    (``--max-sweep-points``, default SLOW_SWEEP_POINTS): one line naming the flag, the limit
    and how to raise it. Returns that count (the work the progress bar announces)."""
    limit = (SLOW_SWEEP_POINTS if limit_text is None
             else check_count(limit_text, "--max-sweep-points",
                              maximum=MAX_SWEEP_POINTS * len(SLOW_ACCOUNTANTS)))
    slow = [name for name in names if name in SLOW_ACCOUNTANTS]
    work = len(sweep.points) * len(slow)
    if work > limit:
        swept = f"--{sweep.swept}" if sweep.swept else "the sweep"
        raise DpcalcError(f"{swept} sweeps {len(sweep.points)} points with {', '.join(slow)}: "
                          f"{work} slow points (about 0.05-1 s each) exceed the limit "
                          f"--max-sweep-points {limit}; give fewer points, -a without "
                          f"{'/'.join(slow)}, or --max-sweep-points {work} to run it")
    return work


def epochs_notes(sweep: Sweep) -> list[str]:
    """How steps came from --epochs: the derivation of the one point, or the rule."""
    if "epochs" not in sweep.inputs:
        return []
    if "steps_from_epochs" in sweep.inputs:
        return [sweep.inputs["steps_from_epochs"]["note"]]
    return ["steps from epochs: ⌈epochs·N/B⌉ (or ⌈epochs/q⌉) at every point, rounded up: the "
            "safe side (more steps, larger ε); Opacus's int(epochs/q) may count one fewer; an "
            "epoch sampler's epoch is its b batches: ⌈epochs·b⌉"]


def _step_choices(step_values, epoch_values, rate, batch, dataset, sampling="poisson",
                  drop_last=False):
    if step_values is not None:
        return [(count, None) for count in step_values]
    count, rule = loader_batches(sampling, rate, batch, dataset, drop_last)
    return [(epoch_steps(epochs, rate, batch, dataset, "--epochs", count, rule).steps, epochs)
            for epochs in epoch_values]


