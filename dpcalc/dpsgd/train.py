"""The DP-SGD loop of Abadi et al. 2016 (Algorithm 1) and its non-private baseline.

One step: sample a batch (``batch_sampler``: the library samplers of
dpcalc.pipelines.batch_samplers, Poisson at rate q = B/N, fixed-size, shuffled epochs or
balls-in-bins), clip every per-example gradient to global L2 norm C, sum, add
N(0, σ²C² I), divide by the expected batch size B, and take an SGD step (optional
momentum). Audit canaries placed in shuffled epochs (dpcalc.audit) have their own
permutation of N + canaries (``placed_epoch_batches``). Randomness comes from three
independent PCG64 streams spawned from the seed (initialisation, sampling, noise), so a
seed reproduces a run bit for bit and the baseline sees exactly the batches the private
run saw.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterator, Protocol

import numpy as np

from dpcalc.dpsgd.data import Split
from dpcalc.dpsgd.models import ACTIVATIONS, Params, SoftmaxModel, build_model
from dpcalc.errors import DpcalcError
from dpcalc.pipelines.batch_samplers import (BallsInBinsSampler, FixedSizeSampler, PoissonSampler,
                                          ShuffleSampler, fixed_batch, poisson_batch,
                                          shuffled_epoch)
from dpcalc.params import (check_count, check_noise_multiplier, check_positive, check_range,
                           resolve_steps)

SAMPLING_MODES = ("poisson", "fixed", "shuffle", "balls-in-bins")
# samplers that run in epochs of ⌈N/B⌉ steps
EPOCH_MODES = ("shuffle", "balls-in-bins")


@dataclass(frozen=True)
class TrainingConfig:
    """Hyper-parameters of one simulated run (validated on construction)."""

    batch_size: int = 256           # expected batch size B; q = B/N
    epochs: float = 5.0             # steps: see planned_steps()
    noise_multiplier: float = 1.0   # σ: noise std is σ·C
    clip_norm: float = 1.0          # C
    learning_rate: float = 2.0
    momentum: float = 0.0
    hidden_units: int = 0           # 0 = logistic regression, > 0 = one-hidden-layer MLP
    activation: str = "tanh"        # MLP only: "tanh" or "relu"
    sampling: str = "poisson"       # or "fixed" (B of N each step) or "shuffle" (epochs)
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "batch_size", check_count(self.batch_size, "--batch-size"))
        object.__setattr__(self, "epochs", check_positive(self.epochs, "--epochs"))
        object.__setattr__(self, "noise_multiplier", check_noise_multiplier(self.noise_multiplier))
        object.__setattr__(self, "clip_norm", check_range(self.clip_norm, "--clip-norm", 1e-6, 1e6,
                                                          low_open=False, high_open=False))
        object.__setattr__(self, "learning_rate",
                           check_range(self.learning_rate, "--learning-rate", 0.0, 1e6,
                                       high_open=False))
        momentum = float(self.momentum)
        if not 0.0 <= momentum < 1.0:
            raise DpcalcError(f"--momentum must be in [0, 1); got {self.momentum!r}")
        object.__setattr__(self, "momentum", momentum)
        object.__setattr__(self, "hidden_units",
                           check_count(self.hidden_units, "--hidden-units", minimum=0))
        if self.activation not in ACTIVATIONS:
            raise DpcalcError(f"--activation must be one of {', '.join(ACTIVATIONS)}; "
                              f"got {self.activation!r}")
        if self.sampling not in SAMPLING_MODES:
            raise DpcalcError(f"--sampling must be one of {', '.join(SAMPLING_MODES)}; "
                              f"got {self.sampling!r}")
        object.__setattr__(self, "seed", check_count(self.seed, "--seed", minimum=0))


@dataclass(frozen=True)
class StepRecord:
    """Passed to ``on_step`` after every step."""

    step: int           # 1-based
    total_steps: int
    batch_size: int     # examples actually in this batch


@dataclass(frozen=True)
class EpochRecord:
    """Passed to ``on_epoch`` at every epoch boundary and after the last step.

    ``loss`` and the accuracies are monitoring values computed on the full splits;
    they are not privatised.
    """

    epoch: int                      # 1-based; the last one may be partial
    steps_done: int
    epochs_done: float              # steps_done / steps per epoch
    loss: float                     # mean training cross-entropy
    train_accuracy: float
    test_accuracy: float
    clipped_fraction: float | None  # share of per-example gradients clipped this epoch; None if not clipping


@dataclass(frozen=True)
class TrainingHistory:
    """What a run did: enough to compute ε for the steps actually run."""

    config: TrainingConfig
    private: bool
    n_train: int
    steps: int                      # steps actually run
    sampling_rate: float            # q = B/N, the rate the accountant assumes
    epochs: tuple[EpochRecord, ...]
    params: Params
    # the final weights of the audit's extra input columns (CanaryHook.extension_size), else None
    extension: np.ndarray | None = None

    @property
    def final(self) -> EpochRecord:
        return self.epochs[-1]

    @property
    def noise_std(self) -> float:
        """Std of the Gaussian noise added to the gradient sum (σ·C); 0 for the baseline."""
        if not self.private:
            return 0.0
        return self.config.noise_multiplier * self.config.clip_norm


StepCallback = Callable[[StepRecord], None]
EpochCallback = Callable[[EpochRecord], None]


class CanaryHook(Protocol):
    """Audit canaries riding along a private run (dpcalc.audit): at every step they add the
    clipped gradients of the canaries sampled into the batch, then see the released noisy
    average (a white-box auditor observes every update).

    A hook with ``extension_size`` m > 0 instead writes on m parameters of its own: the weights
    of m extra input columns that are 0 in every training and test example, so no example's
    gradient reaches them and the predictions do not depend on them (_Extension). Each step it
    returns their clipped-gradient sum (``extension_gradients()``), the trainer adds the
    mechanism's noise and takes the same SGD step on them, and ``observe_extension(weights)``
    sees the released weights after the step."""

    def add_sampled(self, model: SoftmaxModel, params: Params, clipped_sum: Params) -> Params:
        ...

    def observe(self, noisy_average: Params) -> None:
        ...


# ---------------------------------------------------------------- building blocks

def clip_per_example(per_example_grads: Params, clip_norm: float) -> Params:
    """Scale each example's gradient to global L2 norm ≤ C over ALL parameters.

    Abadi et al. 2016, Algorithm 1: ḡ_i = g_i / max(1, ‖g_i‖₂ / C). Every array has
    the batch on axis 0.
    """
    clip_norm = check_positive(clip_norm, "--clip-norm")
    batch = per_example_grads[0].shape[0]
    squared = np.zeros(batch)
    for grad in per_example_grads:
        squared += (grad.reshape(batch, -1) ** 2).sum(axis=1)
    scale = clip_norm / np.maximum(np.sqrt(squared), clip_norm)
    return tuple(grad * scale.reshape((batch,) + (1,) * (grad.ndim - 1))
                 for grad in per_example_grads)


def noisy_average(clipped_sum: Params, noise_multiplier: float, clip_norm: float,
                  expected_batch_size: int, rng: np.random.Generator) -> Params:
    """(Σ_i ḡ_i + N(0, σ²C² I)) / B  (Abadi et al. 2016, Algorithm 1, "Add noise").

    Dividing by the expected batch size B, not the realised one, keeps the
    sensitivity of the released sum at C under Poisson sampling.
    """
    noise_std = noise_multiplier * clip_norm
    return tuple((summed + rng.normal(0.0, noise_std, summed.shape)) / expected_batch_size
                 for summed in clipped_sum)


# The library's draws (dpcalc.pipelines.batch_samplers), under the names this module exported.
sample_poisson_batch = poisson_batch
sample_fixed_batch = fixed_batch


def shuffled_epoch_batches(n_examples: int, batch_size: int,
                           rng: np.random.Generator) -> list[np.ndarray]:
    """One shuffled epoch cut into ceil(N/B) batches; the last holds N mod B if nonzero."""
    return shuffled_epoch(n_examples, batch_size, rng)


def placed_epoch_batches(n_examples: int, extra: int, batch_size: int,
                         rng: np.random.Generator) -> list[np.ndarray]:
    """A shuffled epoch of the N examples plus ``extra`` audit records (indices N, N+1, ...):
    one permutation of all N + extra, cut into the run's ceil(N/B) batches (sizes differ by at
    most one), so every audit record takes a slot in a batch like any example."""
    batches = math.ceil(n_examples / batch_size)
    return np.array_split(rng.permutation(n_examples + extra), batches)


def batch_sampler(config: TrainingConfig, n_train: int,
                  seed: np.random.SeedSequence | int | None = None):
    """The library sampler (dpcalc.pipelines.batch_samplers) that draws this run's batches:
    ``planned_steps`` of them under ``config.sampling``, B = ``config.batch_size``; its
    ``schedule(σ, adjacency)`` is the run's model. ``seed``: the sampling stream (default:
    the one ``train_dp_sgd`` draws from for ``config.seed``)."""
    steps = planned_steps(config, n_train)
    seed = _seed_sequences(config.seed)[1] if seed is None else seed
    sampler = {"poisson": PoissonSampler, "fixed": FixedSizeSampler,
               "shuffle": ShuffleSampler, "balls-in-bins": BallsInBinsSampler}[config.sampling]
    return sampler(n_train, batch_size=config.batch_size, steps=steps, seed=seed)


def steps_per_epoch(config: TrainingConfig, n_train: int) -> float:
    """N/B for Poisson and fixed-size sampling; ceil(N/B) batches for a shuffled epoch."""
    if config.sampling in EPOCH_MODES:
        return float(math.ceil(n_train / config.batch_size))
    return n_train / config.batch_size


def planned_steps(config: TrainingConfig, n_train: int) -> int:
    """Steps the run will take: ceil(epochs·N/B) (Poisson) or ceil(epochs·ceil(N/B)) (shuffle)."""
    _check_batch_fits(config, n_train)
    if config.sampling in EPOCH_MODES:
        batches = math.ceil(n_train / config.batch_size)
        return resolve_steps(None, config.epochs, 1.0 / batches)
    return resolve_steps(None, config.epochs, config.batch_size / n_train,
                         batch_size=config.batch_size, dataset_size=n_train)


def _check_batch_fits(config: TrainingConfig, n_train: int) -> None:
    if config.batch_size > n_train:
        raise DpcalcError(f"--batch-size must be <= the number of training examples "
                          f"({n_train}); got {config.batch_size}")


def epoch_end_steps(config: TrainingConfig, n_train: int) -> list[int]:
    """Step counts after which ``on_epoch`` is called; its length is the number of epoch records."""
    return _epoch_end_steps(config, n_train, planned_steps(config, n_train))


def _epoch_end_steps(config: TrainingConfig, n_train: int, total_steps: int) -> list[int]:
    """Step counts after which an epoch ends (whole epochs, then the final partial one)."""
    if config.sampling in EPOCH_MODES:
        per_epoch = math.ceil(n_train / config.batch_size)
        ends = list(range(per_epoch, total_steps + 1, per_epoch))
    else:
        # Epoch e ends after ceil(e·N/B) steps (exact integer arithmetic).
        ends = []
        epoch = 1
        while -(-epoch * n_train // config.batch_size) <= total_steps:
            ends.append(-(-epoch * n_train // config.batch_size))
            epoch += 1
    if not ends or ends[-1] != total_steps:
        ends.append(total_steps)
    return ends


def _placed_stream(config: TrainingConfig, n_train: int, total_steps: int,
                   rng: np.random.Generator, placed: int) -> Iterator[np.ndarray]:
    """Shuffled epochs of the N examples and ``placed`` audit canaries (placed_epoch_batches)."""
    produced = 0
    while produced < total_steps:
        for batch in placed_epoch_batches(n_train, placed, config.batch_size, rng):
            if produced == total_steps:
                return
            produced += 1
            yield batch


def _seed_sequences(seed: int) -> list[np.random.SeedSequence]:
    """Independent streams for initialisation, sampling, noise, and the noise of the audit's
    extension (a fourth child: the first three are those of spawn(3), so a run with an
    extension draws the batches and noise of the same run without it)."""
    return np.random.SeedSequence(seed).spawn(4)


class _Extension:
    """The weights of CanaryHook.extension_size extra input columns, 0 in every example: they
    start at 0, get only the hook's gradients plus N(0, σ²C²) noise per coordinate (its own
    stream), divided by B, and the run's momentum and learning rate — DP-SGD on the model
    with those columns added, whose clipped per-example gradients are unchanged (an example's
    gradient on them is 0)."""

    def __init__(self, size: int, seed: np.random.SeedSequence):
        self.weights, self.velocity = np.zeros(size), np.zeros(size)
        self._rng = _generator(seed)

    def step(self, config: TrainingConfig, summed: np.ndarray) -> np.ndarray:
        update = noisy_average((summed,), config.noise_multiplier, config.clip_norm,
                               config.batch_size, self._rng)[0]
        self.velocity = config.momentum * self.velocity + update
        self.weights = self.weights - config.learning_rate * self.velocity
        return self.weights


def _generator(seed: np.random.SeedSequence) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


def _accuracy(model: SoftmaxModel, params: Params, split: Split) -> float:
    return float(np.mean(model.predict(params, split.features) == split.labels))


# ---------------------------------------------------------------- training loops

def train_dp_sgd(config: TrainingConfig, train: Split, test: Split,
                 on_step: StepCallback | None = None,
                 on_epoch: EpochCallback | None = None,
                 canaries: CanaryHook | None = None) -> TrainingHistory:
    """DP-SGD (Abadi et al. 2016, Algorithm 1) on ``train``; evaluates on ``test`` per epoch.

    ``canaries``: audit canaries (dpcalc.audit) sampled alongside ``train`` at the same rate,
    or, under shuffling, placed in the permutation with ``train`` when the hook has a
    ``placed_records`` count (then ``place(indices, batch_size)`` precedes each step)."""
    return _run(config, train, test, private=True, on_step=on_step, on_epoch=on_epoch,
                canaries=canaries)


def train_baseline(config: TrainingConfig, train: Split, test: Split,
                   on_step: StepCallback | None = None,
                   on_epoch: EpochCallback | None = None) -> TrainingHistory:
    """The same model, batches, learning rate and epochs without clipping or noise.

    The gradient sum is divided by the same expected batch size B, so the only
    difference from :func:`train_dp_sgd` is the privacy mechanism.
    """
    return _run(config, train, test, private=False, on_step=on_step, on_epoch=on_epoch)


def _run(config: TrainingConfig, train: Split, test: Split, private: bool,
         on_step: StepCallback | None, on_epoch: EpochCallback | None,
         canaries: CanaryHook | None = None) -> TrainingHistory:
    # A diverging run overflows; that is caught as non-finite parameters at the epoch's end
    # (one clear error), so numpy's own warnings are silenced here.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _train_loop(config, train, test, private, on_step, on_epoch, canaries)


def _train_loop(config: TrainingConfig, train: Split, test: Split, private: bool,
                on_step: StepCallback | None, on_epoch: EpochCallback | None,
                canaries: CanaryHook | None = None) -> TrainingHistory:
    if train.n_samples == 0 or test.n_samples == 0:
        raise DpcalcError("train and test splits must each hold at least one example")
    if train.n_features != test.n_features:
        raise DpcalcError(f"train and test splits must have the same number of features; "
                          f"got {train.n_features} and {test.n_features}")
    n_train = train.n_samples
    total_steps = planned_steps(config, n_train)
    epoch_ends = set(_epoch_end_steps(config, n_train, total_steps))
    per_epoch = steps_per_epoch(config, n_train)
    model = build_model(train.n_features, train.n_classes, config.hidden_units, config.activation)
    init_seed, sampling_seed, noise_seed, extension_seed = _seed_sequences(config.seed)
    init_rng, noise_rng = _generator(init_seed), _generator(noise_seed)
    params = tuple(np.array(p) for p in model.init_params(init_rng))
    velocity = tuple(np.zeros_like(p) for p in params)
    records: list[EpochRecord] = []
    clipped, seen = 0, 0
    # canaries that take slots in shuffled batches (dpcalc.audit, --sampling shuffle)
    placed = (int(getattr(canaries, "placed_records", 0))
              if private and canaries is not None and config.sampling == "shuffle" else 0)
    extension = (_Extension(int(canaries.extension_size), extension_seed)
                 if private and int(getattr(canaries, "extension_size", 0) or 0) > 0 else None)
    batches = (_placed_stream(config, n_train, total_steps, _generator(sampling_seed), placed)
               if placed else batch_sampler(config, n_train, sampling_seed))
    for step, batch in enumerate(batches, 1):
        if placed:
            canaries.place(batch[batch >= n_train] - n_train, int(batch.shape[0]))
            batch = batch[batch < n_train]
        features, labels = train.features[batch], train.labels[batch]
        if private:
            summed, norms = model.clipped_gradient_sum(params, features, labels, config.clip_norm)
            clipped += int(np.count_nonzero(norms > config.clip_norm))
            seen += norms.shape[0]
            if canaries is not None and extension is None:
                summed = canaries.add_sampled(model, params, summed)
            update = noisy_average(summed, config.noise_multiplier, config.clip_norm,
                                   config.batch_size, noise_rng)
            if extension is not None:
                canaries.observe_extension(extension.step(config, canaries.extension_gradients()))
            elif canaries is not None:
                canaries.observe(update)
        else:
            update = tuple(g / config.batch_size
                           for g in model.gradient_sum(params, features, labels))
        velocity = tuple(config.momentum * v + u for v, u in zip(velocity, update))
        params = tuple(p - config.learning_rate * v for p, v in zip(params, velocity))
        if on_step is not None:
            on_step(StepRecord(step, total_steps, int(batch.shape[0])))
        if step in epoch_ends:
            clipped_fraction = (clipped / seen if seen else 0.0) if private else None
            record = _evaluate(model, params, train, test, len(records) + 1, step, per_epoch,
                               clipped_fraction)
            records.append(record)
            clipped, seen = 0, 0
            if on_epoch is not None:
                on_epoch(record)
    return TrainingHistory(config, private, n_train, total_steps,
                           config.batch_size / n_train, tuple(records), params,
                           None if extension is None else extension.weights)


def _evaluate(model: SoftmaxModel, params: Params, train: Split, test: Split, epoch: int,
              steps_done: int, per_epoch: float, clipped_fraction: float | None) -> EpochRecord:
    if not all(np.isfinite(p).all() for p in params):
        raise DpcalcError(f"training diverged by step {steps_done} (parameters are not finite); "
                          f"lower --learning-rate (or --clip-norm, --sigma)")
    loss = float(np.mean(model.per_example_loss(params, train.features, train.labels)))
    if not math.isfinite(loss):
        raise DpcalcError(f"training diverged by step {steps_done} (loss is not finite); "
                          f"lower --learning-rate (or --clip-norm, --sigma)")
    return EpochRecord(epoch, steps_done, steps_done / per_epoch, loss,
                       _accuracy(model, params, train), _accuracy(model, params, test),
                       clipped_fraction)
