"""Checks on the raw command line that Click does not make: an option that takes one value
given twice (Click would silently keep the last), and a closer "did you mean" for a
mistyped option; and TF Privacy's underscored flag names (--batch_size) read as dpcalc's."""
from __future__ import annotations

import difflib

from dpcalc.errors import DpcalcError


def _subcommand(root, args: list[str]):
    """The Click subcommand named by the first non-option word, and the words after it."""
    for index, word in enumerate(args):
        if word == "--":
            return None, []
        if not word.startswith("-"):
            return root.commands.get(word), args[index + 1:]
    return None, []


def _single_valued(command) -> dict[str, str]:
    """option spelling → canonical name (the first long one, e.g. --sigma for
    --noise-multiplier), for options that take exactly one value."""
    names = {}
    for param in command.params:
        spellings = [name for name in getattr(param, "opts", []) if name.startswith("-")]
        if not spellings or getattr(param, "multiple", False) or getattr(param, "is_flag", False):
            continue
        canonical = next((name for name in spellings if name.startswith("--")), spellings[0])
        names.update({spelling: canonical for spelling in spellings})
    return names


def hyphenate(root, args: list[str]) -> list[str]:
    """``args`` with each --name_with_underscores (or --name_with_underscores=value) of the
    subcommand spelled with hyphens, where that spelling is one of its options: TF Privacy's
    compute_dp_sgd_privacy takes --batch_size, --noise_multiplier (absl flags)."""
    command, rest = _subcommand(root, args)
    if command is None:
        return args
    known = set(_long_options(command))
    head = args[:len(args) - len(rest)]
    out = []
    for index, word in enumerate(rest):
        if word == "--":
            return head + out + rest[index:]
        name, equals, value = word.partition("=")
        hyphenated = name.replace("_", "-")
        if name.startswith("--") and "_" in name and hyphenated in known:
            word = hyphenated + equals + value
        out.append(word)
    return head + out


def check_repeated_options(root, args: list[str]) -> None:
    """DpcalcError when an option that takes one value appears more than once."""
    command, rest = _subcommand(root, args)
    if command is None:
        return
    single = _single_valued(command)
    seen: dict[str, list[str]] = {}
    for word in rest:
        if word == "--":
            break
        spelling = word.split("=", 1)[0] if word.startswith("--") else word
        canonical = single.get(spelling)
        if canonical is not None:
            used = seen.setdefault(canonical, [])
            used.append(spelling)
            if len(used) > 1:
                how = "" if set(used) == {canonical} else f" (as {' and '.join(used)})"
                raise DpcalcError(f"{canonical} is given more than once{how}; it takes one "
                                  "value: give it once")


def _close_matches(unknown: str, candidates: list[str]) -> str:
    """' (did you mean A or B?)' for the candidates close to ``unknown``, or ''."""
    typed = unknown.replace("_", "-").lower()
    scored = sorted(((difflib.SequenceMatcher(None, typed, candidate).ratio(), candidate)
                     for candidate in dict.fromkeys(candidates)), reverse=True)
    # the best match, and any other nearly as close (at most three)
    close = [candidate for score, candidate in scored[:3]
             if score >= 0.6 and score >= scored[0][0] - 0.05]
    return f" (did you mean {' or '.join(close)}?)" if close else ""


# Options of Opacus and TF Privacy that do not change ε: why not, instead of "did you mean".
_CLIPPING = (": ε does not depend on the clipping norm C; give the noise multiplier "
             "σ = (noise standard deviation)/C as --sigma (--noise-multiplier)")
_NOT_PRIVACY_INPUTS = {"--max-grad-norm": _CLIPPING, "--l2-norm-clip": _CLIPPING,
                       "--clipping-norm": _CLIPPING, "--clip-norm": _CLIPPING}


_TARGET_EPSILON = (": epsilon computes ε; δ at a given ε is dpcalc delta --epsilon E, σ for a "
                   "target ε is dpcalc sigma --epsilon E, and a budget gate is --max-epsilon E")
_GROUP_RATE = ": group takes the batches as --batch-size B and --dataset-size N (q = B/N)"
_EPSILON_TOLERANCE = (": Opacus's get_noise_multiplier stops within that much of the target ε; "
                      "here the σ found always meets the target (ε ≤ target) and --precision "
                      "(relative, default 1e-4) bounds how far σ is above the smallest σ that "
                      "does (--tolerance is pb's own gap between its ε bounds)")
# (command, option) → why the option is not one of that command's, and what to use.
_COMMAND_REASONS = {
    ("sigma", "--epsilon-tolerance"): _EPSILON_TOLERANCE,
    **{("epsilon", name): _TARGET_EPSILON for name in ("--epsilon", "--target-epsilon", "-e")},
    **{("group", name): _GROUP_RATE for name in ("--q", "--sample-rate", "--sampling-probability")},
}


def suggest_option(root, args: list[str], unknown: str) -> str:
    """' (did you mean --sigma?)' for a mistyped option of the subcommand (or of dpcalc
    itself before any subcommand), or ''. Every alias counts (--noise-multiplier, …). An
    option other tools take that does not change ε (--max-grad-norm) gets the reason."""
    command, _ = _subcommand(root, args)
    command = root if command is None else command
    spellings = _long_options(command)
    own = _COMMAND_REASONS.get((getattr(command, "name", None), unknown.replace("_", "-")))
    if own is not None:
        return own
    reason = _NOT_PRIVACY_INPUTS.get(unknown.replace("_", "-").lower())
    if reason is not None:  # simulate trains a model: there C is --clip-norm
        return " (did you mean --clip-norm?)" if "--clip-norm" in spellings else reason
    if command is root:  # `dpcalc --q 0.01 …`: a command's option before any command
        owners = [name for name, sub in sorted(root.commands.items())
                  if unknown in _long_options(sub)]
        if owners:
            first = "epsilon" if "epsilon" in owners else owners[0]
            return (f" (an option of {', '.join(owners)}: the command comes first, e.g. "
                    f"dpcalc {first} {unknown} …)")
    return _close_matches(unknown, spellings + ["--help"])


def _long_options(command) -> list[str]:
    """Every --spelling of ``command``'s options, aliases included, in order."""
    return [name for param in command.params for name in getattr(param, "opts", [])
            if name.startswith("--")]


def suggest_command(root, unknown: str) -> str:
    """' (did you mean epsilon?)' for a mistyped subcommand, or ''."""
    return _close_matches(unknown, sorted(root.commands))
