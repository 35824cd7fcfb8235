"""Reading safetensors files: every dtype the models use, memory-mapped views, damaged files."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from agent.memory.embedding.safetensors import ModelFileError, read_safetensors
from tests.fakes.tiny_bert import write_safetensors


def test_tensors_come_back_with_their_names_shapes_and_values(tmp_path):
    tensors = {
        "a.weight": np.arange(12, dtype=np.float32).reshape(3, 4),
        "half": np.array([1.5, -2.25], dtype=np.float16),
        "ids": np.arange(5, dtype=np.int64)[None, :],
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    write_safetensors(tmp_path / "m.safetensors", tensors, pad=False)
    got = read_safetensors(tmp_path / "m.safetensors")
    assert set(got) == set(tensors)
    np.testing.assert_array_equal(got["a.weight"], tensors["a.weight"])
    assert got["half"].dtype == np.float32  # widened for the float32 forward pass
    np.testing.assert_array_equal(got["half"], [1.5, -2.25])
    assert got["ids"].dtype == np.int64 and got["ids"].shape == (1, 5)
    assert got["empty"].shape == (0, 3)


def test_float32_tensors_are_read_only_views_on_the_file_not_copies(tmp_path):
    write_safetensors(tmp_path / "m.safetensors", {"w": np.ones((64, 64), dtype=np.float32)})
    w = read_safetensors(tmp_path / "m.safetensors")["w"]
    assert not w.flags.writeable and not w.flags.owndata


def test_bfloat16_is_widened_exactly(tmp_path):
    values = np.array([1.0, -3.5, 0.15625], dtype=np.float32)
    raw = (values.view(np.uint32) >> 16).astype("<u2").tobytes()
    header = json.dumps({"b": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}}).encode()
    (tmp_path / "b.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + raw)
    np.testing.assert_array_equal(read_safetensors(tmp_path / "b.safetensors")["b"], values)


def _file(tmp_path, header: object, data: bytes = b"", length: int | None = None):
    raw = json.dumps(header).encode() if not isinstance(header, bytes) else header
    path = tmp_path / "bad.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw) if length is None else length) + raw + data)
    return path


@pytest.mark.parametrize(
    ("header", "data", "length", "says"),
    [
        ({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4, None, "outside"),
        ({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8, None, "bytes"),
        ({"t": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 1]}}, b"\0", None, "described"),
        ({"t": {"dtype": "F32", "shape": [1]}}, b"\0" * 4, None, "described"),
        (b"not json", b"", None, "JSON"),
        ([1, 2], b"", None, "object"),
        ({}, b"", 1 << 40, "does not fit"),
    ],
)
def test_a_damaged_file_is_refused_with_the_reason(tmp_path, header, data, length, says):
    with pytest.raises(ModelFileError, match=says):
        read_safetensors(_file(tmp_path, header, data, length))


def test_missing_empty_and_tiny_files_are_refused(tmp_path):
    with pytest.raises(ModelFileError):
        read_safetensors(tmp_path / "absent.safetensors")
    (tmp_path / "empty.safetensors").write_bytes(b"")
    with pytest.raises(ModelFileError):
        read_safetensors(tmp_path / "empty.safetensors")
    (tmp_path / "tiny.safetensors").write_bytes(b"\x01\x00")
    with pytest.raises(ModelFileError, match="too short"):
        read_safetensors(tmp_path / "tiny.safetensors")
