"""The flag names Opacus / TF Privacy users type, one target flag everywhere, did-you-mean,
and the rounding of steps from epochs (issue 12)."""
from __future__ import annotations

import json

import pytest
from conftest import cli_runner

from dpcalc.cli.app import app, main
from dpcalc.params import epoch_steps

runner = cli_runner()


def _json(*argv: str) -> dict:
    result = runner.invoke(app, [*argv, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _error(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as stop:
        main(list(argv))
    captured = capsys.readouterr()
    assert stop.value.code == 2 and captured.out == "", captured
    assert captured.err.count("\n") == 1 and captured.err.startswith("dpcalc: error: ")
    return captured.err


@pytest.mark.parametrize("canonical,alias", [
    (["--q", "0.01"], ["--sample-rate", "0.01"]),
    (["--q", "0.01"], ["--sampling-probability", "0.01"]),
    (["--q", "0.01", "--sigma", "4"], ["--q", "0.01", "--noise-multiplier", "4"]),
    (["--q", "0.01", "--delta", "1e-6"], ["--q", "0.01", "--target-delta", "1e-6"]),
])
def test_epsilon_accepts_the_names_other_tools_use(canonical, alias):
    rest = ["--steps", "1000"] + ([] if "--sigma" in canonical else ["--sigma", "4"])
    assert _json("epsilon", *canonical, *rest) == _json("epsilon", *alias, *rest)


def test_every_command_takes_noise_multiplier_and_sample_rate_where_they_apply():
    compare = _json("compare", "--sample-rate", "0.01", "--noise-multiplier", "4", "--steps",
                    "100", "-a", "rdp", "--target-delta", "1e-6")
    assert compare["inputs"]["q"] == 0.01 and compare["inputs"]["sigma"] == 4.0
    assert compare["inputs"]["delta"] == 1e-6
    group = _json("group", "--k", "2", "--batch-size", "100", "--dataset-size", "10000",
                  "--noise-multiplier", "2", "--steps", "10", "--target-delta", "1e-6", "-m", "rdp-group")
    assert group["inputs"]["sigma"] == 2.0 and group["inputs"]["delta"] == 1e-6
    sigma = _json("sigma", "--target-epsilon", "2", "--sampling-probability", "0.01", "--steps",
                  "100", "-a", "rdp")
    assert sigma["inputs"]["epsilon"] == 2.0 and sigma["inputs"]["q"] == 0.01


def _parsed(*argv: str) -> dict:
    """The values Click binds for a subcommand's arguments (nothing is computed)."""
    import typer

    root = typer.main.get_command(app)
    command = root.commands[argv[0]]
    return command.make_context(argv[0], list(argv[1:])).params


@pytest.mark.parametrize("command,parameter", [
    ("sigma", "epsilon"), ("group", "target_epsilon"), ("simulate", "target_epsilon")])
def test_every_calibrating_command_takes_both_target_flags(command, parameter):
    """sigma took only --epsilon; group and simulate only --target-epsilon."""
    for flag in ("--epsilon", "--target-epsilon", "-e"):
        assert _parsed(command, flag, "3")[parameter] == "3"


def test_both_target_flags_calibrate_the_same_sigma():
    dpsgd = ["sigma", "--q", "0.01", "--steps", "100", "-a", "rdp"]
    by_epsilon = _json(*dpsgd, "--epsilon", "3")
    assert by_epsilon == _json(*dpsgd, "--target-epsilon", "3")
    assert by_epsilon["results"][0]["sigma"] > 0


def test_an_alias_and_its_name_together_are_a_repeated_option(capsys):
    err = _error(capsys, "epsilon", "--q", "0.01", "--noise-multiplier", "3", "--sigma", "4",
                 "--steps", "10")
    assert "--sigma is given more than once (as --noise-multiplier and --sigma)" in err


@pytest.mark.parametrize("argv,suggestion", [
    (["epsilon", "--noise-multiplyer", "4"], "did you mean --noise-multiplier?"),
    (["epsilon", "--noise_multiplyer", "4"], "did you mean --noise-multiplier?"),
    (["sigma", "--target-epsilom", "1"], "did you mean --target-epsilon?"),
    (["group", "--methods", "pb"], "did you mean --method?"),
    (["epsilon", "--sample-rte", "0.1"], "did you mean --sample-rate?"),
    (["--verison"], "did you mean --version?"),
    (["epsilonn", "--q", "0.1"], "no such command: epsilonn (did you mean epsilon?)"),
])
def test_a_mistyped_option_or_command_gets_a_suggestion(capsys, argv, suggestion):
    assert suggestion in _error(capsys, *argv)


def test_phase_specs_take_the_same_aliases():
    plain = _json("epsilon", "--phase", "q=0.01,sigma=4,steps=100", "-a", "rdp")
    aliased = _json("epsilon", "--phase", "sample-rate=0.01,noise_multiplier=4,steps=100", "-a",
                    "rdp")
    assert plain["results"] == aliased["results"]


# --- steps from epochs ---------------------------------------------------------------------
def test_steps_from_epochs_round_up_against_opacus_floor():
    """30 epochs of B = 512 out of N = 50 000: 2929.6875 exact steps. Opacus's
    get_noise_multiplier counts int(epochs / q) = 2929; dpcalc keeps the safe 2930."""
    derived = epoch_steps(30, 512 / 50_000, 512, 50_000)
    assert derived.exact == pytest.approx(2929.6875)
    assert (derived.steps, derived.opacus_steps) == (2930, 2929)
    assert "rounded up" in derived.note and "2929" in derived.note
    whole = epoch_steps(2, 0.01)
    assert whole.steps == whole.opacus_steps == 200


def test_the_output_names_the_derivation_and_the_rounding():
    payload = _json("epsilon", "--batch-size", "512", "--dataset-size", "50000", "--sigma", "1",
                    "--epochs", "30", "-a", "rdp")
    derivation = payload["inputs"]["steps_from_epochs"]
    assert payload["inputs"]["steps"] == derivation["steps"] == 2930
    assert derivation["opacus_steps"] == 2929 and derivation["rounding"].startswith("up")
    assert payload["inputs"]["epochs"] == 30.0
    table = runner.invoke(app, ["epsilon", "--batch-size", "512", "--dataset-size", "50000",
                                "--sigma", "1", "--epochs", "30", "-a", "rdp"],
                          env={"COLUMNS": "200"})
    assert "⌈30·50000/512⌉ = ⌈2929.69⌉ = 2930, rounded up" in table.stdout
    assert "Opacus's int(epochs/q) gives 2929" in table.stdout


@pytest.mark.parametrize("argv", [
    ["sigma", "--epsilon", "2", "-a", "rdp"],
    ["group", "--k", "2", "--sigma", "2", "-m", "rdp-group"],
    ["compare", "--sigma", "2", "-a", "rdp"],
])
def test_every_command_with_epochs_says_how_it_rounded(argv):
    shape = ["--batch-size", "512", "--dataset-size", "50000"]
    result = runner.invoke(app, [*argv, *shape, "--epochs", "30"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "2930, rounded up" in result.stdout and "gives 2929" in result.stdout


# --- a federated run in clients: --clients-per-round m, --clients M, --rounds T ----------------
FLOWER = ["--pipeline", "flower", "--batch-size", "50", "--dataset-size", "1000", "--steps", "200"]
CLIENTS = ["--clients-per-round", "50", "--clients", "1000", "--rounds", "200"]


def _without_schema(document: dict) -> dict:
    return {key: value for key, value in document.items() if key != "schema"}


def test_client_flags_are_the_flower_run():
    # m of M clients each round, no --pipeline/--sampling: exactly m of M (Flower, TFF)
    by_clients = _json("epsilon", *CLIENTS, "--sigma", "1")
    assert _without_schema(by_clients) == _without_schema(_json("epsilon", *FLOWER, "--sigma", "1"))
    inputs = by_clients["inputs"]
    assert (inputs["unit"], inputs["sampling"], inputs["pipeline"]["name"]) == ("client", "fixed",
                                                                               "flower")
    assert (inputs["batch_size"], inputs["dataset_size"], inputs["steps"]) == (50, 1000, 200)
    # the table names them as a federated run does
    table = runner.invoke(app, ["epsilon", *CLIENTS, "--sigma", "1"])
    assert "clients per round = 50" in table.stdout and "rounds = 200" in table.stdout


def test_client_flags_with_a_rate_are_poisson_client_sampling():
    by_clients = _json("epsilon", "--q", "0.05", "--rounds", "200", "--sigma", "1")
    plain = _json("epsilon", "--pipeline", "federated-poisson", "--q", "0.05", "--steps", "200",
                  "--sigma", "1")
    assert _without_schema(by_clients) == _without_schema(plain)
    assert by_clients["inputs"]["unit"] == "client"


def test_client_flags_with_a_sampler_keep_it_and_protect_clients():
    found = _json("epsilon", *CLIENTS, "--sigma", "1", "--sampling", "poisson")
    same = _json("epsilon", "--batch-size", "50", "--dataset-size", "1000", "--steps", "200",
                 "--sigma", "1", "--sampling", "poisson", "--unit", "client")
    assert _without_schema(found) == _without_schema(same)
    assert found["inputs"]["unit"] == "client" and found["inputs"]["sampling"] == "poisson"


def test_client_flags_in_sigma_and_compare():
    flower = _json("sigma", "--target-epsilon", "8", "--batch-size", "50", "--dataset-size", "1000",
                   "--steps", "200", "--pipeline", "flower")
    assert _without_schema(_json("sigma", "--target-epsilon", "8", *CLIENTS)) == _without_schema(flower)
    swept = runner.invoke(app, ["compare", "--clients-per-round", "50", "--clients", "1000",
                                "--rounds", "100,200", "--sigma", "1", "-a", "pb", "--format",
                                "plain"])
    assert swept.exit_code == 0, swept.output
    assert [float(v) for v in swept.stdout.split()] == [
        float(runner.invoke(app, ["epsilon", *FLOWER[:-1], steps, "--sigma", "1", "--format",
                                  "plain"]).stdout) for steps in ("100", "200")]


@pytest.mark.parametrize("argv,named", [
    ([*CLIENTS, "--batch-size", "50"], "--clients-per-round or --batch-size"),
    ([*CLIENTS, "--steps", "200"], "--rounds or --steps"),
    ([*CLIENTS, "--unit", "example"], "--unit client"),
    ([*CLIENTS, "--pipeline", "opacus"], "--pipeline opacus is not one"),
    (["--q", "0.05", "--clients", "1000", "--rounds", "200"], "give --q"),
    (["--clients-per-round", "0", "--clients", "1000", "--rounds", "200"], "--clients-per-round"),
    (["--clients-per-round", "50", "--clients", "1000", "--rounds", "2.5"], "--rounds"),
])
def test_client_flags_refuse_a_contradiction_in_one_line(capsys, argv, named):
    assert named in _error(capsys, "epsilon", *argv, "--sigma", "1")


def test_report_speaks_of_the_unit_protected():
    client = runner.invoke(app, ["report", *CLIENTS, "--sigma", "1"])
    assert client.exit_code == 0, client.output
    text = client.stdout
    assert "for 200 rounds" in text and "per-example clipping" not in text
    assert "one client added or removed" in text and "B of the N clients" in text
    assert "- m = 50 of M = 1000 (q = m/M = 0.05), noise multiplier σ = 1, T = 200 rounds" in text
    user = runner.invoke(app, ["report", "--q", "0.004", "--sigma", "1", "--steps", "1000",
                               "--unit", "user"]).stdout
    assert "one user added or removed" in user and "every user joins each batch" in user
    example = runner.invoke(app, ["report", "--q", "0.004", "--sigma", "1", "--steps", "1000"]).stdout
    assert "per-example clipping) for 1000 steps" in example and "one example added" in example


# --- TF Privacy's compute_dp_sgd_privacy command line -----------------------------------------

def _main_json(capsys, *argv: str) -> dict:
    """The whole entry point (main: where argv is read), JSON on stdout, exit 0."""
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--format", "json"])
    captured = capsys.readouterr()
    assert stop.value.code == 0, captured.err
    return json.loads(captured.out)


CANONICAL_TF_RUN = ["--dataset-size", "60000", "--batch-size", "256", "--sigma", "1.12",
                    "--epochs", "60", "--delta", "1e-5", "-a", "pb,rdp"]


@pytest.mark.parametrize("spelled", [
    # TF Privacy's README example, as absl flags (--flag=value, underscores)
    ["--N=60000", "--batch_size=256", "--noise_multiplier=1.12", "--epochs=60", "--delta=1e-5"],
    # its library's argument names (compute_dp_sgd_privacy_statement), spaced
    ["--number_of_examples", "60000", "--batch_size", "256", "--noise_multiplier", "1.12",
     "--num_epochs", "60", "--target_delta", "1e-5"],
])
def test_tf_privacys_command_line_is_the_same_run(capsys, spelled):
    ours = _main_json(capsys, "epsilon", *CANONICAL_TF_RUN)
    theirs = _main_json(capsys, "epsilon", *spelled, "-a", "pb,rdp")
    assert theirs == ours
    # TF Privacy's steps: ceil(epochs·N/B) = ceil(14062.5)
    assert ours["inputs"]["steps"] == 14063 and ours["inputs"]["dataset_size"] == 60000


def test_underscores_are_read_as_hyphens_only_for_known_options(capsys):
    # a real option of another command, or an unknown name, stays an error with a suggestion
    assert "did you mean --batch-size?" in _error(capsys, "epsilon", "--batch_sise", "256")
    assert "no such option: --max_examples" in _error(capsys, "epsilon", "--max_examples", "4")
    # after `--` nothing is rewritten: the words are arguments, not options
    err = _error(capsys, "epsilon", "--q", "0.01", "--sigma", "4", "--steps", "10", "--",
                 "--batch_size", "3")
    assert "--batch_size" in err
    # an underscored spelling and the hyphenated one together are one option given twice
    err = _error(capsys, "epsilon", "--q", "0.01", "--noise_multiplier", "3", "--sigma", "4",
                 "--steps", "10")
    assert "--sigma is given more than once" in err


def test_the_n_alias_works_in_every_run_command(capsys):
    run = ["--N", "60000", "--batch_size", "256", "--noise_multiplier", "1.12",
           "--num_epochs", "2"]
    for command in (["delta", "--epsilon", "1"], ["risk"], ["compare", "-a", "rdp"],
                    ["group", "--k", "2", "-m", "rdp-group"]):
        record = _main_json(capsys, command[0], *run, *command[1:])
        assert record["inputs"]["dataset_size"] == 60000, command
    sigma = _main_json(capsys, "sigma", "--target_epsilon", "3", "--N", "60000",
                       "--batch_size", "256", "--num_epochs", "2", "-a", "rdp")
    assert sigma["inputs"]["dataset_size"] == 60000


@pytest.mark.parametrize("argv,expected", [
    (["epsilon", "--max-grad-norm", "1.0"], "ε does not depend on the clipping norm C"),
    (["sigma", "--l2_norm_clip", "1.0"], "ε does not depend on the clipping norm C"),
    (["report", "--clip-norm", "1.0"], "give the noise multiplier σ"),
    # simulate trains a model: the clipping norm is its input there
    (["simulate", "--max-grad-norm", "1.0"], "(did you mean --clip-norm?)"),
])
def test_the_clipping_norm_gets_why_not_a_guess(capsys, argv, expected):
    assert expected in _error(capsys, *argv)


@pytest.mark.parametrize("argv,expected", [
    # a command's options before any command: say which commands take it, command first
    (["--q", "0.01", "--sigma", "4", "--steps", "10000"],
     "no such option: --q (an option of compare, delta, epsilon, report, risk, sigma: the "
     "command comes first, e.g. dpcalc epsilon --q …)"),
    (["--k", "4"], "(an option of group, simulate: the command comes first, e.g. dpcalc group --k …)"),
    # dpcalc's own options still get their did-you-mean
    (["--verison"], "did you mean --version?"),
    # bare numbers: the inputs are named options
    (["epsilon", "0.01", "4", "10000"], "dpcalc's inputs are named options, e.g. dpcalc "
                                        "epsilon --q 0.01 --sigma 4 --steps 10000"),
])
def test_a_first_try_without_the_command_or_names_says_how(capsys, argv, expected):
    assert expected in _error(capsys, *argv)


def test_a_stray_word_is_not_taken_for_bare_numbers(capsys):
    err = _error(capsys, "epsilon", "--q", "0.01", "--sigma", "4", "--steps", "10", "foo")
    assert "(foo)" in err and "named options" not in err


@pytest.mark.parametrize("argv,expected", [
    (["epsilon", "--q", "0.01", "--sigma", "4", "--steps", "100", "--epsilon", "2"],
     "δ at a given ε is dpcalc delta --epsilon E"),
    (["epsilon", "--q", "0.01", "--sigma", "4", "--steps", "100", "-e", "2"],
     "σ for a target ε is dpcalc sigma --epsilon E"),
    (["group", "--q", "0.01", "--sigma", "1", "--steps", "100"],
     "group takes the batches as --batch-size B and --dataset-size N"),
    # Opacus's get_noise_multiplier(epsilon_tolerance=…): not pb's --tolerance
    (["sigma", "--target-epsilon", "3", "--sample-rate", "0.004", "--epochs", "10",
      "--epsilon_tolerance", "0.01"], "--precision (relative, default 1e-4)"),
])
def test_an_option_of_another_command_names_the_right_one(capsys, argv, expected):
    assert expected in _error(capsys, *argv)


def test_prv_accountants_command_line_is_the_same_run(capsys):
    """prv_accountant's compute-dp-epsilon flags after `dpcalc epsilon`."""
    theirs = _main_json(capsys, "epsilon", "--sampling-probability", "5e-3", "--noise-multiplier",
                        "0.8", "--delta", "1e-6", "--num-compositions", "1000")
    ours = _main_json(capsys, "epsilon", "--q", "5e-3", "--sigma", "0.8", "--delta", "1e-6",
                      "--steps", "1000")
    assert theirs == ours and ours["inputs"]["steps"] == 1000
    assert _main_json(capsys, "compare", "--q", "0.01", "--sigma", "2", "--num_steps", "10,20",
                      "-a", "rdp")["inputs"]["sweep"]


def test_more_clients_per_round_than_clients_names_the_client_flags(capsys):
    for command in ("epsilon", "compare"):
        err = _error(capsys, command, "--clients-per-round", "50", "--clients", "10",
                     "--rounds", "10", "--sigma", "1")
        assert "--clients-per-round must be <= --clients (10); got 50" in err
