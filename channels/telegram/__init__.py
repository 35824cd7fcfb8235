"""Telegram, through python-telegram-bot: the adapter, its inbound, replies and Bot API calls."""
