"""Where everything lives in Corvid's home folder: the one place that names its files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    """The paths of one home folder. ``state/`` is Corvid's own; ``workspace/`` is the
    owner's and the agent's (``agent/`` knows its inside)."""

    home: Path

    @property
    def config_file(self) -> Path:
        return self.home / "config.yaml"

    @property
    def workspace(self) -> Path:
        return self.home / "workspace"

    @property
    def state(self) -> Path:
        return self.home / "state"

    # -- in state/ --------------------------------------------------------------------------------

    @property
    def run_lock(self) -> Path:
        """Held by the one ``corvid run`` of this home."""
        return self.state / "run.lock"

    @property
    def chat_lock(self) -> Path:
        """Held by the one ``corvid chat`` of this home."""
        return self.state / "chat.lock"

    @property
    def control_socket(self) -> Path:
        """Where the running gateway answers ``corvid status``, ``jobs run`` and ``reload``."""
        return self.state / "control.sock"

    @property
    def sessions(self) -> Path:
        """The transcripts, one JSON-lines file per session."""
        return self.state / "sessions"

    @property
    def journal(self) -> Path:
        """Messages owed an answer, and what was sent (SQLite)."""
        return self.state / "gateway.sqlite"

    @property
    def ledger(self) -> Path:
        """The scheduler's runs, exactly once per slot (SQLite)."""
        return self.state / "scheduler.sqlite"

    @property
    def usage(self) -> Path:
        """Every paid call and what it cost (SQLite)."""
        return self.state / "usage.sqlite"

    @property
    def jobs(self) -> Path:
        """Reminders and jobs made in chat."""
        return self.state / "jobs.json"

    @property
    def pairing(self) -> Path:
        """Pairing requests and the guests the owner approved."""
        return self.state / "pairing.json"

    @property
    def index(self) -> Path:
        """The memory's search index, derived from the workspace (SQLite)."""
        return self.state / "index.sqlite"

    @property
    def embeddings(self) -> Path:
        """Memory search's vectors by model and chunk text (SQLite), kept across reindexing."""
        return self.state / "embeddings.sqlite"

    @property
    def history(self) -> Path:
        """Every change to a workspace file, with its versions (SQLite)."""
        return self.state / "history.sqlite"

    @property
    def state_version(self) -> Path:
        """The version of the JSON state files and transcripts."""
        return self.state / "layout.json"

    @property
    def proposals(self) -> Path:
        """Consolidation's proposals for MEMORY.md, and how far it has read each log."""
        return self.state / "proposals.json"

    @property
    def actions(self) -> Path:
        """The audit trail: approvals asked, given and refused, commands run (SQLite)."""
        return self.state / "actions.sqlite"

    @property
    def hand_edits(self) -> Path:
        """When the owner last edited the workspace by hand."""
        return self.state / "hand_edited"

    @property
    def chat_names(self) -> Path:
        """What the platforms call the shared chats (a group's title), by session key."""
        return self.state / "chat_names.json"

    @property
    def mcp(self) -> Path:
        """The MCP servers' logs."""
        return self.state / "mcp"

    @property
    def web_chat(self) -> Path:
        """The control page chat's outbox."""
        return self.state / "web_chat.jsonl"

    @property
    def web_token(self) -> Path:
        """The control page's access token."""
        return self.state / "web_token"

    @property
    def web_sessions(self) -> Path:
        """The browsers signed in to the control page."""
        return self.state / "web_sessions.json"

    @property
    def web_open(self) -> Path:
        """The page ``corvid web`` opens, which signs the browser in."""
        return self.state / "web_open.html"

    # -- owner operations -------------------------------------------------------------------------

    @property
    def env_file(self) -> Path:
        """The secrets (``NAME=value`` lines), kept out of backups unless asked for."""
        return self.home / "corvid.env"

    @property
    def backups(self) -> Path:
        """Where ``corvid backup`` and the scheduled backups write, unless ``backup.dir`` says."""
        return self.state / "backups"

    @property
    def models(self) -> Path:
        """The local embedding model, once fetched (derived: left out of backups)."""
        return self.home / "models"

    @property
    def secret_state(self) -> tuple[Path, ...]:
        """Secrets in state/: the control page's access token and its browsers' sign-ins."""
        return (self.web_token, self.web_sessions)

    @property
    def only_while_running(self) -> tuple[Path, ...]:
        """What only a running Corvid means: its locks, its socket, the page ``corvid web``
        opens (which holds the token)."""
        return (self.run_lock, self.chat_lock, self.control_socket, self.web_open)

    @property
    def restore_undo(self) -> Path:
        """What the last ``corvid restore`` moved aside, for ``corvid restore --undo``."""
        return self.home / ".restore-undo"
