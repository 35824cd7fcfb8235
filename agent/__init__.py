"""The agent: model calls, tools, workspace files and session transcripts."""
