"""Certified lower bounds need an adversary that exists: where a model's dominating pair is
not attained by any one pair of neighbouring datasets, pb's lower bound comes from an
explicit run of the sampler instead — a schedule of pairs that ARE attained.

A lower bound on the ε of one attained instance is one on the model's ε, which is the
supremum over neighbouring datasets and gradients. The upper bound keeps the dominating
pair; the interval then also holds the gap between the two, and the result says so.

* fixed, replace-one: the symmetrised pair (pairs.py) is the tight dominating pair of ONE
  step (Dong, Roth, Su 2022 Thm 4.2), but its profile is the pointwise maximum over two
  orientations, attained by different datasets at different ε; an adaptive adversary
  picking one orientation per step was found below its T-fold composition (exact dynamic
  program, γ = 0.5, σ = 1: 4–8% less δ at T = 2, 3). Instance: every other gradient −C,
  the record +C against −C: each step is ((1 − γ)N(0) + γN(2C), N(0)) — the displacement
  of the note sampling-and-adjacency.md — i.e. the fixed-size add/remove pair, both orders
  of the same datasets.
* fixed, zero-out: the record against a null record that keeps its slot; upper bound from
  zero_out_pairs.fixed_zero_out_pair, which splices this instance's first order with the
  other order's worst configuration, so no single run attains it. Instance: every other
  gradient −C, the record +C against the null record: ((1 − γ)N(0) + γN(2C),
  (1 − γ)N(0) + γN(C)) (zero_out_pairs.DisplacedNullPair), both orders.
* fixed, add/remove with B = N: the pair at γ = 1 needs a neighbour with N − 1 records
  holding a batch of N; the instance is the neighbour with N + 1 records instead, the same
  pair at γ′ = N/(N + 1) (independent review: the γ = 1 pair's certified lower ε, 284.39 at
  N = 100, σ = 1, T = 100, exceeded the γ′ instance's certified upper ε, 281.19).
* truncated-poisson: truncated.py (:func:`truncated.contained_rate`): other gradients 0,
  the record in the cut batch with probability q_in, the Poisson pair at q_in; and where
  most batches are cut, a second run (:func:`displaced_run`, truncated_instance.py): other
  gradients −C, which the record displaces. Each is attained, so the larger of their
  certified lower bounds is one.
"""
from __future__ import annotations

from dataclasses import replace

from dpcalc.models.samplers import (ADD_REMOVE, FIXED, POISSON, REPLACE_ONE, TRUNCATED_POISSON,
                                    ZERO_OUT)
from dpcalc.models.revealed_mixture import align_directions
from dpcalc.models.schedule import Phase, Schedule
from dpcalc.models.truncated import BASE_DIRECTION
from dpcalc.models.worst_case import worst_case
from dpcalc.models.zero_out_pairs import DisplacedNullPair

TRUNCATED_NOTE = ("truncated Poisson: the upper bound is the dominating pair's (it reveals "
                  "whether at least M others were drawn; Ganesh 2025); the certified lower "
                  "bound is an explicit run's (other gradients 0: the record is in the cut "
                  "batch with probability q·E[min(1, M/(K+1))]; where most batches are cut, "
                  "also other gradients −C, which the record displaces: the larger of the "
                  "two), so the interval also holds the gap between the two, which a finer "
                  "grid does not close")
FIXED_REPLACE_NOTE = ("fixed-size, replace-one: the upper bound composes the symmetrised pair "
                      "(tight for one step; Dong, Roth, Su 2022 Thm 4.2); the certified lower "
                      "bound is an explicit run's (other gradients −C, the record +C against "
                      "−C: shift 2C in one orientation at every step), so the interval also "
                      "holds the gap between the two, which a finer grid does not close")
FIXED_ZERO_OUT_NOTE = ("fixed-size, zero-out: the upper bound composes a dominating pair (the "
                       "run below in one order, x like the other records against the null "
                       "record in the other: an adversary may switch between them); the "
                       "certified lower bound is an explicit run's (other gradients −C, the "
                       "record +C against the null record: shifts 2C and C), so the interval "
                       "also holds the gap between the two, which a finer grid does not close")


FIXED_REPLACE_MIXED_NOTE = ("fixed-size, replace-one (with other samplers): the certified "
                            "lower bound is an explicit run's (other gradients 0, the record +C "
                            "against −C: the Poisson replace-one pair at γ in the fixed-size "
                            "phases), so the interval also holds the gap to the upper bound")


