"""The reviewer-ready privacy statement of `dpcalc report`, as deterministic Markdown.

Only formats what the report command computed (ε from pb, the risk figures); numbers are
rounded in the safe direction (upper bounds up, lower bounds down), 5 significant digits.
"""
from __future__ import annotations

import re

from dpcalc.pipelines.names import CLIENT, EXAMPLE, UNIT_WORDS
from dpcalc.params import batches_per_epoch
from dpcalc.models.samplers import (ADD_REMOVE, BALLS_IN_BINS, EPOCH_SAMPLINGS, FIXED,
                                    ONCE_PER_EPOCH, POISSON,
                                    REPLACE_ONE, SAMPLING_LABELS, SEQUENTIAL, SHUFFLE,
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
    SEQUENTIAL: "sequential batches — the N examples in the same known order every epoch, cut "
                "into ⌈N/B⌉ consecutive batches (no shuffling)",
    ONCE_PER_EPOCH: "once-per-epoch batches — each epoch every example is in exactly one of the "
                    "⌈N/B⌉ consecutive batches, in an order that need not be a uniform "
                    "permutation (e.g. a buffered shuffle)",
}
DROP_LAST_WORDS = ("the partial last batch is dropped: ⌊N/B⌋ batches per epoch, the N mod B "
                   "examples left over unused that epoch")


# what one record is called, and the run's headline, per unit of privacy
_RECORD_NOUNS = {CLIENT: ("client", "clients"), "user": ("user", "users")}
_HEADLINES = {
    EXAMPLE: "Training ran DP-SGD (Gaussian noise, per-example clipping) for {steps} steps.",
    CLIENT: "Training ran client-level DP federated learning (each round's sampled clients' "
            "updates clipped and summed, Gaussian noise) for {steps} rounds.",
    "user": "Training ran DP-SGD with user-level sampling and clipping (Gaussian noise) for "
            "{steps} steps.",
}


def _in_units(text: str, unit: str) -> str:
    """``text`` written for examples, with the run's record in their place (a client's
    update in place of an example's gradient)."""
    if unit not in _RECORD_NOUNS:
        return text
    one, many = _RECORD_NOUNS[unit]
    text = re.sub(r"\bexamples\b", many, re.sub(r"\ban example\b", f"a {one}", text))
    text = re.sub(r"\bexample\b", one, text)
    return text.replace("gradient", "update") if unit == CLIENT else text


def _steps_lines(statement: dict) -> list[str]:
    lines = []
    for index, phase in enumerate(statement["phases"], start=1):
        where = f"Phase {index}: " if len(statement["phases"]) > 1 else ""
        rate = f"q = {phase['q']:.6g}"
        if phase.get("batch_size") is not None:
            rate = f"B = {phase['batch_size']} of N = {phase['dataset_size']} (q = B/N = {phase['q']:.6g})"
        if phase.get("epochs") is not None and phase["sampling"] in EPOCH_SAMPLINGS:
            per_epoch = batches_per_epoch(phase["q"], phase.get("batch_size"),
                                          phase.get("dataset_size"),
                                          bool(statement.get("drop_last")))
            how = (f"T = ⌈epochs × batches per epoch⌉ = ⌈{phase['epochs']:g} × {per_epoch}⌉ = "
                   f"{phase['steps']} steps")
        elif phase.get("epochs") is not None:
            if phase.get("batch_size") is not None:
                how = (f"T = ⌈epochs·N/B⌉ = ⌈{phase['epochs']:g}·{phase['dataset_size']}/"
                       f"{phase['batch_size']}⌉ = {phase['steps']} steps")
            else:
                how = f"T = ⌈epochs/q⌉ = ⌈{phase['epochs']:g}/{phase['q']:.6g}⌉ = {phase['steps']} steps"
        else:
            how = f"T = {phase['steps']} steps (given)"
        line = (f"- {where}{rate}, noise multiplier σ = {phase['sigma']:g}, {how}; "
                f"sampler: {phase['sampling']}.")
        if statement.get("unit") == CLIENT:  # m of M clients a round, rounds for steps
            line = (line.replace("B = ", "m = ").replace(" of N = ", " of M = ")
                    .replace("q = B/N", "q = m/M").replace("N/B", "M/m").replace(" steps", " rounds"))
        lines.append(line)
    return lines


