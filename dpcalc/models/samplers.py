"""The names of the models a certificate can be for: how batches are drawn (the sampler)
and which datasets count as neighbours (the adjacency).

* ``poisson`` — every record joins each batch independently with probability q.
* ``fixed`` — each batch is B of the N records drawn uniformly without replacement,
  independently at every step (q = B/N is then the chance a given record is in it).
* ``truncated-poisson`` — Poisson at rate q, then, if more than M records were drawn, a
  uniformly random M of them (static batch shapes, as JAX pipelines; Ganesh 2025).
* ``shuffle`` — each epoch a fresh uniform permutation cut into ⌈N/B⌉ consecutive
  batches; ``shuffle-once`` — one permutation, the same order every epoch.
* ``balls-in-bins`` — each epoch every record is put in one of the ⌈N/B⌉ steps chosen
  uniformly and independently (random allocation).
* ``add-remove`` — neighbours differ by one record added or removed.
* ``replace-one`` — neighbours have the same size and differ in one record.
* ``zero-out`` — one record replaced by a null record whose gradient is 0 (both orders;
  dp_accounting's REPLACE_SPECIAL).

poisson, fixed and truncated-poisson are bounded by one dominating pair per step
(worst_case.py; truncated.py for the last); the epoch
samplers by an explicit upper and lower bound per model (epoch_samplers.py).

Aliases that users of other tools type are accepted (``substitution``, ``wor``, …).
"""
from __future__ import annotations

from dpcalc.errors import DpcalcError
from dpcalc.params import shown

POISSON = "poisson"
FIXED = "fixed"
SHUFFLE = "shuffle"
SHUFFLE_ONCE = "shuffle-once"
BALLS_IN_BINS = "balls-in-bins"
TRUNCATED_POISSON = "truncated-poisson"
PAIR_SAMPLINGS = (POISSON, FIXED, TRUNCATED_POISSON)
# The samplers whose worst case is one subsampled Gaussian (a rate and a sensitivity): the
# view the closed-form accountants and the k-record group pairs read.
SIMPLE_SAMPLINGS = (POISSON, FIXED)
EPOCH_SAMPLINGS = (SHUFFLE, SHUFFLE_ONCE, BALLS_IN_BINS)
SAMPLINGS = PAIR_SAMPLINGS + EPOCH_SAMPLINGS

ADD_REMOVE = "add-remove"
REPLACE_ONE = "replace-one"
ZERO_OUT = "zero-out"
ADJACENCIES = (ADD_REMOVE, REPLACE_ONE, ZERO_OUT)

# The models pb bounds for the epoch samplers (epoch_samplers.py). Shuffling under
# add/remove is not among them: an inserted record shifts every later position.
EPOCH_MODELS = frozenset({(SHUFFLE, REPLACE_ONE), (SHUFFLE, ZERO_OUT), (SHUFFLE_ONCE, REPLACE_ONE),
                          (SHUFFLE_ONCE, ZERO_OUT), (BALLS_IN_BINS, ADD_REMOVE),
                          (BALLS_IN_BINS, REPLACE_ONE), (BALLS_IN_BINS, ZERO_OUT)})

_SAMPLING_ALIASES = {
    "poisson": POISSON, "poisson-subsampling": POISSON,
    "fixed": FIXED, "fixed-size": FIXED, "without-replacement": FIXED, "wor": FIXED,
    "uniform": FIXED, "sample-without-replacement": FIXED,
    "shuffle": SHUFFLE, "shuffling": SHUFFLE, "shuffled": SHUFFLE, "reshuffle": SHUFFLE,
    "shuffle-once": SHUFFLE_ONCE, "persistent-shuffle": SHUFFLE_ONCE,
    "single-shuffle": SHUFFLE_ONCE,
    "balls-in-bins": BALLS_IN_BINS, "balls-and-bins": BALLS_IN_BINS,
    "random-allocation": BALLS_IN_BINS,
    "truncated-poisson": TRUNCATED_POISSON, "truncated": TRUNCATED_POISSON,
    "poisson-truncated": TRUNCATED_POISSON,
}
_ADJACENCY_ALIASES = {
    "add-remove": ADD_REMOVE, "add/remove": ADD_REMOVE, "addremove": ADD_REMOVE,
    "add-or-remove": ADD_REMOVE, "add-or-remove-one": ADD_REMOVE, "unbounded": ADD_REMOVE,
    "replace-one": REPLACE_ONE, "replace": REPLACE_ONE, "substitution": REPLACE_ONE,
    "substitute": REPLACE_ONE, "bounded": REPLACE_ONE, "swap": REPLACE_ONE,
    "zero-out": ZERO_OUT, "zeroout": ZERO_OUT, "replace-special": ZERO_OUT,
    "replace-with-null": ZERO_OUT,
}

SAMPLING_LABELS = {
    POISSON: "Poisson sampling",
    FIXED: "fixed-size batches (B of N without replacement, each step independent)",
    SHUFFLE: "shuffled batches (a fresh permutation each epoch, cut into ⌈N/B⌉ batches)",
    SHUFFLE_ONCE: "shuffled batches (one permutation, the same order every epoch)",
    BALLS_IN_BINS: "balls-in-bins batches (each record in one uniformly chosen step per epoch)",
    TRUNCATED_POISSON: "truncated Poisson sampling (Poisson at rate q, cut to at most M records)",
}
ADJACENCY_LABELS = {
    ADD_REMOVE: "add/remove-one adjacency",
    REPLACE_ONE: "replace-one adjacency",
    ZERO_OUT: "zero-out adjacency (a record replaced by a null record)",
}


def _key(value) -> str:
    if not isinstance(value, str):
        raise TypeError
    return value.strip().lower().replace("_", "-").replace(" ", "-")


def parse_sampling(value, flag: str = "--sampling", allowed=SAMPLINGS) -> str:
    """A sampler name (or alias) → its canonical name, else a DpcalcError naming ``flag``."""
    try:
        name = _SAMPLING_ALIASES.get(_key(value))
    except TypeError:
        name = None
    if name is None or name not in allowed:
        raise DpcalcError(f"{flag} must be one of {', '.join(allowed)}; got {shown(value)}")
    return name


def parse_adjacency(value, flag: str = "--adjacency", allowed=ADJACENCIES) -> str:
    """A neighbouring relation (or alias) → its canonical name, else a DpcalcError."""
    try:
        name = _ADJACENCY_ALIASES.get(_key(value))
    except TypeError:
        name = None
    if name is None or name not in allowed:
        raise DpcalcError(f"{flag} must be one of {', '.join(allowed)}; got {shown(value)}")
    return name


def model_label(sampling: str, adjacency: str) -> str:
    """'Poisson sampling, add/remove-one adjacency' and the like."""
    return f"{SAMPLING_LABELS[sampling]}, {ADJACENCY_LABELS[adjacency]}"
