"""Batch samplers that draw exactly the run their Schedule describes (NumPy only).

Each sampler is a seeded iterable of index arrays: iterating it once yields the whole run,
``len(sampler)`` batches, each a 1-D ``np.int64`` array of record indices in ``[0, N)``;
``sampler.schedule(noise_multiplier, adjacency)`` is the dpcalc Schedule of that run (its
sampler name, q or B/N, steps, N and M filled in), so the accounting cannot name another
model. They fit a PyTorch ``DataLoader(dataset, batch_sampler=sampler)`` (which calls
``iter`` and ``len`` only), and index NumPy/JAX arrays as ``x[batch]`` or feed tf.data.

The laws (samplers.py names them; each is the model its accountant bounds):

* PoissonSampler — every record joins each batch independently with probability q
  (q = B/N for an expected batch size B). Batches may be EMPTY, and are yielded (as Opacus's
  DPDataLoader does): the step still runs and releases noise alone. A plain DataLoader's
  default collate fails on ``[]``; give it a collate_fn that returns an empty batch.
* FixedSizeSampler — a uniform B-subset without replacement, independently at every step
  (not a shuffled epoch: a record can be in consecutive batches).
* TruncatedPoissonSampler — Poisson at rate q; when more than M records were drawn, a
  uniformly random M of them (truncated.py).
* ShuffleSampler — each epoch a fresh uniform permutation cut into ⌈N/B⌉ consecutive
  batches, the last holding N mod B when B does not divide N (``drop_last=True``: ⌊N/B⌋
  full batches; a model dpcalc has only when B divides N).
* BallsInBinsSampler — each epoch every record is put in one of the t steps of the epoch,
  uniformly and independently (t = ⌈N/B⌉, or ``steps_per_epoch``); batch sizes vary,
  ~Binomial(N, 1/t).

Steps: ``steps``, or ``epochs`` — ⌈epochs·N/B⌉ (⌈epochs/q⌉ given q) for the per-step
samplers, `dpcalc epsilon --epochs`'s rule; ⌈epochs·b⌉ for the epoch samplers with b steps
per epoch (`dpcalc simulate`'s rule). A run that ends inside an epoch yields that epoch's
first batches (the model epoch_samplers.py bounds: the rest of the epoch is never run).

Seeding: ``seed`` is an int, a ``np.random.SeedSequence`` or None (fresh OS entropy, drawn
once when the sampler is made and kept in ``sampler.seed_sequence``): every iteration starts
a new ``np.random.Generator(np.random.PCG64(seed_sequence))`` (for an int, the stream of
``np.random.default_rng(seed)``), so iterating twice gives the same batches — one iteration
is the whole run, so do not wrap the loader in an epoch loop (that replays the run). A
``np.random.Generator`` passed as ``seed`` is used as is: each iteration continues its stream.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from dpcalc.errors import DpcalcError
from dpcalc.models.samplers import (ADD_REMOVE, BALLS_IN_BINS, FIXED, POISSON, SHUFFLE,
                                    TRUNCATED_POISSON)
from dpcalc.models.schedule import MAX_STEPS, Phase, Schedule
from dpcalc.params import check_count, check_sampling_rate, epoch_steps, resolve_steps


# ---------------------------------------------------------------- one draw of each law
def poisson_batch(dataset_size: int, sampling_rate: float, rng: np.random.Generator) -> np.ndarray:
    """Indices of a Poisson sample: every record independently with probability q."""
    return np.flatnonzero(rng.random(dataset_size) < sampling_rate)


def fixed_batch(dataset_size: int, batch_size: int, rng: np.random.Generator) -> np.ndarray:
    """B indices drawn uniformly without replacement (sorted)."""
    return np.sort(rng.choice(dataset_size, size=batch_size, replace=False))


def truncated_batch(dataset_size: int, sampling_rate: float, max_batch_size: int,
                    rng: np.random.Generator) -> np.ndarray:
    """A Poisson sample cut to a uniformly random M of its records when it holds more."""
    drawn = poisson_batch(dataset_size, sampling_rate, rng)
    if drawn.shape[0] <= max_batch_size:
        return drawn
    return np.sort(rng.choice(drawn, size=max_batch_size, replace=False))


def shuffled_epoch(dataset_size: int, batch_size: int, rng: np.random.Generator,
                   drop_last: bool = False) -> list[np.ndarray]:
    """One permutation cut into ⌈N/B⌉ batches (the last holds N mod B if nonzero), or
    ⌊N/B⌋ full ones with ``drop_last``."""
    order = rng.permutation(dataset_size)
    end = dataset_size - dataset_size % batch_size if drop_last else dataset_size
    return [order[start:start + batch_size] for start in range(0, end, batch_size)]


def allocated_epoch(dataset_size: int, steps_per_epoch: int,
                    rng: np.random.Generator) -> list[np.ndarray]:
    """One balls-in-bins epoch: each record in one of t steps, uniformly and independently
    (each batch sorted)."""
    slots = rng.integers(0, steps_per_epoch, size=dataset_size)
    order = np.argsort(slots, kind="stable")
    return np.split(order, np.searchsorted(slots[order], np.arange(1, steps_per_epoch)))


# ---------------------------------------------------------------- the samplers
def _seed_source(seed):
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is None:
        return np.random.SeedSequence()
    if isinstance(seed, (bool, float)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise DpcalcError(f"seed must be a whole number >= 0, a numpy SeedSequence or Generator, "
                          f"or None; got {seed!r}")
    return np.random.SeedSequence(int(seed))


class _BatchSampler:
    """What every sampler shares: N, steps, seeding, ``len``, ``iter`` and the schedule."""

    sampling: str = ""

    def __init__(self, dataset_size, steps, epochs, seed) -> None:
        self.dataset_size = check_count(dataset_size, "dataset_size")
        self._seed = _seed_source(seed)
        self._steps_or_epochs = (steps, epochs)

    def _set_steps(self, per_epoch_rate: float, batch_size: int | None = None) -> None:
        steps, epochs = self._steps_or_epochs
        if steps is None and epochs is not None:
            size = self.dataset_size if batch_size is not None else None
            self.steps = epoch_steps(epochs, per_epoch_rate, batch_size, size, "epochs").steps
        else:
            self.steps = resolve_steps(steps, epochs, per_epoch_rate, steps_flag="steps",
                                       epochs_flag="epochs")

    @property
    def seed_sequence(self) -> np.random.SeedSequence | None:
        """The SeedSequence every iteration starts from (None when a Generator was given)."""
        return None if isinstance(self._seed, np.random.Generator) else self._seed

    def generator(self) -> np.random.Generator:
        """The generator one iteration draws from (module doc: seeding)."""
        if isinstance(self._seed, np.random.Generator):
            return self._seed
        return np.random.Generator(np.random.PCG64(self._seed))

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[np.ndarray]:
        return self._batches(self.generator())

    def _batches(self, rng: np.random.Generator) -> Iterator[np.ndarray]:
        raise NotImplementedError

    def phase(self, noise_multiplier: float, adjacency: str = ADD_REMOVE) -> Phase:
        """The run as one dpcalc Phase at noise multiplier σ (compose several samplers'
        phases into one Schedule for a run in parts)."""
        raise NotImplementedError

    def schedule(self, noise_multiplier: float, adjacency: str = ADD_REMOVE) -> Schedule:
        """The dpcalc Schedule of exactly the run this sampler draws, at noise multiplier σ,
        for the neighbouring relation ``adjacency`` (add-remove, replace-one or zero-out)."""
        return Schedule((self.phase(noise_multiplier, adjacency),))

    def _fields(self) -> dict:
        return {"dataset_size": self.dataset_size, "steps": self.steps}

    def __repr__(self) -> str:
        shown = ", ".join(f"{key}={value!r}" for key, value in self._fields().items()
                          if value is not None)
        return f"{type(self).__name__}({shown})"


def _rate_or_batch(dataset_size: int, sampling_rate, batch_size) -> tuple[float, int | None]:
    """(q, B): q given, or q = B/N from an expected batch size B ≤ N; exactly one."""
    if (sampling_rate is None) == (batch_size is None):
        raise DpcalcError("give sampling_rate (q, in (0, 1]) or batch_size (B, the expected "
                          "batch size: q = B/N), exactly one")
    if batch_size is None:
        return check_sampling_rate(sampling_rate, "sampling_rate"), None
    batch = check_count(batch_size, "batch_size", maximum=dataset_size)
    return batch / dataset_size, batch


def _batch_size(batch_size, dataset_size: int) -> int:
    return check_count(batch_size, "batch_size", maximum=dataset_size)


class _PerStepSampler(_BatchSampler):
    """A sampler that draws every step afresh."""

    def _batches(self, rng: np.random.Generator) -> Iterator[np.ndarray]:
        for _ in range(self.steps):
            yield self._draw(rng)

    def _draw(self, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError


class PoissonSampler(_PerStepSampler):
    """Poisson sampling at rate q (``sampling_rate``), or q = B/N for an expected batch size
    ``batch_size``; empty batches are yielded (module doc)."""

    sampling = POISSON

    def __init__(self, dataset_size: int, *, sampling_rate: float | None = None,
                 batch_size: int | None = None, steps: int | None = None,
                 epochs: float | None = None, seed=None) -> None:
        super().__init__(dataset_size, steps, epochs, seed)
        self.sampling_rate, self.batch_size = _rate_or_batch(self.dataset_size, sampling_rate,
                                                             batch_size)
        self._set_steps(self.sampling_rate, self.batch_size)

    def _draw(self, rng):
        return poisson_batch(self.dataset_size, self.sampling_rate, rng)

    def phase(self, noise_multiplier, adjacency=ADD_REMOVE):
        if self.batch_size is not None:
            return Phase.from_batches(self.batch_size, self.dataset_size, noise_multiplier,
                                      self.steps, POISSON, adjacency)
        return Phase(self.sampling_rate, noise_multiplier, self.steps, POISSON, adjacency)

    def _fields(self):
        return {**super()._fields(), "sampling_rate": self.sampling_rate,
                "batch_size": self.batch_size}


class FixedSizeSampler(_PerStepSampler):
    """B of the N records, uniformly without replacement, independently at every step."""

    sampling = FIXED

    def __init__(self, dataset_size: int, *, batch_size: int, steps: int | None = None,
                 epochs: float | None = None, seed=None) -> None:
        super().__init__(dataset_size, steps, epochs, seed)
        self.batch_size = _batch_size(batch_size, self.dataset_size)
        self.sampling_rate = self.batch_size / self.dataset_size
        self._set_steps(self.sampling_rate, self.batch_size)

    def _draw(self, rng):
        return fixed_batch(self.dataset_size, self.batch_size, rng)

    def phase(self, noise_multiplier, adjacency=ADD_REMOVE):
        return Phase.from_batches(self.batch_size, self.dataset_size, noise_multiplier,
                                  self.steps, FIXED, adjacency)

    def _fields(self):
        return {**super()._fields(), "batch_size": self.batch_size}


class TruncatedPoissonSampler(_PerStepSampler):
    """Poisson at rate q (or q = B/N), cut to a uniformly random ``max_batch_size`` = M of
    the drawn records when more were drawn (truncated.py's model)."""

    sampling = TRUNCATED_POISSON

    def __init__(self, dataset_size: int, *, max_batch_size: int,
                 sampling_rate: float | None = None, batch_size: int | None = None,
                 steps: int | None = None, epochs: float | None = None, seed=None) -> None:
        super().__init__(dataset_size, steps, epochs, seed)
        self.sampling_rate, self.batch_size = _rate_or_batch(self.dataset_size, sampling_rate,
                                                             batch_size)
        self.max_batch_size = check_count(max_batch_size, "max_batch_size",
                                          maximum=self.dataset_size)
        self._set_steps(self.sampling_rate, self.batch_size)

    def _draw(self, rng):
        return truncated_batch(self.dataset_size, self.sampling_rate, self.max_batch_size, rng)

    def phase(self, noise_multiplier, adjacency=ADD_REMOVE):
        rate = None if self.batch_size is not None else self.sampling_rate
        return Phase(rate, noise_multiplier, self.steps, TRUNCATED_POISSON, adjacency,
                     self.batch_size, self.dataset_size, self.max_batch_size)

    def _fields(self):
        return {**super()._fields(), "sampling_rate": self.sampling_rate,
                "batch_size": self.batch_size, "max_batch_size": self.max_batch_size}


class _EpochSampler(_BatchSampler):
    """A sampler that draws a whole epoch of ``steps_per_epoch`` batches at a time."""

    steps_per_epoch: int

    def _batches(self, rng: np.random.Generator) -> Iterator[np.ndarray]:
        produced = 0
        while produced < self.steps:
            for batch in self._epoch(rng):
                if produced == self.steps:
                    return
                produced += 1
                yield batch

    def _epoch(self, rng: np.random.Generator) -> list[np.ndarray]:
        raise NotImplementedError

    def _fields(self):
        return {**super()._fields(), "steps_per_epoch": self.steps_per_epoch}


class ShuffleSampler(_EpochSampler):
    """Each epoch a fresh uniform permutation cut into ⌈N/B⌉ consecutive batches (PyTorch's
    ``DataLoader(shuffle=True)``); ``drop_last`` drops the partial last batch."""

    sampling = SHUFFLE

    def __init__(self, dataset_size: int, *, batch_size: int, steps: int | None = None,
                 epochs: float | None = None, drop_last: bool = False, seed=None) -> None:
        super().__init__(dataset_size, steps, epochs, seed)
        self.batch_size = _batch_size(batch_size, self.dataset_size)
        self.drop_last = bool(drop_last)
        whole, rest = divmod(self.dataset_size, self.batch_size)
        self.steps_per_epoch = whole if self.drop_last else whole + (rest > 0)
        self._set_steps(1.0 / self.steps_per_epoch)

    def _epoch(self, rng):
        return shuffled_epoch(self.dataset_size, self.batch_size, rng, self.drop_last)

    def phase(self, noise_multiplier, adjacency=ADD_REMOVE):
        # drop_last: ⌊N/B⌋ batches an epoch, the N mod B records left out (the --drop-last
        # model); where B divides N nothing is dropped: the plain shuffle model
        dropping = self.drop_last and self.dataset_size % self.batch_size != 0
        return Phase.from_batches(self.batch_size, self.dataset_size, noise_multiplier,
                                  self.steps, SHUFFLE, adjacency, drop_last=dropping)

    def _fields(self):
        return {**super()._fields(), "batch_size": self.batch_size,
                "drop_last": self.drop_last or None}


class BallsInBinsSampler(_EpochSampler):
    """Balls-in-bins (random allocation): each epoch every record in one of t steps, chosen
    uniformly and independently; t = ⌈N/B⌉ from ``batch_size``, or ``steps_per_epoch``."""

    sampling = BALLS_IN_BINS

    def __init__(self, dataset_size: int, *, batch_size: int | None = None,
                 steps_per_epoch: int | None = None, steps: int | None = None,
                 epochs: float | None = None, seed=None) -> None:
        super().__init__(dataset_size, steps, epochs, seed)
        if (batch_size is None) == (steps_per_epoch is None):
            raise DpcalcError("give batch_size (B: t = ⌈N/B⌉ steps per epoch) or "
                              "steps_per_epoch (t), exactly one")
        if batch_size is not None:
            self.batch_size = _batch_size(batch_size, self.dataset_size)
            self.steps_per_epoch = -(-self.dataset_size // self.batch_size)
        else:
            self.batch_size = None
            self.steps_per_epoch = check_count(steps_per_epoch, "steps_per_epoch",
                                               maximum=MAX_STEPS)
        self._set_steps(1.0 / self.steps_per_epoch)

    def _epoch(self, rng):
        return allocated_epoch(self.dataset_size, self.steps_per_epoch, rng)

    def phase(self, noise_multiplier, adjacency=ADD_REMOVE):
        if self.batch_size is not None:
            return Phase.from_batches(self.batch_size, self.dataset_size, noise_multiplier,
                                      self.steps, BALLS_IN_BINS, adjacency)
        # q = 1/t: the accountant reads t = ⌈1/q⌉ steps per epoch (epoch_samplers.py)
        return Phase(1.0 / self.steps_per_epoch, noise_multiplier, self.steps, BALLS_IN_BINS,
                     adjacency)

    def _fields(self):
        return {**super()._fields(), "batch_size": self.batch_size}

