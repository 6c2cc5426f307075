"""The names of the models a certificate can be for: how batches are drawn (the sampler)
and which datasets count as neighbours (the adjacency).

* ``poisson`` — every record joins each batch independently with probability q.
* ``fixed`` — each batch is B of the N records drawn uniformly without replacement,
  independently at every step (q = B/N is then the chance a given record is in it).
* ``truncated-poisson`` — Poisson at rate q, then, if more than M records were drawn, a
  uniformly random M of them (static batch shapes, as JAX pipelines; Ganesh 2025).
* ``shuffle`` — each epoch a fresh uniform permutation cut into ⌈N/B⌉ consecutive
  batches; ``shuffle-once`` — one permutation, the same order every epoch.
* ``sequential`` — the same known order every epoch (a data loader that does not shuffle).
* ``once-per-epoch`` — each epoch every record in exactly one step, the order drawn by any
  law that does not depend on the records' values (not a uniform permutation: tf.data's
  shuffle with a buffer smaller than N).
* ``balls-in-bins`` — each epoch every record is put in one of the ⌈N/B⌉ steps chosen
  uniformly and independently (random allocation).
* ``add-remove`` — neighbours differ by one record added or removed.
* ``replace-one`` — neighbours have the same size and differ in one record.
* ``zero-out`` — one record replaced by a null record whose gradient is 0 (both orders;
  dp_accounting's REPLACE_SPECIAL).

poisson, fixed and truncated-poisson are bounded by one dominating pair per step
(worst_case.py; truncated.py for the last); the epoch
samplers by an explicit upper and lower bound per model (epoch_samplers.py; the epoch
structure and its proofs: epoch_orders.py). ``drop_last`` (shuffle, sequential): the batches
are the ⌊N/B⌋ full ones, N mod B records unused each epoch.

Aliases that users of other tools type are accepted (``substitution``, ``wor``, …).
"""
from __future__ import annotations

from dpcalc.errors import DpcalcError
from dpcalc.params import shown

POISSON = "poisson"
FIXED = "fixed"
SHUFFLE = "shuffle"
SHUFFLE_ONCE = "shuffle-once"
SEQUENTIAL = "sequential"
ONCE_PER_EPOCH = "once-per-epoch"
BALLS_IN_BINS = "balls-in-bins"
TRUNCATED_POISSON = "truncated-poisson"
PAIR_SAMPLINGS = (POISSON, FIXED, TRUNCATED_POISSON)
# The samplers whose worst case is one subsampled Gaussian (a rate and a sensitivity): the
# view the closed-form accountants and the k-record group pairs read.
SIMPLE_SAMPLINGS = (POISSON, FIXED)
EPOCH_SAMPLINGS = (SHUFFLE, SHUFFLE_ONCE, BALLS_IN_BINS, SEQUENTIAL, ONCE_PER_EPOCH)
# The epoch samplers whose batches may drop the partial last one (data loaders' drop_last).
DROP_LAST_SAMPLINGS = (SHUFFLE, SEQUENTIAL)
SAMPLINGS = PAIR_SAMPLINGS + EPOCH_SAMPLINGS

ADD_REMOVE = "add-remove"
REPLACE_ONE = "replace-one"
ZERO_OUT = "zero-out"
ADJACENCIES = (ADD_REMOVE, REPLACE_ONE, ZERO_OUT)

# The models pb bounds for the epoch samplers (epoch_samplers.py). The samplers that fix
# positions in an order (shuffle, shuffle-once, sequential, once-per-epoch) under add/remove
# are not among them: an inserted record shifts every later position.
ORDER_SAMPLINGS = (SHUFFLE, SHUFFLE_ONCE, SEQUENTIAL, ONCE_PER_EPOCH)
EPOCH_MODELS = frozenset({(sampling, adjacency) for sampling in ORDER_SAMPLINGS
                          for adjacency in (REPLACE_ONE, ZERO_OUT)}
                         | {(BALLS_IN_BINS, adjacency) for adjacency in ADJACENCIES})
# Where a model has no certificate, the nearest one that has (same run, another relation),
# and why it is the nearest: shown beside a "not applicable" row, never as its value.
NEAREST_ADJACENCY = {(sampling, ADD_REMOVE): ZERO_OUT for sampling in ORDER_SAMPLINGS}
NEAREST_WHY = ("under add/remove an inserted record shifts the position of every later record "
               "in the order, so many batches change and no certificate is known; zero-out (the "
               "record replaced by a null record with zero gradient, every position kept; "
               "Chua et al. 2024's relation for shuffling) is the nearest relation that has one")

_SAMPLING_ALIASES = {
    "poisson": POISSON, "poisson-subsampling": POISSON,
    "fixed": FIXED, "fixed-size": FIXED, "without-replacement": FIXED, "wor": FIXED,
    "uniform": FIXED, "sample-without-replacement": FIXED,
    "shuffle": SHUFFLE, "shuffling": SHUFFLE, "shuffled": SHUFFLE, "reshuffle": SHUFFLE,
    "shuffle-once": SHUFFLE_ONCE, "persistent-shuffle": SHUFFLE_ONCE,
    "single-shuffle": SHUFFLE_ONCE,
    "sequential": SEQUENTIAL, "no-shuffle": SEQUENTIAL, "in-order": SEQUENTIAL,
    "fixed-order": SEQUENTIAL, "unshuffled": SEQUENTIAL,
    "once-per-epoch": ONCE_PER_EPOCH, "each-once-per-epoch": ONCE_PER_EPOCH,
    "buffered-shuffle": ONCE_PER_EPOCH, "shuffle-buffer": ONCE_PER_EPOCH,
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
    SEQUENTIAL: "sequential batches (the same known order every epoch, cut into ⌈N/B⌉ batches)",
    ONCE_PER_EPOCH: ("once-per-epoch batches (each record in one step per epoch, the order not "
                     "a uniform permutation)"),
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


DROP_LAST_LABEL = "the last partial batch dropped: ⌊N/B⌋ batches per epoch"


def model_label(sampling: str, adjacency: str, drop_last: bool = False) -> str:
    """'Poisson sampling, add/remove-one adjacency' and the like."""
    label = SAMPLING_LABELS[sampling]
    if drop_last:
        label = label.replace("⌈N/B⌉ batches)", f"batches; {DROP_LAST_LABEL})")
    return f"{label}, {ADJACENCY_LABELS[adjacency]}"


def nearest_certified(sampling: str, adjacency: str) -> str | None:
    """The adjacency of the nearest model with a certificate, where (sampling, adjacency)
    has none (NEAREST_ADJACENCY); None where it has one or no nearer one is known."""
    return NEAREST_ADJACENCY.get((sampling, adjacency))
