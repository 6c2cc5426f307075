"""ASCII stand-ins for the glyphs dpcalc prints (ε, σ, δ, ≤, ·, box drawing, …), for a
terminal or pipe whose encoding cannot show them (PYTHONIOENCODING=ascii, a latin-1
locale). Digits, signs, '.', 'e' and 'inf' are ASCII already: numbers print identically.

Two layers: tables are transliterated before Rich lays them out (columns stay aligned;
render.print_table), and the stream itself gets an error handler that writes the same
stand-in for any other text that cannot be encoded (help, warnings), never an exception.
"""
from __future__ import annotations

import codecs
import unicodedata

_GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "Γ": "Gamma", "δ": "delta", "Δ": "Delta",
    "ε": "eps", "η": "eta", "θ": "theta", "κ": "kappa", "λ": "lambda", "Λ": "Lambda",
    "μ": "mu", "µ": "mu", "ν": "nu", "ξ": "xi", "π": "pi", "Π": "Prod", "ρ": "rho",
    "σ": "sigma", "Σ": "Sum", "τ": "tau", "φ": "phi", "Φ": "Phi", "ω": "omega", "ℓ": "l",
}
_SYMBOLS = {
    "−": "-", "–": "-", "—": "--", "‐": "-", "≤": "<=", "≥": ">=", "≠": "!=", "≈": "~",
    "≪": "<<", "≡": "==", "·": "*", "∗": "*", "×": "x", "±": "+/-", "∓": "-/+", "∞": "inf",
    "…": "...", "′": "'", "″": "''", "‖": "||", "√": "sqrt", "⌈": "ceil(", "⌉": ")",
    "⌊": "floor(", "⌋": ")", "→": "->", "↦": "|->", "⇒": "=>", "⇔": "<=>", "⟺": "<=>",
    "∈": " in ", "∋": " contains ", "∪": " u ", "⊗": "(x)", "⊥": "_|_", "∝": "~", "∫": "int",
    "∂": "d", "∏": "Prod", "ℝ": "R", "⟨": "<", "⟩": ">", "½": "1/2", "¼": "1/4", "§": "S",
    "‘": "'", "’": "'", "“": '"', "”": '"', "•": "*", "✓": "ok", "✗": "x", "━": "-",
    "█": "#", "▌": "#", "░": ".", "▒": ":", "▓": "#",
}
GLYPHS = {**_GREEK, **_SYMBOLS}
_HANDLER = "dpcalc-ascii"
# Characters dpcalc's own output uses: a stream that cannot encode these gets the fallback.
_PROBE = "εσδ≤·─"


def _one(char: str) -> str:
    """The ASCII stand-in of one character."""
    if char.isascii():
        return char
    if char in GLYPHS:
        return GLYPHS[char]
    code = ord(char)
    if 0x2500 <= code <= 0x257F:  # box drawing: lines and corners
        name = unicodedata.name(char, "")
        if "HORIZONTAL" in name and "VERTICAL" not in name:
            return "=" if "DOUBLE" in name else "-"
        if "VERTICAL" in name and "HORIZONTAL" not in name:
            return "|"
        return "+"
    decomposition = unicodedata.decomposition(char)
    base = unicodedata.normalize("NFKD", char)
    plain = "".join(part for part in base if part.isascii())
    if decomposition.startswith("<super>"):
        return "^" + plain
    if decomposition.startswith("<sub>"):
        return "_" + plain
    if plain:
        return plain  # é → e, ² handled above, ﬁ → fi
    if unicodedata.combining(char):
        return ""  # an accent on the letter before it
    return "?"


def to_ascii(text: str) -> str:
    """``text`` with every non-ASCII character replaced by its stand-in."""
    if text.isascii():
        return text
    return "".join(_one(char) for char in text)


def _handle(error: UnicodeEncodeError):
    return to_ascii(error.object[error.start:error.end]), error.end


codecs.register_error(_HANDLER, _handle)


def cannot_show_glyphs(stream) -> bool:
    """Whether ``stream``'s encoding lacks dpcalc's glyphs (ε, σ, ≤, box drawing)."""
    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return False
    try:
        _PROBE.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return True
    return False


def ascii_fallback(stream) -> None:
    """Make ``stream`` write stand-ins instead of raising UnicodeEncodeError, where its
    encoding cannot show dpcalc's glyphs."""
    if cannot_show_glyphs(stream) and hasattr(stream, "reconfigure"):
        try:
            stream.reconfigure(errors=_HANDLER)
        except (ValueError, OSError):  # a closed or detached stream: nothing to protect
            pass
