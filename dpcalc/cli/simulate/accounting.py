"""The accounting side of `dpcalc simulate`: the model a run is accounted under, ε per
epoch (one composition for all planned epoch ends, the final one by the point path), σ
calibration and the group figure."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from dpcalc.cli.simulate.model import EpochRow
from dpcalc.cli.simulate.setup import LIVE_ACCOUNTANTS
from dpcalc.errors import DpcalcError

if TYPE_CHECKING:
    from dpcalc.accountants.result import EpsilonResult
    from dpcalc.dpsgd import EpochRecord

PB_TOLERANCE = 0.01  # the `dpcalc epsilon` default, so both commands report the same ε
# ε costs ~30-200 ms per evaluation: account every epoch up to this many epochs, else
# only ACCOUNTED_EPOCHS evenly spaced ones plus the last.
MAX_EPOCHS_ALL_ACCOUNTED = 50
ACCOUNTED_EPOCHS = 20

SHUFFLE_NOTE = ("no certified ε for this run: shuffled batches under add/remove-one adjacency have "
                "no certificate (an inserted record shifts every later position of the "
                "permutation); give --adjacency zero-out or replace-one for certified shuffle "
                "bounds")


def certificate_applies(sampling: str, adjacency: str) -> bool:
    """False for shuffled epochs under add/remove: dpcalc has no certificate there (an
    inserted record shifts every later position; `dpcalc epsilon` says "not applicable")."""
    return not (sampling == "shuffle" and adjacency == "add-remove")


def accounting_model(sampling: str, adjacency: str) -> tuple[str, str]:
    """The (sampler, adjacency) whose ε the run computes: its own, except shuffled epochs
    under add/remove (no certificate exists there), for which only the Poisson figure at
    q = B/N is computed, as a reference that does NOT apply (certificate_applies)."""
    if not certificate_applies(sampling, adjacency):
        return "poisson", adjacency
    return sampling, adjacency


def epsilon_for_steps(names: tuple[str, ...], sampling_rate: float, noise_multiplier: float,
                      steps: int, delta: float,
                      model: tuple[str, str] = ("poisson", "add-remove")) -> list["EpsilonResult"]:
    """ε from each named accountant for ``steps`` Gaussian steps under ``model``."""
    from dpcalc.accountants.evaluate import epsilon_results
    from dpcalc.models.schedule import Schedule

    schedule = Schedule.single(sampling_rate, noise_multiplier, steps, *model)
    return epsilon_results(list(names), schedule, delta, tolerance=PB_TOLERANCE)


def certified_epsilon(sampling_rate: float, noise_multiplier: float, steps: int,
                      delta: float, model: tuple[str, str] = ("poisson", "add-remove")) -> float:
    """The pb certified upper bound; ∞ if pb cannot answer (safe for calibration)."""
    value = epsilon_for_steps(("pb",), sampling_rate, noise_multiplier, steps, delta,
                              model)[0].epsilon
    return math.inf if value is None else value


def accounted_epoch_numbers(expected_epochs: int) -> set[int] | None:
    """Epochs that get ε: all (None) up to MAX_EPOCHS_ALL_ACCOUNTED, else ~20 evenly
    spaced ones (the last epoch is always accounted by the caller)."""
    if expected_epochs <= MAX_EPOCHS_ALL_ACCOUNTED:
        return None
    return {math.ceil(i * expected_epochs / ACCOUNTED_EPOCHS)
            for i in range(1, ACCOUNTED_EPOCHS + 1)}


class Background:
    """One computation on a daemon thread (it never holds up the interpreter's exit, e.g.
    after Ctrl-C): its answer, or its exception re-raised, from ``result()``."""

    def __init__(self, function: Callable[[], object]) -> None:
        import threading

        self._function, self._outcome = function, None
        self._thread = threading.Thread(target=self._run, name="dpcalc-accounting", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._outcome = (True, self._function())
        except BaseException as error:  # re-raised in the caller's thread by result()
            self._outcome = (False, error)

    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self):
        self._thread.join()
        succeeded, value = self._outcome
        if not succeeded:
            raise value
        return value


@dataclass
class LiveAccountant:
    """ε (pb and rdp) at each epoch end for the steps actually run. ``applies`` False
    (shuffle under add/remove): the row carries no ε, only pb's Poisson figure under
    ``poisson_reference``, which does not apply to the run.

    The planned epoch ends are known before training starts, so ``start()`` computes
    their ε on a background thread while the model trains, as one curve over all of them
    (curve.py: one composition; each point certified, on a grid at least as fine as the
    point path's, and within ~1e-7 of `dpcalc epsilon` in the documented runs). With
    ``final_by_point`` (σ calibrated by the point path), the last epoch is the point path's
    number on a second thread, the ε the calibration certified. NumPy's large array
    operations release the GIL. ``row()`` fills an epoch's ε at once if it is in, else
    leaves it for ``settle()``, which waits for the rest. The numbers are those of
    computing them in turn (test)."""

    sampling_rate: float
    noise_multiplier: float
    delta: float
    total_steps: int
    accounted: set[int] | None
    model: tuple[str, str] = ("poisson", "add-remove")
    # the planned epoch ends: their ε is computed together, from one composition
    epoch_ends: tuple[int, ...] = ()
    applies: bool = True
    final_by_point: bool = False
    _curve: "Background | None" = None
    _final: "Background | None" = None
    _pending: list = field(default_factory=list)

    def start(self) -> None:
        """Start computing the planned epochs' ε in the background."""
        if self._planned():
            self._curve = Background(self._precompute)
        self._final = (Background(lambda: tuple(self._point(self.total_steps)))
                       if self.final_by_point else self._curve)

    def row(self, record: "EpochRecord") -> EpochRow:
        """The epoch's row; its ε now if known, else filled in by ``settle()``."""
        row = EpochRow(record)
        wanted = (self.accounted is None or record.epoch in self.accounted
                  or record.steps_done == self.total_steps)
        if not wanted:
            return row
        if self._final is None and self._curve is None:
            self.start()
        source = self._source(record.steps_done)
        if source is None:  # not a planned epoch end: now
            self._fill(row, *self._point(record.steps_done))
        else:
            self._pending.append((row, source))
            self.settle(wait=False)
        return row

    def settle(self, wait: bool = True) -> None:
        """Fill every pending row whose ε is in (all of them, waiting, if ``wait``)."""
        still = []
        for row, source in self._pending:
            if wait or source.done():
                answer = source.result()
                self._fill(row, *(answer if isinstance(answer, tuple)
                                  else answer[row.record.steps_done]))
            else:
                still.append((row, source))
        self._pending = still

    def _source(self, steps: int) -> "Background | None":
        if steps == self.total_steps and self.final_by_point:
            return self._final
        return self._curve if steps in self._planned() else None

    def _fill(self, row: EpochRow, pb: "EpsilonResult", rdp: "EpsilonResult") -> None:
        if self.applies:
            row.epsilon, row.epsilon_rdp = pb, rdp
        else:
            row.poisson_reference = pb

    def _point(self, steps: int) -> list["EpsilonResult"]:
        return epsilon_for_steps(LIVE_ACCOUNTANTS, self.sampling_rate, self.noise_multiplier,
                                 steps, self.delta, self.model)

    def _planned(self) -> list[int]:
        """The step counts of the epochs the curve accounts, as planned (the last one too,
        unless ``final_by_point``)."""
        return [steps for epoch, steps in enumerate(self.epoch_ends, start=1)
                if (self.accounted is None or epoch in self.accounted or steps == self.total_steps)
                and not (steps == self.total_steps and self.final_by_point)]

    def _precompute(self) -> dict:
        """ε (pb, rdp) at every planned epoch end: one curve over the step counts."""
        from dpcalc.accountants.evaluate import epsilon_curves
        from dpcalc.models.schedule import Schedule

        planned = self._planned()
        schedules = [Schedule.single(self.sampling_rate, self.noise_multiplier, steps, *self.model)
                     for steps in planned]
        rows = epsilon_curves(list(LIVE_ACCOUNTANTS), schedules, self.delta, tolerance=PB_TOLERANCE)
        return {steps: tuple(results) for steps, results in zip(planned, rows)}


def calibrate_sigma(target_epsilon: float, sampling_rate: float, steps: int,
                    delta: float, model: tuple[str, str] = ("poisson", "add-remove")
                    ) -> tuple[float, float, int]:
    """(σ, its certified ε, evaluations): the smallest σ with pb ε ≤ target over ``steps``."""
    from dpcalc.calibration.search import calibrate_noise_multiplier

    result = calibrate_noise_multiplier(
        lambda sigma: certified_epsilon(sampling_rate, sigma, steps, delta, model), target_epsilon,
        target_flag="--target-epsilon")
    return result.sigma, result.epsilon, result.evaluations


def group_setting(group_size: int, batch_size: int, n_train: int, noise_multiplier: float,
                  steps: int, model: tuple[str, str] = ("poisson", "add-remove")):
    """The k-record worst case under the run's model at q = B/N_train (validates --k)."""
    from dpcalc.group.pairs import GroupSetting
    from dpcalc.models.samplers import ADD_REMOVE, REPLACE_ONE, SIMPLE_SAMPLINGS

    sampling, adjacency = model
    if sampling not in SIMPLE_SAMPLINGS or adjacency not in (ADD_REMOVE, REPLACE_ONE):
        raise DpcalcError(f"--k (group privacy) needs --sampling {' or '.join(SIMPLE_SAMPLINGS)} "
                          f"with --adjacency {ADD_REMOVE} or {REPLACE_ONE} (one worst-case pair "
                          f"per step for k records); got --sampling {sampling} --adjacency "
                          f"{adjacency}")
    return GroupSetting(group_size, batch_size, n_train, noise_multiplier, steps, *model)


def group_epsilon_in_background(setting, delta: float) -> Background:
    """group_epsilon on a background thread (the run's model and step count are known
    before training starts): its ``result()`` is the same EpsilonResult."""
    return Background(lambda: group_epsilon(setting, delta))


def group_epsilon(setting, delta: float) -> "EpsilonResult":
    """pb's certified ε protecting any k records together under the run's model
    (dpcalc.group.pairs), composed over the steps run."""
    from dpcalc.group.pairs import pb_epsilon

    return pb_epsilon(setting, delta, tolerance=PB_TOLERANCE)
