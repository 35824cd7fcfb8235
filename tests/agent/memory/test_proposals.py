"""Reading the model's proposal: items that cannot be applied are left out, each source's
author found, and the changes applied in order."""

from __future__ import annotations

import fcntl
import json
import os
import threading
from dataclasses import replace

import pytest

from agent.memory.proposal_store import JOURNAL, Store
from agent.memory.proposals import (
    APPLIED,
    PENDING,
    REFUSED,
    Item,
    Proposal,
    applied,
    diff,
    digest,
    enclosing,
    origins,
    parse,
    with_status,
)
from agent.workspace.audience import untrusted
from gateway.contract.errors import ToolError
from tests.locks import until_waiting, watched

MEMORY = "# Memory\n\n- Anna lives in Porto.\n- Likes tea.\n- Likes tea a lot.\n"
LOG = "# 2026-03-12\n\n## 10:00\n\nAnna moved.\n\n" + untrusted("the chat g", "Bob: durian") + "\n"


def answer(*changes: dict) -> str:
    return "Here you go:\n" + json.dumps({"changes": list(changes)}) + "\nDone."


def test_items_that_do_not_fit_are_left_out():
    items = parse(
        answer(
            {"op": "add", "text": "- new", "sources": ["memory/d.md:5"]},
            {"op": "add", "old": "- Likes tea.", "text": "x"},  # add takes no passage
            {"op": "drop", "old": "- Likes coffee."},  # not in MEMORY.md
            {"op": "update", "old": "- Likes tea", "text": "x"},  # found twice
            {"op": "drop", "old": "- Likes tea.", "text": "x"},  # drop takes no text
            {"op": "rewrite", "text": "everything"},
            {"op": "merge", "old": ["- Likes tea.", "- Likes tea a lot."], "text": "- Tea."},
        ),
        MEMORY,
        {"memory/d.md": "# 2026-03-12\n\n## 10:00\n\nAnna moved.\n"},
        {"memory/d.md": 1},
    )
    assert [i.op for i in items] == ["add", "merge"]
    assert applied(MEMORY, items) == "# Memory\n\n- Anna lives in Porto.\n- Tea.\n\n- new\n"


def test_sources_in_quoted_text_name_their_author_and_stay_quoted():
    log = {"memory/d.md": LOG}
    assert origins(LOG) == [(7, 9, "the chat g")]
    [own, theirs, unnamed] = parse(
        answer(
            {"op": "add", "text": "- Anna moved.", "sources": ["memory/d.md:5"]},
            {"op": "add", "text": "- Durian.", "sources": ["memory/d.md:8"]},
            {"op": "add", "text": "- Unknown.", "sources": []},
        ),
        MEMORY,
        log,
        {"memory/d.md": 1},
    )
    assert (own.origin, theirs.origin, unnamed.origin) == ("", "the chat g", "an unnamed source")
    text = applied(MEMORY, [theirs])
    assert '<untrusted source="the chat g">\n- Durian.\n</untrusted>' in text
    # A log read from line 5 on: its line numbers go on counting from there.
    [later] = parse(
        answer({"op": "add", "text": "- D.", "sources": ["memory/d.md:8"]}),
        MEMORY,
        {"memory/d.md": LOG.split("\n", 4)[4]},
        {"memory/d.md": 5},
    )
    assert later.origin == "the chat g"


# Each kind of change that brings new text: a fact drawn from a group's words stays theirs
# whether it is added, replaces a passage, or merges two.
KINDS = {
    "add": {"op": "add", "text": "- D."},
    "update": {"op": "update", "old": "- Anna lives in Porto.", "text": "- D."},
    "merge": {"op": "merge", "old": ["- Likes tea.", "- Likes tea a lot."], "text": "- D."},
}


@pytest.mark.parametrize(("line", "origin"), [(6, ""), (7, "the chat g"), (8, "the chat g"),
                                             (9, "the chat g")])  # fmt: skip
