"""``JSON.stringify`` / ``JSON.parse`` have one implementation
(engine.js.json), which the ctx_search layer and the JSON chunker share;
numbers print with ``String()`` (engine.js.numbers). Expected texts are
Node's (``node -e 'console.log(JSON.stringify(...))'``)."""

from __future__ import annotations

import math

import pytest

from engine.agent.jsvalue import js_json, js_json_parse
from engine.js.json import JSONParseError


def test_compact_stringify_is_nodes():
    value = {"a": [1.5e-7, 1e21, -0.0, 123456789012345680000, "\ud800x\x1b\u2028é", None, True]}
    # json.dumps wrote "1.5e-07", "1e+21" and ", " separators
    assert js_json(value) == '{"a":[1.5e-7,1e+21,0,123456789012345680000,"\\ud800x\\u001b\u2028é",null,true]}'


def test_pretty_stringify_is_nodes():
    assert js_json({"b": {"c": []}, "d": {}}, indent=2) == '{\n  "b": {\n    "c": []\n  },\n  "d": {}\n}'
    assert js_json([math.inf, math.nan, 10**400]) == "[null,null,null]"


def test_parse_gives_doubles_and_never_overflows():
    value = js_json_parse('{"limit": ' + "9" * 400 + ', "z": -0, "n": 1e400}')
    assert value == {"limit": math.inf, "z": 0.0, "n": math.inf}
    assert math.copysign(1, value["z"]) < 0  # type: ignore[index]


def test_deep_text_is_refused_before_parsing():
    with pytest.raises(JSONParseError) as exc:
        js_json_parse("[" * 50_000 + "]" * 50_000)
    assert exc.value.too_deep == 64
    assert js_json_parse('["[[[[", {"a": "]]]"}]') == ["[[[[", {"a": "]]]"}]  # brackets in strings do not count


def test_stringify_of_deep_values_does_not_recurse():
    deep: list = []
    for _ in range(50_000):
        deep = [deep]
    assert js_json(deep) == "[" * 50_001 + "]" * 50_001
