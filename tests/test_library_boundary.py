"""The library boundary (issue 30 §4): every public callable — everything in
``dpcalc.__all__`` and the methods of the exported classes — answers a bad argument with
DpcalcError (one line naming the argument), never another exception type, and never
returns NaN. Each argument of each callable is replaced in turn by every value of a battery
(negative, zero, NaN, ±inf, 10**400, 1.5 for probabilities, wrong types, empty lists,
None); valid edge values may answer instead, but then with numbers that are not NaN.

The property test at the end draws random VALID inputs (a seeded hypothesis search) and
checks the same: a DpcalcError (e.g. a request beyond a documented range) or a NaN-free
answer, and the ordering every certified pair of bounds must have."""
from __future__ import annotations

import dataclasses
import math
import os
import tempfile
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpcalc
from dpcalc.errors import DpcalcError

pytestmark = pytest.mark.deep  # oracle sweeps: `python -m pytest -m deep` (CI runs them)

NAN = float("nan")
INF = float("inf")
HUGE = 10**400  # no float holds it: float(HUGE) raises OverflowError


class Opaque:
    """An object of no expected type (no attributes, not a number, not iterable)."""


BATTERY = [-1, 0, -0.0, 1.5, 2, NAN, INF, -INF, HUGE, -HUGE, 1e-320, 10**12, "x", "", None,
           True, [], [NAN], [1, 2], {}, Opaque(), 1 + 1j]

# Values an argument of this name must refuse (a silent answer would be for another input:
# σ = −1 answered as σ = 1, q = 1.5 as a number). Every one also refuses what is no number.
NOT_A_NUMBER = [NAN, "x", "", None, True, [], [NAN], [1, 2], {}, Opaque(), 1 + 1j, HUGE, -HUGE]
_RATE = [-1, 1.5, 2, INF, -INF, 10**12]
_POSITIVE = [-1, 0, -0.0, -INF]
_COUNT = [-1, 0, -0.0, 1.5, INF, -INF]
# Values that look bad but are valid for this one argument (each answers, checked below).
VALID_HERE = {
    ("EpsilonResult", "epsilon"): [None],  # None: the accountant does not apply
    ("rdp_subsampled_gaussian", "noise_multiplier"): [0, -0.0],  # σ = 0: ρ = ∞
    ("rdp_replace_one", "noise_multiplier"): [0, -0.0],
    # None: the file's own sampler / recorded adjacency
    ("PrivacyAccountant.from_schedule_file", "sampling"): [None],
    ("PrivacyAccountant.from_schedule_file", "adjacency"): [None],
    ("gaussian_delta", "epsilon"): [-1, -INF, [], [1, 2]],  # δ(ε) at every real ε, arrays too
    **{(label, "delta"): [0, -0.0]  # an (ε, 0)-DP mechanism composes and amplifies
       for label in ("amplify_poisson", "compose_advanced", "compose_kairouz")},
}


def _listed(value, values) -> bool:
    return any(value is item or (type(value) is type(item) and value == item) for item in values)


def must_refuse(label: str, argument: str | None, value) -> bool:
    """Whether ``value`` for ``argument`` of ``label`` must be refused (not only: may)."""
    if argument not in MUST_REFUSE or _listed(value, VALID_HERE.get((label, argument), [])):
        return False
    return _listed(value, [*NOT_A_NUMBER, *MUST_REFUSE[argument]])


MUST_REFUSE = {
    **dict.fromkeys(["sampling_rate", "sample_rate"], _RATE),
    **dict.fromkeys(["delta", "delta_slack"], [0, -0.0, *_RATE]),
    **dict.fromkeys(["noise_multiplier", "target_noise_multiplier", "update_noise_multiplier",
                     "sensitivity", "precision", "tolerance"], _POSITIVE),
    **dict.fromkeys(["steps", "k", "batch_size", "dataset_size"], _COUNT),
    **dict.fromkeys(["epsilon", "target_epsilon"], [-1, -INF]),
}


def _schedule():
    return dpcalc.Schedule.single(0.01, 2.0, 10)


def _phase():
    return dpcalc.Phase(0.01, 2.0, 10)


def _setting():
    return dpcalc.GroupSetting(2, 10, 1000, 2.0, 10)


def _accountant():
    return dpcalc.PrivacyAccountant().step(2.0, 0.01, 10)


_SCRATCH = tempfile.mkdtemp(prefix="dpcalc-boundary-")
_SAVED_RUN = os.path.join(_SCRATCH, "saved.csv")
dpcalc.PrivacyAccountant().step(2.0, 0.01, 10).to_schedule_file(_SAVED_RUN)


