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
