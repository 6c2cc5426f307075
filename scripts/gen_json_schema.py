"""Write dpcalc/cli/output/schema.json (the JSON Schema of every command's --format json
document) and docs/json-schema.md (the same keys as tables a reader can follow), from the one
description below. tests/test_json_schema.py checks both files are current and that every
command's output validates.

    python scripts/gen_json_schema.py          # rewrite both files
    python scripts/gen_json_schema.py --check  # exit 1 if either is out of date

A key listed with a leading "?" is optional (present only in some runs, as described); every
other key is required, and no other key is allowed, so a renamed or missing key fails.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dpcalc.cli.output.render import JSON_SCHEMA_ID  # noqa: E402

SCHEMA_FILE = ROOT / "dpcalc" / "cli" / "output" / "schema.json"
DOCS_FILE = ROOT / "docs" / "json-schema.md"

# type words → JSON Schema. "bound": a number, or "inf"/"-inf" (JSON has no infinity).
TYPES = {
    "number": {"type": "number"},
    "integer": {"type": "integer"},
    "string": {"type": "string"},
    "boolean": {"type": "boolean"},
    "bound": {"anyOf": [{"type": "number"}, {"enum": ["inf", "-inf"]}]},
    "object": {"type": "object"},
    "strings": {"type": "array", "items": {"type": "string"}},
    "numbers": {"type": "array", "items": {"type": "number"}},
    "integers": {"type": "array", "items": {"type": "integer"}},
    "objects": {"type": "array", "items": {"type": "object"}},
}


def _type(word: str) -> dict:
    """'number', 'number|null', 'number|numbers', a $defs name ('#name'), …"""
    options = []
    for part in word.split("|"):
        if part == "null":
            options.append({"type": "null"})
        elif part.startswith("#"):
            options.append({"$ref": f"#/$defs/{part[1:]}"})
        elif part.startswith("[#"):
            options.append({"type": "array", "items": {"$ref": f"#/$defs/{part[2:-1]}"}})
        else:
            options.append(TYPES[part])
    return options[0] if len(options) == 1 else {"anyOf": options}


# ------------------------------------------------------------------ the keys, shared parts
EPSILON_RECORD = {
    "accountant": ("string", "The accountant (pb, rdp, moments, abadi, gdp, strong, naive)."),
    "epsilon": ("bound|null", "The reported ε: the certified upper bound, or the approximation "
                "(kind says which); null where the accountant does not apply."),
    "epsilon_upper": ("bound|null", "Certified upper bound on ε (null for an approximation or "
                      "where it does not apply)."),
    "epsilon_lower": ("bound|null", "Certified lower bound on ε (pb: the true ε of the model is at "
                      "least this); null where none is computed."),
    "certified": ("boolean", "True only for a row holding a certified upper bound."),
    "kind": ("#kind", "certified upper bound, approximation, not applicable, or error (the "
             "accountant failed inside: a bug); group also: no certificate (the method found "
             "none for this k) and seed model (a value for another model: not for this run)."),
    "order": ("number|null", "RDP order α of the bound (rdp/moments), else null."),
    "notes": ("strings", "Caveats of this row, one sentence each."),
    "details": ("object", "Accountant-specific diagnostics (pb: epsilon_remove, epsilon_add, "
                "grid_step, …; rdp: conversion, …); keys may be added between versions."),
}

RUN_INPUTS = {
    "?q": ("number", "Sampling rate q = B/N (absent for a multi-phase run: see phases)."),
    "?batch_size": ("integer|null", "Batch size B, when given (null when q was given)."),
    "?dataset_size": ("integer|null", "Dataset size N, when given."),
    "?sigma": ("number", "Noise multiplier σ (absent for a multi-phase run)."),
    "steps": ("integer", "Total DP-SGD steps T."),
    "?epochs": ("number", "Epochs, when the steps were derived from --epochs."),
    "?steps_from_epochs": ("#steps_from_epochs", "How --epochs became steps (rounded up)."),
    "?phases": ("objects", "Multi-phase run (--phase/--schedule): each phase's q, batch_size, "
                "dataset_size, sigma, steps, sampling."),
    "?schedule_file": ("string", "The --schedule file the phases came from."),
    "?max_batch_size": ("integer", "truncated-poisson: the largest batch M."),
    "sampling": ("string|strings", "The sampler (poisson, fixed, shuffle, …); a multi-phase run "
                 "of several samplers: one per phase."),
    "adjacency": ("string", "Neighbouring datasets: add-remove, replace-one or zero-out."),
    "drop_last": ("boolean", "shuffle/sequential: the partial last batch is dropped."),
    "model": ("string", "The privacy model in words (sampler and adjacency): every certified "
              "number holds for it."),
    "unit": ("#unit", "What one record is, i.e. what is protected."),
    "pipeline": ("#pipeline_record|null", "The pipeline named (--pipeline, or implied by the "
                 "client flags): dpcalc pipelines' record, with the model as used (adjacency, "
                 "unit, drop_last, model, adjacency_note); null without one."),
}

RISK_RECORD = {
    "accountant": ("string", "pb for a run; claim for an (ε, δ) claim."),
    "measure": ("string", "tpr (at a false-positive rate), advantage, posterior or "
                "reconstruction."),
    "at": ("number|null", "The FPR of a tpr row (null for the other measures)."),
    "value": ("number|null", "The reported bound (= upper)."),
    "upper": ("number|null", "Certified upper bound on the measure."),
    "lower": ("number|null", "Certified lower bound (null for a claim: any mechanism meeting it "
              "may leak less)."),
    "no_leak": ("number|null", "The measure's value without any leak (e.g. TPR = FPR)."),
    "certified": ("boolean", "True for a certified bound."),
    "kind": ("#kind", "certified upper bound; bound for the claim; not applicable; error."),
    "notes": ("strings", "Caveats of this row."),
    "?fpr_range": ("numbers", "advantage: the FPR interval where the best test attains it."),
    "?nearest_model": ("object", "Not certified for the run's model: the nearest certified "
                       "model's bounds (adjacency, upper, lower)."),
}

CLAIM_INPUTS = {
    "claim": ("#claim", "The (ε, δ) claim, without a run."),
    "fpr": ("numbers", "False-positive rates of the membership tests."),
    "prior": ("number", "Prior probability of membership, for the posterior."),
    "baseline": ("number|null", "Reconstruction baseline κ, when given."),
}

ALTERNATIVE = {
    "sampling": ("string", "A sampler your pipeline could use instead."),
    "adjacency": ("string", "Its adjacency."),
    "steps": ("integer", "Steps of the same run under it."),
    "epsilon_upper": ("bound|null", "Its certified upper bound on ε."),
    "epsilon_lower": ("bound|null", "Its certified lower bound on ε."),
    "model": ("string", "Its model in words."),
}

DEFS = {
    "kind": ({"enum": ["certified upper bound", "approximation", "not applicable", "error",
                       "bound for the claim", "no certificate", "seed model"]}, None),
    "unit": ({"enum": ["example", "client", "user"]}, None),
    "claim": ({"epsilon": ("number", "The claim's ε."), "delta": ("number", "The claim's δ.")},
              "An (ε, δ) claim."),
    "steps_from_epochs": ({
        "?epochs": ("number", "The epochs given."),
        "exact": ("number", "epochs·N/B (or epochs/q) before rounding."),
        "steps": ("integer", "The steps used: rounded up (the safe side)."),
        "?rounding": ("string", "How it was rounded."),
        "?opacus_steps": ("integer", "What Opacus's int(epochs/q) gives."),
        "note": ("string", "The derivation in words."),
    }, "Steps derived from --epochs."),
    "budget": ({
        "max_epsilon": ("number", "The --max-epsilon budget."),
        "epsilon": ("bound|null", "The ε checked (the answer accountant's largest)."),
        "accountant": ("string", "The accountant whose ε was checked."),
        "passed": ("boolean", "ε ≤ max_epsilon (exit 0); false: exit 1."),
    }, "Present when --max-epsilon was given."),
    "alternative": (ALTERNATIVE, "A certified model for the same run, priced."),
    "units": ({"example": ("string", "--unit example in words."),
               "client": ("string", "--unit client in words."),
               "user": ("string", "--unit user in words.")}, "The --unit names in words."),
    "risk_record": (RISK_RECORD, "One attack measure."),
    "pipeline_record": ({
        "name": ("string", "The --pipeline name."),
        "aliases": ("strings", "Other names it accepts."),
        "what": ("string", "The pipeline in words."),
        "sampling": ("string", "The --sampling it sets."),
        "adjacency": ("string", "The --adjacency it sets (in a run's inputs: as used)."),
        "unit": ("#unit", "The --unit it sets (in a run's inputs: as used)."),
        "drop_last": ("boolean", "Whether it sets --drop-last."),
        "model": ("string", "The privacy model in words."),
        "why": ("string", "Why this model is right for it."),
        "needs": ("string|null", "Flags it needs, if any."),
        "?adjacency_note": ("string|null", "A run's inputs: why this adjacency, where the "
                            "pipeline chose it or --adjacency overrode it."),
    }, "A data pipeline dpcalc knows by name."),
}

EPSILON_INPUTS = {**RUN_INPUTS, "delta": ("number", "Target δ."),
                  "accountants": ("strings", "The accountants run, in row order.")}

DOCUMENTS: dict[str, dict] = {
    "epsilon": {
        "inputs": EPSILON_INPUTS,
        "results": ("epsilon_record", EPSILON_RECORD),
        "alternatives": ("[#alternative]", "With pb among the accountants: the certified "
                         "samplers the run could use instead, with their ε (else empty)."),
        "?budget": ("#budget", "The --max-epsilon gate."),
    },
    "delta": {
        "inputs": {**{key: value for key, value in RUN_INPUTS.items()},
                   "epsilon": ("number", "The ε at which δ is computed."),
                   "accountants": ("strings", "The accountants run.")},
        "results": ("delta_record", {
            "accountant": ("string", "The accountant."),
            "delta": ("bound|null", "The reported δ(ε) (certified upper bound or approximation)."),
            "delta_upper": ("bound|null", "Certified upper bound on δ."),
            "delta_lower": ("bound|null", "Certified lower bound on δ."),
            "certified": ("boolean", "True for a certified upper bound."),
            "kind": ("#kind", "As for epsilon."),
            "notes": ("strings", "Caveats."),
            "?nearest_model": ("object", "Not applicable here: the nearest certified model's δ."),
            "?upper_source": ("string", "pb on an epoch sampler: where the upper bound comes "
                              "from."),
            "?delta_poisson_not_applicable": ("bound|null", "pb on an epoch sampler: the Poisson "
                                              "δ, which does NOT apply to the run (comparison)."),
        }),
    },
    "sigma": {
        "inputs": {
            "?epsilon": ("number", "Target ε (ε mode and the Gaussian mechanism)."),
            "?max_tpr": ("number|null", "Risk target: TPR bound at at_fpr."),
            "?at_fpr": ("number|null", "The FPR of the max_tpr target."),
            "?max_advantage": ("number|null", "Risk target: membership advantage bound."),
            "?delta": ("number", "Target δ."),
            "?sensitivity": ("number", "Gaussian mechanism only: L2 sensitivity."),
            "?mechanism": ("string", "Gaussian mechanism only: its name."),
            **{key if key.startswith("?") else "?" + key: value
               for key, value in RUN_INPUTS.items()},
            "?precision": ("number", "Relative precision of σ."),
            "?calibrates": ("string", "A schedule whose phases give σ: what σ is (the common "
                            "multiplier of the phases' σ)."),
            "?accountants": ("strings", "The accountants used."),
        },
        "results": ("sigma_record", {
            "accountant": ("string", "The accountant calibrated against."),
            "sigma": ("number|null", "The σ found (null where none meets the target)."),
            "?epsilon": ("bound|null", "ε at that σ (certified upper bound)."),
            "?epsilon_lower": ("bound|null", "Certified lower bound on ε at that σ."),
            "?target_epsilon": ("number", "The target ε."),
            "?tpr": ("number|null", "Risk target: certified TPR at at_fpr for σ."),
            "?tpr_lower": ("number|null", "Its certified lower bound."),
            "?at_fpr": ("number|null", "The FPR of the TPR target."),
            "?advantage": ("number|null", "Certified membership advantage for σ."),
            "?advantage_lower": ("number|null", "Its certified lower bound."),
            "?mechanism": ("string", "Gaussian mechanism only: its name."),
            "?delta_achieved": ("number", "Gaussian mechanism: δ(ε) at σ (≤ target δ)."),
            "?safe": ("boolean", "Gaussian mechanism: the formula is proven for this ε "
                      "(classic: ε < 1)."),
            "?source": ("string", "Gaussian mechanism: the theorem σ comes from."),
            "certified": ("boolean", "True when σ meets the target by a certified bound."),
            "kind": ("#kind", "As for epsilon."),
            "?evaluations": ("integer|null", "Accountant evaluations the search took (null "
                             "where no search ran)."),
            "?phase_sigmas": ("numbers", "A schedule's common multiplier: each phase's σ "
                              "times the multiplier found."),
            "notes": ("strings", "Caveats."),
            "?nearest_model": ("object", "Not applicable here: the nearest certified model."),
        }),
        "?budget": ("#budget", "The --max-epsilon gate."),
    },
    "compare": {
        "inputs": {
            "?q": ("number|numbers|null", "q, or its sweep values (absent for a multi-phase "
                   "run: see phases)."),
            "?batch_size": ("integer|integers|null", "B, when given."),
            "?dataset_size": ("integer|null", "N, when given."),
            "?sigma": ("number|numbers|null", "σ, or its sweep values (absent for a multi-phase "
                       "run)."),
            "steps": ("integer|integers|null", "T, or its values along the sweep."),
            "?epochs": ("number|numbers", "Epochs, when given."),
            "?steps_from_epochs": ("object", "How --epochs became steps."),
            "?phases": ("objects", "A multi-phase run's phases."),
            "?schedule_file": ("string", "The --schedule file."),
            "?max_batch_size": ("integer", "truncated-poisson: the largest batch."),
            "sampling": ("string|strings", "The sampler(s) compared."),
            "adjacency": ("string", "The adjacency."),
            "delta": ("number", "Target δ."),
            "accountants": ("strings", "The accountants compared."),
            "sweep": ("string|null", "The swept parameter (q, sigma, steps, epochs), else null."),
            "unit": ("#unit", "What one record is."),
            "pipeline": ("#pipeline_record|null", "The pipeline named, as in epsilon; null "
                         "without one."),
            "?drop_last": ("boolean", "shuffle/sequential: partial last batch dropped (absent "
                           "when several samplers are compared)."),
            "model": ("string", "The privacy model in words."),
        },
        "results": ("compare_record", {
            **EPSILON_RECORD,
            "adjacency": ("string", "The row's adjacency."),
            "delta": ("number", "Target δ."),
            "batch_size": ("integer|null", "The row's B."),
            "dataset_size": ("integer|null", "The row's N."),
            "q": ("number|numbers|null", "The row's q (a multi-phase run: one per phase)."),
            "sigma": ("number|numbers|null", "The row's σ (a multi-phase run: one per phase)."),
            "steps": ("integer", "The row's steps."),
            "?epochs": ("number|null", "The row's epochs, when given (absent for a multi-phase "
                        "run)."),
            "sampling": ("string", "The row's sampler."),
            "ratio_to_tightest": ("number|null", "ε / the smallest certified ε at this point."),
            "method": ("string", "The accountant's method in words."),
            "?max_batch_size": ("integer", "truncated-poisson: the largest batch."),
        }),
        "?budget": ("#budget", "The --max-epsilon gate."),
    },
    "group": {
        "inputs": {
            "k": ("integers", "The group sizes k."),
            "batch_size": ("integer", "Batch size B."),
            "dataset_size": ("integer", "Dataset size N."),
            "q": ("number", "q = B/N."),
            "sigma": ("number|null", "σ (null with --target-epsilon)."),
            "steps": ("integer", "Steps T."),
            "?epochs": ("number", "Epochs, when given."),
            "?steps_from_epochs": ("#steps_from_epochs", "How --epochs became steps."),
            "delta": ("number", "Target δ."),
            "sampling": ("string", "The sampler."),
            "adjacency": ("string", "The adjacency."),
            "model": ("string", "The privacy model in words."),
            "?target_epsilon": ("number", "--target-epsilon: the ε for k records."),
            "accountants": ("strings", "The methods run."),
        },
        "results": ("group_record", {
            "k": ("integer", "Records protected together."),
            **EPSILON_RECORD,
            "?sigma": ("number|null", "--target-epsilon: the σ found."),
            "?target_epsilon": ("number", "--target-epsilon: the target."),
            "?evaluations": ("integer", "--target-epsilon: evaluations the search took."),
            "?applies": ("boolean", "seed: false, the shift-j pair is not a certificate for "
                         "this run (never gated)."),
        }),
        "?budget": ("#budget", "The --max-epsilon gate."),
    },
    "risk": {
        "inputs": {**{key if key.startswith("?") else "?" + key: value
                      for key, value in RUN_INPUTS.items()},
                   **{"?" + key: value for key, value in CLAIM_INPUTS.items()},
                   "fpr": CLAIM_INPUTS["fpr"], "prior": CLAIM_INPUTS["prior"],
                   "baseline": CLAIM_INPUTS["baseline"],
                   "?grid_step": ("number", "pb's final grid step.")},
        "results": ("#risk_record", None),
    },
    "report": {
        "inputs": {**{key if key.startswith("?") else "?" + key: value
                      for key, value in RUN_INPUTS.items()},
                   "?claim": CLAIM_INPUTS["claim"],
                   "?delta": ("number", "Target δ (a run)."),
                   "fpr": CLAIM_INPUTS["fpr"], "prior": CLAIM_INPUTS["prior"],
                   "baseline": CLAIM_INPUTS["baseline"]},
        "results": ("report_record", {
            "accountant": ("string", "pb for a run; claim for an (ε, δ) claim."),
            "epsilon": ("bound|null", "The certified ε (or the claim's)."),
            "?epsilon_upper": ("bound|null", "Certified upper bound on ε (a run)."),
            "?epsilon_lower": ("bound|null", "Certified lower bound on ε (a run)."),
            "delta": ("number", "δ."),
            "certified": ("boolean", "True for a certified statement."),
            "kind": ("#kind", "As for epsilon; bound for the claim."),
            "risk": ("[#risk_record]", "The attack bounds, as risk's results."),
            "notes": ("strings", "Caveats."),
            "markdown": ("string", "The privacy statement (what the table format prints)."),
            "?nearest_model": ("object", "Not certified here: the nearest certified model."),
            "?user_level": ("object", "--max-examples-per-user K: max_examples_per_user, upper "
                            "and lower (certified ε of K records together, null where no group "
                            "pair is proven) and note."),
        }),
        "?alternatives": ("[#alternative]", "A run: certified samplers it could use (else "
                          "empty)."),
    },
    "simulate": {
        "inputs": {
            "data": ("string", "The data: synthetic, or the --data file."),
            "label": ("string|null", "The --label column, when a file was given."),
            "n_train": ("integer", "Training examples."),
            "n_test": ("integer", "Test examples."),
            "n_features": ("integer", "Features."),
            "n_classes": ("integer", "Classes."),
            "model": ("string", "The network: logistic regression or mlp (here not the privacy "
                      "model: see privacy_model)."),
            "hidden": ("integer", "Hidden units (0: logistic regression)."),
            "activation": ("string|null", "The mlp's activation."),
            "sampling": ("string", "The sampler the training used."),
            "adjacency": ("string", "The adjacency."),
            "accounted_sampling": ("string|null", "The sampler accounted (null: no certificate "
                                   "for the run's model)."),
            "privacy_model": ("string", "The privacy model in words."),
            "epsilon_applies": ("boolean", "False where no certified ε exists for the model "
                                "(shuffle under add/remove)."),
            "batch_size": ("integer", "Batch size B."),
            "q": ("number", "q = B/N_train."),
            "epochs": ("number", "Epochs."),
            "steps": ("integer", "Steps."),
            "sigma": ("number", "Noise multiplier σ."),
            "sigma_source": ("string", "given, default or calibrated."),
            "target_epsilon": ("number|null", "--target-epsilon, when σ was calibrated."),
            "calibration": ("object|null", "--target-epsilon: the calibration (target_epsilon, "
                            "epsilon, evaluations, …)."),
            "clip_norm": ("number", "Clipping norm C."),
            "learning_rate": ("number", "Learning rate."),
            "momentum": ("number", "Momentum."),
            "delta": ("number", "Target δ."),
            "k": ("integer|null", "--k: records protected together."),
            "test_fraction": ("number", "Fraction held out for testing."),
            "seed": ("integer", "Random seed."),
            "accountants": ("strings", "The accountants run each epoch."),
        },
        "epochs": ("[#epoch_record]", "One record per epoch."),
        "final": ("#final_record", "The last epoch and what its ε is."),
        "baseline": ("#baseline_record|null", "--baseline: the non-private run."),
        "group": ("#group_summary|null", "--k: the group ε of the run."),
        "audit": ("#audit_record|null", "--audit/--audit-runs: the empirical audit."),
        "notes": ("strings", "Caveats."),
        "?budget": ("#budget", "The --max-epsilon gate."),
    },
    "pipelines": {
        "inputs": ("object", "Always empty."),
        "results": ("#pipeline_record", None),
        "units": ("#units", "What each --unit protects."),
    },
}

EPOCH = {
    "epoch": ("integer", "Epoch number from 1."),
    "steps": ("integer", "Steps done so far."),
    "epochs_done": ("number", "Epochs done so far."),
    "loss": ("number|null", "Training loss (monitoring, not privatised)."),
    "train_accuracy": ("number|null", "Training accuracy."),
    "test_accuracy": ("number|null", "Test accuracy."),
    "clipped_fraction": ("number|null", "Fraction of per-example gradients clipped."),
    "epsilon": ("bound|null", "pb's certified ε after these steps (null: not accounted or does "
                "not apply)."),
    "epsilon_lower": ("bound|null", "pb's certified lower bound."),
    "epsilon_rdp": ("bound|null", "rdp's ε."),
    "?epsilon_poisson_not_applicable": ("bound|null", "shuffle under add/remove: pb's Poisson "
                                        "figure, which does NOT apply to the run."),
}
DEFS["epoch_record"] = (EPOCH, "One epoch of simulate.")
DEFS["final_record"] = ({
    **{key: value for key, value in EPOCH.items()
       if key not in ("epochs_done", "clipped_fraction")},
    "accountant": ("string", "pb: the accountant of epsilon."),
    "delta": ("number", "Target δ."),
    "notes": ("strings", "Caveats of the final ε."),
}, "The final epoch.")
DEFS["baseline_record"] = ({
    "test_accuracy": ("number", "Non-private test accuracy."),
    "train_accuracy": ("number", "Non-private training accuracy."),
    "loss": ("number", "Non-private training loss."),
    "accuracy_ratio": ("number|null", "DP test accuracy / non-private test accuracy."),
}, "The non-private baseline.")
DEFS["group_summary"] = ({
    "k": ("integer", "Records protected together."),
    "epsilon": ("bound|null", "Certified group ε."),
    "epsilon_lower": ("bound|null", "Its certified lower bound."),
    "accountant": ("string", "The method."),
    "certified": ("boolean", "True for a certified bound."),
    "notes": ("strings", "Caveats."),
}, "The group ε of simulate --k.")
DEFS["audit_record"] = ({
    "mode": ("string", "one-run (--audit) or many-runs (--audit-runs)."),
    "canary": ("string", "The canary kind (gradient, input)."),
    "threat_model": ("string", "What the auditor sees."),
    "epsilon_lower": ("bound|null", "Empirical ε lower bound at the confidence."),
    "confidence": ("number", "Its confidence level."),
    "delta": ("number", "δ of the audit."),
    "certified_epsilon_lower": ("bound|null", "pb's certified lower bound for the run."),
    "certified_epsilon_upper": ("bound|null", "pb's certified upper bound for the run."),
    "ceiling_epsilon": ("bound|null", "The most ε this audit could ever show."),
    "consistent": ("boolean", "The empirical bound is ≤ the certified upper bound."),
    "verdict": ("string", "The audit's conclusion in words."),
    "q": ("number", "Sampling rate."),
    "sigma": ("number", "σ."),
    "steps": ("integer", "Steps."),
    "sampling": ("string", "The sampler."),
    "adjacency": ("string", "The adjacency."),
    "method": ("string", "The statistical method."),
    "canaries": ("integer", "Canaries (one run) or 1."),
    "canaries_included": ("integer|null", "Canaries included in training."),
    "runs": ("integer", "Training runs."),
    "guesses": ("integer|null", "Guesses made."),
    "correct_guesses": ("integer|null", "Correct guesses."),
    "guesses_in": ("integer|null", "Guesses 'in'."),
    "guesses_out": ("integer|null", "Guesses 'out'."),
    "guess_rule": ("string|null", "How guesses are chosen."),
    "true_positives": ("integer|null", "Many runs: true positives."),
    "positives": ("integer|null", "Many runs: runs with the canary."),
    "false_positives": ("integer|null", "Many runs: false positives."),
    "negatives": ("integer|null", "Many runs: runs without it."),
    "threshold": ("number|null", "The score threshold."),
    "threshold_rule": ("string|null", "How the threshold was chosen."),
    "poisson_epsilon": ("bound|null", "Non-Poisson samplers: the Poisson ε for comparison."),
    "exceeds_poisson": ("boolean|null", "Whether the empirical bound exceeds it."),
}, "An empirical privacy audit.")


# ------------------------------------------------------------------ building
def _object(keys: dict, description: str | None = None) -> dict:
    properties, required = {}, []
    for key, (word, meaning) in keys.items():
        name = key.lstrip("?")
        properties[name] = {**_type(word), **({"description": meaning} if meaning else {})}
        if not key.startswith("?"):
            required.append(name)
    schema = {"type": "object", "properties": properties, "required": required,
              "additionalProperties": False}
    return {**({"description": description} if description else {}), **schema}


HEAD = {
    "schema": ("string", f"The schema of this document: \"{JSON_SCHEMA_ID}\". A new identifier "
               "means a key was removed, renamed or changed meaning."),
    "dpcalc_version": ("string", "The dpcalc version that wrote the document."),
    "command": ("string", "The command."),
}


def _document(command: str, keys: dict) -> tuple[dict, dict]:
    """The document schema and the table of its keys."""
    top = dict(HEAD)
    defs = {}
    for key, value in keys.items():
        if key == "results":
            name, fields = value
            if fields is None:
                top[key] = (f"[{name}]", "One record per row.")
            else:
                defs[name] = (fields, f"One row of {command}.")
                top[key] = (f"[#{name}]", "One record per row.")
        elif key == "inputs" and isinstance(value, dict):
            defs[f"{command}_inputs"] = (value, f"What {command} computed from.")
            top[key] = (f"#{command}_inputs", "The inputs, as used.")
        else:
            top[key] = value
    schema = _object(top)
    schema["properties"]["command"] = {"const": command, "description": "The command."}
    schema["properties"]["schema"] = {"const": JSON_SCHEMA_ID,
                                      "description": HEAD["schema"][1]}
    return schema, defs


def build() -> tuple[dict, dict]:
    all_defs = dict(DEFS)
    documents = {}
    for command, keys in DOCUMENTS.items():
        documents[command], defs = _document(command, keys)
        all_defs.update(defs)
    schema_defs = {}
    for name, (spec, description) in all_defs.items():
        if spec is not None and "enum" in spec:
            schema_defs[name] = spec
        else:
            schema_defs[name] = _object(spec, description)
    for command, document in documents.items():
        schema_defs[f"{command}_document"] = document
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://dpcalc.invalid/schema/{JSON_SCHEMA_ID}.json",
        "title": f"dpcalc --format json output ({JSON_SCHEMA_ID})",
        "description": "Every dpcalc command's --format json document. Generated by "
                       "scripts/gen_json_schema.py; the keys are documented in "
                       "docs/json-schema.md.",
        "type": "object",
        "required": ["schema", "dpcalc_version", "command"],
        "properties": {"command": {"enum": list(DOCUMENTS)}},
        "allOf": [{"if": {"properties": {"command": {"const": command}},
                          "required": ["command"]},
                   "then": {"$ref": f"#/$defs/{command}_document"}} for command in DOCUMENTS],
        "$defs": schema_defs,
    }
    return schema, all_defs


# ------------------------------------------------------------------ the docs page
def _word(word: str) -> str:
    parts = []
    for part in word.split("|"):
        if part.startswith("[#"):
            parts.append(f"array of [{part[2:-1]}](#{part[2:-1]})")  # GitHub keeps "_"
        elif part.startswith("#"):
            parts.append(f"[{part[1:]}](#{part[1:]})")
        elif part == "bound":
            parts.append("number or \"inf\"")
        elif part in ("strings", "numbers", "integers", "objects"):
            parts.append(f"array of {part}")
        else:
            parts.append(part)
    return " or ".join(parts)


def _table(keys: dict) -> list[str]:
    lines = ["| key | type | required | meaning |", "|---|---|---|---|"]
    for key, (word, meaning) in keys.items():
        lines.append(f"| `{key.lstrip('?')}` | {_word(word)} | "
                     f"{'no' if key.startswith('?') else 'yes'} | {meaning or ''} |")
    return lines


def markdown(defs: dict) -> str:
    lines = [
        "# The JSON output (schema " + f"`{JSON_SCHEMA_ID}`)",
        "",
        "<!-- Generated by scripts/gen_json_schema.py from the same description as",
        "     dpcalc/cli/output/schema.json; edit the script, not this page. -->",
        "",
        "Every command prints one JSON document with `--format json` (`-f json`). Each starts",
        f"with `\"schema\": \"{JSON_SCHEMA_ID}\"` and `\"dpcalc_version\"`, then `\"command\"`.",
        "The machine-readable JSON Schema (draft 2020-12) ships with the package as",
        "`dpcalc/cli/output/schema.json`; validate a document with any JSON Schema validator,",
        "e.g. the `jsonschema` package:",
        "",
        "```python",
        "import json, importlib.resources, jsonschema",
        "schema = json.loads(importlib.resources.files('dpcalc.cli.output')",
        "                    .joinpath('schema.json').read_text())",
        "jsonschema.validate(document, schema)",
        "```",
        "",
        "Rules for every document:",
        "",
        "- ε, δ and other bounds that can be infinite are a number or the string `\"inf\"`",
        "  (JSON has no infinity); NaN never appears (null instead).",
        "- A *required* key is always present (its value may be null where the type says so); an",
        "  optional key appears only in the runs its meaning describes. No other key appears:",
        "  the schema rejects unknown keys in every record except `details` and the open",
        "  objects noted below.",
        "- `kind` is one of `certified upper bound`, `approximation`, `not applicable` (no value:",
        "  `certified` is false), `error` (the accountant failed inside: a bug), and",
        "  `bound for the claim` (risk/report of an (ε, δ) claim).",
        "- `schema` changes (e.g. to `dpcalc/2`) when a key is removed, renamed or changes",
        "  meaning; a new key may be added within one schema (the schema file is updated",
        "  with it), and `details` may gain keys at any time.",
        "",
        "## Contents",
        "",
        *[f"- [{command}](#{command})" for command in DOCUMENTS],
        "- [Shared records](#shared-records)",
        "",
    ]
    for command, keys in DOCUMENTS.items():
        document, document_defs = _document(command, keys)
        lines += [f"## {command}", "", f"`dpcalc {command} … --format json`: the top-level keys.",
                  ""]
        top = dict(HEAD)
        for key, value in keys.items():
            if key == "results":
                name, fields = value
                top[key] = (f"[{name}]" if fields is None else f"[#{name}]", "One record per row.")
            elif key == "inputs" and isinstance(value, dict):
                top[key] = (f"#{command}_inputs", "The inputs, as used.")
            else:
                top[key] = value
        lines += _table(top) + [""]
        for name, (spec, description) in document_defs.items():
            lines += [f"### {name}", "", description, ""] + _table(spec) + [""]
    lines += ["## Shared records", ""]
    for name, (spec, description) in DEFS.items():
        lines += [f"### {name}", ""]
        if "enum" in spec:
            lines += ["One of: " + ", ".join(f"`{value}`" for value in spec["enum"]) + ".", ""]
        else:
            lines += [description or "", ""] + _table(spec) + [""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str]) -> int:
    schema, defs = build()
    texts = {SCHEMA_FILE: json.dumps(schema, indent=2, ensure_ascii=False) + "\n",
             DOCS_FILE: markdown(defs)}
    if "--check" in argv:
        stale = [str(path.relative_to(ROOT)) for path, text in texts.items()
                 if not path.exists() or path.read_text(encoding="utf-8") != text]
        if stale:
            print("out of date (run python scripts/gen_json_schema.py): " + ", ".join(stale))
            return 1
        return 0
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