def _in_scratch(path):
    """A relative str path inside a scratch folder (the battery's "x" writes nothing here)."""
    return os.path.join(_SCRATCH, path) if isinstance(path, str) and path.strip() else path


def _opacus():
    return dpcalc.OpacusAccountant().step(noise_multiplier=2.0, sample_rate=0.01, steps=10)


def _pair():
    return dpcalc.GaussianMixturePair([0.99, 0.01], 2.0)


def _phases():
    from dpcalc.pb.buckets import schedule_phases

    return schedule_phases(_schedule())


class _Optimizer:
    noise_multiplier = 2.0


class _Engine:
    """The attribute OpacusAccountant.attach needs of an Opacus PrivacyEngine."""

    accountant = None
    dataset = None

    def make_private(self, **kwargs):
        return kwargs


# (label, callable, valid keyword arguments): each argument is replaced by every BATTERY value.
CALLS = [
    ("Phase", dpcalc.Phase, dict(sampling_rate=0.01, noise_multiplier=2.0, steps=10,
                                 sampling="poisson", adjacency="add-remove")),
    ("Phase.from_batches", dpcalc.Phase.from_batches,
     dict(batch_size=10, dataset_size=1000, noise_multiplier=2.0, steps=10, sampling="fixed")),
    ("Phase.with_noise_multiplier", lambda noise_multiplier: _phase().with_noise_multiplier(
        noise_multiplier), dict(noise_multiplier=2.0)),
    ("Phase.with_steps", lambda steps: _phase().with_steps(steps), dict(steps=10)),
    ("Schedule", lambda phases: dpcalc.Schedule(phases), dict(phases=(_phase(),))),
    ("Schedule.single", dpcalc.Schedule.single,
     dict(sampling_rate=0.01, noise_multiplier=2.0, steps=10, sampling="poisson",
          adjacency="add-remove")),
    ("Schedule.from_epochs", lambda noise_multiplier, epochs, sampling_rate:
        dpcalc.Schedule.from_epochs(noise_multiplier, epochs, sampling_rate=sampling_rate),
     dict(noise_multiplier=2.0, epochs=1, sampling_rate=0.1)),
    ("Schedule.from_epochs batches", lambda batch_size, dataset_size: dpcalc.Schedule.from_epochs(
        2.0, 1, batch_size=batch_size, dataset_size=dataset_size),
     dict(batch_size=10, dataset_size=100)),
    ("Schedule.with_noise_multiplier", lambda noise_multiplier:
        _schedule().with_noise_multiplier(noise_multiplier), dict(noise_multiplier=2.0)),
    ("Schedule.with_steps", lambda steps: _schedule().with_steps(steps), dict(steps=10)),
    ("Schedule.with_noise_scale", lambda scale: _schedule().with_noise_scale(scale),
     dict(scale=1.5)),
    ("EpsilonResult", dpcalc.EpsilonResult,
     dict(accountant="pb", epsilon=1.0, certified=True, epsilon_lower=0.5, order=None,
          notes=(), details={})),
    ("accountant_names", dpcalc.accountant_names, {}),
    ("get_accountant", dpcalc.get_accountant, dict(name="rdp")),
    ("get_accountant pb options", lambda tolerance: dpcalc.get_accountant("pb", tolerance=tolerance),
     dict(tolerance=0.01)),
    *[(f"{name}.epsilon", (lambda name: lambda schedule, delta:
                            dpcalc.get_accountant(name).epsilon(schedule, delta))(name),
       dict(schedule=_schedule(), delta=1e-5)) for name in dpcalc.accountant_names()],
    *[(f"{name}.delta", (lambda name: lambda schedule, epsilon:
                          dpcalc.get_accountant(name).delta(schedule, epsilon))(name),
       dict(schedule=_schedule(), epsilon=1.0)) for name in dpcalc.accountant_names()],
    *[(f"{name}.epsilon_curve", (lambda name: lambda schedules, delta, on_done, map_points:
                                  dpcalc.get_accountant(name).epsilon_curve(
                                      schedules, delta, on_done, map_points))(name),
       dict(schedules=[_schedule()], delta=1e-5, on_done=None, map_points=None))
      for name in ("pb", "rdp", "gdp")],
    *[(f"{name}.not_applicable", (lambda name: lambda schedule:
                                   dpcalc.get_accountant(name).not_applicable(schedule))(name),
       dict(schedule=_schedule())) for name in ("pb", "rdp")],
    ("epsilon_results", dpcalc.epsilon_results,
     dict(names=["rdp"], schedule=_schedule(), delta=1e-5)),
    ("GaussianMixturePair", dpcalc.GaussianMixturePair,
     dict(weights=[0.99, 0.01], noise_multiplier=2.0, prune=0.0)),
    ("GaussianMixturePair.subsampled_gaussian", dpcalc.GaussianMixturePair.subsampled_gaussian,
     dict(sampling_rate=0.01, noise_multiplier=2.0)),
    ("pair.loss", lambda x: _pair().loss(x), dict(x=[0.0, 1.0])),
    ("pair.inverse_loss", lambda loss_values: _pair().inverse_loss(loss_values),
     dict(loss_values=[0.0, 0.01])),
    ("pair.log_bucket_masses", lambda direction, edges: _pair().log_bucket_masses(direction, edges),
     dict(direction="remove", edges=[0.0, 0.01, 0.02])),
    ("pair.log_tails", lambda direction, grid: _pair().log_tails(direction, grid),
     dict(direction="add", grid=[0.0, 0.01])),
    ("pair.loss_moments", lambda direction: _pair().loss_moments(direction),
     dict(direction="remove")),
    ("pair.loss_range", lambda direction, half_width: _pair().loss_range(direction, half_width),
     dict(direction="remove", half_width=10.0)),
    ("epsilon_bounds", dpcalc.epsilon_bounds,
     dict(phases=_phases(), delta=1e-5, tolerance=0.01, grid_step=None, epsilon_hint=None,
          start_tolerance=None)),
    ("delta_bounds", dpcalc.delta_bounds, dict(phases=_phases(), epsilon=1.0, grid_step=None)),
    ("rdp_subsampled_gaussian", dpcalc.rdp_subsampled_gaussian,
     dict(sampling_rate=0.01, noise_multiplier=2.0, orders=[1.5, 2.0, 32.0])),
    ("rdp_to_epsilon_classic", dpcalc.rdp_to_epsilon_classic,
     dict(orders=[2.0, 4.0], rdp_total=[0.1, 0.3], delta=1e-5)),
    ("rdp_to_epsilon_improved", dpcalc.rdp_to_epsilon_improved,
     dict(orders=[2.0, 4.0], rdp_total=[0.1, 0.3], delta=1e-5)),
    ("gaussian_delta", dpcalc.gaussian_delta, dict(epsilon=1.0, noise_multiplier=2.0, sensitivity=1.0)),
    ("gaussian_epsilon", dpcalc.gaussian_epsilon, dict(delta=1e-5, noise_multiplier=2.0, sensitivity=1.0)),
    ("analytic_gaussian_sigma", dpcalc.analytic_gaussian_sigma, dict(epsilon=1.0, delta=1e-5, sensitivity=1.0)),
    ("classic_gaussian_sigma", dpcalc.classic_gaussian_sigma, dict(epsilon=0.5, delta=1e-5, sensitivity=1.0)),
    ("amplify_poisson", dpcalc.amplify_poisson, dict(epsilon=1.0, delta=1e-5, sampling_rate=0.01)),
    ("hypergeometric_weights", dpcalc.hypergeometric_weights, dict(k=2, batch_size=10, dataset_size=100)),
    ("poisson_weights", dpcalc.poisson_weights, dict(k=2, sampling_rate=0.01)),
    ("compose_naive", dpcalc.compose_naive, dict(epsilons=[0.1, 0.2], deltas=[1e-6, 1e-6])),
    ("compose_advanced", dpcalc.compose_advanced, dict(epsilon=0.1, delta=1e-6, k=10, delta_slack=1e-6)),
    ("compose_kairouz", dpcalc.compose_kairouz, dict(epsilon=0.1, delta=1e-6, k=10, delta_slack=1e-6)),
    ("calibrate_noise_multiplier", dpcalc.calibrate_noise_multiplier,
     dict(epsilon_at=lambda sigma: 1.0 / sigma, target_epsilon=0.5, low_guess=None, high_guess=None,
          precision=1e-3, max_sigma=1e4, min_sigma=1e-4)),
    ("calibrate_noise_multiplier answers", lambda answer: dpcalc.calibrate_noise_multiplier(
        lambda sigma: answer, 0.5), dict(answer=0.1)),
    ("dpsgd_sigma", dpcalc.dpsgd_sigma,
     dict(accountant_name="rdp", target_epsilon=2.0, delta=1e-5, sampling_rate=0.01, steps=10,
          precision=1e-3, max_sigma=1e4)),
    ("dpsgd_sigma schedule", lambda schedule: dpcalc.dpsgd_sigma("rdp", 2.0, 1e-5, schedule=schedule),
     dict(schedule=_schedule())),
    ("gaussian_mechanism_sigmas", dpcalc.gaussian_mechanism_sigmas,
     dict(epsilon=1.0, delta=1e-5, sensitivity=1.0)),
    ("GroupSetting", dpcalc.GroupSetting,
     dict(k=2, batch_size=10, dataset_size=1000, noise_multiplier=2.0, steps=10,
          sampling="poisson", adjacency="add-remove")),
    ("GroupSetting.with_k", lambda k: _setting().with_k(k), dict(k=3)),
    ("GroupSetting.with_sigma", lambda noise_multiplier: _setting().with_sigma(noise_multiplier),
     dict(noise_multiplier=3.0)),
    ("GroupSetting.with_steps", lambda steps: _setting().with_steps(steps), dict(steps=5)),
    ("GroupSetting.record_phase", lambda: _setting().record_phase(), {}),
    ("group_epsilons", dpcalc.group_epsilons,
     dict(setting=_setting(), k_values=[2], delta=1e-5, methods=("rdp-overapprox",), tolerance=0.01)),
    ("worst_case", dpcalc.worst_case, dict(phase=_phase())),
    ("WorstCase", dpcalc.WorstCase,
     dict(pair=_pair(), sampling_rate=0.01, noise_multiplier=2.0, sensitivity=1.0,
          family="poisson", why="test")),
    ("rdp_replace_one", dpcalc.rdp_replace_one,
     dict(sampling_rate=0.01, noise_multiplier=2.0, orders=[2.0, 3.0], sensitivity=2.0)),
    ("adaptive_clipping_noise_multiplier", dpcalc.adaptive_clipping_noise_multiplier,
     dict(update_noise_multiplier=2.0, clipped_count_stddev=10.0)),
    ("update_noise_multiplier", dpcalc.update_noise_multiplier,
     dict(target_noise_multiplier=2.0, clipped_count_stddev=10.0)),
    ("PrivacyAccountant", dpcalc.PrivacyAccountant,
     dict(sampling="poisson", adjacency="add-remove", tolerance=0.01)),
    ("PrivacyAccountant.step", lambda noise_multiplier, sample_rate, steps:
        dpcalc.PrivacyAccountant().step(noise_multiplier, sample_rate, steps),
     dict(noise_multiplier=2.0, sample_rate=0.01, steps=10)),
    ("PrivacyAccountant.extend", lambda schedule: dpcalc.PrivacyAccountant().extend(schedule),
     dict(schedule=_schedule())),
    ("PrivacyAccountant.epsilon", lambda delta: _accountant().epsilon(delta), dict(delta=1e-5)),
    ("PrivacyAccountant.bounds", lambda delta: _accountant().bounds(delta), dict(delta=1e-5)),
    ("PrivacyAccountant.result", lambda delta: _accountant().result(delta), dict(delta=1e-5)),
    ("PrivacyAccountant.to_schedule_file", lambda path: _accountant().to_schedule_file(
        _in_scratch(path)), dict(path="run.csv")),
    ("PrivacyAccountant.from_schedule_file", lambda path, sampling, adjacency:
        dpcalc.PrivacyAccountant.from_schedule_file(_in_scratch(path), sampling, adjacency),
     dict(path=_SAVED_RUN, sampling="poisson", adjacency="add-remove")),
    ("OpacusAccountant", dpcalc.OpacusAccountant, dict(sampling="poisson", adjacency="add-remove")),
    ("OpacusAccountant.step", lambda noise_multiplier, sample_rate, steps: dpcalc.OpacusAccountant(
        ).step(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps),
     dict(noise_multiplier=2.0, sample_rate=0.01, steps=10)),
    ("OpacusAccountant.get_epsilon", lambda delta: _opacus().get_epsilon(delta), dict(delta=1e-5)),
    ("OpacusAccountant.noise_multiplier", lambda target_epsilon, target_delta, sample_rate, steps:
        dpcalc.OpacusAccountant().noise_multiplier(target_epsilon, target_delta, sample_rate,
                                                   steps=steps),
     dict(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.01, steps=100)),
    ("OpacusAccountant.attach", lambda engine: dpcalc.OpacusAccountant().attach(engine),
     dict(engine=_Engine())),
    ("OpacusAccountant.get_optimizer_hook_fn", lambda sample_rate:
        dpcalc.OpacusAccountant().get_optimizer_hook_fn(sample_rate)(_Optimizer()),
     dict(sample_rate=0.01)),
    ("OpacusAccountant hook(optimizer)", lambda optimizer:
        dpcalc.OpacusAccountant().get_optimizer_hook_fn(0.01)(optimizer),
     dict(optimizer=_Optimizer())),
    ("OpacusAccountant.state_dict", lambda destination: _opacus().state_dict(destination),
     dict(destination=None)),
    ("OpacusAccountant.load_state_dict", lambda state_dict:
        dpcalc.OpacusAccountant().load_state_dict(state_dict),
     dict(state_dict={"history": [(2.0, 0.01, 10)], "mechanism": "dpcalc-pb"})),
    ("OpacusAccountant.load_state_dict history", lambda history:
        dpcalc.OpacusAccountant().load_state_dict({"history": history}),
     dict(history=[(2.0, 0.01, 10)])),
    ("OpacusAccountant.load_state_dict entry", lambda entry:
        dpcalc.OpacusAccountant().load_state_dict({"history": [entry]}),
     dict(entry=(2.0, 0.01, 10))),
    *[entry for name, extra in [("PoissonSampler", dict(sampling_rate=0.01)),
                                ("FixedSizeSampler", dict(batch_size=10)),
                                ("TruncatedPoissonSampler", dict(sampling_rate=0.01,
                                                                 max_batch_size=20)),
                                ("ShuffleSampler", dict(batch_size=10)),
                                ("BallsInBinsSampler", dict(batch_size=10))]
      for entry in [
          (name, getattr(dpcalc, name), dict(dataset_size=1000, steps=10, seed=0, **extra)),
          (f"{name}.schedule", lambda noise_multiplier, adjacency, name=name, extra=extra:
              getattr(dpcalc, name)(1000, steps=10, seed=0, **extra).schedule(noise_multiplier,
                                                                               adjacency),
           dict(noise_multiplier=2.0, adjacency="zero-out" if "Shuffle" in name else "add-remove")),
          (f"{name}.phase", lambda noise_multiplier, name=name, extra=extra:
              getattr(dpcalc, name)(1000, steps=10, seed=0, **extra).phase(noise_multiplier),
           dict(noise_multiplier=2.0)),
          (f"{name}.generator", lambda name=name, extra=extra:
              getattr(dpcalc, name)(1000, steps=10, seed=0, **extra).generator(), dict())]],
]


