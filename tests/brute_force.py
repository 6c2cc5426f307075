"""A brute-force adversary for tiny DP-SGD runs: every batch enumerated, 1-D gradients.

One step releases Σ_{i in batch} g_i + N(0, σ²). For two neighbouring datasets the output of
one step is a finite Gaussian mixture (one component per batch, weighted by its probability
under the sampler), and T non-adaptive steps are its T-fold product. The hockey-stick
divergence of the products is bounded from BELOW, rigorously, by cutting the real line into
intervals: the per-step pair of interval masses (exact, from the normal CDF) is a
post-processing of the per-step pair, so its T-fold product has a smaller divergence, and
that divergence is computed exactly from the discrete privacy loss distribution. A certified
upper bound that falls below this value is wrong.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.signal import fftconvolve
from scipy.special import ndtr


def batches_poisson(size: int, rate: float):
    """(indices, probability) of every Poisson batch of a dataset of ``size`` records."""
    for mask in itertools.product((0, 1), repeat=size):
        count = sum(mask)
        yield [i for i, bit in enumerate(mask) if bit], rate**count * (1 - rate) ** (size - count)


def batches_fixed(size: int, batch: int):
    """(indices, probability) of every B-subset, uniformly (sampling without replacement)."""
    subsets = list(itertools.combinations(range(size), batch))
    for subset in subsets:
        yield list(subset), 1.0 / len(subsets)


def batches_truncated(size: int, rate: float, cap: int):
    """Truncated Poisson: a Poisson batch, and when it holds more than ``cap`` records each
    ``cap``-subset of it with equal probability."""
    for indices, probability in batches_poisson(size, rate):
        if len(indices) <= cap:
            yield indices, probability
            continue
        subsets = list(itertools.combinations(indices, cap))
        for subset in subsets:
            yield list(subset), probability / len(subsets)


def step_mixture(gradients, sampling: str, rate: float | None = None,
                 batch: int | None = None, cap: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(means, weights) of one step's output mixture, equal means merged."""
    size = len(gradients)
    if sampling == "truncated-poisson":
        draws = batches_truncated(size, rate, cap)
    else:
        draws = batches_poisson(size, rate) if sampling == "poisson" else batches_fixed(size, batch)
    merged: dict[float, float] = {}
    for indices, probability in draws:
        mean = round(float(sum(gradients[i] for i in indices)), 12)
        merged[mean] = merged.get(mean, 0.0) + probability
    means = np.array(sorted(merged))
    return means, np.array([merged[m] for m in means])


def interval_masses(means, weights, sigma: float, edges: np.ndarray) -> np.ndarray:
    """Exact mass of each interval (−∞, e_0], (e_0, e_1], …, (e_last, ∞) of the mixture.

    Each component's mass is a difference of its SMALLER tail (upper tail above its mean,
    lower tail below), so far-tail cells keep their relative accuracy instead of
    cancelling to 0 (a zero Q-mass would give a spurious infinite loss)."""
    z = (edges[None, :] - means[:, None]) / sigma
    low = np.concatenate([np.full((z.shape[0], 1), -np.inf), z], axis=1)
    high = np.concatenate([z, np.full((z.shape[0], 1), np.inf)], axis=1)
    masses = np.where(low >= 0, ndtr(-low) - ndtr(-high), ndtr(high) - ndtr(low))
    return np.sum(weights[:, None] * np.maximum(masses, 0.0), axis=0)


