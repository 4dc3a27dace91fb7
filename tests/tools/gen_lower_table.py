"""Generate ``engine/js/_lower_table.py``: what JavaScript ``toLowerCase`` needs
beyond Python's ``str.lower``.

The reference (context-mode) runs on Node, whose ``String.prototype.toLowerCase``
is ICU's root-locale full lowercase mapping (UnicodeData.txt simple mappings,
SpecialCasing.txt unconditional mappings, and the Final_Sigma context for
U+03A3) over the Unicode version of its ICU: 17.0 for the reference. Python's
``str.lower`` implements the same algorithm over the Unicode version of its
``unicodedata`` (3.10: 13.0, 3.11: 14.0, 3.12: 15.0, 3.13: 15.1, 3.14: 16.0),
so it leaves letters added since then unchanged (U+A7CB LATIN CAPITAL LETTER
RAMS HORN stays instead of becoming U+0264).

UnicodeData.txt is not downloadable on the project's machines, so the data
comes from the npm packages ``@unicode/unicode-<version>`` (Mathias Bynens's
``node-unicode-data``, generated from the UCD of each version; MIT). This
script:

1. fetches (``npm pack``) those packages for Unicode 13.0 ... 17.0, or reads
   them unpacked from ``--packages DIR`` (``DIR/unicode-17.0.0/package/...``);
2. builds each version's full lowercase mapping: SpecialCasing's
   unconditional ``Lowercase`` entry if any, else the simple mapping, else
   the code point itself;
3. keeps every code point whose Unicode 17.0 mapping differs from its mapping
   in any older version down to 13.0, or from the running Python's
   ``str.lower`` -- so the table, applied unconditionally, gives the Unicode
   17.0 result on every supported Python, whatever its own Unicode version;
4. takes Unicode 17.0's ``Cased`` and ``Case_Ignorable`` properties (the
   Final_Sigma context) as code point ranges;
5. checks the result against Node itself when its ICU has Unicode 17.0:
   ``String.fromCodePoint(cp).toLowerCase()`` for every code point, and the
   Final_Sigma context probes ``c+'Σ'``, ``'A'+c+'Σ'``, ``'AΣ'+c`` for every
   code point ``c``; any disagreement stops the script.

Run from the repository root (needs ``node`` and ``npm``)::

    python tests/tools/gen_lower_table.py          # writes engine/js/_lower_table.py
    python tests/tools/gen_lower_table.py --check  # exit 1 if the file is stale
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

#: Unicode versions of every supported Python (>= 3.10) up to the reference's.
VERSIONS = ("13.0.0", "14.0.0", "15.0.0", "15.1.0", "16.0.0", "17.0.0")
TARGET = "17.0.0"
#: npm package versions fetched (major 2 of node-unicode-data's packages).
PACKAGE_RANGE = "2"
OUT = Path(__file__).resolve().parents[2] / "engine" / "js" / "_lower_table.py"
SIGMA = 0x03A3

# Node reads one package's data: simple + special lowercase maps, and for the
# target version also the Cased and Case_Ignorable code points.
_LOAD_JS = r"""
const dir = process.argv[1];
const load = async (p) => (await import(dir + '/package/' + p + '/code-points.mjs')).default;
const simple = await load('Simple_Case_Mapping/Lowercase');
const special = await load('Special_Casing/Lowercase');
const out = {simple: [...simple.entries()], special: [...special.entries()]};
if (process.argv[2] === 'props') {
  out.cased = await load('Binary_Property/Cased');
  out.ignorable = await load('Binary_Property/Case_Ignorable');
}
console.log(JSON.stringify(out));
"""

# Node's own answers: toLowerCase of every code point alone, and the
# Final_Sigma probes. A probe result is 1 when the sigma became final (ς).
_ORACLE_JS = r"""
const lower = {};
const probes = [];
for (let cp = 0; cp <= 0x10FFFF; cp++) {
  if (cp >= 0xD800 && cp <= 0xDFFF) continue;
  const c = String.fromCodePoint(cp);
  const l = c.toLowerCase();
  if (l !== c) lower[cp] = Array.from(l).map((x) => x.codePointAt(0));
  const a = (c + '\u03a3').toLowerCase().endsWith('\u03c2') ? 1 : 0;
  const b = ('A' + c + '\u03a3').toLowerCase().endsWith('\u03c2') ? 1 : 0;
  const d = ('A\u03a3' + c).toLowerCase().startsWith('a\u03c2') ? 1 : 0;
  probes.push(a * 4 + b * 2 + d);
}
console.log(JSON.stringify({unicode: process.versions.unicode, icu: process.versions.icu,
                            node: process.version, lower, probes}));
