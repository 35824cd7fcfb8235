"""The model writes Markdown (CommonMark with tables and strikethrough); chat platforms want it
in pieces under their length limits, and Telegram as HTML. The parser both use is in
``parse``, splitting in ``split`` (with cuts inside one block in ``cut``); Telegram's
rendering is in ``channels/telegram/html.py``, the terminal's in ``ansi``."""

from channels.markdown.parse import parse, parser, too_deep, utf16_len
from channels.markdown.split import split_markdown

__all__ = ["parse", "parser", "split_markdown", "too_deep", "utf16_len"]
