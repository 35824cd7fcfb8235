"""Open loops: what the owner or the assistant committed to, kept as Markdown, nudged when due."""
