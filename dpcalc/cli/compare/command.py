"""`dpcalc compare`: every accountant on one DP-SGD configuration, or over a sweep.

One configuration gives one table sorted by ε with the ratio to the tightest
certified value; a list or range for --steps, --epochs, --sigma or --q gives ε over
the sweep per accountant (table, JSON, CSV, plain, and --plot FILE).
"""
from __future__ import annotations

import math
from dataclasses import replace
from enum import Enum
from typing import List, Optional

import typer

from dpcalc.accountants.evaluate import epsilon_curves, epsilon_results
from dpcalc.accountants.registry import accountant_names, get_accountant
from dpcalc.accountants.result import EpsilonResult, interval_text
from dpcalc.pipelines.names import resolve_model
from dpcalc.models.samplers import DROP_LAST_SAMPLINGS, EPOCH_SAMPLINGS, TRUNCATED_POISSON
from dpcalc.models.schedule import Phase, Schedule
from dpcalc.cli import options as opt
from dpcalc.cli.run_options import RUN, RunFlags, run_options
from dpcalc.cli.output.budget import check_budget, enforce, output_may_close, parse_max_epsilon
from dpcalc.cli.compare.output import (XScale, plot_sweep, print_wide_table, sweep_table, write_csv)
from dpcalc.cli.compare.sweep import (MAX_SWEEP_POINTS, SLOW_ACCOUNTANTS, SLOW_SWEEP_POINTS,
                                      Point, Sweep, build_sweep, check_sweep_work, epochs_notes,
                                      parse_samplings, parse_sweep)
from dpcalc.cli.parallel import points_map
from dpcalc.cli.progress import counted_progress
from dpcalc.cli.output.records import (APPROXIMATION, INPUT_LABELS, epsilon_record, result_notes,
                                       short_kind)
from dpcalc.cli.output.render import (Column, OutputFormat, Report, check_failed_records, emit,
                                      plain_upper, show_lower, show_upper)
from dpcalc.cli.schedule_options import model_footnote, model_inputs
from dpcalc.errors import DpcalcError
from dpcalc.params import check_count, check_delta, check_positive

_SWEEP_HELP = " A list or range sweeps it (see above)."


class CompareFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"
    plain = "plain"


Q_SWEEP = typer.Option(None, *opt.Q_NAMES, metavar="FLOAT|SWEEP",
                       help="Poisson sampling rate q in (0, 1]. Or give --batch-size and "
                            "--dataset-size." + _SWEEP_HELP)
SIGMA_SWEEP = typer.Option(None, *opt.SIGMA_NAMES, metavar="FLOAT|SWEEP",
                           help="Noise multiplier σ > 0." + _SWEEP_HELP)
STEPS_SWEEP = typer.Option(None, *opt.STEPS_NAMES, metavar="INT|SWEEP",
                           help="DP-SGD steps T ≥ 1." + _SWEEP_HELP)
EPOCHS_SWEEP = typer.Option(None, *opt.EPOCHS_NAMES, metavar="FLOAT|SWEEP",
                            help="Epochs > 0 instead of --steps: T = ceil(epochs·N/B), or "
                                 "ceil(epochs/q); an epoch sampler's epoch is all of its ⌈N/B⌉ "
                                 "batches." + _SWEEP_HELP)
ACCOUNTANTS = typer.Option(None, "--accountant", "-a", metavar="NAME",
                           help=f"Any of {', '.join(accountant_names())} (repeatable or "
                                "comma-separated). Default: all.")
PLOT = typer.Option(None, "--plot", metavar="FILE",
                    help="With a sweep: write ε over the sweep per accountant to FILE (.png or "
                         ".svg; needs matplotlib: pip install 'dpcalc-privacy\\[plot]').")
X_SCALE = typer.Option(None, "--x-scale", case_sensitive=False,
                       help="With --plot: the x axis, linear or log. Default: log for a log-spaced "
                            "range (start:stop:logN), else linear.")
