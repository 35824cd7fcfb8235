"""The vector table and the embedding cache: rows that follow the index's chunks, vectors
shared by equal texts, a search that scores only the chunks it may, and a cache that outlives
the index."""

from __future__ import annotations

import numpy as np
import pytest

from agent.memory.vectors import EmbeddingCache, VectorTable


def unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_chunks_get_vectors_by_text_and_equal_texts_share_one():
    table = VectorTable()
    table.reset([(1, "", "a"), (2, "", "b"), (3, "g1", "a")])
    assert table.counts() == (0, 3)
    assert sorted(table.missing(10)) == [("a", 1), ("b", 2)]
    table.fill({"a": unit(1, 0)})
    assert table.counts() == (2, 3)
    table.change([], [(4, "", "a")])  # a new chunk with a known text has its vector at once
    assert table.counts() == (3, 4)
    assert table.missing(10) == [("b", 2)]
    table.change([1, 2], [])
    assert table.counts() == (2, 2) and table.missing(10) == []


def test_the_nearest_chunks_are_those_of_the_chat_asked_for_and_no_other():
    table = VectorTable()
    table.reset([(1, "", "own"), (2, "g1", "group"), (3, "g2", "other")])
    table.fill({"own": unit(1, 0), "group": unit(0.6, 0.8), "other": unit(1, 0.01)})
    query = unit(1, 0)
    assert [c for c, _ in table.nearest(query, 3, None)] == [1, 3, 2]
    assert [c for c, _ in table.nearest(query, 3, "g1")] == [2]
    assert table.nearest(query, 3, "nobody") == []
    [(chunk, cosine)] = table.nearest(query, 1, None)
    assert chunk == 1 and cosine == pytest.approx(1.0, abs=1e-6)


def test_how_far_each_chunks_nearest_reach_is_of_its_chat_alone_and_known_until_a_change():
    table = VectorTable()
    table.reset([(1, "", "a"), (2, "", "b"), (3, "", "c"), (4, "g1", "d"), (5, "g1", "e")])
    a, b, d = unit(1, 0), unit(1, 0.2), unit(1, 0.1)
    table.fill({"a": a, "b": b, "c": unit(0, 1), "d": d, "e": unit(0, 1)})
    reach = table.reach([1, 3, 99], (1, 3), None)
    assert set(reach) == {1, 3}  # no vector, no reach
    assert reach[1] == pytest.approx((1.0, float(a @ b)))  # itself first; 4, then 2 third
    assert reach[3] == pytest.approx((1.0, float(unit(0, 1) @ b)))  # 3, 5, then 2
    # Only the chat's own, however near the others: 4 and 5 alone; past them, the last.
    e = float(d @ unit(0, 1))
    assert table.reach([4], (2, 9), "g1")[4] == pytest.approx((e, e))
    assert table.reach([4], (2, 9), "g1") == table.reach([4], (2, 9), "g1")  # known
    table.change([], [(6, "g1", "f")])
    table.fill({"f": unit(1, 0.11)})
    assert table.reach([4], (2,), "g1")[4] == pytest.approx((float(d @ unit(1, 0.11)),))
    table.change([6], [])
    assert set(table.reach([4, 6], (2,), "g1")) == {4}  # a removed chunk has none


def test_copies_of_a_chunk_are_all_within_its_nearest():
    table = VectorTable()
    table.reset([(i, "", f"copy{i}") for i in range(12)] + [(99, "", "other")])
    table.fill({f"copy{i}": unit(1, 0) for i in range(12)} | {"other": unit(1, 1)})
    # Eleven copies crowd its ten nearest; each of them reaches the tenth all the same.
    [(tenth, twelfth, last)] = table.reach([0], (11, 12, 13), None).values()
    assert tenth == twelfth == pytest.approx(1.0)
    assert last == pytest.approx(float(unit(1, 0) @ unit(1, 1)))


def test_many_removals_are_squeezed_out_and_ids_still_map_to_their_rows():
    table = VectorTable()
    table.reset([(i, "", f"s{i}") for i in range(3000)])
    rng = np.random.default_rng(7)
    vectors = [unit(*rng.standard_normal(16)) for _ in range(3000)]
    table.fill({f"s{i}": vectors[i] for i in range(3000)})
    table.change(range(0, 2500), [(5000, "", "new")])
    assert table._n < 1000  # squeezed
    assert table.counts() == (500, 501)
    assert table.missing(5) == [("new", 5000)]
    nearest = table.nearest(vectors[2999], 1, None)
    assert nearest[0][0] == 2999
    assert set(table.vectors([2999, 10, 5000])) == {2999}


