"""The benches run end to end and print every row (``-m bench``: minutes, left out by default);
the values themselves are not asserted, since timings depend on the machine."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# One table row for each of these, found by words that do not depend on the sizes run.
ROWS = (
    "start → first getUpdates",
    "idle RSS, Telegram only",
    "idle RSS, Telegram + Discord",
    "Telegram message → reply, instant model, p50",
    "Telegram message → reply, instant model, p95",
    "CPU per Telegram message",
    "gateway overhead, message → reply in-process, p50",
    "gateway overhead, p99",
    "gateway CPU per message",
    "rapid messages in one chat",
    "bare AsyncAnthropic, last answer",
    "Corvid, last reply",
    "Corvid ÷ bare client",
    "-turn chat, all requests",
    "prompt-cache reads ÷ input tokens, turns 2–",
    "prompt-cache share of all input, turns 2–",
    "input no cache holds, per turn after the first",
    "prompt-cache reads ÷ previous request's whole prompt",
    "chunks, topic queries",
    "memory_search p95, every query word in most chunks",
    "system prompt of a private chat",
    "control page: overview",
    "control page: sessions list",
    "-line transcript",
    "control page: idle RSS it adds (on − off), no browser yet",
    "control page: idle RSS it adds once opened",
    "MCP: first getUpdates later with 3 stdio servers",
    "MCP: Corvid's CPU per tool round trip",
)
NUMBER = re.compile(r"-?\d[\d,]*(\.\d+)?( |$)")


@pytest.mark.bench
@pytest.mark.timeout(330)  # the run's own bound below, not the suite's default
def test_quick_bench_prints_every_row_with_a_number():
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,  # a bound, not a target: the machine may be busy
    )
    assert done.returncode == 0, done.stderr[-4000:]
    out = done.stdout
    for field in ("CPU:", "RAM:", "Python:", "OS:"):
        assert re.search(rf"^{field} \S", out, re.M), f"no {field} line in:\n{out}"
    lines = [line for line in out.splitlines() if line.startswith("| ")]
    assert lines[0] == "| metric | Corvid | target | result |", lines[:1]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[1:]]
    assert all(len(cells) == 4 for cells in rows), rows
    assert len(rows) == len(ROWS), [cells[0] for cells in rows]
    for words in ROWS:
        found = [cells for cells in rows if words in cells[0]]
        assert len(found) == 1, f"{words!r}: {len(found)} rows in\n{out}"
        metric, value, _target, result = found[0]
        assert NUMBER.match(value), f"{metric}: {value!r} is not a number"
        assert result in ("pass", "miss", "—"), f"{metric}: result {result!r}"


def test_the_mutation_run_finds_mutants_that_compile_and_change_the_module():
    import ast

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import mutation
    finally:
        sys.path.remove(str(ROOT / "bench"))
    # Every module, function and test path named still exists (code moves: the list follows).
    assert mutation.check(mutation.TARGETS) == []
    first = (
        "agent/workspace/audience.py",
        "channels/access.py",
        "channels/pairing.py",
        "gateway/runtime/journal.py",
        "gateway/scheduling/ledger.py",
        "gateway/scheduling/scheduler.py",
    )
    for module in first:
        assert len(mutation.mutants(module)) >= 20, module
    for target in mutation.TARGETS:
        module = target.module
        found = mutation.mutants(target)
        assert found and all(mutation.in_scope(m.where, target.only) for m in found), module
        text = (ROOT / module).read_text()
        # As unparsed: a mutant is the module's tree unparsed, so the same text is the same tree.
        original = ast.unparse(ast.parse(text))
        for mutant in found[:: max(1, len(found) // 10)]:
            source = mutation.mutated_source(mutant, text)
            ast.parse(source)  # valid Python
            assert source != original, mutant


FLOOR_ROWS = (
    "start → first getUpdates",
    "first reply after a start",
    "idle RSS",
    "message → reply p50",
    "message → reply p95",
    "the fake API's own time",
    "less the fake API's time",
    "CPU per message, those messages",
    "CPU per message, all at once, messages in turn: median of 1 runs",
    "3 private chats at once",
)


@pytest.mark.bench
@pytest.mark.timeout(330)
def test_the_bench_beside_the_minimal_bot_runs_both_and_prints_every_row():
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "floor_bench.py"),
         "--starts", "1", "--messages", "3", "--idle", "0.5", "--loads", "3",
         "--cpu-rounds", "1", "--cpu-messages", "3"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")][1:]  # no header
    assert len(rows) == len(FLOOR_ROWS), done.stdout
    for row, name in zip(rows, FLOOR_ROWS, strict=True):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert name in cells[0], row
        assert NUMBER.match(cells[1]) and NUMBER.match(cells[2]), row  # both bots measured
        assert cells[4] in ("pass", "miss", "—"), row


@pytest.mark.bench
@pytest.mark.timeout(200)
def test_a_short_soak_with_an_outage_counts_what_is_left_alive_and_no_failure_is():
    """``bench/soak.py --heap``: the gateway, loaded with ``bench/heapwatch``, counts what is
    alive at idle and once quiet at the end; after an outage nothing of a failure is left."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "soak.py"),
         "--chats", "5", "--messages", "10", "--outage", "3", "--heap"],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    out = done.stdout
    assert re.search(
        r"^\| Telegram down 3 s mid-reply: last reply after it came back \| \d", out, re.M
    )
    section = out.split("What is alive in the gateway (after a full collection), idle → end:")
    assert len(section) == 2, out
    heap = section[1]
    assert re.search(
        r"^- objects \(the collector's and frozen ones\): [\d,]+ → [\d,]+$", heap, re.M
    )
    assert re.search(r"^- Python's allocator, arenas of 1 MiB: \d", heap, re.M), heap
    assert re.search(r"^- types grown most: \S", heap, re.M), heap
    assert "- exceptions alive: none" in heap, heap


