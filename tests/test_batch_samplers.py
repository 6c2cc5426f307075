"""The library batch samplers draw the law of the model they name (dpcalc.pipelines.batch_samplers).

Every statistical test runs on a fixed seed at significance level ALPHA = 1e-3: a correct sampler
fails it for a fraction ALPHA of seeds. Each docstring names the alternative the test detects and
its power at that level (noncentral χ² or normal approximation; computed with scipy when the test
was written), and each test also runs the same statistic on a sampler that draws that alternative
(a deliberately wrong subclass) and checks it is rejected, so no test can pass for any sampler.
Oracles: the exact laws written out here (binomial, uniform subsets and permutations, the
truncation law enumerated on a tiny instance), not the samplers' code.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import binom, binomtest, chi2

from dpcalc.pipelines.batch_samplers import (BallsInBinsSampler, FixedSizeSampler, PoissonSampler,
                                          ShuffleSampler, TruncatedPoissonSampler)
from dpcalc.models.truncated import contained_rate

ALPHA = 1e-3


# ---------------------------------------------------------------- statistics
def chi_square_p(observed, probabilities) -> float:
    """Pearson's χ² goodness of fit; adjacent cells pooled left to right until each expects at
    least 5 (the rest of the tail joins the last cell). Observations outside the cells fail."""
    observed = np.asarray(observed, dtype=float)
    probabilities = np.asarray(probabilities, dtype=float)
    assert observed.shape == probabilities.shape, "an observation outside the model's support"
    total = observed.sum()
    pooled_observed, pooled_expected, run_o, run_e = [], [], 0.0, 0.0
    for count, p in zip(observed, probabilities):
        run_o, run_e = run_o + count, run_e + p * total
        if run_e >= 5:
            pooled_observed.append(run_o)
            pooled_expected.append(run_e)
            run_o = run_e = 0.0
    pooled_observed[-1] += run_o
    pooled_expected[-1] += run_e
    o, e = np.array(pooled_observed), np.array(pooled_expected)
    return float(chi2.sf(np.sum((o - e) ** 2 / e), len(o) - 1))


def size_law_p(batches, law) -> float:
    """χ² of the batch sizes against ``law`` (probabilities of sizes 0, 1, …)."""
    sizes = np.array([len(batch) for batch in batches])
    assert sizes.max() < len(law), "a batch larger than the model allows"
    return chi_square_p(np.bincount(sizes, minlength=len(law)), law)


def record_dispersion_p(batches, dataset_size: int, var_minus_cov: float) -> float:
    """Are all records included at the same rate? Counts c_i over T steps have, under an
    exchangeable law, Σ(c_i − c̄)² / (T·(Var − Cov)) ≈ χ²_{N−1}, with Var and Cov of one step's
    inclusion indicators (Cov: of two different records)."""
    counts = np.bincount(np.concatenate(batches), minlength=dataset_size)
    statistic = np.sum((counts - counts.mean()) ** 2) / (len(batches) * var_minus_cov)
    return float(chi2.sf(statistic, dataset_size - 1))


def cell_counts(keys, cells) -> np.ndarray:
    index = {cell: position for position, cell in enumerate(cells)}
    counts = np.zeros(len(cells))
    for key in keys:
        counts[index[key]] += 1
    return counts


def epochs_of(batches, per_epoch: int):
    return [batches[start:start + per_epoch] for start in range(0, len(batches), per_epoch)]


def repeat_rate_p(epochs, chance: float) -> float:
    """Two-sided binomial test: consecutive epochs (0, 1), (2, 3), … drawn identically, against
    ``chance`` (independent epochs)."""
    pairs = [(epochs[i], epochs[i + 1]) for i in range(0, len(epochs) - 1, 2)]
    same = sum(all(np.array_equal(a, b) for a, b in zip(x, y)) for x, y in pairs)
    return binomtest(same, len(pairs), chance).pvalue


# ---------------------------------------------------------------- Poisson
class _SkewedPoisson(PoissonSampler):
    """Alternative: even records at rate 0.9q, odd ones at 1.1q (the mean batch size is right)."""

    def _draw(self, rng):
        rates = np.where(np.arange(self.dataset_size) % 2, 1.1, 0.9) * self.sampling_rate
        return np.flatnonzero(rng.random(self.dataset_size) < rates)


def test_poisson_batch_sizes_are_binomial():
    """Sizes of T = 5000 batches (N = 200, q = 0.05) against Binomial(N, q), χ² (19 pooled
    cells), α = 1e-3. Detects a rate 5% off (q = 0.0525) with power > 0.999 (λ = 133); a rate
    10% off is drawn and rejected."""
    law = binom.pmf(np.arange(201), 200, 0.05)
    assert size_law_p(list(PoissonSampler(200, sampling_rate=0.05, steps=5000, seed=11)),
                      law) > ALPHA
    assert size_law_p(list(PoissonSampler(200, sampling_rate=0.055, steps=5000, seed=11)),
                      law) < ALPHA


def test_poisson_includes_every_record_at_rate_q():
    """Per-record inclusion counts over T = 5000 steps (N = 200, q = 0.05): dispersion χ²_{199}
    with Var − Cov = q(1 − q) (independent records), α = 1e-3. Detects half the records at
    q(1 ± 0.05) with power 0.987 (λ = 132); q(1 ± 0.1) is drawn and rejected."""
    sampler = PoissonSampler(200, sampling_rate=0.05, steps=5000, seed=12)
    assert record_dispersion_p(list(sampler), 200, 0.05 * 0.95) > ALPHA
    skewed = _SkewedPoisson(200, sampling_rate=0.05, steps=5000, seed=12)
    assert record_dispersion_p(list(skewed), 200, 0.05 * 0.95) < ALPHA


def test_poisson_yields_its_empty_batches():
    """N = 20, q = 0.05: P(empty) = 0.95²⁰ = 0.358. Of T = 3000 steps every one is yielded
    (len = 3000), and the number of empty ones passes a two-sided binomial test at α = 1e-3
    (sd 26 batches): detects a sampler that skips or redraws empty batches (none seen) with
    power 1."""
    batches = list(PoissonSampler(20, sampling_rate=0.05, steps=3000, seed=13))
    assert len(batches) == 3000
    empty = [batch for batch in batches if batch.size == 0]
    assert empty and all(batch.dtype == np.int64 for batch in empty)
    assert binomtest(len(empty), 3000, 0.95 ** 20).pvalue > ALPHA


# ---------------------------------------------------------------- fixed size
class _WeightedFixed(FixedSizeSampler):
    """Alternative: B records without replacement, record 0 drawn first twice as often."""

    def _draw(self, rng):
        weights = np.ones(self.dataset_size)
        weights[0] = 2.0
        return np.sort(rng.choice(self.dataset_size, size=self.batch_size, replace=False,
                                  p=weights / weights.sum()))


class _LowHalfFixed(FixedSizeSampler):
    """Alternative: records 0..N/2−1 drawn first 1.2 times as often as the rest."""

    def _draw(self, rng):
        weights = np.where(np.arange(self.dataset_size) < self.dataset_size // 2, 1.2, 1.0)
        return np.sort(rng.choice(self.dataset_size, size=self.batch_size, replace=False,
                                  p=weights / weights.sum()))


def test_fixed_batches_hold_b_distinct_records():
    for batch in FixedSizeSampler(200, batch_size=10, steps=500, seed=20):
        assert batch.shape == (10,) and np.unique(batch).size == 10
        assert 0 <= batch.min() and batch.max() < 200


def test_fixed_batch_is_a_uniform_subset():
    """N = 6, B = 2: each of T = 6000 batches against the uniform law on the 15 pairs, χ²_{14},
    α = 1e-3. Detects the 5 pairs holding record 0 at 1.3× the others' chance with power
    > 0.9999 (λ = 99); record 0 weighted 2× is drawn and rejected."""
    cells = list(itertools.combinations(range(6), 2))
    uniform = np.full(15, 1 / 15)

    def p_value(sampler):
        return chi_square_p(cell_counts((tuple(b) for b in sampler), cells), uniform)

    assert p_value(FixedSizeSampler(6, batch_size=2, steps=6000, seed=21)) > ALPHA
    assert p_value(_WeightedFixed(6, batch_size=2, steps=6000, seed=21)) < ALPHA


def test_fixed_steps_are_independent_not_a_shuffled_epoch():
    """N = 6, B = 2: steps (2k, 2k + 1) are disjoint with chance C(4,2)/C(6,2) = 0.4 when
    independent; a shuffled epoch (3 disjoint batches) makes it 0.8. Two-sided binomial test on
    3000 pairs, α = 1e-3: power 0.988 against 0.45, 1 against 0.8 (ShuffleSampler is drawn and
    rejected)."""
    def p_value(sampler):
        batches = list(sampler)
        disjoint = sum(np.intersect1d(batches[i], batches[i + 1]).size == 0
                       for i in range(0, len(batches), 2))
        return binomtest(disjoint, len(batches) // 2, 0.4).pvalue

    assert p_value(FixedSizeSampler(6, batch_size=2, steps=6000, seed=22)) > ALPHA
    assert p_value(ShuffleSampler(6, batch_size=2, steps=6000, seed=22)) < ALPHA


def test_fixed_includes_every_record_at_rate_b_over_n():
    """Per-record counts over T = 5000 steps (N = 200, B = 10, γ = B/N): dispersion χ²_{199}
    with Var − Cov = γ(1 − γ)·N/(N − 1) (sampling without replacement), α = 1e-3. Detects half
    the records at γ(1 ± 0.05) with power 0.986 (λ = 131); the low half weighted 1.2× is drawn
    and rejected."""
    variance = 0.05 * 0.95 * 200 / 199
    assert record_dispersion_p(list(FixedSizeSampler(200, batch_size=10, steps=5000, seed=23)),
                               200, variance) > ALPHA
    assert record_dispersion_p(list(_LowHalfFixed(200, batch_size=10, steps=5000, seed=23)),
                               200, variance) < ALPHA


# ---------------------------------------------------------------- truncated Poisson
class _LowestTruncated(TruncatedPoissonSampler):
    """Alternative: the M lowest-indexed drawn records kept (a cut that is not uniform)."""

    def _draw(self, rng):
        drawn = np.flatnonzero(rng.random(self.dataset_size) < self.sampling_rate)
        return drawn[:self.max_batch_size]


class _RedrawnTruncated(TruncatedPoissonSampler):
    """Alternative: Poisson batches redrawn until at most M (rejection, not a cut)."""

    def _draw(self, rng):
        while True:
            drawn = np.flatnonzero(rng.random(self.dataset_size) < self.sampling_rate)
            if drawn.size <= self.max_batch_size:
                return drawn


def _truncation_law(subset, n, q, cap) -> float:
    """P(the batch is exactly ``subset``) under truncated.py's model, written out: a set of
    fewer than M records is a Poisson draw of exactly it; a set S of M records is any drawn set
    D ⊇ S of k ≥ M records followed by the uniform M-subset S of D (chance 1/C(k, M))."""
    size = len(subset)
    if size < cap:
        return q ** size * (1 - q) ** (n - size)
    return sum(math.comb(n - cap, k - cap) * q ** k * (1 - q) ** (n - k) / math.comb(k, cap)
               for k in range(cap, n + 1))


def test_truncated_batch_law_is_the_models_exactly():
    """N = 4, q = 0.5, M = 2: each of T = 8000 batches against the law of every subset of at
    most M records (11 cells; _truncation_law), χ²_{10}, α = 1e-3. Power 1 against keeping
    the M lowest-indexed drawn records (λ = 1864) and against redrawing until ≤ M (λ = 751);
    both are drawn and rejected."""
    cells = [s for size in range(3) for s in itertools.combinations(range(4), size)]
    law = [_truncation_law(cell, 4, 0.5, 2) for cell in cells]
    assert sum(law) == pytest.approx(1.0, abs=1e-12)

    def p_value(sampler_class):
        sampler = sampler_class(4, sampling_rate=0.5, max_batch_size=2, steps=8000, seed=31)
        return chi_square_p(cell_counts((tuple(b) for b in sampler), cells), law)

    assert p_value(TruncatedPoissonSampler) > ALPHA
    assert p_value(_LowestTruncated) < ALPHA
    assert p_value(_RedrawnTruncated) < ALPHA


def _truncated_size_law(n, q, cap) -> np.ndarray:
    """Sizes min(K, M), K ~ Binomial(N, q)."""
    pmf = binom.pmf(np.arange(n + 1), n, q)
    return np.append(pmf[:cap], pmf[cap:].sum())


def test_truncated_sizes_and_rates_at_scale():
    """N = 200, q = 0.1, M = 22 (P(K ≥ M) = 0.35), T = 5000 steps, α = 1e-3 each:
    * sizes never exceed M, and follow min(Binomial(N, q), M) (χ², 14 pooled cells): power
      > 0.9999 against q 3% off (λ = 84); q 5% off is drawn and rejected;
    * every record is included at the same rate (dispersion χ²_{199}, Var − Cov from the size
      law: Var = q_in(1 − q_in), Cov = E[S(S − 1)]/(N(N − 1)) − q_in²): power 1 against keeping
      the M lowest-indexed drawn records (λ = 820), which is drawn and rejected;
    * q_in = E[min(K, M)]/N (symmetry) equals truncated.py's contained_rate, the rate its lower
      instance uses, to its 1e-9 rounding."""
    n, q, cap, steps = 200, 0.1, 22, 5000
    law = _truncated_size_law(n, q, cap)
    sizes = np.arange(cap + 1)
    rate = float(np.sum(law * sizes)) / n
    both = float(np.sum(law * sizes * (sizes - 1))) / (n * (n - 1))
    var_minus_cov = rate * (1 - rate) - (both - rate ** 2)
    batches = list(TruncatedPoissonSampler(n, sampling_rate=q, max_batch_size=cap, steps=steps,
                                           seed=32))
    assert max(len(batch) for batch in batches) == cap
    assert size_law_p(batches, law) > ALPHA
    assert record_dispersion_p(batches, n, var_minus_cov) > ALPHA
    off = list(TruncatedPoissonSampler(n, sampling_rate=0.105, max_batch_size=cap, steps=steps,
                                       seed=32))
    assert size_law_p(off, law) < ALPHA
    lowest = list(_LowestTruncated(n, sampling_rate=q, max_batch_size=cap, steps=steps, seed=32))
    assert record_dispersion_p(lowest, n, var_minus_cov) < ALPHA
    assert contained_rate(n, q, cap) == pytest.approx(rate, rel=2e-9)
    assert contained_rate(n, q, cap) <= rate


# ---------------------------------------------------------------- balls-in-bins
class _BiasedBins(BallsInBinsSampler):
    """Alternative: each record in the first step with chance 0.6 (of 2), independently."""

    def _epoch(self, rng):
        slots = (rng.random(self.dataset_size) >= 0.6).astype(int)
        return [np.flatnonzero(slots == step) for step in range(self.steps_per_epoch)]


class _AllocatedOnce(BallsInBinsSampler):
    """Alternative: one allocation for every epoch."""

    def _batches(self, rng):
        epoch = self._epoch(rng)
        for step in range(self.steps):
            yield epoch[step % self.steps_per_epoch]


def _allocations(batches, per_epoch: int, n: int) -> list[tuple[int, ...]]:
    """Each epoch's step of every record (each record exactly once per epoch, checked)."""
    found = []
    for epoch in epochs_of(batches, per_epoch):
        slot = np.full(n, -1)
        for step, batch in enumerate(epoch):
            assert np.all(slot[batch] == -1), "a record twice in one epoch"
            slot[batch] = step
        assert np.all(slot >= 0), "a record missing from an epoch"
        found.append(tuple(slot))
    return found


