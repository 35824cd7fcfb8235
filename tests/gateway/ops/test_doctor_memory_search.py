"""``corvid doctor`` says how memory is searched: keywords only, the local model and where
its files are, or the service every chunk is sent to; and whether recall is on."""

from __future__ import annotations

from pathlib import Path

from gateway.config.loader import parse_config
from gateway.contract.ports import Status
from gateway.ops.doctor.memory_search import check_memory_search


def _config(home: Path, **memory: object):
    return parse_config({"memory": memory}, home=home, environ={})


def test_each_provider_is_named_with_what_leaves_the_machine(tmp_path):
    none = check_memory_search(_config(tmp_path, embeddings={"provider": "none"}))
    assert (none.status, none.message) == (
        Status.OK,
        "by keywords only (memory.embeddings.provider: none); recall before answering on",
    )
    remote = check_memory_search(
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
    local = check_memory_search(_config(tmp_path))  # the default
    assert local.status == Status.OK
    assert local.message.startswith("by words and meaning, local model all-MiniLM-L6-v2 from ")
    assert "nothing leaves the machine" in local.message


def test_a_model_path_without_a_model_fails_with_the_fix(tmp_path):
    empty = tmp_path / "no-model"
    empty.mkdir()
    check = check_memory_search(_config(tmp_path, embeddings={"model_path": str(empty)}))
    assert check.status == Status.FAIL and str(empty) in check.message
    assert "model_path" in check.fix