def hockey_stick_lower(p_mix, q_mix, sigma: float, steps: int, epsilons,
                       cells: int = 1500) -> np.ndarray:
    """A rigorous lower bound on H_{e^ε}(P^T ‖ Q^T) for each ε (module doc)."""
    means = np.concatenate([p_mix[0], q_mix[0]])
    edges = np.linspace(means.min() - 9 * sigma, means.max() + 9 * sigma, cells)
    p = interval_masses(*p_mix, sigma, edges)
    q = interval_masses(*q_mix, sigma, edges)
    keep = p > 0
    with np.errstate(divide="ignore"):
        losses = np.where(q[keep] > 0, np.log(p[keep]) - np.log(np.maximum(q[keep], 1e-320)), np.inf)
    masses = p[keep]
    # T-fold composition of the discrete loss distribution on a loss lattice, each loss
    # rounded DOWN to the lattice: lower losses only lower E_P[(1 − e^{ε−L})₊], so the result
    # stays a lower bound. The convolution's float error is allowed for at the end.
    infinite = float(masses[np.isinf(losses)].sum())
    finite = np.isfinite(losses)
    lattice = 2e-4
    first = math.floor(losses[finite].min() / lattice - 1e-6)
    # (a hair below each loss: float error in the masses must not round a loss up)
    index = np.floor(losses[finite] / lattice - 1e-6).astype(np.int64) - first
    histogram = np.bincount(index, weights=masses[finite])
    composed = np.array([1.0])
    for _ in range(steps):
        composed = np.maximum(fftconvolve(composed, histogram), 0.0)
    values = (steps * first + np.arange(composed.size)) * lattice
    infinity_mass = 1.0 - (1.0 - infinite) ** steps
    allowance = 1e-13 * composed.size
    out = []
    for epsilon in np.atleast_1d(epsilons):
        above = values > epsilon
        gain = np.sum(composed[above] * -np.expm1(epsilon - values[above]))
        out.append(max(0.0, infinity_mass + float(gain) - allowance))
    return np.array(out)


def neighbour_mixtures(gradients, extra, sampling: str, adjacency: str, rate=None, batch=None,
                       cap=None):
    """The (P, Q) step mixtures of every neighbouring instance of a dataset ``gradients``.

    add-remove: D ∪ {extra} vs D, and D vs D \\ {last record} (both orders);
    replace-one: D with its last record replaced by ``extra`` (both orders);
    zero-out: D with its last record replaced by a null record, gradient 0 (both orders)."""
    pairs = []
    if adjacency == "add-remove":
        larger = step_mixture(list(gradients) + [extra], sampling, rate, batch, cap)
        base = step_mixture(list(gradients), sampling, rate, batch, cap)
        smaller = step_mixture(list(gradients[:-1]), sampling, rate, batch, cap)
        pairs += [(larger, base), (base, larger), (base, smaller), (smaller, base)]
    else:
        replaced = list(gradients[:-1]) + [0.0 if adjacency == "zero-out" else extra]
        first = step_mixture(list(gradients), sampling, rate, batch, cap)
        second = step_mixture(replaced, sampling, rate, batch, cap)
        pairs += [(first, second), (second, first)]
    return pairs


def group_mixtures(gradients, extras, sampling: str, rate=None, batch=None):
    """add-remove with k = len(extras) records: D ∪ extras vs D (both orders), and D vs D
    without its last k records (both orders)."""
    k = len(extras)
    larger = step_mixture(list(gradients) + list(extras), sampling, rate, batch)
    base = step_mixture(list(gradients), sampling, rate, batch)
    smaller = step_mixture(list(gradients[:-k]), sampling, rate, batch)
    return [(larger, base), (base, larger), (base, smaller), (smaller, base)]


def displacement_gradients(size: int) -> tuple[list[float], float]:
    """The displacement example: every record at −1, the differing one at +1."""
    gradients = [-1.0] * size
    gradients[-1] = 1.0  # the record that D \\ {last} removes
    return gradients, 1.0


__all__ = ["displacement_gradients", "group_mixtures", "hockey_stick_lower", "neighbour_mixtures",
           "step_mixture", "math"]


