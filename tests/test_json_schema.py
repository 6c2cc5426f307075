"""Every command's --format json document validates against the shipped JSON Schema
(dpcalc/cli/output/schema.json), which is strict: a missing, renamed or unknown key fails. The
schema and docs/json-schema.md are what scripts/gen_json_schema.py writes."""
from __future__ import annotations

import copy
import functools
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from dpcalc import __version__
from tests.test_internal_errors import PB, run

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parent.parent
RUN = ["--q", "0.01", "--sigma", "1", "--steps", "50"]
SMALL = ["simulate", "--samples", "1000", "--features", "20", "--classes", "10",
         "--batch-size", "400", "--epochs", "2"]
SHUFFLED = ["--batch-size", "100", "--dataset-size", "1000", "--sigma", "1", "--epochs", "2",
            "--sampling", "shuffle", "--adjacency", "add-remove"]

# name → (arguments, expected exit code, the fault to inject or None)
CASES = {
    "epsilon": (["epsilon", *RUN], 0, None),
    "epsilon every accountant": (["epsilon", *RUN, "-a", "all"], 0, None),
    "epsilon epochs, not applicable": (["epsilon", *SHUFFLED], 0, None),
    "epsilon budget": (["epsilon", *RUN, "--max-epsilon", "0.1"], 1, None),
    "epsilon phases": (["epsilon", "--phase", "q=0.01,sigma=1,steps=20",
                        "--phase", "q=0.02,sigma=2,steps=20"], 0, None),
    "epsilon client unit": (["epsilon", "--batch-size", "50", "--dataset-size", "1000",
                             "--sigma", "1", "--steps", "20", "--sampling", "fixed",
                             "--unit", "client"], 0, None),
    "epsilon error row": (["epsilon", *RUN, "-a", "rdp,pb"], 0, f"{PB}._epsilon"),
    "epsilon error answer": (["epsilon", *RUN], 70, f"{PB}._epsilon"),
    "delta": (["delta", "-e", "1", *RUN, "-a", "pb,rdp"], 0, None),
    "delta not applicable": (["delta", "-e", "1", *SHUFFLED], 0, None),
    "sigma": (["sigma", "-e", "2", "--q", "0.01", "--steps", "50"], 0, None),
    "sigma risk target": (["sigma", "--max-tpr", "0.01", "--at-fpr", "0.001", "--q", "0.01",
                           "--steps", "50"], 0, None),
    # 1000 steps: at 50 steps this search takes ~40 s (σ ≈ 0.36), at 1000 steps 2 s
    "sigma advantage target": (["sigma", "--max-advantage", "0.2", "--q", "0.01",
                                "--steps", "1000"], 0, None),
    "sigma gaussian mechanism": (["sigma", "-e", "1"], 0, None),
    "compare": (["compare", *RUN], 0, None),
    "compare sweep": (["compare", "--q", "0.01", "--sigma", "1,2", "--steps", "50",
                       "-a", "pb,rdp"], 0, None),
    "compare samplers": (["compare", "--batch-size", "100", "--dataset-size", "1000",
                          "--sigma", "1", "--epochs", "1", "--sampling", "poisson,shuffle",
                          "-a", "pb"], 0, None),
    "group": (["group", "--k", "1,2", "--batch-size", "10", "--dataset-size", "1000",
               "--sigma", "1", "--steps", "20", "-m", "pb,rdp-group"], 0, None),
    "group target": (["group", "--k", "2", "--batch-size", "10", "--dataset-size", "1000",
                      "-e", "3", "--steps", "20"], 0, None),
    "risk": (["risk", *RUN], 0, None),
    "risk claim": (["risk", "--epsilon", "8", "--delta", "1e-5", "--baseline", "0.01"], 0, None),
    "report": (["report", *RUN], 0, None),
    "report shuffled": (["report", *SHUFFLED], 0, None),
    "report claim": (["report", "--epsilon", "8", "--delta", "1e-5"], 0, None),
    "report user level": (["report", "--batch-size", "10", "--dataset-size", "1000", "--sigma",
                           "1", "--steps", "20", "--max-examples-per-user", "2"], 0, None),
    "simulate": ([*SMALL, "--sigma", "1", "--baseline", "--k", "2"], 0, None),
    "simulate calibrated": ([*SMALL, "--target-epsilon", "5"], 0, None),
    "simulate shuffled": ([*SMALL, "--sigma", "1", "--sampling", "shuffle", "--adjacency",
                           "add-remove"], 0, None),
    "simulate audit": ([*SMALL, "--sigma", "0.5", "--audit", "--canaries", "100", "--seed",
                        "4"], 0, None),
    "simulate audit runs": ([*SMALL, "--sigma", "0.7", "--audit-runs", "20", "--canary",
                             "input"], 0, None),
    "pipelines": (["pipelines"], 0, None),
    # the fuzz run's findings (each failed the schema before it described them)
    "epsilon pipeline": (["epsilon", "--q", "0.05", "--rounds", "20", "--sigma", "1"], 0, None),
    "epsilon without pb": (["epsilon", *RUN, "-a", "rdp"], 0, None),
    "epsilon mixed samplers": (["epsilon", "--phase", "batch-size=256,dataset-size=60000,sigma=1,"
                                "steps=100,sampling=fixed", "--phase", "batch-size=256,"
                                "dataset-size=60000,sigma=1,epochs=1.5"], 0, None),
    "delta epoch sampler": (["delta", "-e", "1", "--batch-size", "100", "--dataset-size", "1000",
                             "--sigma", "1", "--epochs", "2", "--pipeline", "torch-shuffle",
                             "-a", "pb,abadi"], 0, None),
    "sigma schedule": (["sigma", "-e", "1", "--schedule", str(ROOT / "examples" / "schedule.csv")],
                       0, None),
    "sigma without a search": (["sigma", "-e", "0.2953", "--sampling", "balls-in-bins",
                                "--batch-size", "1", "--dataset-size", "175", "--steps", "97",
                                "-a", "pb,rdp"], 0, None),
    "compare schedule": (["compare", "--schedule", str(ROOT / "examples" / "schedule.csv"),
                          "-a", "pb,rdp"], 0, None),
    "group no certificate and seed": (["group", "--k", "2:3", "--batch-size", "16",
                                       "--dataset-size", "54", "--sigma", "20.86", "--steps",
                                       "17770", "-m", "group-conversion,seed"], 0, None),
}


