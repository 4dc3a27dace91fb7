"""The rankscope CLI: index, search (human and --json), batch, errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tui.cli import app, main

from .helpers import cli_error
from .conftest import MODERN, PARITY

CORPUS = PARITY / "stages" / "corpus"
runner = CliRunner()


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "s.db"
    r = runner.invoke(app, ["index", str(CORPUS), "--db", str(path), "--sessions-map", str(CORPUS / "_sessions.json")])
    assert r.exit_code == 0, r.output
    assert "indexed 24 files, 129 chunks" in r.output
    return path


def test_search_human(db):
    r = runner.invoke(app, ["search", "cache", "--db", str(db)])
    assert r.exit_code == 0, r.output
    for word in ("Results for 'cache'", "Fusion (RRF)", "Session filter", "Rerank", "Fuzzy", "cache > dir"):
        assert word in r.output


def test_search_json_matches_parity_fields(db):
    r = runner.invoke(app, ["search", "cache", "--db", str(db), "--json"])
    got = json.loads(r.output)
    exp = next(
        q for q in json.loads((PARITY / "stages" / "expected.json").read_text())["queries"] if q["id"] == "term-cache"
    )
    assert got["layer"] == exp["layer"]
    assert [(f["source"], f["title"], f["rank"]) for f in got["final"]] == [
        (f["source"], f["title"], f["rank"]) for f in exp["final"]
    ]
    assert got["fused"][0]["score"] == exp["fused"][0]["score"]


def test_batch(db, tmp_path):
    out = tmp_path / "traces.json"
    r = runner.invoke(app, ["batch", str(PARITY / "stages" / "queries.json"), "--db", str(db), "--out", str(out)])
    assert r.exit_code == 0, r.output
    traces = json.loads(out.read_text())
    queries = json.loads((PARITY / "stages" / "queries.json").read_text())
    assert [t["id"] for t in traces] == [q["id"] for q in queries]
    exp = {q["id"]: q for q in json.loads((PARITY / "stages" / "expected.json").read_text())["queries"]}
    for t in traces:
        assert t["layer"] == exp[t["id"]]["layer"], t["id"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "x", "--db", "/nonexistent/s.db"], "no database at /nonexistent/s.db"),
        (["search", "x", "--db", "DB", "--limit", "-2"], "limit must be 0 or more; got -2"),
        (["search", "x", "--db", "DB", "--content-type", "video"], "--content-type must be code or prose; got 'video'"),
        (["why", "x", "--db", "DB", "--rowid", "1", "--content-type", "Code"], "--content-type must be code or prose"),
        (["/nonexistent/folder"], "nonexistent"),
    ],
)
def test_errors_are_one_line(db, capsys, args, message):
    args = [str(db) if a == "DB" else a for a in args]
    assert message in cli_error(args, capsys)


@pytest.mark.parametrize("args", [["serch", "foo"], ["serch"], ["evl", "q.json", "--db", "x.db"]])
def test_a_mistyped_subcommand_gets_did_you_mean(args, tmp_path, monkeypatch, capsys):
    """Issue 24: ``rankscope serch foo`` said "unexpected arguments" (as for
    the browser's PATH) and named no command. A first word that is no file
    but close to a subcommand's name is a mistyped command."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    meant = "search" if args[0] == "serch" else "eval"
    assert err.startswith(f"rankscope: error: no such command '{args[0]}'. Did you mean '{meant}'"), err
    assert "(rankscope --help shows the subcommands: index, search," in err


def test_a_file_named_like_a_mistyped_subcommand_is_browsed(tmp_path, monkeypatch, capsys):
    """A folder named ``serch`` is a PATH, not a mistyped command."""
    import sys

    cli_main = sys.modules["tui.cli.main"]
    opened = []
    monkeypatch.setattr(cli_main, "browse", lambda path, **options: opened.append(path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "serch").mkdir()
    main(["serch"])
    assert opened == ["serch"]


def test_not_a_database(tmp_path, capsys):
    p = tmp_path / "x.db"
    p.write_text("plain text")
    with pytest.raises(SystemExit):
        main(["search", "x", "--db", str(p)])
    assert "not an SQLite database" in capsys.readouterr().err
    assert p.read_text() == "plain text"


def test_every_command_has_help():
    r = runner.invoke(app, ["--help"])
    assert r.exit_code == 0
    names = [c.name or c.callback.__name__ for c in app.registered_commands]
    for name in names:
        r = runner.invoke(app, [name, "--help"])
        assert r.exit_code == 0, name
        assert "Usage" in r.output


@pytest.mark.parametrize(
    "args",
    [
        ["search", "quorum"],
        ["search", "quorum", "--json"],
        ["search", "quorum", "--session", "sess-docs"],
        ["sessions"],
        # (doctor --quick reports the damage, exit status 1: test_damage_noticed.py)
        ["why", "quorum", "--rowid", "3"],
        ["compare", "quorum", "--b", "key=rowid"],
        ["batch", "QUERIES"],
        ["compare", "--queries", "QUERIES", "--b", "key=rowid"],
        ["ctx-search", "quorum"],
        ["ctx-search", "quorum", "--json"],
        ["ctx-search", "quorum", "--sort", "timeline"],
    ],
    ids=lambda a: " ".join(a),
)
def test_a_damaged_store_is_one_line_error(damaged_db, tmp_path, capsys, args):
    queries = tmp_path / "q.json"
    queries.write_text(json.dumps([{"id": "q", "query": "quorum"}]))
    args = [str(queries) if a == "QUERIES" else a for a in args]
    with pytest.raises(SystemExit) as exc:
        main([*args, "--db", str(damaged_db)])
    assert exc.value.code == 2
    out = capsys.readouterr()
    assert out.err == (
        f"rankscope: error: {damaged_db} is damaged: SQLite says 'database disk image is malformed'. "
        f"Check it with: rankscope doctor --db {damaged_db} (or sqlite3 {damaged_db} 'PRAGMA integrity_check')\n"
    )
    assert out.out == ""


def test_main_turns_stray_errors_into_one_line(monkeypatch, capsys):
    """The last-resort handlers: a StoreError, an SQLite error (engine.store.sql.Error)
    or an OSError escaping a command is one line, exit 2."""
    import apsw

    import tui.cli.search as cli
    from engine import StoreError

    for exc, text in (
        (StoreError("/x.db: gone"), "/x.db: gone"),
        (apsw.IOError("disk I/O error"), "SQLite error: disk I/O error"),
        (OSError(28, "No space left on device", "/out.json"), "No space left on device: /out.json"),
    ):

        def boom(*a, exc=exc, **kw):
            raise exc

        monkeypatch.setattr(cli, "search", boom)
        with pytest.raises(SystemExit) as raised:
            main(["search", "x", "--db", str(MODERN)])
        assert raised.value.code == 2
        assert capsys.readouterr().err == f"rankscope: error: {text}\n"


@pytest.mark.parametrize(
    "exc, text",
    [
        (
            TypeError("Argument relevance_level should be positive."),
            "TypeError: Argument relevance_level should be positive.",
        ),
        (KeyError("x"), "KeyError: 'x'"),
        (AssertionError(), "AssertionError"),
        (RuntimeError("two\nlines"), "RuntimeError: two␊lines"),
    ],
)
def test_main_turns_any_unexpected_exception_into_one_line(monkeypatch, capsys, exc, text):
    """The last resort: an exception no rule knows (a bug) is one line
    naming its type and message, no traceback, exit 70 (EX_SOFTWARE);
    it was raised again (a traceback, exit 1)."""
    import tui.cli.search as cli

    def boom(*a, **kw):
        raise exc

    monkeypatch.setattr(cli, "search", boom)
    with pytest.raises(SystemExit) as raised:
        main(["search", "x", "--db", str(MODERN)])
    assert raised.value.code == 70
    out = capsys.readouterr()
    assert (
        out.err == f"rankscope: internal error: {text} (a bug in rankscope; please report it with the command line)\n"
    )
    assert "Traceback" not in out.err + out.out


def test_main_keeps_ctrl_c_quiet(monkeypatch, capsys):
    import tui.cli.search as cli

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "search", interrupted)
    with pytest.raises(SystemExit) as raised:
        main(["search", "x", "--db", str(MODERN)])
    assert raised.value.code == 130 and capsys.readouterr().err == ""


# ─── bad output paths, ports, undecodable queries ───────────────────────


def test_batch_out_must_be_a_writable_file(db, tmp_path, capsys):
    queries = str(PARITY / "stages" / "queries.json")
    err = cli_error(["batch", queries, "--db", str(db), "--out", str(tmp_path / "nodir" / "x.json")], capsys)
    assert err == f"rankscope: error: --out {tmp_path / 'nodir' / 'x.json'}: folder {tmp_path / 'nodir'} does not exist"
    err = cli_error(["batch", queries, "--db", str(db), "--out", str(tmp_path)], capsys)
    assert err == f"rankscope: error: --out {tmp_path} is a folder; give a file name"
    (tmp_path / "file.json").write_text("{}")
    err = cli_error(["batch", queries, "--db", str(db), "--out", str(tmp_path / "file.json" / "x.json")], capsys)
    assert err == (
        f"rankscope: error: --out {tmp_path / 'file.json' / 'x.json'}: {tmp_path / 'file.json'} is not a folder"
    )


def test_serve_on_a_taken_port_is_one_line(capsys):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        err = cli_error(["serve", "--port", str(port)], capsys)
    assert err == f"rankscope: error: cannot serve on 127.0.0.1:{port}: Address already in use"


def test_serve_help_describes_every_option():
    r = runner.invoke(app, ["serve", "--help"], env={"COLUMNS": "200"})
    assert "Address to listen on" in r.output and "TCP port" in r.output
    assert "What each browser tab opens" in r.output


@pytest.mark.parametrize("query", ["quorum \udcff", "\ud800"])
def test_undecodable_query_is_rejected(db, capsys, query):
    """Undecodable argv bytes arrive as lone surrogates (surrogateescape)."""
    err = cli_error(["search", query, "--db", str(db)], capsys)
    pos = query.index(query[-1])
    assert err == (
        f"rankscope: error: query contains an undecodable character U+{ord(query[-1]):04X} at position "
        f"{pos}; is the terminal's encoding UTF-8?"
    )


def test_batch_entry_with_a_lone_surrogate(db, tmp_path, capsys):
    queries = tmp_path / "q.json"
    queries.write_text('[{"id": "bad", "query": "quorum \\ud800 x"}]', "utf-8")
    err = cli_error(["batch", str(queries), "--db", str(db)], capsys)
    assert f"{queries}: the string at $[0].query holds a lone surrogate (\\ud800)" in err  # the one reader refuses it


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"query": "quorum", "sessions": "sess-docs"}, "'sessions' must be a list of session id strings"),
        ({"id": "q1", "query": "quorum", "limt": 5}, "query #1 (q1): unknown key 'limt'; allowed: id, query, why,"),
    ],
)
@pytest.mark.parametrize("command", ["batch", "compare"])
def test_bad_query_file_entries(db, tmp_path, capsys, entry, message, command):
    queries = tmp_path / "q.json"
    queries.write_text(json.dumps([entry]))
    args = ["batch", str(queries)] if command == "batch" else ["compare", "--queries", str(queries), "--b", "key=rowid"]
    err = cli_error([*args, "--db", str(db)], capsys)
    assert message in err


