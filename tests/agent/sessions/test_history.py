"""The history kept as JSON text reads back exactly what was stored, and behaves as a list."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agent.sessions.history import History

TEXT = {"role": "user", "content": [{"type": "text", "text": 'Grüße 🌍 \u2028 "quoted"'}]}
TOOL = {
    "role": "assistant",
    "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"n": 1.5}}],
}


def test_messages_read_back_equal_and_as_fresh_copies():
    history = History([TEXT])
    history.append(TOOL)
    assert list(history) == [TEXT, TOOL] and history == [TEXT, TOOL]
    assert history[-1] == TOOL and history[0:1] == [TEXT]
    # What is read is a copy: changing it leaves the conversation as it was.
    history[0]["content"][0]["text"] = "changed"
    assert history[0] == TEXT
    history[1] = TEXT
    assert list(history) == [TEXT, TEXT]


def test_slices_deletion_and_insertion_act_as_on_a_list():
    history = History(_msg(i) for i in range(6))
    del history[4:]
    history.insert(0, _msg(9))
    history[1:3] = [_msg(7)]
    assert [m["content"][0]["text"] for m in history] == ["9", "7", "2", "3"]
    assert len(history) == 4 and History(list(history)) == history
    assert History() == [] and History([TEXT]) != [TOOL]


@given(st.lists(st.tuples(st.sampled_from(["append", "del", "pop"]), st.integers(0, 50))))
def test_any_sequence_of_changes_matches_a_list(ops):
    history, plain = History(), []
    for op, n in ops:
        if op == "append":
            history.append(_msg(n))
            plain.append(_msg(n))
        elif plain and op == "del":
            del history[n % len(plain)]
            del plain[n % len(plain)]
        elif plain:
            assert history.pop() == plain.pop()
    assert list(history) == plain and len(history) == len(plain)


def _msg(n: int) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": str(n)}]}


@given(st.lists(st.text(max_size=12), max_size=8), st.text(min_size=1, max_size=4))
def test_may_contain_misses_no_message_that_holds_the_text(texts, needle):
    """Looked for in the stored JSON, text that JSON escapes (quotes, backslashes, control
    and non-ASCII characters) is still found; what else comes back is in order."""
    history = History(
        {"role": "user", "content": [{"type": "text", "text": t}]} for t in [*texts, 'a"\\\n€']
    )
    found = history.may_contain(needle)
    assert [m for m in found if needle in m["content"][0]["text"]] == [
        m for m in history if needle in m["content"][0]["text"]
    ]
    assert all(m in list(history) for m in found)
    assert History([{"role": "user", "content": "x"}]).may_contain("y") == []


_CHANGES = st.tuples(
    st.sampled_from(["append", "del", "set", "insert", "slice", "search"]),
    st.integers(0, 50),
    st.sampled_from(["note", "plain", "another note"]),
)


@given(st.lists(_CHANGES, max_size=40))
def test_searches_and_sizes_kept_between_calls_follow_every_change(ops):
    """``may_contain`` looks only through what was appended since its last search of the same
    text, and the size is kept as messages come and go: both must still answer as a fresh
    look at every message would, whatever changed in between."""
    history, plain = History(), []

    def said(text: str) -> dict:
        return {"role": "user", "content": [{"type": "text", "text": text}]}

    for op, n, text in ops:
        where = n % len(plain) if plain else 0
        if op == "append":
            history.append(said(text))
            plain.append(said(text))
        elif op == "search":
            wanted = [m for m in plain if "note" in m["content"][0]["text"]]
            assert history.may_contain("note") == wanted
        elif not plain:
            continue
        elif op == "del":
            del history[where]
            del plain[where]
        elif op == "set":
            history[where] = said(text)
            plain[where] = said(text)
        elif op == "insert":
            history.insert(where, said(text))
            plain.insert(where, said(text))
        else:
            history[where:] = [said(text)]
            plain[where:] = [said(text)]
        assert history.nbytes == sum(len(item) for item in history.stored())
    assert history.may_contain("note") == [m for m in plain if "note" in m["content"][0]["text"]]
