"""The batch samplers' Schedule is the run they draw; their iteration protocol, seeding and errors;
`dpcalc simulate` trains on them. (Their laws: test_batch_samplers.py.)"""
from __future__ import annotations

import json
import operator
import pickle

import numpy as np
import pytest

from dpcalc.models.schedule import Phase

import dpcalc
from dpcalc import get_accountant
from dpcalc.accountants.epoch_samplers import steps_per_epoch
from dpcalc.cli.app import app
from dpcalc.errors import DpcalcError
from dpcalc.pipelines.batch_samplers import (BallsInBinsSampler, FixedSizeSampler, PoissonSampler,
                                          ShuffleSampler, TruncatedPoissonSampler)
from dpcalc.models.schedule import Schedule
from tests.conftest import cli_runner

runner = cli_runner()
SIGMA, DELTA = 1.1, 1e-5

# (sampler, adjacency, the `dpcalc epsilon` flags of the same run)
RUNS = {
    "poisson-b": (lambda: PoissonSampler(1000, batch_size=10, steps=300, seed=1), "add-remove",
                  ["--batch-size", "10", "--dataset-size", "1000", "--steps", "300"]),
    "poisson-q-epochs": (lambda: PoissonSampler(1000, sampling_rate=0.01, epochs=2.5, seed=1),
                         "add-remove", ["--q", "0.01", "--epochs", "2.5"]),
    "fixed": (lambda: FixedSizeSampler(1000, batch_size=10, epochs=2, seed=1), "replace-one",
              ["--sampling", "fixed", "--batch-size", "10", "--dataset-size", "1000",
               "--epochs", "2"]),
    "truncated": (lambda: TruncatedPoissonSampler(1000, batch_size=10, max_batch_size=14,
                                                  steps=200, seed=1), "add-remove",
                  ["--sampling", "truncated-poisson", "--batch-size", "10", "--dataset-size",
                   "1000", "--max-batch-size", "14", "--steps", "200"]),
    "shuffle": (lambda: ShuffleSampler(1000, batch_size=64, epochs=3, seed=1), "zero-out",
                ["--sampling", "shuffle", "--batch-size", "64", "--dataset-size", "1000",
                 "--steps", "48"]),
    "balls-in-bins": (lambda: BallsInBinsSampler(1000, batch_size=64, epochs=2.5, seed=1),
                      "add-remove", ["--sampling", "balls-in-bins", "--batch-size", "64",
                                     "--dataset-size", "1000", "--steps", "40"]),
    "balls-in-bins-t": (lambda: BallsInBinsSampler(1000, steps_per_epoch=8, epochs=2, seed=1),
                        "zero-out", ["--sampling", "balls-in-bins", "--q", "0.125",
                                     "--steps", "16"]),
}


