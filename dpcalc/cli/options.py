"""Options shared by the commands, and the small CLI-side policies around them."""
from __future__ import annotations

import typer

from dpcalc.accountants.registry import (accountant_names, alias_notes, get_accountant,
                                         resolve_names)
from dpcalc.accountants.result import EpsilonResult
from dpcalc.cli.output import budget
from dpcalc.cli.output.records import result_notes
from dpcalc.cli.output.render import OutputFormat, warn

# Numbers are read as text and validated by dpcalc.params, so a bad value gets one
# line naming the flag and its valid range.
# Aliases: the names Opacus, TF Privacy and prv_accountant users type for the same inputs.
Q_NAMES = ("--q", "--sample-rate", "--sampling-probability")
SIGMA_NAMES = ("--sigma", "--noise-multiplier")
DELTA_NAMES = ("--delta", "--target-delta")
TARGET_EPSILON_NAMES = ("--target-epsilon", "--epsilon")
# TF Privacy's compute_dp_sgd_privacy flags (--N, --batch_size, …; the underscores are
# read as hyphens: argv_checks.hyphenate) and its library's argument names.
DATASET_SIZE_NAMES = ("--dataset-size", "--N", "--number-of-examples")
EPOCHS_NAMES = ("--epochs", "--num-epochs")
# prv_accountant's compute-dp-epsilon (--num-compositions) and dp-transformers (num_steps)
STEPS_NAMES = ("--steps", "--num-compositions", "--num-steps")

Q = typer.Option(None, *Q_NAMES, metavar="FLOAT",
                 help="Poisson sampling rate q in (0, 1]. Or give --batch-size and --dataset-size.")
BATCH_SIZE = typer.Option(None, "--batch-size", metavar="INT",
                          help="Expected batch size B (q = B/N), with --dataset-size.")
DATASET_SIZE = typer.Option(None, *DATASET_SIZE_NAMES, metavar="INT",
                            help="Training set size N, with --batch-size.")
# a federated run's names (run_options.federated)
CLIENTS_PER_ROUND = typer.Option(None, "--clients-per-round", metavar="INT",
                                 help="Federated: clients drawn each round m (--batch-size of a "
                                      "run whose records are clients: --unit client; without "
                                      "--pipeline/--sampling, exactly m of M: --pipeline flower).")
CLIENTS = typer.Option(None, "--clients", metavar="INT",
                       help="Federated: clients in all M (--dataset-size, --unit client).")
ROUNDS = typer.Option(None, "--rounds", metavar="INT",
                      help="Federated: rounds (--steps, --unit client).")
SIGMA = typer.Option(None, *SIGMA_NAMES, metavar="FLOAT",
                     help="Noise multiplier σ > 0 (noise std / clipping norm).")
STEPS = typer.Option(None, *STEPS_NAMES, metavar="INT", help="Number of DP-SGD steps T ≥ 1.")
EPOCHS = typer.Option(None, *EPOCHS_NAMES, metavar="FLOAT",
                      help="Epochs > 0 instead of --steps: T = ceil(epochs·N/B), or "
                           "ceil(epochs/q); an epoch sampler's epoch is all of its ⌈N/B⌉ "
                           "batches: T = ceil(epochs·⌈N/B⌉).")
PHASE = typer.Option(None, "--phase", metavar="SPEC",
                     help="A phase of a multi-phase run, e.g. 'q=0.01,sigma=4,steps=5000' "
                          "(keys q|batch-size[,dataset-size], sigma, steps|epochs); repeat for "
                          "each phase, in order.")
SCHEDULE = typer.Option(None, "--schedule", metavar="FILE",
                        help="The run's phases from a file instead of flags: CSV with a header "
                             "row (columns sigma, q or batch-size[,dataset-size], steps or "
                             "epochs, optionally sampling, max-batch-size) or JSON (a list of "
                             "objects with those keys, or an Opacus accountant's history: "
                             "[noise_multiplier, sample_rate, steps] rows), one phase per row, "
                             "in order.")
SAMPLING = typer.Option(None, "--sampling", metavar="NAME",
                        help="How batches are drawn (default poisson, or the --pipeline's): "
                             "poisson (each record joins a batch with probability q), fixed (B "
                             "of N without replacement, each step independent), shuffle (a fresh "
                             "permutation each epoch cut into ⌈N/B⌉ batches: PyTorch "
                             "DataLoader(shuffle=True)), shuffle-once (one permutation for all "
                             "epochs), sequential (the same known order every epoch: "
                             "DataLoader(shuffle=False)), once-per-epoch (each record once per "
                             "epoch, any order: tf.data's shuffle with a buffer < N) or "
                             "balls-in-bins (each record in one random step per epoch); the "
                             "epoch samplers want --batch-size and --dataset-size, and those "
                             "that fix an order (all but balls-in-bins) --adjacency zero-out or "
                             "replace-one. truncated-poisson: Poisson "
                             "at rate q cut to at most --max-batch-size records; needs "
                             "--dataset-size. Clients: a server drawing exactly m of M clients "
                             "per round is fixed with --batch-size m --dataset-size M and "
                             "--unit client (rounds are --steps); Poisson client sampling is "
                             "poisson.")
