"""Data for the DP-SGD simulation: a seeded synthetic task, CSV/NPZ loading, split.

Every problem with a user's file raises :class:`DpcalcError` with one line that
names the file (and the column or key where it applies).
"""
from __future__ import annotations

import csv
import math
import os
import zipfile
from dataclasses import dataclass

import numpy as np

from dpcalc.errors import DpcalcError
from dpcalc.params import check_count, check_nonnegative, check_open_interval, check_positive

MAX_CLASSES = 1000
MAX_FILE_BYTES = 256 * 2**20
_CHUNK_ROWS = 20_000  # CSV rows parsed to numbers at a time (bounded memory)
DEFAULT_LABEL_COLUMN = "label"
DEFAULT_FEATURES_KEY = "X"
DEFAULT_LABELS_KEY = "y"


@dataclass(frozen=True)
class Dataset:
    """Features (n, d) float64, labels (n,) int64 in 0..n_classes−1, and where they came from."""

    features: np.ndarray
    labels: np.ndarray
    class_names: tuple[str, ...]
    feature_names: tuple[str, ...]
    source: str

    @property
    def n_samples(self) -> int:
        return int(self.labels.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.features.shape[1])

    @property
    def n_classes(self) -> int:
        return len(self.class_names)


@dataclass(frozen=True)
class Split:
    """One side of a train/test split, features already standardised."""

    features: np.ndarray
    labels: np.ndarray
    n_classes: int

    @property
    def n_samples(self) -> int:
        return int(self.labels.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.features.shape[1])


# ---------------------------------------------------------------- synthetic task

def make_synthetic_task(n_samples: int = 20_000, n_features: int = 50, n_classes: int = 20,
                        informative_features: int = 10, class_separation: float = 1.2,
                        label_noise: float = 0.1, seed: int = 0) -> Dataset:
    """Overlapping Gaussian classes in a random low-dimensional subspace, plus label noise.

    Class c has its centre drawn from N(0, separation² I) in an ``informative_features``-
    dimensional subspace (a random rotation of the first coordinates); every sample is
    its centre plus N(0, I) in all ``n_features`` dimensions. A fraction ``label_noise``
    of labels is then replaced by a uniformly random class. The uninformative
    dimensions give DP-SGD's isotropic noise room to hurt: at a high noise multiplier
    the model cannot tell them from the signal within the training budget.
    """
    n_samples = check_count(n_samples, "--n-samples", minimum=2)
    n_features = check_count(n_features, "--n-features")
    n_classes = check_count(n_classes, "--n-classes", minimum=2)
    informative_features = check_count(informative_features, "--informative-features")
    if informative_features > n_features:
        raise DpcalcError(f"--informative-features must be <= --n-features ({n_features}); "
                          f"got {informative_features}")
    class_separation = check_positive(class_separation, "--class-separation")
    label_noise = check_nonnegative(label_noise, "--label-noise")
    if label_noise > 1.0:
        raise DpcalcError(f"--label-noise must be in [0, 1]; got {label_noise!r}")
    rng = np.random.Generator(np.random.PCG64(check_count(seed, "--seed", minimum=0)))
    centres = np.zeros((n_classes, n_features))
    centres[:, :informative_features] = rng.normal(
        0.0, class_separation, (n_classes, informative_features))
    rotation, _ = np.linalg.qr(rng.normal(size=(n_features, n_features)))
    labels = rng.integers(0, n_classes, n_samples)
    features = (centres[labels] + rng.normal(size=(n_samples, n_features))) @ rotation.T
    relabel = rng.random(n_samples) < label_noise
    labels[relabel] = rng.integers(0, n_classes, int(relabel.sum()))
    return Dataset(
        features=features,
        labels=labels.astype(np.int64),
        class_names=tuple(str(c) for c in range(n_classes)),
        feature_names=tuple(f"x{j}" for j in range(n_features)),
        source=f"synthetic(n_samples={n_samples}, n_features={n_features}, "
               f"n_classes={n_classes}, seed={seed})",
    )


# ---------------------------------------------------------------- files

def load_dataset(path: str | os.PathLike, label_column: str | None = None,
                 features_key: str = DEFAULT_FEATURES_KEY) -> Dataset:
    """Load a classification data set from ``.csv`` or ``.npz``.

    CSV: a header row, numeric feature columns, and the label column named by
    ``label_column`` (default ``"label"``, else the last column). Labels may be any
    text; they are mapped to 0..k−1 in sorted order (numerically if all are numbers).
    NPZ: arrays ``features_key`` (default ``"X"``, shape (n, d)) and ``label_column``
    (default ``"y"``, shape (n,)); ``allow_pickle`` stays off.
    """
    name = os.fspath(path)
    extension = os.path.splitext(name)[1].lower()
    if extension not in (".csv", ".npz"):
        raise DpcalcError(f"{name}: data file must end in .csv or .npz; got {extension or 'no extension'!r}")
    if not os.path.exists(name):
        raise DpcalcError(f"{name}: data file not found")
    if os.path.isdir(name):
        raise DpcalcError(f"{name}: is a directory, not a data file")
    if not os.path.isfile(name):  # a FIFO or device would block or never end
        raise DpcalcError(f"{name}: not a regular file")
    size = os.path.getsize(name)
    if size > MAX_FILE_BYTES:
        raise DpcalcError(f"{name}: data file is {size / 2**20:.0f} MiB; at most "
                          f"{MAX_FILE_BYTES // 2**20} MiB are supported")
    if extension == ".csv":
        features, raw_labels, feature_names, label_name = _read_csv(name, label_column)
    else:
        features, raw_labels, feature_names, label_name = _read_npz(name, label_column, features_key)
    labels, class_names = _encode_labels(raw_labels, name, label_name)
    return Dataset(features, labels, class_names, feature_names, name)