def _cli_json(*args):
    result = runner.invoke(app, ["epsilon", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("name", list(RUNS))
def test_the_schedule_is_the_run_drawn(name):
    """Sampling name, q or B/N, steps, N and M of the reported phase against the batches
    actually drawn: their number, sizes, range, the cap, and (epoch samplers) each record once
    in every epoch of the length the accountant reads from the phase."""
    make, adjacency, _ = RUNS[name]
    sampler = make()
    batches = list(sampler)
    schedule = sampler.schedule(SIGMA, adjacency)
    (phase,) = schedule.phases
    assert phase.sampling == sampler.sampling and phase.adjacency == adjacency
    assert phase.noise_multiplier == SIGMA
    assert len(batches) == len(sampler) == phase.steps == schedule.total_steps
    n = sampler.dataset_size
    assert all(batch.dtype == np.int64 and batch.ndim == 1 for batch in batches)
    assert min(batch.min() for batch in batches if batch.size) >= 0
    assert max(batch.max() for batch in batches if batch.size) < n
    if phase.dataset_size is not None:
        assert phase.dataset_size == n
    if sampler.batch_size is not None:
        assert (phase.batch_size, phase.sampling_rate) == (sampler.batch_size,
                                                           sampler.batch_size / n)
    if phase.sampling in ("poisson", "truncated-poisson"):
        assert phase.sampling_rate == sampler.sampling_rate
    if phase.sampling == "fixed":
        assert {len(batch) for batch in batches} == {phase.batch_size}
    if phase.sampling == "truncated-poisson":
        assert phase.max_batch_size == sampler.max_batch_size == 14
        assert max(len(batch) for batch in batches) <= phase.max_batch_size
    if phase.sampling in ("shuffle", "balls-in-bins"):
        per_epoch = steps_per_epoch(phase)
        assert per_epoch == sampler.steps_per_epoch
        whole = len(batches) // per_epoch
        for epoch in range(whole):
            drawn = np.concatenate(batches[epoch * per_epoch:(epoch + 1) * per_epoch])
            assert np.array_equal(np.sort(drawn), np.arange(n))
        rest = np.concatenate(batches[whole * per_epoch:] or [np.array([], dtype=np.int64)])
        assert np.unique(rest).size == rest.size


@pytest.mark.parametrize("name", list(RUNS))
def test_pb_on_the_samplers_schedule_is_the_cli_answer(name):
    """get_accountant("pb").epsilon(sampler.schedule(σ), δ) and `dpcalc epsilon` with the same
    run's flags: the same steps (--epochs: the CLI's rule for the per-step samplers) and the
    same certified interval."""
    make, adjacency, flags = RUNS[name]
    sampler = make()
    result = get_accountant("pb").epsilon(sampler.schedule(SIGMA, adjacency), DELTA)
    payload = _cli_json(*flags, "--adjacency", adjacency, "--sigma", str(SIGMA),
                        "--delta", str(DELTA))
    assert payload["inputs"]["steps"] == len(sampler)
    (cli,) = payload["results"]
    assert result.epsilon is not None
    assert (result.epsilon, result.epsilon_lower) == (cli["epsilon"], cli["epsilon_lower"])


def test_samplers_are_exported_from_dpcalc():
    for name in ("PoissonSampler", "FixedSizeSampler", "TruncatedPoissonSampler",
                 "ShuffleSampler", "BallsInBinsSampler"):
        assert name in dpcalc.__all__ and getattr(dpcalc, name).__module__ == \
            "dpcalc.pipelines.batch_samplers"


def test_a_run_in_parts_composes_the_samplers_phases():
    first = PoissonSampler(1000, batch_size=10, steps=100, seed=1)
    second = PoissonSampler(1000, batch_size=20, steps=50, seed=2)
    schedule = Schedule((first.phase(1.0), second.phase(2.0)))
    assert [(p.sampling_rate, p.noise_multiplier, p.steps) for p in schedule.phases] == \
        [(0.01, 1.0, 100), (0.02, 2.0, 50)]


# ---------------------------------------------------------------- seeding
ALL = [lambda seed: PoissonSampler(50, sampling_rate=0.1, steps=20, seed=seed),
       lambda seed: FixedSizeSampler(50, batch_size=5, steps=20, seed=seed),
       lambda seed: TruncatedPoissonSampler(50, sampling_rate=0.2, max_batch_size=8, steps=20,
                                            seed=seed),
       lambda seed: ShuffleSampler(50, batch_size=7, steps=20, seed=seed),
       lambda seed: BallsInBinsSampler(50, batch_size=7, steps=20, seed=seed)]


def _same(a, b) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("make", ALL)
def test_a_seed_replays_the_same_batches(make):
    sampler = make(7)
    assert _same(list(sampler), list(sampler)) and _same(list(sampler), list(make(7)))
    assert not _same(list(sampler), list(make(8)))
    unseeded = make(None)  # fresh entropy, drawn once: its iterations replay too
    assert _same(list(unseeded), list(unseeded))
    assert _same(list(unseeded), list(make(unseeded.seed_sequence)))


@pytest.mark.parametrize("make", ALL[:3])
def test_a_generator_is_used_as_given_and_continues(make):
    """A passed Generator: each iteration continues its stream (per-step samplers: two runs
    of 20 steps are the first 40 steps of one stream); an int seed is default_rng(seed)'s."""
    generator = np.random.default_rng(5)
    sampler = make(generator)
    assert sampler.seed_sequence is None
    twice = list(sampler) + list(sampler)
    longer = make(5)
    longer.steps = 40
    assert _same(twice, list(longer))


def test_an_int_seed_is_numpys_default_rng_stream():
    expected = np.flatnonzero(np.random.default_rng(3).random(50) < 0.1)
    assert np.array_equal(next(iter(PoissonSampler(50, sampling_rate=0.1, steps=1, seed=3))),
                          expected)


# ---------------------------------------------------------------- the iteration protocol
class StandInDataLoader:
    """What torch.utils.data.DataLoader (torch 2.x, num_workers=0) does with
    ``batch_sampler=``: ``len(loader)`` is ``len(batch_sampler)``; each pass calls
    ``iter(batch_sampler)`` and, for every index batch, fetches
    ``dataset.__getitems__(indices)`` when the dataset defines it, else
    ``[dataset[i] for i in indices]``, and yields ``collate_fn(items)`` (torch is not installed
    here, so this stands in for it)."""

    def __init__(self, dataset, batch_sampler, collate_fn, workers=False):
        self.dataset, self.batch_sampler, self.collate_fn = dataset, batch_sampler, collate_fn
        self.workers = workers

    def __len__(self):
        return len(self.batch_sampler)

    def __iter__(self):
        sampler_iter = iter(self.batch_sampler)
        if self.workers:  # the multi-process iterator's _reset calls iter() again, and uses that
            sampler_iter = iter(self.batch_sampler)
        for indices in sampler_iter:
            if hasattr(self.dataset, "__getitems__"):
                items = self.dataset.__getitems__(indices)
            else:
                items = [self.dataset[index] for index in indices]
            yield self.collate_fn(items)


class MapDataset:
    """A map-style dataset that, like a Python list, takes any integer (operator.index)."""

    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        index = operator.index(index)
        assert 0 <= index < self.size
        return (index, float(index) / 2)


class BatchedDataset(MapDataset):
    def __getitems__(self, indices):
        return [self[index] for index in indices]


def _collate(items):
    """Collates an empty batch too (DataLoader's default collate would fail on [])."""
    return np.array([index for index, _ in items], dtype=np.int64)


@pytest.mark.parametrize("dataset_class", [MapDataset, BatchedDataset])
@pytest.mark.parametrize("make", ALL)
def test_a_dataloader_with_batch_sampler_gets_every_batch(make, dataset_class):
    sampler = make(4)
    loader = StandInDataLoader(dataset_class(50), sampler, _collate)
    first = list(loader)
    assert len(loader) == len(sampler) == len(first)
    assert _same(first, list(sampler)) and _same(first, list(loader))  # seeded: each pass replays
    copied = pickle.loads(pickle.dumps(sampler))  # what a worker process would receive
    assert _same(list(copied), first)
    assert _same(list(StandInDataLoader(dataset_class(50), sampler, _collate, workers=True)), first)


@pytest.mark.parametrize("make", ALL)
def test_an_iterator_never_advanced_draws_nothing(make):
    """With num_workers > 0 the DataLoader calls iter() twice per pass and drops the first
    iterator: with a Generator as seed that must not consume its stream."""
    sampler, reference = make(np.random.default_rng(9)), make(np.random.default_rng(9))
    loader = StandInDataLoader(MapDataset(50), sampler, _collate, workers=True)
    assert _same(list(loader), list(reference))


def test_empty_poisson_batches_reach_the_loop():
    """N = 5, q = 0.05: most batches are empty; every one is passed on (the step still runs
    and releases noise alone), none skipped."""
    sampler = PoissonSampler(5, sampling_rate=0.05, steps=50, seed=0)
    seen = list(StandInDataLoader(MapDataset(5), sampler, _collate))
    assert len(seen) == 50 and sum(batch.size == 0 for batch in seen) > 30
    features = np.arange(10.0).reshape(5, 2)
    assert features[seen[0]].shape == (seen[0].size, 2)  # x[batch] as in a NumPy/JAX loop


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("make,needle", [
    (lambda: PoissonSampler(0, sampling_rate=0.1, steps=1), "dataset_size"),
    (lambda: PoissonSampler(10, steps=1), "sampling_rate"),
    (lambda: PoissonSampler(10, sampling_rate=0.1, batch_size=1, steps=1), "exactly one"),
    (lambda: PoissonSampler(10, sampling_rate=1.5, steps=1), "sampling_rate"),
    (lambda: PoissonSampler(10, sampling_rate=0.1), "steps"),
    (lambda: PoissonSampler(10, sampling_rate=0.1, steps=5, epochs=1), "not both"),
    (lambda: FixedSizeSampler(10, batch_size=11, steps=1), "batch_size"),
    (lambda: FixedSizeSampler(10, batch_size=2, epochs=-1), "epochs"),
    (lambda: TruncatedPoissonSampler(10, sampling_rate=0.1, max_batch_size=11, steps=1),
     "max_batch_size"),
    (lambda: BallsInBinsSampler(10, batch_size=2, steps_per_epoch=5, steps=1), "exactly one"),
    (lambda: BallsInBinsSampler(10, steps_per_epoch=0, steps=1), "steps_per_epoch"),
    (lambda: ShuffleSampler(10, batch_size=2, steps=1, seed=-1), "seed"),
    (lambda: ShuffleSampler(10, batch_size=2, steps=1, seed=1.5), "seed"),
    (lambda: ShuffleSampler(10, batch_size=2, steps=1).schedule(1.0, "sideways"), "--adjacency"),
])
def test_bad_input_is_one_dpcalc_error_naming_the_argument(make, needle):
    with pytest.raises(DpcalcError, match=needle):
        make()


def test_drop_last_is_the_drop_last_model_of_the_run_drawn():
    """B ∤ N with drop_last: ⌊N/B⌋ batches an epoch, N mod B records left out each epoch —
    the schedule is Phase(..., drop_last=True), the model `--drop-last` certifies."""
    sampler = ShuffleSampler(10, batch_size=3, epochs=2, drop_last=True, seed=0)
    batches = list(sampler)
    assert len(batches) == 6 and all(len(b) == 3 for b in batches)
    (phase,) = sampler.schedule(1.0, "zero-out").phases
    assert phase == Phase.from_batches(3, 10, 1.0, 6, "shuffle", "zero-out", drop_last=True)
    assert phase.drop_last and phase.steps == 6


def test_drop_last_with_b_dividing_n_is_the_shuffle_model():
    dropping = ShuffleSampler(12, batch_size=3, epochs=2, drop_last=True, seed=0)
    keeping = ShuffleSampler(12, batch_size=3, epochs=2, seed=0)
    assert dropping.schedule(1.0) == keeping.schedule(1.0)
    assert _same(list(dropping), list(keeping))


# ---------------------------------------------------------------- dpcalc simulate
@pytest.mark.parametrize("sampling,adjacency", [("poisson", "add-remove"),
                                                ("fixed", "replace-one"),
                                                ("shuffle", "zero-out"),
                                                ("balls-in-bins", "add-remove")])
def test_simulate_trains_on_the_library_sampler_of_its_model(sampling, adjacency):
    """The training loop's batches are the library sampler's (sizes step by step, steps), and
    the schedule simulate accounts (cli/simulate/accounting.py: q = B/N, the steps run) is the
    sampler's: same sampler, rate, steps and, for epoch samplers, steps per epoch."""
    from dpcalc.dpsgd import (TrainingConfig, make_synthetic_task, split_and_standardise,
                              train_dp_sgd)
    from dpcalc.dpsgd.train import batch_sampler

    train, test = split_and_standardise(make_synthetic_task(n_samples=600, seed=0), seed=0)
    config = TrainingConfig(batch_size=50, epochs=1.5, sampling=sampling, seed=3)
    sizes = []
    history = train_dp_sgd(config, train, test, on_step=lambda step: sizes.append(step.batch_size))
    sampler = batch_sampler(config, train.n_samples)
    assert type(sampler).sampling == sampling
    assert sizes == [len(batch) for batch in sampler] and history.steps == len(sampler)
    simulated = Schedule.single(history.sampling_rate, config.noise_multiplier, history.steps,
                                sampling, adjacency).phases[0]
    drawn = sampler.schedule(config.noise_multiplier, adjacency).phases[0]
    assert (simulated.sampling, simulated.sampling_rate, simulated.steps, simulated.adjacency) == \
        (drawn.sampling, drawn.sampling_rate, drawn.steps, drawn.adjacency)
    if sampling in ("shuffle", "balls-in-bins"):
        assert steps_per_epoch(simulated) == steps_per_epoch(drawn) == sampler.steps_per_epoch


# ---------------------------------------------------------------- the documented numbers
def test_the_documented_mnist_numbers_are_pb_on_the_samplers_schedules():
    """docs/samplers.md and docs/library.md quote pb's interval on MNIST's settings (N = 60 000,
    B = 256, σ = 1.1, 60 epochs, δ = 1e-5) for a shuffled loader, balls-in-bins and Poisson:
    here they are recomputed from the samplers' own schedules, as the CLI prints them."""
    import pathlib

    from dpcalc.cli.output.numbers import show_lower, show_upper

    root = pathlib.Path(__file__).resolve().parent.parent
    docs = (root / "docs" / "samplers.md").read_text()
    library = (root / "docs" / "library.md").read_text()
    shuffled = ShuffleSampler(60_000, batch_size=256, epochs=60)
    pb = get_accountant("pb")
    assert pb.epsilon(shuffled.schedule(SIGMA), DELTA).epsilon is None  # add/remove: none
    runs = [(shuffled, "zero-out", 14_100, True),
            (BallsInBinsSampler(60_000, batch_size=256, epochs=60), "add-remove", 14_100, True),
            (PoissonSampler(60_000, batch_size=256, epochs=60), "add-remove", 14_063, True),
            (BallsInBinsSampler(60_000, batch_size=256, epochs=1), "add-remove", 235, False),
            (PoissonSampler(60_000, batch_size=256, steps=235), "add-remove", 235, False)]
    for sampler, adjacency, steps, in_library in runs:
        assert len(sampler) == steps
        result = pb.epsilon(sampler.schedule(SIGMA, adjacency), DELTA)
        shown = f"[{show_lower(result.epsilon_lower)}, {show_upper(result.epsilon)}]"
        assert shown in docs
        assert shown in library or not in_library