def _nan_free(value, seen=None) -> bool:
    """No NaN anywhere in ``value`` (numbers, arrays, containers, dataclasses, objects)."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return True
    seen.add(id(value))
    if isinstance(value, (bool, str, bytes)) or value is None:
        return True
    if isinstance(value, int):
        return True
    if isinstance(value, (float, complex, np.number)):
        return not np.isnan(value)
    if isinstance(value, np.ndarray):
        return value.dtype.kind not in "fc" or not np.isnan(value).any()
    if isinstance(value, dict):
        return all(_nan_free(item, seen) for item in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return all(_nan_free(item, seen) for item in value)
    if dataclasses.is_dataclass(value):
        return all(_nan_free(getattr(value, f.name), seen) for f in dataclasses.fields(value))
    return True


def _cases():
    for label, call, valid in CALLS:
        if not valid:
            yield pytest.param(label, call, valid, None, None, id=label)
        for argument in valid:
            for index, bad in enumerate(BATTERY):
                yield pytest.param(label, call, valid, argument, bad,
                                   id=f"{label}-{argument}-{index}")


def _outcome(call, kwargs):
    """'ok' with a NaN-free answer, 'refused' (DpcalcError), or the unexpected exception."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # numpy's overflow/invalid warnings
        try:
            value = call(**kwargs)
        except DpcalcError as error:
            message = str(error)
            assert message and "\n" not in message and len(message) < 500, message
            return "refused", message
    return "ok", value