def _delta_check(statement: dict) -> str:
    return _in_units(_delta_sentence(statement), statement.get("unit", EXAMPLE))


def _delta_sentence(statement: dict) -> str:
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
                     "loader that shuffles once per epoch and cuts fixed-size batches (PyTorch's "
                     "DataLoader(shuffle=True), tf.data's shuffle().batch()) is a different "
                     "sampler: its certificate is `--pipeline torch-shuffle` (`--sampling "
                     "shuffle`, zero-out adjacency), far wider (Chua et al. 2024).")
    if TRUNCATED_POISSON in samplings:
        lines.append("- **The lower bound is the analysis's, not the sampler's.** For truncated "
                     "Poisson sampling ε is bounded through a dominating pair that reveals whether "
                     "the batch could be cut (Ganesh 2025); the lower bound is that pair's, and the "
                     "sampler's own ε may be below it.")
    if FIXED in samplings:
        lines.append("- **Shuffling is not independent fixed-size sampling.** These numbers hold "
                     "if every batch (or every round's set of clients) was drawn afresh without "
                     "replacement; a single shuffle per epoch cut into batches is a different "
                     "sampler (`--sampling shuffle`).")
    if samplings & {SHUFFLE, SHUFFLE_ONCE}:
        lines.append("- **No credit for shuffling.** The certified upper bounds treat every epoch "
                     "as one Gaussian mechanism on the example (no amplification by shuffling is "
                     "proven); the lower bounds come from an explicit attack (Chua et al. 2024). "
                     "The truth lies between them; only the upper bounds may be reported.")
    if SEQUENTIAL in samplings:
        lines.append("- **No shuffling, no amplification.** The examples come in the same known "
                     "order every epoch: the figures are exact — an attacker who knows the order "
                     "attains them (every other gradient 0, the example's +C every epoch). "
                     "Shuffling or Poisson sampling would lower ε.")
    if ONCE_PER_EPOCH in samplings:
        lines.append("- **A buffered shuffle is not a uniform permutation.** The upper bounds use "
                     "only that each example is in one step per epoch (no amplification); the "
                     "lower bounds come from an attack that works for any order (Chua et al. "
                     "2024). The truth lies between them; only the upper bounds may be "
                     "reported.")
    if BALLS_IN_BINS in samplings:
        lines.append("- **Balls-in-bins is not shuffling.** These numbers hold only if every "
                     "example was put in a uniformly chosen step of each epoch, independently of "
                     "the others (Chua et al. 2025); a loader that shuffles and cuts fixed-size "
                     "batches is a different sampler (`--sampling shuffle`).")
    lines.append("- **Hyper-parameter tuning is not covered.** Only this training run is "
                 "accounted for; tuning runs, repeated runs and model selection on the same data "
                 "spend more privacy (Papernot & Steinke 2022).")
    unit = statement.get("unit", EXAMPLE)
    if unit == EXAMPLE:
        lines.append("- **Per-example, not per-user.** The unit of privacy is one training "
                     "example. A person with k examples is protected as a group of k (weaker): "
                     "see `dpcalc group --k K`, or sample and clip per user (`--unit user`).")
    elif unit == CLIENT:
        lines.append("- **Per-client.** The unit of privacy is one client: the numbers hold if "
                     "the server sampled clients as stated and clipped each client's whole "
                     "update as one record, noise added to their sum; every example of a "
                     "client is then protected together.")
    else:
        lines.append("- **Per-user.** The unit of privacy is one user: the numbers hold if each "
                     "record of the run holds all of one person's data, sampled and clipped as "
                     "one.")
    lines.append("- The guarantee covers the released model(s) only if nothing else computed "
                 "from the training data (checkpoints selected on it, statistics, logs) is "
                 "released outside the accounting.")
    return lines


