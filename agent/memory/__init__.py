"""Memory as files: the daily logs and MEMORY.md, their search index, and the memory tools."""
