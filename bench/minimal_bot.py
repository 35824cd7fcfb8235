"""The cheapest Telegram assistant these two libraries make, to measure Corvid against:
python-telegram-bot's long polling, one Messages API call per text message through the
anthropic SDK, the answer sent back. No memory, no history, no tools, no journal.

``python bench/minimal_bot.py`` with ``TELEGRAM_BOT_TOKEN``, ``TELEGRAM_BASE_URL`` (a Bot API
base such as ``http://127.0.0.1:8081/bot``), ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL``
set; ``MINIMAL_POLL_TIMEOUT`` (seconds, default 10) is the long poll's timeout. It handles
updates concurrently, as a bot that serves many chats at once must. ``bench/floor_bench.py``
runs it beside ``corvid run``.
"""

from __future__ import annotations

import os

import anthropic
from telegram import Update
from telegram.ext import Application, ContextTypes, MessageHandler, filters

MODEL = "claude-sonnet-5-5"


def main() -> None:
    client = anthropic.AsyncAnthropic()  # the key and base URL from the environment

    async def answer(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.effective_message
        if message is None or not message.text:
            return
        reply = await client.messages.create(
            model=MODEL,
            max_tokens=1024,
            messages=[{"role": "user", "content": message.text}],
        )
        text = "".join(block.text for block in reply.content if block.type == "text")
        await message.reply_text(text or "(no answer)")

    app = (
        Application.builder()
        .token(os.environ["TELEGRAM_BOT_TOKEN"])
        .base_url(os.environ["TELEGRAM_BASE_URL"])
        .concurrent_updates(True)
        .build()
    )
    app.add_handler(MessageHandler(filters.TEXT, answer))
    app.run_polling(timeout=int(os.environ.get("MINIMAL_POLL_TIMEOUT", "10")), poll_interval=0)


if __name__ == "__main__":
    main()
