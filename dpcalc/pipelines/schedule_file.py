"""A run's phases as a file: JSON or CSV rows of σ, q or B/N, steps or epochs, sampling.

The same keys as a ``--phase`` spec (q, batch-size, dataset-size, sigma, steps, epochs,
sampling, max-batch-size; ``_`` or ``-``, and the names Opacus and TF Privacy use:
noise_multiplier, sample_rate, sampling_probability):

* CSV: a header row naming the columns, one row per phase; empty cells are not given; lines
  starting with ``#`` and blank lines are skipped.
* JSON: a list of objects, one per phase, or ``{"phases": [...]}``; or Opacus's accountant
  history, rows ``[noise_multiplier, sample_rate, steps]``, alone or as its ``state_dict()``
  ``{"history": [...], "mechanism": ...}`` (json.dump of either).

Every row is read as a ``--phase`` spec is (:func:`phase_from_fields`); a malformed row is
one error naming the file and its line. :func:`write_schedule_file` writes the CSV form of
a schedule (PrivacyAccountant.to_schedule_file), which reads back to the same phases.
"""
from __future__ import annotations

import csv
import io
import os
import json
import re
from pathlib import Path

from dpcalc.errors import DpcalcError
from dpcalc.models.samplers import (ADD_REMOVE, EPOCH_SAMPLINGS, POISSON, TRUNCATED_POISSON,
                                    parse_sampling)
from dpcalc.models.schedule import Phase, Schedule
from dpcalc.params import (EpochSteps, batches_per_epoch, check_count, check_noise_multiplier,
                           epoch_steps, resolve_sampling_rate, resolve_steps)

PHASE_KEYS = ("q", "batch-size", "dataset-size", "sigma", "steps", "epochs", "sampling",
              "max-batch-size")
# The names other tools use for the same keys (Opacus, TF Privacy).
PHASE_KEY_ALIASES = {"noise-multiplier": "sigma", "sample-rate": "q", "sampling-probability": "q",
                     "num-steps": "steps", "num-epochs": "epochs"}
# An Opacus accountant's history row: (noise_multiplier, sample_rate, num_steps).
HISTORY_FIELDS = ("sigma", "q", "steps")
PHASE_FORM = ("'key=value,…' with keys q or batch-size[,dataset-size], sigma, steps or epochs, "
              "and optionally sampling (and max-batch-size for truncated-poisson), e.g. "
              "'q=0.01,sigma=4,steps=5000'")
# Calibration (dpcalc sigma) finds σ itself: phases then omit it.
PLACEHOLDER_SIGMA = 1.0
FILE_COLUMNS = ("sigma", "q", "steps", "sampling", "batch-size", "dataset-size",
                "max-batch-size")


def field_name(key: str) -> str | None:
    """The phase key ``key`` names (``_`` or ``-``, aliases), or None."""
    key = str(key).strip().lower().replace("_", "-")
    key = PHASE_KEY_ALIASES.get(key, key)
    return key if key in PHASE_KEYS else None


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
           epochs_flag="--epochs", sampling: str = POISSON,
           drop_last: bool = False) -> tuple[int, EpochSteps | None]:
    """Steps, and their derivation when they came from epochs (an epoch sampler's epoch is
    its b batches: loader_batches)."""
    if steps is None and epochs is not None:
        count, rule = loader_batches(sampling, sampling_rate, batch, dataset, drop_last)
        derived = epoch_steps(epochs, sampling_rate, batch, dataset, epochs_flag, count, rule)
        return derived.steps, derived
    return resolve_steps(steps, epochs, sampling_rate, batch, dataset, steps_flag=steps_flag,
                         epochs_flag=epochs_flag), None