FIXED_FULL_BATCH_NOTE = ("fixed-size batches of the whole dataset (B = N), add/remove: the "
                         "neighbour with N − 1 records cannot hold a batch of N, so the pair at "
                         "γ = 1 is not attained; the certified lower bound is the neighbour with "
                         "N + 1 records' (γ′ = N/(N + 1), or 1/2 where N is not given)")

INSTANCE_NOTES = (TRUNCATED_NOTE, FIXED_REPLACE_NOTE, FIXED_ZERO_OUT_NOTE, FIXED_REPLACE_MIXED_NOTE,
                  FIXED_FULL_BATCH_NOTE)


def _instance_pair(phase: Phase, uniform: bool = True) -> tuple[object, str] | None:
    """The attained pair standing in for ``phase``'s in the lower bound, and why; None when
    ``phase``'s own pair is attained. ``uniform``: every phase of the run is fixed-size
    replace-one, so the stronger displacement run (an add/remove-shaped pair) keeps the
    schedule's one adjacency; otherwise fixed-size replace-one phases take the run with
    other gradients 0 (the Poisson replace-one pair at γ), which stays replace-one."""
    if phase.sampling == TRUNCATED_POISSON:
        from dpcalc.models.truncated import contained_rate

        rate = contained_rate(phase.dataset_size, phase.sampling_rate, phase.max_batch_size)
        return (worst_case(Phase(rate, phase.noise_multiplier, 1, POISSON, phase.adjacency)).pair,
                TRUNCATED_NOTE)
    if phase.sampling == FIXED and phase.adjacency == REPLACE_ONE and uniform:
        return worst_case(replace(phase, adjacency=ADD_REMOVE)).pair, FIXED_REPLACE_NOTE
    if phase.sampling == FIXED and phase.adjacency == REPLACE_ONE:
        return (worst_case(Phase(phase.sampling_rate, phase.noise_multiplier, 1, POISSON,
                                 REPLACE_ONE)).pair, FIXED_REPLACE_MIXED_NOTE)
    if phase.sampling == FIXED and phase.adjacency == ADD_REMOVE and phase.sampling_rate >= 1.0:
        # B = N: only the neighbour D ∪ {x} exists (N + 1 records, x drawn w.p. N/(N + 1));
        # with N unknown, γ′ = N/(N + 1) ≥ 1/2 for every N ≥ 1 and ε rises with γ′
        size = phase.dataset_size
        rate = size / (size + 1.0) if size is not None else 0.5
        return worst_case(replace(phase, sampling_rate=rate, batch_size=None,
                                  dataset_size=None)).pair, FIXED_FULL_BATCH_NOTE
    if phase.sampling == FIXED and phase.adjacency == ZERO_OUT:
        return (DisplacedNullPair(phase.sampling_rate, phase.noise_multiplier),
                FIXED_ZERO_OUT_NOTE)
    return None


def lower_instance(schedule: Schedule) -> tuple[list, tuple[str, ...]] | None:
    """(the (pair, steps) of an attained run whose lower bound is certified for ``schedule``,
    the notes saying so), or None when ``schedule``'s own pairs are attained."""
    pairs, notes = [], []
    uniform = all(phase.sampling == FIXED for phase in schedule.phases)
    for phase in schedule.phases:
        found = _instance_pair(phase, uniform)
        if found is None:
            pairs.append(worst_case(phase).pair)
            continue
        pairs.append(found[0])
        if found[1] not in notes:
            notes.append(found[1])
    if not notes:
        return None
    aligned = align_directions(pairs, BASE_DIRECTION)
    return [(pair, phase.steps) for pair, phase in zip(aligned, schedule.phases)], tuple(notes)


def displaced_run(schedule: Schedule) -> list | None:
    """The (pair, steps) of truncated Poisson's displaced run (truncated_instance.py) for a
    schedule whose phases are all truncated Poisson with most batches cut (gradients may
    change from phase to phase; the neighbouring datasets do not); None otherwise."""
    if (any(phase.sampling != TRUNCATED_POISSON for phase in schedule.phases)
            or len({phase.dataset_size for phase in schedule.phases}) > 1):
        return None  # (phases of different N: no one pair of datasets runs them all)
    from dpcalc.models.truncated_instance import displaced_pair

    run = []
    for phase in schedule.phases:
        pair = displaced_pair(phase.dataset_size, phase.sampling_rate, phase.max_batch_size,
                              phase.noise_multiplier, phase.adjacency)
        if pair is None:
            return None
        run.append((pair, phase.steps))
    return run
