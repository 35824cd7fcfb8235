"""The agent's settings (model, turn, memory, compaction), read by the gateway's config loader."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.contract.ports import Secret

DEFAULT_MODEL = "claude-sonnet-5-5"


# Declared with its bounds, so the loader names the key of a bad value instead of failing later.
def setting(default: Any, minimum: float | None = None, choices: tuple[str, ...] = ()) -> Any:
    """A dataclass field with the bounds ``config.yaml`` is checked against."""
    return field(default=default, metadata={"min": minimum, "choices": choices})


@dataclass(frozen=True)
class PriceSettings:
    """A model's price in ``llm.prices``, per million tokens (web searches: per thousand)."""

    input: float = setting(0.0, minimum=0)
    output: float = setting(0.0, minimum=0)
    cache_write: float = setting(0.0, minimum=0)
    cache_read: float = setting(0.0, minimum=0)
    web_search: float = setting(10.0, minimum=0)


@dataclass(frozen=True)
class FallbackSettings:
    """A model tried when the ones before it are overloaded or down: on the same API, or on
    another Anthropic-compatible one (its own ``base_url`` and ``api_key``)."""

    model: str = ""
    base_url: str | None = None
    api_key: Secret | None = None


@dataclass(frozen=True)
class LLMSettings:
    api_key: Secret | None = None
    base_url: str | None = None
    model: str = DEFAULT_MODEL
    max_tokens: int = setting(8192, minimum=1)
    context_window: int = setting(200_000, minimum=1000)
    timeout: float = setting(120.0, minimum=1)
    retries: int = setting(2, minimum=0)
    # Prices by model id (a prefix matches dated ids), over the built-in table.
    prices: dict[str, PriceSettings] = field(default_factory=dict)
    # The model for a purpose: "chat", "background" (the flush, summaries, the digest, the
    # heartbeat, consolidation) or one purpose by name; unset ones use ``model``.
    models: dict[str, str] = field(default_factory=dict)
    # Tried in order when the model is overloaded (529), failing (5xx after retries) or too
    # slow; never for a request the API refuses.
    fallbacks: list[FallbackSettings] = field(default_factory=list)
    # How long calls stay on a fallback before the first model is tried again.
    fallback_minutes: float = setting(10.0, minimum=0)


@dataclass(frozen=True)
class AgentSettings:
    max_iterations: int = setting(25, minimum=1)
    bootstrap_max_chars: int = setting(20_000, minimum=100)
    bootstrap_total_max_chars: int = setting(60_000, minimum=100)
    max_input_chars: int = setting(32_000, minimum=100)
    tool_output_max_chars: int = setting(50_000, minimum=1000)
    # What shared chats may store (their files, log and uploads): each, and all together.
    chat_quota_mb: float = setting(50.0, minimum=0.1)
    chat_max_files: int = setting(2000, minimum=10)
    all_chats_quota_mb: float = setting(500.0, minimum=0.1)


@dataclass(frozen=True)
class EmbeddingSettings:
    """Where the vectors of memory search come from (``agent/memory/embedding/``)."""

    # local: a small model run in this process (nothing leaves the machine, no key);
    # openai: any OpenAI-compatible /embeddings endpoint; none: keyword search only.
    provider: str = setting("local", choices=("local", "openai", "none"))
    # The model's name; empty: the provider's default (all-MiniLM-L6-v2 for local,
    # text-embedding-3-small for openai). It names the embedding cache too.
    model: str = ""
    base_url: str = "https://api.openai.com/v1"
    api_key: Secret | None = None
    # Texts sent in one request (openai) or run through the model at once (local).
    batch_size: int = setting(32, minimum=1)
    # The local model's files on this machine, instead of fetching them on first use.
    model_path: str = ""
    # Where the local model's files are fetched from (a mirror of the hub's folder for it);
    # empty: Hugging Face's sentence-transformers/all-MiniLM-L6-v2.
    model_url: str = ""
    timeout: float = setting(60.0, minimum=1)
    retries: int = setting(4, minimum=0)


@dataclass(frozen=True)
class SearchSettings:
    """How memory search ranks: the weights of the keyword and vector rankings in their
    fusion (by rank, not by score), MMR's trade of relevance for variety (1: relevance only),
    and an optional half-life of daily logs (0: none; a note loses rank because a newer note
    on its subject replaced it, not because it is old).

    The defaults are measured on the held-out half of bench/retrieval/'s year of logs
    (bench/memory_year_bench.py): a 120-day half-life kept the oldest third of the year's
    answers at 0.32 recall@10 against 0.87 for the newest; MMR only ever lost recall."""

    vector_weight: float = setting(0.7, minimum=0)
    text_weight: float = setting(0.3, minimum=0)
    mmr_lambda: float = setting(1.0, minimum=0)
    half_life_days: float = setting(0.0, minimum=0)  # 0: no decay


@dataclass(frozen=True)
class RecallSettings:
    """Notes found by searching the message, handed to the model with it before it answers
    (``agent/memory/recall.py``). The bars are measured on bench/retrieval/'s queries
    (bench/recall_bench.py)."""

    enabled: bool = True
    # A note is recalled when its vector's cosine with the message reaches min_similarity
    # (embeddings on), or when its words hold min_words of the message's words, each counted
    # by how rare it is in the memory (BM25's IDF): a name or a code asked about by itself.
    min_similarity: float = setting(0.5, minimum=0)
    min_words: float = setting(0.8, minimum=0)
    max_notes: int = setting(3, minimum=1)
    max_bytes: int = setting(1200, minimum=200)


