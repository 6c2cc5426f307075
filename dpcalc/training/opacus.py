"""An accountant Opacus can use in place of its own ("rdp", "prv", "gdp"): dpcalc's certified
pb bound for the privacy a PrivacyEngine spends.

Opacus is not a dependency: this module never imports torch or opacus. The object offers
what Opacus calls on an accountant (as of Opacus 1.x): ``step(noise_multiplier=,
sample_rate=)``, ``get_epsilon(delta)``, ``mechanism()``, ``len()``, ``history``,
``get_optimizer_hook_fn(sample_rate)`` (the hook ``make_private`` attaches to the
optimizer) and ``state_dict()`` / ``load_state_dict()`` for checkpoints::

    from opacus import PrivacyEngine
    from dpcalc import OpacusAccountant

    engine = PrivacyEngine()
    OpacusAccountant().attach(engine)             # before make_private(_with_epsilon)
    model, optimizer, loader = engine.make_private_with_epsilon(   # σ from pb
        module=model, optimizer=optimizer, data_loader=loader, target_epsilon=3.0,
        target_delta=1e-5, epochs=20, max_grad_norm=1.0)
    ...
    engine.get_epsilon(1e-5)                      # pb's certified upper bound
    engine.accountant.bounds(1e-5)                # (upper, lower)

``attach`` also makes the engine refuse what the certificate would not cover: Opacus's
``make_private_with_epsilon`` calibrates σ through its own accountant registry, which knows
no "dpcalc-pb" (opacus 1.6: ``ValueError: Unexpected accounting mechanism``), so attach
calibrates with dpcalc instead; and ``poisson_sampling=False`` keeps the user's DataLoader
(shuffled fixed-size batches, not Poisson), which is refused with the command that accounts
for it.
"""
from __future__ import annotations

import math

from dpcalc.models.samplers import ADD_REMOVE, POISSON
from dpcalc.training.accountant import PrivacyAccountant
from dpcalc.errors import DpcalcError
from dpcalc.params import check_count, check_positive, check_sampling_rate, shown

MECHANISM = "dpcalc-pb"
NOT_POISSON = ("poisson_sampling=False keeps your DataLoader, which shuffles and cuts fixed-size "
               "batches: the Poisson certificate OpacusAccountant gives does not cover it. Keep "
               "poisson_sampling=True, or account for the shuffled loader with `dpcalc epsilon "
               "--sampling shuffle --adjacency zero-out --batch-size B --dataset-size N`")


def _length(accountant) -> int:
    """Steps an accountant holds (0 where it cannot say)."""
    try:
        return len(accountant)
    except TypeError:
        return 0


def _epoch_steps(epochs, batches: int) -> int:
    """epochs·batches steps, rounded up (a partial epoch is a partial pass)."""
    epochs = check_positive(epochs, "epochs")
    return max(1, math.ceil(epochs * batches * (1.0 - 1e-12)))