def test_readme_lists_the_input_limits():
    """The README's deviations paragraph names the limits SearchParams enforces."""
    from engine.pipeline.params import MAX_LIMIT, MAX_QUERY_CHARS

    from .conftest import REPO

    text = " ".join((REPO / "README.md").read_text("utf-8").split())
    para = text[text.index("Deliberate deviations") :]
    para = para[: para.index("##")]
    assert f"`limit` over {MAX_LIMIT:,}" in para and f"query over {MAX_QUERY_CHARS:,} characters" in para
    assert "lone surrogate" in para


# ─── help and version ────────────────────────────────────────────────────


def test_top_help_names_the_browser_and_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "rankscope [PATH] [--stores]" in out and "--version" in out


def test_version(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"rankscope {version('rankscope')}\n"


def _help_texts():
    import typer.main

    group = typer.main.get_command(app)
    yield "rankscope", group.help or ""
    assert len(group.commands) >= 9

    def walk(prefix, commands):
        for name, cmd in commands.items():
            yield f"{prefix}{name}", cmd.help or ""
            for param in cmd.params:
                yield f"{prefix}{name} {param.name}", getattr(param, "help", None) or ""
            # a group's subcommands too: `qrels query-file` broke mid-sentence, unchecked
            yield from walk(f"{prefix}{name} ", getattr(cmd, "commands", {}))

    yield from walk("", group.commands)


def test_help_paragraphs_have_no_hard_line_breaks():
    """Typer keeps single line breaks of help text, so a docstring wrapped for
    the source would show as a sentence broken mid-way ("the stage where
    it⏎left"): every paragraph must be one line."""
    for name, text in _help_texts():
        for paragraph in text.split("\n\n"):
            assert "\n" not in paragraph, (name, paragraph)


def test_rendered_help_does_not_break_sentences():
    for name in ("why", "doctor", "compare"):
        r = runner.invoke(app, [name, "--help"], env={"COLUMNS": "200"})
        lines = [line.strip() for line in r.output.splitlines()]
        assert not any(line.endswith((" it", " Untitled", " so")) for line in lines), (name, r.output)
    r = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert "the stage where it left the pipeline" in r.output
    qrels = runner.invoke(app, ["qrels", "--help"], env={"COLUMNS": "200"}).output
    assert "(query-file.txt in its data folder): the browser grades a query typed with the text of one of its" in qrels
    assert "oversized chunks, Untitled titles" in r.output


# ─── queries that begin with '-', plain metavars ────────────────────────


@pytest.mark.parametrize("command", ["search", "compare", "why"])
def test_dash_query_is_accepted_after_double_dash_and_the_error_says_so(db, command):
    """``rankscope search --save-dev`` reads an option; the error names the
    fix, the ``--help`` says it, and after ``--`` the query runs."""
    extra = {"compare": ["--b", "key=rowid"], "why": ["--rowid", "1"]}.get(command, [])
    r = runner.invoke(app, [command, "--save-dev", "--db", str(db), *extra])
    assert r.exit_code == 2
    text = " ".join(r.output.replace("│", " ").split())
    assert "No such option: --save-dev. A query that begins with '-' goes after '--'" in text
    assert f"rankscope {command} --db DB -- --save-dev" in text
    helptext = " ".join(
        runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}).output.replace("│", " ").split()
    )
    assert "A query that begins with '-' goes after '--'" in helptext
    ok = runner.invoke(app, [command, "--db", str(db), *extra, "--json", "--", "--save-dev"])
    assert ok.exit_code == 0, ok.output
    assert "--save-dev" in ok.output


