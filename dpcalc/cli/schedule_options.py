"""Turn the sampling/steps/noise flags (or repeated --phase specs) into a Schedule: the one
run description every command reads."""
from __future__ import annotations

from dataclasses import dataclass, field

from dpcalc.pipelines.names import UNIT_WORDS, resolve_model
from dpcalc.models.samplers import (EPOCH_SAMPLINGS, FIXED, TRUNCATED_POISSON, model_label,
                                    parse_sampling)
from dpcalc.models.schedule import Phase, Schedule
from dpcalc.errors import DpcalcError
from dpcalc.params import (EpochSteps, batches_per_epoch, check_count, check_noise_multiplier,
                           epoch_steps, resolve_sampling_rate, resolve_steps)

PHASE_KEYS = ("q", "batch-size", "dataset-size", "sigma", "steps", "epochs", "sampling",
              "max-batch-size")
# The names other tools use for the same keys (Opacus, TF Privacy).
PHASE_KEY_ALIASES = {"noise-multiplier": "sigma", "sample-rate": "q", "sampling-probability": "q"}
PHASE_FORM = ("'key=value,…' with keys q or batch-size[,dataset-size], sigma, steps or epochs, "
              "and optionally sampling (and max-batch-size for truncated-poisson), e.g. "
              "'q=0.01,sigma=4,steps=5000'")
# Calibration (dpcalc sigma) finds σ itself: phases then omit it.
PLACEHOLDER_SIGMA = 1.0


@dataclass
class ScheduleInputs:
    """The validated schedule and what to echo back to the user."""

    schedule: Schedule
    inputs: dict
    dataset_size: int | None
    notes: list[str] = field(default_factory=list)  # e.g. how steps came from epochs


def steps_echo(derived: EpochSteps) -> dict:
    """The JSON record of steps derived from epochs: the exact count, the rounding and what
    Opacus's int(epochs/q) would give."""
    return {"epochs": derived.epochs, "exact": derived.exact, "steps": derived.steps,
            "rounding": "up (safe side: more steps, larger ε)",
            "opacus_steps": derived.opacus_steps, "note": derived.note}


def loader_batches(sampling: str, sampling_rate, batch, dataset, drop_last: bool = False):
    """(b, how b was counted) for an epoch sampler — a data loader runs all b batches of an
    epoch — or (None, "") for the samplers that draw every step afresh."""
    if sampling not in EPOCH_SAMPLINGS:
        return None, ""
    count = batches_per_epoch(sampling_rate, batch, dataset, drop_last)
    if batch is None or dataset is None:
        rule = "⌈1/q⌉"
    elif drop_last:
        rule = "⌊N/B⌋, the partial batch dropped"
    else:
        rule = "⌈N/B⌉" + (", the last one partial" if dataset % batch else "")
    return count, rule


def _steps(steps, epochs, sampling_rate, batch, dataset, steps_flag="--steps",
           epochs_flag="--epochs", sampling: str = "poisson",
           drop_last: bool = False) -> tuple[int, EpochSteps | None]:
    """Steps, and their derivation when they came from epochs (an epoch sampler's epoch is
    its b batches: loader_batches)."""
    if steps is None and epochs is not None:
        count, rule = loader_batches(sampling, sampling_rate, batch, dataset, drop_last)
        derived = epoch_steps(epochs, sampling_rate, batch, dataset, epochs_flag, count, rule)
        return derived.steps, derived
    return resolve_steps(steps, epochs, sampling_rate, batch, dataset, steps_flag=steps_flag,
                         epochs_flag=epochs_flag), None


