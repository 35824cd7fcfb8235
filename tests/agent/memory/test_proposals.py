"""Reading the model's proposal: items that cannot be applied are left out, each source's
author found, and the changes applied in order."""

from __future__ import annotations

import json

import pytest

from agent.memory.proposals import applied, origins, parse
from agent.workspace.audience import untrusted
from gateway.contract.errors import ToolError

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
