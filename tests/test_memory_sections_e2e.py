"""MEMORY.md by kind through the real chat path: the first consolidation over a free-form file
proposes its move into sections, every old line accounted for in the proposal; applied by its
button, nothing is lost; the next proposal puts a new note in its section, dated."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

from tests.test_consolidation_e2e import (  # noqa: F401 (the fixture, used by its name)
    NOW,
    consolidating_brain,
    consolidating_gateways,
    run_job,
)

FREE = (
    "# Long-term memory\n\nCurated facts worth keeping for months.\n\n## Family\n\n"
    "- Anna is my sister.\n- Tom: my partner,\n  teaches physics.\n\n## Misc\n\n"
    "- No meetings before 10.\n- Kitchen renovation starts in May.\n- Spare key: with Bob.\n"
)


def _log(home, day, text: str) -> str:
    path = home / "workspace" / "memory" / f"{day.isoformat()}.md"
    path.write_text(f"# {day.isoformat()}\n\n## 10:00\n\n{text}\n")
    return f"memory/{day.isoformat()}.md"


async def test_a_free_form_memory_is_moved_into_sections_with_every_line_accounted_for(
    home, fake_api, consolidating
):
    memory = home / "workspace" / "MEMORY.md"
    memory.write_text(FREE)
    log = _log(home, NOW.date(), "Anna's birthday is on 4 May.")
    move = {
        "changes": [
            {"op": "place", "old": "- Anna is my sister.", "section": "People",
             "reason": "someone in the owner's life"},
            {"op": "place", "old": "- No meetings before 10.", "section": "Preferences",
             "reason": "how the owner wants their days"},
            {"op": "add", "text": "- Anna's birthday: 4 May.", "section": "People",
             "reason": "a date to remember about her", "sources": [f"{log}:5"]},
        ]
    }  # fmt: skip
    calls: list[dict] = []
    fake_api.brain = consolidating_brain(calls, move)
    app, chan = await consolidating.start()
    status, error = await run_job(app)
    assert (str(status), error) == ("sent", None)
    system = calls[0]["system"]
    system = system if isinstance(system, str) else system[0]["text"]
    assert "Some of MEMORY.md is in no section yet. Propose the move too" in system
    [proposal] = chan.sent
    for line in ("- Tom: my partner,", "- Kitchen renovation starts", "- Spare key: with Bob."):
        assert line in proposal.text  # each old line is in the proposal, placed or left over
    assert "→ People" in proposal.text and "→ Not sorted yet" in proposal.text
    await asyncio.wait_for(chan.push(dict(proposal.buttons)["Apply all"]), 10)
    after = memory.read_text()
    for line in FREE.splitlines()[4:]:
        if line.strip() and not line.startswith("#"):
            assert line in after, line
    people = after.split("## People\n")[1].split("\n## ")[0]
    assert "- Anna is my sister." in people
    assert f"- Anna's birthday: 4 May. (learned {NOW.date()}, {log}:5)" in people
    assert "## Family" not in after and "## Misc" not in after
    assert "<untrusted" not in after  # the owner's own lines, moved, are still theirs

    # The next day: a new note goes in its section, and no move is asked for again.
    tomorrow = NOW.date() + timedelta(days=1)
    log = _log(home, tomorrow, "Tom got the physics prize.")
    add = {"changes": [{"op": "add", "text": "- Tom won the physics prize.", "section": "People",
                        "reason": "about Tom", "sources": [f"{log}:5"]}]}  # fmt: skip
    fake_api.brain = consolidating_brain(calls, add)
    app.scheduler.clock.tick(24 * 3600)
    status, error = await run_job(app)
    assert (str(status), error) == ("sent", None)
    system = calls[1]["system"]
    system = system if isinstance(system, str) else system[0]["text"]
    assert "in no section yet" not in system and "in sections by kind" in system
    await asyncio.wait_for(chan.push(dict(chan.sent[-1].buttons)["Apply all"]), 10)
    people = memory.read_text().split("## People\n")[1].split("\n## ")[0]
    assert f"- Tom won the physics prize. (learned {tomorrow}, {log}:5)" in people
    assert json.dumps(memory.read_text()).count("## People") == 1
