"""``corvid loops``: each audience's open loops from the workspace, overdue ones marked, and the
lines not read as loops."""

from __future__ import annotations

import json

from gateway.ops.cli import main

OWNERS = (
    "# Open loops\n\n## Open\n\n- [ ] #1 Call the landlord · due: 2020-01-02\n"
    "- [ ] #2 Book flights · who: owner\nsomething else\n\n## Done\n\n- [x] #3 Pay rent\n"
)


def test_corvid_loops_lists_the_open_ones_by_whose_they_are(home, capsys):
    workspace = home / "workspace"
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / "LOOPS.md").write_text(OWNERS)
    chat = workspace / "memory" / "chats" / "telegram-group--100"
    chat.mkdir(parents=True)
    (chat / "LOOPS.md").write_text("## Open\n\n- [ ] #1 Bring the cake\n")
    assert main(["loops", "--home", str(home)], environ={}) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:4] == [
        "Yours (memory/LOOPS.md):",
        " ! #1 Call the landlord · due 2020-01-02 (overdue)",
        "   #2 Book flights · who: owner",
        "   not read as a loop: line 7 is not a loop, kept as it is: something else",
    ]
    assert "The chat telegram-group--100 (memory/chats/telegram-group--100/LOOPS.md):" in out
    assert "Pay rent" not in out
    assert main(["loops", "--all", "--json", "--home", str(home)], environ={}) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["chat"] for r in rows] == [None, "telegram-group--100"]
    assert [lp["what"] for lp in rows[0]["loops"]] == ["Call the landlord", "Book flights",
                                                       "Pay rent"]  # fmt: skip


def test_corvid_loops_with_none(home, capsys):
    assert main(["loops", "--home", str(home)], environ={}) == 0
    assert capsys.readouterr().out == "No open loops.\n"
