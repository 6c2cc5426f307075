"""The reviewer-ready privacy statement of `dpcalc report`, as deterministic Markdown.

Only formats what the report command computed (ε from pb, the risk figures); numbers are
rounded in the safe direction (upper bounds up, lower bounds down), 5 significant digits.
"""
from __future__ import annotations

from dpcalc.models.samplers import (ADD_REMOVE, BALLS_IN_BINS, FIXED, POISSON, REPLACE_ONE, SHUFFLE,
                                    SHUFFLE_ONCE, TRUNCATED_POISSON, ZERO_OUT)
from dpcalc.cli.output.render import show_lower, show_upper

ADJACENCY_WORDS = {
    ADD_REMOVE: "add/remove-one — two training sets are neighbours when one is the other with "
                "one example added or removed",
    REPLACE_ONE: "replace-one — two training sets of the same size are neighbours when they "
                   "differ in one example",
    ZERO_OUT: "zero-out — two training sets are neighbours when one example of one is replaced "
              "by a null example (whose gradient is zero) in the other",
}
SAMPLER_WORDS = {
    POISSON: "Poisson sampling — every example joins each batch independently with "
             "probability q, so batch sizes vary",
    FIXED: "fixed-size batches — each batch is B of the N examples drawn uniformly without "
           "replacement, independently at every step",
    TRUNCATED_POISSON: "truncated Poisson sampling — every example joins each batch "
                       "independently with probability q, and a batch of more than M examples "
                       "is cut to a uniformly random M of them",
    SHUFFLE: "shuffled batches — each epoch a fresh uniform permutation of the N examples is "
             "cut into ⌈N/B⌉ consecutive batches",
    SHUFFLE_ONCE: "shuffled batches — one uniform permutation of the N examples, cut into ⌈N/B⌉ "
                  "batches and replayed in the same order every epoch",
    BALLS_IN_BINS: "balls-in-bins batches — each epoch every example is put in one of the ⌈N/B⌉ "
                   "steps, chosen uniformly and independently, so batch sizes vary",
}


def _steps_lines(statement: dict) -> list[str]:
    lines = []
    for index, phase in enumerate(statement["phases"], start=1):
        where = f"Phase {index}: " if len(statement["phases"]) > 1 else ""
        rate = f"q = {phase['q']:.6g}"
        if phase.get("batch_size") is not None:
            rate = f"B = {phase['batch_size']} of N = {phase['dataset_size']} (q = B/N = {phase['q']:.6g})"
        if phase.get("epochs") is not None:
            if phase.get("batch_size") is not None:
                how = (f"T = ⌈epochs·N/B⌉ = ⌈{phase['epochs']:g}·{phase['dataset_size']}/"
                       f"{phase['batch_size']}⌉ = {phase['steps']} steps")
            else:
                how = f"T = ⌈epochs/q⌉ = ⌈{phase['epochs']:g}/{phase['q']:.6g}⌉ = {phase['steps']} steps"
        else:
            how = f"T = {phase['steps']} steps (given)"
        lines.append(f"- {where}{rate}, noise multiplier σ = {phase['sigma']:g}, {how}; "
                     f"sampler: {phase['sampling']}.")
    return lines


def _delta_check(statement: dict) -> str:
    delta, size = statement["delta"], statement.get("dataset_size")
    if size is None:
        return (f"δ = {delta:g}. The training set size N was not given: check that δ is well "
                "below 1/N (a mechanism that publishes one random example in full has δ = 1/N).")
    if delta >= 1.0 / size:
        return (f"**Warning: δ = {delta:g} ≥ 1/N = {1.0 / size:.3g}.** A mechanism that publishes "
                "one random example in full meets this δ; choose δ well below 1/N.")
    return f"δ = {delta:g} < 1/N = {1.0 / size:.3g} (N = {size}): δ passes the 1/N check."


def _risk_lines(risk: list[dict]) -> list[str]:
    lines = []
    for record in risk:
        upper, lower = show_upper(record["upper"]), show_lower(record["lower"])
        measure, at = record["measure"], record["at"]
        if measure == "tpr":
            lines.append(f"- Membership inference at FPR {at:g}: TPR ≤ {upper} "
                         f"(certified; at least {lower} is reachable; a guess gets {at:g}).")
        elif measure == "advantage":
            lines.append(f"- Membership advantage max(TPR − FPR) ≤ {upper} (at least {lower}).")
        elif measure == "posterior_success":
            base = max(at, 1 - at)
            lines.append(f"- With prior {at:g} on membership, the best guess is right with "
                         f"probability ≤ {upper} (at least {lower}; {base:g} without the model).")
        elif measure == "reconstruction":
            lines.append(f"- Reconstruction: an attack whose best guess without the example "
                         f"succeeds with probability {at:g} succeeds with probability ≤ {upper} "
                         "(Hayes, Mahloujifar, Balle 2023).")
        elif measure == "gdp_mu":
            low, high = record["fpr_range"]  # rounded inward: within the certified range
            lines.append(f"- Gaussian DP: TPR ≤ Φ(Φ⁻¹(FPR) + μ) with μ = {upper} for every FPR "
                         f"in [{show_upper(low, 2)}, {show_lower(high, 12)}] (certified; no μ "
                         f"below {lower} holds there).")
    return lines


