"""What `dpcalc simulate` was asked and what a run produced: plain data, shared by the
command (simulate.py) and its output (simulate_output.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dpcalc.accountants.result import EpsilonResult
    from dpcalc.audit import AuditResult, AuditSettings, Verdict
    from dpcalc.dpsgd import EpochRecord


@dataclass
class DataChoice:
    """Where the examples come from, already validated."""

    path: str | None
    label: str | None
    samples: int | None
    features: int | None
    classes: int | None


@dataclass(frozen=True)
class SimulationRequest:
    """What to simulate: validated options; ``training`` is TrainingConfig's option text
    (validated there under the same flag names)."""

    data: DataChoice
    test_fraction: float
    seed: int
    with_baseline: bool
    group_size: int | None
    delta: float
    noise_multiplier: float | None  # None: the default σ, or calibrated from target_epsilon
    target_epsilon: float | None
    training: dict
    adjacency: str = "add-remove"
    audit: "AuditSettings | None" = None


@dataclass
class EpochRow:
    """One epoch: the engine's monitoring values and ε for the steps run so far."""

    record: "EpochRecord"
    epsilon: "EpsilonResult | None" = None       # pb; None when this epoch was not accounted
    epsilon_rdp: "EpsilonResult | None" = None
    # shuffle under add/remove: no ε applies; pb's Poisson figure at q = B/N, shown for
    # comparison only (epsilon and epsilon_rdp stay None)
    poisson_reference: "EpsilonResult | None" = None

    @property
    def accounted(self) -> bool:
        return self.epsilon is not None or self.poisson_reference is not None


@dataclass
class AuditOutcome:
    """An audit's empirical bound beside pb's certified bounds for the same (q, σ, steps, δ)."""

    result: "AuditResult"
    certified: "EpsilonResult | None"
    verdict: "Verdict"
    poisson_epsilon: float | None = None  # shuffled runs: the Poisson figure (not applying)

    @property
    def exceeds_poisson(self) -> bool | None:
        """Whether the empirical lower bound is above the Poisson figure (None: no figure)."""
        if self.poisson_epsilon is None:
            return None
        return self.result.epsilon_lower > self.poisson_epsilon


@dataclass
class SimulationOutcome:
    """Everything the renderers need; computed once, shown as table or JSON."""

    inputs: dict
    rows: list[EpochRow]
    steps: int
    baseline: "EpochRecord | None" = None
    group: "EpsilonResult | None" = None
    notes: list[str] = field(default_factory=list)
    audit: AuditOutcome | None = None

    @property
    def final(self) -> EpochRow:
        return self.rows[-1]


