"""Write completions/{dpcalc.bash,_dpcalc,dpcalc.fish} from the Typer app."""
from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dpcalc.cli.completions import COMPLETION_FILES, render_completion  # noqa: E402

if __name__ == "__main__":
    for shell, filename in COMPLETION_FILES.items():
        path = ROOT / "completions" / filename
        path.write_text(render_completion(shell))
        print(f"wrote {path.relative_to(ROOT)}")
