"""config.yaml is read with libyaml's parser when PyYAML has it, and reads the same as with
PyYAML's own: the same values, the same key given twice, the same account of a mistake."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gateway.config import strict_yaml
from gateway.config.home import init_home
from gateway.config.layout import Layout
from gateway.config.strict_yaml import safe_load, strict_load
from gateway.contract.errors import ConfigError


def _new_config(tmp: Path) -> str:
    """The commented config.yaml a new home gets."""
    init_home(tmp, {"TZ": "Europe/Berlin"})
    return Layout(tmp).config_file.read_text(encoding="utf-8")


DOCUMENTS = [
    "a: 1\nb: 0x1f\nc: 1_000\nd: 1.5e3\ne: .inf\nf: ~\ng: null\nh:\n",
    "on: yes\noff: no\nflags: [true, False, ON, off]\n",
    "day: 2026-11-26\nwhen: 2026-11-26 09:30:00\nquoted: '2026-11-26'\n",
    "text: |\n  two\n  lines\nfolded: >\n  one\n  line\nkeep: |+\n  x\n\n",
    "base: &b {model: m, timeout: 30}\nllm: *b\nlist: [*b, *b]\n",
    'name: "Zoë 🐦\\u00e9"\nemoji: 🐦‍⬛\n# comment only\n',
    "",
    "just a string\n",
    "- 1\n- [2, 3]\n- {four: 4}\n",
    "a:\r\n  b: 1\r\n",
]


def _pure(text: str) -> object:
    return yaml.load(text, Loader=strict_yaml._StrictLoader)


def test_this_pyyaml_has_libyaml_so_the_fast_path_is_what_runs():
    assert yaml.__with_libyaml__ and strict_yaml._FastStrictLoader is not None


@pytest.mark.parametrize("text", DOCUMENTS)
def test_a_document_reads_the_same_with_either_parser(text):
    assert strict_load(text) == _pure(text)
    assert safe_load(text) == yaml.safe_load(text)


def test_a_new_home_s_config_reads_the_same_and_never_touches_the_slow_parser(
    monkeypatch, tmp_path
):
    text = _new_config(tmp_path)
    pure = _pure(text)
    assert isinstance(pure, dict) and pure["timezone"] == "Europe/Berlin"

    def refuse(*_: object) -> None:
        raise AssertionError("PyYAML's parser was used")

    monkeypatch.setattr(yaml.SafeLoader, "__init__", refuse)  # _StrictLoader's too
    assert strict_load(text) == pure
    assert safe_load(text) == pure


def test_a_key_given_twice_is_found_on_the_same_lines_either_way():
    text = "llm:\n  model: a\n  timeout: 30\n  model: b\n"
    with pytest.raises(ConfigError) as fast:
        strict_load(text)
    with pytest.raises(ConfigError) as pure:
        _pure(text)
    assert (
        str(fast.value)
        == str(pure.value)
        == ("model: given twice, on lines 2 and 4; keep one of them")
    )


@pytest.mark.parametrize("text", ["llm:\n\tmodel: x\n", "x: [1, 2,\n  3\ny: 4\n", "a: b: c\n"])
def test_a_mistake_is_told_in_pyyaml_s_words(text):
    with pytest.raises(yaml.YAMLError) as fast:
        strict_load(text)
    with pytest.raises(yaml.YAMLError) as pure:
        _pure(text)
    assert str(fast.value) == str(pure.value)
    with pytest.raises(yaml.YAMLError) as plain:
        safe_load(text)
    assert str(plain.value) == str(pure.value)
