"""Recall before answering: the bars a note must clear, notes the session already has left
out, the byte budget; and through the gateway, the real client and the fake API: the notes go
with the message, ahead of it, never into the system prompt, once per conversation, and only
when recall is on."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import yaml

from agent.memory.hits import Hit
from agent.memory.recall import HEADER, already_there, by_meaning, notes_block, relevant
from agent.settings import RecallSettings
from agent.workspace.audience import log_path
from gateway.app import build_app
from gateway.config.loader import parse_config
from gateway.contract.events import audience_of
from gateway.services.reload import reload
from tests.conftest import RecordingChannel, make_config
from tests.fakes.anthropic_api import FakeAnthropic, last_user_text, request_kind
from tests.fakes.clock import FakeClock
from tests.fakes.embeddings_api import FakeEmbeddings
from tests.test_privacy import DOOR, GROUP_A, GROUP_A_SECRET, MEMORY, obedient, serve

CFG = RecallSettings()
NOON = datetime(2026, 3, 12, 12, 0, tzinfo=ZoneInfo("Europe/Berlin"))
OLD_LOG = "memory/2026-01-05.md"
GATE = "GATE-4411-ALLOT"


def hit(snippet: str = "a note", *, words: float = 0.0, cosine: float | None = None) -> Hit:
    return Hit("memory/2026-01-05.md", 3, 9, 1.0, snippet, words=words, vector_score=cosine)


def test_a_note_is_relevant_by_its_cosine_or_by_the_words_of_the_message_it_holds():
    assert relevant(hit(cosine=CFG.min_similarity), CFG)
    assert not relevant(hit(cosine=CFG.min_similarity - 0.01, words=0.5), CFG)
    assert relevant(hit(words=CFG.min_words), CFG)  # no vector: keyword search, or not embedded
    assert not relevant(hit(words=CFG.min_words - 0.01), CFG)
    stricter = replace(CFG, min_words=1.01)
    assert not relevant(hit(words=1.0), stricter)


def test_a_message_of_fewer_than_three_words_is_searched_by_its_words_alone():
    for short in ("ok", "thanks!", "LH 1234", "message 17", "王经理"):
        assert not by_meaning(short), short
    for longer in ("where does Anna live", "the door code is?", "我对什么药过敏"):
        assert by_meaning(longer), longer


def test_a_note_whose_lines_the_session_has_is_already_there():
    prompt = "## memory/2026-03-12.md (today)\n\n## 09:00\n\nBought the bike.\nIt is blue.\n"
    assert already_there(hit("## 09:00\n\nBought the bike.\nIt is blue."), prompt)
    assert not already_there(hit("Bought the bike.\nIt is red."), prompt)
    assert not already_there(hit(""), prompt)


def test_the_block_keeps_to_its_byte_budget_and_names_path_and_lines():
    hits = [replace(hit("ünïcödé " * 100), start_line=i, end_line=i + 5) for i in (1, 20, 40)]
    shown, block = notes_block(hits, 400)
    assert block.startswith(HEADER) and block.endswith("]")
    assert len(block.encode()) <= 400
    assert "- memory/2026-01-05.md lines 1-6 (written on a day not known): ünïcödé" in block
    assert shown == hits[: len(shown)] and 1 <= len(shown) < 3
    assert notes_block([], 400) == ([], "")
    everything, whole = notes_block([hit("short one"), hit("short two")], 1200)
    assert len(everything) == 2 and "short one" in whole and "short two" in whole


def _seed(ws: Path) -> None:
    (ws / "memory").mkdir(exist_ok=True)
    (ws / OLD_LOG).write_text(f"# 2026-01-05\n\n## 09:00\n\nAllotment gate code: {GATE}\n")
    (ws / "MEMORY.md").write_text("# Long-term memory\n\n- Favourite tea: LONGTERM-SENCHA-77\n")


async def _chat(home: Path, api: FakeAnthropic, messages: list[str], **memory: object) -> None:
    config = make_config(home, api.base_url, memory=memory)
    channel = RecordingChannel()
    app = build_app(config, [channel], clock=FakeClock(NOON))
    await app.start()
    try:
        for text in messages:
            await asyncio.wait_for(channel.push(text), 30)
    finally:
        await app.stop()


def _texts(message: dict) -> list[str]:
    return [b["text"] for b in message["content"] if b.get("type") == "text"]


async def test_notes_go_with_the_message_ahead_of_it_once_and_never_into_the_system_prompt(
    home, fake_api
):
    _seed(home / "workspace")
    await _chat(home, fake_api, ["allotment gate code?", "Allotment gate code?"])
    first, second = (r.body for r in fake_api.message_requests)
    asked = _texts(first["messages"][-1])
    assert asked[0].startswith(HEADER)
    assert f"- {OLD_LOG} line 5 (written 2026-01-05, 2 months ago): " in asked[0]
    assert GATE in asked[0] and GATE not in json.dumps(first["system"])
    assert last_user_text(first).endswith("allotment gate code?")  # the words come last
    # The second message finds the same note (the words are the same): it is not given again.
    assert sum(t.startswith(HEADER) for m in second["messages"] for t in _texts(m)) == 1
    assert not _texts(second["messages"][-1])[0].startswith(HEADER)
    # What the first request sent is where the second starts (the cache keeps its prefix).
    assert first["system"] == second["system"]
    kept = second["messages"][: len(first["messages"])]
    assert _no_cache_marks(first["messages"]) == _no_cache_marks(kept)


def _no_cache_marks(messages: list[dict]) -> list[dict]:
    return [
        {
            **m,
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in messages
    ]


async def test_what_the_prompt_holds_is_not_recalled_and_recall_can_be_off(home, fake_api):
    _seed(home / "workspace")
    await _chat(home, fake_api, ["allotment gate code?"], recall={"enabled": False})
    await _chat(home, fake_api, ["LONGTERM-SENCHA-77?", "allotment gate code?"])
    off, tea, gate = (r.body for r in fake_api.message_requests)
    assert "LONGTERM-SENCHA-77" in json.dumps(tea["system"])  # MEMORY.md: in the prompt
    assert not _texts(tea["messages"][-1])[0].startswith(HEADER)
    assert _texts(gate["messages"][-1])[0].startswith(HEADER)  # the control: it does recall
    assert GATE not in json.dumps(off)


@pytest.mark.parametrize("vectors", [False, True], ids=["keywords", "vectors"])
async def test_a_group_recalls_its_own_notes_and_never_the_owners(home, fake_api, vectors):
    embeddings = FakeEmbeddings(api_key="emb-key")
    await embeddings.start()
    try:
        await _group_and_owner_ask(home, fake_api, embeddings if vectors else None)
    finally:
        await embeddings.close()


async def _group_and_owner_ask(home, fake_api, embeddings: FakeEmbeddings | None) -> None:
    ws = home / "workspace"
    _seed(ws)
    (ws / OLD_LOG).write_text(f"# 2026-01-05\n\n## 09:00\n\nThe door code is {DOOR}\n")
    (ws / "MEMORY.md").write_text(f"- The door code of the office: {MEMORY}\n")
    group_log = ws / log_path(audience_of(GROUP_A), date(2026, 1, 5))
    group_log.parent.mkdir(parents=True)
    group_log.write_text(f"# 2026-01-05\n\n## 10:00\n\nThe shed door code is {GROUP_A_SECRET}\n")
    fake_api.brain = obedient  # answers with everything it was sent
    memory = {}
    if embeddings is not None:  # the owner's notes are near in meaning too: still not the group's
        memory["embeddings"] = {
            "provider": "openai",
            "base_url": embeddings.base_url,
            "api_key": "emb-key",
        }
    async with serve(home, fake_api.base_url, FakeClock(NOON), memory=memory) as (app, channel):
        if embeddings is not None:
            vectors = app.gateway.agent.memory.vectors
            assert vectors is not None and await asyncio.to_thread(vectors.wait_idle, 10)
        await asyncio.wait_for(channel.push("the door code is?", key=GROUP_A, sender="66"), 30)
        await asyncio.wait_for(channel.push("the door code is?"), 30)
    group, owner = (r for r in fake_api.message_requests if request_kind(r.body) == "chat")
    assert _texts(group.body["messages"][-1])[0].startswith(HEADER)
    assert GROUP_A_SECRET in channel.texts(GROUP_A)[-1]  # its own note, recalled
    assert [s for s in (DOOR, MEMORY) if s in group.raw + channel.texts(GROUP_A)[-1]] == []
    # The owner's chat recalls the owner's note, and not what the group wrote in its log.
    recalled = _texts(owner.body["messages"][-1])[0]
    assert recalled.startswith(HEADER) and DOOR in recalled and GROUP_A_SECRET not in recalled
    if embeddings is not None:
        assert any("the door code is?" in a.inputs for a in embeddings.asked)  # by meaning too


async def test_recall_is_turned_off_by_reading_config_yaml_again(home, fake_api):
    _seed(home / "workspace")
    (home / "workspace" / "memory" / "2026-01-06.md").write_text("## 08:00\n\nBike lock: 9090\n")
    raw = {
        "timezone": "Europe/Berlin",
        "llm": {"api_key": "sk-test-0123456789", "base_url": fake_api.base_url},
        "web": {"enabled": False},
        "memory": {"embeddings": {"provider": "none"}, "recall": {"max_notes": 2}},
    }
    (home / "config.yaml").write_text(yaml.safe_dump(raw))
    channel = RecordingChannel()
    app = build_app(parse_config(raw, home=home, environ={}), [channel], clock=FakeClock(NOON))
    await app.start()
    try:
        await asyncio.wait_for(channel.push("allotment gate code?"), 30)
        raw["memory"]["recall"]["enabled"] = False
        (home / "config.yaml").write_text(yaml.safe_dump(raw))
        assert reload(app, {}).applied == ["memory.recall.enabled"]
        await asyncio.wait_for(channel.push("bike lock?"), 30)
    finally:
        await app.stop()
    on, off = (r.body for r in fake_api.message_requests)
    assert _texts(on["messages"][-1])[0].startswith(HEADER)
    assert not _texts(off["messages"][-1])[0].startswith(HEADER)


def test_recall_at_once_is_recall_and_leaves_to_a_thread_what_needs_the_model(home):
    from agent.memory.recall import recall, recall_at_once
    from gateway.contract.events import OWNER

    _seed(home / "workspace")
    app = build_app(make_config(home, "http://127.0.0.1:9"), [], clock=FakeClock(NOON))
    memory = app.gateway.agent.memory
    assert memory is not None and memory.vectors is None  # keywords only
    assert recall_at_once(memory, "allotment gate code?", OWNER, [""]) is None  # not caught up
    for message in ("allotment gate code?", "allotment gate code", "what was the code, again?"):
        found = recall(memory, message, OWNER, [""])
        assert (GATE in found[0]) == ("allotment" in message)
        assert recall_at_once(memory, message, OWNER, [""]) == found
    assert recall_at_once(memory, "   ", OWNER, [""]) == ("", [])
    hybrid = replace_searcher(memory)
    assert recall_at_once(hybrid, "gate code?", OWNER, [""]) is not None  # by its words
    assert recall_at_once(hybrid, "the allotment gate: what was its code?", OWNER, [""]) is None


def replace_searcher(memory):
    """The same memory with another searcher (hybrid search's place), which may embed."""
    from agent.memory.hybrid import HybridSearch
    from agent.memory.store import Memory

    class Vectors:  # embedded chunks there are; embedding a query would take the model
        ready = True

        def embed_query(self, query):
            raise AssertionError("not on the event loop")

    search = HybridSearch(memory.index, Vectors(), memory.cfg.search, lambda: NOON.date())
    return Memory(memory.workspace, memory.index, memory.cfg, search=search)


async def test_a_turn_recalls_without_a_worker_thread_once_the_index_is_caught_up(
    home, fake_api, monkeypatch
):
    import agent.loop

    _seed(home / "workspace")
    handed: list[str] = []
    to_thread = asyncio.to_thread

    async def counted(fn, *args, **kwargs):
        handed.append(getattr(fn, "__name__", ""))
        return await to_thread(fn, *args, **kwargs)

    monkeypatch.setattr(agent.loop.asyncio, "to_thread", counted)
    await _chat(home, fake_api, ["allotment gate code?", "gate code again?"])
    first, second = (r.body for r in fake_api.message_requests)
    assert GATE in _texts(first["messages"][-1])[0] and GATE in json.dumps(second["messages"])
    assert handed.count("recall") == 1  # the first, to catch the index up; not the second


# -- each rule of the module at its edge (the mutation bench's survivors) ----------------------


class _Memory:
    """What recall reads of the memory: its settings, its search (recorded), its folder."""

    def __init__(self, tmp: Path, hits: list[Hit] | None = None, *, enabled: bool = True):
        from agent.settings import MemorySettings

        self.cfg = replace(MemorySettings(), recall=replace(CFG, enabled=enabled))
        self.workspace, self.hits, self.asked = tmp, hits or [], []

    def search(self, query, limit, audience, *, meaning):
        self.asked.append(query)
        return self.hits

    def search_at_once(self, query, limit, audience, *, meaning):
        return self.search(query, limit, audience, meaning=meaning)


def test_a_message_is_searched_by_its_first_thousand_characters_and_not_when_off(tmp_path):
    from agent.memory.recall import recall, recall_at_once
    from gateway.contract.events import OWNER

    memory = _Memory(tmp_path)
    for ask in (recall, recall_at_once):
        assert ask(memory, "  " + "word " * 400, OWNER, [""]) == ("", [])
        assert memory.asked.pop() == ("word " * 400).strip()[:1000]
        assert ask(memory, " \n ", OWNER, [""]) == ("", []) and not memory.asked
        off = _Memory(tmp_path, enabled=False)
        assert ask(off, "where is the allotment gate code?", OWNER, [""]) == ("", [])
        assert not off.asked


def test_a_recall_is_logged_only_when_a_note_is_given(tmp_path, caplog):
    from agent.memory.recall import recall
    from gateway.contract.events import OWNER

    (tmp_path / "memory").mkdir()
    (tmp_path / OLD_LOG).write_text("# 2026-01-05\n\n## 09:00\n\nThe gate code is 4411.\n")
    caplog.set_level("DEBUG", logger="agent.memory.recall")
    assert recall(_Memory(tmp_path), "the gate code please", OWNER, [""]) == ("", [])
    assert "recalled" not in caplog.text
    found = _Memory(tmp_path, [hit("The gate code is 4411.", words=1.0)])
    block, files = recall(found, "the gate code please", OWNER, [""])
    assert "4411" in block and [rel for rel, _ in files] == [OLD_LOG]
    assert "recalled 1 note(s) for a message of 20 characters" in caplog.text


def test_three_words_are_enough_to_search_by_meaning():
    assert by_meaning("where Anna lives") and by_meaning("我对什么药过")  # six CJK: three words
    assert not by_meaning("Anna lives") and not by_meaning("我对什么药")


def test_a_cut_excerpt_is_there_by_its_first_forty_characters_a_whole_one_by_all():
    long = "The allotment gate opens with the code 4411 and a firm push"
    prompt = f"## 09:00\n\n{long[:40]} and then something else\n"
    assert already_there(hit(long[:55] + "…"), prompt)  # cut by the snippet: its start counts
    assert already_there(hit(long[:40] + "X…"), prompt)  # a 41st character it cannot vouch for
    assert not already_there(hit(long), prompt)  # not cut: the whole line must be there
    assert already_there(hit(f"## 09:00\n{long[:50]}…"), prompt)
    assert not already_there(hit("…"), prompt)


def test_an_excerpt_is_narrowed_to_its_own_lines_within_the_hit():
    from agent.memory.recall import narrowed

    text = "# day\n\n## 09:00\nalpha\nbeta one\nbeta two\n\ngamma\nbeta late\n"
    two = replace(hit("beta one\nbeta two"), start_line=3, end_line=8)
    assert (narrowed(two, text).start_line, narrowed(two, text).end_line) == (5, 6)
    one = replace(hit("alpha"), start_line=3, end_line=9)
    assert (narrowed(one, text).start_line, narrowed(one, text).end_line) == (4, 4)
    beyond = replace(hit("beta late"), start_line=3, end_line=8)  # its line is past the hit
    assert narrowed(beyond, text) == beyond
    empty = replace(hit(""), start_line=3, end_line=8)
    assert narrowed(empty, text) == empty
    shrunk = replace(hit("delta"), start_line=8, end_line=14)  # the file is shorter now
    assert narrowed(shrunk, text) == shrunk


def test_only_the_users_messages_recall_blocks_are_earlier_recalls():
    from agent.memory.recall import earlier_recalls

    recalled = f"{HEADER}: ...]"
    messages = [
        {"role": "assistant", "content": [{"type": "text", "text": recalled}]},
        {"role": "user", "content": recalled},  # a plain string is the person's own text
        {"role": "user", "content": [{"type": "text", "text": "hello"}, {"type": "image"}]},
        {"role": "user", "content": [{"type": "text", "text": recalled}, "odd"]},
    ]
    assert earlier_recalls(messages) == [recalled]


def test_a_note_is_listed_with_sixty_bytes_of_its_text_or_not_at_all():
    from agent.memory.recall import _fit

    one = replace(hit("x" * 200), start_line=3, end_line=3)
    _, full = notes_block([one], 2000)
    frame = len(full.encode()) - 200  # the header, the note's line without its text, the end
    shown, block = notes_block([one], frame + 60)
    assert shown == [one] and block.endswith(": " + "x" * 57 + "…]")  # "…" is three bytes
    assert notes_block([one], frame + 59) == ([], "")
    assert notes_block([one], 100) == ([], "")  # not even the header fits
    assert _fit("abcd", 4) == "abcd" and _fit("abcde", 4) == "a…"