async def test_the_benches_wait_for_a_process_to_be_quiet_before_counting_its_cpu():
    """``settled_cpu`` returns for an idle process and gives up, saying so, on a busy one."""
    import asyncio

    from bench.telegram_bench import settled_cpu

    idle = await asyncio.create_subprocess_exec(sys.executable, "-c", "input()", stdin=-1)
    busy = await asyncio.create_subprocess_exec(sys.executable, "-c", "while True: pass")
    try:
        await asyncio.wait_for(settled_cpu(idle.pid, quiet=0.5), 20)
        with pytest.raises(RuntimeError, match="still changing"):
            await settled_cpu(busy.pid, quiet=0.5, limit=2.0)
    finally:
        for proc in (idle, busy):
            proc.kill()
            await proc.wait()


async def test_a_value_read_seldom_is_not_taken_for_a_steady_one():
    """On a busy machine the benches may read a process less often than the window they judge
    it over: a window holding one reading is no evidence of quiet. Here every read finds the
    value moved, and a clock moved past the window."""
    from bench.telegram_bench import _steady

    now = [0.0]
    value = [0.0]

    def clock() -> float:
        return now[0]

    def read() -> float:
        now[0] += 0.6  # the next reading comes later than the window of 0.5 s
        value[0] += 1.0
        return value[0]

    with pytest.raises(RuntimeError, match="still changing"):
        await _steady(read, "the value", 0.0, 0.5, 0.1, 3.0, clock=clock)


@pytest.mark.bench
@pytest.mark.timeout(400)
def test_the_check_prints_each_held_row_and_fails_exactly_when_one_misses():
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "check.py"),
         "--starts", "1", "--messages", "3", "--idle", "0.5", "--loads", "3",
         "--cpu-rounds", "1", "--cpu-messages", "3",
         "--soak-messages", "10", "--soak-chats", "5", "--soak-outage", "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=380,
    )  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.startswith("| ")][1:]
    rows = [row for row in lines if row.endswith(("| pass |", "| miss |"))]  # held to a target
    held = ("start → first getUpdates", "idle RSS", "p50,", "all at once", "lost", "growth")
    assert len(rows) == len(held), done.stdout + done.stderr[-4000:]
    for row, words in zip(rows, held, strict=True):
        assert words in row, row
    missed = [row for row in rows if row.endswith("| miss |")]
    assert done.returncode == (1 if missed else 0), done.stderr[-4000:]
    assert ("MISSED" in done.stderr) == bool(missed)
