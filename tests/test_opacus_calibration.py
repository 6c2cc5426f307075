"""Opacus end to end: make_private_with_epsilon with dpcalc's accountant attached.

The stand-in engine below reproduces opacus 1.6's call sequence (privacy_engine.py and
accountants/utils.py): make_private_with_epsilon takes sample_rate = 1/len(data_loader),
calls get_noise_multiplier(accountant=self.accountant.mechanism(), epochs=...), which builds
an accountant by name (create_accountant: rdp, gdp or prv, else ValueError) and bisects σ,
then make_private(noise_multiplier=σ, poisson_sampling=...) attaches the accountant's
optimizer hook. No torch or opacus is imported."""
from __future__ import annotations

import pytest

from dpcalc import DpcalcError, OpacusAccountant, Schedule, get_accountant


class UnknownMechanism(ValueError):
    pass


def create_accountant(mechanism: str):
    """opacus 1.6 accountants/__init__.py: only its own mechanisms."""
    if mechanism in ("rdp", "gdp", "prv"):
        raise NotImplementedError("the stand-in has no Opacus accountants")
    raise UnknownMechanism(f"This is an Unexpected accounting mechanism: {mechanism}")


class StandInOptimizer:
    def __init__(self, noise_multiplier: float):
        self.noise_multiplier, self.hooks = noise_multiplier, []

    def attach_step_hook(self, hook) -> None:
        self.hooks.append(hook)

    def step(self) -> None:
        for hook in self.hooks:
            hook(self)


class StandInDPDataLoader(list):
    """opacus 1.6's DPDataLoader.from_data_loader: Poisson at 1/len(loader), and
    int(1/sample_rate) batches (UniformWithReplacementSampler.num_samples)."""

    def __init__(self, data_loader):
        self.sample_rate = 1 / len(data_loader)
        super().__init__(range(int(1 / self.sample_rate)))


class StandInPrivacyEngine:
    """The calls opacus 1.6's PrivacyEngine makes, in order."""

    def __init__(self):
        self.accountant = None
        self.dataset = None
        self.made = {}

    def make_private(self, *, module, optimizer, data_loader, noise_multiplier, max_grad_norm,
                     poisson_sampling: bool = True, **kwargs):
        self.dataset = data_loader  # _prepare_data_loader
        if poisson_sampling:
            data_loader = StandInDPDataLoader(data_loader)
        sample_rate = 1 / len(data_loader)
        optimizer = StandInOptimizer(noise_multiplier)
        optimizer.attach_step_hook(self.accountant.get_optimizer_hook_fn(sample_rate=sample_rate))
        self.made = dict(noise_multiplier=noise_multiplier, poisson_sampling=poisson_sampling,
                         sample_rate=sample_rate)
        return module, optimizer, data_loader

    def make_private_with_epsilon(self, *, module, optimizer, data_loader, target_epsilon,
                                  target_delta, epochs, max_grad_norm, poisson_sampling=True,
                                  **kwargs):
        create_accountant(self.accountant.mechanism())  # get_noise_multiplier's first call
        raise AssertionError("not reached: the stand-in has no Opacus accountants")

    def get_epsilon(self, delta):
        return self.accountant.get_epsilon(delta)


LOADER = list(range(200))  # len() = 200 batches: sample_rate 1/200
ODD_LOADER = list(range(93))  # int(1/(1/93)) = 92: Opacus's loader has one batch fewer


def test_without_attach_opacus_1_6_rejects_the_mechanism():
    engine = StandInPrivacyEngine()
    engine.accountant = OpacusAccountant()
    with pytest.raises(UnknownMechanism, match="dpcalc-pb"):
        engine.make_private_with_epsilon(module=None, optimizer=None, data_loader=LOADER,
                                         target_epsilon=3.0, target_delta=1e-5, epochs=10,
                                         max_grad_norm=1.0)


@pytest.mark.parametrize("target, epochs, data", [(3.0, 10, LOADER), (1.0, 5, LOADER),
                                                  (8.0, 30, LOADER), (2.0, 10, ODD_LOADER)])
def test_attach_calibrates_sigma_with_pb_and_training_meets_the_target(target, epochs, data):
    engine = OpacusAccountant().attach(StandInPrivacyEngine())
    _, optimizer, loader = engine.make_private_with_epsilon(
        module=None, optimizer=None, data_loader=data, target_epsilon=target,
        target_delta=1e-5, epochs=epochs, max_grad_norm=1.0)
    sigma = engine.made["noise_multiplier"]
    assert engine.made["poisson_sampling"] is True
    steps = epochs * len(loader)  # Opacus's loader: int(1/(1/L)) batches an epoch
    for _ in range(steps):  # the training loop: one hook call per optimizer step
        optimizer.step()
    assert engine.accountant.steps == steps
    assert engine.get_epsilon(1e-5) <= target  # what the hook recorded, at 1/len(loader)
    true_run = Schedule.single(loader.sample_rate, sigma, steps)  # the Poisson rate drawn
    assert get_accountant("pb").epsilon(true_run, 1e-5).epsilon <= target
    # and the smallest such σ for what was recorded, to the calibration's precision
    less = Schedule.single(1 / len(loader), sigma * (1 - 3e-3), steps)
    assert get_accountant("pb").epsilon(less, 1e-5).epsilon > target


def test_attach_after_make_private_is_refused():
    """make_private hooked the engine's old accountant to the optimizer: attaching later would
    leave this one at ε = 0 while training runs (independent review)."""
    engine = StandInPrivacyEngine()
    engine.accountant = OpacusAccountant()
    engine.make_private(module=None, optimizer=None, data_loader=LOADER, noise_multiplier=1.0,
                        max_grad_norm=1.0)
    with pytest.raises(DpcalcError, match="before make_private"):
        OpacusAccountant().attach(engine)


def test_adaptive_clipping_is_refused():
    """AdaClipDPOptimizer's noise_multiplier is the gradients' share of the noise; its
    clipped-count release is never charged by the hook."""
    engine = OpacusAccountant().attach(StandInPrivacyEngine())
    with pytest.raises(DpcalcError, match="adaptive"):
        engine.make_private(module=None, optimizer=None, data_loader=LOADER, noise_multiplier=1.0,
                            max_grad_norm=1.0, clipping="adaptive")


def test_attach_refuses_a_shuffled_loader_loudly():
    engine = OpacusAccountant().attach(StandInPrivacyEngine())
    with pytest.raises(DpcalcError, match="poisson_sampling=False"):
        engine.make_private(module=None, optimizer=None, data_loader=LOADER, noise_multiplier=1.0,
                            max_grad_norm=1.0, poisson_sampling=False)
    with pytest.raises(DpcalcError, match="--sampling shuffle"):
        engine.make_private_with_epsilon(module=None, optimizer=None, data_loader=LOADER,
                                         target_epsilon=3.0, target_delta=1e-5, epochs=1,
                                         max_grad_norm=1.0, poisson_sampling=False)
    assert engine.made == {}


def test_calibration_refuses_an_accountant_that_already_holds_steps():
    accountant = OpacusAccountant()
    accountant.step(noise_multiplier=1.0, sample_rate=0.01)
    with pytest.raises(DpcalcError, match="fresh run"):
        accountant.noise_multiplier(3.0, 1e-5, 0.01, epochs=1)
    with pytest.raises(DpcalcError, match="PrivacyEngine"):
        accountant.attach(object())
