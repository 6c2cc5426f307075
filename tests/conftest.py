"""Shared helpers for the CLI tests."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest


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
