"""Regressions for defects found in review; each test fails on the code before its fix."""
from __future__ import annotations

import pytest

from dpcalc.models.gaussian import gdp_delta
from dpcalc.models.gaussian_sigma import analytic_gaussian_sigma
from dpcalc.errors import DpcalcError
from tests.conftest import run_dpcalc

mpmath = pytest.importorskip("mpmath")


def _exact_gdp_delta(epsilon: float, mu: float) -> float:
    with mpmath.workdps(80):
        eps, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
        return float(mpmath.ncdf(-eps / m + m / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / m - m / 2))


@pytest.mark.parametrize("mu", [1e-16, 1e-12, 1e-9, 1e-6, 1e-4, 9e-4])
@pytest.mark.parametrize("ratio", [0.3, 1.0, 3.0, 10.0])
def test_gdp_delta_accurate_for_tiny_mu(mu, ratio):
    """erfcx(u) − erfcx(u + μ/√2) used to cancel: δ came out 0 below μ ≈ 1e-15."""
    exact = _exact_gdp_delta(ratio * mu, mu)
    assert gdp_delta(ratio * mu, mu) == pytest.approx(exact, rel=1e-10)


@pytest.mark.parametrize("epsilon,delta", [(1e-20, 1e-20), (1e-9, 2.1237523060158155e-09), (1e-6, 1e-12)])
def test_analytic_calibration_meets_the_target_for_tiny_epsilon(epsilon, delta):
    sigma = analytic_gaussian_sigma(epsilon, delta)
    assert _exact_gdp_delta(epsilon, 1.0 / sigma) <= delta


@pytest.mark.parametrize("command", [
    ["compare", "--q", "0.01", "--sigma", "1", "--steps", "10,20", "-a", "rdp", "--format", "json"],
    ["group", "--k", "2", "--batch-size", "256", "--dataset-size", "60000", "--sigma", "1",
     "--steps", "10", "--method", "rdp-group", "--plot-kind", "k", "--format", "json"],
])
def test_unwritable_plot_fails_before_any_output(command, tmp_path):
    folder = tmp_path / "figure.png"
    folder.mkdir()
    completed = run_dpcalc(*command, "--plot", str(folder))
    assert completed.returncode == 2 and completed.stdout == ""
    assert completed.stderr.count("\n") == 1


def test_absurd_learning_rate_is_refused_and_divergence_is_one_line():
    """--learning-rate is bounded (1e6) so NumPy never overflows mid-run; a run that still
    diverged would be one error line naming the flags to lower."""
    completed = run_dpcalc("simulate", "--samples", "200", "--features", "3", "--classes", "2",
                           "--epochs", "1", "--batch-size", "50", "--hidden", "5", "--activation",
                           "relu", "--learning-rate", "1e200", "--format", "json")
    assert completed.returncode == 2 and completed.stdout == ""
    assert completed.stderr.count("\n") == 1 and "--learning-rate must be in" in completed.stderr
    import numpy as np

    from dpcalc.dpsgd import build_model, make_synthetic_task, split_and_standardise
    from dpcalc.dpsgd.train import _evaluate

    train, test = split_and_standardise(make_synthetic_task(n_samples=100, n_features=3,
                                                            n_classes=2, informative_features=2))
    model = build_model(3, 2, 0)
    broken = tuple(np.full_like(p, np.nan) for p in model.init_params(np.random.default_rng(0)))
    with pytest.raises(DpcalcError, match="diverged by step 7.*--learning-rate"):
        _evaluate(model, broken, train, test, 1, 7, 10.0, None)


def test_kairouz_rejects_a_slack_of_one():
    from dpcalc.accountants.composition import compose_kairouz

    with pytest.raises(DpcalcError):
        compose_kairouz(0.1, 0.0, 10, 1.0)


@pytest.mark.parametrize("sigma", [3.9067328e7, 1e8, 1e12])
@pytest.mark.parametrize("q", [0.00390625, 0.3])
def test_rdp_fractional_orders_at_huge_sigma(sigma, q):
    """Φ(z0/σ) − Φ((z0 − 1)/σ) at arguments ~1e8 apart by 1/σ: float could not tell them
    apart and log(−expm1(0)) raised "math domain error" (found by the library fuzz test)."""
    import math

    import numpy as np

    from dpcalc.accountants.rdp import rdp_subsampled_gaussian

    rho = rdp_subsampled_gaussian(q, sigma, [1.5, 2.0, 2.5, 3.0])
    exact_order_2 = math.log1p(q * q * math.expm1(1.0 / sigma**2))  # A_2 in closed form
    assert np.all(np.isfinite(rho)) and np.all(rho >= 0.0)
    assert rho[1] == pytest.approx(exact_order_2, rel=1e-9)
    assert np.all(np.diff(rho) >= -1e-12 * rho[1])  # RDP is non-decreasing in α


