"""Amplification by Poisson subsampling; Binomial and hypergeometric group weights.

Oracles: exact rational arithmetic (fractions + math.comb), mpmath, scipy.stats
(in the tests only).
"""
from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from dpcalc.models.subsampling import amplify_poisson, hypergeometric_weights, poisson_weights
from dpcalc.errors import DpcalcError


def exact_hypergeometric(k: int, batch_size: int, dataset_size: int) -> list[float]:
    """C(k, j) C(N − k, B − j) / C(N, B) in exact rationals (math.comb is 0 off the support)."""
    total = math.comb(dataset_size, batch_size)
    return [
        float(Fraction(math.comb(k, j) * math.comb(dataset_size - k, batch_size - j), total)) if j <= batch_size else 0.0
        for j in range(k + 1)
    ]


# --------------------------------------------------------------- amplify_poisson
@pytest.mark.parametrize("epsilon", [0.0, 1e-6, 0.3, 1.0, 5.0, 50.0])
def test_amplify_with_q_one_is_the_identity(epsilon):
    assert amplify_poisson(epsilon, 1e-5, 1.0) == pytest.approx((epsilon, 1e-5), rel=1e-15, abs=0.0)


@pytest.mark.parametrize("q", [1e-6, 1e-3, 0.01, 0.5, 0.999])
@pytest.mark.parametrize("epsilon", [1e-9, 1e-4, 0.5, 1.0, 1.5, 10.0, 200.0, 1000.0])
def test_amplify_matches_high_precision(q, epsilon):
    # Balle, Barthe, Gaboardi 2018 Thm 8: ε' = ln(1 + q(e^ε − 1)), δ' = qδ
    with mpmath.workdps(60):
        expected = float(mpmath.log(1 + mpmath.mpf(q) * mpmath.expm1(mpmath.mpf(epsilon))))
    amplified_epsilon, amplified_delta = amplify_poisson(epsilon, 3e-6, q)
    assert amplified_epsilon == pytest.approx(expected, rel=1e-13)
    assert amplified_delta == pytest.approx(q * 3e-6, rel=1e-15)
    assert amplified_epsilon <= epsilon


@pytest.mark.parametrize("q", [1e-4, 0.01, 0.3])
def test_amplify_small_epsilon_limit_is_q_epsilon(q):
    for epsilon in (1e-6, 1e-9, 1e-12):
        amplified, _ = amplify_poisson(epsilon, 0.0, q)
        # ε' = qε + q(1 − q)ε²/2 + O(ε³)
        assert amplified / (q * epsilon) == pytest.approx(1.0, abs=epsilon)
        assert amplified >= q * epsilon * (1 - 1e-15)


def test_amplify_large_epsilon_does_not_overflow():
    amplified, _ = amplify_poisson(5000.0, 1e-5, 0.01)
    assert amplified == pytest.approx(5000.0 + math.log(0.01), rel=1e-15)
    assert amplify_poisson(math.inf, 1e-5, 0.5) == (math.inf, 5e-6)
    assert amplify_poisson(3.0, 1e-5, 0.0) == (0.0, 0.0)


def test_amplify_is_monotone_in_q():
    values = [amplify_poisson(2.0, 1e-6, q)[0] for q in np.linspace(0.0, 1.0, 101)]
    assert all(later > earlier for earlier, later in zip(values, values[1:]))


def test_amplify_rejects_bad_inputs():
    with pytest.raises(DpcalcError, match="--q"):
        amplify_poisson(1.0, 1e-5, 1.5)
    with pytest.raises(DpcalcError, match="--epsilon"):
        amplify_poisson(-1.0, 1e-5, 0.5)
    with pytest.raises(DpcalcError, match="--delta"):
        amplify_poisson(1.0, -1e-5, 0.5)