def test_balls_in_bins_places_each_record_once_per_epoch():
    """N = 1000, B = 64 ⇒ t = 16; 3.5 epochs = 56 steps: three whole epochs hold each record
    once, the last half-epoch's 8 batches hold distinct records (the rest of that epoch is
    never run)."""
    sampler = BallsInBinsSampler(1000, batch_size=64, epochs=3.5, seed=40)
    batches = list(sampler)
    assert sampler.steps_per_epoch == 16 and len(sampler) == len(batches) == 56
    _allocations(batches[:48], 16, 1000)
    last = np.concatenate(batches[48:])
    assert np.unique(last).size == last.size < 1000


def test_balls_in_bins_allocation_is_uniform_and_independent():
    """N = 3 records, t = 2 steps: the allocation (step of each record) of each of E = 4000
    epochs against the uniform law on the 2³ = 8 allocations (uniform steps, independent
    records), χ²_7, α = 1e-3. Power > 0.9999 against a step chance 0.55/0.45 (λ = 121);
    0.6/0.4 and a shuffle (ShuffleSampler, B = 2: always 2 and 1 records) are drawn and
    rejected."""
    cells = list(itertools.product(range(2), repeat=3))
    uniform = np.full(8, 1 / 8)

    def p_value(sampler):
        return chi_square_p(cell_counts(_allocations(list(sampler), 2, 3), cells), uniform)

    assert p_value(BallsInBinsSampler(3, steps_per_epoch=2, epochs=4000, seed=41)) > ALPHA
    assert p_value(_BiasedBins(3, steps_per_epoch=2, epochs=4000, seed=41)) < ALPHA
    assert p_value(ShuffleSampler(3, batch_size=2, epochs=4000, seed=41)) < ALPHA


