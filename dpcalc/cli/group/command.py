"""`dpcalc group`: DP-SGD privacy for k protected records (group privacy).

For each k: the certified pb bounds of the model's worst-case mixture pair (Poisson by
default; fixed-size batches with --sampling fixed), next to the seed's RDP
over-approximation, the generic (ε, δ) group-privacy conversion of the k = 1 guarantee
and the RDP group property; seed 000's own pair on request (--method seed, labelled as
the seed's model). --target-epsilon gives the σ per k instead.
"""
from __future__ import annotations

from enum import Enum
from functools import partial
from pathlib import Path
from typing import List, Optional

import typer

from dpcalc.models.samplers import (ADD_REMOVE, REPLACE_ONE, SIMPLE_SAMPLINGS, model_label,
                                    parse_adjacency, parse_sampling)
from dpcalc.cli import options as opt
from dpcalc.cli.output.budget import check_budget, parse_max_epsilon
from dpcalc.cli.parallel import points_map
from dpcalc.cli.progress import counted_progress
from dpcalc.cli.output.records import APPROXIMATION, CERTIFIED, INPUT_LABELS, epsilon_record
from dpcalc.cli.output.render import (ERROR, Column, OutputFormat, Report, emit, plain_upper,
                                      show_lower, show_upper, warn)
from dpcalc.errors import DpcalcError
from dpcalc.params import (check_count, check_delta, check_noise_multiplier, check_positive,
                           epoch_steps, resolve_steps)

# Mirror dpcalc.group.pairs (imported lazily: it pulls in the pb engine).
_METHODS = ("pb", "seed", "rdp-overapprox", "group-conversion", "rdp-group")
_DEFAULT_METHODS = ("pb", "rdp-overapprox", "group-conversion", "rdp-group")
# pb composes one mixture per k: beyond this many k·steps the command would take minutes.
_PB_WORK_LIMIT = 2e7
# A k sweep computes at most this many slow points (k values × pb/seed; ~0.5-3 s each on
# this 2-core machine, ~1 minute in all) unless --max-sweep-points raises it (issue 30 §3:
# --k 1:64 at 1000 steps ran ~90 s with no stated size).
_SLOW_METHODS = ("pb", "seed")
_SLOW_K_POINTS = 32
_HYPERGEOMETRIC_NOTE = ("--sampling hypergeometric now means fixed-size batches with the "
                        "certified analysis (a protected record displaces another: shift 2j); "
                        "the shift-j pair (an absent record leaves its slot empty) is --method seed")
_MAX_K = 64
NOT_APPLICABLE = "not applicable"
NO_CERTIFICATE = "no certificate"


class PlotKind(str, Enum):
    compositions = "compositions"
    k = "k"
    distributions = "distributions"
    all = "all"


K_OPTION = typer.Option(None, "--k", metavar="K|A:B|A,B,…",
                        help=f"Protected records k: a number, a range such as 1:8 or a list such as "
                             f"1,2,4 (each from 1 to {_MAX_K}, at most N).")
BATCH_SIZE = typer.Option(None, "--batch-size", metavar="INT",
                          help="Batch size B, drawn without replacement from N each step "
                               "(--sampling poisson: expected size, q = B/N).")
SAMPLING = typer.Option("poisson", "--sampling", metavar="NAME",
                        help="poisson: each record joins a batch with probability q = B/N (J ~ "
                             "Binomial(k, q)); fixed: B of N without replacement each step, where a "
                             "protected record displaces another (shift 2j, J ~ Hypergeom).")
METHOD = typer.Option(None, "--method", "-m", metavar="NAME",
                      help=f"One of {', '.join(_METHODS)} or all (repeatable or comma-separated). "
                           f"Default: {', '.join(_DEFAULT_METHODS)}. seed: the shift-j pair (an absent record "
                           "leaves its slot empty), not a certificate for fixed-size batches.")
TARGET_EPSILON = typer.Option(None, *opt.TARGET_EPSILON_NAMES, "-e", metavar="FLOAT",
                              help="Instead of --sigma: the smallest σ whose certified pb ε for k "
                                   "records is ≤ this (one σ per k).")
