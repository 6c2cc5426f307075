"""A stateful accountant for training loops: record each DP-SGD step as it runs, ask for ε
whenever needed.

    accountant = PrivacyAccountant(sampling="poisson", adjacency="add-remove")
    for batch in loader:
        ...
        accountant.step(noise_multiplier=1.1, sample_rate=256 / 60_000)
    accountant.epsilon(1e-5)          # pb's certified upper bound
    accountant.bounds(1e-5)           # (upper, lower), both certified

Consecutive steps with the same noise multiplier and sample rate merge into one phase
(a :class:`~dpcalc.models.schedule.Phase`), so a run of a million steps is a handful
of phases and ε is one pb composition of the :class:`Schedule` (buckets.py), never a
replay of every step. The last answers are kept per δ until the next step, so asking
again without new steps costs nothing.

A run of several phases (σ changing every epoch, say) is composed incrementally
(pb/incremental.py): every phase's one-step PLDs, tables and spectra are kept per δ, so
asking after one more phase costs that phase and one read-out, not the whole run again.
Those bounds are pb's, certified and within the tolerance, on choices fixed for the run
(a grid at least as fine as pb's first one, tails sized for 1e9 steps): their last
digits may differ from a fresh ``pb`` of the same schedule. One phase alone is a fresh
``pb`` (the same answer as ``dpcalc epsilon``).
"""
from __future__ import annotations

from dpcalc.pb.buckets import DEFAULT_TOLERANCE
from dpcalc.pb.incremental import RunningBounds
from dpcalc.accountants.pb import PrivacyBucketsAccountant, drawn_probability, rdp_hint
from dpcalc.models.lower_instances import lower_instance
from dpcalc.models.worst_case import worst_case
from dpcalc.accountants.result import EpsilonResult
from dpcalc.models.samplers import (ADD_REMOVE, POISSON, SIMPLE_SAMPLINGS, parse_adjacency,
                                    parse_sampling)
from dpcalc.models.schedule import MAX_STEPS, Phase, Schedule
from dpcalc.pipelines.schedule_file import file_adjacency, schedule_from_file, write_schedule_file
from dpcalc.errors import DpcalcError
from dpcalc.params import (check_count, check_delta, check_noise_multiplier, check_positive,
                           check_sampling_rate)


