"""The command palette provider (ctrl+p): every parameter change and action.

Typing ``limit 7`` offers "Set limit to 7"; every source label and session
of the store is offered as a filter.
"""

from __future__ import annotations

import re
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol, cast

from textual import actions
from textual.command import DiscoveryHit, Hit, Hits, Provider

from engine.pipeline.table import title as stage_title

from tui.present import safe
from tui.browser.actions import Action, palette_rows
from tui.browser.screens.params import ParamsChange

if TYPE_CHECKING:
    from tui.browser.screens.browser import BrowserScreen
    from tui.browser.subject import Subject

#: Quick B variants offered in the palette (spec, what it shows).
COMPARE_PRESETS = (
    ("key=rowid", "one fusion key per chunk: rows merged by a source::title collision come back"),
    ("rerank=before-trim,pool=20", "rerank a larger pool before the trim"),
    ("rerank=off", "the fused order, without the rerank"),
    ("fuzzy=always", "also run the typo fallback as a shadow"),
    ("retrievers=porter", "Porter (stemmed words) only"),
    ("retrievers=trigram", "trigram (substrings) only"),
)

_LIMIT = re.compile(r"^\s*(?:set\s+)?limit\s*(?:to\s*)?(\d{1,5})\s*$", re.IGNORECASE)
_COMPARE = re.compile(r"^\s*compare\s+(?:with\s+)?(\w+\s*=.*?)\s*$", re.IGNORECASE)
_SOURCE = re.compile(r"^\s*source\s+(?:contains\s+)?(\S.*?)\s*$", re.IGNORECASE)


class PaletteHost(Protocol):
    """What the palette reads from the app (``RankscopeApp`` has it all)."""

    @property
    def browser(self) -> BrowserScreen | None: ...

    def selected_subject(self) -> Subject | None: ...

    @property
    def demo(self) -> bool: ...


def action_call(target: object, action: str) -> Callable[[], object]:
    """The method the Textual action string ``action`` names on ``target``,
    its parameters bound: ``compare('key=rowid')`` gives
    ``partial(target.action_compare, 'key=rowid')``.

    The palette calls it directly, as a key would but without
    ``check_action``: the browser keys are off while a lab screen is on top
    (to keep its footer readable), yet their palette entries close the lab
    screen and run, as they always have.

    Raises:
        AttributeError: ``target`` has no ``action_...`` method of that name.
    """
    _, name, params = actions.parse(action)
    return partial(getattr(target, f"action_{name}"), *params)