@dataclass(frozen=True)
class ConsolidationSettings:
    """The job that proposes changes to MEMORY.md from the owner's new log entries."""

    enabled: bool = True
    # Local time, HH:MM (the top-level timezone); empty: half an hour after the daily summary.
    time: str = ""
    # The owner's chat the proposal goes to; empty: the daily summary's target, else the
    # owner's private chat (gateway/scheduling/plan.py, consolidation_target).
    target: str | None = None
    # Apply proposals without asking (still recorded in the history, and reported).
    auto_apply: bool = False
    # A log never read before is read only if this recent (the first run reads a week).
    first_days: int = setting(7, minimum=1)


@dataclass(frozen=True)
class MemorySettings:
    daily_log_max_chars: int = setting(12_000, minimum=500)
    long_term_max_chars: int = setting(20_000, minimum=500)
    search_max_results: int = setting(8, minimum=1)
    chunk_lines: int = setting(30, minimum=4)
    chunk_overlap_lines: int = setting(6, minimum=0)
    embeddings: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    recall: RecallSettings = field(default_factory=RecallSettings)
    consolidation: ConsolidationSettings = field(default_factory=ConsolidationSettings)
    # The owner's private chats may read each paired guest's notes (memory/chats/<guest>/NOTES.md,
    # quoted as the guest's); off: only the guest's own chat reads them.
    owner_reads_guest_notes: bool = True


@dataclass(frozen=True)
class CompactionSettings:
    reserve_tokens: int = setting(20_000, minimum=0)
    soft_threshold_tokens: int = setting(4_000, minimum=0)
    keep_recent_tokens: int = setting(20_000, minimum=500)


@dataclass(frozen=True)
class WebSearchSettings:
    # web_search, off until a provider is chosen: "anthropic" (the Messages API's own search
    # tool, run by the API: no key of its own), "brave" (an API key) or "searxng" (the address
    # of your instance, with the JSON format allowed in its settings).
    provider: str = setting("", choices=("", "anthropic", "brave", "searxng"))
    base_url: str = ""  # default: Brave's API; required for searxng
    api_key: Secret | None = None
    max_results: int = setting(5, minimum=1)
    # anthropic: searches the API may run for one request.
    max_uses: int = setting(5, minimum=1)


@dataclass(frozen=True)
class WebToolSettings:
    # web_fetch: reading a page the person points to.
    enabled: bool = True
    # Also in groups, guild channels and guests' chats (by default only in the owner's own).
    shared: bool = False
    search: WebSearchSettings = field(default_factory=WebSearchSettings)


@dataclass(frozen=True)
class ExecSettings:
    """``tools.exec``: shell commands the model may run, under bubblewrap (``agent/sandbox``)."""

    # Off unless the owner turns it on; then offered in the owner's private chats only.
    enabled: bool = False
    # What the command may write: the workspace, or an empty scratch folder that is gone after.
    writable: str = setting("workspace", choices=("workspace", "scratch"))
    network: bool = False  # its own loopback only, unless the owner allows the network
    timeout: float = setting(30.0, minimum=1)
    memory_mb: int = setting(512, minimum=16)
    max_processes: int = setting(64, minimum=4)
    max_output_kb: int = setting(64, minimum=1)
    # Commands that run without asking (in a conversation that read nothing from outside):
    # shell patterns matched against the whole command, e.g. "git status", "ls *". A command
    # with shell operators (; | & $ ` < > and the like) never matches.
    allow: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ToolSettings:
    web: WebToolSettings = field(default_factory=WebToolSettings)
    exec: ExecSettings = field(default_factory=ExecSettings)


@dataclass(frozen=True)
class McpServerSettings:
    """One Model Context Protocol server: a local command (stdio) or a URL (streamable HTTP)."""

    command: str = ""
    args: list[str] = field(default_factory=list)
    # Added to a small inherited set (PATH, HOME, ...); Corvid's own keys are not passed on.
    env: dict[str, Secret] = field(default_factory=dict)
    url: str = ""
    headers: dict[str, Secret] = field(default_factory=dict)
    enabled: bool = True
    # Also in groups, guild channels and guests' chats (by default only in the owner's own).
    shared: bool = False
    # Seconds one tool call may take, and starting up (connect, handshake, tool list) too.
    timeout: float = setting(60.0, minimum=1)
    start_timeout: float = setting(30.0, minimum=1)

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"


@dataclass(frozen=True)
class McpSettings:
    servers: dict[str, McpServerSettings] = field(default_factory=dict)


@dataclass(frozen=True)
class BudgetSettings:
    """Caps on what model calls cost, in the price table's currency (0: no cap). Days and
    months follow the configured time zone."""

    daily: float = setting(0.0, minimum=0)
    monthly: float = setting(0.0, minimum=0)
    # Each shared chat (a group, a channel, a guest), its jobs included.
    chat_daily: float = setting(0.0, minimum=0)
    chat_monthly: float = setting(0.0, minimum=0)
    # Each scheduled job.
    job_daily: float = setting(0.0, minimum=0)
    job_monthly: float = setting(0.0, minimum=0)
    # The owner is told once per cap and period when this share of it is spent.
    warn_at: float = setting(0.8, minimum=0)
