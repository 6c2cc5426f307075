"""What is being accounted: DP-SGD in one or more phases, each with its sampler.

The mechanism is described separately from the accountants that bound it (as in
dp_accounting): every accountant takes a :class:`Schedule` and a target. A phase
states its sampler (``poisson``, ``fixed``, ``truncated-poisson``, …) and the neighbouring relation the
guarantee is for (``add-remove`` or ``replace-one``); see samplers.py.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from dpcalc.models.samplers import (ADD_REMOVE, DROP_LAST_SAMPLINGS, EPOCH_SAMPLINGS, POISSON,
                                    TRUNCATED_POISSON, model_label, parse_adjacency,
                                    parse_sampling)
from dpcalc.errors import DpcalcError
from dpcalc.params import (batches_per_epoch, check_count, check_noise_multiplier,
                           check_positive, check_sampling_rate, epoch_steps)

MAX_STEPS = 10**9


@dataclass(frozen=True)
class Phase:
    """``steps`` DP-SGD steps, each the Gaussian mechanism with noise multiplier
    ``noise_multiplier`` on a batch drawn by ``sampling``: Poisson at rate
    ``sampling_rate``, or ``fixed``-size batches of B = ``batch_size`` out of
    N = ``dataset_size`` (``sampling_rate`` = B/N; B and N may be omitted).
    ``truncated-poisson``: Poisson at rate q cut to at most ``max_batch_size`` = M records;
    it needs N (with B, or alone with the rate) and M. ``drop_last`` (shuffle, sequential,
    with B and N): each epoch runs the ⌊N/B⌋ full batches only, N mod B records unused."""

    sampling_rate: float
    noise_multiplier: float
    steps: int
    sampling: str = POISSON
    adjacency: str = ADD_REMOVE
    batch_size: int | None = None
    dataset_size: int | None = None
    max_batch_size: int | None = None
    drop_last: bool = False

    def __post_init__(self) -> None:
        set_field = object.__setattr__
        set_field(self, "sampling", parse_sampling(self.sampling))
        set_field(self, "adjacency", parse_adjacency(self.adjacency))
        set_field(self, "noise_multiplier", check_noise_multiplier(self.noise_multiplier))
        set_field(self, "steps", check_count(self.steps, "--steps", maximum=MAX_STEPS))
        if self.sampling == TRUNCATED_POISSON:
            self._check_truncation()
        elif self.max_batch_size is not None:
            raise DpcalcError(f"--max-batch-size is for --sampling truncated-poisson only; got it "
                              f"with --sampling {self.sampling}")
        if (self.batch_size is None) != (self.dataset_size is None) and not (
                self.sampling == TRUNCATED_POISSON and self.batch_size is None):
            raise DpcalcError("give both --batch-size and --dataset-size, or neither")
        if self.batch_size is not None:
            dataset = check_count(self.dataset_size, "--dataset-size")
            batch = check_count(self.batch_size, "--batch-size")
            if batch > dataset:
                raise DpcalcError(f"--batch-size must be <= --dataset-size ({dataset}); got {batch}")
            set_field(self, "batch_size", batch)
            set_field(self, "dataset_size", dataset)
            if self.sampling_rate is None:
                set_field(self, "sampling_rate", batch / dataset)
        if self.drop_last:
            self._check_drop_last()
        rate = check_sampling_rate(self.sampling_rate)
        if self.batch_size is not None and rate != self.batch_size / self.dataset_size:
            raise DpcalcError(f"--q {rate:g} disagrees with --batch-size/--dataset-size "
                              f"= {self.batch_size / self.dataset_size:g}; give one of them")
        set_field(self, "sampling_rate", rate)

    def _check_drop_last(self) -> None:
        """drop_last: shuffle or sequential batches of B out of N (it changes which records
        an epoch uses, so B and N are needed); a no-op when B divides N."""
        if self.drop_last is not True:
            raise DpcalcError(f"drop_last must be True or False; got {self.drop_last!r}")
        if self.sampling not in DROP_LAST_SAMPLINGS:
            raise DpcalcError(f"--drop-last is for --sampling {' or '.join(DROP_LAST_SAMPLINGS)}; "
                              f"got it with --sampling {self.sampling}")
        if self.batch_size is None:
            raise DpcalcError("--drop-last needs --batch-size and --dataset-size (it drops the "
                              "N mod B records of the partial batch)")

    def _check_truncation(self) -> None:
        """N and M of a truncated-poisson phase: 1 ≤ M ≤ N."""
        if self.dataset_size is None:
            raise DpcalcError("--sampling truncated-poisson needs --dataset-size N (with --q or "
                              "--batch-size)")
        dataset = check_count(self.dataset_size, "--dataset-size")
        if self.max_batch_size is None:
            raise DpcalcError(f"--sampling truncated-poisson needs --max-batch-size M (a whole "
                              f"number from 1 to N = {dataset})")
        cap = check_count(self.max_batch_size, "--max-batch-size", maximum=dataset)
        object.__setattr__(self, "dataset_size", dataset)
        object.__setattr__(self, "max_batch_size", cap)

    @classmethod
    def from_batches(cls, batch_size: int, dataset_size: int, noise_multiplier: float,
                     steps: int, sampling: str = POISSON, adjacency: str = ADD_REMOVE,
                     drop_last: bool = False) -> "Phase":
        """Batches of B out of N: q = B/N (Poisson: the expected batch size is B)."""
        return cls(None, noise_multiplier, steps, sampling, adjacency, batch_size, dataset_size,
                   drop_last=drop_last)

    @property
    def model(self) -> str:
        """The sampler and the adjacency, in words."""
        return model_label(self.sampling, self.adjacency, self.drop_last)

    @property
    def batches_per_epoch(self) -> int | None:
        """An epoch sampler's steps per epoch b (⌈N/B⌉, ⌊N/B⌋ with drop_last, or ⌈1/q⌉);
        None for the samplers that draw every step afresh."""
        if self.sampling not in EPOCH_SAMPLINGS:
            return None
        return batches_per_epoch(self.sampling_rate, self.batch_size, self.dataset_size,
                                 self.drop_last)

    def with_noise_multiplier(self, noise_multiplier: float) -> "Phase":
        return replace(self, noise_multiplier=noise_multiplier)

    def with_steps(self, steps: int) -> "Phase":
        return replace(self, steps=steps)


@dataclass(frozen=True)
class Schedule:
    """A training run: phases composed one after the other, all for one adjacency."""

    phases: tuple[Phase, ...]

    def __post_init__(self) -> None:
        try:
            phases = tuple(self.phases)
        except TypeError:
            raise DpcalcError("a schedule is a sequence of phases") from None
        if not phases:
            raise DpcalcError("a schedule needs at least one phase")
        if not all(isinstance(phase, Phase) for phase in phases):
            raise DpcalcError("a schedule's phases must be Phase objects")
        if len({phase.adjacency for phase in phases}) > 1:
            raise DpcalcError("all phases of a run must use the same --adjacency (one guarantee "
                              "is for one neighbouring relation)")
        if sum(phase.steps for phase in phases) > MAX_STEPS:
            raise DpcalcError(f"a run may have at most 1e9 steps in all; got "
                              f"{sum(phase.steps for phase in phases)}")
        object.__setattr__(self, "phases", phases)

    @classmethod
    def single(cls, sampling_rate: float, noise_multiplier: float, steps: int,
               sampling: str = POISSON, adjacency: str = ADD_REMOVE) -> "Schedule":
        """One phase: the usual DP-SGD run."""
        return cls((Phase(sampling_rate, noise_multiplier, steps, sampling, adjacency),))

    @classmethod
    def from_epochs(cls, noise_multiplier: float, epochs: float, *,
                    batch_size: int | None = None, dataset_size: int | None = None,
                    sampling_rate: float | None = None, sampling: str = POISSON,
                    adjacency: str = ADD_REMOVE, drop_last: bool = False) -> "Schedule":
        """``epochs`` passes over the data: batches of B out of N (q = B/N), or rate q.

        Steps = ⌈epochs·N/B⌉ (or ⌈epochs/q⌉), the CLI's --epochs rule: rounded up, the safe
        side, where Opacus's int(epochs/q) is one step fewer when epochs/q is not whole.
        Epoch samplers (data loaders) run all b = ⌈N/B⌉ batches of an epoch (⌊N/B⌋ with
        drop_last): steps = ⌈epochs·b⌉."""
        if (batch_size is None) != (dataset_size is None):
            raise DpcalcError("give both batch_size and dataset_size, or sampling_rate")
        if (batch_size is None) == (sampling_rate is None):
            raise DpcalcError("give either batch_size with dataset_size, or sampling_rate")
        if batch_size is not None:
            phase = Phase(None, noise_multiplier, 1, sampling, adjacency, batch_size, dataset_size,
                          drop_last=drop_last)
        else:
            phase = Phase(sampling_rate, noise_multiplier, 1, sampling, adjacency,
                          drop_last=drop_last)
        steps = epoch_steps(epochs, phase.sampling_rate, phase.batch_size, phase.dataset_size,
                            "epochs", batches=phase.batches_per_epoch).steps
        return cls((phase.with_steps(steps),))

    @property
    def total_steps(self) -> int:
        return sum(phase.steps for phase in self.phases)

    @property
    def is_single_phase(self) -> bool:
        return len(self.phases) == 1

    @property
    def adjacency(self) -> str:
        return self.phases[0].adjacency

    @property
    def samplings(self) -> tuple[str, ...]:
        """The distinct samplers of the phases, in order of first use."""
        return tuple(dict.fromkeys(phase.sampling for phase in self.phases))

    @property
    def is_poisson_add_remove(self) -> bool:
        """The model of dpcalc 0.1: Poisson sampling, add/remove adjacency, every phase."""
        return all(phase.sampling == POISSON and phase.adjacency == ADD_REMOVE
                   for phase in self.phases)

    def with_noise_multiplier(self, noise_multiplier: float) -> "Schedule":
        """The same run with every phase at ``noise_multiplier`` (for calibration)."""
        return Schedule(tuple(phase.with_noise_multiplier(noise_multiplier) for phase in self.phases))

    def with_noise_scale(self, scale: float) -> "Schedule":
        """The same run with every phase's noise multiplier times ``scale`` (calibrating a
        common multiplier of a schedule's own σ)."""
        scale = check_positive(scale, "scale")
        return Schedule(tuple(phase.with_noise_multiplier(phase.noise_multiplier * scale)
                              for phase in self.phases))

    def with_steps(self, steps: int) -> "Schedule":
        """A single-phase run with ``steps`` steps."""
        if not self.is_single_phase:
            raise DpcalcError("with_steps needs a single-phase schedule")
        return Schedule((self.phases[0].with_steps(steps),))
