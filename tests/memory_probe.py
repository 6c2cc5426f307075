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
cap = int(sys.argv[1])
def limit():
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
start = time.monotonic()
done = subprocess.run(sys.argv[2:], capture_output=True, text=True, preexec_fn=limit)
seconds = time.monotonic() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"code": done.returncode, "stdout": done.stdout, "stderr": done.stderr,
                  "peak": peak, "seconds": seconds}))
"""


def measure(argv: list[str], timeout: float = 300, cap: int = ADDRESS_SPACE_CAP) -> dict:
    """{code, stdout, stderr, peak (bytes), seconds} of ``argv`` run in a subprocess."""
    wrapper = subprocess.run([sys.executable, "-c", _WRAPPER, str(cap), *argv],
                             capture_output=True, text=True, timeout=timeout, check=True)
    return json.loads(wrapper.stdout)


def measure_dpcalc(*args: str, timeout: float = 300) -> dict:
    """``measure`` of ``python -m dpcalc ARGS``."""
    return measure([sys.executable, "-m", "dpcalc", *args], timeout)


def measure_python(code: str, timeout: float = 300) -> dict:
    """``measure`` of ``python -c CODE`` (a library call)."""
    return measure([sys.executable, "-c", code], timeout)
