"""The heap is handed back once no turn has run for a quiet spell, and never during a turn; the
first quiet spell freezes what lives then out of the full garbage collections."""

from __future__ import annotations

import asyncio
import gc
import weakref

from gateway.runtime import heap as heap_module
from gateway.runtime.heap import HeapTrim, _malloc_trim


def _no_freeze() -> None:
    pass


def _trims_into(event: asyncio.Event, log: list[float]):
    def trim() -> None:
        log.append(asyncio.get_running_loop().time())
        event.set()

    return trim


async def test_the_trim_runs_once_a_quiet_spell_follows_the_last_turn():
    done, when = asyncio.Event(), []
    heap = HeapTrim(lambda: 0, quiet=0.05, trim=_trims_into(done, when), freeze=_no_freeze)
    loop = asyncio.get_running_loop()
    ended: list[float] = []

    def second_turn_ends() -> None:  # inside the first quiet spell, which starts again
        ended.append(loop.time())
        heap.turn_over()

    heap.turn_over()
    loop.call_later(0.03, second_turn_ends)  # the loop runs it before the check due at 0.05
    await asyncio.wait_for(done.wait(), 5)
    assert heap.trims == 1
    assert when[0] >= ended[0] + 0.05 - 0.002  # a hair of slack for the clock's resolution
    heap.close()


async def test_no_trim_while_a_turn_runs_and_one_after_it_ends():
    done, when = asyncio.Event(), []
    checked = asyncio.Event()
    running = [1]

    def turns_running() -> int:
        checked.set()
        return running[0]

    heap = HeapTrim(turns_running, quiet=0.02, trim=_trims_into(done, when), freeze=_no_freeze)
    heap.turn_over()  # another session's turn ended; this one still runs
    await asyncio.wait_for(checked.wait(), 5)
    # The check found a turn running: no trim, and no timer left behind.
    assert heap._timer is None
    assert heap.trims == 0 and not done.is_set()
    running[0] = 0
    heap.turn_over()  # the running turn ends
    await asyncio.wait_for(done.wait(), 5)
    assert heap.trims == 1
    heap.close()


async def test_close_cancels_a_pending_trim():
    calls: list[float] = []
    heap = HeapTrim(lambda: 0, quiet=0.01, trim=lambda: calls.append(1.0), freeze=_no_freeze)
    heap.turn_over()
    heap.close()
    # A later timer on the same loop fires after the cancelled one would have.
    fired = asyncio.Event()
    asyncio.get_running_loop().call_later(0.05, fired.set)
    await asyncio.wait_for(fired.wait(), 5)
    assert calls == [] and heap.trims == 0


async def test_a_failing_trim_is_not_an_error():
    done = asyncio.Event()

    def trim() -> None:
        done.set()
        raise OSError("no")

    heap = HeapTrim(lambda: 0, quiet=0.01, trim=trim, freeze=_no_freeze)
    heap.turn_over()
    await asyncio.wait_for(done.wait(), 5)
    assert heap.trims == 1
    heap.close()


async def test_the_first_quiet_spell_freezes_what_lives_then_and_later_ones_do_not():
    trimmed, when = asyncio.Event(), []
    frozen: list[int] = []
    heap = HeapTrim(
        lambda: 0, quiet=0.01, trim=_trims_into(trimmed, when), freeze=lambda: frozen.append(1)
    )
    heap.turn_over()  # the start's own burst is over
    await asyncio.wait_for(trimmed.wait(), 5)
    assert frozen == [1] and heap.trims == 1
    trimmed.clear()
    heap.turn_over()  # a turn, and the quiet after it
    await asyncio.wait_for(trimmed.wait(), 5)
    assert frozen == [1] and heap.trims == 2
    heap.close()


class _SendFailed(Exception):
    pass


async def _failed_send() -> weakref.ref[_SendFailed]:
    """A send that failed in a task its caller awaited: the exception, its traceback's frames
    and the task holding the exception make a cycle only the collector can free."""

    async def send() -> None:
        raise _SendFailed("Telegram unreachable")

    async def attempt() -> None:
        task = asyncio.ensure_future(send())
        await task

    try:
        await attempt()
    except _SendFailed as exc:
        return weakref.ref(exc)
    raise AssertionError("the send did not fail")


async def test_the_freeze_keeps_no_garbage_a_busy_spell_left():
    trimmed, when = asyncio.Event(), []
    heap = HeapTrim(lambda: 0, quiet=0.01, trim=_trims_into(trimmed, when))
    gc.disable()  # so that only the freeze's own collection can free the cycle
    try:
        failed = await _failed_send()
        assert failed() is not None  # garbage, not yet collected
        heap.turn_over()
        await asyncio.wait_for(trimmed.wait(), 5)
        assert gc.get_freeze_count() > 0  # the freeze ran...
        gc.collect()
        assert failed() is None  # ...and the cycle was not frozen: a collection frees it
    finally:
        gc.enable()
        heap.close()


async def test_the_freeze_happens_where_the_c_library_cannot_trim(monkeypatch):
    monkeypatch.setattr(heap_module, "_malloc_trim", lambda: None)  # musl, macOS
    frozen = asyncio.Event()
    heap = HeapTrim(lambda: 0, quiet=0.01, freeze=frozen.set)
    heap.turn_over()
    await asyncio.wait_for(frozen.wait(), 5)
    assert heap.trims == 0 and heap._timer is None
    heap.turn_over()  # nothing is left to do after a later turn
    assert heap._timer is None
    heap.close()