class OpacusAccountant(PrivacyAccountant):
    """dpcalc's :class:`PrivacyAccountant` with the methods Opacus calls on an accountant.

    Opacus's DPDataLoader samples Poisson batches and its guarantees are for add/remove
    adjacency: those are the defaults here."""

    def __init__(self, sampling: str = POISSON, adjacency: str = ADD_REMOVE, **options):
        super().__init__(sampling, adjacency, **options)

    @classmethod
    def mechanism(cls) -> str:
        """The name Opacus stores with a checkpoint of this accountant."""
        return MECHANISM

    def step(self, *, noise_multiplier: float, sample_rate: float, steps: int = 1
             ) -> OpacusAccountant:
        """One optimizer step (Opacus passes both values by keyword)."""
        return super().step(noise_multiplier, sample_rate, steps)

    def get_epsilon(self, delta: float, *args, **kwargs) -> float:
        """ε at ``delta``: pb's certified upper bound. Opacus-specific options (e.g. the RDP
        accountant's ``alphas``) do not apply and are ignored."""
        return self.epsilon(delta)

    def attach(self, engine):
        """Make ``engine`` (an Opacus PrivacyEngine) account with this object: its
        ``accountant`` is set, ``make_private`` refuses ``poisson_sampling=False`` (module
        doc), and ``make_private_with_epsilon`` calibrates σ with pb's certified bound
        (:meth:`noise_multiplier`) before calling ``make_private``. Returns ``engine``."""
        if not callable(getattr(engine, "make_private", None)):
            raise DpcalcError("attach needs an Opacus PrivacyEngine (an object with make_private)")
        previous = getattr(engine, "accountant", None)
        if getattr(engine, "dataset", None) is not None or (
                previous is not None and previous is not self and _length(previous) > 0):
            # make_private already hooked the old accountant to the optimizer: this one would
            # never see a step, and report ε = 0 (independent review)
            raise DpcalcError("attach the accountant before make_private: this engine has "
                              "already prepared a run, whose steps the old accountant counts")
        engine.accountant = self
        make_private = engine.make_private
        accountant = self

        def checked_make_private(*args, poisson_sampling: bool = True, **kwargs):
            if not poisson_sampling:
                raise DpcalcError(NOT_POISSON)
            if kwargs.get("clipping") == "adaptive":
                # AdaClipDPOptimizer reports the gradients' share of the noise as its
                # noise_multiplier and the clipped-count release is never charged
                raise DpcalcError("clipping='adaptive' releases a noisy clipped count each step "
                                  "that this accountant would not charge; use flat or per-layer "
                                  "clipping, or account with dpcalc.update_noise_multiplier")
            return make_private(*args, poisson_sampling=True, **kwargs)

        def make_private_with_epsilon(*, data_loader, target_epsilon: float,
                                      target_delta: float, epochs: int | None = None,
                                      steps: int | None = None, poisson_sampling: bool = True,
                                      epsilon_tolerance=None, **kwargs):
            if not poisson_sampling:
                raise DpcalcError(NOT_POISSON)
            # Opacus's DPDataLoader has int(1/(1/L)) batches (L = len(data_loader)), and its
            # hook records that rate: calibrate the run it will perform and record
            batches = int(1.0 / (1.0 / len(data_loader)))
            sigma = accountant.noise_multiplier(
                target_epsilon, target_delta, 1.0 / batches,
                steps=steps if steps is not None else _epoch_steps(epochs, batches))
            return checked_make_private(data_loader=data_loader, noise_multiplier=sigma,
                                        poisson_sampling=True, **kwargs)

        engine.make_private = checked_make_private
        engine.make_private_with_epsilon = make_private_with_epsilon
        return engine

    def noise_multiplier(self, target_epsilon: float, target_delta: float, sample_rate: float,
                         *, epochs: float | None = None, steps: int | None = None) -> float:
        """The smallest σ whose pb certified ε for a fresh run (this accountant must hold no
        steps yet) is ≤ ``target_epsilon`` at ``target_delta``: ``steps`` Poisson steps
        at ``sample_rate``, or ⌈epochs/sample_rate⌉ (Opacus runs epochs·len(loader) steps,
        and sample_rate = 1/len(loader)). Opacus's get_noise_multiplier gives the same σ from
        its own accountants."""
        from dpcalc.calibration.dpsgd import dpsgd_sigma
        from dpcalc.models.schedule import Phase, Schedule

        rate = check_sampling_rate(sample_rate, "sample_rate")
        if (epochs is None) == (steps is None):
            raise DpcalcError("give either epochs or steps")
        if steps is None:
            epochs = check_positive(epochs, "epochs")
            steps = max(1, math.ceil(epochs / rate * (1.0 - 1e-12)))
        steps = check_count(steps, "steps")
        new = Phase(rate, 1.0, steps, self.sampling, self.adjacency)
        if self._phases:
            raise DpcalcError("make_private_with_epsilon calibrates a fresh run: this accountant "
                              "already holds steps (call it before training)")
        found = dpsgd_sigma("pb", target_epsilon, target_delta, schedule=Schedule((new,)),
                            tolerance=self.tolerance)
        return found.sigma

    def get_optimizer_hook_fn(self, sample_rate: float):
        """The function make_private attaches to the DPOptimizer: one step per optimizer step,
        at the optimizer's noise multiplier (gradient accumulation multiplies q, as in
        Opacus)."""
        rate = check_sampling_rate(sample_rate, "sample_rate")

        def hook(optimizer) -> None:
            if not hasattr(optimizer, "noise_multiplier"):
                raise DpcalcError(f"the optimizer hook needs a DP optimizer with a "
                                  f"noise_multiplier (Opacus's DPOptimizer); got "
                                  f"{type(optimizer).__name__}")
            accumulated = getattr(optimizer, "accumulated_iterations", 1) or 1
            accumulated = check_count(accumulated, "optimizer.accumulated_iterations")
            self.step(noise_multiplier=optimizer.noise_multiplier,
                      sample_rate=check_sampling_rate(rate * accumulated,
                                                      "sample_rate × accumulated_iterations"))

        return hook

    def state_dict(self, destination: dict | None = None) -> dict:
        """{"history", "mechanism", "sampling", "adjacency"} for a checkpoint."""
        if destination is not None and not isinstance(destination, dict):
            raise DpcalcError(f"state_dict's destination must be a dict or None; got "
                              f"{type(destination).__name__}")
        state = {} if destination is None else destination
        state.update(history=self.history, mechanism=self.mechanism(), sampling=self.sampling,
                     adjacency=self.adjacency)
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the history of a checkpoint written by :meth:`state_dict`."""
        if not isinstance(state_dict, dict) or "history" not in state_dict:
            raise DpcalcError("load_state_dict needs a dict with a 'history' list")
        mechanism = state_dict.get("mechanism", MECHANISM)
        if mechanism != MECHANISM:
            raise DpcalcError(f"this checkpoint is for the {shown(mechanism)} accountant, not "
                              f"{MECHANISM!r}")
        restored = OpacusAccountant(state_dict.get("sampling", self.sampling),
                                    state_dict.get("adjacency", self.adjacency),
                                    tolerance=self.tolerance)
        history = state_dict["history"]
        if isinstance(history, (str, bytes, dict)) or not hasattr(history, "__iter__"):
            raise DpcalcError(f"load_state_dict needs a 'history' list of (noise_multiplier, "
                              f"sample_rate, steps); got {shown(history)}")
        for entry in history:
            try:
                noise_multiplier, sample_rate, steps = entry
            except (TypeError, ValueError):
                raise DpcalcError(f"history entries are (noise_multiplier, sample_rate, steps); "
                                  f"got {shown(entry)}") from None
            restored.step(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps)
        self.sampling, self.adjacency = restored.sampling, restored.adjacency
        self._phases, self._answers = restored._phases, {}
