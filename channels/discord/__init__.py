"""Discord, through discord.py: ``channel`` (the adapter: gateway events in, Markdown replies
out, slash commands) and ``probe`` (``corvid doctor``'s check of the token and intents)."""
