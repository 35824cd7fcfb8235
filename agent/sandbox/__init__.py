"""The ``exec`` tool: a shell command run under bubblewrap, never outside it."""
