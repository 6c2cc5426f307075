"""Data pipelines by name: which model (sampler, adjacency, unit) each one is.

A certificate holds for one model of the run (samplers.py); users know their pipeline
(PyTorch's DataLoader, Opacus, tf.data, jax_privacy, a federated server), not its model.
This table is the one source of truth for ``--pipeline``, ``dpcalc pipelines`` and the
table of docs/models.md, "Which --sampling is my pipeline?" (a test checks it).

Where the pipeline fixes positions in an order (shuffle, sequential, once-per-epoch), no
certificate exists under add/remove (an inserted record shifts every later position), so
the pipeline picks zero-out unless the user names an adjacency — the relation Chua et al.
2024 use for shuffling, and dp_accounting's REPLACE_SPECIAL. A named --adjacency is the
guarantee's choice, not the loader's: it is kept (and said so).
"""
from __future__ import annotations

from dataclasses import dataclass

from dpcalc.errors import DpcalcError
from dpcalc.models.samplers import (ADD_REMOVE, BALLS_IN_BINS, FIXED, ONCE_PER_EPOCH, POISSON,
                                    SEQUENTIAL, SHUFFLE, TRUNCATED_POISSON, ZERO_OUT, model_label,
                                    parse_adjacency, parse_sampling)

EXAMPLE = "example"
CLIENT = "client"
USER = "user"
UNITS = (EXAMPLE, CLIENT, USER)
UNIT_WORDS = {
    EXAMPLE: "one training example (example-level DP)",
    CLIENT: "one client — all of one client's data, whose clipped update is one record of the "
            "model (client-level DP; a round is a step)",
    USER: "one user — all of one person's records, grouped into one record of the model "
          "(user-level DP)",
}
_UNIT_ALIASES = {"example": EXAMPLE, "examples": EXAMPLE, "record": EXAMPLE, "sample": EXAMPLE,
                 "client": CLIENT, "clients": CLIENT, "user": USER, "users": USER,
                 "person": USER}

ZERO_OUT_WHY = ("zero-out chosen: this loader fixes each record's position in an order, and under "
                "add/remove (an inserted record shifts every later position) no certificate is "
                "known; --adjacency replace-one or add-remove overrides it")


@dataclass(frozen=True)
class Pipeline:
    """A named data pipeline and the model it is: ``sampling``, the default ``adjacency``,
    the ``unit`` one record stands for, ``drop_last``; ``what`` names the code or setting,
    ``why`` says why it is this model, ``needs`` what else to give."""

    name: str
    aliases: tuple[str, ...]
    what: str
    sampling: str
    adjacency: str
    why: str
    unit: str = EXAMPLE
    drop_last: bool = False
    needs: str = ""

    @property
    def model(self) -> str:
        return model_label(self.sampling, self.adjacency, self.drop_last)

    def record(self) -> dict:
        """The JSON record (``inputs.pipeline`` and ``dpcalc pipelines --format json``)."""
        return {"name": self.name, "aliases": list(self.aliases), "what": self.what,
                "sampling": self.sampling, "adjacency": self.adjacency, "unit": self.unit,
                "drop_last": self.drop_last, "model": self.model, "why": self.why,
                "needs": self.needs or None}


_SHUFFLE_WHY = ("a fresh uniform permutation each epoch, cut into ⌈N/B⌉ consecutive batches "
                "(the last one partial): each record once per epoch; not Poisson")