def _headline(statement: dict) -> list[str]:
    """The claim: ε at δ for the model, or — where the model has no certificate — that, and
    the nearest certified model's figure labelled as such."""
    eps, steps, delta = statement["epsilon"], statement["steps"], statement["delta"]
    ran = _HEADLINES.get(statement.get("unit", EXAMPLE), _HEADLINES[EXAMPLE]).format(steps=steps)
    if statement.get("certified", True):
        return [f"{ran} "
                f"It satisfies (ε, δ)-differential privacy with **ε = {show_upper(eps['upper'])}"
                f"** at **δ = {delta:g}** (certified upper bound; the true ε is at least "
                f"{show_lower(eps['lower'])})."]
    lines = [f"{ran} "
             f"**No certificate exists for this model**: "
             f"{statement['not_applicable'].removeprefix('not applicable: ')}."]
    nearest = statement.get("nearest_model")
    if nearest is not None:
        lines += ["", f"Under the nearest model with a certificate — {nearest['adjacency']} "
                  f"adjacency, the same run — it satisfies (ε, δ)-differential privacy with "
                  f"ε ≤ {show_upper(nearest['epsilon_upper'])} at δ = {delta:g} (certified "
                  f"upper bound for {nearest['adjacency']}; the true ε there is at least "
                  f"{show_lower(nearest['epsilon_lower'])}). This is a statement for "
                  f"{nearest['adjacency']} adjacency, not for {statement['adjacency']}: "
                  f"{nearest['why']}."]
    return lines


def _user_level_lines(statement: dict) -> list[str]:
    """`--max-examples-per-user K`: the certified ε of a person's K examples together."""
    found = statement.get("user_level")
    if not found:
        return []
    k, delta = found["max_examples_per_user"], statement["delta"]
    # Poisson: K records of which some have a zero gradient are fewer records, so the bound for
    # K covers every smaller group; a fixed batch size has no such argument (N changes)
    who = (f"A person with up to {k} examples" if statement["samplings"] == [POISSON]
           else f"A person with {k} examples (fewer: `dpcalc group --k 1:{k}`)")
    if found["upper"] is None:
        return [f"- {who}: no certified bound for {k} records together under this model "
                f"({found['note']})."]
    return [f"- {who}, all protected together (the group of {k} records under this model): "
            f"ε ∈ [{show_lower(found['lower'])}, {show_upper(found['upper'])}] at δ = {delta:g} "
            f"(certified; `dpcalc group --k {k}`)."]


def _accounting_lines(statement: dict) -> list[str]:
    eps, delta = statement["epsilon"], statement["delta"]
    if statement.get("certified", True):
        return [f"- Accountant: {statement['accountant']}. Certificate: certified upper bound "
                "on ε with a certified lower bound (the true ε lies between them).",
                f"- ε ∈ [{show_lower(eps['lower'])}, {show_upper(eps['upper'])}] at δ = "
                f"{delta:g}.", *_user_level_lines(statement)]
    nearest = statement.get("nearest_model")
    lines = ["- Certificate: none for this model (not applicable)."]
    if nearest is not None:
        lines.append(f"- Under {nearest['adjacency']} adjacency (the nearest certified model, "
                     f"not this one): ε ∈ [{show_lower(nearest['epsilon_lower'])}, "
                     f"{show_upper(nearest['epsilon_upper'])}] at δ = {delta:g}.")
    return lines


def _price_lines(statement: dict) -> list[str]:
    """What the pipeline costs: the same run's certified ε under Poisson and balls-in-bins."""
    found = statement.get("alternatives") or []
    if not found:
        return []
    lines = ["## What the data pipeline costs", "",
             f"The same run (same B, N, σ and steps or epochs; {found[0]['adjacency']} "
             "adjacency) under other samplers — each figure a certificate for its own sampler "
             "only, not for this run:", ""]
    for item in found:
        lines.append(f"- {SAMPLING_LABELS[item['sampling']].split(' (')[0]}: ε ≤ "
                     f"{show_upper(item['epsilon_upper'])} at δ = {statement['delta']:g} "
                     f"(at least {show_lower(item['epsilon_lower'])}; {item['steps']} steps).")
    return lines + [""]


def _model_lines(statement: dict) -> list[str]:
    unit = statement.get("unit", EXAMPLE)
    lines = [f"- Unit of privacy: {UNIT_WORDS.get(unit, unit)}.",
             f"- Neighbouring datasets: {_in_units(ADJACENCY_WORDS[statement['adjacency']], unit)}."]
    for sampling in statement["samplings"]:
        lines.append(_in_units(f"- Sampler: {SAMPLER_WORDS[sampling]}"
                               f"{'; ' + DROP_LAST_WORDS if statement.get('drop_last') else ''}.",
                               unit))
    pipeline = statement.get("pipeline")
    if pipeline:
        lines.append(f"- Data pipeline: `{pipeline['name']}` — {pipeline['what']}: "
                     f"{pipeline['why']}"
                     f"{'; ' + pipeline['adjacency_note'] if pipeline.get('adjacency_note') else ''}.")
    return lines


