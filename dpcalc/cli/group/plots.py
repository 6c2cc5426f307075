"""`dpcalc group --plot`: the three figures of seed 000 (ε over compositions per k, ε over
k for σ, 2σ and 4σ, the worst-case densities), drawn from the same certified bounds the
table reports.

Cost: a figure carries at most ``MAX_CURVES`` values of k (spread over the requested ones,
first and last kept) — more lines than that cannot be told apart — and the k figure
reuses the table's pb bounds at σ, so `--plot-kind all` stays within a small factor of the
plain command.
"""
from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import Callable

COMPOSITIONS = [2**power for power in range(17)]  # the seed's x-axis: 2^0 … 2^16
SIGMA_FACTORS = (1.0, 2.0, 4.0)  # ε over k is drawn for σ, 2σ and 4σ
MAX_CURVES = 8   # values of k on the compositions figure
MAX_POINTS = 16  # values of k on the k figure
MIN_CURVES_POOLED = 4  # a curve over 2^0…2^16 steps costs ~0.3 s: 4 of them pay for a pool


def spread(values: list[int], most: int) -> list[int]:
    """At most ``most`` of the sorted ``values``, roughly evenly spaced on a log scale,
    with the first and the last always kept."""
    if len(values) <= most:
        return list(values)
    import numpy as np

    positions = np.geomspace(1.0, float(len(values)), most) - 1.0
    chosen = sorted({int(round(position)) for position in positions})
    return [values[index] for index in chosen]


def _compositions(path: Path, setting, k_values: list[int], methods: list[str], delta: float,
                  map_points) -> Callable[[], None]:
    """Start the per-k pb curves (on the pool, if any); returns what draws the figure once
    they are in."""
    from dpcalc.group import pairs as group
    from dpcalc.group import bounds as group_bounds
    from dpcalc.cli.output import plots

    shown = [name for name in methods if name in ("pb", "rdp-overapprox", "group-conversion")]
    drawn = spread(k_values, MAX_CURVES)
    curves = (map_points(partial(group.pb_epsilon_over_steps, steps_list=COMPOSITIONS, delta=delta),
                         [setting.with_k(k) for k in drawn])
              if "pb" in shown else iter(()))

    def finish() -> None:
        conversions = (group_bounds.conversion_over_steps(setting, drawn, COMPOSITIONS, delta)
                       if "group-conversion" in shown else {})
        pb_curves = dict(zip(drawn, curves))
        series = []
        for k in drawn:
            each = setting.with_k(k)
            if "pb" in shown:
                series.append(plots.GroupSeries("pb", k, pb_curves[k]))
            if "rdp-overapprox" in shown:
                series.append(plots.GroupSeries("rdp-overapprox", k,
                                                group_bounds.rdp_overapprox_over_steps(
                                                    each, COMPOSITIONS, delta)))
            if "group-conversion" in shown:
                series.append(plots.GroupSeries("group-conversion", k, conversions[k]))
        plots.group_compositions_figure(
            path, COMPOSITIONS, series,
            f"ε over compositions (B={setting.batch_size}, N={setting.dataset_size}, "
            f"σ={setting.noise_multiplier:g}, δ={delta:g})")

    return finish


def _over_k(path: Path, setting, k_values: list[int], delta: float, table: dict, tolerance: float,
            map_points) -> Callable[[], None]:
    """pb's certified upper ε at --steps over k, for σ, 2σ and 4σ; at σ the table's own.
    Starts the compositions (on the pool, if any); returns what draws the figure."""
    from dpcalc.group import bounds as group_bounds
    from dpcalc.cli.output import plots

    over = spread(k_values if len(k_values) > 1 else list(range(1, k_values[0] + 1)), MAX_POINTS)
    wanted = [(factor, k) for factor in SIGMA_FACTORS for k in over
              if not (factor == 1.0 and k in table)]
    settings = [setting.with_k(k).with_sigma(setting.noise_multiplier * factor)
                for factor, k in wanted]
    answers = map_points(partial(group_bounds.numeric_epsilon, delta=delta, tolerance=tolerance),
                         [("pb", each) for each in settings])

    def finish() -> None:
        found = dict(zip(wanted, answers))
        series = []
        for factor in SIGMA_FACTORS:
            sigma = setting.noise_multiplier * factor
            values = [table[k] if (factor, k) not in found else found[(factor, k)].epsilon
                      for k in over]
            series.append(plots.GroupSeries("pb", None, values, f"σ = {sigma:g}"))
        plots.group_over_k_figure(
            path, over, series,
            f"pb ε over k (B={setting.batch_size}, N={setting.dataset_size}, "
            f"T={setting.steps}, δ={delta:g})")

    return finish


def _distributions(path: Path, setting, k_values: list[int], methods: list[str]):
    import numpy as np

    from dpcalc.group import pairs as group
    from dpcalc.cli.output import plots

    each = setting.with_k(max(k_values))
    spec = (group.seed_spec(each) if "pb" not in methods and "seed" in methods
            else group.mixture_specs(each)[0])
    sigma = each.noise_multiplier
    outputs = np.linspace(-5.0 * sigma, spec.shift * each.k + 5.0 * sigma, 2001)
    density_a, density_b = group.worst_case_densities(spec, outputs)
    plots.group_distributions_figure(
        path, outputs, density_a, density_b,
        f"worst-case pair, k={each.k}, σ={sigma:g} ({each.sampling}, B={each.batch_size}, "
        f"N={each.dataset_size})")


def draw(paths: dict[str, Path], setting, k_values: list[int], methods: list[str],
         delta: float, table: dict, tolerance: float) -> None:
    """Write each requested figure; ``table``: {k: pb's upper ε} already computed. The
    compositions behind them go to a process pool where there are enough (parallel.py), all
    submitted first: this process draws the densities, and each figure, while the workers
    compute the next one's (the same figures, byte for byte)."""
    from dpcalc.cli.parallel import points_map

    with points_map(min_items=MIN_CURVES_POOLED) as map_points:
        pending = []
        if "compositions" in paths:
            pending.append(_compositions(paths["compositions"], setting, k_values, methods,
                                         delta, map_points))
        if "k" in paths:
            pending.append(_over_k(paths["k"], setting, k_values, delta, table, tolerance,
                                   map_points))
        if "distributions" in paths:
            _distributions(paths["distributions"], setting, k_values, methods)
        for finish in pending:
            finish()
    for path in paths.values():
        sys.stderr.write(f"plot written to {path}\n")