@pytest.mark.parametrize("read_from", [1, 5])
@pytest.mark.parametrize("kind", list(KINDS))
def test_each_line_of_a_quote_is_theirs_and_the_line_before_is_not(line, origin, read_from, kind):
    """The quote opens on line 7 and closes on 9, whether the log was read from its start or
    from line 5 on: a source one line off either way would name the wrong author. Applied,
    the group's fact is quoted under their name, the owner's is not."""
    text = LOG if read_from == 1 else LOG.split("\n", read_from - 1)[read_from - 1]
    [item] = parse(
        answer({**KINDS[kind], "reason": "r", "sources": [f"memory/d.md:{line}"]}),
        MEMORY,
        {"memory/d.md": text},
        {"memory/d.md": read_from},
    )
    assert item.origin == origin
    after = applied(MEMORY, [item])
    quoted = '<untrusted source="the chat g">\n- D.\n</untrusted>'
    assert (quoted in after) == bool(origin) and after.count("- D.") == 1
    assert after.count("<untrusted") == (1 if origin else 0)


def test_an_answer_that_is_not_a_proposal_is_refused():
    with pytest.raises(ToolError):
        parse("I think MEMORY.md is fine.", MEMORY, {}, {})
    with pytest.raises(ToolError):
        parse('{"nothing": 1}', MEMORY, {}, {})
    assert parse('{"changes": []}', MEMORY, {}, {}) == []


def test_a_source_that_names_no_line_read_is_an_unnamed_one():
    """Deny by default: when what was read quotes anyone else, a source that names a log not
    read, or no line number, cannot be traced, and its item is quoted as from "an unnamed
    source"; with nothing quoted in what was read, the same item is the owner's."""
    for sources in (["memory/other.md:8"], ["memory/d.md:eight"], ["memory/d.md"], []):
        change = {"op": "add", "text": "- D.", "sources": sources}
        [item] = parse(answer(change), MEMORY, {"memory/d.md": LOG}, {"memory/d.md": 1})
        assert item.origin == "an unnamed source", sources
        own = {"memory/d.md": "# 2026-03-12\n\n## 10:00\n\nAnna moved.\n"}
        [item] = parse(answer(change), MEMORY, own, {"memory/d.md": 1})
        assert item.origin == "", sources


QUOTED_MEMORY = MEMORY + untrusted("the chat g", "- Bob: the owner loves durian.") + "\n"
QUOTED_BLOCK = untrusted("the chat g", "- Bob: the owner loves durian.")


def test_a_quoted_passage_of_memory_md_rewritten_stays_quoted():
    """An update of a passage that holds a quote stays quoted: under the name its sources
    give when they are quoted, else as "text quoted in MEMORY.md"."""
    own = {"memory/d.md": "# 2026-03-12\n\n## 10:00\n\nAnna moved.\n"}
    change = {"op": "update", "old": QUOTED_BLOCK, "text": "- Loves durian, fresh.",
              "reason": "r", "sources": ["memory/d.md:5"]}  # fmt: skip
    [item] = parse(answer(change), QUOTED_MEMORY, own, {"memory/d.md": 1})
    assert item.origin == "text quoted in MEMORY.md"
    after = applied(QUOTED_MEMORY, [item])
    assert '<untrusted source="text quoted in MEMORY.md">\n- Loves durian, fresh.' in after
    [item] = parse(
        answer({**change, "sources": ["memory/d.md:8"]}),
        QUOTED_MEMORY,
        {"memory/d.md": LOG},
        {"memory/d.md": 1},
    )
    assert item.origin == "the chat g"