PIPELINES = (
    Pipeline("opacus", ("opacus-poisson", "dp-dataloader", "opacus-dp-dataloader"),
             "Opacus DPDataLoader, or make_private(..., poisson_sampling=True) (its default)",
             POISSON, ADD_REMOVE,
             "each record joins each batch independently with probability q = B/N"),
    Pipeline("opacus-no-poisson", ("opacus-shuffle",),
             "Opacus make_private(..., poisson_sampling=False) with DataLoader(shuffle=True)",
             SHUFFLE, ZERO_OUT,
             "Opacus keeps the DataLoader's shuffled batches: " + _SHUFFLE_WHY),
    Pipeline("torch-shuffle", ("pytorch-shuffle", "dataloader-shuffle", "torch-dataloader-shuffle"),
             "PyTorch DataLoader(dataset, batch_size=B, shuffle=True) (drop_last=False)",
             SHUFFLE, ZERO_OUT, _SHUFFLE_WHY),
    Pipeline("torch-shuffle-drop-last", ("pytorch-shuffle-drop-last",),
             "PyTorch DataLoader(dataset, batch_size=B, shuffle=True, drop_last=True)",
             SHUFFLE, ZERO_OUT,
             "a fresh uniform permutation each epoch; its first ⌊N/B⌋·B records are batched, "
             "the N mod B others unused that epoch", drop_last=True),
    Pipeline("torch-sequential", ("pytorch-sequential", "torch-no-shuffle", "dataloader"),
             "PyTorch DataLoader(dataset, batch_size=B, shuffle=False)",
             SEQUENTIAL, ZERO_OUT,
             "the same known order every epoch: no amplification at all (the certificate is "
             "exact)"),
    Pipeline("tf-shuffle", ("tf-data-shuffle", "tfdata-shuffle"),
             "tf.data: ds.shuffle(buffer_size ≥ N, reshuffle_each_iteration=True).batch(B)",
             SHUFFLE, ZERO_OUT,
             "a buffer holding the whole dataset draws a uniform permutation each epoch"),
    Pipeline("tf-shuffle-buffer", ("tf-data-shuffle-buffer", "tfdata-shuffle-buffer"),
             "tf.data: ds.shuffle(buffer_size < N).batch(B)",
             ONCE_PER_EPOCH, ZERO_OUT,
             "a buffer smaller than N keeps early records early: each record once per epoch, "
             "the order not a uniform permutation"),
    Pipeline("jax-privacy-poisson", ("jax-privacy-truncated", "jax-privacy-truncated-poisson"),
             "jax_privacy Poisson batch selection with a fixed maximum batch size (cut and "
             "padded to static shapes)",
             TRUNCATED_POISSON, ADD_REMOVE,
             "Poisson at q = B/N, a batch of more than M records cut to a random M",
             needs="--max-batch-size M and --dataset-size N"),
    Pipeline("balls-in-bins", ("jax-privacy-bib", "jax-privacy-balls-in-bins"),
             "jax_privacy balls-in-bins batch selection",
             BALLS_IN_BINS, ADD_REMOVE,
             "each record in one uniformly chosen step per epoch, independently"),
    Pipeline("flower", ("tff", "fedavg", "flower-fixed", "tff-fixed"),
             "Flower / TensorFlow Federated server sampling exactly m of M clients each round",
             FIXED, ADD_REMOVE,
             "m of M clients drawn uniformly without replacement, independently each round: "
             "--batch-size m --dataset-size M, --steps rounds",
             unit=CLIENT),
    Pipeline("federated-poisson", ("fl-poisson", "client-poisson"),
             "a federated server that includes each client independently with probability q "
             "each round",
             POISSON, ADD_REMOVE,
             "Poisson sampling of clients: --q q (or --batch-size m --dataset-size M for "
             "q = m/M), --steps rounds",
             unit=CLIENT),
)
_BY_NAME = {key: pipeline for pipeline in PIPELINES for key in (pipeline.name, *pipeline.aliases)}
PIPELINE_NAMES = tuple(pipeline.name for pipeline in PIPELINES)


def _key(value: str) -> str:
    return str(value).strip().lower().replace("_", "-").replace(" ", "-")


def get_pipeline(name) -> Pipeline:
    """A pipeline by its name or an alias, else a DpcalcError naming --pipeline."""
    found = _BY_NAME.get(_key(name)) if isinstance(name, str) else None
    if found is None:
        raise DpcalcError(f"--pipeline must be one of {', '.join(PIPELINE_NAMES)} (`dpcalc "
                          f"pipelines` lists them); got {name!r}")
    return found


def parse_unit(value) -> str:
    """--unit: example, client or user (and their plurals)."""
    found = _UNIT_ALIASES.get(_key(value)) if isinstance(value, str) else None
    if found is None:
        raise DpcalcError(f"--unit must be one of {', '.join(UNITS)}; got {value!r}")
    return found


@dataclass(frozen=True)
class RunModel:
    """The model a run's flags resolve to, and what to say about it."""

    sampling: str
    adjacency: str
    unit: str
    drop_last: bool
    pipeline: Pipeline | None
    adjacency_note: str = ""  # why this adjacency, when the pipeline chose or was overridden

    def pipeline_record(self) -> dict | None:
        """``inputs.pipeline``: the pipeline and the model it maps to as used."""
        if self.pipeline is None:
            return None
        return {**self.pipeline.record(), "adjacency": self.adjacency, "unit": self.unit,
                "drop_last": self.drop_last,
                "model": model_label(self.sampling, self.adjacency, self.drop_last),
                "adjacency_note": self.adjacency_note or None}


def resolve_model(pipeline=None, sampling=None, adjacency=None, unit=None,
                  drop_last: bool = False) -> RunModel:
    """The run's sampler, adjacency, unit and drop_last from --pipeline and the explicit
    flags (None: not given). An explicit --sampling must be the pipeline's (else exit 2);
    an explicit --adjacency or --unit is kept, the pipeline's otherwise."""
    if pipeline is None:
        return RunModel(parse_sampling(sampling if sampling is not None else POISSON),
                        parse_adjacency(adjacency if adjacency is not None else ADD_REMOVE),
                        parse_unit(unit if unit is not None else EXAMPLE), bool(drop_last), None)
    found = get_pipeline(pipeline)
    if sampling is not None and parse_sampling(sampling) != found.sampling:
        raise DpcalcError(f"--pipeline {found.name} is --sampling {found.sampling}; got --sampling "
                          f"{sampling} (give one of them)")
    chosen = found.adjacency if adjacency is None else parse_adjacency(adjacency)
    note = ""
    if adjacency is None and found.adjacency == ZERO_OUT:
        note = ZERO_OUT_WHY
    elif adjacency is not None and chosen != found.adjacency:
        note = f"--adjacency {chosen} given (the pipeline's default is {found.adjacency})"
    return RunModel(found.sampling, chosen, found.unit if unit is None else parse_unit(unit),
                    found.drop_last or bool(drop_last), found, note)


__all__ = ["PIPELINES", "PIPELINE_NAMES", "Pipeline", "RunModel", "UNITS", "UNIT_WORDS",
           "get_pipeline", "parse_unit", "resolve_model"]
