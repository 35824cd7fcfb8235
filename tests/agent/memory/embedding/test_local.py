"""The local embedder on a tiny random BERT written as real model files: the forward pass
against a plain reference, batching, pooling, lazy loading and where the model is found."""

from __future__ import annotations

import math
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from agent.memory.embedding import local
from agent.memory.embedding.base import EmbeddingError
from agent.memory.embedding.bert import erf, gelu
from agent.memory.embedding.local import LocalEmbedder, load_local_embedder
from agent.memory.embedding.safetensors import ModelFileError
from agent.memory.embedding.wordpiece import WordPiece
from tests.fakes.tiny_bert import VOCAB, reference_embedding, write_model

SENTENCES = [
    "The cat sat on the mat.",
    "hello",
    "Anna moved to Lisbon!",
    "北京 東京のいい",
    "the dog ran, the cat sat, the dog ran on the mat",
    "zebra",
    "",
]


@pytest.fixture
def model(tmp_path):
    return write_model(tmp_path / "tiny")


@pytest.fixture(autouse=True)
def no_packaged_model(monkeypatch):
    # This machine may have the real model package installed; these tests are about the rest.
    monkeypatch.setattr(local, "packaged_model", lambda: None)


def test_erf_and_gelu_are_the_exact_forms_to_float32_precision():
    x = np.linspace(-6, 6, 2001, dtype=np.float32)
    want = np.array([math.erf(v) for v in x.astype(np.float64)])
    assert np.max(np.abs(erf(x) - want)) < 6e-7
    want_gelu = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(float)])
    assert np.max(np.abs(gelu(x) - want_gelu)) < 1e-6
    # The tanh shortcut is off by ~1e-3 in places: this is not it.
    tanh_form = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    assert np.max(np.abs(tanh_form - want_gelu)) > 1e-4


def test_embeddings_match_a_plain_reference_forward_pass(model):
    embedder = LocalEmbedder(model, "local:tiny")
    tok = WordPiece(VOCAB)
    vectors = embedder.embed(SENTENCES)
    assert vectors.shape == (len(SENTENCES), 32) and vectors.dtype == np.float32
    for text, vector in zip(SENTENCES, vectors, strict=True):
        want = reference_embedding(tok.encode(text, 16))
        np.testing.assert_allclose(vector, want, atol=2e-5)


def test_rows_are_unit_length_and_distinct_texts_differ(model):
    vectors = LocalEmbedder(model, "local:tiny").embed(SENTENCES)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) < 0.999


def test_batched_and_one_by_one_give_the_same_vectors(model):
    texts = [*SENTENCES, "the cat " * 20, "a", "Hello, world"] * 3
    batched = LocalEmbedder(model, "local:tiny", batch_size=8).embed(texts)
    single = LocalEmbedder(model, "local:tiny", batch_size=1)
    alone = np.stack([single.embed([t])[0] for t in texts])
    np.testing.assert_allclose(batched, alone, atol=1e-5)
    # A repeat in another place of another batch: the same vector, to the last bits BLAS may
    # sum in another order (NumPy 2.4 does, by a few 1e-8).
    np.testing.assert_allclose(batched[0], batched[len(SENTENCES) + 3], atol=1e-6)


def test_two_threads_may_embed_at_once(model):
    # The background indexer and a search's query share one embedder.
    embedder = LocalEmbedder(model, "local:tiny", batch_size=2)
    texts = SENTENCES * 4
    want = embedder.embed(texts)
    with ThreadPoolExecutor(2) as pool:
        forward, backward = pool.map(embedder.embed, [texts, texts[::-1]])
    np.testing.assert_allclose(forward, want, atol=1e-6)
    np.testing.assert_allclose(backward, want[::-1], atol=1e-6)


def test_text_past_the_model_limit_is_truncated(model):
    embedder = LocalEmbedder(model, "local:tiny")  # the folder says 16 tokens
    long = "the cat sat on the mat " * 10
    cut = "the cat sat on the mat the cat sat on the mat the cat"  # its first 14 words
    np.testing.assert_allclose(embedder.embed([long]), embedder.embed([cut]), atol=1e-6)
    assert embedder.max_tokens == 16 and embedder.count_tokens(long) == 62
    assert LocalEmbedder(model, "m", max_length=8).embed([long]).shape == (1, 32)