def test_balls_in_bins_allocates_afresh_every_epoch():
    """Same setting: epochs (2k, 2k + 1) get the same allocation with chance 1/8 when
    independent. Two-sided binomial test on 2000 pairs, α = 1e-3: power 1 against 1/4; one
    allocation reused every epoch is drawn and rejected."""
    def p_value(sampler):
        return repeat_rate_p(epochs_of(list(sampler), 2), 1 / 8)

    assert p_value(BallsInBinsSampler(3, steps_per_epoch=2, epochs=4000, seed=42)) > ALPHA
    assert p_value(_AllocatedOnce(3, steps_per_epoch=2, epochs=4000, seed=42)) < ALPHA


def test_balls_in_bins_batch_sizes_are_binomial():
    """N = 500, B = 10 ⇒ t = 50: the batch at step e mod t of epoch e (independent across
    epochs), E = 2000 epochs, against Binomial(N, 1/t), χ² (pooled), α = 1e-3. Power 1 against
    t 10% off (Binomial(N, 1/45), λ = 267); shuffled batches (all of size 10) are drawn and
    rejected."""
    law = binom.pmf(np.arange(501), 500, 1 / 50)

    def p_value(sampler):
        picked = [epoch[e % 50] for e, epoch in enumerate(epochs_of(list(sampler), 50))]
        return size_law_p(picked, law)

    assert p_value(BallsInBinsSampler(500, batch_size=10, epochs=2000, seed=43)) > ALPHA
    assert p_value(ShuffleSampler(500, batch_size=10, epochs=2000, seed=43)) < ALPHA


