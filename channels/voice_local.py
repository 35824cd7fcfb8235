"""Voice notes heard on this machine: whisper.cpp through pywhispercpp, decoded by PyAV."""

from __future__ import annotations

import asyncio
import io
import logging
from pathlib import Path
from typing import Any

from channels.voice import TranscriptionError

log = logging.getLogger(__name__)

RATE = 16_000  # what Whisper models hear: 16 kHz mono


def missing_parts() -> str | None:
    """What to install for local transcription, or None when it is there."""
    import importlib.util

    absent = [m for m in ("pywhispercpp", "av", "numpy") if importlib.util.find_spec(m) is None]
    if absent:
        return f"needs {', '.join(absent)}: pip install 'corvid[whisper]'"
    return None


class WhisperCppTranscriber:
    """A ``Transcriber`` over a local whisper.cpp model."""

    def __init__(
        self, model_path: Path, *, language: str = "", timeout: float = 120.0, threads: int = 0
    ) -> None:
        self.model_path = model_path
        self.language = language or "auto"
        self.timeout = timeout
        self.threads = threads
        self._model: Any = None
        self._lock = asyncio.Lock()  # the model is one; recordings take turns

    async def transcribe(self, data: bytes, name: str, mime: str) -> str:
        await self._lock.acquire()
        work = asyncio.ensure_future(asyncio.to_thread(self._hear, data))
        try:
            done, _ = await asyncio.wait({work}, timeout=self.timeout)
        except BaseException:  # the turn was stopped: the model finishes, then the next goes
            work.add_done_callback(lambda _: self._lock.release())
            raise
        if not done:
            # A running model cannot be stopped: the next recording waits until it has ended.
            work.add_done_callback(lambda _: self._lock.release())
            log.warning("local transcription took longer than %g s", self.timeout)
            raise TranscriptionError(f"the local model took longer than {self.timeout:g} s")
        self._lock.release()
        return work.result()

    def _hear(self, data: bytes) -> str:
        pcm = decode(data)
        if len(pcm) < RATE // 10:
            return ""
        model = self._load()
        try:
            segments = model.transcribe(pcm, language=self.language)
        except Exception as exc:  # the binding's errors are C++ exceptions turned into these
            log.warning("local transcription failed: %s", type(exc).__name__)
            raise TranscriptionError(f"the local model failed ({type(exc).__name__})") from None
        return " ".join(s.text.strip() for s in segments if s.text.strip())

    def _load(self) -> Any:
        if self._model is None:
            # Given a path that is not a file, the binding would try to download a model.
            if not self.model_path.is_file():
                raise TranscriptionError(f"the model file {self.model_path.name} is gone")
            from pywhispercpp.model import Model

            options: dict[str, Any] = {
                "redirect_whispercpp_logs_to": None,
                "print_progress": False,
                "print_realtime": False,
                "print_timestamps": False,
            }
            if self.threads:
                options["n_threads"] = self.threads
            self._model = Model(str(self.model_path), **options)
            log.info("whisper.cpp model loaded from %s", self.model_path)
        return self._model


def decode(data: bytes) -> Any:
    """The recording as 16 kHz mono float32 samples (a numpy array), whatever its format."""
    import av
    import numpy as np

    chunks: list[Any] = []
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            streams = container.streams.audio
            if not streams:
                raise TranscriptionError("the file holds no audio")
            resampler = av.AudioResampler(format="flt", layout="mono", rate=RATE)
            for frame in container.decode(streams[0]):
                chunks += [out.to_ndarray().reshape(-1) for out in resampler.resample(frame)]
            chunks += [out.to_ndarray().reshape(-1) for out in resampler.resample(None)]
    except av.error.FFmpegError as exc:
        what = type(exc).__name__
        raise TranscriptionError(f"the recording could not be decoded ({what})") from None
    if not chunks:
        return np.zeros(0, dtype=np.float32)
    return np.concatenate(chunks).astype(np.float32, copy=False)
