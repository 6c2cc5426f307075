"""`dpcalc epsilon`: how much privacy a DP-SGD run spends."""
from __future__ import annotations

from typing import List, Optional


from dpcalc.accounting.evaluate import epsilon_results
from dpcalc.accounting.registry import DEFAULT_ACCOUNTANT, resolve_names
from dpcalc.cli import options as opt
from dpcalc.cli.budget import check_budget, parse_max_epsilon
from dpcalc.cli.progress import waiting
from dpcalc.cli.records import EPSILON_COLUMNS, EPSILON_PLAIN, INPUT_LABELS, epsilon_record
from dpcalc.cli.render import OutputFormat, Report, emit
from dpcalc.cli.schedule_options import build_schedule
from dpcalc.params import check_delta, check_positive


def epsilon_command(
    q: Optional[str] = opt.Q,
    batch_size: Optional[str] = opt.BATCH_SIZE,
    dataset_size: Optional[str] = opt.DATASET_SIZE,
    sigma: Optional[str] = opt.SIGMA,
    steps: Optional[str] = opt.STEPS,
    epochs: Optional[str] = opt.EPOCHS,
    phase: Optional[List[str]] = opt.PHASE,
    sampling: str = opt.SAMPLING,
    adjacency: str = opt.ADJACENCY,
    max_batch_size: Optional[str] = opt.MAX_BATCH_SIZE,
    delta: str = opt.DELTA,
    accountant: Optional[List[str]] = opt.ACCOUNTANT,
    tolerance: str = opt.TOLERANCE,
    max_epsilon: Optional[str] = opt.MAX_EPSILON,
    output_format: OutputFormat = opt.FORMAT,
) -> None:
    """ε spent by DP-SGD (Gaussian noise) at a target δ, for the sampler and adjacency given.

    The default accountant, pb, reports a certified upper bound with a certified lower
    bound beside it. Every number holds for the stated model (--sampling, --adjacency):
    Poisson sampling with add/remove adjacency unless told otherwise. The flag names of
    Opacus and TF Privacy work too: --noise-multiplier, --sample-rate, --target-delta.

    Example: dpcalc epsilon --q 0.01 --sigma 4 --steps 10000

    Example: dpcalc epsilon --batch-size 512 --dataset-size 50000 --noise-multiplier 1.1
    --epochs 30 --max-epsilon 8
    """
    run = build_schedule(q, batch_size, dataset_size, sigma, steps, epochs, phase, sampling,
                         adjacency, max_batch_size=max_batch_size)
    target_delta = check_delta(delta)
    gate = parse_max_epsilon(max_epsilon)
    names = resolve_names(accountant)
    opt.warn_large_delta(target_delta, run.dataset_size)
    tolerance = check_positive(tolerance, "--tolerance")
    with waiting("epsilon: composing"):
        results = epsilon_results(names, run.schedule, target_delta, tolerance=tolerance)
    report = Report(
        command="epsilon",
        title="DP-SGD privacy spent",
        inputs={**run.inputs, "delta": target_delta, "accountants": names},
        results=[epsilon_record(result) for result in results],
        columns=EPSILON_COLUMNS,
        plain_columns=EPSILON_PLAIN,
        footnotes=opt.footnotes(results, run.inputs) + run.notes,
        input_labels=INPUT_LABELS,
        budget=check_budget(gate, results[0].accountant, [results[0].epsilon]),
    )
    emit(report, output_format)


__all__ = ["epsilon_command", "DEFAULT_ACCOUNTANT"]
