"""`dpcalc epsilon`: how much privacy a DP-SGD run spends."""
from __future__ import annotations

from typing import List, Optional


from dpcalc.accountants.evaluate import epsilon_results
from dpcalc.accountants.registry import DEFAULT_ACCOUNTANT
from dpcalc.cli import options as opt
from dpcalc.cli.run_options import RUN, RunFlags, run_options
from dpcalc.cli.output.budget import check_budget, parse_max_epsilon
from dpcalc.cli.progress import run_size, waiting
from dpcalc.cli.output.records import EPSILON_COLUMNS, EPSILON_PLAIN, INPUT_LABELS, epsilon_record
from dpcalc.cli.output.render import OutputFormat, Report, emit
from dpcalc.cli.pipelines.price import alternatives, price_line
from dpcalc.params import check_delta, check_positive


@run_options
def epsilon_command(
    given: RunFlags = RUN,
    delta: str = opt.DELTA,
    accountant: Optional[List[str]] = opt.ACCOUNTANT,
    tolerance: str = opt.TOLERANCE,
    max_epsilon: Optional[str] = opt.MAX_EPSILON,
    output_format: OutputFormat = opt.FORMAT,
) -> None:
    """ε spent by DP-SGD (Gaussian noise) at a target δ, for the sampler and adjacency given.

    The default accountant, pb, reports a certified upper bound with a certified lower
    bound beside it. Every number holds for the stated model (--sampling, --adjacency):
    Poisson sampling with add/remove adjacency unless told otherwise. Name your data
    pipeline instead (--pipeline torch-shuffle, opacus, tf-shuffle, flower, …; `dpcalc
    pipelines` lists them) and it sets the model. Clients: a server drawing exactly m of M
    clients per round is --pipeline flower (--sampling fixed --unit client, --batch-size m
    --dataset-size M, --steps rounds). For a data loader's sampler (shuffle, sequential,
    once-per-epoch) or fixed batches, a line says what the same run is certified at under
    Poisson and balls-in-bins. The flag names of Opacus and TF Privacy work too:
    --noise-multiplier, --sample-rate, --target-delta.

    Example: dpcalc epsilon --q 0.01 --sigma 4 --steps 10000

    Example: dpcalc epsilon --pipeline torch-shuffle --batch-size 256 --dataset-size 60000
    --sigma 1.1 --epochs 60

    Example: dpcalc epsilon --batch-size 512 --dataset-size 50000 --noise-multiplier 1.1
    --epochs 30 --max-epsilon 8
    """
    run = given.schedule()
    target_delta = check_delta(delta)
    gate = parse_max_epsilon(max_epsilon)
    names = opt.accountants(accountant, gate)
    opt.warn_large_delta(target_delta, run.dataset_size)
    tolerance = check_positive(tolerance, "--tolerance")
    with waiting(f"epsilon: composing {run_size(run.schedule, names)}"):
        results = epsilon_results(names, run.schedule, target_delta, tolerance=tolerance)
        pb = next((result for result in results if result.accountant == "pb"), None)
        # plain output prints the bare numbers only: no price line to compute
        found = ([] if pb is None or output_format == OutputFormat.plain else
                 alternatives(given, run, target_delta, pb, tolerance))
    price = [price_line(run, pb, found)] if found else []
    records = [epsilon_record(result) for result in results]
    report = Report(
        command="epsilon",
        title="DP-SGD privacy spent",
        inputs={**run.inputs, "delta": target_delta, "accountants": names},
        results=records,
        columns=EPSILON_COLUMNS,
        plain_columns=EPSILON_PLAIN,
        footnotes=opt.footnotes(results, run.inputs) + price + run.notes,
        input_labels=INPUT_LABELS,
        budget=check_budget(gate, results[0].accountant, [results[0].epsilon], records[:1]),
        extra={"alternatives": found},  # [] without pb: the key is always there
    )
    emit(report, output_format)


__all__ = ["epsilon_command", "DEFAULT_ACCOUNTANT"]