def test_nothing_to_embed_gives_an_empty_matrix(model):
    assert LocalEmbedder(model, "local:tiny").embed([]).shape == (0, 32)


def test_cls_pooling_when_the_model_says_so(model):
    mean = LocalEmbedder(model, "m").embed(["the cat sat"])
    (model / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    cls = LocalEmbedder(model, "m").embed(["the cat sat"])
    assert not np.allclose(mean, cls, atol=1e-3)
    np.testing.assert_allclose(np.linalg.norm(cls), 1.0, atol=1e-5)


def test_the_model_loads_on_first_use_and_close_lets_it_go(model):
    embedder = load_local_embedder(model, model.parent / "models")
    assert embedder.model_id == "local:tiny" and not embedder.loaded
    embedder.embed(["cat"])
    assert embedder.loaded and embedder.dim == 32
    embedder.close()
    assert not embedder.loaded
    assert embedder.embed(["cat"]).shape == (1, 32)  # and loads again if used after all


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda m: (m / "config.json").write_text('{"hidden_size": 32}'), "configuration"),
        (lambda m: (m / "config.json").write_text(
            (m / "config.json").read_text().replace('"gelu"', '"relu"')), "activation"),
        (lambda m: (m / "model.safetensors").write_bytes(
            (m / "model.safetensors").read_bytes()[:5000]), "outside"),
        (lambda m: (m / "vocab.txt").write_text("\n".join([*VOCAB, "extra"])), "more tokens"),
        (lambda m: (m / "vocab.txt").write_text("the\ncat\n"), "tokenizer"),
    ],
)  # fmt: skip
def test_a_broken_model_folder_fails_with_the_reason(model, damage, says):
    damage(model)
    # An embedding error, which the background embedder reports once and tries again later.
    with pytest.raises(EmbeddingError, match=says):
        LocalEmbedder(model, "m").embed(["cat"])


def test_an_explicit_model_path_must_be_a_model_folder(tmp_path):
    with pytest.raises(ModelFileError, match="not a model folder"):
        load_local_embedder(tmp_path, tmp_path / "models")


def test_model_path_comes_before_everything_else(model, tmp_path, monkeypatch):
    monkeypatch.setattr(local, "packaged_model", lambda: write_model(tmp_path / "pkg"))
    write_model(tmp_path / "models" / "all-MiniLM-L6-v2", seed=9)
    chosen = load_local_embedder(model, tmp_path / "models")
    assert chosen.model_id == "local:tiny"
    np.testing.assert_allclose(
        chosen.embed(["cat"]), LocalEmbedder(model, "m").embed(["cat"]), atol=0
    )


def test_a_copy_in_the_models_folder_is_used_without_fetching(tmp_path):
    write_model(tmp_path / "models" / "all-MiniLM-L6-v2")
    # An empty model_path (the setting left blank) is no path.
    embedder = load_local_embedder("", tmp_path / "models", base_url="http://127.0.0.1:9")
    assert embedder.model_id == "local:all-MiniLM-L6-v2"
    assert embedder.embed(["cat"]).shape == (1, 32)  # port 9 was never asked


def test_the_packaged_model_is_found_without_running_the_package(tmp_path, monkeypatch):
    monkeypatch.undo()  # the real lookup this time
    package = tmp_path / "site" / local.MODEL_PACKAGE
    write_model(package / "model")
    (package / "__init__.py").write_text("raise RuntimeError('the package was imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, local.MODEL_PACKAGE, raising=False)
    assert local.packaged_model() == package / "model"
    write_model(tmp_path / "models" / "all-MiniLM-L6-v2", seed=9)
    embedder = load_local_embedder(None, tmp_path / "models")
    np.testing.assert_allclose(
        embedder.embed(["cat"]), LocalEmbedder(package / "model", "m").embed(["cat"]), atol=0
    )
    assert local.MODEL_PACKAGE not in sys.modules