def _schema() -> dict:
    text = resources.files("dpcalc.cli.output").joinpath("schema.json").read_text("utf-8")
    return json.loads(text)


@pytest.fixture(scope="module")
def validator():
    schema = _schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(validator, document) -> list[str]:
    return [f"{list(error.absolute_path)}: {error.message}"
            for error in validator.iter_errors(document)]


@functools.lru_cache(maxsize=None)
def _output(name: str) -> str:
    """The command's JSON text, run once per test process."""
    arguments, code, inject = CASES[name]
    completed = run(*arguments, "--format", "json", inject=inject)
    assert completed.returncode == code, completed.stderr
    return completed.stdout


def _document(name: str) -> dict:
    return json.loads(_output(name))


@pytest.mark.deep  # thirty real commands (CI: python -m pytest -m deep)
@pytest.mark.parametrize("name", list(CASES))
def test_every_command_validates(name, validator):
    document = _document(name)
    assert _errors(validator, document) == []
    assert document["schema"] == "dpcalc/1" and document["dpcalc_version"] == __version__
    assert list(document)[:3] == ["schema", "dpcalc_version", "command"]
    if CASES[name][2] is not None:  # the injected failure shows as an error row
        assert any(record["kind"] == "error" and record["certified"] is False
                   for record in document["results"])


def test_every_command_is_covered():
    from dpcalc.cli.app import COMMANDS

    covered = {arguments[0] for arguments, _, _ in CASES.values()}
    assert covered == set(COMMANDS) - {"completions"}  # completions prints a script, no JSON
    assert set(_schema()["properties"]["command"]["enum"]) == covered


def _renamed(document: dict, path: list, new: str) -> dict:
    changed = copy.deepcopy(document)
    owner = changed
    for step in path[:-1]:
        owner = owner[step]
    owner[new] = owner.pop(path[-1])
    return changed


def _removed(document: dict, path: list) -> dict:
    changed = copy.deepcopy(document)
    owner = changed
    for step in path[:-1]:
        owner = owner[step]
    del owner[path[-1]]
    return changed


MUTATED = {  # per document, the keys removed or renamed in turn: each change must fail
    "epsilon": [["schema"], ["dpcalc_version"], ["results", 0, "epsilon_upper"],
                ["results", 0, "kind"], ["inputs", "model"], ["inputs", "unit"],
                ["alternatives"]],
    "risk claim": [["results", 0, "no_leak"], ["inputs", "claim", "epsilon"]],
    "report": [["results", 0, "markdown"], ["results", 0, "risk", 0, "upper"]],
    "simulate": [["final", "epsilon_lower"], ["epochs", 0, "test_accuracy"],
                 ["inputs", "privacy_model"]],
    "simulate audit": [["audit", "verdict"]],
    "pipelines": [["results", 0, "sampling"], ["units", "client"]],
}


@pytest.mark.parametrize("name", list(MUTATED))
def test_a_missing_or_renamed_key_fails(name, validator):
    document = _document(name)
    assert _errors(validator, document) == []
    for path in MUTATED[name]:
        assert _errors(validator, _removed(document, path)), f"removing {path} passed"
        assert _errors(validator, _renamed(document, path, path[-1] + "_renamed")), \
            f"renaming {path} passed"


def test_wrong_values_fail(validator):
    document = _document("epsilon")
    for key, value in [("schema", "dpcalc/2"), ("command", "epsilons")]:
        assert _errors(validator, {**document, key: value})
    wrong_kind = copy.deepcopy(document)
    wrong_kind["results"][0]["kind"] = "certified"
    assert _errors(validator, wrong_kind)
    infinite = copy.deepcopy(document)
    infinite["results"][0]["epsilon"] = "inf"  # the contract's infinity is valid …
    assert _errors(validator, infinite) == []
    infinite["results"][0]["epsilon"] = "Infinity"  # … no other spelling
    assert _errors(validator, infinite)


def test_schema_and_docs_are_generated_and_current():
    completed = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_json_schema.py"),
                                "--check"], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    docs = (ROOT / "docs" / "json-schema.md").read_text(encoding="utf-8")
    for command in _schema()["properties"]["command"]["enum"]:
        assert f"\n## {command}\n" in docs
