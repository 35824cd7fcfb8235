"""Writes a year of one person's daily logs into a workspace, in the format ``memory_append``
writes (``# YYYY-MM-DD``, then ``## HH:MM`` and the entry), and returns the labelled questions.

Around the memorable notes (year_events.py, year_series.py) every day gets everyday entries
drawn with a fixed seed, so the set is the same on every run. The one-off notes are spread
evenly over the year; each question names the one entry that answers it (for a changed fact,
its newest version, with the older ones kept to check their order). Half the questions are
held out: the split is by note, fixed by the seed, so no note's questions are in both halves.
The fresh facts (year_fresh.py), written apart from the ranking, are a third set, never tuned
on; their entries draw their times from their own stream, so the other notes' days stay as
they were.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from agent.memory.links import Newer, heading_place, heading_time, marked
from bench.retrieval.corpus import content_words
from bench.retrieval.year_events import EVENTS, WHEN, P, W
from bench.retrieval.year_fresh import FRESH
from bench.retrieval.year_series import CHANGED, FILLER, SERIES, WORDS

FIRST_DAY, DAYS = date(2025, 12, 1), 365
TODAY = FIRST_DAY + timedelta(days=DAYS - 1)  # the questions are asked on the last day
Span = tuple[str, int, int]  # path, first line, last line (1-based, the heading included)


@dataclass(frozen=True)
class YearQuery:
    text: str
    kind: str  # keyword, paraphrase, plain, when, latest, dated
    answer: Span
    day: date  # when the answer was written
    older: tuple[Span, ...] = ()  # a changed fact's earlier versions
    held_out: bool = False
    style: str = ""  # how a latest or dated question is put: plain, paraphrase, when
    fresh: bool = False  # one of the fresh facts'


@dataclass
class _Entry:
    time: str
    text: str
    key: str = ""  # the note's id, for its span


def _filler(rng: random.Random) -> str:
    w = WORDS
    return rng.choice(FILLER).format(
        k=rng.randint(3, 8), m=rng.randint(5, 6), s=rng.randint(0, 59), n=rng.randint(2, 6),
        q=rng.randint(1, 4), eur=rng.randint(60, 120), pages=rng.randint(10, 80),
        dish=rng.choice(w["dish"]), item=rng.choice(w["item"]), item2=rng.choice(w["item"]),
        module=rng.choice(w["module"]), film=rng.choice(w["film"]),
        verdict=rng.choice(w["verdict"]), book=rng.choice(w["book"]),
    )  # fmt: skip


def _placed(rng: random.Random) -> dict[date, list[tuple[str, str]]]:
    """(key, text) of every memorable note by its day."""
    by_day: dict[date, list[tuple[str, str]]] = {}
    fixed = [e for e in EVENTS if e.day]
    loose = [e for e in EVENTS if not e.day]
    rng.shuffle(loose)
    for i, e in enumerate(loose):
        day = FIRST_DAY + timedelta(days=round((i + 0.5) * DAYS / len(loose)))
        by_day.setdefault(day, []).append((f"event:{EVENTS.index(e)}", e.text))
    for e in fixed:
        month, dom = (int(x) for x in e.day.split("-"))
        day = date(FIRST_DAY.year if month == 12 else FIRST_DAY.year + 1, month, dom)
        by_day.setdefault(day, []).append((f"event:{EVENTS.index(e)}", e.text))
    for c in CHANGED + FRESH:
        for n, (iso, text) in enumerate(c.versions):
            by_day.setdefault(date.fromisoformat(iso), []).append((f"{c.subject}:{n}", text))
    for n, (iso, text, _) in enumerate(SERIES):
        by_day.setdefault(date.fromisoformat(iso), []).append((f"series:{n}", text))
    return by_day


def write_logs(workspace: Path, rng: random.Random, filler: tuple[int, int]) -> dict[str, Span]:
    """The year's logs under ``workspace/memory``; returns each memorable note's span."""
    folder = workspace / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    placed = _placed(rng)
    fresh = {f"{c.subject}:{n}" for c in FRESH for n in range(len(c.versions))}
    own = random.Random("fresh")  # their own stream: the other entries draw as before
    where: dict[str, Span] = {}
    for offset in range(DAYS):
        day = FIRST_DAY + timedelta(days=offset)
        entries = [
            _Entry(f"{rng.randint(7, 22):02d}:{rng.choice((0, 15, 30, 45)):02d}", _filler(rng))
            for _ in range(rng.randint(*filler))
        ]
        entries += [
            _Entry(f"{r.randint(8, 21):02d}:{r.choice((5, 20, 35, 50)):02d}", text, key)
            for key, text in placed.get(day, [])
            for r in [own if key in fresh else rng]
        ]
        entries.sort(key=lambda e: e.time)
        rel = f"memory/{day.isoformat()}.md"
        lines = [f"# {day.isoformat()}", ""]
        for e in entries:
            lines += [f"## {e.time}", "", e.text, ""]
            if e.key:
                where[e.key] = (rel, len(lines) - 3, len(lines) - 1)
        (workspace / rel).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return where


def build(
    workspace: Path,
    seed: int = 68,
    filler: tuple[int, int] = (6, 10),
    notes: dict[str, Span] | None = None,
    linked: bool = False,
) -> list[YearQuery]:
    """Write the year under ``workspace`` and return every labelled question; ``notes``, when
    given, is filled with every memorable note's span by its key ("event:3", "rent:1": the
    second version of the rent). ``linked``: every older version of a changed fact carries
    the mark ``memory_append``'s ``replaces`` writes, naming the next version."""
    rng = random.Random(seed)
    where = write_logs(workspace, rng, filler)
    if linked:
        _link(workspace, where)
    if notes is not None:
        notes.update(where)
    day_of = {key: date.fromisoformat(span[0][7:17]) for key, span in where.items()}
    notes: list[tuple[str, list[YearQuery]]] = []
    for i, e in enumerate(EVENTS):
        key = f"event:{i}"
        more = [(W, t) for start, t in WHEN.items() if e.text.startswith(start)]
        qs = [YearQuery(t, k, where[key], day_of[key]) for k, t in (*e.questions, *more)]
        notes.append((key, qs))
    for c in CHANGED:
        keys = [f"{c.subject}:{n}" for n in range(len(c.versions))]
        older = tuple(where[k] for k in keys[:-1])
        newest = where[keys[-1]], day_of[keys[-1]]
        qs = [YearQuery(t, "latest", *newest, older, style=k) for k, t in c.questions]
        notes.append((c.subject, qs))
    for n, (_, _, questions) in enumerate(SERIES):
        key = f"series:{n}"
        notes.append(
            (key, [YearQuery(t, "dated", where[key], day_of[key], style=k) for k, t in questions])
        )
    order = list(range(len(notes)))
    random.Random(seed + 1).shuffle(order)
    held = {notes[i][0] for i in order[::2]}
    for c in FRESH:
        keys = [f"{c.subject}:{n}" for n in range(len(c.versions))]
        older = tuple(where[k] for k in keys[:-1])
        newest = where[keys[-1]], day_of[keys[-1]]
        qs = [YearQuery(t, "latest", *newest, older, True, k, True) for k, t in c.questions]
        notes.append((c.subject, qs))
    queries = [
        YearQuery(
            q.text,
            q.kind,
            q.answer,
            q.day,
            q.older,
            key in held or q.fresh,
            q.style or q.kind,
            q.fresh,
        )
        for key, qs in notes
        for q in qs
    ]
    _check(workspace, queries)
    return queries