class RankscopeCommands(Provider):
    """rankscope's commands: the action table's palette entries
    (:func:`tui.browser.actions.palette_rows`), the what-if lab's presets,
    parameters, sessions and stages."""

    @property
    def host(self) -> PaletteHost:
        return cast(PaletteHost, self.app)

    def _actions(self) -> Iterator[tuple[str, Callable[[], object], str]]:
        """The action table's palette entries whose need is met, in table order."""
        app = self.host
        browser = app.browser
        subject = app.selected_subject() if browser is not None else None
        skipped = browser.overview.skipped.skipped if browser is not None else ()
        fields: dict[str, Any] = {
            "count": len(skipped),
            "summary": browser.overview.skipped.summary() if browser is not None else "",
        }
        if subject is not None:
            fields.update(rowid=subject.rowid, title=safe.line(subject.title), source=safe.line(subject.source))
        met = {
            "": True,
            "browser": browser is not None,
            "subject": subject is not None,
            "skipped": bool(skipped),
        }
        row: Action
        for row in palette_rows(demo=app.demo):
            if not met[row.needs]:
                continue
            target = browser if row.target == "browser" else self.app
            assert row.palette is not None
            yield (
                row.palette.format(**fields),
                action_call(target, row.action),
                row.palette_help_line.format(**fields),
            )

    def _commands(self) -> Iterator[tuple[str, Callable[[], object], str]]:
        yield from self._actions()
        browser = self.host.browser
        if browser is None:
            return
        params = browser.params

        def up(change: ParamsChange) -> Callable[[], object]:
            return partial(browser.update_params, change)

        for spec, what in COMPARE_PRESETS:
            yield f"Compare with {spec}", action_call(self.app, f"compare({spec!r})"), what
        for n in (1, 3, 5, 10, 20, 50):
            if n != params.limit:
                yield f"Set limit to {n}", up(ParamsChange(limit=n)), f"Results wanted (now {params.limit})"
        for ct in ("code", "prose"):
            if params.content_type != ct:
                yield f"Content type: {ct} only", up(ParamsChange(content_type=ct)), "Filter both retrievers"
        if params.content_type is not None:
            yield "Content type: any", up(ParamsChange(content_type=None)), "Remove the content-type filter"
        if params.source:
            yield "Source filter: clear", up(ParamsChange(source=None)), f"Now {params.source!r}"
        other = "like" if params.source_match == "exact" else "exact"
        yield (
            f"Source match: {'substring' if other == 'like' else 'exact'}",
            up(ParamsChange(source_match=other)),
            "How the source filter compares labels",
        )
        for label in browser.overview.source_labels:
            yield f"Source filter: {label}", up(ParamsChange(source=label, source_match="exact")), "Exact label"
        sessions = stage_title("filter")  # the session filter stage's title
        if params.sessions is not None:
            yield f"{sessions}: off", up(ParamsChange(sessions=None)), "Let every session through"
        yield f"{sessions}: only unattributed", up(ParamsChange(sessions=())), "Only chunks with no session pass"
        for session, n in browser.overview.session_counts:
            if not session:
                continue
            yield f"{sessions}: only {session}", up(ParamsChange(sessions=(session,))), f"{n} chunks"
            current = params.sessions or ()
            if params.sessions is not None and session not in current:
                yield (
                    f"{sessions}: also allow {session}",
                    up(ParamsChange(sessions=current + (session,))),
                    f"{n} chunks",
                )
        for stage, header in browser.inspector.stage_ids():
            yield f"Go to stage: {header}", partial(browser.go_to_stage, stage), "Scroll the inspector there"

    async def discover(self) -> Hits:
        for text, command, help_text in self._commands():
            yield DiscoveryHit(text, command, help=help_text)

    async def search(self, query: str) -> Hits:
        browser = self.host.browser
        m = _LIMIT.match(query)
        if m and browser is not None:
            n = int(m.group(1))
            yield Hit(
                1.0, f"Set limit to {n}", partial(browser.update_params, ParamsChange(limit=n)), help="Results wanted"
            )
            return
        m = _COMPARE.match(query)
        if m and browser is not None:
            from engine.pipeline.variants import parse_variant, variant_spec

            try:
                spec = variant_spec(parse_variant(m.group(1)))
            except ValueError as exc:
                yield Hit(0.1, f"Compare: {safe.line(str(exc))[:70]}", lambda: None, help="Not a valid variant spec")
            else:
                yield Hit(
                    1.0,
                    f"Compare with {spec}",
                    action_call(self.app, f"compare({spec!r})"),
                    help="B = this variant, A = the compare screen's A",
                )
            return
        m = _SOURCE.match(query)
        if m and browser is not None and not m.group(1).lower().startswith(("filter", "match")):
            text = m.group(1)
            yield Hit(
                1.0,
                f"Source filter: label contains {text!r}",
                partial(browser.update_params, ParamsChange(source=text, source_match="like")),
                help="Substring of the source label",
            )
            for label in browser.overview.source_labels:
                if text.lower() in label.lower():
                    yield Hit(
                        0.5,
                        f"Source filter: {label}",
                        partial(browser.update_params, ParamsChange(source=label, source_match="exact")),
                        help="Exact label",
                    )
            return
        matcher = self.matcher(query)
        for text, command, help_text in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), command, text=text, help=help_text)
