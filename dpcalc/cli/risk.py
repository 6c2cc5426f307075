"""`dpcalc risk`: what the privacy of a DP-SGD run means for an attacker.

From pb's composed privacy loss distributions (both directions, certified upper and lower):
the best membership-inference test's TPR at chosen FPRs, the membership advantage, the
Bayes-optimal posterior success at a prior, reconstruction success for a baseline κ and
the certified Gaussian-DP μ. Each figure: the safe value (an upper bound on attack
success) and a certified lower bound beside it. The maths: dpcalc/risk/.
"""
from __future__ import annotations

from typing import Optional

import typer

from dpcalc.cli import options as opt
from dpcalc.cli.run_options import RUN, RunFlags, run_options
from dpcalc.cli.progress import run_size, waiting
from dpcalc.cli.output.records import INPUT_LABELS
from dpcalc.cli.output.render import (Column, OutputFormat, Report, emit, plain_upper, show_lower,
                                      show_upper)
from dpcalc.cli.schedule_options import model_footnote
from dpcalc.errors import DpcalcError
from dpcalc.params import check_delta, check_nonnegative, check_range

FPR = typer.Option("1e-3,1e-2,0.1", "--fpr", metavar="LIST",
                   help="False-positive rates of the membership test, comma-separated, each in "
                        "[1e-12, 1).")
PRIOR = typer.Option("0.5", "--prior", metavar="FLOAT",
                     help="Prior probability in (0, 1) of the world with the record, for the "
                          "posterior success of the Bayes-optimal guess.")
BASELINE = typer.Option(None, "--baseline", metavar="FLOAT",
                        help="Reconstruction: the success probability κ in [1e-12, 1) of the best "
                             "guess without the record (e.g. 1/#candidates); adds the bound of "
                             "Hayes, Mahloujifar & Balle 2023.")
RISK_TOLERANCE = typer.Option("0.01", "--tolerance", metavar="FLOAT",
                              help="Refine the grid until (upper − lower) ≤ tolerance·upper for "
                                   "each TPR and the advantage.")
PLOT = typer.Option(None, "--plot", metavar="FILE",
                    help="Draw the trade-off curve (FPR vs TPR) with the certified band to FILE "
                         "(.png or .svg; needs matplotlib: pip install 'dpcalc-privacy\\[plot]').")
LOG_AXES = typer.Option(False, "--log-axes", help="--plot: logarithmic FPR and TPR axes.")
CLAIM_EPSILON = typer.Option(None, "--epsilon", "-e", metavar="FLOAT",
                             help="An (ε, δ) claim instead of a run (e.g. a paper's): the bounds "
                                  "every (ε, δ)-DP mechanism meets. With --delta; no run flags.")
CLAIM_DELTA = typer.Option(None, *opt.DELTA_NAMES, metavar="FLOAT",
                           help="The δ of an --epsilon claim, in (0, 1). Default 1e-5.")

CERTIFIED_UPPER = "certified upper bound"
MEASURE_LABELS = {
    "tpr": "TPR at FPR",
    "advantage": "advantage (TPR − FPR)",
    "posterior_success": "posterior success at prior",
    "reconstruction": "reconstruction at baseline κ",
    "gdp_mu": "Gaussian-DP μ",
}


def parse_fprs(text: str) -> list[float]:
    """'1e-3,1e-2,0.1' → [0.001, 0.01, 0.1] (validated, de-duplicated, sorted)."""
    from dpcalc.risk.tradeoff import check_probability

    parts = [part.strip() for part in str(text).split(",") if part.strip()]
    if not parts:
        raise DpcalcError(f"--fpr takes a comma-separated list of rates in [1e-12, 1); got {text!r}")
    if len(parts) > 50:
        raise DpcalcError(f"--fpr takes at most 50 rates; got {len(parts)}")
    return sorted({check_probability(part, "--fpr") for part in parts})


def _record(measure: str, at, upper: float, lower, baseline, notes=()) -> dict:
    return {"accountant": "pb", "measure": measure, "at": at, "value": upper, "upper": upper,
            "lower": lower, "no_leak": baseline, "certified": True, "kind": CERTIFIED_UPPER,
            "notes": list(notes)}