# --------------------------------------------------------------- poisson_weights
@pytest.mark.parametrize("k", [1, 2, 8, 50, 400])
@pytest.mark.parametrize("q", [1e-5, 256 / 60000, 0.1, 0.5, 0.97])
def test_poisson_weights_match_binomial(k, q):
    from scipy import stats

    weights = poisson_weights(k, q)
    expected = stats.binom.pmf(np.arange(k + 1), k, q)
    mask = expected > 1e-290
    np.testing.assert_allclose(weights[mask], expected[mask], rtol=1e-11)
    # ln C(k, j) reaches ~270 at k = 400, so log space costs ~1e-13 relative there.
    assert weights.sum() == pytest.approx(1.0, abs=1e-12)


def test_poisson_weights_edges():
    np.testing.assert_array_equal(poisson_weights(3, 1.0), [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(poisson_weights(3, 0.0), [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(poisson_weights(1, 0.25), [0.75, 0.25], rtol=1e-15)
    with pytest.raises(DpcalcError, match="--k"):
        poisson_weights(0, 0.5)


# -------------------------------------------------------- hypergeometric_weights
@pytest.mark.parametrize(
    "k, batch_size, dataset_size",
    [(1, 1, 1), (3, 2, 5), (5, 8, 10), (10, 10, 10), (4, 7, 7), (7, 3, 12), (6, 20, 50),
     (30, 400, 1000), (12, 990, 1000), (50, 1, 80)],
)
def test_hypergeometric_matches_exact_fractions(k, batch_size, dataset_size):
    weights = hypergeometric_weights(k, batch_size, dataset_size)
    expected = exact_hypergeometric(k, batch_size, dataset_size)
    assert len(weights) == k + 1
    for got, want in zip(weights, expected):
        if want == 0.0:
            assert got == 0.0  # exact support
        else:
            assert got == pytest.approx(want, rel=1e-12)
    assert weights.sum() == pytest.approx(1.0, abs=1e-13)


@pytest.mark.parametrize("k", range(1, 9))
def test_hypergeometric_matches_scipy_and_exact_for_mnist_sizes(k):
    from scipy import stats

    dataset_size, batch_size = 60_000, 256
    weights = hypergeometric_weights(k, batch_size, dataset_size)
    oracle = stats.hypergeom.pmf(np.arange(k + 1), dataset_size, k, batch_size)
    np.testing.assert_allclose(weights, oracle, rtol=1e-10)
    np.testing.assert_allclose(weights, exact_hypergeometric(k, batch_size, dataset_size), rtol=1e-12)


@pytest.mark.parametrize("k", [2, 4, 16])
def test_hypergeometric_is_accurate_for_a_billion_records(k):
    dataset_size, batch_size = 10**9, 4096
    weights = hypergeometric_weights(k, batch_size, dataset_size)
    expected = exact_hypergeometric(k, batch_size, dataset_size)
    np.testing.assert_allclose(weights, expected, rtol=1e-10)


def test_hypergeometric_single_record_is_the_batch_fraction():
    dataset_size, batch_size = 10**9, 256
    absent, present = hypergeometric_weights(1, batch_size, dataset_size)
    assert present == pytest.approx(batch_size / dataset_size, rel=1e-14)
    assert absent == pytest.approx(1.0 - batch_size / dataset_size, rel=1e-15)


def test_hypergeometric_validation_names_the_flags():
    with pytest.raises(DpcalcError, match="--k"):
        hypergeometric_weights(11, 5, 10)
    with pytest.raises(DpcalcError, match="--k"):
        hypergeometric_weights(0, 5, 10)
    with pytest.raises(DpcalcError, match="--batch-size"):
        hypergeometric_weights(2, 11, 10)
    with pytest.raises(DpcalcError, match="--batch-size"):
        hypergeometric_weights(2, 0, 10)
    with pytest.raises(DpcalcError, match="--dataset-size"):
        hypergeometric_weights(2, 5, 0)
    with pytest.raises(DpcalcError, match="--dataset-size"):
        hypergeometric_weights(2, 5, 10.5)