PIPELINE = typer.Option(None, "--pipeline", metavar="NAME",
                        help="Your data pipeline by name; it sets --sampling and --adjacency "
                             "(and --unit, --drop-last): opacus, opacus-no-poisson, "
                             "torch-shuffle, torch-shuffle-drop-last, torch-sequential, "
                             "tf-shuffle, tf-shuffle-buffer, jax-privacy-poisson, balls-in-bins, "
                             "flower (or tff: m of M clients per round), federated-poisson. "
                             "`dpcalc pipelines` shows what each one is and its model.")
UNIT = typer.Option(None, "--unit", metavar="NAME",
                    help="What one record of the run is, i.e. what is protected: example "
                         "(default), client (federated: the server samples clients and clips "
                         "each client's update) or user.")
DROP_LAST = typer.Option(False, "--drop-last",
                         help="shuffle or sequential: the loader drops the partial last batch "
                              "(PyTorch drop_last=True): ⌊N/B⌋ batches per epoch, N mod B "
                              "records unused each epoch.")
MAX_BATCH_SIZE = typer.Option(None, "--max-batch-size", metavar="INT",
                              help="truncated-poisson only: the most records a batch may hold "
                                   "(M, 1 ≤ M ≤ N); a Poisson batch with more is cut to a "
                                   "uniformly random M of them.")
ADJACENCY = typer.Option("add-remove", "--adjacency", metavar="NAME",
                         help="Neighbouring datasets: add-remove (one record added or removed), "
                              "replace-one (one record replaced; aliases: substitution) or "
                              "zero-out (one record replaced by a null record with zero gradient).")
# the run commands' --adjacency: None when not given (the --pipeline's default applies)
RUN_ADJACENCY = typer.Option(None, "--adjacency", metavar="NAME",
                             help="Neighbouring datasets (default add-remove, or the --pipeline's): "
                                  "add-remove (one record added or removed), "
                                  "replace-one (one record replaced; aliases: substitution) or "
                                  "zero-out (one record replaced by a null record with zero gradient).")
PHASE_NO_SIGMA = typer.Option(None, "--phase", metavar="SPEC",
                              help="A phase of a multi-phase run, e.g. 'q=0.01,steps=5000' (keys "
                                   "q|batch-size[,dataset-size], steps|epochs, sampling[, max-batch-size]); repeat for "
                                   "each phase, in order. Every phase gets the calibrated σ; with "
                                   "sigma=… in every phase, a common multiplier of theirs is "
                                   "calibrated instead.")
DELTA = typer.Option("1e-5", *DELTA_NAMES, metavar="FLOAT", help="Target δ in (0, 1).")
ACCOUNTANT = typer.Option(None, "--accountant", "-a", metavar="NAME",
                          help=f"One of {', '.join(accountant_names())} or all (repeatable or "
                               "comma-separated; pld and prv mean pb, clt means gdp). Default: "
                               "pb, certified upper and lower bounds.")
TOLERANCE = typer.Option("0.01", "--tolerance", metavar="FLOAT",
                         help="pb: refine the grid until (upper − lower) ≤ tolerance·ε.")
MAX_EPSILON = budget.MAX_EPSILON
FORMAT = typer.Option(OutputFormat.table, "--format", "-f", case_sensitive=False,
                      help="Output: table, json or plain (bare numbers).")


def warn_large_delta(delta: float, dataset_size: int | None) -> None:
    """δ ≥ 1/N permits releasing a record outright: say so on stderr."""
    if dataset_size is not None and delta >= 1.0 / dataset_size:
        warn(f"--delta {delta:g} is ≥ 1/N = {1.0 / dataset_size:.3g}; δ should be well below 1/N")


def warn_plot_only(plot, **given) -> None:
    """A warning on stderr for each plot option given without --plot (it changes nothing):
    ``given`` maps the flag (its name with '_' for '-') to its value, None or False when
    not given."""
    if plot is not None:
        return
    for name, value in given.items():
        if value is not None and value is not False:
            warn(f"--{name.replace('_', '-')} only shapes the --plot figure; it is ignored "
                 "without --plot")


def footnotes(results: list[EpsilonResult], inputs: dict | None = None) -> list[str]:
    """Lines under a table explaining what the numbers are, and the model they hold for."""
    from dpcalc.cli.schedule_options import model_footnote

    lines = []
    if inputs is not None and "model" in inputs:
        lines.append(model_footnote(inputs))
    if any(r.accountant == "pb" for r in results):
        lines.append("ε is a certified upper bound (rounded up); the lower bound is certified too "
                     "(rounded down): the true ε lies between them.")
    if any(not r.certified and not r.failed for r in results):
        lines.append("An approximation is not a bound: do not report it as a guarantee.")
    if any(r.failed for r in results):
        lines.append("error: the accountant failed inside (a dpcalc bug): no value, nothing "
                     "certified.")
    return lines + result_notes(results)


def accountants(requested: list[str] | None, gate: float | None = None) -> list[str]:
    """The accountants asked for (registry.resolve_names), saying on stderr where a name
    another tool uses (pld, prv, clt) was read as one of dpcalc's. With a budget ``gate``,
    an approximation named first is refused before anything is printed or computed."""
    names = resolve_names(requested)
    if gate is not None and names and not get_accountant(names[0]).certified:
        raise budget.approximation_gated(names[0])
    for note in alias_notes(requested):
        warn(note)
    return names