@pytest.mark.parametrize("label, call, valid, argument, bad", list(_cases()))
def test_every_public_callable_refuses_bad_values_with_dpcalc_error(label, call, valid, argument,
                                                                    bad):
    kwargs = dict(valid)
    if argument is not None:
        kwargs[argument] = bad
    kind, value = _outcome(call, kwargs)
    if must_refuse(label, argument, bad):
        assert kind == "refused", (label, argument, bad, value)
    if kind == "ok":
        assert _nan_free(value), (label, argument, bad, value)


def test_the_valid_arguments_of_the_battery_answer():
    """Each base call is itself valid (else the battery above would test nothing)."""
    for label, call, valid in CALLS:
        kind, value = _outcome(call, dict(valid))
        assert kind == "ok", (label, value)


def test_every_export_is_in_the_battery():
    """A new export must be added to CALLS (classes: also their public methods)."""
    import inspect

    covered = " ".join(label for label, _, _ in CALLS)
    for name in dpcalc.__all__:
        value = getattr(dpcalc, name)
        if name in ("__version__", "DpcalcError", "SAMPLINGS", "ADJACENCIES", "Accountant"):
            continue
        assert name in covered or name.lower() in covered.lower(), name
        if inspect.isclass(value):
            for method, _ in inspect.getmembers(value, callable):
                if not method.startswith("_"):
                    assert f"{name}.{method}" in covered or method in covered, (name, method)


