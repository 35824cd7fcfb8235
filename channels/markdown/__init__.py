"""The model's Markdown for chat platforms: parsed once, split under a length limit."""

from channels.markdown.parse import parse, parser, too_deep, utf16_len
from channels.markdown.split import split_markdown

__all__ = ["parse", "parser", "split_markdown", "too_deep", "utf16_len"]
