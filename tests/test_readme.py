"""The README's examples run exactly as shown."""
from __future__ import annotations

import pathlib
import re
import shlex
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```console\n(.*?)```", README, flags=re.S)
EXPECTED_EXIT = {"--max-epsilon 1 ": 1, "--q 1.5 ": 2, "--epsilon 1e-6 ": 2,
                 "--sigma 0.5:4:1000 ": 2}


def _examples():
    for block in BLOCKS:
        lines = block.strip("\n").splitlines()
        command, output = lines[0], lines[1:]
        assert command.startswith("$ dpcalc "), command
        yield command[2:], output


@pytest.mark.parametrize("command,output", list(_examples()), ids=lambda v: v if isinstance(v, str) else "")
def test_readme_example(command, output):
    args = shlex.split(command)[1:]
    completed = subprocess.run([sys.executable, "-m", "dpcalc", *args], capture_output=True,
                               text=True, timeout=120, cwd=ROOT,  # examples/ paths
                               env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"})
    expected_exit = next((code for key, code in EXPECTED_EXIT.items() if key in command + " "), 0)
    assert completed.returncode == expected_exit, completed.stderr
    shown = completed.stdout.splitlines() + completed.stderr.splitlines()
    shown = [line.rstrip() for line in shown]
    # every line the README shows appears in what the command printed, in order
    position = 0
    for line in output:
        found = next((index for index in range(position, len(shown))
                      if _same_line(line.rstrip(), shown[index])), None)
        assert found is not None, f"{line!r} not printed by: {command}"
        position = found + 1


def _same_line(expected: str, printed: str) -> bool:
    """Equal, or equal up to "…", each standing for the trailing digits of a number shown by
    its stable leading digits (scripts/update_readme.py: full-precision JSON numbers, and
    the figures of its NOISY_LINES), and up to the column padding those digits change."""
    if "…" not in expected:
        return expected == printed
    collapse = lambda line: re.sub(r" +", " ", line)  # noqa: E731
    pattern = r"\d+".join(re.escape(part) for part in collapse(expected).split("…"))
    return re.fullmatch(pattern, collapse(printed)) is not None


def test_full_precision_json_digits_are_elided_and_matched():
    import importlib.util

    spec = importlib.util.spec_from_file_location("update_readme", pathlib.Path(__file__)
                                                  .resolve().parent.parent / "scripts" /
                                                  "update_readme.py")
    update = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(update)
    assert update.stable_digits('    "epsilon": 2.381807141945078,') == '    "epsilon": 2.38180…,'
    assert update.stable_digits('  "q": 0.004266666666666667,') == '  "q": 0.00426666…,'
    assert update.stable_digits('  "sigma": 1.1,') == '  "sigma": 1.1,'
    assert _same_line('    "epsilon": 2.38180…,', '    "epsilon": 2.381809999999,')
    assert not _same_line('    "epsilon": 2.38180…,', '    "epsilon": 2.38190001,')
    assert not _same_line('    "epsilon": 2.38180…,', '    "epsilon": 2.38180,')  # a digit cut
    # noisy figures: several cut numbers on a line, whose widths move the padding
    assert update.noisy_digits("│ Gaussian-DP μ │ │ 0.25594 │ 0.2557 │ 0 │") == \
        "│ Gaussian-DP μ │ │  0.255… │ 0.255… │ 0 │"
    assert _same_line("│ Gaussian-DP μ │  0.255… │  0.255… │", "│ Gaussian-DP μ │ 0.25595 │ 0.25569 │")
    assert not _same_line("│ Gaussian-DP μ │ 0.255… │", "│ Gaussian-DP μ │ 0.256 │")
    assert update.noisy_digits("TPR at FPR 0.0022887") == "TPR at FPR 0.0022887"  # not noisy
    json_blocks = [block for block in BLOCKS if "--format json" in block.splitlines()[0]]
    assert json_blocks and all("…" in block for block in json_blocks)


def test_quickstart_makes_a_venv_then_uses_the_ci_test_command():
    quickstart = README.split("## Quickstart", 1)[1].split("##", 1)[0]
    commands = re.findall(r"```sh\n(.*?)```", quickstart, flags=re.S)[0].strip().splitlines()
    assert commands == ['python3 -m venv .venv && . .venv/bin/activate',
                        'pip install . && dpcalc epsilon --q 0.01 --sigma 4 --steps 10000',
                        'pip install ".[test]" && python -m pytest']
    ci = (pathlib.Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    assert commands[2] in ci
