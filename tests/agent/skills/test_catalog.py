"""Skills: the SKILL.md format checked, listed by name and description, read when needed, and
private unless marked shared."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from agent.skills.catalog import SkillCatalog, SkillError, parse
from agent.tools.context import TurnContext
from agent.tools.registry import ToolRegistry
from gateway.contract.events import SessionKey

TZ = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 3, 14, 15, 9, tzinfo=TZ)
OWNER = SessionKey("test", "private", "1")
GROUP = SessionKey("test", "group", "2")


def write_skill(root: Path, name: str, description: str, body: str, **front: object) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    extra = "".join(f"{k}: {v}\n" for k, v in front.items())
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n"
    )
    return folder


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no front matter", "must start with YAML front matter"),
        ("---\nname: x\n", "not closed"),
        ("---\nname: Bad Name\ndescription: d\n---\n", "lowercase letters"),
        ("---\nname: other\ndescription: d\n---\n", "differs from its folder"),
        ("---\nname: x\n---\nbody", "description is missing"),
        ("---\nname: x\ndescription: d\nshared: yes please\n---\n", "shared must be"),
        ("---\n[1, 2]\n---\n", "must be a mapping"),
    ],
)
def test_a_skill_that_breaks_the_format_says_what_is_wrong(
    tmp_path: Path, text: str, problem: str
) -> None:
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "SKILL.md").write_text(text)
    with pytest.raises(SkillError, match=problem):
        parse(folder)


def ctx(ws: Path, key: SessionKey) -> TurnContext:
    return TurnContext(key=key, workspace=ws, now=NOW, tz=TZ)


async def test_the_prompt_lists_names_and_descriptions_and_the_body_is_read_with_a_tool(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    write_skill(ws / "skills", "packing", "Pack for a trip.", "PRIVATE-BODY: the passport first.")
    write_skill(ws / "skills", "games", "Run a quiz.", "SHARED-BODY: ask in turns.", shared="true")
    write_skill(ws / "skills", "broken", "", "nothing")
    catalog = SkillCatalog(ws)
    private, shared = catalog.section(True), catalog.section(False)
    assert "- packing: Pack for a trip." in private and "- games: Run a quiz." in private
    assert "- keeping-memory: " in private  # bundled
    assert "BODY" not in private
    assert shared.splitlines()[2:] == ["- games: Run a quiz."]
    assert catalog.section(True) == private  # the same bytes every time
    _, problems = catalog.all()
    assert problems == ["broken: description is missing"]
    tools = ToolRegistry([catalog.tool()])
    read = await tools.call("read_skill", {"name": "packing"}, ctx(ws, OWNER))
    assert "PRIVATE-BODY" in read.text and not read.is_error
    refused = await tools.call("read_skill", {"name": "packing"}, ctx(ws, GROUP))
    assert refused.is_error and "PRIVATE-BODY" not in refused.text
    assert refused.text == "No skill 'packing' here. Skills: games."
    read = await tools.call("read_skill", {"name": "games"}, ctx(ws, GROUP))
    assert "SHARED-BODY" in read.text


def test_a_workspace_skill_never_replaces_a_bundled_one_and_says_why(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_skill(ws / "skills", "morning-briefing", "Mine.", "my own way")
    skills, problems = SkillCatalog(ws).all()
    assert skills["morning-briefing"].bundled and skills["morning-briefing"].description != "Mine."
    assert problems == [
        "morning-briefing: has the name of a skill that comes with Corvid, which it may not "
        "replace; rename its folder and its name"
    ]


def test_the_bundled_skills_follow_the_format() -> None:
    skills, problems = SkillCatalog(Path("/nonexistent")).all()
    assert problems == []
    assert sorted(skills) == ["keeping-memory", "morning-briefing", "writing-skills"]
    assert not any(s.shared for s in skills.values())


def test_a_skill_is_parsed_again_only_once_its_file_has_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each new session's prompt lists the skills: an unchanged SKILL.md is not parsed again,
    an edited one (or one made valid) is, and one removed is gone."""
    import agent.skills.catalog as catalog

    parsed: list[str] = []

    def counting(folder: Path, *, bundled: bool = False, text: str | None = None):
        parsed.append(folder.name)
        return parse(folder, bundled=bundled, text=text)

    monkeypatch.setattr(catalog, "parse", counting)
    root = tmp_path / "skills"
    write_skill(root, "tea", "Brew tea", "Boil water.")
    broken = root / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("no front matter")
    skills = SkillCatalog(tmp_path, bundled=tmp_path / "none")
    first = skills.all()
    assert skills.all() == first and sorted(parsed) == ["broken", "tea"]
    assert list(first[0]) == ["tea"] and "must start with YAML" in first[1][0]

    (root / "tea" / "SKILL.md").write_text("---\nname: tea\ndescription: Brew green tea\n---\nx\n")
    (broken / "SKILL.md").write_text("---\nname: broken\ndescription: Fixed now\n---\n")
    found, problems = skills.all()
    assert found["tea"].description == "Brew green tea" and found["broken"].description
    assert problems == [] and sorted(parsed) == ["broken", "broken", "tea", "tea"]
    (root / "tea" / "SKILL.md").unlink()
    found, problems = skills.all()
    assert list(found) == ["broken"] and problems == ["tea: no SKILL.md"]


def test_the_bundled_skills_are_looked_at_once_and_the_workspace_each_time(tmp_path: Path) -> None:
    """The skills that come with Corvid change only with it: they are read once, while the
    workspace's are looked at for each new session's prompt."""
    bundled = tmp_path / "bundled"
    write_skill(bundled, "tea", "Brew tea", "Boil water.")
    skills = SkillCatalog(tmp_path / "ws", bundled=bundled)
    assert list(skills.all()[0]) == ["tea"]
    (bundled / "tea" / "SKILL.md").unlink()
    write_skill(bundled, "coffee", "Brew coffee", "Grind beans.")
    write_skill(tmp_path / "ws" / "skills", "cocoa", "Make cocoa", "Warm milk.")
    found, problems = skills.all()
    assert sorted(found) == ["cocoa", "tea"] and problems == []
    assert found["tea"].bundled and not found["cocoa"].bundled
