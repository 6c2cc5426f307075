"""The names of the models a certificate can be for: how batches are drawn (the sampler)
and which datasets count as neighbours (the adjacency).

* ``poisson`` — every record joins each batch independently with probability q.
* ``fixed`` — each batch is B of the N records drawn uniformly without replacement,
  independently at every step (q = B/N is then the chance a given record is in it).
* ``add-remove`` — neighbours differ by one record added or removed.
* ``replace-one`` — neighbours have the same size and differ in one record.

Aliases that users of other tools type are accepted (``substitution``, ``wor``, …).
"""
from __future__ import annotations

from dpcalc.errors import DpcalcError

POISSON = "poisson"
FIXED = "fixed"
SAMPLINGS = (POISSON, FIXED)

ADD_REMOVE = "add-remove"
REPLACE_ONE = "replace-one"
ADJACENCIES = (ADD_REMOVE, REPLACE_ONE)

_SAMPLING_ALIASES = {
    "poisson": POISSON, "poisson-subsampling": POISSON,
    "fixed": FIXED, "fixed-size": FIXED, "without-replacement": FIXED, "wor": FIXED,
    "uniform": FIXED, "sample-without-replacement": FIXED,
}
_ADJACENCY_ALIASES = {
    "add-remove": ADD_REMOVE, "add/remove": ADD_REMOVE, "addremove": ADD_REMOVE,
    "add-or-remove": ADD_REMOVE, "add-or-remove-one": ADD_REMOVE, "unbounded": ADD_REMOVE,
    "replace-one": REPLACE_ONE, "replace": REPLACE_ONE, "substitution": REPLACE_ONE,
    "substitute": REPLACE_ONE, "bounded": REPLACE_ONE, "swap": REPLACE_ONE,
}

SAMPLING_LABELS = {
    POISSON: "Poisson sampling",
    FIXED: "fixed-size batches (B of N without replacement, each step independent)",
}
ADJACENCY_LABELS = {
    ADD_REMOVE: "add/remove-one adjacency",
    REPLACE_ONE: "replace-one adjacency",
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
        raise DpcalcError(f"{flag} must be one of {', '.join(allowed)}; got {value!r}")
    return name


def parse_adjacency(value, flag: str = "--adjacency") -> str:
    """A neighbouring relation (or alias) → its canonical name, else a DpcalcError."""
    try:
        name = _ADJACENCY_ALIASES.get(_key(value))
    except TypeError:
        name = None
    if name is None:
        raise DpcalcError(f"{flag} must be one of {', '.join(ADJACENCIES)}; got {value!r}")
    return name


def model_label(sampling: str, adjacency: str) -> str:
    """'Poisson sampling, add/remove-one adjacency' and the like."""
    return f"{SAMPLING_LABELS[sampling]}, {ADJACENCY_LABELS[adjacency]}"
