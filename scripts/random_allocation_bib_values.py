"""Regenerate RANDOM_ALLOCATION_VALID of tests/test_balls_in_bins_bounds.py: per direction,
every method of the random-allocation package (Feldman & Shenfeld's code) for balls-in-bins
(E epochs of t steps, one record per epoch), which are valid and which are not.

The package pins numpy < 2.2, so it runs in a venv of its own, never in dpcalc's:
    python -m venv /tmp/ra && /tmp/ra/bin/pip install random-allocation pandas matplotlib
    /tmp/ra/bin/python scripts/random_allocation_bib_values.py > values.jsonl
Values recorded with random-allocation 1.0.5 (dp_accounting 0.6.0); about 30 min in all.

Valid (per direction, at δ): decomposition (E = 1 only), recursive, analytic, direct remove
(Rényi DP, orders 2..40: larger ones are infeasible there, the partitions explode), direct
add with Jensen's shift counted E times, ε_G(σ√(t/E)) + E(1 − 1/t)/(2σ²) (recomputed here:
the package adds it once, which is invalid for E > 1), and local (no amplification).
Invalid, recorded for reference only: RDP-DCO (its add bound is below the exact Rényi
divergence: σ = 1, t = 100, α = 2 gives 0.01485 against 0.01664), the package's direct add
for E > 1, and its lower bound (rounded up by ~2e-4).

Replace-one has no bound in the package. The line "replace" is the valid chain through
D∖{x} (tests/test_balls_in_bins_bounds.py, dpcalc/accountants/allocation.py) applied to the
package's best valid per-direction values at the split δ₁ = δ/2:
ε = ε_remove(δ/2) + ε_add(δ/(2e^{ε_remove(δ/2)})), or the Δ = 2 Gaussian (local at σ/2) if
smaller.
"""
import json
import math
import sys
import time
import warnings

warnings.filterwarnings("ignore")
from random_allocation.comparisons.definitions import Direction, PrivacyParams, SchemeConfig  # noqa: E402
from random_allocation.other_schemes.local import Gaussian_epsilon, local_epsilon  # noqa: E402
from random_allocation.random_allocation_scheme.analytic import allocation_epsilon_analytic  # noqa: E402
from random_allocation.random_allocation_scheme.decomposition import (  # noqa: E402
    allocation_epsilon_decomposition)
from random_allocation.random_allocation_scheme.direct import allocation_epsilon_direct  # noqa: E402
from random_allocation.random_allocation_scheme.lower_bound import (  # noqa: E402
    allocation_epsilon_lower_bound)
from random_allocation.random_allocation_scheme.RDP_DCO import allocation_epsilon_RDP_DCO  # noqa: E402
from random_allocation.random_allocation_scheme.recursive import allocation_epsilon_recursive  # noqa: E402

# (σ, t, E): the held-out comparison of issue 29 item 4 (its 13 points and two more)
CONFIGS = [(3.0, 2000, 20), (0.7, 1000, 3), (2.0, 1000, 1), (5.0, 2000, 1), (1.0, 100, 1),
           (1.0, 100, 3), (0.7, 10, 1), (1.0, 10, 20), (2.0, 100, 20), (5.0, 1000, 20),
           (0.7, 2000, 20), (3.0, 10, 3), (2.0, 2000, 3), (1.0, 1000, 20), (5.0, 100, 3),
           # six more, held out from the implementation's tuning
           (0.8, 50, 2), (1.5, 500, 10), (4.0, 5000, 1), (1.5, 50, 1), (4.0, 500, 2),
           (0.8, 5000, 10)]
REPLACE = {(3.0, 2000, 20), (0.7, 1000, 3), (2.0, 1000, 1), (5.0, 2000, 1), (1.0, 100, 1),
           (0.7, 10, 1), (1.0, 10, 20), (2.0, 100, 20), (5.0, 1000, 20), (2.0, 2000, 3)}
DELTA = 1e-5
CONFIG = SchemeConfig(allocation_direct_alpha_orders=list(range(2, 41)))
NAMES = {Direction.REMOVE: "remove", Direction.ADD: "add"}


def _try(function):
    try:
        return float(function())
    except Exception as error:  # the package raises on some inputs: recorded, not fatal
        return f"error {type(error).__name__}: {error}"


def methods(sigma, t, epochs, delta, direction):
    """{method: ε} of one direction; the valid ones first."""
    params = PrivacyParams(sigma=sigma, num_steps=t, num_selected=1, num_epochs=epochs,
                           delta=delta)
    out = {}
    if epochs == 1:
        out["decomposition"] = _try(lambda: allocation_epsilon_decomposition(params, CONFIG,
                                                                             direction))
    out["recursive"] = _try(lambda: allocation_epsilon_recursive(params, CONFIG, direction))
    out["analytic"] = _try(lambda: allocation_epsilon_analytic(params, CONFIG, direction))
    if direction == Direction.REMOVE:
        out["direct"] = _try(lambda: allocation_epsilon_direct(params, CONFIG, direction))
    else:
        out["direct_jensen_E_shifts"] = (Gaussian_epsilon(sigma=sigma * math.sqrt(t / epochs),
                                                          delta=delta)
                                         + epochs * (1.0 - 1.0 / t) / (2.0 * sigma**2))
    out["local"] = _try(lambda: local_epsilon(params, CONFIG))
    valid = {k: v for k, v in out.items() if isinstance(v, float)}
    best = min(valid, key=valid.get)
    invalid = {"RDP_DCO": _try(lambda: allocation_epsilon_RDP_DCO(params, CONFIG, direction))}
    if direction == Direction.ADD and epochs > 1:
        invalid["direct_package"] = _try(lambda: allocation_epsilon_direct(params, CONFIG,
                                                                           direction))
    return {"valid": out, "best": best, "epsilon": valid[best], "invalid": invalid}


def main(configs):
    for sigma, t, epochs in configs:
        started = time.time()
        row = {"sigma": sigma, "t": t, "E": epochs, "delta": DELTA}
        for direction in (Direction.REMOVE, Direction.ADD):
            row[NAMES[direction]] = methods(sigma, t, epochs, DELTA, direction)
        if epochs == 1:
            params = PrivacyParams(sigma=sigma, num_steps=t, num_selected=1, num_epochs=1,
                                   delta=DELTA)
            row["lower_bound_invalid"] = _try(lambda: allocation_epsilon_lower_bound(
                params, CONFIG, Direction.BOTH))
        if (sigma, t, epochs) in REPLACE:
            first = methods(sigma, t, epochs, DELTA / 2, Direction.REMOVE)
            second = methods(sigma, t, epochs, DELTA / (2 * math.exp(first["epsilon"])),
                             Direction.ADD)
            chain = first["epsilon"] + second["epsilon"]
            gaussian = Gaussian_epsilon(sigma=sigma / (2 * math.sqrt(epochs)), delta=DELTA)
            row["replace"] = {"remove_half": [first["best"], first["epsilon"]],
                              "add_rest": [second["best"], second["epsilon"]],
                              "chain": chain, "gaussian_delta2": gaussian,
                              "epsilon": min(chain, gaussian)}
        row["seconds"] = round(time.time() - started, 1)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    chosen = CONFIGS
    if len(sys.argv) > 1:  # e.g. "3,2000,20 0.7,10,1"
        chosen = [(float(s), int(t), int(e)) for s, t, e in (a.split(",") for a in sys.argv[1:])]
    main(chosen)