MAX_SWEEP_POINTS_OPTION = typer.Option(
    None, "--max-sweep-points", metavar="INT",
    help=f"The most points × slow accountants ({', '.join(SLOW_ACCOUNTANTS)}) a sweep may "
         f"compute (default {SLOW_SWEEP_POINTS}, each ~0.05-1 s); a larger sweep is refused "
         "(exit 2) unless this raises the limit.")
FORMAT = typer.Option(CompareFormat.table, "--format", "-f", case_sensitive=False,
                      help="Output: table, json, csv or plain (bare numbers).")

SAMPLINGS = typer.Option(None, "--sampling", metavar="NAME[,NAME]",
                         help="Sampler(s) (default poisson, or the --pipeline's): poisson, fixed, "
                              "shuffle, shuffle-once, sequential, once-per-epoch or "
                              "balls-in-bins, or a list 'poisson,shuffle,balls-in-bins' to see "
                              "what the batch sampler costs in ε side by side. Clients: a server "
                              "drawing exactly m of M clients per round is fixed with "
                              "--batch-size m --dataset-size M (--unit client); Poisson client "
                              "sampling is poisson.")
# One short phrase per accountant for the notes column (the full notes go under the table).
_METHODS = {
    "pb": "tight numeric PLD",
    "rdp": "Rényi DP (improved)",
    "moments": "Abadi et al. moments",
    "abadi": "Abadi et al. Lemma 3",
    "gdp": "CLT / Gaussian DP",
    "strong": "Kairouz et al. 2015",
    "naive": "basic composition",
}
# pb on the epoch samplers: what its certified upper bound is (the lower is explicit).
_EPOCH_METHODS = {"gaussian-no-amplification": "no-amplification upper, explicit lower",
                  "random-allocation": "random-allocation upper, explicit lower"}
# Abadi et al. 2016 §5: q = 0.01, σ = 4, T = 10 000, δ = 1e-5.
_ABADI_EXAMPLE = (0.01, 4.0, 10_000, 1e-5)
_ABADI_FOOTNOTE = ("This is Abadi et al. 2016 §5's example: they reported ε ≈ 1.26 (moments "
                   "accountant) against 9.34 ('strong composition', not a bound: see strong's note).")


# ------------------------------------------------------------------ evaluation
def _sort_key(result: EpsilonResult):
    value = result.epsilon
    return (value is None, math.inf if value is None else value)


def _tightest(results: list[EpsilonResult]) -> float | None:
    certified = [r.epsilon for r in results
                 if r.certified and r.epsilon is not None and math.isfinite(r.epsilon)]
    return min(certified) if certified else None


def _ratio(value: float | None, tightest: float | None) -> float | None:
    if value is None or tightest is None:
        return None
    if tightest == 0.0:
        return 1.0 if value == 0.0 else math.inf
    return value / tightest


def _records(point: Point | None, results: list[EpsilonResult], context: dict) -> list[dict]:
    """Flat records (one per accountant, sorted by ε) with the configuration and the ratio
    to the tightest certified ε of the same configuration."""
    tightest = _tightest(results)
    where = {} if point is None else {"q": point.q, "sigma": point.sigma, "steps": point.steps,
                                      "epochs": point.epochs, "sampling": point.sampling}
    records = []
    for result in sorted(results, key=_sort_key):
        record = epsilon_record(result)
        method = _METHODS.get(result.accountant) or get_accountant(result.accountant).summary
        method = _EPOCH_METHODS.get(result.details.get("upper_source"), method)
        record.update({**context, **where, "ratio_to_tightest": _ratio(result.epsilon, tightest),
                       "method": method})
        records.append(record)
    return records


def _is_abadi_example(point: Point, delta: float, adjacency: str) -> bool:
    q, sigma, steps, target_delta = _ABADI_EXAMPLE
    return (math.isclose(point.q, q) and math.isclose(point.sigma, sigma) and point.steps == steps
            and math.isclose(delta, target_delta) and point.sampling == "poisson"
            and adjacency == "add-remove")


