"""Make text from a store safe to put on a terminal.

Chunk titles, contents, labels and session ids come from arbitrary files: an
ANSI escape sequence in a log line would otherwise reach the terminal and
clear the screen or retitle the window. Control characters are replaced by
their visible Unicode "control pictures" (ESC → ␛), so nothing is hidden and
nothing is executed. Bidirectional controls (U+202E RIGHT-TO-LEFT OVERRIDE
and friends, :data:`BIDI_CONTROLS`) would silently reorder what follows them
("Trojan source" file names such as ``invoice\\u202Efdp.exe`` showing as
``invoiceexe.pdf``); they are shown as their abbreviation in angle brackets
(``⟨RLO⟩``). The other invisible format characters (Unicode category Cf,
:data:`FORMAT_RANGES`: a zero-width space inside ``write\u200bquorum``,
a soft hyphen, a word joiner) are shown the same way, by abbreviation
(``⟨ZWSP⟩``) or code point (``⟨U+2061⟩``): a query or a title that looks
like another is never a different text in disguise. A lone surrogate (a
file name's undecodable byte) is shown as that byte (``\\xfe``) or its code
point: it has no UTF-8 form to print. No Textual here.
"""

from __future__ import annotations

_BASE: dict[int, int | str] = {c: 0x2400 + c for c in range(32)}
_BASE[0x7F] = 0x2421  # DEL → ␡
_BASE.update({c: 0xFFFD for c in range(0x80, 0xA0)})  # C1 controls

#: Unicode bidirectional formatting characters (Unicode Standard Annex #9,
#: table 4, and the implicit marks), code point → abbreviation.
BIDI_CONTROLS = {
    0x061C: "ALM",
    0x200E: "LRM",
    0x200F: "RLM",
    0x202A: "LRE",
    0x202B: "RLE",
    0x202C: "PDF",
    0x202D: "LRO",
    0x202E: "RLO",
    0x2066: "LRI",
    0x2067: "RLI",
    0x2068: "FSI",
    0x2069: "PDI",
}
_BASE.update({c: f"\u27e8{name}\u27e9" for c, name in BIDI_CONTROLS.items()})  # ⟨RLO⟩

#: The code points of Unicode's category Cf (format characters; Unicode 14,
#: checked against :mod:`unicodedata` by the tests), inclusive ranges.
FORMAT_RANGES = (
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)
#: Abbreviations of the common format characters that are not bidirectional controls.
FORMAT_NAMES = {0x00AD: "SHY", 0x200B: "ZWSP", 0x200C: "ZWNJ", 0x200D: "ZWJ", 0x2060: "WJ", 0xFEFF: "ZWNBSP"}
for _first, _last in FORMAT_RANGES:
    for _c in range(_first, _last + 1):
        _BASE.setdefault(_c, f"\u27e8{FORMAT_NAMES.get(_c, f'U+{_c:04X}')}\u27e9")

#: Lone surrogates (category Cs: no character; a file name's undecodable
#: byte reaches Python as one, ``surrogateescape``) cannot be written as
#: UTF-8 at all: the escaped byte as ``\xfe``, any other as ``⟨U+D800⟩``.
for _c in range(0xD800, 0xE000):
    _BASE[_c] = f"\\x{_c - 0xDC00:02x}" if 0xDC80 <= _c <= 0xDCFF else f"\u27e8U+{_c:04X}\u27e9"

#: Single-line text (titles, labels, ids): every control character is shown.
_LINE = dict(_BASE)
#: Multi-line text (chunk content): newlines and tabs stay, CR is dropped (CRLF files).
_BLOCK: dict[int, int | str] = {k: v for k, v in _BASE.items() if k not in (0x0A, 0x09)}
_BLOCK[0x0D] = ""
#: Highlighted content: as block, and the FTS5 markers \x02 / \x03 stay too.
_MARKED = dict(_BLOCK)
del _MARKED[0x02], _MARKED[0x03]


def line(text: str | None) -> str:
    """``text`` with every control character made visible (one line)."""
    return (text or "").translate(_LINE)


def block(text: str | None) -> str:
    """``text`` keeping newlines and tabs; other controls made visible, CR dropped."""
    return (text or "").translate(_BLOCK)


def marked(text: str | None) -> str:
    """Like :func:`block`, but the FTS5 highlight markers ``\\x02``/``\\x03`` survive."""
    return (text or "").translate(_MARKED)
