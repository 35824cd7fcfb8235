"""What a call costs: prices per million tokens by model, defaults that ``llm.prices`` overrides."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from agent.settings import PriceSettings

# The API's server-side web search, per search (USD 10 per thousand).
WEB_SEARCH = 0.01


def usd(amount: float) -> str:
    """An amount as people read it: every price and cap here is in US dollars ($0.42; a
    fraction of a cent to four places, $0.0072)."""
    return f"${amount:.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.4f}"


@dataclass(frozen=True, slots=True)
class Price:
    """Per million tokens; ``long_above`` > 0: a request whose prompt (input, cache writes and
    reads together) is longer pays ``long_factor`` times every rate (Haiku 5.5's second tier)."""

    input: float
    cache_write: float  # five-minute cache writes, the only kind Corvid makes
    cache_read: float
    output: float
    web_search: float = WEB_SEARCH
    long_above: int = 0
    long_factor: float = 1.0

    def cost(
        self, input: int, cache_write: int, cache_read: int, output: int, searches: int = 0
    ) -> float:
        prompt = input + cache_write + cache_read
        factor = self.long_factor if self.long_above and prompt > self.long_above else 1.0
        tokens = (
            input * self.input
            + cache_write * self.cache_write
            + cache_read * self.cache_read
            + output * self.output
        )
        return tokens * factor / 1_000_000 + searches * self.web_search


# From Anthropic's published pricing (November 2026), USD per million tokens. Model ids are
# matched by prefix, so dated ids ("claude-haiku-4-5-20251001") find their family.
DEFAULT_PRICES: Mapping[str, Price] = {
    "claude-fable-5-1": Price(10.0, 12.5, 0.25, 50.0),
    "claude-fable-5": Price(10.0, 12.5, 1.0, 50.0),
    "claude-opus-5-5": Price(4.0, 5.0, 0.20, 20.0),
    "claude-opus-5": Price(5.0, 6.25, 0.50, 25.0),
    "claude-opus-4-8": Price(5.0, 6.25, 0.50, 25.0),
    "claude-opus-4-7": Price(5.0, 6.25, 0.50, 25.0),
    "claude-opus-4-6": Price(5.0, 6.25, 0.50, 25.0),
    "claude-opus-4-5": Price(5.0, 6.25, 0.50, 25.0),
    "claude-opus-4-1": Price(15.0, 18.75, 1.50, 75.0),
    "claude-opus-4": Price(15.0, 18.75, 1.50, 75.0),
    # Sonnet 5.5's cache reads were cut from $0.20 to $0.10 on 2026-10-07; its model page still
    # showed the old rate for a while after.
    "claude-sonnet-5-5": Price(2.0, 2.5, 0.10, 10.0),
    "claude-sonnet-5": Price(2.0, 2.5, 0.20, 10.0),
    "claude-sonnet-4": Price(3.0, 3.75, 0.30, 15.0),
    "claude-haiku-5-5": Price(0.10, 0.125, 0.01, 0.50, long_above=100_000, long_factor=5.0),
    "claude-haiku-4-5": Price(1.0, 1.25, 0.10, 5.0),
    "claude-3-5-haiku": Price(0.80, 1.0, 0.08, 4.0),
    # OpenAI's embedding models, for memory search with memory.embeddings.provider: openai.
    "text-embedding-3-small": Price(0.02, 0.0, 0.0, 0.0),
    "text-embedding-3-large": Price(0.13, 0.0, 0.0, 0.0),
}


class PriceTable:
    def __init__(self, configured: Mapping[str, PriceSettings] | None = None) -> None:
        prices = dict(DEFAULT_PRICES)
        for model, p in (configured or {}).items():
            prices[model] = Price(
                p.input, p.cache_write, p.cache_read, p.output, p.web_search / 1000
            )
        # Longest first: "claude-opus-4-5" before "claude-opus-4".
        self._prices = sorted(prices.items(), key=lambda kv: len(kv[0]), reverse=True)
        self._found: dict[str, Price | None] = {}

    def get(self, model: str) -> Price | None:
        if model not in self._found:
            self._found[model] = next(
                (p for prefix, p in self._prices if model == prefix or model.startswith(prefix)),
                None,
            )
        return self._found[model]

    def cost(
        self,
        model: str,
        input: int,
        cache_write: int,
        cache_read: int,
        output: int,
        searches: int = 0,
    ) -> float:
        price = self.get(model)
        if price is None:
            return 0.0
        return price.cost(input, cache_write, cache_read, output, searches)
