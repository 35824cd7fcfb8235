"""The retrieval set of bench/retrieval/ is what its bench assumes: 150 queries and more in
every class, labels that point at the entries they name, paraphrases that share no word."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

from agent.memory.index import MemoryIndex
from gateway.contract.events import OWNER

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.retrieval import corpus  # noqa: E402
from bench.retrieval.corpus import DAYS, build, content_words  # noqa: E402


def test_the_set_is_large_and_labelled(tmp_path):
    queries = build(tmp_path)
    kinds = Counter(q.kind for q in queries)
    assert len(queries) >= 150
    assert set(kinds) == {"keyword", "paraphrase", "latest", "crosslang", "nothing"}
    assert min(kinds.values()) >= 20
    assert len(list((tmp_path / "memory").glob("*.md"))) == DAYS
    for q in queries:
        assert bool(q.relevant) == (q.kind != "nothing")
        for path, first, last in q.relevant:
            lines = (tmp_path / path).read_text(encoding="utf-8").splitlines()
            assert 1 <= first < last <= len(lines)
            assert lines[first - 1].startswith("## ") and lines[last - 1].strip()


def test_every_keyword_query_is_found_by_the_keyword_index(tmp_path):
    queries = build(tmp_path)
    index = MemoryIndex(tmp_path / "index.sqlite", tmp_path)
    try:
        for q in queries:
            if q.kind != "keyword":
                continue
            hits = index.search(q.text, 5, audience=OWNER)
            path, first, last = q.relevant[0]
            assert any(
                h.path == path and h.start_line <= last and first <= h.end_line for h in hits
            ), q
    finally:
        index.close()


def test_a_paraphrase_that_shares_a_word_with_its_entry_is_refused(tmp_path, monkeypatch):
    assert content_words("Where does my sister live now?") == {"sister", "live"}
    # "knee" is in the entry of 10-23 ("Knee fine."): such a label would flatter BM25.
    monkeypatch.setitem(corpus.MORE, "10-23", [("paraphrase", "how is the knee")])
    with pytest.raises(ValueError, match="shares"):
        build(tmp_path)


def test_every_newer_version_of_a_changed_fact_has_the_words_a_model_searched_it_by():
    from bench.retrieval.year_fresh import FRESH
    from bench.retrieval.year_searched import SEARCHED
    from bench.retrieval.year_series import CHANGED

    newer = {(c.subject, n) for c in CHANGED + FRESH for n in range(1, len(c.versions))}
    assert set(SEARCHED) == newer
    for words in SEARCHED.values():
        assert 1 <= len(words) <= 2 and all(w.strip() for w in words)
