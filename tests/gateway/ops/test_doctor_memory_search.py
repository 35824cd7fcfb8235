"""``corvid doctor`` says how memory is searched: keywords only, the local model and where
its files are, or the service every chunk is sent to; and whether recall is on."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent.memory.embedding import local as local_model
from gateway.config.loader import Config, parse_config
from gateway.contract.ports import Check, Status
from gateway.ops.doctor.memory_search import check_memory_search


def _config(home: Path, **memory: object):
    return parse_config({"memory": memory}, home=home, environ={})


def check(config: Config) -> Check:
    return asyncio.run(check_memory_search(config, 5))


def test_each_provider_is_named_with_what_leaves_the_machine(tmp_path):
    none = check(_config(tmp_path, embeddings={"provider": "none"}))
    assert (none.status, none.message) == (
        Status.OK,
        "by keywords only (memory.embeddings.provider: none); recall before answering on",
    )
    remote = check(
        _config(
            tmp_path,
            embeddings={"provider": "openai", "base_url": "http://127.0.0.1:11434/v1"},
            recall={"enabled": False},
        )
    )
    assert remote.message == (
        "by words and meaning, vectors from http://127.0.0.1:11434/v1 (text-embedding-3-small):"
        " every memory chunk and every search is sent there; recall before answering off"
    )
    local = check(_config(tmp_path))  # the default
    assert local.status == Status.OK
    assert local.message.startswith("by words and meaning, local model all-MiniLM-L6-v2 from ")
    assert "nothing leaves the machine" in local.message


def test_a_model_path_without_a_model_fails_with_the_fix(tmp_path):
    empty = tmp_path / "no-model"
    empty.mkdir()
    found = check(_config(tmp_path, embeddings={"model_path": str(empty)}))
    assert found.status == Status.FAIL and str(empty) in found.message
    assert "model_path" in found.fix


def test_a_model_still_to_fetch_from_a_source_that_does_not_answer_is_a_warning_with_the_fix(
    tmp_path, monkeypatch: pytest.MonkeyPatch
):
    from tests.fakes.model_hub import FakeHub
    from tests.fakes.tiny_bert import write_model

    monkeypatch.setattr(local_model, "packaged_model", lambda: None)
    # Port 9 on loopback: nothing listens, every connection is refused, as offline.
    offline = check(_config(tmp_path, embeddings={"model_url": "http://127.0.0.1:9"}))
    assert offline.status == Status.WARN
    assert offline.message.startswith(
        "by words only: the local model all-MiniLM-L6-v2 is not on this machine and cannot be "
        "fetched from 127.0.0.1:9 (Connection refused)"
    )
    assert "memory.embeddings.model_path" in offline.fix and "provider: none" in offline.fix
    with FakeHub(write_model(tmp_path / "hub")) as hub:
        online = check(_config(tmp_path, embeddings={"model_url": hub.url}))
    assert online.status == Status.OK and "fetched once into models/" in online.message
    assert hub.requests == ["config.json"]  # a look, nothing downloaded
