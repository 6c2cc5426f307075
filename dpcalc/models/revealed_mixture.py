"""A revealed mixture of dominating pairs: with probability w_i, branch i, and the branch
is published with the output.

If one step of a mechanism on neighbours D, D' first draws a branch W with the same law
under both (W independent of the differing record), and given W = i its output pair is
dominated by (P_i, Q_i), then the pair
    P̃ = Σ_i w_i·(δ_i × P_i),   Q̃ = Σ_i w_i·(δ_i × Q_i)
(the branch revealed) dominates the step: dropping W is post-processing, and
    H_γ(P̃ ‖ Q̃) = Σ_i w_i·H_γ(P_i ‖ Q_i)   for every γ ≥ 0,
since the events of different branches are disjoint. Its privacy loss at (i, y) is branch
i's loss at y, so the privacy loss distribution is the w-mixture of the branches' PLDs:
P̃(L > e) = Σ_i w_i·P_i(L_i > e), and likewise for Q and for L ≤ e. Dominating pairs
compose under adaptive composition (Zhu, Dong, Wang 2022, Thm 10), so pb composes P̃
like any other pair. (Ganesh 2025, arXiv 2508.15089, bounds truncated Poisson sampling
this way; dp_accounting's MixtureGaussianPrivacyLoss / truncated Poisson accountant too.)

Several neighbouring instances can be held as separate ``directions``, each with its own
weighted components (each component read in one of its own directions), so pb composes
every instance on its own and reports the worst: ``components`` is a mapping
direction → [(weight, pair, pair_direction), …], or a plain list [(weight, pair), …]
whose pairs share their directions.
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.errors import DpcalcError


def _logsumexp(terms: list[np.ndarray]) -> np.ndarray:
    stacked = np.vstack(terms)
    peak = stacked.max(axis=0)
    shift = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore", under="ignore"):
        return shift + np.log(np.exp(stacked - shift).sum(axis=0))


def _normalise(components) -> dict[str, list[tuple[float, object, str]]]:
    if isinstance(components, dict):
        by_direction = {str(d): [tuple(item) for item in items] for d, items in components.items()}
    else:
        items = [tuple(item) for item in components]
        if not items or any(len(item) != 2 for item in items):
            raise DpcalcError("a revealed mixture takes [(weight, pair), …] with at least one pair")
        directions = tuple(items[0][1].directions)
        if any(tuple(pair.directions) != directions for _, pair in items):
            raise DpcalcError("a revealed mixture's pairs must share their directions")
        by_direction = {d: [(weight, pair, d) for weight, pair in items] for d in directions}
    if not by_direction:
        raise DpcalcError("a revealed mixture needs at least one direction")
    for direction, items in by_direction.items():
        weights = [float(weight) for weight, _, _ in items]
        if (not items or not all(math.isfinite(w) and w >= 0.0 for w in weights)
                or not math.isclose(sum(weights), 1.0, rel_tol=1e-9, abs_tol=1e-12)):
            raise DpcalcError(f"a revealed mixture's weights must be >= 0 and sum to 1 "
                              f"(direction {direction}); got {weights}")
        for _, pair, pair_direction in items:
            if pair_direction not in pair.directions:
                raise DpcalcError(f"a component has no direction {pair_direction!r}")
    # branches of zero weight never happen: left out, so they cannot widen the grid
    return {d: [(float(w), pair, pd) for w, pair, pd in items if float(w) > 0.0]
            for d, items in by_direction.items()}


class RevealedMixturePair:
    """Σ_i w_i·(branch i revealed, (P_i, Q_i)) per direction (module doc)."""

    def __init__(self, components):
        self.components = _normalise(components)
        self.directions = tuple(self.components)

    def _items(self, direction: str):
        try:
            return self.components[direction]
        except (KeyError, TypeError):
            raise DpcalcError(f"direction must be one of {self.directions}") from None

    def log_tails(self, direction: str, grid) -> tuple:
        """log P̃(L > e), log P̃(L ≤ e), log Q̃(L > e), log Q̃(L ≤ e): the weighted log-sum of
        the branches' tails."""
        grid = np.atleast_1d(np.asarray(grid, dtype=float))
        items = self._items(direction)
        parts = [[] for _ in range(4)]
        for weight, pair, pair_direction in items:
            log_weight = math.log(weight)
            for index, tail in enumerate(pair.log_tails(pair_direction, grid)):
                parts[index].append(log_weight + np.asarray(tail, dtype=float))
        if len(items) == 1:
            return tuple(part[0] for part in parts)
        return tuple(_logsumexp(part) for part in parts)

    def log_bucket_masses(self, direction: str, edges) -> tuple:
        """The weighted log-sum of the branches' bucket masses and end tails (each branch's
        as log_masses.bucket_masses takes them)."""
        from dpcalc.numerics.log_masses import bucket_masses

        items = self._items(direction)
        parts = [[] for _ in range(4)]
        for weight, pair, pair_direction in items:
            log_weight = math.log(weight)
            for index, value in enumerate(bucket_masses(pair, pair_direction, edges)):
                parts[index].append(log_weight + np.asarray(value, dtype=float))
        if len(items) == 1:
            masses = tuple(part[0] for part in parts)
        else:
            masses = tuple(_logsumexp(part) for part in parts)
        return (masses[0], masses[1], float(np.ravel(masses[2])[0]),
                float(np.ravel(masses[3])[0]))

    def bucket_log_error(self, direction: str, edges) -> np.ndarray:
        """A bound on the error of log_bucket_masses' logs beyond an ulp: the largest of the
        branches' own (a weighted sum of positives keeps it) and 4u per branch summed."""
        items = self._items(direction)
        edges = np.asarray(edges, dtype=float)
        own = np.zeros(edges.size - 1)
        for _, pair, pair_direction in items:
            branch = getattr(pair, "bucket_log_error", None)
            if branch is not None:
                own = np.maximum(own, branch(pair_direction, edges))
        return own + 4.0 * 2.0**-53 * (len(items) - 1)

    def loss_range(self, direction: str, half_width: float) -> tuple[float, float]:
        """The union of the branches' loss windows."""
        ranges = [pair.loss_range(pair_direction, half_width)
                  for _, pair, pair_direction in self._items(direction)]
        return min(low for low, _ in ranges), max(high for _, high in ranges)

    def loss_moments(self, direction: str) -> tuple[float, float]:
        """Mean and standard deviation of the mixture's loss under P̃ (law of total variance)."""
        items = self._items(direction)
        moments = [pair.loss_moments(pair_direction) for _, pair, pair_direction in items]
        mean = sum(w * m for (w, _, _), (m, _) in zip(items, moments))
        second = sum(w * (s * s + m * m) for (w, _, _), (m, s) in zip(items, moments))
        return float(mean), math.sqrt(max(second - mean * mean, 0.0))


def align_directions(pairs: list, base_direction: dict[str, str]) -> list:
    """The pairs of a run, each offering every direction any of them has: a pair without
    direction d is read in ``base_direction[d]`` (the same neighbouring order; e.g. a
    Poisson phase's 'remove' for a truncated phase's 'remove-larger'). Unchanged when all
    pairs already share their directions."""
    directions = tuple(dict.fromkeys(d for pair in pairs for d in pair.directions))
    if all(tuple(pair.directions) == directions for pair in pairs):
        return list(pairs)
    aligned = []
    for pair in pairs:
        if tuple(pair.directions) == directions:
            aligned.append(pair)
            continue
        mapping = {}
        for direction in directions:
            own = direction if direction in pair.directions else base_direction.get(direction)
            if own not in pair.directions:
                raise DpcalcError("every phase of a run must have the same neighbouring relation")
            mapping[direction] = [(1.0, pair, own)]
        aligned.append(RevealedMixturePair(mapping))
    return aligned