# ------------------------------------------------------------------ reports
def _show_ratio(value: float | None) -> str:
    if value is None:
        return "—"
    if math.isinf(value):
        return "inf"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _kind_word(kind) -> str:
    return "approx." if kind == APPROXIMATION else short_kind(kind)


def _single_report(records: list[dict], results: list[EpsilonResult], inputs: dict,
                   footnotes: list[str], several_samplers: bool = False) -> Report:
    columns = [Column("accountant", "accountant", justify="left")]
    if several_samplers:
        columns.append(Column("sampling", "sampling", justify="left"))
    columns += [
        Column("ε", "epsilon", show_upper),
        Column("lower", "epsilon_lower", show_lower),
        Column("ratio", "ratio_to_tightest", _show_ratio),
        Column("kind", "kind", _kind_word, justify="left"),
        Column("notes", "method", justify="left"),
    ]
    order = ("Rows grouped by sampler, sorted by ε within each" if several_samplers
             else "Sorted by ε")
    lines = [f"{order}. ratio: ε / the tightest certified ε (of the same sampler). Certified "
             "values are upper "
             "bounds (rounded up), pb's lower bound is certified too (rounded down); approx. "
             "(approximation) values are not bounds."]
    lines.append(model_footnote(inputs) if not several_samplers else
                 f"Models: each row holds for its sampler, with {inputs['adjacency']} adjacency.")
    return Report(command="compare", title="Accountants compared", inputs=inputs, results=records,
                  columns=columns, plain_columns=[Column("ε", "epsilon", plain_upper)],
                  footnotes=lines + footnotes + result_notes(sorted(results, key=_sort_key)),
                  input_labels=INPUT_LABELS)


# ------------------------------------------------------------------ command
def _point_schedule(point, relation: str, dataset_size, max_batch_size, batch_size=None,
                    drop_last: bool = False) -> Schedule:
    """One configuration of the sweep as a run (truncated Poisson also needs N and M; the
    epoch samplers keep B and N, which drop_last needs)."""
    if point.sampling == TRUNCATED_POISSON:
        return Schedule((Phase(point.q, point.sigma, point.steps, point.sampling, relation, None,
                               dataset_size, max_batch_size),))
    if point.sampling in EPOCH_SAMPLINGS and batch_size is not None and dataset_size is not None:
        return Schedule((Phase.from_batches(batch_size, dataset_size, point.sigma, point.steps,
                                            point.sampling, relation,
                                            drop_last and point.sampling in DROP_LAST_SAMPLINGS),))
    return Schedule.single(point.q, point.sigma, point.steps, point.sampling, relation)


_NEAREST_SHOWN = 8


def _nearest_lines(sweep: Sweep, per_point: list[list[dict]]) -> list[str]:
    """Where pb has no certificate for the swept model: why (once), and the nearest certified
    model's interval at the first points (the JSON rows carry every one)."""
    found = [(point, record) for point, records in zip(sweep.points, per_point)
             for record in records
             if record["accountant"] == "pb" and "nearest_model" in record["details"]]
    if not found:
        return []
    nearest = found[0][1]["details"]["nearest_model"]
    shown = "; ".join(
        f"{getattr(point, sweep.swept):g}: "
        f"{interval_text(record['details']['nearest_model']['epsilon_lower'], record['details']['nearest_model']['epsilon_upper'])}"
        for point, record in found[:_NEAREST_SHOWN])
    more = " …" if len(found) > _NEAREST_SHOWN else ""
    return [f"pb: {found[0][1]['notes'][0]}",
            f"pb: nearest model with a certificate: {nearest['adjacency']} adjacency, the same "
            f"runs' ε by {sweep.swept} — {shown}{more} (JSON: details.nearest_model) — "
            f"{nearest['why']}"]


