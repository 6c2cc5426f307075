"""Accountant names used everywhere (CLI flags, JSON) mapped to their classes.

Classes are imported on first use, so adding an accountant costs start-up nothing.
"""
from __future__ import annotations

from importlib import import_module

from dpcalc.accountants.base import Accountant
from dpcalc.errors import DpcalcError
from dpcalc.params import shown

# name -> "module:Class"; order is the display order of `--accountant all`.
_ACCOUNTANTS: dict[str, str] = {
    "pb": "dpcalc.accountants.pb:PrivacyBucketsAccountant",
    "rdp": "dpcalc.accountants.rdp_accountants:RdpAccountant",
    "moments": "dpcalc.accountants.rdp_accountants:MomentsAccountant",
    "abadi": "dpcalc.accountants.rdp_accountants:AbadiBoundAccountant",
    "gdp": "dpcalc.accountants.gdp:GdpAccountant",
    "strong": "dpcalc.accountants.composition:StrongCompositionAccountant",
    "naive": "dpcalc.accountants.composition:NaiveCompositionAccountant",
}

DEFAULT_ACCOUNTANT = "pb"

# Names users know from other tools -> the accountant that answers here, and why.
ALIASES: dict[str, tuple[str, str]] = {
    "pld": ("pb", "pld is pb here: numeric composition of the privacy loss distribution, with "
                  "certified upper and lower bounds"),
    "prv": ("pb", "prv (Gopi et al.'s PRV accountant) is pb here: the same numeric composition of "
                  "the privacy loss distribution, with certified upper and lower bounds instead of "
                  "an estimate with error bars"),
    "clt": ("gdp", "clt is gdp here: the Gaussian-DP central-limit approximation (not a bound)"),
}
_WHAT = ("pb = numeric PLD composition, certified both sides (the default); rdp = Rényi DP; "
         "gdp = central-limit approximation; pld and prv mean pb")


def accountant_names() -> list[str]:
    """Registered names, in display order."""
    return list(_ACCOUNTANTS)


def get_accountant(name: str, **options) -> Accountant:
    """A fresh accountant for ``name``; ``options`` go to its constructor."""
    name = ALIASES[name][0] if isinstance(name, str) and name in ALIASES else name
    try:
        target = _ACCOUNTANTS[name]
    except (KeyError, TypeError):  # TypeError: an unhashable name ([], {})
        valid = ", ".join([*_ACCOUNTANTS, "all"])
        raise DpcalcError(f"--accountant must be one of {valid}; got {shown(name)} "
                          f"({_WHAT})") from None
    module_name, class_name = target.split(":")
    accountant_class = getattr(import_module(module_name), class_name)
    from inspect import signature

    try:
        signature(accountant_class).bind(**options)
    except TypeError:  # an option this accountant does not take
        raise DpcalcError(f"the {name} accountant takes no option "
                          f"{', '.join(sorted(options))}") from None
    return accountant_class(**options)


def resolve_names(requested: list[str] | None) -> list[str]:
    """Expand ``all``; default to the default accountant; reject unknown names."""
    if not requested:
        return [DEFAULT_ACCOUNTANT]
    names: list[str] = []
    for item in requested:
        for name in (part.strip() for part in item.split(",")):
            if not name:
                continue
            name = ALIASES[name][0] if name in ALIASES else name
            chosen = accountant_names() if name == "all" else [name]
            for chosen_name in chosen:
                if chosen_name not in _ACCOUNTANTS:
                    get_accountant(chosen_name)  # raises the clear error
                if chosen_name not in names:
                    names.append(chosen_name)
    if not names:
        valid = ", ".join([*_ACCOUNTANTS, "all"])
        shown = ", ".join(repr(item)[:40] for item in requested)
        raise DpcalcError(f"--accountant must name one of {valid}; got {shown} ({_WHAT})")
    return names


def alias_notes(requested: list[str] | None) -> list[str]:
    """One line per alias used in ``requested`` (e.g. prv → pb), to show beside the answer."""
    notes: list[str] = []
    for item in requested or []:
        for name in (part.strip() for part in item.split(",")):
            if name in ALIASES and ALIASES[name][1] not in notes:
                notes.append(ALIASES[name][1])
    return notes