def _risk_section(statement: dict) -> list[str]:
    risk = statement["risk"]
    if statement.get("certified", True) or not risk or "nearest_model" not in risk[0]:
        return ["Certified bounds for the strongest attacker, who knows every other example "
                "(upper bounds are safe to report; lower bounds show how tight they are):", "",
                *_risk_lines(risk)]
    adjacency = risk[0]["nearest_model"]["adjacency"]
    shown = [{**record, "upper": record["nearest_model"]["upper"],
              "lower": record["nearest_model"]["lower"]} for record in risk]
    return [f"No certified figures for this model. Under {adjacency} adjacency (the nearest "
            "certified model, not this one), for the strongest attacker:", "",
            *_risk_lines(shown)]


def statement_markdown(statement: dict) -> str:
    """The statement as Markdown, from the dict the report command assembles."""
    lines = ["# Differential privacy statement", "", *_headline(statement), "",
             "## Model of the guarantee", "", *_model_lines(statement),
             "- The numbers apply to a run that used exactly this sampler and neighbouring "
             "relation; for another sampler they are not a certificate.", "",
             "## Run", "", *_steps_lines(statement), "",
             "## Accounting", "", *_accounting_lines(statement),
             f"- {_delta_check(statement)}", "",
             "## What this means for an attacker", "", *_risk_section(statement), "",
             *_price_lines(statement),
             "## Caveats", "", *_caveats(statement), "",
             f"_Generated by dpcalc {statement['version']}: `{statement['command_line']}`._"]
    return "\n".join(lines) + "\n"


def _claim_lines(records: list[dict]) -> list[str]:
    """The figures of an (ε, δ) claim (risk/claim.py): bounds that some (ε, δ)-DP mechanism
    attains, so no 'at least' beside them."""
    lines = []
    for record in records:
        upper, measure, at = show_upper(record["upper"]), record["measure"], record["at"]
        if measure == "tpr":
            lines.append(f"- Membership inference at FPR {at:g}: TPR ≤ {upper} (a guess gets "
                         f"{at:g}).")
        elif measure == "advantage":
            lines.append(f"- Membership advantage max(TPR − FPR) ≤ {upper}.")
        elif measure == "posterior_success":
            lines.append(f"- With prior {at:g} on membership, the best guess is right with "
                         f"probability ≤ {upper} ({max(at, 1 - at):g} without the model).")
        elif measure == "reconstruction":
            lines.append(f"- Reconstruction: an attack whose best guess without the example "
                         f"succeeds with probability {at:g} succeeds with probability ≤ {upper} "
                         "(Hayes, Mahloujifar, Balle 2023).")
    return lines


def claim_markdown(epsilon: float, delta: float, records: list[dict], version: str,
                   command_line: str) -> str:
    """A reviewer's statement for a claimed (ε, δ) alone: what it allows an attacker, for
    every (ε, δ)-DP mechanism, and what it leaves unsaid."""
    lines = ["# What an (ε, δ) claim means for an attacker", "",
             f"A mechanism claimed to be (ε, δ)-differentially private with **ε = {epsilon:g}** "
             f"at **δ = {delta:g}**. The bounds below hold for every such mechanism, and some "
             "mechanism reaches each of them (Kairouz, Oh, Viswanath 2015): they are the most "
             "the claim alone guarantees.", "",
             "## What the claim allows an attacker", "", *_claim_lines(records), "",
             "## Caveats", "",
             "- **A claim, not a run.** A DP-SGD run's own risk is usually far below these "
             "bounds; its parameters (q or B and N, σ, steps) give certified figures of the run "
             "itself (`dpcalc report --q … --sigma … --steps …`).",
             "- **The claim's model.** An (ε, δ) holds for one sampler, neighbouring relation and "
             "unit of privacy; check that the paper's match the training pipeline (a Poisson ε "
             "does not cover a shuffling data loader: `dpcalc pipelines`).",
             f"- δ = {delta:g} lets the mechanism fail outright with probability δ: it should be "
             "well below 1/N.", "",
             f"_Generated by dpcalc {version}: `{command_line}`._"]
    return "\n".join(lines) + "\n"