"""


def _node(script: str, *args: str) -> dict:
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script, *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout)


def fetch_packages(into: Path) -> dict[str, Path]:
    """``npm pack`` and unpack each version's package; returns version -> dir."""
    dirs = {}
    for version in VERSIONS:
        spec = f"@unicode/unicode-{version}@{PACKAGE_RANGE}"
        name = (
            subprocess.run(["npm", "pack", "--silent", spec], cwd=into, check=True, capture_output=True, text=True)
            .stdout.strip()
            .splitlines()[-1]
        )
        target = into / f"unicode-{version}"
        with tarfile.open(into / name) as tar:
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tar.extractall(target, **safe)  # type: ignore[arg-type]
        dirs[version] = target
    return dirs


def full_lower(data: dict) -> dict[int, tuple[int, ...]]:
    """Code point -> full lowercase (only where it is not the code point itself)."""
    mapping = {cp: (to,) for cp, to in data["simple"]}
    mapping.update({cp: tuple(to) for cp, to in data["special"]})
    return {cp: to for cp, to in mapping.items() if to != (cp,)}


def ranges(points: list[int]) -> list[tuple[int, int]]:
    """Sorted code points -> inclusive ``(first, last)`` runs."""
    out: list[tuple[int, int]] = []
    for cp in sorted(points):
        if out and cp == out[-1][1] + 1:
            out[-1] = (out[-1][0], cp)
        else:
            out.append((cp, cp))
    return out


def _code_points():
    return (cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)


def build(dirs: dict[str, Path]) -> tuple[dict[int, str], list[tuple[int, int]], list[tuple[int, int]], dict]:
    """Returns ``(table, cased_ranges, ignorable_ranges, provenance)``."""
    maps = {}
    for version in VERSIONS:
        data = _node(_LOAD_JS, str(dirs[version]), "props" if version == TARGET else "")
        maps[version] = full_lower(data)
        if version == TARGET:
            cased, ignorable = data["cased"], data["ignorable"]
            package = json.loads((dirs[version] / "package" / "package.json").read_text())
    target = maps[TARGET]

    def lower17(cp: int) -> tuple[int, ...]:
        return target.get(cp, (cp,))

    table = {}
    for cp in _code_points():
        want = lower17(cp)
        older = {maps[v].get(cp, (cp,)) for v in VERSIONS if v != TARGET}
        python = tuple(map(ord, chr(cp).lower())) if cp != SIGMA else (0x03C3,)
        if older != {want} or python != want:
            table[cp] = "".join(map(chr, want))
    table.pop(SIGMA, None)  # contextual: js_to_lower decides it (Final_Sigma)

    oracle = _node(_ORACLE_JS)
    provenance = {
        "package": f"{package['name']}@{package['version']}",
        "node": oracle["node"],
        "node_unicode": oracle["unicode"],
        "icu": oracle["icu"],
    }
    if oracle["unicode"] != TARGET.rsplit(".", 1)[0]:
        print(f"warning: node has Unicode {oracle['unicode']}, not {TARGET}: not cross-checked", file=sys.stderr)
        provenance["checked"] = False
        return table, ranges(cased), ranges(ignorable), provenance
    node_lower = {int(k): tuple(v) for k, v in oracle["lower"].items()}
    bad = [cp for cp in _code_points() if node_lower.get(cp, (cp,)) != lower17(cp)]
    if bad:
        raise SystemExit(f"Unicode {TARGET} data and node disagree on {len(bad)} code points, e.g. {bad[:5]}")
    cased_set, ignorable_set = set(cased), set(ignorable)
    for cp, probe in zip(_code_points(), oracle["probes"]):
        ig, ca = cp in ignorable_set, cp in cased_set and cp not in ignorable_set
        # c+Σ: final iff c is a cased, non-ignorable letter; A+c+Σ: final iff c is
        # ignorable or cased; AΣ+c: final iff c is not a cased, non-ignorable letter.
        expect = (4 if ca else 0) + (2 if ig or ca else 0) + (0 if ca else 1)
        if probe != expect:
            raise SystemExit(f"Final_Sigma probe for U+{cp:04X}: node {probe:03b}, Unicode data {expect:03b}")
    provenance["checked"] = True
    return table, ranges(cased), ranges(ignorable), provenance


