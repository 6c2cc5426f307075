"""Gradient canaries in shuffled batches (`--sampling shuffle`), and the pair their scores test.

Shuffled DP-SGD draws a fresh permutation each epoch and cuts it into b = ⌈N/B⌉ batches, so a
record is in exactly one step per epoch and takes a slot another record would have had. The
canaries are records of that permutation (dpcalc.dpsgd.train.placed_epoch_batches): each epoch
every canary lands in one batch, in both worlds. An "out" canary keeps its slot and contributes
the neighbouring record's gradient: 0 under zero-out (a null record, dp_accounting's
REPLACE_SPECIAL), −C·e_j under replace-one (an ordinary crafted record). pb certifies exactly
this (dpcalc.accountants.epoch_samplers: each record in one step per epoch, sensitivity C or 2C).

Chua et al. 2024 ("How Private are DP-SGD Implementations?", ICML, §4) show the displacement
this causes: when every other record's clipped gradient is −C·e_j, the batch holding the canary
has one ordinary record fewer. Reading x_t = B·g̃_t[j]/C + (records in batch t) (batch sizes are
public) is N(0, σ²) in every step except the canary's, where it is N(2, σ²) when the canary is
in (+C instead of a −C record) and N(1, σ²) when it is out under zero-out (0 instead of −C;
N(0, σ²) under replace-one). Poisson sampling displaces nothing, so its pair is (1, 0): the
shuffle pair (2, 1) is what makes the Poisson figure fail for shuffled batches.

``crafted_others`` builds that instance (the Monte Carlo audit's small task: every ordinary
record's clipped gradient IS −C·e_j, norm C, so every record is clipped as DP-SGD requires).
Without it (the one-run audit's canaries, on coordinates of their own: dpcalc.audit.dirac)
the shifts are (1, 0) or (1, −1).

Score per canary: the log-likelihood ratio of the epoch pair, summed over epochs. One epoch of
b readings, the canary's step uniform among the b; an in-canary shifts its step by a, an out one
by c: LR = Σ_t exp(ℓ_a(x_t)) / Σ_t exp(ℓ_c(x_t)), ℓ_s(x) = (2sx − s²)/(2σ²). A last partial
epoch of r < b steps adds (b − r) to both sums (the canary's step not yet run).
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.dpsgd.models import Params, SoftmaxModel
from dpcalc.errors import DpcalcError

# out-canary's gradient in clip norms: a null record (zero-out), an ordinary record (replace-one)
OUT_VALUE = {"zero-out": 0.0, "replace-one": -1.0}


def shuffle_shifts(adjacency: str, crafted_others: bool) -> tuple[float, float]:
    """(shift of the canary's step when in, when out), in clip norms (module doc)."""
    out = OUT_VALUE[adjacency]
    return (2.0, 1.0 + out) if crafted_others else (1.0, out)


def _log_terms(readings: np.ndarray, shift: float, noise: float | np.ndarray) -> np.ndarray:
    return (2.0 * shift * readings - shift * shift) / (2.0 * np.square(noise))


def epoch_log_ratio(log_in: np.ndarray, log_out: np.ndarray, steps_per_epoch: int) -> np.ndarray:
    """log LR of one epoch from the per-step ℓ_a, ℓ_c (last axis: the r steps run)."""
    missing = steps_per_epoch - log_in.shape[-1]
    top = np.logaddexp.reduce(log_in, axis=-1)
    bottom = np.logaddexp.reduce(log_out, axis=-1)
    if missing > 0:
        top = np.logaddexp(top, math.log(missing))
        bottom = np.logaddexp(bottom, math.log(missing))
    return top - bottom


def simulate_shuffle_scores(rng: np.random.Generator, draws: int, steps: int,
                            steps_per_epoch: int, shifts: tuple[float, float],
                            noise_multiplier: float, member: bool) -> np.ndarray:
    """Scores of ``draws`` simulated runs of the epoch pair (member: shift a, else c)."""
    shift_in, shift_out = shifts
    shift = shift_in if member else shift_out
    total = np.zeros(draws)
    for start in range(0, steps, steps_per_epoch):
        length = min(steps_per_epoch, steps - start)
        position = rng.integers(0, steps_per_epoch, draws)
        log_in = np.empty((draws, length))
        log_out = np.empty((draws, length))
        for t in range(length):
            x = rng.normal(0.0, noise_multiplier, draws) + shift * (position == t)
            log_in[:, t] = _log_terms(x, shift_in, noise_multiplier)
            log_out[:, t] = _log_terms(x, shift_out, noise_multiplier)
        total += epoch_log_ratio(log_in, log_out, steps_per_epoch)
    return total


class ShuffledGradientCanaries:
    """Dirac gradient canaries (one coordinate each, norm C) placed in shuffled batches."""

    kind = "gradient"

    def __init__(self, coordinates: np.ndarray, shapes: list[tuple[int, ...]],
                 included: np.ndarray, steps_per_epoch: int, noise_multiplier: float,
                 clip_norm: float, expected_batch_size: float, adjacency: str,
                 crafted_others: bool = False):
        if adjacency not in OUT_VALUE:
            raise DpcalcError(f"shuffled audits need --adjacency zero-out or replace-one; "
                              f"got {adjacency}")
        self.coordinates = np.asarray(coordinates, dtype=np.int64)
        self.included = np.asarray(included, dtype=bool)
        if crafted_others and self.coordinates.shape[0] != 1:
            raise DpcalcError("crafted records (−C on the canary's coordinate) need one canary")
        offsets = np.concatenate([[0], np.cumsum([int(np.prod(s)) for s in shapes])])
        if self.coordinates.size and (self.coordinates.max() >= offsets[-1]
                                      or np.unique(self.coordinates).size != self.coordinates.size):
            raise DpcalcError("gradient canaries need distinct coordinates inside the model")
        self._array_of = np.searchsorted(offsets, self.coordinates, side="right") - 1
        self._index_in = self.coordinates - offsets[self._array_of]
        self.placed_records = int(self.coordinates.shape[0])
        self.steps_per_epoch = int(steps_per_epoch)
        self.noise_multiplier = noise_multiplier
        self.clip_norm = clip_norm
        self.expected_batch_size = expected_batch_size
        self.out_value = OUT_VALUE[adjacency]
        self.crafted_others = crafted_others
        self.shifts = shuffle_shifts(adjacency, crafted_others)
        self.scores = np.zeros(self.placed_records)
        self.steps = 0
        self._here = np.zeros(0, dtype=np.int64)
        self._batch_size = 0
        self._log_in: list[np.ndarray] = []
        self._log_out: list[np.ndarray] = []

    def place(self, indices: np.ndarray, batch_size: int) -> None:
        """The canaries in this step's batch and the batch's number of records (public)."""
        self._here, self._batch_size = np.asarray(indices, dtype=np.int64), batch_size

    def _flat(self, arrays: Params) -> list[np.ndarray]:
        return [array.reshape(-1) for array in arrays]

    def add_sampled(self, model: SoftmaxModel, params: Params, clipped_sum: Params) -> Params:
        if self.crafted_others:  # ordinary records ARE −C·e_j (module doc): their sum only
            summed = [np.zeros_like(array) for array in clipped_sum]
            ordinary = self._batch_size - self._here.shape[0]
            summed[self._array_of[0]].reshape(-1)[self._index_in[0]] -= self.clip_norm * ordinary
        elif self._here.shape[0] == 0:
            return clipped_sum
        else:
            summed = [array.copy() for array in clipped_sum]
        flat = self._flat(summed)
        for canary in self._here:
            value = 1.0 if self.included[canary] else self.out_value
            flat[self._array_of[canary]][self._index_in[canary]] += value * self.clip_norm
        return tuple(summed)

    def observe(self, noisy_average: Params) -> None:
        flat = self._flat(noisy_average)
        readings = np.array([flat[a][i] for a, i in zip(self._array_of, self._index_in)])
        readings = readings * self.expected_batch_size / self.clip_norm
        if self.crafted_others:
            readings = readings + self._batch_size
        self.steps += 1
        self._log_in.append(_log_terms(readings, self.shifts[0], self.noise_multiplier))
        self._log_out.append(_log_terms(readings, self.shifts[1], self.noise_multiplier))
        if len(self._log_in) == self.steps_per_epoch:
            self._flush()

    def _flush(self) -> None:
        if self._log_in:
            self.scores += epoch_log_ratio(np.stack(self._log_in, axis=-1),
                                           np.stack(self._log_out, axis=-1), self.steps_per_epoch)
        self._log_in, self._log_out = [], []

    def final_scores(self, model: SoftmaxModel, params: Params) -> np.ndarray:
        self._flush()
        return self.scores.copy()
