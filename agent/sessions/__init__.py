"""Sessions: transcripts on disk, the ones loaded, their system prompts, flush and compaction."""
