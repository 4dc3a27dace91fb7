"""Every SVG snapshot belongs to a test that exists.

syrupy fails a single-process run on an unused snapshot (a test renamed or
removed leaves its SVG behind), but under pytest-xdist (the suite's default,
``-n auto``) each worker runs only part of the tests, and syrupy 4.8 (pinned by
pytest-textual-snapshot) turns that check off. This test makes it again from
the tests collected in the run, naming the files as syrupy names them.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension
from syrupy.location import PyTestLocation

from ..conftest import COLLECTED

HERE = Path(__file__).resolve().parent
SNAPSHOTS = HERE / "__snapshots__"


def test_every_svg_snapshot_has_its_test(request):
    names: dict[str, set[str]] = defaultdict(set)  # module file stem → snapshot names of its tests
    for item in request.config.stash.get(COLLECTED, []):
        if item.path.parent == HERE and isinstance(item, pytest.Function):
            names[item.path.stem].add(SingleFileSnapshotExtension.get_snapshot_name(test_location=PyTestLocation(item)))
    svgs = sorted(SNAPSHOTS.glob("*/*.svg"))
    assert svgs, f"no SVG snapshot under {SNAPSHOTS}"
    modules = {svg.parent.name for svg in svgs}
    missing = sorted(m for m in modules if m not in names and (HERE / f"{m}.py").exists())
    if missing:
        pytest.skip(f"not collected in this run: {', '.join(missing)} (run the whole of tests/tui)")
    # A test that compares more than once has its later snapshots named "<name>.1", "<name>.2", ...
    orphans = [
        str(svg.relative_to(HERE)) for svg in svgs if re.sub(r"\.\d+$", "", svg.stem) not in names[svg.parent.name]
    ]
    assert orphans == [], f"SVG snapshots of no test (remove them, or run pytest -n0 --snapshot-update): {orphans}"
