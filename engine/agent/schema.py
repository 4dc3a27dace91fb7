"""The ``ctx_search`` input schema: what the handler receives from an MCP call.

Source: context-mode 1.0.169 ``buildCtxSearchInputSchema`` (zod) as reported
by ``tools/list`` (``shared/agent-view/calls.json`` →
``ctx_search_input_schema``), and the observed answers:

* ``queries``: ``z.preprocess(coerceJsonArray, z.array(z.string()).optional())``.
  A string that parses as a JSON array is that array; any other non-blank
  string is lifted to ``[string]``; a blank string stays a string (and fails).
* ``limit``: ``z.coerce.number().optional().default(3)``: ``Number(value)``,
  NaN fails (``"5"`` → 5, ``null`` → 0).
* ``source``: string; ``contentType``: ``"code"`` | ``"prose"``;
  ``sort``: ``"relevance"`` (default) | ``"timeline"``.
* ``project``: string, **only in plugin mode** (``CONTEXT_MODE_PROJECT_DIR``
  set when the server started); otherwise it is an unknown key.
* Unknown keys are stripped, ``query`` included: ``{"query": "x"}`` reaches
  the handler as ``{}`` (and answers ``Error: provide query or queries.``).

Validation failures become the MCP SDK's text ``MCP error -32602: Input
validation error: Invalid arguments for tool ctx_search: <issues as 2-space
JSON>`` with ``isError``; the issues follow zod 3's shapes and key order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from engine.js.json import JSONParseError
from engine.js.numbers import number_to_string, to_number
from engine.js.strings import js_trim

from .jsvalue import js_json, js_json_parse, parsed_type

#: Keys of the schema in zod's parse order (``project`` only in plugin mode).
SCHEMA_KEYS = ("queries", "limit", "source", "contentType", "sort")
CONTENT_TYPES = ("code", "prose")
SORTS = ("relevance", "timeline")
DEFAULT_TOOL_LIMIT = 3
ERROR_PREFIX = "MCP error -32602: Input validation error: Invalid arguments for tool ctx_search: "


@dataclass(frozen=True)
class SchemaIssue:
    """One zod issue.

    Attributes:
        path: the JSON path of the bad value (``("queries", 1)``).
        code: ``"invalid_type"``, ``"invalid_enum_value"`` or ``"custom"``.
        message: zod's message (``Expected array, received string``).
        data: the issue object in zod's key order (what the server prints).
    """

    path: tuple[str | int, ...]
    code: str
    message: str
    data: dict[str, object]

    @property
    def field(self) -> str:
        """The parameter at fault (``"queries"``; ``""`` for the arguments object)."""
        return str(self.path[0]) if self.path else ""

    def describe(self) -> str:
        """``field: message`` (``queries[1]: Expected string, received number``)."""
        where = self.field + "".join(f"[{p}]" for p in self.path[1:])
        return f"{where or 'arguments'}: {self.message}"


@dataclass(frozen=True)
class ToolParams:
    """The arguments as the handler sees them after the schema.

    Attributes:
        queries: the query list, or ``None`` when absent.
        limit: ``limit`` after ``Number()`` (default 3; may be fractional).
        source, content_type, sort, project: as parsed (``sort`` defaults to
            ``"relevance"``; ``project`` is ``None`` outside plugin mode).
        stripped: keys the schema dropped (``("query",)``).
        coercions: what the schema changed, in words.
    """

    queries: tuple[str, ...] | None
    limit: float = DEFAULT_TOOL_LIMIT
    source: str | None = None
    content_type: str | None = None
    sort: str = "relevance"
    project: str | None = None
    stripped: tuple[str, ...] = ()
    coercions: tuple[str, ...] = field(default_factory=tuple)

    def to_arguments(self) -> dict[str, object]:
        """A canonical arguments object that parses back to these params."""
        out: dict[str, object] = {}
        if self.queries is not None:
            out["queries"] = list(self.queries)
        if self.limit != DEFAULT_TOOL_LIMIT:
            # ±Infinity has no JSON number: its String() ("Infinity") coerces back to it
            out["limit"] = (
                number_to_string(self.limit)
                if math.isinf(self.limit)
                else int(self.limit)
                if self.limit == int(self.limit) and not (self.limit == 0 and math.copysign(1, self.limit) < 0)
                else self.limit
            )
        for key, value in (("source", self.source), ("contentType", self.content_type), ("project", self.project)):
            if value is not None:
                out[key] = value
        if self.sort != "relevance":
            out["sort"] = self.sort
        return out


class AgentViewError(ValueError):
    """A call rankscope cannot reproduce faithfully (a ``queries`` string
    nested deeper than :data:`~.jsvalue.MAX_JSON_DEPTH`, a query the engine
    refuses); the message says which."""


class SchemaError(ValueError):
    """The arguments fail the tool schema. ``issues`` lists every failure;
    ``text`` is the server's answer; the message names the fields."""

    def __init__(self, issues: tuple[SchemaIssue, ...]):
        self.issues = issues
        self.text = ERROR_PREFIX + js_json([i.data for i in issues], indent=2)
        super().__init__("invalid ctx_search arguments: " + "; ".join(i.describe() for i in issues))