def test_a_note_placed_by_the_model_keeps_its_quote():
    """A note given its section by the model itself: added from a group's line, or moved out
    of a quoted block, it stays quoted as theirs; a passage inside a quote that is rewritten
    in place is quoted once, by the block around it."""
    sectioned = "# Memory\n\n## People\n\n- Anna lives in Porto.\n\n" + QUOTED_BLOCK + "\n"
    add = {"op": "add", "text": "- Durian.", "section": "Preferences", "reason": "r",
           "sources": ["memory/d.md:8"]}  # fmt: skip
    place = {"op": "place", "old": "- Bob: the owner loves durian.", "section": "People",
             "reason": "r"}  # fmt: skip
    update = {"op": "update", "old": "- Bob: the owner loves durian.", "text": "- Bob: durian!",
              "reason": "r", "sources": ["memory/d.md:5"]}  # fmt: skip
    added, moved, rewritten = parse(
        answer(add, place, update), sectioned, {"memory/d.md": LOG}, {"memory/d.md": 1}
    )
    assert (added.section, added.origin) == ("Preferences and feedback", "the chat g")
    assert (moved.section, moved.origin) == ("People", "the chat g")
    assert rewritten.origin == ""  # the block around it keeps it quoted
    after = applied(sectioned, [added])
    assert '## Preferences and feedback\n\n<untrusted source="the chat g">\n- Durian.' in after
    after = applied(sectioned, [moved])
    people = after.split("## People\n")[1]
    assert '<untrusted source="the chat g">\n- Bob: the owner loves durian.' in people
    after = applied(sectioned, [rewritten])
    assert after.count("<untrusted") == 1 and "- Bob: durian!\n</untrusted>" in after


@pytest.mark.parametrize(
    ("passage", "source"),
    [
        ("- b", "the chat g"),  # a line inside
        ("- a\n- b", "the chat g"),  # lines inside
        ('<untrusted source="the chat g">\n- a', ""),  # from its opening line
        ("- b\n</untrusted>", ""),  # to its closing line
        ('<untrusted source="the chat g">\n- a\n- b\n</untrusted>', ""),  # the whole block
        ("- c", ""),  # after it
    ],
)
@pytest.mark.parametrize("lead", ["", "\n"])
def test_a_passage_is_inside_a_quote_only_strictly_between_its_tag_lines(passage, source, lead):
    """Only a passage strictly inside a quoted block is quoted anew when moved out of it; one
    that carries the quote's own opening or end is not quoted twice. The same with a blank
    line before everything."""
    current = lead + '<untrusted source="the chat g">\n- a\n- b\n</untrusted>\n- c\n'
    assert enclosing(current, passage) == source


def test_items_that_are_no_change_are_left_out_without_failing_the_rest():
    items = parse(
        answer(
            "not an object",
            {"op": "rewrite", "old": "- Likes tea.", "text": "x"},  # an op not known
            {"op": "place", "old": "- Likes tea."},  # moved where?
            {"op": "place", "old": ["- Likes tea.", "- Likes tea a lot."], "section": "people"},
            {"op": "place", "old": "- Likes tea.", "section": "nowhere"},
            {"op": "drop", "old": "- Likes tea.", "reason": "stale"},
        ),
        MEMORY,
        {},
        {},
    )
    assert [(i.op, i.reason) for i in items] == [("drop", "stale")]


def test_an_answer_with_words_right_after_its_json_is_read():
    assert parse('{"changes": []}. That is all.', MEMORY, {}, {}) == []
    with pytest.raises(ToolError, match="not JSON"):
        parse('{"changes": [oops]}', MEMORY, {}, {})


def test_a_change_that_moves_nothing_leaves_the_rest_of_the_file_as_it_is():
    """Only a move into sections tidies the file (headings left empty by it go); an update
    keeps the owner's own empty heading."""
    text = "# Memory\n\n## Someday\n\n## People\n\n- Anna lives in Porto.\n"
    [item] = parse(
        answer({"op": "update", "old": "- Anna lives in Porto.", "text": "- Anna: Lisbon."}),
        text,
        {},
        {},
    )
    assert applied(text, [item]) == text.replace("- Anna lives in Porto.", "- Anna: Lisbon.")


def test_two_changes_of_the_same_passage_cannot_both_be_applied():
    items = parse(
        answer(
            {"op": "update", "old": "- Likes tea.", "text": "- Likes green tea."},
            {"op": "drop", "old": "- Likes tea."},
        ),
        MEMORY,
        {},
        {},
    )
    assert len(items) == 2
    with pytest.raises(ToolError, match="no longer there as it was"):
        applied(MEMORY, items)
    assert "- Likes green tea.\n- Likes tea a lot." in applied(MEMORY, items[:1])


