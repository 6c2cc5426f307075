"""The examples of README.md and docs/*.md run exactly as shown; the README stays a short
front page whose long description renders without the repository."""
from __future__ import annotations

import pathlib
import re
import shlex
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# (file, block) for every ```console block of every document
BLOCKS = [(path.relative_to(ROOT).as_posix(), block) for path in DOCUMENTS
          for block in re.findall(r"```console\n(.*?)```", path.read_text(), flags=re.S)]
EXPECTED_EXIT = {"--max-epsilon 1 ": 1, "--q 1.5 ": 2, "--epsilon 1e-6 ": 2,
                 "--sigma 0.5:4:1000 ": 2}
ELIDED = "[…]"  # scripts/update_readme.py: the middle of the output left out


def _examples():
    for name, block in BLOCKS:
        lines = block.strip("\n").splitlines()
        command, output = lines[0], lines[1:]
        assert command.startswith("$ dpcalc "), (name, command)
        yield pytest.param(command[2:], output, id=f"{name}: {command[2:]}")


@pytest.mark.parametrize("command,output", list(_examples()))
def test_readme_example(command, output):
    args = shlex.split(command)[1:]
    completed = subprocess.run([sys.executable, "-m", "dpcalc", *args], capture_output=True,
                               text=True, timeout=120, cwd=ROOT,  # examples/ paths
                               env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"})
    expected_exit = next((code for key, code in EXPECTED_EXIT.items() if key in command + " "), 0)
    assert completed.returncode == expected_exit, completed.stderr
    shown = completed.stdout.splitlines() + completed.stderr.splitlines()
    shown = [line.rstrip() for line in shown]
    # every line the document shows appears in what the command printed, in order
    position = 0
    for line in output:
        if line == ELIDED:
            continue
        found = next((index for index in range(position, len(shown))
                      if _same_line(line.rstrip(), shown[index])), None)
        assert found is not None, f"{line!r} not printed by: {command}"
        position = found + 1
    if ELIDED in output:  # the lines after it are the output's last ones
        tail = output[output.index(ELIDED) + 1:]
        assert all(_same_line(line.rstrip(), printed)
                   for line, printed in zip(reversed(tail), reversed(shown))), command


def _same_line(expected: str, printed: str) -> bool:
    """Equal, or equal up to "…", each standing for the trailing digits of a number shown by
    its stable leading digits (scripts/update_readme.py: full-precision JSON numbers, and
    the figures of its NOISY_LINES), and up to the column padding those digits change."""
    if "…" not in expected:
        return expected == printed
    collapse = lambda line: re.sub(r" +", " ", line)  # noqa: E731
    pattern = r"\d+".join(re.escape(part) for part in collapse(expected).split("…"))
    return re.fullmatch(pattern, collapse(printed)) is not None


def test_every_document_with_examples_is_checked():
    names = {name for name, _ in BLOCKS}
    assert "README.md" in names and len(names) >= 10, names
    assert all(block.strip("\n").splitlines()[1:] for _, block in BLOCKS), \
        "an example without output: run python scripts/update_readme.py"


def test_full_precision_json_digits_are_elided_and_matched():
    import importlib.util

    spec = importlib.util.spec_from_file_location("update_readme", ROOT / "scripts" /
                                                  "update_readme.py")
    update = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(update)
    assert update.documents()[0] == ROOT / "README.md"
    assert ROOT / "docs" / "epsilon.md" in update.documents()
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
    json_blocks = [block for _, block in BLOCKS if "--format json" in block.splitlines()[0]]
    assert json_blocks and all("…" in block for block in json_blocks)


def test_quickstart_makes_a_venv_then_uses_the_ci_test_command():
    quickstart = README.split("## Quickstart", 1)[1].split("##", 1)[0]
    commands = re.findall(r"```sh\n(.*?)```", quickstart, flags=re.S)[0].strip().splitlines()
    assert commands == ['python3 -m venv .venv && . .venv/bin/activate',
                        'pip install . && dpcalc epsilon --q 0.01 --sigma 4 --steps 10000',
                        'pip install ".[test]" && python -m pytest']
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[2] in ci


def test_readme_is_a_short_front_page_that_renders_without_the_repository():
    """≤ 300 lines; the package index shows it as the long description (pyproject's readme),
    so no relative link or image: absolute URLs or none."""
    assert len(README.splitlines()) <= 300
    targets = re.findall(r"!?\[[^\]]*\]\(([^)]*)\)", README) + \
        re.findall(r"<img[^>]+src=\"([^\"]+)\"", README)
    assert all(re.match(r"https?://", target) for target in targets), targets


def test_docs_index_lists_every_page_and_every_link_resolves():
    pages = sorted(path.name for path in (ROOT / "docs").glob("*.md"))
    index = (ROOT / "docs" / "index.md").read_text()
    assert all(f"]({page})" in index for page in pages if page != "index.md"), pages
    for path in (ROOT / "docs").glob("*.md"):
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", path.read_text()):
            if not re.match(r"https?://", target):
                assert (path.parent / target).exists(), f"{path.name}: {target}"
