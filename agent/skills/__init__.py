"""Skills: folders with a ``SKILL.md`` that teach the assistant how to do one kind of task."""
