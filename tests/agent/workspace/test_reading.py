"""Reading a workspace file: what text mode reads, from one open that never waits on a FIFO."""

from __future__ import annotations

import contextlib
import itertools
import os
import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from agent.workspace import reading
from agent.workspace.reading import NotPlainFile, read_plain, text_of

PIECES = [b"a", b"\r", b"\n", b"\r\n", b"\xc3\xa9", b"\xe2\x82\xac", b"\xef\xbb\xbf", b" ", b"\xff"]


def _as_text_mode(path: os.PathLike[str]) -> str:
    """What the readers did before: the file in text mode, its bytes decoded on bad UTF-8."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", errors="replace")


def test_text_is_what_text_mode_reads(tmp_path):
    """Every newline convention, multi-byte characters, a byte-order mark and bad UTF-8,
    short and across text mode's 8 KiB reads: the same string as ``open(...).read()``."""
    rng = random.Random(7)
    samples = [b"".join(p) for p in itertools.product(PIECES, repeat=3)]
    samples += [b"".join(rng.choices(PIECES, k=rng.randrange(8000, 9000))) for _ in range(60)]
    path = tmp_path / "f.md"
    bad = 0
    for data in samples:
        path.write_bytes(data)
        assert text_of(read_plain(path)) == _as_text_mode(path), data[:40]
        try:
            with open(path, encoding="utf-8") as f:
                strict = f.read()
        except UnicodeDecodeError:
            bad += 1
            with pytest.raises(UnicodeDecodeError):
                text_of(read_plain(path), strict=True)
        else:
            assert text_of(read_plain(path), strict=True) == strict
    assert 0 < bad < len(samples)  # both kinds were seen


def _unblock(path):
    """Let go of a reader that waits on the FIFO at ``path`` (the old way of reading would)."""
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def test_a_fifo_or_a_folder_is_not_a_plain_file_and_nothing_waits(tmp_path):
    os.mkfifo(tmp_path / "pipe.md")  # opening it the usual way waits for a writer
    (tmp_path / "link.md").symlink_to(tmp_path / "pipe.md")
    (tmp_path / "folder").mkdir()
    with ThreadPoolExecutor(1) as pool:
        try:
            for name, folder in (("pipe.md", False), ("link.md", False), ("folder", True)):
                with pytest.raises(NotPlainFile) as caught:
                    pool.submit(read_plain, tmp_path / name).result(timeout=10)
                assert caught.value.folder is folder
        finally:
            _unblock(tmp_path / "pipe.md")
    with pytest.raises(FileNotFoundError):
        read_plain(tmp_path / "missing.md")


def test_a_file_longer_than_its_size_said_is_read_to_its_end(tmp_path, monkeypatch):
    """A file that grew between the ``fstat`` and the read is read whole, past the size."""
    data = random.Random(3).randbytes(200_000)
    (tmp_path / "grown.bin").write_bytes(data)
    real = os.fstat

    def small(fd):
        st = real(fd)
        return os.stat_result((st.st_mode, *st[1:6], 10, *st[7:]))

    monkeypatch.setattr(reading.os, "fstat", small)
    assert read_plain(tmp_path / "grown.bin") == data
    monkeypatch.undo()
    assert read_plain(tmp_path / "grown.bin") == data
    (tmp_path / "empty").write_bytes(b"")
    assert read_plain(tmp_path / "empty") == b""
