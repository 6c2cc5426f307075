"""Peak memory of one dpcalc run, measured in a fresh subprocess (issue 30 §3).

``measure(argv)`` runs ``argv`` under a wrapper process whose RUSAGE_CHILDREN holds exactly
that one child, so its ru_maxrss is the child's peak resident set; the child also gets an
address-space cap (RLIMIT_AS), so a run that would take the machine's memory fails fast
instead (and the test fails on its exit code)."""
from __future__ import annotations

import json
import subprocess
import sys

GIB = 1 << 30
# the goal: every accepted input within this peak resident set
PEAK_LIMIT = 2 * GIB
# the cap a measured run gets: beyond the goal (virtual size exceeds the resident one:
# BLAS thread buffers, Python's arenas), below what would hurt a shared machine
ADDRESS_SPACE_CAP = 6 * GIB

_WRAPPER = """
import json, resource, subprocess, sys, time
cap, stop = int(sys.argv[1]), float(sys.argv[2])
def limit():
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
start = time.monotonic()
try:
    done = subprocess.run(sys.argv[3:], capture_output=True, text=True, preexec_fn=limit,
                          timeout=stop if stop > 0 else None)
    code, out, err = done.returncode, done.stdout, done.stderr
except subprocess.TimeoutExpired as late:  # killed and reaped: its peak is counted below
    code, out, err = "timeout", late.stdout or "", late.stderr or ""
    out, err = [x.decode() if isinstance(x, bytes) else x for x in (out, err)]
seconds = time.monotonic() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"code": code, "stdout": out, "stderr": err, "peak": peak, "seconds": seconds}))
"""


def measure(argv: list[str], timeout: float = 300, cap: int = ADDRESS_SPACE_CAP,
            stop_after: float = 0.0) -> dict:
    """{code, stdout, stderr, peak (bytes), seconds} of ``argv`` run in a subprocess;
    ``stop_after`` > 0: kill it after that many seconds (code "timeout"; its peak so far)."""
    wrapper = subprocess.run([sys.executable, "-c", _WRAPPER, str(cap), str(stop_after), *argv],
                             capture_output=True, text=True, timeout=timeout + stop_after,
                             check=True)
    return json.loads(wrapper.stdout)


def measure_dpcalc(*args: str, timeout: float = 300, stop_after: float = 0.0) -> dict:
    """``measure`` of ``python -m dpcalc ARGS``."""
    return measure([sys.executable, "-m", "dpcalc", *args], timeout, stop_after=stop_after)


def measure_python(code: str, timeout: float = 300) -> dict:
    """``measure`` of ``python -c CODE`` (a library call)."""
    return measure([sys.executable, "-c", code], timeout)


# --- random valid inputs in the documented ranges (the property test, bench_slowest) -----
def _log_uniform(rng, low: float, high: float) -> float:
    import math

    return math.exp(rng.uniform(math.log(low), math.log(high)))


def random_invocation(rng) -> list[str]:
    """A random dpcalc command line over the documented ranges: q in [1e-9, 1], σ in
    [0.1, 100] (the pb-accepted part of [1e-4, 1e6] where ε is not astronomically large), T in
    [1, 1e9], δ in [1e-12, 1e-3], every Poisson-family sampler; ``rng``: random.Random."""
    command = rng.choice(["epsilon", "epsilon", "epsilon", "delta", "sigma", "sigma", "compare",
                          "risk", "report", "group"])
    q = f"{_log_uniform(rng, 1e-9, 1.0):.3g}"
    sigma = f"{_log_uniform(rng, 0.1, 100.0):.3g}"
    steps = str(int(_log_uniform(rng, 1, 1e9)))
    delta = f"{_log_uniform(rng, 1e-12, 1e-3):.2g}"
    run = ["--q", q, "--steps", steps]
    if command == "epsilon":
        return [command, *run, "--sigma", sigma, "--delta", delta]
    if command == "delta":
        return [command, *run, "--sigma", sigma, "--epsilon", f"{_log_uniform(rng, 0.01, 100):.3g}"]
    if command == "sigma":
        return [command, *run, "--epsilon", f"{_log_uniform(rng, 0.05, 1000):.3g}", "--delta",
                delta]
    if command == "compare":
        points = rng.choice([2, 5, 20])
        low = float(sigma)
        return [command, "--q", q, "--steps", steps, "--sigma",
                f"{low:.3g}:{low * 10:.3g}:log{points}", "--delta", delta]
    if command in ("risk", "report"):
        return [command, *run, "--sigma", sigma]
    dataset = int(_log_uniform(rng, 100, 1e6))
    batch = max(1, int(dataset * float(q)))
    return [command, "--k", rng.choice(["2", "1:4", "1,8"]), "--batch-size", str(batch),
            "--dataset-size", str(dataset), "--sigma", sigma,
            "--steps", str(int(_log_uniform(rng, 1, 1e5))), "--method", "pb,rdp-group"]