def test_each_change_is_described_with_what_it_has():
    add = Item("add", "- new\n  more", (), "why", ("memory/d.md:5",), "the chat g",
               section="People")  # fmt: skip
    drop = Item("drop", "", ("- old",), "stale", ())
    assert add.describe(1) == (
        "1. ADD: why\n   + - new\n       more\n   → People\n   from memory/d.md:5\n"
        "   ⚠ written by the chat g, not by you"
    )
    assert drop.describe(2) == "2. DROP: stale\n   - - old"
    assert add.markdown(1) == (
        "**1. ADD**: why (from memory/d.md:5)\n→ People\n⚠ written by the chat g, not by you\n"
        "```diff\n+ - new\n+   more\n```"
    )
    assert drop.markdown(2) == "**2. DROP**: stale\n```diff\n- - old\n```"
    # A fence one longer than the longest run of backticks inside: it cannot end early.
    code = Item("add", "- run: ````x````", (), "r", ())
    assert code.markdown(1).endswith("\n`````diff\n+ - run: ````x````\n`````")


def test_a_proposal_is_numbered_from_one_and_plain_unless_asked_for_markdown():
    items = (Item("add", "- a", (), "first", ()), Item("add", "- b", (), "second", ()))
    proposal = Proposal("p1", "2026-03-12T22:00:00+01:00", digest(MEMORY), items, {})
    assert "\n\n1. ADD: first\n   + - a\n\n2. ADD: second" in proposal.summary()
    assert "**2. ADD**: second" in proposal.summary(markdown=True)
    done = with_status(proposal, [1], APPLIED)
    assert "first" not in done.summary() and "2. ADD: second" in done.summary()


def test_a_diff_shows_only_what_changes_even_without_a_last_newline():
    shown = diff("# Memory\n- a\n- b", "# Memory\n- a\n- c")
    assert shown.endswith("\n-- b\n+- c\n")
    assert " # Memory\n" in shown and " - a\n" in shown  # unchanged lines: context only


def test_the_store_makes_its_folder_keeps_the_last_fifty_and_sets_a_damaged_file_aside(
    tmp_path,
):
    store = Store(tmp_path / "state" / "new" / "proposals.json")
    for n in range(51):
        store.add(Proposal(f"p{n}", "2026-03-12T22:00", "x", (), {}), {"memory/d.md": n})
    assert [p.id for p in store.all()] == [f"p{n}" for n in range(1, 51)]
    assert store.marks() == {"memory/d.md": 50}
    with pytest.raises(ToolError, match="There is no memory proposal p0"):
        store.get("p0")
    store.path.write_text("{damaged")
    assert store.all() == [] and store.marks() == {}
    assert (store.path.parent / "proposals.json.unreadable").read_text() == "{damaged"
    store.set_marks({"memory/d.md": 3})
    assert store.marks() == {"memory/d.md": 3}


def test_a_mark_in_the_part_of_a_log_read_moves_where_it_was_read_up_to(tmp_path):
    store = Store(tmp_path / "proposals.json")
    before = "# d\n\n## 09:00\n\nA.\n\n## 10:00\n\nB.\n"
    after = before.replace("A.\n\n", "A.\n(Out of date: x.)\n")  # in the blank line after A.
    blank = before.index("A.\n") + 3
    store.set_marks({"memory/d.md": len(before), "memory/e.md": blank})
    store.shifted("memory/d.md", before, after)  # read past it: moves with the bytes
    store.shifted("memory/f.md", before, after)  # never read: nothing to move
    assert store.marks() == {"memory/d.md": len(after), "memory/e.md": blank}
    # Read up to the blank line it takes, or a log's end where it is added (a log written by
    # hand, no blank line after its last entry): the mark ends an entry read, so it moves too,
    # and the next run does not read it as a new line.
    store.shifted("memory/e.md", before, after)
    at_the_end = before + "(Out of date: y.)\n"
    store.set_marks({"memory/g.md": len(before)})
    store.shifted("memory/g.md", before, at_the_end)
    assert store.marks() == {"memory/g.md": len(at_the_end)}
    store.set_marks({"memory/e.md": blank})
    store.shifted("memory/e.md", before, after)
    assert store.marks() == {"memory/e.md": blank + len(after) - len(before)}