def _type_issue(path: tuple[str | int, ...], expected: str, value: object) -> SchemaIssue:
    received = parsed_type(value)
    message = f"Expected {expected}, received {received}"
    return SchemaIssue(
        path,
        "invalid_type",
        message,
        {
            "code": "invalid_type",
            "expected": expected,
            "received": received,
            "path": list(path),
            "message": message,
        },
    )


def _enum_issue(path: tuple[str | int, ...], options: tuple[str, ...], value: object) -> SchemaIssue:
    joined = " | ".join(f"'{o}'" for o in options)
    if not isinstance(value, str):
        received = parsed_type(value)
        message = f"Expected {joined}, received {received}"
        return SchemaIssue(
            path,
            "invalid_type",
            message,
            {
                "expected": joined,
                "received": received,
                "code": "invalid_type",
                "path": list(path),
                "message": message,
            },
        )
    message = f"Invalid enum value. Expected {joined}, received '{value}'"
    return SchemaIssue(
        path,
        "invalid_enum_value",
        message,
        {
            "received": value,
            "code": "invalid_enum_value",
            "options": list(options),
            "path": list(path),
            "message": message,
        },
    )


def coerce_json_array(value: object) -> tuple[object, str | None]:
    """``coerceJsonArray``: returns ``(value, note)``; ``note`` says what changed."""
    if not isinstance(value, str):
        return value, None
    if js_trim(value) == "":
        return value, None
    try:
        parsed = js_json_parse(value)
    except JSONParseError as exc:
        if exc.too_deep is not None:
            raise AgentViewError(
                f"queries is a JSON-array string {exc}; the server would parse it, rankscope refuses text "
                "this deep (give the queries as an array)"
            ) from None
        parsed = None
    else:
        if isinstance(parsed, list):
            return parsed, "queries: a JSON-array string, parsed"
    return [value], "queries: a bare string, lifted to a one-query array"


def parse_arguments(arguments: object, plugin_mode: bool = False) -> ToolParams:
    """Validate MCP ``arguments`` like the 1.0.169 schema and return the
    handler's view of them.

    Args:
        arguments: the JSON ``arguments`` object (``None`` = none sent).
        plugin_mode: the schema has ``project`` (the server started with
            ``CONTEXT_MODE_PROJECT_DIR``).

    Raises:
        SchemaError: every failing field, in zod's order.
    """
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise SchemaError((_type_issue((), "object", arguments),))
    issues: list[SchemaIssue] = []
    notes: list[str] = []
    keys = SCHEMA_KEYS + (("project",) if plugin_mode else ())
    stripped = tuple(k for k in arguments if k not in keys)
    if stripped:
        notes.append("stripped by the schema (not parameters of the tool): " + ", ".join(stripped))

    queries: tuple[str, ...] | None = None
    if "queries" in arguments:
        value, note = coerce_json_array(arguments["queries"])
        if note:
            notes.append(note)
        if not isinstance(value, list):
            issues.append(_type_issue(("queries",), "array", value))
        else:
            bad = [(i, v) for i, v in enumerate(value) if not isinstance(v, str)]
            issues.extend(_type_issue(("queries", i), "string", v) for i, v in bad)
            if not bad:
                queries = tuple(value)

    limit: float = DEFAULT_TOOL_LIMIT
    if "limit" in arguments:
        raw = arguments["limit"]
        number = to_number(raw)
        if math.isnan(number):
            issues.append(_type_issue(("limit",), "number", math.nan))
        else:
            if not isinstance(raw, (int, float)) or isinstance(raw, bool):
                notes.append(f"limit: {js_json(raw)} coerced to {number_to_string(number)}")
            limit = number

    def text_field(name: str) -> str | None:
        if name not in arguments:
            return None
        value = arguments[name]
        if not isinstance(value, str):
            issues.append(_type_issue((name,), "string", value))
            return None
        return value

    def enum_field(name: str, options: tuple[str, ...]) -> str | None:
        if name not in arguments:
            return None
        value = arguments[name]
        if value not in options or not isinstance(value, str):
            issues.append(_enum_issue((name,), options, value))
            return None
        return value

    source = text_field("source")
    content_type = enum_field("contentType", CONTENT_TYPES)
    sort = enum_field("sort", SORTS) or "relevance"
    project = text_field("project") if plugin_mode else None
    if issues:
        raise SchemaError(tuple(issues))
    return ToolParams(queries, limit, source, content_type, sort, project, stripped, tuple(notes))


def query_list(params: ToolParams) -> list[str]:
    """The handler's ``queryList``: ``queries`` when it is a non-empty array
    (``query`` never survives the schema over MCP)."""
    return list(params.queries) if params.queries else []
