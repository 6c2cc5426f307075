"""Risk figures against riskcal and dp_accounting (test extra): agreement within 0.5 % and
the lower bound never above an independent certified upper bound.

| source | what | tolerance |
|---|---|---|
| riskcal 1.5 `get_beta_from_pld`, `get_advantage_from_pld`, `get_bayes_risk_from_pld` on dp_accounting's connect-the-dots PLD (h = 1e-4) | TPR at FPR 1e-3, 1e-2, 0.1; advantage; Bayes success at prior 0.2 | 0.5 % |
| dp_accounting's pessimistic δ(ε) profile, conjugated (TPR ≤ δ(ε) + e^ε α, …) | TPR upper bound | our lower ≤ it; our upper within 0.5 % |
| dp_accounting δ(ε) | pb's δ upper bound (buckets.delta_bounds) | 0.5 %; our lower ≤ it |
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpcalc.pb.buckets import delta_bounds, schedule_phases
from dpcalc.risk.bounds import risk_bounds
from dpcalc.models.schedule import Schedule

pytestmark = pytest.mark.deep  # oracle sweeps: `python -m pytest -m deep` (CI runs them)

FPRS = (1e-3, 1e-2, 0.1)


AGREEMENT = [(1.0, 4.0, 16), (1.0, 10.0, 100), (1.0, 2.0, 1), (1.0, 20.0, 50), (0.01, 4.0, 10000),
             (0.05, 2.0, 500), (0.2, 3.0, 50), (0.5, 5.0, 20), (0.1, 3.0, 200), (0.1, 2.0, 100)]


def dp_accounting_pld(q, sigma, steps, relation=None):
    from dp_accounting.pld import privacy_loss_distribution as pld_module

    extra = {} if relation is None else {"neighboring_relation": relation}
    return pld_module.from_gaussian_mechanism(sigma, sampling_prob=q, use_connect_dots=True,
                                              value_discretization_interval=1e-4,
                                              **extra).self_compose(steps)


@pytest.mark.parametrize("q,sigma,steps", AGREEMENT)
def test_agrees_with_riskcal_and_dp_accounting(q, sigma, steps):
    analysis = pytest.importorskip("riskcal.analysis")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    pld = dp_accounting_pld(q, sigma, steps)
    bounds = risk_bounds(Schedule.single(q, sigma, steps), FPRS, prior=0.2)
    betas = analysis.get_beta_from_pld(pld, alpha=np.array(FPRS))
    for figure, beta in zip(bounds.tpr, betas):
        assert figure.upper == pytest.approx(1 - beta, rel=5e-3)
    assert bounds.advantage.upper == pytest.approx(analysis.get_advantage_from_pld(pld), rel=5e-3)
    success = 1 - analysis.get_bayes_risk_from_pld(pld, 0.2)
    assert bounds.posterior.upper == pytest.approx(success, rel=5e-3)
    # dp_accounting's pessimistic profile is an independent certified upper bound on δ(ε):
    # its conjugate bounds the TPR from above, so our lower bound must not exceed it.
    epsilons = np.linspace(0.0, 12.0, 6001)
    deltas = np.array(pld.get_delta_for_epsilon(epsilons))
    for figure in bounds.tpr:
        alpha = figure.at
        independent = min(1.0, np.min(deltas + np.exp(epsilons) * alpha),
                          np.min(1 - np.exp(-epsilons) * (1 - alpha - deltas)))
        assert figure.lower <= independent
        assert figure.upper == pytest.approx(independent, rel=5e-3)




@pytest.mark.parametrize("q,sigma,steps,adjacency,epsilon", [
    (0.01, 4.0, 10000, "add-remove", 1.0), (0.1, 1.0, 100, "add-remove", 2.0),
    (1.0, 2.0, 4, "add-remove", 0.5), (0.05, 1.5, 200, "replace-one", 1.5),
    (1.0, 5.0, 20, "add-remove", 0.3), (1.0, 1.0, 1, "replace-one", 1.0),
    (0.004, 1.1, 14063, "add-remove", 2.0), (0.04, 1.5, 2250, "add-remove", 5.0),
    (0.001, 0.8, 5000, "add-remove", 1.0), (0.2, 3.0, 300, "replace-one", 2.5),
    (0.02, 0.9, 1000, "add-remove", 3.0), (0.5, 4.0, 50, "add-remove", 1.0),
])
def test_delta_agrees_with_dp_accounting(q, sigma, steps, adjacency, epsilon):
    import dp_accounting

    relation = dp_accounting.NeighboringRelation.REPLACE_ONE if adjacency == "replace-one" else None
    reference = float(dp_accounting_pld(q, sigma, steps, relation).get_delta_for_epsilon(epsilon))
    bounds = delta_bounds(schedule_phases(Schedule.single(q, sigma, steps, "poisson", adjacency)),
                          epsilon)
    assert bounds.upper == pytest.approx(reference, rel=5e-3)
    assert bounds.lower <= reference