def test_a_run_stores_its_places_moved_by_the_marks_written_while_it_was_out(tmp_path):
    gateway = Store(tmp_path / "proposals.json")
    terminal = Store(tmp_path / "proposals.json")  # ``corvid memory apply``, another process
    before = "# d\n\n## 09:00\n\nA.\n\n## 10:00\n\nB.\n"
    after = before.replace("A.\n\n", "A.\n(Out of date: x.)\n")
    heading = before.index("## 09:00")  # the entry marked is not read yet
    gateway.set_marks({"memory/d.md": heading})
    # Two runs out at once: the first read all of d, the second (read later) up to A's heading.
    (_, first), (_, second) = gateway.places(), gateway.places()
    terminal.shifted("memory/d.md", before, after)  # in the part the first read
    later = after + "## 11:00\n\nC.\n"  # an entry written after the runs read the log
    gateway.shifted("memory/d.md", later, later + "(Out of date: z.)\n")  # after: moves none
    assert gateway.places() == ({"memory/d.md": heading}, 2)
    gateway.read_up_to({"memory/d.md": heading, "memory/e.md": 9}, second)
    assert gateway.marks() == {"memory/d.md": heading, "memory/e.md": 9}  # not up to it
    ten = before.index("## 10:00")  # where the first run's part began: after the mark
    kept = gateway.add(
        Proposal("p1", "2026-03-12T22:00", "x", (), {"memory/d.md": ten}),
        {"memory/d.md": len(before)},
        first,
    )
    assert gateway.marks() == {"memory/d.md": len(after), "memory/e.md": 9}  # read past it
    moved = {"memory/d.md": after.index("## 10:00")}
    assert kept.marks_before == moved == gateway.get("p1").marks_before
    # A run that read the log after the mark stores its place as it read it.
    _, since = terminal.places()
    terminal.read_up_to({"memory/d.md": len(later)}, since)
    assert terminal.marks()["memory/d.md"] == len(later)


def test_a_run_out_longer_than_the_marks_kept_says_its_place_may_be_off(tmp_path, caplog):
    store = Store(tmp_path / "state" / "proposals.json")
    _, seen = store.places()
    for _ in range(JOURNAL):
        store.shifted("memory/e.md", "a\n", "a\nb\n")
    store.read_up_to({"memory/d.md": 5}, seen)  # every one since is kept
    assert "than are kept" not in caplog.text
    store.shifted("memory/e.md", "a\n", "a\nb\n")
    assert store.places() == ({"memory/d.md": 5}, JOURNAL + 1)
    assert len(json.loads(store.path.read_text())["shifts"]) == JOURNAL
    store.read_up_to({"memory/d.md": 5}, seen)
    assert store.marks() == {"memory/d.md": 5}
    assert "more marks since memory/d.md were read than are kept" in caplog.text
    assert (store.path.parent / "proposals.json.lock").stat().st_mode & 0o777 == 0o600


def test_marks_kept_that_a_hand_edit_spoilt_are_left_out(tmp_path, caplog):
    store = Store(tmp_path / "proposals.json")
    store.path.write_text(json.dumps({"marks": {"memory/d.md": 4}, "shifted": "many"}))
    assert store.places() == ({"memory/d.md": 4}, 0)
    # Five marks written, the last three kept, the second of those spoilt by a hand edit.
    spoilt = [["memory/d.md", 1, 2, 10], ["memory/d.md", "x", 3, 1], ["memory/d.md", 2, 2, 100]]
    store.path.write_text(json.dumps({"marks": {"memory/d.md": 4}, "shifts": spoilt, "shifted": 5}))
    store.read_up_to({"memory/d.md": 4}, 3)  # read after the third
    assert store.marks() == {"memory/d.md": 104}  # moved by the fifth alone
    for junk in ("junk", ["memory/d.md", 1, 2]):
        store.path.write_text(
            json.dumps({"shifts": [junk, ["memory/d.md", 2, 2, 10]], "shifted": 2})
        )
        store.read_up_to({"memory/d.md": 4}, 0)
        assert store.marks() == {"memory/d.md": 14}
    assert "than are kept" not in caplog.text
    store.path.write_text(json.dumps({"shifts": "spoilt", "shifted": 3}))  # none kept now
    store.read_up_to({"memory/d.md": 4}, 2)
    assert store.marks() == {"memory/d.md": 4}
    assert "more marks since memory/d.md were read than are kept" in caplog.text


