"""The ``pb`` accountant: certified upper and lower ε for every model dpcalc knows.

Pair models (poisson, fixed) compose one dominating pair per step (buckets.py); the epoch
samplers (shuffle, shuffle-once, balls-in-bins) get their explicit bounds
(epoch_samplers.py), each labelled as the certified upper or lower bound it is.
"""
from __future__ import annotations

from dataclasses import replace

from dpcalc.accountants.base import ALL_MODELS, Accountant
from dpcalc.pb.buckets import (_ABSOLUTE_GAP, _LOWER_FAILURE, DEFAULT_TOLERANCE, PldBounds,
                               check_consistent, delta_bounds, epsilon_bounds, schedule_phases)
from dpcalc.pb.first_grid import LazyHint, resolve
from dpcalc.accountants.base import check_schedule
from dpcalc.accountants.epoch_samplers import (epoch_bounds, epoch_delta_bounds, epoch_delta_upper,
                                               epoch_not_applicable, is_epoch_schedule,
                                               nearest_note, nearest_schedule)
from dpcalc.accountants.result import EpsilonResult, interval_text, upper_text
from dpcalc.models.samplers import EPOCH_MODELS, NEAREST_WHY
from dpcalc.models.schedule import Schedule
from dpcalc.models.lower_instances import INSTANCE_NOTES, displaced_run, lower_instance
from dpcalc.models.subsampling import participation_bound
from dpcalc.models.worst_case import worst_case
from dpcalc.errors import DpcalcError
from dpcalc.params import check_nonnegative, check_positive


def rdp_hint(schedule: Schedule, delta: float):
    """rdp's ε for pb's hint and its tighter-upper-bound check: a LazyHint where the
    schedule has many phases of the Poisson family (the fractional orders' series cost
    ~40 ms per distinct phase and are rarely needed: rdp_epsilon_interval brackets the
    value from the integer orders), else the number."""
    from dpcalc.accountants.rdp_accountants import RdpAccountant, rdp_epsilon_interval

    def exact() -> float:
        return RdpAccountant().epsilon(schedule, delta).epsilon

    if len(schedule.phases) < 2:
        return exact()
    interval = rdp_epsilon_interval(schedule, delta)
    return exact() if interval is None else LazyHint(*interval, exact)


def _model_notes(schedule: Schedule) -> tuple[str, ...]:
    """What the bounds are bounds of, where that is not simply the sampler's ε."""
    found = lower_instance(schedule)
    return () if found is None else found[1]


def _explicit_runs(schedule: Schedule, found) -> list:
    """The attained runs whose certified lower bounds hold for ``schedule`` (each one's is;
    the largest is reported): lower_instance's, and truncated Poisson's displaced run
    where its batches are mostly cut."""
    displaced = displaced_run(schedule)
    return [found[0]] if displaced is None else [found[0], displaced]


def drawn_probability(schedule: Schedule) -> float:
    """A certified bound on δ(ε) at every ε ≥ 0 for a pair schedule: the probability that
    the record is drawn at all (models.subsampling.participation_bound; every step pair's
    total variation is at most its sampling rate)."""
    return participation_bound((phase.sampling_rate, phase.steps) for phase in schedule.phases)


def _never_drawn_note(drawn: float, delta: float) -> str:
    return (f"ε = 0 certified: the record is drawn in at least one step with probability "
            f"≤ {drawn:.6g} ≤ δ = {delta:g}, which bounds δ(ε) at every ε ≥ 0")


def _gap_note(upper: float, lower: float, tolerance: float, converged: bool,
              stalled: bool = False) -> str:
    """Why the certified interval is wider than the tolerance."""
    if stalled:
        why = ("a finer grid no longer narrows it: the lower bound's failure allowance "
               f"({_LOWER_FAILURE:g}·δ) or float round-off sets it")
    elif converged:
        why = "float round-off of the composition at this small δ"
    else:
        why = "the work limit (FFT points) was reached"
    return (f"gap {upper - lower:.3g} exceeds tolerance {tolerance:g}·ε ({why}); both bounds "
            "remain certified")