# ---------------------------------------------------------------- shuffle
class _NaiveShuffle(ShuffleSampler):
    """Alternative: the naive swap shuffle (swap position i with any j): for 3 records the 6
    orders have chances 4, 5, 5, 5, 4, 4 out of 27 — not uniform."""

    def _epoch(self, rng):
        order = np.arange(self.dataset_size)
        for i in range(self.dataset_size):
            j = rng.integers(0, self.dataset_size)
            order[i], order[j] = order[j], order[i]
        return [order[start:start + self.batch_size]
                for start in range(0, self.dataset_size, self.batch_size)]


class _ShuffledOnce(ShuffleSampler):
    """Alternative: one permutation for every epoch (shuffle-once)."""

    def _batches(self, rng):
        epoch = self._epoch(rng)
        for step in range(self.steps):
            yield epoch[step % self.steps_per_epoch]


def test_shuffle_epochs_use_every_record_once_in_ceil_n_over_b_batches():
    """N = 1000, B = 64: 16 batches per epoch (15 of 64, the last of 40), each record once;
    drop_last: 15 full batches, the 40 left-over records differ between epochs."""
    sampler = ShuffleSampler(1000, batch_size=64, epochs=2.5, seed=50)
    batches = list(sampler)
    assert sampler.steps_per_epoch == 16 and len(sampler) == len(batches) == 40
    for epoch in epochs_of(batches[:32], 16):
        assert [len(b) for b in epoch] == [64] * 15 + [40]
        assert np.array_equal(np.sort(np.concatenate(epoch)), np.arange(1000))
    assert [len(b) for b in batches[32:]] == [64] * 8
    dropping = ShuffleSampler(1000, batch_size=64, epochs=2, drop_last=True, seed=50)
    epochs = epochs_of(list(dropping), 15)
    assert len(dropping) == 30 and all(len(b) == 64 for e in epochs for b in e)
    left_out = [np.setdiff1d(np.arange(1000), np.concatenate(e)) for e in epochs]
    assert all(np.unique(np.concatenate(e)).size == 960 for e in epochs)
    assert not np.array_equal(*left_out)


