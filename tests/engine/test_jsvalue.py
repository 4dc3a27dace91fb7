"""JavaScript's ``String(value)`` has one implementation (engine.store.chunking),
which the ctx_search layer uses too: large integers print exactly as Node
prints them (the agent layer's own copy printed 123456789012345683968)."""

from __future__ import annotations

import pytest

from engine.agent.jsvalue import js_number_text, js_to_string


@pytest.mark.parametrize(
    ("value", "node"),
    [
        (1.2345678901234568e20, "123456789012345680000"),  # node -p "String(1.2345678901234568e+20)"
        (1.2492086086069006e17, "124920860860690060"),
        (1e21, "1e+21"),
        (0.1, "0.1"),
        (-0.0, "0"),
    ],
)
def test_number_text_is_nodes(value, node):
    assert js_number_text(value) == node


def test_string_of_a_list_is_nodes():
    assert js_to_string([1, None, "a", [2, 3]]) == "1,,a,2,3"
