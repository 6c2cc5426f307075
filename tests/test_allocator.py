"""The CLI's allocator setting (dpcalc/cli/allocator.py): fresh temporaries stop faulting
in page by page, and the answer is unchanged."""
from __future__ import annotations

import platform
import subprocess
import sys

import pytest

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"

# Minor page faults over 40 rounds of three live temporaries of 2.4–16 MB, as the
# accounting core makes them, in a fresh interpreter: the setting is process-wide, so it
# cannot be undone inside pytest.
FAULTS = """
import resource, sys
import numpy as np
if sys.argv[1] == "tuned":
    from dpcalc.cli.allocator import keep_freed_memory
    assert keep_freed_memory()
def work(n):
    a = np.ones(n); b = a * 2.0; c = np.exp(b) + a; return float(c.sum())
work(1000)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for size in [300_000, 1_000_000, 600_000, 2_000_000] * 10:
    work(size)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def faults(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", FAULTS, mode], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)


@pytest.mark.skipif(not GLIBC, reason="the setting is glibc's mallopt; elsewhere it is a no-op")
def test_freed_blocks_are_reused_instead_of_faulting_in_again():
    plain, tuned = faults("plain"), faults("tuned")
    # glibc's default: most rounds fault their pages in afresh (~40 000 measured); tuned,
    # only the heap's first growth does (~4 300)
    assert plain > 10_000, plain
    assert tuned < plain / 4, (plain, tuned)


def test_the_answer_does_not_depend_on_the_allocator():
    """The same printed ε with and without the setting (the CLI sets it; the library not)."""
    from dpcalc.accountants.pb import PrivacyBucketsAccountant
    from dpcalc.models.schedule import Schedule

    command = [sys.executable, "-m", "dpcalc", "epsilon", "--q", "0.01", "--sigma", "1",
               "--steps", "1000", "-a", "pb", "-f", "json"]
    printed = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    library = PrivacyBucketsAccountant().epsilon(Schedule.single(0.01, 1.0, 1000), 1e-5)
    assert repr(library.epsilon) in printed or f"{library.epsilon}" in printed
