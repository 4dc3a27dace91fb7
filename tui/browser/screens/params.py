"""The parameters dialog: limit, source filter (substring or exact) and
content type. Changes apply as they are made; Escape closes."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Callable

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.validation import Integer
from textual.widgets import Input, Label, Select, Static, Switch

from engine import SearchParams
from engine.pipeline.params import MAX_LIMIT

from tui.browser.actions import close_keys
from tui.browser.widgets.footer import KeyFooter


CONTENT_TYPES = (None, "code", "prose")
#: The Exact switch's hint, by state.
EXACT_ON = "on: the source must equal the whole label"
EXACT_OFF = "off: the source is a substring of the label"


class Keep(Enum):
    """A parameter a :class:`ParamsChange` leaves as it is."""

    KEEP = "keep"


KEEP = Keep.KEEP


@dataclass(frozen=True)
class ParamsChange:
    """A change of the browser's search parameters (from these dialogs or the
    palette): each field is the new value, or :data:`KEEP`."""

    limit: int | Keep = KEEP
    source: str | None | Keep = KEEP
    source_match: str | Keep = KEEP
    content_type: str | None | Keep = KEEP
    sessions: tuple[str, ...] | None | Keep = KEEP

    def apply(self, params: SearchParams) -> SearchParams:
        """``params`` with this change.

        Raises:
            ValueError: a value :class:`engine.SearchParams` refuses.
        """
        return replace(
            params,
            limit=params.limit if self.limit is KEEP else self.limit,
            source=params.source if self.source is KEEP else self.source,
            source_match=params.source_match if self.source_match is KEEP else self.source_match,
            content_type=params.content_type if self.content_type is KEEP else self.content_type,
            sessions=params.sessions if self.sessions is KEEP else self.sessions,
        )


#: Applies a change in the browser (it searches again; a refused value is reported there).
ApplyFn = Callable[[ParamsChange], object]


class ParamsScreen(ModalScreen[None]):
    """Edit the search parameters; each change re-runs the search behind the dialog.

    A limit is applied as it is typed, while it is a valid number. Closing
    the dialog (Escape, F2 or Enter) with an invalid limit in the field puts
    back the limit the search had when the dialog opened: the valid numbers
    typed on the way (``12`` → Backspace → ``1`` → ``1x``) were not meant.
    """

    BINDINGS = [
        *close_keys("params", "the dialog", toggle="f2"),
    ]

    def __init__(self, params: SearchParams, sources: list[str], apply: ApplyFn) -> None:
        super().__init__()
        self.params = params
        self.sources = sources
        self.apply_change = apply
        #: The limit last applied from this dialog (the search's, until one is typed).
        self.applied_limit = params.limit

    def compose(self) -> ComposeResult:
        p = self.params
        with Vertical(id="dialog", classes="dialog"):
            yield Static("Search parameters", classes="dialog-title")
            with Horizontal(classes="field"):
                yield Label("Limit", classes="field-label")
                yield Input(
                    str(p.limit),
                    id="limit",
                    type="integer",
                    validators=[Integer(minimum=0, maximum=MAX_LIMIT)],
                    classes="short",
                )
            with Horizontal(classes="field"):
                yield Label("Source", classes="field-label")
                yield Input(
                    p.source or "",
                    id="source",
                    placeholder="any (substring of the label)",
                    suggester=SuggestFromList(self.sources, case_sensitive=False),
                )
            with Horizontal(classes="field"):
                yield Label("Exact", classes="field-label")
                yield Switch(p.source_match == "exact", id="exact")
                yield Label(EXACT_ON if p.source_match == "exact" else EXACT_OFF, id="exact-state", classes="hint")
            with Horizontal(classes="field"):
                yield Label("Type", classes="field-label")
                yield Select(
                    [(ct or "any", ct or "any") for ct in CONTENT_TYPES],
                    value=p.content_type or "any",
                    allow_blank=False,
                    id="ctype",
                )
            yield Static("", id="params-error", classes="error")
            yield Static("Changes apply at once · Tab moves · Esc closes", classes="hint")
        yield KeyFooter(compact=True)

    def on_mount(self) -> None:
        self.query_one("#limit", Input).focus()

    @on(Input.Changed, "#limit")
    def _limit(self, event: Input.Changed) -> None:
        error = self.query_one("#params-error", Static)
        if event.validation_result is not None and not event.validation_result.is_valid:
            error.update(f"Limit must be a whole number from 0 to {MAX_LIMIT}; got {event.value!r}")
            return
        error.update("")
        self.applied_limit = int(event.value)
        self.apply_change(ParamsChange(limit=self.applied_limit))

    @on(Input.Changed, "#source")
    def _source(self, event: Input.Changed) -> None:
        self.apply_change(ParamsChange(source=event.value or None))

    @on(Switch.Changed, "#exact")
    def _exact(self, event: Switch.Changed) -> None:
        self.query_one("#exact-state", Label).update(EXACT_ON if event.value else EXACT_OFF)
        self.apply_change(ParamsChange(source_match="exact" if event.value else "like"))

    @on(Select.Changed, "#ctype")
    def _ctype(self, event: Select.Changed) -> None:
        self.apply_change(ParamsChange(content_type=None if event.value in ("any", Select.BLANK) else str(event.value)))

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_close()

    def action_close(self) -> None:
        """Close the dialog; an invalid limit in the field puts back the
        limit the dialog opened with."""
        limit = self.query_one("#limit", Input)
        if not limit.is_valid and self.applied_limit != self.params.limit:
            self.apply_change(ParamsChange(limit=self.params.limit))
        self.dismiss(None)
