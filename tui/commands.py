"""The command palette provider (ctrl+p): every parameter change and action.

Typing ``limit 7`` offers "Set limit to 7"; every source label and session
of the store is offered as a filter.
"""

from __future__ import annotations

import re
from functools import partial
from typing import TYPE_CHECKING, Callable, Iterator

from textual.command import DiscoveryHit, Hit, Hits, Provider

from . import safe

if TYPE_CHECKING:
    from .app import RankscopeApp

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


class RankscopeCommands(Provider):
    """rankscope's commands: parameters, sessions, copy, export, help, the what-if lab."""

    @property
    def rs_app(self) -> "RankscopeApp":
        return self.app  # type: ignore[return-value]

    def _commands(self) -> Iterator[tuple[str, Callable[[], object], str]]:
        app = self.rs_app
        browser = app.browser
        yield "Focus the query box", app.action_focus_query, "Select the query text so typing replaces it"
        yield "Help: what each stage does", app.action_help, "F1"
        if browser is None:
            return
        params = browser.params
        up = browser.update_params
        yield "Edit parameters…", app.action_edit_params, "F2: limit, source filter, content type"
        yield "Choose sessions…", app.action_choose_sessions, "F3: the session allow-set"
        yield "Copy as command line", app.action_copy_command, "F4: a 'rankscope search' command for this search"
        yield "Export trace as JSON", app.action_export_trace, "F6: write the whole trace into the current folder"
        yield ("Compare with a variant…", app.action_compare,
               "F7: this search under A (reference) and B, side by side, with ↑/↓/new/gone")
        for spec, what in COMPARE_PRESETS:
            yield f"Compare with {spec}", partial(app.action_compare, spec), what
        yield "Why is chunk X missing?…", app.action_why_not, "F8: find any chunk; see where and why it left"
        subject = app.selected_subject()
        if subject is not None:
            yield (f"Why not? the selected chunk (row {subject.rowid})", app.action_why_selected,
                   f"Explain {safe.line(subject.title)} · {safe.line(subject.source)}")
        yield "Store diagnostics (doctor)", app.action_doctor, "F9: key collisions, oversized/Untitled chunks, counts"
        yield ("Agent view: what ctx_search gives the agent", app.action_agent_view,
               "F5: the text the agent receives, snippet windows, the limit it gets, plugin scope")
        yield ("Agent log: the agent's recorded searches…", app.action_agent_log,
               "ctx_search calls from the store's session DB, replayed; Enter opens one")
        yield ("Judging mode: " + ("stop" if browser.judging else "grade chunks 0-3"), browser.action_toggle_judging,
               "g: keys 0-3 grade the selected chunk for this query; saved to the store's judgments")
        yield "Save this case", browser.action_save_case, "The query, parameters, selected chunk and its judgments"
        yield "Saved cases…", browser.action_open_cases, "Reopen a saved case; e exports them as queries.json"
        yield "Search query history…", browser.action_search_history, "ctrl+r in the query box; ↑↓ step through it"
        yield ("Open a context-mode store…", app.action_open_stores,
               "Pick one of this machine's content stores (as rankscope --stores); opened read-only")
        if app.skipped.skipped:
            yield (f"Skipped files ({len(app.skipped.skipped)})…", app.action_show_skipped,
                   f"{app.skipped.summary()}: which files indexing passed over, and why")
        for n in (1, 3, 5, 10, 20, 50):
            if n != params.limit:
                yield f"Set limit to {n}", partial(up, limit=n), f"Results wanted (now {params.limit})"
        for ct in ("code", "prose"):
            if params.content_type != ct:
                yield f"Content type: {ct} only", partial(up, content_type=ct), "Filter both retrievers"
        if params.content_type is not None:
            yield "Content type: any", partial(up, content_type=None), "Remove the content-type filter"
        if params.source:
            yield "Source filter: clear", partial(up, source=None), f"Now {params.source!r}"
        other = "like" if params.source_match == "exact" else "exact"
        yield (f"Source match: {'substring' if other == 'like' else 'exact'}", partial(up, source_match=other),
               "How the source filter compares labels")
        for label in app.source_labels:
            yield f"Source filter: {label}", partial(up, source=label, source_match="exact"), "Exact label"
        if params.sessions is not None:
            yield "Session filter: off", partial(up, sessions=None), "Let every session through"
        yield "Session filter: only unattributed", partial(up, sessions=()), "Only chunks with no session pass"
        for session, n in app.session_counts:
            if not session:
                continue
            yield f"Session filter: only {session}", partial(up, sessions=(session,)), f"{n} chunks"
            current = params.sessions or ()
            if params.sessions is not None and session not in current:
                yield (f"Session filter: also allow {session}", partial(up, sessions=current + (session,)),
                       f"{n} chunks")
        for name in ("results", "stages", "journey"):
            yield f"Show {name}", partial(browser.action_show_pane, name), "Switch pane"
        for stage, header in browser.inspector.stage_ids():
            yield f"Go to stage: {header}", partial(browser.go_to_stage, stage), "Scroll the inspector there"

    async def discover(self) -> Hits:
        for text, command, help_text in self._commands():
            yield DiscoveryHit(text, command, help=help_text)

    async def search(self, query: str) -> Hits:
        browser = self.rs_app.browser
        m = _LIMIT.match(query)
        if m and browser is not None:
            n = int(m.group(1))
            yield Hit(1.0, f"Set limit to {n}", partial(browser.update_params, limit=n), help="Results wanted")
            return
        m = _COMPARE.match(query)
        if m and browser is not None:
            from engine.compare import parse_variant, variant_spec

            try:
                spec = variant_spec(parse_variant(m.group(1)))
            except ValueError as exc:
                yield Hit(0.1, f"Compare: {safe.line(str(exc))[:70]}", lambda: None, help="Not a valid variant spec")
            else:
                yield Hit(1.0, f"Compare with {spec}", partial(self.rs_app.action_compare, spec),
                          help="B = this variant, A = the compare screen's A")
            return
        m = _SOURCE.match(query)
        if m and browser is not None and not m.group(1).lower().startswith(("filter", "match")):
            text = m.group(1)
            yield Hit(1.0, f"Source filter: label contains {text!r}",
                      partial(browser.update_params, source=text, source_match="like"),
                      help="Substring of the source label")
            for label in self.rs_app.source_labels:
                if text.lower() in label.lower():
                    yield Hit(0.5, f"Source filter: {label}",
                              partial(browser.update_params, source=label, source_match="exact"), help="Exact label")
            return
        matcher = self.matcher(query)
        for text, command, help_text in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), command, text=text, help=help_text)
