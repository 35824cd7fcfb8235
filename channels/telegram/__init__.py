"""Telegram, through python-telegram-bot: ``channel`` (the adapter: lifecycle, polling or a
webhook), ``inbound`` (platform messages → arrivals), ``replies`` (Markdown → Telegram HTML,
split under the limit), ``api`` (Bot API calls with flood-limit and network retries)."""
