"""BERT's tokenizer: clean-up, case and accents, CJK, punctuation, WordPiece, truncation."""

from __future__ import annotations

import json

import pytest

from agent.memory.embedding.wordpiece import WordPiece
from tests.fakes.tiny_bert import VOCAB, write_model


@pytest.fixture
def tok() -> WordPiece:
    return WordPiece(VOCAB)


def pieces(tok: WordPiece, text: str) -> list[str]:
    names = {i: t for t, i in tok.vocab.items()}
    return [names[i] for i in tok.encode(text, 512)[1:-1]]


def test_case_and_accents_fold_away(tok):
    assert tok.words("Héllo WÖRLD, Café naïve") == ["hello", "world", ",", "cafe", "naive"]
    assert pieces(tok, "Héllo WÖRLD") == ["hello", "world"]


def test_punctuation_and_ascii_symbols_stand_alone(tok):
    assert tok.words("don't!(x)") == ["don", "'", "t", "!", "(", "x", ")"]
    assert tok.words("$12.34") == ["$", "12", ".", "34"]
    assert tok.words("a—b «c»") == ["a", "—", "b", "«", "c", "»"]  # Unicode punctuation too


def test_cjk_ideographs_are_split_but_kana_is_not(tok):
    assert tok.words("我去北京。") == ["我", "去", "北", "京", "。"]
    assert tok.words("東京のいい") == ["東", "京", "のいい"]
    assert pieces(tok, "東京のいい") == ["東", "京", "の", "##い", "##い"]


def test_wordpiece_takes_the_longest_known_pieces(tok):
    assert pieces(tok, "unaffable cats playing") == [
        "un", "##aff", "##able", "cat", "##s", "play", "##ing",
    ]  # fmt: skip
    assert pieces(tok, "LH1234") == ["lh", "##12", "##34"]


def test_a_word_not_covered_entirely_is_one_unknown(tok):
    assert pieces(tok, "the zebra sat") == ["the", "[UNK]", "sat"]
    assert pieces(tok, "catz") == ["[UNK]"]  # "cat" is known, "##z" is not: the whole word goes
    assert pieces(tok, "x" * 101) == ["[UNK]"]  # over 100 characters, not even tried
    assert pieces(tok, "x" * 100) == ["x"] + ["##x"] * 99


def test_control_characters_go_and_unicode_spaces_split(tok):
    assert tok.words("a\u00a0b\u2003c\u2028d") == ["a", "b", "c", "d"]
    assert tok.words("ca\u200bt\x00s\ufffd\x07at") == ["catsat"]
    assert tok.words("cat\tsat\r\non") == ["cat", "sat", "on"]
    assert tok.words("") == [] and tok.encode("", 8) == [tok.cls_id, tok.sep_id]


def test_capital_sigma_lowers_the_same_at_the_end_of_a_word(tok):
    # Python's str.lower() writes a final sigma; BERT lowers each letter on its own.
    assert tok.words("ΟΔΟΣ") == ["οδοσ"]
    assert pieces(tok, "ΟΔΟΣ") == ["ο", "##δ", "##ο", "##σ"]


def test_encode_frames_and_truncates_to_the_length_in_all(tok):
    ids = tok.encode("the cat sat on the mat", 5)
    assert ids[0] == tok.cls_id and ids[-1] == tok.sep_id and len(ids) == 5
    assert ids[1:-1] == [tok.vocab["the"], tok.vocab["cat"], tok.vocab["sat"]]
    # A word cut into pieces is cut too, not kept whole past the limit.
    assert tok.encode("unaffable", 4) == [
        tok.cls_id,
        tok.vocab["un"],
        tok.vocab["##aff"],
        tok.sep_id,
    ]
    assert len(tok.encode("cat " * 600, 512)) == 512


def test_settings_come_from_the_model_folder(tmp_path):
    folder = write_model(tmp_path / "m")
    config = {"do_lower_case": False, "tokenize_chinese_chars": False}
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    tok = WordPiece.from_folder(folder)
    assert tok.words("Café 北京") == ["Café", "北京"]  # no case, no accents, no CJK split
    assert WordPiece(VOCAB, strip_accents=False).words("Café") == ["café"]


def test_a_vocabulary_without_special_tokens_is_refused():
    with pytest.raises(ValueError, match="special tokens"):
        WordPiece(["the", "cat"])