def risk_records(bounds) -> list[dict]:
    """One JSON record per figure; "value" is the safe one (= "upper"). What the bounds are
    built from, when not one pair per step (epoch samplers), is a note of every record."""
    shared = list(bounds.details.get("sources", ()))
    records = [_record("tpr", f.at, f.upper, f.lower, f.at, shared) for f in bounds.tpr]
    records.append(_record("advantage", None, bounds.advantage.upper, bounds.advantage.lower, 0.0,
                           shared))
    prior = bounds.prior
    records.append(_record("posterior_success", prior, bounds.posterior.upper,
                           bounds.posterior.lower, max(prior, 1.0 - prior), shared))
    if bounds.reconstruction is not None:
        figure = bounds.reconstruction
        records.append(_record("reconstruction", figure.at, figure.upper, figure.lower, figure.at,
                               ["the lower bound is on the bound B_κ (its tightness), not on an "
                                "attack", *shared]))
    gdp = bounds.gdp
    low, high = gdp.fpr_range
    # the ends rounded inward (low up, high down): the range shown is within the certified one
    records.append({**_record("gdp_mu", None, gdp.upper, gdp.lower, 0.0,
                              [f"certified: TPR ≤ Φ(Φ⁻¹(FPR) + μ) for every FPR in "
                               f"[{show_upper(low, 3)}, {show_lower(high, 12)}]; the lower "
                               "bound: no smaller μ holds there",
                               *shared]),
                    "fpr_range": [low, high]})
    return records


def nearest_risk(schedule, compute):
    """For a model without a certificate whose nearest model has one (pb's not-applicable
    rule): (the not-applicable reason, the nearest schedule, ``compute(nearest)``); else None
    (``compute`` is then the caller's to run on ``schedule``)."""
    from dpcalc.accountants.epoch_samplers import epoch_not_applicable, nearest_schedule
    from dpcalc.accountants.registry import get_accountant

    reason = get_accountant("pb").not_applicable(schedule)
    nearest = None if reason is None else nearest_schedule(schedule)
    if nearest is None:
        return None
    return (reason or epoch_not_applicable(schedule)), nearest, compute(nearest)


def not_applicable_records(records: list[dict], reason: str, nearest) -> list[dict]:
    """The nearest model's risk records turned into not-applicable rows: no value, kind "not
    applicable", "certified" false; the nearest model's figures under "nearest_model" and in
    a note (upper rounded up, lower down)."""
    from dpcalc.accountants.result import interval_text
    from dpcalc.models.samplers import NEAREST_WHY

    why = (f"nearest model with a certificate: {nearest.adjacency} adjacency (figures in each "
           f"row's note and under nearest_model) — {NEAREST_WHY}")
    rows = []
    for record in records:
        figure = {"adjacency": nearest.adjacency, "model": nearest.phases[0].model,
                  "upper": record["upper"], "lower": record["lower"]}
        rows.append({**record, "value": None, "upper": None, "lower": None, "certified": False,
                     "kind": "not applicable", "nearest_model": figure,
                     "notes": [reason, why, f"{_show_at(record['at'])} under "
                               f"{nearest.adjacency} (the nearest certified model): "
                               f"{interval_text(record['lower'], record['upper'])}".lstrip()]})
    return rows


def _show_at(value) -> str:
    return "" if value is None else f"{value:g}"


RISK_COLUMNS = [
    Column("measure", "measure", lambda value: MEASURE_LABELS.get(value, value), justify="left"),
    Column("at", "at", _show_at),
    Column("safe value", "upper", show_upper),
    Column("lower bound", "lower", show_lower),
    Column("no leak", "no_leak", _show_at),
]


def risk_footnotes(inputs: dict, records: list[dict]) -> list[str]:
    notes = [model_footnote(inputs),
             "safe value: a certified upper bound on the attack's success (rounded up); lower "
             "bound: certified too (rounded down); no leak: the same attack on a model that "
             "never saw the record.",
             "TPR at FPR: the best membership test, either way round (Dong, Roth, Su 2022 "
             "symmetric trade-off curve); advantage = max(TPR − FPR) = δ(0).",
             "posterior success: the Bayes-optimal guess of which dataset was used, with that "
             "prior on the dataset with the record."]
    if any(r["measure"] == "reconstruction" for r in records):
        notes.append("reconstruction: success of any reconstruction attack whose best guess "
                     "without the record succeeds with probability κ (Hayes, Mahloujifar, "
                     "Balle 2023); its lower bound is on the bound itself.")
    shared = [note for note in records[0]["notes"] if all(note in r["notes"] for r in records)]
    notes += [f"{MEASURE_LABELS[r['measure']]}: {note}" for r in records for note in r["notes"]
              if r["measure"] != "reconstruction" and note not in shared]
    return notes + shared