def test_a_new_model_drops_the_vectors_and_keeps_the_chunks():
    table = VectorTable()
    table.reset([(1, "", "a")])
    table.fill({"a": unit(1, 0)})
    table.forget_vectors()
    assert table.counts() == (0, 1) and table.dim == 0
    table.fill({"a": unit(1, 0, 0)})
    assert table.dim == 3


def test_the_cache_keeps_vectors_by_model_and_text_across_opening(tmp_path):
    path = tmp_path / "embeddings.sqlite"
    cache = EmbeddingCache(path)
    cache.put("m1", [("a", unit(1, 0)), ("b", unit(0, 1))])
    cache.put("m2", [("a", unit(1, 1))])
    cache.close()
    cache = EmbeddingCache(path)
    got = cache.get("m1", ["a", "b", "c"])
    assert set(got) == {"a", "b"} and np.allclose(got["b"], unit(0, 1))
    assert cache.count("m2") == 1
    assert cache.forget_other_models("m1") == 1
    assert cache.count("m2") == 0 and cache.count("m1") == 2
    cache.close()
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_a_damaged_cache_is_started_anew(tmp_path):
    path = tmp_path / "embeddings.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    cache = EmbeddingCache(path)
    cache.put("m", [("a", unit(1, 0))])
    assert cache.count("m") == 1
    cache.close()


class Reference:
    """What the table must answer, kept the plain way: a dict of live chunks in the order
    they came, each with its chat, its text's sha and its vector once it has one."""

    def __init__(self) -> None:
        self.chunks: dict[int, tuple[str, str, np.ndarray | None]] = {}

    def add(self, rows):
        holders: dict[str, dict[int, np.ndarray]] = {}  # the chunks with a vector, by text
        for chunk, (_, sha, v) in self.chunks.items():
            if v is not None:
                holders.setdefault(sha, {})[chunk] = v
        for chunk, chat, sha in rows:
            old = self.chunks.pop(chunk, None)  # an id used again: the new chunk, at the end
            if old is not None and old[2] is not None:
                del holders[old[1]][chunk]
            same = holders.get(sha)
            v = next(iter(same.values())) if same else None  # equal texts, equal vectors
            self.chunks[chunk] = (chat, sha, v)
            if v is not None:
                holders[sha][chunk] = v

    def fill(self, vectors):
        for chunk, (chat, sha, _v) in self.chunks.items():
            if sha in vectors:
                self.chunks[chunk] = (chat, sha, vectors[sha])

    def missing(self, limit):
        found: dict[str, int] = {}
        for chunk, (_, sha, v) in self.chunks.items():
            if v is None and len(found) < limit:
                found.setdefault(sha, chunk)
        return list(found.items())

    def cosines(self, query, chat):
        return {
            c: float(v @ query)
            for c, (ch, _, v) in self.chunks.items()
            if v is not None and (chat is None or ch == chat)
        }


def agree(table: VectorTable, ref: Reference, rng: np.random.Generator, dim: int) -> None:
    live = len(ref.chunks)
    assert table.counts() == (sum(v is not None for *_, v in ref.chunks.values()), live)
    for limit in (1, 3, 10_000):
        assert table.missing(limit) == ref.missing(limit)
    query = unit(*rng.standard_normal(dim))
    for chat in (None, "", "g1", "g2"):
        want = ref.cosines(query, chat)
        for k in (1, 2, 5, 40):
            got = table.nearest(query, k, chat)
            assert len(got) == min(k, len(want)) == len({c for c, _ in got})
            for chunk, cosine in got:
                assert cosine == pytest.approx(want[chunk], abs=1e-5)
            best = sorted(want.values(), reverse=True)[: len(got)]
            assert [c for _, c in got] == pytest.approx(best, abs=1e-5)
    some = [*list(ref.chunks)[:50], 10**9]
    vectors = table.vectors(some)
    assert set(vectors) == {c for c in some if c in ref.chunks and ref.chunks[c][2] is not None}
    for chunk, v in vectors.items():
        assert np.allclose(v, ref.chunks[chunk][2])


