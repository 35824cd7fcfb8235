"""Config: the template parses, ${ENV} substitution, and errors that name the dotted key."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config.home import init_home
from gateway.config.loader import DEFAULT_MODEL, load_config, parse_config
from gateway.contract.errors import ConfigError
from gateway.contract.ports import Secret


def _parse(raw, environ=None):
    return parse_config(raw, home=Path("/h"), environ=environ or {})


def test_generated_config_loads_with_defaults_and_records_missing_env(tmp_path):
    init_home(tmp_path, {"TZ": "Europe/Berlin"})
    cfg = load_config(tmp_path, {})
    assert cfg.timezone == "Europe/Berlin"
    assert cfg.llm.model == DEFAULT_MODEL
    assert cfg.llm.api_key is None and cfg.llm.base_url is None
    assert (cfg.llm.max_tokens, cfg.llm.context_window, cfg.llm.retries) == (8192, 200000, 2)
    assert cfg.missing_env["llm.api_key"] == "ANTHROPIC_API_KEY"
    assert "set the environment variable ANTHROPIC_API_KEY" in cfg.missing("llm.api_key", "key")
    cfg = load_config(tmp_path, {"ANTHROPIC_API_KEY": "sk-abc", "TELEGRAM_BOT_TOKEN": "123:x"})
    assert cfg.llm.api_key == Secret("sk-abc")
    assert cfg.channels.telegram.token == Secret("123:x")


def test_the_template_lists_every_option_at_its_default(tmp_path):
    """config.yaml as `corvid init` writes it says "Every option is listed with its default":
    an option missing from it, or written with another value, makes the file say what is not
    so."""
    import yaml

    from gateway.services.reload import options

    init_home(tmp_path, {"TZ": "Europe/Berlin"})
    written = yaml.safe_load((tmp_path / "config.yaml").read_text())
    default = _parse({"timezone": "Europe/Berlin"})
    listed = {key: value for key, value in _dotted(written)}
    missing = [key for key in options(default) if key not in listed]
    assert missing == []
    values = {key: _value(default, key) for key in options(default)}
    different = [
        (key, listed[key], values[key])
        for key in values
        if not key.endswith(("api_key", "token")) and listed[key] not in (values[key], None, "")
    ]
    assert different == []


# Options whose value is a mapping of the owner's, not a section of options.
_MAPPINGS = ("llm.models", "llm.prices", "approvals.tools", "mcp.servers")


def _dotted(node, prefix=""):
    for key, value in node.items():
        dotted = prefix + key
        if isinstance(value, dict) and value and dotted not in _MAPPINGS:
            yield from _dotted(value, dotted + ".")
        else:
            yield dotted, value


def _value(config, dotted):
    for part in dotted.split("."):
        config = getattr(config, part)
    return config


def test_default_model_is_not_deprecated_in_the_pinned_sdk():
    from anthropic.resources.messages.messages import DEPRECATED_MODELS

    assert DEFAULT_MODEL not in DEPRECATED_MODELS


def test_secret_never_shows_its_value():
    s = Secret("sk-very-secret")
    assert "sk-very-secret" not in repr(s) and "sk-very-secret" not in str(s)
    cfg = _parse({"llm": {"api_key": "${K}"}}, {"K": "sk-very-secret"})
    assert "sk-very-secret" not in repr(cfg)


def test_env_reference_inside_a_string():
    cfg = _parse({"llm": {"base_url": "http://${HOST}:8080"}}, {"HOST": "proxy"})
    assert cfg.llm.base_url == "http://proxy:8080"


@pytest.mark.parametrize(
    ("raw", "key", "words"),
    [
        (
            {"llm": {"max_tokens": "lots"}},
            "llm.max_tokens",
            "expected a whole number, got str 'lots'",
        ),
        ({"llm": {"max_tokens": True}}, "llm.max_tokens", "got the boolean true"),
        ({"llm": {"retries": -1}}, "llm.retries", "must be at least 0"),
        ({"llm": {"modle": "x"}}, "llm.modle", "unknown option"),
        ({"llm": ["x"]}, "llm", "expected a mapping, got a list"),
        (
            {"channels": {"telegram": {"enabled": "yes"}}},
            "channels.telegram.enabled",
            "expected true or false",
        ),
        (
            {"channels": {"telegram": {"allow_from": "42"}}},
            "channels.telegram.allow_from",
            "expected a list",
        ),
        ({"channels": {"matrix": {}}}, "channels.matrix", "unknown option"),
        (
            {"channels": {"telegram": {"allow_from": [42, "@ada"]}}},
            "channels.telegram.allow_from[1]",
            "expected a numeric Telegram user id",
        ),
        (
            {"channels": {"telegram": {"groups": ["my group"]}}},
            "channels.telegram.groups[0]",
            "expected a numeric Telegram chat id",
        ),
        (
            {"channels": {"telegram": {"webhook": {"url": "http://example.org/hook"}}}},
            "channels.telegram.webhook.url",
            "https://",
        ),
        (
            {"channels": {"telegram": {"webhook": {"secret_token": "has spaces"}}}},
            "channels.telegram.webhook.secret_token",
            "A-Z, a-z",
        ),
        (
            {"channels": {"discord": {"groups": ["general"]}}},
            "channels.discord.groups[0]",
            "expected a numeric Discord id",
        ),
        (
            {"channels": {"discord": {"api_base_url": "http://127.0.0.1:8080/api/v10"}}},
            "channels.discord.api_base_url",
            "expected https://<host>[:<port>]/api/v10, got 'http://127.0.0.1:8080/api/v10' "
            "(discord.py speaks only TLS",
        ),
        (
            {"channels": {"discord": {"gateway_url": "ws://127.0.0.1:8080/"}}},
            "channels.discord.gateway_url",
            "expected wss://<host>[:<port>]/, got 'ws://127.0.0.1:8080/' (discord.py speaks "
            "only TLS",
        ),
        (
            {"channels": {"discord": {"api_base_url": "https://relay.example/discord/api/v10"}}},
            "channels.discord.api_base_url",
            "only the host and port can be changed",
        ),
        (
            {"channels": {"discord": {"gateway_url": "wss://relay.example/gateway"}}},
            "channels.discord.gateway_url",
            "only the host and port can be changed",
        ),
        (
            {"channels": {"discord": {"api_base_url": "https://relay.example:https/api/v10"}}},
            "channels.discord.api_base_url",
            "not a port number",
        ),
        ({"timezone": "Mars/Olympus"}, "timezone", "unknown time zone"),
        (
            {"schedule": {"heartbeat": {"enabled": True, "target": "telegram:group:-1005"}}},
            "schedule.heartbeat.target",
            "must be your own private chat",
        ),
        (
            {"schedule": {"heartbeat": {"target": "discord:channel:77"}}},
            "schedule.heartbeat.target",
            "must be your own private chat",
        ),
        (
            {"schedule": {"heartbeat": {"target": "telegram:guest:1003"}}},
            "schedule.heartbeat.target",
            "must be your own private chat",
        ),
        (
            {
                "channels": {"telegram": {"allow_from": ["42"]}},
                "schedule": {"heartbeat": {"target": "telegram:private:1003"}},
            },
            "schedule.heartbeat.target",
            "must be your own private chat",
        ),
        ({"logging": {"level": "LOUD"}}, "logging.level", "expected one of"),
        ({"llm": {"model": None}}, "llm.model", "must not be empty"),
        (
            {"llm": {"model": "${UNSET_VAR}"}},
            "llm.model",
            "environment variable UNSET_VAR is not set",
        ),
    ],
)
def test_errors_name_the_dotted_key(raw, key, words):
    with pytest.raises(ConfigError) as err:
        _parse(raw)
    assert err.value.key == key
    assert words in str(err.value)
    assert str(err.value).startswith(f"{key}: ")


def test_discord_can_be_led_to_another_host_and_port_over_tls():
    discord = _parse(
        {
            "channels": {
                "discord": {
                    "api_base_url": "https://127.0.0.1:8443/api/v10/",
                    "gateway_url": "wss://[::1]:8444",
                }
            }
        }
    ).channels.discord
    assert (discord.api_base_url, discord.gateway_url) == (
        "https://127.0.0.1:8443/api/v10/",
        "wss://[::1]:8444",
    )


def test_top_level_must_be_a_mapping_and_yaml_must_parse(tmp_path):
    with pytest.raises(ConfigError, match="expected a mapping at the top level"):
        _parse(["a"])
    (tmp_path / "config.yaml").write_text("llm: [\n")
    with pytest.raises(ConfigError, match="not valid YAML at line 2"):
        load_config(tmp_path, {})


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"timezone: \xff\xfe\n", "not UTF-8"),
        (b"a: &a [*a]\n", "nested too deeply"),
        (b"llm:\n  timeout: .nan\n", "llm.timeout: expected a finite number"),
        (b"gateway:\n  shutdown_grace: .inf\n", "gateway.shutdown_grace: expected a finite"),
    ],
)
def test_unreadable_or_pathological_files_are_config_errors(tmp_path, content, words):
    (tmp_path / "config.yaml").write_bytes(content)
    with pytest.raises(ConfigError, match=words):
        load_config(tmp_path, {})


def test_config_path_that_is_a_folder(tmp_path):
    (tmp_path / "config.yaml").mkdir()
    with pytest.raises(ConfigError, match="cannot be read"):
        load_config(tmp_path, {})


def test_missing_file_means_defaults(tmp_path):
    cfg = load_config(tmp_path, {})
    assert cfg.timezone == "UTC" and cfg.workspace == tmp_path / "workspace"


def test_choices_ignore_case_and_a_bad_one_is_named(tmp_path):
    home = tmp_path / "h"
    init_home(home, {})
    raw = (home / "config.yaml").read_text()
    (home / "config.yaml").write_text(raw.replace("format: text", "format: JSON"))
    assert load_config(home, {}).logging.format == "json"
    (home / "config.yaml").write_text(raw.replace("format: text", "format: xml"))
    with pytest.raises(ConfigError, match=r"logging\.format: expected one of text, json"):
        load_config(home, {})


def test_secrets_default_to_their_usual_environment_variables(tmp_path):
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.yaml").write_text("channels:\n  telegram:\n    enabled: true\n")
    env = {
        "ANTHROPIC_API_KEY": "sk-from-env",
        "TELEGRAM_BOT_TOKEN": "1:tg",
        "DISCORD_BOT_TOKEN": "dc",
    }
    config = load_config(home, env)
    assert config.llm.api_key == Secret("sk-from-env")
    assert config.channels.telegram.token == Secret("1:tg")
    assert config.channels.discord.token == Secret("dc")
    bare = load_config(home, {})
    assert bare.llm.api_key is None
    assert "set the environment variable ANTHROPIC_API_KEY" in bare.missing("llm.api_key", "key")
    (home / "config.yaml").write_text("llm:\n  api_key: ${MY_KEY}\n")
    assert load_config(home, {**env, "MY_KEY": "sk-mine"}).llm.api_key == Secret("sk-mine")


def test_a_key_given_twice_is_refused_naming_both_lines(tmp_path):
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.yaml").write_text(
        "timezone: Europe/Berlin\nllm:\n  model: claude-a\n  timeout: 30\n  model: claude-b\n"
    )
    with pytest.raises(ConfigError) as raised:
        load_config(home, {})
    assert str(raised.value) == "model: given twice, on lines 3 and 5; keep one of them"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "timezone: UTC\nllm:\nx: [1, 2,\n  3\ny: 4\n",
            "not valid YAML at line 3, column 4: a flow sequence is not closed",
        ),
        ("llm:\n\tmodel: x\n", "a tab character at line 2, column 1: YAML indents with spaces"),
        ("llm: {model: x\n", "not valid YAML at line 1, column 6: a flow mapping is not closed"),
    ],
)
def test_yaml_errors_say_where_the_problem_starts_and_what_it_is(tmp_path, text, expected):
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.yaml").write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_config(home, {})
    assert str(raised.value).startswith(expected), str(raised.value)


def test_compaction_is_sized_to_a_small_window_or_refused_when_set_to_misfit(tmp_path):
    small = parse_config({"llm": {"context_window": 6000}}, home=tmp_path, environ={})
    c = small.compaction
    assert c.reserve_tokens + c.soft_threshold_tokens + c.keep_recent_tokens < 6000
    assert c.keep_recent_tokens >= 500
    default = parse_config({}, home=tmp_path, environ={}).compaction
    assert (default.reserve_tokens, default.keep_recent_tokens) == (20_000, 20_000)
    with pytest.raises(ConfigError) as raised:
        parse_config(
            {"llm": {"context_window": 6000}, "compaction": {"keep_recent_tokens": 5000}},
            home=tmp_path,
            environ={},
        )
    assert raised.value.key == "compaction" and "llm.context_window (6,000)" in str(raised.value)


def test_the_compaction_defaults_written_out_by_the_template_are_sized_down_too(tmp_path):
    """A home made by corvid init lists every option at its default: changing only
    llm.context_window in it still sizes compaction to the window."""
    from gateway.config.home import init_home
    from gateway.config.loader import load_config

    init_home(tmp_path, {})
    path = tmp_path / "config.yaml"
    path.write_text(path.read_text().replace("  context_window: 200000", "  context_window: 6000"))
    c = load_config(tmp_path, {}).compaction
    assert c.reserve_tokens + c.soft_threshold_tokens + c.keep_recent_tokens < 6000


def test_what_enabled_channels_need_is_decided_in_one_place():
    off = _parse({})
    assert off.channels.enabled() == {} and off.channels.unmet() == []
    config = _parse(
        {
            "channels": {
                "telegram": {"enabled": True, "webhook": {"url": "https://example.org/hook"}},
                "discord": {"enabled": True, "token": "d", "allow_from": ["1"]},
            }
        }
    )
    channels = config.channels
    assert list(channels.enabled()) == ["telegram", "discord"]
    assert [(n.key, n.why) for n in channels.unmet()] == [
        ("channels.telegram.token", "required when Telegram is enabled"),
        ("channels.telegram.webhook.secret_token", "required when webhook.url is set"),
    ]
    assert channels.open_to_all() == ["telegram"]


def test_the_layout_names_every_state_file_under_the_home(tmp_path):
    layout = load_config(tmp_path, {}).layout
    assert layout.state == tmp_path / "state"
    names = {
        "pairing": "pairing.json",
        "control_socket": "control.sock",
        "jobs": "jobs.json",
        "ledger": "scheduler.sqlite",
        "journal": "gateway.sqlite",
        "index": "index.sqlite",
        "embeddings": "embeddings.sqlite",
        "web_sessions": "web_sessions.json",
    }
    for attr, name in names.items():
        assert getattr(layout, attr) == tmp_path / "state" / name
    assert layout.config_file == tmp_path / "config.yaml"


def test_memory_search_options_are_checked_and_named():
    cfg = _parse({})
    assert cfg.memory.embeddings.provider == "local" and cfg.memory.search.vector_weight == 0.7
    cfg = _parse(
        {"memory": {"embeddings": {"provider": "OpenAI", "api_key": "${EMB}"}}}, {"EMB": "sk-e"}
    )
    assert cfg.memory.embeddings.provider == "openai"
    assert cfg.memory.embeddings.api_key == Secret("sk-e") and "sk-e" in cfg.secrets()
    for raw, key, words in [
        ({"embeddings": {"provider": "cohere"}}, "memory.embeddings.provider", "one of local"),
        ({"embeddings": {"batch_size": 0}}, "memory.embeddings.batch_size", "at least 1"),
        ({"embeddings": {"modle": "x"}}, "memory.embeddings.modle", "unknown option"),
        (
            {"embeddings": {"provider": "openai", "base_url": "localhost:11434"}},
            "memory.embeddings.base_url",
            "expected an http:// or https:// URL",
        ),
        ({"search": {"mmr_lambda": 1.5}}, "memory.search.mmr_lambda", "between 0 and 1"),
        ({"search": {"half_life_days": -1}}, "memory.search.half_life_days", "at least 0"),
        (
            {"search": {"vector_weight": 0, "text_weight": 0}},
            "memory.search",
            "cannot both be 0",
        ),
    ]:
        with pytest.raises(ConfigError) as caught:
            _parse({"memory": raw})
        assert caught.value.key == key and words in str(caught.value), raw