def test_dpcalc_error_is_a_value_error():
    """Code that caught ValueError before the library had its own error still catches it."""
    assert issubclass(dpcalc.DpcalcError, ValueError)


# --- the cases the robustness run found, each by name ----------------------------------------
@pytest.mark.parametrize("kwargs", [
    dict(noise_multiplier=-1), dict(sampling_rate=1.5), dict(sampling_rate=INF),
    dict(sampling_rate=NAN), dict(noise_multiplier=NAN), dict(sensitivity=-2),
    dict(orders=[2.0, NAN]), dict(orders=[2, HUGE]),
])
def test_rdp_replace_one_refuses_what_it_used_to_answer(kwargs):
    """σ = −1 silently gave σ = 1's values, q = 1.5 and ∞ gave numbers, NaN gave NaN."""
    arguments = {"sampling_rate": 0.01, "noise_multiplier": 1.0, "orders": [2.0, 3.0], **kwargs}
    with pytest.raises(DpcalcError, match=next(iter(kwargs)).replace("_", "_")):
        dpcalc.rdp_replace_one(**arguments)


def test_rdp_replace_one_at_its_edges():
    """σ = 0 is ∞ (as rdp_subsampled_gaussian); q = 0 is 0; q = 1 is the Gaussian αΔ²/(2σ²)."""
    assert np.all(dpcalc.rdp_replace_one(0.01, 0.0, [2, 3]) == np.inf)
    assert np.all(dpcalc.rdp_subsampled_gaussian(0.01, 0.0, [2, 3]) == np.inf)
    assert np.all(dpcalc.rdp_replace_one(0.0, 1.0, [2, 3]) == 0.0)
    assert dpcalc.rdp_replace_one(1.0, 2.0, [2.0, 3.0]).tolist() == [2 * 4 / 8, 3 * 4 / 8]
    # a sensitivity below the float range's square: ρ rounds to 0, not a math domain error
    assert np.all(dpcalc.rdp_replace_one(0.01, 2.0, [2, 3, 2.5], sensitivity=1e-300) == 0.0)


