"""Turn the sampling/steps/noise flags (or repeated --phase specs) into a Schedule."""
from __future__ import annotations

from dataclasses import dataclass

from dpcalc.accounting.schedule import Phase, Schedule
from dpcalc.errors import DpcalcError
from dpcalc.params import (check_count, check_noise_multiplier, resolve_sampling_rate,
                           resolve_steps)

PHASE_KEYS = ("q", "batch-size", "dataset-size", "sigma", "steps", "epochs")


@dataclass
class ScheduleInputs:
    """The validated schedule and what to echo back to the user."""

    schedule: Schedule
    inputs: dict
    dataset_size: int | None


def _phase_from_spec(spec: str, dataset_size: int | None) -> tuple[Phase, dict]:
    """'q=0.01,sigma=4,steps=5000' (or batch-size=…,dataset-size=…, epochs=…) → Phase."""
    fields: dict[str, str] = {}
    for item in spec.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = key.strip().replace("_", "-")
        if not sep or key not in PHASE_KEYS:
            raise DpcalcError(f"--phase takes key=value pairs with keys {', '.join(PHASE_KEYS)}; "
                              f"got {spec!r}")
        if key in fields:
            raise DpcalcError(f"--phase gives {key} twice; got {spec!r}")
        fields[key] = value.strip()
    batch = fields.get("batch-size")
    dataset = fields.get("dataset-size", dataset_size if batch is not None else None)
    sampling_rate = resolve_sampling_rate(fields.get("q"), batch, dataset)
    if "sigma" not in fields:
        raise DpcalcError(f"--phase needs sigma=…; got {spec!r}")
    sigma = check_noise_multiplier(fields["sigma"], "--phase sigma")
    steps = resolve_steps(fields.get("steps"), fields.get("epochs"), sampling_rate,
                          None if batch is None else int(float(batch)),
                          None if dataset is None else int(float(dataset)))
    phase = Phase(sampling_rate, sigma, steps)
    return phase, {"q": sampling_rate, "sigma": sigma, "steps": steps}


def build_schedule(q, batch_size, dataset_size, sigma, steps, epochs,
                   phases: list[str] | None) -> ScheduleInputs:
    """Validate the flags of one run (or of its phases) into a Schedule."""
    if phases:
        if any(value is not None for value in (q, batch_size, sigma, steps, epochs)):
            raise DpcalcError("give either --phase (repeatable) or --q/--batch-size/--sigma/"
                              "--steps/--epochs, not both")
        dataset = None if dataset_size is None else check_count(dataset_size, "--dataset-size")
        parsed = [_phase_from_spec(spec, dataset) for spec in phases]
        schedule = Schedule(tuple(phase for phase, _ in parsed))
        inputs = {"phases": [echo for _, echo in parsed], "steps": schedule.total_steps}
        return ScheduleInputs(schedule, inputs, dataset)
    sampling_rate = resolve_sampling_rate(q, batch_size, dataset_size)
    batch = None if batch_size is None else check_count(batch_size, "--batch-size")
    dataset = None if dataset_size is None else check_count(dataset_size, "--dataset-size")
    if sigma is None:
        raise DpcalcError("give --sigma (noise multiplier, > 0)")
    noise = check_noise_multiplier(sigma)
    step_count = resolve_steps(steps, epochs, sampling_rate, batch, dataset)
    inputs = {"q": sampling_rate, "batch_size": batch, "dataset_size": dataset,
              "sigma": noise, "steps": step_count}
    return ScheduleInputs(Schedule.single(sampling_rate, noise, step_count), inputs, dataset)