def _link(workspace: Path, where: dict[str, Span]) -> None:
    """Mark each older version of a changed fact as replaced by the next, as the model does
    when it names the older in ``replaces`` (the mark moves no line: the spans stay right)."""
    for c in CHANGED + FRESH:
        for n in range(len(c.versions) - 1):
            old, new = where[f"{c.subject}:{n}"], where[f"{c.subject}:{n + 1}"]
            text = (workspace / new[0]).read_text(encoding="utf-8")
            time = heading_time(text.splitlines()[new[1] - 1])
            assert time is not None, new  # a span starts at its entry's heading
            newer = Newer(Path(new[0]).stem, time, heading_place(text, new[1]))
            path = workspace / old[0]
            path.write_text(marked(path.read_text(encoding="utf-8"), old[1], newer), "utf-8")


def _check(workspace: Path, queries: list[YearQuery]) -> None:
    """A paraphrase shares no content word with its answer, not even as a prefix (the keyword
    index matches prefixes); a broken label would flatter one mode or the other."""
    broken = []
    for q in queries:
        if q.style != P:
            continue
        path, first, last = q.answer
        entry = (workspace / path).read_text(encoding="utf-8").splitlines()[first - 1 : last]
        words = content_words("\n".join(entry))
        shared = {t for t in content_words(q.text) if any(w.startswith(t) for w in words)}
        if shared:
            broken.append(f"{q.text!r} shares {sorted(shared)}")
    if broken:
        raise ValueError("paraphrases share words with their entries: " + "; ".join(broken))