def test_a_mark_moves_where_a_pending_proposal_reads_again_from_and_a_run_stores_its_own_logs(
    tmp_path,
):
    store = Store(tmp_path / "proposals.json")
    before = "# d\n\n## 09:00\n\nA.\n\n## 10:00\n\nB.\n"
    after = before.replace("A.\n\n", "A.\n(Out of date: x.)\n")
    waiting = Proposal("p1", "2026-03-12T22:00", "x", (), {"memory/d.md": len(before)})
    store.add(waiting, {"memory/d.md": len(before) + 9})
    store.add(replace(waiting, id="p2", status=APPLIED), {})
    store.shifted("memory/d.md", before, after)
    # A refusal of the pending one reads again from where its part began, as it is now.
    p1, p2 = store.all()
    assert p1.marks_before == {"memory/d.md": len(after)}
    assert p2.marks_before == {"memory/d.md": len(before)}  # answered: never read again
    assert store.marks() == {"memory/d.md": len(after) + 9}
    # A run stores where it read its own logs, and leaves the others' marks as they are now.
    store.add(replace(waiting, id="p3"), {"memory/e.md": 5})
    store.read_up_to({"memory/f.md": 7})
    assert store.marks() == {"memory/d.md": len(after) + 9, "memory/e.md": 5, "memory/f.md": 7}
    # A mark that is not a number (a file edited by hand) is left alone, and so is the mark.
    store.set_marks({"memory/d.md": "12"})
    store.shifted("memory/d.md", before, after)
    assert json.loads(store.path.read_text())["marks"] == {"memory/d.md": "12"}


def test_the_store_is_changed_by_one_process_at_a_time(tmp_path, monkeypatch):
    store, waits = Store(tmp_path / "proposals.json"), watched(monkeypatch)
    first = Proposal("p1", "2026-03-12T22:00", "x", (), {})
    store.add(first, {"memory/d.md": 3})
    lock = os.open(tmp_path / "proposals.json.lock", os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX)  # the terminal's ``corvid memory apply``, mid-change
    try:
        adding = threading.Thread(target=store.add, args=(replace(first, id="p2"), {}))
        adding.start()
        until_waiting(waits, adding)
        # The terminal applies p1 (status and all), then lets go.
        data = json.loads(store.path.read_text())
        data["proposals"][0]["status"] = APPLIED
        store.path.write_text(json.dumps(data))
    finally:
        os.close(lock)
    adding.join(timeout=10)
    assert [(p.id, p.status) for p in store.all()] == [("p1", APPLIED), ("p2", PENDING)]


def test_an_answered_proposal_keeps_where_its_part_began_as_marks_since_moved_it(tmp_path):
    store = Store(tmp_path / "proposals.json")
    before = "# d\n\n## 09:00\n\nA.\n\n## 10:00\n\nB.\n"
    after = before.replace("A.\n\n", "A.\n(Out of date: x.)\n")
    ten = before.index("## 10:00")
    loaded = Proposal("p1", "2026-03-12T22:00", "x", (), {"memory/d.md": ten, "memory/e.md": 3})
    store.add(loaded, {"memory/d.md": len(before), "memory/e.md": 9})
    store.shifted("memory/d.md", before, after)  # one of its own marks, applied first
    store.put(replace(loaded, status=REFUSED), reread=True)  # then its edit found stale
    moved = {"memory/d.md": after.index("## 10:00"), "memory/e.md": 3}
    assert store.get("p1").marks_before == moved and store.get("p1").status == REFUSED
    assert store.marks() == moved  # read again from where its part began, as it is now
    store.set_marks({"memory/d.md": "by hand", "memory/e.md": 1})
    store.put(replace(loaded, status=REFUSED), reread=True)
    assert store.marks() == {"memory/d.md": moved["memory/d.md"], "memory/e.md": 1}
    store.put(replace(loaded, status=APPLIED))  # answered, nothing read again
    assert store.marks() == {"memory/d.md": moved["memory/d.md"], "memory/e.md": 1}