def draw_tradeoff(path: str, bounds, log_axes: bool, title: str) -> None:
    """The certified trade-off band on an FPR grid (computed here, drawn by plots.py)."""
    import numpy as np

    from dpcalc.risk.tradeoff import tpr_lower, tpr_upper
    from dpcalc.cli.output.plots import tradeoff_figure

    smallest = min(1e-4, min(f.at for f in bounds.tpr))
    fprs = (np.geomspace(smallest, 1.0, 121)[:-1] if log_axes
            else np.concatenate([np.geomspace(smallest, 0.01, 40)[:-1], np.linspace(0.01, 0.999, 80)]))
    tradeoff_figure(path, fprs, tpr_upper(bounds.run, fprs), tpr_lower(bounds.run, fprs),
                    [(f.at, f.upper) for f in bounds.tpr], log_axes, title)


@run_options
def risk_command(
    given: RunFlags = RUN,
    fpr: str = FPR,
    prior: str = PRIOR,
    baseline: Optional[str] = BASELINE,
    tolerance: str = RISK_TOLERANCE,
    plot: Optional[str] = PLOT,
    log_axes: bool = LOG_AXES,
    epsilon: Optional[str] = CLAIM_EPSILON,
    delta: Optional[str] = CLAIM_DELTA,
    output_format: OutputFormat = opt.FORMAT,
) -> None:
    """What the run's privacy means for an attacker: certified bounds on membership
    inference (TPR at FPR, advantage), the Bayes posterior, reconstruction and the
    Gaussian-DP μ, each with a certified lower bound beside it.

    Same inputs as `dpcalc epsilon`; every figure holds for the stated model (--sampling,
    --adjacency). Or an (ε, δ) claim alone (--epsilon, --delta): the bounds every
    (ε, δ)-DP mechanism meets.

    Example: dpcalc risk --q 0.01 --sigma 4 --steps 10000

    Example: dpcalc risk --epsilon 8 --delta 1e-5
    """
    from dpcalc.risk.bounds import risk_bounds

    fprs = parse_fprs(fpr)
    prior_value = check_range(prior, "--prior", 0.0, 1.0, what="probability")
    kappa = None if baseline is None else check_range(baseline, "--baseline", 1e-12, 1.0,
                                                      low_open=False, what="probability κ")
    if epsilon is not None:
        if plot is not None:
            raise DpcalcError("--plot draws a run's trade-off curve; with an --epsilon claim "
                              "give a run instead, or drop --plot")
        emit(claim_report(given, epsilon, delta, fprs, prior_value, kappa), output_format)
        return
    if delta is not None:
        raise DpcalcError("--delta goes with an --epsilon claim; a run's risk figures hold at "
                          "every δ (drop --delta, or give --epsilon for a claim)")
    run = given.schedule()
    if plot is not None:
        from dpcalc.cli.output.plots import check_plot_path

        check_plot_path(plot)
    tol = check_range(tolerance, "--tolerance", 0.0, 1.0)
    opt.warn_plot_only(plot, log_axes=log_axes)
    with waiting(f"risk: composing {run_size(run.schedule, ['pb'])}"):
        found = nearest_risk(run.schedule, lambda schedule: risk_bounds(
            schedule, fprs, prior_value, kappa, tolerance=tol))
        bounds = risk_bounds(run.schedule, fprs, prior_value, kappa,
                             tolerance=tol) if found is None else found[2]
    records = risk_records(bounds)
    if found is not None:
        records = not_applicable_records(records, found[0], found[1])
        if plot is not None:
            from dpcalc.cli.output.render import warn

            warn(f"--plot {plot} not drawn: this model has no certified trade-off curve")
            plot = None
    inputs = {**run.inputs, "fpr": fprs, "prior": prior_value, "baseline": kappa,
              "grid_step": bounds.details["grid_step"]}
    columns = RISK_COLUMNS
    if found is not None:
        columns = RISK_COLUMNS + [Column("kind", "kind", justify="left")]
    report = Report(command="risk", title="What the privacy of this run means for an attacker",
                    inputs=inputs, results=records, columns=columns,
                    plain_columns=[Column("safe value", "upper", plain_upper)],
                    footnotes=risk_footnotes(inputs, records),
                    input_labels={**INPUT_LABELS, "prior": None, "baseline": None,
                                  "grid_step": None})
    if plot is not None:
        draw_tradeoff(plot, bounds, log_axes, plot_title(run))
    emit(report, output_format)