def test_shuffle_order_is_a_uniform_permutation():
    """N = 3, B = 1: each of E = 6000 epochs' order against the uniform law on the 6
    permutations, χ²_5, α = 1e-3. Power > 0.99999 against the naive swap shuffle (λ = 74),
    which is drawn and rejected."""
    cells = list(itertools.permutations(range(3)))
    uniform = np.full(6, 1 / 6)

    def p_value(sampler):
        orders = (tuple(np.concatenate(e)) for e in epochs_of(list(sampler), 3))
        return chi_square_p(cell_counts(orders, cells), uniform)

    assert p_value(ShuffleSampler(3, batch_size=1, epochs=6000, seed=51)) > ALPHA
    assert p_value(_NaiveShuffle(3, batch_size=1, epochs=6000, seed=51)) < ALPHA


def test_shuffle_is_fresh_every_epoch():
    """Same setting: epochs (2k, 2k + 1) in the same order with chance 1/6 when independent.
    Two-sided binomial test on 3000 pairs, α = 1e-3: power 1 against 1/3; one permutation
    for every epoch (shuffle-once) is drawn and rejected."""
    def p_value(sampler):
        return repeat_rate_p(epochs_of(list(sampler), 3), 1 / 6)

    assert p_value(ShuffleSampler(3, batch_size=1, epochs=6000, seed=52)) > ALPHA
    assert p_value(_ShuffledOnce(3, batch_size=1, epochs=6000, seed=52)) < ALPHA
