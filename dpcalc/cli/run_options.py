"""The options that describe one run — q or B/N, σ, steps or epochs, phases (or a schedule
file), pipeline, sampler, adjacency, drop-last, unit, max batch size — declared once for every
command that reads a run.

A command names one parameter ``run: RunFlags``; :func:`run_options` puts the run's options
in its place in the signature Typer reads (same names, order and help everywhere) and hands
the command one :class:`RunFlags`. A command may leave some out or give its own variant
(``sigma`` has no --sigma; ``compare`` takes lists)."""
from __future__ import annotations

import inspect
from dataclasses import dataclass, replace
from typing import List, Optional

from dpcalc.cli import options as opt


@dataclass(frozen=True)
class RunFlags:
    """The run's options as typed (text, validated by :meth:`schedule`); None where not given."""

    q: Optional[str] = None
    batch_size: Optional[str] = None
    dataset_size: Optional[str] = None
    sigma: Optional[str] = None
    steps: Optional[str] = None
    epochs: Optional[str] = None
    phase: Optional[List[str]] = None
    schedule_file: Optional[str] = None
    pipeline: Optional[str] = None
    sampling: Optional[str] = None  # None: the pipeline's, else poisson
    adjacency: Optional[str] = None  # None: the pipeline's, else add-remove
    drop_last: bool = False
    unit: Optional[str] = None  # None: the pipeline's, else example
    max_batch_size: Optional[str] = None
    # a federated run's names for B, N and T (:func:`federated`)
    clients_per_round: Optional[str] = None
    clients: Optional[str] = None
    rounds: Optional[str] = None

    def schedule(self, with_sigma: bool = True):
        """The validated run (schedule_options.build_schedule): schedule, echoed inputs, notes."""
        from dpcalc.cli.schedule_options import build_schedule

        return build_schedule(self.q, self.batch_size, self.dataset_size, self.sigma, self.steps,
                              self.epochs, self.phase, self.sampling, self.adjacency,
                              with_sigma=with_sigma, max_batch_size=self.max_batch_size,
                              pipeline=self.pipeline, unit=self.unit, drop_last=self.drop_last,
                              schedule_path=self.schedule_file)


# field -> (its flag, the field it stands for, that field's flag)
CLIENT_FLAGS = {"clients_per_round": ("--clients-per-round", "batch_size", "--batch-size"),
                "clients": ("--clients", "dataset_size", "--dataset-size"),
                "rounds": ("--rounds", "steps", "--steps")}


def federated(run: RunFlags, lists: frozenset = frozenset()) -> RunFlags:
    """A run given in clients (--clients-per-round m, --clients M, --rounds): client-level
    DP-SGD, clients the records and rounds the steps, so m, M and the rounds are --batch-size,
    --dataset-size and --steps with --unit client. Without --pipeline or --sampling, m of M
    clients drawn each round is --pipeline flower (exactly m, without replacement: Flower's
    and TFF's sampling), a rate --q is --pipeline federated-poisson. ``lists``: fields the
    command reads as lists (compare's sweeps), passed on as typed for its own checks."""
    from dpcalc.errors import DpcalcError
    from dpcalc.params import check_count
    from dpcalc.pipelines.names import CLIENT, get_pipeline, parse_unit

    given = [name for name in CLIENT_FLAGS if getattr(run, name) is not None]
    if not given:
        return run
    named = "/".join(CLIENT_FLAGS[name][0] for name in given)
    changes: dict = {}
    for name in given:
        flag, field, plain = CLIENT_FLAGS[name]
        if getattr(run, field) is not None:
            raise DpcalcError(f"give {flag} or {plain}, not both ({flag} is a federated run's "
                              f"{plain})")
        value = getattr(run, name)
        changes[field] = value if field in lists else str(check_count(value, flag))
        changes[name] = None
    drawn, clients = changes.get("batch_size"), changes.get("dataset_size")
    if (isinstance(drawn, str) and isinstance(clients, str)  # (compare's lists: its own check)
            and int(drawn) > int(clients)):
        raise DpcalcError(f"--clients-per-round must be <= --clients ({clients}); got {drawn}")
    if run.q is not None and "dataset_size" in changes:
        raise DpcalcError("the rate is given twice: give --q (each client joins a round with "
                          "probability q) or --clients-per-round with --clients (q = m/M), "
                          "not both")
    if run.unit is not None and parse_unit(run.unit) != CLIENT:
        raise DpcalcError(f"{named} describe a federated run (--unit client); got --unit {run.unit}")
    if run.pipeline is not None and get_pipeline(run.pipeline).unit != CLIENT and run.unit is None:
        raise DpcalcError(f"{named} describe a federated run; --pipeline {run.pipeline} is not "
                          "one (give flower, federated-poisson or --unit client)")
    if run.pipeline is None and run.sampling is None:
        changes["pipeline"] = "flower" if "batch_size" in changes else "federated-poisson"
    elif run.unit is None:
        changes["unit"] = CLIENT
    return replace(run, **changes)