HUGE_CALLS = [
    lambda: dpcalc.gaussian_delta(HUGE, 1.0),
    lambda: dpcalc.gaussian_epsilon(HUGE, 1.0),
    lambda: dpcalc.analytic_gaussian_sigma(HUGE, 1e-5),
    lambda: dpcalc.classic_gaussian_sigma(HUGE, 1e-5),
    lambda: dpcalc.amplify_poisson(HUGE, 1e-5, 0.1),
    lambda: dpcalc.amplify_poisson(1.0, 1e-5, HUGE),
    lambda: dpcalc.poisson_weights(2, HUGE),
    lambda: dpcalc.poisson_weights(HUGE, 0.1),
    lambda: dpcalc.hypergeometric_weights(HUGE, 10, 100),
    lambda: dpcalc.compose_advanced(HUGE, 1e-6, 10, 1e-6),
    lambda: dpcalc.compose_kairouz(0.1, 1e-6, HUGE, 1e-6),
    lambda: dpcalc.compose_naive([HUGE], [0.0]),
    lambda: dpcalc.rdp_subsampled_gaussian(0.01, HUGE, [2.0]),
    lambda: dpcalc.rdp_subsampled_gaussian(0.01, 1.0, [HUGE]),
    lambda: dpcalc.rdp_to_epsilon_classic([2.0], [HUGE], 1e-5),
    lambda: dpcalc.rdp_to_epsilon_improved([HUGE], [0.1], 1e-5),
    lambda: dpcalc.GaussianMixturePair([1, HUGE], 1.0),
    lambda: dpcalc.GaussianMixturePair([0.5, 0.5], HUGE),
    lambda: dpcalc.Schedule.single(0.01, HUGE, 10),
    lambda: dpcalc.Phase(0.01, 1.0, HUGE),
    lambda: dpcalc.calibrate_noise_multiplier(lambda sigma: 1.0 / sigma, HUGE),
    lambda: dpcalc.dpsgd_sigma("rdp", HUGE, 1e-5, 0.01, 10),
    lambda: dpcalc.gaussian_mechanism_sigmas(HUGE, 1e-5),
    lambda: dpcalc.get_accountant("rdp").epsilon(_schedule(), HUGE),
    lambda: dpcalc.PrivacyAccountant().step(HUGE, 0.01),
    lambda: dpcalc.GroupSetting(HUGE, 10, 1000, 1.0, 10),
    lambda: dpcalc.adaptive_clipping_noise_multiplier(HUGE, 10.0),
    lambda: dpcalc.update_noise_multiplier(1.0, HUGE),
]


