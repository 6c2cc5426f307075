"""Write the bash, zsh and fish completion scripts from the Typer app to completions/ and to
dpcalc/completions/ (the copy shipped in the wheel, printed by `dpcalc completions SHELL`)."""
from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dpcalc.cli.completions.script import COMPLETION_FILES, render_completion  # noqa: E402

FOLDERS = (ROOT / "completions", ROOT / "dpcalc" / "completions")

if __name__ == "__main__":
    for shell, filename in COMPLETION_FILES.items():
        script = render_completion(shell)
        for folder in FOLDERS:
            folder.mkdir(exist_ok=True)
            path = folder / filename
            path.write_text(script)
            print(f"wrote {path.relative_to(ROOT)}")