class PrivacyAccountant:
    """Privacy spent so far by a DP-SGD run, under one sampler and adjacency.

    ``history`` lists the phases as (noise_multiplier, sample_rate, steps) tuples, the
    layout Opacus uses for its accountants' history."""

    def __init__(self, sampling: str = POISSON, adjacency: str = ADD_REMOVE,
                 tolerance: float = DEFAULT_TOLERANCE):
        self.sampling = parse_sampling(sampling, "sampling", allowed=SIMPLE_SAMPLINGS)
        self.adjacency = parse_adjacency(adjacency, "adjacency")
        self.tolerance = check_positive(tolerance, "tolerance")
        self._phases: list[Phase] = []
        self._answers: dict[float, EpsilonResult] = {}
        self._pairs: dict[tuple, object] = {}  # one step's worst case per (σ, q)
        self._running: dict[float, RunningBounds] = {}  # per δ: what earlier answers kept
        self.compositions = 0  # pb compositions run so far (the cache saves the others)

    # ---------------------------------------------------------------- recording
    def step(self, noise_multiplier: float, sample_rate: float, steps: int = 1
             ) -> PrivacyAccountant:
        """Record ``steps`` steps with noise multiplier σ at sampling rate q (for fixed-size
        batches, q = B/N). Returns the accountant, so calls can be chained."""
        sigma = check_noise_multiplier(noise_multiplier, "noise_multiplier")
        rate = check_sampling_rate(sample_rate, "sample_rate")
        count = check_count(steps, "steps", maximum=MAX_STEPS)
        if self.steps + count > MAX_STEPS:
            raise DpcalcError(f"steps: a run may have at most 1e9 steps in all; this one would "
                              f"have {self.steps + count}")
        last = self._phases[-1] if self._phases else None
        if last is not None and (last.noise_multiplier, last.sampling_rate) == (sigma, rate):
            self._phases[-1] = last.with_steps(last.steps + count)
        else:
            self._phases.append(Phase(rate, sigma, count, self.sampling, self.adjacency))
        self._answers.clear()
        return self

    def extend(self, schedule: Schedule) -> PrivacyAccountant:
        """Record every phase of ``schedule`` (e.g. Schedule.from_epochs(...)) in order."""
        if not isinstance(schedule, Schedule):
            raise DpcalcError(f"extend takes a dpcalc Schedule; got {type(schedule).__name__}")
        for phase in schedule.phases:
            if (phase.sampling, phase.adjacency) != (self.sampling, self.adjacency):
                raise DpcalcError(f"the schedule is for {phase.model}; this accountant is for "
                                  f"{self.sampling} sampling with {self.adjacency} adjacency")
            self.step(noise_multiplier=phase.noise_multiplier, sample_rate=phase.sampling_rate,
                      steps=phase.steps)
        return self

    def to_schedule_file(self, path) -> None:
        """Write the run so far as a schedule file (CSV: sigma, q, steps, sampling, one row
        per phase, and its adjacency in a comment): ``dpcalc epsilon --schedule PATH``
        accounts the same run, and :meth:`from_schedule_file` reads it back."""
        write_schedule_file(path, self.schedule)

    @classmethod
    def from_schedule_file(cls, path, sampling: str | None = None, adjacency: str | None = None,
                           **options) -> "PrivacyAccountant":
        """An accountant holding the run of a schedule file (to_schedule_file's CSV, or any
        file ``--schedule`` reads). ``sampling``: the rows' default sampler (else each row's
        own, else poisson); ``adjacency``: else the file's recorded one, else add-remove."""
        if adjacency is None:
            adjacency = file_adjacency(path) or ADD_REMOVE
        schedule, _, _ = schedule_from_file(path, sampling=POISSON if sampling is None else sampling,
                                            adjacency=adjacency)
        samplings = schedule.samplings
        if len(samplings) > 1:
            raise DpcalcError(f"--schedule {path}: the phases use several samplers "
                              f"({', '.join(samplings)}); an accountant is for one")
        return cls(samplings[0], adjacency, **options).extend(schedule)

    @property
    def history(self) -> list[tuple[float, float, int]]:
        """[(noise_multiplier, sample_rate, steps), …], one entry per phase, in order."""
        return [(phase.noise_multiplier, phase.sampling_rate, phase.steps)
                for phase in self._phases]

    @property
    def steps(self) -> int:
        """Steps recorded so far."""
        return sum(phase.steps for phase in self._phases)

    @property
    def schedule(self) -> Schedule:
        """The run so far as a Schedule (for any accountant of the registry)."""
        if not self._phases:
            raise DpcalcError("no steps recorded yet: call step(noise_multiplier=…, "
                              "sample_rate=…) first")
        return Schedule(tuple(self._phases))

    # ---------------------------------------------------------------- answers
    def result(self, delta: float) -> EpsilonResult:
        """pb's full answer at ``delta`` (certified upper and lower bound, notes)."""
        target = check_delta(delta, "delta")
        if target in self._answers:
            return self._answers[target]
        if not self._phases:
            answer = EpsilonResult("pb", 0.0, True, epsilon_lower=0.0,
                                   notes=("no steps recorded: nothing spent",))
        elif (len(self._phases) == 1 or not self._pairs_attained()
              or drawn_probability(self.schedule) <= target):  # pb's ε = 0 (no composition)
            answer = PrivacyBucketsAccountant(self.tolerance).epsilon(self.schedule, target)
            self.compositions += 1
        else:
            answer = self._running_result(target)
            self.compositions += 1
        self._answers[target] = answer
        return answer

    def _pairs_attained(self) -> bool:
        """Whether this sampler's pairs are attained (no explicit lower-bound run: the
        incremental path applies), asked once: it depends on the sampler and adjacency."""
        if "_attained" not in self.__dict__:
            self._attained = lower_instance(Schedule(self._phases[:1])) is None
        return self._attained

    def _running_result(self, delta: float) -> EpsilonResult:
        """pb's answer from the incremental composition (pb/incremental.py), with rdp's
        upper bound where it is tighter, as PrivacyBucketsAccountant reports it."""
        running = self._running.get(delta)
        if running is None:
            running = self._running[delta] = RunningBounds(delta, self.tolerance)
        phases = []
        for phase in self._phases:
            key = (phase.noise_multiplier, phase.sampling_rate)
            if key not in self._pairs:
                self._pairs[key] = worst_case(phase).pair
            phases.append((self._pairs[key], phase.steps))
        bounds = running.bounds(phases)
        accountant = PrivacyBucketsAccountant(self.tolerance)
        return accountant._result(bounds, rdp_hint(self.schedule, delta))

    def epsilon(self, delta: float) -> float:
        """ε spent at ``delta``: pb's certified upper bound (the value to report)."""
        return self.result(delta).epsilon

    def bounds(self, delta: float) -> tuple[float, float]:
        """(upper, lower): certified bounds between which the true ε at ``delta`` lies."""
        answer = self.result(delta)
        return answer.epsilon, answer.epsilon_lower

    def __len__(self) -> int:
        """Phases recorded (the length of ``history``)."""
        return len(self._phases)

    def __repr__(self) -> str:
        return (f"PrivacyAccountant(sampling={self.sampling!r}, adjacency={self.adjacency!r}, "
                f"steps={self.steps}, phases={len(self)})")
