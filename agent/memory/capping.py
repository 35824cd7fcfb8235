"""How much of a memory file a prompt shows: a log's newest part, a long-term file's head."""

from __future__ import annotations

from agent.workspace.audience import reopened


def cap_log(text: str, limit: int, rel: str) -> str:
    """Keep the newest part of a log, starting at an entry heading; say how to read the rest."""
    if len(text) <= limit:
        return text.strip()
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith("## ")]
    total = len(text)
    keep_from = None
    consumed = 0
    offsets = []
    for line in lines:
        offsets.append(consumed)
        consumed += len(line)
    for i in starts:
        if total - offsets[i] <= limit:
            keep_from = i
            break
    if keep_from is None:  # the newest entry alone is too long: keep its end, whole lines
        keep_from = len(lines) - 1
        while keep_from > 0 and total - offsets[keep_from - 1] <= limit:
            keep_from -= 1
    kept = reopened("".join(lines[keep_from:]).strip())
    note = (
        f"[Older part of this log not shown: lines 1-{keep_from} ({offsets[keep_from]} "
        f'characters). Read it with memory_get(path="{rel}", from=1, lines={keep_from}).]'
    )
    return f"{note}\n\n{kept}"


def cap_head(text: str, limit: int, rel: str) -> str:
    """Keep the beginning of a file, cut at a line; say where the rest starts."""
    if len(text) <= limit:
        return text.strip()
    cut = text.rfind("\n", 0, limit)
    cut = cut if cut > 0 else limit
    # The line the rest starts on: the next one after a line break, else (a line longer
    # than the limit, cut inside) the line the cut is in.
    next_line = text.count("\n", 0, cut) + (2 if text[cut : cut + 1] == "\n" else 1)
    return (
        text[:cut].strip() + f"\n\n[{rel} continues: {len(text) - cut} more characters from line "
        f'{next_line}. Use memory_search, or memory_get(path="{rel}", from={next_line}).]'
    )