def phase_from_fields(fields: dict, dataset_size: int | None, default_sampling: str,
                      adjacency: str, with_sigma: bool | None, max_batch_size=None,
                      flag: str = "--phase", spec: str | None = None,
                      drop_last: bool = False) -> tuple[Phase, dict, EpochSteps | None]:
    """One phase from its keys (q or batch-size[/dataset-size], sigma, steps or epochs,
    sampling, max-batch-size) → (Phase, the inputs to echo, the epochs derivation or None).
    ``flag``: how messages name the keys (``--phase q``; empty: ``q``); ``spec``: the
    --phase text messages quote. ``with_sigma``: True (σ required), False (σ refused:
    calibration finds it; a placeholder is used) or None (either: a placeholder if absent)."""
    subject = flag or "a phase"
    got = "" if spec is None else f"; got {spec!r}"
    form = "" if spec is None else f" ({PHASE_FORM})"

    def name(key: str) -> str:
        return f"{flag} {key}".strip()

    if "q" not in fields and "batch-size" not in fields:
        raise DpcalcError(f"{subject} needs q=… or batch-size=…{got}{form}")
    sampling = parse_sampling(fields.get("sampling", default_sampling), name("sampling"))
    truncated = sampling == TRUNCATED_POISSON
    batch_text = fields.get("batch-size")
    dataset_text = fields.get("dataset-size",
                              dataset_size if batch_text is not None or truncated else None)
    if batch_text is not None and dataset_text is None:
        raise DpcalcError(f"{subject} with batch-size needs dataset-size=… (or --dataset-size)"
                          f"{got}")
    sampling_rate = resolve_sampling_rate(fields.get("q"), batch_text,
                                          dataset_text if batch_text is not None else None,
                                          flags=(name("q"), name("batch-size"), name("dataset-size")))
    batch = None if batch_text is None else check_count(batch_text, name("batch-size"))
    dataset = (None if dataset_text is None or (batch_text is None and not truncated)
               else check_count(dataset_text, name("dataset-size")))
    cap = fields.get("max-batch-size", max_batch_size if truncated else None)
    if cap is not None and not truncated:
        raise DpcalcError(f"{name('max-batch-size')} is for sampling=truncated-poisson only{got}")
    if "sigma" in fields and with_sigma is not False:
        sigma = check_noise_multiplier(fields["sigma"], name("sigma"))
    elif with_sigma:
        raise DpcalcError(f"{subject} needs sigma=…{got}{form}")
    elif "sigma" in fields:
        raise DpcalcError(f"{subject} must not give sigma here: it is what `dpcalc sigma` "
                          f"calibrates (one σ for every phase){got}")
    else:
        sigma = PLACEHOLDER_SIGMA
    steps, derived = _steps(fields.get("steps"), fields.get("epochs"), sampling_rate, batch,
                            dataset, name("steps"), name("epochs"), sampling, drop_last)
    phase = Phase(sampling_rate, sigma, steps, sampling, adjacency, batch, dataset, cap,
                  drop_last)
    echo = {"q": sampling_rate, "batch_size": batch, "dataset_size": dataset,
            "sigma": sigma if "sigma" in fields and with_sigma is not False else None,
            "steps": steps, "sampling": sampling}
    if cap is not None:
        echo["max_batch_size"] = phase.max_batch_size
    return phase, echo, derived