def _phase_fields(spec: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    items = [item for item in str(spec).split(",") if item.strip()]
    if not items:
        raise DpcalcError(f"--phase takes {PHASE_FORM}; got {spec!r}")
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().replace("_", "-")
        key = PHASE_KEY_ALIASES.get(key, key)
        if not sep or key not in PHASE_KEYS or not value.strip():
            raise DpcalcError(f"--phase takes {PHASE_FORM}; got {spec!r}")
        if key in fields:
            raise DpcalcError(f"--phase gives {key} twice; got {spec!r}")
        fields[key] = value.strip()
    return fields


def _phase_from_spec(spec: str, dataset_size: int | None, default_sampling: str,
                     adjacency: str, with_sigma: bool,
                     max_batch_size: int | None = None,
                     drop_last: bool = False) -> tuple[Phase, dict]:
    """'q=0.01,sigma=4,steps=5000' (or batch-size=…,dataset-size=…, epochs=…) → Phase."""
    fields = _phase_fields(spec)
    if "q" not in fields and "batch-size" not in fields:
        raise DpcalcError(f"--phase needs q=… or batch-size=…; got {spec!r} ({PHASE_FORM})")
    sampling = parse_sampling(fields.get("sampling", default_sampling), "--phase sampling")
    truncated = sampling == TRUNCATED_POISSON
    batch_text = fields.get("batch-size")
    dataset_text = fields.get("dataset-size",
                              dataset_size if batch_text is not None or truncated else None)
    if batch_text is not None and dataset_text is None:
        raise DpcalcError(f"--phase with batch-size needs dataset-size=… (or --dataset-size); "
                          f"got {spec!r}")
    sampling_rate = resolve_sampling_rate(fields.get("q"), batch_text,
                                          dataset_text if batch_text is not None else None,
                                          flags=("--phase q", "--phase batch-size",
                                                 "--phase dataset-size"))
    batch = None if batch_text is None else check_count(batch_text, "--phase batch-size")
    dataset = (None if dataset_text is None or (batch_text is None and not truncated)
               else check_count(dataset_text, "--phase dataset-size"))
    cap_text = fields.get("max-batch-size", max_batch_size if truncated else None)
    if cap_text is not None and not truncated:
        raise DpcalcError(f"--phase max-batch-size is for sampling=truncated-poisson only; "
                          f"got {spec!r}")
    cap = cap_text  # checked against N by Phase
    if with_sigma:
        if "sigma" not in fields:
            raise DpcalcError(f"--phase needs sigma=…; got {spec!r} ({PHASE_FORM})")
        sigma = check_noise_multiplier(fields["sigma"], "--phase sigma")
    else:
        if "sigma" in fields:
            raise DpcalcError(f"--phase must not give sigma here: it is what `dpcalc sigma` "
                              f"calibrates (one σ for every phase); got {spec!r}")
        sigma = PLACEHOLDER_SIGMA
    steps, derived = _steps(fields.get("steps"), fields.get("epochs"), sampling_rate, batch,
                            dataset, steps_flag="--phase steps", epochs_flag="--phase epochs",
                            sampling=sampling, drop_last=drop_last)
    phase = Phase(sampling_rate, sigma, steps, sampling, adjacency, batch, dataset, cap,
                  drop_last)
    echo = {"q": sampling_rate, "batch_size": batch, "dataset_size": dataset,
            "sigma": sigma if with_sigma else None, "steps": steps, "sampling": sampling}
    if cap is not None:
        echo["max_batch_size"] = phase.max_batch_size
    if derived is not None:
        echo["steps_from_epochs"] = steps_echo(derived)
    return phase, echo


def model_inputs(schedule: Schedule, unit: str = "example", pipeline: dict | None = None) -> dict:
    """The model echoed in every output: sampling (one name, or a list per phase),
    adjacency, drop_last, the words for them, the unit protected and the pipeline named
    (its record, or None)."""
    samplings = [phase.sampling for phase in schedule.phases]
    sampling = samplings[0] if len(set(samplings)) == 1 else samplings
    return {"sampling": sampling, "adjacency": schedule.adjacency,
            "drop_last": any(phase.drop_last for phase in schedule.phases),
            "model": "; ".join(dict.fromkeys(phase.model for phase in schedule.phases)),
            "unit": unit, "pipeline": pipeline}


def build_schedule(q, batch_size, dataset_size, sigma, steps, epochs, phases: list[str] | None,
                   sampling: str | None = None, adjacency: str | None = None,
                   with_sigma: bool = True, max_batch_size=None, pipeline: str | None = None,
                   unit: str | None = None, drop_last: bool = False) -> ScheduleInputs:
    """Validate the flags of one run (or of its phases) into a Schedule. ``with_sigma``
    False (calibration): no σ is given; the schedule carries a placeholder σ.
    ``max_batch_size`` (M) is for truncated-poisson runs, which also need N. ``pipeline``
    (pipelines/names.py) sets the sampler, the default adjacency, unit and drop_last;
    sampling/adjacency/unit None: not given (the pipeline's, else poisson, add-remove,
    example)."""
    chosen = resolve_model(pipeline, sampling, adjacency, unit, drop_last)
    sampling, adjacency, drop_last = chosen.sampling, chosen.adjacency, chosen.drop_last
    described = {"unit": chosen.unit, "pipeline": chosen.pipeline_record()}
    cap = max_batch_size  # checked against N by Phase
    truncated = sampling == TRUNCATED_POISSON
    if phases:
        if any(value is not None for value in (q, batch_size, sigma, steps, epochs)):
            raise DpcalcError("give either --phase (repeatable) or --q/--batch-size/--sigma/"
                              "--steps/--epochs, not both")
        dataset = None if dataset_size is None else check_count(dataset_size, "--dataset-size")
        parsed = [_phase_from_spec(spec, dataset, sampling, adjacency, with_sigma, cap, drop_last)
                  for spec in phases]
        schedule = Schedule(tuple(phase for phase, _ in parsed))
        if cap is not None and TRUNCATED_POISSON not in schedule.samplings:
            raise DpcalcError("--max-batch-size is for --sampling truncated-poisson only; no "
                              "phase uses it")
        inputs = {"phases": [echo for _, echo in parsed], "steps": schedule.total_steps,
                  **model_inputs(schedule, **described)}
        notes = [f"phase {index}: {echo['steps_from_epochs']['note']}"
                 for index, (_, echo) in enumerate(parsed, start=1) if "steps_from_epochs" in echo]
        return ScheduleInputs(schedule, inputs, dataset, notes)
    if cap is not None and not truncated:
        raise DpcalcError(f"--max-batch-size is for --sampling truncated-poisson only; got it "
                          f"with --sampling {sampling}")
    # truncated Poisson takes N with --q too (the cut depends on it)
    alone = truncated and q is not None and batch_size is None
    sampling_rate = resolve_sampling_rate(q, batch_size, None if alone else dataset_size)
    batch = None if batch_size is None else check_count(batch_size, "--batch-size")
    dataset = None if dataset_size is None else check_count(dataset_size, "--dataset-size")
    if with_sigma:
        if sigma is None:
            raise DpcalcError("give --sigma (noise multiplier, > 0)")
        noise = check_noise_multiplier(sigma)
    else:
        noise = PLACEHOLDER_SIGMA
    step_count, derived = _steps(steps, epochs, sampling_rate, batch, None if alone else dataset,
                                 sampling=sampling, drop_last=drop_last)
    phase = Phase(sampling_rate, noise, step_count, sampling, adjacency, batch, dataset, cap,
                  drop_last)
    schedule = Schedule((phase,))
    inputs = {"q": sampling_rate, "batch_size": batch, "dataset_size": dataset,
              "sigma": noise if with_sigma else None, "steps": step_count,
              **({"max_batch_size": phase.max_batch_size} if truncated else {}),
              **model_inputs(schedule, **described)}
    if derived is None:
        return ScheduleInputs(schedule, inputs, dataset)
    inputs.update(epochs=derived.epochs, steps_from_epochs=steps_echo(derived))
    return ScheduleInputs(schedule, inputs, dataset, [derived.note])


def model_footnote(inputs: dict) -> str:
    """The footer line that names the model every number holds for, the unit protected
    (where it is not one training example) and the pipeline named (a second line)."""
    unit = inputs.get("unit") or "example"
    protected = "" if unit == "example" else f"; unit of privacy: {UNIT_WORDS.get(unit, unit)}"
    line = (f"Model: {inputs['model']}{protected}. Every certified number holds for this model "
            "only.")
    pipeline = inputs.get("pipeline")
    if pipeline:
        line += (f"\nPipeline: {pipeline['name']} — {pipeline['what']} → --sampling "
                 f"{pipeline['sampling']}{' --drop-last' if pipeline['drop_last'] else ''} "
                 f"--adjacency {pipeline['adjacency']} --unit {pipeline['unit']}: "
                 f"{pipeline['why']}")
        if pipeline.get("adjacency_note"):
            line += f"; {pipeline['adjacency_note']}"
    return line


__all__ = ["ScheduleInputs", "build_schedule", "model_footnote", "model_inputs", "PHASE_KEYS",
           "FIXED", "model_label"]