MAX_SWEEP_POINTS = typer.Option(
    None, "--max-sweep-points", metavar="INT",
    help=f"The most k values × slow methods ({', '.join(_SLOW_METHODS)}) a run may compute "
         f"(default {_SLOW_K_POINTS}, each ~0.5-3 s); more is refused (exit 2) unless this "
         "raises the limit.")
PLOT = typer.Option(None, "--plot", metavar="FILE",
                    help="Also draw a figure (.png or .svg; needs matplotlib, pip install "
                         "'dpcalc-privacy\\[plot]'); which one: --plot-kind.")
PLOT_KIND = typer.Option(None, "--plot-kind", case_sensitive=False,
                         help="With --plot (default compositions): compositions: ε over 2^0…2^16 "
                              "steps per k and method; k: pb ε over k "
                              "for σ, 2σ, 4σ at --steps; distributions: the worst-case densities A "
                              "and B for the largest k; all: the three, as FILE's stem + "
                              "-compositions, -k, -distributions.")


# --------------------------------------------------------------------------- inputs
def parse_k_values(text: str | None) -> list[int]:
    """'4', '1:8' or '1,2,4' (parts may mix) → sorted distinct k values."""
    if text is None or not str(text).strip():
        raise DpcalcError("give --k (protected records: a number, a range 1:8 or a list 1,2,4)")
    values: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        first, sep, last = part.partition(":")
        if sep:
            low = check_count(first, "--k (range start)", maximum=_MAX_K)
            high = check_count(last, "--k (range end)", maximum=_MAX_K)
            if high < low:
                raise DpcalcError(f"--k range must go up, like 1:8; got {part!r}")
            values.update(range(low, high + 1))
        else:
            values.add(check_count(part, "--k", maximum=_MAX_K))
    return sorted(values)


def _methods(requested: list[str] | None) -> list[str]:
    if not requested:
        return list(_DEFAULT_METHODS)
    names: list[str] = []
    for item in requested:
        for name in (part.strip() for part in item.split(",")):
            if not name:
                continue
            chosen = list(_METHODS) if name == "all" else [name]
            for each in chosen:
                if each not in _METHODS:
                    raise DpcalcError(f"--method must be one of {', '.join(_METHODS)}, all; "
                                      f"got {name!r}")
                if each not in names:
                    names.append(each)
    if not names:
        raise DpcalcError(f"--method must name one of {', '.join(_METHODS)}, all; got "
                          f"{', '.join(map(repr, requested))}")
    return names


def _plot_paths(plot: str, kind: PlotKind) -> dict[str, Path]:
    """{figure kind: path}; 'all' writes FILE's stem + '-<kind>' + suffix for each kind."""
    from importlib.util import find_spec

    from dpcalc.cli.output.plots import check_plot_path

    target = check_plot_path(plot)
    if find_spec("matplotlib") is None:  # fail before any computing
        raise DpcalcError("--plot needs matplotlib: pip install 'dpcalc-privacy[plot]'")
    if kind != PlotKind.all:
        return {kind.value: target}
    kinds = (PlotKind.compositions, PlotKind.k, PlotKind.distributions)
    paths = {each.value: target.with_name(f"{target.stem}-{each.value}{target.suffix}")
             for each in kinds}
    for each in paths.values():  # each file it will write, before any computing
        check_plot_path(str(each))
    return paths


# --------------------------------------------------------------------------- records
_SHORT_KIND = {CERTIFIED: "certified", APPROXIMATION: "approximation", NOT_APPLICABLE: "n/a",
               ERROR: ERROR,
               NO_CERTIFICATE: "none found", "seed model": "shift-j model (not for this run)"}