def test_the_table_answers_as_a_plain_reference_through_adds_removals_fills_and_squeezes():
    rng = np.random.default_rng(11)
    dim = 8
    texts = [f"t{i}" for i in range(400)]  # few enough that texts repeat
    table, ref = VectorTable(), Reference()
    next_id = 0

    def new_rows(n):
        nonlocal next_id
        rows = []
        for _ in range(n):
            next_id += 1
            chat = ("", "g1", "g2")[rng.integers(3)]
            rows.append((next_id, chat, texts[rng.integers(len(texts))]))
        return rows

    rows = new_rows(300)
    table.reset(rows)
    ref.chunks.clear()
    ref.add(rows)
    agree(table, ref, rng, dim)
    squeezed = 0
    for step in range(120):
        ids = list(ref.chunks)
        move = rng.integers(6)
        if move == 0:  # a big removal, as a rebuild's catch-up or a pruned folder gives
            gone = [int(i) for i in rng.choice(ids, size=len(ids) * 3 // 5, replace=False)]
            added = new_rows(int(rng.integers(0, 2000)))
        elif move == 1:  # ids seen again without their removal
            gone = []
            added = [(int(i), "", texts[rng.integers(len(texts))]) for i in rng.choice(ids, 5)]
        else:
            gone = [int(i) for i in rng.choice(ids, size=min(len(ids), 20), replace=False)]
            gone.append(10**9)  # a removal of a chunk the table never had
            added = new_rows(int(rng.integers(0, 60)))
        before = table._n
        table.change(gone, added)
        squeezed += table._n < before
        for chunk in gone:
            ref.chunks.pop(chunk, None)
        ref.add(added)
        if step % 3 == 0:
            wanted = [sha for sha, _ in ref.missing(10_000)]
            given = {s: unit(*rng.standard_normal(dim)) for s in wanted[: len(wanted) // 2 + 1]}
            table.fill(given)
            ref.fill(given)
        if step == 90:  # another model: every vector goes, and vectors of another size come
            table.forget_vectors()
            ref.chunks = {c: (ch, s, None) for c, (ch, s, _) in ref.chunks.items()}
            dim = 5
        agree(table, ref, rng, dim)
    assert squeezed >= 3  # the test went through the squeeze, more than once


def test_dead_rows_are_squeezed_out_past_1024_and_a_quarter_of_the_table_not_before():
    table = VectorTable()
    table.reset([(i, "", f"s{i}") for i in range(3000)])
    table.change(range(1024), [])
    assert table._n == 3000  # 1024 dead rows: not yet
    table.change([1024], [])
    assert table._n == 1975  # 1025: squeezed
    table.change([], [(i, "", f"n{i}") for i in range(5000, 7025)])  # 4000 rows
    table.change(range(1025, 2049), [])
    assert table._n == 4000  # 1024 dead since the squeeze: not yet
    table.change([], [(i, "", f"m{i}") for i in range(9000, 13_000)])  # 8000 rows
    table.change(range(2049, 2500), [])
    assert table._n == 8000  # 1475 dead, not more than a quarter of 8000
    table.change(range(5000, 5525), [])
    assert table._n == 8000  # 2000 dead: a quarter exactly, not more
    table.change([5525], [])
    assert table._n == 5999 and table.counts() == (0, 5999)


def test_ids_seen_again_count_as_dead_rows_too():
    table = VectorTable()
    table.reset([(i, "", f"s{i}") for i in range(3000)])
    table.change([], [(i, "", f"again{i}") for i in range(1024)])
    assert table._n == 4024 and table.counts() == (0, 3000)
    table.change([], [(1024, "", "once more")])
    assert table._n == 3000


def test_a_small_table_is_not_squeezed_however_many_of_its_rows_are_dead():
    table = VectorTable()
    table.reset([(i, "", f"s{i}") for i in range(10)])
    table.change(range(9), [])
    assert table._n == 10 and table.counts() == (0, 1)


def test_vectors_of_another_length_are_refused_and_a_query_of_another_length_finds_nothing():
    table = VectorTable()
    table.reset([(1, "", "a"), (2, "", "b")])
    table.fill({"a": unit(1, 0)})
    with pytest.raises(ValueError, match="a vector of 3 numbers among ones of 2"):
        table.fill({"b": unit(1, 0, 0)})
    assert table.nearest(unit(1, 0, 0), 5, None) == []
    assert table.nearest(unit(1, 0, 0), 5, "") == []
    assert [c for c, _ in table.nearest(unit(1, 0), 5, None)] == [1]
