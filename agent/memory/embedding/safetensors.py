"""Reading a safetensors file into NumPy arrays that share the file's memory map."""

from __future__ import annotations

import json
import mmap
import struct
from math import prod
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

# A real header is a few kilobytes per hundred tensors; anything near this is not one.
MAX_HEADER_BYTES = 100 * 1024 * 1024
_DTYPES: dict[str, np.dtype[Any]] = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),  # widened to float32 below: NumPy has no bfloat16
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}


class ModelFileError(ValueError):
    """A model file that is missing, truncated or not what it claims to be."""


def read_safetensors(path: Path) -> dict[str, NDArray[Any]]:
    """Every tensor in ``path`` by name. Little-endian float32 and integer tensors are
    read-only views on a memory map of the file, so only the pages used are ever read;
    float16 and bfloat16 tensors are widened to float32 copies."""
    try:
        with path.open("rb") as f:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:  # ValueError: an empty file cannot be mapped
        raise ModelFileError(f"{path}: cannot be read ({exc})") from exc
    size = len(mapped)
    if size < 8:
        raise ModelFileError(f"{path}: too short for a safetensors file")
    (header_len,) = struct.unpack_from("<Q", mapped, 0)
    if header_len > min(size - 8, MAX_HEADER_BYTES):
        raise ModelFileError(f"{path}: header length {header_len} does not fit the file")
    try:
        header = json.loads(mapped[8 : 8 + header_len])
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(f"{path}: header is not JSON ({exc})") from exc
    if not isinstance(header, dict):
        raise ModelFileError(f"{path}: header is not a JSON object")
    base = 8 + header_len
    tensors: dict[str, NDArray[Any]] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        tensors[name] = _tensor(path, mapped, base, name, info)
    return tensors


def _tensor(path: Path, mapped: mmap.mmap, base: int, name: str, info: Any) -> NDArray[Any]:
    try:
        dtype = _DTYPES[info["dtype"]]
        shape = tuple(int(n) for n in info["shape"])
        begin, end = (int(n) for n in info["data_offsets"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{path}: tensor {name!r} is described wrongly ({exc})") from exc
    count = prod(shape)
    if any(n < 0 for n in shape) or not 0 <= begin <= end <= len(mapped) - base:
        raise ModelFileError(f"{path}: tensor {name!r} lies outside the file")
    if end - begin != count * dtype.itemsize:
        raise ModelFileError(f"{path}: tensor {name!r} has {end - begin} bytes for {shape}")
    if count == 0:
        return np.zeros(shape, dtype=np.float32 if info["dtype"] in ("F16", "BF16") else dtype)
    array: NDArray[Any] = np.frombuffer(mapped, dtype=dtype, count=count, offset=base + begin)
    if info["dtype"] == "BF16":
        array = (array.astype(np.uint32) << 16).view(np.float32)
    elif info["dtype"] == "F16":
        array = array.astype(np.float32)
    return array.reshape(shape)