def _read_csv(name: str, label_column: str | None):
    """Header, then rows parsed to float64 in chunks (memory ~ the numbers, not the text)."""
    chunks, labels = [], []
    try:
        with open(name, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            header = next((row for row in reader if row), None)
            if header is None:
                raise DpcalcError(f"{name}: file is empty (no header row)")
            columns = [column.strip() for column in header]
            label_index = _label_index(name, columns, label_column)
            feature_indices = [j for j in range(len(columns)) if j != label_index]
            if not feature_indices:
                raise DpcalcError(f"{name}: no feature columns besides label column "
                                  f"{columns[label_index]!r}")
            feature_names = [columns[j] for j in feature_indices]
            pending, first_line = [], 0
            for row in reader:
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                if len(row) != len(header):
                    raise DpcalcError(f"{name}: line {reader.line_num} has {len(row)} fields; "
                                      f"the header has {len(header)}")
                if not pending:
                    first_line = reader.line_num
                label = row[label_index].strip()
                if not label:
                    raise DpcalcError(f"{name}: label column {columns[label_index]!r} is empty "
                                      f"on line {reader.line_num}")
                labels.append(label)
                pending.append([row[j] for j in feature_indices])
                if len(pending) == _CHUNK_ROWS:
                    chunks.append(_parse_numeric(pending, name, feature_names, first_line))
                    pending = []
            if pending:
                chunks.append(_parse_numeric(pending, name, feature_names, first_line))
    except UnicodeDecodeError:
        raise DpcalcError(f"{name}: not a UTF-8 text file") from None
    except csv.Error as error:
        raise DpcalcError(f"{name}: malformed CSV ({error})") from None
    except OSError as error:
        raise DpcalcError(f"{name}: cannot read ({error.strerror})") from None
    if not labels:
        raise DpcalcError(f"{name}: no data rows after the header")
    return (np.concatenate(chunks), np.array(labels), tuple(feature_names),
            columns[label_index])


def _label_index(name: str, columns: list[str], label_column: str | None) -> int:
    if label_column is None:
        return columns.index(DEFAULT_LABEL_COLUMN) if DEFAULT_LABEL_COLUMN in columns \
            else len(columns) - 1
    if label_column in columns:
        return columns.index(label_column)
    shown = ", ".join(repr(c) for c in columns[:10]) + (", ..." if len(columns) > 10 else "")
    raise DpcalcError(f"{name}: label column {label_column!r} not found; columns are {shown}")


def _parse_numeric(cells: list[list[str]], name: str, column_names: list[str],
                   first_line: int) -> np.ndarray:
    """Text cells → float64; names the first bad cell (column and line) otherwise."""
    try:
        values = np.array(cells, dtype=np.float64)
    except (ValueError, OverflowError):
        values = None
    if values is not None and np.isfinite(values).all():
        return values
    # Slow path, only to locate the first offending cell for the message.
    for row_index, row in enumerate(cells):
        for column_index, text in enumerate(row):
            problem = _cell_problem(text)
            if problem:
                raise DpcalcError(f"{name}: column {column_names[column_index]!r} line "
                                  f"{first_line + row_index}: {problem}")
    raise DpcalcError(f"{name}: feature columns must be finite numbers")  # not reached


def _cell_problem(text: str) -> str | None:
    if not text.strip():
        return "missing value"
    try:
        number = float(text)
    except ValueError:
        return f"{text.strip()[:40]!r} is not a number"
    if not math.isfinite(number):
        return f"{text.strip()!r} is not a finite number"
    return None


def _read_npz(name: str, label_key: str | None, features_key: str):
    label_key = DEFAULT_LABELS_KEY if label_key is None else label_key
    if not zipfile.is_zipfile(name):
        raise DpcalcError(f"{name}: not a valid .npz archive (not a zip file)")
    try:
        with np.load(name, allow_pickle=False) as archive:
            keys = list(archive.files)
            for key, role in ((features_key, "features"), (label_key, "label")):
                if key not in keys:
                    raise DpcalcError(f"{name}: {role} array {key!r} not found; arrays are "
                                      f"{', '.join(repr(k) for k in keys) or 'none'}")
            features, labels = archive[features_key], archive[label_key]
            if not (isinstance(features, np.ndarray) and isinstance(labels, np.ndarray)):
                raise DpcalcError(f"{name}: arrays {features_key!r} and {label_key!r} must be "
                                  "stored as .npy members (np.savez)")
    except DpcalcError:
        raise
    except ValueError as error:
        raise DpcalcError(f"{name}: cannot read arrays ({error})") from None
    except Exception as error:  # zipfile.BadZipFile, OSError, EOFError ...
        raise DpcalcError(f"{name}: not a valid .npz archive ({type(error).__name__})") from None
    if features.ndim == 1:
        features = features[:, None]
    if features.ndim != 2:
        raise DpcalcError(f"{name}: array {features_key!r} must be 2-D (samples × features); "
                          f"got shape {features.shape}")
    if labels.ndim != 1:
        raise DpcalcError(f"{name}: array {label_key!r} must be 1-D; got shape {labels.shape}")
    if features.shape[0] == 0 or features.shape[1] == 0:
        raise DpcalcError(f"{name}: array {features_key!r} is empty (shape {features.shape})")
    if labels.shape[0] != features.shape[0]:
        raise DpcalcError(f"{name}: {label_key!r} has {labels.shape[0]} entries but "
                          f"{features_key!r} has {features.shape[0]} rows")
    if features.dtype.kind not in "biuf":
        raise DpcalcError(f"{name}: array {features_key!r} must be numeric; got dtype {features.dtype}")
    features = features.astype(np.float64)
    if not np.isfinite(features).all():
        row = int(np.argwhere(~np.isfinite(features))[0][0])
        raise DpcalcError(f"{name}: array {features_key!r} has a missing or non-finite value "
                          f"in row {row}")
    if labels.dtype.kind not in "biufUS":
        raise DpcalcError(f"{name}: array {label_key!r} must hold numbers or strings; "
                          f"got dtype {labels.dtype}")
    names = tuple(f"{features_key}[{j}]" for j in range(features.shape[1]))
    return features, labels, names, label_key


def _encode_labels(raw_labels: np.ndarray, name: str, label_name: str
                   ) -> tuple[np.ndarray, tuple[str, ...]]:
    """Map label values to 0..k−1 (numeric order if all are numbers, else text order)."""
    if raw_labels.dtype.kind in "US":
        try:
            keys = raw_labels.astype(np.float64)
        except ValueError:
            keys = raw_labels.astype(str)
    else:
        keys = raw_labels
    if keys.dtype.kind == "f" and not np.isfinite(keys).all():
        raise DpcalcError(f"{name}: label {label_name!r} has a missing or non-finite value")
    values, labels = np.unique(keys, return_inverse=True)
    if values.shape[0] < 2:
        raise DpcalcError(f"{name}: label {label_name!r} has only one class "
                          f"({values[0]!s}); need at least 2")
    if values.shape[0] > MAX_CLASSES:
        raise DpcalcError(f"{name}: label {label_name!r} has {values.shape[0]} distinct values; "
                          f"at most {MAX_CLASSES} classes are supported (is it a class label?)")
    class_names = tuple(_format_class(value) for value in values)
    return labels.reshape(-1).astype(np.int64), class_names


def _format_class(value) -> str:
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


# ---------------------------------------------------------------- split

def split_and_standardise(dataset: Dataset, test_fraction: float = 0.2,
                          seed: int = 0) -> tuple[Split, Split]:
    """Random train/test split, then features standardised with TRAIN mean and std.

    Constant training features get std 1 (they stay centred at 0).
    """
    test_fraction = check_open_interval(test_fraction, "--test-fraction", 0.0, 1.0)
    n_test = int(round(test_fraction * dataset.n_samples))
    n_train = dataset.n_samples - n_test
    if n_test < 1 or n_train < 2:
        raise DpcalcError(f"{dataset.source}: {dataset.n_samples} samples are too few to split "
                          f"with --test-fraction {test_fraction:g}")
    rng = np.random.Generator(np.random.PCG64(check_count(seed, "--seed", minimum=0)))
    order = rng.permutation(dataset.n_samples)
    train_rows, test_rows = order[:n_train], order[n_train:]
    train_features = dataset.features[train_rows]
    with np.errstate(over="ignore", invalid="ignore"):
        mean = train_features.mean(axis=0)
        std = train_features.std(axis=0)
    if not (np.isfinite(mean).all() and np.isfinite(std).all()):
        raise DpcalcError(f"{dataset.source}: feature values are too large to standardise "
                          f"(largest |x| = {np.max(np.abs(dataset.features)):.3g}); rescale them")
    std[std == 0.0] = 1.0
    train_labels = dataset.labels[train_rows]
    if np.unique(train_labels).shape[0] < 2:
        raise DpcalcError(f"{dataset.source}: the training split has only one class")
    return (
        Split((train_features - mean) / std, train_labels, dataset.n_classes),
        Split((dataset.features[test_rows] - mean) / std, dataset.labels[test_rows],
              dataset.n_classes),
    )