@pytest.mark.parametrize("call", HUGE_CALLS)
def test_an_integer_beyond_the_float_range_is_refused_in_one_line(call):
    """10**400 overflowed inside ~20 exported functions (OverflowError); the error line
    names the argument and echoes at most a cut of the value."""
    with pytest.raises(DpcalcError) as raised:
        call()
    assert len(str(raised.value)) < 300 and "\n" not in str(raised.value)


def test_the_named_cases_raise_dpcalc_error():
    cases = [
        lambda: dpcalc.epsilon_results([], _schedule(), 1e-5),  # IndexError
        lambda: dpcalc.worst_case(None),  # AttributeError
        lambda: dpcalc.worst_case("poisson"),
        lambda: dpcalc.OpacusAccountant().load_state_dict({"history": 5}),  # bare TypeError
        lambda: dpcalc.OpacusAccountant().load_state_dict({"history": [5]}),
        lambda: dpcalc.OpacusAccountant().get_optimizer_hook_fn(0.01)(object()),  # AttributeError
        lambda: dpcalc.get_accountant(["pb"]),  # unhashable: TypeError
        lambda: dpcalc.get_accountant("rdp", tolerance=0.01),  # an option rdp does not take
        lambda: dpcalc.GaussianMixturePair([0.9, 0.1], 1.0).log_tails("sideways", [0.0]),
        lambda: dpcalc.GaussianMixturePair([0.9, 0.1], 1.0).log_bucket_masses("add", []),
        lambda: dpcalc.calibrate_noise_multiplier(lambda sigma: NAN, 1.0),  # ArithmeticError
        lambda: dpcalc.compose_kairouz(1e-320, 1e-6, 10, 1e-6) and dpcalc.analytic_gaussian_sigma(
            1e300, 1e-5, sensitivity=1e-300),  # σ ≈ 1e-450: beyond the float range
    ]
    for case in cases:
        with pytest.raises(DpcalcError):
            case()


def test_tiny_epsilons_answer_instead_of_dividing_by_zero():
    """ε = 1e-320 was a ZeroDivisionError (analytic σ) and a math domain error (Kairouz);
    the σ found must meet δ (gaussian_delta, an independent evaluation of the profile), and
    σ at ε ≈ 0 is the one where δ(0) = erf(μ/(2√2)) = δ (closed form)."""

    from scipy.special import erfinv

    sigma = dpcalc.analytic_gaussian_sigma(1e-320, 1e-5)
    assert dpcalc.gaussian_delta(1e-320, sigma) <= 1e-5
    assert sigma == pytest.approx(1.0 / (2.0 * math.sqrt(2.0) * erfinv(1e-5)), rel=1e-9)
    epsilon, _ = dpcalc.compose_kairouz(1e-320, 1e-6, 10, 1e-6)
    assert 0.0 <= epsilon <= 10 * 1e-320 * (1 + 1e-9)
    # δ close to 1: σ from 1/(√(z² + 2ε) − z), no cancellation (was log(0))
    sigma = dpcalc.analytic_gaussian_sigma(1e-300, 0.999)
    assert dpcalc.gaussian_delta(1e-300, sigma) <= 0.999
    assert sigma == pytest.approx(1.0 / (2.0 * math.sqrt(2.0) * erfinv(0.999)), rel=1e-9)