def test_unknown_option_of_a_command_without_a_query_gets_no_query_hint(db):
    r = runner.invoke(app, ["doctor", "--db", str(db), "--bogus"])
    assert r.exit_code == 2
    assert "No such option: --bogus" in r.output and "goes after" not in r.output


def test_help_shows_no_python_type_names():
    """Flags show no metavar (Typer printed ``<bool>``), repeatable options
    their element type (not ``<list[str]>``), at the top and in every command."""
    from tui.cli.main import COMMANDS, GROUPS

    subs = [
        [g, info.name or info.callback.__name__, "--help"] for g, app_ in GROUPS for info in app_.registered_commands
    ]
    for args in [["--help"], *[[name, "--help"] for name, _ in COMMANDS], *[[g, "--help"] for g, _ in GROUPS], *subs]:
        out = runner.invoke(app, args, env={"COLUMNS": "200"}).output
        assert "<bool>" not in out and "<list[" not in out, args


def test_compare_help_spec_example_is_not_cut():
    """The variant spec example fits its column at 80 columns (it was cut at
    ``rrf_k=…``), whole whatever the list of keys before or after it."""
    out = runner.invoke(app, ["compare", "--help"], env={"COLUMNS": "80"}).output
    assert "…" not in out
    assert "e.g. key=rowid,rrf_k=10 (keys:" in " ".join(out.replace("│", " ").split())


