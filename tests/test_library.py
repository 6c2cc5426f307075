"""`from dpcalc import ...`: every exported name resolves, and importing dpcalc stays light."""
from __future__ import annotations

import subprocess
import sys

import pytest

import dpcalc


@pytest.mark.parametrize("name", [n for n in dpcalc.__all__ if n != "__version__"])
def test_every_export_resolves(name):
    assert getattr(dpcalc, name) is not None


def test_library_example_from_the_docstring():
    from dpcalc import Schedule, get_accountant

    result = get_accountant("pb").epsilon(Schedule.single(0.01, 4.0, 10_000), 1e-5)
    assert result.epsilon_lower <= 0.9469 <= result.epsilon


def test_import_dpcalc_and_help_do_not_load_numpy():
    code = ("import sys, dpcalc; from dpcalc.cli.app import app; "
            "print('numpy' in sys.modules, 'matplotlib' in sys.modules, 'scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False"]


def test_epsilon_command_does_not_import_scipy_stats_or_matplotlib():
    code = ("import sys; from dpcalc.cli.app import main\n"
            "try:\n    main(['epsilon', '--q', '0.01', '--sigma', '4', '--steps', '100', '-f', 'plain'])\n"
            "except SystemExit:\n    pass\n"
            "print('scipy.stats' in sys.modules, 'matplotlib' in sys.modules, 'scipy.optimize' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-3:] == ["False", "False", "False"]


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError):
        dpcalc.no_such_thing  # noqa: B018
