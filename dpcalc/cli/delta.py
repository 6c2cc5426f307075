"""`dpcalc delta`: δ for a given ε, per accountant; pb gives a certified upper bound with a
certified lower bound beside it."""
from __future__ import annotations

from typing import List, Optional

import typer


from dpcalc.cli import options as opt
from dpcalc.cli.run_options import RUN, RunFlags, run_options
from dpcalc.cli.progress import run_size, waiting
from dpcalc.cli.output.records import APPROXIMATION, INPUT_LABELS, KIND_COLUMN, kind_of, row_kind
from dpcalc.cli.output.render import (Column, OutputFormat, Report, emit, plain_upper, show_lower,
                                      show_upper)
from dpcalc.cli.schedule_options import model_footnote
from dpcalc.errors import DpcalcError, InvalidResult
from dpcalc.params import check_nonnegative

EPSILON = typer.Option(None, "--epsilon", "-e", metavar="FLOAT", help="ε ≥ 0 (required).")


def delta_record(name: str, schedule, epsilon: float) -> dict:
    """{"accountant", "delta", "delta_upper", "delta_lower", "certified", "kind", "notes"}:
    "delta" is the value to report (pb: its certified upper bound). pb on the epoch samplers
    adds "upper_source" and "delta_poisson_not_applicable" (the Poisson δ, for comparison).
    A row without a value has "certified" false and kind "not applicable" (pb: with
    "nearest_model", the δ bounds of the nearest model that has a certificate) or
    "error" (it failed inside)."""
    from dpcalc.accountants.evaluate import make_accountant

    accountant = make_accountant(name)
    record = {"accountant": name, "delta": None, "delta_upper": None, "delta_lower": None,
              "certified": accountant.certified,
              "kind": kind_of(accountant.certified), "notes": []}
    reason = accountant.not_applicable(schedule)
    if reason is not None:
        record["notes"].append(reason)
        nearest = accountant.nearest_delta(schedule, epsilon) if name == "pb" else None
        if nearest is not None:
            record["notes"].append(nearest.pop("note"))
            record["nearest_model"] = nearest
        return _settle(record)
    try:
        if name == "pb":  # pair models and epoch samplers alike (pb.delta_bounds)
            upper, lower, notes, details = accountant.delta_bounds(schedule, epsilon)
            record.update(delta=upper, delta_upper=upper, delta_lower=lower, **details)
            record["notes"].extend(notes)
        else:
            value = accountant.delta(schedule, epsilon)
            record.update(delta=value, delta_upper=value if accountant.certified else None)
    except DpcalcError as error:
        if not isinstance(error, InvalidResult):  # bad input: the command's error (exit 2)
            raise
        _failed(record, name, error)  # a NaN computed inside: a failure, as below
        return record
    except Exception as error:  # failed inside: a row of kind "error", never a number
        _failed(record, name, error)
        return record
    return _settle(record)


def _settle(record: dict) -> dict:
    """"certified" and "kind" from whether the row holds a value (records.row_kind)."""
    record["kind"] = row_kind(record["certified"], record["delta"], record["notes"])
    record["certified"] = record["certified"] and record["delta"] is not None
    return record


def _failed(record: dict, name: str, error: Exception) -> None:
    from dpcalc.accountants.evaluate import failed_result

    record.update(delta=None, delta_upper=None, delta_lower=None, certified=False,
                  kind=kind_of(False, failed=True))
    record["notes"].extend(failed_result(name, error).notes)


DELTA_COLUMNS = [
    Column("accountant", "accountant", justify="left"),
    Column("δ", "delta", show_upper),
    Column("lower bound", "delta_lower", show_lower),
    KIND_COLUMN,
]


@run_options
def delta_command(
    epsilon: Optional[str] = EPSILON,
    given: RunFlags = RUN,
    accountant: Optional[List[str]] = opt.ACCOUNTANT,
    output_format: OutputFormat = opt.FORMAT,
) -> None:
    """δ spent by DP-SGD at a given ε, for the sampler and adjacency given.

    pb (default) reports a certified upper bound on δ with a certified lower bound beside
    it; --accountant all adds every accountant that gives δ.
    """
    if epsilon is None:
        raise DpcalcError("give --epsilon (ε ≥ 0 at which to report δ)")
    target = check_nonnegative(epsilon, "--epsilon")
    run = given.schedule()
    names = opt.accountants(accountant)
    with waiting(f"delta: composing {run_size(run.schedule, names)}"):
        records = [delta_record(name, run.schedule, target) for name in names]
    inputs = {**run.inputs, "epsilon": target, "accountants": names}
    footnotes = [model_footnote(inputs),
                 "δ is an upper bound (rounded up) for certified accountants; pb's lower bound is "
                 "certified too (rounded down): the true δ(ε) lies between them."]
    if any(record["kind"] == APPROXIMATION for record in records):
        footnotes.append("An approximation is not a bound: do not report it as a guarantee.")
    footnotes += [f"{r['accountant']}: {note}" for r in records for note in r["notes"]]
    if run.dataset_size is not None:
        values = [r["delta"] for r in records if r["delta"] is not None]
        if values and max(values) >= 1.0 / run.dataset_size:
            from dpcalc.cli.output.render import warn

            warn(f"δ ≥ 1/N = {1.0 / run.dataset_size:.3g} at ε = {target:g}: this ε protects "
                 "little; δ should be well below 1/N")
    emit(Report(command="delta", title="DP-SGD δ at a given ε", inputs=inputs, results=records,
                columns=DELTA_COLUMNS, plain_columns=[Column("δ", "delta", plain_upper)],
                footnotes=footnotes, input_labels=INPUT_LABELS), output_format)


__all__ = ["delta_command", "delta_record"]
