"""`dpcalc simulate` input handling: the data choice, loading and splitting, σ or a target,
and the echoed inputs of the output. Split from simulate.py to keep each module small."""
from __future__ import annotations

from typing import TYPE_CHECKING

from dpcalc.models.samplers import model_label
from dpcalc.cli.simulate.model import DataChoice, SimulationRequest
from dpcalc.errors import DpcalcError
from dpcalc.params import check_count, check_positive

if TYPE_CHECKING:
    from dpcalc.dpsgd import Split, TrainingConfig

# Accountants evaluated after each epoch: the certified pb bound, and rdp beside it.
LIVE_ACCOUNTANTS = ("pb", "rdp")


def data_choice_from_options(data, label, samples, features, classes) -> DataChoice:
    """--data/--label, or the synthetic task's --samples/--features/--classes (not both)."""
    synthetic = {"--samples": samples, "--features": features, "--classes": classes}
    given = [flag for flag, value in synthetic.items() if value is not None]
    if data is not None and given:
        raise DpcalcError(f"{given[0]} sets the size of the synthetic task; it cannot be "
                          f"combined with --data")
    if data is None and label is not None:
        raise DpcalcError("--label names a column of --data FILE; give --data too")
    from dpcalc.dpsgd.budget import MAX_SAMPLES, MAX_SYNTHETIC_FEATURES, check_synthetic

    choice = DataChoice(
        path=data,
        label=label,
        samples=None if samples is None else check_count(samples, "--samples", minimum=10,
                                                         maximum=MAX_SAMPLES),
        features=None if features is None else check_count(features, "--features",
                                                           maximum=MAX_SYNTHETIC_FEATURES),
        classes=None if classes is None else check_count(classes, "--classes", minimum=2,
                                                         maximum=1000),
    )
    if data is None:
        check_synthetic(choice.samples or 20_000, choice.features or 50)
    return choice


def load_splits(choice: DataChoice, test_fraction: float, seed: int):
    """(train, test, description of the data)."""
    from dpcalc.dpsgd import load_dataset, make_synthetic_task, split_and_standardise

    if choice.path is not None:
        dataset = load_dataset(choice.path, choice.label)
    else:
        task = {"seed": seed}
        if choice.samples is not None:
            task["n_samples"] = choice.samples
        if choice.features is not None:
            task["n_features"] = choice.features
            task["informative_features"] = min(10, choice.features)
        if choice.classes is not None:
            task["n_classes"] = choice.classes
        dataset = make_synthetic_task(**task)
    train, test = split_and_standardise(dataset, test_fraction=test_fraction, seed=seed)
    return train, test, dataset.source


def noise_choice(sigma, target_epsilon) -> tuple[float | None, float | None]:
    if sigma is not None and target_epsilon is not None:
        raise DpcalcError("give either --sigma or --target-epsilon, not both")
    noise = None if sigma is None else check_positive(sigma, "--sigma", what="noise multiplier")
    target = None if target_epsilon is None else check_positive(target_epsilon,
                                                               "--target-epsilon")
    return noise, target


def echoed_inputs(config: "TrainingConfig", train: "Split", test: "Split", source: str,
            request: SimulationRequest, sampling_rate: float, total_steps: int,
            calibration: dict | None, model: tuple[str, str], applies: bool = True) -> dict:
    """The echoed inputs: stable keys for JSON, labelled in the table caption. ``model`` is
    the run's (sampler, adjacency); ``applies`` False when dpcalc has no certificate for it
    (shuffle under add/remove): then "accounted_sampling" is null and "epsilon_applies" false."""
    if calibration is not None:
        sigma_source = "calibrated"
    else:
        sigma_source = "default" if request.noise_multiplier is None else "given"
    return {
        "data": source,
        "label": request.data.label,
        "n_train": train.n_samples,
        "n_test": test.n_samples,
        "n_features": train.n_features,
        "n_classes": train.n_classes,
        "model": "logistic regression" if config.hidden_units == 0 else "mlp",
        "hidden": config.hidden_units,
        "activation": config.activation if config.hidden_units else None,
        "sampling": config.sampling,
        "adjacency": request.adjacency,
        "accounted_sampling": model[0] if applies else None,
        "privacy_model": model_label(*model),
        "epsilon_applies": applies,
        "batch_size": config.batch_size,
        "q": sampling_rate,
        "epochs": config.epochs,
        "steps": total_steps,
        "sigma": config.noise_multiplier,
        "sigma_source": sigma_source,
        "target_epsilon": None if calibration is None else calibration["target_epsilon"],
        "calibration": calibration,
        "clip_norm": config.clip_norm,
        "learning_rate": config.learning_rate,
        "momentum": config.momentum,
        "delta": request.delta,
        "k": request.group_size,
        "test_fraction": request.test_fraction,
        "seed": config.seed,
        "accountants": list(LIVE_ACCOUNTANTS),
    }
