"""engine.js.numbers gives Node's answers, case by case.

The expected values are Node's own (``tests/golden/js-numbers/numbers.json``,
made by ``tests/tools/gen_js_numbers.mjs``): infinities, huge integers,
``1e400``, a 400-digit integer, ``"0x"`` + 300 ``f``, hex/octal/binary,
Unicode digits, every JavaScript whitespace character, empty strings, and the
strings Python's ``float()`` reads but ``Number()`` does not (``"1_000"``,
``"infinity"``, ``"nan"``, ``"١٢"``). Doubles are compared by their bits, so
``-0`` and the last bit count.
"""

from __future__ import annotations

import json
import math
import struct
from functools import lru_cache

import pytest

from engine.js import numbers as jn

from ..conftest import GOLDEN

NUMBERS = GOLDEN / "js-numbers" / "numbers.json"


@lru_cache(maxsize=None)
def golden() -> dict:
    with open(NUMBERS, encoding="utf-8") as fh:
        return json.load(fh)


def double(encoded: dict) -> float:
    value: float = struct.unpack(">d", bytes.fromhex(encoded["bits"]))[0]
    return value


def same(got: float, want: dict) -> bool:
    expected = double(want)
    if math.isnan(expected):
        return math.isnan(got)
    return struct.pack(">d", got) == struct.pack(">d", expected)


def cases(kind: str) -> list[dict]:
    return golden()[kind]


def ids(kind: str, key: str) -> list[str]:
    return [f"{i}:{str(c[key])[:24]!r}" for i, c in enumerate(cases(kind))]


def test_golden_data_covers_the_hard_cases():
    inputs = {c["input"] for c in cases("number_of_string")}
    for must in ("", "1e400", "-1e400", "9" * 400, "0x" + "f" * 300, "1_000", "infinity", "nan", "١٢", "0x1F"):
        assert must in inputs, must
    assert golden()["node"].startswith("v")


@pytest.mark.parametrize("case", cases("number_of_string"), ids=ids("number_of_string", "input"))
def test_number_of_a_string(case):
    assert same(jn.string_to_number(case["input"]), case["result"]), case["result"]["text"]


@pytest.mark.parametrize("case", cases("number_of_json"), ids=ids("number_of_json", "json"))
def test_number_of_a_json_value(case):
    # Python keeps huge integers whole (to_number must not overflow); "-0" is JSON.parse's -0
    value = json.loads(case["json"], parse_int=lambda s: -0.0 if s == "-0" else int(s))
    assert same(jn.to_number(value), case["result"]), case["result"]["text"]


@pytest.mark.parametrize("case", cases("string_of_number"), ids=ids("string_of_number", "result"))
def test_string_of_a_number(case):
    assert jn.number_to_string(double(case["input"])) == case["result"]


@pytest.mark.parametrize("case", cases("string_of_json"), ids=ids("string_of_json", "json"))
def test_string_of_a_json_value(case):
    assert jn.to_string(json.loads(case["json"])) == case["result"]


@pytest.mark.parametrize("case", cases("parse_int"), ids=ids("parse_int", "input"))
def test_parse_int(case):
    radix = None if case["radix"] is None else double(case["radix"])
    assert same(jn.parse_int(case["input"], radix), case["result"]), case["result"]["text"]


@pytest.mark.parametrize("case", cases("math_round"), ids=ids("math_round", "input"))
def test_math_round(case):
    assert same(jn.math_round(double(case["input"])), case["result"])


@pytest.mark.parametrize("kind", ["math_min", "math_max"])
def test_math_min_max(kind):
    fn = jn.math_min if kind == "math_min" else jn.math_max
    for case in cases(kind):
        a, b = (double(x) for x in case["input"])
        assert same(fn(a, b), case["result"]), (kind, case)


@pytest.mark.parametrize("case", cases("slice_of_five"), ids=ids("slice_of_five", "start"))
def test_slice_indices(case):
    end = None if case["end"] is None else double(case["end"])
    lo, hi = jn.slice_indices(5, double(case["start"]), end)
    assert [0, 1, 2, 3, 4][lo:hi] == case["result"]


@pytest.mark.parametrize("case", cases("to_length"), ids=ids("to_length", "input"))
def test_to_length(case):
    assert jn.to_length(double(case["input"])) == case["result"]


@pytest.mark.parametrize("case", cases("read_positive_env"), ids=ids("read_positive_env", "input"))
def test_throttle_variables_read_like_read_positive_env(case):
    from engine.agent.throttle import read_positive_env

    value, _note = read_positive_env({"V": case["input"]}, "V", -1.0)
    if case["result"] is None:
        assert value == -1.0
    else:
        assert same(value, case["result"])


def test_python_float_would_have_been_wrong():
    """The cases exist because the obvious Python differs (the test would fail on float())."""
    assert float("1_000") == 1000 and math.isnan(jn.string_to_number("1_000"))
    assert float("١٢") == 12 and math.isnan(jn.string_to_number("١٢"))
    assert round(2.5) == 2 and jn.math_round(2.5) == 3
    with pytest.raises(OverflowError):
        float(10**400)
    assert jn.to_number(10**400) == math.inf