@pytest.mark.parametrize("command, option, after", [("why", "--variant", "--"), ("eval", "--a", "--b <str>")])
def test_variant_help_names_no_other_option(command, option, after):
    """Issue 24: ``why --variant`` and ``eval --a`` said "Example: --b
    key=rowid" (the compare command's option). Each variant option's help
    gives its example as a value only."""
    out = runner.invoke(app, [command, "--help"], env={"COLUMNS": "400"}).output
    text = " ".join(out.replace("│", " ").split())
    own = text.split(f" {option} ", 1)[1].split(f" {after}", 1)[0]
    assert "e.g. key=rowid,rrf_k=10" in own
    assert "--b key" not in own and "Example" not in own, own  # "the reference of --b" is eval's own sense


# ─── search output at 80 and 120 columns ────────────────────────────────


def _names(path: str) -> list[str]:
    """A path's names, each with its slash: ``docs/``, ``configuration.md``."""
    import re

    return re.findall(r"[^/]*/|[^/]+", path)


@pytest.mark.parametrize("columns", ["80", "120"])
def test_search_output_keeps_paths_whole_and_explains_every_fused_row(sample_db, columns):
    """Paths wrap only after a slash (``docs/`` over ``configuration.md``,
    never ``docs/configurati`` over ``on.md``); the fusion table names each
    candidate's source and says what became of it: removed by the session
    filter (with the session), merged (``merged row 121``, one row), or its
    place in the answer."""
    args = ["search", "retention", "--db", str(sample_db), "--session", "sess-docs"]
    data = json.loads(runner.invoke(app, args + ["--json"]).output)
    r = runner.invoke(app, args, env={"COLUMNS": columns})
    assert r.exit_code == 0, r.output
    out = r.output
    sources = {f["source"] for f in data["final"]} | {c["source"] for c in data["fused"][:10]}
    assert len(sources) >= 8
    cells = [cell.strip() for line in out.splitlines() for cell in line.split("│")]
    for source in sources:
        for name in _names(source):  # every name whole in one cell line (or the whole path)
            assert any(name in cell for cell in cells), (source, name)
    fusion = out[out.index("Fusion (RRF): top 10") :]
    header = fusion.splitlines()[2]
    assert ("source" in header.split("┃")[3]) if columns == "120" else ("title / source" in header)
    assert "merged rows 121" not in out
    notes: list[str] = []  # the note column, row by row (a row's cell spans several lines)
    for line in fusion.splitlines():
        cells = line.split("│")[1:-1]
        if cells:
            if cells[0].strip():
                notes.append("")
            notes[-1] = (notes[-1] + " " + cells[-1].strip()).strip()
    assert len(notes) == 10 and all(notes), notes
    assert notes[0].startswith("merged row 121; removed by the session filter")
    assert sum(n.endswith("removed by the session filter (session 'sess-ops')") for n in notes) >= 4
    assert [n for n in notes if n.startswith("in the answer")] == [f"in the answer at #{k}" for k in (1, 2, 3)]


