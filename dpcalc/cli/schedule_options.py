"""Turn the sampling/steps/noise flags (or repeated --phase specs) into a Schedule: the one
run description every command reads."""
from __future__ import annotations

from dataclasses import dataclass, field

from dpcalc.pipelines.names import UNIT_WORDS, resolve_model
from dpcalc.models.samplers import (FIXED, TRUNCATED_POISSON, model_label)
from dpcalc.pipelines import schedule_file
from dpcalc.pipelines.schedule_file import _steps, loader_batches  # noqa: F401 (re-exported)
from dpcalc.models.schedule import Phase, Schedule
from dpcalc.errors import DpcalcError
from dpcalc.params import (EpochSteps, check_count, check_noise_multiplier,
                           resolve_sampling_rate)

PHASE_KEYS = schedule_file.PHASE_KEYS
PHASE_KEY_ALIASES = schedule_file.PHASE_KEY_ALIASES
PHASE_FORM = schedule_file.PHASE_FORM
PLACEHOLDER_SIGMA = schedule_file.PLACEHOLDER_SIGMA


@dataclass
class ScheduleInputs:
    """The validated schedule and what to echo back to the user."""

    schedule: Schedule
    inputs: dict
    dataset_size: int | None
    notes: list[str] = field(default_factory=list)  # e.g. how steps came from epochs
    scaled: bool = False  # calibration: every phase gives σ; a common multiplier is sought


def steps_echo(derived: EpochSteps) -> dict:
    """The JSON record of steps derived from epochs: the exact count, the rounding and what
    Opacus's int(epochs/q) would give."""
    return {"epochs": derived.epochs, "exact": derived.exact, "steps": derived.steps,
            "rounding": "up (safe side: more steps, larger ε)",
            "opacus_steps": derived.opacus_steps, "note": derived.note}


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
    phase, echo, derived = schedule_file.phase_from_fields(
        _phase_fields(spec), dataset_size, default_sampling, adjacency, with_sigma,
        max_batch_size, flag="--phase", spec=spec, drop_last=drop_last)
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
                   unit: str | None = None, drop_last: bool = False,
                   schedule_path: str | None = None) -> ScheduleInputs:
    """Validate the flags of one run (or of its phases: --phase specs, or the rows of the
    --schedule file) into a Schedule. ``with_sigma`` False (calibration): phases give σ
    on all of them (a common multiplier is calibrated: ``scaled``) or on none (one σ for
    every phase; the schedule carries a placeholder σ). ``max_batch_size`` (M) is for
    truncated-poisson runs, which also need N. ``pipeline`` (pipelines/names.py) sets the
    sampler, the default adjacency, unit and drop_last; sampling/adjacency/unit None: not
    given (the pipeline's, else poisson, add-remove, example)."""
    chosen = resolve_model(pipeline, sampling, adjacency, unit, drop_last)
    sampling, adjacency, drop_last = chosen.sampling, chosen.adjacency, chosen.drop_last
    described = {"unit": chosen.unit, "pipeline": chosen.pipeline_record()}
    cap = max_batch_size  # checked against N by Phase
    truncated = sampling == TRUNCATED_POISSON
    if schedule_path is not None and (phases or any(
            value is not None for value in (q, batch_size, sigma, steps, epochs))):
        raise DpcalcError("give either --schedule FILE, or --phase (repeatable), or "
                          "--q/--batch-size/--sigma/--steps/--epochs: one run description")
    if phases or schedule_path is not None:
        if any(value is not None for value in (q, batch_size, sigma, steps, epochs)):
            raise DpcalcError("give either --phase (repeatable) or --q/--batch-size/--sigma/"
                              "--steps/--epochs, not both")
        dataset = None if dataset_size is None else check_count(dataset_size, "--dataset-size")
        calibrating = None if not with_sigma else True
        if schedule_path is not None:
            schedule, echoes, derivations = schedule_file.schedule_from_file(
                schedule_path, dataset, sampling, adjacency, calibrating, cap, drop_last)
            parsed = list(zip(schedule.phases, echoes))
            for echo, derived in zip(echoes, derivations):
                if derived is not None:
                    echo["steps_from_epochs"] = steps_echo(derived)
        else:
            parsed = [_phase_from_spec(spec, dataset, sampling, adjacency, calibrating, cap,
                                       drop_last) for spec in phases]
            given = sum(echo["sigma"] is not None for _, echo in parsed)
            if calibrating is None and 0 < given < len(parsed):
                raise DpcalcError("give sigma=… in every --phase (a common multiplier of the "
                                  "phases' σ is calibrated) or in none (one σ for every phase)")
        schedule = Schedule(tuple(phase for phase, _ in parsed))
        if cap is not None and TRUNCATED_POISSON not in schedule.samplings:
            raise DpcalcError("--max-batch-size is for --sampling truncated-poisson only; no "
                              "phase uses it")
        inputs = {"phases": [echo for _, echo in parsed], "steps": schedule.total_steps,
                  **model_inputs(schedule, **described)}
        if schedule_path is not None:
            inputs["schedule_file"] = str(schedule_path)
        notes = [f"phase {index}: {echo['steps_from_epochs']['note']}"
                 for index, (_, echo) in enumerate(parsed, start=1) if "steps_from_epochs" in echo]
        scaled = not with_sigma and all(echo["sigma"] is not None for _, echo in parsed)
        return ScheduleInputs(schedule, inputs, dataset, notes, scaled)
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
