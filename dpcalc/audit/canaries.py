"""Audit canaries that ride along a DP-SGD run (dpcalc.dpsgd.train.CanaryHook) and their scores.

Every canary is a record of its own: at each step it joins the batch with the run's sampling
rate q (Poisson), independently of the training examples, so the accountant's (q, σ, T) covers
it exactly as it covers any training example. A canary that is "out" never joins.

- gradient canaries on a coordinate of their own (white-box, the strongest the threat model
  allows: Nasr, Song, Thakurta, Papernot, Carlini 2021, "Adversary instantiation"; the "Dirac
  canary" of Nasr et al. 2023, "Tight auditing of differentially private machine learning"):
  canary i's per-example gradient is C·e_j, norm exactly C, so clipping leaves it unchanged.
  The auditor sees every released noisy average g̃_t and reads x_t = B·g̃_t[j]/C ~ N(b_t, σ²),
  b_t = 1 when the canary was sampled. The score is the log-likelihood ratio of the
  Poisson-subsampled Gaussian pair, Σ_t log((1 − q) + q·exp((2x_t − 1)/(2σ²))): the
  Neyman–Pearson test of "in" against "out" (Mironov, Talwar, Zhang 2019, the pair
  (1 − q)N(0, σ²) + qN(1, σ²) vs N(0, σ²)). GradientCanaries write on coordinates of the model
  the caller picks (the Monte Carlo audit: the weight of an all-zero feature column);
  the one-run audit's canaries live on extra input columns (dpcalc.audit.dirac).
- input canaries (black-box, last model only): a training example's features with a wrong label
  (a mislabelled example, as in the black-box audits of Steinke et al. 2023). Its gradient is the
  model's own, clipped to C; the score is −loss of the final model on it.
"""
from __future__ import annotations

import numpy as np

from dpcalc.dpsgd.data import Split
from dpcalc.dpsgd.models import Params, SoftmaxModel
from dpcalc.errors import DpcalcError

CANARY_KINDS = ("gradient", "input")


def subsampled_gaussian_log_ratio(observations: np.ndarray, sampling_rate: float,
                                  noise_multiplier: float) -> np.ndarray:
    """log((1 − q) + q·exp((2x − 1)/(2σ²))) elementwise: the log density ratio of
    (1 − q)N(0, σ²) + qN(1, σ²) to N(0, σ²) at x, computed without overflow."""
    exponent = (2.0 * observations - 1.0) / (2.0 * noise_multiplier ** 2)
    if sampling_rate >= 1.0:
        return exponent
    return np.logaddexp(np.log1p(-sampling_rate), np.log(sampling_rate) + exponent)


class GradientCanaries:
    """Dirac gradient canaries on distinct parameter coordinates (flat indices into the
    concatenated parameters, in the model's order)."""

    kind = "gradient"

    def __init__(self, coordinates: np.ndarray, shapes: list[tuple[int, ...]],
                 included: np.ndarray, sampling_rate: float, noise_multiplier: float,
                 clip_norm: float, expected_batch_size: float, rng: np.random.Generator):
        self.coordinates = np.asarray(coordinates, dtype=np.int64)
        self.included = np.asarray(included, dtype=bool)
        sizes = [int(np.prod(shape)) for shape in shapes]
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        if self.coordinates.size and (self.coordinates.max() >= offsets[-1]
                                      or np.unique(self.coordinates).size != self.coordinates.size):
            raise DpcalcError("gradient canaries need distinct coordinates inside the model")
        self._array_of = np.searchsorted(offsets, self.coordinates, side="right") - 1
        self._index_in = self.coordinates - offsets[self._array_of]
        self.sampling_rate = sampling_rate
        self.noise_multiplier = noise_multiplier
        self.clip_norm = clip_norm
        self.expected_batch_size = expected_batch_size
        self._rng = rng
        self.scores = np.zeros(self.coordinates.shape[0])
        self.steps = 0

    def add_sampled(self, model: SoftmaxModel, params: Params, clipped_sum: Params) -> Params:
        sampled = self.included & (self._rng.random(self.included.shape[0]) < self.sampling_rate)
        if not sampled.any():
            return clipped_sum
        summed = [array.copy() for array in clipped_sum]
        for array_index in np.unique(self._array_of[sampled]):
            chosen = sampled & (self._array_of == array_index)
            summed[array_index].reshape(-1)[self._index_in[chosen]] += self.clip_norm
        return tuple(summed)

    def observe(self, noisy_average: Params) -> None:
        readings = np.empty(self.coordinates.shape[0])
        for array_index in np.unique(self._array_of):
            chosen = self._array_of == array_index
            readings[chosen] = noisy_average[array_index].reshape(-1)[self._index_in[chosen]]
        observations = readings * self.expected_batch_size / self.clip_norm
        self.steps += 1
        self.scores += subsampled_gaussian_log_ratio(observations, self.sampling_rate,
                                                     self.noise_multiplier)

    def final_scores(self, model: SoftmaxModel, params: Params) -> np.ndarray:
        return self.scores.copy()


class InputCanaries:
    """Mislabelled examples, sampled at rate q like training examples; scored by −loss of the
    final model."""

    kind = "input"

    def __init__(self, features: np.ndarray, labels: np.ndarray, included: np.ndarray,
                 sampling_rate: float, clip_norm: float, rng: np.random.Generator):
        self.features = np.asarray(features, dtype=float)
        self.labels = np.asarray(labels, dtype=np.int64)
        self.included = np.asarray(included, dtype=bool)
        self.sampling_rate = sampling_rate
        self.clip_norm = clip_norm
        self._rng = rng

    def add_sampled(self, model: SoftmaxModel, params: Params, clipped_sum: Params) -> Params:
        sampled = self.included & (self._rng.random(self.included.shape[0]) < self.sampling_rate)
        if not sampled.any():
            return clipped_sum
        extra, _ = model.clipped_gradient_sum(params, self.features[sampled],
                                              self.labels[sampled], self.clip_norm)
        return tuple(total + more for total, more in zip(clipped_sum, extra))

    def observe(self, noisy_average: Params) -> None:
        pass

    def final_scores(self, model: SoftmaxModel, params: Params) -> np.ndarray:
        return -model.per_example_loss(params, self.features, self.labels)


def mislabelled_examples(train: Split, count: int,
                         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``count`` training feature vectors (distinct rows while there are enough), each with a
    label drawn uniformly from the other classes."""
    rows = rng.choice(train.n_samples, size=count, replace=count > train.n_samples)
    shift = rng.integers(1, train.n_classes, size=count)
    return train.features[rows].copy(), (train.labels[rows] + shift) % train.n_classes


def parameter_shapes(n_features: int, n_classes: int, hidden_units: int) -> list[tuple[int, ...]]:
    """Shapes of the parameters dpcalc.dpsgd.models.build_model creates, in order."""
    if hidden_units == 0:
        return [(n_features, n_classes), (n_classes,)]
    return [(n_features, hidden_units), (hidden_units,), (hidden_units, n_classes), (n_classes,)]
