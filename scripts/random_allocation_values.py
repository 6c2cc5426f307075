"""Regenerate the random-allocation values of tests/test_epoch_samplers.py (RANDOM_ALLOCATION).

The random-allocation package (Feldman & Shenfeld's code) pins numpy < 2.2, so it runs in a
venv of its own, never in dpcalc's:
    python -m venv /tmp/ra && /tmp/ra/bin/pip install random-allocation pandas matplotlib
    /tmp/ra/bin/python scripts/random_allocation_values.py
Prints one JSON line per configuration: decomposition, direct, combined and lower bound (one
epoch, Direction.BOTH, orders 2..60). Values recorded with random-allocation 1.0.5.
"""
import json, warnings
warnings.filterwarnings("ignore")
from random_allocation.comparisons.definitions import PrivacyParams, SchemeConfig, Direction
from random_allocation.random_allocation_scheme.decomposition import allocation_epsilon_decomposition
from random_allocation.random_allocation_scheme.direct import allocation_epsilon_direct
from random_allocation.random_allocation_scheme.lower_bound import allocation_epsilon_lower_bound
from random_allocation.random_allocation_scheme.combined import allocation_epsilon_combined
CONFIGS = [(1.0, 100, 1e-5), (0.8, 1000, 1e-5), (2.0, 100, 1e-5), (1.5, 50, 1e-6), (0.6, 200, 1e-5),
           (3.0, 1000, 1e-5), (1.0, 10, 1e-5), (1.2, 500, 1e-4), (0.9, 20, 1e-5), (4.0, 100, 1e-8),
           (0.7, 2000, 1e-5), (1.0, 2, 1e-5)]
cfg = SchemeConfig(allocation_direct_alpha_orders=list(range(2, 61)))
out = []
for sigma, t, delta in CONFIGS:
    p = PrivacyParams(sigma=sigma, num_steps=t, num_selected=1, num_epochs=1, delta=delta)
    row = {"sigma": sigma, "steps": t, "delta": delta}
    for name, fn in [("decomposition", allocation_epsilon_decomposition), ("direct", allocation_epsilon_direct),
                     ("combined", allocation_epsilon_combined), ("lower", allocation_epsilon_lower_bound)]:
        try:
            row[name] = float(fn(p, cfg, Direction.BOTH))
        except Exception as e:
            row[name] = f"error {type(e).__name__}: {e}"
    print(json.dumps(row), flush=True)
