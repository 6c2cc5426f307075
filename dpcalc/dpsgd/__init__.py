"""NumPy DP-SGD engine behind ``dpcalc simulate``: train with DP-SGD (Abadi et al.
2016) and watch the accountant's ε grow while the model learns.

Typical use::

    dataset = make_synthetic_task(seed=0)            # or load_dataset("data.csv", "label")
    train, test = split_and_standardise(dataset, seed=0)
    config = TrainingConfig(noise_multiplier=1.0, seed=0)
    history = train_dp_sgd(config, train, test, on_step=..., on_epoch=...)
    # ε for Schedule.single(history.sampling_rate, config.noise_multiplier, history.steps)
    baseline = train_baseline(config, train, test)

No printing happens here; ``sampling="shuffle"`` runs fixed batches from shuffled
epochs; under add/remove adjacency no certificate covers them, and the caller should
say so rather than report a Poisson ε.
"""
from dpcalc.dpsgd.data import (Dataset, Split, load_dataset, make_synthetic_task,
                               split_and_standardise)
from dpcalc.dpsgd.models import (LogisticRegression, MultilayerPerceptron, Params, SoftmaxModel,
                                 build_model)
from dpcalc.dpsgd.train import (EpochRecord, StepRecord, TrainingConfig, TrainingHistory,
                                clip_per_example, epoch_end_steps, noisy_average, planned_steps,
                                sample_poisson_batch, shuffled_epoch_batches, steps_per_epoch,
                                train_baseline, train_dp_sgd)

__all__ = [
    "Dataset", "Split", "load_dataset", "make_synthetic_task", "split_and_standardise",
    "LogisticRegression", "MultilayerPerceptron", "Params", "SoftmaxModel", "build_model",
    "EpochRecord", "StepRecord", "TrainingConfig", "TrainingHistory", "clip_per_example",
    "epoch_end_steps",
    "noisy_average", "planned_steps", "sample_poisson_batch", "shuffled_epoch_batches",
    "steps_per_epoch", "train_baseline", "train_dp_sgd",
]