def test_glibc_has_a_malloc_trim_to_call():
    trim = _malloc_trim()
    assert trim is not None  # Debian's glibc
    trim()  # hands free pages back; returns nothing, raises nothing


async def test_a_started_gateway_hands_back_what_its_start_freed_without_a_turn(home, fake_api):
    """The start is a burst of its own (the SDK's import, the app's wiring): once the model's
    SDK is loaded and a quiet spell follows, the heap is trimmed though no message came, and
    what lives then is frozen out of the garbage collector's full collections."""
    from gateway.app import build_app
    from tests.conftest import RecordingChannel, make_config

    app = build_app(make_config(home, fake_api.base_url), [RecordingChannel()])
    done, when = asyncio.Event(), []
    heap = app.gateway.heap
    heap.quiet, heap._trim = 0.01, _trims_into(done, when)
    await app.start()
    try:
        await asyncio.wait_for(done.wait(), 10)
        assert app.gateway.agent.llm._sdk is not None  # after the SDK was loaded
        assert heap.trims == 1 and len(fake_api.message_requests) == 0
        # What lives then is frozen: the gateway, its SDK client, the configuration.
        assert gc.get_freeze_count() > 0
    finally:
        await app.stop()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_while_the_start_is_paused_nothing_is_collected_then_it_is_frozen_as_it_is():
    """``corvid run`` pauses the collector for its imports; once they are done what lives is
    frozen without a full collection, and the first quiet spell's freeze collects it all."""
    seen: list[int] = []

    def collection(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    frozen_before = gc.get_freeze_count()
    gc.callbacks.append(collection)
    try:
        heap_module.pause_collection()
        assert not gc.isenabled()
        made = [[n] for n in range(5_000)]  # past the youngest generation's threshold
        cycle = weakref.ref(_Cycle())  # garbage only the collector can free
        assert seen == [] and cycle() is not None and len(made) == 5_000
        heap_module.resume_collection()
        assert seen == []  # frozen as it was: no full collection walked it
        assert gc.isenabled() and gc.get_freeze_count() > frozen_before
        gc.collect()
        assert cycle() is not None  # frozen, so out of the collector's sight...
        heap_module.freeze_alive()
        assert cycle() is None  # ...until the first quiet spell collects everything first
    finally:
        gc.callbacks.remove(collection)
        gc.enable()


def test_resuming_a_collector_that_was_not_paused_changes_nothing():
    gc.disable()  # turned off by someone else: not ours to turn back on
    try:
        frozen = gc.get_freeze_count()
        heap_module.resume_collection()
        assert not gc.isenabled() and gc.get_freeze_count() == frozen
    finally:
        gc.enable()


def test_the_collector_comes_back_when_the_sdk_cannot_be_imported(caplog):
    """And the failure is one line of the log, not a thread's traceback on stderr (which
    the test run would turn into an error)."""
    from gateway.ops import run

    try:
        heap_module.pause_collection()
        loading = run._import_sdk_early("corvid_no_such_sdk")  # a real ImportError
        loading.join(10)
        assert not loading.is_alive() and gc.isenabled()
    finally:
        gc.enable()
    [said] = [r for r in caplog.records if r.name == "gateway.ops.run"]
    assert said.levelname == "WARNING" and said.exc_info is None
    assert "could not load corvid_no_such_sdk (ModuleNotFoundError" in said.getMessage()


ARENA_PROBE = """
import ctypes, ctypes.util, json, sys, threading
from gateway.runtime.heap import limit_arenas

limited = limit_arenas() if sys.argv[1] == "limit" else None
barrier = threading.Barrier(7)
kept = []

def allocate():  # blocks above pymalloc's size, from the C library, all threads alive at once
    kept.append([bytes(1000 + i) for i in range(200)])
    barrier.wait()

threads = [threading.Thread(target=allocate) for _ in range(6)]
for t in threads:
    t.start()
barrier.wait()
for t in threads:
    t.join()
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
report = libc.fopen(sys.argv[2].encode(), b"w")
libc.malloc_info(0, report)
libc.fclose(report)
with open(sys.argv[2]) as f:
    print(json.dumps({"limited": limited, "arenas": f.read().count("<heap nr=")}))
"""


def _arenas(tmp_path, mode: str, **env: str) -> dict:
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    environ = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | env
    done = subprocess.run(
        [sys.executable, "-c", ARENA_PROBE, mode, str(tmp_path / f"{mode}.xml")],
        cwd=Path(__file__).resolve().parents[3],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_threads_share_two_arenas_once_limited_unless_the_environment_says_otherwise(tmp_path):
    assert _arenas(tmp_path, "free")["arenas"] == 7  # glibc: one per allocating thread
    assert _arenas(tmp_path, "limit") == {"limited": True, "arenas": 2}
    # The owner's own MALLOC_ARENA_MAX is left as it is (glibc applies it).
    assert _arenas(tmp_path, "limit", MALLOC_ARENA_MAX="3") == {"limited": False, "arenas": 3}