# ------------------------------------------------------------------ files
def _rows_csv(text: str, where: str) -> list[tuple[int, dict]]:
    lines = [(number, line) for number, line in enumerate(text.splitlines(), start=1)
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise DpcalcError(f"{where}: no header row and no phases (CSV needs a header such as "
                          f"'sigma,q,steps')")
    header_number, header = lines[0]
    columns = next(csv.reader([header]))
    names = [field_name(column) for column in columns]
    unknown = [column for column, known in zip(columns, names) if known is None]
    if unknown:
        raise DpcalcError(f"{where} line {header_number}: unknown column {unknown[0].strip()!r} "
                          f"(columns: {', '.join(PHASE_KEYS)})")
    rows = []
    for number, line in lines[1:]:
        cells = next(csv.reader([line]))
        if len(cells) > len(names):
            raise DpcalcError(f"{where} line {number}: {len(cells)} cells for {len(names)} "
                              f"columns")
        rows.append((number, {key: cell.strip() for key, cell in zip(names, cells)
                              if cell.strip()}))
    return rows


def _rows_json(text: str, where: str) -> list[tuple[int, dict]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise DpcalcError(f"{where} line {error.lineno}: not valid JSON ({error.msg})") from None
    except RecursionError:  # arrays or objects nested thousands deep
        raise DpcalcError(f"{where}: JSON nested too deeply to be a schedule (a list of phases "
                          "or {\"phases\": [...]})") from None
    key = next((name for name in ("phases", "history") if name in data), None) \
        if isinstance(data, dict) else None
    listed = data.get(key) if isinstance(data, dict) else data
    if not isinstance(listed, list):
        raise DpcalcError(f"{where}: JSON must be a list of phases, {{\"phases\": [...]}} or an "
                          "Opacus accountant's {\"history\": [...]}")
    # the line of every element: decode the list's elements one by one from its '['
    found = re.search(rf'"{key}"\s*:\s*\[', text) if key else None
    position = found.end() if found else text.index("[") + 1
    decoder, rows = json.JSONDecoder(), []
    for element in listed:
        while text[position] in " \t\r\n,":
            position += 1
        number = text.count("\n", 0, position) + 1
        _, position = decoder.raw_decode(text, position)
        if _history_row(element):
            element = dict(zip(HISTORY_FIELDS, element))
        if not isinstance(element, dict):
            raise DpcalcError(f"{where} line {number}: a phase must be an object such as "
                              f'{{"sigma": 1.1, "q": 0.01, "steps": 1000}} or an Opacus history '
                              f"row [noise_multiplier, sample_rate, steps]; got {element!r}"[:300])
        fields = {}
        for key, value in element.items():
            known = field_name(key)
            if known is None:
                raise DpcalcError(f"{where} line {number}: unknown key {key!r} (keys: "
                                  f"{', '.join(PHASE_KEYS)})")
            if value is not None:
                fields[known] = str(value)
        rows.append((number, fields))
    return rows


def _json_scalar(text: str) -> bool:
    """Whether ``text`` is a bare JSON value other than a list or object (null, 42, "a"):
    a JSON file, read as one (its error then says what a schedule must be), not as CSV."""
    try:
        return not isinstance(json.loads(text), (list, dict))
    except (ValueError, RecursionError):
        return False


def _history_row(element) -> bool:
    """Whether ``element`` is an Opacus history row: three numbers (not booleans)."""
    return (isinstance(element, list) and len(element) == len(HISTORY_FIELDS)
            and all(isinstance(value, (int, float)) and not isinstance(value, bool)
                    for value in element))


def check_path(path, flag: str = "--schedule") -> Path:
    """A file path (str or os.PathLike, not empty), else one DpcalcError."""
    if isinstance(path, (bytes, bool)) or not isinstance(path, (str, os.PathLike)) \
            or not str(path).strip() or "\0" in str(path):
        raise DpcalcError(f"{flag} must be a file path (a non-empty str or os.PathLike); "
                          f"got {type(path).__name__} {path!r}"[:200])
    return Path(path)


def read_schedule_rows(path) -> list[tuple[int, dict]]:
    """(line number, {key: text}) of every phase of a schedule file (JSON or CSV)."""
    path = check_path(path)
    where = f"--schedule {path}"
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as error:
        raise DpcalcError(f"{where}: cannot read it ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise DpcalcError(f"{where}: not a text file (UTF-8 CSV or JSON)") from None
    start = text.lstrip()[:1]
    rows = (_rows_json(text, where) if start in ("[", "{") or _json_scalar(text)
            else _rows_csv(text, where))
    if not rows:
        raise DpcalcError(f"{where}: no phases in it")
    return rows


def file_adjacency(path) -> str | None:
    """The adjacency a file written by write_schedule_file records ('# adjacency: …')."""
    path = check_path(path)
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    found = re.match(r"\s*#\s*adjacency:\s*([\w-]+)", text)
    return found.group(1) if found else None


def schedule_from_file(path, dataset_size: int | None = None, sampling: str = POISSON,
                       adjacency: str = ADD_REMOVE, with_sigma: bool | None = True,
                       max_batch_size=None, drop_last: bool = False):
    """(Schedule, echo per phase, epochs derivation per phase) of a schedule file; a
    malformed row raises one DpcalcError naming the file and the row's line."""
    phases, echoes, derivations = [], [], []
    for number, fields in read_schedule_rows(path):
        try:
            phase, echo, derived = phase_from_fields(fields, dataset_size, sampling, adjacency,
                                                     with_sigma, max_batch_size, flag="",
                                                     drop_last=drop_last)
        except DpcalcError as error:
            raise DpcalcError(f"--schedule {path} line {number}: {error}") from None
        phases.append(phase)
        echoes.append(echo)
        derivations.append(derived)
    if with_sigma is None and 0 < sum(echo["sigma"] is not None for echo in echoes) < len(echoes):
        raise DpcalcError(f"--schedule {path}: give sigma on every row (a common multiplier is "
                          "calibrated) or on none (one σ for every phase)")
    return Schedule(tuple(phases)), echoes, derivations


def write_schedule_file(path, schedule: Schedule) -> None:
    """The CSV form of ``schedule`` (sigma, q, steps, sampling, and B, N, M where given):
    schedule_from_file reads it back to the same phases."""
    if not isinstance(schedule, Schedule):
        raise DpcalcError(f"write_schedule_file needs a dpcalc Schedule; got {type(schedule).__name__}")
    path = check_path(path, "path")
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(FILE_COLUMNS)
    for phase in schedule.phases:
        writer.writerow([repr(float(phase.noise_multiplier)),
                         "" if phase.batch_size is not None else repr(float(phase.sampling_rate)),
                         phase.steps, phase.sampling,
                         "" if phase.batch_size is None else phase.batch_size,
                         "" if phase.dataset_size is None else phase.dataset_size,
                         "" if phase.max_batch_size is None else phase.max_batch_size])
    try:
        Path(path).write_text(f"# adjacency: {schedule.adjacency}\n" + buffer.getvalue(),
                              encoding="utf-8")
    except OSError as error:
        raise DpcalcError(f"cannot write the schedule file {path}: {error.strerror or error}") from None


__all__ = ["PHASE_KEYS", "PHASE_KEY_ALIASES", "PLACEHOLDER_SIGMA", "check_path", "file_adjacency",
           "phase_from_fields", "read_schedule_rows", "schedule_from_file", "write_schedule_file"]