def _resolve(given: RunFlags):
    """(sampling text for the sweep, adjacency, the resolved model): --pipeline sets the
    sampler (one), the default adjacency, unit and drop_last (pipelines/names.py)."""
    if given.pipeline is None:
        chosen = resolve_model(None, None, given.adjacency, given.unit, given.drop_last)
        return given.sampling or "poisson", chosen.adjacency, chosen
    listed = None if given.sampling is None else parse_samplings(given.sampling)
    if listed is not None and len(listed) > 1:
        raise DpcalcError(f"--pipeline {given.pipeline} sets one sampler; give it without a "
                          f"--sampling list (got {given.sampling})")
    chosen = resolve_model(given.pipeline, None if listed is None else listed[0],
                           given.adjacency, given.unit, given.drop_last)
    return chosen.sampling, chosen.adjacency, chosen


def _phase_run(given: RunFlags, adjacency: str) -> tuple[Sweep, Schedule, list[str]]:
    """--phase or --schedule: one multi-phase configuration (no sweep), one sampler per phase."""
    samplings = parse_samplings(given.sampling or "poisson")
    if len(samplings) > 1:
        raise DpcalcError("with --phase or --schedule give one --sampling (or sampling per phase)")
    run = replace(given, sampling=samplings[0], adjacency=adjacency).schedule()
    return Sweep([], None, run.inputs, samplings), run.schedule, run.notes


@run_options(own={"q": Q_SWEEP, "sigma": SIGMA_SWEEP, "steps": STEPS_SWEEP,
                  "epochs": EPOCHS_SWEEP, "sampling": SAMPLINGS})