def group_record(k: int, result) -> dict:
    """{"k", "accountant", "epsilon", "epsilon_upper", "epsilon_lower", "certified", "kind",
    "order", "notes", "details"}."""
    record = {"k": k, **epsilon_record(result)}
    if result.accountant == "seed":
        record["kind"] = "seed model"
        record["applies"] = False
    if result.epsilon is None and not result.failed:
        found_none = any(note.startswith(NO_CERTIFICATE) for note in result.notes)
        record["kind"] = NO_CERTIFICATE if found_none else NOT_APPLICABLE
    return record


def sigma_record(calibration, target: float) -> dict:
    """{"k", "accountant", "sigma", "target_epsilon", "epsilon", "epsilon_upper",
    "epsilon_lower", "certified", "kind", "evaluations", "notes", "details"}."""
    record = {"k": calibration.k, **epsilon_record(calibration.result)}
    record.update(sigma=calibration.sigma, target_epsilon=target, evaluations=calibration.evaluations)
    return record


def _footnotes(records: list[dict], model: str, explain_pb: bool = True) -> list[str]:
    """The model, the bound explanation, then each method's notes once ('(k=…)' where they
    differ by k)."""
    lines = [f"Model: {model}. Every certified number holds for this model only."]
    if explain_pb and any(record["accountant"] == "pb" for record in records):
        lines.append("ε is a certified upper bound (rounded up); pb's lower bound is certified too "
                     "(rounded down).")
    seen: dict[tuple[str, str], list[int]] = {}
    for record in records:
        for note in record["notes"]:
            seen.setdefault((record["accountant"], note), []).append(record["k"])
    for (name, note), ks in seen.items():
        where = "" if len(ks) > 1 else f" (k={ks[0]})"
        lines.append(f"{name}{where}: {note}")
    return lines


_EPSILON_COLUMNS = [
    Column("k", "k"),
    Column("method", "accountant", justify="left"),
    Column("ε", "epsilon", show_upper),
    Column("lower bound", "epsilon_lower", show_lower),
    Column("kind", "kind", lambda value: _SHORT_KIND.get(value, str(value)), justify="left"),
]


def _sigma_columns() -> list[Column]:
    return [
        Column("k", "k"),
        Column("σ", "sigma", lambda value: show_upper(value, 5)),
        Column("ε at σ (pb)", "epsilon", show_upper),
        Column("lower bound", "epsilon_lower", show_lower),
    ]


def _sigma_report(setting, k_values: list[int], target: float, delta: float, tolerance: float,
                  inputs: dict) -> Report:
    """--target-epsilon: the calibrated σ per k (pb)."""
    from dpcalc.group import bounds as group_bounds

    records = []
    calibrate = partial(group_bounds.calibrate_group_sigma, target_epsilon=target, delta=delta,
                        tolerance=tolerance)
    with counted_progress(f"group: σ per k ({len(k_values)} values of k, {setting.steps:,} steps "
                          "each, pb)", len(k_values)) as advance, \
            points_map() as map_points:
        for found in map_points(calibrate, [setting.with_k(k) for k in k_values]):
            records.append(sigma_record(found, target))
            advance()
    footnotes = ["σ is rounded up (a larger σ is the safe side); ε is pb's certified upper "
                 "bound at that σ, ≤ the target (its lower bound is certified too)."]
    footnotes += _footnotes(records, setting.model, False)
    return Report(command="group", title="Noise multiplier protecting k records",
                  inputs={**inputs, "target_epsilon": target, "accountants": ["pb"]},
                  results=records, columns=_sigma_columns(),
                  plain_columns=[Column("σ", "sigma", plain_upper)], footnotes=footnotes,
                  input_labels=INPUT_LABELS)


def _epsilon_report(setting, k_values: list[int], delta: float, names: list[str],
                    tolerance: float, inputs: dict) -> Report:
    """ε per k and method."""
    from dpcalc.group import bounds as group_bounds

    size = (f"group: {len(k_values)} values of k × {len(names)} method"
            f"{'s' * (len(names) != 1)}, {setting.steps:,} steps")
    with counted_progress(size, len(k_values) * len(names)) as advance, \
            points_map() as map_points:
        results = group_bounds.group_epsilons(setting, k_values, delta, names, tolerance, advance,
                                              map_points)
    records = [group_record(k, result) for k, result in results]
    return Report(command="group", title="Privacy of k protected records",
                  inputs={**inputs, "accountants": names}, results=records,
                  columns=_EPSILON_COLUMNS, plain_columns=[Column("ε", "epsilon", plain_upper)],
                  footnotes=_footnotes(records, setting.model), input_labels=INPUT_LABELS)