class PrivacyBucketsAccountant(Accountant):
    """Numeric composition of the privacy loss distribution with certified bounds."""

    name = "pb"
    certified = True
    summary = "numeric PLD composition (privacy buckets, connect-the-dots); certified upper and lower bounds"

    def __init__(self, tolerance: float = DEFAULT_TOLERANCE, grid_step: float | None = None,
                 start_tolerance: float | None = None, upper_only: bool = False):
        self.tolerance = check_positive(tolerance, "--tolerance")
        self.grid_step = None if grid_step is None else check_positive(grid_step, "--grid-step")
        # for searches at a loose tolerance: every point starts on the grid this stricter
        # tolerance allows at rdp's ε (buckets.epsilon_bounds' start_tolerance), not on the
        # finest grid where the window is small
        self.start_tolerance = (None if start_tolerance is None
                                else check_positive(start_tolerance, "start_tolerance"))
        # for σ searches, which read the upper bound only: where the pairs are not attained,
        # skip the explicit run's lower bound (a second composition) and report lower 0
        if upper_only not in (True, False):
            raise DpcalcError(f"upper_only must be True or False; got {upper_only!r}")
        self.upper_only = upper_only

    models = ALL_MODELS | EPOCH_MODELS

    def not_applicable(self, schedule: Schedule) -> str | None:
        if is_epoch_schedule(check_schedule(schedule)):
            return epoch_not_applicable(schedule)
        return super().not_applicable(schedule)

    def epsilon(self, schedule: Schedule, delta: float) -> EpsilonResult:
        """As Accountant.epsilon; where the model has no certificate, the same run under the
        nearest model that has one (zero-out for an order sampler under add/remove) is
        computed and carried beside the not-applicable answer — a note and
        ``details["nearest_model"]`` — never as its value."""
        result = super().epsilon(schedule, delta)
        nearest = nearest_schedule(schedule) if result.epsilon is None else None
        if nearest is None:
            return result
        found = self.epsilon(nearest, delta)
        adjacency = nearest.adjacency
        record = {"sampling": nearest.phases[0].sampling, "adjacency": adjacency,
                  "model": nearest.phases[0].model, "epsilon_upper": found.epsilon,
                  "epsilon_lower": found.epsilon_lower, "why": NEAREST_WHY}
        note = nearest_note(adjacency, f"ε ∈ {interval_text(found.epsilon_lower, found.epsilon)}"
                                       f" at δ = {delta:g}")
        return replace(result, notes=result.notes + (note,),
                       details={**result.details, "nearest_model": record})

    def nearest_delta(self, schedule: Schedule, epsilon: float) -> dict | None:
        """The nearest certified model's δ bounds at ``epsilon`` where this model has none
        (as :meth:`epsilon`'s ``nearest_model``, with "delta_upper", "delta_lower", "note")."""
        nearest = nearest_schedule(schedule) if self.not_applicable(schedule) else None
        if nearest is None:
            return None
        upper, lower, _, _ = self.delta_bounds(nearest, epsilon)
        adjacency = nearest.adjacency
        return {"sampling": nearest.phases[0].sampling, "adjacency": adjacency,
                "model": nearest.phases[0].model, "delta_upper": upper, "delta_lower": lower,
                "note": nearest_note(adjacency, f"δ ∈ {interval_text(lower, upper)} at "
                                                f"ε = {epsilon:g}")}

    def _epoch_epsilon(self, schedule: Schedule, delta: float) -> EpsilonResult:
        """Shuffle / balls-in-bins: the no-amplification upper bound is the answer, with
        the explicit lower bound and the (not applying) Poisson figure beside it."""
        phase = schedule.phases[0]
        bounds = epoch_bounds(phase, delta, self.tolerance)
        return EpsilonResult(
            accountant=self.name, epsilon=bounds.upper, certified=True,
            epsilon_lower=bounds.lower, notes=bounds.notes(phase.sampling),
            details={"upper_source": bounds.upper_source,
                     "upper_method": bounds.upper_method, "lower_method": bounds.lower_method,
                     "epsilon_poisson_not_applicable": bounds.poisson_epsilon,
                     "epochs": bounds.epochs, "steps_per_epoch": bounds.steps_per_epoch,
                     "interval_wide": bounds.wide})

    def _epsilon(self, schedule: Schedule, delta: float) -> EpsilonResult:
        if is_epoch_schedule(schedule):
            return self._epoch_epsilon(schedule, delta)
        drawn = drawn_probability(schedule)
        if drawn <= delta:  # no composition needed (and pb's grids would be huge at tiny σ)
            return self._never_drawn_result(drawn, delta)
        # The tightest certificate in hand is the answer (issue 16): rdp is cheap, and where
        # pb's numeric bound is looser (tiny δ, float round-off) rdp's upper bound is reported.
        rdp = rdp_hint(schedule, delta)
        bounds = epsilon_bounds(schedule_phases(schedule), delta, self.tolerance, self.grid_step,
                                epsilon_hint=rdp, coarse_start=self.start_tolerance is not None,
                                start_tolerance=self.start_tolerance)
        found = lower_instance(schedule)
        if found is not None:  # the pairs are not attained: the lower bound of an explicit run
            lower = 0.0 if self.upper_only else max(
                epsilon_bounds(run, delta, self.tolerance, self.grid_step).lower
                for run in _explicit_runs(schedule, found))
            check_consistent(bounds.upper, lower, "ε (explicit run)")
            bounds = replace(bounds, lower=lower, by_direction={
                direction: (upper, 0.0) for direction, (upper, _) in bounds.by_direction.items()})
        return self._result(bounds, rdp, _model_notes(schedule))

    def _never_drawn_result(self, drawn: float, delta: float) -> EpsilonResult:
        return EpsilonResult(accountant=self.name, epsilon=0.0, certified=True, epsilon_lower=0.0,
                             notes=(_never_drawn_note(drawn, delta),),
                             details={"upper_source": "participation",
                                      "participation_probability": drawn})

    def _epsilon_curve(self, step, counts: list[int], delta: float) -> list[EpsilonResult]:
        """ε over step counts from one transform per direction (curve.py); epoch samplers
        and a fixed --grid-step point by point; counts whose record is drawn with
        probability ≤ δ are ε = 0 (drawn_probability)."""
        from dpcalc.pb.curve import epsilon_curve
        from dpcalc.accountants.rdp_accountants import RdpAccountant

        if not is_epoch_schedule(Schedule((step,))):
            drawn = [drawn_probability(Schedule((replace(step, steps=count),))) for count in counts]
            if any(value <= delta for value in drawn):
                rest = [count for count, value in zip(counts, drawn) if value > delta]
                found = iter(self._epsilon_curve(step, rest, delta) if rest else [])
                return [self._never_drawn_result(value, delta) if value <= delta else next(found)
                        for value in drawn]
        if (self.grid_step is not None or is_epoch_schedule(Schedule((step,)))
                or lower_instance(Schedule((step,))) is not None):
            return super()._epsilon_curve(step, counts, delta)
        rdps = [result.epsilon for result in RdpAccountant()._epsilon_curve(step, counts, delta)]
        curve = epsilon_curve(worst_case(step).pair, counts, delta, self.tolerance, hints=rdps)
        notes = _model_notes(Schedule((step,)))
        return [self._result(bounds, rdp, notes) for bounds, rdp in zip(curve, rdps)]

    def _result(self, bounds: PldBounds, rdp, model_notes: tuple[str, ...] = ()) -> EpsilonResult:
        """The reported result: pb's bounds, with rdp's upper bound where it is tighter
        (``rdp``: a number, or a LazyHint whose exact value is needed only where its lower
        end does not already show it is not tighter)."""
        upper, source, notes = bounds.upper, "pb", list(model_notes)
        if isinstance(rdp, LazyHint) and (rdp.low >= bounds.upper or (
                bounds.upper - bounds.lower <= max(self.tolerance * bounds.upper, _ABSOLUTE_GAP)
                and rdp.high > bounds.upper)):
            # not tighter (and ≥ pb's upper ≥ its lower: consistent); or pb's interval met
            # its tolerance: rdp (an RDP conversion, loose by several %) could then only be
            # tighter by landing inside pb's certified interval, a gain below the tolerance
            # that its exact value (~40 ms per distinct phase) is not spent to look for
            rdp = None
        rdp = resolve(rdp)
        if rdp is not None:
            check_consistent(rdp, bounds.lower, "ε (rdp's upper bound)")
            if rdp < upper:
                upper, source = rdp, "rdp"
                notes.append(f"upper bound from rdp (Rényi DP, certified), tighter than pb's "
                             f"numeric {upper_text(bounds.upper)} here; the lower bound is pb's")
        if (upper - bounds.lower > max(self.tolerance * upper, _ABSOLUTE_GAP)
                and not set(INSTANCE_NOTES) & set(notes)):  # those say where the gap comes from
            notes.append(_gap_note(upper, bounds.lower, self.tolerance, bounds.converged,
                                    bounds.stalled))
        return EpsilonResult(
            accountant=self.name,
            epsilon=upper,
            certified=True,
            epsilon_lower=bounds.lower,
            notes=tuple(notes),
            details={
                **{f"epsilon_{direction}": upper_direction
                   for direction, (upper_direction, _) in bounds.by_direction.items()},
                "epsilon_pb_upper": bounds.upper,
                "upper_source": source,
                "grid_step": bounds.grid_step,
                "lower_grid_step": bounds.lower_grid_step,
                "fft_points": bounds.fft_points,
            },
        )

    def _delta(self, schedule: Schedule, epsilon: float) -> float:
        if is_epoch_schedule(schedule):
            return epoch_delta_upper(schedule.phases[0], epsilon)
        return min(delta_bounds(schedule_phases(schedule), epsilon, self.grid_step).upper,
                   drawn_probability(schedule))

    def delta_bounds(self, schedule: Schedule, epsilon: float
                     ) -> tuple[float, float, tuple[str, ...], dict]:
        """(certified upper δ, certified lower δ, notes, details) at ``epsilon`` for a schedule
        pb applies to: the pair models' composition, or the epoch samplers' bounds labelled as
        `epsilon` labels them (details: "upper_source", "delta_poisson_not_applicable")."""
        schedule = check_schedule(schedule)
        epsilon = check_nonnegative(epsilon, "--epsilon")
        if is_epoch_schedule(schedule):
            bounds = epoch_delta_bounds(schedule.phases[0], epsilon)
            return bounds.upper, bounds.lower, bounds.notes, {
                "upper_source": bounds.upper_source,
                "delta_poisson_not_applicable": bounds.poisson_delta}
        bounds = delta_bounds(schedule_phases(schedule), epsilon, self.grid_step)
        upper, lower, notes, details = bounds.upper, bounds.lower, (), {}
        found = lower_instance(schedule)
        if found is not None:
            lower = max(delta_bounds(run, epsilon, self.grid_step).lower
                        for run in _explicit_runs(schedule, found))
            check_consistent(upper, lower, "δ (explicit run)")
            notes = found[1]
        drawn = drawn_probability(schedule)
        if drawn < upper:  # the record is rarely drawn: that probability bounds δ(ε)
            check_consistent(drawn, lower, "δ (participation bound)")
            upper, details = drawn, {"upper_source": "participation"}
            notes += (f"upper bound: the record is drawn in at least one step with probability "
                      f"≤ {drawn:.6g}, which bounds δ(ε) at every ε ≥ 0",)
        return upper, lower, notes, details
