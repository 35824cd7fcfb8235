"""Writes the retrieval set's memory (MEMORY.md and 90 daily logs) into a workspace and
returns its labelled queries, each with the file and line range of every relevant entry.

The memorable entries come from facts.py; around them each day gets everyday entries
(running, food, errands, meetings, weather) drawn from the pools below with a fixed seed,
so the set is the same on every run and the days read like a real log.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

from bench.retrieval.facts import LOGS, LONG_TERM, MORE, NOTHING, Fact

FIRST_DAY, DAYS = date(2026, 8, 24), 90
STOPWORDS = frozenset(
    """a an the and or of to in on at for with from by about is are was were be been do did does
    my me i we our you your he she his her it its they them their this that these those what
    which who whom when where why how there here not no yes any some all more most new now
    still last latest current than then as so if into over under up down out off can will would
    should could has have had get got go going went let s t""".split()
)


@dataclass(frozen=True)
class Query:
    text: str
    kind: str
    relevant: tuple[tuple[str, int, int], ...]  # (path, first line, last line), 1-based


_FILLER = {
    "run": [
        "Easy {k}k along the canal, {m}:{s:02d} min/km. Legs heavy.",
        "Intervals at the park: 6 x 400 m. Felt strong.",
        "Skipped the run, it was pouring.",
    ],
    "food": [
        "Lunch: {dish} at the canteen. Too salty.",
        "Cooked {dish} for dinner; Tom did the dishes.",
        "Groceries: {item1}, {item2}, {item3}, coffee beans.",
    ],
    "work": [
        "Standup: reviewed {n} PRs, nothing blocking.",
        "Long meeting about Q{q} roadmap. Nothing decided.",
        "Focus day, wrote tests for the {module} module.",
        "Pairing session on flaky CI job in the {module} pipeline.",
        "Read through the on-call handover notes; quiet week.",
    ],
    "home": [
        "Laundry, vacuumed, watered the plants on the balcony.",
        "Biscuit's evening walk in Volkspark Weinbergsweg, {k} km.",
        "Paid the electricity bill, {eur} EUR.",
        "Tom's parents called, they want to visit at Christmas.",
        "Watched {film} with Tom. {verdict}.",
    ],
    "mood": [
        "Tired today, slept badly.",
        "Good day overall, lots of energy.",
        "Headache in the afternoon, too much screen time.",
        "Read {pages} pages of {book} before bed.",
    ],
}
_WORDS = {
    "dish": ["lentil curry", "pasta with pesto", "shakshuka", "mushroom risotto", "falafel bowl"],
    "item": ["oat milk", "eggs", "spinach", "tofu", "apples", "rye bread", "feta", "tomatoes"],
    "module": ["auth", "export", "billing", "search", "notifications"],
    "film": ["Past Lives", "Dune Part Two", "Perfect Days", "an old Columbo episode"],
    "verdict": ["Loved it", "Fell asleep halfway", "Tom liked it more than I did"],
    "book": ["The Overstory", "Piranesi", "a Spanish graded reader", "Klara and the Sun"],
}


def _filler(rng: random.Random) -> str:
    template = rng.choice(_FILLER[rng.choice(list(_FILLER))])
    return template.format(
        k=rng.randint(3, 8),
        m=rng.randint(5, 6),
        s=rng.randint(0, 59),
        dish=rng.choice(_WORDS["dish"]),
        item1=rng.choice(_WORDS["item"]),
        item2=rng.choice(_WORDS["item"]),
        item3=rng.choice(_WORDS["item"]),
        n=rng.randint(2, 6),
        q=rng.randint(1, 4),
        module=rng.choice(_WORDS["module"]),
        eur=rng.randint(60, 120),
        film=rng.choice(_WORDS["film"]),
        verdict=rng.choice(_WORDS["verdict"]),
        pages=rng.randint(10, 80),
        book=rng.choice(_WORDS["book"]),
    )


def build(workspace: Path, seed: int = 29) -> list[Query]:
    """Write the memory files under ``workspace`` and return every labelled query."""
    rng = random.Random(seed)
    unknown = set(MORE) - {f.day or f.time for f in (*LONG_TERM, *LOGS)}
    if unknown:
        raise ValueError(f"queries for entries that do not exist: {sorted(unknown)}")
    (workspace / "memory").mkdir(parents=True, exist_ok=True)
    where: dict[int, tuple[str, int, int]] = {}
    lines = ["# Long-term memory", ""]
    for fact in LONG_TERM:
        lines += [f"## {fact.time}", ""]
        start = len(lines) + 1
        lines += list(fact.lines)
        where[id(fact)] = ("MEMORY.md", start - 2, len(lines))
        lines.append("")
    (workspace / "MEMORY.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    by_day: dict[str, list[Fact]] = {}
    for fact in LOGS:
        by_day.setdefault(fact.day, []).append(fact)
    for offset in range(DAYS):
        day = FIRST_DAY + timedelta(days=offset)
        lines = [f"# {day}", ""]
        entries: list[tuple[str, Fact | None, str]] = [
            (f"{rng.randint(7, 22):02d}:{rng.choice((0, 15, 30, 45)):02d}", None, _filler(rng))
            for _ in range(rng.randint(3, 7))
        ]
        entries += [(f.time, f, "") for f in by_day.get(f"{day:%m-%d}", [])]
        entries.sort(key=lambda e: e[0])
        for time, fact, text in entries:
            lines += [f"## {time}", ""]
            if fact is None:
                lines += [text, ""]
                continue
            start = len(lines) - 1  # the heading counts as part of the entry
            lines += list(fact.lines)
            where[id(fact)] = (f"memory/{day}.md", start, len(lines))
            lines.append("")
        (workspace / "memory" / f"{day}.md").write_text("\n".join(lines), encoding="utf-8")
    queries = [
        Query(text, kind, (where[id(fact)],))
        for fact in (*LONG_TERM, *LOGS)
        for kind, text in (*fact.queries, *MORE.get(fact.day or fact.time, ()))
    ]
    queries += [Query(text, "nothing", ()) for text in NOTHING]
    _check(workspace, queries)
    return queries


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[^\W_]+", text.casefold()) if w not in STOPWORDS}


def _check(workspace: Path, queries: list[Query]) -> None:
    """A paraphrase must share no content word with its entry, not even as a prefix (the
    keyword index matches prefixes); a broken label would flatter one mode or the other."""
    for q in queries:
        if q.kind != "paraphrase":
            continue
        path, first, last = q.relevant[0]
        entry = (workspace / path).read_text(encoding="utf-8").splitlines()[first - 1 : last]
        words = content_words("\n".join(entry))
        shared = {t for t in content_words(q.text) if any(w.startswith(t) for w in words)}
        if shared:
            raise ValueError(f"paraphrase {q.text!r} shares {sorted(shared)} with its entry")