# --- epoch samplers: one epoch is a b-dimensional Gaussian mixture -----------------------
def epoch_mixture(gradients, sampling: str, batch: int, steps: int):
    """(means b-vectors, weights) of one epoch's release under ``sampling``:
    ``shuffle`` — a uniform permutation cut into consecutive batches of ``batch``
    (⌈n/B⌉ of them, the last possibly smaller); ``balls-in-bins`` — each record in one of
    ``steps`` steps, uniformly and independently. Equal mean vectors are merged."""
    size = len(gradients)
    merged: dict[tuple, float] = {}
    if sampling == "balls-in-bins":
        draws = itertools.product(range(steps), repeat=size)
        total = steps**size
    else:
        draws = (tuple(position // batch for position in np.argsort(order))
                 for order in itertools.permutations(range(size)))
        total = math.factorial(size)
    for slots in draws:
        sums = [0.0] * steps
        for record, slot in enumerate(slots):
            sums[slot] += gradients[record]
        key = tuple(round(value, 12) for value in sums)
        merged[key] = merged.get(key, 0.0) + 1.0 / total
    keys = sorted(merged)
    return np.array(keys), np.array([merged[key] for key in keys])


def cell_masses(mixture, sigma: float, edges: np.ndarray) -> np.ndarray:
    """Exact masses of the product cells of ``edges`` (per axis, with the two unbounded end
    intervals) under a mixture of N(mean, σ²I): each component factorises over axes."""
    means, weights = mixture
    total = 0.0
    for mean, weight in zip(means, weights):
        cell = np.array([1.0])
        for coordinate in mean:
            cell = np.multiply.outer(cell, interval_masses(np.array([coordinate]), np.array([1.0]),
                                                           sigma, edges))
        total = total + weight * cell
    return np.ravel(total)


def discrete_hockey_stick_lower(p: np.ndarray, q: np.ndarray, steps: int, epsilons) -> np.ndarray:
    """A rigorous lower bound on H_{e^ε}(P^T ‖ Q^T) for a finite pair of cell masses (the
    lattice composition of hockey_stick_lower)."""
    keep = p > 0
    with np.errstate(divide="ignore"):
        losses = np.where(q[keep] > 0, np.log(p[keep]) - np.log(np.maximum(q[keep], 1e-320)), np.inf)
    masses = p[keep]
    infinite = float(masses[np.isinf(losses)].sum())
    finite = np.isfinite(losses)
    lattice = 2e-4
    first = math.floor(losses[finite].min() / lattice - 1e-6)
    index = np.floor(losses[finite] / lattice - 1e-6).astype(np.int64) - first
    histogram = np.bincount(index, weights=masses[finite])
    composed = np.array([1.0])
    for _ in range(steps):
        composed = np.maximum(fftconvolve(composed, histogram), 0.0)
    values = (steps * first + np.arange(composed.size)) * lattice
    infinity_mass = 1.0 - (1.0 - infinite) ** steps
    allowance = 1e-13 * composed.size
    out = []
    for epsilon in np.atleast_1d(epsilons):
        above = values > epsilon
        gain = np.sum(composed[above] * -np.expm1(epsilon - values[above]))
        out.append(max(0.0, infinity_mass + float(gain) - allowance))
    return np.array(out)


def epoch_hockey_stick_lower(p_mix, q_mix, sigma: float, epochs: int, epsilons,
                             cells_per_axis: int = 120) -> np.ndarray:
    """Rigorous lower bound on the divergence of ``epochs`` independent epochs (cells of a
    product grid: a post-processing of each epoch)."""
    means = np.concatenate([p_mix[0].ravel(), q_mix[0].ravel()])
    edges = np.linspace(means.min() - 7 * sigma, means.max() + 7 * sigma, cells_per_axis)
    p = cell_masses(p_mix, sigma, edges)
    q = cell_masses(q_mix, sigma, edges)
    return discrete_hockey_stick_lower(p, q, epochs, epsilons)


# --- order samplers over several epochs: every order enumerated, the whole run's release ----
def uniform_orders(size: int):
    """(order, probability) of every permutation of ``size`` records, uniformly."""
    orders = list(itertools.permutations(range(size)))
    return [(order, 1.0 / len(orders)) for order in orders]


def buffered_shuffle_orders(size: int, buffer: int):
    """(order, probability) of tf.data's ``shuffle(buffer)``: the buffer holds the next
    ``buffer`` records of the input; each output is a uniform pick from the buffer, whose
    place the next input record takes. Not a uniform permutation when buffer < size."""
    laws: dict[tuple, float] = {}

    def walk(out, pool, next_input, probability):
        if not pool:
            laws[tuple(out)] = laws.get(tuple(out), 0.0) + probability
            return
        for picked in list(pool):
            rest = [record for record in pool if record != picked]
            if next_input < size:
                rest.append(next_input)
            walk(out + [picked], rest, next_input + 1 if next_input < size else next_input,
                 probability / len(pool))

    start = min(buffer, size)
    walk([], list(range(start)), start, 1.0)
    return sorted(laws.items())


def independent_epochs(law, epochs: int):
    """(orders of every epoch, probability): each epoch drawn afresh from ``law``."""
    for combination in itertools.product(law, repeat=epochs):
        yield tuple(order for order, _ in combination), math.prod(p for _, p in combination)


def batch_sizes(size: int, batch: int) -> list[int]:
    """Consecutive batches of ``batch`` cut from an order of ``size`` (the last partial)."""
    return [min(batch, size - start) for start in range(0, size, batch)]


def run_release(gradients, run_law, batch: int, steps: int, drop_last: bool = False):
    """(mean vectors in R^steps, weights) of the run's release: step t is batch t mod b of
    epoch t // b's order, its sum Σ gradients (the noise is N(0, σ²) per step, apart);
    drop_last: only the ⌊N/B⌋ full batches of each order."""
    size = len(gradients)
    per_epoch = size // batch if drop_last else len(batch_sizes(size, batch))
    merged: dict[tuple, float] = {}
    for orders, probability in run_law:
        sums = []
        for step in range(steps):
            order = orders[step // per_epoch]
            start = (step % per_epoch) * batch
            sums.append(round(float(sum(gradients[i] for i in order[start:start + batch])), 12))
        merged[tuple(sums)] = merged.get(tuple(sums), 0.0) + probability
    keys = sorted(merged)
    return np.array(keys), np.array([merged[key] for key in keys])


def release_delta_lower(p_mix, q_mix, sigma: float, epsilons, cells_per_axis: int) -> np.ndarray:
    """A rigorous lower bound on H_{e^ε}(P‖Q) of two whole-run releases: the exact masses of
    the cells of a product grid (a post-processing), their divergence exactly."""
    means = np.concatenate([p_mix[0].ravel(), q_mix[0].ravel()])
    edges = np.linspace(means.min() - 7 * sigma, means.max() + 7 * sigma, cells_per_axis)
    return discrete_hockey_stick_lower(cell_masses(p_mix, sigma, edges),
                                       cell_masses(q_mix, sigma, edges), 1, epsilons)


def max_statistic_delta_lower(p_mix, q_mix, sigma: float, size: int, batch: int, epsilons,
                              cells: int = 600, drop_last: bool = False) -> np.ndarray:
    """A rigorous lower bound on H_{e^ε}(P‖Q) from each epoch's largest output, every step
    recentred by its batch size (a post-processing of the release, for the instance with
    every other record at −1): the joint law of the epochs' maxima enumerated over the
    orders, its cells' masses exact from the normal CDF."""
    sizes = batch_sizes(size, batch)[:size // batch if drop_last else None]
    per_epoch = len(sizes)

    def masses(mixture, edges):
        means, weights = mixture
        steps = means.shape[1]
        total = 0.0
        for mean, weight in zip(means, weights):
            joint = np.array([1.0])
            for start in range(0, steps, per_epoch):
                shifted = [mean[t] + sizes[t % per_epoch] for t in range(start, min(start + per_epoch, steps))]
                log_cdf = sum(np.log(np.maximum(ndtr((edges - m) / sigma), 1e-300)) for m in shifted)
                cdf = np.concatenate([[0.0], np.exp(log_cdf), [1.0]])
                joint = np.multiply.outer(joint, np.maximum(np.diff(cdf), 0.0))
            total = total + weight * joint
        return np.ravel(total)

    edges = np.linspace(-1.0 - 7 * sigma, 3.0 + (7 + math.sqrt(2 * math.log(per_epoch + 1))) * sigma,
                        cells)
    return discrete_hockey_stick_lower(masses(p_mix, edges), masses(q_mix, edges), 1, epsilons)