# name -> (annotation, the Typer option); in the order every command shows them
RUN_OPTIONS = {
    "q": (Optional[str], opt.Q),
    "batch_size": (Optional[str], opt.BATCH_SIZE),
    "dataset_size": (Optional[str], opt.DATASET_SIZE),
    "sigma": (Optional[str], opt.SIGMA),
    "steps": (Optional[str], opt.STEPS),
    "epochs": (Optional[str], opt.EPOCHS),
    "phase": (Optional[List[str]], opt.PHASE),
    "schedule_file": (Optional[str], opt.SCHEDULE),
    "pipeline": (Optional[str], opt.PIPELINE),
    "sampling": (Optional[str], opt.SAMPLING),
    "adjacency": (Optional[str], opt.RUN_ADJACENCY),
    "drop_last": (bool, opt.DROP_LAST),
    "unit": (Optional[str], opt.UNIT),
    "max_batch_size": (Optional[str], opt.MAX_BATCH_SIZE),
    "clients_per_round": (Optional[str], opt.CLIENTS_PER_ROUND),
    "clients": (Optional[str], opt.CLIENTS),
    "rounds": (Optional[str], opt.ROUNDS),
}
RUN = RunFlags()  # the placeholder default of a command's ``run`` parameter


def run_options(command=None, *, omit: tuple[str, ...] = (), own: dict | None = None):
    """Decorate a Typer command whose parameter ``run: RunFlags`` stands for the run's
    options: they take its place in the signature, and the command is called with one
    RunFlags. ``omit``: options the command does not take; ``own``: name → Typer option
    replacing the shared one (same annotation)."""
    own = own or {}

    def decorate(function):
        signature = inspect.signature(function, eval_str=True)
        spot = [name for name, parameter in signature.parameters.items()
                if parameter.annotation is RunFlags]
        if len(spot) != 1:
            raise TypeError(f"{function.__name__} needs exactly one `run: RunFlags` parameter")
        spot = spot[0]
        taken = [name for name in RUN_OPTIONS if name not in omit]
        flags = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                   default=own.get(name, RUN_OPTIONS[name][1]),
                                   annotation=RUN_OPTIONS[name][0]) for name in taken]
        parameters = []
        for name, parameter in signature.parameters.items():
            parameters.extend(flags if name == spot else [parameter])

        def command_with_run(**values):
            run = federated(RunFlags(**{name: values.pop(name, getattr(RUN, name))
                                        for name in taken}), frozenset(own))
            return function(**{spot: run}, **values)

        command_with_run.__signature__ = signature.replace(parameters=parameters)
        command_with_run.__annotations__ = {p.name: p.annotation for p in parameters}
        command_with_run.__annotations__["return"] = signature.return_annotation
        for attribute in ("__name__", "__qualname__", "__doc__", "__module__"):
            setattr(command_with_run, attribute, getattr(function, attribute))
        return command_with_run

    return decorate if command is None else decorate(command)