def _check_sweep_work(k_values: list[int], names: list[str], limit_text,
                      calibrating: bool = False) -> None:
    """Refuse more than --max-sweep-points (default _SLOW_K_POINTS) k values × slow
    methods (--target-epsilon: one pb calibration per k), in one line naming the limit
    and the value that runs it."""
    limit = (_SLOW_K_POINTS if limit_text is None
             else check_count(limit_text, "--max-sweep-points", maximum=_MAX_K * len(_METHODS)))
    slow = ["pb calibrations"] if calibrating else [name for name in names if name in _SLOW_METHODS]
    work = len(k_values) * len(slow)
    if work > limit:
        other = "" if calibrating else f"--method without {'/'.join(slow)}, "
        raise DpcalcError(f"--k sweeps {len(k_values)} values with {', '.join(slow)}: {work} slow "
                          f"points (about 0.5-3 s each) exceed the limit --max-sweep-points "
                          f"{limit}; give fewer --k values, {other}or --max-sweep-points {work} "
                          "to run it")


# --------------------------------------------------------------------------- command
def group_command(
    k: Optional[str] = K_OPTION,
    batch_size: Optional[str] = BATCH_SIZE,
    dataset_size: Optional[str] = opt.DATASET_SIZE,
    sigma: Optional[str] = opt.SIGMA,
    steps: Optional[str] = opt.STEPS,
    epochs: Optional[str] = opt.EPOCHS,
    delta: str = opt.DELTA,
    sampling: str = SAMPLING,
    adjacency: str = opt.ADJACENCY,
    method: Optional[List[str]] = METHOD,
    target_epsilon: Optional[str] = TARGET_EPSILON,
    tolerance: str = opt.TOLERANCE,
    plot: Optional[str] = PLOT,
    plot_kind: Optional[PlotKind] = PLOT_KIND,
    max_epsilon: Optional[str] = opt.MAX_EPSILON,
    max_sweep_points: Optional[str] = MAX_SWEEP_POINTS,
    output_format: OutputFormat = opt.FORMAT,
) -> None:
    """ε for k protected records (group privacy) in DP-SGD with batches of B out of N.

    pb composes the model's worst-case pair and gives certified upper and lower bounds:
    Poisson sampling (default), N(0, σ²) vs Σ_j Binomial(k, q)_j·N(j, σ²); fixed-size
    batches (--sampling fixed), N(0, σ²) vs Σ_j Hypergeom_j·N(2j, σ²), since a protected
    record in the batch displaces another. Beside it: rdp-overapprox (a quick RDP
    over-approximation), group-conversion ((kε, k·e^((k−1)ε)·δ) from the k = 1 guarantee) and rdp-group
    (Mironov 2017 Prop. 2, k a power of two); seed (the shift-j pair, which assumes an absent record leaves
    its slot empty: not a certificate for fixed-size batches) on request. --plot FILE draws the figure
    chosen by --plot-kind; --plot-kind all writes three files.

    Example: dpcalc group --k 1:4 --batch-size 256 --dataset-size 60000 --sigma 1 --steps 1000

    Example: dpcalc group --k 2 --batch-size 256 --dataset-size 60000 --steps 1000
    --target-epsilon 3
    """
    from dpcalc.group import pairs as group

    if str(sampling).strip().lower() == "hypergeometric":
        warn(_HYPERGEOMETRIC_NOTE)
        sampling = "fixed"
    model_sampling = parse_sampling(sampling, allowed=SIMPLE_SAMPLINGS)
    relation = parse_adjacency(adjacency, allowed=(ADD_REMOVE, REPLACE_ONE))
    k_values = parse_k_values(k)
    if batch_size is None or dataset_size is None:
        raise DpcalcError("give --batch-size and --dataset-size (batches of B out of N records)")
    batch = check_count(batch_size, "--batch-size")
    dataset = check_count(dataset_size, "--dataset-size")
    if batch > dataset:
        raise DpcalcError(f"--batch-size must be <= --dataset-size ({dataset}); got {batch}")
    if k_values[-1] > dataset:
        raise DpcalcError(f"--k must be <= --dataset-size ({dataset}); got {k_values[-1]}")
    derived = None if epochs is None or steps is not None else epoch_steps(
        epochs, batch / dataset, batch, dataset)
    step_count = derived.steps if derived else resolve_steps(steps, epochs, batch / dataset,
                                                             batch, dataset)
    target_delta = check_delta(delta)
    pb_tolerance = check_positive(tolerance, "--tolerance")
    gate = parse_max_epsilon(max_epsilon)
    target = None if target_epsilon is None else check_positive(target_epsilon, "--target-epsilon")
    if (target is None) == (sigma is None):
        raise DpcalcError("give either --sigma (noise multiplier, > 0) or --target-epsilon")
    if target is not None and (method or plot is not None):
        raise DpcalcError("--target-epsilon calibrates pb only: drop --method and --plot")
    noise = 1.0 if sigma is None else check_noise_multiplier(sigma)
    names = _methods(method)
    if target is not None and step_count * max(len(k_values), 10) > _PB_WORK_LIMIT:
        raise DpcalcError(f"--target-epsilon runs pb about ten times per k; at {step_count} steps "
                          f"that exceeds the work limit (k values × steps × 10 ≤ "
                          f"{_PB_WORK_LIMIT:.0e}): give fewer --steps or --k values")
    if ({"pb", "seed"} & set(names) and len(k_values) > 1
            and len(k_values) * step_count > _PB_WORK_LIMIT):
        raise DpcalcError(f"--k with {len(k_values)} values at {step_count} steps exceeds pb's work "
                          f"limit (k values × steps ≤ {_PB_WORK_LIMIT:.0e}): give fewer --k values "
                          "or fewer --steps, or --method rdp-overapprox,group-conversion,rdp-group")
    _check_sweep_work(k_values, names, max_sweep_points, calibrating=target is not None)
    opt.warn_plot_only(plot, plot_kind=plot_kind)
    paths = _plot_paths(plot, plot_kind or PlotKind.compositions) if plot is not None else {}
    setting = group.GroupSetting(k_values[0], batch, dataset, noise, step_count, model_sampling,
                                 relation)
    opt.warn_large_delta(target_delta, dataset)
    inputs = {"k": k_values, "batch_size": batch, "dataset_size": dataset, "q": batch / dataset,
              "sigma": None if target is not None else noise, "steps": step_count,
              "delta": target_delta, "sampling": model_sampling, "adjacency": relation,
              "model": model_label(model_sampling, relation)}
    if derived is not None:
        from dpcalc.cli.schedule_options import steps_echo

        inputs.update(epochs=derived.epochs, steps_from_epochs=steps_echo(derived))
    if target is not None:
        report = _sigma_report(setting, k_values, target, target_delta, pb_tolerance, inputs)
        gated = "pb"
    else:
        report = _epsilon_report(setting, k_values, target_delta, names, pb_tolerance, inputs)
        gated = names[0]
    if derived is not None:
        report.footnotes.insert(1, derived.note)
    gated_records = [record for record in report.results if record["accountant"] == gated]
    report.budget = check_budget(gate, gated, [record["epsilon"] for record in gated_records],
                                 gated_records)
    if paths:  # draw first: a failing plot leaves stdout empty (exit 2)
        from dpcalc.cli.group.plots import draw

        table = {record["k"]: record["epsilon"] for record in report.results
                 if record["accountant"] == "pb" and record["epsilon"] is not None}
        draw(paths, setting, k_values, names, target_delta, table, pb_tolerance)
    emit(report, output_format)


__all__ = ["group_command", "parse_k_values"]
