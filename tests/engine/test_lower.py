"""``js_to_lower``: JavaScript ``toLowerCase`` (ICU, Unicode 17.0) on any Python.

The reference lowers the query, titles, content (rerank) and indexed text
(vocabulary) with V8's ``toLowerCase``; Python's ``str.lower`` uses the
Unicode tables of the running interpreter (3.11: 14.0). The figures below are
Node 20's (ICU 78.2, Unicode 17.0).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from itertools import pairwise

import pytest

from engine.js._lower_table import CASE_IGNORABLE, CASED, LOWER
from engine.js.strings import js_to_lower


def test_u_a7cb_rams_horn_lowers_to_u_0264():
    # U+A7CB LATIN CAPITAL LETTER RAMS HORN (Unicode 16.0) -> U+0264.
    assert js_to_lower("\ua7cbTAG registry") == "\u0264tag registry"
    assert LOWER[0xA7CB] == "\u0264"


@pytest.mark.parametrize(
    "upper, lower",
    [
        ("\u2c2f", "\u2c5f"),  # Glagolitic caudate chrivi, Unicode 14.0 (Python 3.10 lacks it)
        ("\ua7c0", "\ua7c1"),  # Latin old Polish O, Unicode 14.0
        ("\U00010570", "\U00010597"),  # Vithkuqi A, Unicode 14.0
        ("\u1c89", "\u1c8a"),  # Cyrillic TJE, Unicode 16.0
        ("\ua7dc", "\u019b"),  # Latin lambda with stroke, Unicode 16.0
        ("\U00010d50", "\U00010d70"),  # Garay A, Unicode 16.0
        ("\U00016ea0", "\U00016ebb"),  # Beria Erfe, Unicode 17.0
    ],
)
def test_letters_newer_than_python_lower_like_unicode_17(upper, lower):
    assert js_to_lower(f"x{upper}Y{upper}") == f"x{lower}y{lower}"


@pytest.mark.parametrize(
    "text, lower",
    [
        ("\u0130stanbul", "i\u0307stanbul"),  # SpecialCasing: dotted capital I -> i + U+0307
        ("ΟΔΥΣΣΕΥΣ", "οδυσσευς"),  # final sigma at the end of a word only
        ("ΑΣ.", "ας."),
        ("Σ", "σ"),  # nothing cased before it
        ("ΑΣ'Β", "ασ'β"),  # the apostrophe is case-ignorable: a cased letter follows
        ("ΑΣ'", "ας'"),
        ("café ÀÉ", "café àé"),
    ],
)
def test_special_casing_and_final_sigma(text, lower):
    assert js_to_lower(text) == lower


def test_final_sigma_context_uses_unicode_17_properties():
    # U+A7CB is a cased letter in Unicode 17.0 (unassigned for Python 3.11),
    # so a sigma after it is final, as in JavaScript.
    assert js_to_lower("\ua7cbΣ") == "\u0264ς"
    # U+10D69 GARAY VOWEL SIGN E (Mn, Unicode 16.0) is case-ignorable: the
    # cased "b" after it keeps the sigma medial.
    assert js_to_lower("AΣ\U00010d69b") == "aσ\U00010d69b"


def test_table_ranges_are_sorted_and_disjoint():
    for ranges in (CASED, CASE_IGNORABLE):
        assert all(a <= b for a, b in ranges)
        assert all(prev[1] + 1 < nxt[0] for prev, nxt in pairwise(ranges))
    assert 0x03A3 not in LOWER  # contextual, decided by js_to_lower


def _node_unicode() -> str | None:
    node = shutil.which("node")
    if node is None:
        return None
    done = subprocess.run([node, "-p", "process.versions.unicode"], check=False, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


@pytest.mark.skipif(_node_unicode() != "17.0", reason="needs node with ICU on Unicode 17.0 (the reference's)")
def test_every_code_point_matches_node():
    script = r"""
    const out = {};
    for (let cp = 0; cp <= 0x10FFFF; cp++) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      const c = String.fromCodePoint(cp), l = c.toLowerCase();
      if (l !== c) out[cp] = l;
    }
    const samples = ['ΟΔΥΣΣΕΥΣ \ua7cbΣ Σ\u0345 AΣ\U00010d69b', '\u0130I\u0307 \u1e9e ǅǄ', 'ꟋTAG registry'];
    console.log(JSON.stringify({out, samples: samples.map((s) => [s, s.toLowerCase()])}));
    """.replace("\\U00010d69", "\\u{10d69}")
    done = subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True)
    node = json.loads(done.stdout)
    lowered = {int(cp): low for cp, low in node["out"].items()}
    wrong = [
        f"U+{cp:04X}"
        for cp in range(0x110000)
        if not 0xD800 <= cp <= 0xDFFF and js_to_lower(chr(cp)) != lowered.get(cp, chr(cp))
    ]
    assert wrong == []
    for text, low in node["samples"]:
        assert js_to_lower(text) == low