def render(table: dict[int, str], cased: list, ignorable: list, provenance: dict) -> str:
    def runs(name: str, rs: list[tuple[int, int]]) -> list[str]:
        lines = [f"{name}: tuple[tuple[int, int], ...] = ("]
        row: list[str] = []
        for a, b in rs:
            row.append(f"(0x{a:04X}, 0x{b:04X}),")
            if len(row) == 6:
                lines.append("    " + " ".join(row))
                row = []
        if row:
            lines.append("    " + " ".join(row))
        return lines + [")"]

    checked = (
        f"cross-checked against Node {provenance['node']} (ICU {provenance['icu']}, "
        f"Unicode {provenance['node_unicode']}) on every code point"
        if provenance.get("checked")
        else "NOT cross-checked against Node"
    )
    lines = [
        '"""Unicode 17.0 lowercase data that Python\'s ``str.lower`` may lack.',
        "",
        "GENERATED by ``tests/tools/gen_lower_table.py``; do not edit. Source: the npm",
        f"packages ``@unicode/unicode-13.0.0`` ... ``{provenance['package']}`` (UCD data),",
        f"{checked}.",
        "",
        "* :data:`LOWER`: code point -> its full Unicode 17.0 lowercase mapping, for",
        "  every code point whose mapping differs in some Unicode version from 13.0",
        "  (Python 3.10) to 16.0 or in the generating Python's ``str.lower``; apply",
        "  it unconditionally. U+03A3 is not here: its mapping depends on context.",
        "* :data:`CASED`, :data:`CASE_IGNORABLE`: Unicode 17.0's ``Cased`` and",
        "  ``Case_Ignorable`` properties as inclusive code point ranges (the",
        "  Final_Sigma context of U+03A3).",
        '"""',
        "",
        "# fmt: off",
        "LOWER: dict[int, str] = {",
    ]
    for cp, to in sorted(table.items()):
        lines.append(f'    0x{cp:04X}: "{_escape(to)}",')
    lines.append("}")
    lines += runs("CASED", cased)
    lines += runs("CASE_IGNORABLE", ignorable)
    lines.append("# fmt: on")
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    return "".join(f"\\U{ord(c):08x}" if ord(c) > 0xFFFF else f"\\u{ord(c):04x}" for c in text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", type=Path, help="folder with unicode-<version>/package/ unpacked")
    parser.add_argument("--check", action="store_true", help="exit 1 if engine/js/_lower_table.py is stale")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dirs = {v: args.packages / f"unicode-{v}" for v in VERSIONS} if args.packages else fetch_packages(Path(tmp))
        text = render(*build(dirs))
    if args.check:
        if OUT.read_text() != text:
            print(f"{OUT} is stale: re-run tests/tools/gen_lower_table.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