def test_gdp_never_prints_a_bare_inf():
    """At σ = 0.03 the central-limit μ overflows: gdp printed a bare `inf` with no note
    (issue 15: no silent inf). It now gives no value and says why; pb is unaffected."""
    import json

    completed = run_dpcalc("epsilon", "--q", "1", "--sigma", "0.03", "--steps", "10",
                           "-a", "gdp,pb", "--format", "json")
    assert completed.returncode == 0, completed.stderr
    results = {row["accountant"]: row for row in json.loads(completed.stdout)["results"]}
    assert results["gdp"]["epsilon"] is None
    assert "overflows" in results["gdp"]["notes"][0]
    assert results["pb"]["epsilon"] == pytest.approx(6010.5, rel=1e-3)


def test_gaussian_epsilon_at_subnormal_delta_and_mu():
    """Fuzz find: δ = 1e-320 with μ = 1/4.8e307: ½·gap underflowed to 0 and log raised."""
    import math

    from dpcalc.models.gaussian import gaussian_epsilon

    value = gaussian_epsilon(1e-320, 4.757236210389238e+307)
    assert math.isfinite(value) and value >= 0.0


@pytest.mark.parametrize("dataset_size", [100, None])
def test_fixed_full_batch_add_remove_lower_bound_is_an_attained_runs(dataset_size):
    """--sampling fixed with B = N under add/remove: the neighbour with N − 1 records cannot
    hold a batch of N, so the pair at γ = 1 is not attained; its certified lower ε (284.39
    at N = 100, σ = 1, T = 100) exceeded the certified UPPER ε of the only instance, the
    neighbour with N + 1 records at γ′ = N/(N + 1) (281.19; independent review). The lower
    bound must now be at most that instance's upper bound (N unknown: γ′ = 1/2 ≤ every
    N/(N + 1))."""
    from dpcalc import Schedule, get_accountant
    from dpcalc.models.schedule import Phase

    pb = get_accountant("pb")
    full = Phase(1.0, 1.0, 100, "fixed", "add-remove", dataset_size, dataset_size)
    found = pb.epsilon(Schedule((full,)), 1e-5)
    smallest_n = 1 if dataset_size is None else dataset_size
    instance = Phase(smallest_n / (smallest_n + 1), 1.0, 100, "fixed", "add-remove")
    assert found.epsilon_lower <= pb.epsilon(Schedule((instance,)), 1e-5).epsilon
    assert found.epsilon_lower > 0 and found.epsilon_lower <= found.epsilon


def test_masked_and_float32_arrays_are_checked_and_widened():
    """params.float_array's fast path is for plain float64 arrays only: a masked NaN is
    refused (it answered ε = 0.0), a masked order is not silently dropped (it answered 0.8
    where all three orders give 2.014), and float32 input is widened to float64 before the
    float64 rounding allowances apply (a float32 gdp_delta_upper came out below the exact δ)."""
    import numpy as np

    from dpcalc.accountants.rdp_conversion import rdp_to_epsilon_improved
    from dpcalc.errors import DpcalcError
    from dpcalc.models.gaussian import gdp_delta_upper
    from dpcalc.models.mixture import GaussianMixturePair

    orders = [2.0, 4.0, 8.0]
    with pytest.raises(DpcalcError, match="NaN"):
        rdp_to_epsilon_improved(orders, np.ma.masked_invalid([np.nan, 0.4, 0.8]), 1e-5)
    with pytest.raises(DpcalcError, match="NaN"):
        rdp_to_epsilon_improved(orders, np.ma.array([0.2, 0.4, 0.8], mask=[0, 0, 1]), 1e-5)
    with pytest.raises(DpcalcError):
        GaussianMixturePair(np.ma.array([0.5, np.nan, 0.5], mask=[0, 1, 0]), 1.0)
    full = rdp_to_epsilon_improved(orders, np.array([0.2, 0.4, 0.8]), 1e-5)
    narrow = rdp_to_epsilon_improved(np.array(orders, dtype=np.float32),
                                     np.array([0.2, 0.4, 0.8], dtype=np.float32), 1e-5)
    wide = rdp_to_epsilon_improved(np.array(orders, dtype=np.float32).astype(float),
                                   np.array([0.2, 0.4, 0.8], dtype=np.float32).astype(float), 1e-5)
    assert narrow[0] == wide[0] and full[0] > 2.0
    epsilons32 = np.array([0.1, 1.0], dtype=np.float32)
    assert np.array_equal(gdp_delta_upper(epsilons32, 2.0),
                          gdp_delta_upper(epsilons32.astype(float), 2.0))
