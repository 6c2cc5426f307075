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
    engine.accountant = OpacusAccountant()        # before make_private
    model, optimizer, loader = engine.make_private(...)
    ...
    engine.get_epsilon(1e-5)                      # pb's certified upper bound
    engine.accountant.bounds(1e-5)                # (upper, lower)
"""
from __future__ import annotations

from dpcalc.models.samplers import ADD_REMOVE, POISSON
from dpcalc.training.accountant import PrivacyAccountant
from dpcalc.errors import DpcalcError
from dpcalc.params import check_count, check_sampling_rate, shown

MECHANISM = "dpcalc-pb"


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
