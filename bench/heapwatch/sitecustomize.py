"""What a soak left alive, counted inside ``corvid run`` (``bench/soak.py --heap``).

The soak puts this folder first on the gateway's ``PYTHONPATH`` so Python loads this file at
start, and names a report file in ``CORVID_HEAP_REPORT``. On SIGUSR1 (sent once the gateway is
idle, before the first message) it counts the objects alive after a full collection, by type;
on SIGUSR2 (sent once it is quiet after the last one) it counts again and writes what grew as
JSON, with the exceptions still alive and where each kind was raised, how many objects are
frozen, and Python's and the C library's allocators' own figures. Exceptions still alive after
a collection are where to look first: their tracebacks hold frames, and the frames whatever
the failed call held (this is how a failed send kept its whole request and connection).

It only reads: what it changes is the moments the counts take, and that whatever is alive at a
count stays frozen (frozen objects are counted by thawing them and freezing again).
"""

from __future__ import annotations

import os
import sys

_REPORT = os.environ.get("CORVID_HEAP_REPORT")


def _counts() -> tuple[dict[str, int], list[BaseException]]:
    import gc

    gc.collect()
    # Frozen objects (``gc.freeze``) are out of the collector's lists: counted
    # too, by thawing them for the count and freezing again (with what is alive now).
    frozen = gc.get_freeze_count()
    if frozen:
        gc.unfreeze()
    alive = gc.get_objects()
    if frozen:
        gc.freeze()
    counts: dict[str, int] = {}
    exceptions = []
    for o in alive:
        kind = type(o)
        name = f"{kind.__module__}.{kind.__qualname__}"
        counts[name] = counts.get(name, 0) + 1
        if isinstance(o, BaseException) and o.__traceback__ is not None:
            exceptions.append(o)  # raised once (those never raised are kept on purpose)
    return counts, exceptions


def _raised_at(exc: BaseException) -> str:
    tb = exc.__traceback__
    assert tb is not None
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return f"{os.path.basename(code.co_filename)}:{tb.tb_lineno} ({code.co_name})"


def _allocators() -> dict[str, float]:
    import ctypes
    import re

    figures: dict[str, float] = {}
    read, write = os.pipe()  # sys._debugmallocstats writes to the C stderr
    saved = os.dup(2)
    os.dup2(write, 2)
    try:
        sys._debugmallocstats()
    finally:
        os.dup2(saved, 2)
        os.close(write)
        os.close(saved)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    text = b"".join(chunks).decode(errors="replace")
    for key, pattern in (
        ("pymalloc_arenas", r"# arenas allocated current\s+=\s+([\d,]+)"),
        ("pymalloc_used_mib", r"# bytes in allocated blocks\s+=\s+([\d,]+)"),
    ):
        if found := re.search(pattern, text):
            value = float(found.group(1).replace(",", ""))
            figures[key] = value / 2**20 if key.endswith("_mib") else value

    class MallInfo2(ctypes.Structure):
        _fields_ = [
            (name, ctypes.c_size_t)
            for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                         "uordblks", "fordblks", "keepcost")
        ]  # fmt: skip

    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except AttributeError:  # not glibc 2.33+
        return figures
    mallinfo2.restype = MallInfo2
    info = mallinfo2()
    figures["c_heap_mib"] = (info.arena + info.hblkhd) / 2**20
    figures["c_in_use_mib"] = (info.uordblks + info.hblkhd) / 2**20
    return figures


if _REPORT and "gateway.ops.cli" in sys.orig_argv and "run" in sys.orig_argv:
    import json
    import signal

    _baseline: dict[str, int] = {}

    def _at_idle(signum: int, frame: object) -> None:
        counts, _ = _counts()
        _baseline.update(counts)
        _write(f"{_REPORT}.idle", {"objects": sum(counts.values()), **_allocators()})

    def _at_end(signum: int, frame: object) -> None:
        counts, exceptions = _counts()
        grown = sorted(
            ((n - _baseline.get(name, 0), name) for name, n in counts.items()), reverse=True
        )
        kinds: dict[str, dict[str, int]] = {}
        for exc in exceptions:
            where = kinds.setdefault(type(exc).__name__, {})
            at = _raised_at(exc)
            where[at] = where.get(at, 0) + 1
        report = {
            "objects": sum(counts.values()),
            "grown": [[name, n] for n, name in grown[:15] if n > 0],
            "exceptions": kinds,
            **_allocators(),
        }
        del exceptions
        _write(_REPORT, report)

    def _write(path: str, report: dict[str, object]) -> None:
        with open(f"{path}.tmp", "w") as out:
            json.dump(report, out)
        os.replace(f"{path}.tmp", path)  # whole, so the soak never reads half a report

    signal.signal(signal.SIGUSR1, _at_idle)
    signal.signal(signal.SIGUSR2, _at_end)
