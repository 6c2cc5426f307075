"""`dpcalc group`: k = 1 against `dpcalc epsilon`, output contract, plots, one-line errors."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dpcalc.cli.app import app
from dpcalc.cli.group.command import parse_k_values
from dpcalc.errors import DpcalcError
from tests.conftest import run_dpcalc

runner = CliRunner()
MNIST = ["--batch-size", "256", "--dataset-size", "60000"]
KEYS = {"k", "accountant", "epsilon", "epsilon_upper", "epsilon_lower", "certified", "kind",
        "order", "notes", "details"}


def invoke_json(*args: str) -> dict:
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# --- Must show: k = 1 equals `dpcalc epsilon --batch-size B --dataset-size N` ------------
@pytest.mark.parametrize("schedule", [["--sigma", "1", "--steps", "4096"],
                                      ["--sigma", "1.1", "--epochs", "60"],
                                      ["--sigma", "0.8", "--steps", "300", "--delta", "1e-7"]])
@pytest.mark.parametrize("sampling", ["fixed", "poisson"])
def test_k_one_equals_epsilon_command(schedule, sampling):
    group = invoke_json("group", "--k", "1", *MNIST, *schedule, "--method", "pb",
                        "--sampling", sampling)
    single = invoke_json("epsilon", *MNIST, *schedule, "--sampling", sampling)
    assert group["inputs"]["steps"] == single["inputs"]["steps"]
    (mine,), (theirs,) = group["results"], single["results"]
    assert mine["k"] == 1 and mine["accountant"] == theirs["accountant"] == "pb"
    for key in ("epsilon", "epsilon_upper", "epsilon_lower"):
        assert mine[key] == theirs[key]


# --- JSON contract ---------------------------------------------------------------------
def test_json_has_one_result_per_k_and_method():
    payload = invoke_json("group", "--k", "1:3", *MNIST, "--sigma", "1", "--steps", "4096")
    assert payload["command"] == "group"
    assert payload["inputs"]["k"] == [1, 2, 3]
    assert payload["inputs"]["sampling"] == "poisson"  # the certified default
    assert payload["inputs"]["adjacency"] == "add-remove"
    pairs = [(r["k"], r["accountant"]) for r in payload["results"]]
    methods = ["pb", "rdp-overapprox", "group-conversion", "rdp-group"]
    assert pairs == [(k, m) for k in (1, 2, 3) for m in methods]
    by = {(r["k"], r["accountant"]): r for r in payload["results"]}
    for result in payload["results"]:
        assert KEYS <= set(result)
    pb2 = by[(2, "pb")]
    assert pb2["epsilon"] == pb2["epsilon_upper"]
    assert pb2["epsilon"] == pytest.approx(3.176, rel=0.005)  # reference-values.md
    assert pb2["epsilon_lower"] <= pb2["epsilon"]
    for k in (1, 2, 3):
        for name in ("rdp-overapprox", "group-conversion"):
            assert by[(k, name)]["epsilon"] >= by[(k, "pb")]["epsilon"] * (1 - 1e-5)  # grid slack
        assert by[(k, "rdp-overapprox")]["certified"] is True
    assert by[(3, "rdp-group")]["epsilon"] is None
    assert by[(3, "rdp-group")]["kind"] == "not applicable"
    assert "power of two" in by[(3, "rdp-group")]["notes"][0]
    q = 256 / 60_000  # Poisson: J ~ Binomial(2, q)
    assert by[(2, "pb")]["details"]["weights"] == pytest.approx(
        [(1 - q) ** 2, 2 * q * (1 - q), q * q], rel=1e-12)


def test_fixed_size_default_pair_and_the_seed_pair_side_by_side():
    """--sampling fixed: a protected record displaces another (shift 2j); the seed's pair
    (shift j) is reported under its own name and never as a certificate for this run."""
    payload = invoke_json("group", "--k", "1,2", *MNIST, "--sigma", "1", "--steps", "4096",
                          "--sampling", "fixed", "--method", "pb,seed")
    by = {(r["k"], r["accountant"]): r for r in payload["results"]}
    assert payload["inputs"]["sampling"] == "fixed"
    assert by[(1, "pb")]["epsilon"] == pytest.approx(11.76, rel=2e-3)  # the explicit attack's ε
    assert by[(1, "seed")]["epsilon"] == pytest.approx(1.462, rel=2e-3)  # the Poisson figure
    for k in (1, 2):
        assert by[(k, "seed")]["certified"] is False and by[(k, "seed")]["applies"] is False
        assert "NOT a certificate" in by[(k, "seed")]["notes"][0]
        assert by[(k, "pb")]["epsilon"] > by[(k, "seed")]["epsilon"]


def test_hypergeometric_is_the_fixed_size_model_with_a_warning():
    completed = run_dpcalc("group", "--k", "2", *MNIST, "--sigma", "2", "--steps", "100",
                           "--sampling", "hypergeometric", "--method", "pb", "-f", "json")
    assert completed.returncode == 0
    assert "the shift-j pair (an absent record leaves its slot empty) is --method seed" in \
        " ".join(completed.stderr.split())
    assert json.loads(completed.stdout)["inputs"]["sampling"] == "fixed"


def test_no_certificate_is_null_with_a_note():
    # accounting-methods.md §6: no generic-conversion certificate at k = 8
    payload = invoke_json("group", "--k", "8", *MNIST, "--sigma", "1.1", "--steps", "14062",
                          "--method", "group-conversion,pb")
    by = {r["accountant"]: r for r in payload["results"]}
    assert by["group-conversion"]["epsilon"] is None
    assert by["group-conversion"]["kind"] == "no certificate"
    assert "no certificate" in by["group-conversion"]["notes"][0]
    assert by["pb"]["epsilon"] == pytest.approx(30.0, rel=0.005)
    assert payload["inputs"]["accountants"] == ["group-conversion", "pb"]


def test_plain_prints_one_number_per_result_rounded_up():
    completed = run_dpcalc("group", "--k", "2,4", *MNIST, "--sigma", "1.1", "--steps", "14062",
                           "--method", "pb", "--format", "plain")
    assert completed.returncode == 0, completed.stderr
    values = [float(line) for line in completed.stdout.split()]
    assert len(values) == 2
    assert values[0] >= 5.2648 and values[0] == pytest.approx(5.27, rel=0.005)
    assert values[1] >= 12.146 and values[1] == pytest.approx(12.15, rel=0.005)


def test_table_lists_methods_and_footnotes():
    result = runner.invoke(app, ["group", "--k", "2", *MNIST, "--sigma", "1", "--steps", "1000"])
    assert result.exit_code == 0, result.output
    for text in ("pb", "rdp-overapprox", "group-conversion", "rdp-group", "lower bound",
                 "RDP over-approximation"):
        assert text in result.output


def test_target_epsilon_gives_sigma_per_k():
    payload = invoke_json("group", "--k", "1,2", *MNIST, "--steps", "1000", "--target-epsilon", "2")
    assert [r["k"] for r in payload["results"]] == [1, 2]
    sigmas = [r["sigma"] for r in payload["results"]]
    assert sigmas[0] < sigmas[1]  # two records need more noise
    for result in payload["results"]:
        assert result["accountant"] == "pb" and result["target_epsilon"] == 2.0
        assert result["epsilon"] <= 2.0 and result["epsilon_lower"] <= result["epsilon"]
    assert payload["inputs"]["sigma"] is None


# --- plots ------------------------------------------------------------------------------
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_plot_distributions_is_a_png(tmp_path):
    target = tmp_path / "pair.png"
    completed = run_dpcalc("group", "--k", "5", *MNIST, "--sigma", "0.5", "--steps", "10",
                           "--method", "rdp-overapprox", "--plot", str(target), "--plot-kind",
                           "distributions", "--format", "plain")
    assert completed.returncode == 0, completed.stderr
    assert target.read_bytes()[:8] == PNG_MAGIC
    assert f"plot written to {target}" in completed.stderr


def test_plot_all_writes_three_pngs(tmp_path):
    target = tmp_path / "fig.png"
    result = runner.invoke(app, ["group", "--k", "1:2", *MNIST, "--sigma", "2", "--steps", "100",
                                 "--plot", str(target), "--plot-kind", "all", "--format", "json"])
    assert result.exit_code == 0, result.output
    for kind in ("compositions", "k", "distributions"):
        written = tmp_path / f"fig-{kind}.png"
        data = written.read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 10_000
    matplotlib_image = pytest.importorskip("matplotlib.image")
    pixels = matplotlib_image.imread(tmp_path / "fig-compositions.png")
    assert pixels.shape[0] > 300 and pixels.shape[1] > 500


def test_spread_keeps_the_ends_and_at_most_the_limit():
    from dpcalc.cli.group.plots import spread

    values = list(range(1, 65))
    chosen = spread(values, 8)
    assert chosen[0] == 1 and chosen[-1] == 64 and len(chosen) <= 8
    assert chosen == sorted(set(chosen)) and set(chosen) <= set(values)
    assert spread([1, 2, 3], 8) == [1, 2, 3]


def test_k_figure_draws_the_certified_pb_bounds(tmp_path, monkeypatch):
    """The k figure plots, at σ, the table's own pb ε and, at 2σ and 4σ, pb_epsilon's."""
    from dpcalc.group import pairs as group
    from dpcalc.cli.group import plots as group_plots
    from dpcalc.cli.output import plots

    drawn = {}
    monkeypatch.setattr(plots, "group_over_k_figure",
                        lambda path, ks, series, title: drawn.update(ks=ks, series=series))
    setting = group.GroupSetting(1, 256, 60000, 1.0, 200)
    table = {k: group.pb_epsilon(setting.with_k(k), 1e-5).epsilon for k in (1, 2, 3)}
    group_plots.draw({"k": tmp_path / "k.png"}, setting, [1, 2, 3], ["pb"], 1e-5, table, 0.01)
    assert drawn["ks"] == [1, 2, 3]
    assert drawn["series"][0].values == [table[k] for k in (1, 2, 3)]
    for factor, series in zip((2.0, 4.0), drawn["series"][1:]):
        expected = [group.pb_epsilon(setting.with_k(k).with_sigma(factor), 1e-5).epsilon
                    for k in (1, 2, 3)]
        assert series.values == expected
        assert all(a < b for a, b in zip(series.values, drawn["series"][0].values))


# --- bad input: exit 2, one line ----------------------------------------------------------
@pytest.mark.parametrize("args,message", [
    (["--k", "0", *MNIST, "--sigma", "1", "--steps", "10"], "--k must be a whole number from 1 to 64"),
    (["--k", "6", "--batch-size", "2", "--dataset-size", "5", "--sigma", "1", "--steps", "10"],
     "--k must be <= --dataset-size (5); got 6"),
    (["--k", "2", "--batch-size", "600", "--dataset-size", "500", "--sigma", "1", "--steps", "10"],
     "--batch-size must be <= --dataset-size (500); got 600"),
    (["--k", "4:2", *MNIST, "--sigma", "1", "--steps", "10"], "--k range must go up"),
    (["--k", "a:b", *MNIST, "--sigma", "1", "--steps", "10"], "--k (range start) must be"),
    (["--k", "2", *MNIST, "--sigma", "-1", "--steps", "10"], "--sigma (noise multiplier) must be in [0.0001, 1e+06]"),
    (["--k", "2", *MNIST, "--steps", "10"], "give either --sigma"),
    (["--k", "2", *MNIST, "--sigma", "1", "--steps", "10", "--target-epsilon", "1"], "give either --sigma"),
    (["--k", "2", *MNIST, "--sigma", "1"], "give --steps or --epochs"),
    (["--k", "2", "--batch-size", "256", "--sigma", "1", "--steps", "10"], "give --batch-size and --dataset-size"),
    (["--k", "2", *MNIST, "--sigma", "1", "--steps", "10", "--delta", "2"], "--delta must be in [1e-300, 1)"),
    (["--k", "2", *MNIST, "--sigma", "1", "--steps", "10", "--method", "moments"], "--method must be one of"),
    (["--k", "2", *MNIST, "--sigma", "1", "--steps", "10", "--sampling", "stratified"], "--sampling"),
    (["--k", "2", *MNIST, "--sigma", "1", "--steps", "10", "--method", ","], "--method must name"),
    (["--k", "2", *MNIST, "--sigma", "1", "--steps", "10", "--plot", "out.txt"], "--plot FILE must end in .png or .svg"),
    (["--k", "2", *MNIST, "--steps", "10", "--target-epsilon", "0"], "--target-epsilon must be > 0"),
    # issue 30 §3: a k sweep beyond the documented size is refused, saying how to raise it
    (["--k", "1:64", *MNIST, "--sigma", "1", "--steps", "1000"],
     "--k sweeps 64 values with pb: 64 slow points (about 0.5-3 s each) exceed the limit "
     "--max-sweep-points 32; give fewer --k values, --method without pb, or --max-sweep-points 64"),
    (["--k", "1:20", *MNIST, "--sigma", "1", "--steps", "10", "-m", "all"],
     "--k sweeps 20 values with pb, seed: 40 slow points"),
    (["--k", "1:33", *MNIST, "--steps", "10", "--target-epsilon", "3"],
     "33 values with pb calibrations: 33 slow points (about 0.5-3 s each) exceed the limit "
     "--max-sweep-points 32; give fewer --k values, or --max-sweep-points 33"),
    (["--k", "1:4", *MNIST, "--sigma", "1", "--steps", "10", "--max-sweep-points", "3"],
     "exceed the limit --max-sweep-points 3"),
    (["--k", "2", *MNIST, "--sigma", "1", "--steps", "10", "--max-sweep-points", "0"],
     "--max-sweep-points must be a whole number from 1 to 320"),
])
def test_bad_input_exits_2_with_one_line(args, message):
    completed = run_dpcalc("group", *args)
    assert completed.returncode == 2
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1, completed.stderr
    assert lines[0].startswith("dpcalc: error: ")
    assert message in lines[0]
    assert completed.stdout == ""


def test_the_sweep_limit_counts_slow_methods_only_and_can_be_raised():
    fast = invoke_json("group", "--k", "1:64", "--batch-size", "64", "--dataset-size", "60000",
                       "--sigma", "1", "--steps", "1000", "-m", "rdp-overapprox")
    assert [r["k"] for r in fast["results"]] == list(range(1, 65))
    raised = invoke_json("group", "--k", "1:3", *MNIST, "--sigma", "1", "--steps", "10",
                         "-m", "pb", "--max-sweep-points", "3")
    assert [r["k"] for r in raised["results"]] == [1, 2, 3]
    assert all(r["epsilon_lower"] <= r["epsilon"] for r in raised["results"])


def test_unreachable_target_names_the_flag():
    completed = run_dpcalc("group", "--k", "1", "--batch-size", "10", "--dataset-size", "10",
                           "--steps", "1000", "--target-epsilon", "1e-6")
    assert completed.returncode == 2
    (line,) = completed.stderr.strip().splitlines()
    assert "--target-epsilon" in line


@pytest.mark.parametrize("text,values", [("4", [4]), ("1:4", [1, 2, 3, 4]), ("8,1,2,2", [1, 2, 8]),
                                         ("1,3:5", [1, 3, 4, 5])])
def test_parse_k_values(text, values):
    assert parse_k_values(text) == values


@pytest.mark.parametrize("text", ["", "0", "1.5", "65", "3:1", "x", "1:"])
def test_parse_k_values_rejects(text):
    with pytest.raises(DpcalcError, match="--k"):
        parse_k_values(text)


def test_help_documents_the_three_plots():
    result = runner.invoke(app, ["group", "--help"], terminal_width=200)
    assert result.exit_code == 0
    for text in ("--plot-kind", "compositions", "distributions", "--target-epsilon", "--sampling"):
        assert text in result.output
