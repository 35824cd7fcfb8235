"""Discord, through discord.py: the adapter and ``corvid doctor``'s check of the bot."""
