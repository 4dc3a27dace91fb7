"""engine.pipeline.stages.session_filter.unknown_sessions: the allow-set ids no chunk has,
each with the store's closest ids (the data of the CLI's warning)."""

from __future__ import annotations

from engine.pipeline.stages.session_filter import CLOSEST_SHOWN, UnknownSession, unknown_sessions


def test_only_ids_the_store_lacks_in_the_order_given_each_once():
    known = ["sess-A", "sess-B", "", "sess-C"]
    assert unknown_sessions(["sess-A", "", "sess-B"], known) == ()
    found = unknown_sessions(["zz", "sess-A", "sess-a", "zz"], known)
    assert [u.session for u in found] == ["zz", "sess-a"]
    assert all(u.store_session_count == 3 for u in found)  # "" (unattributed) is not a session id


def test_closest_first_ties_in_id_order_at_most_shown():
    known = [f"s{i}" for i in range(10)] + ["release-2025", "release-2024", "relase"]
    (u,) = unknown_sessions(["release-2205"], known)
    assert u.closest[:2] == ("release-2025", "release-2024")
    assert len(u.closest) == CLOSEST_SHOWN and u.store_session_count == 13
    (tied,) = unknown_sessions(["x"], ["c", "a", "b"])
    assert tied == UnknownSession("x", ("a", "b", "c"), 3)  # no id is closer: id order
    assert unknown_sessions(["x"], [], shown=3) == (UnknownSession("x", (), 0),)
    assert unknown_sessions(["x"], ["a", "b"], shown=1)[0].closest == ("a",)