def compare_command(
    given: RunFlags = RUN,
    delta: str = opt.DELTA,
    accountant: Optional[List[str]] = ACCOUNTANTS,
    tolerance: str = opt.TOLERANCE,
    plot: Optional[str] = PLOT,
    x_scale: Optional[XScale] = X_SCALE,
    max_epsilon: Optional[str] = opt.MAX_EPSILON,
    max_sweep_points: Optional[str] = MAX_SWEEP_POINTS_OPTION,
    output_format: CompareFormat = FORMAT,
) -> None:
    """Every accountant side by side on one DP-SGD configuration, or over a sweep.

    One configuration: a table sorted by ε with each value's ratio to the tightest
    certified ε; certified bounds and approximations are marked.

    Sweep: give ONE of --steps, --epochs, --sigma or --q as a list (1000,2000,5000) or a
    range START:STOP:N (N evenly spaced points) or START:STOP:logN (N log-spaced points),
    both ends included: 1000:100000:log10 is 10 points from 1e3 to 1e5 (at most 1000).
    The result is ε over the sweep per accountant; --plot FILE draws it. A list of
    samplers (--sampling poisson,fixed) shows each accountant once per sampler. A table
    wider than the terminal is split into several that repeat the first column.

    Example: dpcalc compare --q 0.01 --sigma 4 --steps 10000

    Example: dpcalc compare --q 0.01 --sigma 4 --steps 1000:100000:log10 --plot eps.png
    """
    target_delta = check_delta(delta)
    sampling_text, relation, chosen = _resolve(given)
    phase_notes: list[str] = []
    if given.phase or given.schedule_file:
        sweep, phase_schedule, phase_notes = _phase_run(replace(given, sampling=sampling_text),
                                                        relation)
    else:
        sweep = build_sweep(given.q, given.batch_size, given.dataset_size, given.sigma,
                            given.steps, given.epochs, sampling_text, chosen.drop_last)
        phase_schedule = None
        cap = (None if given.max_batch_size is None
               else check_count(given.max_batch_size, "--max-batch-size"))
        if cap is not None and TRUNCATED_POISSON not in sweep.samplings:
            raise DpcalcError(f"--max-batch-size is for --sampling truncated-poisson only; got it "
                              f"with --sampling {','.join(sweep.samplings)}")
        if TRUNCATED_POISSON in sweep.samplings:
            sweep.inputs["max_batch_size"] = cap
    pb_tolerance = check_positive(tolerance, "--tolerance")
    gate = parse_max_epsilon(max_epsilon)
    names = accountant_names() if not accountant else opt.accountants(accountant, gate)
    check_sweep_work(sweep, names, max_sweep_points)
    opt.warn_plot_only(plot, x_scale=x_scale)
    if plot is not None:
        from dpcalc.cli.output.plots import check_plot_path

        check_plot_path(plot)
        if sweep.swept is None:
            raise DpcalcError("--plot needs a sweep: give --steps, --epochs, --sigma or --q as a "
                              "list 'a,b,c' or a range 'start:stop:logN'")
    opt.warn_large_delta(target_delta, sweep.inputs.get("dataset_size"))
    context = {"adjacency": relation, "delta": target_delta,
               "batch_size": sweep.inputs.get("batch_size"),
               "dataset_size": sweep.inputs.get("dataset_size")}
    per_point, all_results = [], []
    if phase_schedule is not None:
        all_results.append(epsilon_results(names, phase_schedule, target_delta,
                                           tolerance=pb_tolerance))
        phases = phase_schedule.phases  # every row names the whole run (CSV, JSON)
        per_point.append(_records(None, all_results[0], {
            **context, "q": [p.sampling_rate for p in phases],
            "sigma": [p.noise_multiplier for p in phases], "steps": phase_schedule.total_steps,
            "sampling": sweep.inputs["sampling"]}))
    dataset = sweep.inputs.get("dataset_size")
    schedules = [_point_schedule(point, relation, dataset, sweep.inputs.get("max_batch_size"),
                                 sweep.inputs.get("batch_size"), chosen.drop_last)
                 for point in sweep.points]
    # a sweep over steps/epochs is one composition read at every step count
    size = (f"compare: {len(schedules)} point{'s' * (len(schedules) != 1)} × "
            f"{len(names)} accountant{'s' * (len(names) != 1)}")
    with counted_progress(size, len(names) * len(schedules)) as advance, \
            points_map() as map_points:
        swept = epsilon_curves(names, schedules, target_delta, on_done=advance,
                               map_points=map_points, tolerance=pb_tolerance)
    for point, results in zip(sweep.points, swept):
        all_results.append(results)
        per_point.append(_records(point, results, context))
    several = len(sweep.samplings) > 1
    inputs = {**sweep.inputs, "adjacency": relation, "delta": target_delta, "accountants": names,
              "sweep": sweep.swept}
    inputs.update(unit=chosen.unit, pipeline=chosen.pipeline_record())
    if phase_schedule is None and not several:
        inputs.update(model_inputs(schedules[0], chosen.unit, chosen.pipeline_record()))
    elif several:
        inputs["model"] = "; ".join(f"{name}: see rows" for name in sweep.samplings)
    flat = [record for records in per_point for record in records]
    gated = [record for record in flat if record["accountant"] == names[0]]
    budget = check_budget(gate, names[0], [record["epsilon"] for record in gated], gated)
    if plot is not None:  # draw first: a failing plot leaves stdout empty (exit 2)
        plot_sweep(plot, sweep, per_point, target_delta, x_scale)
    steps_notes = epochs_notes(sweep) if phase_schedule is None else phase_notes
    if output_format == CompareFormat.csv:
        with output_may_close():
            write_csv(flat)
        check_failed_records(flat, names[0])
        enforce(budget)
    elif sweep.swept is None or output_format != CompareFormat.table:
        footnotes = list(steps_notes)
        if (sweep.swept is None and sweep.points
                and _is_abadi_example(sweep.points[0], target_delta, relation)):
            footnotes.append(_ABADI_FOOTNOTE)
        flat_results = [result for results in all_results for result in results]
        report = _single_report(flat, flat_results, inputs, footnotes, several)
        report.budget, report.answer = budget, names[0]
        emit(report, OutputFormat(output_format.value))
    else:
        model_line = ([model_footnote(inputs)] if not several else
                      [f"Each column holds for its sampler, with {relation} adjacency."])
        report = sweep_table(sweep, per_point, inputs, target_delta,
                             model_line + steps_notes + _nearest_lines(sweep, per_point))
        report.budget = budget
        with output_may_close():
            print_wide_table(report)
        check_failed_records(flat, names[0])
        enforce(budget)


__all__ = ["compare_command", "parse_sweep", "build_sweep", "CompareFormat", "MAX_SWEEP_POINTS"]
