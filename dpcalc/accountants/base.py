"""The contract every accountant meets: ε for δ and δ for ε on a :class:`Schedule`.

Each accountant declares the models (sampler, adjacency) it bounds. On any other model it
answers "not applicable" with a note naming why — never a number for another model.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from functools import partial
from typing import Callable, ClassVar

from dpcalc.accountants.result import EpsilonResult
from dpcalc.models.samplers import (ADJACENCIES, EPOCH_SAMPLINGS, PAIR_SAMPLINGS, SIMPLE_SAMPLINGS,
                                    TRUNCATED_POISSON, model_label)
from dpcalc.models.schedule import Schedule
from dpcalc.errors import DpcalcError
from dpcalc.params import check_callable, check_delta, check_items, check_nonnegative

# The models bounded by one dominating pair per step (worst_case.py); the epoch samplers
# (shuffle, balls-in-bins) are pb's alone (epoch_samplers.py).
ALL_MODELS = frozenset((sampling, adjacency) for sampling in PAIR_SAMPLINGS
                       for adjacency in ADJACENCIES)
# The models whose worst case is one subsampled Gaussian (a rate and a sensitivity): what
# the closed-form accountants read. Truncated Poisson is a mixture of two (truncated.py).
SIMPLE_MODELS = frozenset((sampling, adjacency) for sampling in SIMPLE_SAMPLINGS
                          for adjacency in ADJACENCIES)
_WHY_NOT = {TRUNCATED_POISSON: " (its worst case is a mixture of two subsampled Gaussians; this "
                               "accountant reads one rate and sensitivity: use pb, rdp or moments)"}


def check_schedule(schedule) -> Schedule:
    """``schedule`` itself, or a DpcalcError naming what it should be."""
    if not isinstance(schedule, Schedule):
        raise DpcalcError(f"expected a dpcalc Schedule; got {type(schedule).__name__}")
    return schedule


class Accountant(ABC):
    """Bounds the privacy of a DP-SGD :class:`Schedule`.

    ``certified`` accountants return upper bounds on the true ε (and a certified lower
    bound where ``epsilon_lower`` is set); the others are approximations and say so.
    ``models`` lists the (sampling, adjacency) pairs the accountant's theorem covers.
    """

    name: ClassVar[str]
    certified: ClassVar[bool]
    summary: ClassVar[str]
    models: ClassVar[frozenset] = ALL_MODELS

    def not_applicable(self, schedule: Schedule) -> str | None:
        """Why this accountant does not bound ``schedule`` (None when it does)."""
        schedule = check_schedule(schedule)
        for index, phase in enumerate(schedule.phases, start=1):
            if (phase.sampling, phase.adjacency) not in self.models:
                where = f" (phase {index})" if not schedule.is_single_phase else ""
                why = ""
                if phase.sampling in EPOCH_SAMPLINGS:
                    why = (": it composes one worst-case pair per step, and these batches have "
                           "none (a record's steps within an epoch are dependent); pb gives "
                           "their certified bounds")
                return (f"not applicable: {self.name} has no bound for "
                        f"{model_label(phase.sampling, phase.adjacency)}{where}"
                        f"{why or _WHY_NOT.get(phase.sampling, '')}")
        return None

    def epsilon(self, schedule: Schedule, delta: float) -> EpsilonResult:
        """ε at target ``delta`` (``epsilon`` None, with a note, where not applicable)."""
        schedule = check_schedule(schedule)
        delta = check_delta(delta)
        reason = self.not_applicable(schedule)
        if reason is not None:
            return EpsilonResult(self.name, None, self.certified, notes=(reason,))
        return self._epsilon(schedule, delta)

    def delta(self, schedule: Schedule, epsilon: float) -> float | None:
        """δ at ``epsilon``: the smallest δ this accountant certifies (None: not applicable)."""
        schedule = check_schedule(schedule)
        epsilon = check_nonnegative(epsilon, "--epsilon")
        if self.not_applicable(schedule) is not None:
            return None
        return self._delta(schedule, epsilon)

    def epsilon_curve(self, schedules, delta: float,
                      on_done: Callable[[int], None] | None = None,
                      map_points: Callable | None = None) -> list[EpsilonResult]:
        """ε at ``delta`` for each schedule, as :meth:`epsilon`. Single-phase runs of one
        step read at several step counts (ε over epochs) go to :meth:`_epsilon_curve`,
        which accountants that can answer every T from one computation override.
        ``on_done(n)``: called as every n schedules are answered (a progress bar's count).
        ``map_points``: a map(function, items) to answer the single-phase families with
        (e.g. a process pool's, for a sweep over σ or q); the built-in map by default."""
        schedules = [check_schedule(schedule)
                     for schedule in check_items(schedules, "schedules", "dpcalc Schedules",
                                                 empty=True)]
        delta = check_delta(delta)
        check_callable(on_done, "on_done", optional=True)
        check_callable(map_points, "map_points", optional=True)
        done = on_done or (lambda count: None)
        results: list[EpsilonResult | None] = [None] * len(schedules)
        curve = []
        for index, schedule in enumerate(schedules):
            if self.not_applicable(schedule) is not None or not schedule.is_single_phase:
                results[index] = self.epsilon(schedule, delta)
                done(1)
            else:
                curve.append(index)
        by_step: dict = {}  # one curve per distinct step (everything but the step count)
        for index in curve:
            by_step.setdefault(schedules[index].phases[0].with_steps(1), []).append(index)
        families = [(step, [schedules[index] for index in indices])
                    for step, indices in by_step.items()]
        answers = (map_points or map)(partial(self._family_epsilons, delta=delta), families)
        for indices, found in zip(by_step.values(), answers):
            for index, result in zip(indices, found):
                results[index] = result
            done(len(indices))
        return results

    def _family_epsilons(self, family: tuple, delta: float) -> list[EpsilonResult]:
        """ε for the schedules of one family (one step, several step counts)."""
        step, members = family
        if len(members) == 1:  # one point: the point path (the same number as epsilon)
            return [self._epsilon(members[0], delta)]
        return self._epsilon_curve(step, [member.total_steps for member in members], delta)

    def _epsilon_curve(self, step, counts: list[int], delta: float) -> list[EpsilonResult]:
        """ε after each count of repetitions of the one-step phase ``step`` (default: one
        point at a time)."""
        return [self._epsilon(Schedule((step.with_steps(count),)), delta) for count in counts]

    @abstractmethod
    def _epsilon(self, schedule: Schedule, delta: float) -> EpsilonResult:
        """ε at a validated ``delta`` for a schedule this accountant applies to."""

    def _delta(self, schedule: Schedule, epsilon: float) -> float | None:
        """Default: bisection in log δ on :meth:`_epsilon`, which is monotone in δ."""
        low, high = -700.0, 0.0  # log δ; δ = 1 always holds
        top = self._epsilon(schedule, math.exp(-1e-12)).epsilon
        if top is None:
            return None
        if top > epsilon:
            return 1.0
        for _ in range(200):
            mid = 0.5 * (low + high)
            value = self._epsilon(schedule, math.exp(mid)).epsilon
            if value is None:
                return None
            if value <= epsilon:
                high = mid
            else:
                low = mid
            if high - low < 1e-6:
                break
        return math.exp(high)