def test_a_failing_accountant_is_an_error_row_never_certified(monkeypatch):
    """epsilon_results reports an accountant that fails inside as a row: ε None, certified
    False, ``error`` set and a note "internal error: …" — never a number, never certified."""
    from dpcalc.accountants.rdp_accountants import RdpAccountant

    def broken(self, schedule, delta):
        raise ZeroDivisionError("injected")

    monkeypatch.setattr(RdpAccountant, "_epsilon", broken)
    rdp, gdp = dpcalc.epsilon_results(["rdp", "gdp"], _schedule(), 1e-5)
    assert rdp.failed and rdp.epsilon is None and rdp.certified is False
    assert rdp.error == "ZeroDivisionError: injected"
    assert rdp.notes == ("internal error: ZeroDivisionError: injected",)
    assert not gdp.failed and gdp.epsilon > 0
    with pytest.raises(DpcalcError):  # such a row cannot claim a value or a certificate
        dpcalc.EpsilonResult("rdp", 1.0, True, error="ZeroDivisionError: x")


# --- random valid inputs ---------------------------------------------------------------------
_RATES = st.one_of(st.floats(1e-9, 1.0), st.sampled_from([1e-300, 5e-324, 1.0, 0.5]))
_SIGMAS = st.one_of(st.floats(0.2, 100.0), st.sampled_from([1e-4, 1e6, 0.05]))
_DELTAS = st.one_of(st.floats(1e-300, 0.99), st.sampled_from([1e-300, 1e-12, 1e-5]))
_EPSILONS = st.one_of(st.floats(0.0, 1e3), st.sampled_from([0.0, 1e-320, 1e-300, 1e300]))
_STEPS = st.integers(1, 200)


def _check_result(result) -> None:
    assert _nan_free(result), result
    if isinstance(result, dpcalc.EpsilonResult) and result.epsilon is not None:
        assert result.epsilon >= 0
        if result.certified and result.epsilon_lower is not None:
            assert result.epsilon_lower <= result.epsilon


LIBRARY = {
    "rdp": lambda d: dpcalc.get_accountant("rdp").epsilon(
        dpcalc.Schedule.single(d(_RATES), d(_SIGMAS), d(_STEPS)), d(_DELTAS)),
    "gdp": lambda d: dpcalc.get_accountant("gdp").epsilon(
        dpcalc.Schedule.single(d(_RATES), d(_SIGMAS), d(_STEPS)), d(_DELTAS)),
    "rdp_curve": lambda d: dpcalc.rdp_subsampled_gaussian(d(_RATES), d(_SIGMAS), [1.5, 2, 8, 64]),
    "rdp_replace_one": lambda d: dpcalc.rdp_replace_one(d(_RATES), d(_SIGMAS), [1.5, 2, 8, 64]),
    "gaussian_delta": lambda d: dpcalc.gaussian_delta(d(_EPSILONS), d(_SIGMAS)),
    "gaussian_epsilon": lambda d: dpcalc.gaussian_epsilon(d(_DELTAS), d(_SIGMAS)),
    "analytic_sigma": lambda d: dpcalc.analytic_gaussian_sigma(d(_EPSILONS), d(_DELTAS)),
    "mechanism_sigmas": lambda d: dpcalc.gaussian_mechanism_sigmas(d(_EPSILONS), d(_DELTAS)),
    "amplify": lambda d: dpcalc.amplify_poisson(d(_EPSILONS), d(_DELTAS), d(_RATES)),
    "kairouz": lambda d: dpcalc.compose_kairouz(d(_EPSILONS), d(_DELTAS), d(_STEPS), d(_DELTAS)),
    "advanced": lambda d: dpcalc.compose_advanced(d(_EPSILONS), d(_DELTAS), d(_STEPS), d(_DELTAS)),
    "poisson_weights": lambda d: dpcalc.poisson_weights(d(st.integers(1, 64)), d(_RATES)),
    "hypergeometric": lambda d: dpcalc.hypergeometric_weights(
        d(st.integers(1, 8)), d(st.integers(1, 50)), d(st.integers(50, 10**6))),
    "mixture": lambda d: dpcalc.GaussianMixturePair.subsampled_gaussian(
        d(_RATES), d(_SIGMAS)).log_tails(d(st.sampled_from(["remove", "add"])),
                                         [d(st.floats(-50, 50)), d(st.floats(-50, 50))]),
    "pb": lambda d: dpcalc.get_accountant("pb").epsilon(
        dpcalc.Schedule.single(d(st.floats(1e-4, 1.0)), d(st.floats(0.5, 20.0)),
                               d(st.integers(1, 100))), d(st.floats(1e-12, 0.5))),
}


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(LIBRARY)), data=st.data())
def test_random_valid_inputs_give_dpcalc_error_or_nan_free_answers(name, data):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            result = LIBRARY[name](data.draw)
        except DpcalcError as error:  # e.g. a σ beyond the float range: one line
            assert "\n" not in str(error)
            return
    _check_result(result)
