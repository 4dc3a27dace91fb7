"""The variant table: every pipeline setting an experiment may change, declared once.

Each field of :class:`Variant` is one row (:func:`setting`): its spec key,
its words, its choices (none: a non-negative integer; ``optional``: ``None``
means the reference formula), its reference value (the field's default),
whether the counterfactual tries its other choices, and the stage it skips
or moves. :data:`SETTINGS` lists the rows; validation, :func:`parse_variant`,
:func:`variant_spec` (the one spelling), the browser's compare form, the
counterfactual's changes and the pass plan (:func:`engine.pipeline.run.pass_plan`)
are derived from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable, Mapping, TypeVar

T = TypeVar("T", str, int, None)

#: Reference RRF constant (Cormack, Clarke & Buettcher 2009).
RRF_K = 60
#: In a row's ``plan``: the stage does not run.
SKIP = None
#: Words that mean "the reference" as a whole spec.
REFERENCE_SPECS = ("", "reference", "default", "ref")
#: Words that reset an optional size to its reference formula.
DEFAULT_WORDS = ("default", "auto", "none", "reference")
#: Largest integer accepted in a spec (anything near SQLite's 64 bits is a typo).
MAX_SPEC_INT = 1_000_000_000


@dataclass(frozen=True)
class Setting:
    """One row of the variant table (see the module docstring).

    Attributes:
        name: the :class:`Variant` field.
        key: its spec key (``key=rowid``).
        label: its name in words (``"fusion key"``).
        choices: the allowed values of a choice; ``()`` for an integer >= 0.
        optional: an integer that may be ``None`` (the reference formula, spelt ``default``).
        tried: the counterfactual tries each other choice (distance 1).
        words: the value in a counterfactual's words; default ``"{label} {value}"``.
        stage: the stage id it skips or moves, if any.
        affects: the first stage (table order) whose list it can change:
            ``"retrieve"`` when it can change a retriever run (its rows, or
            which retrievers run), so variants that differ only in settings
            affecting later stages share every retriever run (:func:`shares_runs`).
        plan: choice → :data:`SKIP` (the stage does not run) or the stage id it runs just before.
        about: what it sets, for help texts.
        reference: the reference value (the field's default).
    """

    key: str
    label: str
    choices: tuple[str, ...] = ()
    optional: bool = False
    tried: bool = False
    words: Callable[[object], str] | None = None
    stage: str | None = None
    affects: str = "retrieve"
    plan: Mapping[str, str | None] = field(default_factory=dict)
    about: str = ""
    reference: str | int | None = None
    name: str = ""

    def say(self, value: object) -> str:
        """``value`` in a counterfactual's words: ``rerank off``."""
        return self.words(value) if self.words is not None else f"{self.label} {value}"

    def check(self, value: object) -> None:
        """Raises:
        ValueError: ``value`` is not allowed (names the field and the choices)."""
        if self.choices:
            if value not in self.choices:
                raise ValueError(f"{self.name} must be one of {', '.join(self.choices)}; got {value!r}")
        elif not (value is None and self.optional) and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            extra = " or None" if self.optional else ""
            raise ValueError(f"{self.name} must be a non-negative integer{extra}; got {value!r}")

    def parse(self, text: str) -> str | int | None:
        """One spec value. Raises:
        ValueError: not allowed (names the key and the allowed values)."""
        if self.choices:
            if text.lower() not in self.choices:
                raise ValueError(f"bad value {text!r} for {self.key}: allowed values are {', '.join(self.choices)}")
            return text.lower()
        if self.optional and text.lower() in DEFAULT_WORDS:
            return None
        expected = "a non-negative integer" + (" or 'default' (the reference formula)" if self.optional else "")
        try:
            number = int(text, 10)
        except ValueError:
            raise ValueError(f"bad value {text!r} for {self.key}: expected {expected}") from None
        if number < 0 or number > MAX_SPEC_INT:
            raise ValueError(f"bad value {text!r} for {self.key}: expected {expected} up to {MAX_SPEC_INT}")
        return number


def setting(reference: T, row: Setting) -> T:
    """A :class:`Variant` field whose default is ``reference``, carrying its row."""
    return field(default=reference, metadata={"setting": replace(row, reference=reference)})


def _retrievers_words(value: object) -> str:
    return "both retrievers" if value == "both" else f"the {value} retriever only"


FUSION_KEYS = ("source-title", "rowid")
RERANK_MODES = ("on", "off", "before-trim")
FUZZY_POLICIES = ("fallback", "always", "never")
RETRIEVER_SETS = ("both", "porter", "trigram")


@dataclass(frozen=True)
class Variant:
    """A pipeline configuration; every default is the reference. One field, one row.

    Raises:
        ValueError: a value its row does not allow.
    """

    fusion_key: str = setting(
        "source-title",
        Setting(
            "key",
            "fusion key",
            FUSION_KEYS,
            tried=True,
            affects="fusion",
            about="source::title (reference) or one key per chunk",
        ),
    )
    rrf_k: int = setting(RRF_K, Setting("rrf_k", "rrf k", affects="fusion", about="the RRF constant k in 1/(k + rank)"))
    fts_limit: int | None = setting(
        None, Setting("fts_limit", "fts limit", optional=True, about="rows per retriever (reference max(2 × pool, 10))")
    )
    pool_size: int | None = setting(
        None, Setting("pool", "pool size", optional=True, about="fusion limit without an allow-set (reference limit)")
    )
    pool_size_sessions: int | None = setting(
        None,
        Setting("pool_sessions", "pool size", optional=True, about="with an allow-set (reference max(8 × limit, 40))"),
    )
    rerank: str = setting(
        "on",
        Setting(
            "rerank",
            "rerank",
            RERANK_MODES,
            tried=True,
            stage="rerank",
            affects="trim",
            plan={"off": SKIP, "before-trim": "trim"},
            about="rerank the trimmed list (reference), not at all, or the filtered pool before the trim",
        ),
    )
    fuzzy: str = setting(
        "fallback",
        Setting(
            "fuzzy",
            "fuzzy",
            FUZZY_POLICIES,
            affects="fuzzy",
            about="typo fallback when nothing survived (reference), also as a shadow, never",
        ),
    )
    retrievers: str = setting(
        "both",
        Setting(
            "retrievers",
            "retrievers",
            RETRIEVER_SETS,
            tried=True,
            words=_retrievers_words,
            about="both (reference) or one",
        ),
    )

    def __post_init__(self) -> None:
        for s in SETTINGS:
            s.check(getattr(self, s.name))

    @property
    def is_reference(self) -> bool:
        """True when every field has its reference value."""
        return self == REFERENCE


#: The rows, in field order.
SETTINGS: tuple[Setting, ...] = tuple(replace(f.metadata["setting"], name=f.name) for f in fields(Variant))
BY_KEY: dict[str, Setting] = {s.key: s for s in SETTINGS}
#: The spec keys, in table order.
SPEC_KEYS: tuple[str, ...] = tuple(BY_KEY)
REFERENCE = Variant()


def shares_runs(a: Variant, b: Variant) -> bool:
    """True when ``a`` and ``b`` agree on every setting that can change a
    retriever run (``affects == "retrieve"``): every first-pass retriever run
    of one is a run of the other, so a run cache answers the second from the first."""
    return all(getattr(a, s.name) == getattr(b, s.name) for s in SETTINGS if s.affects == "retrieve")


def variant_spec(variant: Variant) -> str:
    """``key=rowid,rerank=off``: the settings that differ from the reference,
    in table order; ``"reference"`` when none do. :func:`parse_variant` reads it back."""
    parts = [f"{s.key}={getattr(variant, s.name)}" for s in SETTINGS if getattr(variant, s.name) != s.reference]
    return ",".join(parts) or "reference"


def parse_variant(spec: str) -> Variant:
    """A comma-separated ``key=value`` list (keys :data:`SPEC_KEYS`, any
    case, ``-`` for ``_``, spaces ignored) as a :class:`Variant`; ``""`` or
    ``reference`` is the reference. Unnamed settings keep their reference value.

    Raises:
        ValueError: a part is not ``key=value``, a key is unknown or given
            twice, or a value is not allowed (the message names them and the choices).
    """
    if not isinstance(spec, str):
        raise ValueError(f"variant spec must be a string; got {type(spec).__name__}")
    text = spec.strip()
    if text.lower() in REFERENCE_SPECS:
        return REFERENCE
    values: dict[str, Any] = {}  # each checked by its row
    given: dict[str, str] = {}
    for raw in text.split(","):
        part = raw.strip()
        if not part:
            continue
        if "=" not in part:
            raise ValueError(f"variant setting {part!r} is not key=value; allowed keys: {', '.join(SPEC_KEYS)}")
        key, _, value = part.partition("=")
        key = key.strip().lower().replace("-", "_")
        row = BY_KEY.get(key)
        if row is None:
            raise ValueError(f"unknown variant key {key!r}; allowed keys: {', '.join(SPEC_KEYS)}")
        if key in given:
            raise ValueError(f"variant key {key!r} given twice (already {given[key]!r})")
        given[key] = part
        values[row.name] = row.parse(value.strip())
    return replace(REFERENCE, **values)


def as_variant(variant: Variant | str | None) -> Variant:
    """A :class:`Variant`, a spec for :func:`parse_variant`, or ``None`` (the reference)."""
    if variant is None:
        return REFERENCE
    return variant if isinstance(variant, Variant) else parse_variant(variant)