# ─── a --session no chunk has ───────────────────────────────────────────


def _unknown_session_warning(option: str, session: str, count: int, listed: str) -> str:
    return (
        f"rankscope: warning: {option} {session!r}: no chunk in this store has this session id (it lets no chunk "
        f"through); its {count} sessions, closest first: {listed}\n"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["search", "cache", "--session", "nosuch", "--json"],
        ["why", "cache", "--rowid", "3", "--session", "nosuch", "--json"],
        ["compare", "cache", "--b", "key=rowid", "--session", "nosuch", "--json"],
        ["ctx-search", "cache", "--allow-session", "nosuch", "--json"],
    ],
    ids=lambda a: a[0],
)
def test_an_unknown_session_is_a_warning_and_the_command_still_runs(db, args):
    """A session id no chunk has is a valid filter (it lets no chunk
    through): the command runs, exit 0, and warns on stderr, naming the id
    and the store's sessions; the answer is the engine's for that filter."""
    from engine import SearchParams, Store, search

    r = runner.invoke(app, [*args, "--db", str(db)])
    assert r.exit_code == 0, r.output
    option = "--allow-session" if args[0] == "ctx-search" else "--session"
    assert r.stderr == _unknown_session_warning(option, "nosuch", 3, "sess-A, sess-B, sess-C")
    json.loads(r.stdout)
    if args[0] == "search":
        with Store.open_readonly(db) as store:
            trace = search(store, SearchParams("cache", sessions=("nosuch",)))
        got = json.loads(r.stdout)
        assert got["layer"] == trace.layer
        assert [(f["source"], f["title"]) for f in got["final"]] == [
            (f.candidate.source, f.candidate.title) for f in trace.final
        ]