PLOT_DELTA = 1e-5


def plot_title(run) -> str:
    """The trade-off figure's title: the run (σ, q, T), its certified ε at δ = 1e-5 (pb,
    rounded up) and its model, so a figure read apart from its command still says what it
    shows."""
    import textwrap

    from dpcalc.accountants.registry import get_accountant
    from dpcalc.cli.output.numbers import show_upper

    inputs = run.inputs
    if "phases" in inputs:
        what = f"{len(inputs['phases'])} phases, T = {inputs['steps']}"
    else:
        what = f"σ = {inputs['sigma']:g}, q = {inputs['q']:.4g}, T = {inputs['steps']}"
    epsilon = get_accountant("pb").epsilon(run.schedule, PLOT_DELTA).epsilon
    bound = "" if epsilon is None else f"; ε ≤ {show_upper(epsilon)} at δ = {PLOT_DELTA:g}"
    return "\n".join([f"Trade-off curve: {what}{bound}",
                      *textwrap.wrap(inputs["model"], 70)])


def claim_records(figures) -> list[dict]:
    """The JSON records of an (ε, δ) claim's figures: the bound, attained by some (ε, δ)-DP
    mechanism, so no lower bound beside it (risk/claim.py)."""
    return [{"accountant": "claim", "measure": figure.name, "at": figure.at,
             "value": figure.upper, "upper": figure.upper, "lower": None,
             "no_leak": figure.no_leak, "certified": True, "kind": "bound for the claim",
             "notes": []} for figure in figures]


def claim_report(given: RunFlags, epsilon, delta, fprs, prior: float, kappa) -> Report:
    """The risk table of an (ε, δ) claim; refused together with run flags."""
    from dpcalc.risk.claim import claim_figures

    if given != RUN:
        raise DpcalcError("give either a run (--q/--batch-size, --sigma, --steps/--epochs, …) "
                          "or an (ε, δ) claim (--epsilon, --delta), not both")
    delta = "1e-5" if delta is None else delta
    figures = claim_figures(epsilon, delta, fprs, prior, kappa)
    epsilon_value = check_nonnegative(epsilon, "--epsilon")
    delta_value = check_delta(delta)
    inputs = {"claim": {"epsilon": epsilon_value, "delta": delta_value}, "fpr": fprs,
              "prior": prior, "baseline": kappa}
    notes = [f"Bounds for the claim (ε, δ) = ({epsilon_value:g}, {delta_value:g}): they hold "
             "for every (ε, δ)-DP mechanism, and some mechanism reaches each of them (Kairouz, "
             "Oh, Viswanath 2015). A run's own risk is usually far lower: give its q (or B and "
             "N), σ and steps for certified figures of the run.",
             "safe value: the largest success any (ε, δ)-DP mechanism allows (rounded up); no "
             "leak: the same attack on a model that never saw the record.",
             "No Gaussian-DP μ follows from an (ε, δ) claim with δ > 0: it allows an outright "
             "failure with probability δ."]
    columns = [column for column in RISK_COLUMNS if column.key != "lower"]
    return Report(command="risk", title="What an (ε, δ) claim means for an attacker",
                  inputs=inputs, results=claim_records(figures), columns=columns,
                  plain_columns=[Column("safe value", "upper", plain_upper)], footnotes=notes,
                  input_labels={"claim": None, "fpr": None, "prior": None, "baseline": None})


__all__ = ["risk_command", "risk_records", "parse_fprs", "claim_records"]
