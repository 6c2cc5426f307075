"""Shared helpers for the CLI tests."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dpcalc.cli.allocator import keep_freed_memory

try:
    from hypothesis import settings
except ImportError:  # the smoke runs on other interpreters install pytest alone
    settings = None

# CI (CI=true): property and fuzz tests draw the same examples every run, so a submission's
# result does not depend on the draw; elsewhere they draw anew each run and keep finding
# new cases (each one found becomes a regression test).
if settings is not None:
    settings.register_profile("ci", derandomize=True)
    if os.environ.get("CI"):
        settings.load_profile("ci")


# The test processes allocate as the dpcalc command does (freed temporaries kept for
# reuse, dpcalc/cli/allocator.py): the same numbers, fewer page faults.
keep_freed_memory()


def run_dpcalc(*args: str, timeout: float = 120):
    """Run the real entry point (python -m dpcalc) in a subprocess."""
    return subprocess.run([sys.executable, "-m", "dpcalc", *args], capture_output=True, text=True,
                          timeout=timeout)


def run_json(*args: str) -> dict:
    completed = run_dpcalc(*args, "--format", "json")
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


@pytest.fixture
def dpcalc():
    return run_dpcalc


def cli_runner():
    """A CliRunner whose result.stdout holds stdout only, with every supported Click (before
    8.2 stderr was mixed into stdout unless mix_stderr=False; 8.2 removed the argument)."""
    from typer.testing import CliRunner

    try:
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()