def _caveats(statement: dict) -> list[str]:
    samplings = set(statement["samplings"])
    lines = []
    if POISSON in samplings:
        lines.append("- **Shuffling is not Poisson sampling.** These numbers hold only if every "
                     "batch was drawn by Poisson sampling (e.g. Opacus's DPDataLoader). A data "
                     "loader that shuffles once per epoch and cuts fixed-size batches is a "
                     "different sampler; no certificate here covers it (Chua et al. 2024).")
    if TRUNCATED_POISSON in samplings:
        lines.append("- **The lower bound is the analysis's, not the sampler's.** For truncated "
                     "Poisson sampling ε is bounded through a dominating pair that reveals whether "
                     "the batch could be cut (Ganesh 2025); the lower bound is that pair's, and the "
                     "sampler's own ε may be below it.")
    if FIXED in samplings:
        lines.append("- **Shuffling is not independent fixed-size sampling.** These numbers hold "
                     "if every batch was drawn afresh without replacement; a single shuffle per "
                     "epoch cut into batches is a different sampler and is not covered.")
    if samplings & {SHUFFLE, SHUFFLE_ONCE}:
        lines.append("- **No credit for shuffling.** The certified upper bounds treat every epoch "
                     "as one Gaussian mechanism on the example (no amplification by shuffling is "
                     "proven); the lower bounds come from an explicit attack (Chua et al. 2024). "
                     "The truth lies between them; only the upper bounds may be reported.")
    if BALLS_IN_BINS in samplings:
        lines.append("- **Balls-in-bins is not shuffling.** These numbers hold only if every "
                     "example was put in a uniformly chosen step of each epoch, independently of "
                     "the others (Chua et al. 2025); a loader that shuffles and cuts fixed-size "
                     "batches is a different sampler (`--sampling shuffle`).")
    lines.append("- **Hyper-parameter tuning is not covered.** Only this training run is "
                 "accounted for; tuning runs, repeated runs and model selection on the same data "
                 "spend more privacy (Papernot & Steinke 2022).")
    lines.append("- **Per-example, not per-user.** The unit of privacy is one training example. "
                 "A person with k examples is protected as a group of k (weaker): see "
                 "`dpcalc group --k K`, or sample and clip per user.")
    lines.append("- The guarantee covers the released model(s) only if nothing else computed "
                 "from the training data (checkpoints selected on it, statistics, logs) is "
                 "released outside the accounting.")
    return lines


def statement_markdown(statement: dict) -> str:
    """The statement as Markdown, from the dict the report command assembles."""
    eps = statement["epsilon"]
    lines = ["# Differential privacy statement", "",
             f"Training ran DP-SGD (Gaussian noise, per-example clipping) for {statement['steps']} "
             f"steps. It satisfies (ε, δ)-differential privacy with **ε = {show_upper(eps['upper'])}** "
             f"at **δ = {statement['delta']:g}** (certified upper bound; the true ε is at least "
             f"{show_lower(eps['lower'])}).", "",
             "## Model of the guarantee", "",
             "- Unit of privacy: one training example (example-level DP).",
             f"- Neighbouring datasets: {ADJACENCY_WORDS[statement['adjacency']]}."]
    for sampling in statement["samplings"]:
        lines.append(f"- Sampler: {SAMPLER_WORDS[sampling]}.")
    lines += ["- The numbers apply to a run that used exactly this sampler and neighbouring "
              "relation; for another sampler they are not a certificate.", "",
              "## Run", "", *_steps_lines(statement), "",
              "## Accounting", "",
              f"- Accountant: {statement['accountant']}. Certificate: certified upper bound on ε "
              "with a certified lower bound (the true ε lies between them).",
              f"- ε ∈ [{show_lower(eps['lower'])}, {show_upper(eps['upper'])}] at δ = "
              f"{statement['delta']:g}.",
              f"- {_delta_check(statement)}", "",
              "## What this means for an attacker", "",
              "Certified bounds for the strongest attacker, who knows every other example "
              "(upper bounds are safe to report; lower bounds show how tight they are):", "",
              *_risk_lines(statement["risk"]), "",
              "## Caveats", "", *_caveats(statement), "",
              f"_Generated by dpcalc {statement['version']}: `{statement['command_line']}`._"]
    return "\n".join(lines) + "\n"
