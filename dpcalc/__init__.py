"""dpcalc: a privacy calculator for differentially private training.

The library API is exported lazily (PEP 562), so importing dpcalc costs nothing until
a name is used::

    from dpcalc import Schedule, get_accountant
    result = get_accountant("pb").epsilon(Schedule.single(0.01, 4.0, 10_000), 1e-5)
    result.epsilon, result.epsilon_lower   # certified upper and lower bound
    # fixed-size batches (B of N each step) under replace-one adjacency:
    Schedule.single(0.01, 4.0, 10_000, sampling="fixed", adjacency="replace-one")

In a training loop, a stateful accountant (consecutive equal steps merge into one phase)::

    from dpcalc import PrivacyAccountant
    accountant = PrivacyAccountant(sampling="poisson", adjacency="add-remove")
    accountant.step(noise_multiplier=1.1, sample_rate=256 / 60_000)   # after each step
    accountant.epsilon(1e-5), accountant.bounds(1e-5)                 # upper, (upper, lower)

A batch sampler that draws the run its certificate is for (NumPy only; a PyTorch
``DataLoader(dataset, batch_sampler=sampler)``, or ``x[batch]`` in JAX/NumPy loops)::

    from dpcalc import BallsInBinsSampler
    sampler = BallsInBinsSampler(60_000, batch_size=256, epochs=60, seed=0)
    get_accountant("pb").epsilon(sampler.schedule(1.1), 1e-5)   # exactly the run drawn

Opacus users: ``engine.accountant = dpcalc.OpacusAccountant()`` (see dpcalc.training.opacus).
"""

from importlib import import_module

__version__ = "0.2.0"

_EXPORTS = {
    "DpcalcError": "dpcalc.errors",
    "Phase": "dpcalc.models.schedule",
    "Schedule": "dpcalc.models.schedule",
    "EpsilonResult": "dpcalc.accountants.result",
    "Accountant": "dpcalc.accountants.base",
    "accountant_names": "dpcalc.accountants.registry",
    "get_accountant": "dpcalc.accountants.registry",
    "epsilon_results": "dpcalc.accountants.evaluate",
    "GaussianMixturePair": "dpcalc.models.mixture",
    "epsilon_bounds": "dpcalc.pb.buckets",
    "delta_bounds": "dpcalc.pb.buckets",
    "rdp_subsampled_gaussian": "dpcalc.accountants.rdp",
    "rdp_to_epsilon_classic": "dpcalc.accountants.rdp",
    "rdp_to_epsilon_improved": "dpcalc.accountants.rdp",
    "gaussian_delta": "dpcalc.models.gaussian",
    "gaussian_epsilon": "dpcalc.models.gaussian",
    "analytic_gaussian_sigma": "dpcalc.models.gaussian_sigma",
    "classic_gaussian_sigma": "dpcalc.models.gaussian_sigma",
    "amplify_poisson": "dpcalc.models.subsampling",
    "hypergeometric_weights": "dpcalc.models.subsampling",
    "poisson_weights": "dpcalc.models.subsampling",
    "compose_naive": "dpcalc.accountants.composition",
    "compose_advanced": "dpcalc.accountants.composition",
    "compose_kairouz": "dpcalc.accountants.composition",
    "calibrate_noise_multiplier": "dpcalc.calibration.search",
    "dpsgd_sigma": "dpcalc.calibration.dpsgd",
    "gaussian_mechanism_sigmas": "dpcalc.calibration.gaussian",
    "GroupSetting": "dpcalc.group.pairs",
    "group_epsilons": "dpcalc.group.bounds",
    "worst_case": "dpcalc.models.worst_case",
    "WorstCase": "dpcalc.models.worst_case",
    "rdp_replace_one": "dpcalc.accountants.rdp_replace",
    "SAMPLINGS": "dpcalc.models.samplers",
    "adaptive_clipping_noise_multiplier": "dpcalc.training.federated",
    "update_noise_multiplier": "dpcalc.training.federated",
    "ADJACENCIES": "dpcalc.models.samplers",
    "PrivacyAccountant": "dpcalc.training.accountant",
    "OpacusAccountant": "dpcalc.training.opacus",
    "PoissonSampler": "dpcalc.pipelines.batch_samplers",
    "FixedSizeSampler": "dpcalc.pipelines.batch_samplers",
    "TruncatedPoissonSampler": "dpcalc.pipelines.batch_samplers",
    "ShuffleSampler": "dpcalc.pipelines.batch_samplers",
    "BallsInBinsSampler": "dpcalc.pipelines.batch_samplers",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'dpcalc' has no attribute {name!r}") from None
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