@pytest.mark.parametrize(
    "args",
    [
        ["batch", "{q}"],
        ["compare", "--queries", "{q}", "--b", "key=rowid", "--json"],
        ["snapshot", "save", "{q}", "-o", "{out}"],
        ["eval", "{q}", "--ungraded", "--json"],
    ],
    ids=lambda a: " ".join(a[:2]) if a[0] == "snapshot" else a[0],
)
def test_a_query_files_unknown_session_is_a_warning_as_with_session(db, tmp_path, args):
    """Every command that runs a query file warns about an entry's session id
    no chunk has, once, as ``--session`` does, and still runs (exit 0)."""
    q = tmp_path / "q.json"
    q.write_text(json.dumps([{"id": "1", "query": "cache", "sessions": ["nosuch"]}, {"id": "2", "query": "quorum"}]))
    words = [a.format(q=q, out=tmp_path / "snap.json") for a in args]
    r = runner.invoke(app, [*words, "--db", str(db)])
    assert r.exit_code == 0, r.output
    assert r.stderr == _unknown_session_warning('query file "sessions"', "nosuch", 3, "sess-A, sess-B, sess-C")


def test_known_sessions_and_unattributed_get_no_warning_and_each_unknown_one_line(db):
    r = runner.invoke(app, ["search", "cache", "--db", str(db), "--session", "sess-A", "--session", "", "--json"])
    assert r.exit_code == 0 and r.stderr == ""
    r = runner.invoke(
        app,
        ["search", "cache", "--db", str(db), *("--session", "sess-a", "--session", "sess-B", "--session", "sess-a")],
    )
    assert r.exit_code == 0 and r.stderr == _unknown_session_warning("--session", "sess-a", 3, "sess-A, sess-B, sess-C")


def test_an_unknown_session_names_the_six_closest_of_many(tmp_path):
    """Nine sessions: the warning names six, closest first (difflib's ratio),
    and counts the rest."""
    from engine import Store

    sessions = ["build-2024", "build-2025", "docs", "ops", "ops-night", "review", "release", "test", "zeta"]
    path = tmp_path / "many.db"
    with Store.create(path) as store:
        for i, sid in enumerate(sessions):
            store.index_text(f"d{i}.md", f"# Doc {i}\nsome words about topic {i}\n", "markdown", session_id=sid)
    r = runner.invoke(app, ["search", "words", "--db", str(path), "--session", "buidl-2025"])
    assert r.exit_code == 0, r.output
    line = r.stderr.splitlines()
    assert len(line) == 1 and line[0].startswith("rankscope: warning: --session 'buidl-2025': no chunk")
    listed = line[0].split("closest first: ")[1]
    names, more = listed.split(" and ")
    assert names.split(", ")[:2] == ["build-2025", "build-2024"] and len(names.split(", ")) == 6
    assert more == "3 more" and "its 9 sessions" in line[0]


@pytest.mark.parametrize("words", [["search", "quorum"], ["sessions"]], ids=lambda w: w[0])
def test_a_closed_standard_output_is_one_line(words, db):
    """Started with stdout closed (``>&-``), a command said nothing and
    exited 0: its answer vanished. It now says why, exit 2."""
    import shlex
    import subprocess
    import sys

    argv = [sys.executable, "-m", "tui.cli", *words, "--db", str(db)]
    r = subprocess.run(["bash", "-c", " ".join(map(shlex.quote, argv)) + " >&-"], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert r.stderr == (
        "rankscope: error: standard output is closed: the command's output has nowhere to go "
        "(redirect it to a file or /dev/null)\n"
    )
