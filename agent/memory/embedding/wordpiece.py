"""BERT's tokenizer: the basic word split and WordPiece, as BERT-family fast tokenizers do it."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable
from functools import cache
from pathlib import Path

# The CJK Unified Ideograph blocks BERT puts spaces around. Kana and Hangul are not among
# them: BERT's vocabulary splits those with WordPiece like any other letters. Extension E is
# taken from 0x2B920, not 0x2B820, because the fast tokenizer the models run with does so.
_CJK_BLOCKS = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_KEEP, _DROP, _SPACE, _ALONE = 0, 1, 2, 3
# The Unicode White_Space characters that are not control characters (those are dropped).
_SPACES = frozenset("\t\n\r\u2028\u2029")
_CACHE_WORDS = 50_000


@cache
def _raw_kind(c: str) -> int:
    """What the clean-up does with one character of the original text."""
    if c in _SPACES:
        return _SPACE
    category = unicodedata.category(c)
    if category == "Zs":
        return _SPACE
    # Control, format, private-use and surrogate characters go; unassigned ones stay.
    if c == "\ufffd" or (category.startswith("C") and category != "Cn"):
        return _DROP
    code = ord(c)
    if any(low <= code <= high for low, high in _CJK_BLOCKS):
        return _ALONE
    return _KEEP


@cache
def _is_punctuation(c: str) -> bool:
    # ASCII symbols such as $ + < = > ^ ` | ~ count too, though Unicode calls them symbols.
    code = ord(c)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(c).startswith("P")


class WordPiece:
    """Text to token ids for a BERT vocabulary (``vocab.txt``: one token a line, id = line)."""

    def __init__(
        self,
        vocab: Iterable[str],
        *,
        lower_case: bool = True,
        strip_accents: bool | None = None,
        split_cjk: bool = True,
        unk: str = "[UNK]",
        cls: str = "[CLS]",
        sep: str = "[SEP]",
        pad: str = "[PAD]",
        max_word_chars: int = 100,
    ) -> None:
        self.vocab = {token: i for i, token in enumerate(vocab)}
        self.lower_case = lower_case
        # As in BERT: accents go with lower-casing unless the model says otherwise.
        self.strip_accents = lower_case if strip_accents is None else strip_accents
        self.split_cjk = split_cjk
        self.max_word_chars = max_word_chars
        missing = [t for t in (unk, cls, sep, pad) if t not in self.vocab]
        if missing:
            raise ValueError(f"the vocabulary lacks the special tokens {missing}")
        self.unk_id, self.cls_id = self.vocab[unk], self.vocab[cls]
        self.sep_id, self.pad_id = self.vocab[sep], self.vocab[pad]
        self._pieces: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_folder(cls, folder: Path) -> WordPiece:
        """A model folder's tokenizer: ``vocab.txt`` and ``tokenizer_config.json`` if there."""
        with (folder / "vocab.txt").open(encoding="utf-8", newline="") as f:
            vocab = [line.rstrip("\r\n") for line in f]
        try:
            config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            config = {}
        return cls(
            vocab,
            lower_case=bool(config.get("do_lower_case", True)),
            strip_accents=config.get("strip_accents"),
            split_cjk=bool(config.get("tokenize_chinese_chars", True)),
            unk=config.get("unk_token", "[UNK]"),
            cls=config.get("cls_token", "[CLS]"),
            sep=config.get("sep_token", "[SEP]"),
            pad=config.get("pad_token", "[PAD]"),
        )

    def encode(self, text: str, max_length: int) -> list[int]:
        """``[CLS]`` + the text's pieces + ``[SEP]``, cut to ``max_length`` ids in all."""
        budget = max(0, max_length - 2)
        ids = [self.cls_id]
        for word in self.words(text):
            ids.extend(self.pieces(word))
            if len(ids) > budget:
                break
        del ids[budget + 1 :]
        ids.append(self.sep_id)
        return ids

    def words(self, text: str) -> list[str]:
        """The basic tokenizer: clean-up, CJK ideographs and punctuation split off, accents
        stripped and case folded as configured, then split on white space. Text that spells a
        special token ("[SEP]") is plain words here, never the token."""
        parts = []
        for c in text:
            kind = _raw_kind(c)
            if kind == _KEEP:
                parts.append(c)
            elif kind == _SPACE:
                parts.append(" ")
            elif kind == _ALONE:
                parts.append(f" {c} " if self.split_cjk else c)
        normal = "".join(parts)
        if self.strip_accents:
            normal = "".join(
                c for c in unicodedata.normalize("NFD", normal) if unicodedata.category(c) != "Mn"
            )
        if self.lower_case:
            # Character by character: str.lower() would turn a final Σ into ς, BERT does not.
            normal = "".join(c.lower() for c in normal) if "Σ" in normal else normal.lower()
        words = []
        for chunk in normal.split():
            if not any(_is_punctuation(c) for c in chunk):
                words.append(chunk)
                continue
            start = 0
            for i, c in enumerate(chunk):
                if _is_punctuation(c):
                    if start < i:
                        words.append(chunk[start:i])
                    words.append(c)
                    start = i + 1
            if start < len(chunk):
                words.append(chunk[start:])
        return words

    def pieces(self, word: str) -> tuple[int, ...]:
        """WordPiece: the longest known prefix, then the longest known ``##`` continuation,
        and so on; a word that cannot be covered entirely is one ``[UNK]``."""
        found = self._pieces.get(word)
        if found is not None:
            return found
        ids = self._split(word)
        if len(self._pieces) < _CACHE_WORDS:
            self._pieces[word] = ids
        return ids

    def _split(self, word: str) -> tuple[int, ...]:
        if len(word) > self.max_word_chars:
            return (self.unk_id,)
        ids = []
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                token = self.vocab.get(piece)
                if token is not None:
                    ids.append(token)
                    break
                end -= 1
            else:
                return (self.unk_id,)
            start = end
        return tuple(ids)
