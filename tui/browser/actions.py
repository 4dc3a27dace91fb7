"""Every action of the browser, declared once.

One row per action (:data:`ACTIONS`, in the order the F1 key list shows
them): its keys and who binds each, the footer label and tooltip, the F1 text
and the command-palette entry. Everything else is derived from this table:

- key bindings: :func:`bindings` gives ``RankscopeApp.BINDINGS`` (owner
  ``"app"``), ``BrowserScreen.BINDINGS`` (``"browser"``),
  ``QueryInput.BINDINGS`` (``"query"``), and the action keys of the agent
  view (``"agent"``), the saved cases list (``"cases"``), the why-not
  finder (``"why"``) and the rank flow (``"flow"``), in table order;
- the palette's action entries (:func:`palette_rows`, used by
  :mod:`tui.browser.palette`); the help line starts with the key (``F2: ...``);
- the F1 key list (:func:`help_keys`, used by :mod:`tui.browser.screens.help`);
- which app actions need an open browser, and which are off while a lab
  screen is on top (:func:`app_action`, used by ``RankscopeApp.check_action``).

Keys that Textual or every dialog binds itself (ctrl+p, ctrl+q, Enter in the
query box, Esc) are rows too, so F1 lists them; their owners (``"textual"``,
``"screens"``) get no generated binding. A dialog's own way out (Esc, and the
function key that opened it) and its moves between its own widgets (↓ to a
list) stay on the dialog. Tests check that every row's keys
are bound to its action, and that the palette and F1 show the same keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from textual.binding import Binding, BindingType

from engine.pipeline import table as stages

#: Who binds a key: the app, the browser screen, the query input, the agent
#: view, the agent log, the saved cases list, the why-not finder, the rank flow (bindings generated from this table); Textual
#: itself (ctrl+p, ctrl+q, Enter in an input) or every dialog and lab screen
#: on its own (Esc): F1 lists those only.
Owner = Literal["app", "browser", "query", "agent", "agentlog", "cases", "why", "flow", "textual", "screens"]
#: The owners whose bindings :func:`bindings` generates.
BINDING_OWNERS: tuple[Owner, ...] = ("app", "browser", "query", "agent", "agentlog", "cases", "why", "flow")
#: What an action needs before it can run: nothing, an open browser, a chunk
#: selected in the browser (the journey's subject) or files the folder's
#: indexing skipped. The palette offers a row only when its need is met.
Need = Literal["", "browser", "subject", "skipped"]

QUERY_GROUP = Binding.Group("Query ", compact=True)
PANES_GROUP = Binding.Group("Panes", compact=True)
GRADE_GROUP = Binding.Group("Grade", compact=True)
#: How a palette-only action (no key of its own) is reached; F1 shows it in the key column.
PALETTE_KEY = "ctrl+p"


@dataclass(frozen=True)
class Key:
    """One key of an action and the binding it becomes.

    Attributes:
        key: Textual key name (``"ctrl+l"``, ``"slash"``, ``"f2"``).
        shown: how F1 and the palette name the key (``"/"``, ``"F2"``).
        owner: who binds it (:data:`Owner`).
        action: the Textual action the key runs, when it differs from the
            row's (``"focus_next"`` for Tab in the "leave the query" row).
        id: the binding id, when it differs from the row's id.
        label, tooltip: footer text and tooltip, when they differ from the row's.
        key_display: the footer's key text (``None``: Textual's own).
        priority: a priority binding (runs before the focused widget sees the key).
        footer: shown in the footer (``None``: as the row says).
        scope: where the key works when that is not everywhere
            (``"in the agent view"``); the palette's help line names it.
    """

    key: str
    shown: str
    owner: Owner = "app"
    action: str | None = None
    id: str | None = None
    label: str | None = None
    tooltip: str | None = None
    key_display: str | None = None
    priority: bool = False
    footer: bool | None = None
    scope: str = ""


@dataclass(frozen=True)
class Action:
    """One action: what it does, its keys, and how footer, palette and F1 name it.

    Attributes:
        id: unique id (also the id of its first key's binding).
        action: the Textual action string the keys and the palette run
            (``"edit_params"``, ``"show_pane('results')"``), in the namespace
            of ``target``.
        target: where the action method lives: the app, the browser screen,
            or ``"widget"``: the focused widget or screen (reached only by its key).
        keys: its keys, the first one primary (empty: palette only).
        label: footer text.
        tooltip: footer tooltip.
        help: the F1 key list's text for it.
        palette: the palette entry's title, or ``None`` when the palette does
            not offer it. ``{rowid}``, ``{title}``, ``{source}`` (the selected
            chunk), ``{count}``, ``{summary}`` (skipped files) and
            are filled in.
        palette_help: the palette entry's help line, after ``KEY: `` when
            the action has a key (same fields as ``palette``).
        footer: shown in the footer.
        group: footer group of its bindings.
        needs: what it needs (:data:`Need`).
        browser_key: off while a lab screen (compare, why not?, doctor) is on
            top, which keeps their footer readable.
        stage: the id of the stage (:data:`engine.pipeline.table.STAGES`) it shows,
            when it opens one of its own (``"agent"``); F1 names the key
            beside that stage.
        in_demo: offered in a demo session (``rankscope --demo``); off
            (no key, no palette entry) when it would show a visitor this
            machine beyond the store on show.
    """

    id: str
    action: str
    keys: tuple[Key, ...]
    label: str
    tooltip: str
    help: str
    palette: str | None = None
    palette_help: str = ""
    target: Literal["app", "browser", "widget"] = "app"
    footer: bool = True
    group: Binding.Group | None = None
    needs: Need = ""
    browser_key: bool = False
    stage: str = ""
    in_demo: bool = True

    @property
    def keys_shown(self) -> str:
        """The F1 key column: every key as shown, once (``ctrl+l  /``), or ``ctrl+p`` for a palette-only action."""
        return "  ".join(dict.fromkeys(k.shown for k in self.keys)) if self.keys else PALETTE_KEY

    @property
    def palette_help_line(self) -> str:
        """The palette help line: ``F2: limit, ...`` (the primary key first,
        with its scope: ``l in the agent view: ...``), or just the text."""
        if not self.keys:
            return self.palette_help
        key = self.keys[0]
        return f"{key.shown}{' ' + key.scope if key.scope else ''}: {self.palette_help}"


ACTIONS: tuple[Action, ...] = (
    Action(
        "focus-query",
        "focus_query",
        (
            Key("ctrl+l", "ctrl+l", priority=True),
            # its own action name: the footer shows one key per action, and it shows both
            Key(
                "slash",
                "/",
                action="focus_query_slash",
                id="focus-query-slash",
                key_display="/",
                tooltip="Focus the query box (when focus is elsewhere)",
            ),
        ),
        "Query",
        "Focus the query box with its text selected (also closes dialogs)",
        "focus the query box (text selected: typing replaces it)",
        palette="Focus the query box",
        palette_help="select the query text so typing replaces it",
        group=QUERY_GROUP,
        needs="browser",
    ),
    Action(
        "help",
        "help",
        (Key("f1", "F1"),),
        "Help",
        "What each pipeline stage does, and the keys",
        "this help: what each pipeline stage does, and the keys",
        palette="Help: what each stage does",
        palette_help="what each pipeline stage does, and the keys",
    ),
    Action(
        "search-now",
        "submit",
        (Key("enter", "Enter", owner="textual"),),
        "Search",
        "Search now",
        "search now (otherwise 150 ms after you stop typing)",
        target="widget",
        footer=False,
    ),
    Action(
        "leave-query",
        "screen.query_down",
        # one binding per pane ↓ can go to, so the footer names the one it goes to (Results, or on a
        # narrow screen the pane shown); the browser enables the one that applies (check_action)
        (
            *(
                Key(
                    "down",
                    "↓",
                    owner="query",
                    action=f"screen.query_down('{pane}')",
                    id="query.leave" + ("" if pane == "results" else f"-{pane}"),
                    label=label,
                    key_display="↓",
                    priority=True,
                    tooltip=f"Move from the query box to the {pane} pane (the one shown); "
                    "after ↑, the next newer query of the history",
                )
                for pane, label in (("results", "Results"), ("stages", "Stages"), ("journey", "Journey"))
            ),
            Key(
                "tab",
                "Tab",
                action="focus_next",
                id="focus-next",
                label="Next",
                tooltip="Focus the next widget",
                priority=True,
                footer=False,
            ),
            Key(
                "shift+tab",
                "shift+Tab",
                action="focus_previous",
                id="focus-previous",
                label="Previous",
                tooltip="Focus the previous widget",
                priority=True,
                footer=False,
            ),
        ),
        # Tab and shift+Tab are priority bindings: they run as the key arrives, so keys typed right
        # after them (one burst) reach the newly focused widget, not the one that had focus.
        "Results",
        "Move from the query box to the results (or the visible pane)",
        "move from the query to the results (or the pane shown), then on (shift+Tab goes back); "
        "after ↑, ↓ steps back to newer queries",
        target="widget",
    ),
    Action(
        "history-older",
        "history_older",
        (Key("up", "↑", owner="query", action="screen.history_older", id="query.history-up", key_display="↑"),),
        "History",
        "The previous query of this store's history",
        "in the query box: the previous query of this store's history (↓ comes back)",
        target="browser",
        footer=False,
    ),
    Action(
        "history-search",
        "search_history",
        (
            Key(
                "ctrl+r",
                "ctrl+r",
                owner="query",
                action="screen.search_history",
                id="query.history-search",
                scope="in the query box",
            ),
        ),
        "History",
        "Search this store's query history (fuzzy)",
        "in the query box: search this store's query history (fuzzy); Enter searches the chosen query",
        palette="Search query history…",
        palette_help="pick a past query of this store (fuzzy); ↑↓ in the query box step through them",
        target="browser",
        footer=False,
        needs="browser",
    ),
    Action(
        "pane.results",
        "show_pane('results')",
        (Key("r", "r", owner="browser"),),
        "Results",
        "Show and focus the results (narrow screens show one pane at a time)",
        "results pane (narrow screens show one pane at a time; in the query box letters are text)",
        palette="Show results",
        palette_help="show and focus the ranked results",
        target="browser",
        group=PANES_GROUP,
        needs="browser",
    ),
    Action(
        "pane.stages",
        "show_pane('stages')",
        (Key("s", "s", owner="browser"),),
        "Stages",
        "Show and focus the stage inspector",
        "stages pane: what every step of the pipeline did",
        palette="Show stages",
        palette_help="show and focus the stage inspector",
        target="browser",
        group=PANES_GROUP,
        needs="browser",
    ),
    Action(
        "pane.journey",
        "show_pane('journey')",
        (Key("j", "j", owner="browser"),),
        "Journey",
        "Show and focus the journey of the selected chunk",
        "journey pane: where the selected chunk went, stage by stage",
        palette="Show journey",
        palette_help="show and focus the journey of the selected chunk",
        target="browser",
        group=PANES_GROUP,
        needs="browser",
    ),
    Action(
        "pin",
        "pin_selected",
        (Key("p", "p", owner="browser", id="pin.toggle"),),
        "Pin",
        "Pin the selected chunk: a line under the query follows its fate as you type",
        "pin the selected chunk (again: unpin): its fate as you type, and the smallest change that returns it",
        palette="Pin the selected chunk (row {rowid})",
        palette_help="follow {title} · {source}: its fate, and the smallest change that returns it",
        target="browser",
        footer=False,
        needs="subject",
    ),
    Action(
        "versus",
        "mark_versus",
        (Key("v", "v", owner="browser", id="versus.toggle"),),
        "Versus",
        "Mark the selected chunk: the journey of another chunk then says why one is above the other",
        "mark the selected chunk (again: unmark) for X vs Y: the journey of any other chunk shows the stage that "
        "put one above the other, in numbers, and the one change that would flip them",
        palette="Mark row {rowid} for X vs Y",
        palette_help="the journey of another chunk then says why one is above the other: {title} · {source}",
        target="browser",
        footer=False,
        needs="subject",
    ),
    Action(
        "edit-params",
        "edit_params",
        (Key("f2", "F2"),),
        "Params",
        "Limit, source filter (substring or exact) and content type",
        "parameters: limit, source filter (substring or exact), content type",
        palette="Edit parameters…",
        palette_help="limit, source filter, content type",
        needs="browser",
        browser_key=True,
    ),
    Action(
        "choose-sessions",
        "choose_sessions",
        (Key("f3", "F3"),),
        "Sessions",
        "Turn the session filter on or off and choose the allow-set",
        "session filter: choose the allow-set",
        palette="Choose sessions…",
        palette_help="the session allow-set",
        needs="browser",
        browser_key=True,
    ),
    Action(
        "copy-command",
        "copy_command",
        (Key("f4", "F4"),),
        "Copy",
        "Copy this search as a 'rankscope search' command line",
        "copy the current search as a 'rankscope search' command line",
        palette="Copy as command line",
        palette_help="a 'rankscope search' command for this search",
        needs="browser",
        browser_key=True,
    ),
    Action(
        "rank-flow",
        "rank_flow",
        (Key("f5", "F5"),),
        "Flow",
        "Rank flow: every candidate's position at every stage, and where it left",
        "rank flow: a row per candidate, a column per stage: its moves (↑n ↓n =) and where it left",
        palette="Rank flow",
        palette_help="a row per candidate, a column per stage: moves and where each left",
        footer=False,
        needs="browser",
        browser_key=True,
    ),
    Action(
        "flow-pin",
        "pin",
        (Key("p", "p", owner="flow", id="flow.pin", scope="in the rank flow"),),
        "Pin",
        "Pin the highlighted row's chunk in the browser (again: unpin); the line under the query follows its fate",
        "in the rank flow: pin the highlighted row's chunk (again: unpin); ▸ marks its row",
        target="widget",
    ),
    Action(
        "flow-grade",
        "grade",
        tuple(
            Key(
                str(n),
                str(n),
                owner="flow",
                action=f"grade({n})",
                id=f"flow.grade{n}",
                tooltip=f"Grade the highlighted row's chunk {n} ({word}) for this query",
            )
            for n, word in ((0, "not relevant"), (1, "marginally relevant"), (2, "relevant"), (3, "highly relevant"))
        )
        + (
            Key(
                "x",
                "x",
                owner="flow",
                action="grade(-1)",
                id="flow.ungrade",
                label="Ungrade",
                footer=False,
                tooltip="Remove the highlighted row's chunk's grade for this query",
            ),
        ),
        "Grade",
        "Grade the highlighted row's chunk for this query (x removes its grade)",
        "in the rank flow: grade the highlighted row's chunk (0-3; x removes the grade); the browser follows it",
        target="widget",
        group=GRADE_GROUP,
    ),
    Action(
        "export-trace",
        "export_trace",
        (Key("f6", "F6"),),
        "Export",
        "Write the whole trace as JSON into the current folder",
        "export the whole trace as JSON into the current folder",
        palette="Export trace as JSON",
        palette_help="write the whole trace into the current folder",
        needs="browser",
        browser_key=True,
    ),
    # The what-if lab: not in the footer (it is full at 80 columns); listed in F1 and ctrl+p.
    Action(
        "lab-compare",
        "compare",
        (Key("f7", "F7"),),
        "Compare",
        "Compare this search under two pipeline variants (A = reference, B = your choice)",
        "compare: this search under variants A and B side by side (↑n ↓n = new gone, counts)",
        palette="Compare with a variant…",
        palette_help="this search under A (reference) and B, side by side, with ↑/↓/new/gone",
        footer=False,
        needs="browser",
    ),
    Action(
        "lab-why",
        "why_not",
        (Key("f8", "F8"),),
        "Why not?",
        "Why is chunk X missing? Find any chunk and see where it left the pipeline",
        "why not?: find any chunk; the stage where it left and why (from a pane: the selected chunk)",
        palette="Why is chunk X missing?…",
        palette_help="find any chunk; see where and why it left",
        footer=False,
        needs="browser",
    ),
    Action(
        "why-pin",
        "pin",
        (Key("p", "p", owner="why", id="why.pin", scope="in why not? (on the matches or the answer)"),),
        "Pin",
        "Pin this chunk in the browser: the line under the query follows its fate as you type",
        "in why not?, on a match or the answer: pin that chunk (its fate under the query as you type)",
        target="widget",
    ),
    Action(
        "lab-doctor",
        "doctor",
        (Key("f9", "F9"),),
        "Doctor",
        "Store diagnostics: key collisions, oversized and Untitled chunks, counts, staleness",
        "doctor: store diagnostics (key collisions, oversized and Untitled chunks, counts)",
        palette="Store diagnostics (doctor)",
        palette_help="key collisions, oversized/Untitled chunks, counts",
        footer=False,
        needs="browser",
    ),
    # The agent view (the stage after Final: engine.pipeline.table). F5 is kept for the rank-flow view (issue 9); F10 is
    # GNOME Terminal's (and MATE's, Tilix's) menu key and F11 most terminals' full screen.
    Action(
        "agent-view",
        "agent_view",
        (Key("f12", "F12"),),
        "Agent",
        "The agent view: what ctx_search gives the agent for this search (limit, snippets, footer)",
        "agent view: what ctx_search hands the agent for this search (the same key or Esc closes it)",
        palette=f"{stages.title('agent')}: what ctx_search gives the agent",
        palette_help="the text the agent receives, snippet windows, the limit it gets, plugin scope",
        footer=False,
        needs="browser",
        stage="agent",
    ),
    Action(
        "agent-plugin",
        "toggle_plugin",
        (Key("p", "p", owner="agent", id="agent.plugin"),),
        "Plugin",
        "As the plugin sees it: the session allow-set from the store's session DB",
        "in the agent view: as the Claude Code plugin sees it (the allow-set from the store's session DB), or not",
        target="widget",
    ),
    Action(
        "agent-call",
        "call",
        (
            Key(
                "plus,equals_sign",
                "+",
                owner="agent",
                action="call(1)",
                id="agent.call-up",
                label="Call+",
                tooltip="One call later in the throttle window (#4 on: 1 result per query; #9 on: BLOCKED)",
            ),
            Key(
                "minus",
                "-",
                owner="agent",
                action="call(-1)",
                id="agent.call-down",
                label="Call-",
                tooltip="One call earlier in the throttle window",
            ),
        ),
        "Call",
        "Move the call within its throttle window",
        "in the agent view: one call later / earlier in the throttle window (#4 on: 1 result per query; "
        "#9 on: BLOCKED)",
        target="widget",
    ),
    Action(
        "agent-answer",
        "toggle_answer",
        (Key("a", "a", owner="agent", id="agent.answer"),),
        "Answer",
        "Switch between the selected chunk (windows marked) and the whole answer text",
        "in the agent view: the selected chunk with its snippet windows marked, or the whole answer text",
        target="widget",
    ),
    Action(
        "agent-log",
        "agent_log",
        (Key("l", "l", owner="agent", action="app.agent_log", id="agent.log", scope="in the agent view"),),
        "Log",
        "The agent's recorded searches (from the store's session DB)",
        "agent log: the ctx_search calls recorded in the store's session DB, replayed, followed live; Enter "
        "opens one (from the agent view, or ctrl+p)",
        palette="Agent log: the agent's recorded searches…",
        palette_help="ctx_search calls from the store's session DB, replayed, followed live; Enter opens one",
        footer=True,
        needs="browser",
    ),
    Action(
        "agent-log-follow",
        "toggle_follow",
        (Key("f", "f", owner="agentlog", id="agent-log.follow", scope="in the agent log"),),
        "Follow",
        "Follow: open each new call's agent view and pipeline as it arrives",
        "in the agent log: follow, on or off: each new call the agent makes opens in the agent view, its "
        "first query in the browser",
        target="widget",
    ),
    # The evaluation lab: the digits grade the selected chunk in any pane (in the query box they are text).
    Action(
        "judge-grade",
        "grade",
        tuple(
            Key(
                str(n),
                str(n),
                owner="browser",
                action=f"grade({n})",
                id=f"judge.grade{n}",
                tooltip=f"Grade the selected chunk {n} ({word}) for this query",
            )
            for n, word in ((0, "not relevant"), (1, "marginally relevant"), (2, "relevant"), (3, "highly relevant"))
        ),
        "Grade",
        "Grade the selected chunk for this query",
        "grade the selected chunk for this query (0 not · 1 marginally · 2 relevant · 3 highly relevant); "
        "★n marks it in every pane and the flow",
        target="browser",
        group=GRADE_GROUP,
    ),
    Action(
        "judge-clear",
        "grade(-1)",
        (Key("x", "x", owner="browser", id="judge.clear"),),
        "Ungrade",
        "Remove the selected chunk's judgment",
        "remove the selected chunk's grade for this query",
        target="browser",
        footer=False,
    ),
    Action(
        "judge-next",
        "next_ungraded",
        (Key("u", "u", owner="browser", id="judge.next"),),
        "Ungraded",
        "Select the next chunk to grade for this query",
        "step through what to grade next: the chunks in the top 10 of any stage's list with no grade for this "
        "query, those in the most lists first (0-3 then grades the selected one)",
        palette="Next ungraded chunk (what to grade next)",
        palette_help="select the chunk in the top 10 of the most stages that has no grade for this query",
        target="browser",
        footer=False,
        group=GRADE_GROUP,
        needs="browser",
    ),
    Action(
        "command-palette",
        "command_palette",
        (Key("ctrl+p", "ctrl+p", owner="textual"),),
        "Palette",
        "Search every command",
        "command palette: every command, including 'limit 7' and those below",
        footer=False,
    ),
    Action(
        "why-selected",
        "why_selected",
        (),
        "Why not?",
        "Explain the chunk the journey pane follows",
        "why not? for the chunk the journey follows",
        palette="Why not? the selected chunk (row {rowid})",
        palette_help="Explain {title} · {source}",
        footer=False,
        needs="subject",
    ),
    Action(
        "save-case",
        "save_case",
        (),
        "Save case",
        "Save the query, parameters, pinned chunk (p; else the selected one) and the judgments as a case",
        "save this case: the query, parameters, pinned chunk (p; else the selected one) and the judgments",
        palette="Save this case",
        palette_help="The query, parameters, pinned chunk (p; else the selected one) and the judgments",
        target="browser",
        footer=False,
        needs="browser",
    ),
    Action(
        "open-cases",
        "open_cases",
        (),
        "Cases",
        "The saved cases; Enter reopens one",
        "saved cases: Enter reopens one (its query and parameters; its chunk pinned and selected)",
        palette="Saved cases…",
        palette_help="Reopen a saved case; e exports them as queries.json (never over an existing file)",
        target="browser",
        footer=False,
        needs="browser",
    ),
    Action(
        "cases-export",
        "export",
        (Key("e", "e", owner="cases", id="cases.export"),),
        "Export",
        "Write every case as queries.json and its judgments as qrels into the current folder (new files only)",
        "in saved cases: export every case as queries.json, its judgments as qrels, into the current folder "
        "(new files: rankscope-cases-2.json ... when the name is taken)",
        target="widget",
    ),
    Action(
        "cases-delete",
        "remove",
        (Key("delete", "Delete", owner="cases", id="cases.delete"),),
        "Delete",
        "Delete the highlighted case",
        "in saved cases: delete the highlighted case",
        target="widget",
    ),
    Action(
        "open-stores",
        "open_stores",
        (),
        "Stores",
        "Pick one of this machine's content stores",
        "open another context-mode store of this machine (read-only)",
        palette="Open a context-mode store…",
        palette_help="Pick one of this machine's content stores (as rankscope --stores); opened read-only",
        footer=False,
        needs="browser",
        in_demo=False,
    ),
    Action(
        "show-skipped",
        "show_skipped",
        (),
        "Skipped",
        "List the files the folder's indexing skipped",
        "skipped files: which files indexing passed over, and why (when any)",
        palette="Skipped files ({count})…",
        palette_help="{summary}: which files indexing passed over, and why",
        footer=False,
        needs="skipped",
    ),
    Action(
        "close",
        "close",
        (Key("escape", "Esc", owner="screens"),),
        "Close",
        "Close the dialog or lab screen",
        "close a dialog or lab screen: focus returns where it was",
        target="widget",
        footer=False,
    ),
    Action(
        "quit",
        "quit",
        (Key("ctrl+q", "ctrl+q", owner="textual"),),
        "Quit",
        "Quit rankscope",
        "quit",
        footer=False,
    ),
)

ACTION_BY_ID: dict[str, Action] = {a.id: a for a in ACTIONS}


#: The footer group of every screen's close keys.
CLOSE_GROUP = Binding.Group("Close ", compact=True)


def close_keys(
    screen_id: str, what: str, toggle: str | None = None, escape_tooltip: str | None = None
) -> list[Binding]:
    """A screen's close keys: Esc (id ``SCREEN.close``; tooltip ``Close WHAT;
    focus returns where it was`` unless ``escape_tooltip``) and, when the
    screen has one, the key that opened it closes it too (``SCREEN.toggle``)."""
    keys = [
        Binding(
            "escape",
            "close",
            "Close",
            group=CLOSE_GROUP,
            id=f"{screen_id}.close",
            tooltip=escape_tooltip or f"Close {what}; focus returns where it was",
        )
    ]
    if toggle is not None:
        keys.append(
            Binding(toggle, "close", "Close", group=CLOSE_GROUP, id=f"{screen_id}.toggle", tooltip=f"Close {what}")
        )
    return keys


def _binding(row: Action, key: Key) -> Binding:
    show = row.footer if key.footer is None else key.footer
    return Binding(
        key.key,
        key.action or row.action,
        key.label or row.label,
        show=show,
        key_display=key.key_display,
        priority=key.priority,
        tooltip=key.tooltip or row.tooltip,
        id=key.id or row.id,
        group=row.group,
    )


def bindings(owner: Owner) -> list[BindingType]:
    """The bindings of every key bound by ``owner`` (one of
    :data:`BINDING_OWNERS`), in table order.

    Raises:
        ValueError: ``owner`` binds no keys of its own (``"textual"``, ``"screens"``).
    """
    if owner not in BINDING_OWNERS:
        raise ValueError(f"no bindings are generated for owner {owner!r}")
    return [_binding(row, key) for row in ACTIONS for key in row.keys if key.owner == owner]


def app_action(name: str) -> Action | None:
    """The row of the app-level action ``name`` as ``check_action`` gets it
    (``"edit_params"``, ``"focus_query_slash"``), or ``None``."""
    return _APP_ACTIONS.get(name)


def _app_actions() -> dict[str, Action]:
    out: dict[str, Action] = {}
    for row in ACTIONS:
        names = [k.action or row.action for k in row.keys if k.owner == "app"]
        if row.target == "app":
            names.append(row.action)
        for name in names:
            out.setdefault(name.partition("(")[0], row)
    return out


_APP_ACTIONS = _app_actions()


def palette_rows(demo: bool = False) -> tuple[Action, ...]:
    """The rows the command palette offers, in table order (``demo``: in a
    demo session, without the rows not :attr:`~Action.in_demo`)."""
    return tuple(a for a in ACTIONS if a.palette is not None and (a.in_demo or not demo))


def help_keys() -> tuple[tuple[str, str], ...]:
    """The F1 key list: (key column, text), one per row, in table order."""
    return tuple((a.keys_shown, a.help) for a in ACTIONS)


def key_shown(action_id: str) -> str:
    """How F1 names the primary key of the action ``action_id`` (``"s"``,
    ``"F1"``, ``"↓"``), for text that tells which key to press.

    Raises:
        KeyError: no such action, or it has no key.
    """
    row = ACTION_BY_ID[action_id]
    if not row.keys:
        raise KeyError(f"action {action_id!r} has no key")
    return row.keys[0].shown


def keys_shown(action_id: str) -> str:
    """The keys of ``action_id`` as a range when they are consecutive
    digits (``"0-3"`` for the grades), else joined by ``/``.

    Raises:
        KeyError: no such action, or it has no key.
    """
    row = ACTION_BY_ID[action_id]
    shown = list(dict.fromkeys(k.shown for k in row.keys))
    if not shown:
        raise KeyError(f"action {action_id!r} has no key")
    if len(shown) > 2 and all(k.isdigit() for k in shown):
        digits = [int(k) for k in shown]
        if digits == list(range(digits[0], digits[0] + len(digits))):
            return f"{shown[0]}-{shown[-1]}"
    return "/".join(shown)
